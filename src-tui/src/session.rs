//! A simulated run as every face that drives one sets it up: the thread id
//! (the config's, or `PREFIX-<unix seconds>`), the world, the engine over the
//! in-process simulator, and the JSONL event log every event goes to.

use std::fs::File;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Result;
use robobrain_core::config::Config;
use robobrain_core::engine::Engine;
use robobrain_core::eventlog::{self, EventLog};
use robobrain_core::sim::World;

/// A run ready to start.
pub struct Session {
    /// The engine, not yet started.
    pub engine: Engine,
    /// Its world (the console draws it).
    pub world: World,
    /// The run's thread id.
    pub thread_id: String,
    /// The event log, created.
    pub log: EventLog<File>,
}

/// Sets up a simulated run of `config`; `log` overrides `<runs_dir>/<thread>.jsonl`.
pub fn simulated(mut config: Config, prefix: &str, log: Option<&Path>) -> Result<Session> {
    let thread_id = config
        .thread_id
        .clone()
        .unwrap_or_else(|| fresh_thread_id(prefix));
    config.thread_id = Some(thread_id.clone());
    let world = World::resolve(&config.world)?;
    let engine = Engine::simulated(&config, world.clone())?;
    let path = log.map_or_else(
        || eventlog::default_path(&config.runs_dir, &thread_id),
        Path::to_path_buf,
    );
    Ok(Session {
        engine,
        world,
        thread_id,
        log: EventLog::create(&path)?,
    })
}

/// A fresh thread id: `prefix-<unix seconds>`.
pub fn fresh_thread_id(prefix: &str) -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("{prefix}-{secs}")
}
