//! The fleet as a page shows it, as plain logic: the board (every robot in
//! one row — connection, mode, activity, battery, task, alerts, approvals —
//! and one approval queue across the fleet), the messages a fleet page is
//! sent ([`FleetMessage`]) and the requests it sends ([`FleetRequest`]),
//! and the board as Prometheus metrics. `serve --fleet` and the desktop
//! app's fleet window speak this over their transports (docs/web.md); the
//! IO around it is [`super::hub`].

use serde::{Deserialize, Serialize};

use super::bridge::Reply;
use super::view::{FleetApproval, FleetView, RobotEntry};
use crate::protocol::line::Refused;
use crate::protocol::{Activity, Mode, Role, ServerMessage};

/// The largest request a fleet page may send, in bytes: an operator line
/// (at most [`crate::protocol::MAX_LINE_BYTES`], checked again inside) in
/// its JSON envelope, escaped.
pub const MAX_REQUEST_BYTES: usize = 4 * crate::protocol::MAX_LINE_BYTES;

/// One robot's row on the board.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RobotRow {
    /// Its id.
    pub id: String,
    /// `ONLINE`, `OFFLINE`, `CONNECTIONBROKEN`, or `?` (not heard yet).
    pub connection: String,
    /// Whether it is online.
    pub online: bool,
    /// The kernel's mode (absent before its first snapshot).
    pub mode: Option<Mode>,
    /// Whether its E-stop is latched.
    pub estop: bool,
    /// What it is doing.
    pub activity: Option<Activity>,
    /// Its battery, in percent.
    pub battery_pct: Option<f64>,
    /// The zone it is in.
    pub zone: Option<String>,
    /// Its current task: the first one not over (`title (status)`).
    pub task: Option<String>,
    /// Alerts still open.
    pub alerts: usize,
    /// Approvals waiting on it.
    pub approvals: usize,
    /// Its world (map) name.
    pub world: Option<String>,
}

impl RobotRow {
    /// The row of `robot`.
    pub fn of(robot: &RobotEntry) -> Self {
        let s = robot.snapshot.as_ref();
        Self {
            id: robot.id.clone(),
            connection: robot.connection_label().to_string(),
            online: robot.online(),
            mode: s.map(|s| s.mode),
            estop: s.is_some_and(|s| s.estop),
            activity: s.map(|s| s.activity),
            battery_pct: s.map(|s| s.robot.battery_pct),
            zone: s.and_then(|s| s.robot.zone.clone()),
            task: s.and_then(|s| {
                s.tasks.iter().find(|t| !t.status.is_terminal()).map(|t| {
                    format!(
                        "{} ({})",
                        t.title,
                        crate::protocol::describe::word(&t.status)
                    )
                })
            }),
            alerts: s.map_or(0, |s| {
                s.alerts
                    .iter()
                    .filter(|a| a.status == crate::protocol::AlertStatus::Open)
                    .count()
            }),
            approvals: s.map_or(0, |s| s.approvals.len()),
            world: s.map(|s| s.world.clone()),
        }
    }
}

/// The whole fleet on one board.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FleetBoard {
    /// Where the broker is (`mqtt://…`).
    pub broker: String,
    /// Whether the link to the broker is up.
    pub connected: bool,
    /// Every robot heard of, by id.
    pub robots: Vec<RobotRow>,
    /// Every approval waiting across the fleet (online robots), robot by robot.
    pub approvals: Vec<FleetApproval>,
}

impl FleetBoard {
    /// The board of `view`.
    pub fn of(view: &FleetView, broker: &str, connected: bool) -> Self {
        Self {
            broker: broker.to_string(),
            connected,
            robots: view.robots().map(RobotRow::of).collect(),
            approvals: view.approvals(),
        }
    }

    /// How many robots are online.
    pub fn online(&self) -> usize {
        self.robots.iter().filter(|r| r.online).count()
    }

