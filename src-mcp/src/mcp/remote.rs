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
