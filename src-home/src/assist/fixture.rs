//! A Home Assistant-style home description (`_fixtures.yaml` in the
//! home-assistant-datasets, synthetic-home's inventory format): the home's
//! language, areas (each maybe on a floor), devices, and entities with their
//! state and attributes. Parsed into typed values; a typo, a dangling
//! reference or a malformed entity id is refused at its file:line:col.
//!
//! As synthetic-home reads it: an area's or a device's `id` defaults to its
//! name made a slug (`Living Room` → `living_room`); an area's `floor` is the
//! floor's name (robobrain's own homes may also list `floors:` with ids and
//! aliases, and name one by id); an entity without a `name` takes its
//! device's; a state is any YAML scalar, read as text (`true` is `on`).

use std::collections::BTreeSet;
use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::yaml;
use crate::source::SourceError;

/// One home.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(from = "RawHome")]
pub struct HaHome {
    /// The home's language (`en`, `de`, `zh-CN`), when it says.
    pub language: Option<String>,
    /// Floors: those listed, and those the areas name.
    pub floors: Vec<HaFloor>,
    /// Rooms and outdoor spaces.
    pub areas: Vec<HaArea>,
    /// Physical devices; each holds one or more entities.
    pub devices: Vec<HaDevice>,
    /// What Home Assistant controls and reads: `light.kitchen`, `lock.front_door`…
    pub entities: Vec<HaEntity>,
}

/// A home as written, before ids and floors are filled in.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHome {
    #[serde(default)]
    language: Option<String>,
    #[serde(default)]
    floors: Vec<HaFloor>,
    #[serde(default)]
    areas: Vec<RawArea>,
    #[serde(default)]
    devices: Vec<RawDevice>,
    #[serde(default)]
    entities: Vec<RawEntity>,
}

impl From<RawHome> for HaHome {
    fn from(raw: RawHome) -> Self {
        let mut floors = raw.floors;
        let areas: Vec<HaArea> = raw
            .areas
            .into_iter()
            .map(|a| {
                let floor = a.floor.map(|f| floor_id(&mut floors, &f));
                HaArea {
                    id: a.id.unwrap_or_else(|| slug(&a.name)),
                    name: a.name,
                    floor,
                }
            })
            .collect();
        let devices: Vec<HaDevice> = raw
            .devices
            .into_iter()
            .map(|d| HaDevice {
                id: d.id.unwrap_or_else(|| slug(&d.name)),
                name: d.name,
                area: d.area,
                info: d.info,
            })
            .collect();
        let entities = raw
            .entities
            .into_iter()
            .map(|e| HaEntity::from_raw(e, &devices))
            .collect();
        Self {
            language: raw.language,
            floors,
            areas,
            devices,
            entities,
        }
    }
}

/// The id of the floor an area names (by id or name, any case), adding
/// the floor when no listed one has it.
fn floor_id(floors: &mut Vec<HaFloor>, named: &str) -> String {
    let same = |a: &str| a.eq_ignore_ascii_case(named.trim());
    if let Some(f) = floors
        .iter()
        .find(|f| same(&f.id) || same(&f.name) || f.aliases.iter().any(|a| same(a)))
    {
        return f.id.clone();
    }
    let id = slug(named);
    floors.push(HaFloor {
        name: named.trim().to_string(),
        id: id.clone(),
        aliases: Vec::new(),
    });
    id
}

/// A name as an id, the way synthetic-home makes one (python-slugify with
/// `_`): lower case, runs of anything but letters and digits one `_`.
pub fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_end_matches('_').to_string()
}

/// A floor ("Upstairs").
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HaFloor {
    /// Display name (`First Floor`).
    pub name: String,
    /// Id (`first_floor`).
    pub id: String,
    /// Other names (`upstairs`).
    #[serde(default)]
    pub aliases: Vec<String>,
}

/// An area as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawArea {
    name: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default, deserialize_with = "yaml::state_text")]
    floor: Option<String>,
}

/// An area (a room, the garden).
#[derive(Debug, Clone, PartialEq)]
pub struct HaArea {
    /// Display name (`Living Room`).
    pub name: String,
    /// Id (`living_room`).
    pub id: String,
    /// The id of the floor it is on, when given.
    pub floor: Option<String>,
}

/// A device as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDevice {
    name: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    area: Option<String>,
    #[serde(default)]
    info: Map<String, Value>,
}

