//! A real robot over ROS 2 and Nav2 (`--robot ros2://?domain=0&namespace=/robot1`),
//! in pure Rust: `ros2-client` on RustDDS, no ROS installation (docs/ros2.md).
//!
//! This file holds what does not need DDS, so it is always built: the
//! robot's URL ([`Ros2Options`]), goal ids as ROS goal UUIDs
//! ([`goal_uuid`]) and Nav2's outcomes and error codes in our terms
//! ([`outcome_of`], [`nav_error`]). The link itself ([`Ros2Link`]) and
//! the message types are behind the `ros2` feature (of this crate, and of
//! robobrain-core, which passes it on); a
//! build without it answers `ros2://` with an error that says so.
//!
//! - `dds.rs`: [`Ros2Link`], the worker thread that owns the ROS node.
//! - `msgs.rs`: the ROS messages, in their `.msg` field order.

#[cfg(feature = "ros2")]
pub mod dds;
#[cfg(feature = "ros2")]
pub mod msgs;

use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

#[cfg(feature = "ros2")]
pub use dds::Ros2Link;

use crate::link::{GoalOutcome, LinkError, NavErrorCode, RobotLink};
use crate::world::World;

/// The RMW (ROS middleware) the robot runs: it decides how services sit on DDS.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Rmw {
    /// `rmw_cyclonedds_cpp`: a request header (client id, sequence number)
    /// at the front of every request and reply.
    #[default]
    CycloneDds,
    /// `rmw_fastrtps_cpp` (Jazzy's default): the request's identity in the
    /// DDS sample's inline QoS (RPC over DDS "enhanced" mapping).
    FastRtps,
}

/// Where the robot's pose comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PoseSource {
    /// `nav_msgs/Odometry` (`odom`).
    #[default]
    Odometry,
    /// `geometry_msgs/PoseWithCovarianceStamped` (`amcl_pose`, map frame).
    Amcl,
}

/// A ROS 2 robot, as its URL names it:
/// `ros2://?domain=0&namespace=/robot1&rmw=cyclonedds&cmd_vel=cmd_vel&odom=odom&battery=battery_state&pose=odom&frame=map&interface=127.0.0.1&wait=10`.
/// Every parameter is optional.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ros2Options {
    /// The DDS domain (`ROS_DOMAIN_ID`), 0–232.
    pub domain: u16,
    /// The robot's namespace (`/robot1`; empty for none).
    pub namespace: String,
    /// The robot's RMW.
    pub rmw: Rmw,
    /// The velocity topic the E-stop publishes a zero twist on.
    pub cmd_vel: String,
    /// The battery topic (`sensor_msgs/BatteryState`).
    pub battery: String,
    /// Where the pose comes from.
    pub pose: PoseSource,
    /// Its topic (`odom` or `amcl_pose`).
    pub pose_topic: String,
    /// The frame goals are given in (`None`: the world file's `frame`, else `map`).
    pub frame: Option<String>,
    /// Only these local addresses carry DDS (empty: every interface).
    pub networks: Vec<IpAddr>,
    /// How long to wait for the robot at start.
    pub wait: Duration,
}

impl Default for Ros2Options {
    fn default() -> Self {
        Self {
            domain: 0,
            namespace: String::new(),
            rmw: Rmw::CycloneDds,
            cmd_vel: "cmd_vel".into(),
            battery: "battery_state".into(),
            pose: PoseSource::Odometry,
            pose_topic: "odom".into(),
            frame: None,
            networks: Vec::new(),
            wait: Duration::from_secs(10),
        }
    }
}

/// The highest domain id whose ports fit (ROS 2's limit for Linux).
const MAX_DOMAIN: u16 = 232;

