//! The async handle every face holds: `Command` in, `Event` out, `Snapshot`
//! on demand. One thread owns the [`Engine`]; nobody else touches its state.
//!
//! The kernel runs on its own OS thread rather than as a task on the faces'
//! async runtime, so that a command — above all an E-stop — wakes it within
//! microseconds whatever the faces are doing (seed 003 §2.1: keep the safety
//! path on its own executor). Faces still talk to it with `async` calls.
//!
//! Commands come in on two queues. The urgent one — the E-stop, `stop`,
//! `pause` ([`Command::is_urgent`]) — is unbounded and is drained whenever
//! the kernel thread wakes, and again before each ordinary command is taken
//! in: an E-stop reaches the robot, and `stop`/`pause` act, before anything
//! queued ahead of them. The ordinary queue is bounded ([`COMMAND_BUFFER`],
//! then `Busy`); at each tick at most [`INGEST_PER_TICK`] of its commands
//! are taken in, one at a time ([`Engine::take_in`]), so an urgent command
//! waits at most for the one command the kernel is working on — and that
//! work is bounded too, every utterance being capped at
//! [`MAX_UTTERANCE_BYTES`](crate::protocol::MAX_UTTERANCE_BYTES).
//!
//! An E-stop does not even wait for that when the robot link has an E-stop
//! line ([`crate::link::RobotLink::estop_line`], the TCP link has one): the
//! sender makes the line hold back the kernel's goals, queues the E-stop,
//! then writes a `stop_base` to the robot from its own thread before it
//! wakes the kernel, whose own, recorded stop follows. The line never
//! waits for the robot, so a robot that stops reading cannot keep the
//! E-stop from the kernel.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use robobrain_core::{config::Config, engine::Engine, protocol::{Command, Origin}, runtime::{Pace, Runtime}, world::World};
//! let config = Config::default();
//! let engine = Engine::simulated(&config, World::resolve(&config.world)?)?;
//! let brain = Runtime::start(engine, Pace::RealTime { speed: 1.0 });
//! let mut events = brain.subscribe();
//! brain.send(Command::Say { text: "巡逻一次厨房和客厅".into() }, Origin::console()).await?;
//! while let Ok(event) = events.recv().await {
//!     println!("{}", event.to_json());
//! }
//! # Ok(()) }
//! ```

use std::sync::Arc;
use std::sync::mpsc as std_mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use thiserror::Error;
use tokio::sync::{broadcast, watch};

use crate::engine::Engine;
use crate::link::EStopLine;
use crate::metrics::Histogram;
use crate::protocol::{Command, Event, Origin, Snapshot, TooLong};

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
    /// The command is over a size limit; it was not queued.
    #[error(transparent)]
    TooLong(#[from] TooLong),
    /// The command came through a door that may only watch (a viewer's
    /// token); it was not queued.
    #[error("{origin} may only watch: `{command}` was refused")]
    WatchOnly {
        /// The command's name (`say`, `estop`, …).
        command: &'static str,
        /// Where it came from.
        origin: Box<Origin>,
    },
}

impl RuntimeError {
    /// The `error` code faces report it with.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Stopped | Self::Busy => "not_sent",
            Self::TooLong(e) => e.code(),
            Self::WatchOnly { .. } => "watch_only",
        }
    }
}

/// What the kernel thread's queues carry: a command with its origin, or
/// the owner's stop.
enum Inbound {
    Command(Command, Origin),
    Stop,
}

/// Where faces put commands: the urgent queue or the ordinary one, and a
/// wake-up for the kernel thread. Cheap to clone; a face's input reader
/// holds one so that a line reaches the kernel without waiting on the
/// face's other work.
#[derive(Clone)]
pub struct CommandSender {
    urgent: std_mpsc::Sender<Inbound>,
    normal: std_mpsc::SyncSender<Inbound>,
    kernel: Option<std::thread::Thread>,
    /// The robot link's E-stop line: an E-stop is also written to the robot
    /// from the sender's thread, not waiting for the kernel thread.
    estop_line: Option<Arc<dyn EStopLine>>,
}

