//! A Home Assistant home as a [`DeviceWorld`]: areas become rooms, each
//! controllable entity a device (its id the entity id, its state Home
//! Assistant's: `{"state": "on", "brightness": 128, …}`), with the
//! capabilities of its domain. [`HaBackend`] carries calls out the way Home
//! Assistant's services do — a light turned off loses its `brightness`, 50 %
//! brightness is 128 of 255, a cover set to 30 % is `open` — so the assist
//! datasets' expected states can be checked as they are written.
//!
//! Locks are high risk: `lock` and `unlock` always need confirmation.

use serde_json::{Map, Number, Value, json};

use super::fixture::{HaEntity, HaHome};
use crate::devices::{
    Capability, Device, DeviceBackend, DeviceError, DeviceKind, DeviceWorld, Room,
};
use crate::skills::Risk;

/// The room of entities that have no area.
pub const NO_AREA: &str = "home";

/// The device kind of a Home Assistant domain; `None` for domains the device
/// model has no kind for (`todo`, `calendar`, …), which are left out.
pub fn kind_of(domain: &str) -> Option<DeviceKind> {
    Some(match domain {
        "light" => DeviceKind::Light,
        "switch" | "input_boolean" => DeviceKind::Switch,
        "fan" => DeviceKind::Fan,
        "cover" => DeviceKind::Curtain,
        "lock" => DeviceKind::Lock,
        "valve" => DeviceKind::Valve,
        "vacuum" => DeviceKind::Vacuum,
        "media_player" => DeviceKind::MediaPlayer,
        "climate" => DeviceKind::Climate,
        "sensor" | "binary_sensor" => DeviceKind::Sensor,
        "todo" => DeviceKind::Todo,
        _ => return None,
    })
}

fn capability(name: &str, description: &str, args: Option<(&str, &str)>, risk: Risk) -> Capability {
    let args_schema = match args {
        Some((arg, what)) => json!({
            "type": "object",
            "properties": { arg: { "type": "integer", "minimum": 0, "maximum": 100, "description": what } },
            "required": [arg],
            "additionalProperties": false,
        }),
        None => json!({ "type": "object", "additionalProperties": false }),
    };
    Capability {
        name: name.into(),
        description: description.into(),
        args_schema,
        effects: std::collections::BTreeMap::new(),
        risk,
    }
}

/// The capabilities of an entity of `domain` (Home Assistant's services).
pub fn capabilities(domain: &str) -> Vec<Capability> {
    let low = Risk::LowWrite;
    let pct = |what| Some(("level", what));
    match domain {
        "light" => vec![
            capability("turn_on", "Switch the light on", None, low),
            capability("turn_off", "Switch the light off", None, low),
            capability(
                "set_brightness",
                "Set the brightness",
                pct("brightness percent, 0 to 100"),
                low,
            ),
        ],
        "switch" | "input_boolean" => vec![
            capability("turn_on", "Switch it on", None, low),
            capability("turn_off", "Switch it off", None, low),
        ],
        "fan" => vec![
            capability("turn_on", "Switch the fan on", None, low),
            capability("turn_off", "Switch the fan off", None, low),
            capability(
                "set_speed",
                "Set the fan speed",
                pct("speed percent, 0 to 100"),
                low,
            ),
        ],
        "cover" | "valve" => vec![
            capability("open", "Open it", None, low),
            capability("close", "Close it", None, low),
            capability(
                "set_position",
                "Open it part way",
                Some(("position", "percent open, 0 closed, 100 open")),
                low,
            ),
        ],
        "lock" => vec![
            capability("lock", "Lock it", None, Risk::HighWrite),
            capability("unlock", "Unlock it", None, Risk::HighWrite),
        ],
        "vacuum" => vec![
            capability("start", "Start cleaning", None, low),
            capability("stop", "Stop cleaning", None, low),
            capability("pause", "Pause cleaning", None, low),
            capability("return_to_base", "Go back to the dock", None, low),
        ],
        "media_player" => vec![
            capability("turn_on", "Switch the player on", None, low),
            capability("turn_off", "Switch the player off", None, low),
            capability("play", "Play or resume", None, low),
            capability("pause", "Pause", None, low),
            capability("stop", "Stop playing", None, low),
            capability("next_track", "Skip to the next track", None, low),
            capability("previous_track", "Go back a track", None, low),
            capability(
                "set_volume",
                "Set the volume",
                pct("volume percent, 0 to 100"),
                low,
            ),
            capability("mute", "Mute (volume 0)", None, low),
        ],
        "todo" => vec![Capability {
            name: "add_item".into(),
            description: "Add an item to the list".into(),
            args_schema: json!({
                "type": "object",
                "properties": {"item": {"type": "string", "minLength": 1, "maxLength": 200, "description": "what to add"}},
                "required": ["item"],
                "additionalProperties": false,
            }),
            effects: std::collections::BTreeMap::new(),
            risk: low,
        }],
        _ => Vec::new(),
    }
}

