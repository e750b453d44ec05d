//! `robobrain headless`: the async [`Runtime`] with JSONL events on stdout.
//!
//! Stdin is read a line at a time (bytes, on a thread of its own:
//! [`robobrain_tui::operator`]): a line starting with `{` is a `Command` as
//! JSON, anything else is something said. A bad line — not JSON, not
//! UTF-8, over the size limit — gets an `error` JSON line on stderr naming
//! the line and what was expected; the run goes on. The run stops after
//! `--duration` sim seconds (counted from where a resumed thread was), after
//! a `shutdown` command, or once stdin has ended and the robot has had
//! nothing to do for [`SETTLE_S`] sim seconds — or has waited `--grace` sim
//! seconds for an approval nobody can give any more — or on SIGTERM /
//! SIGINT (exit 143 / 130). Every way out brings the robot to rest first
//! (the engine's close).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use robobrain_core::config::Config;
use robobrain_core::engine::Engine;
use robobrain_core::protocol::{Command, Event, EventKind, Origin, Snapshot, TaskStatus};
use robobrain_core::runtime::{Pace, Runtime, TickSummary};
use robobrain_core::session::{Run, RunLog, Session, SessionOptions};
use serde_json::json;
use tokio::signal::unix::SignalKind;
use tokio::sync::{broadcast, mpsc};

use crate::flags::{Durability, LOG_HELP, MCAP_HELP};

/// Sim seconds of nothing to do, after stdin ends, before the run stops.
pub(crate) const SETTLE_S: f64 = 2.0;
/// Default of `--grace`: sim seconds the run waits, once stdin has ended,
/// for an approval nobody can give any more.
pub(crate) const GRACE_S: f64 = 30.0;
/// Wall time between checks of the clock and the settled state.
const POLL: Duration = Duration::from_millis(20);

/// Arguments of `robobrain headless`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// As fast as possible (no pacing).
    #[arg(long)]
    pub fast: bool,
    /// Sim seconds per wall second.
    #[arg(long, value_name = "N", default_value_t = 1.0)]
    pub speed: f64,
    /// Stop after this many sim seconds.
    #[arg(long, value_name = "S")]
    pub duration: Option<f64>,
    /// Say this at start (repeatable).
    #[arg(long, value_name = "TEXT")]
    pub say: Vec<String>,
    /// Once stdin has ended, sim seconds to wait for a pending approval (nobody can give it) before ending.
    #[arg(long, value_name = "S", default_value_t = GRACE_S)]
    pub grace: f64,
    #[arg(long, value_name = "FILE", help = LOG_HELP)]
    pub log: Option<PathBuf>,
    #[arg(long, value_name = "FILE", help = MCAP_HELP)]
    pub mcap: Option<PathBuf>,
    /// At exit, write the kernel's tick-time percentiles to FILE as JSON
    /// (real-time runs; for benchmarks: docs/benchmarks/fleet.md).
    #[arg(long, value_name = "FILE", conflicts_with = "fast")]
    pub ticks: Option<PathBuf>,
}

use robobrain_tui::operator::{Forwarded, LineReader, ReadLine};
pub(crate) use robobrain_tui::operator::{Line, error_line, parse_line};

/// Whether the robot has nothing left to do: no running skill, no approval
/// waiting, no task queued, running or set aside.
pub(crate) fn is_idle(s: &Snapshot) -> bool {
    s.running.is_empty()
        && s.approvals.is_empty()
        && !s.tasks.iter().any(|t| {
            matches!(
                t.status,
                TaskStatus::Queued | TaskStatus::Running | TaskStatus::Preempted
            )
        })
}

/// The wait for approvals nobody can give any more, once stdin has ended.
struct Grace {
    /// `--grace`, sim seconds.
    grace: f64,
    /// Since when the run has been waiting for nothing but approvals.
    since: Option<f64>,
}

impl Grace {
    fn new(grace: f64) -> Self {
        Self { grace, since: None }
    }

