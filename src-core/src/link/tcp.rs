//! [`TcpLink`]: the robot link over TCP, to `robobrain sim --listen` or any
//! robot that speaks the same JSON lines (docs/protocol.md, "Robot link").
//!
//! One JSON object per line each way: [`LinkRequest`]s out, [`LinkReply`]s
//! in. A reader thread turns lines into messages on a channel, so the
//! kernel's tick never blocks on the network. When the connection drops the
//! link reports itself down (the kernel goes SAFE) and reconnects with
//! exponential backoff; once back, [`RobotLink::take_reconnected`] tells
//! the engine to ask the robot about every goal it tracks.
//!
//! The link keeps the robot's dead-man fed: when nothing else was written
//! for a quarter of the dead-man period (the shorter of the brain's
//! `[link] deadman_s` and the one the robot announces in its `hello`), the
//! next [`RobotLink::drain`] — every tick — writes a `heartbeat`. A brain
//! whose ticks stop (killed, hung) goes silent, and the robot stops the base.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{LinkError, LinkReply, LinkRequest, RobotLink};

/// First wait before a reconnect attempt.
const BACKOFF_MIN: Duration = Duration::from_millis(50);
/// Longest wait between reconnect attempts.
const BACKOFF_MAX: Duration = Duration::from_secs(2);
/// How long one connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
/// Heartbeats per dead-man period.
const BEATS_PER_PERIOD: u32 = 4;
/// Heartbeat interval when neither side has a dead-man (keeps a robot
/// with a dead-man of its own, not announced, fed).
const HEARTBEAT_DEFAULT: Duration = Duration::from_millis(500);

/// What a reader thread passes on, tagged with its connection's number.
#[derive(Debug)]
pub enum Wire<T> {
    /// A message.
    Msg(u64, T),
    /// A line that is not a message, with why.
    Bad(u64, String),
    /// The connection ended.
    Closed(u64),
}

/// Reads JSON lines from `stream` on a thread until it closes.
pub fn spawn_reader<T: DeserializeOwned + Send + 'static>(
    stream: TcpStream,
    generation: u64,
    tx: Sender<Wire<T>>,
) {
    std::thread::spawn(move || {
        let reader = BufReader::new(stream);
        for line in reader.lines() {
            let Ok(line) = line else { break };
            if line.trim().is_empty() {
                continue;
            }
            let msg = match serde_json::from_str(&line) {
                Ok(m) => Wire::Msg(generation, m),
                Err(e) => Wire::Bad(generation, format!("{e}: {line}")),
            };
            if tx.send(msg).is_err() {
                return;
            }
        }
        let _ = tx.send(Wire::Closed(generation));
    });
}

/// Writes one message as a JSON line.
pub fn write_line<T: Serialize>(stream: &mut TcpStream, msg: &T) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    line.push(b'\n');
    stream.write_all(&line)
}

/// Parses `tcp://HOST:PORT` (the scheme is optional).
pub fn parse_robot_url(url: &str) -> Result<SocketAddr, LinkError> {
    let rest = url.strip_prefix("tcp://").unwrap_or(url);
    if rest.contains("://") {
        return Err(LinkError::Invalid(format!(
            "robot address `{url}`: expected tcp://HOST:PORT"
        )));
    }
    rest.to_socket_addrs()
        .map_err(|e| LinkError::Invalid(format!("robot address `{url}`: {e}")))?
        .next()
        .ok_or_else(|| LinkError::Invalid(format!("robot address `{url}` resolves to nothing")))
}

/// A robot link over TCP.
#[derive(Debug)]
pub struct TcpLink {
    addr: SocketAddr,
    stream: Option<TcpStream>,
    generation: u64,
    tx: Sender<Wire<LinkReply>>,
    rx: Receiver<Wire<LinkReply>>,
    reconnected: bool,
    next_try: Instant,
    backoff: Duration,
    /// Stops and cancels that could not go while the link was down; sent
    /// first on reconnect.
    unsent_cancels: Vec<LinkRequest>,
    bad_lines: Vec<String>,
    /// The brain's own dead-man period (`[link] deadman_s`; 0 = off).
    deadman: Duration,
    /// How often the robot must hear from the brain.
    heartbeat_every: Duration,
    /// When the last line was written.
    last_write: Instant,
}

impl TcpLink {
    /// Connects to the robot at `tcp://HOST:PORT`.
    pub fn connect(url: &str) -> Result<Self, LinkError> {
        let addr = parse_robot_url(url)?;
        let (tx, rx) = channel();
        let mut link = Self {
            addr,
            stream: None,
            generation: 0,
            tx,
            rx,
            reconnected: false,
            next_try: Instant::now(),
            backoff: BACKOFF_MIN,
            unsent_cancels: Vec::new(),
            bad_lines: Vec::new(),
            deadman: Duration::ZERO,
            heartbeat_every: HEARTBEAT_DEFAULT,
            last_write: Instant::now(),
        };
        link.try_connect().map_err(|e| {
            LinkError::Disconnected(format!("cannot reach the robot at {url}: {e}"))
        })?;
        Ok(link)
    }

    /// Uses the brain's dead-man period (`[link] deadman_s`, seconds; 0 =
    /// off) to pace the heartbeats.
    pub fn with_deadman(mut self, seconds: f64) -> Self {
        self.deadman = Duration::try_from_secs_f64(seconds).unwrap_or(Duration::ZERO);
        self.heartbeat_every = heartbeat_every(self.deadman, Duration::ZERO);
        self
    }

