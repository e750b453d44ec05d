//! VDA 5050 v2.1 messages (`tests/data/vda5050/`): the ones a robot
//! sends (`connection`, `state`, `visualization`, `factsheet`) and the ones
//! it accepts (`order`, `instantActions`), as serde types in the standard's
//! camelCase JSON. Only plain data here; what they mean for a run is
//! [`super::bridge`]'s.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The protocol version robobrain speaks.
pub const VERSION: &str = "2.1.0";

/// The header every message carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    /// Per topic and sender, counting up from 0.
    pub header_id: u64,
    /// ISO 8601 UTC (`2026-11-27T08:00:00.000Z`).
    pub timestamp: String,
    /// Protocol version (`2.1.0`).
    pub version: String,
    /// The robot's manufacturer.
    pub manufacturer: String,
    /// The robot's serial number.
    pub serial_number: String,
}

/// A wall time (milliseconds since the epoch) as VDA 5050's ISO 8601 UTC.
pub fn timestamp(wall_ms: u64) -> String {
    i64::try_from(wall_ms)
        .ok()
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        .map_or_else(|| "1970-01-01T00:00:00.000Z".into(), |t| format!("{t:.3}"))
}

/// `connection.connectionState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum ConnectionState {
    /// Connected.
    Online,
    /// Disconnected on purpose.
    Offline,
    /// The broker lost the robot (the last will).
    ConnectionBroken,
}

/// The `connection` message (retained).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Connection {
    /// The header.
    #[serde(flatten)]
    pub header: Header,
    /// The state.
    pub connection_state: ConnectionState,
}

/// A node's or a robot's position on a map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodePosition {
    /// Metres.
    pub x: f64,
    /// Metres.
    pub y: f64,
    /// Radians, optional.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theta: Option<f64>,
    /// How close counts as arrived, metres.
    #[serde(
        default,
        rename = "allowedDeviationXY",
        skip_serializing_if = "Option::is_none"
    )]
    pub allowed_deviation_x_y: Option<f64>,
    /// How close the heading counts as arrived, radians.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_deviation_theta: Option<f64>,
    /// The map.
    pub map_id: String,
}

/// An action parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionParameter {
    /// Its key.
    pub key: String,
    /// Its value.
    pub value: Value,
}

/// An action (instant, or on a node or edge).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Action {
    /// `startPause`, `stopPause`, `cancelOrder`, `factsheetRequest`, …
    pub action_type: String,
    /// Unique id.
    pub action_id: String,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_description: Option<String>,
    /// `NONE`, `SOFT` or `HARD`.
    pub blocking_type: String,
    /// Parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_parameters: Option<Vec<ActionParameter>>,
}

/// An order's node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    /// Its id: robobrain takes a zone name for that zone.
    pub node_id: String,
    /// Its place in the order (even numbers, edges between).
    pub sequence_id: u64,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_description: Option<String>,
    /// Part of the base (may be driven to) or of the horizon.
    pub released: bool,
    /// Where it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_position: Option<NodePosition>,
    /// Actions at the node.
    pub actions: Vec<Action>,
}

/// An order's edge (robobrain plans its own path between nodes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Edge {
    /// Its id.
    pub edge_id: String,
    /// Its place in the order.
    pub sequence_id: u64,
    /// Part of the base or of the horizon.
    pub released: bool,
    /// Where it starts.
    pub start_node_id: String,
    /// Where it ends.
    pub end_node_id: String,
    /// The heading along it, radians.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orientation: Option<f64>,
    /// A NURBS path to follow (robobrain refuses it: it plans its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trajectory: Option<Value>,
    /// Bounds to stay within (refused like a trajectory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corridor: Option<Value>,
    /// Actions along it.
    pub actions: Vec<Action>,
}

/// The `order` message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Order {
    /// The header.
    #[serde(flatten)]
    pub header: Header,
    /// The order's id.
    pub order_id: String,
    /// Its update, counting up.
    pub order_update_id: u64,
    /// The nodes.
    pub nodes: Vec<Node>,
    /// The edges.
    pub edges: Vec<Edge>,
}

/// The `instantActions` message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstantActions {
    /// The header.
    #[serde(flatten)]
    pub header: Header,
    /// The actions, in order.
    pub actions: Vec<Action>,
}

/// `state.nodeStates[]`: a node still to be reached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeState {
    /// Its id.
    pub node_id: String,
    /// Its sequence id.
    pub sequence_id: u64,
    /// Released.
    pub released: bool,
    /// Where it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_position: Option<NodePosition>,
}

/// `state.edgeStates[]`: an edge still to be traversed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EdgeState {
    /// Its id.
    pub edge_id: String,
    /// Its sequence id.
    pub sequence_id: u64,
    /// Released.
    pub released: bool,
}

impl From<&Node> for NodeState {
    fn from(n: &Node) -> Self {
        Self {
            node_id: n.node_id.clone(),
            sequence_id: n.sequence_id,
            released: n.released,
            node_position: n.node_position.clone(),
        }
    }
}

