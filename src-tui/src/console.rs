//! The operator console: a ratatui face over the core's [`Runtime`] that
//! streams decisions, shows the robot on its map, and asks for approvals.
//!
//! Shaped as STYLE.md asks: a key becomes an optional [`Action`]
//! (`keys.rs`), [`App::update`] is the only place state changes (`app.rs`),
//! and [`ui::draw`] paints from `&App` (`ui.rs`). This file is the IO around
//! them: the terminal, the run's [`Transport`], and one `select!` loop. The
//! run is the session builder's, in this process ([`run`]), or one
//! `robobrain serve` runs elsewhere ([`attach`], `tui --connect`): the loop
//! does not know which. The fleet console ([`fleet`]) runs in the same
//! loop: each console is a `Console` (what its source says, a key, a paste
//! → its own action; the action carried out; a frame painted).
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
        let result = on_terminal(
            &mut RunConsole {
                app: &mut app,
                transport: &mut local,
            },
            signals,
        )
        .await;
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
        let ended = on_terminal(
            &mut RunConsole {
                app: &mut app,
                transport: &mut remote,
            },
            signals,
        )
        .await?;
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
        let result = on_terminal(
            &mut FleetConsole {
                app: &mut app,
                client: &mut client,
            },
            signals,
        )
        .await;
        client.close().await;
        let ended = result?;
        let _ = writeln!(std::io::stdout(), "left the fleet at {url}");
        Ok(ended)
    })
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
async fn on_terminal(console: &mut impl Console, signals: Signals) -> Result<Ended> {
    let mut terminal = ratatui::init();
    // Paste (and some IME commits) arrive whole rather than as keys.
    let _ = execute!(std::io::stdout(), EnableBracketedPaste);
    let result = drive(&mut terminal, console, signals).await;
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

/// What the one loop drives: a console over one run ([`RunConsole`]) or
/// over a fleet ([`FleetConsole`]). Each turns what its source says, a
/// key and a paste into its own action, carries an action out, and paints
/// itself; the loop around them (signals, the terminal, frames) is one.
trait Console {
    /// What its source says: the run's [`Incoming`], the broker's events.
    type Heard;
    /// What a key, a paste or what was heard becomes.
    type Action;

    /// The next thing its source says.
    fn listen(&mut self) -> impl Future<Output = Self::Heard>;

    /// Before any input is handled: the wall clock now.
    fn at(&mut self, now: Instant);

    /// What was heard, as an action; `Err` ends the console.
    fn heard(&mut self, heard: Self::Heard) -> Result<Option<Self::Action>>;

    /// A key, as an action.
    fn key(&self, key: event::KeyEvent) -> Option<Self::Action>;

    /// A paste, as an action.
    fn paste(&self, text: String) -> Option<Self::Action>;

    /// Carries out an action; `Some` when the console ends.
    fn act(&mut self, action: Self::Action) -> impl Future<Output = Option<Result<Ended>>>;

    /// Before a frame: whether the state moved on its own since the last.
    fn refresh(&mut self) -> bool;

    /// Paints the console.
    fn draw(&self, frame: &mut ratatui::Frame);
}

/// The console over one run, in process or over a WebSocket.
struct RunConsole<'a, T: Transport> {
    app: &'a mut App,
    transport: &'a mut T,
}

impl<T: Transport> Console for RunConsole<'_, T> {
    type Heard = Incoming;
    type Action = Action;

    fn listen(&mut self) -> impl Future<Output = Incoming> {
        self.transport.recv()
    }

    fn at(&mut self, now: Instant) {
        self.app.set_clock(now);
    }

    fn heard(&mut self, heard: Incoming) -> Result<Option<Action>> {
        Ok(match heard {
            Incoming::Event(event) => Some(Action::Core(event)),
            Incoming::Snapshot(snap) => Some(Action::Snapshot(snap)),
            Incoming::Lagged(n) => {
                // The next snapshot repaints the state; only lines of the
                // feeds are lost.
                self.app.notice = Some((
                    app::Level::Warn,
                    format!("{n} events skipped (console too slow)"),
                ));
                None
            }
            Incoming::Notice(text) => {
                self.app.notice = Some((app::Level::Warn, text));
                None
            }
            Incoming::Closed(why) => return Err(anyhow::anyhow!(why)),
        })
    }

    fn key(&self, key: event::KeyEvent) -> Option<Action> {
        keys::action(self.app, key)
    }

    fn paste(&self, text: String) -> Option<Action> {
        Some(Action::Edit(line::Edit::Insert(text)))
    }

    async fn act(&mut self, action: Action) -> Option<Result<Ended>> {
        let effect = self.app.update(action);
        if effect == Some(Effect::Quit) {
            return Some(Ok(Ended::Quit));
        }
        if let Some(Effect::Send(cmd)) = effect
            && let Err(why) = self.transport.send(cmd).await
        {
            return Some(Err(anyhow::anyhow!("the brain stopped: {why}")));
        }
        None
    }

    fn refresh(&mut self) -> bool {
        if let Some(snap) = self.transport.snapshot()
            && (snap.step != self.app.snapshot().step || snap.time != self.app.snapshot().time)
        {
            self.app.update(Action::Snapshot(Box::new(snap)));
            return true;
        }
        false
    }

    fn draw(&self, frame: &mut ratatui::Frame) {
        ui::draw(self.app, frame);
    }
}

