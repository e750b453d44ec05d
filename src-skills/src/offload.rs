//! Work the kernel hands off and never waits for: network calls (the alert
//! webhook, speech and transcription by a model) and blocking device IO (a
//! microphone recording) run on a small tokio runtime of their own; the
//! kernel polls for what has finished. Jobs can be aborted (barge-in).

use std::collections::HashMap;
use std::future::Future;
use std::sync::mpsc;

use tokio::runtime::Runtime;
use tokio::task::AbortHandle;

/// A runtime of one worker thread running jobs whose results are `T`.
pub struct Offload<T> {
    runtime: Option<Runtime>,
    done_tx: mpsc::Sender<(u64, T)>,
    done_rx: mpsc::Receiver<(u64, T)>,
    running: HashMap<u64, AbortHandle>,
    next: u64,
}

impl<T: Send + 'static> Offload<T> {
    /// Starts the runtime; its thread is called `name`.
    pub fn spawn(name: &str) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(name)
            .enable_all()
            .build()?;
        let (done_tx, done_rx) = mpsc::channel();
        Ok(Self {
            runtime: Some(runtime),
            done_tx,
            done_rx,
            running: HashMap::new(),
            next: 0,
        })
    }

    /// Starts `job`; its result comes back from [`Offload::finished`] under
    /// the returned id.
    pub fn submit(&mut self, job: impl Future<Output = T> + Send + 'static) -> u64 {
        self.next += 1;
        let id = self.next;
        let tx = self.done_tx.clone();
        if let Some(runtime) = &self.runtime {
            let handle = runtime.spawn(async move {
                let out = job.await;
                let _ = tx.send((id, out));
            });
            self.running.insert(id, handle.abort_handle());
        }
        id
    }

    /// Jobs that ended since the last call, with their results.
    pub fn finished(&mut self) -> Vec<(u64, T)> {
        let done: Vec<_> = self.done_rx.try_iter().collect();
        for (id, _) in &done {
            self.running.remove(id);
        }
        done
    }

    /// Stops job `id` if it still runs; whether it did.
    pub fn abort(&mut self, id: u64) -> bool {
        self.running.remove(&id).is_some_and(|h| {
            h.abort();
            true
        })
    }

    /// Whether any job is still running.
    pub fn is_busy(&self) -> bool {
        !self.running.is_empty()
    }
}

impl<T> Drop for Offload<T> {
    fn drop(&mut self) {
        // Never blocks, so a face may drop the engine inside its own runtime.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn wait<T: Send + 'static>(o: &mut Offload<T>) -> Vec<(u64, T)> {
        for _ in 0..500 {
            let done = o.finished();
            if !done.is_empty() {
                return done;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Vec::new()
    }

    #[test]
    fn jobs_finish_off_the_calling_thread_and_can_be_aborted() {
        let mut o = Offload::spawn("rb-test").unwrap();
        let caller = std::thread::current().id();
        let slow = o.submit(async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            std::thread::current().id()
        });
        let quick = o.submit(async { std::thread::current().id() });
        assert!(o.is_busy());
        let done = wait(&mut o);
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].0, quick);
        assert_ne!(done[0].1, caller);
        assert!(o.abort(slow));
        assert!(!o.abort(slow), "aborted once");
        assert!(!o.is_busy());
    }
}