impl CommandSender {
    /// Queues a command from `origin` and wakes the kernel: an urgent one
    /// ([`Command::is_urgent`]) on the unbounded queue that is drained
    /// first, any other on the bounded one. Refuses, before it is queued,
    /// a command over a size limit and one from a door that may only
    /// watch ([`Origin::may_act`]).
    pub fn send(&self, command: Command, origin: Origin) -> Result<(), RuntimeError> {
        if !origin.may_act() {
            return Err(RuntimeError::WatchOnly {
                command: command.name(),
                origin: Box::new(origin),
            });
        }
        command.check_limits()?;
        if command.is_urgent() {
            let line = self
                .estop_line
                .as_ref()
                .filter(|_| command == Command::EStop);
            // The line holds back the kernel's goals from now until its own
            // stop, then the kernel has its E-stop, then the line writes —
            // all before the kernel thread is woken (woken, it may take this
            // core for the whole E-stop and its commit). Neither step waits
            // for the robot (`crate::link::tcp`).
            if let Some(line) = line {
                line.hold();
            }
            self.urgent
                .send(Inbound::Command(command, origin))
                .map_err(|_| RuntimeError::Stopped)?;
            if let Some(line) = line {
                // A line that cannot write leaves the kernel's own stop,
                // which follows in any case.
                let _ = line.stop();
            }
        } else {
            self.normal
                .try_send(Inbound::Command(command, origin))
                .map_err(|e| match e {
                    std_mpsc::TrySendError::Full(_) => RuntimeError::Busy,
                    std_mpsc::TrySendError::Disconnected(_) => RuntimeError::Stopped,
                })?;
        }
        self.wake();
        Ok(())
    }

    /// Stops the kernel, ahead of anything queued.
    fn stop(&self) {
        let _ = self.urgent.send(Inbound::Stop);
        self.wake();
    }

    fn wake(&self) {
        if let Some(kernel) = &self.kernel {
            kernel.unpark();
        }
    }
}

/// A running brain.
pub struct Runtime {
    commands: CommandSender,
    events: broadcast::Sender<Event>,
    snapshot: watch::Receiver<Snapshot>,
    thread: Option<JoinHandle<()>>,
    ticks: TickTimes,
}

/// How long the ticks took (compute and publish, not the wait between
/// them): the last ones, newest last, at most [`TICKS_KEPT`]; and every
/// one since the start in a histogram (for `/metrics`).
#[derive(Clone, Default)]
struct TickTimes(std::sync::Arc<std::sync::Mutex<Ticks>>);

#[derive(Default)]
struct Ticks {
    recent: std::collections::VecDeque<Duration>,
    histogram: Histogram,
}

/// Tick durations kept for [`Runtime::tick_durations`].
pub const TICKS_KEPT: usize = 100_000;

impl TickTimes {
    fn lock(&self) -> std::sync::MutexGuard<'_, Ticks> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn record(&self, took: Duration) {
        let mut t = self.lock();
        if t.recent.len() == TICKS_KEPT {
            t.recent.pop_front();
        }
        t.recent.push_back(took);
        t.histogram.observe(took.as_secs_f64());
    }
}

/// Percentiles of the kernel's tick times, in microseconds: what
/// `robobrain headless --ticks FILE` writes at exit, and what the fleet
/// benchmark compares between brains that publish to a broker and brains
/// that publish nothing (docs/benchmarks/fleet.md).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TickSummary {
    /// How many ticks were timed.
    pub ticks: usize,
    /// The median tick.
    pub p50_us: f64,
    /// The 90th percentile.
    pub p90_us: f64,
    /// The 99th percentile.
    pub p99_us: f64,
    /// The longest tick.
    pub max_us: f64,
}

