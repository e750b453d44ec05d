//! The boundary between the brain and the robot.
//!
//! Everything the brain does to the body crosses this boundary as a
//! [`LinkRequest`] and everything it learns comes back as a [`LinkReply`],
//! in the shape of a ROS 2 action: a goal with an id, accepted or rejected,
//! feedback while it runs, a result with an error code, cancellation by id,
//! and a status query by id (so a resumed brain can ask "what happened to
//! goal X"). The in-process simulator ([`crate::sim::SimLink`]) is one
//! implementation; a simulator in another process ([`tcp::TcpLink`]) or a
//! real robot on ROS 2 and Nav2 (`robobrain-ros2`, feature `ros2`) is
//! another.

pub mod tcp;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::geometry::{Point, Pose, Twist};

use crate::protocol::RobotView;
pub use crate::protocol::{Fault, Incident, NavFeedback};

/// A goal's id: unique for the life of a thread, chosen by the brain.
///
/// Ids are derived from the ledger key (thread, step, op index) so that a
/// resumed brain asks about the same goal it sent before it was killed.
pub type GoalId = String;

/// What a goal asks the base to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "goal", rename_all = "snake_case")]
pub enum GoalKind {
    /// Plan a path to `target` and follow it (Nav2's `NavigateToPose`).
    Navigate {
        /// Where to go.
        target: Point,
        /// The zone the target belongs to, if any (for messages only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        zone: Option<String>,
    },
    /// Go to the charger's dock pose and start charging.
    Dock,
    /// Cancel every base goal and bring the base to rest.
    StopBase,
}

/// A message from the brain to the robot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "request", rename_all = "snake_case")]
pub enum LinkRequest {
    /// Start a goal. The robot answers `Accepted` or `Rejected`.
    SendGoal {
        /// The goal's id.
        goal_id: GoalId,
        /// What to do.
        #[serde(flatten)]
        kind: GoalKind,
    },
    /// Cancel a running goal; the robot answers with its `Result` (canceled).
    Cancel {
        /// The goal's id.
        goal_id: GoalId,
    },
    /// Ask what happened to a goal; the robot answers `GoalStatus`.
    QueryGoal {
        /// The goal's id.
        goal_id: GoalId,
    },
    /// Inject a simulated fault.
    Inject {
        /// The fault.
        fault: Fault,
    },
    /// "The brain is alive": sent when nothing else was sent for a
    /// quarter of the dead-man period. The robot does not answer it; any
    /// request resets the robot's dead-man timer.
    Heartbeat,
}

/// Nav2-style error codes for a failed goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NavErrorCode {
    /// The path is obstructed and local recoveries did not clear it.
    Blocked,
    /// No path exists from here to the target.
    NoPath,
    /// The goal ran past its time limit.
    Timeout,
    /// The goal was cancelled.
    Cancelled,
    /// The target is outside the map or inside a wall.
    InvalidGoal,
    /// The robot cannot do this now (for example docking with no charger).
    Unavailable,
}

impl NavErrorCode {
    /// The code as written in events and docs (`no_path`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Blocked => "blocked",
            Self::NoPath => "no_path",
            Self::Timeout => "timeout",
            Self::Cancelled => "cancelled",
            Self::InvalidGoal => "invalid_goal",
            Self::Unavailable => "unavailable",
        }
    }
}

/// How a goal ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum GoalOutcome {
    /// The goal was reached.
    Succeeded {
        /// Seconds the goal took.
        navigation_time: f64,
    },
    /// The goal failed.
    Failed {
        /// Why, as a Nav2-like code.
        error: NavErrorCode,
        /// A human-readable detail.
        message: String,
    },
    /// The goal was cancelled on request.
    Canceled,
}

/// What the robot knows about a goal id (answer to [`LinkRequest::QueryGoal`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum GoalStatus {
    /// Never received.
    Unknown,
    /// Received and still running.
    Running,
    /// Finished with this outcome.
    Finished {
        /// The outcome.
        #[serde(flatten)]
        outcome: GoalOutcome,
    },
}

/// The robot's objective state, published every tick.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Telemetry {
    /// Robot clock, seconds since start.
    pub time: f64,
    /// Where the robot is (the default pose while [`Self::pose_unknown`]).
    pub pose: Pose,
    /// The robot has not said where it is yet (a real robot before its
    /// first map pose): `pose` means nothing, the robot is in no zone, and
    /// the policy judges no way from it (every motion asks).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pose_unknown: bool,
    /// How it is moving.
    pub twist: Twist,
    /// State of charge, percent.
    pub battery_pct: f64,
    /// Whether it is on the dock and charging.
    pub charging: bool,
    /// The zone the robot is in, if any.
    pub zone: Option<String>,
    /// Path distance to the running base goal's target, if one runs.
    pub distance_to_target: Option<f64>,
    /// Resources in use on the robot (`base`, …).
    pub busy: Vec<String>,
    /// Whether the base is stalled (a fault).
    pub stalled: bool,
    /// Passages currently blocked.
    pub blocked_passages: Vec<String>,
    /// Incidents in the robot's current zone (what its sensors see).
    pub incidents_in_view: Vec<Incident>,
    /// The running base goal's planned path, start first (empty when idle).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub path: Vec<Point>,
    /// Why the camera does not work, when it does not (a fault).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub camera_fault: Option<String>,
}

