//! The fleet as a page shows it, as plain logic: the board (every robot in
//! one row — connection, mode, activity, battery, task, alerts, approvals —
//! and one approval queue across the fleet; its types are the wire's,
//! `protocol::fleet`, sent in [`ServerMessage`]'s fleet frames) built from
//! what the console heard, the requests a page sends ([`FleetRequest`]),
//! and the board as Prometheus metrics. `serve --fleet` and the desktop
//! app's fleet window speak this over their transports (docs/web.md); the
//! IO around it is [`super::hub`].

use serde::{Deserialize, Serialize};

use super::view::{FleetView, RobotEntry};
use crate::protocol::Role;
#[cfg(doc)]
use crate::protocol::ServerMessage;
pub use crate::protocol::fleet::{FleetBoard, RobotRow};
use crate::protocol::line::Refused;

/// The largest request a fleet page may send, in bytes: an operator line
/// (at most [`crate::protocol::MAX_LINE_BYTES`], checked again inside) in
/// its JSON envelope, escaped.
pub const MAX_REQUEST_BYTES: usize = 4 * crate::protocol::MAX_LINE_BYTES;

/// The row of `robot` on the board.
pub fn row(robot: &RobotEntry) -> RobotRow {
    let s = robot.snapshot.as_ref();
    RobotRow {
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

/// The board of `view`.
pub fn board(view: &FleetView, broker: &str, connected: bool) -> FleetBoard {
    FleetBoard {
        broker: broker.to_string(),
        connected,
        robots: view.robots().map(row).collect(),
        approvals: view.approvals(),
    }
}

/// The board as Prometheus text (`/metrics` on `serve --fleet`).
pub fn metrics(board: &FleetBoard) -> String {
    let mut t = crate::metrics::Text::default();
    t.gauge(
        "robobrain_fleet_broker_up",
        "1 while the link to the broker is up",
        u8::from(board.connected),
    );
    t.family(
        "robobrain_fleet_robots",
        "gauge",
        "robots heard of, by their VDA 5050 connection state",
    );
    for state in ["ONLINE", "OFFLINE", "CONNECTIONBROKEN", "?"] {
        let n = board
            .robots
            .iter()
            .filter(|r| r.connection == state)
            .count();
        t.sample("robobrain_fleet_robots", &[("connection", state)], n);
    }
    t.gauge(
        "robobrain_fleet_approvals_waiting",
        "approvals waiting across the fleet",
        board.approvals.len(),
    );
    per_robot(
        &mut t,
        board,
        "robobrain_fleet_robot_online",
        "1 while the robot is online",
        |r| Some(f64::from(u8::from(r.online))),
    );
    per_robot(
        &mut t,
        board,
        "robobrain_fleet_robot_estop",
        "1 while the robot's E-stop is latched",
        |r| Some(f64::from(u8::from(r.estop))),
    );
    per_robot(
        &mut t,
        board,
        "robobrain_fleet_robot_battery_percent",
        "the robot's battery",
        |r| r.battery_pct,
    );
    t.finish()
}

/// A gauge family with one sample a robot (labelled `robot`), for the
/// robots `value` has a value for.
fn per_robot(
    t: &mut crate::metrics::Text,
    board: &FleetBoard,
    name: &str,
    help: &str,
    value: impl Fn(&RobotRow) -> Option<f64>,
) {
    t.family(name, "gauge", help);
    for r in &board.robots {
        if let Some(v) = value(r) {
            t.sample(name, &[("robot", &r.id)], v);
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
    use crate::protocol::{ApprovalView, Op, ServerMessage, Snapshot, TaskStatus, TaskView};
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
        let board = board(&view(), "mqtt://b:1", true);
        let r1 = &board.robots[0];
        assert_eq!(r1.connection, "?");
        assert!(r1.online && r1.estop);
        assert_eq!(r1.task.as_deref(), Some("go to the study (waiting_human)"));
        assert_eq!((r1.approvals, r1.battery_pct), (1, Some(62.0)));
        assert_eq!(board.robots[1].connection, "CONNECTIONBROKEN");
        assert!(!board.robots[1].online);
        assert_eq!(board.online(), 1);
        let wire = serde_json::to_value(ServerMessage::Fleet(Box::new(board))).unwrap();
        assert_eq!(wire["type"], "fleet");
        assert_eq!(wire["approvals"][0]["robot"], "r1");
        assert_eq!(wire["approvals"][0]["approval"]["risk"], "high_write");
        assert_eq!(wire["robots"][0]["mode"], "IDLE");
    }

    #[test]
    fn metrics_count_robots_by_connection() {
        let text = metrics(&board(&view(), "mqtt://b:1", true));
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
        let sent = ServerMessage::Sent {
            robot: "r1".into(),
            id: "c-1".into(),
        };
        assert_eq!(
            serde_json::to_value(&sent).unwrap(),
            json!({"type": "sent", "robot": "r1", "id": "c-1"})
        );
    }
}
