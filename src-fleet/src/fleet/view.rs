//! The fleet as a console sees it, as plain logic: what arrived on the
//! broker ([`ClientEvent`], read from a topic and its bytes by [`read`])
//! folded into every robot's newest state ([`FleetView`]) and one approval
//! queue across the fleet.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::de::DeserializeOwned;

use super::topics::{self, Kind};
use super::vda5050::{Connection, ConnectionState};
use crate::protocol::Reply;
use crate::protocol::{Event, Hello, ServerMessage, Snapshot};

/// How long a console waits without hearing from a robot before it shows
/// it as lost (CONNECTIONBROKEN), whatever the broker has said: a robot
/// publishes its snapshot every `publish_ms` (250 ms by default), so this is
/// twenty rounds missed. It is the default `keep_alive_s`, the time
/// docs/fleet.md promises a lost robot is noticed in; the broker's own last
/// will comes 1.5 MQTT keep-alives after the robot's last packet, later
/// when the broker checks its keep-alives late.
pub const SILENT_AFTER: Duration = Duration::from_secs(5);

/// The largest message a console reads on a topic of this kind, in bytes.
pub fn limit(kind: Kind) -> usize {
    match kind {
        Kind::Hello => 2 * 1024 * 1024,
        Kind::Snapshot => 1024 * 1024,
        Kind::Events => 256 * 1024,
        _ => 16 * 1024,
    }
}

/// What a fleet console hears.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientEvent {
    /// The broker accepted the console's connection (first time or again).
    Connected,
    /// The broker link dropped; the client keeps trying.
    Disconnected(String),
    /// A robot's `hello` frame.
    Hello {
        /// The robot.
        robot: String,
        /// The frame.
        hello: Box<Hello>,
    },
    /// A robot's newest snapshot.
    Snapshot {
        /// The robot.
        robot: String,
        /// The snapshot.
        snapshot: Box<Snapshot>,
    },
    /// One of a robot's events.
    Event {
        /// The robot.
        robot: String,
        /// The event.
        event: Box<Event>,
    },
    /// A robot's answer to a command.
    Reply {
        /// The robot.
        robot: String,
        /// The answer.
        reply: Reply,
    },
    /// A robot's VDA 5050 connection state.
    Connection {
        /// The robot.
        robot: String,
        /// ONLINE, OFFLINE or CONNECTIONBROKEN.
        state: ConnectionState,
    },
    /// A message that was refused (malformed, oversized): nothing changed.
    Rejected {
        /// Its topic.
        topic: String,
        /// Why.
        why: String,
    },
}

/// A message's JSON, or why it is not one.
fn parse<T: DeserializeOwned>(payload: &[u8]) -> Result<T, String> {
    serde_json::from_slice(payload).map_err(|e| format!("malformed: {e}"))
}

/// Reads a message a console hears; `None` for a topic it does not follow.
pub fn read(topic: &str, payload: &[u8]) -> Option<ClientEvent> {
    let (robot, kind) = topics::parse(topic)?;
    let rejected = |why: String| ClientEvent::Rejected {
        topic: topic.to_string(),
        why,
    };
    if payload.len() > limit(kind) {
        return Some(rejected(format!(
            "{} bytes, the limit is {}",
            payload.len(),
            limit(kind)
        )));
    }
    let event = match kind {
        Kind::Hello => match parse::<ServerMessage>(payload) {
            Ok(ServerMessage::Hello(hello)) => Ok(ClientEvent::Hello { robot, hello }),
            Ok(_) => Err("malformed: not a hello frame".into()),
            Err(e) => Err(e),
        },
        Kind::Snapshot => parse::<Snapshot>(payload).map(|s| ClientEvent::Snapshot {
            robot,
            snapshot: Box::new(s),
        }),
        Kind::Events => match parse::<ServerMessage>(payload) {
            Ok(ServerMessage::Event { event, .. }) => Ok(ClientEvent::Event { robot, event }),
            Ok(_) => Err("malformed: not an event frame".into()),
            Err(e) => Err(e),
        },
        Kind::Reply => parse::<Reply>(payload).map(|reply| ClientEvent::Reply { robot, reply }),
        Kind::Connection => parse::<Connection>(payload).and_then(|c| {
            if c.header.serial_number == robot {
                Ok(ClientEvent::Connection {
                    robot,
                    state: c.connection_state,
                })
            } else {
                Err(format!(
                    "malformed: serialNumber {} on {robot}'s topic",
                    c.header.serial_number
                ))
            }
        }),
        _ => return None,
    };
    Some(event.unwrap_or_else(rejected))
}