impl From<&Edge> for EdgeState {
    fn from(e: &Edge) -> Self {
        Self {
            edge_id: e.edge_id.clone(),
            sequence_id: e.sequence_id,
            released: e.released,
        }
    }
}

/// `actionStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum ActionStatus {
    /// Not started.
    Waiting,
    /// Starting.
    Initializing,
    /// Running.
    Running,
    /// Done.
    Finished,
    /// Failed.
    Failed,
}

impl ActionStatus {
    /// FINISHED or FAILED: nothing more will happen to it.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Finished | Self::Failed)
    }
}

/// `state.actionStates[]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionState {
    /// The action's id.
    pub action_id: String,
    /// Its type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_type: Option<String>,
    /// Its status.
    pub action_status: ActionStatus,
    /// What came of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_description: Option<String>,
}

/// `state.agvPosition` and `visualization.agvPosition`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgvPosition {
    /// Metres.
    pub x: f64,
    /// Metres.
    pub y: f64,
    /// Radians.
    pub theta: f64,
    /// The map (the world's name).
    pub map_id: String,
    /// Whether the position is known.
    pub position_initialized: bool,
}

/// `velocity`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Velocity {
    /// Forward, m/s.
    pub vx: f64,
    /// Sideways, m/s.
    pub vy: f64,
    /// Turning, rad/s.
    pub omega: f64,
}

/// `state.batteryState`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BatteryState {
    /// Percent.
    pub battery_charge: f64,
    /// Charging now.
    pub charging: bool,
}

/// A key and value naming what an error or an information is about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reference {
    /// `orderId`, `headerId`, `topic`, `mode`, …
    pub reference_key: String,
    /// Its value.
    pub reference_value: String,
}

impl Reference {
    /// A reference.
    pub fn new(key: &str, value: impl Into<String>) -> Self {
        Self {
            reference_key: key.to_string(),
            reference_value: value.into(),
        }
    }
}

/// `state.errors[]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VdaError {
    /// `orderError`, `validationError`, `noRouteError`, …
    pub error_type: String,
    /// What it is about.
    pub error_references: Vec<Reference>,
    /// In words.
    pub error_description: String,
    /// `WARNING` or `FATAL`.
    pub error_level: String,
}

/// `state.information[]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Info {
    /// `robobrain` for the kernel's mode and activity.
    pub info_type: String,
    /// The values.
    pub info_references: Vec<Reference>,
    /// In words.
    pub info_description: String,
    /// `INFO` or `DEBUG`.
    pub info_level: String,
}

/// `state.safetyState`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SafetyState {
    /// `REMOTE` while robobrain's E-stop is latched, else `NONE`.
    pub e_stop: String,
    /// Protective field violated.
    pub field_violation: bool,
}

/// The `state` message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    /// The header.
    #[serde(flatten)]
    pub header: Header,
    /// The current or last order (`""`: none yet).
    pub order_id: String,
    /// Its update.
    pub order_update_id: u64,
    /// The last node reached (`""`: none).
    pub last_node_id: String,
    /// Its sequence id.
    pub last_node_sequence_id: u64,
    /// Nodes still to reach.
    pub node_states: Vec<NodeState>,
    /// Edges still to traverse.
    pub edge_states: Vec<EdgeState>,
    /// The base is moving.
    pub driving: bool,
    /// Paused (`startPause`, or the operator's pause).
    pub paused: bool,
    /// Asking for more base nodes (never: robobrain takes whole orders).
    pub new_base_request: bool,
    /// `AUTOMATIC` (`SERVICE` while the E-stop is latched).
    pub operating_mode: String,
    /// Where it is.
    pub agv_position: AgvPosition,
    /// How it moves.
    pub velocity: Velocity,
    /// Loads carried (robobrain's robots carry none).
    pub loads: Vec<Value>,
    /// Instant and order actions and their status.
    pub action_states: Vec<ActionState>,
    /// The battery.
    pub battery_state: BatteryState,
    /// Errors.
    pub errors: Vec<VdaError>,
    /// The kernel's mode and activity, and the active task.
    pub information: Vec<Info>,
    /// E-stop.
    pub safety_state: SafetyState,
}

/// The `visualization` message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Visualization {
    /// The header.
    #[serde(flatten)]
    pub header: Header,
    /// Where it is.
    pub agv_position: AgvPosition,
    /// How it moves.
    pub velocity: Velocity,
}

/// The instant actions robobrain takes: VDA 5050's `startPause`,
/// `stopPause`, `cancelOrder`, `factsheetRequest`, `stateRequest`,
/// `initPosition`, and robobrain's own `eStop`/`eStopRelease` (VDA 5050
/// leaves the emergency stop to the vehicle; these carry an operator's
/// remote E-stop).
pub const INSTANT_ACTIONS: [&str; 8] = [
    "startPause",
    "stopPause",
    "cancelOrder",
    "factsheetRequest",
    "stateRequest",
    "initPosition",
    "eStop",
    "eStopRelease",
];

