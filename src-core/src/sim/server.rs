//! `robobrain sim --listen`: the simulated robot as its own process.
//!
//! The world runs on the wall clock (times `speed`) whether or not a brain
//! is connected, so a killed brain finds the robot where the physics left
//! it, and the simulator answers "what happened to goal X" from its own
//! record. One brain at a time: a new connection replaces the old one, and
//! a brain that reads nothing for [`WRITE_TIMEOUT`] is dropped (the world
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
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use thiserror::Error;

use super::Sim;
use crate::link::tcp::{WRITE_TIMEOUT, Wire, spawn_reader, write_line};
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

/// The simulator, its clock, its one client and its goal record.
pub struct SimServer {
    sim: Sim,
    tick_s: f64,
    speed: f64,
    record: Option<(PathBuf, File)>,
    client: Option<(u64, TcpStream)>,
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

    fn accept(&mut self, stream: TcpStream) {
        let _ = stream.set_nodelay(true);
        // A brain that stops reading holds up the world for this long at
        // most, then it is dropped (it reconnects).
        let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
        let Ok(reader) = stream.try_clone() else {
            return;
        };
        self.generation += 1;
        spawn_reader(reader, self.generation, self.tx.clone(), |w| (wall_us(), w));
        if let Some((_, old)) = self.client.replace((self.generation, stream)) {
            let _ = old.shutdown(std::net::Shutdown::Both);
        }
        let deadman_s = self.deadman.as_ref().map_or(0.0, |d| d.after.as_secs_f64());
        self.replies.insert(0, LinkReply::Hello { deadman_s });
        if let Some(notice) = self.deadman.as_mut().and_then(|d| d.unsaid.take()) {
            self.replies.insert(1, notice);
        }
        self.send_replies();
    }

    /// Takes one message from a reader thread: a request from the current
    /// brain is applied (and resets the dead-man), a bad line is refused.
    fn take(&mut self, (received_us, msg): Arrived) -> Result<(), SimServerError> {
        self.received_us = Some(received_us);
        let current = self.client.as_ref().map(|(g, _)| *g);
        match msg {
            Wire::Msg(g, request) if Some(g) == current => {
                if let Some(d) = self.deadman.as_mut() {
                    d.last_heard = Instant::now();
                    d.fired = false;
                }
                let applied = self.apply(request);
                self.received_us = None;
                applied?;
            }
            Wire::Bad(g, line) if Some(g) == current => self.replies.push(LinkReply::Refused {
                message: format!("not a link request: {line}"),
            }),
            Wire::Closed(g) if Some(g) == current => self.client = None,
            _ => {}
        }
        self.received_us = None;
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::{GoalKind, GoalStatus, RobotLink, tcp::TcpLink};
    use crate::world::World;

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
