//! The map as faces draw it: the world's occupancy grid as rows of text
//! (`#` wall, `.` floor), its zones, passages and the dock — compact enough
//! to send to a web page once, on connect, and to embed in a report.

use serde::{Deserialize, Serialize};

use crate::geometry::{Point, Pose, Rect};
use crate::world::World;

/// A zone as drawn.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ZoneView {
    /// Canonical name.
    pub name: String,
    /// Extent, metres.
    pub rect: Rect,
    /// Where a `navigate_to` it ends.
    pub goal: Point,
    /// Entering needs approval.
    pub restricted: bool,
    /// Outside the apartment.
    pub outside: bool,
}

/// A passage as drawn.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassageView {
    /// Name (`hall_door`).
    pub name: String,
    /// Extent, metres.
    pub rect: Rect,
}

/// The map of a world.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MapView {
    /// World name.
    pub name: String,
    /// Metres per cell.
    pub resolution: f64,
    /// Cells across.
    pub width: usize,
    /// Cells down.
    pub height: usize,
    /// One string per row of cells, north first: `#` wall, `.` floor.
    pub rows: Vec<String>,
    /// The zones.
    pub zones: Vec<ZoneView>,
    /// The passages faults can block.
    pub passages: Vec<PassageView>,
    /// Where the robot docks.
    pub dock: Pose,
}

impl MapView {
    /// The map of `world`.
    pub fn of(world: &World) -> Self {
        let rows = (0..world.height)
            .map(|r| {
                (0..world.width)
                    .map(|c| {
                        if world.walls[r * world.width + c] {
                            '#'
                        } else {
                            '.'
                        }
                    })
                    .collect()
            })
            .collect();
        Self {
            name: world.name.clone(),
            resolution: world.resolution,
            width: world.width,
            height: world.height,
            rows,
            zones: world
                .zones
                .iter()
                .map(|z| ZoneView {
                    name: z.name.clone(),
                    rect: z.rect,
                    goal: z.goal,
                    restricted: z.restricted,
                    outside: z.outside,
                })
                .collect(),
            passages: world
                .passages
                .iter()
                .map(|p| PassageView {
                    name: p.name.clone(),
                    rect: p.rect,
                })
                .collect(),
            dock: world.dock_pose,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_apartment_map_has_its_grid_zones_and_walls() {
        let world = World::builtin("apartment").unwrap();
        let map = MapView::of(&world);
        assert_eq!(map.rows.len(), world.height);
        assert!(map.rows.iter().all(|r| r.chars().count() == world.width));
        let walls = map
            .rows
            .iter()
            .flat_map(|r| r.chars())
            .filter(|c| *c == '#')
            .count();
        assert_eq!(walls, world.walls.iter().filter(|w| **w).count());
        assert!(map.zones.iter().any(|z| z.name == "kitchen"));
        let json = serde_json::to_string(&map).unwrap();
        assert!(
            json.len() < 64 * 1024,
            "small enough to send on connect: {}",
            json.len()
        );
    }
}