fn topic_ok(t: &str) -> bool {
    !t.is_empty()
        && !t.starts_with('/')
        && t.split('/')
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

impl Ros2Options {
    /// Parses `ros2://?key=value&…` (also `ros2:` and `ros2://`).
    pub fn parse(url: &str) -> Result<Self, LinkError> {
        let bad = |why: String| LinkError::Invalid(format!("robot `{url}`: {why}"));
        let rest = url
            .strip_prefix("ros2:")
            .ok_or_else(|| bad("expected ros2://?domain=N&namespace=/NAME".into()))?;
        let rest = rest.strip_prefix("//").unwrap_or(rest);
        let query = match rest.split_once('?') {
            Some(("", q)) => q,
            None if rest.is_empty() => "",
            _ => {
                return Err(bad(
                    "a ROS 2 robot has no host: put everything after `?` (ros2://?domain=0)".into(),
                ));
            }
        };
        let mut o = Self::default();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| bad(format!("expected KEY=VALUE, found `{pair}`")))?;
            match key {
                "domain" => {
                    o.domain =
                        value
                            .parse()
                            .ok()
                            .filter(|d| *d <= MAX_DOMAIN)
                            .ok_or_else(|| {
                                bad(format!(
                                    "domain: expected 0 to {MAX_DOMAIN}, found `{value}`"
                                ))
                            })?;
                }
                "namespace" => {
                    let ns = value.trim_end_matches('/');
                    if !ns.is_empty() && (!ns.starts_with('/') || !topic_ok(&ns[1..])) {
                        return Err(bad(format!(
                            "namespace: expected /NAME (letters, digits, _), found `{value}`"
                        )));
                    }
                    o.namespace = ns.to_string();
                }
                "rmw" => {
                    o.rmw = match value {
                        "cyclonedds" | "rmw_cyclonedds_cpp" => Rmw::CycloneDds,
                        "fastrtps" | "fastdds" | "rmw_fastrtps_cpp" => Rmw::FastRtps,
                        _ => {
                            return Err(bad(format!(
                                "rmw: expected cyclonedds or fastrtps, found `{value}`"
                            )));
                        }
                    };
                }
                "cmd_vel" | "battery" | "odom" | "amcl_pose" | "frame" => {
                    if !topic_ok(value) {
                        return Err(bad(format!(
                            "{key}: expected a relative name (letters, digits, _, /), found `{value}`"
                        )));
                    }
                    match key {
                        "cmd_vel" => o.cmd_vel = value.into(),
                        "battery" => o.battery = value.into(),
                        "frame" => o.frame = Some(value.into()),
                        "odom" => {
                            o.pose = PoseSource::Odometry;
                            o.pose_topic = value.into();
                        }
                        _ => {
                            o.pose = PoseSource::Amcl;
                            o.pose_topic = value.into();
                        }
                    }
                }
                "interface" => {
                    for a in value.split(',') {
                        o.networks.push(a.parse().map_err(|_| {
                            bad(format!("interface: expected an IP address, found `{a}`"))
                        })?);
                    }
                }
                "wait" => {
                    o.wait = value
                        .parse::<f64>()
                        .ok()
                        .and_then(|s| Duration::try_from_secs_f64(s).ok())
                        .ok_or_else(|| bad(format!("wait: expected seconds, found `{value}`")))?;
                }
                _ => {
                    return Err(bad(format!(
                        "unknown parameter `{key}`; expected domain, namespace, rmw, cmd_vel, \
                         battery, odom, amcl_pose, frame, interface or wait"
                    )));
                }
            }
        }
        Ok(o)
    }

    /// The link to this robot, for a run in `world` (its zones and dock
    /// pose are in the robot's map frame).
    pub fn connect(&self, world: &World) -> Result<Box<dyn RobotLink>, LinkError> {
        #[cfg(feature = "ros2")]
        {
            Ok(Box::new(Ros2Link::connect(self, world)?))
        }
        #[cfg(not(feature = "ros2"))]
        {
            let _ = world;
            Err(LinkError::Unsupported(format!(
                "robot {self}: built without the ros2 feature \
                 (cargo build --release --features robobrain-tui/ros2)"
            )))
        }
    }
}

impl fmt::Display for Ros2Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = Self::default();
        write!(f, "ros2://?domain={}", self.domain)?;
        if !self.namespace.is_empty() {
            write!(f, "&namespace={}", self.namespace)?;
        }
        if self.rmw != d.rmw {
            f.write_str("&rmw=fastrtps")?;
        }
        for (key, value, default) in [
            ("cmd_vel", &self.cmd_vel, &d.cmd_vel),
            ("battery", &self.battery, &d.battery),
        ] {
            if value != default {
                write!(f, "&{key}={value}")?;
            }
        }
        if let Some(frame) = &self.frame {
            write!(f, "&frame={frame}")?;
        }
        match self.pose {
            PoseSource::Odometry if self.pose_topic != d.pose_topic => {
                write!(f, "&odom={}", self.pose_topic)?;
            }
            PoseSource::Amcl => write!(f, "&amcl_pose={}", self.pose_topic)?,
            PoseSource::Odometry => {}
        }
        if !self.networks.is_empty() {
            let list: Vec<String> = self.networks.iter().map(ToString::to_string).collect();
            write!(f, "&interface={}", list.join(","))?;
        }
        if self.wait != d.wait {
            write!(f, "&wait={}", self.wait.as_secs_f64())?;
        }
        Ok(())
    }
}

