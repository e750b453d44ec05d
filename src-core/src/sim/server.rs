//! `robobrain sim --listen`: the simulated robot as its own process.
//!
//! The world runs on the wall clock (times `speed`) whether or not a brain
//! is connected, so a killed brain finds the robot where the physics left
//! it, and the simulator answers "what happened to goal X" from its own
//! record. One brain at a time: a new connection replaces the old one.
//! Every `send_goal` received — repeats included — can be appended to a
//! record file (JSON lines), the evidence that nothing was sent twice.

use std::fs::File;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use serde_json::json;
use thiserror::Error;

use super::Sim;
use crate::link::tcp::{Wire, spawn_reader, write_line};
use crate::link::{LinkReply, LinkRequest};

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

/// The simulator, its clock, its one client and its goal record.
pub struct SimServer {
    sim: Sim,
    tick_s: f64,
    speed: f64,
    record: Option<(PathBuf, File)>,
    client: Option<(u64, TcpStream)>,
    generation: u64,
    tx: Sender<Wire<LinkRequest>>,
    rx: Receiver<Wire<LinkRequest>>,
    replies: Vec<LinkReply>,
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
            replies: Vec::new(),
        }
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

    /// Serves on `listener` until `stop` is set.
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
        let mut next = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            while let Ok(stream) = conn_rx.try_recv() {
                match stream {
                    Ok(s) => self.accept(s),
                    Err(e) => return Err(SimServerError::Listen(e)),
                }
            }
            self.tick()?;
            next += period;
            match next.checked_duration_since(Instant::now()) {
                Some(wait) => std::thread::sleep(wait),
                // Behind (a slow machine): do not try to catch up in a burst.
                None => next = Instant::now(),
            }
        }
        Ok(())
    }

    fn accept(&mut self, stream: TcpStream) {
        let _ = stream.set_nodelay(true);
        let Ok(reader) = stream.try_clone() else {
            return;
        };
        self.generation += 1;
        spawn_reader(reader, self.generation, self.tx.clone());
        if let Some((_, old)) = self.client.replace((self.generation, stream)) {
            let _ = old.shutdown(std::net::Shutdown::Both);
        }
    }

    /// One step: apply the client's requests, advance the world, send the replies.
    pub fn tick(&mut self) -> Result<(), SimServerError> {
        while let Ok(msg) = self.rx.try_recv() {
            let current = self.client.as_ref().map(|(g, _)| *g);
            match msg {
                Wire::Msg(g, request) if Some(g) == current => self.apply(request)?,
                Wire::Bad(g, line) if Some(g) == current => self.replies.push(LinkReply::Refused {
                    message: format!("not a link request: {line}"),
                }),
                Wire::Closed(g) if Some(g) == current => self.client = None,
                _ => {}
            }
        }
        self.sim.step(self.tick_s);
        self.sim.publish_telemetry();
        self.sim.drain(&mut self.replies);
        if let Some((_, stream)) = self.client.as_mut() {
            for reply in &self.replies {
                if write_line(stream, reply).is_err() {
                    self.client = None;
                    break;
                }
            }
        }
        // Replies for a brain that is gone are dropped; goal status queries
        // answer from the simulator's own record.
        self.replies.clear();
        Ok(())
    }

    /// Applies one request (recording goals first).
    pub fn apply(&mut self, request: LinkRequest) -> Result<(), SimServerError> {
        if let (LinkRequest::SendGoal { goal_id, kind }, Some((path, file))) =
            (&request, self.record.as_mut())
        {
            let line = json!({"goal_id": goal_id, "time": self.sim.time(), "goal": kind});
            writeln!(file, "{line}")
                .and_then(|()| file.flush())
                .map_err(|source| SimServerError::Record {
                    path: path.clone(),
                    source,
                })?;
        }
        if let Err(e) = self.sim.apply(request) {
            self.replies.push(LinkReply::Refused {
                message: e.to_string(),
            });
        }
        Ok(())
    }
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
