//! zigbee2mqtt's topic and payload conventions, as pure functions.
//!
//! - `<base>/<device>`: the device's state, a JSON object (retained);
//! - `<base>/<device>/set`: a command, a JSON object of the fields to change;
//! - `<base>/<device>/get`: ask the device to publish the named fields;
//! - `<base>/<device>/availability`: `online` / `offline`, either as plain
//!   text (zigbee2mqtt's legacy form) or as `{"state":"online"}`;
//! - `<base>/bridge/state`: the bridge's own availability, in the same forms;
//! - `<base>/bridge/devices`: the paired devices, a JSON array (retained)
//!   whose entries carry `friendly_name` and `ieee_address`;
//! - `<base>/bridge/…`: everything else the bridge says (ignored here).
//!
//! A friendly name may contain `/` (`living_room/lamp`): the suffix decides.

use serde_json::{Map, Value};
use thiserror::Error;

/// What a payload on a zigbee2mqtt topic could not be read as.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CodecError {
    /// A state or command payload that is not a JSON object.
    #[error("`{topic}`: expected a JSON object, found {found}")]
    NotAnObject {
        /// The topic it came on.
        topic: String,
        /// What it was instead (a short description).
        found: String,
    },
    /// A `bridge/devices` payload that is not a list of devices.
    #[error("`{topic}`: expected a JSON array of devices with `friendly_name`, found {found}")]
    NotADeviceList {
        /// The topic it came on.
        topic: String,
        /// What it was instead.
        found: String,
    },
    /// An availability payload that is neither `online` nor `offline`.
    #[error("`{topic}`: expected `online` or `offline` (or {{\"state\": …}}), found `{found}`")]
    BadAvailability {
        /// The topic it came on.
        topic: String,
        /// The payload, shortened.
        found: String,
    },
}

/// What a topic under the base topic means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topic<'a> {
    /// `<base>/<device>`: the device's state.
    State(&'a str),
    /// `<base>/<device>/set`: a command to the device.
    Set(&'a str),
    /// `<base>/<device>/get`: a read request to the device.
    Get(&'a str),
    /// `<base>/<device>/availability`.
    Availability(&'a str),
    /// `<base>/bridge/state`: the bridge's availability.
    BridgeState,
    /// Any other `<base>/bridge/…` topic.
    Bridge(&'a str),
}

/// Reads `topic` under `base`; `None` when it is not under `base` or names no device.
pub fn parse_topic<'a>(base: &str, topic: &'a str) -> Option<Topic<'a>> {
    let rest = topic.strip_prefix(base)?.strip_prefix('/')?;
    if rest.is_empty() {
        return None;
    }
    if let Some(bridge) = rest.strip_prefix("bridge/") {
        return Some(if bridge == "state" {
            Topic::BridgeState
        } else {
            Topic::Bridge(bridge)
        });
    }
    let named = |suffix: &str| rest.strip_suffix(suffix).filter(|d| !d.is_empty());
    Some(if let Some(device) = named("/set") {
        Topic::Set(device)
    } else if let Some(device) = named("/get") {
        Topic::Get(device)
    } else if let Some(device) = named("/availability") {
        Topic::Availability(device)
    } else {
        Topic::State(rest)
    })
}

/// `<base>/<device>`.
pub fn state_topic(base: &str, device: &str) -> String {
    format!("{base}/{device}")
}

/// `<base>/<device>/set`.
pub fn set_topic(base: &str, device: &str) -> String {
    format!("{base}/{device}/set")
}

/// `<base>/<device>/availability`.
pub fn availability_topic(base: &str, device: &str) -> String {
    format!("{base}/{device}/availability")
}

/// `<base>/bridge/state`.
pub fn bridge_state_topic(base: &str) -> String {
    format!("{base}/bridge/state")
}

/// `<base>/#`: everything the adapter listens to.
pub fn subscription(base: &str) -> String {
    format!("{base}/#")
}

/// Reads a state or command payload: a JSON object.
pub fn parse_object(topic: &str, payload: &[u8]) -> Result<Map<String, Value>, CodecError> {
    match serde_json::from_slice::<Value>(payload) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(CodecError::NotAnObject {
            topic: topic.to_string(),
            found: kind_of(&other).to_string(),
        }),
        Err(e) => Err(CodecError::NotAnObject {
            topic: topic.to_string(),
            found: format!("invalid JSON ({e})"),
        }),
    }
}

/// Reads an availability payload: `online` / `offline`, plain or `{"state": …}`.
pub fn parse_availability(topic: &str, payload: &[u8]) -> Result<bool, CodecError> {
    let text = String::from_utf8_lossy(payload);
    let word = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => map.get("state").and_then(Value::as_str).map(str::to_string),
        Ok(Value::String(s)) => Some(s),
        _ => Some(text.trim().to_string()),
    };
    match word.as_deref().map(str::to_ascii_lowercase).as_deref() {
        Some("online") => Ok(true),
        Some("offline") => Ok(false),
        _ => Err(CodecError::BadAvailability {
            topic: topic.to_string(),
            found: text.chars().take(60).collect(),
        }),
    }
}

