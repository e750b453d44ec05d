//! How many calls one endpoint works on at once, and who goes first. A
//! small local server (llama.cpp started with one slot) serves one request
//! at a time: a summary holding that slot makes the next decision wait for
//! it (issue 40: 36.8 s). Every client of an endpoint in the process shares
//! its [`Slots`] ([`for_endpoint`]): at most `limit` calls run at once; a
//! freed slot goes to the waiting call of the highest [`Priority`] (first
//! come first within one); and a call above [`Priority::Background`] that
//! finds every slot held asks a background call holding one to yield — that
//! call drops its request at once (the server stops generating for a
//! client that hung up) and waits for a slot again, within its deadline.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use tokio::sync::oneshot;

/// Who goes first when slots are short, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    /// Summaries and analysis: nothing waits for them; they yield their
    /// slot to any other call.
    Background,
    /// A skill waiting on a model (a `watch` asking the vision role).
    Vision,
    /// Understanding an utterance.
    Intent,
    /// A decision, or its repair: the robot's next step waits for it.
    Decide,
}

/// A call holding a slot.
struct Holder {
    id: u64,
    priority: Priority,
    /// Set until the holder is asked to yield (background calls only).
    yield_to: Option<oneshot::Sender<()>>,
}

/// A call waiting for a slot.
struct Waiter {
    id: u64,
    priority: Priority,
    grant: oneshot::Sender<Option<oneshot::Receiver<()>>>,
}

#[derive(Default)]
struct State {
    held: Vec<Holder>,
    waiting: Vec<Waiter>,
    next: u64,
}

/// The slots of one endpoint.
pub struct Slots {
    limit: usize,
    state: Mutex<State>,
}

/// A slot held; dropping it frees the slot for the next call.
pub struct Permit {
    slots: Arc<Slots>,
    id: u64,
    yield_rx: Option<oneshot::Receiver<()>>,
}

impl Permit {
    /// Resolves when a more urgent call asks this one to give its slot up
    /// (only a [`Priority::Background`] call is ever asked; for the others
    /// it never resolves).
    pub async fn yielded(&mut self) {
        if let Some(rx) = self.yield_rx.as_mut() {
            let asked = rx.await.is_ok();
            self.yield_rx = None;
            if asked {
                return;
            }
        }
        std::future::pending::<()>().await;
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.slots.release(self.id);
    }
}

