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
//!
//! The link has an E-stop line ([`RobotLink::estop_line`]): a face's
//! E-stop writes a `stop_base` on the same connection from the face's own
//! thread, so the robot hears it while the kernel thread may still be
//! inside a commit. Until the kernel's own `stop_base` follows, the link
//! holds back what would contradict the stop: a goal the kernel sends
//! meanwhile goes out just before the kernel's stop (so the robot never
//! runs it), and replies wait, so the kernel reads them after it took the
//! E-stop in. The line's own goals (`line/estop…`) are the link's, and
//! their replies never reach the kernel.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{EStopLine, GoalKind, LinkError, LinkReply, LinkRequest, RobotLink};

/// The goal ids of the E-stop line's stops start with this.
const LINE_PREFIX: &str = "line/estop";

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

/// The E-stop line of a [`TcpLink`]: the connection's writing half,
/// shared with the link, and whether a stop went that the kernel has not
/// followed with its own yet.
#[derive(Debug)]
struct Line {
    /// The writing half of the connection (`None` while it is down); every
    /// line written to the robot, the link's or the E-stop's, takes this lock.
    writer: Mutex<Option<TcpStream>>,
    /// A line stop went and the kernel's own `stop_base` has not.
    fired: AtomicBool,
    /// Stops sent on the line.
    count: AtomicU64,
    /// Makes the line's goal ids unique across links to the same robot.
    nonce: u64,
}

impl Line {
    fn write(&self, request: &LinkRequest) -> std::io::Result<()> {
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        match writer.as_mut() {
            Some(stream) => write_line(stream, request),
            None => Err(std::io::Error::new(
                std::io::ErrorKind::NotConnected,
                "not connected",
            )),
        }
    }
}

impl EStopLine for Line {
    fn stop(&self) -> Result<(), LinkError> {
        self.fired.store(true, Ordering::SeqCst);
        let n = self.count.fetch_add(1, Ordering::SeqCst) + 1;
        let request = LinkRequest::SendGoal {
            goal_id: format!("{LINE_PREFIX}{n}.{:x}", self.nonce),
            kind: GoalKind::StopBase,
        };
        self.write(&request)
            .map_err(|e| LinkError::Disconnected(format!("E-stop line: {e}")))
    }
}

/// Whether a reply answers one of the E-stop line's own goals.
fn answers_line(reply: &LinkReply) -> bool {
    match reply {
        LinkReply::Accepted { goal_id }
        | LinkReply::Rejected { goal_id, .. }
        | LinkReply::Feedback { goal_id, .. }
        | LinkReply::Result { goal_id, .. }
        | LinkReply::GoalStatus { goal_id, .. } => goal_id.starts_with(LINE_PREFIX),
        _ => false,
    }
}

/// A robot link over TCP.
#[derive(Debug)]
pub struct TcpLink {
    addr: SocketAddr,
    /// The connection (`None` while it is down); written through `line`.
    stream: Option<TcpStream>,
    line: Arc<Line>,
    /// Goals the kernel sent after a line stop, before its own stop.
    parked: Vec<LinkRequest>,
    /// Replies read after a line stop, before the kernel's own stop.
    withheld: Vec<LinkReply>,
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
            line: Arc::new(Line {
                writer: Mutex::new(None),
                fired: AtomicBool::new(false),
                count: AtomicU64::new(0),
                nonce: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64),
            }),
            parked: Vec::new(),
            withheld: Vec::new(),
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
        *self
            .line
            .writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(stream.try_clone()?);
        self.stream = Some(stream);
        self.backoff = BACKOFF_MIN;
        Ok(())
    }

    fn lost(&mut self) {
        if let Some(s) = self.stream.take() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        *self
            .line
            .writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = None;
        self.next_try = Instant::now() + self.backoff;
    }
}