/// The JSON availability payload zigbee2mqtt publishes (`{"state":"online"}`).
pub fn availability_payload(online: bool) -> Vec<u8> {
    let word = if online { "online" } else { "offline" };
    serde_json::json!({ "state": word })
        .to_string()
        .into_bytes()
}

/// Whether a reported state confirms a command: every field the command set
/// is reported with the value asked for. Relative commands (`brightness_step`,
/// `state: TOGGLE`) cannot be checked that way and are confirmed by any report.
pub fn confirms(command: &Map<String, Value>, state: &Map<String, Value>) -> bool {
    command.iter().all(|(key, wanted)| {
        if key.ends_with("_step") || key.ends_with("_move") {
            return true;
        }
        if key == "state"
            && wanted
                .as_str()
                .is_some_and(|s| s.eq_ignore_ascii_case("toggle"))
        {
            return true;
        }
        match (state.get(key), wanted) {
            (None, _) => true,
            (Some(Value::String(a)), Value::String(b)) => a.eq_ignore_ascii_case(b),
            (Some(Value::Number(a)), Value::Number(b)) => a.as_f64() == b.as_f64(),
            (Some(a), b) => a == b,
        }
    })
}

/// One device as zigbee2mqtt's bridge lists it (`<base>/bridge/devices`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeDevice {
    /// Its friendly name: the topic after the base.
    pub friendly_name: String,
    /// Its IEEE address (`0x00158d0001a2b3c4`), which a rename does not change.
    pub ieee_address: String,
}

/// Reads `<base>/bridge/devices`: every device but the coordinator.
pub fn parse_bridge_devices(topic: &str, payload: &[u8]) -> Result<Vec<BridgeDevice>, CodecError> {
    let bad = |found: String| CodecError::NotADeviceList {
        topic: topic.to_string(),
        found,
    };
    let list = match serde_json::from_slice::<Value>(payload) {
        Ok(Value::Array(list)) => list,
        Ok(other) => return Err(bad(kind_of(&other).to_string())),
        Err(e) => return Err(bad(format!("invalid JSON ({e})"))),
    };
    let mut devices = Vec::new();
    for entry in &list {
        if entry.get("type").and_then(Value::as_str) == Some("Coordinator") {
            continue;
        }
        let text = |key: &str| entry.get(key).and_then(Value::as_str).map(str::to_string);
        let friendly_name =
            text("friendly_name").ok_or_else(|| bad(format!("an entry without it: {entry}")))?;
        devices.push(BridgeDevice {
            friendly_name,
            ieee_address: text("ieee_address").unwrap_or_default(),
        });
    }
    Ok(devices)
}

