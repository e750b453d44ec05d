//! What the robot sees (seed 000 §3.2, `watch`): a camera gives a [`Frame`]
//! (a PNG and, from the simulator, the ground-truth labels of what is in
//! it), and a [`vision`] step turns a frame into a [`VisionResult`] — the
//! seed's `objects_detected`, `emergency`, `confidence`, `description`.
//!
//! - `camera.rs`: the [`Camera`] trait and [`SimCamera`], which renders the
//!   simulated apartment around the robot, incidents drawn.
//! - `vision.rs`: the offline stand-in (reports the labels and says so) and
//!   the validation of a vision model's JSON reply.
//! - `model.rs`: asking a vision model, off the kernel's thread.
//! - `v4l_camera.rs` (feature `camera`): a real camera through Video4Linux.

pub mod camera;
pub mod model;
#[cfg(feature = "camera")]
pub mod v4l_camera;
pub mod vision;

pub use camera::{Camera, CameraError, Frame, SimCamera};
pub use vision::{VisionError, VisionResult, VisionSource};
