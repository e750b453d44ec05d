//! The simulated apartment (DESIGN §7): world files, a grid planner, a
//! differential-drive base with a path follower, a battery, fault injection,
//! and the in-process [`crate::link::RobotLink`] that serves it.

pub mod world;

pub use world::World;