/// A physical device.
#[derive(Debug, Clone, PartialEq)]
pub struct HaDevice {
    /// Display name (`Smart Lock`).
    pub name: String,
    /// Id (`smart_lock`).
    pub id: String,
    /// The area it is in.
    pub area: Option<String>,
    /// Model, manufacturer, firmware: shown, never interpreted.
    pub info: Map<String, Value>,
}

/// An entity as written: its state may be a mapping (`{state, attributes}`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntity {
    #[serde(default)]
    name: Option<String>,
    id: String,
    #[serde(default)]
    area: Option<String>,
    #[serde(default)]
    device: Option<String>,
    #[serde(default)]
    state: yaml::StateSpec,
    #[serde(default)]
    attributes: Option<Map<String, Value>>,
}

/// An entity: one controllable or readable thing.
#[derive(Debug, Clone, PartialEq)]
pub struct HaEntity {
    /// Display name (`Kitchen Light`): its own, else its device's, else
    /// its object id's words.
    pub name: String,
    /// `domain.object_id` (`light.kitchen_light`).
    pub id: String,
    /// The area it is in (else its device's).
    pub area: Option<String>,
    /// The device it belongs to.
    pub device: Option<String>,
    /// Its state as text (`on`, `locked`, `90`); `None` when not given.
    pub state: Option<String>,
    /// Attributes (`brightness`, `supported_features`, `current_position`…).
    pub attributes: Map<String, Value>,
}

impl HaEntity {
    fn from_raw(raw: RawEntity, devices: &[HaDevice]) -> Self {
        let mut attributes = raw.attributes.unwrap_or_default();
        attributes.extend(raw.state.attributes);
        let name = raw.name.unwrap_or_else(|| {
            raw.device
                .as_deref()
                .and_then(|d| devices.iter().find(|x| x.id == d))
                .map_or_else(
                    || {
                        let object = raw.id.split_once('.').map_or(raw.id.as_str(), |(_, o)| o);
                        object.replace('_', " ")
                    },
                    |d| d.name.clone(),
                )
        });
        Self {
            name,
            id: raw.id,
            area: raw.area,
            device: raw.device,
            state: raw.state.state,
            attributes,
        }
    }
}

impl HaEntity {
    /// The domain: `light` of `light.kitchen_light`.
    pub fn domain(&self) -> &str {
        self.id.split_once('.').map_or("", |(d, _)| d)
    }

    /// The area: its own, else its device's.
    pub fn area_in<'a>(&'a self, home: &'a HaHome) -> Option<&'a str> {
        self.area.as_deref().or_else(|| {
            let device = self.device.as_deref()?;
            home.devices
                .iter()
                .find(|d| d.id == device)?
                .area
                .as_deref()
        })
    }
}

impl HaHome {
    /// Reads and checks a home file.
    pub fn load(path: &Path) -> Result<Self, SourceError> {
        let text = crate::source::read(path)?;
        Self::parse(path, &text)
    }

    /// Parses and checks a home's text (`file` names it in errors).
    pub fn parse(file: &Path, text: &str) -> Result<Self, SourceError> {
        let home: Self = yaml::parse(file, text)?;
        home.check(file, text)?;
        Ok(home)
    }

    /// An entity by id.
    pub fn entity(&self, id: &str) -> Option<&HaEntity> {
        self.entities.iter().find(|e| e.id == id)
    }

    /// An area's display name by id.
    pub fn area_name(&self, id: &str) -> Option<&str> {
        self.areas
            .iter()
            .find(|a| a.id == id)
            .map(|a| a.name.as_str())
    }

    /// A device's display name by id.
    pub fn device_name(&self, id: &str) -> Option<&str> {
        self.devices
            .iter()
            .find(|d| d.id == id)
            .map(|d| d.name.as_str())
    }

