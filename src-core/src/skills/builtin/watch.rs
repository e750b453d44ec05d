//! `watch` (seed 000 §3.2): capture a frame and say what is in it. The
//! result lands in the run's shared data as `last_vision_result` and
//! `emergency_level`; a frame that shows an emergency is kept on disk as
//! evidence (by path: checkpoints never hold images).

use std::path::PathBuf;

use serde_json::{Value, json};

use super::super::{Recovery, Risk, Skill, SkillContext, SkillError, SkillSpec, Started, SubType};
use crate::perception::{Camera, SimCamera, vision};

/// Looks around with the camera.
pub struct Watch {
    spec: SkillSpec,
    camera: Box<dyn Camera>,
    frames_dir: Option<PathBuf>,
}

impl Watch {
    /// The skill over the simulated camera.
    pub fn new() -> Self {
        Self::with_camera(Box::new(SimCamera))
    }

    /// The skill over `camera`.
    pub fn with_camera(camera: Box<dyn Camera>) -> Self {
        let mut spec = super::spec(
            "watch",
            "Look around with the camera and report objects, people and anything abnormal (fire, smoke, intruders).",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        );
        spec.sub_type = SubType::Query;
        spec.risk = Risk::Read;
        spec.resources = vec!["camera".into()];
        spec.error_map = vec![
            ("camera_failed".into(), Recovery::Skip),
            ("no_vision".into(), Recovery::Skip),
        ];
        super::declare(
            &mut spec,
            5.0,
            "a vision result for the current view",
            "vision",
        );
        Self {
            spec,
            camera,
            frames_dir: None,
        }
    }
}

impl Skill for Watch {
    fn spec(&self) -> &SkillSpec {
        &self.spec
    }

    /// `{"frames_dir": "…"}`: where evidence frames are written (none: not kept).
    fn initialize(&mut self, config: &Value) -> Result<(), SkillError> {
        self.frames_dir = config
            .get("frames_dir")
            .and_then(Value::as_str)
            .map(PathBuf::from);
        Ok(())
    }

    fn start(
        &mut self,
        goal_id: &str,
        _args: &Value,
        ctx: &mut SkillContext<'_>,
    ) -> Result<Started, SkillError> {
        let frame = match self.camera.capture(ctx.world, ctx.telemetry) {
            Ok(frame) => frame,
            Err(e) => {
                return Ok(Started::Failed {
                    code: "camera_failed".into(),
                    message: e.to_string(),
                });
            }
        };
        let result = match vision::stand_in(&frame) {
            Ok(r) => r,
            Err(e) => {
                return Ok(Started::Failed {
                    code: "no_vision".into(),
                    message: e.to_string(),
                });
            }
        };
        let evidence = if result.emergency {
            self.keep(goal_id, &frame.png)
        } else {
            None
        };
        let mut seen = serde_json::to_value(&result).unwrap_or(Value::Null);
        if let Some(o) = seen.as_object_mut() {
            o.insert("zone".into(), json!(frame.zone));
            o.insert("evidence".into(), json!(evidence));
        }
        Ok(Started::Done(json!({
            "summary": result.description,
            "vision": seen,
            "shared": {
                "last_vision_result": seen,
                "emergency_level": result.emergency_level(),
            },
        })))
    }
}

impl Watch {
    /// Writes an evidence frame; its path, or `None` when frames are not kept
    /// or the write failed (the alert goes out without a picture rather than
    /// not at all).
    fn keep(&self, goal_id: &str, png: &[u8]) -> Option<String> {
        let dir = self.frames_dir.as_ref()?;
        std::fs::create_dir_all(dir).ok()?;
        let name = crate::store::ledger::short_goal_id(goal_id).replace(['/', '\\'], "_");
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).ok()?;
        Some(path.display().to_string())
    }
}