/// An entity's state as the device model keeps it: `state` plus the attributes.
pub fn entity_state(entity: &HaEntity) -> Map<String, Value> {
    let mut state = entity.attributes.clone();
    if let Some(s) = &entity.state {
        state.insert("state".into(), Value::String(s.clone()));
    }
    state
}

/// The device for `entity`, or `None` when its domain has no device kind.
pub fn device_of(home: &HaHome, entity: &HaEntity) -> Option<Device> {
    let kind = kind_of(entity.domain())?;
    let mut aliases = Vec::new();
    if let Some(name) = entity.device.as_deref().and_then(|d| home.device_name(d))
        && !name.eq_ignore_ascii_case(&entity.name)
    {
        aliases.push(name.to_string());
    }
    Some(Device {
        id: entity.id.clone(),
        name: entity.name.clone(),
        aliases,
        room: entity.area_in(home).unwrap_or(NO_AREA).to_string(),
        kind,
        capabilities: capabilities(entity.domain()),
        state: entity_state(entity),
        online: true,
        latency_ms: 0,
        rated_power_w: None,
        caveat: None,
    })
}

/// The rooms (areas, plus [`NO_AREA`]) and devices of `home`; entities of
/// domains without a device kind are returned apart, by id.
pub fn devices_of(home: &HaHome) -> (Vec<Room>, Vec<Device>, Vec<String>) {
    let mut rooms: Vec<Room> = home
        .areas
        .iter()
        .map(|a| Room {
            id: a.id.clone(),
            name: a.name.to_lowercase(),
            aliases: vec![a.name.clone()],
            floor: a.floor.clone(),
        })
        .collect();
    rooms.push(Room {
        id: NO_AREA.into(),
        name: NO_AREA.into(),
        aliases: Vec::new(),
        floor: None,
    });
    let mut devices = Vec::new();
    let mut left_out = Vec::new();
    for e in &home.entities {
        match device_of(home, e) {
            Some(d) => devices.push(d),
            None => left_out.push(e.id.clone()),
        }
    }
    (rooms, devices, left_out)
}

/// `home` as a device world moved by [`HaBackend`].
pub fn world_of(name: &str, home: &HaHome) -> Result<DeviceWorld, DeviceError> {
    let (rooms, devices, _) = devices_of(home);
    let floors = home
        .floors
        .iter()
        .map(|f| crate::devices::Floor {
            id: f.id.clone(),
            name: f.name.clone(),
            aliases: f.aliases.clone(),
        })
        .collect();
    Ok(DeviceWorld::new(name, rooms, devices, Box::new(HaBackend))?.with_floors(floors))
}

/// Carries calls out the way Home Assistant's services change entity states.
#[derive(Debug, Clone, Copy, Default)]
pub struct HaBackend;

impl DeviceBackend for HaBackend {
    fn name(&self) -> &'static str {
        "home_assistant"
    }

    fn apply(
        &mut self,
        device: &Device,
        capability: &Capability,
        args: &Value,
    ) -> Result<Map<String, Value>, DeviceError> {
        let domain = device.id.split_once('.').map_or("", |(d, _)| d);
        service(domain, &capability.name, &device.state, args).map_err(|message| {
            DeviceError::Backend {
                device: device.id.clone(),
                message,
            }
        })
    }
}

fn pct_arg(args: &Value, name: &str) -> Result<i64, String> {
    args.get(name)
        .and_then(Value::as_i64)
        .ok_or_else(|| format!("expected `{name}` as a whole percent"))
}

