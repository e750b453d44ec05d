//! The world file: a 2-D occupancy map with named zones, passages, routes
//! and scripted incidents. The format is documented in `docs/world.md`.

use serde::{Deserialize, Serialize};

use crate::geometry::{Point, Pose, Rect};

/// A named area of the map (a room, the charger, the outside).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Zone {
    /// Canonical name, e.g. `living_room`.
    pub name: String,
    /// Other names people use, in any language (`客厅`, `living room`).
    pub aliases: Vec<String>,
    /// The zone's extent.
    pub rect: Rect,
    /// Where a `navigate_to` this zone ends.
    pub goal: Point,
    /// Entering needs approval (policy `approve_restricted`).
    pub restricted: bool,
    /// Outside the apartment (policy `approve_outside`).
    pub outside: bool,
}

/// A narrow place that faults can block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Passage {
    /// Name, e.g. `hall_door`.
    pub name: String,
    /// The cells it covers.
    pub rect: Rect,
}

/// A scripted incident: at `at` seconds, `kind` appears in `zone`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptedIncident {
    /// Sim seconds from start.
    pub at: f64,
    /// Zone name.
    pub zone: String,
    /// What appears (`smoke`, `person`, …).
    pub kind: String,
}

/// Limits of the differential-drive base.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BaseLimits {
    /// Top forward speed, m/s.
    pub max_speed: f64,
    /// Top turn rate, rad/s.
    pub max_turn_rate: f64,
    /// Forward acceleration limit, m/s².
    pub max_accel: f64,
    /// Turn acceleration limit, rad/s².
    pub max_turn_accel: f64,
}

/// Battery model parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BatteryModel {
    /// Charge at start, percent.
    pub initial_pct: f64,
    /// Drain while powered on, percent per second.
    pub idle_drain_per_s: f64,
    /// Extra drain per metre driven, percent.
    pub drain_per_m: f64,
    /// Charge rate on the dock, percent per second.
    pub charge_per_s: f64,
}

/// A parsed and validated world.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct World {
    /// Name of the world (from the file).
    pub name: String,
    /// Metres per grid cell.
    pub resolution: f64,
    /// Columns.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Row-major occupancy: `true` is a wall.
    pub walls: Vec<bool>,
    /// Named zones, in file order.
    pub zones: Vec<Zone>,
    /// Named passages that can be blocked.
    pub passages: Vec<Passage>,
    /// Named patrol routes: zone names in visiting order.
    pub routes: Vec<(String, Vec<String>)>,
    /// Zone "come back" goes to.
    pub home_zone: String,
    /// Zone holding the dock.
    pub charger_zone: String,
    /// Pose the robot must reach to dock.
    pub dock_pose: Pose,
    /// Pose at start.
    pub start_pose: Pose,
    /// Base limits.
    pub base: BaseLimits,
    /// Battery model.
    pub battery: BatteryModel,
    /// Incidents that happen on their own.
    pub incidents: Vec<ScriptedIncident>,
}

impl World {
    /// The zone called `name` (canonical name only).
    pub fn zone(&self, name: &str) -> Option<&Zone> {
        self.zones.iter().find(|z| z.name == name)
    }

    /// The zone containing `p`, if any (the first in file order).
    pub fn zone_at(&self, p: Point) -> Option<&Zone> {
        self.zones.iter().find(|z| z.rect.contains(p))
    }

    /// The patrol route called `name`.
    pub fn route(&self, name: &str) -> Option<&[String]> {
        self.routes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, zones)| zones.as_slice())
    }

    /// The passage called `name`.
    pub fn passage(&self, name: &str) -> Option<&Passage> {
        self.passages.iter().find(|p| p.name == name)
    }
}
