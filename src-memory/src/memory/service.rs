//! The [`MemoryManager`] on a thread of its own, so the kernel's tick never
//! waits for an embedding, an index write or a summary by the model (the
//! way `offload` and the `llm` worker keep network calls off the tick).
//!
//! The engine hands it messages (the operator's utterances, the robot's
//! speech) through a channel and never blocks; after each message the
//! thread rebuilds the planner's [`MemoryContext`] — retrieval runs for each
//! operator utterance — into one slot that the newest overwrites. The model
//! brain reads the slot when it builds a decision's input.

use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::context::MemoryContext;
use super::long::Retrieved;
use super::manager::MemoryManager;
use super::{MemoryConfig, MemoryError};
use crate::llm::LlmConfig;

enum Job {
    Message { role: String, content: String },
    State { key: String, value: String },
}

#[derive(Default)]
struct Shared {
    context: Option<MemoryContext>,
    notices: Vec<String>,
    /// Messages sent and not yet handled.
    pending: usize,
    token_budget: usize,
    /// How much is remembered, as of the last message handled.
    size: Option<crate::protocol::MemorySize>,
}

/// A handle on the memory thread (cheap to clone).
#[derive(Clone)]
pub struct MemoryHandle {
    tx: mpsc::Sender<Job>,
    shared: Arc<Mutex<Shared>>,
}

impl std::fmt::Debug for MemoryHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryHandle").finish_non_exhaustive()
    }
}

fn lock(shared: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MemoryHandle {
    /// Starts the memory thread for `session`. Opening (the database, the
    /// indexes, the model) happens on that thread; how it went arrives as notices.
    pub fn spawn(
        config: &MemoryConfig,
        runs_dir: &std::path::Path,
        llm: &LlmConfig,
        session: &str,
    ) -> Result<Self, MemoryError> {
        let (tx, rx) = mpsc::channel::<Job>();
        let shared = Arc::new(Mutex::new(Shared {
            token_budget: config.token_budget,
            ..Shared::default()
        }));
        let (config, runs_dir, llm, session) = (
            config.clone(),
            runs_dir.to_path_buf(),
            llm.clone(),
            session.to_string(),
        );
        let inner = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("rb-memory".into())
            .spawn(move || run(&config, &runs_dir, &llm, &session, &rx, &inner))
            .map_err(|e| MemoryError::Io {
                path: "rb-memory thread".into(),
                detail: e.to_string(),
            })?;
        Ok(Self { tx, shared })
    }

    /// Hands over a message (`user` or `assistant`); never blocks.
    pub fn add_message(&self, role: &str, content: &str) {
        let job = Job::Message {
            role: role.into(),
            content: content.into(),
        };
        self.send(job, "message not remembered");
    }

    /// Hands `job` to the memory thread, counted until it is handled; a
    /// stopped thread is a notice saying what was `lost`.
    fn send(&self, job: Job, lost: &str) {
        lock(&self.shared).pending += 1;
        if self.tx.send(job).is_err() {
            let mut s = lock(&self.shared);
            s.pending -= 1;
            s.notices.push(format!("memory thread has stopped: {lost}"));
        }
    }

    /// Sets session state `key` (the home's `last_devices`, `last_room`,
    /// `last_plan`: what "it" and "there" refer to), kept in the memory
    /// database and shown in the planner's input; never blocks.
    pub fn set_state(&self, key: &str, value: &str) {
        let job = Job::State {
            key: key.into(),
            value: value.into(),
        };
        self.send(job, "session state not kept");
    }

    /// The newest memory context, if any.
    pub fn context(&self) -> Option<MemoryContext> {
        lock(&self.shared).context.clone()
    }

    /// How much is remembered, as of the last message handled (`None`
    /// until the memory has opened, or when it could not).
    pub fn size(&self) -> Option<crate::protocol::MemorySize> {
        lock(&self.shared).size
    }

    /// The token budget of the memory part of the model's input.
    pub fn token_budget(&self) -> usize {
        lock(&self.shared).token_budget
    }

    /// Notices since the last call (repairs, fallbacks, errors).
    pub fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut lock(&self.shared).notices)
    }

    /// Waits until every message handed over is handled (tests, shutdown).
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        let end = Instant::now() + timeout;
        while Instant::now() < end {
            if lock(&self.shared).pending == 0 {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }
}

