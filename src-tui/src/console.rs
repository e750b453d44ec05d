//! The operator console: a ratatui face over the core's [`Runtime`] that
//! streams decisions, shows the robot on its map, and asks for approvals.
//!
//! Shaped as STYLE.md asks: a key becomes an optional [`Action`]
//! (`keys.rs`), [`App::update`] is the only place state changes (`app.rs`),
//! and [`ui::draw`] paints from `&App` (`ui.rs`). This file is the IO around
//! them: the terminal, the run's [`Transport`], and one `select!` loop. The
//! run is the session builder's, in this process ([`run`]), or one
//! `robobrain serve` runs elsewhere ([`attach`], `tui --connect`): the loop
//! does not know which.
//!
//! - `transport.rs`: the run in process or over a WebSocket, one trait.
//! - `line.rs`: the one-line editor (wide characters, cursor, scrolling).
//! - `slash.rs`: `/estop`, `/pause`, `/inject …` and utterances.
//! - `forecast.rs`: route, ETA and battery after, for the approval prompt.
//! - `fleet.rs`: the fleet console ([`fleet`], `robobrain fleet`): every robot on
//!   an MQTT broker, one approval queue, a robot opened into the view above.

pub mod app;
pub mod fleet;
pub mod forecast;
pub mod keys;
pub mod line;
pub mod slash;
pub mod transport;
pub mod ui;

use std::io::{IsTerminal, Write};
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
use robobrain_core::session::{Session, SessionOptions};
use tokio::signal::unix::{Signal, SignalKind};
use tokio::sync::mpsc;

pub use app::{Action, App, Effect};
pub use transport::{Incoming, Local, Remote, Transport};

/// Wall time between frames: an event is on screen at most this long after
/// it arrives (plus the time to draw, well under a millisecond).
pub const FRAME: Duration = Duration::from_millis(25);

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

/// Runs the console on the run the session builder assembles from
/// `config` and `options`, until the operator quits or a signal (SIGTERM,
/// SIGHUP, SIGINT) asks it to stop. Every way out (a quit, a signal, an
/// error) restores the terminal and stops the run the same way; a panic
/// restores the terminal too (ratatui's panic hook). `color` is off under
/// `NO_COLOR`.
pub fn run(config: &Config, options: SessionOptions, color: bool) -> Result<Ended> {
    let rt = runtime()?;
    rt.block_on(async {
        // Before the terminal changes: from here on a signal cannot end the
        // process with the terminal left raw on the alternate screen.
        let signals = Signals::listen()?;
        let session = Session::open(config, options).await?;
        let mut app = App::new(session.world().clone(), session.runtime().snapshot(), color)
            .with_skills(session.skills().to_vec());
        let mut local = Local::new(session);
        let result = on_terminal(&mut app, &mut local, signals).await;
        // The robot is at rest and every event in the log before this returns.
        let stopped = local.session.stop().await;
        let ended = result?;
        stopped.context("the run did not end cleanly")?;
        // After SIGHUP there is no terminal to print to, and that is no error.
        let _ = writeln!(
            std::io::stdout(),
            "event log: {}",
            local.session.log_path().display()
        );
        if let Some(mcap) = local.session.mcap_path() {
            let _ = writeln!(std::io::stdout(), "MCAP recording: {}", mcap.display());
        }
        Ok(ended)
    })
}

/// Runs the console on a run `robobrain serve` serves at `url`
/// (`ws://HOST:PORT` or `wss://HOST:PORT`; the token and the CA in
/// `options`): the same panels and keys; with a viewer token the server
/// refuses its commands, and the header says so.
pub fn attach(url: &str, options: &transport::ConnectOptions, color: bool) -> Result<Ended> {
    let rt = runtime()?;
    rt.block_on(async {
        let signals = Signals::listen()?;
        let (mut remote, greeting) = Remote::connect(url, options).await?;
        let skills = greeting.hello.skills;
        let mut app = App::new(greeting.hello.world, greeting.snapshot, color).with_skills(skills);
        app.attached(remote.url(), greeting.hello.role);
        let ended = on_terminal(&mut app, &mut remote, signals).await?;
        let _ = writeln!(std::io::stdout(), "detached from {}", remote.url());
        Ok(ended)
    })
}

/// Runs the fleet console on the robots the broker `mqtt` names carries
/// (`url` is shown in the header) until the operator quits or a signal
/// asks it to stop.
pub fn fleet(
    mqtt: &robobrain_core::devices::mqtt::MqttConfig,
    url: &str,
    color: bool,
) -> Result<Ended> {
    let rt = runtime()?;
    rt.block_on(async {
        let signals = Signals::listen()?;
        let mut client = robobrain_core::fleet::FleetClient::connect(mqtt);
        let mut app = fleet::FleetApp::new(url, color);
        let mut terminal = ratatui::init();
        let _ = execute!(std::io::stdout(), EnableBracketedPaste);
        let result = drive_fleet(&mut terminal, &mut app, &mut client, signals).await;
        restore_terminal();
        client.close().await;
        let ended = result?;
        let _ = writeln!(std::io::stdout(), "left the fleet at {url}");
        Ok(ended)
    })
}

enum FleetInput {
    Heard(Result<robobrain_core::fleet::ClientEvent, robobrain_core::fleet::FleetError>),
    Term(Option<Term>),
    Frame,
    Signal(i32),
}