/// Which Nav2 action a goal went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// `navigate_to_pose` (nav2_msgs/NavigateToPose).
    Navigate,
    /// `dock_robot` (nav2_msgs/DockRobot).
    Dock,
}

impl Action {
    /// The action's name under the robot's namespace.
    pub fn ros_name(self) -> &'static str {
        match self {
            Self::Navigate => "navigate_to_pose",
            Self::Dock => "dock_robot",
        }
    }
}

/// Where one of our goals stands on the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoalState {
    /// Sent, not yet answered.
    Sent,
    /// Accepted and running.
    Running,
    /// A newer goal took the base: Nav2 will end this one (aborted, no code).
    Preempted,
}

/// A goal's failure as Nav2 reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NavFailure {
    /// Nav2's error code.
    pub code: u16,
    /// Nav2's message.
    pub message: String,
    /// The action.
    pub action: Action,
}

/// `action_msgs/GoalStatus` values.
pub mod status {
    /// Unknown goal.
    pub const UNKNOWN: i8 = 0;
    /// Accepted.
    pub const ACCEPTED: i8 = 1;
    /// Executing.
    pub const EXECUTING: i8 = 2;
    /// Canceling.
    pub const CANCELING: i8 = 3;
    /// Succeeded.
    pub const SUCCEEDED: i8 = 4;
    /// Canceled.
    pub const CANCELED: i8 = 5;
    /// Aborted.
    pub const ABORTED: i8 = 6;
}

/// Whether a goal status is final.
pub fn settled(s: i8) -> bool {
    matches!(
        s,
        status::SUCCEEDED | status::CANCELED | status::ABORTED | status::UNKNOWN
    )
}

/// A goal id as a ROS goal UUID: a fixed hash (two FNV-1a 64-bit halves,
/// RFC 9562 version 8), so the same id is the same UUID in every process.
pub fn goal_uuid(goal_id: &str) -> [u8; 16] {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let fnv = |basis: u64| {
        goal_id
            .bytes()
            .fold(basis, |h, b| (h ^ u64::from(b)).wrapping_mul(PRIME))
    };
    let mut out = [0; 16];
    out[..8].copy_from_slice(&fnv(0xcbf2_9ce4_8422_2325).to_be_bytes());
    out[8..].copy_from_slice(&fnv(0x6c62_272e_07bb_0142).to_be_bytes());
    out[6] = (out[6] & 0x0f) | 0x80;
    out[8] = (out[8] & 0x3f) | 0x80;
    out
}

/// Nav2's error codes (Jazzy) in our terms: FollowPath's 1xx,
/// ComputePathToPose's 2xx, the docking server's 9xx.
pub fn nav_error(code: u16) -> NavErrorCode {
    match code {
        // PATIENCE_EXCEEDED, FAILED_TO_MAKE_PROGRESS, NO_VALID_CONTROL;
        // FAILED_TO_STAGE, FAILED_TO_CONTROL.
        104..=106 | 903 | 905 => NavErrorCode::Blocked,
        // NO_VALID_PATH.
        208 => NavErrorCode::NoPath,
        // TIMEOUT.
        207 => NavErrorCode::Timeout,
        // START/GOAL_OUTSIDE_MAP, START/GOAL_OCCUPIED; DOCK_NOT_IN_DB, DOCK_NOT_VALID.
        203..=206 | 901 | 902 => NavErrorCode::InvalidGoal,
        _ => NavErrorCode::Unavailable,
    }
}

