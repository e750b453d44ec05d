//! One synchronous tick of the brain: the kernel's K1–K6, then the ReAct
//! loop's R1–R8, with the robot link advanced by the tick's duration.
//!
//! The engine is deterministic for a seed: the scenario runner drives it in
//! lockstep, and the async [`crate::runtime`] drives it on a clock.

use crate::config::Config;
use crate::link::RobotLink;
use crate::protocol::{Command, Event, Snapshot};
use crate::sim::World;

/// Why an engine could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The configuration or world is inconsistent.
    #[error("{0}")]
    Setup(String),
}

/// The brain, its robot link and its state, advanced one tick at a time.
pub struct Engine {
    time: f64,
    dt: f64,
    world: World,
    link: Box<dyn RobotLink>,
    pending: Vec<Command>,
    thread_id: String,
}

impl Engine {
    /// An engine over an existing robot link.
    pub fn new(
        config: &Config,
        world: World,
        link: Box<dyn RobotLink>,
    ) -> Result<Self, EngineError> {
        Ok(Self {
            time: 0.0,
            dt: config.tick_s,
            world,
            link,
            pending: Vec::new(),
            thread_id: config.thread_id.clone().unwrap_or_else(|| "run".into()),
        })
    }

    /// An engine over the in-process simulator of `world`.
    pub fn simulated(config: &Config, world: World) -> Result<Self, EngineError> {
        let link = Box::new(PlaceholderLink);
        Self::new(config, world, link)
    }

    /// Queues a command; it is ingested at the start of the next tick (K1).
    pub fn submit(&mut self, command: Command) {
        self.pending.push(command);
    }

    /// Runs one tick and appends what happened to `out`.
    pub fn tick(&mut self, out: &mut Vec<Event>) {
        let _ = out;
        self.pending.clear();
        self.link.advance(self.dt);
        self.time += self.dt;
    }

    /// The full current state.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            thread_id: self.thread_id.clone(),
            time: self.time,
            world: self.world.name.clone(),
            ..Snapshot::default()
        }
    }

    /// Sim seconds since start.
    pub fn time(&self) -> f64 {
        self.time
    }

    /// Sim seconds per tick.
    pub fn dt(&self) -> f64 {
        self.dt
    }

    /// Whether nothing is left to do: no runnable task, no running skill, no
    /// pending approval and no queued command.
    pub fn is_settled(&self) -> bool {
        self.pending.is_empty()
    }
}

/// Stands in for the simulator link until it lands.
struct PlaceholderLink;

impl RobotLink for PlaceholderLink {
    fn send(&mut self, _request: crate::link::LinkRequest) -> Result<(), crate::link::LinkError> {
        Ok(())
    }
    fn advance(&mut self, _dt: f64) {}
    fn drain(&mut self, _out: &mut Vec<crate::link::LinkReply>) {}
}
