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

#[cfg(test)]
mod tests {
    use crate::protocol::Origin;
    use serde_json::Value;

    use crate::config::Config;
    use crate::engine::Engine;
    use crate::link::Fault;
    use crate::protocol::{ApprovalStatus, Command, Event, EventKind, SkillStatus, TaskStatus};
    use crate::webhook::tests::receiver;
    use crate::world::World;

    /// Smoke during a patrol with a webhook configured: the incident is
    /// recorded at once; the call to the outside service waits for the
    /// operator's approval (high risk) while the robot waits for an
    /// acknowledgement; once approved it is POSTed (a 503 retried), and
    /// the patrol resumes after the acknowledgement.
    #[test]
    fn an_incident_goes_to_the_webhook_after_approval_with_retries() {
        let (url, got) = receiver(vec![503, 200]);
        let mut config = Config {
            thread_id: Some("notify".into()),
            ..Config::default()
        };
        config.skills.keep_frames = false;
        config.alert.webhook = Some(url);
        config.alert.backoff_ms = 5;
        let mut engine = Engine::simulated(&config, World::builtin("apartment").unwrap()).unwrap();
        assert_eq!(
            engine.registry().spec("notify").map(|s| s.risk),
            Some(crate::skills::Risk::HighWrite)
        );
        engine.submit(
            Command::Say {
                text: "巡逻".into(),
            },
            Origin::console(),
        );
        engine.submit(
            Command::Inject {
                fault: Fault::Incident {
                    zone: "kitchen".into(),
                    kind: "smoke".into(),
                },
            },
            Origin::console(),
        );
        let mut events: Vec<Event> = Vec::new();
        let mut approval = None;
        let mut acked = false;
        while engine.time() < 900.0 {
            let from = events.len();
            engine.tick(&mut events);
            if engine.registry().is_waiting() {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            for e in &events[from..] {
                match &e.kind {
                    EventKind::Approval {
                        approval_id,
                        status: ApprovalStatus::Requested,
                        op,
                        ..
                    } if serde_json::to_value(op).unwrap()["skill"] == "notify" => {
                        assert!(
                            got.lock().unwrap().is_empty(),
                            "nothing is sent before approval"
                        );
                        approval = Some(approval_id.clone());
                    }
                    EventKind::Skill {
                        skill,
                        status: SkillStatus::Succeeded,
                        ..
                    } if skill == "notify" && !acked => {
                        acked = true;
                        engine.submit(
                            Command::Acknowledge {
                                incident_id: None,
                                by: "ops".into(),
                            },
                            Origin::console(),
                        );
                    }
                    _ => {}
                }
            }
            if let Some(id) = approval.take() {
                engine.submit(Command::Approve { approval_id: id }, Origin::console());
            }
        }
        let got = got.lock().unwrap();
        assert_eq!(got.len(), 2, "one 503, then delivered");
        assert_eq!(got[1]["event"], "incident");
        assert_eq!(got[1]["incident"]["zone"], "kitchen");
        assert_eq!(got[1]["incident"]["kinds"][0], "smoke");
        let notified = events.iter().find_map(|e| match &e.kind {
            EventKind::Skill {
                skill,
                status: SkillStatus::Succeeded,
                output: Some(o),
                ..
            } if skill == "notify" => Some(o.clone()),
            _ => None,
        });
        assert_eq!(
            notified
                .as_ref()
                .and_then(|o| o.get("attempts"))
                .and_then(Value::as_u64),
            Some(2)
        );
        let tasks = engine.state().queue.tasks();
        assert!(
            tasks
                .iter()
                .any(|t| t.kind.name() == "patrol" && t.status == TaskStatus::Succeeded),
            "the patrol finished after the acknowledgement: {:?}",
            tasks
                .iter()
                .map(|t| (t.title(), t.status))
                .collect::<Vec<_>>()
        );
    }
}
