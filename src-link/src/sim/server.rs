//! `robobrain sim --listen`: the simulated robot as its own process.
//!
//! The world runs on the wall clock (times `speed`) whether or not a brain
//! is connected, so a killed brain finds the robot where the physics left
//! it, and the simulator answers "what happened to goal X" from its own
//! record. One brain at a time, and a connection must prove it is one: it
//! is answered `hello`, but becomes the robot's client — replacing the one
//! before — only once its first line is a valid link request (the brain's
//! link sends a `heartbeat` first thing). A connection is closed on its
//! first line that is not a link request, after a `refused` saying why,
//! and nothing after that line is read: a web page's cross-protocol
//! request (an HTTP `POST` whose body holds a `send_goal` line) is refused
//! at its request line and never reaches the robot nor unseats its brain.
//! A brain that reads nothing for [`WRITE_TIMEOUT`] is dropped (the world
//! does not wait on it).
//! Requests are applied as they arrive, not at the next world step, so a
//! `stop_base` brakes the base within microseconds of reaching the robot.
//!
//! The dead-man: a robot that hears nothing from its brain for
//! `deadman_s` (any request counts; an idle brain sends heartbeats) while
//! the base moves brings the base to rest on its own, and tells the brain
//! so ([`LinkReply::Deadman`]) when it speaks again or reconnects.
//!
//! Every `send_goal` received — repeats included — and every dead-man stop
//! can be appended to a record file (JSON lines, with the robot's wall
//! clock in µs when it was applied, `wall_us`, and when the request reached
//! this process, `received_us` — the world loop applies it between steps —
//! and the pose), the evidence that nothing was sent twice and
//! that the base was stopped in time.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use thiserror::Error;

use super::Sim;
use crate::link::tcp::{WRITE_TIMEOUT, Wire, write_line};
use crate::link::{GoalKind, LinkReply, LinkRequest};

/// A message from the brain, stamped by the reader thread with when it
/// arrived (µs since the epoch), before the world loop got to it.
type Arrived = (u64, Wire<LinkRequest>);

/// Why the simulator server stopped or could not start.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SimServerError {
    /// The record file cannot be written.
    #[error("{}: cannot write the goal record: {source}", path.display())]
    Record {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The listening socket failed.
    #[error("listening socket: {0}")]
    Listen(std::io::Error),
}

/// The robot side of the dead-man.
#[derive(Debug)]
struct Deadman {
    /// Silence after which the base is brought to rest.
    after: Duration,
    /// When the brain was last heard from.
    last_heard: Instant,
    /// Whether it fired since the brain was last heard from.
    fired: bool,
    /// Times it fired so far (stop goal ids count from it).
    count: u64,
    /// A notice for the next brain that connects.
    unsaid: Option<LinkReply>,
}

/// How much of a refused line a `refused` reply repeats.
const QUOTED_CHARS: usize = 120;

/// The simulator, its clock, its one client and its goal record.
pub struct SimServer {
    sim: Sim,
    tick_s: f64,
    speed: f64,
    record: Option<(PathBuf, File)>,
    client: Option<(u64, TcpStream)>,
    /// Connections that have not yet sent a link request: not the client.
    pending: Vec<(u64, TcpStream)>,
    generation: u64,
    tx: Sender<Arrived>,
    rx: Receiver<Arrived>,
    /// When the request being applied reached this process (µs since the epoch).
    received_us: Option<u64>,
    replies: Vec<LinkReply>,
    deadman: Option<Deadman>,
}

impl SimServer {
    /// A server for `sim`, stepping `tick_s` sim seconds `speed` times faster than the wall.
    pub fn new(sim: Sim, tick_s: f64, speed: f64) -> Self {
        let (tx, rx) = channel();
        Self {
            sim,
            tick_s,
            speed,
            record: None,
            client: None,
            pending: Vec::new(),
            generation: 0,
            tx,
            rx,
            received_us: None,
            replies: Vec::new(),
            deadman: None,
        }
    }

    /// Brings the base to rest after `seconds` (wall) of silence from the
    /// brain while it moves; 0 turns the dead-man off (the default).
    pub fn with_deadman(mut self, seconds: f64) -> Self {
        self.deadman = (seconds > 0.0 && seconds.is_finite()).then(|| Deadman {
            after: Duration::from_secs_f64(seconds),
            last_heard: Instant::now(),
            fired: false,
            count: 0,
            unsaid: None,
        });
        self
    }