async fn drive_fleet(
    terminal: &mut DefaultTerminal,
    app: &mut fleet::FleetApp,
    client: &mut robobrain_core::fleet::FleetClient,
    mut signals: Signals,
) -> Result<Ended> {
    use fleet::{FleetAction, FleetEffect};
    let (keys, mut terminal_events) = mpsc::unbounded_channel();
    let stop = Arc::new(AtomicBool::new(false));
    let reader = spawn_reader(keys, stop.clone());
    let mut frames = tokio::time::interval(FRAME);
    frames.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut dirty = true;
    let outcome = loop {
        let input = tokio::select! {
            biased;
            signal = signals.recv() => FleetInput::Signal(signal),
            term = terminal_events.recv() => FleetInput::Term(term),
            heard = client.recv() => FleetInput::Heard(heard),
            _ = frames.tick() => FleetInput::Frame,
        };
        let action = match input {
            FleetInput::Signal(n) => break Ok(Ended::Signal(n)),
            FleetInput::Heard(Ok(event)) => Some(FleetAction::Heard(Box::new(event))),
            FleetInput::Heard(Err(e)) => break Err(anyhow::Error::new(e)),
            FleetInput::Term(None) => break Err(anyhow::anyhow!("the terminal closed")),
            FleetInput::Term(Some(Term::Key(key))) => fleet::action(app, key),
            FleetInput::Term(Some(Term::Paste(text))) => {
                Some(FleetAction::Robot(Action::Edit(line::Edit::Insert(text))))
            }
            FleetInput::Term(Some(_)) => {
                dirty = true;
                None
            }
            FleetInput::Frame => {
                if dirty {
                    if let Err(e) = terminal.draw(|f| ui::fleet::draw(app, f)) {
                        break Err(anyhow::Error::new(e).context("cannot draw the console"));
                    }
                    dirty = false;
                }
                None
            }
        };
        if let Some(action) = action {
            dirty = true;
            if let Some((_, robot)) = &mut app.robot {
                robot.set_clock(Instant::now());
            }
            match app.update(action) {
                Some(FleetEffect::Quit) => break Ok(Ended::Quit),
                Some(FleetEffect::Send(robot, command)) => {
                    client.send(&robot, command)?;
                }
                Some(FleetEffect::SendAll(command)) => {
                    let robots: Vec<String> = app.view.robots().map(|r| r.id.clone()).collect();
                    for robot in robots {
                        client.send(&robot, command.clone())?;
                    }
                }
                None => {}
            }
        }
    };
    stop.store(true, Ordering::Relaxed);
    release(reader).await;
    outcome
}

/// The console's own async runtime: one thread (the kernel has its own).
fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .enable_io()
        .build()
        .context("cannot start the async runtime")
}

/// The terminal taken, the loop run, the terminal given back.
async fn on_terminal(
    app: &mut App,
    transport: &mut impl Transport,
    signals: Signals,
) -> Result<Ended> {
    let mut terminal = ratatui::init();
    // Paste (and some IME commits) arrive whole rather than as keys.
    let _ = execute!(std::io::stdout(), EnableBracketedPaste);
    let result = drive(&mut terminal, app, transport, signals).await;
    restore_terminal();
    result
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
    Run(Incoming),
    Term(Option<Term>),
    Frame,
    Signal(i32),
}

async fn drive(
    terminal: &mut DefaultTerminal,
    app: &mut App,
    transport: &mut impl Transport,
    mut signals: Signals,
) -> Result<Ended> {
    let (keys, mut terminal_events) = mpsc::unbounded_channel();
    let stop = Arc::new(AtomicBool::new(false));
    let reader = spawn_reader(keys, stop.clone());
    let mut frames = tokio::time::interval(FRAME);
    frames.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut dirty = true;
    let outcome = loop {
        let input = tokio::select! {
            biased;
            signal = signals.recv() => Input::Signal(signal),
            term = terminal_events.recv() => Input::Term(term),
            incoming = transport.recv() => Input::Run(incoming),
            _ = frames.tick() => Input::Frame,
        };
        app.set_clock(Instant::now());
        let action = match input {
            Input::Signal(n) => break Ok(Ended::Signal(n)),
            Input::Run(Incoming::Event(event)) => Some(Action::Core(event)),
            Input::Run(Incoming::Snapshot(snap)) => Some(Action::Snapshot(snap)),
            Input::Run(Incoming::Lagged(n)) => {
                // The next snapshot repaints the state; only lines of the
                // feeds are lost.
                app.notice = Some((
                    app::Level::Warn,
                    format!("{n} events skipped (console too slow)"),
                ));
                None
            }
            Input::Run(Incoming::Notice(text)) => {
                app.notice = Some((app::Level::Warn, text));
                dirty = true;
                None
            }
            Input::Run(Incoming::Closed(why)) => break Err(anyhow::anyhow!(why)),
            Input::Term(None) => break Err(anyhow::anyhow!("the terminal closed")),
            Input::Term(Some(Term::Key(key))) => keys::action(app, key),
            Input::Term(Some(Term::Paste(text))) => Some(Action::Edit(line::Edit::Insert(text))),
            Input::Term(Some(_)) => {
                dirty = true;
                None
            }
            Input::Frame => {
                if let Some(snap) = transport.snapshot()
                    && (snap.step != app.snapshot().step || snap.time != app.snapshot().time)
                {
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
                && let Err(why) = transport.send(cmd).await
            {
                break Err(anyhow::anyhow!("the brain stopped: {why}"));
            }
        }
    };
    stop.store(true, Ordering::Relaxed);
    release(reader).await;
    outcome
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