/// How a goal ended, from its `get_result` answer (`None`: the server does
/// not know the goal). A preempted goal that Nav2 aborted was replaced by
/// ours: it counts as cancelled.
pub fn outcome_of(
    status: i8,
    preempted: bool,
    elapsed_s: f64,
    failure: &NavFailure,
) -> Option<GoalOutcome> {
    match status {
        status::SUCCEEDED => Some(GoalOutcome::Succeeded {
            navigation_time: elapsed_s,
        }),
        status::CANCELED => Some(GoalOutcome::Canceled),
        status::ABORTED if preempted && failure.code == 0 => Some(GoalOutcome::Canceled),
        status::ABORTED => Some(GoalOutcome::Failed {
            error: nav_error(failure.code),
            message: format!(
                "{} aborted (Nav2 error {}){}",
                failure.action.ros_name(),
                failure.code,
                if failure.message.is_empty() {
                    String::new()
                } else {
                    format!(": {}", failure.message)
                }
            ),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_defaults_and_round_trip() {
        let o = Ros2Options::parse("ros2://?domain=7&namespace=/robot1").unwrap();
        assert_eq!(o.domain, 7);
        assert_eq!(o.namespace, "/robot1");
        assert_eq!(o.cmd_vel, "cmd_vel");
        assert_eq!(o.to_string(), "ros2://?domain=7&namespace=/robot1");
        let full = "ros2://?domain=3&namespace=/r&rmw=fastrtps&cmd_vel=base/cmd_vel&battery=bat\
                    &frame=world&amcl_pose=amcl_pose&interface=127.0.0.1&wait=2.5";
        let o = Ros2Options::parse(full).unwrap();
        assert_eq!(o.rmw, Rmw::FastRtps);
        assert_eq!(o.pose, PoseSource::Amcl);
        assert_eq!(Ros2Options::parse(&o.to_string()).unwrap(), o);
        assert_eq!(Ros2Options::parse("ros2:").unwrap(), Ros2Options::default());
    }

    #[test]
    fn bad_urls_say_what_was_expected() {
        for (url, want) in [
            ("ros2://?domain=300", "domain: expected 0 to 232"),
            ("ros2://host?domain=1", "a ROS 2 robot has no host"),
            ("ros2://?namespace=robot1", "namespace: expected /NAME"),
            ("ros2://?rmw=zenoh", "rmw: expected cyclonedds or fastrtps"),
            ("ros2://?speed=2", "unknown parameter `speed`"),
            ("ros2://?cmd_vel=/abs", "cmd_vel: expected a relative name"),
            ("ros2://?interface=lo", "interface: expected an IP address"),
            ("ros2://?domain", "expected KEY=VALUE"),
        ] {
            let e = Ros2Options::parse(url).unwrap_err().to_string();
            assert!(e.contains(want), "{url}: {e}");
        }
    }

    #[test]
    fn goal_uuids_are_fixed_distinct_and_version_8() {
        let a = goal_uuid("kill-test/s3/op0");
        assert_eq!(a, goal_uuid("kill-test/s3/op0"), "same id, same UUID");
        assert_ne!(a, goal_uuid("kill-test/s3/op1"));
        assert_eq!(a[6] >> 4, 8);
        assert_eq!(a[8] >> 6, 0b10);
        // Pinned: a resumed brain of another build must find its goals.
        let hex = goal_uuid("t1/nav").iter().fold(String::new(), |mut s, b| {
            let _ = std::fmt::Write::write_fmt(&mut s, format_args!("{b:02x}"));
            s
        });
        assert_eq!(hex.len(), 32);
        assert_eq!(hex, GOLDEN_T1_NAV);
    }

    /// Computed independently (Python, the same FNV-1a halves and version bits).
    const GOLDEN_T1_NAV: &str = "8180ef0bcce084949ed742ee0b6bfddb";

    #[test]
    fn nav2_error_codes_map_to_ours() {
        assert_eq!(nav_error(105), NavErrorCode::Blocked);
        assert_eq!(nav_error(208), NavErrorCode::NoPath);
        assert_eq!(nav_error(207), NavErrorCode::Timeout);
        assert_eq!(nav_error(204), NavErrorCode::InvalidGoal);
        assert_eq!(nav_error(901), NavErrorCode::InvalidGoal);
        assert_eq!(nav_error(999), NavErrorCode::Unavailable);
        let failure = |code| NavFailure {
            code,
            message: "stuck".into(),
            action: Action::Navigate,
        };
        assert_eq!(
            outcome_of(status::ABORTED, false, 1.0, &failure(105)),
            Some(GoalOutcome::Failed {
                error: NavErrorCode::Blocked,
                message: "navigate_to_pose aborted (Nav2 error 105): stuck".into()
            })
        );
        assert_eq!(
            outcome_of(status::ABORTED, true, 1.0, &failure(0)),
            Some(GoalOutcome::Canceled),
            "a goal our newer goal replaced"
        );
        assert_eq!(
            outcome_of(status::SUCCEEDED, false, 2.5, &failure(0)),
            Some(GoalOutcome::Succeeded {
                navigation_time: 2.5
            })
        );
        assert_eq!(outcome_of(status::UNKNOWN, false, 0.0, &failure(0)), None);
        assert!(settled(status::CANCELED) && !settled(status::EXECUTING));
        assert!(!settled(status::ACCEPTED) && !settled(status::CANCELING));
    }
}
