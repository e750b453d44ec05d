//! `watch` (seed 000 §3.2): capture a frame and say what is in it. The
//! result lands in the run's shared data as `last_vision_result` and
//! `emergency_level`; a frame that shows an emergency is kept on disk as
//! evidence, and the newest ordinary frame under `last/` (one file, replaced
//! by the next look), both by path: checkpoints never hold images. The
//! result's `frame` names the kept frame either way. With a vision model
//! configured the frame goes to it and the goal ends when it answers
//! (its reply validated; the stand-in's labels when it fails, saying why).
//! With neither a model nor frames kept, the simulated camera is only
//! glanced at: its labels without a picture nobody would see.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::super::runner::GoalResult;
use super::super::{Recovery, Risk, Skill, SkillContext, SkillError, SkillSpec, Started, SubType};
use crate::llm::LlmConfig;
use crate::perception::model::{self, VisionModel};
use crate::perception::{Camera, Frame, SimCamera, VisionResult, vision};

/// Looks around with the camera.
pub struct Watch {
    spec: SkillSpec,
    camera: Box<dyn Camera>,
    frames_dir: Option<PathBuf>,
    /// The vision model's endpoint, when one is configured; its worker
    /// starts at initialisation.
    vision_config: Option<LlmConfig>,
    vision: Option<VisionModel>,
    /// Calls in flight: model call id, goal id, the frame (for evidence and
    /// the stand-in's fallback).
    asked: Vec<(u64, String, Frame)>,
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
            vision_config: None,
            vision: None,
            asked: Vec::new(),
        }
    }

    /// This skill, asking `config`'s vision model.
    #[must_use]
    pub fn asking(mut self, config: &LlmConfig) -> Self {
        self.spec.timeout_s = config.timeout_s + 2.0;
        self.vision_config = Some(config.clone());
        self
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
        if let Some(c) = &self.vision_config {
            self.vision = Some(VisionModel::new(c).map_err(|e| SkillError::Refused {
                skill: "watch".into(),
                message: e.to_string(),
            })?);
        }
        Ok(())
    }

    fn cancel(&mut self, goal_id: &str, _ctx: &mut SkillContext<'_>) -> Result<(), SkillError> {
        self.asked.retain(|(_, g, _)| g != goal_id);
        Ok(())
    }

    fn poll(&mut self, done: &mut Vec<(String, GoalResult)>) {
        let Some(vision) = self.vision.as_mut() else {
            return;
        };
        for (id, reply) in vision.poll() {
            let Some(i) = self.asked.iter().position(|(asked, _, _)| *asked == id) else {
                continue;
            };
            let (_, goal_id, frame) = self.asked.remove(i);
            let result = match model::judge(reply, &frame) {
                Ok(seen) => GoalResult::Succeeded {
                    output: self.report(&goal_id, &frame, &seen.result, seen.fallback.as_deref()),
                },
                Err(e) => GoalResult::Failed {
                    code: "no_vision".into(),
                    message: e.to_string(),
                },
            };
            done.push((goal_id, result));
        }
    }

    fn is_waiting(&self) -> bool {
        !self.asked.is_empty()
    }

    fn cleanup(&mut self) {
        self.vision = None;
        self.asked.clear();
    }

    fn start(
        &mut self,
        goal_id: &str,
        _args: &Value,
        ctx: &mut SkillContext<'_>,
    ) -> Result<Started, SkillError> {
        // The stand-in reads the simulator's labels: with no model to ask
        // and no frame kept, nobody would see the picture, so none is drawn.
        let sees_picture = self.vision.is_some() || self.frames_dir.is_some();
        let captured = if sees_picture {
            None
        } else {
            self.camera.glance(ctx.world, ctx.telemetry)
        };
        let captured = captured.unwrap_or_else(|| self.camera.capture(ctx.world, ctx.telemetry));
        let frame = match captured {
            Ok(frame) => frame,
            Err(e) => {
                return Ok(Started::Failed {
                    code: "camera_failed".into(),
                    message: e.to_string(),
                });
            }
        };
        if let Some(vision) = self.vision.as_mut() {
            return match vision.ask(&frame) {
                Ok(id) => {
                    self.asked.push((id, goal_id.to_string(), frame));
                    Ok(Started::OnRobot)
                }
                Err(e) => Ok(Started::Failed {
                    code: "no_vision".into(),
                    message: e.to_string(),
                }),
            };
        }
        match vision::stand_in(&frame) {
            Ok(result) => Ok(Started::Done(self.report(goal_id, &frame, &result, None))),
            Err(e) => Ok(Started::Failed {
                code: "no_vision".into(),
                message: e.to_string(),
            }),
        }
    }
}

impl Watch {
    /// The goal's output: the result (with where and the evidence frame)
    /// and the shared data it sets; `fallback` says why the model's answer
    /// was not used.
    fn report(
        &self,
        goal_id: &str,
        frame: &Frame,
        result: &VisionResult,
        fallback: Option<&str>,
    ) -> Value {
        let evidence = match &frame.png {
            Some(png) if result.emergency => self.keep(goal_id, png),
            _ => None,
        };
        let kept = match (&evidence, &frame.png) {
            (Some(path), _) => Some(path.clone()),
            (None, Some(png)) => self.keep_last(goal_id, png),
            (None, None) => None,
        };
        let note = self.camera.note();
        let mut seen = serde_json::to_value(result).unwrap_or(Value::Null);
        if let Some(o) = seen.as_object_mut() {
            o.insert("zone".into(), json!(frame.zone));
            o.insert("evidence".into(), json!(evidence));
            o.insert("frame".into(), json!(kept));
            if let Some(note) = &note {
                o.insert("camera".into(), json!(note));
            }
            if let Some(why) = fallback {
                o.insert("model_rejected".into(), json!(why));
            }
        }
        let summary = match note {
            Some(note) => format!("{} ({note})", result.description),
            None => result.description.clone(),
        };
        json!({
            "summary": summary,
            "vision": seen,
            "shared": {
                "last_vision_result": seen,
                "emergency_level": result.emergency_level(),
            },
        })
    }

    /// Writes an evidence frame; its path, or `None` when frames are not kept
    /// or the write failed (the alert goes out without a picture rather than
    /// not at all).
    fn keep(&self, goal_id: &str, png: &[u8]) -> Option<String> {
        write_frame(self.frames_dir.as_ref()?, goal_id, png)
    }

    /// Writes an ordinary frame as the newest look under `<frames>/last/`,
    /// removing the one before it (so the folder holds one frame, and the
    /// path changes with every look: a publisher that sends only what
    /// changed sees a new frame). `None` when frames are not kept.
    fn keep_last(&self, goal_id: &str, png: &[u8]) -> Option<String> {
        let dir = self.frames_dir.as_ref()?.join("last");
        if let Ok(old) = std::fs::read_dir(&dir) {
            for entry in old.flatten() {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        write_frame(&dir, goal_id, png)
    }
}

/// Writes `png` as `<dir>/<short goal id>.png`; its path, or `None` when the
/// write failed.
fn write_frame(dir: &std::path::Path, goal_id: &str, png: &[u8]) -> Option<String> {
    std::fs::create_dir_all(dir).ok()?;
    let name = crate::store::ledger::short_goal_id(goal_id).replace(['/', '\\'], "_");
    let path = dir.join(format!("{name}.png"));
    std::fs::write(&path, png).ok()?;
    Some(path.display().to_string())
}
