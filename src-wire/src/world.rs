//! The world the robot lives in (DESIGN §7): a 2-D occupancy map with named
//! zones, passages, routes and scripted incidents, read from a world file
//! (`docs/world.md`), and what is computed over it — the occupancy grid with
//! blockages and the A* planner. The simulator ([`crate::sim`]) moves a body
//! through it; faces draw it; the kernel, skills and policy look names up in
//! it. Nothing here knows about the simulator.
//!
//! - this file: the validated [`World`], and where worlds come from (built
//!   in, or a file).
//! - [`file`]: reading world files, with file:line:col errors.
//! - [`grid`] and [`planner`]: occupancy with blockages, A* with pruning.

pub mod file;
pub mod grid;
pub mod planner;

pub use planner::{Path, PlanError, plan};

use std::path::{Path as FsPath, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::geometry::{Point, Pose, Rect};
use crate::source::SourceError;

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

/// Limits of the differential-drive base (defaults: the apartment's robot).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
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

/// Battery model parameters (defaults: the apartment's robot).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
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

impl Default for BaseLimits {
    fn default() -> Self {
        Self {
            max_speed: 0.6,
            max_turn_rate: 1.5,
            max_accel: 0.5,
            max_turn_accel: 3.0,
        }
    }
}

impl Default for BatteryModel {
    fn default() -> Self {
        Self {
            initial_pct: 90.0,
            idle_drain_per_s: 0.02,
            drain_per_m: 0.4,
            charge_per_s: 1.0,
        }
    }
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
    /// The real robot's map frame the coordinates are in (`frame = "map"`;
    /// ROS 2 goals are sent in it: docs/ros2.md). `None`: `map`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame: Option<String>,
}

impl World {
    /// The zone called `name` (canonical name only).
    pub fn zone(&self, name: &str) -> Option<&Zone> {
        self.zones.iter().find(|z| z.name == name)
    }

    /// Every zone's canonical name, comma-separated (for messages).
    pub fn zone_list(&self) -> String {
        self.zones
            .iter()
            .map(|z| z.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
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

    /// The zone a person means by `name`: its canonical name or any alias,
    /// ignoring case, surrounding space, and `_`/`-` versus space
    /// (`Living Room`, `living-room`, `客厅` all find `living_room`).
    pub fn find_zone(&self, name: &str) -> Option<&Zone> {
        let wanted = normalize_name(name);
        self.zones.iter().find(|z| {
            normalize_name(&z.name) == wanted
                || z.aliases.iter().any(|a| normalize_name(a) == wanted)
        })
    }

    /// Width of the map in metres.
    pub fn width_m(&self) -> f64 {
        self.width as f64 * self.resolution
    }

    /// Height of the map in metres.
    pub fn height_m(&self) -> f64 {
        self.height as f64 * self.resolution
    }

    /// The cell `(column, row)` holding `p`, or `None` off the map.
    pub fn cell_of(&self, p: Point) -> Option<(usize, usize)> {
        cell_of(self.resolution, self.width, self.height, p)
    }

    /// Whether `p` is on the map and not inside a wall.
    pub fn is_free(&self, p: Point) -> bool {
        self.cell_of(p)
            .is_some_and(|(c, r)| !self.walls[r * self.width + c])
    }

    /// Row-major indices of the cells a passage covers: those whose centre
    /// lies inside its rectangle.
    pub fn passage_cells(&self, passage: &Passage) -> Vec<usize> {
        cells_in_rect(self.resolution, self.width, self.height, passage.rect)
    }
}

/// The cell `(column, row)` holding `p` on a `width` × `height` grid of
/// `resolution`-metre cells, or `None` off the grid (or for a NaN).
pub fn cell_of(resolution: f64, width: usize, height: usize, p: Point) -> Option<(usize, usize)> {
    let c = (p.x / resolution).floor();
    let r = (p.y / resolution).floor();
    if c >= 0.0 && r >= 0.0 && c < width as f64 && r < height as f64 {
        Some((c as usize, r as usize))
    } else {
        None
    }
}

/// Row-major indices of the cells whose centre lies inside `rect`.
pub fn cells_in_rect(resolution: f64, width: usize, height: usize, rect: Rect) -> Vec<usize> {
    let mut cells = Vec::new();
    for r in 0..height {
        let y = (r as f64 + 0.5) * resolution;
        if y < rect.y0 || y > rect.y1 {
            continue;
        }
        for c in 0..width {
            let x = (c as f64 + 0.5) * resolution;
            if x >= rect.x0 && x <= rect.x1 {
                cells.push(r * width + c);
            }
        }
    }
    cells
}

/// A name folded for matching: trimmed, lower-case, with `_` and `-` read
/// as spaces and runs of spaces collapsed.
pub fn normalize_name(name: &str) -> String {
    name.split(|ch: char| ch.is_whitespace() || ch == '_' || ch == '-')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The worlds built into the binary: name and file text.
const BUILTIN: &[(&str, &str)] = &[(
    "apartment",
    include_str!("../../assets/worlds/apartment.toml"),
)];

/// Why a world file could not be loaded.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum WorldError {
    /// The file could not be read.
    #[error("cannot read world file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The IO error.
        source: std::io::Error,
    },
    /// The file is malformed or inconsistent.
    #[error("{0}")]
    Invalid(#[from] SourceError),
}

impl World {
    /// Names of the built-in worlds.
    pub fn builtin_names() -> impl Iterator<Item = &'static str> {
        BUILTIN.iter().map(|(name, _)| *name)
    }

    /// The built-in world called `name` (`apartment`).
    pub fn builtin(name: &str) -> Option<World> {
        let (_, text) = BUILTIN.iter().find(|(n, _)| *n == name)?;
        let label = format!("<builtin {name}>");
        World::from_toml_str(text, FsPath::new(&label)).ok()
    }

    /// Reads, parses and validates a world file.
    pub fn load(path: &FsPath) -> Result<World, WorldError> {
        let text = std::fs::read_to_string(path).map_err(|source| WorldError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(World::from_toml_str(&text, path)?)
    }

    /// The built-in world called `name_or_path`, or else the world file at
    /// that path.
    pub fn resolve(name_or_path: &str) -> Result<World, SourceError> {
        if let Some(world) = World::builtin(name_or_path) {
            return Ok(world);
        }
        let path = FsPath::new(name_or_path);
        World::load(path).map_err(|e| match e {
            WorldError::Invalid(e) => e,
            WorldError::Read { source, .. } => {
                let names: Vec<&str> = World::builtin_names().collect();
                SourceError {
                    file: path.to_path_buf(),
                    line: 0,
                    col: 0,
                    field: String::new(),
                    message: format!(
                        "cannot read world file: {source} (and it is not a built-in world: {})",
                        names.join(", ")
                    ),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_apartment_parses_with_its_zones_and_passages() {
        let w = World::builtin("apartment").unwrap();
        assert_eq!(w.name, "apartment");
        for zone in [
            "kitchen",
            "living_room",
            "bedroom",
            "hallway",
            "entrance",
            "charger",
            "study",
            "outside",
        ] {
            assert!(w.zone(zone).is_some(), "{zone}");
        }
        for (alias, zone) in [
            ("厨房", "kitchen"),
            ("客厅", "living_room"),
            ("living room", "living_room"),
            ("卧室", "bedroom"),
            ("走廊", "hallway"),
            ("门口", "entrance"),
            ("玄关", "entrance"),
            ("front door", "entrance"),
            ("充电桩", "charger"),
            ("充电座", "charger"),
            ("dock", "charger"),
            ("书房", "study"),
            ("门外", "outside"),
            ("外面", "outside"),
        ] {
            assert_eq!(
                w.find_zone(alias).map(|z| z.name.as_str()),
                Some(zone),
                "{alias}"
            );
        }
        assert!(w.zone("study").unwrap().restricted);
        assert!(w.zone("outside").unwrap().outside);
        let route = w.route("default").unwrap();
        assert!(!route.iter().any(|z| z == "study" || z == "outside"));
        assert_eq!(w.home_zone, "living_room");
        assert!(
            w.zone("charger")
                .unwrap()
                .rect
                .contains(w.dock_pose.point())
        );
        for p in ["kitchen_door", "hall_door", "front_door"] {
            assert!(w.passage(p).is_some(), "{p}");
        }
        let (wm, hm) = (w.width_m(), w.height_m());
        assert!((14.0..=17.0).contains(&wm) && (8.0..=10.0).contains(&hm));
    }

    #[test]
    fn resolve_takes_a_builtin_name_or_a_path() {
        assert_eq!(World::resolve("apartment").unwrap().name, "apartment");
        let e = World::resolve("no/such/world.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("no/such/world.toml: cannot read world file: "),
            "{e}"
        );
        assert!(
            e.ends_with("(and it is not a built-in world: apartment)"),
            "{e}"
        );
        let dir = std::env::temp_dir().join(format!("robobrain-world-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("bad.toml");
        std::fs::write(&file, "name = \"x\"\nresolution = -1\n").unwrap();
        let e = World::resolve(file.to_str().unwrap()).unwrap_err();
        assert_eq!(e.field, "map", "{e}");
        assert!(e.to_string().ends_with("missing field `map`"), "{e}");
        std::fs::write(
            &file,
            BUILTIN[0].1.replace("resolution = 0.25", "resolution = 0"),
        )
        .unwrap();
        let e = World::resolve(file.to_str().unwrap()).unwrap_err();
        assert_eq!(e.field, "resolution");
        assert!(e.line > 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