fn set_state(state: &mut Map<String, Value>, value: &str) {
    state.insert("state".into(), Value::String(value.into()));
}

/// A light's `turn_on` or `set_brightness` (`level`, a percent): on, at
/// its brightness when it can be dimmed.
fn light_on(s: &mut Map<String, Value>, service: &str, args: &Value) -> Result<(), String> {
    set_state(s, "on");
    let dimmable = s
        .get("supported_color_modes")
        .and_then(Value::as_array)
        .is_some_and(|m| m.iter().any(|m| m.as_str() != Some("onoff")));
    if dimmable {
        s.insert("color_mode".into(), json!("brightness"));
        if service == "set_brightness" {
            // Home Assistant: brightness_pct × 255 / 100, rounded.
            let level = pct_arg(args, "level")?;
            s.insert(
                "brightness".into(),
                json!(((level * 255) as f64 / 100.0).round() as i64),
            );
        } else if s.get("brightness").is_none_or(Value::is_null) {
            s.insert("brightness".into(), json!(255));
        }
    } else if service == "set_brightness" {
        return Err("this light cannot be dimmed".into());
    } else {
        s.insert("color_mode".into(), json!("onoff"));
    }
    Ok(())
}

/// A fan's `turn_on`: on, at full speed unless it has a speed already.
fn fan_on(s: &mut Map<String, Value>) {
    set_state(s, "on");
    if s.get("percentage")
        .and_then(Value::as_i64)
        .is_none_or(|p| p == 0)
    {
        s.insert("percentage".into(), json!(100));
    }
}

/// A to-do list's `add_item`: one more item not done.
fn todo_add_item(s: &mut Map<String, Value>) {
    let count = s
        .get("state")
        .and_then(Value::as_str)
        .and_then(|c| c.parse::<u64>().ok())
        .unwrap_or(0);
    set_state(s, &(count + 1).to_string());
}

/// The state after `service` of `domain` with `args` on an entity in `state`.
pub fn service(
    domain: &str,
    service: &str,
    state: &Map<String, Value>,
    args: &Value,
) -> Result<Map<String, Value>, String> {
    let mut s = state.clone();
    match (domain, service) {
        ("light", "turn_on" | "set_brightness") => light_on(&mut s, service, args)?,
        ("light", "turn_off") => {
            set_state(&mut s, "off");
            s.remove("brightness");
            s.remove("color_mode");
        }
        ("switch" | "input_boolean" | "media_player", "turn_on") => set_state(&mut s, "on"),
        ("switch" | "input_boolean" | "media_player", "turn_off") => set_state(&mut s, "off"),
        ("fan", "turn_on") => fan_on(&mut s),
        ("fan", "turn_off") => {
            set_state(&mut s, "off");
            s.insert("percentage".into(), json!(0));
        }
        ("fan", "set_speed") => {
            let level = pct_arg(args, "level")?;
            set_state(&mut s, if level > 0 { "on" } else { "off" });
            s.insert("percentage".into(), json!(level));
        }
        ("cover" | "valve", "open") => {
            set_state(&mut s, "open");
            s.insert("current_position".into(), json!(100));
        }
        ("cover" | "valve", "close") => {
            set_state(&mut s, "closed");
            s.insert("current_position".into(), json!(0));
        }
        ("cover" | "valve", "set_position") => {
            let position = pct_arg(args, "position")?;
            set_state(&mut s, if position > 0 { "open" } else { "closed" });
            s.insert("current_position".into(), json!(position));
        }
        ("lock", "lock") => set_state(&mut s, "locked"),
        ("lock", "unlock") => set_state(&mut s, "unlocked"),
        ("vacuum", "start") => set_state(&mut s, "cleaning"),
        ("vacuum" | "media_player", "stop") => set_state(&mut s, "idle"),
        ("vacuum" | "media_player", "pause") => set_state(&mut s, "paused"),
        ("vacuum", "return_to_base") => set_state(&mut s, "returning"),
        ("media_player", "play") => set_state(&mut s, "playing"),
        ("media_player", "next_track" | "previous_track") => {
            let step = if service == "next_track" { 1 } else { -1 };
            let track = s.get("media_track").and_then(Value::as_i64).unwrap_or(0);
            s.insert("media_track".into(), json!((track + step).max(1)));
        }
        ("media_player", "set_volume") => {
            let level = pct_arg(args, "level")?;
            s.insert("volume_level".into(), Value::Number(volume(level)));
        }
        // The assist datasets expect muting as the volume at 0.0.
        ("media_player", "mute") => {
            s.insert("volume_level".into(), Value::Number(volume(0)));
        }
        // A to-do list's state is the number of items not done.
        ("todo", "add_item") => todo_add_item(&mut s),
        _ => return Err(format!("no service `{service}` for `{domain}` entities")),
    }
    Ok(s)
}