    fn check(&self, file: &Path, text: &str) -> Result<(), SourceError> {
        let at = |offset: Option<usize>, field: &str, message: String| {
            yaml::error_at(file, text, offset, field, message)
        };
        let areas = unique(
            self.areas.iter().map(|a| a.id.as_str()),
            "areas",
            file,
            text,
        )?;
        let devices = unique(
            self.devices.iter().map(|d| d.id.as_str()),
            "devices",
            file,
            text,
        )?;
        unique(
            self.entities.iter().map(|e| e.id.as_str()),
            "entities",
            file,
            text,
        )?;
        for (i, d) in self.devices.iter().enumerate() {
            if let Some(area) = &d.area
                && !areas.contains(area.as_str())
            {
                let item = yaml::find_pair(text, 0, "id", &d.id).map(|o| yaml::item_start(text, o));
                return Err(at(
                    item.and_then(|o| yaml::find_pair(text, o, "area", area)),
                    &format!("devices[{i}].area"),
                    format!("unknown area `{area}` (areas: {})", join(&areas)),
                ));
            }
        }
        for (i, e) in self.entities.iter().enumerate() {
            let id_at = yaml::find_pair(text, 0, "id", &e.id);
            let item = id_at.map(|o| yaml::item_start(text, o));
            let valid_id = e.id.split_once('.').is_some_and(|(d, o)| {
                !d.is_empty()
                    && !o.is_empty()
                    && e.id
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            });
            if !valid_id {
                return Err(at(
                    id_at,
                    &format!("entities[{i}].id"),
                    format!(
                        "expected `domain.object_id` (like `light.kitchen`), found `{}`",
                        e.id
                    ),
                ));
            }
            if let Some(area) = &e.area
                && !areas.contains(area.as_str())
            {
                return Err(at(
                    item.and_then(|o| yaml::find_pair(text, o, "area", area)),
                    &format!("entities[{i}].area"),
                    format!("unknown area `{area}` (areas: {})", join(&areas)),
                ));
            }
            if let Some(device) = &e.device
                && !devices.contains(device.as_str())
            {
                return Err(at(
                    item.and_then(|o| yaml::find_pair(text, o, "device", device)),
                    &format!("entities[{i}].device"),
                    format!("unknown device `{device}` (devices: {})", join(&devices)),
                ));
            }
        }
        Ok(())
    }
}

/// The ids, refusing the second of two equal ones where it is written.
fn unique<'a>(
    ids: impl Iterator<Item = &'a str>,
    list: &str,
    file: &Path,
    text: &str,
) -> Result<BTreeSet<&'a str>, SourceError> {
    let mut seen = BTreeSet::new();
    for (i, id) in ids.enumerate() {
        if !seen.insert(id) {
            let first = yaml::find_pair(text, 0, "id", id);
            let second = first.and_then(|o| yaml::find_pair(text, o + 1, "id", id));
            return Err(yaml::error_at(
                file,
                text,
                second.or(first),
                &format!("{list}[{i}].id"),
                format!("duplicate id `{id}`: every id in `{list}` must be different"),
            ));
        }
    }
    Ok(seen)
}

