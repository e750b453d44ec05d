//! A run as every face that drives one sets it up: the thread id (the
//! config's, or `PREFIX-<unix seconds>`), the world, the robot (the
//! in-process simulator, or one in another process with `--robot`), the
//! durable store when asked for (`--thread`, `--db`, `--resume`), and the
//! JSONL event log every event goes to.

use std::fs::File;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use robobrain_core::config::Config;
use robobrain_core::engine::Engine;
use robobrain_core::eventlog::{self, EventLog};
use robobrain_core::link::RobotLink;
use robobrain_core::link::tcp::TcpLink;
use robobrain_core::sim::{SimLink, World};
use robobrain_core::store::Store;

/// What the durability flags ask of a run.
#[derive(Debug, Clone, Default)]
pub struct Durability {
    /// `--resume`: continue the thread from its last checkpoint.
    pub resume: bool,
    /// `--robot URL`: a robot in another process instead of the in-process simulator.
    pub robot: Option<String>,
    /// Whether to record the run in the database (`--thread` or `--db`).
    pub record: bool,
}

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

/// Sets up a run of `config` on the in-process simulator, not recorded;
/// `log` overrides `<runs_dir>/<thread>.jsonl`.
pub fn simulated(config: Config, prefix: &str, log: Option<&Path>) -> Result<Session> {
    open(config, prefix, log, &Durability::default())
}

/// Sets up a run of `config` as `durable` asks: the robot it names and, when
/// recording or resuming, the store attached (a resumed engine starts from
/// its last checkpoint). Says on stderr which thread is recorded where.
pub fn open(
    mut config: Config,
    prefix: &str,
    log: Option<&Path>,
    durable: &Durability,
) -> Result<Session> {
    let thread_id = config
        .thread_id
        .clone()
        .unwrap_or_else(|| fresh_thread_id(prefix));
    config.thread_id = Some(thread_id.clone());
    let world = World::resolve(&config.world)?;
    let link: Box<dyn RobotLink> = match &durable.robot {
        Some(url) => Box::new(TcpLink::connect(url)?.with_deadman(config.link.deadman_s)),
        None => Box::new(SimLink::new(world.clone(), config.seed)),
    };
    let mut engine = Engine::new(&config, world.clone(), link)?;
    if durable.record || durable.resume {
        record(&mut engine, &config, durable.resume)?;
    }
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

/// Records `engine`'s thread in the database `config` names (resuming it
/// from its last checkpoint when `resume`), and says so on stderr.
pub fn record(engine: &mut Engine, config: &Config, resume: bool) -> Result<()> {
    let path = config.db_path();
    let store = Store::open(&path, config.store.synchronous)
        .with_context(|| format!("the thread database {}", path.display()))?;
    engine.attach_store(store, &config.store, resume)?;
    // The first commit is made while attaching: a database another process
    // holds (or a full disk) stops the run here, before anything moves.
    if let Some(why) = engine.halted() {
        anyhow::bail!("the thread database {}: {why}", path.display());
    }
    eprintln!(
        "thread {}: {} in {}",
        engine.thread_id(),
        if resume { "resumed" } else { "recording" },
        path.display()
    );
    Ok(())
}

/// A fresh thread id: `prefix-<unix seconds>`.
pub fn fresh_thread_id(prefix: &str) -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("{prefix}-{secs}")
}