    /// Appends every received goal to `path` (created or truncated).
    pub fn record_to(&mut self, path: &Path) -> Result<(), SimServerError> {
        let file = File::create(path).map_err(|source| SimServerError::Record {
            path: path.to_path_buf(),
            source,
        })?;
        self.record = Some((path.to_path_buf(), file));
        Ok(())
    }

    /// The simulation.
    pub fn sim(&self) -> &Sim {
        &self.sim
    }

    /// Serves on `listener` until `stop` is set: each request is applied
    /// when it arrives, the world steps on the clock.
    pub fn serve(
        mut self,
        listener: TcpListener,
        stop: &Arc<AtomicBool>,
    ) -> Result<(), SimServerError> {
        let (conn_tx, conn_rx) = channel();
        let accept_stop = Arc::clone(stop);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if accept_stop.load(Ordering::Relaxed) || conn_tx.send(stream).is_err() {
                    return;
                }
            }
        });
        let period = Duration::from_secs_f64(self.tick_s / self.speed.max(1e-3));
        let mut next = Instant::now() + period;
        while !stop.load(Ordering::Relaxed) {
            while let Ok(stream) = conn_rx.try_recv() {
                match stream {
                    Ok(s) => self.accept(s),
                    Err(e) => return Err(SimServerError::Listen(e)),
                }
            }
            let wait = next.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(wait) {
                Ok(msg) => {
                    self.take(msg)?;
                    self.send_replies();
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                    self.tick()?;
                    next += period;
                    // Behind (a slow machine): do not try to catch up in a burst.
                    if next < Instant::now() {
                        next = Instant::now() + period;
                    }
                }
            }
        }
        Ok(())
    }

    /// A new connection: answered `hello`, then pending until its first
    /// line shows it is a brain.
    fn accept(&mut self, mut stream: TcpStream) {
        let _ = stream.set_nodelay(true);
        // A brain that stops reading holds up the world for this long at
        // most, then it is dropped (it reconnects).
        let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
        let Ok(reader) = stream.try_clone() else {
            return;
        };
        let deadman_s = self.deadman.as_ref().map_or(0.0, |d| d.after.as_secs_f64());
        if write_line(&mut stream, &LinkReply::Hello { deadman_s }).is_err() {
            let _ = stream.shutdown(std::net::Shutdown::Both);
            return;
        }
        self.generation += 1;
        spawn_reader(reader, self.generation, self.tx.clone());
        self.pending.push((self.generation, stream));
    }

    /// Takes one message from a reader thread: a request from the current
    /// brain, or the first from a pending connection (which makes it the
    /// brain), is applied and resets the dead-man; a bad line closes its
    /// connection.
    fn take(&mut self, (received_us, msg): Arrived) -> Result<(), SimServerError> {
        match msg {
            Wire::Msg(g, request) => {
                let current = self.client.as_ref().is_some_and(|(c, _)| *c == g);
                if !current && !self.promote(g) {
                    // From a connection already closed.
                    return Ok(());
                }
                if let Some(d) = self.deadman.as_mut() {
                    d.last_heard = Instant::now();
                    d.fired = false;
                }
                self.received_us = Some(received_us);
                let applied = self.apply(request);
                self.received_us = None;
                applied?;
            }
            Wire::Bad(g, why) => {
                if let Some((_, mut stream)) = self.let_go(g) {
                    let _ = write_line(&mut stream, &LinkReply::Refused { message: why });
                    let _ = stream.shutdown(std::net::Shutdown::Both);
                }
            }
            Wire::Closed(g) => {
                self.let_go(g);
            }
        }
        Ok(())
    }

    /// Makes pending connection `g` the client: its first line was a link
    /// request. The client before it is disconnected, after the replies
    /// meant for it. Returns whether `g` was pending.
    fn promote(&mut self, g: u64) -> bool {
        let Some(i) = self.pending.iter().position(|(p, _)| *p == g) else {
            return false;
        };
        let (_, stream) = self.pending.swap_remove(i);
        self.send_replies();
        if let Some((_, old)) = self.client.replace((g, stream)) {
            let _ = old.shutdown(std::net::Shutdown::Both);
        }
        if let Some(notice) = self.deadman.as_mut().and_then(|d| d.unsaid.take()) {
            self.replies.push(notice);
        }
        true
    }

    /// Connection `g` is no longer the client nor pending; its stream, if
    /// it still was either.
    fn let_go(&mut self, g: u64) -> Option<(u64, TcpStream)> {
        if self.client.as_ref().is_some_and(|(c, _)| *c == g) {
            return self.client.take();
        }
        let i = self.pending.iter().position(|(p, _)| *p == g)?;
        Some(self.pending.swap_remove(i))
    }

    /// One step: apply the client's requests, advance the world, check the
    /// dead-man, send the replies.
    pub fn tick(&mut self) -> Result<(), SimServerError> {
        while let Ok(msg) = self.rx.try_recv() {
            self.take(msg)?;
        }
        self.sim.step(self.tick_s);
        self.check_deadman()?;
        self.sim.publish_telemetry();
        self.send_replies();
        Ok(())
    }

    /// Brings the base to rest when the brain has been silent too long.
    fn check_deadman(&mut self) -> Result<(), SimServerError> {
        let moving = self.sim.is_moving();
        let Some(d) = self.deadman.as_mut() else {
            return Ok(());
        };
        let silent = d.last_heard.elapsed();
        if d.fired || silent < d.after || !moving {
            return Ok(());
        }
        d.fired = true;
        d.count += 1;
        let goal_id = format!("deadman/{}-{:x}", d.count, wall_us());
        let stopped: Vec<String> = self
            .sim
            .bring_to_rest(goal_id.clone())
            .into_iter()
            .collect();
        let notice = LinkReply::Deadman {
            silent_s: silent.as_secs_f64(),
            time: self.sim.time(),
            stopped: stopped.clone(),
        };
        self.write_record(json!({
            "goal_id": goal_id, "by": "deadman", "goal": GoalKind::StopBase,
            "silent_s": silent.as_secs_f64(), "stopped": stopped,
        }))?;
        if self.client.is_some() {
            self.replies.push(notice);
        } else if let Some(d) = self.deadman.as_mut() {
            d.unsaid = Some(notice);
        }
        Ok(())
    }

    fn send_replies(&mut self) {
        self.sim.drain(&mut self.replies);
        if let Some((_, stream)) = self.client.as_mut() {
            for reply in &self.replies {
                if write_line(stream, reply).is_err() {
                    let _ = stream.shutdown(std::net::Shutdown::Both);
                    self.client = None;
                    break;
                }
            }
        }
        // Replies for a brain that is gone are dropped; goal status queries
        // answer from the simulator's own record.
        self.replies.clear();
    }

    /// Applies one request (recording goals first).
    pub fn apply(&mut self, request: LinkRequest) -> Result<(), SimServerError> {
        if let LinkRequest::SendGoal { goal_id, kind } = &request {
            self.write_record(json!({"goal_id": goal_id, "goal": kind}))?;
        }
        if let Err(e) = self.sim.apply(request) {
            self.replies.push(LinkReply::Refused {
                message: e.to_string(),
            });
        }
        Ok(())
    }

    /// Appends `line` to the record, stamped with the robot's time, its
    /// wall clock (µs since the epoch), its pose and whether the base was
    /// moving (before the request took effect).
    fn write_record(&mut self, mut line: Value) -> Result<(), SimServerError> {
        let Some((path, file)) = self.record.as_mut() else {
            return Ok(());
        };
        line["time"] = json!(self.sim.time());
        line["wall_us"] = json!(wall_us());
        if let Some(received) = self.received_us.take() {
            line["received_us"] = json!(received);
        }
        line["pose"] = json!(self.sim.pose());
        line["moving"] = json!(self.sim.is_moving());
        writeln!(file, "{line}")
            .and_then(|()| file.flush())
            .map_err(|source| SimServerError::Record {
                path: path.clone(),
                source,
            })
    }
}