/// A friendly name written as a device id: lower case, every run of other
/// characters than letters and digits one `_` (`Living Room/Light` →
/// `living_room_light`).
pub fn id_of(friendly_name: &str) -> String {
    let mut id = String::new();
    for c in friendly_name.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            id.push(c);
        } else if !id.is_empty() && !id.ends_with('_') {
            id.push('_');
        }
    }
    id.trim_end_matches('_').to_string()
}

fn is_ieee_address(name: &str) -> bool {
    name.strip_prefix("0x")
        .is_some_and(|hex| hex.len() == 16 && hex.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Each home device's friendly name: the one `explicit` gives (an IEEE
/// address read as the bridge's current name for it), else with `learn` a
/// bridge device whose name written as an id is the device's id, else the id.
pub fn resolve_names<'a>(
    ids: impl IntoIterator<Item = &'a str>,
    explicit: &std::collections::BTreeMap<String, String>,
    bridge: &[BridgeDevice],
    learn: bool,
) -> std::collections::BTreeMap<String, String> {
    ids.into_iter()
        .map(|id| {
            let name = match explicit.get(id) {
                Some(name) if is_ieee_address(name) => bridge
                    .iter()
                    .find(|d| d.ieee_address.eq_ignore_ascii_case(name))
                    .map_or_else(|| name.clone(), |d| d.friendly_name.clone()),
                Some(name) => name.clone(),
                None if learn => bridge
                    .iter()
                    .find(|d| id_of(&d.friendly_name) == id)
                    .map_or_else(|| id.to_string(), |d| d.friendly_name.clone()),
                None => id.to_string(),
            };
            (id.to_string(), name)
        })
        .collect()
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bridge_devices_give_friendly_names_by_id_or_by_ieee_address() {
        let payload = br#"[
            {"ieee_address": "0x0000000000000000", "type": "Coordinator", "friendly_name": "Coordinator"},
            {"ieee_address": "0x00158d0001a2b3c4", "type": "Router", "friendly_name": "Living Room/Ceiling Light"},
            {"ieee_address": "0x00158d0001a2b3c5", "type": "EndDevice", "friendly_name": "front door lock"}
        ]"#;
        let bridge = parse_bridge_devices("z/bridge/devices", payload).unwrap();
        assert_eq!(bridge.len(), 2);
        assert_eq!(
            id_of("Living Room/Ceiling Light"),
            "living_room_ceiling_light"
        );
        assert_eq!(id_of("  Kitchen -- Kettle! "), "kitchen_kettle");
        let explicit: std::collections::BTreeMap<String, String> = [
            ("entry_lock".to_string(), "0x00158D0001A2B3C5".to_string()),
            ("fan".to_string(), "Study/Fan".to_string()),
        ]
        .into();
        let ids = ["living_room_ceiling_light", "entry_lock", "fan", "kettle"];
        let names = resolve_names(ids, &explicit, &bridge, true);
        assert_eq!(
            names["living_room_ceiling_light"],
            "Living Room/Ceiling Light"
        );
        assert_eq!(names["entry_lock"], "front door lock");
        assert_eq!(names["fan"], "Study/Fan");
        assert_eq!(names["kettle"], "kettle");
        let names = resolve_names(ids, &explicit, &bridge, false);
        assert_eq!(
            names["living_room_ceiling_light"],
            "living_room_ceiling_light"
        );
        assert_eq!(names["entry_lock"], "front door lock");
        let e = parse_bridge_devices("z/bridge/devices", b"{}").unwrap_err();
        assert_eq!(
            e.to_string(),
            "`z/bridge/devices`: expected a JSON array of devices with `friendly_name`, found an object"
        );
    }
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        let Value::Object(map) = v else {
            unreachable!("an object")
        };
        map
    }

    #[test]
    fn topics_follow_zigbee2mqtt() {
        let b = "zigbee2mqtt";
        assert_eq!(
            parse_topic(b, "zigbee2mqtt/lamp"),
            Some(Topic::State("lamp"))
        );
        assert_eq!(
            parse_topic(b, "zigbee2mqtt/lamp/set"),
            Some(Topic::Set("lamp"))
        );
        assert_eq!(
            parse_topic(b, "zigbee2mqtt/lamp/get"),
            Some(Topic::Get("lamp"))
        );
        assert_eq!(
            parse_topic(b, "zigbee2mqtt/living_room/lamp/availability"),
            Some(Topic::Availability("living_room/lamp"))
        );
        assert_eq!(
            parse_topic(b, "zigbee2mqtt/living_room/lamp"),
            Some(Topic::State("living_room/lamp"))
        );
        assert_eq!(
            parse_topic(b, "zigbee2mqtt/bridge/state"),
            Some(Topic::BridgeState)
        );
        assert_eq!(
            parse_topic(b, "zigbee2mqtt/bridge/devices"),
            Some(Topic::Bridge("devices"))
        );
        assert_eq!(parse_topic(b, "zigbee2mqttx/lamp"), None);
        assert_eq!(parse_topic(b, "other/lamp"), None);
        assert_eq!(parse_topic(b, "zigbee2mqtt/"), None);
        assert_eq!(parse_topic(b, "zigbee2mqtt/set"), Some(Topic::State("set")));
        assert_eq!(set_topic(b, "lamp"), "zigbee2mqtt/lamp/set");
        assert_eq!(state_topic(b, "lamp"), "zigbee2mqtt/lamp");
        assert_eq!(
            availability_topic(b, "lamp"),
            "zigbee2mqtt/lamp/availability"
        );
        assert_eq!(bridge_state_topic(b), "zigbee2mqtt/bridge/state");
    }

    #[test]
    fn availability_in_both_forms() {
        for (payload, online) in [
            (&b"online"[..], true),
            (b"offline", false),
            (br#"{"state":"online"}"#, true),
            (br#"{"state":"offline"}"#, false),
            (br#""online""#, true),
        ] {
            assert_eq!(parse_availability("t", payload), Ok(online));
        }
        assert_eq!(
            parse_availability("z/lamp/availability", b"maybe")
                .unwrap_err()
                .to_string(),
            "`z/lamp/availability`: expected `online` or `offline` (or {\"state\": …}), found `maybe`"
        );
        assert_eq!(
            parse_availability("t", &availability_payload(true)),
            Ok(true)
        );
        assert_eq!(
            parse_availability("t", &availability_payload(false)),
            Ok(false)
        );
    }

    #[test]
    fn states_are_json_objects() {
        assert_eq!(
            parse_object("t", br#"{"state":"ON","brightness":120}"#).unwrap(),
            obj(json!({"state": "ON", "brightness": 120}))
        );
        assert_eq!(
            parse_object("z/lamp", b"[1]").unwrap_err().to_string(),
            "`z/lamp`: expected a JSON object, found an array"
        );
        assert!(
            parse_object("z/lamp", b"{oops")
                .unwrap_err()
                .to_string()
                .contains("invalid JSON")
        );
    }

    #[test]
    fn a_report_confirms_what_was_asked() {
        let cmd = obj(json!({"state": "ON", "brightness": 100}));
        assert!(confirms(
            &cmd,
            &obj(json!({"state": "on", "brightness": 100.0, "linkquality": 80}))
        ));
        assert!(!confirms(
            &cmd,
            &obj(json!({"state": "OFF", "brightness": 100}))
        ));
        assert!(!confirms(
            &cmd,
            &obj(json!({"state": "ON", "brightness": 3}))
        ));
        assert!(confirms(
            &obj(json!({"state": "TOGGLE"})),
            &obj(json!({"state": "OFF"}))
        ));
        assert!(confirms(
            &obj(json!({"brightness_step": 20})),
            &obj(json!({"brightness": 40}))
        ));
    }
}