/// The fleet's and the faces' view of the robot ([`RobotView`], in every
/// snapshot) is a part of its telemetry, field for field.
impl From<&Telemetry> for RobotView {
    fn from(t: &Telemetry) -> Self {
        Self {
            pose: t.pose,
            pose_unknown: t.pose_unknown,
            twist: t.twist,
            battery_pct: t.battery_pct,
            charging: t.charging,
            zone: t.zone.clone(),
            distance_to_target: t.distance_to_target,
            busy: t.busy.clone(),
            path: t.path.clone(),
        }
    }
}

/// A message from the robot to the brain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum LinkReply {
    /// The goal was accepted and is running.
    Accepted {
        /// The goal's id.
        goal_id: GoalId,
    },
    /// The goal was refused before it started.
    Rejected {
        /// The goal's id.
        goal_id: GoalId,
        /// Why.
        error: NavErrorCode,
        /// A human-readable detail.
        message: String,
    },
    /// Progress of a running goal.
    Feedback {
        /// The goal's id.
        goal_id: GoalId,
        /// The progress.
        feedback: NavFeedback,
    },
    /// A goal ended.
    Result {
        /// The goal's id.
        goal_id: GoalId,
        /// How.
        outcome: GoalOutcome,
    },
    /// Answer to a status query.
    GoalStatus {
        /// The goal's id.
        goal_id: GoalId,
        /// Its status.
        status: GoalStatus,
    },
    /// The robot's state (sent every tick).
    Telemetry {
        /// The state.
        telemetry: Telemetry,
    },
    /// A fault was applied.
    FaultApplied {
        /// The fault.
        fault: Fault,
    },
    /// A request was refused before it did anything (a remote robot's
    /// answer where an in-process link returns a [`LinkError`]).
    Refused {
        /// Why.
        message: String,
    },
    /// The robot's first reply on a new connection: its dead-man period
    /// (seconds of silence from the brain after which it brings the base to
    /// rest; 0 = none). The brain sends something at least four times per period.
    Hello {
        /// The robot's dead-man period, seconds (0 = off).
        deadman_s: f64,
    },
    /// The robot brought the base to rest on its own because it heard
    /// nothing from the brain for `silent_s` seconds (the dead-man). Sent
    /// when it happens, or to the next brain that connects.
    Deadman {
        /// Seconds of silence when the robot acted.
        silent_s: f64,
        /// Robot time when it acted.
        time: f64,
        /// The goals it stopped (the base goal that was running, if any).
        stopped: Vec<GoalId>,
    },
}

/// Which robot a run drives when no `--robot` is given (`[robot]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RobotConfig {
    /// The robot's URL: `sim:` (the default), `tcp://HOST:PORT` or
    /// `ros2://?domain=N&namespace=/NAME` (docs/ros2.md).
    pub url: Option<String>,
}

impl RobotConfig {
    /// What is wrong with the settings, if anything: `(key, problem)`.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        let url = self.url.as_deref()?.trim();
        // A ROS 2 robot's options are read by robobrain-ros2, above this
        // crate: the core's config asks it (`Config::validate`).
        if url.starts_with("ros2:") {
            return None;
        }
        let known = url == "sim" || url.starts_with("sim:") || url.starts_with("tcp://");
        (!known).then(|| {
            (
                "robot.url",
                format!(
                    "expected sim:, tcp://HOST:PORT or ros2://?domain=N&namespace=/NAME, found {url:?}"
                ),
            )
        })
    }
}

/// The robot link's settings (`[link]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinkConfig {
    /// The dead-man: a robot that has heard nothing from its brain for this
    /// many seconds brings the base to rest (0 = off). The brain sends a
    /// heartbeat at least four times per period; a robot that announces a
    /// shorter period ([`LinkReply::Hello`]) gets them more often.
    pub deadman_s: f64,
}

impl Default for LinkConfig {
    fn default() -> Self {
        Self { deadman_s: 2.0 }
    }
}

impl LinkConfig {
    /// What is wrong with the settings, if anything: `(key, problem)`.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        let d = self.deadman_s;
        (!(d == 0.0 || (d.is_finite() && d >= MIN_DEADMAN_S))).then(|| {
            (
                "link.deadman_s",
                format!("expected 0 (off) or at least {MIN_DEADMAN_S} seconds, found {d}"),
            )
        })
    }
}

/// The shortest dead-man period accepted: the brain's heartbeats ride on
/// its ticks, which a loaded machine can delay by tens of milliseconds.
pub const MIN_DEADMAN_S: f64 = 0.1;

/// Why a link could not carry a request.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum LinkError {
    /// The robot is not reachable.
    #[error("robot link is down: {0}")]
    Disconnected(String),
    /// The robot does not support this request (for example a fault on real hardware).
    #[error("not supported by this robot: {0}")]
    Unsupported(String),
    /// The request names something the robot does not know.
    #[error("invalid request: {0}")]
    Invalid(String),
}

