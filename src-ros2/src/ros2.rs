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
//! - `pace.rs`: the link's pure timing rules (feedback coalescing, the
//!   dock's backoff, the robot's silence), apart from the wire.

#[cfg(feature = "ros2")]
pub mod dds;
#[cfg(feature = "ros2")]
pub mod msgs;
pub mod pace;

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
    /// `nav_msgs/Odometry` (`odom`): only where the user says the odom
    /// frame is the map frame (`odom_is_map=true`), since zones are in `map`.
    Odometry,
    /// `geometry_msgs/PoseWithCovarianceStamped` (`amcl_pose`, map frame),
    /// read reliable and transient local: AMCL's last pose arrives on joining.
    #[default]
    Amcl,
}

/// A ROS 2 robot, as its URL names it:
/// `ros2://?domain=0&namespace=/robot1&rmw=cyclonedds&cmd_vel=cmd_vel&amcl_pose=amcl_pose&battery=battery_state&frame=map&interface=127.0.0.1&wait=10&lost_after=2`.
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
    /// The robot counts as lost once `battery_state` has been silent this
    /// long (DDS's own participant lease is Cyclone's 10 s by default).
    pub lost_after: Duration,
    /// Whether the E-stop also cancels goals robobrain did not send (every
    /// goal on both servers). Off by default: on a shared robot those are
    /// other clients' goals.
    pub estop_cancels_all: bool,
}

impl Default for Ros2Options {
    fn default() -> Self {
        Self {
            domain: 0,
            namespace: String::new(),
            rmw: Rmw::CycloneDds,
            cmd_vel: "cmd_vel".into(),
            battery: "battery_state".into(),
            pose: PoseSource::Amcl,
            pose_topic: "amcl_pose".into(),
            frame: None,
            networks: Vec::new(),
            wait: Duration::from_secs(10),
            lost_after: Duration::from_secs(2),
            estop_cancels_all: false,
        }
    }
}

/// A `true`/`false` URL value.
fn flag(key: &str, value: &str) -> Result<bool, String> {
    match value {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        _ => Err(format!("{key}: expected true or false, found `{value}`")),
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
        let mut odom_is_map = false;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| bad(format!("expected KEY=VALUE, found `{pair}`")))?;
            if key == "odom_is_map" {
                odom_is_map = flag(key, value).map_err(bad)?;
            } else {
                o.set(key, value).map_err(bad)?;
            }
        }
        if o.pose == PoseSource::Odometry && !odom_is_map {
            return Err(bad(format!(
                "odom: the odom frame drifts away from the map frame the zones are in; read \
                 amcl_pose (the default), or add odom_is_map=true if {} is in map coordinates",
                o.pose_topic
            )));
        }
        Ok(o)
    }

    /// Takes one `key=value` of the URL.
    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "domain" => {
                self.domain = value
                    .parse()
                    .ok()
                    .filter(|d| *d <= MAX_DOMAIN)
                    .ok_or_else(|| {
                        format!("domain: expected 0 to {MAX_DOMAIN}, found `{value}`")
                    })?;
            }
            "namespace" => {
                let ns = value.trim_end_matches('/');
                if !ns.is_empty() && (!ns.starts_with('/') || !topic_ok(&ns[1..])) {
                    return Err(format!(
                        "namespace: expected /NAME (letters, digits, _), found `{value}`"
                    ));
                }
                self.namespace = ns.to_string();
            }
            "rmw" => {
                self.rmw = match value {
                    "cyclonedds" | "rmw_cyclonedds_cpp" => Rmw::CycloneDds,
                    "fastrtps" | "fastdds" | "rmw_fastrtps_cpp" => Rmw::FastRtps,
                    _ => {
                        return Err(format!(
                            "rmw: expected cyclonedds or fastrtps, found `{value}`"
                        ));
                    }
                };
            }
            "cmd_vel" | "battery" | "odom" | "amcl_pose" | "frame" => {
                if !topic_ok(value) {
                    return Err(format!(
                        "{key}: expected a relative name (letters, digits, _, /), found `{value}`"
                    ));
                }
                let value = value.to_string();
                match key {
                    "cmd_vel" => self.cmd_vel = value,
                    "battery" => self.battery = value,
                    "frame" => self.frame = Some(value),
                    "odom" => (self.pose, self.pose_topic) = (PoseSource::Odometry, value),
                    _ => (self.pose, self.pose_topic) = (PoseSource::Amcl, value),
                }
            }
            "interface" => {
                for a in value.split(',') {
                    self.networks.push(
                        a.parse().map_err(|_| {
                            format!("interface: expected an IP address, found `{a}`")
                        })?,
                    );
                }
            }
            "wait" | "lost_after" => {
                let d = value
                    .parse::<f64>()
                    .ok()
                    .and_then(|s| Duration::try_from_secs_f64(s).ok())
                    .ok_or_else(|| format!("{key}: expected seconds, found `{value}`"))?;
                if key == "wait" {
                    self.wait = d;
                } else {
                    self.lost_after = d;
                }
            }
            "estop_cancel_all" => self.estop_cancels_all = flag(key, value)?,
            _ => {
                return Err(format!(
                    "unknown parameter `{key}`; expected domain, namespace, rmw, cmd_vel, \
                     battery, amcl_pose, odom, odom_is_map, frame, interface, wait, lost_after \
                     or estop_cancel_all"
                ));
            }
        }
        Ok(())
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
            PoseSource::Odometry => write!(f, "&odom={}&odom_is_map=true", self.pose_topic)?,
            PoseSource::Amcl if self.pose_topic != d.pose_topic => {
                write!(f, "&amcl_pose={}", self.pose_topic)?;
            }
            PoseSource::Amcl => {}
        }
        if !self.networks.is_empty() {
            let list: Vec<String> = self.networks.iter().map(ToString::to_string).collect();
            write!(f, "&interface={}", list.join(","))?;
        }
        if self.wait != d.wait {
            write!(f, "&wait={}", self.wait.as_secs_f64())?;
        }
        if self.lost_after != d.lost_after {
            write!(f, "&lost_after={}", self.lost_after.as_secs_f64())?;
        }
        if self.estop_cancels_all {
            f.write_str("&estop_cancel_all=true")?;
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

/// A goal id's key: the first 8 bytes of every UUID its sends carry, a
/// fixed hash (FNV-1a 64), so a brain resumed in another process finds
/// whichever of its goal's UUIDs Nav2 knows.
pub fn goal_key(goal_id: &str) -> [u8; 8] {
    fnv(goal_id.as_bytes(), 0xcbf2_9ce4_8422_2325).to_be_bytes()
}

/// FNV-1a 64 of `bytes` from `basis`.
fn fnv(bytes: &[u8], basis: u64) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(basis, |h, b| (h ^ u64::from(*b)).wrapping_mul(PRIME))
}