fn volume(level: i64) -> Number {
    Number::from_f64(level as f64 / 100.0).unwrap_or_else(|| Number::from(0))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::devices::Invocation;

    const HOME: &str = "areas:\n  - {name: Kitchen, id: kitchen}\n  - {name: Entry, id: entry}\ndevices:\n  - {name: Kitchen Lamp, id: lamp, area: kitchen}\nentities:\n  - name: Kitchen Light\n    id: light.kitchen\n    device: lamp\n    state: \"off\"\n    attributes: {supported_color_modes: [brightness], color_mode: brightness, brightness: 100}\n  - {name: Front Lock, id: lock.front, area: entry, state: locked}\n  - {name: Tasks, id: todo.tasks}\n";

    fn call(id: &str, device: &str, capability: &str, args: Value) -> Invocation {
        Invocation {
            request_id: id.into(),
            plan_id: "p".into(),
            step_id: "s".into(),
            device: device.into(),
            capability: capability.into(),
            args,
        }
    }

    #[test]
    fn a_home_becomes_a_world_of_devices_in_rooms() {
        let home = HaHome::parse(Path::new("h.yaml"), HOME).unwrap();
        let (rooms, devices, left_out) = devices_of(&home);
        assert_eq!(rooms.len(), 3);
        assert!(left_out.is_empty(), "{left_out:?}");
        let light = &devices[0];
        assert_eq!(light.room, "kitchen");
        assert_eq!(light.kind, DeviceKind::Light);
        assert_eq!(light.aliases, vec!["Kitchen Lamp".to_string()]);
        assert_eq!(light.state["state"], "off");
        let lock = &devices[1];
        assert!(lock.capabilities.iter().all(|c| c.risk == Risk::HighWrite));
        let world = world_of("h", &home).unwrap();
        assert_eq!(world.by_name("kitchen lamp")[0].id, "light.kitchen");
        assert_eq!(world.in_room("Entry")[0].id, "lock.front");
    }

    #[test]
    fn calls_change_state_like_home_assistant() {
        let home = HaHome::parse(Path::new("h.yaml"), HOME).unwrap();
        let mut w = world_of("h", &home).unwrap();
        let on = w
            .invoke(&call(
                "1",
                "light.kitchen",
                "set_brightness",
                json!({"level": 50}),
            ))
            .unwrap();
        assert_eq!(on.after["state"], "on");
        assert_eq!(on.after["brightness"], 128);
        let off = w
            .invoke(&call("2", "light.kitchen", "turn_off", json!({})))
            .unwrap();
        assert_eq!(off.after.get("brightness"), None);
        assert_eq!(off.after.get("color_mode"), None);
        let e = w
            .invoke(&call(
                "3",
                "light.kitchen",
                "set_brightness",
                json!({"level": 150}),
            ))
            .unwrap_err();
        assert_eq!(e.code(), "invalid_args");
        let unlocked = w
            .invoke(&call("4", "lock.front", "unlock", json!({})))
            .unwrap();
        assert_eq!(unlocked.after["state"], "unlocked");
        assert_eq!(
            service(
                "media_player",
                "set_volume",
                &Map::new(),
                &json!({"level": 50})
            )
            .unwrap()["volume_level"],
            json!(0.5)
        );
        assert_eq!(
            service(
                "cover",
                "set_position",
                &Map::new(),
                &json!({"position": 30})
            )
            .unwrap()["state"],
            "open"
        );
        assert_eq!(
            service("vacuum", "fly", &Map::new(), &json!({})).unwrap_err(),
            "no service `fly` for `vacuum` entities"
        );
    }
}
