//! The ROS 2 messages the link speaks, as serde structs in the field order
//! of their `.msg`/`.action` files (Jazzy: ros2/common_interfaces, ros2/rcl_interfaces and ros-navigation/navigation2).
//! CDR has no field names or tags: order and width are the whole contract.

use ros2_client::Message;
use serde::{Deserialize, Serialize};

/// `builtin_interfaces/Time` and `builtin_interfaces/Duration` (same layout).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Stamp {
    /// Seconds.
    pub sec: i32,
    /// Nanoseconds, below one second.
    pub nanosec: u32,
}

impl Stamp {
    /// Seconds as a float.
    pub fn seconds(self) -> f64 {
        f64::from(self.sec) + f64::from(self.nanosec) * 1e-9
    }
}

/// `std_msgs/Header`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// When.
    pub stamp: Stamp,
    /// The frame the data is in.
    pub frame_id: String,
}

/// `geometry_msgs/Point` and `geometry_msgs/Vector3` (same layout).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Vec3 {
    /// X.
    pub x: f64,
    /// Y.
    pub y: f64,
    /// Z.
    pub z: f64,
}

/// `geometry_msgs/Quaternion`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Quaternion {
    /// X.
    pub x: f64,
    /// Y.
    pub y: f64,
    /// Z.
    pub z: f64,
    /// W.
    pub w: f64,
}

impl Default for Quaternion {
    fn default() -> Self {
        Self::from_yaw(0.0)
    }
}

impl Quaternion {
    /// A rotation of `yaw` radians about Z.
    pub fn from_yaw(yaw: f64) -> Self {
        let (s, c) = (yaw / 2.0).sin_cos();
        Self {
            x: 0.0,
            y: 0.0,
            z: s,
            w: c,
        }
    }

    /// The rotation about Z, radians.
    pub fn yaw(self) -> f64 {
        let siny = 2.0 * (self.w * self.z + self.x * self.y);
        let cosy = 1.0 - 2.0 * (self.y * self.y + self.z * self.z);
        siny.atan2(cosy)
    }
}

/// `geometry_msgs/Pose`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Pose {
    /// Position.
    pub position: Vec3,
    /// Orientation.
    pub orientation: Quaternion,
}

/// `geometry_msgs/PoseStamped`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PoseStamped {
    /// Stamp and frame.
    pub header: Header,
    /// The pose.
    pub pose: Pose,
}

/// `geometry_msgs/Twist`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Twist {
    /// Linear velocity, m/s.
    pub linear: Vec3,
    /// Angular velocity, rad/s.
    pub angular: Vec3,
}
impl Message for Twist {}

/// `geometry_msgs/PoseWithCovariance`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoseWithCovariance {
    /// The pose.
    pub pose: Pose,
    /// Row-major 6×6 covariance.
    pub covariance: [[f64; 6]; 6],
}

/// `geometry_msgs/TwistWithCovariance`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TwistWithCovariance {
    /// The twist.
    pub twist: Twist,
    /// Row-major 6×6 covariance.
    pub covariance: [[f64; 6]; 6],
}

/// `nav_msgs/Odometry`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Odometry {
    /// Stamp and frame of the pose.
    pub header: Header,
    /// Frame of the twist.
    pub child_frame_id: String,
    /// Where the robot is.
    pub pose: PoseWithCovariance,
    /// How it moves.
    pub twist: TwistWithCovariance,
}
impl Message for Odometry {}

/// `geometry_msgs/PoseWithCovarianceStamped` (`amcl_pose`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoseWithCovarianceStamped {
    /// Stamp and frame.
    pub header: Header,
    /// The pose.
    pub pose: PoseWithCovariance,
}
impl Message for PoseWithCovarianceStamped {}