/// One robot as the console knows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RobotEntry {
    /// Its id.
    pub id: String,
    /// Its VDA 5050 connection state (`None`: not heard yet).
    pub connection: Option<ConnectionState>,
    /// Its `hello` frame.
    pub hello: Option<Hello>,
    /// Its newest snapshot.
    pub snapshot: Option<Snapshot>,
    /// When the console last heard from it (the console's clock, ms).
    heard_ms: Option<u64>,
    /// Heard from once, then nothing for [`SILENT_AFTER`] or longer.
    silent: bool,
}

impl RobotEntry {
    /// Whether the robot is online (said ONLINE, or its snapshot came and
    /// nothing said otherwise).
    pub fn online(&self) -> bool {
        if self.silent {
            return false;
        }
        match self.connection {
            Some(state) => state == ConnectionState::Online,
            None => self.snapshot.is_some(),
        }
    }

    /// Its connection state in words: CONNECTIONBROKEN too once it has
    /// been silent for [`SILENT_AFTER`], before the broker says so.
    pub fn connection_label(&self) -> &'static str {
        if self.silent {
            return "CONNECTIONBROKEN";
        }
        match self.connection {
            Some(ConnectionState::Online) => "ONLINE",
            Some(ConnectionState::Offline) => "OFFLINE",
            Some(ConnectionState::ConnectionBroken) => "CONNECTIONBROKEN",
            None => "?",
        }
    }
}

pub use crate::protocol::fleet::FleetApproval;

/// Every robot heard of, by id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FleetView {
    robots: BTreeMap<String, RobotEntry>,
}

impl FleetView {
    /// Folds in what the console heard.
    pub fn apply(&mut self, event: &ClientEvent) {
        match event {
            ClientEvent::Hello { robot, hello } => {
                self.entry(robot).hello = Some((**hello).clone());
            }
            ClientEvent::Snapshot { robot, snapshot } => {
                self.entry(robot).snapshot = Some((**snapshot).clone());
            }
            ClientEvent::Connection { robot, state } => {
                self.entry(robot).connection = Some(*state);
            }
            ClientEvent::Event { robot, .. } | ClientEvent::Reply { robot, .. } => {
                self.entry(robot);
            }
            ClientEvent::Connected
            | ClientEvent::Disconnected(_)
            | ClientEvent::Rejected { .. } => {}
        }
    }

    /// Folds in what the console heard at `now_ms` (its own clock): the
    /// robot it came from is heard of, and no longer silent.
    pub fn apply_at(&mut self, event: &ClientEvent, now_ms: u64) {
        self.apply(event);
        let robot = match event {
            ClientEvent::Hello { robot, .. }
            | ClientEvent::Snapshot { robot, .. }
            | ClientEvent::Event { robot, .. }
            | ClientEvent::Reply { robot, .. } => robot,
            ClientEvent::Connection { robot, state } if *state == ConnectionState::Online => robot,
            _ => return,
        };
        let entry = self.entry(robot);
        entry.heard_ms = Some(now_ms);
        entry.silent = false;
    }

    /// Marks the robots not heard from for `after` by `now_ms` as silent;
    /// whether any robot became silent.
    pub fn mark_silent(&mut self, now_ms: u64, after: Duration) -> bool {
        let after_ms = u64::try_from(after.as_millis()).unwrap_or(u64::MAX);
        let mut changed = false;
        for entry in self.robots.values_mut() {
            let quiet = entry
                .heard_ms
                .is_some_and(|h| now_ms.saturating_sub(h) >= after_ms);
            if quiet && !entry.silent {
                entry.silent = true;
                changed = true;
            }
        }
        changed
    }

    fn entry(&mut self, robot: &str) -> &mut RobotEntry {
        self.robots
            .entry(robot.to_string())
            .or_insert_with(|| RobotEntry {
                id: robot.to_string(),
                ..RobotEntry::default()
            })
    }

    /// The robots, by id.
    pub fn robots(&self) -> impl Iterator<Item = &RobotEntry> {
        self.robots.values()
    }

    /// One robot.
    pub fn robot(&self, id: &str) -> Option<&RobotEntry> {
        self.robots.get(id)
    }

    /// How many robots are known.
    pub fn len(&self) -> usize {
        self.robots.len()
    }

    /// Whether no robot is known.
    pub fn is_empty(&self) -> bool {
        self.robots.is_empty()
    }