impl Slots {
    /// Slots for an endpoint that works on `limit` calls at once (at least 1).
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit: limit.max(1),
            state: Mutex::new(State::default()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for a slot for a call of `priority`.
    pub async fn acquire(self: &Arc<Self>, priority: Priority) -> Permit {
        loop {
            let (id, rx) = {
                let mut state = self.lock();
                state.next += 1;
                let id = state.next;
                if state.held.len() < self.limit {
                    let yield_rx = hold(&mut state, id, priority);
                    return Permit {
                        slots: self.clone(),
                        id,
                        yield_rx,
                    };
                }
                let (grant, rx) = oneshot::channel();
                state.waiting.push(Waiter {
                    id,
                    priority,
                    grant,
                });
                ask_to_yield(&mut state);
                (id, rx)
            };
            // The sender only goes away with a grant: a closed channel is
            // a hand-off that failed, and the call simply asks again.
            if let Ok(yield_rx) = rx.await {
                return Permit {
                    slots: self.clone(),
                    id,
                    yield_rx,
                };
            }
        }
    }

    /// Frees `id`'s slot and hands it to the most urgent waiting call.
    fn release(&self, id: u64) {
        let mut state = self.lock();
        state.held.retain(|h| h.id != id);
        while state.held.len() < self.limit {
            // Highest priority first, then the earliest.
            let Some(best) = (0..state.waiting.len())
                .max_by_key(|&i| (state.waiting[i].priority, std::cmp::Reverse(i)))
            else {
                return;
            };
            let waiter = state.waiting.remove(best);
            let yield_rx = hold(&mut state, waiter.id, waiter.priority);
            if waiter.grant.send(yield_rx).is_err() {
                // It stopped waiting (its deadline passed): the next one.
                state.held.retain(|h| h.id != waiter.id);
            }
        }
    }

    /// How many calls hold a slot and how many wait, for tests and notes.
    pub fn load(&self) -> (usize, usize) {
        let state = self.lock();
        (state.held.len(), state.waiting.len())
    }
}

/// Records `id` as holding a slot; a background call gets the receiver it
/// is asked to yield on.
fn hold(state: &mut State, id: u64, priority: Priority) -> Option<oneshot::Receiver<()>> {
    let (yield_to, yield_rx) = if priority == Priority::Background {
        let (tx, rx) = oneshot::channel();
        (Some(tx), Some(rx))
    } else {
        (None, None)
    };
    state.held.push(Holder {
        id,
        priority,
        yield_to,
    });
    yield_rx
}

/// Asks background holders to yield, one per urgent call waiting that no
/// yield already covers.
fn ask_to_yield(state: &mut State) {
    let urgent = state
        .waiting
        .iter()
        .filter(|w| w.priority > Priority::Background && !w.grant.is_closed())
        .count();
    let asked = state
        .held
        .iter()
        .filter(|h| h.priority == Priority::Background && h.yield_to.is_none())
        .count();
    for holder in state
        .held
        .iter_mut()
        .rev()
        .filter(|h| h.yield_to.is_some())
        .take(urgent.saturating_sub(asked))
    {
        if let Some(tx) = holder.yield_to.take() {
            let _ = tx.send(());
        }
    }
}

/// The slots every client of `base_url` in this process shares, limited to
/// `limit` calls at once; `None` when `limit` is 0 (no limit).
pub fn for_endpoint(base_url: &str, limit: usize) -> Option<Arc<Slots>> {
    static ENDPOINTS: OnceLock<Mutex<HashMap<String, Weak<Slots>>>> = OnceLock::new();
    if limit == 0 {
        return None;
    }
    let mut endpoints = ENDPOINTS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    endpoints.retain(|_, slots| slots.strong_count() > 0);
    if let Some(slots) = endpoints.get(base_url).and_then(Weak::upgrade) {
        return Some(slots);
    }
    let slots = Slots::new(limit);
    endpoints.insert(base_url.to_string(), Arc::downgrade(&slots));
    Some(slots)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Polls `f` once: whether it is ready now.
    fn ready<F: std::future::Future>(f: std::pin::Pin<&mut F>) -> Option<F::Output> {
        let waker = std::task::Waker::noop();
        match f.poll(&mut std::task::Context::from_waker(waker)) {
            std::task::Poll::Ready(v) => Some(v),
            std::task::Poll::Pending => None,
        }
    }

    /// A slot free now.
    fn take(slots: &Arc<Slots>, priority: Priority) -> Permit {
        ready(std::pin::pin!(slots.acquire(priority))).expect("a free slot")
    }

    #[test]
    fn a_freed_slot_goes_to_the_most_urgent_waiting_call() {
        let slots = Slots::new(1);
        let first = take(&slots, Priority::Vision);
        let mut summary = Box::pin(slots.acquire(Priority::Background));
        let mut intent = Box::pin(slots.acquire(Priority::Intent));
        let mut decide = Box::pin(slots.acquire(Priority::Decide));
        assert!(ready(summary.as_mut()).is_none());
        assert!(ready(intent.as_mut()).is_none());
        assert!(ready(decide.as_mut()).is_none());
        assert_eq!(slots.load(), (1, 3));
        drop(first);
        assert!(ready(summary.as_mut()).is_none());
        assert!(ready(intent.as_mut()).is_none());
        let decision = ready(decide.as_mut()).expect("the decision went first");
        drop(decision);
        assert!(ready(summary.as_mut()).is_none());
        let heard = ready(intent.as_mut()).expect("then the intent");
        drop(heard);
        assert!(ready(summary.as_mut()).is_some(), "then the summary");
    }

    #[test]
    fn a_background_call_yields_its_slot_to_a_decision() {
        let slots = Slots::new(1);
        let mut summary = take(&slots, Priority::Background);
        assert!(ready(std::pin::pin!(summary.yielded())).is_none());
        let mut decide = Box::pin(slots.acquire(Priority::Decide));
        assert!(ready(decide.as_mut()).is_none());
        assert!(
            ready(std::pin::pin!(summary.yielded())).is_some(),
            "the summary is asked to give its slot up"
        );
        drop(summary);
        let mut decision = ready(decide.as_mut()).expect("the decision has the slot");
        // A decision is never asked to yield, whoever waits.
        let mut other = Box::pin(slots.acquire(Priority::Decide));
        assert!(ready(other.as_mut()).is_none());
        assert!(ready(std::pin::pin!(decision.yielded())).is_none());
    }

    #[test]
    fn a_call_that_stopped_waiting_is_skipped_and_endpoints_share_their_slots() {
        let slots = Slots::new(1);
        let held = take(&slots, Priority::Decide);
        let mut waiting: Vec<_> = [Priority::Decide, Priority::Intent]
            .map(|p| Box::pin(slots.acquire(p)))
            .into_iter()
            .collect();
        assert!(waiting.iter_mut().all(|w| ready(w.as_mut()).is_none()));
        let mut next = waiting.pop().unwrap();
        drop(waiting);
        drop(held);
        assert!(ready(next.as_mut()).is_some());
        let a = for_endpoint("http://127.0.0.1:1/v1", 1).unwrap();
        let b = for_endpoint("http://127.0.0.1:1/v1", 1).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert!(for_endpoint("http://127.0.0.1:1/v1", 0).is_none());
    }
}