fn join(ids: &BTreeSet<&str>) -> String {
    ids.iter().copied().collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOME: &str = "---\nareas:\n  - name: Entry\n    id: entry\ndevices:\n  - name: Smart Lock\n    id: smart_lock\n    area: entry\n    info:\n      sw_version: 2.7\nentities:\n  - name: Smart Lock\n    id: lock.smart_lock\n    device: smart_lock\n    state: locked\n  - name: Smart Lock\n    id: binary_sensor.smart_lock\n    area: entry\n    device: smart_lock\n    state: false\n  - name: Battery\n    id: sensor.battery\n    state: \"90\"\n    attributes:\n      native_unit_of_measurement: \"%\"\n";

    fn err(text: &str) -> String {
        HaHome::parse(Path::new("home.yaml"), text)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_home_parses_with_states_as_text() {
        let home = HaHome::parse(Path::new("home.yaml"), HOME).unwrap();
        assert_eq!(home.areas[0].name, "Entry");
        let lock = home.entity("lock.smart_lock").unwrap();
        assert_eq!(lock.domain(), "lock");
        assert_eq!(lock.state.as_deref(), Some("locked"));
        assert_eq!(lock.area_in(&home), Some("entry"));
        assert_eq!(
            home.entity("binary_sensor.smart_lock")
                .unwrap()
                .state
                .as_deref(),
            Some("off")
        );
        assert_eq!(
            home.entity("sensor.battery").unwrap().state.as_deref(),
            Some("90")
        );
        assert_eq!(home.device_name("smart_lock"), Some("Smart Lock"));
    }

    /// synthetic-home's inventory: a `language`, an area's floor as a
    /// field (its name), ids made from names, an entity named by its device.
    #[test]
    fn a_synthetic_home_inventory_reads_as_published() {
        let text = "language: en\nareas:\n  - name: Attic Bedroom\n    floor: Top Floor\n  - name: Den\n    floor: top floor\n  - name: Hall\n    floor: downstairs\ndevices:\n  - name: Desk Lamp\n    area: den\nentities:\n  - id: light.desk_lamp\n    device: desk_lamp\n    state: off\n  - name: Attic Light\n    id: light.attic_light\n    area: attic_bedroom\n    state: on\n    attributes:\n";
        let home = HaHome::parse(Path::new("_fixtures.yaml"), text).unwrap();
        assert_eq!(home.language.as_deref(), Some("en"));
        let ids: Vec<&str> = home.areas.iter().map(|a| a.id.as_str()).collect();
        assert_eq!(ids, ["attic_bedroom", "den", "hall"]);
        let floors: Vec<(&str, &str)> = home
            .floors
            .iter()
            .map(|f| (f.id.as_str(), f.name.as_str()))
            .collect();
        assert_eq!(
            floors,
            [("top_floor", "Top Floor"), ("downstairs", "downstairs")]
        );
        assert_eq!(
            home.areas[1].floor.as_deref(),
            Some("top_floor"),
            "one floor, any case"
        );
        assert_eq!(home.devices[0].id, "desk_lamp");
        let lamp = home.entity("light.desk_lamp").unwrap();
        assert_eq!(lamp.name, "Desk Lamp");
        assert_eq!(lamp.state.as_deref(), Some("off"));
        assert_eq!(
            home.entity("light.attic_light").unwrap().state.as_deref(),
            Some("on")
        );
        // A listed floor is named by id, name or alias.
        let listed = "floors:\n  - {name: Ground Floor, id: ground, aliases: [downstairs]}\nareas:\n  - {name: Hall, floor: Downstairs}\n";
        let home = HaHome::parse(Path::new("h.yaml"), listed).unwrap();
        assert_eq!(home.floors.len(), 1);
        assert_eq!(home.areas[0].floor.as_deref(), Some("ground"));
        assert_eq!(slug("Kids' Room 2"), "kids_room_2");
    }

    #[test]
    fn typos_and_bad_values_are_placed() {
        assert_eq!(
            err(&HOME.replace("    state: locked", "    stat: locked")),
            "home.yaml:15:5: `entities[0]`: unknown field `stat`, expected one of `name`, `id`, `area`, `device`, `state`, `attributes`"
        );
        assert_eq!(
            err(&HOME.replace("    state: locked", "    state: [locked]")),
            "home.yaml:15:5: `entities[0].state`: expected a state (text, number or boolean, or {state, attributes}), found a list"
        );
        assert_eq!(
            err(&HOME.replace("  - name: Battery\n", "  - nme: Battery\n")),
            "home.yaml:21:5: `entities[2]`: unknown field `nme`, expected one of `name`, `id`, `area`, `device`, `state`, `attributes`"
        );
        assert_eq!(
            err("areas: ["),
            "home.yaml:2:1: did not find expected node content"
        );
    }

    #[test]
    fn dangling_references_and_duplicates_are_placed() {
        assert_eq!(
            err(&HOME.replace(
                "    device: smart_lock\n    state: locked",
                "    device: smart_lok\n    state: locked"
            )),
            "home.yaml:14:5: `entities[0].device`: unknown device `smart_lok` (devices: smart_lock)"
        );
        assert_eq!(
            err(&HOME.replace(
                "    area: entry\n    device: smart_lock\n    state: false",
                "    area: hall\n    device: smart_lock\n    state: false"
            )),
            "home.yaml:18:5: `entities[1].area`: unknown area `hall` (areas: entry)"
        );
        assert_eq!(
            err(&HOME.replace("id: sensor.battery", "id: lock.smart_lock")),
            "home.yaml:22:5: `entities[2].id`: duplicate id `lock.smart_lock`: every id in `entities` must be different"
        );
        assert_eq!(
            err(&HOME.replace("id: sensor.battery", "id: battery")),
            "home.yaml:22:5: `entities[2].id`: expected `domain.object_id` (like `light.kitchen`), found `battery`"
        );
    }

    #[test]
    fn every_assist_mini_home_parses() {
        let dir = super::super::dataset::assist_mini_dir();
        let mut homes = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let fixtures = entry.unwrap().path().join("_fixtures.yaml");
            if fixtures.exists() {
                let home = HaHome::load(&fixtures).unwrap();
                assert!(!home.entities.is_empty(), "{}", fixtures.display());
                homes += 1;
            }
        }
        assert_eq!(homes, 10);
    }
}
