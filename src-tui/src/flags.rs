//! What the subcommands share: the help of `--log`, the global flags
//! (`--robot`, `--thread`, `--resume`, `--db`) as the session builder's
//! options, and the async runtime a session runs on. Below `cli.rs` and
//! every subcommand, so no subcommand reaches back into `cli.rs`.

use anyhow::{Context, Result};
use robobrain_core::session::{RobotUrl, SessionOptions};
use tokio::runtime::Runtime;

/// Help for `--log`.
pub const LOG_HELP: &str = "Event log file (default: <runs_dir>/<thread_id>.jsonl)";

/// The durability and robot flags, as given.
#[derive(Debug, Clone, Default)]
pub struct Durability {
    /// `--resume`: continue the thread from its last checkpoint.
    pub resume: bool,
    /// `--robot URL`.
    pub robot: Option<String>,
    /// Whether to record the run in the database (`--thread` or `--db`).
    pub record: bool,
}

impl Durability {
    /// The session options of face `face` with these flags applied.
    pub fn options(&self, face: &'static str) -> Result<SessionOptions> {
        let robot = match &self.robot {
            Some(url) => url.parse::<RobotUrl>().context("--robot")?,
            None => RobotUrl::Sim,
        };
        Ok(SessionOptions {
            robot,
            resume: self.resume,
            record: self.record,
            ..SessionOptions::new(face)
        })
    }
}

/// The async runtime a subcommand runs its session on: `workers` threads
/// (the kernel has its own; the MCP services' workers and the run's
/// recorder run here, in lockstep runs too).
pub fn async_runtime(workers: usize) -> Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}
