//! The simulated robot (DESIGN §7) in a [`World`](crate::world::World): a
//! differential-drive base with a path follower, a battery, fault
//! injection, and the in-process [`crate::link::RobotLink`] that serves it.
//! The map, the world files and the planner are [`crate::world`]'s.
//!
//! - [`base`] and [`battery`]: the body's physics.
//! - [`goal`] and [`simulator`]: goals, recoveries, faults — the [`Sim`].
//! - [`sim_link`]: the [`SimLink`] the kernel talks to.
//! - [`server`]: the [`SimServer`] behind `robobrain sim --listen`, the robot
//!   as its own process for the `TcpLink`.

pub mod base;
pub mod battery;
pub mod goal;
pub mod server;
pub mod sim_link;
pub mod simulator;

pub use server::{SimServer, SimServerError};
pub use sim_link::SimLink;
pub use simulator::Sim;