impl TickSummary {
    /// The nearest-rank percentiles of `durations` (any order); all zero
    /// when there are none.
    pub fn of(durations: &[Duration]) -> Self {
        let mut us: Vec<f64> = durations.iter().map(|d| d.as_secs_f64() * 1e6).collect();
        us.sort_by(f64::total_cmp);
        let at = |q: f64| {
            if us.is_empty() {
                0.0
            } else {
                us[((us.len() - 1) as f64 * q).round() as usize]
            }
        };
        Self {
            ticks: us.len(),
            p50_us: at(0.5),
            p90_us: at(0.9),
            p99_us: at(0.99),
            max_us: at(1.0),
        }
    }
}

/// Events buffered per subscriber before a slow one starts losing the oldest.
const EVENT_BUFFER: usize = 8192;
/// How often a thinking brain is polled for streamed tokens between ticks.
const BRAIN_POLL: Duration = Duration::from_micros(500);
/// How far behind its schedule the clock may fall before it slips instead
/// of catching up.
const MAX_LAG: Duration = Duration::from_millis(50);
/// Ordinary commands buffered before `send` reports `Busy`.
pub const COMMAND_BUFFER: usize = 1024;
/// Ordinary commands handed to the engine per tick; the rest wait for the
/// next tick, so that queued input never makes one tick long.
pub const INGEST_PER_TICK: usize = 16;

impl Runtime {
    /// Starts the engine on its own thread. Events emitted before a face
    /// subscribes are not seen by it; use [`Runtime::start_subscribed`] to
    /// see every event from the first (the snapshot).
    pub fn start(engine: Engine, pace: Pace) -> Self {
        Self::start_subscribed(engine, pace).0
    }

    /// Starts the engine with a subscriber attached before the first tick.
    pub fn start_subscribed(engine: Engine, pace: Pace) -> (Self, broadcast::Receiver<Event>) {
        let (runtime, second) = Self::start_subscribed_twice(engine, pace);
        (runtime, second.0)
    }

    /// Starts the engine with two subscribers attached before the first
    /// tick: a face's, and its run log's (`crate::session`), so both see
    /// every event from the first.
    pub fn start_subscribed_twice(
        engine: Engine,
        pace: Pace,
    ) -> (
        Self,
        (broadcast::Receiver<Event>, broadcast::Receiver<Event>),
    ) {
        let (normal, normal_rx) = std_mpsc::sync_channel(COMMAND_BUFFER);
        let (urgent, urgent_rx) = std_mpsc::channel();
        let (events, first) = broadcast::channel(EVENT_BUFFER);
        let also = events.subscribe();
        let (snap_tx, snapshot) = watch::channel(engine.snapshot());
        let estop_line = engine.estop_line();
        let out = events.clone();
        let ticks = TickTimes::default();
        let timed = ticks.clone();
        let inbox = Inbox {
            urgent: urgent_rx,
            normal: normal_rx,
        };
        let thread = std::thread::Builder::new()
            .name("robobrain-kernel".into())
            .spawn(move || kernel(engine, pace, &inbox, &out, &snap_tx, &timed))
            .ok();
        let commands = CommandSender {
            urgent,
            normal,
            kernel: thread.as_ref().map(|t| t.thread().clone()),
            estop_line,
        };
        (
            Self {
                commands,
                events,
                snapshot,
                thread,
                ticks,
            },
            (first, also),
        )
    }

    /// Sends a command from `origin`; the kernel wakes for it at once (an
    /// E-stop reaches the robot before the next tick, ahead of any queued
    /// input). See [`CommandSender::send`].
    #[allow(clippy::unused_async)]
    pub async fn send(&self, command: Command, origin: Origin) -> Result<(), RuntimeError> {
        self.commands.send(command, origin)
    }

    /// A handle that sends commands without going through this one (for
    /// a face's input reader on its own thread).
    pub fn sender(&self) -> CommandSender {
        self.commands.clone()
    }

    /// A receiver of every event from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    /// The state as of each tick, for a follower that waits for changes
    /// (the Home Assistant publisher).
    pub fn snapshots(&self) -> watch::Receiver<Snapshot> {
        self.snapshot.clone()
    }

    /// The state as of the last tick.
    pub fn snapshot(&self) -> Snapshot {
        self.snapshot.borrow().clone()
    }