    /// Whether the grace is over at `snap`: the run has waited `--grace`
    /// sim seconds for pending approvals while the robot ran nothing. Says
    /// on stderr, when the wait starts, what it waits for.
    fn over(&mut self, snap: &Snapshot) -> bool {
        if snap.approvals.is_empty() || !snap.running.is_empty() {
            self.since = None;
            return false;
        }
        let since = *self.since.get_or_insert_with(|| {
            let what: Vec<String> = snap
                .approvals
                .iter()
                .map(|a| format!("{} ({})", a.approval_id, a.reason))
                .collect();
            let message = format!(
                "waiting for approval {}, but stdin has ended and nobody can give it: \
                 ending in {} sim seconds (--grace) unless it is answered; the thread \
                 keeps the approval for a --resume",
                what.join(", "),
                self.grace
            );
            eprintln!(
                "{}",
                json!({"kind": "log", "level": "warn", "message": message})
            );
            snap.time
        });
        snap.time - since >= self.grace
    }
}

/// Runs headless: the run from the session builder, driven in lockstep
/// (`--fast`) or started at real-time pace.
pub(crate) fn run(config: &Config, args: &Args, durable: &Durability) -> Result<ExitCode> {
    if let Some(d) = args.duration {
        anyhow::ensure!(
            d.is_finite() && d > 0.0,
            "--duration: expected positive sim seconds, found {d}"
        );
    }
    anyhow::ensure!(
        args.grace.is_finite() && args.grace >= 0.0,
        "--grace: expected sim seconds ≥ 0, found {}",
        args.grace
    );
    let options = SessionOptions {
        pace: Pace::RealTime { speed: args.speed },
        log: args.log.clone(),
        mcap: args.mcap.clone(),
        say: args.say.clone(),
        ..durable.options("run")?
    };
    // The configured MCP services' workers run on this runtime's thread,
    // beside the kernel's, in lockstep runs too.
    let rt = crate::flags::async_runtime(1)?;
    let run = rt.block_on(Run::assemble(config, options))?;
    if args.fast {
        let (engine, log) = run.into_lockstep();
        // Signals are noted on the runtime's thread; the loop stops at the next tick.
        let signalled = Arc::new(AtomicI32::new(0));
        {
            let _runtime = rt.enter();
            note_signals(Arc::clone(&signalled))?;
        }
        return lockstep(engine, args, log, &signalled);
    }
    // A resumed thread counts its duration from where it was (read before
    // the kernel starts, which moves the clock on at once).
    let limit = args.duration.map_or(f64::INFINITY, |d| run.time() + d);
    let fleet = config.fleet.broker.is_some();
    rt.block_on(async { drive(run.start().await?, args, limit, fleet).await })
}

/// `--fast`: nobody can answer at machine speed, so stdin is read to its end
/// first and every command is given at t = 0 (a `shutdown` ends the run
/// after the first tick); the engine then runs in lockstep (deterministic
/// for a seed, no event dropped).
fn lockstep(
    mut engine: Engine,
    args: &Args,
    mut log: RunLog,
    signalled: &AtomicI32,
) -> Result<ExitCode> {
    let mut shutdown = false;
    for line in LineReader::new(std::io::stdin().lock()) {
        match line.context("cannot read stdin")? {
            ReadLine::Text(n, text) => match parse_line(&text) {
                Line::Command(Command::Shutdown) => shutdown = true,
                Line::Command(cmd) => engine.submit(cmd, Origin::headless()),
                Line::Blank => {}
                Line::Bad(r) => error_line("stdin", Some(n), r.code, &r.why),
            },
            ReadLine::Refused(n, r) => error_line("stdin", Some(n), r.code, &r.why),
        }
    }
    // A resumed thread counts its duration from where it was.
    let limit = args.duration.map_or(f64::INFINITY, |d| engine.time() + d);
    let mut out = std::io::stdout();
    let mut events = Vec::new();
    let mut idle_since: Option<f64> = None;
    let mut grace = Grace::new(args.grace);
    while engine.time() + engine.dt() <= limit + 1e-9 {
        if engine.is_thinking() {
            // Lockstep: sim time stands still while a model thinks.
            engine.wait_brain(std::time::Duration::from_millis(20));
            engine.pump(&mut events);
        } else {
            engine.tick(&mut events);
        }
        log.write_batch(&events)?;
        for event in events.drain(..) {
            if emit(&mut out, &event).is_err() {
                log.finish()?;
                return Ok(ExitCode::SUCCESS); // stdout closed: nobody is listening.
            }
        }
        if let Some(why) = engine.halted() {
            let why = why.to_string();
            engine.shutdown();
            anyhow::bail!("the thread was paused: {why}");
        }
        if shutdown {
            break;
        }
        let n = signalled.load(Ordering::Relaxed);
        if n != 0 {
            // Brings the robot to rest before the process ends.
            engine.shutdown();
            log.finish()?;
            return Ok(ExitCode::from(128 + n as u8));
        }
        if engine.is_settled() {
            let since = *idle_since.get_or_insert(engine.time());
            if engine.time() - since >= SETTLE_S {
                break;
            }
            continue;
        }
        idle_since = None;
        if grace.over(&engine.snapshot()) {
            break;
        }
    }
    engine.shutdown();
    log.finish()?;
    Ok(ExitCode::SUCCESS)
}

