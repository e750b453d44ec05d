//! From a frame to the seed-000 vision result. Offline, a stand-in reports
//! the simulator's ground-truth labels and says it is doing so; a vision
//! model's reply is validated here before anything trusts it.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use thiserror::Error;

use super::Frame;

/// Labels that make a scene an emergency (seed 000 §3.2: fire, smoke,
/// unauthorised people).
pub const EMERGENCY_LABELS: [&str; 4] = ["fire", "smoke", "person", "water_leak"];

/// Who produced a vision result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VisionSource {
    /// The offline stand-in: the simulator's labels, no model.
    StandIn,
    /// A vision model.
    Model,
}

/// What `watch` reports (seed 000 §3.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VisionResult {
    /// Objects and people in view.
    pub objects_detected: Vec<String>,
    /// Whether something needs an alert now.
    pub emergency: bool,
    /// 0–1.
    pub confidence: f64,
    /// The scene in a sentence.
    pub description: String,
    /// Who said so.
    pub source: VisionSource,
}

impl VisionResult {
    /// `none`, `low` or `high`: the seed's `emergency_level` shared value.
    pub fn emergency_level(&self) -> &'static str {
        match (self.emergency, self.confidence) {
            (false, _) => "none",
            (true, c) if c < 0.5 => "low",
            (true, _) => "high",
        }
    }
}

/// Why a vision result cannot be had or trusted.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum VisionError {
    /// The frame carries no labels and no model is configured.
    #[error("no vision model is configured and the camera gives no labels")]
    NoLabels,
    /// The model's reply is not the JSON the prompt asked for.
    #[error("the vision model's reply is invalid: {0}")]
    InvalidReply(String),
}

/// The offline stand-in: the frame's labels, reported as such.
pub fn stand_in(frame: &Frame) -> Result<VisionResult, VisionError> {
    let labels = frame.labels.clone().ok_or(VisionError::NoLabels)?;
    let alarming: Vec<&str> = labels
        .iter()
        .map(String::as_str)
        .filter(|l| EMERGENCY_LABELS.contains(l))
        .collect();
    let place = frame.zone.as_deref().map_or_else(
        || "here".to_string(),
        |z| format!("in the {}", z.replace('_', " ")),
    );
    let description = if labels.is_empty() {
        format!("nothing unusual {place} (offline stand-in: simulator labels, no vision model)")
    } else {
        format!(
            "{} {place} (offline stand-in: simulator labels, no vision model)",
            labels.join(", ")
        )
    };
    Ok(VisionResult {
        emergency: !alarming.is_empty(),
        objects_detected: labels,
        confidence: 1.0,
        description,
        source: VisionSource::StandIn,
    })
}

/// Validates a vision model's reply: a JSON object (possibly inside a
/// ```json fence) with `objects_detected` (strings), `emergency` (bool),
/// `confidence` (0–1) and `description` (string).
pub fn parse_model_reply(text: &str) -> Result<VisionResult, VisionError> {
    let body = text
        .trim()
        .trim_start_matches("```json")
        .trim_start_matches("```")
        .trim_end_matches("```")
        .trim();
    let value: Value = serde_json::from_str(body)
        .map_err(|e| VisionError::InvalidReply(format!("not JSON ({e})")))?;
    let bad =
        |field: &str, want: &str| VisionError::InvalidReply(format!("`{field}`: expected {want}"));
    let objects = value
        .get("objects_detected")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("objects_detected", "an array of strings"))?
        .iter()
        .map(|o| o.as_str().map(str::to_string))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| bad("objects_detected", "an array of strings"))?;
    let emergency = value
        .get("emergency")
        .and_then(Value::as_bool)
        .ok_or_else(|| bad("emergency", "true or false"))?;
    let confidence = value
        .get("confidence")
        .and_then(Value::as_f64)
        .filter(|c| (0.0..=1.0).contains(c))
        .ok_or_else(|| bad("confidence", "a number from 0 to 1"))?;
    let description = value
        .get("description")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("description", "a string"))?
        .to_string();
    Ok(VisionResult {
        objects_detected: objects,
        emergency,
        confidence,
        description,
        source: VisionSource::Model,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(labels: &[&str]) -> Frame {
        Frame {
            png: None,
            width: 1,
            height: 1,
            labels: Some(labels.iter().map(|s| (*s).to_string()).collect()),
            zone: Some("living_room".into()),
        }
    }

    #[test]
    fn the_stand_in_reports_the_labels_and_says_so() {
        let calm = stand_in(&frame(&[])).unwrap();
        assert!(!calm.emergency);
        assert_eq!(calm.emergency_level(), "none");
        assert_eq!(calm.source, VisionSource::StandIn);
        assert!(
            calm.description.contains("offline stand-in"),
            "{}",
            calm.description
        );
        let smoke = stand_in(&frame(&["smoke"])).unwrap();
        assert!(smoke.emergency);
        assert_eq!(smoke.emergency_level(), "high");
        assert_eq!(smoke.objects_detected, vec!["smoke"]);
        assert!(smoke.description.starts_with("smoke in the living room"));
        assert!(!stand_in(&frame(&["open_door"])).unwrap().emergency);
        let mut unlabelled = frame(&[]);
        unlabelled.labels = None;
        assert_eq!(stand_in(&unlabelled), Err(VisionError::NoLabels));
    }

    #[test]
    fn a_model_reply_is_validated_field_by_field() {
        let ok = parse_model_reply(
            "```json\n{\"objects_detected\":[\"sofa\",\"smoke\"],\"emergency\":true,\"confidence\":0.9,\"description\":\"smoke near the sofa\"}\n```",
        )
        .unwrap();
        assert!(ok.emergency);
        assert_eq!(ok.source, VisionSource::Model);
        for (reply, why) in [
            ("smoke!", "not JSON"),
            (
                "{\"objects_detected\":\"smoke\",\"emergency\":true,\"confidence\":1,\"description\":\"\"}",
                "`objects_detected`",
            ),
            (
                "{\"objects_detected\":[],\"emergency\":\"yes\",\"confidence\":1,\"description\":\"\"}",
                "`emergency`",
            ),
            (
                "{\"objects_detected\":[],\"emergency\":true,\"confidence\":7,\"description\":\"\"}",
                "`confidence`",
            ),
            (
                "{\"objects_detected\":[],\"emergency\":true,\"confidence\":1}",
                "`description`",
            ),
        ] {
            let e = parse_model_reply(reply).unwrap_err().to_string();
            assert!(e.contains(why), "{reply}: {e}");
        }
    }
}
