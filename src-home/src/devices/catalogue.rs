//! Device files: a catalogue of device types (`assets/devices/catalogue.toml`:
//! kind, initial state, capabilities with argument schemas and effects) and
//! a home file (`assets/homes/*.toml`: rooms, and devices of those types
//! placed in them). Format: docs/devices.md. Errors name the file, the line
//! and the field.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value, json};
use toml::Spanned;

use super::{Capability, Device, DeviceKind, Floor, Room};
use crate::skills::Risk;
use crate::source::SourceError;

/// The built-in catalogue of device types.
pub const BUILTIN_CATALOGUE: &str = include_str!("../../../assets/devices/catalogue.toml");
/// The built-in home, paired with the `apartment` world.
pub const BUILTIN_HOME: &str = include_str!("../../../assets/homes/apartment.toml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCatalogue {
    #[serde(default, rename = "type")]
    types: Vec<RawType>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawType {
    name: String,
    kind: DeviceKind,
    #[serde(default)]
    state: Map<String, Value>,
    #[serde(default)]
    rated_power_w: Option<f64>,
    #[serde(default)]
    caveat: Option<String>,
    #[serde(default, rename = "capability")]
    capabilities: Vec<RawCapability>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCapability {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    args: Option<Value>,
    #[serde(default)]
    effects: BTreeMap<String, Value>,
    #[serde(default = "low_write")]
    risk: Risk,
}

fn low_write() -> Risk {
    Risk::LowWrite
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHome {
    name: String,
    #[serde(default, rename = "type")]
    types: Vec<RawType>,
    #[serde(default, rename = "floor")]
    floors: Vec<RawFloor>,
    #[serde(default, rename = "room")]
    rooms: Vec<RawRoom>,
    #[serde(default, rename = "device")]
    devices: Vec<RawDevice>,
    #[serde(default, rename = "scene")]
    scenes: Vec<RawScene>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScene {
    name: String,
    #[serde(default)]
    aliases: Vec<String>,
    #[serde(rename = "call")]
    calls: Vec<RawSceneCall>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSceneCall {
    device: Spanned<String>,
    action: Spanned<String>,
    #[serde(default = "empty_args")]
    args: Value,
}

fn empty_args() -> Value {
    json!({})
}

/// A named set of device calls run together (`sleep`: lights off, curtains
/// closed, door locked).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Scene {
    /// Its name (`sleep`).
    pub name: String,
    /// Words that ask for it (`我要睡觉了`, `good night`).
    pub aliases: Vec<String>,
    /// The calls: `(device id, capability, args)`.
    pub calls: Vec<(String, String, Value)>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoom {
    id: Spanned<String>,
    #[serde(default)]
    name: Option<Spanned<String>>,
    #[serde(default)]
    aliases: Vec<Spanned<String>>,
    #[serde(default)]
    floor: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFloor {
    id: Spanned<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    aliases: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDevice {
    id: Spanned<String>,
    #[serde(rename = "type")]
    type_name: Spanned<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    aliases: Vec<String>,
    room: Spanned<String>,
    #[serde(default)]
    state: Map<String, Value>,
    #[serde(default = "default_online")]
    online: bool,
    #[serde(default = "default_latency")]
    latency_ms: u64,
    #[serde(default)]
    rated_power_w: Option<f64>,
    #[serde(default)]
    caveat: Option<String>,
}

fn default_online() -> bool {
    true
}

fn default_latency() -> u64 {
    50
}

/// A home read from files: its name, rooms and devices.
#[derive(Debug, Clone, PartialEq)]
pub struct Home {
    /// The home's name.
    pub name: String,
    /// Its floors (rooms name theirs).
    pub floors: Vec<Floor>,
    /// Its rooms.
    pub rooms: Vec<Room>,
    /// Its devices.
    pub devices: Vec<Device>,
    /// Its scenes.
    pub scenes: Vec<Scene>,
}

/// The built-in home over the built-in catalogue.
pub fn builtin_home() -> Result<Home, SourceError> {
    parse_home(
        Path::new("<builtin homes/apartment.toml>"),
        BUILTIN_HOME,
        BUILTIN_CATALOGUE,
    )
}

/// A home file from disk, over the built-in catalogue (its own `[[type]]`s
/// add to or replace the catalogue's).
pub fn load_home(path: &Path) -> Result<Home, SourceError> {
    let text = crate::source::read(path)?;
    parse_home(path, &text, BUILTIN_CATALOGUE)
}

/// Parses a home file `text` (named `file` in errors) over a catalogue's text.
pub fn parse_home(file: &Path, text: &str, catalogue: &str) -> Result<Home, SourceError> {
    let cat_file = Path::new("<builtin devices/catalogue.toml>");
    let cat: RawCatalogue =
        toml::from_str(catalogue).map_err(|e| SourceError::from_toml(cat_file, catalogue, &e))?;
    let raw: RawHome = toml::from_str(text).map_err(|e| SourceError::from_toml(file, text, &e))?;
    let mut types: BTreeMap<String, RawType> = BTreeMap::new();
    for t in cat.types.into_iter().chain(raw.types) {
        types.insert(t.name.clone(), t);
    }
    let floors = floors(file, text, raw.floors)?;
    let rooms = rooms(file, text, raw.rooms, &floors)?;
    let devices = devices(file, text, raw.devices, &types, &rooms)?;
    let scenes = scenes(file, text, raw.scenes, &devices)?;
    Ok(Home {
        name: raw.name,
        floors,
        rooms,
        devices,
        scenes,
    })
}

/// The floors, each id used once; a floor without a name is named for its id.
fn floors(file: &Path, text: &str, raw: Vec<RawFloor>) -> Result<Vec<Floor>, SourceError> {
    let mut floors: Vec<Floor> = Vec::new();
    for f in raw {
        if floors.iter().any(|o| &o.id == f.id.get_ref()) {
            return Err(SourceError::at_offset(
                file,
                text,
                f.id.span().start,
                "floor.id",
                format!("floor id `{}` is used twice", f.id.get_ref()),
            ));
        }
        let id = f.id.into_inner();
        floors.push(Floor {
            name: f.name.unwrap_or_else(|| id.replace('_', " ")),
            id,
            aliases: f.aliases,
        });
    }
    Ok(floors)
}

/// The devices, each of a known type (its state over the type's), in a
/// known room, its id used once.
fn devices(
    file: &Path,
    text: &str,
    raw: Vec<RawDevice>,
    types: &BTreeMap<String, RawType>,
    rooms: &[Room],
) -> Result<Vec<Device>, SourceError> {
    let mut devices: Vec<Device> = Vec::new();
    for d in raw {
        let at = |span: std::ops::Range<usize>, field: &str, message: String| {
            SourceError::at_offset(file, text, span.start, field, message)
        };
        let Some(t) = types.get(d.type_name.get_ref()) else {
            let known: Vec<&str> = types.keys().map(String::as_str).collect();
            return Err(at(
                d.type_name.span(),
                "device.type",
                format!(
                    "unknown device type `{}`; expected one of: {}",
                    d.type_name.get_ref(),
                    known.join(", ")
                ),
            ));
        };
        if !rooms.iter().any(|r| &r.id == d.room.get_ref()) {
            let known: Vec<&str> = rooms.iter().map(|r| r.id.as_str()).collect();
            return Err(at(
                d.room.span(),
                "device.room",
                format!(
                    "unknown room `{}`; expected one of: {}",
                    d.room.get_ref(),
                    known.join(", ")
                ),
            ));
        }
        if devices.iter().any(|o| &o.id == d.id.get_ref()) {
            return Err(at(
                d.id.span(),
                "device.id",
                format!("device id `{}` is used twice", d.id.get_ref()),
            ));
        }
        let mut state = t.state.clone();
        state.extend(d.state);
        let id = d.id.into_inner();
        devices.push(Device {
            name: d.name.unwrap_or_else(|| id.replace('_', " ")),
            id,
            aliases: d.aliases,
            room: d.room.into_inner(),
            kind: t.kind,
            capabilities: t.capabilities.iter().map(capability).collect(),
            state,
            online: d.online,
            latency_ms: d.latency_ms,
            rated_power_w: d.rated_power_w.or(t.rated_power_w),
            caveat: d.caveat.or_else(|| t.caveat.clone()),
        });
    }
    Ok(devices)
}

/// The scenes, each call naming a known device and one of its capabilities.
fn scenes(
    file: &Path,
    text: &str,
    raw: Vec<RawScene>,
    devices: &[Device],
) -> Result<Vec<Scene>, SourceError> {
    let mut scenes = Vec::new();
    for sc in raw {
        let mut calls = Vec::new();
        for c in sc.calls {
            let Some(d) = devices.iter().find(|d| &d.id == c.device.get_ref()) else {
                return Err(SourceError::at_offset(
                    file,
                    text,
                    c.device.span().start,
                    "scene.call.device",
                    format!("unknown device `{}`", c.device.get_ref()),
                ));
            };
            if d.capability(c.action.get_ref()).is_none() {
                return Err(SourceError::at_offset(
                    file,
                    text,
                    c.action.span().start,
                    "scene.call.action",
                    format!("`{}` cannot `{}`", d.id, c.action.get_ref()),
                ));
            }
            calls.push((c.device.into_inner(), c.action.into_inner(), c.args));
        }
        scenes.push(Scene {
            name: sc.name,
            aliases: sc.aliases,
            calls,
        });
    }
    Ok(scenes)
}

/// The rooms, each name (id, name, alias; any case) naming one room only:
/// "the kitchen" must not mean two places.
fn rooms(
    file: &Path,
    text: &str,
    raw: Vec<RawRoom>,
    floors: &[Floor],
) -> Result<Vec<Room>, SourceError> {
    // Every name so far: lower-cased name → (room id, line it was given on).
    let mut named: BTreeMap<String, (String, usize)> = BTreeMap::new();
    let mut rooms = Vec::new();
    for r in raw {
        if let Some(f) = &r.floor
            && !floors.iter().any(|o| &o.id == f.get_ref())
        {
            let known: Vec<&str> = floors.iter().map(|f| f.id.as_str()).collect();
            return Err(SourceError::at_offset(
                file,
                text,
                f.span().start,
                "room.floor",
                format!(
                    "unknown floor `{}`; expected one of: {}",
                    f.get_ref(),
                    if known.is_empty() {
                        "(no [[floor]] in this file)".to_string()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        }
        let id = r.id.get_ref().clone();
        let names = std::iter::once((&r.id, "room.id"))
            .chain(r.name.iter().map(|n| (n, "room.name")))
            .chain(r.aliases.iter().map(|a| (a, "room.aliases")));
        for (name, field) in names {
            let line = crate::source::line_col(text, name.span().start).0;
            let key = name.get_ref().to_lowercase();
            match named.get(&key) {
                Some((other, at)) if *other != id => {
                    return Err(SourceError::at_offset(
                        file,
                        text,
                        name.span().start,
                        field,
                        format!(
                            "`{}` already names room `{other}` (line {at}); expected a name no other room has",
                            name.get_ref()
                        ),
                    ));
                }
                Some(_) => {}
                None => {
                    named.insert(key, (id.clone(), line));
                }
            }
        }
        rooms.push(Room {
            name: r
                .name
                .map_or_else(|| id.replace('_', " "), Spanned::into_inner),
            id,
            aliases: r.aliases.into_iter().map(Spanned::into_inner).collect(),
            floor: r.floor.map(Spanned::into_inner),
        });
    }
    Ok(rooms)
}

fn capability(c: &RawCapability) -> Capability {
    Capability {
        name: c.name.clone(),
        description: c.description.clone(),
        args_schema: c.args.clone().unwrap_or_else(
            || json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ),
        effects: c.effects.clone(),
        risk: c.risk,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_alias_for_two_rooms_is_refused_with_its_line() {
        let text = "name = \"h\"\n[[room]]\nid = \"kitchen\"\naliases = [\"厨房\"]\n[[room]]\nid = \"pantry\"\naliases = [\"store\", \"厨房\"]\n";
        let e = parse_home(Path::new("h.toml"), text, BUILTIN_CATALOGUE).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (7, "room.aliases"), "{e}");
        assert_eq!(
            e.to_string(),
            "h.toml:7:21: `room.aliases`: `厨房` already names room `kitchen` (line 4); expected a name no other room has"
        );
        // A room's id is one of its names too, in any case.
        let text = "name = \"h\"\n[[room]]\nid = \"hall\"\n[[room]]\nid = \"entrance\"\naliases = [\"Hall\"]\n";
        let e = parse_home(Path::new("h.toml"), text, BUILTIN_CATALOGUE).unwrap_err();
        assert!(
            e.to_string()
                .contains("`Hall` already names room `hall` (line 3)"),
            "{e}"
        );
        // A room may repeat its own name as an alias.
        let text = "name = \"h\"\n[[room]]\nid = \"hall\"\naliases = [\"HALL\"]\n";
        assert!(parse_home(Path::new("h.toml"), text, BUILTIN_CATALOGUE).is_ok());
    }

    #[test]
    fn an_unknown_type_or_room_is_named_with_its_line() {
        let text = "name = \"h\"\n[[room]]\nid = \"hall\"\n[[device]]\nid = \"x\"\ntype = \"toaster\"\nroom = \"hall\"\n";
        let e = parse_home(Path::new("h.toml"), text, BUILTIN_CATALOGUE).unwrap_err();
        assert_eq!(e.line, 6, "{e}");
        assert!(
            e.to_string().contains("unknown device type `toaster`"),
            "{e}"
        );
        let text = text
            .replace("toaster", "light")
            .replace("room = \"hall\"\n", "room = \"attic\"\n");
        let e = parse_home(Path::new("h.toml"), &text, BUILTIN_CATALOGUE).unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (7, "device.room"), "{e}");
    }

    #[test]
    fn floors_are_read_and_an_unknown_floor_is_named() {
        let text = "name = \"h\"\n[[floor]]\nid = \"up\"\naliases = [\"upstairs\", \"楼上\"]\n[[room]]\nid = \"bedroom\"\nfloor = \"up\"\n";
        let home = parse_home(Path::new("h.toml"), text, BUILTIN_CATALOGUE).unwrap();
        assert_eq!(home.floors[0].aliases, vec!["upstairs", "楼上"]);
        assert_eq!(home.rooms[0].floor.as_deref(), Some("up"));
        let e = parse_home(
            Path::new("h.toml"),
            &text.replace("floor = \"up\"", "floor = \"attic\""),
            BUILTIN_CATALOGUE,
        )
        .unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (7, "room.floor"), "{e}");
        assert!(e.to_string().contains("unknown floor `attic`"), "{e}");
    }

    #[test]
    fn unknown_keys_are_refused() {
        let e = parse_home(
            Path::new("h.toml"),
            "name = \"h\"\ncolour = 1\n",
            BUILTIN_CATALOGUE,
        )
        .unwrap_err();
        assert_eq!(e.line, 2, "{e}");
    }
}
