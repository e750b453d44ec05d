//! MCP services as skills, the kernel's half: each tool of a configured
//! service (`[[mcp.services]]`) is a skill `mcp.<service>.<tool>` whose
//! goals run in the service, not on the robot. Starting one hands the call
//! to the service's worker (the face that owns the MCP client) and returns
//! at once; the worker's result comes back through [`Skill::poll`], so the
//! kernel never waits on a service. While the service is down (restarting)
//! its skills refuse to start, and the guardrails say why.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};

use serde_json::Value;
use tokio::sync::mpsc as tokio_mpsc;

use crate::config::McpServiceConfig;
use crate::skills::runner::GoalResult;
use crate::skills::{MainType, Risk, Skill, SkillContext, SkillError, SkillSpec, Started, SubType};
use crate::world::World;

/// Wall-clock seconds a remote tool call may take before the runner times it out.
pub const REMOTE_TIMEOUT_S: f64 = 60.0;

/// One tool call for a service's worker.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteCall {
    /// The goal it carries.
    pub goal_id: String,
    /// The tool's name in the service.
    pub tool: String,
    /// Its arguments.
    pub args: Value,
}

/// The kernel's side of one service: where calls go, where their ends come
/// back, and whether the service is up. Shared by all of the service's skills.
#[derive(Clone)]
pub struct ServicePort {
    service: String,
    calls: tokio_mpsc::UnboundedSender<RemoteCall>,
    ends: Arc<Mutex<mpsc::Receiver<(String, GoalResult)>>>,
    up: Arc<AtomicBool>,
}

/// The worker's side of one service.
pub struct ServiceWorker {
    /// Calls to make, in order.
    pub calls: tokio_mpsc::UnboundedReceiver<RemoteCall>,
    /// Where each call's end goes (goal id, result).
    pub ends: mpsc::Sender<(String, GoalResult)>,
    /// Set while the service is connected; its skills refuse to start otherwise.
    pub up: Arc<AtomicBool>,
}

/// A connected pair for service `name` (up from the start).
pub fn service_channel(name: &str) -> (ServicePort, ServiceWorker) {
    let (call_tx, call_rx) = tokio_mpsc::unbounded_channel();
    let (end_tx, end_rx) = mpsc::channel();
    let up = Arc::new(AtomicBool::new(true));
    (
        ServicePort {
            service: name.to_string(),
            calls: call_tx,
            ends: Arc::new(Mutex::new(end_rx)),
            up: Arc::clone(&up),
        },
        ServiceWorker {
            calls: call_rx,
            ends: end_tx,
            up,
        },
    )
}

impl ServicePort {
    fn unavailable(&self, skill: &str) -> SkillError {
        SkillError::Refused {
            skill: skill.to_string(),
            message: format!("MCP service `{}` is unavailable (restarting)", self.service),
        }
    }
}

/// The skill name of tool `tool` of service `service`.
pub fn skill_name(service: &str, tool: &str) -> String {
    format!("mcp.{service}.{tool}")
}

/// The spec of a service's tool (`tool`: the MCP `Tool` JSON): remote; a
/// query when annotated read-only; risk from the config, else `read` for
/// read-only tools and `low_write` for the rest.
pub fn remote_spec(service: &McpServiceConfig, tool: &Value) -> SkillSpec {
    let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
    let read_only = tool
        .pointer("/annotations/readOnlyHint")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let risk = service.risk.unwrap_or(if read_only {
        Risk::Read
    } else {
        Risk::LowWrite
    });
    let description = tool
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("a tool of an MCP service");
    SkillSpec {
        name: skill_name(&service.name, name),
        description: format!("{description} (MCP service `{}`)", service.name),
        args_schema: tool
            .get("inputSchema")
            .cloned()
            .unwrap_or_else(|| serde_json::json!({"type": "object"})),
        main_type: MainType::Remote,
        sub_type: if read_only {
            SubType::Query
        } else {
            SubType::Control
        },
        risk,
        resources: Vec::new(),
        shared_resources: Vec::new(),
        preemptible: true,
        cancel_supported: false,
        timeout_s: REMOTE_TIMEOUT_S,
        success_criteria: "the service answered without an error".into(),
        error_map: vec![
            ("unavailable".into(), crate::skills::Recovery::AskHuman),
            ("tool_error".into(), crate::skills::Recovery::AskHuman),
        ],
        reply_templates: Vec::new(),
        version: "1.0".into(),
        dependencies: Vec::new(),
        capabilities: service.capabilities.clone(),
    }
}

/// A tool of an MCP service as a skill.
pub struct RemoteTool {
    spec: SkillSpec,
    tool: String,
    port: ServicePort,
}

impl RemoteTool {
    /// Tool `tool` (the MCP `Tool` JSON) of `service`, reached through `port`.
    pub fn new(service: &McpServiceConfig, tool: &Value, port: ServicePort) -> Self {
        Self {
            spec: remote_spec(service, tool),
            tool: tool
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            port,
        }
    }
}

impl Skill for RemoteTool {
    fn spec(&self) -> &SkillSpec {
        &self.spec
    }

