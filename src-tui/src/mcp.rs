//! `robobrain mcp`: the robot brain as an MCP server any agent can drive.
//!
//! Tools are the skill registry (one tool per [`SkillSpec`], see
//! [`robobrain_core::mcp::tools`]); resources are the live snapshot and the
//! recent event log. A tool call is a `Command::Call`: the kernel runs it as
//! a task, so the guardrails, the approval policy and the ledger see it like
//! any step. A call the policy holds for an operator does not run: the
//! client gets "confirmation required" with the approval's id, and only an
//! operator (the console, the HTTP mode's stdin, or the [`Runtime`] handle)
//! can approve it — an MCP client never can, as no tool approves.
//!
//! - this file: the server handler and the run it drives.
//! - `http.rs`: the streamable HTTP transport with its bearer-token check.
//!
//! Configured MCP services (the client side) are the session builder's
//! (`robobrain_core::mcp::client`): their tools are skills, so tools here too.

pub mod http;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use robobrain_core::mcp::{CallOutcome, CallWatch, ToolSet};
use robobrain_core::protocol::{Command, Door, Origin};
use robobrain_core::runtime::{Runtime, RuntimeError};
use robobrain_core::session::{Run, Session};
use robobrain_core::skills::status::RobotStatus;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

/// The live snapshot (mode, battery, tasks, approvals…) as JSON.
pub const SNAPSHOT_URI: &str = "robobrain://snapshot";
/// The most recent events, one JSON object per line.
pub const EVENTS_URI: &str = "robobrain://events";
/// Events the `events` resource keeps.
pub const RECENT_EVENTS: usize = 500;

/// How the server behaves.
#[derive(Debug, Clone)]
pub struct Options {
    /// Wall time a tool call waits for its outcome before it answers
    /// "still running" (the task goes on; its end is in the event log).
    pub call_timeout: Duration,
    /// The transport, as a call's origin names it (`stdio`, `http
    /// 127.0.0.1:8765`).
    pub transport: String,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            call_timeout: Duration::from_secs(300),
            transport: "stdio".into(),
        }
    }
}

struct Shared {
    session: Session,
    tools: ToolSet,
    definitions: Vec<Tool>,
    calls: AtomicU64,
    options: Options,
}

/// The MCP server: a handle on the running brain. Cheap to clone (one per
/// HTTP session); every clone drives the same runtime.
#[derive(Clone)]
pub struct McpServer {
    shared: Arc<Shared>,
}

impl McpServer {
    /// Registers `robot_status` (the read-only tool) in the assembled
    /// `run`, then starts it (its options give the pace, the log and how
    /// many events the `events` resource keeps). Call it inside a tokio runtime.
    pub async fn start(mut run: Run, options: Options) -> Result<Self> {
        run.register_skill(Box::new(RobotStatus::new()))
            .context("the robot_status skill")?;
        let specs = run.skill_specs();
        let tools = ToolSet::new(specs).context("the skill registry as MCP tools")?;
        let definitions = tools
            .definitions()
            .into_iter()
            .map(serde_json::from_value)
            .collect::<Result<Vec<Tool>, _>>()
            .context("a skill spec as an MCP tool")?;
        let session = run.start().await?;
        let shared = Arc::new(Shared {
            session,
            tools,
            definitions,
            calls: AtomicU64::new(0),
            options,
        });
        Ok(Self { shared })
    }

    /// The run being served.
    pub fn session(&self) -> &Session {
        &self.shared.session
    }

    /// Sends an operator command (approve, reject, E-stop…) from `origin`
    /// to the brain. This is the operator's side, never reachable from an
    /// MCP client.
    pub async fn operator(&self, command: Command, origin: Origin) -> Result<(), RuntimeError> {
        self.shared.session.runtime().send(command, origin).await
    }

    /// The brain's runtime handle.
    pub fn runtime(&self) -> &Runtime {
        self.shared.session.runtime()
    }

    /// The recent events, one JSON object per line.
    pub fn recent_events(&self) -> String {
        let mut out = String::new();
        for e in self.shared.session.recent().all() {
            out.push_str(&e.to_json().to_string());
            out.push('\n');
        }
        out
    }

    /// Runs tool `name` with `args` through the kernel and waits for its
    /// outcome (at most the call timeout), for the MCP client that named
    /// itself `client` when it connected (its `clientInfo.name`: on the
    /// command's origin, so the approval card says which client asked).
    /// Unknown tools and arguments that break the schema are JSON-RPC
    /// `invalid params` errors.
    pub async fn call(
        &self,
        name: &str,
        args: Value,
        client: Option<&str>,
    ) -> Result<CallToolResult, ErrorData> {
        self.shared
            .tools
            .check(name, &args)
            .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        let n = self.shared.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let call_id = format!("mcp-{n}");
        // Subscribed before the command goes, so no event of the call is missed.
        let mut events = self.runtime().subscribe();
        let detail = match client {
            Some(client) => format!(
                "{} {call_id}, client {client}",
                self.shared.options.transport
            ),
            None => format!("{} {call_id}", self.shared.options.transport),
        };
        let origin = Origin::new(Door::Mcp, detail);
        self.runtime()
            .send(
                Command::Call {
                    call_id: call_id.clone(),
                    skill: name.to_string(),
                    args: args.clone(),
                },
                origin,
            )
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let mut watch = CallWatch::new(&call_id, name, &args);
        let deadline = tokio::time::Instant::now() + self.shared.options.call_timeout;
        loop {
            match tokio::time::timeout_at(deadline, events.recv()).await {
                Ok(Ok(event)) => {
                    if let Some(outcome) = watch.on_event(&event.kind) {
                        return Ok(result_of(name, &outcome));
                    }
                }
                Ok(Err(RecvError::Lagged(_))) => {}
                Ok(Err(RecvError::Closed)) => {
                    return Err(ErrorData::internal_error(
                        "the robot brain has stopped",
                        None,
                    ));
                }
                Err(_) => return Ok(still_running(name, &call_id, watch.task_id())),
            }
        }
    }

