//! The async handle every face holds: `Command` in, `Event` out, `Snapshot`
//! on demand. One thread owns the [`Engine`]; nobody else touches its state.
//!
//! The kernel runs on its own OS thread rather than as a task on the faces'
//! async runtime, so that a command — above all an E-stop — wakes it within
//! microseconds whatever the faces are doing (seed 003 §2.1: keep the safety
//! path on its own executor). Faces still talk to it with `async` calls.
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

use std::sync::mpsc as std_mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use thiserror::Error;
use tokio::sync::{broadcast, watch};

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
    /// The command queue is full (the kernel is not keeping up).
    #[error("the command queue is full")]
    Busy,
}

/// A running brain.
pub struct Runtime {
    commands: std_mpsc::SyncSender<Command>,
    events: broadcast::Sender<Event>,
    snapshot: watch::Receiver<Snapshot>,
    thread: Option<JoinHandle<()>>,
    ticks: TickTimes,
}

/// How long the last ticks took (compute and publish, not the wait between
/// them), newest last; at most [`TICKS_KEPT`].
#[derive(Clone, Default)]
struct TickTimes(std::sync::Arc<std::sync::Mutex<std::collections::VecDeque<Duration>>>);

/// Tick durations kept for [`Runtime::tick_durations`].
pub const TICKS_KEPT: usize = 100_000;

impl TickTimes {
    fn record(&self, took: Duration) {
        let mut t = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if t.len() == TICKS_KEPT {
            t.pop_front();
        }
        t.push_back(took);
    }
}

/// Events buffered per subscriber before a slow one starts losing the oldest.
const EVENT_BUFFER: usize = 8192;
/// How often a thinking brain is polled for streamed tokens between ticks.
const BRAIN_POLL: Duration = Duration::from_micros(500);
/// How far behind its schedule the clock may fall before it slips instead
/// of catching up.
const MAX_LAG: Duration = Duration::from_millis(50);
/// Commands buffered before `send` reports `Busy`.
const COMMAND_BUFFER: usize = 1024;

impl Runtime {
    /// Starts the engine on its own thread. Events emitted before a face
    /// subscribes are not seen by it; use [`Runtime::start_subscribed`] to
    /// see every event from the first (the snapshot).
    pub fn start(engine: Engine, pace: Pace) -> Self {
        Self::start_subscribed(engine, pace).0
    }

    /// Starts the engine with a subscriber attached before the first tick.
    pub fn start_subscribed(engine: Engine, pace: Pace) -> (Self, broadcast::Receiver<Event>) {
        let (commands, rx) = std_mpsc::sync_channel(COMMAND_BUFFER);
        let (events, first) = broadcast::channel(EVENT_BUFFER);
        let (snap_tx, snapshot) = watch::channel(engine.snapshot());
        let out = events.clone();
        let ticks = TickTimes::default();
        let timed = ticks.clone();
        let thread = std::thread::Builder::new()
            .name("robobrain-kernel".into())
            .spawn(move || kernel(engine, pace, &rx, &out, &snap_tx, &timed))
            .ok();
        (
            Self {
                commands,
                events,
                snapshot,
                thread,
                ticks,
            },
            first,
        )
    }

    /// Sends a command; the kernel wakes for it at once (an E-stop reaches
    /// the robot before the next tick).
    #[allow(clippy::unused_async)]
    pub async fn send(&self, command: Command) -> Result<(), RuntimeError> {
        self.commands.try_send(command).map_err(|e| match e {
            std_mpsc::TrySendError::Full(_) => RuntimeError::Busy,
            std_mpsc::TrySendError::Disconnected(_) => RuntimeError::Stopped,
        })
    }

    /// A receiver of every event from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    /// The state as of the last tick.
    pub fn snapshot(&self) -> Snapshot {
        self.snapshot.borrow().clone()
    }

    /// How long the last ticks took on the kernel thread (the tick and
    /// publishing its events and snapshot), oldest first: what a face's
    /// load could slow down.
    pub fn tick_durations(&self) -> Vec<Duration> {
        let t = self
            .ticks
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        t.iter().copied().collect()
    }