fn run(
    config: &MemoryConfig,
    runs_dir: &std::path::Path,
    llm: &LlmConfig,
    session: &str,
    rx: &mpsc::Receiver<Job>,
    shared: &Mutex<Shared>,
) {
    let mut manager = match MemoryManager::open_configured(config, runs_dir, llm, session) {
        Ok(m) => m,
        Err(e) => {
            let mut s = lock(shared);
            s.notices.push(format!("memory unavailable: {e}"));
            s.pending = 0;
            drop(s);
            // Keep draining so senders never pile up.
            for _ in rx {
                lock(shared).pending = 0;
            }
            return;
        }
    };
    let mut query = String::new();
    let mut retrieved: Vec<Retrieved> = Vec::new();
    let publish = |manager: &mut MemoryManager, query: &str, retrieved: &[Retrieved]| {
        let ctx = manager.context_with(query, retrieved.to_vec());
        let size = manager.long().db().size();
        let mut s = lock(shared);
        s.notices.extend(manager.take_notices());
        match size {
            Ok(size) => s.size = Some(size),
            Err(e) => s.notices.push(format!("memory size unknown: {e}")),
        }
        match ctx {
            Ok(c) => s.context = Some(c),
            Err(e) => s.notices.push(format!("memory context failed: {e}")),
        }
    };
    publish(&mut manager, &query, &retrieved);
    for job in rx {
        match job {
            Job::Message { role, content } => {
                match manager.add_message(&role, &content) {
                    Ok(_) if role == "user" => {
                        query = content;
                        match manager.retrieve_relevant_memories(&query, config.retrieve_k) {
                            Ok(found) => retrieved = found,
                            Err(e) => lock(shared)
                                .notices
                                .push(format!("memory retrieval failed: {e}")),
                        }
                    }
                    Ok(_) => {}
                    Err(e) => lock(shared)
                        .notices
                        .push(format!("message not remembered: {e}")),
                }
                publish(&mut manager, &query, &retrieved);
            }
            Job::State { key, value } => {
                let session = manager.session().to_string();
                if let Err(e) = super::prefs::set_state(manager.long().db(), &session, &key, &value)
                {
                    lock(shared)
                        .notices
                        .push(format!("session state `{key}` not kept: {e}"));
                }
                publish(&mut manager, &query, &retrieved);
            }
        }
        let mut s = lock(shared);
        s.pending = s.pending.saturating_sub(1);
    }
    // Every handle is gone: close the open window so nothing said is lost.
    if let Err(e) = manager.save_state() {
        lock(shared)
            .notices
            .push(format!("memory save failed: {e}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_service_remembers_off_the_calling_thread() {
        let dir = std::env::temp_dir().join(format!("rb-mem-svc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let config = MemoryConfig {
            dir: Some(dir.clone()),
            model_dir: Some(dir.join("no-model")),
            ..MemoryConfig::default()
        };
        let h = MemoryHandle::spawn(&config, &dir, &LlmConfig::default(), "run-1").unwrap();
        h.add_message("user", "the blue vase is in the study");
        h.add_message("assistant", "Noted: the blue vase is in the study.");
        h.add_message("user", "ok");
        h.add_message("user", "where is the blue vase?");
        h.add_message("user", "");
        assert!(h.wait_idle(Duration::from_secs(20)));
        h.set_state("last_room", "study");
        assert!(h.wait_idle(Duration::from_secs(20)));
        let ctx = h.context().unwrap();
        assert_eq!(ctx.query, "where is the blue vase?");
        let size = h.size().unwrap();
        assert_eq!(size.messages, 4, "the empty message is refused: {size:?}");
        assert!(size.memories >= 1, "a closed window is a memory: {size:?}");
        assert_eq!(
            ctx.state,
            vec![("last_room".to_string(), "study".to_string())]
        );
        assert!(
            ctx.retrieved[0].memory.content.contains("blue vase"),
            "{ctx:?}"
        );
        let notices = h.take_notices();
        assert!(
            notices.iter().any(|n| n.contains("BM25 alone")),
            "{notices:?}"
        );
        assert!(
            notices.iter().any(|n| n.contains("empty message")),
            "{notices:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
