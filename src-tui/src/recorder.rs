//! What a served run keeps of its events: every event written to the run's
//! JSONL log, and the most recent ones in memory — for the MCP `events`
//! resource and for a web viewer that reconnects and resumes after the
//! last event it saw.

use std::collections::VecDeque;
use std::fs::File;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use robobrain_core::eventlog::EventLog;
use robobrain_core::protocol::Event;
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::RecvError;

/// The most recent events, oldest first, at most `capacity` of them.
pub struct Recent {
    events: Mutex<VecDeque<Event>>,
    capacity: usize,
}

impl Recent {
    /// An empty buffer keeping `capacity` events.
    pub fn new(capacity: usize) -> Self {
        Self {
            events: Mutex::new(VecDeque::with_capacity(capacity)),
            capacity,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Event>> {
        self.events.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps `event`, forgetting the oldest when full.
    pub fn push(&self, event: Event) {
        let mut events = self.lock();
        if events.len() == self.capacity {
            events.pop_front();
        }
        events.push_back(event);
    }

    /// The events kept, oldest first.
    pub fn all(&self) -> Vec<Event> {
        self.lock().iter().cloned().collect()
    }

    /// Every event after `seq`, when the buffer still holds all of them
    /// (the one right after `seq` is kept, or nothing came after it);
    /// `None` when some were already forgotten.
    pub fn since(&self, seq: u64) -> Option<Vec<Event>> {
        let events = self.lock();
        match events.front() {
            Some(first) if first.seq > seq + 1 => None,
            _ => Some(events.iter().filter(|e| e.seq > seq).cloned().collect()),
        }
    }
}

/// Keeps `events` in `recent` and writes each to `log`, until the runtime
/// stops or `recent` is dropped. A log that fails is said once on stderr
/// and no longer written.
pub async fn record(
    recent: Weak<Recent>,
    mut events: Receiver<Event>,
    mut log: Option<EventLog<File>>,
) {
    loop {
        let event = match events.recv().await {
            Ok(event) => event,
            Err(RecvError::Lagged(_)) => continue,
            Err(RecvError::Closed) => return,
        };
        if let Some(l) = &mut log
            && let Err(e) = l.write_batch(std::slice::from_ref(&event))
        {
            eprintln!("error: the event log: {e}; events are no longer logged");
            log = None;
        }
        let Some(recent) = recent.upgrade() else {
            return;
        };
        recent.push(event);
    }
}

/// Starts [`record`] on the current tokio runtime; returns the buffer.
pub fn start(capacity: usize, events: Receiver<Event>, log: Option<EventLog<File>>) -> Arc<Recent> {
    let recent = Arc::new(Recent::new(capacity));
    tokio::spawn(record(Arc::downgrade(&recent), events, log));
    recent
}

#[cfg(test)]
mod tests {
    use robobrain_core::protocol::EventKind;

    use super::*;

    fn event(seq: u64) -> Event {
        Event {
            seq,
            time: 0.0,
            wall_ms: 0,
            thread_id: "t".into(),
            step: 0,
            kind: EventKind::Log {
                level: "info".into(),
                message: format!("{seq}"),
            },
        }
    }

    #[test]
    fn a_viewer_resumes_after_its_last_event_while_the_buffer_holds_them() {
        let recent = Recent::new(3);
        for seq in 1..=5 {
            recent.push(event(seq));
        }
        let seqs = |v: Option<Vec<Event>>| v.map(|v| v.iter().map(|e| e.seq).collect::<Vec<_>>());
        assert_eq!(seqs(recent.since(2)), Some(vec![3, 4, 5]));
        assert_eq!(seqs(recent.since(4)), Some(vec![5]));
        assert_eq!(seqs(recent.since(5)), Some(vec![]));
        assert_eq!(seqs(recent.since(1)), None, "event 2 was forgotten");
        assert_eq!(recent.all().len(), 3);
    }
}