/// Listens for SIGTERM and SIGINT (on the runtime entered) and stores the
/// number of the first that arrives in `signalled`.
fn note_signals(signalled: Arc<AtomicI32>) -> Result<()> {
    let listen = |kind| tokio::signal::unix::signal(kind).context("cannot listen for signals");
    let (mut term, mut interrupt) = (
        listen(SignalKind::terminate())?,
        listen(SignalKind::interrupt())?,
    );
    tokio::spawn(async move {
        let n = tokio::select! {
            _ = term.recv() => 15,
            _ = interrupt.recv() => 2,
        };
        signalled.store(n, Ordering::Relaxed);
    });
    Ok(())
}

/// What woke the loop.
enum Input {
    Event(Result<Box<Event>, broadcast::error::RecvError>),
    Stdin(Option<Forwarded>),
    Poll,
    /// SIGTERM or SIGINT: the run stops, the robot is brought to rest.
    Signal(i32),
}

/// When the run is over, as far as the clock and the operator go: what the
/// poll of [`drive`] checks.
struct Watch {
    /// The sim time the run stops at (`--duration`).
    limit: f64,
    /// On a fleet: the run outlives stdin.
    fleet: bool,
    /// Stdin has not ended yet.
    stdin_open: bool,
    /// Since when the robot has had nothing to do (after stdin ended).
    idle_since: Option<f64>,
    /// The wait for approvals nobody can give any more.
    grace: Grace,
    /// Sim time of the last command read from stdin.
    last_command_at: f64,
}

impl Watch {
    /// Stdin open, nothing waited for yet.
    fn new(limit: f64, fleet: bool, grace: f64) -> Self {
        Self {
            limit,
            fleet,
            stdin_open: true,
            idle_since: None,
            grace: Grace::new(grace),
            last_command_at: 0.0,
        }
    }

    /// Whether the run is over at `snap`: the limit is reached, or stdin has
    /// ended and the robot has settled (or waited out its grace).
    fn over(&mut self, snap: &Snapshot) -> bool {
        if snap.time >= self.limit {
            return true;
        }
        // On a fleet the broker is the operator's line: the run
        // goes on when stdin ends, until a signal.
        if self.stdin_open || self.fleet {
            return false;
        }
        if is_idle(snap) && snap.time >= self.last_command_at + SETTLE_S {
            let since = *self.idle_since.get_or_insert(snap.time);
            if snap.time - since >= SETTLE_S {
                return true;
            }
        } else {
            self.idle_since = None;
        }
        self.grace.over(snap)
    }
}

