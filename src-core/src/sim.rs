//! The simulated apartment (DESIGN §7): world files, a grid planner, a
//! differential-drive base with a path follower, a battery, fault injection,
//! and the in-process [`crate::link::RobotLink`] that serves it.
//!
//! - [`world`] and [`world_file`]: the validated world and how it is read.
//! - [`grid`] and [`planner`]: occupancy with blockages, A* with pruning.
//! - [`base`] and [`battery`]: the body's physics.
//! - [`goal`] and [`simulator`]: goals, recoveries, faults — the [`Sim`].
//! - [`sim_link`]: the [`SimLink`] the kernel talks to.
//! - [`server`]: the [`SimServer`] behind `robobrain sim --listen`, the robot
//!   as its own process for the `TcpLink`.

pub mod base;
pub mod battery;
pub mod goal;
pub mod grid;
pub mod planner;
pub mod server;
pub mod sim_link;
pub mod simulator;
pub mod world;
pub mod world_file;

pub use planner::{Path, PlanError, plan};
pub use server::{SimServer, SimServerError};
pub use sim_link::SimLink;
pub use simulator::Sim;
pub use world::World;

use std::path::{Path as FsPath, PathBuf};

use thiserror::Error;

use crate::source::SourceError;

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