/// Microseconds since the Unix epoch, on this machine's clock.
pub fn wall_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Reads a connection's JSON lines on a thread of its own, each stamped
/// with when it arrived, until the connection ends or a line is not a link
/// request: that line is passed on as [`Wire::Bad`], saying why, and
/// nothing after it is read (the server closes the connection), so the
/// rest of, say, an HTTP request is never taken for requests.
fn spawn_reader(stream: TcpStream, generation: u64, tx: Sender<Arrived>) {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stream);
        let mut bytes = Vec::new();
        loop {
            bytes.clear();
            match reader.read_until(b'\n', &mut bytes) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let msg = match std::str::from_utf8(&bytes).map(str::trim) {
                Ok("") => continue,
                Ok(line) => match serde_json::from_str(line) {
                    Ok(request) => Wire::Msg(generation, request),
                    Err(e) => Wire::Bad(generation, refusal(line, &e.to_string())),
                },
                Err(e) => Wire::Bad(generation, format!("not a link request: {e}")),
            };
            let bad = matches!(msg, Wire::Bad(..));
            if tx.send((wall_us(), msg)).is_err() || bad {
                return;
            }
        }
        let _ = tx.send((wall_us(), Wire::Closed(generation)));
    });
}

/// What the `refused` reply to a bad line says: an HTTP request is named
/// as one (a web page, or a tool, speaking HTTP to the robot's port).
fn refusal(line: &str, error: &str) -> String {
    let quoted: String = line.chars().take(QUOTED_CHARS).collect();
    if looks_like_http(line) {
        format!(
            "an HTTP request (`{quoted}`): the robot link speaks JSON lines, not HTTP; connection closed"
        )
    } else {
        format!("not a link request: {error}: {quoted}; connection closed")
    }
}

