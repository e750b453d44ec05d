//! The channels of a recording and their schemas: one channel per kind of
//! event (`/events/<kind>`, the event's wire JSON), and the Foxglove views
//! of them. Foxglove's own schemas are the published JSON Schemas
//! (`assets/foxglove/schemas/`, MIT, from `@foxglove/schemas`); robobrain's
//! are built from `assets/foxglove/schemas/robobrain.json`.

use serde_json::{Map, Value, json};

/// The encoding of every message and of every schema.
pub const JSON: &str = "json";
/// The schema encoding of JSON Schema.
pub const JSON_SCHEMA: &str = "jsonschema";

/// robobrain's schemas: the envelope, each kind's fields, the views.
const ROBOBRAIN: &str = include_str!("../../../assets/foxglove/schemas/robobrain.json");
/// `foxglove.PoseInFrame`.
const POSE_IN_FRAME: &str = include_str!("../../../assets/foxglove/schemas/PoseInFrame.json");
/// `foxglove.SceneUpdate`.
const SCENE_UPDATE: &str = include_str!("../../../assets/foxglove/schemas/SceneUpdate.json");
/// `foxglove.CompressedImage`.
const COMPRESSED_IMAGE: &str =
    include_str!("../../../assets/foxglove/schemas/CompressedImage.json");
/// `foxglove.Log`.
const LOG: &str = include_str!("../../../assets/foxglove/schemas/Log.json");

/// The robot's pose in the map frame, from each telemetry event.
pub const POSE_TOPIC: &str = "/robot/pose";
/// The battery, from each telemetry event.
pub const BATTERY_TOPIC: &str = "/robot/battery";
/// Log lines, errors and decisions, for Foxglove's Log panel.
pub const LOG_TOPIC: &str = "/log";
/// The map (walls, zones, passages, dock), once, at the first event.
pub const MAP_TOPIC: &str = "/map";
/// The frames the robot kept as evidence of an alert.
pub const CAMERA_TOPIC: &str = "/camera/evidence";
/// The prefix of the event channels: `/events/<kind>`.
pub const EVENTS_PREFIX: &str = "/events/";

/// A view of the events on a channel of its own, with a Foxglove schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// [`POSE_TOPIC`]: `foxglove.PoseInFrame`.
    Pose,
    /// [`BATTERY_TOPIC`]: `robobrain.Battery`.
    Battery,
    /// [`LOG_TOPIC`]: `foxglove.Log`.
    Log,
    /// [`MAP_TOPIC`]: `foxglove.SceneUpdate`.
    Map,
    /// [`CAMERA_TOPIC`]: `foxglove.CompressedImage`.
    Camera,
}

impl View {
    /// Every view, in the order their channels are added.
    pub const ALL: [View; 5] = [
        View::Pose,
        View::Battery,
        View::Log,
        View::Map,
        View::Camera,
    ];

    /// Its topic.
    pub fn topic(self) -> &'static str {
        match self {
            View::Pose => POSE_TOPIC,
            View::Battery => BATTERY_TOPIC,
            View::Log => LOG_TOPIC,
            View::Map => MAP_TOPIC,
            View::Camera => CAMERA_TOPIC,
        }
    }

    /// Its schema: name and JSON Schema text.
    pub fn schema(self) -> (String, String) {
        let text = match self {
            View::Pose => POSE_IN_FRAME.to_string(),
            View::Battery => robobrain()["views"]["battery"].to_string(),
            View::Log => LOG.to_string(),
            View::Map => SCENE_UPDATE.to_string(),
            View::Camera => COMPRESSED_IMAGE.to_string(),
        };
        let name = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v["title"].as_str().map(str::to_string))
            .unwrap_or_default();
        (name, text)
    }
}

/// robobrain.json, parsed. It ships in the binary and a test reads it, so
/// it parses.
fn robobrain() -> Value {
    serde_json::from_str(ROBOBRAIN).unwrap_or(Value::Null)
}

