//! The async handle every face holds: `Command` in, `Event` out, `Snapshot`
//! on demand. One task owns the [`Engine`]; nobody else touches its state.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use robobrain_core::{config::Config, engine::Engine, protocol::Command, runtime::{Pace, Runtime}, sim::World};
//! let config = Config::default();
//! let engine = Engine::simulated(&config, World::resolve(&config.world)?)?;
//! let brain = Runtime::start(engine, Pace::RealTime { speed: 1.0 });
//! let mut events = brain.subscribe();
//! brain.send(Command::Say { text: "巡逻一次厨房和客厅".into() }).await?;
//! while let Ok(event) = events.recv().await {
//!     println!("{}", event.to_json());
//! }
//! # Ok(()) }
//! ```

use std::time::Duration;

use thiserror::Error;
use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::engine::Engine;
use crate::protocol::{Command, Event, Snapshot};

/// How fast sim time passes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// As fast as the machine allows (deterministic for a seed only when
    /// commands are given before start; use the scenario runner for lockstep).
    Fast,
    /// Sim time runs `speed` times faster than the wall clock.
    RealTime {
        /// Sim seconds per wall second.
        speed: f64,
    },
}

/// Why a command could not be delivered.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The runtime has stopped.
    #[error("the runtime has stopped")]
    Stopped,
}

/// A running brain.
pub struct Runtime {
    commands: mpsc::Sender<Command>,
    events: broadcast::Sender<Event>,
    snapshot: watch::Receiver<Snapshot>,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

/// Events buffered per subscriber before a slow one starts losing the oldest.
const EVENT_BUFFER: usize = 8192;
/// Commands buffered before `send` waits.
const COMMAND_BUFFER: usize = 256;

enum Input {
    Command(Command),
    Tick,
    Closed,
    Cancelled,
}

impl Runtime {
    /// Starts the engine's task on the current tokio runtime.
    pub fn start(engine: Engine, pace: Pace) -> Self {
        let (commands, rx) = mpsc::channel(COMMAND_BUFFER);
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let (snap_tx, snapshot) = watch::channel(engine.snapshot());
        let cancel = CancellationToken::new();
        let task = tokio::spawn(drive(
            engine,
            pace,
            rx,
            events.clone(),
            snap_tx,
            cancel.clone(),
        ));
        Self {
            commands,
            events,
            snapshot,
            cancel,
            task,
        }
    }

    /// Sends a command; it is ingested at the start of the next tick.
    pub async fn send(&self, command: Command) -> Result<(), RuntimeError> {
        self.commands
            .send(command)
            .await
            .map_err(|_| RuntimeError::Stopped)
    }

    /// A receiver of every event from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    /// The state as of the last tick.
    pub fn snapshot(&self) -> Snapshot {
        self.snapshot.borrow().clone()
    }

    /// Whether the engine's task has ended (after `Shutdown`).
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Stops the engine's task and waits for it (at most two seconds, then aborts).
    pub async fn shutdown(self) {
        self.cancel.cancel();
        let mut task = self.task;
        if tokio::time::timeout(Duration::from_secs(2), &mut task)
            .await
            .is_err()
        {
            task.abort();
        }
    }
}

async fn drive(
    mut engine: Engine,
    pace: Pace,
    mut commands: mpsc::Receiver<Command>,
    events: broadcast::Sender<Event>,
    snapshot: watch::Sender<Snapshot>,
    cancel: CancellationToken,
) {
    let period = match pace {
        Pace::Fast => None,
        Pace::RealTime { speed } => Some(Duration::from_secs_f64(engine.dt() / speed.max(1e-3))),
    };
    let mut interval = period.map(|p| {
        let mut i = tokio::time::interval(p);
        i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        i
    });
    let mut buf = Vec::new();
    loop {
        let input = tokio::select! {
            biased;
            () = cancel.cancelled() => Input::Cancelled,
            cmd = commands.recv() => cmd.map_or(Input::Closed, Input::Command),
            () = next_tick(interval.as_mut()) => Input::Tick,
        };
        match input {
            Input::Cancelled | Input::Closed | Input::Command(Command::Shutdown) => break,
            Input::Command(cmd) => engine.submit(cmd),
            Input::Tick => {
                engine.tick(&mut buf);
                for event in buf.drain(..) {
                    // No subscriber is not an error: events are also logged.
                    let _ = events.send(event);
                }
                snapshot.send_replace(engine.snapshot());
            }
        }
    }
    // Commits what is left and, if the thread is done, marks it finished.
    engine.close();
    snapshot.send_replace(engine.snapshot());
}

async fn next_tick(interval: Option<&mut tokio::time::Interval>) {
    match interval {
        Some(i) => {
            i.tick().await;
        }
        None => tokio::task::yield_now().await,
    }
}
