//! What an approved op would do, for the approval prompt: the route it
//! would take, how long, and the battery left after. Pure: it plans on the
//! world's grid with the same A* the simulator uses, from where the robot is.

use robobrain_core::geometry::Point;
use robobrain_core::protocol::{Op, Snapshot};
use robobrain_core::world::World;
use robobrain_core::world::grid::Grid;
use serde_json::Value;

/// The expected effect of a navigation op.
#[derive(Debug, Clone, PartialEq)]
pub struct Forecast {
    /// Zones the route passes through, in order.
    pub zones: Vec<String>,
    /// Path length, metres.
    pub distance_m: f64,
    /// Seconds at the base's cruising speed.
    pub eta_s: f64,
    /// Battery percent on arrival.
    pub battery_after: f64,
    /// The planned path, for the map.
    pub path: Vec<Point>,
}

/// Why there is no forecast.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoForecast {
    /// The op does not move the base.
    NotAMove,
    /// The target is not a place in this world.
    UnknownPlace(String),
    /// No path from here (a blocked passage, a wall).
    NoPath(String),
}

/// Share of the top speed the simulator's ETA assumes (as its feedback does).
const CRUISE: f64 = 0.8;

/// Forecasts `op` for the robot as `snap` shows it in `world`.
pub fn forecast(world: &World, snap: &Snapshot, op: &Op) -> Result<Forecast, NoForecast> {
    let Op::Dispatch { skill, args } = op else {
        return Err(NoForecast::NotAMove);
    };
    let target = match skill.as_str() {
        "navigate_to" => target_of(world, args)?,
        "dock" => world.dock_pose.point(),
        _ => return Err(NoForecast::NotAMove),
    };
    let mut grid = Grid::new(world);
    for name in &snap.blocked_passages {
        if let Some(p) = world.passage(name) {
            grid.set_blocked(&world.passage_cells(p), true);
        }
    }
    let path = robobrain_core::world::plan(&grid, snap.robot.pose.point(), target)
        .map_err(|e| NoForecast::NoPath(e.to_string()))?;
    let distance_m = path.length();
    let eta_s = distance_m / (CRUISE * world.base.max_speed).max(1e-3);
    let drain = distance_m * world.battery.drain_per_m + eta_s * world.battery.idle_drain_per_s;
    let mut zones: Vec<String> = Vec::new();
    for p in path.points() {
        if let Some(z) = world.zone_at(*p)
            && zones.last() != Some(&z.name)
        {
            zones.push(z.name.clone());
        }
    }
    Ok(Forecast {
        zones,
        distance_m,
        eta_s,
        battery_after: (snap.robot.battery_pct - drain).max(0.0),
        path: path.points().to_vec(),
    })
}

fn target_of(world: &World, args: &Value) -> Result<Point, NoForecast> {
    if let Some(name) = args.get("zone").and_then(Value::as_str) {
        return world
            .find_zone(name)
            .map(|z| z.goal)
            .ok_or_else(|| NoForecast::UnknownPlace(name.to_string()));
    }
    match (
        args.get("x").and_then(Value::as_f64),
        args.get("y").and_then(Value::as_f64),
    ) {
        (Some(x), Some(y)) => Ok(Point::new(x, y)),
        _ => Err(NoForecast::UnknownPlace(args.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn snap(world: &World) -> Snapshot {
        let mut s = Snapshot::default();
        s.robot.pose = world.start_pose;
        s.robot.battery_pct = 90.0;
        s
    }

    #[test]
    fn a_trip_to_the_kitchen_has_a_route_an_eta_and_a_battery_cost() {
        let world = World::builtin("apartment").unwrap();
        let op = Op::Dispatch {
            skill: "navigate_to".into(),
            args: json!({"zone": "kitchen"}),
        };
        let f = forecast(&world, &snap(&world), &op).unwrap();
        assert_eq!(f.zones.first().map(String::as_str), Some("living_room"));
        assert_eq!(f.zones.last().map(String::as_str), Some("kitchen"));
        assert!(f.distance_m > 2.0 && f.eta_s > 4.0, "{f:?}");
        assert!(f.battery_after < 90.0 && f.battery_after > 80.0, "{f:?}");
    }

    #[test]
    fn a_blocked_passage_changes_the_route_and_unknown_places_are_named() {
        let world = World::builtin("apartment").unwrap();
        let op = Op::Dispatch {
            skill: "navigate_to".into(),
            args: json!({"zone": "kitchen"}),
        };
        let open = forecast(&world, &snap(&world), &op).unwrap();
        let mut s = snap(&world);
        s.blocked_passages = vec!["kitchen_door".into()];
        let detour = forecast(&world, &s, &op).unwrap();
        assert!(detour.distance_m > open.distance_m + 1.0);
        assert!(detour.zones.contains(&"hallway".to_string()), "{detour:?}");
        let moon = Op::Dispatch {
            skill: "navigate_to".into(),
            args: json!({"zone": "moon"}),
        };
        assert_eq!(
            forecast(&world, &s, &moon),
            Err(NoForecast::UnknownPlace("moon".into()))
        );
        assert_eq!(
            forecast(&world, &s, &Op::Wait { seconds: 1.0 }),
            Err(NoForecast::NotAMove)
        );
    }
}