/// The ROS goal UUID of one send of `goal_id`: the goal's key
/// ([`goal_key`]), then 8 bytes from `nonce`, with RFC 9562's version 8
/// and variant bits. Every send takes a fresh nonce, so no UUID is ever
/// sent twice (rclcpp_action's server throws on a goal id it already
/// holds, finished goals included, and the node dies); the key maps each
/// of them back to the one goal id.
pub fn goal_uuid(goal_id: &str, nonce: u64) -> [u8; 16] {
    let mut out = [0; 16];
    out[..8].copy_from_slice(&goal_key(goal_id));
    out[8..].copy_from_slice(&fnv(&nonce.to_le_bytes(), 0x6c62_272e_07bb_0142).to_be_bytes());
    out[6] = (out[6] & 0x0f) | 0x80;
    out[8] = (out[8] & 0x3f) | 0x80;
    out
}

/// Whether `uuid` is one of the sends of the goal whose key is `key`.
pub fn uuid_of(uuid: &[u8; 16], key: &[u8; 8]) -> bool {
    let mut k = *key;
    k[6] = (k[6] & 0x0f) | 0x80;
    uuid[..8] == k
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
                    &frame=world&amcl_pose=pose&interface=127.0.0.1&wait=2.5&lost_after=1.5\
                    &estop_cancel_all=true";
        let o = Ros2Options::parse(full).unwrap();
        assert_eq!(o.rmw, Rmw::FastRtps);
        assert_eq!(o.pose, PoseSource::Amcl);
        assert!(o.estop_cancels_all);
        assert_eq!(o.lost_after, Duration::from_secs_f64(1.5));
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
            (
                "ros2://?estop_cancel_all=maybe",
                "estop_cancel_all: expected true or false",
            ),
        ] {
            let e = Ros2Options::parse(url).unwrap_err().to_string();
            assert!(e.contains(want), "{url}: {e}");
        }
    }

    #[test]
    fn every_send_has_a_fresh_uuid_that_maps_back_to_its_goal() {
        let key = goal_key("kill-test/s3/op0");
        let a = goal_uuid("kill-test/s3/op0", 1);
        let b = goal_uuid("kill-test/s3/op0", 2);
        assert_ne!(a, b, "a re-send is a new UUID");
        assert!(
            uuid_of(&a, &key) && uuid_of(&b, &key),
            "both are the one goal's"
        );
        assert!(!uuid_of(&goal_uuid("kill-test/s3/op1", 1), &key));
        assert_eq!(a[6] >> 4, 8);
        assert_eq!(a[8] >> 6, 0b10);
        // Pinned: a resumed brain of another build must find its goals.
        let hex = goal_key("t1/nav").iter().fold(String::new(), |mut s, b| {
            let _ = std::fmt::Write::write_fmt(&mut s, format_args!("{b:02x}"));
            s
        });
        assert_eq!(hex, GOLDEN_T1_NAV);
    }

    /// Computed independently (Python, FNV-1a 64 of the id).
    const GOLDEN_T1_NAV: &str = "8180ef0bcce03494";

    #[test]
    fn odom_needs_the_user_to_say_it_is_the_map_frame() {
        let e = Ros2Options::parse("ros2://?odom=odom")
            .unwrap_err()
            .to_string();
        assert!(e.contains("odom_is_map=true"), "{e}");
        let o = Ros2Options::parse("ros2://?odom=odom&odom_is_map=true").unwrap();
        assert_eq!(o.pose, PoseSource::Odometry);
        assert_eq!(Ros2Options::parse(&o.to_string()).unwrap(), o);
        let d = Ros2Options::default();
        assert_eq!(
            (d.pose, d.pose_topic.as_str()),
            (PoseSource::Amcl, "amcl_pose")
        );
        assert!(!d.estop_cancels_all);
    }

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