    /// How long the last ticks took on the kernel thread (the tick and
    /// publishing its events and snapshot), oldest first: what a face's
    /// load could slow down.
    pub fn tick_durations(&self) -> Vec<Duration> {
        self.ticks.lock().recent.iter().copied().collect()
    }

    /// Every tick's duration since the start, in the buckets of
    /// [`TICK_BOUNDS`](crate::metrics::TICK_BOUNDS) (seconds).
    pub fn tick_histogram(&self) -> Histogram {
        self.ticks.lock().histogram.clone()
    }

    /// Whether the kernel thread has ended (after `Shutdown`).
    pub fn is_finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Stops the kernel and waits (at most two seconds) until it has
    /// brought the robot to rest and closed the thread; for faces that
    /// share the handle and cannot give it up ([`Runtime::shutdown`]).
    pub async fn stop(&self) {
        self.commands.stop();
        let deadline = Instant::now() + Duration::from_secs(2);
        while !self.is_finished() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Stops the kernel and waits for it (at most two seconds).
    pub async fn shutdown(mut self) {
        self.commands.stop();
        let Some(thread) = self.thread.take() else {
            return;
        };
        let joined = tokio::task::spawn_blocking(move || thread.join());
        let _ = tokio::time::timeout(Duration::from_secs(2), joined).await;
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.commands.stop();
    }
}

/// The kernel thread's two queues.
struct Inbox {
    urgent: std_mpsc::Receiver<Inbound>,
    normal: std_mpsc::Receiver<Inbound>,
}

/// Whether the kernel goes on after taking in commands.
#[derive(PartialEq)]
enum Flow {
    Go,
    Stop,
}

impl Inbox {
    /// Takes in every urgent command at once — an E-stop through `submit`
    /// (the base is stopped before it returns), `stop` and `pause` straight
    /// into K1 — and publishes what they did. Returns `Stop` on shutdown.
    fn urgent(&self, engine: &mut Engine, out: &mut Outlet<'_>) -> Flow {
        let mut took = false;
        let flow = loop {
            match self.urgent.try_recv() {
                Ok(Inbound::Stop | Inbound::Command(Command::Shutdown, _))
                | Err(std_mpsc::TryRecvError::Disconnected) => {
                    break Flow::Stop;
                }
                Ok(Inbound::Command(Command::EStop, origin)) => {
                    engine.submit(Command::EStop, origin);
                    // Its events, for the faces.
                    engine.pump(&mut out.buf);
                }
                Ok(Inbound::Command(command, origin)) => {
                    engine.take_in(command, origin, &mut out.buf);
                }
                Err(std_mpsc::TryRecvError::Empty) => break Flow::Go,
            }
            took = true;
        };
        if took {
            out.publish(engine);
        }
        flow
    }

    /// Takes in at most [`INGEST_PER_TICK`] ordinary commands, in the order
    /// they came, one at a time: before each, whatever urgent command came
    /// meanwhile goes first.
    fn ordinary(&self, engine: &mut Engine, out: &mut Outlet<'_>) -> Flow {
        for _ in 0..INGEST_PER_TICK {
            if self.urgent(engine, out) == Flow::Stop {
                return Flow::Stop;
            }
            match self.normal.try_recv() {
                Ok(Inbound::Stop | Inbound::Command(Command::Shutdown, _))
                | Err(std_mpsc::TryRecvError::Disconnected) => {
                    return Flow::Stop;
                }
                Ok(Inbound::Command(command, origin)) => {
                    engine.take_in(command, origin, &mut out.buf);
                }
                Err(std_mpsc::TryRecvError::Empty) => break,
            }
        }
        Flow::Go
    }
}

/// Where the kernel thread's events go: the broadcast, after the snapshot.
struct Outlet<'a> {
    events: &'a broadcast::Sender<Event>,
    snapshot: &'a watch::Sender<Snapshot>,
    buf: Vec<Event>,
}

