//! robobrain-ros2: a real robot over ROS 2 and Nav2, its own crate so that
//! the DDS stack stays behind one feature and one folder (docs/ros2.md).
//!
//! - [`ros2`]: the robot's URL (`Ros2Options`), goal ids as ROS goal
//!   UUIDs, Nav2's outcomes in robobrain's terms — always built; the link
//!   itself (`Ros2Link`, a [`robobrain_link::link::RobotLink`]) and the
//!   ROS messages behind the `ros2` feature.

pub mod ros2;

use robobrain_link::link;
#[cfg(feature = "ros2")]
use robobrain_wire::geometry;
use robobrain_wire::world;
