//! The model calls' own thread: a small current-thread tokio runtime that
//! runs [`LlmClient`] calls and hands back what happens — streamed text and
//! the final result — through a channel the synchronous engine drains when it
//! likes. The engine never waits on the network; a face's runtime can wait on
//! [`LlmWorker::waker`] to show tokens the moment they arrive.

use std::sync::Arc;
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{Notify, mpsc};

use super::probe::Probe;
use super::{CallResult, LlmClient, LlmError};

/// One call to make.
struct Job {
    id: u64,
    purpose: String,
    /// The request; `Err(model)`: probe the endpoint with this model instead.
    body: Result<Value, String>,
}

/// What happened to a call.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// Text of choice 0 as it streamed.
    Token {
        /// The call.
        id: u64,
        /// What the call is for.
        purpose: String,
        /// The new text.
        text: String,
    },
    /// The call ended.
    Done {
        /// The call.
        id: u64,
        /// What the call was for.
        purpose: String,
        /// The reply and its accounting.
        result: CallResult,
    },
    /// A probe of the endpoint ended ([`LlmWorker::probe`]).
    Probed {
        /// The call.
        id: u64,
        /// What the endpoint honours.
        probe: Probe,
    },
}

/// A handle on the worker thread; dropping it stops the thread and abandons
/// calls in flight.
pub struct LlmWorker {
    jobs: mpsc::UnboundedSender<Job>,
    updates: std_mpsc::Receiver<Update>,
    notify: Arc<Notify>,
    next_id: u64,
}

impl LlmWorker {
    /// Starts the worker thread for `client`.
    pub fn spawn(client: LlmClient) -> Result<Self, LlmError> {
        let (jobs, mut rx) = mpsc::unbounded_channel::<Job>();
        let (tx, updates) = std_mpsc::channel();
        let notify = Arc::new(Notify::new());
        let wake = notify.clone();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| LlmError::Setup(e.to_string()))?;
        std::thread::Builder::new()
            .name("robobrain-llm".into())
            .spawn(move || {
                runtime.block_on(async move {
                    while let Some(job) = rx.recv().await {
                        let client = client.clone();
                        let tx: std_mpsc::Sender<Update> = tx.clone();
                        let wake = wake.clone();
                        tokio::spawn(async move {
                            let Job { id, purpose, body } = job;
                            let body = match body {
                                Ok(body) => body,
                                Err(model) => {
                                    let probe = super::probe::probe(&client, &model).await;
                                    let _ = tx.send(Update::Probed { id, probe });
                                    wake.notify_one();
                                    return;
                                }
                            };
                            let mut on_text = |text: &str| {
                                let _ = tx.send(Update::Token {
                                    id,
                                    purpose: purpose.clone(),
                                    text: text.to_string(),
                                });
                                wake.notify_one();
                            };
                            let role = super::Role::of_purpose(&purpose);
                            let result = client.chat_as(role, body, &mut on_text).await;
                            let _ = tx.send(Update::Done {
                                id,
                                purpose,
                                result,
                            });
                            wake.notify_one();
                        });
                    }
                });
            })
            .map_err(|e| LlmError::Setup(e.to_string()))?;
        Ok(Self {
            jobs,
            updates,
            notify,
            next_id: 0,
        })
    }

    /// Starts a call; its updates carry the returned id. `purpose` names
    /// its role ([`super::Role::of_purpose`]): its reply cap and its turn
    /// for the endpoint's slots.
    pub fn submit(&mut self, purpose: &str, body: Value) -> Result<u64, LlmError> {
        self.send(purpose, Ok(body))
    }

    /// Starts probing what the endpoint honours with `model`
    /// ([`super::probe`]); an [`Update::Probed`] with the returned id says
    /// what was found.
    pub fn probe(&mut self, model: &str) -> Result<u64, LlmError> {
        self.send("probe", Err(model.to_string()))
    }

    fn send(&mut self, purpose: &str, body: Result<Value, String>) -> Result<u64, LlmError> {
        self.next_id += 1;
        let id = self.next_id;
        self.jobs
            .send(Job {
                id,
                purpose: purpose.to_string(),
                body,
            })
            .map_err(|_| LlmError::WorkerGone)?;
        Ok(id)
    }

    /// The next update, if one is waiting.
    pub fn try_recv(&self) -> Option<Update> {
        self.updates.try_recv().ok()
    }

    /// The next update, waiting at most `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<Update> {
        self.updates.recv_timeout(timeout).ok()
    }

    /// Notified whenever an update is ready.
    pub fn waker(&self) -> Arc<Notify> {
        self.notify.clone()
    }
}