impl Outlet<'_> {
    fn publish(&mut self, engine: &Engine) {
        if self.buf.is_empty() {
            return;
        }
        // The snapshot first: a face that reacts to an event (an MCP client
        // told `confirmation_required`) and then reads the snapshot must
        // find that event's effect in it. The snapshot's `seq` says which
        // events it covers.
        self.snapshot.send_replace(engine.snapshot());
        for event in self.buf.drain(..) {
            // No subscriber is not an error: events are also logged.
            let _ = self.events.send(event);
        }
    }
}

/// The kernel thread: drives the engine until `Shutdown`; then, or after a
/// panic (caught here), the engine brings the robot to rest and closes, and
/// faces get the last events.
fn kernel(
    mut engine: Engine,
    pace: Pace,
    inbox: &Inbox,
    events: &broadcast::Sender<Event>,
    snapshot: &watch::Sender<Snapshot>,
    ticks: &TickTimes,
) {
    let driven = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        drive(&mut engine, pace, inbox, events, snapshot, ticks);
    }));
    if let Err(panic) = driven {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into());
        engine.halt_on_panic(&message);
    }
    // Brings the robot to rest (sent before anything is recorded), commits
    // what is left and, if the thread is done, marks it finished; faces
    // get the stop's events.
    engine.close();
    let mut out = Outlet {
        events,
        snapshot,
        buf: Vec::new(),
    };
    engine.take_events(&mut out.buf);
    out.publish(&engine);
    snapshot.send_replace(engine.snapshot());
}

