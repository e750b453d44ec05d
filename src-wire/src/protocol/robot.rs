//! What the robot accepts and reports, as the faces see it too: simulator
//! faults, the incidents in view, navigation progress. The robot link
//! ([`crate::link`]) carries the same values; they live here, at the bottom,
//! so the face wire depends on nothing above it.

use serde::{Deserialize, Serialize};

/// A fault or world change injected into a simulated robot.
///
/// Real robots refuse these ([`LinkError::Unsupported`]).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "fault", rename_all = "snake_case")]
pub enum Fault {
    /// Close a named passage (an obstacle appears in it).
    Block {
        /// Passage name from the world file.
        passage: String,
    },
    /// Reopen a named passage.
    Unblock {
        /// Passage name from the world file.
        passage: String,
    },
    /// Set the battery's state of charge.
    SetBattery {
        /// Percent, 0–100.
        pct: f64,
    },
    /// Make the base stop responding to motion commands (wheels stuck).
    Stall,
    /// Undo [`Fault::Stall`].
    Unstall,
    /// Start an incident (smoke, fire, person, …) in a zone.
    Incident {
        /// Zone name.
        zone: String,
        /// What is there, e.g. `smoke`.
        kind: String,
    },
    /// End every incident in a zone.
    ClearIncident {
        /// Zone name.
        zone: String,
    },
    /// Make the camera fail (frames cannot be captured) for this reason.
    CameraFail {
        /// What is wrong, e.g. `lens covered`.
        #[serde(default = "default_camera_fault")]
        reason: String,
    },
    /// Undo [`Fault::CameraFail`].
    CameraRestore,
    /// Take a smart-home device offline (applied by the brain's device
    /// world, not the robot).
    DeviceOffline {
        /// The device's id.
        device: String,
    },
    /// Bring a device back online.
    DeviceOnline {
        /// The device's id.
        device: String,
    },
}

fn default_camera_fault() -> String {
    "no frames from the camera".into()
}

/// Progress of a running navigation or dock goal (Nav2's feedback fields).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NavFeedback {
    /// Path length still to go, metres.
    pub distance_remaining: f64,
    /// Seconds to arrival at the current average speed.
    pub estimated_time_remaining: f64,
    /// Seconds since the goal started.
    pub navigation_time: f64,
    /// Local recoveries performed so far (waits for an obstruction to clear).
    pub number_of_recoveries: u32,
}

/// An incident the robot can currently perceive.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Incident {
    /// Zone it is in.
    pub zone: String,
    /// What it is (`smoke`, `fire`, `person`, …).
    pub kind: String,
}