    /// How often the robot hears from this brain at least.
    pub fn heartbeat_every(&self) -> Duration {
        self.heartbeat_every
    }

    /// Lines from the robot that were not replies (for diagnostics).
    pub fn take_bad_lines(&mut self) -> Vec<String> {
        std::mem::take(&mut self.bad_lines)
    }

    fn try_connect(&mut self) -> std::io::Result<()> {
        let stream = TcpStream::connect_timeout(&self.addr, CONNECT_TIMEOUT)?;
        stream.set_nodelay(true)?;
        self.generation += 1;
        spawn_reader(stream.try_clone()?, self.generation, self.tx.clone());
        self.stream = Some(stream);
        self.backoff = BACKOFF_MIN;
        Ok(())
    }

    fn lost(&mut self) {
        if let Some(s) = self.stream.take() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        self.next_try = Instant::now() + self.backoff;
    }
}

impl RobotLink for TcpLink {
    fn send(&mut self, request: LinkRequest) -> Result<(), LinkError> {
        let result = match self.stream.as_mut() {
            Some(s) => write_line(s, &request).map_err(|e| e.to_string()),
            None => Err("not connected".into()),
        };
        if result.is_ok() {
            self.last_write = Instant::now();
        }
        result.map_err(|why| {
            if self.stream.is_some() {
                self.lost();
            }
            let stops = matches!(
                request,
                LinkRequest::Cancel { .. }
                    | LinkRequest::SendGoal {
                        kind: super::GoalKind::StopBase,
                        ..
                    }
            );
            if stops {
                self.unsent_cancels.push(request);
            }
            LinkError::Disconnected(format!("robot at {}: {why}", self.addr))
        })
    }

    /// The remote robot keeps its own time.
    fn advance(&mut self, _dt: f64) {}

    fn drain(&mut self, out: &mut Vec<LinkReply>) {
        while let Ok(msg) = self.rx.try_recv() {
            match msg {
                Wire::Msg(g, reply) if g == self.generation => {
                    if let LinkReply::Hello { deadman_s } = &reply {
                        let robot = Duration::try_from_secs_f64(*deadman_s).unwrap_or_default();
                        self.heartbeat_every = heartbeat_every(self.deadman, robot);
                    }
                    out.push(reply);
                }
                Wire::Bad(g, line) if g == self.generation => self.bad_lines.push(line),
                Wire::Closed(g) if g == self.generation && self.stream.is_some() => self.lost(),
                _ => {}
            }
        }
        if self.stream.is_none() && Instant::now() >= self.next_try {
            if self.try_connect().is_ok() {
                self.reconnected = true;
                for request in std::mem::take(&mut self.unsent_cancels) {
                    let _ = self.send(request);
                }
            } else {
                self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
                self.next_try = Instant::now() + self.backoff;
            }
        }
        if self.stream.is_some() && self.last_write.elapsed() >= self.heartbeat_every {
            let _ = self.send(LinkRequest::Heartbeat);
        }
    }

    fn is_connected(&self) -> bool {
        self.stream.is_some()
    }

    fn take_reconnected(&mut self) -> bool {
        std::mem::take(&mut self.reconnected)
    }
}

/// A quarter of the shorter of the two dead-man periods (0 = none).
fn heartbeat_every(brain: Duration, robot: Duration) -> Duration {
    match (brain.is_zero(), robot.is_zero()) {
        (true, true) => HEARTBEAT_DEFAULT,
        (false, true) => brain / BEATS_PER_PERIOD,
        (true, false) => robot / BEATS_PER_PERIOD,
        (false, false) => brain.min(robot) / BEATS_PER_PERIOD,
    }
    .min(HEARTBEAT_DEFAULT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heartbeats_come_four_times_per_shorter_dead_man_period() {
        let s = Duration::from_secs_f64;
        assert_eq!(heartbeat_every(s(2.0), Duration::ZERO), s(0.5));
        assert_eq!(heartbeat_every(s(2.0), s(0.4)), s(0.1));
        assert_eq!(heartbeat_every(Duration::ZERO, s(1.0)), s(0.25));
        assert_eq!(heartbeat_every(Duration::ZERO, Duration::ZERO), s(0.5));
        assert_eq!(heartbeat_every(s(10.0), Duration::ZERO), s(0.5));
    }

    #[test]
    fn robot_urls_parse_or_say_what_was_expected() {
        assert_eq!(
            parse_robot_url("tcp://127.0.0.1:7000").unwrap(),
            "127.0.0.1:7000".parse().unwrap()
        );
        let e = parse_robot_url("http://127.0.0.1:7000").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid request: robot address `http://127.0.0.1:7000`: expected tcp://HOST:PORT"
        );
        assert!(parse_robot_url("tcp://nohostport").is_err());
    }

    #[test]
    fn an_unreachable_robot_is_a_clear_error() {
        // Port 1 on loopback is closed on any sane machine.
        let e = TcpLink::connect("tcp://127.0.0.1:1").unwrap_err();
        assert!(
            e.to_string()
                .contains("cannot reach the robot at tcp://127.0.0.1:1"),
            "{e}"
        );
    }
}