    fn check(&self, _args: &Value, _world: &World) -> Result<(), SkillError> {
        if self.port.up.load(Ordering::Acquire) {
            Ok(())
        } else {
            Err(self.port.unavailable(&self.spec.name))
        }
    }

    fn start(
        &mut self,
        goal_id: &str,
        args: &Value,
        _ctx: &mut SkillContext<'_>,
    ) -> Result<Started, SkillError> {
        if !self.port.up.load(Ordering::Acquire) {
            return Err(self.port.unavailable(&self.spec.name));
        }
        self.port
            .calls
            .send(RemoteCall {
                goal_id: goal_id.to_string(),
                tool: self.tool.clone(),
                args: args.clone(),
            })
            .map_err(|_| self.port.unavailable(&self.spec.name))?;
        Ok(Started::OnRobot)
    }

    fn poll(&mut self, out: &mut Vec<(String, GoalResult)>) {
        let ends = self
            .port
            .ends
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while let Ok(end) = ends.try_recv() {
            out.push(end);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::protocol::{Door, Origin};
    use serde_json::json;

    use super::*;
    use crate::config::Config;
    use crate::engine::Engine;
    use crate::mcp::{CallOutcome, CallWatch};
    use crate::protocol::{Command, Event};

    fn service(risk: Option<Risk>) -> McpServiceConfig {
        McpServiceConfig {
            capabilities: vec!["home".into()],
            risk,
            ..McpServiceConfig::command("home", "home-mcp", &[])
        }
    }

    #[test]
    fn a_tool_becomes_a_namespaced_skill_with_its_risk() {
        let tool = json!({"name": "lights_off", "description": "Switch the lights off.",
            "inputSchema": {"type": "object", "properties": {"room": {"type": "string"}}}});
        let spec = remote_spec(&service(None), &tool);
        assert_eq!(spec.name, "mcp.home.lights_off");
        assert_eq!(
            (spec.risk, spec.sub_type),
            (Risk::LowWrite, SubType::Control)
        );
        assert_eq!(spec.main_type, MainType::Remote);
        assert_eq!(spec.capabilities, vec!["home".to_string()]);
        let read = json!({"name": "status", "annotations": {"readOnlyHint": true}});
        assert_eq!(remote_spec(&service(None), &read).risk, Risk::Read);
        assert_eq!(
            remote_spec(&service(Some(Risk::HighWrite)), &read).risk,
            Risk::HighWrite
        );
    }

    /// The engine runs a remote tool call: the worker (here, the test) gets
    /// the call, its end comes back through the skill, and the call succeeds
    /// once; while the service is down the call is refused.
    #[test]
    fn a_remote_call_goes_out_and_its_end_comes_back() {
        let config = Config {
            thread_id: Some("remote".into()),
            ..Config::default()
        };
        let mut engine =
            Engine::simulated(&config, crate::world::World::builtin("apartment").unwrap()).unwrap();
        let (port, mut worker) = service_channel("home");
        let tool = json!({"name": "echo", "inputSchema": {"type": "object"}});
        engine
            .registry_mut()
            .register(
                Box::new(RemoteTool::new(&service(None), &tool, port)),
                &Value::Null,
            )
            .unwrap();
        let args = json!({"say": "hi"});
        engine.submit(
            Command::Call {
                call_id: "c1".into(),
                skill: "mcp.home.echo".into(),
                args: args.clone(),
            },
            Origin::new(Door::Mcp, "test"),
        );
        let mut events: Vec<Event> = Vec::new();
        for _ in 0..5 {
            engine.tick(&mut events);
        }
        let call = worker.calls.try_recv().unwrap();
        assert_eq!((call.tool.as_str(), &call.args), ("echo", &args));
        worker
            .ends
            .send((
                call.goal_id,
                GoalResult::Succeeded {
                    output: json!({"echo": "hi"}),
                },
            ))
            .unwrap();
        for _ in 0..20 {
            engine.tick(&mut events);
        }
        let mut watch = CallWatch::new("c1", "mcp.home.echo", &args);
        let outcome = events.iter().find_map(|e| watch.on_event(&e.kind));
        assert!(
            matches!(&outcome, Some(CallOutcome::Succeeded { output: Some(o), .. }) if o["echo"] == "hi"),
            "{outcome:?}"
        );
        assert!(worker.calls.try_recv().is_err(), "called more than once");

        worker.up.store(false, Ordering::Release);
        engine.submit(
            Command::Call {
                call_id: "c2".into(),
                skill: "mcp.home.echo".into(),
                args: args.clone(),
            },
            Origin::new(Door::Mcp, "test"),
        );
        for _ in 0..20 {
            engine.tick(&mut events);
        }
        let mut watch = CallWatch::new("c2", "mcp.home.echo", &args);
        match events.iter().find_map(|e| watch.on_event(&e.kind)) {
            Some(CallOutcome::Failed { message, .. }) => {
                assert!(message.contains("`home` is unavailable"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert!(worker.calls.try_recv().is_err());
    }
}