/// One event channel: its kind, topic, schema name and JSON Schema text.
#[derive(Debug, Clone, PartialEq)]
pub struct EventChannel {
    /// The event kind (`decision`).
    pub kind: String,
    /// `/events/<kind>`.
    pub topic: String,
    /// The schema's name (`robobrain.Decision`).
    pub schema_name: String,
    /// The whole JSON Schema: the envelope, `kind`, the kind's fields.
    pub schema: String,
}

/// The channel of every kind of event, in the schema file's order (by kind).
pub fn event_channels() -> Vec<EventChannel> {
    let file = robobrain();
    let envelope = file["envelope"].as_object().cloned().unwrap_or_default();
    let Some(kinds) = file["events"].as_object() else {
        return Vec::new();
    };
    kinds
        .iter()
        .map(|(kind, fields)| {
            let mut properties: Map<String, Value> = envelope.clone();
            properties.insert(
                "kind".into(),
                json!({"type": "string", "const": kind, "description": "The kind of event"}),
            );
            if let Some(own) = fields["properties"].as_object() {
                properties.extend(own.clone());
            }
            let mut required: Vec<Value> = envelope.keys().map(|k| json!(k)).collect();
            required.push(json!("kind"));
            if let Some(own) = fields["required"].as_array() {
                required.extend(own.iter().cloned());
            }
            let name = fields["title"].as_str().unwrap_or_default().to_string();
            let schema = json!({
                "title": name,
                "description": fields["description"],
                "type": "object",
                "properties": properties,
                "required": required,
            });
            EventChannel {
                kind: kind.clone(),
                topic: format!("{EVENTS_PREFIX}{kind}"),
                schema_name: name,
                schema: schema.to_string(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Foxglove's JSON Schema reader (`parseJsonSchema` in its MCAP
    /// support) takes for each field: one type of these, or a `oneOf` of
    /// numeric constants; objects with their properties; arrays of one of
    /// these but not of arrays; strings plain or base64.
    fn foxglove_reads(schema: &Value, path: &str) {
        let Some(ty) = schema["type"].as_str() else {
            assert!(
                schema["oneOf"]
                    .as_array()
                    .is_some_and(|o| o.iter().all(|c| c["const"].is_number())),
                "{path}: Foxglove needs one type: {schema}"
            );
            return;
        };
        match ty {
            "object" => {
                let props = schema["properties"]
                    .as_object()
                    .unwrap_or_else(|| panic!("{path}: an object needs its properties"));
                for (name, field) in props {
                    foxglove_reads(field, &format!("{path}.{name}"));
                }
            }
            "array" => {
                let items = &schema["items"];
                assert_ne!(items["type"], "array", "{path}: no arrays of arrays");
                assert!(items.get("oneOf").is_none(), "{path}: no arrays of enums");
                foxglove_reads(items, &format!("{path}[]"));
            }
            "string" => assert!(
                schema.get("contentEncoding").is_none() || schema["contentEncoding"] == "base64",
                "{path}: strings are plain or base64"
            ),
            "number" | "integer" | "boolean" => {}
            other => panic!("{path}: Foxglove does not read type {other:?}"),
        }
    }

    #[test]
    fn every_channel_schema_is_json_schema_foxglove_reads() {
        let channels = event_channels();
        assert_eq!(channels.len(), 22, "one channel per kind of event");
        for c in &channels {
            let schema: Value = serde_json::from_str(&c.schema).unwrap();
            assert!(
                jsonschema::validator_for(&schema).is_ok(),
                "{}: {schema}",
                c.topic
            );
            assert!(c.schema_name.starts_with("robobrain."), "{}", c.topic);
            foxglove_reads(&schema, &c.topic);
        }
        for view in View::ALL {
            let (name, text) = view.schema();
            let schema: Value = serde_json::from_str(&text).unwrap();
            assert!(jsonschema::validator_for(&schema).is_ok(), "{name}");
            assert!(
                name.starts_with("foxglove.") || name.starts_with("robobrain."),
                "{name}"
            );
            foxglove_reads(&schema, view.topic());
        }
    }
}