/// Whether `line` is an HTTP request line: `METHOD TARGET HTTP/…`.
fn looks_like_http(line: &str) -> bool {
    let mut words = line.split_ascii_whitespace();
    let (Some(method), Some(_target), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return false;
    };
    method
        .bytes()
        .all(|b| b.is_ascii_alphabetic() || b == b'-' || b == b'_')
        && version.starts_with("HTTP/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::{GoalKind, GoalStatus, RobotLink, tcp::TcpLink};
    use crate::world::World;

    /// Asks the robot about a goal no one sent; the answer shows `link`
    /// is still the robot's client (only the client is answered), and the
    /// link must not have reconnected meanwhile.
    fn still_the_client(link: &mut TcpLink, what: &str) {
        let _ = link.send(LinkRequest::QueryGoal {
            goal_id: "t/none".into(),
        });
        let mut out = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        while !out
            .iter()
            .any(|r| matches!(r, LinkReply::GoalStatus { goal_id, .. } if goal_id == "t/none"))
        {
            assert!(
                Instant::now() < deadline,
                "{what}: the brain lost the robot"
            );
            std::thread::sleep(Duration::from_millis(10));
            link.drain(&mut out);
        }
        assert!(!link.take_reconnected(), "{what}: the brain was replaced");
    }

    /// The next line the robot writes on `stream` (empty at its end).
    fn next_line(stream: &mut BufReader<TcpStream>) -> String {
        let mut line = String::new();
        let _ = stream.read_line(&mut line);
        line
    }

    #[test]
    fn a_connection_is_the_client_only_after_a_request_and_closed_at_its_first_bad_line() {
        let world = World::builtin("apartment").unwrap();
        let server = SimServer::new(Sim::new(world, 1), 0.1, 20.0);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = Arc::clone(&stop);
        let handle = std::thread::spawn(move || server.serve(listener, &stop2));
        let mut brain = TcpLink::connect(&format!("tcp://{addr}")).unwrap();
        still_the_client(&mut brain, "alone");

        // A connection that has said nothing is greeted, not served.
        let quiet = TcpStream::connect(addr).unwrap();
        let mut quiet = BufReader::new(quiet);
        assert!(next_line(&mut quiet).contains("\"hello\""));
        still_the_client(&mut brain, "a silent connection");
        // Its first line is not a request: refused, and closed.
        quiet
            .get_mut()
            .write_all(b"{\"request\":\"fly\"}\n")
            .unwrap();
        let refused = next_line(&mut quiet);
        assert!(refused.contains("not a link request"), "{refused}");
        assert_eq!(next_line(&mut quiet), "", "the connection stays open");
        still_the_client(&mut brain, "a bad first line");

        // One whose first line is a request takes over; its first bad line
        // later closes it too.
        let mut other = BufReader::new(TcpStream::connect(addr).unwrap());
        assert!(next_line(&mut other).contains("\"hello\""));
        other
            .get_mut()
            .write_all(b"{\"request\":\"heartbeat\"}\n")
            .unwrap();
        // Served: the robot's telemetry comes.
        loop {
            let line = next_line(&mut other);
            assert!(!line.is_empty(), "a connection that spoke was closed");
            if line.contains("\"telemetry\"") {
                break;
            }
        }
        other.get_mut().write_all(b"GET / HTTP/1.1\n").unwrap();
        let refused = loop {
            let line = next_line(&mut other);
            if !line.contains("\"telemetry\"") {
                break line;
            }
        };
        assert!(refused.contains("an HTTP request"), "{refused}");
        assert_eq!(next_line(&mut other), "", "the connection stays open");
        stop.store(true, Ordering::Relaxed);
        handle.join().unwrap().unwrap();
    }

    #[test]
    fn http_request_lines_are_told_from_link_requests() {
        for line in [
            "POST / HTTP/1.1",
            "GET /api?x=1 HTTP/1.0",
            "OPTIONS * HTTP/1.1",
            "PRI * HTTP/2.0",
        ] {
            assert!(looks_like_http(line), "{line}");
        }
        for line in [
            "{\"request\":\"heartbeat\"}",
            "POST /",
            "GET / HTTP/1.1 extra",
            "{\"a\": \"b HTTP/1.1\"}",
        ] {
            assert!(!looks_like_http(line), "{line}");
        }
    }

    #[test]
    fn a_remote_robot_runs_goals_remembers_them_and_records_every_send() {
        let world = World::builtin("apartment").unwrap();
        let target = world.zone("kitchen").unwrap().goal;
        let dir = std::env::temp_dir().join(format!("rb-sim-server-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let record = dir.join("goals.jsonl");
        let mut server = SimServer::new(Sim::new(world, 1), 0.1, 200.0);
        server.record_to(&record).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("tcp://{}", listener.local_addr().unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = Arc::clone(&stop);
        let handle = std::thread::spawn(move || server.serve(listener, &stop2));

        let mut link = TcpLink::connect(&url).unwrap();
        let goal = LinkRequest::SendGoal {
            goal_id: "t/g1.0".into(),
            kind: GoalKind::Navigate { target, zone: None },
        };
        link.send(goal.clone()).unwrap();
        // The brain goes away while the goal runs (once the robot has it),
        // then a new one asks about it.
        let mut out = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        while !out.iter().any(|r| matches!(r, LinkReply::Accepted { .. })) {
            assert!(Instant::now() < deadline, "the goal was never accepted");
            std::thread::sleep(Duration::from_millis(10));
            link.drain(&mut out);
        }
        drop(link);
        std::thread::sleep(Duration::from_millis(50));
        let mut link = TcpLink::connect(&url).unwrap();
        out.clear();
        let status = loop {
            link.send(LinkRequest::QueryGoal {
                goal_id: "t/g1.0".into(),
            })
            .unwrap();
            std::thread::sleep(Duration::from_millis(50));
            link.drain(&mut out);
            let finished = out.iter().find_map(|r| match r {
                LinkReply::GoalStatus { status, .. }
                    if matches!(status, GoalStatus::Finished { .. }) =>
                {
                    Some(status.clone())
                }
                _ => None,
            });
            if let Some(s) = finished {
                break s;
            }
            assert!(Instant::now() < deadline, "the goal never finished");
        };
        assert!(matches!(status, GoalStatus::Finished { .. }), "{status:?}");
        assert!(out.iter().any(|r| matches!(r, LinkReply::Telemetry { .. })));
        // A repeat is answered from the record, and recorded as received.
        link.send(goal).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        stop.store(true, Ordering::Relaxed);
        handle.join().unwrap().unwrap();
        let text = std::fs::read_to_string(&record).unwrap();
        let ids: Vec<&str> = text.lines().collect();
        assert_eq!(ids.len(), 2, "{text}");
        assert!(ids.iter().all(|l| l.contains("\"goal_id\":\"t/g1.0\"")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