    /// The board as Prometheus text (`/metrics` on `serve --fleet`).
    pub fn metrics(&self) -> String {
        let mut t = crate::metrics::Text::default();
        t.gauge(
            "robobrain_fleet_broker_up",
            "1 while the link to the broker is up",
            u8::from(self.connected),
        );
        t.family(
            "robobrain_fleet_robots",
            "gauge",
            "robots heard of, by their VDA 5050 connection state",
        );
        for state in ["ONLINE", "OFFLINE", "CONNECTIONBROKEN", "?"] {
            let n = self.robots.iter().filter(|r| r.connection == state).count();
            t.sample("robobrain_fleet_robots", &[("connection", state)], n);
        }
        t.gauge(
            "robobrain_fleet_approvals_waiting",
            "approvals waiting across the fleet",
            self.approvals.len(),
        );
        t.family(
            "robobrain_fleet_robot_online",
            "gauge",
            "1 while the robot is online",
        );
        for r in &self.robots {
            t.sample(
                "robobrain_fleet_robot_online",
                &[("robot", &r.id)],
                u8::from(r.online),
            );
        }
        t.family(
            "robobrain_fleet_robot_estop",
            "gauge",
            "1 while the robot's E-stop is latched",
        );
        for r in &self.robots {
            t.sample(
                "robobrain_fleet_robot_estop",
                &[("robot", &r.id)],
                u8::from(r.estop),
            );
        }
        t.family(
            "robobrain_fleet_robot_battery_percent",
            "gauge",
            "the robot's battery",
        );
        for r in &self.robots {
            if let Some(pct) = r.battery_pct {
                t.sample(
                    "robobrain_fleet_robot_battery_percent",
                    &[("robot", &r.id)],
                    pct,
                );
            }
        }
        t.finish()
    }
}

/// What a fleet page is sent, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FleetMessage {
    /// First, always: this page shows a fleet, and may do what `role` allows.
    FleetHello {
        /// What this page may do.
        role: Role,
        /// Where the broker is.
        broker: String,
    },
    /// The board, whenever it changed.
    Fleet(Box<FleetBoard>),
    /// A message of the robot the page opened, exactly as `serve` sends its
    /// own: `hello` (with the page's role), `snapshot`, `event`.
    Robot {
        /// The robot.
        robot: String,
        /// The message.
        message: Box<ServerMessage>,
    },
    /// A command went out to a robot with this id.
    Sent {
        /// The robot.
        robot: String,
        /// The command's id (the robot's reply carries it).
        id: String,
    },
    /// A robot's answer to a command.
    Reply {
        /// The robot.
        robot: String,
        /// The answer.
        reply: Reply,
    },
    /// A viewer asked for a command.
    Refused {
        /// Why.
        reason: String,
    },
    /// A request that was not one, or could not be carried out.
    Error {
        /// `invalid_request`, `unknown_robot`, `not_heard`, `not_sent`, or a
        /// refused operator line's code (`invalid_command`, `line_too_long`, …).
        code: String,
        /// What was wrong.
        message: String,
    },
    /// The broker connection has stopped for good.
    Closed {
        /// Why.
        reason: String,
    },
}

impl FleetMessage {
    /// The message as JSON text.
    pub fn to_text(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| {
            format!(r#"{{"type":"error","code":"internal","message":"unserialisable frame: {e}"}}"#)
        })
    }

    /// An `error` message.
    pub fn error(code: &str, message: impl Into<String>) -> Self {
        Self::Error {
            code: code.to_string(),
            message: message.into(),
        }
    }
}

/// What a fleet page asks for, tagged by `op`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum FleetRequest {
    /// Follow this robot: its `hello` and snapshot now, its messages from then on.
    Open {
        /// The robot.
        robot: String,
    },
    /// Follow no robot (back to the board).
    Close,
    /// An operator line (a command as JSON, or words to say) for one robot.
    Send {
        /// The robot.
        robot: String,
        /// The line.
        line: String,
    },
    /// E-stop every robot on the board.
    EstopAll,
}

impl FleetRequest {
    /// Reads a request a page sent; a frame over [`MAX_REQUEST_BYTES`] is
    /// refused before it is parsed.
    pub fn parse(text: &str) -> Result<Self, Refused> {
        if text.len() > MAX_REQUEST_BYTES {
            return Err(Refused {
                code: "line_too_long",
                why: format!(
                    "a fleet request of {} bytes; the limit is {MAX_REQUEST_BYTES}",
                    text.len()
                ),
            });
        }
        serde_json::from_str(text).map_err(|e| Refused {
            code: "invalid_request",
            why: format!(
                "{e}; expected {{\"op\":\"open\",\"robot\":ID}}, {{\"op\":\"close\"}}, \
                 {{\"op\":\"send\",\"robot\":ID,\"line\":LINE}} or {{\"op\":\"estop_all\"}}"
            ),
        })
    }

