//! The operator console: a ratatui face over the core's [`Runtime`] that
//! streams decisions, shows the robot on its map, and asks for approvals.
//!
//! Shaped as STYLE.md asks: a key becomes an optional [`Action`]
//! (`keys.rs`), [`App::update`] is the only place state changes (`app.rs`),
//! and [`ui::draw`] paints from `&App` (`ui.rs`). This file is the IO around
//! them: the terminal, the runtime, the event log, and one `select!` loop.
//!
//! - `line.rs`: the one-line editor (wide characters, cursor, scrolling).
//! - `slash.rs`: `/estop`, `/pause`, `/inject …` and utterances.
//! - `forecast.rs`: route, ETA and battery after, for the approval prompt.

pub mod app;
pub mod forecast;
pub mod keys;
pub mod line;
pub mod slash;
pub mod ui;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use ratatui::DefaultTerminal;
use ratatui::crossterm::event::{self, DisableBracketedPaste, EnableBracketedPaste, Event as Term};
use ratatui::crossterm::execute;
use robobrain_core::config::Config;
use robobrain_core::eventlog::EventLog;
use robobrain_core::protocol::Event;
use robobrain_core::runtime::{Pace, Runtime};
use tokio::sync::{broadcast, mpsc};

pub use app::{Action, App, Effect};

/// Wall time between frames: an event is on screen at most this long after
/// it arrives (plus the time to draw, well under a millisecond).
pub const FRAME: Duration = Duration::from_millis(25);

/// How the console runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Sim seconds per wall second.
    pub speed: f64,
    /// Event log file (default: `<runs_dir>/<thread_id>.jsonl`).
    pub log: Option<PathBuf>,
    /// Colours on (off under `NO_COLOR`).
    pub color: bool,
    /// `--thread`/`--resume`/`--robot`: record, resume, or drive a robot in
    /// another process.
    pub durable: crate::session::Durability,
}

/// Whether stdin and stdout are both terminals (the console needs both).
pub fn has_terminal() -> bool {
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// Whether colours are allowed: `NO_COLOR` (any non-empty value) turns them off.
pub fn color_allowed() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Runs the console on the simulated robot of `config`'s world until the
/// operator quits. The terminal is restored on every way out, panics included.
pub fn run(config: Config, options: &Options) -> Result<()> {
    anyhow::ensure!(
        options.speed.is_finite() && options.speed > 0.0,
        "--speed: expected a positive number of sim seconds per wall second, found {}",
        options.speed
    );
    let session =
        crate::session::open(config, "console", options.log.as_deref(), &options.durable)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .enable_io()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(async {
        let runtime = Runtime::start(
            session.engine,
            Pace::RealTime {
                speed: options.speed,
            },
        );
        let events = runtime.subscribe();
        let mut app = App::new(session.world, runtime.snapshot(), options.color);
        let mut terminal = ratatui::init();
        // Paste (and some IME commits) arrive whole rather than as keys.
        let _ = execute!(std::io::stdout(), EnableBracketedPaste);
        let result = drive(&mut terminal, &mut app, &runtime, events, session.log).await;
        let _ = execute!(std::io::stdout(), DisableBracketedPaste);
        ratatui::restore();
        runtime.shutdown().await;
        result.map(|log| {
            println!("event log: {}", log.display());
        })
    })
}

enum Input {
    Core(Result<Box<Event>, broadcast::error::RecvError>),
    Term(Option<Term>),
    Frame,
    Signal,
}

async fn drive(
    terminal: &mut DefaultTerminal,
    app: &mut App,
    runtime: &Runtime,
    mut events: broadcast::Receiver<Event>,
    mut log: EventLog<std::fs::File>,
) -> Result<PathBuf> {
    let (keys, mut terminal_events) = mpsc::unbounded_channel();
    let stop = Arc::new(AtomicBool::new(false));
    let reader = spawn_reader(keys, stop.clone());
    let mut frames = tokio::time::interval(FRAME);
    frames.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut terminate = signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut hangup = signal(tokio::signal::unix::SignalKind::hangup())?;
    let mut dirty = true;
    let mut log_error = None;
    let outcome = loop {
        let input = tokio::select! {
            biased;
            _ = terminate.recv() => Input::Signal,
            _ = hangup.recv() => Input::Signal,
            term = terminal_events.recv() => Input::Term(term),
            ev = events.recv() => Input::Core(ev.map(Box::new)),
            _ = frames.tick() => Input::Frame,
        };
        let action = match input {
            Input::Signal => break Ok(()),
            Input::Core(Ok(event)) => {
                if log_error.is_none()
                    && let Err(e) = log.write_batch(std::slice::from_ref(&event))
                {
                    log_error = Some(e);
                }
                Some(Action::Core(event))
            }
            Input::Core(Err(broadcast::error::RecvError::Lagged(n))) => {
                // The snapshot of the next frame repaints the state; only
                // lines of the feeds are lost.
                app.notice = Some((
                    app::Level::Warn,
                    format!("{n} events skipped (console too slow)"),
                ));
                None
            }
            Input::Core(Err(broadcast::error::RecvError::Closed)) => {
                break Err(anyhow::anyhow!("the brain stopped"));
            }
            Input::Term(None) => break Err(anyhow::anyhow!("the terminal closed")),
            Input::Term(Some(Term::Key(key))) => keys::action(app, key),
            Input::Term(Some(Term::Paste(text))) => Some(Action::Edit(line::Edit::Insert(text))),
            Input::Term(Some(_)) => {
                dirty = true;
                None
            }
            Input::Frame => {
                let snap = runtime.snapshot();
                if snap.step != app.snapshot().step || snap.time != app.snapshot().time {
                    app.update(Action::Snapshot(Box::new(snap)));
                    dirty = true;
                }
                if dirty {
                    terminal
                        .draw(|f| ui::draw(app, f))
                        .context("cannot draw the console")?;
                    dirty = false;
                }
                None
            }
        };
        if let Some(action) = action {
            dirty = true;
            let effect = app.update(action);
            if effect == Some(Effect::Quit) {
                break Ok(());
            }
            if let Some(Effect::Send(cmd)) = effect
                && runtime.send(cmd).await.is_err()
            {
                break Err(anyhow::anyhow!("the brain stopped"));
            }
        }
    };
    stop.store(true, Ordering::Relaxed);
    let _ = reader.join();
    outcome?;
    if let Some(e) = log_error {
        return Err(e).context("the event log could not be written");
    }
    Ok(log.path().to_path_buf())
}

fn signal(kind: tokio::signal::unix::SignalKind) -> Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(kind).context("cannot listen for signals")
}

/// Reads terminal events on a thread of its own (crossterm's reader blocks)
/// until `stop` is set or the receiver is gone.
fn spawn_reader(
    keys: mpsc::UnboundedSender<Term>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            match event::poll(Duration::from_millis(50)) {
                Ok(true) => match event::read() {
                    Ok(ev) => {
                        if keys.send(ev).is_err() {
                            return;
                        }
                    }
                    Err(_) => return,
                },
                Ok(false) => {}
                Err(_) => return,
            }
        }
    })
}

#[cfg(test)]
mod tests;