/// The fleet console: every robot on a broker, one approval queue.
struct FleetConsole<'a> {
    app: &'a mut fleet::FleetApp,
    client: &'a mut robobrain_core::fleet::FleetClient,
}

impl Console for FleetConsole<'_> {
    type Heard = Result<robobrain_core::fleet::ClientEvent, robobrain_core::fleet::FleetError>;
    type Action = fleet::FleetAction;

    fn listen(&mut self) -> impl Future<Output = Self::Heard> {
        self.client.recv()
    }

    fn at(&mut self, _now: Instant) {}

    fn heard(&mut self, heard: Self::Heard) -> Result<Option<fleet::FleetAction>> {
        Ok(Some(fleet::FleetAction::Heard(Box::new(heard?))))
    }

    fn key(&self, key: event::KeyEvent) -> Option<fleet::FleetAction> {
        fleet::action(self.app, key)
    }

    fn paste(&self, text: String) -> Option<fleet::FleetAction> {
        Some(fleet::FleetAction::Robot(Action::Edit(line::Edit::Insert(
            text,
        ))))
    }

    async fn act(&mut self, action: fleet::FleetAction) -> Option<Result<Ended>> {
        use fleet::FleetEffect;
        if let Some((_, robot)) = &mut self.app.robot {
            robot.set_clock(Instant::now());
        }
        let sent = match self.app.update(action)? {
            FleetEffect::Quit => return Some(Ok(Ended::Quit)),
            FleetEffect::Send(robot, command) => self.client.send(&robot, command).map(drop),
            FleetEffect::SendAll(command) => {
                let robots: Vec<String> = self.app.view.robots().map(|r| r.id.clone()).collect();
                robots
                    .iter()
                    .try_for_each(|robot| self.client.send(robot, command.clone()).map(drop))
            }
        };
        sent.err().map(|e| Err(anyhow::Error::new(e)))
    }

    fn refresh(&mut self) -> bool {
        false
    }

    fn draw(&self, frame: &mut ratatui::Frame) {
        ui::fleet::draw(self.app, frame);
    }
}

/// One input to the loop, whichever console it drives.
enum Input<H> {
    Heard(H),
    Term(Option<Term>),
    Frame,
    Signal(i32),
}

/// The one `select!` loop of both consoles: a signal ends it; a key, a
/// paste or what the source says becomes the console's action, carried
/// out at once; a frame paints when something changed.
async fn drive(
    terminal: &mut DefaultTerminal,
    console: &mut impl Console,
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
            heard = console.listen() => Input::Heard(heard),
            _ = frames.tick() => Input::Frame,
        };
        console.at(Instant::now());
        let action = match input {
            Input::Signal(n) => break Ok(Ended::Signal(n)),
            Input::Heard(heard) => {
                dirty = true;
                match console.heard(heard) {
                    Ok(action) => action,
                    Err(e) => break Err(e),
                }
            }
            Input::Term(None) => break Err(anyhow::anyhow!("the terminal closed")),
            Input::Term(Some(Term::Key(key))) => console.key(key),
            Input::Term(Some(Term::Paste(text))) => console.paste(text),
            Input::Term(Some(_)) => {
                dirty = true;
                None
            }
            Input::Frame => {
                dirty |= console.refresh();
                if dirty {
                    // A terminal that has gone away fails here.
                    if let Err(e) = terminal.draw(|f| console.draw(f)) {
                        break Err(anyhow::Error::new(e).context("cannot draw the console"));
                    }
                    dirty = false;
                }
                None
            }
        };
        if let Some(action) = action {
            dirty = true;
            if let Some(end) = console.act(action).await {
                break end;
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