    /// Its `op`, as the page writes it.
    pub fn op(&self) -> &'static str {
        match self {
            Self::Open { .. } => "open",
            Self::Close => "close",
            Self::Send { .. } => "send",
            Self::EstopAll => "estop_all",
        }
    }

    /// Whether a viewer may ask for it (watching only).
    pub fn allowed(&self, role: Role) -> bool {
        role == Role::Operator || matches!(self, Self::Open { .. } | Self::Close)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::vda5050::ConnectionState;
    use crate::fleet::view::ClientEvent;
    use crate::protocol::{ApprovalView, Op, Snapshot, TaskStatus, TaskView};
    use serde_json::json;

    fn view() -> FleetView {
        let mut view = FleetView::default();
        let mut s = Snapshot {
            estop: true,
            ..Snapshot::default()
        };
        s.robot.battery_pct = 62.0;
        s.tasks.push(TaskView {
            id: "t1".into(),
            title: "go to the study".into(),
            kind: "user".into(),
            priority: crate::protocol::Priority::Main,
            status: TaskStatus::WaitingHuman,
            step: 0,
            steps: 1,
            deadline: None,
        });
        s.approvals.push(ApprovalView {
            approval_id: "a1".into(),
            task_id: "t1".into(),
            op: Op::Wait { seconds: 1.0 },
            reason: "restricted zone".into(),
            risk: "high_write".into(),
            requested_by: None,
        });
        view.apply(&ClientEvent::Snapshot {
            robot: "r1".into(),
            snapshot: Box::new(s),
        });
        view.apply(&ClientEvent::Connection {
            robot: "r2".into(),
            state: ConnectionState::ConnectionBroken,
        });
        view
    }

    #[test]
    fn the_board_has_a_row_per_robot_and_one_queue() {
        let board = FleetBoard::of(&view(), "mqtt://b:1", true);
        let r1 = &board.robots[0];
        assert_eq!(r1.connection, "?");
        assert!(r1.online && r1.estop);
        assert_eq!(r1.task.as_deref(), Some("go to the study (waiting_human)"));
        assert_eq!((r1.approvals, r1.battery_pct), (1, Some(62.0)));
        assert_eq!(board.robots[1].connection, "CONNECTIONBROKEN");
        assert!(!board.robots[1].online);
        assert_eq!(board.online(), 1);
        let wire = serde_json::to_value(FleetMessage::Fleet(Box::new(board))).unwrap();
        assert_eq!(wire["type"], "fleet");
        assert_eq!(wire["approvals"][0]["robot"], "r1");
        assert_eq!(wire["approvals"][0]["approval"]["risk"], "high_write");
        assert_eq!(wire["robots"][0]["mode"], "IDLE");
    }

    #[test]
    fn metrics_count_robots_by_connection() {
        let text = FleetBoard::of(&view(), "mqtt://b:1", true).metrics();
        for line in [
            "robobrain_fleet_broker_up 1",
            "robobrain_fleet_robots{connection=\"CONNECTIONBROKEN\"} 1",
            "robobrain_fleet_approvals_waiting 1",
            "robobrain_fleet_robot_estop{robot=\"r1\"} 1",
            "robobrain_fleet_robot_battery_percent{robot=\"r1\"} 62",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
    }

    #[test]
    fn requests_are_read_and_bad_ones_refused() {
        assert_eq!(
            FleetRequest::parse(r#"{"op":"send","robot":"r1","line":"{\"cmd\":\"estop\"}"}"#),
            Ok(FleetRequest::Send {
                robot: "r1".into(),
                line: r#"{"cmd":"estop"}"#.into()
            })
        );
        assert_eq!(
            FleetRequest::parse(r#"{"op":"estop_all"}"#),
            Ok(FleetRequest::EstopAll)
        );
        let bad = FleetRequest::parse(r#"{"op":"fly"}"#).unwrap_err();
        assert_eq!(bad.code, "invalid_request");
        let big = format!(
            r#"{{"op":"close","x":"{}"}}"#,
            "x".repeat(MAX_REQUEST_BYTES)
        );
        assert_eq!(FleetRequest::parse(&big).unwrap_err().code, "line_too_long");
        assert!(!FleetRequest::EstopAll.allowed(Role::Viewer));
        assert!(FleetRequest::Close.allowed(Role::Viewer));
        let sent = FleetMessage::Sent {
            robot: "r1".into(),
            id: "c-1".into(),
        };
        assert_eq!(
            serde_json::to_value(&sent).unwrap(),
            json!({"type": "sent", "robot": "r1", "id": "c-1"})
        );
    }
}
