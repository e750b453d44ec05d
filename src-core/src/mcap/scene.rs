//! The map as a `foxglove.SceneUpdate` (in the `map` frame, see
//! [`super::views`]): the walls as blocks (each row's run of wall cells
//! one block), the zones as flat tiles with their names, the passages
//! faults can block as amber tiles, the dock as an arrow.

use serde_json::{Value, json};

use super::views::{MAP_FRAME, pose, stamp};
use crate::geometry::{Pose, Rect};
use crate::mapview::MapView;

/// How tall walls are drawn, metres.
const WALL_HEIGHT: f64 = 0.6;
/// How thick floor tiles are, metres.
const TILE: f64 = 0.01;

fn color(r: f64, g: f64, b: f64, a: f64) -> Value {
    json!({"r": r, "g": g, "b": b, "a": a})
}

/// A box of `size` centred on world point `(x, y)` at height `z` (its centre).
fn cube(x: f64, y: f64, z: f64, size: (f64, f64, f64), rgba: &Value) -> Value {
    json!({
        "pose": pose(Pose::new(x, y, 0.0), z),
        "size": {"x": size.0, "y": size.1, "z": size.2},
        "color": rgba,
    })
}

/// A floor tile over `rect`, raised by `lift` so tiles drawn later show on top.
fn tile(rect: Rect, lift: f64, rgba: &Value) -> Value {
    cube(
        f64::midpoint(rect.x0, rect.x1),
        f64::midpoint(rect.y0, rect.y1),
        lift + TILE / 2.0,
        ((rect.x1 - rect.x0).abs(), (rect.y1 - rect.y0).abs(), TILE),
        rgba,
    )
}

fn label(x: f64, y: f64, text: &str) -> Value {
    json!({
        "pose": pose(Pose::new(x, y, 0.0), 0.3),
        "billboard": true,
        "font_size": 14.0,
        "scale_invariant": true,
        "color": color(1.0, 1.0, 1.0, 1.0),
        "text": text,
    })
}

/// One entity of the scene, every primitive list present (Foxglove's schema
/// wants them all).
fn entity(time: f64, id: &str, primitives: &[(&str, Vec<Value>)]) -> Value {
    let mut e = json!({
        "timestamp": stamp(time),
        "frame_id": MAP_FRAME,
        "id": id,
        "lifetime": {"sec": 0, "nsec": 0},
        "frame_locked": true,
        "metadata": [],
        "arrows": [], "cubes": [], "spheres": [], "cylinders": [],
        "lines": [], "triangles": [], "texts": [], "models": [],
    });
    for (kind, list) in primitives {
        e[*kind] = Value::Array(list.clone());
    }
    e
}

/// The walls: each row's consecutive wall cells as one block.
fn walls(map: &MapView) -> Vec<Value> {
    let res = map.resolution;
    let mut blocks = Vec::new();
    for (r, row) in map.rows.iter().enumerate() {
        let cells: Vec<bool> = row.chars().map(|c| c == '#').collect();
        let mut c = 0;
        while c < cells.len() {
            if !cells[c] {
                c += 1;
                continue;
            }
            let start = c;
            while c < cells.len() && cells[c] {
                c += 1;
            }
            let len = (c - start) as f64;
            blocks.push(cube(
                (start as f64 + len / 2.0) * res,
                (r as f64 + 0.5) * res,
                WALL_HEIGHT / 2.0,
                (len * res, res, WALL_HEIGHT),
                &color(0.55, 0.57, 0.6, 1.0),
            ));
        }
    }
    blocks
}

/// `foxglove.SceneUpdate` of `map` at `time`: entities `walls`, `zones`,
/// `passages` and `dock`, kept until replaced.
pub fn scene(map: &MapView, time: f64) -> Value {
    let zone_tiles = map
        .zones
        .iter()
        .map(|z| {
            let rgba = if z.restricted {
                color(0.9, 0.25, 0.2, 0.35)
            } else if z.outside {
                color(0.5, 0.5, 0.5, 0.25)
            } else {
                color(0.2, 0.5, 0.9, 0.2)
            };
            tile(z.rect, 0.0, &rgba)
        })
        .collect();
    let zone_names = map
        .zones
        .iter()
        .map(|z| label(z.goal.x, z.goal.y, &z.name))
        .collect();
    let passages = map
        .passages
        .iter()
        .map(|p| tile(p.rect, TILE, &color(1.0, 0.7, 0.1, 0.6)))
        .collect();
    let dock = json!({
        "pose": pose(map.dock, 0.05),
        "shaft_length": 0.3,
        "shaft_diameter": 0.05,
        "head_length": 0.15,
        "head_diameter": 0.12,
        "color": color(0.2, 0.8, 0.3, 1.0),
    });
    json!({
        "deletions": [],
        "entities": [
            entity(time, "walls", &[("cubes", walls(map))]),
            entity(time, "zones", &[("cubes", zone_tiles), ("texts", zone_names)]),
            entity(time, "passages", &[("cubes", passages)]),
            entity(time, "dock", &[("arrows", vec![dock]), ("texts", vec![label(map.dock.x, map.dock.y, "dock")])]),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::World;

    #[test]
    fn the_apartment_is_a_scene_foxglove_accepts() {
        let map = MapView::of(&World::builtin("apartment").unwrap());
        let scene = scene(&map, 0.0);
        let schema: Value = serde_json::from_str(include_str!(
            "../../../assets/foxglove/schemas/SceneUpdate.json"
        ))
        .unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&scene)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{errors:?}");
        let entities = scene["entities"].as_array().unwrap();
        let ids: Vec<&str> = entities.iter().map(|e| e["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["walls", "zones", "passages", "dock"]);
        // Every wall cell is under exactly one block.
        let walls = entities[0]["cubes"].as_array().unwrap();
        let covered: f64 = walls
            .iter()
            .map(|c| c["size"]["x"].as_f64().unwrap() / map.resolution)
            .sum();
        let cells = map
            .rows
            .iter()
            .flat_map(|r| r.chars())
            .filter(|c| *c == '#')
            .count();
        assert!(
            (covered - cells as f64).abs() < 1e-6,
            "{covered} vs {cells}"
        );
        assert!(walls.len() < cells, "runs are merged");
        let names: Vec<&str> = entities[1]["texts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["text"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"kitchen"), "{names:?}");
        // The north-west wall block sits at y ≤ 0: north is +y in Foxglove.
        assert!(walls[0]["pose"]["position"]["y"].as_f64().unwrap() < 0.0);
    }
}