/// Urgent commands whenever it wakes, ordinary ones and ticks on the
/// clock, until `Shutdown`.
fn drive(
    engine: &mut Engine,
    pace: Pace,
    inbox: &Inbox,
    events: &broadcast::Sender<Event>,
    snapshot: &watch::Sender<Snapshot>,
    ticks: &TickTimes,
) {
    let period = match pace {
        Pace::Fast => Duration::ZERO,
        Pace::RealTime { speed } => Duration::from_secs_f64(engine.dt() / speed.max(1e-3)),
    };
    let mut next_tick = Instant::now() + period;
    let mut out = Outlet {
        events,
        snapshot,
        buf: Vec::new(),
    };
    loop {
        if inbox.urgent(engine, &mut out) == Flow::Stop {
            break;
        }
        if Instant::now() >= next_tick {
            if inbox.ordinary(engine, &mut out) == Flow::Stop {
                break;
            }
            let started = Instant::now();
            engine.tick(&mut out.buf);
            out.publish(engine);
            ticks.record(started.elapsed());
            // A tick a little late (a wake-up after the timer) is made
            // up for, so the sim clock keeps its rate; one far behind (the
            // machine stalled) is not: the clock slips rather than bursts.
            next_tick += period;
            let now = Instant::now();
            if now > next_tick + MAX_LAG {
                next_tick = now;
            }
            continue;
        }
        let mut wait = next_tick.saturating_duration_since(Instant::now());
        if engine.is_thinking() {
            // A model is streaming: its tokens between ticks.
            engine.pump(&mut out.buf);
            out.publish(engine);
            wait = wait.min(BRAIN_POLL);
        }
        // A sender unparks this thread after queuing, so a command that
        // came since the queues were read ends the wait at once.
        std::thread::park_timeout(wait);
    }
    // What the engine holds that no tick published (a shutdown before the
    // first tick still shows the run's snapshot event).
    engine.pump(&mut out.buf);
    out.publish(engine);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::protocol::{EventKind, MAX_UTTERANCE_BYTES, Mode};
    use crate::world::World;

    #[test]
    fn tick_percentiles_are_nearest_rank_and_zero_without_ticks() {
        let ticks: Vec<Duration> = (1..=100).rev().map(Duration::from_micros).collect();
        let s = TickSummary::of(&ticks);
        assert_eq!(s.ticks, 100);
        assert_eq!(
            (s.p50_us, s.p90_us, s.p99_us, s.max_us),
            (51.0, 90.0, 99.0, 100.0)
        );
        assert_eq!(TickSummary::of(&[]).max_us, 0.0);
    }

    fn started() -> (Runtime, broadcast::Receiver<Event>) {
        let mut config = Config::default();
        config.speech.voice = crate::voice::VoiceChoice::Text;
        let world = World::resolve(&config.world).unwrap();
        let engine = Engine::simulated(&config, world).unwrap();
        Runtime::start_subscribed(engine, Pace::RealTime { speed: 1.0 })
    }

    /// A robot that hears nothing but counts the stops on its E-stop line.
    struct LineOnly(Arc<Stops>);

    #[derive(Default)]
    struct Stops(std::sync::atomic::AtomicUsize);

    impl EStopLine for Stops {
        fn hold(&self) {}
        fn stop(&self) -> Result<(), crate::link::LinkError> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(())
        }
    }

    impl crate::link::RobotLink for LineOnly {
        fn send(&mut self, _: crate::link::LinkRequest) -> Result<(), crate::link::LinkError> {
            Ok(())
        }
        fn advance(&mut self, _: f64) {}
        fn drain(&mut self, _: &mut Vec<crate::link::LinkReply>) {}
        fn estop_line(&self) -> Option<Arc<dyn EStopLine>> {
            Some(self.0.clone())
        }
    }

    #[tokio::test]
    async fn an_estop_is_on_the_line_before_send_returns_and_nothing_else_is() {
        let mut config = Config::default();
        config.speech.voice = crate::voice::VoiceChoice::Text;
        let world = World::resolve(&config.world).unwrap();
        let stops = Arc::new(Stops::default());
        let engine = Engine::new(&config, world, Box::new(LineOnly(stops.clone()))).unwrap();
        let (runtime, mut events) =
            Runtime::start_subscribed(engine, Pace::RealTime { speed: 1.0 });
        // The kernel thread is kept busy with a full queue; the line does
        // not wait for it.
        fill(&runtime).await;
        for command in [Command::Stop, Command::Pause] {
            runtime.send(command, Origin::console()).await.unwrap();
        }
        let count = || stops.0.load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!(
            count(),
            0,
            "only an E-stop takes the line, not stop or pause"
        );
        runtime
            .send(Command::EStop, Origin::console())
            .await
            .unwrap();
        assert_eq!(
            count(),
            1,
            "the line stopped the robot before send returned"
        );
        // The kernel takes the E-stop in as well.
        heard_before(&mut events, |k| {
            matches!(k, EventKind::Mode { to: Mode::Safe, .. })
        })
        .await;
        runtime.shutdown().await;
    }

    /// An utterance exactly at the limit that no parser understands.
    fn maximal() -> String {
        "zq ".repeat(MAX_UTTERANCE_BYTES / 3)
    }

    /// Fills the ordinary queue until it refuses; returns how many it took.
    async fn fill(runtime: &Runtime) -> usize {
        let text = maximal();
        let mut queued = 0;
        loop {
            match runtime
                .send(Command::Say { text: text.clone() }, Origin::console())
                .await
            {
                Ok(()) => queued += 1,
                Err(e) => {
                    assert_eq!(e, RuntimeError::Busy);
                    return queued;
                }
            }
        }
    }

    /// Events until `done` holds for one; how many utterances were taken
    /// in before it.
    async fn heard_before(
        events: &mut broadcast::Receiver<Event>,
        done: impl Fn(&EventKind) -> bool,
    ) -> usize {
        let mut heard = 0;
        let wait = Duration::from_secs(10);
        loop {
            let event = match tokio::time::timeout(wait, events.recv())
                .await
                .expect("the urgent command took effect")
            {
                Ok(event) => event,
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(e) => panic!("{e}"),
            };
            if done(&event.kind) {
                return heard;
            }
            if matches!(&event.kind, EventKind::Intent { utterance, .. } if utterance.len() > 100) {
                heard += 1;
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_estop_overtakes_a_full_queue_of_maximal_utterances() {
        let (runtime, mut events) = started();
        let queued = fill(&runtime).await;
        assert!(queued >= COMMAND_BUFFER, "{queued}");
        let sent = Instant::now();
        // The ordinary queue is full, and the E-stop still gets in.
        runtime
            .send(Command::EStop, Origin::console())
            .await
            .unwrap();
        let heard = heard_before(&mut events, |k| {
            matches!(k, EventKind::Mode { to: Mode::Safe, .. })
        })
        .await;
        let took = sent.elapsed();
        assert!(runtime.snapshot().estop);
        // Not processed after the input queued before it: at most what
        // the kernel was taking in when it came went first.
        assert!(
            heard <= INGEST_PER_TICK,
            "{heard} of {queued} utterances came first"
        );
        eprintln!(
            "E-stop behind {queued} maximal utterances: {took:?} ({heard} taken in before it)"
        );
        runtime.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pause_overtakes_queued_input() {
        let (runtime, mut events) = started();
        let queued = fill(&runtime).await;
        runtime
            .send(Command::Pause, Origin::console())
            .await
            .unwrap();
        let heard = heard_before(
            &mut events,
            |k| matches!(k, EventKind::Speech { text, .. } if text == "Nothing to pause."),
        )
        .await;
        assert!(
            heard <= INGEST_PER_TICK,
            "{heard} of {queued} utterances came first"
        );
        runtime.shutdown().await;
    }

    #[tokio::test]
    async fn an_utterance_over_the_limit_is_refused_before_it_is_queued() {
        let (runtime, _events) = started();
        let long = "a".repeat(MAX_UTTERANCE_BYTES + 1);
        let e = runtime
            .send(Command::Say { text: long }, Origin::console())
            .await
            .unwrap_err();
        assert!(
            matches!(e, RuntimeError::TooLong(TooLong::Utterance { bytes, .. }) if bytes == MAX_UTTERANCE_BYTES + 1),
            "{e}"
        );
        assert!(e.to_string().contains("4096-byte limit"), "{e}");
        runtime
            .send(Command::Say { text: maximal() }, Origin::console())
            .await
            .unwrap();
        runtime.shutdown().await;
    }

    #[tokio::test]
    async fn a_command_s_events_carry_its_origin_and_a_viewer_s_is_refused_unqueued() {
        use crate::protocol::{Door, Role};
        let (runtime, mut events) = started();
        let page = Origin::new(Door::Web, "ws#7 127.0.0.1:40000");
        runtime
            .send(
                Command::Say {
                    text: "go to the kitchen".into(),
                },
                page.clone(),
            )
            .await
            .unwrap();
        let mut intent = None;
        while intent.is_none() {
            let event = tokio::time::timeout(Duration::from_secs(10), events.recv())
                .await
                .expect("the utterance was taken in")
                .unwrap();
            if let EventKind::Intent { .. } = &event.kind {
                intent = Some(event);
            } else if let EventKind::Task { .. } = &event.kind {
                panic!("a task before its intent: {event:?}");
            }
        }
        assert_eq!(intent.unwrap().origin, Some(page.clone()));
        // The task it queued carries it too, and so does the snapshot's task.
        let task = loop {
            let event = events.recv().await.unwrap();
            if let EventKind::Task { .. } = &event.kind {
                break event;
            }
        };
        assert_eq!(task.origin, Some(page.clone()));

        let viewer = page.with_role(Role::Viewer);
        let e = runtime
            .send(Command::EStop, viewer.clone())
            .await
            .unwrap_err();
        assert_eq!(
            e,
            RuntimeError::WatchOnly {
                command: "estop",
                origin: Box::new(viewer)
            }
        );
        assert_eq!(e.code(), "watch_only");
        assert_eq!(
            e.to_string(),
            "web viewer: ws#7 127.0.0.1:40000 may only watch: `estop` was refused"
        );
        runtime.shutdown().await;
    }

    #[tokio::test]
    async fn shutdown_before_the_first_tick_still_publishes_the_snapshot_event() {
        let (runtime, mut events) = started();
        runtime
            .send(Command::Shutdown, Origin::console())
            .await
            .unwrap();
        let first = tokio::time::timeout(Duration::from_secs(5), events.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(first.kind.name(), "snapshot");
        for _ in 0..500 {
            if runtime.is_finished() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the kernel did not stop");
    }
}