/// `sensor_msgs/BatteryState`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatteryState {
    /// Stamp.
    pub header: Header,
    /// Volts.
    pub voltage: f32,
    /// °C (NaN: unmeasured).
    pub temperature: f32,
    /// Amperes, negative discharging.
    pub current: f32,
    /// Ah.
    pub charge: f32,
    /// Ah, last full.
    pub capacity: f32,
    /// Ah, design.
    pub design_capacity: f32,
    /// 0–1 (NaN: unmeasured).
    pub percentage: f32,
    /// `POWER_SUPPLY_STATUS_*`.
    pub power_supply_status: u8,
    /// `POWER_SUPPLY_HEALTH_*`.
    pub power_supply_health: u8,
    /// `POWER_SUPPLY_TECHNOLOGY_*`.
    pub power_supply_technology: u8,
    /// Whether a battery is present.
    pub present: bool,
    /// Per cell, volts.
    pub cell_voltage: Vec<f32>,
    /// Per cell, °C.
    pub cell_temperature: Vec<f32>,
    /// Slot.
    pub location: String,
    /// Serial number.
    pub serial_number: String,
}
impl Message for BatteryState {}

/// `BatteryState.POWER_SUPPLY_STATUS_CHARGING`.
pub const POWER_SUPPLY_STATUS_CHARGING: u8 = 1;
/// `BatteryState.POWER_SUPPLY_STATUS_FULL` (on the charger, full).
pub const POWER_SUPPLY_STATUS_FULL: u8 = 4;

/// `nav2_msgs/action/NavigateToPose` goal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NavigateToPoseGoal {
    /// Where to go.
    pub pose: PoseStamped,
    /// The behaviour tree (empty: the navigator's default).
    pub behavior_tree: String,
}
impl Message for NavigateToPoseGoal {}

/// `nav2_msgs/action/NavigateToPose` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NavigateToPoseResult {
    /// Nav2's error code (0: none).
    pub error_code: u16,
    /// Nav2's message.
    pub error_msg: String,
}
impl Message for NavigateToPoseResult {}

/// `nav2_msgs/action/NavigateToPose` feedback.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NavigateToPoseFeedback {
    /// Where the robot is.
    pub current_pose: PoseStamped,
    /// Time since the goal started.
    pub navigation_time: Stamp,
    /// Time to arrival.
    pub estimated_time_remaining: Stamp,
    /// Recoveries so far.
    pub number_of_recoveries: i16,
    /// Metres to go.
    pub distance_remaining: f32,
}
impl Message for NavigateToPoseFeedback {}

/// `nav2_msgs/action/DockRobot` goal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DockRobotGoal {
    /// Use `dock_id` (else `dock_pose`).
    pub use_dock_id: bool,
    /// The dock's id in the docking server's database.
    pub dock_id: String,
    /// The dock's pose.
    pub dock_pose: PoseStamped,
    /// The dock's plugin type (empty: the only one).
    pub dock_type: String,
    /// Seconds allowed to reach the staging pose.
    pub max_staging_time: f32,
    /// Navigate to the staging pose first.
    pub navigate_to_staging_pose: bool,
}
impl Message for DockRobotGoal {}

/// `nav2_msgs/action/DockRobot` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DockRobotResult {
    /// Docked.
    pub success: bool,
    /// Nav2's docking error code (0: none).
    pub error_code: u16,
    /// Retries made.
    pub num_retries: u16,
    /// Nav2's message.
    pub error_msg: String,
}
impl Message for DockRobotResult {}

/// `nav2_msgs/action/DockRobot` feedback.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DockRobotFeedback {
    /// Docking state.
    pub state: u16,
    /// Time since docking started.
    pub docking_time: Stamp,
    /// Retries made.
    pub num_retries: u16,
}
impl Message for DockRobotFeedback {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaw_survives_a_quaternion() {
        for yaw in [0.0, 1.0, -2.5, 3.0] {
            assert!((Quaternion::from_yaw(yaw).yaw() - yaw).abs() < 1e-9);
        }
    }
}