/// What each instant action does, for the factsheet.
fn action_description(action: &str) -> &'static str {
    match action {
        "startPause" => "pauses the order's task: the base stops, the task keeps its place",
        "stopPause" => "resumes the paused task (refused while the E-stop is latched)",
        "cancelOrder" => "stops the order's task; RUNNING until the base stands still",
        "factsheetRequest" => "publishes this factsheet",
        "stateRequest" => "publishes a state",
        "initPosition" => {
            "confirms the pose: robobrain localises itself, so the pose given must be where it \
             is (within 0.5 m); lastNodeId is then the node given"
        }
        "eStop" => "robobrain's remote emergency stop: the kernel stops the base and latches",
        _ => "releases the latched E-stop; nothing moves until a stopPause",
    }
}

/// The `factsheet` of a robobrain robot (a differential-drive carrier
/// without load handling), as JSON: `speed_max` m/s. It says what the
/// robot takes: the instant actions above (none on nodes or edges), no
/// trajectories or corridors (it plans its own path), and its limits.
pub fn factsheet(header: &Header, speed_max: f64) -> Value {
    let actions: Vec<Value> = INSTANT_ACTIONS
        .iter()
        .map(|a| {
            let mut action = json!({
                "actionType": a,
                "actionDescription": action_description(a),
                "actionScopes": ["INSTANT"]
            });
            if *a == "initPosition" {
                action["actionParameters"] = json!([
                    {"key": "x", "valueDataType": "FLOAT", "isOptional": false},
                    {"key": "y", "valueDataType": "FLOAT", "isOptional": false},
                    {"key": "theta", "valueDataType": "FLOAT", "isOptional": false},
                    {"key": "mapId", "valueDataType": "STRING", "isOptional": false},
                    {"key": "lastNodeId", "valueDataType": "STRING", "isOptional": false}
                ]);
            }
            action
        })
        .collect();
    json!({
        "headerId": header.header_id,
        "timestamp": header.timestamp,
        "version": header.version,
        "manufacturer": header.manufacturer,
        "serialNumber": header.serial_number,
        "typeSpecification": {
            "seriesName": "robobrain",
            "seriesDescription": "a home robot driven by robobrain's kernel",
            "agvKinematic": "DIFF",
            "agvClass": "CARRIER",
            "maxLoadMass": 0.0,
            "localizationTypes": ["NATURAL"],
            "navigationTypes": ["AUTONOMOUS"]
        },
        "physicalParameters": {
            "speedMin": 0.0,
            "speedMax": speed_max,
            "accelerationMax": 0.5,
            "decelerationMax": 1.0,
            "heightMin": 0.5,
            "heightMax": 0.5,
            "width": 0.4,
            "length": 0.4
        },
        "protocolLimits": {
            "maxStringLens": {"msgLen": 256 * 1024, "idNumericalOnly": false},
            "maxArrayLens": {"node.actions": 0, "edge.actions": 0, "trajectory.knotVector": 0,
                             "trajectory.controlPoints": 0, "state.loads": 0},
            "timing": {"minOrderInterval": 0.1, "minStateInterval": 0.02,
                       "defaultStateInterval": 0.25, "visualizationInterval": 0.25}
        },
        "protocolFeatures": {
            "optionalParameters": [
                {"parameter": "order.nodes.nodePosition", "support": "SUPPORTED",
                 "description": "a node that is not one of the map's zones needs it"},
                {"parameter": "order.nodes.nodePosition.allowedDeviationXY", "support": "SUPPORTED"},
                {"parameter": "state.agvPosition", "support": "SUPPORTED"},
                {"parameter": "state.velocity", "support": "SUPPORTED"}
            ],
            "agvActions": actions
        },
        "agvGeometry": {
            "envelopes2d": [{"set": "base", "polygonPoints": [
                {"x": 0.2, "y": 0.2}, {"x": -0.2, "y": 0.2}, {"x": -0.2, "y": -0.2}, {"x": 0.2, "y": -0.2}
            ]}]
        },
        "loadSpecification": {"loadPositions": [], "loadSets": []}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_iso_8601_utc_with_milliseconds() {
        assert_eq!(timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(timestamp(1_795_766_400_123), "2026-11-27T08:00:00.123Z");
    }

    #[test]
    fn connection_states_are_upper_case() {
        let c = Connection {
            header: Header {
                header_id: 1,
                timestamp: timestamp(0),
                version: VERSION.into(),
                manufacturer: "m".into(),
                serial_number: "s".into(),
            },
            connection_state: ConnectionState::ConnectionBroken,
        };
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(v["connectionState"], "CONNECTIONBROKEN");
        assert_eq!(v["serialNumber"], "s");
        assert_eq!(v["headerId"], 1);
    }
}