    fn read(&self, uri: &str) -> Result<ReadResourceResult, ErrorData> {
        let contents = match uri {
            SNAPSHOT_URI => {
                let snapshot = serde_json::to_string_pretty(&self.runtime().snapshot())
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                ResourceContents::text(snapshot, uri).with_mime_type("application/json")
            }
            EVENTS_URI => ResourceContents::text(self.recent_events(), uri)
                .with_mime_type("application/x-ndjson"),
            _ => {
                return Err(ErrorData::resource_not_found(
                    format!("no resource `{uri}`; resources: {SNAPSHOT_URI}, {EVENTS_URI}"),
                    None,
                ));
            }
        };
        Ok(ReadResourceResult::new(vec![contents]))
    }
}

/// A call's outcome as an MCP tool result: structured content, a sentence
/// for the model, and `isError` when the call did not succeed.
fn result_of(tool: &str, outcome: &CallOutcome) -> CallToolResult {
    let structured = serde_json::to_value(outcome).unwrap_or(Value::Null);
    let (sentence, is_error) = match outcome {
        CallOutcome::ConfirmationRequired {
            approval_id,
            reason,
            ..
        } => (
            format!(
                "confirmation required: {tool} has NOT run ({reason}). It runs only after an \
                 operator approves {approval_id} in a robobrain console; this client cannot \
                 approve it. Its outcome will be in the {EVENTS_URI} resource."
            ),
            false,
        ),
        CallOutcome::Succeeded { output, .. } => (
            match output {
                Some(o) => format!("{tool} succeeded: {o}"),
                None => format!("{tool} succeeded"),
            },
            false,
        ),
        CallOutcome::Failed { message, .. } => (format!("{tool} did not succeed: {message}"), true),
    };
    let mut result = if is_error {
        CallToolResult::structured_error(structured)
    } else {
        CallToolResult::structured(structured)
    };
    result.content = vec![ContentBlock::text(sentence)];
    result
}

fn still_running(tool: &str, call_id: &str, task_id: Option<&str>) -> CallToolResult {
    let task = task_id.unwrap_or("not yet queued");
    let mut result = CallToolResult::structured(json!({
        "status": "running", "call_id": call_id, "task_id": task_id,
    }));
    result.content = vec![ContentBlock::text(format!(
        "{tool} is still running (task {task}); its outcome will be in the {EVENTS_URI} resource"
    ))];
    result
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("robobrain", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "A robot brain in a simulated apartment. Tools are its skills; each call runs \
             through its guardrails and approval policy. Calls that need an operator return \
             `confirmation_required` and run only once a human approves them. Read \
             robobrain://snapshot for the robot's state and robobrain://events for what happened.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.shared.definitions.clone(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = Value::Object(request.arguments.unwrap_or_default());
        // What the client called itself (`clientInfo`): its word, not a
        // proof — the transport and its token say who may connect.
        let client = context.peer.peer_info().map(|p| p.client_info.name.clone());
        self.call(&request.name, args, client.as_deref())
            .await
            .map(Into::into)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new(SNAPSHOT_URI, "snapshot")
                .with_description("The robot brain's state: mode, battery, tasks, approvals")
                .with_mime_type("application/json"),
            Resource::new(EVENTS_URI, "events")
                .with_description(format!(
                    "The last {RECENT_EVENTS} events (decisions, guardrails, approvals, skills), JSONL"
                ))
                .with_mime_type("application/x-ndjson"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.read(&request.uri).map(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use robobrain_core::protocol::TaskStatus;

    #[test]
    fn outcomes_become_tool_results() {
        let asked = result_of(
            "navigate_to",
            &CallOutcome::ConfirmationRequired {
                task_id: "t1".into(),
                approval_id: "a1".into(),
                reason: "navigate_to enters the restricted zone study".into(),
            },
        );
        assert_eq!(asked.is_error, Some(false));
        let v = asked.structured_content.unwrap();
        assert_eq!(v["status"], "confirmation_required");
        assert_eq!(v["approval_id"], "a1");
        let failed = result_of(
            "navigate_to",
            &CallOutcome::Failed {
                task_id: "t1".into(),
                task_status: TaskStatus::Aborted,
                message: "rejected: not now".into(),
            },
        );
        assert_eq!(failed.is_error, Some(true));
        assert_eq!(failed.structured_content.unwrap()["task_status"], "aborted");
    }
}
