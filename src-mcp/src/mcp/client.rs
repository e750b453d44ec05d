//! MCP services as skills, the client's half: each `[[mcp.services]]` entry
//! is started as a child process spoken to over stdio, or reached over
//! streamable HTTP (rmcp's client); its tools are registered as skills
//! `mcp.<service>.<tool>` ([`super::remote`]), and a worker task makes the
//! calls the kernel hands it. A service that dies is restarted with backoff
//! (100 ms doubling to 5 s), its skills refusing to start meanwhile. A
//! service that cannot start at all is reported by name and left out; the
//! rest runs. The workers run on the caller's tokio runtime.

use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Value, json};
use thiserror::Error;

use super::remote::{RemoteCall, RemoteTool, ServiceWorker, service_channel};
use crate::config::{McpConfig, McpServiceConfig};
use crate::protocol::run::ServiceInfo;
use crate::skills::SkillRegistry;
use crate::skills::runner::GoalResult;

type Client = RunningService<RoleClient, ()>;

/// How long a service may take to start and list its tools.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// First restart delay; doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// Longest restart delay.
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How often an idle worker checks that its service is still there.
const HEALTH_CHECK: Duration = Duration::from_millis(200);

/// Why a service could not start.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ServiceError {
    /// Its command could not be run.
    #[error("cannot run the command: {0}")]
    Spawn(#[source] std::io::Error),
    /// It did not answer in time.
    #[error("no {0} in time")]
    Timeout(&'static str),
    /// The MCP handshake or the tool list failed.
    #[error("{what} failed: {detail}")]
    Protocol {
        /// `the MCP handshake`, `listing its tools`.
        what: &'static str,
        /// What the MCP library said.
        detail: String,
    },
    /// A tool that is not JSON.
    #[error("a tool that is not JSON: {0}")]
    Tool(#[from] serde_json::Error),
    /// Its bearer token could not be read (`token_env`, `token_file`).
    #[error("no bearer token: {0}")]
    Token(#[from] crate::secrets::SecretError),
}

/// Starts every configured service and registers its tools in `registry`.
/// Returns how each went, in config order: its tools registered, or why it
/// could not start (it is left out; the rest runs). Call it inside a tokio
/// runtime: the workers run on it.
pub async fn connect_all(config: &McpConfig, registry: &mut SkillRegistry) -> Vec<ServiceInfo> {
    let mut infos = Vec::new();
    for service in &config.services {
        let info = match start(service).await {
            Ok((client, tools)) => {
                let (port, worker) = service_channel(&service.name);
                let mut registered = 0;
                let mut refused = Vec::new();
                for tool in &tools {
                    let skill = RemoteTool::new(service, tool, port.clone());
                    match registry.register(Box::new(skill), &Value::Null) {
                        Ok(()) => registered += 1,
                        Err(e) => refused.push(e.to_string()),
                    }
                }
                tokio::spawn(work(service.clone(), client, worker));
                ServiceInfo {
                    name: service.name.clone(),
                    tools: registered,
                    error: (!refused.is_empty()).then(|| refused.join("; ")),
                }
            }
            Err(e) => ServiceInfo {
                name: service.name.clone(),
                tools: 0,
                error: Some(format!("cannot start ({}): {e}", describe(service))),
            },
        };
        infos.push(info);
    }
    infos
}

/// How a service is reached, for messages: its URL, or its command line.
fn describe(service: &McpServiceConfig) -> String {
    service
        .url
        .clone()
        .unwrap_or_else(|| format!("{} {}", service.command, service.args.join(" ")))
}

/// Starts `service` and lists its tools (as MCP `Tool` JSON).
async fn start(service: &McpServiceConfig) -> Result<(Client, Vec<Value>), ServiceError> {
    let handshake = if let Some(url) = &service.url {
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.clone());
        if let Some(token) = service.bearer()? {
            config = config.auth_header(token);
        }
        tokio::time::timeout(
            START_TIMEOUT,
            ().serve(StreamableHttpClientTransport::from_config(config)),
        )
        .await
    } else {
        let command = tokio::process::Command::new(&service.command).configure(|c| {
            c.args(&service.args);
        });
        let (transport, _stderr) = TokioChildProcess::builder(command)
            .stderr(Stdio::null())
            .spawn()
            .map_err(ServiceError::Spawn)?;
        tokio::time::timeout(START_TIMEOUT, ().serve(transport)).await
    };
    let client = handshake
        .map_err(|_| ServiceError::Timeout("MCP handshake"))?
        .map_err(|e| ServiceError::Protocol {
            what: "the MCP handshake",
            detail: e.to_string(),
        })?;
    let tools = tokio::time::timeout(START_TIMEOUT, client.list_all_tools())
        .await
        .map_err(|_| ServiceError::Timeout("tool list"))?
        .map_err(|e| ServiceError::Protocol {
            what: "listing its tools",
            detail: e.to_string(),
        })?;
    let tools = tools
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<Vec<_>, _>>()?;
    Ok((client, tools))
}

/// Makes the kernel's calls on `client`; restarts the service when it dies.
async fn work(service: McpServiceConfig, mut client: Client, mut worker: ServiceWorker) {
    loop {
        worker.up.store(true, Ordering::Release);
        let mut health = tokio::time::interval(HEALTH_CHECK);
        loop {
            tokio::select! {
                call = worker.calls.recv() => {
                    let Some(call) = call else {
                        // The engine is gone: stop the service.
                        let _ = client.cancel().await;
                        return;
                    };
                    let (goal_id, result, alive) = call_tool(&client, call).await;
                    let _ = worker.ends.send((goal_id, result));
                    if !alive {
                        break;
                    }
                }
                _ = health.tick() => {
                    if client.is_transport_closed() || client.is_closed() {
                        break;
                    }
                }
            }
        }
        worker.up.store(false, Ordering::Release);
        let mut backoff = FIRST_BACKOFF;
        loop {
            eprintln!(
                "MCP service `{}` stopped; its skills are unavailable; restarting in {} ms",
                service.name,
                backoff.as_millis()
            );
            tokio::time::sleep(backoff).await;
            match start(&service).await {
                Ok((c, _)) => {
                    client = c;
                    eprintln!("MCP service `{}` restarted", service.name);
                    break;
                }
                Err(e) => {
                    eprintln!("MCP service `{}` cannot start: {e}", service.name);
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
    }
}

/// One call: its goal id, how it ended, and whether the service is still there.
async fn call_tool(client: &Client, call: RemoteCall) -> (String, GoalResult, bool) {
    let args = match call.args {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    let request = CallToolRequestParams::new(call.tool).with_arguments(args);
    match client.call_tool(request).await {
        Ok(result) => (call.goal_id, goal_result(&result), true),
        Err(e) => {
            let alive = !(client.is_transport_closed() || client.is_closed());
            let code = if alive { "tool_error" } else { "unavailable" };
            (
                call.goal_id,
                GoalResult::Failed {
                    code: code.into(),
                    message: e.to_string(),
                },
                alive,
            )
        }
    }
}

/// A tool result as a goal's end: its structured content (else its text) on
/// success, its text as the message on an error.
fn goal_result(result: &CallToolResult) -> GoalResult {
    let text: Vec<String> = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    if result.is_error == Some(true) {
        return GoalResult::Failed {
            code: "tool_error".into(),
            message: text.join("\n"),
        };
    }
    GoalResult::Succeeded {
        output: result
            .structured_content
            .clone()
            .unwrap_or_else(|| json!({"text": text.join("\n")})),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ContentBlock;

    #[test]
    fn tool_results_become_goal_ends() {
        let ok = CallToolResult::success(vec![ContentBlock::text("done")]);
        assert_eq!(
            goal_result(&ok),
            GoalResult::Succeeded {
                output: json!({"text": "done"})
            }
        );
        let structured = CallToolResult::structured(json!({"n": 3}));
        assert_eq!(
            goal_result(&structured),
            GoalResult::Succeeded {
                output: json!({"n": 3})
            }
        );
        let failed = CallToolResult::error(vec![ContentBlock::text("no such room")]);
        assert_eq!(
            goal_result(&failed),
            GoalResult::Failed {
                code: "tool_error".into(),
                message: "no such room".into()
            }
        );
    }

    #[tokio::test]
    async fn a_service_that_cannot_start_is_named_and_left_out() {
        let mut registry = SkillRegistry::with_builtins().unwrap();
        let mcp = McpConfig {
            services: vec![McpServiceConfig::command(
                "ghost",
                "/nonexistent/ghost-mcp",
                &[],
            )],
        };
        let infos = connect_all(&mcp, &mut registry).await;
        assert_eq!(infos.len(), 1);
        assert_eq!(infos[0].name, "ghost");
        assert_eq!(infos[0].tools, 0);
        let error = infos[0].error.as_deref().unwrap();
        assert!(
            error.starts_with("cannot start (/nonexistent/ghost-mcp ): cannot run the command"),
            "{error}"
        );
        assert!(registry.specs().all(|s| !s.name.starts_with("mcp.")));
    }
}
