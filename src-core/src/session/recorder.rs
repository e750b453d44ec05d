//! What a started run keeps of its events: every event written to the run's
//! logs (the JSONL log, and the MCAP recording when asked: [`RunLog`]), and
//! the most recent ones in memory — for the MCP `events`
//! resource and for a web viewer that reconnects and resumes after the
//! last event it saw — and their counts (`/metrics`). One task per run,
//! subscribed before the first tick, so the log holds every event whichever
//! face shows them.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::watch;

use super::RunLog;
use crate::eventlog::EventLogError;
use crate::mcap::McapError;
use crate::metrics::EventCounts;
use crate::protocol::Event;

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
        if self.capacity == 0 {
            return;
        }
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

/// Why a run's log is not the whole run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The log could not be written; later events were not logged.
    #[error(transparent)]
    Write(#[from] EventLogError),
    /// The MCAP recording could not be written; later events were not recorded.
    #[error("the MCAP recording: {0}")]
    Mcap(#[from] McapError),
    /// The log writer fell behind the kernel and these events were dropped.
    #[error("{0} events were not logged: the log writer fell behind")]
    Lagged(u64),
}

/// The task that keeps a started run's events: see the module's doc.
pub struct Recorder {
    recent: Arc<Recent>,
    /// Told once the runtime has stopped: what is left is taken, the logs closed.
    close: watch::Sender<bool>,
    counts: Arc<Mutex<EventCounts>>,
    done: watch::Receiver<bool>,
    failed: Arc<Mutex<Option<RecordError>>>,
}

impl Recorder {
    /// Starts keeping `events` on the current tokio runtime: each is written
    /// to `log` (when given) and the last `capacity` are kept in memory,
    /// until [`Recorder::finished`] (or the end of the event stream), when
    /// the logs are closed. A log that fails is said once on stderr and no
    /// longer written; [`Recorder::finished`] reports it.
    pub fn start(capacity: usize, events: Receiver<Event>, log: Option<RunLog>) -> Self {
        let recent = Arc::new(Recent::new(capacity));
        let (done_tx, done) = watch::channel(false);
        let (close, closing) = watch::channel(false);
        let failed = Arc::new(Mutex::new(None));
        let counts = Arc::new(Mutex::new(EventCounts::default()));
        tokio::spawn(record(
            Kept {
                recent: Arc::clone(&recent),
                counts: Arc::clone(&counts),
            },
            events,
            log,
            Arc::clone(&failed),
            (closing, done_tx),
        ));
        Self {
            recent,
            close,
            counts,
            done,
            failed,
        }
    }

    /// The most recent events.
    pub fn recent(&self) -> &Recent {
        &self.recent
    }

    /// What the events kept so far add up to.
    pub fn counts(&self) -> EventCounts {
        self.counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Waits (at most `within`) until every event the run sent is kept and
    /// the logs are closed — the runtime must have stopped — and says
    /// whether the logs hold them all.
    pub async fn finished(&self, within: std::time::Duration) -> Result<(), RecordError> {
        let _ = self.close.send(true);
        let mut done = self.done.clone();
        let _ = tokio::time::timeout(within, done.wait_for(|d| *d)).await;
        match self
            .failed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Where the recorder keeps each event beside the log.
struct Kept {
    recent: Arc<Recent>,
    counts: Arc<Mutex<EventCounts>>,
}

async fn record(
    kept: Kept,
    mut events: Receiver<Event>,
    mut log: Option<RunLog>,
    failed: Arc<Mutex<Option<RecordError>>>,
    (mut closing, done): (watch::Receiver<bool>, watch::Sender<bool>),
) {
    let fail = |e: RecordError| {
        eprintln!("error: the event log: {e}");
        let mut slot = failed.lock().unwrap_or_else(PoisonError::into_inner);
        slot.get_or_insert(e);
    };
    // Once told to close (the runtime has stopped: nothing more is sent),
    // what is still in the channel is taken without waiting.
    let mut draining = false;
    loop {
        let received = if draining {
            match events.try_recv() {
                Ok(event) => Ok(event),
                Err(TryRecvError::Lagged(n)) => Err(RecvError::Lagged(n)),
                Err(_) => break,
            }
        } else {
            tokio::select! {
                biased;
                event = events.recv() => event,
                _ = closing.wait_for(|c| *c) => {
                    draining = true;
                    continue;
                }
            }
        };
        let event = match received {
            Ok(event) => event,
            Err(RecvError::Lagged(n)) => {
                fail(RecordError::Lagged(n));
                continue;
            }
            Err(RecvError::Closed) => break,
        };
        if let Some(l) = &mut log
            && let Err(e) = l.write_batch(std::slice::from_ref(&event))
        {
            fail(e);
        }
        kept.counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .observe(&event);
        kept.recent.push(event);
    }
    if let Some(Err(e)) = log.take().map(RunLog::finish) {
        fail(e);
    }
    let _ = done.send(true);
}

#[cfg(test)]
mod tests {
    use crate::protocol::EventKind;

    use super::*;

    fn event(seq: u64) -> Event {
        Event {
            seq,
            time: 0.0,
            wall_ms: 0,
            thread_id: "t".into(),
            step: 0,
            origin: None,
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