/// A connection to a robot, simulated or real.
///
/// The link is polled by the kernel's single task: it never calls back.
pub trait RobotLink: Send {
    /// Sends a request; replies arrive through [`RobotLink::drain`].
    fn send(&mut self, request: LinkRequest) -> Result<(), LinkError>;

    /// Lets `dt` seconds of robot time pass. An in-process simulator steps
    /// its world; a remote robot's time passes on its own, so remote links
    /// do nothing here.
    fn advance(&mut self, dt: f64);

    /// Moves every reply received since the last call into `out`, oldest first.
    fn drain(&mut self, out: &mut Vec<LinkReply>);

    /// Whether the link is connected (false puts the kernel in SAFE).
    fn is_connected(&self) -> bool {
        true
    }

    /// True once after the link came back from a loss: replies may have
    /// been missed, so the brain asks about every goal it still tracks.
    fn take_reconnected(&mut self) -> bool {
        false
    }

    /// The E-stop's own way to the robot, when the link has one: a
    /// `stop_base` written from the thread the operator's E-stop arrives
    /// on, not waiting for the kernel thread (which may be inside a commit
    /// or a tick). The kernel still takes the E-stop in and sends its own,
    /// recorded `stop_base`; the robot hears the first one sooner. `None`
    /// (the default) for a link whose robot lives on the kernel thread
    /// itself (the in-process simulator), where nothing can be sooner.
    fn estop_line(&self) -> Option<std::sync::Arc<dyn EStopLine>> {
        None
    }

    /// The goals the kernel sent while the E-stop line held them back
    /// ([`EStopLine::hold`]), once each: the link dropped them, so the
    /// robot never heard of them. The kernel asks right after its own
    /// `stop_base` and records them as not sent. Empty for a link without
    /// a line.
    fn take_held_back(&mut self) -> Vec<GoalId> {
        Vec::new()
    }
}

/// A way to bring the base to rest from any thread (see
/// [`RobotLink::estop_line`]). Neither method waits for the robot: a robot
/// that stops reading holds up neither the face that pressed the E-stop
/// nor the kernel.
pub trait EStopLine: Send + Sync {
    /// From now until the kernel's own `stop_base`, the link drops every
    /// goal the kernel sends ([`RobotLink::take_held_back`] names them) and
    /// holds back the robot's replies: the kernel is about to take an
    /// E-stop in, and nothing it decided before must reach the robot after
    /// the stop. Called before the E-stop is queued for the kernel.
    fn hold(&self);

    /// Writes a `stop_base` to the robot now (hands it to the link's writer;
    /// it never blocks on the robot). An error means it could not be
    /// written (the link is down); the kernel's own stop follows anyway.
    fn stop(&self) -> Result<(), LinkError>;
}

/// Requests held back until the tick that produced them is on record.
///
/// The engine hands this to skills instead of the real link; after the
/// tick's commit (events, checkpoint, ledger `started` rows) the requests
/// go to the robot in order. A brain killed before the commit sent nothing;
/// one killed after it finds every goal in the ledger.
#[derive(Debug, Default)]
pub struct Outbox {
    requests: Vec<LinkRequest>,
}

impl Outbox {
    /// The held requests, oldest first; the outbox is left empty.
    pub fn take(&mut self) -> Vec<LinkRequest> {
        std::mem::take(&mut self.requests)
    }

    /// The held requests.
    pub fn requests(&self) -> &[LinkRequest] {
        &self.requests
    }
}

impl RobotLink for Outbox {
    fn send(&mut self, request: LinkRequest) -> Result<(), LinkError> {
        self.requests.push(request);
        Ok(())
    }

    fn advance(&mut self, _dt: f64) {}

    fn drain(&mut self, _out: &mut Vec<LinkReply>) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_robot_view_is_the_telemetry_the_faces_see() {
        let telemetry = Telemetry {
            time: 12.0,
            pose: Pose::new(1.0, 2.0, 0.5),
            pose_unknown: true,
            twist: Twist {
                linear: 0.3,
                angular: -0.1,
            },
            battery_pct: 61.5,
            charging: true,
            zone: Some("kitchen".into()),
            distance_to_target: Some(4.2),
            busy: vec!["base".into()],
            stalled: true,
            blocked_passages: vec!["kitchen_door".into()],
            incidents_in_view: Vec::new(),
            path: vec![Point::new(1.0, 2.0), Point::new(3.0, 2.0)],
            camera_fault: Some("unplugged".into()),
        };
        // The view is the telemetry without what only the brain reads.
        let mut json = serde_json::to_value(&telemetry).unwrap();
        let fields = json.as_object_mut().unwrap();
        for brain_only in [
            "time",
            "stalled",
            "blocked_passages",
            "incidents_in_view",
            "camera_fault",
        ] {
            assert!(fields.remove(brain_only).is_some(), "{brain_only}");
        }
        assert_eq!(
            serde_json::to_value(RobotView::from(&telemetry)).unwrap(),
            json
        );
    }
}