/// The started run: events to stdout (the session's recorder writes the
/// log), operator lines from stdin.
async fn drive(mut session: Session, args: &Args, limit: f64, fleet: bool) -> Result<ExitCode> {
    // Subscribed before the first tick, so no event is missed.
    let mut events = session.take_events();
    let brain = session.runtime();
    let mut lines = forward_stdin(brain);
    let mut watch = Watch::new(limit, fleet, args.grace);
    let mut poll = tokio::time::interval(POLL);
    let mut out = std::io::stdout();
    let mut halted = None;
    let mut signalled = None;
    let listen = |kind| tokio::signal::unix::signal(kind).context("cannot listen for signals");
    let mut term = listen(SignalKind::terminate())?;
    let mut interrupt = listen(SignalKind::interrupt())?;
    loop {
        let input = tokio::select! {
            _ = term.recv() => Input::Signal(15),
            _ = interrupt.recv() => Input::Signal(2),
            ev = events.recv() => Input::Event(ev.map(Box::new)),
            line = lines.recv(), if watch.stdin_open => Input::Stdin(line),
            _ = poll.tick() => Input::Poll,
        };
        match input {
            Input::Event(Ok(event)) => {
                if event.time > limit + 1e-9 {
                    break;
                }
                if let EventKind::Error { code, message } = &event.kind
                    && code == "store_failed"
                {
                    halted = Some(message.clone());
                }
                if emit(&mut out, &event).is_err() {
                    break; // stdout closed: nobody is listening.
                }
            }
            Input::Event(Err(broadcast::error::RecvError::Lagged(n))) => {
                error_line(
                    "stdout",
                    None,
                    "lagged",
                    &format!("{n} events were dropped: the reader fell behind"),
                );
            }
            Input::Event(Err(broadcast::error::RecvError::Closed)) => break,
            Input::Signal(n) => {
                signalled = Some(n);
                break;
            }
            Input::Stdin(None | Some(Forwarded::End)) => watch.stdin_open = false,
            Input::Stdin(Some(Forwarded::Sent(_))) => {
                watch.last_command_at = brain.snapshot().time;
            }
            Input::Poll => {
                // Stopped by a `shutdown` command, or halted.
                if halted.is_some() || brain.is_finished() || watch.over(&brain.snapshot()) {
                    break;
                }
            }
        }
    }
    wind_down(
        &session,
        &mut events,
        &mut out,
        limit,
        args.ticks.as_deref(),
    )
    .await?;
    if let Some(why) = halted {
        anyhow::bail!("the thread was paused: {why}");
    }
    // The status a shell reports for a process the signal ended.
    Ok(signalled.map_or(ExitCode::SUCCESS, |n| ExitCode::from(128 + n as u8)))
}

/// Starts reading stdin on a thread of its own; each command goes straight
/// to the kernel, and what was read is told on the channel returned.
fn forward_stdin(brain: &Runtime) -> mpsc::UnboundedReceiver<Forwarded> {
    // Stdin is read on its own thread, and each command goes straight to
    // the kernel: an E-stop never waits behind this loop's writing.
    let (lines_tx, lines) = mpsc::unbounded_channel();
    let stdin = || Ok(std::io::stdin());
    robobrain_tui::operator::forward(
        "stdin",
        stdin,
        brain.sender(),
        Origin::headless(),
        move |f| {
            let _ = lines_tx.send(f);
        },
    );
    lines
}

/// Stops the session, writes the tick times (`--ticks`), then emits the
/// events broadcast before the engine stopped (up to `limit`).
async fn wind_down(
    session: &Session,
    events: &mut broadcast::Receiver<Event>,
    out: &mut std::io::Stdout,
    limit: f64,
    ticks: Option<&Path>,
) -> Result<()> {
    // The kernel brings the robot to rest, then every event reaches the log.
    let stopped = session.stop().await;
    if let Some(file) = ticks {
        let summary = TickSummary::of(&session.runtime().tick_durations());
        std::fs::write(file, serde_json::to_vec(&summary)?)
            .with_context(|| format!("cannot write {}", file.display()))?;
    }
    // Events already broadcast before the engine stopped.
    while let Ok(event) = events.try_recv() {
        if event.time > limit + 1e-9 {
            break;
        }
        if emit(out, &event).is_err() {
            break;
        }
    }
    stopped?;
    Ok(())
}

fn emit(out: &mut std::io::Stdout, event: &Event) -> std::io::Result<()> {
    let mut lock = out.lock();
    serde_json::to_writer(&mut lock, event)?;
    lock.write_all(b"\n")?;
    lock.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdin_lines_are_commands_utterances_or_errors() {
        assert_eq!(
            parse_line(r#"{"cmd":"pause"}"#),
            Line::Command(Command::Pause)
        );
        assert_eq!(
            parse_line("  去厨房 "),
            Line::Command(Command::Say {
                text: "去厨房".into()
            })
        );
        assert_eq!(parse_line("   "), Line::Blank);
        match parse_line(r#"{"cmd":"fly"}"#) {
            Line::Bad(r) => {
                assert_eq!(r.code, "invalid_command");
                assert!(r.why.starts_with("expected a command as JSON"), "{r}");
                assert!(r.why.contains("unknown variant `fly`"), "{r}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_empty_snapshot_is_idle() {
        assert!(is_idle(&Snapshot::default()));
    }
}
