//! robobrain-link: the brain ↔ robot boundary and the simulated robot.
//!
//! - [`link`]: `RobotLink`, shaped like a ROS 2 action; in process (`SimLink`),
//!   over TCP (`TcpLink`); over ROS 2 / Nav2 in `robobrain-ros2`.
//! - [`sim`]: the simulated robot in a world: base, battery, goals, faults; `SimLink`, `SimServer`.

pub mod link;
pub mod sim;

use robobrain_wire::{geometry, protocol, rng, world};