impl RobotLink for TcpLink {
    fn send(&mut self, request: LinkRequest) -> Result<(), LinkError> {
        if self.line.fired.load(Ordering::SeqCst) {
            match &request {
                // The kernel's own stop: what it sent since the line's goes
                // first, so the robot stops after it.
                LinkRequest::SendGoal {
                    kind: GoalKind::StopBase,
                    ..
                } => {
                    self.line.fired.store(false, Ordering::SeqCst);
                    for parked in std::mem::take(&mut self.parked) {
                        let _ = self.send(parked);
                    }
                }
                LinkRequest::SendGoal { .. } => {
                    self.parked.push(request);
                    return Ok(());
                }
                _ => {}
            }
        }
        let result = if self.stream.is_some() {
            self.line.write(&request).map_err(|e| e.to_string())
        } else {
            Err("not connected".into())
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
        // After a line stop the kernel reads nothing until it has taken the
        // E-stop in (its own stop clears `fired`).
        let holding = self.line.fired.load(Ordering::SeqCst);
        if !holding {
            out.append(&mut self.withheld);
        }
        while let Ok(msg) = self.rx.try_recv() {
            match msg {
                Wire::Msg(_, reply) if answers_line(&reply) => {}
                Wire::Msg(g, reply) if g == self.generation => {
                    if let LinkReply::Hello { deadman_s } = &reply {
                        let robot = Duration::try_from_secs_f64(*deadman_s).unwrap_or_default();
                        self.heartbeat_every = heartbeat_every(self.deadman, robot);
                    }
                    if holding {
                        self.withheld.push(reply);
                    } else {
                        out.push(reply);
                    }
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

    fn estop_line(&self) -> Option<Arc<dyn EStopLine>> {
        Some(self.line.clone())
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
    use super::super::GoalId;
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

    /// A robot on loopback: the link connected to it, and the robot's end.
    fn robot() -> (TcpLink, BufReader<TcpStream>, TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("tcp://{}", listener.local_addr().unwrap());
        let link = TcpLink::connect(&url).unwrap();
        let (stream, _) = listener.accept().unwrap();
        let reader = BufReader::new(stream.try_clone().unwrap());
        (link, reader, stream)
    }

    /// The next request the robot reads.
    fn heard(reader: &mut BufReader<TcpStream>) -> LinkRequest {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    }

    fn goal(goal_id: &str, kind: GoalKind) -> LinkRequest {
        LinkRequest::SendGoal {
            goal_id: goal_id.into(),
            kind,
        }
    }

    /// Replies until `n` arrived (the reader thread is asynchronous).
    fn drained(link: &mut TcpLink, n: usize) -> Vec<LinkReply> {
        let mut out = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        while out.len() < n && Instant::now() < deadline {
            link.drain(&mut out);
            std::thread::sleep(Duration::from_millis(5));
        }
        out
    }

    #[test]
    fn the_estop_line_stops_the_robot_and_holds_back_what_would_contradict_it() {
        let (mut link, mut reader, mut robot) = robot();
        let line = link.estop_line().unwrap();
        // From another thread, as a face's sender does.
        std::thread::spawn(move || line.stop().unwrap())
            .join()
            .unwrap();
        let LinkRequest::SendGoal { goal_id, kind } = heard(&mut reader) else {
            panic!("not a goal")
        };
        assert_eq!(kind, GoalKind::StopBase);
        assert!(goal_id.starts_with(LINE_PREFIX), "{goal_id}");
        // A goal the kernel dispatched before it took the E-stop in waits.
        let target = crate::geometry::Point { x: 1.0, y: 2.0 };
        let nav = GoalKind::Navigate { target, zone: None };
        link.send(goal("t/nav1", nav.clone())).unwrap();
        // The robot answers the line's stop and reports a goal's end.
        let ended = LinkReply::Result {
            goal_id: "t/nav0".into(),
            outcome: super::super::GoalOutcome::Canceled,
        };
        for reply in [
            LinkReply::Accepted {
                goal_id: goal_id.clone(),
            },
            ended.clone(),
        ] {
            write_line(&mut robot, &reply).unwrap();
        }
        std::thread::sleep(Duration::from_millis(100));
        let mut out = Vec::new();
        link.drain(&mut out);
        assert!(
            out.is_empty(),
            "the kernel reads nothing before its own stop: {out:?}"
        );
        // The kernel's own stop: the held goal goes just before it.
        link.send(goal("t/estop1", GoalKind::StopBase)).unwrap();
        assert_eq!(heard(&mut reader), goal("t/nav1", nav));
        assert_eq!(heard(&mut reader), goal("t/estop1", GoalKind::StopBase));
        // Now the withheld reply; the line's own never reaches the kernel.
        assert_eq!(drained(&mut link, 1), vec![ended]);
        write_line(&mut robot, &LinkReply::Accepted { goal_id }).unwrap();
        write_line(
            &mut robot,
            &LinkReply::Accepted {
                goal_id: "t/nav2".into(),
            },
        )
        .unwrap();
        assert_eq!(
            drained(&mut link, 1),
            vec![LinkReply::Accepted {
                goal_id: "t/nav2".into()
            }]
        );
    }

    #[test]
    fn each_line_stop_is_a_new_goal() {
        let (link, mut reader, _robot) = robot();
        let line = link.estop_line().unwrap();
        line.stop().unwrap();
        line.stop().unwrap();
        let ids: Vec<GoalId> = (0..2)
            .map(|_| match heard(&mut reader) {
                LinkRequest::SendGoal { goal_id, .. } => goal_id,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_ne!(
            ids[0], ids[1],
            "a robot does not redo a goal id it has seen"
        );
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
