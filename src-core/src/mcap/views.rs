//! The Foxglove views of events, as JSON values: pure functions of an
//! event (and of the map), no IO.
//!
//! Coordinates: robobrain's world has x east and y south, with headings
//! measured from east toward south; Foxglove's frames are right-handed
//! with z up. The `map` frame here keeps x east and puts y north, so a
//! world point `(x, y)` is `(x, -y, 0)` and a heading `theta` is a yaw of
//! `-theta` about z.

use base64::Engine as _;
use serde_json::{Value, json};

use crate::geometry::Pose;
use crate::protocol::{Event, EventKind, describe};

/// The frame every map-fixed view is in.
pub const MAP_FRAME: &str = "map";
/// The frame evidence images are in.
pub const CAMERA_FRAME: &str = "camera";

/// Sim seconds as MCAP nanoseconds (negative and non-finite times are 0).
pub fn nanos(time: f64) -> u64 {
    if time.is_finite() && time > 0.0 {
        (time * 1e9).round() as u64
    } else {
        0
    }
}

/// Sim seconds as Foxglove's `time`: `{sec, nsec}`.
pub fn stamp(time: f64) -> Value {
    let ns = nanos(time);
    json!({"sec": ns / 1_000_000_000, "nsec": ns % 1_000_000_000})
}

/// A pose of the world as Foxglove's `foxglove.Pose` in the map frame, at height `z`.
pub fn pose(p: Pose, z: f64) -> Value {
    let yaw = -p.theta;
    json!({
        "position": {"x": p.x, "y": -p.y, "z": z},
        "orientation": {"x": 0.0, "y": 0.0, "z": (yaw / 2.0).sin(), "w": (yaw / 2.0).cos()},
    })
}

/// `foxglove.PoseInFrame` of the robot at `time`.
pub fn pose_in_frame(time: f64, p: Pose) -> Value {
    json!({"timestamp": stamp(time), "frame_id": MAP_FRAME, "pose": pose(p, 0.0)})
}

/// `robobrain.Battery` at `time`.
pub fn battery(time: f64, battery_pct: f64, charging: bool) -> Value {
    json!({"timestamp": stamp(time), "battery_pct": battery_pct, "charging": charging})
}

/// `foxglove.Log`'s levels.
const DEBUG: u8 = 1;
const INFO: u8 = 2;
const WARNING: u8 = 3;
const ERROR: u8 = 4;

/// The `foxglove.Log` line of a `log`, `error` or `decision` event; `None`
/// for the others. `name` says which (`log`, `error`, `decision`).
pub fn log_line(event: &Event) -> Option<Value> {
    let (level, name, message) = match &event.kind {
        EventKind::Log { level, message } => {
            let level = match level.as_str() {
                "debug" => DEBUG,
                "warn" | "warning" => WARNING,
                "error" => ERROR,
                _ => INFO,
            };
            (level, "log", message.clone())
        }
        EventKind::Error { .. } => (ERROR, "error", describe::text(&event.kind)),
        EventKind::Decision { .. } => (INFO, "decision", describe::text(&event.kind)),
        _ => return None,
    };
    Some(json!({
        "timestamp": stamp(event.time),
        "level": level,
        "message": message,
        "name": name,
        "file": "",
        "line": 0,
    }))
}

/// The evidence frame an alert event names, when it is one that raised it
/// (an acknowledgement names the same frame again).
pub fn evidence(event: &Event) -> Option<&str> {
    match &event.kind {
        EventKind::Alert { incident } if incident.acknowledged_by.is_none() => {
            incident.evidence.as_deref()
        }
        _ => None,
    }
}

/// `foxglove.CompressedImage` of a PNG frame at `time`.
pub fn png_image(time: f64, png: &[u8]) -> Value {
    json!({
        "timestamp": stamp(time),
        "frame_id": CAMERA_FRAME,
        "data": base64::engine::general_purpose::STANDARD.encode(png),
        "format": "png",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{BrainKind, DecisionType};

    fn event(kind: EventKind) -> Event {
        Event {
            seq: 4,
            time: 12.25,
            wall_ms: 0,
            thread_id: "t".into(),
            step: 9,
            origin: None,
            kind,
        }
    }

    #[test]
    fn times_are_nanoseconds_and_foxglove_times() {
        assert_eq!(nanos(12.25), 12_250_000_000);
        assert_eq!(nanos(-1.0), 0);
        assert_eq!(nanos(f64::NAN), 0);
        assert_eq!(stamp(1.5), json!({"sec": 1, "nsec": 500_000_000}));
    }

    #[test]
    fn a_heading_south_is_a_yaw_toward_minus_y() {
        let p = pose(Pose::new(2.0, 3.0, std::f64::consts::FRAC_PI_2), 0.0);
        assert_eq!(p["position"], json!({"x": 2.0, "y": -3.0, "z": 0.0}));
        // A yaw of -π/2: facing -y, which is south on the map.
        let (z, w) = (
            p["orientation"]["z"].as_f64().unwrap(),
            p["orientation"]["w"].as_f64().unwrap(),
        );
        let yaw = 2.0 * z.atan2(w);
        assert!((yaw + std::f64::consts::FRAC_PI_2).abs() < 1e-12, "{yaw}");
    }

    #[test]
    fn logs_errors_and_decisions_are_log_lines_with_their_levels() {
        let warn = log_line(&event(EventKind::Log {
            level: "warn".into(),
            message: "low".into(),
        }))
        .unwrap();
        assert_eq!(warn["level"], WARNING);
        assert_eq!(warn["name"], "log");
        assert_eq!(warn["timestamp"], json!({"sec": 12, "nsec": 250_000_000}));
        let error = log_line(&event(EventKind::Error {
            code: "invalid_command".into(),
            message: "no".into(),
        }))
        .unwrap();
        assert_eq!(error["level"], ERROR);
        assert_eq!(error["message"], "invalid_command: no");
        let decision = log_line(&event(EventKind::Decision {
            task_id: "t1".into(),
            iteration: 3,
            decision_type: DecisionType::Replan,
            reason: "the door is blocked".into(),
            brain: BrainKind::Rule,
            ops: Vec::new(),
        }))
        .unwrap();
        assert_eq!(
            decision["message"],
            "t1 #3 REPLAN (rule) — the door is blocked"
        );
        assert_eq!(decision["level"], INFO);
        assert!(
            log_line(&event(EventKind::Token {
                purpose: "decide".into(),
                text: "x".into()
            }))
            .is_none()
        );
    }
}
