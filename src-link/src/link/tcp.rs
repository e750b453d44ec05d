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
//! A heartbeat is also the first line on every connection: the robot takes
//! a connection for its brain only once its first line is a link request.
//!
//! Nothing waits on the robot while holding anything: every line to the
//! robot goes through one writer thread per connection (a channel in, the
//! socket out, with a write timeout), so neither the kernel's tick nor a
//! face's E-stop ever blocks on a robot that stops reading. A write that
//! times out or fails counts as a lost connection: the link reports itself
//! down, keeps the stops and cancels that did not go for the reconnect,
//! and the goals that did not go are reconciled after it.
//!
//! The link has an E-stop line ([`RobotLink::estop_line`]): a face's
//! E-stop hands a `stop_base` to the same connection's writer from the
//! face's own thread, so the robot hears it while the kernel thread may
//! still be inside a commit. From the moment the line holds
//! ([`EStopLine::hold`], before the E-stop is queued for the kernel) until
//! the kernel's own `stop_base` follows, the link holds back what would
//! contradict the stop: a goal the kernel sends meanwhile is dropped,
//! never sent — the kernel learns which from [`RobotLink::take_held_back`]
//! and records it as not sent — and replies wait, so the kernel reads them
//! after it took the E-stop in. The line's own goals (`line/estop…`) are
//! the link's, and their replies never reach the kernel.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{EStopLine, GoalId, GoalKind, LinkError, LinkReply, LinkRequest, RobotLink};

/// The goal ids of the E-stop line's stops start with this.
const LINE_PREFIX: &str = "line/estop";

/// First wait before a reconnect attempt.
const BACKOFF_MIN: Duration = Duration::from_millis(50);
/// Longest wait between reconnect attempts.
const BACKOFF_MAX: Duration = Duration::from_secs(2);
/// How long one connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
/// How long a write to the robot may block: a robot that reads nothing
/// for this long is a lost connection (the kernel goes SAFE, the link
/// reconnects). Half the default dead-man period.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(1);
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

/// Reads JSON lines from `stream` on a thread until it closes; each
/// message goes on `tx` as `wrap` makes it (the simulator stamps its
/// arrival; the link passes it as it is, `std::convert::identity`).
pub fn spawn_reader<T: DeserializeOwned + Send + 'static, M: Send + 'static>(
    stream: TcpStream,
    generation: u64,
    tx: Sender<M>,
    wrap: fn(Wire<T>) -> M,
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
            if tx.send(wrap(msg)).is_err() {
                return;
            }
        }
        let _ = tx.send(wrap(Wire::Closed(generation)));
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

/// What a connection's writer thread could not write before it gave up,
/// tagged with the connection's number.
type Unwritten = (u64, Vec<LinkRequest>);

/// Writes every request that arrives on `rx` to `stream` as a JSON line,
/// on a thread of its own, until the link lets go of the connection (its
/// end of the channel dropped: what was handed over is written first) or a
/// write fails or times out ([`WRITE_TIMEOUT`]). Then it shuts the
/// connection down — the reader sees it end and the link lets go — and,
/// once the link has let go, hands back everything it did not write, the
/// failed request first.
fn spawn_writer(
    mut stream: TcpStream,
    generation: u64,
    rx: Receiver<LinkRequest>,
    unwritten: Sender<Unwritten>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while let Ok(request) = rx.recv() {
            if write_line(&mut stream, &request).is_err() {
                let _ = stream.shutdown(std::net::Shutdown::Both);
                let mut left = vec![request];
                left.extend(rx.iter());
                let _ = unwritten.send((generation, left));
                return;
            }
        }
    })
}

/// The E-stop line of a [`TcpLink`]: the way in to the connection's
/// writer, shared with the link, and whether the line holds the kernel's
/// goals back until its own stop.
#[derive(Debug)]
struct Line {
    /// The current connection's writer thread (`None` while it is down).
    /// Every line to the robot, the link's or the E-stop's, is handed over
    /// here; the lock is held only to put it on the channel, never across
    /// a write.
    writer: Mutex<Option<Sender<LinkRequest>>>,
    /// The line holds: an E-stop is on its way to the kernel, whose own
    /// `stop_base` has not gone yet.
    fired: AtomicBool,
    /// Stops sent on the line.
    count: AtomicU64,
    /// Makes the line's goal ids unique across links to the same robot.
    nonce: u64,
}

impl Line {
    /// Hands `request` to the writer; gives it back when there is none.
    fn write(&self, request: LinkRequest) -> Result<(), LinkRequest> {
        let writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        match writer.as_ref() {
            Some(tx) => tx.send(request).map_err(|e| e.0),
            None => Err(request),
        }
    }

    fn set_writer(&self, writer: Option<Sender<LinkRequest>>) {
        *self.writer.lock().unwrap_or_else(PoisonError::into_inner) = writer;
    }
}

