//! `notify` (seed 000 §4 "alert service", §11.2): POST an incident to the
//! outside service configured as `[alert] webhook`, with retries. It is
//! registered only when a webhook is configured; it is high risk (the
//! operator approves each call) unless `[alert] confirm = false`. The kernel
//! queues one `notify` call for every new incident; the POST runs on the
//! webhook worker's thread, and its end comes back through [`Skill::poll`].

use serde_json::{Value, json};

use super::super::runner::GoalResult;
use super::super::{Recovery, Risk, Skill, SkillContext, SkillError, SkillSpec, Started};
use crate::config::AlertConfig;
use crate::webhook::WebhookWorker;

/// Tells the webhook about incidents.
pub struct Notify {
    spec: SkillSpec,
    config: AlertConfig,
    worker: Option<WebhookWorker>,
}

impl Notify {
    /// The skill for `config` (its `webhook` is where incidents go).
    pub fn new(config: &AlertConfig) -> Self {
        let mut spec = super::spec(
            "notify",
            "Tell the outside alert service (the configured webhook) about an incident, by HTTP POST with retries.",
            json!({
                "type": "object",
                "properties": {"incident": {"type": "object"}},
                "required": ["incident"],
                "additionalProperties": false
            }),
        );
        spec.main_type = super::MainType::Remote;
        spec.risk = if config.confirm {
            Risk::HighWrite
        } else {
            Risk::LowWrite
        };
        spec.cancel_supported = false;
        spec.error_map = ["rejected", "unreachable", "unavailable"]
            .into_iter()
            .map(|c| (c.to_string(), Recovery::AskHuman))
            .collect();
        // Every attempt may take the whole timeout, and the waits double.
        let waits = config.backoff_ms as f64 / 1000.0 * 2f64.powi(config.retries.min(16) as i32);
        let timeout = config.timeout_s * f64::from(config.retries + 1) + waits + 1.0;
        super::declare(&mut spec, timeout, "the webhook answered 2xx", "alerting");
        Self {
            spec,
            config: config.clone(),
            worker: None,
        }
    }
}

impl Skill for Notify {
    fn spec(&self) -> &SkillSpec {
        &self.spec
    }

    fn initialize(&mut self, _config: &Value) -> Result<(), SkillError> {
        let worker = WebhookWorker::spawn(&self.config).map_err(|e| SkillError::Refused {
            skill: self.spec.name.clone(),
            message: e.to_string(),
        })?;
        self.worker = Some(worker);
        Ok(())
    }

    fn start(
        &mut self,
        goal_id: &str,
        args: &Value,
        _ctx: &mut SkillContext<'_>,
    ) -> Result<Started, SkillError> {
        let Some(worker) = self.worker.as_mut() else {
            return Ok(Started::Failed {
                code: "unavailable".into(),
                message: "the webhook worker is not running".into(),
            });
        };
        let body = json!({
            "event": "incident",
            "incident": args.get("incident").cloned().unwrap_or(Value::Null),
        });
        match worker.send(goal_id, body) {
            Ok(()) => Ok(Started::OnRobot),
            Err(e) => Ok(Started::Failed {
                code: e.code().into(),
                message: e.to_string(),
            }),
        }
    }

    fn poll(&mut self, done: &mut Vec<(String, GoalResult)>) {
        let Some(worker) = self.worker.as_mut() else {
            return;
        };
        let url = self.config.webhook.as_deref().unwrap_or_default();
        for (goal_id, outcome) in worker.finished() {
            let result = match outcome {
                Ok(d) => GoalResult::Succeeded {
                    output: json!({
                        "summary": format!("the alert service at {url} has the incident (HTTP {}, {} attempt(s))", d.status, d.attempts),
                        "status": d.status,
                        "attempts": d.attempts,
                    }),
                },
                Err(e) => GoalResult::Failed {
                    code: e.code().into(),
                    message: e.to_string(),
                },
            };
            done.push((goal_id, result));
        }
    }

    fn is_waiting(&self) -> bool {
        self.worker.as_ref().is_some_and(WebhookWorker::is_busy)
    }

    fn cleanup(&mut self) {
        self.worker = None;
    }
}