    /// Every approval waiting across the fleet, robot by robot.
    pub fn approvals(&self) -> Vec<FleetApproval> {
        self.robots
            .values()
            .filter(|r| r.online())
            .flat_map(|r| {
                r.snapshot.iter().flat_map(|s| {
                    s.approvals.iter().map(|a| FleetApproval {
                        robot: r.id.clone(),
                        approval: a.clone(),
                    })
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ApprovalView, Op};
    use serde_json::json;

    #[test]
    fn messages_are_read_and_bad_ones_rejected() {
        let snapshot = Snapshot::default();
        let bytes = serde_json::to_vec(&snapshot).unwrap();
        assert_eq!(
            read("robobrain/r1/snapshot", &bytes),
            Some(ClientEvent::Snapshot {
                robot: "r1".into(),
                snapshot: Box::new(snapshot)
            })
        );
        let Some(ClientEvent::Rejected { topic, why }) = read("robobrain/r1/snapshot", b"{") else {
            panic!("not rejected")
        };
        assert_eq!(topic, "robobrain/r1/snapshot");
        assert!(why.starts_with("malformed: "), "{why}");
        let big = vec![b' '; 20 * 1024];
        let Some(ClientEvent::Rejected { why, .. }) = read("robobrain/r1/reply", &big) else {
            panic!("not rejected")
        };
        assert_eq!(why, "20480 bytes, the limit is 16384");
        let c = json!({"headerId": 0, "timestamp": "t", "version": "2.1.0", "manufacturer": "m",
            "serialNumber": "r2", "connectionState": "ONLINE"});
        let bytes = serde_json::to_vec(&c).unwrap();
        assert!(matches!(
            read("uagv/v2/m/r1/connection", &bytes),
            Some(ClientEvent::Rejected { .. })
        ));
        assert_eq!(read("other/topic", b"{}"), None);
    }

    #[test]
    fn a_robot_silent_for_silent_after_is_lost_until_heard_again() {
        let mut view = FleetView::default();
        let online = ClientEvent::Connection {
            robot: "r1".into(),
            state: ConnectionState::Online,
        };
        let snapshot = ClientEvent::Snapshot {
            robot: "r1".into(),
            snapshot: Box::default(),
        };
        view.apply_at(&online, 0);
        view.apply_at(&snapshot, 1_000);
        let after = SILENT_AFTER;
        let last_ms = 1_000 + u64::try_from(after.as_millis()).unwrap();
        assert!(!view.mark_silent(last_ms - 1, after));
        assert_eq!(view.robot("r1").unwrap().connection_label(), "ONLINE");
        assert!(view.mark_silent(last_ms, after));
        let r1 = view.robot("r1").unwrap();
        assert_eq!(r1.connection_label(), "CONNECTIONBROKEN");
        assert!(!r1.online());
        // Once is enough: nothing changes while it stays silent.
        assert!(!view.mark_silent(last_ms + 1_000, after));
        view.apply_at(&snapshot, last_ms + 2_000);
        assert_eq!(view.robot("r1").unwrap().connection_label(), "ONLINE");
        // A robot never heard from is not silent, only unknown.
        view.apply(&ClientEvent::Connection {
            robot: "r2".into(),
            state: ConnectionState::Offline,
        });
        view.mark_silent(u64::MAX, after);
        assert_eq!(view.robot("r2").unwrap().connection_label(), "OFFLINE");
        assert_eq!(
            view.robot("r1").unwrap().connection_label(),
            "CONNECTIONBROKEN"
        );
    }

    #[test]
    fn approvals_are_one_queue_across_the_fleet() {
        let mut view = FleetView::default();
        for robot in ["r2", "r1"] {
            let mut s = Snapshot::default();
            s.approvals.push(ApprovalView {
                approval_id: format!("a-{robot}"),
                task_id: "t1".into(),
                op: Op::Wait { seconds: 1.0 },
                reason: "policy".into(),
                risk: "high".into(),
                requested_by: None,
            });
            view.apply(&ClientEvent::Snapshot {
                robot: robot.into(),
                snapshot: Box::new(s),
            });
        }
        let robots: Vec<String> = view.approvals().into_iter().map(|a| a.robot).collect();
        assert_eq!(robots, ["r1", "r2"]);
        view.apply(&ClientEvent::Connection {
            robot: "r1".into(),
            state: ConnectionState::ConnectionBroken,
        });
        assert_eq!(view.approvals().len(), 1);
        assert_eq!(
            view.robot("r1").unwrap().connection_label(),
            "CONNECTIONBROKEN"
        );
    }
}