impl EStopLine for Line {
    fn hold(&self) {
        self.fired.store(true, Ordering::SeqCst);
    }

    fn stop(&self) -> Result<(), LinkError> {
        let n = self.count.fetch_add(1, Ordering::SeqCst) + 1;
        let request = LinkRequest::SendGoal {
            goal_id: format!("{LINE_PREFIX}{n}.{:x}", self.nonce),
            kind: GoalKind::StopBase,
        };
        self.write(request)
            .map_err(|_| LinkError::Disconnected("E-stop line: not connected".into()))
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
    /// Goals the kernel sent while the line held, dropped unsent; handed
    /// to the kernel by [`RobotLink::take_held_back`].
    held_back: Vec<GoalId>,
    /// Replies read after a line stop, before the kernel's own stop.
    withheld: Vec<LinkReply>,
    generation: u64,
    tx: Sender<Wire<LinkReply>>,
    rx: Receiver<Wire<LinkReply>>,
    /// The current connection's writer thread.
    writer: Option<std::thread::JoinHandle<()>>,
    /// What the writer threads could not write.
    unwritten_tx: Sender<Unwritten>,
    unwritten_rx: Receiver<Unwritten>,
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
        let (unwritten_tx, unwritten_rx) = channel();
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
            held_back: Vec::new(),
            withheld: Vec::new(),
            generation: 0,
            tx,
            rx,
            writer: None,
            unwritten_tx,
            unwritten_rx,
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
        stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
        let (reader, writer) = (stream.try_clone()?, stream.try_clone()?);
        self.generation += 1;
        spawn_reader(
            reader,
            self.generation,
            self.tx.clone(),
            std::convert::identity,
        );
        let (to_writer, requests) = channel();
        // The first line on every connection is a heartbeat, handed over
        // before anything else can be: a robot takes a connection for its
        // brain only once it has sent a link request (`sim --listen`).
        let _ = to_writer.send(LinkRequest::Heartbeat);
        self.last_write = Instant::now();
        self.writer = Some(spawn_writer(
            writer,
            self.generation,
            requests,
            self.unwritten_tx.clone(),
        ));
        self.line.set_writer(Some(to_writer));
        self.stream = Some(stream);
        self.backoff = BACKOFF_MIN;
        Ok(())
    }

    /// The connection is gone: shut down (a write stuck on it fails at
    /// once, the reader ends), the writer let go, a reconnect scheduled.
    fn lost(&mut self) {
        if let Some(s) = self.stream.take() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        self.line.set_writer(None);
        self.next_try = Instant::now() + self.backoff;
    }

    /// Hands `request` to the connection's writer; when there is none, the
    /// connection is lost and a stop or cancel is kept for the reconnect.
    fn write(&mut self, request: LinkRequest) -> Result<(), LinkError> {
        let unsent = if self.stream.is_some() {
            match self.line.write(request) {
                Ok(()) => {
                    self.last_write = Instant::now();
                    return Ok(());
                }
                // The writer gave up on this connection (its report of what
                // it did not write is on the way; `drain` reads it).
                Err(request) => {
                    self.lost();
                    request
                }
            }
        } else {
            request
        };
        self.keep_unsent(vec![unsent]);
        Err(LinkError::Disconnected(format!(
            "robot at {}: not connected",
            self.addr
        )))
    }

    /// Keeps the stops and cancels among `requests` for the reconnect; the
    /// rest is reconciled after it.
    fn keep_unsent(&mut self, requests: Vec<LinkRequest>) {
        self.unsent_cancels
            .extend(requests.into_iter().filter(|r| stops(r) && !is_line(r)));
    }
}

/// Whether a request stops something: a `stop_base` or a cancel.
fn stops(request: &LinkRequest) -> bool {
    matches!(
        request,
        LinkRequest::Cancel { .. }
            | LinkRequest::SendGoal {
                kind: GoalKind::StopBase,
                ..
            }
    )
}

/// Whether a request is one of the E-stop line's own stops.
fn is_line(request: &LinkRequest) -> bool {
    matches!(request, LinkRequest::SendGoal { goal_id, .. } if goal_id.starts_with(LINE_PREFIX))
}

