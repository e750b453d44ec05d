//! A Home Assistant home as a [`DeviceWorld`]: areas become rooms (on the
//! floors the areas name), each controllable entity a device (its id the
//! entity id, its state Home Assistant's: `{"state": "on", "brightness":
//! 128, …}`), with the capabilities of its domain that the entity supports
//! (`supported_features`, as names or Home Assistant's bit mask, and a
//! light's `supported_color_modes`). [`HaBackend`] carries calls out the way
//! Home Assistant's services do — a light turned off loses its
//! `brightness`, 50 % brightness is 128 of 255, a cover set to 30 % is
//! `open`, a colour asked of a lamp that has none is ignored and the lamp
//! just turns on — and never adds an attribute the entity does not carry
//! unless the call sets it, so the assist datasets' expected states can be
//! checked as they are written.
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

/// A capability whose one argument is text (`item`, `color`).
fn text_capability(name: &str, description: &str, arg: &str, what: &str) -> Capability {
    Capability {
        name: name.into(),
        description: description.into(),
        args_schema: json!({
            "type": "object",
            "properties": {arg: {"type": "string", "minLength": 1, "maxLength": 200, "description": what}},
            "required": [arg],
            "additionalProperties": false,
        }),
        effects: std::collections::BTreeMap::new(),
        risk: Risk::LowWrite,
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
            text_capability(
                "set_color",
                "Switch the light on in a colour",
                "color",
                "a colour's name (red, warm white…)",
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
        "todo" => vec![text_capability(
            "add_item",
            "Add an item to the list",
            "item",
            "what to add",
        )],
        _ => Vec::new(),
    }
}

/// The feature a capability needs, by domain: its name in Home Assistant's
/// `…EntityFeature` enum and its bit; `None` when every entity of the
/// domain can do it.
fn feature_of(domain: &str, capability: &str) -> Option<(&'static str, u64)> {
    Some(match (domain, capability) {
        ("cover" | "valve", "open") => ("OPEN", 1),
        ("cover" | "valve", "close") => ("CLOSE", 2),
        ("cover" | "valve", "set_position") => ("SET_POSITION", 4),
        ("fan", "set_speed") => ("SET_SPEED", 1),
        ("vacuum", "pause") => ("PAUSE", 4),
        ("vacuum", "stop") => ("STOP", 8),
        ("vacuum", "return_to_base") => ("RETURN_HOME", 16),
        ("vacuum", "start") => ("START", 8192),
        ("media_player", "pause") => ("PAUSE", 1),
        ("media_player", "set_volume") => ("VOLUME_SET", 4),
        ("media_player", "mute") => ("VOLUME_MUTE", 8),
        ("media_player", "previous_track") => ("PREVIOUS_TRACK", 16),
        ("media_player", "next_track") => ("NEXT_TRACK", 32),
        ("media_player", "turn_on") => ("TURN_ON", 128),
        ("media_player", "turn_off") => ("TURN_OFF", 256),
        ("media_player", "stop") => ("STOP", 4096),
        ("media_player", "play") => ("PLAY", 16384),
        ("todo", "add_item") => ("CREATE_TODO_ITEM", 1),
        _ => return None,
    })
}

/// Whether an entity whose `supported_features` is `features` (names such
/// as `media_player.MediaPlayerEntityFeature.PLAY`, or a bit mask) has the
/// feature `(name, bit)`.
fn supports(features: &Value, (name, bit): (&str, u64)) -> bool {
    match features {
        Value::Number(n) => n.as_u64().is_some_and(|mask| mask & bit != 0),
        Value::Array(names) => names.iter().any(|f| match f {
            Value::String(s) => s.rsplit('.').next() == Some(name),
            Value::Number(n) => n.as_u64() == Some(bit),
            _ => false,
        }),
        Value::String(s) => s
            .split(['|', ','])
            .any(|f| f.trim().rsplit('.').next() == Some(name)),
        _ => true,
    }
}

/// The capabilities `entity` has: its domain's, less those its
/// `supported_features` leaves out (all of them when it does not say).
pub fn capabilities_of(entity: &HaEntity) -> Vec<Capability> {
    let domain = entity.domain();
    let mut all = capabilities(domain);
    if let Some(features) = entity.attributes.get("supported_features") {
        all.retain(|c| feature_of(domain, &c.name).is_none_or(|f| supports(features, f)));
    }
    all
}

/// An entity's state as the device model keeps it: `state` plus the attributes.
/// An entity the fixture gives no state has the one Home Assistant would
/// show: a sensor its `native_value`, a cover or valve `open` or `closed`
/// by its position, a to-do list `0` (no items), anything else `on` (the
/// state upstream's synthetic home sets when none is given).
pub fn entity_state(entity: &HaEntity) -> Map<String, Value> {
    let mut state = entity.attributes.clone();
    let given = entity
        .state
        .clone()
        .unwrap_or_else(|| default_state(entity));
    state.insert("state".into(), Value::String(given));
    state
}

fn default_state(entity: &HaEntity) -> String {
    let a = &entity.attributes;
    let position = ["current_position", "current_valve_position"]
        .iter()
        .find_map(|k| a.get(*k).and_then(Value::as_f64));
    match (entity.domain(), a.get("native_value"), position) {
        ("sensor", Some(Value::String(v)), _) => v.clone(),
        ("sensor", Some(v), _) if !v.is_null() => v.to_string(),
        ("cover" | "valve", _, Some(p)) => if p > 0.0 { "open" } else { "closed" }.into(),
        // A to-do list's state is the number of items not done.
        ("todo", ..) => "0".into(),
        _ => "on".into(),
    }
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
        capabilities: capabilities_of(entity),
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

/// Whether a light reports a colour mode: it lists `supported_color_modes`.
fn has_color_modes(s: &Map<String, Value>) -> bool {
    s.get("supported_color_modes").is_some_and(Value::is_array)
}

/// The light's supported colour modes.
fn color_modes(s: &Map<String, Value>) -> Vec<String> {
    s.get("supported_color_modes")
        .and_then(Value::as_array)
        .map(|m| {
            m.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Home Assistant's colour modes that take a colour.
const COLOR_MODES: [&str; 5] = ["hs", "rgb", "xy", "rgbw", "rgbww"];

/// A few CSS colour names (Home Assistant reads a `color_name` with
/// webcolors' CSS3 table) as RGB.
fn rgb_of(name: &str) -> Option<[u8; 3]> {
    Some(match name.trim().to_lowercase().replace(' ', "").as_str() {
        "red" => [255, 0, 0],
        "green" => [0, 128, 0],
        "lime" => [0, 255, 0],
        "blue" => [0, 0, 255],
        "white" => [255, 255, 255],
        "yellow" => [255, 255, 0],
        "orange" => [255, 165, 0],
        "purple" => [128, 0, 128],
        "pink" => [255, 192, 203],
        "cyan" | "aqua" => [0, 255, 255],
        "magenta" | "fuchsia" => [255, 0, 255],
        "brown" => [165, 42, 42],
        "gold" => [255, 215, 0],
        "violet" => [238, 130, 238],
        "indigo" => [75, 0, 130],
        "turquoise" => [64, 224, 208],
        _ => return None,
    })
}

/// A light's `turn_on`, `set_brightness` (`level`, a percent) or
/// `set_color` (`color`, a name): on, and what the light supports of what
/// was asked — a brightness-only lamp ignores a colour, an on/off lamp a
/// brightness, as Home Assistant's `light.turn_on` drops parameters the
/// light cannot take. Brightness 0 turns it off.
fn light_on(s: &mut Map<String, Value>, service: &str, args: &Value) -> Result<(), String> {
    let modes = color_modes(s);
    let dimmable = modes.iter().any(|m| m != "onoff");
    let colour = modes
        .iter()
        .find(|m| COLOR_MODES.contains(&m.as_str()))
        .cloned();
    if service == "set_brightness" && pct_arg(args, "level")? == 0 {
        light_off(s);
        return Ok(());
    }
    set_state(s, "on");
    match service {
        "set_brightness" if dimmable => {
            // Home Assistant: brightness_pct × 255 / 100, rounded.
            let level = pct_arg(args, "level")?;
            s.insert(
                "brightness".into(),
                json!(((level * 255) as f64 / 100.0).round() as i64),
            );
        }
        "set_color" => {
            let name = args
                .get("color")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let rgb = rgb_of(name).ok_or_else(|| format!("unknown colour `{name}`"))?;
            if let Some(mode) = colour {
                s.insert("rgb_color".into(), json!(rgb));
                s.insert("color_mode".into(), json!(mode));
            }
        }
        _ => {}
    }
    if dimmable && s.get("brightness").is_none_or(Value::is_null) {
        s.insert("brightness".into(), json!(255));
    }
    if has_color_modes(s) && s.get("color_mode").is_none_or(Value::is_null) {
        let mode = if dimmable { "brightness" } else { "onoff" };
        s.insert("color_mode".into(), json!(mode));
    }
    Ok(())
}

/// A light switched off: no brightness and no colour mode (Home Assistant
/// reports them as `null`).
fn light_off(s: &mut Map<String, Value>) {
    set_state(s, "off");
    s.remove("brightness");
    s.remove("color_mode");
}

/// Whether a fan reports a speed: it has `SET_SPEED` (or, when it does not
/// list its features, a `percentage` already).
fn has_speed(s: &Map<String, Value>) -> bool {
    match s.get("supported_features") {
        Some(features) => supports(features, ("SET_SPEED", 1)),
        None => s.contains_key("percentage"),
    }
}

/// A fan's `turn_on`: on, at full speed unless it has a speed already
/// (when it has speeds at all).
fn fan_on(s: &mut Map<String, Value>) {
    set_state(s, "on");
    if has_speed(s)
        && s.get("percentage")
            .and_then(Value::as_i64)
            .is_none_or(|p| p == 0)
    {
        s.insert("percentage".into(), json!(100));
    }
}

/// The attribute a cover's or valve's position is kept in, when it
/// reports one: the one it has, else `current_position` when it can be set
/// part way.
fn position_key(s: &Map<String, Value>) -> Option<&'static str> {
    ["current_position", "current_valve_position"]
        .into_iter()
        .find(|k| s.contains_key(*k))
        .or_else(|| {
            s.get("supported_features")
                .is_some_and(|f| supports(f, ("SET_POSITION", 4)))
                .then_some("current_position")
        })
}

/// A cover or valve moved to `position` percent open.
fn move_to(s: &mut Map<String, Value>, position: i64) {
    set_state(s, if position > 0 { "open" } else { "closed" });
    if let Some(key) = position_key(s) {
        s.insert(key.into(), json!(position));
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
        ("light", "turn_on" | "set_brightness" | "set_color") => light_on(&mut s, service, args)?,
        ("light", "turn_off") => light_off(&mut s),
        ("switch" | "input_boolean" | "media_player", "turn_on") => set_state(&mut s, "on"),
        ("switch" | "input_boolean" | "media_player", "turn_off") => set_state(&mut s, "off"),
        ("fan", "turn_on") => fan_on(&mut s),
        ("fan", "turn_off") => {
            set_state(&mut s, "off");
            if has_speed(&s) {
                s.insert("percentage".into(), json!(0));
            }
        }
        ("fan", "set_speed") => {
            let level = pct_arg(args, "level")?;
            set_state(&mut s, if level > 0 { "on" } else { "off" });
            s.insert("percentage".into(), json!(level));
        }
        ("cover" | "valve", "open") => move_to(&mut s, 100),
        ("cover" | "valve", "close") => move_to(&mut s, 0),
        ("cover" | "valve", "set_position") => move_to(&mut s, pct_arg(args, "position")?),
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

    /// A device has the attributes and features its fixture gives, no more.
    #[test]
    fn devices_carry_exactly_the_fixture_attributes_and_features() {
        let text = "entities:\n  - name: Fan\n    id: fan.f\n    state: \"off\"\n    attributes:\n      supported_features: [fan.FanEntityFeature.OSCILLATE]\n  - name: Lamp\n    id: light.lamp\n    state: \"off\"\n    attributes: {supported_color_modes: [brightness]}\n  - name: Bulb\n    id: light.bulb\n    state: \"off\"\n  - name: Speaker\n    id: media_player.s\n    state: playing\n    attributes:\n      supported_features: [media_player.MediaPlayerEntityFeature.PAUSE]\n  - name: Blind\n    id: cover.b\n    attributes: {supported_features: 3, current_position: 0}\n  - name: Temperature\n    id: sensor.t\n    attributes: {native_value: 19.5}\n";
        let home = HaHome::parse(Path::new("h.yaml"), text).unwrap();
        let mut w = world_of("h", &home).unwrap();
        let fan = w.invoke(&call("1", "fan.f", "turn_on", json!({}))).unwrap();
        assert_eq!(
            fan.after.get("percentage"),
            None,
            "no speed without SET_SPEED"
        );
        assert!(w.get("fan.f").unwrap().capability("set_speed").is_none());
        // A brightness-only lamp ignores a colour, as Home Assistant does.
        let red = w
            .invoke(&call(
                "2",
                "light.lamp",
                "set_color",
                json!({"color": "red"}),
            ))
            .unwrap();
        assert_eq!(red.after["state"], "on");
        assert_eq!(red.after.get("rgb_color"), None);
        assert_eq!(red.after["color_mode"], "brightness");
        // A light that lists no colour modes gains no `color_mode`.
        let bulb = w
            .invoke(&call("3", "light.bulb", "turn_on", json!({})))
            .unwrap();
        assert_eq!(bulb.after.get("color_mode"), None);
        let speaker = w.get("media_player.s").unwrap();
        let caps: Vec<&str> = speaker
            .capabilities
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(caps, ["pause"]);
        let blind = w.get("cover.b").unwrap();
        assert!(
            blind.capability("set_position").is_none(),
            "mask 3: open, close"
        );
        assert_eq!(blind.state["state"], "closed", "no state: by its position");
        assert_eq!(w.get("sensor.t").unwrap().state["state"], "19.5");
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
