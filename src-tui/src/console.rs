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

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use ratatui::DefaultTerminal;
use ratatui::crossterm::cursor::Show;
use ratatui::crossterm::event::{self, DisableBracketedPaste, EnableBracketedPaste, Event as Term};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{self, LeaveAlternateScreen};
use robobrain_core::config::Config;
use robobrain_core::eventlog::EventLog;
use robobrain_core::protocol::Event;
use robobrain_core::runtime::{Pace, Runtime};
use tokio::signal::unix::{Signal, SignalKind};
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

/// How the console ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The operator quit (`q`, Ctrl-C, `/quit`).
    Quit,
    /// SIGTERM, SIGHUP or SIGINT (sent with `kill`; Ctrl-C is a key in
    /// the console) asked it to stop; the signal's number.
    Signal(i32),
}

impl Ended {
    /// The process's exit status: 0 after a quit, 128 + the signal's number
    /// after a signal (143 for SIGTERM, 129 SIGHUP, 130 SIGINT), the status
    /// a shell reports for a process the signal ended.
    pub fn exit_status(self) -> u8 {
        match self {
            Self::Quit => 0,
            Self::Signal(n) => u8::try_from(128 + n).unwrap_or(u8::MAX),
        }
    }
}

/// Runs the console on the simulated robot of `config`'s world until the
/// operator quits or a signal (SIGTERM, SIGHUP, SIGINT) asks it to stop.
/// Every way out (a quit, a signal, an error) restores the terminal and
/// shuts the runtime down the same way; a panic restores the terminal too
/// (ratatui's panic hook).
pub fn run(config: Config, options: &Options) -> Result<Ended> {
    anyhow::ensure!(
        options.speed.is_finite() && options.speed > 0.0,
        "--speed: expected a positive number of sim seconds per wall second, found {}",
        options.speed
    );
    let services = config.mcp.clone();
    let mut session =
        crate::session::open(config, "console", options.log.as_deref(), &options.durable)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .enable_io()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(async {
        // Before the terminal changes: from here on a signal cannot end the
        // process with the terminal left raw on the alternate screen.
        let signals = Signals::listen()?;
        crate::mcp::services::connect_into(&services, &mut session.engine).await;
        let (runtime, mut events) = Runtime::start_subscribed(
            session.engine,
            Pace::RealTime {
                speed: options.speed,
            },
        );
        let mut app = App::new(session.world, runtime.snapshot(), options.color);
        let mut terminal = ratatui::init();
        // Paste (and some IME commits) arrive whole rather than as keys.
        let _ = execute!(std::io::stdout(), EnableBracketedPaste);
        let mut log = session.log;
        let result = drive(
            &mut terminal,
            &mut app,
            &runtime,
            &mut events,
            signals,
            &mut log,
        )
        .await;
        restore_terminal();
        runtime.shutdown().await;
        // What the core sent up to its end is logged too: nothing is lost.
        while let Ok(event) = events.try_recv() {
            log.write_batch(std::slice::from_ref(&event))
                .context("the event log could not be written")?;
        }
        let ended = result?;
        let log = log.path().to_path_buf();
        // After SIGHUP there is no terminal to print to, and that is no error.
        let _ = writeln!(std::io::stdout(), "event log: {}", log.display());
        Ok(ended)
    })
}

/// Gives the terminal back: raw mode off, the main screen, the cursor shown,
/// bracketed paste off. Every step is tried: a terminal that has gone away
/// (SIGHUP) refuses them all, and that is no error either.
fn restore_terminal() {
    let _ = terminal::disable_raw_mode();
    let _ = execute!(
        std::io::stdout(),
        DisableBracketedPaste,
        LeaveAlternateScreen,
        Show
    );
}

/// The signals that end the console as a quit does.
struct Signals {
    terminate: Signal,
    hangup: Signal,
    interrupt: Signal,
}

impl Signals {
    fn listen() -> Result<Self> {
        let listen = |kind| tokio::signal::unix::signal(kind).context("cannot listen for signals");
        Ok(Self {
            terminate: listen(SignalKind::terminate())?,
            hangup: listen(SignalKind::hangup())?,
            interrupt: listen(SignalKind::interrupt())?,
        })
    }

    /// The next signal's number.
    async fn recv(&mut self) -> i32 {
        let kind = tokio::select! {
            _ = self.terminate.recv() => SignalKind::terminate(),
            _ = self.hangup.recv() => SignalKind::hangup(),
            _ = self.interrupt.recv() => SignalKind::interrupt(),
        };
        kind.as_raw_value()
    }
}

enum Input {
    Core(Result<Box<Event>, broadcast::error::RecvError>),
    Term(Option<Term>),
    Frame,
    Signal(i32),
}

async fn drive(
    terminal: &mut DefaultTerminal,
    app: &mut App,
    runtime: &Runtime,
    events: &mut broadcast::Receiver<Event>,
    mut signals: Signals,
    log: &mut EventLog<std::fs::File>,
) -> Result<Ended> {
    let (keys, mut terminal_events) = mpsc::unbounded_channel();
    let stop = Arc::new(AtomicBool::new(false));
    let reader = spawn_reader(keys, stop.clone());
    let mut frames = tokio::time::interval(FRAME);
    frames.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut dirty = true;
    let mut log_error = None;
    let outcome = loop {
        let input = tokio::select! {
            biased;
            signal = signals.recv() => Input::Signal(signal),
            term = terminal_events.recv() => Input::Term(term),
            ev = events.recv() => Input::Core(ev.map(Box::new)),
            _ = frames.tick() => Input::Frame,
        };
        app.set_clock(Instant::now());
        let action = match input {
            Input::Signal(n) => break Ok(Ended::Signal(n)),
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
                    // A terminal that has gone away fails here.
                    if let Err(e) = terminal.draw(|f| ui::draw(app, f)) {
                        break Err(anyhow::Error::new(e).context("cannot draw the console"));
                    }
                    dirty = false;
                }
                None
            }
        };
        if let Some(action) = action {
            dirty = true;
            let effect = app.update(action);
            if effect == Some(Effect::Quit) {
                break Ok(Ended::Quit);
            }
            if let Some(Effect::Send(cmd)) = effect
                && runtime.send(cmd).await.is_err()
            {
                break Err(anyhow::anyhow!("the brain stopped"));
            }
        }
    };
    stop.store(true, Ordering::Relaxed);
    release(reader).await;
    let ended = outcome?;
    if let Some(e) = log_error {
        return Err(e).context("the event log could not be written");
    }
    Ok(ended)
}

/// How long the reader gets to notice `stop` (it looks every 50 ms).
const READER_GRACE: Duration = Duration::from_millis(250);

/// Waits for the reader to stop, at most [`READER_GRACE`]. One that does not
/// is left behind, to end with the process: on a terminal that has hung up,
/// crossterm's poll reads end-of-file in a loop and never returns, and
/// joining it would keep the process alive forever.
async fn release(reader: std::thread::JoinHandle<()>) {
    let start = Instant::now();
    while !reader.is_finished() && start.elapsed() < READER_GRACE {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    if reader.is_finished() {
        let _ = reader.join();
    }
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