impl RobotLink for TcpLink {
    fn send(&mut self, request: LinkRequest) -> Result<(), LinkError> {
        if self.line.fired.load(Ordering::SeqCst) {
            match &request {
                // The kernel's own stop: the line lets go.
                LinkRequest::SendGoal {
                    kind: GoalKind::StopBase,
                    ..
                } => self.line.fired.store(false, Ordering::SeqCst),
                // Decided before the kernel took the E-stop in: it must
                // not reach the robot, before the stop or after it.
                LinkRequest::SendGoal { goal_id, .. } => {
                    self.held_back.push(goal_id.clone());
                    return Ok(());
                }
                _ => {}
            }
        }
        self.write(request)
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
        // A writer that gave up: its connection is lost. Its stops and
        // cancels are kept even when the link has already reconnected.
        while let Ok((g, requests)) = self.unwritten_rx.try_recv() {
            if g == self.generation && self.stream.is_some() {
                self.lost();
            }
            self.keep_unsent(requests);
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
            } else {
                self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
                self.next_try = Instant::now() + self.backoff;
            }
        }
        if self.stream.is_some() {
            for request in std::mem::take(&mut self.unsent_cancels) {
                let _ = self.write(request);
            }
        }
        if self.stream.is_some() && self.last_write.elapsed() >= self.heartbeat_every {
            let _ = self.write(LinkRequest::Heartbeat);
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

    fn take_held_back(&mut self) -> Vec<GoalId> {
        std::mem::take(&mut self.held_back)
    }
}

impl Drop for TcpLink {
    /// Lets go of the writer and waits until it has written what was
    /// handed to it — the engine's last stop, before the process ends —
    /// or given up on the robot ([`WRITE_TIMEOUT`]).
    fn drop(&mut self) {
        self.line.set_writer(None);
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
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

    /// The next request the robot reads, heartbeats skipped.
    fn heard(reader: &mut BufReader<TcpStream>) -> LinkRequest {
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let request = serde_json::from_str(&line).unwrap();
            if request != LinkRequest::Heartbeat {
                return request;
            }
        }
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
        std::thread::spawn(move || {
            line.hold();
            line.stop().unwrap();
        })
        .join()
        .unwrap();
        let LinkRequest::SendGoal { goal_id, kind } = heard(&mut reader) else {
            panic!("not a goal")
        };
        assert_eq!(kind, GoalKind::StopBase);
        assert!(goal_id.starts_with(LINE_PREFIX), "{goal_id}");
        // A goal the kernel dispatched before it took the E-stop in is
        // dropped: never sent, before the kernel's stop or after it.
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
        // The kernel's own stop goes; the held goal never does, and the
        // kernel learns which goals were dropped, once.
        link.send(goal("t/estop1", GoalKind::StopBase)).unwrap();
        assert_eq!(heard(&mut reader), goal("t/estop1", GoalKind::StopBase));
        assert_eq!(link.take_held_back(), vec!["t/nav1".to_string()]);
        assert!(link.take_held_back().is_empty());
        // After the kernel's stop, goals go again.
        link.send(goal("t/nav3", nav.clone())).unwrap();
        assert_eq!(heard(&mut reader), goal("t/nav3", nav));
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
    fn a_robot_that_stops_reading_holds_up_nobody_and_its_stops_go_on_reconnect() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("tcp://{}", listener.local_addr().unwrap());
        let mut link = TcpLink::connect(&url).unwrap();
        // The robot takes the connection and never reads it.
        let (deaf, _) = listener.accept().unwrap();
        let line = link.estop_line().unwrap();
        // Far more than the socket's buffers hold: the writer stalls on
        // the robot, not the caller.
        let big = crate::protocol::Fault::Block {
            passage: "x".repeat(1 << 20),
        };
        for _ in 0..32 {
            link.send(LinkRequest::Inject { fault: big.clone() })
                .unwrap();
        }
        // Neither the line nor the kernel's stop waits for the robot.
        let (done_tx, done_rx) = channel();
        std::thread::spawn(move || {
            line.hold();
            let _ = line.stop();
            let _ = done_tx.send(());
        });
        done_rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the E-stop line returned while the robot read nothing");
        let _ = link.send(goal("t/estop1", GoalKind::StopBase));
        // The stalled write times out: the link is down.
        let deadline = Instant::now() + Duration::from_secs(30);
        while link.is_connected() {
            assert!(
                Instant::now() < deadline,
                "the link never noticed the stall"
            );
            link.drain(&mut Vec::new());
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(deaf);
        // Back on a robot that reads: the kernel's stop, which never
        // reached the deaf one, goes first.
        let (stream, _) = std::thread::scope(|s| {
            let accepted = s.spawn(|| listener.accept().unwrap());
            while !link.is_connected() {
                link.drain(&mut Vec::new());
                std::thread::sleep(Duration::from_millis(20));
            }
            accepted.join().unwrap()
        });
        let mut reader = BufReader::new(stream);
        assert_eq!(heard(&mut reader), goal("t/estop1", GoalKind::StopBase));
    }

    #[test]
    fn the_first_line_on_every_connection_is_a_heartbeat() {
        let (mut link, mut reader, _robot) = robot();
        // Whatever the link is asked to send first.
        link.send(goal("t/stop1", GoalKind::StopBase)).unwrap();
        let mut first = String::new();
        reader.read_line(&mut first).unwrap();
        assert_eq!(
            serde_json::from_str::<LinkRequest>(&first).unwrap(),
            LinkRequest::Heartbeat,
            "a robot takes a connection for its brain only after a request"
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