    /// Whether the kernel thread has ended (after `Shutdown`).
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Stops the kernel and waits (at most two seconds) until it has
    /// brought the robot to rest and closed the thread; for faces that
    /// share the handle and cannot give it up ([`Runtime::shutdown`]).
    pub async fn stop(&self) {
        let _ = self.commands.try_send(Command::Shutdown);
        let deadline = Instant::now() + Duration::from_secs(2);
        while !self.is_finished() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Stops the kernel and waits for it (at most two seconds).
    pub async fn shutdown(mut self) {
        let _ = self.commands.try_send(Command::Shutdown);
        let Some(thread) = self.thread.take() else {
            return;
        };
        let joined = tokio::task::spawn_blocking(move || thread.join());
        let _ = tokio::time::timeout(Duration::from_secs(2), joined).await;
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        let _ = self.commands.try_send(Command::Shutdown);
    }
}

/// The kernel thread: drives the engine until `Shutdown`; then, or after a
/// panic (caught here), the engine brings the robot to rest and closes, and
/// faces get the last events.
fn kernel(
    mut engine: Engine,
    pace: Pace,
    commands: &std_mpsc::Receiver<Command>,
    events: &broadcast::Sender<Event>,
    snapshot: &watch::Sender<Snapshot>,
    ticks: &TickTimes,
) {
    let driven = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        drive(&mut engine, pace, commands, events, snapshot, ticks);
    }));
    if let Err(panic) = driven {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into());
        engine.halt_on_panic(&message);
    }
    // Brings the robot to rest, commits what is left and, if the thread is
    // done, marks it finished.
    engine.close();
    let mut buf = Vec::new();
    engine.take_events(&mut buf);
    publish(&mut engine, &mut buf, events, snapshot);
    snapshot.send_replace(engine.snapshot());
}

/// Commands as they come, ticks on the clock, until `Shutdown`.
fn drive(
    engine: &mut Engine,
    pace: Pace,
    commands: &std_mpsc::Receiver<Command>,
    events: &broadcast::Sender<Event>,
    snapshot: &watch::Sender<Snapshot>,
    ticks: &TickTimes,
) {
    let period = match pace {
        Pace::Fast => Duration::ZERO,
        Pace::RealTime { speed } => Duration::from_secs_f64(engine.dt() / speed.max(1e-3)),
    };
    let mut next_tick = Instant::now() + period;
    let mut buf = Vec::new();
    loop {
        let mut wait = next_tick.saturating_duration_since(Instant::now());
        if engine.is_thinking() {
            // A model is streaming: look for its tokens between ticks.
            wait = wait.min(BRAIN_POLL);
        }
        match commands.recv_timeout(wait) {
            Ok(Command::Shutdown) | Err(std_mpsc::RecvTimeoutError::Disconnected) => break,
            Ok(command) => engine.submit(command),
            Err(std_mpsc::RecvTimeoutError::Timeout) if Instant::now() < next_tick => {
                engine.pump(&mut buf);
                publish(engine, &mut buf, events, snapshot);
            }
            Err(std_mpsc::RecvTimeoutError::Timeout) => {
                let started = Instant::now();
                engine.tick(&mut buf);
                publish(engine, &mut buf, events, snapshot);
                ticks.record(started.elapsed());
                // A tick a little late (a wake-up after the timer) is made
                // up for, so the sim clock keeps its rate; one far behind (the
                // machine stalled) is not: the clock slips rather than bursts.
                next_tick += period;
                let now = Instant::now();
                if now > next_tick + MAX_LAG {
                    next_tick = now;
                }
            }
        }
    }
}

fn publish(
    engine: &mut Engine,
    buf: &mut Vec<Event>,
    events: &broadcast::Sender<Event>,
    snapshot: &watch::Sender<Snapshot>,
) {
    if buf.is_empty() {
        return;
    }
    // The snapshot first: a face that reacts to an event (an MCP client told
    // `confirmation_required`) and then reads the snapshot must find that
    // event's effect in it. The snapshot's `seq` says which events it covers.
    snapshot.send_replace(engine.snapshot());
    for event in buf.drain(..) {
        // No subscriber is not an error: events are also logged.
        let _ = events.send(event);
    }
}
