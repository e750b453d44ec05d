//! MCP services as skills, the client's half: each `[[mcp.services]]` entry
//! is started as a child process spoken to over stdio (rmcp's client), its
//! tools are registered as skills `mcp.<service>.<tool>`
//! ([`robobrain_core::mcp::remote`]), and a worker task makes the calls the
//! kernel hands it. A service that dies is restarted with backoff (100 ms
//! doubling to 5 s), its skills refusing to start meanwhile. A service that
//! cannot start at all is reported by name and left out; the rest runs.

use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context, Result};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use robobrain_core::config::{McpConfig, McpServiceConfig};
use robobrain_core::engine::Engine;
use robobrain_core::mcp::remote::{RemoteCall, RemoteTool, ServiceWorker, service_channel};
use robobrain_core::skills::runner::GoalResult;
use serde_json::{Value, json};

type Client = RunningService<RoleClient, ()>;

/// How long a service may take to start and list its tools.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// First restart delay; doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// Longest restart delay.
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How often an idle worker checks that its service is still there.
const HEALTH_CHECK: Duration = Duration::from_millis(200);

/// Starts every configured service and registers its tools on `engine`.
/// Returns one line per service that could not start (naming it); those are
/// left out. Call it inside a tokio runtime; the workers run on it.
pub async fn connect_all(config: &McpConfig, engine: &mut Engine) -> Vec<String> {
    let mut errors = Vec::new();
    for service in &config.services {
        match start(service).await {
            Ok((client, tools)) => {
                let (port, worker) = service_channel(&service.name);
                let mut registered = 0;
                for tool in &tools {
                    let skill = RemoteTool::new(service, tool, port.clone());
                    match engine
                        .registry_mut()
                        .register(Box::new(skill), &Value::Null)
                    {
                        Ok(()) => registered += 1,
                        Err(e) => errors.push(format!("MCP service `{}`: {e}", service.name)),
                    }
                }
                engine.log(
                    "info",
                    &format!(
                        "MCP service `{}`: {registered} tools registered as skills mcp.{}.*",
                        service.name, service.name
                    ),
                );
                tokio::spawn(work(service.clone(), client, worker));
            }
            Err(e) => errors.push(format!(
                "MCP service `{}` cannot start ({}): {e:#}",
                service.name,
                service.url.clone().unwrap_or_else(|| format!(
                    "{} {}",
                    service.command,
                    service.args.join(" ")
                ))
            )),
        }
    }
    errors
}

/// [`connect_all`] for the faces that drive an engine (console, headless):
/// a service that cannot start is logged as a warning event and left out.
pub async fn connect_into(config: &McpConfig, engine: &mut Engine) {
    for error in connect_all(config, engine).await {
        engine.log("warn", &error);
    }
}

/// Starts `service` and lists its tools (as MCP `Tool` JSON).
async fn start(service: &McpServiceConfig) -> Result<(Client, Vec<Value>)> {
    let handshake = if let Some(url) = &service.url {
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.clone());
        if let Some(token) = &service.token {
            config = config.auth_header(token.clone());
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
            .context("cannot run the command")?;
        tokio::time::timeout(START_TIMEOUT, ().serve(transport)).await
    };
    let client = handshake
        .context("no MCP handshake in time")?
        .context("the MCP handshake failed")?;
    let tools = tokio::time::timeout(START_TIMEOUT, client.list_all_tools())
        .await
        .context("no tool list in time")?
        .context("listing its tools failed")?;
    let tools = tools
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<Vec<_>, _>>()
        .context("a tool that is not JSON")?;
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
                    eprintln!("MCP service `{}` cannot start: {e:#}", service.name);
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
        let config = robobrain_core::config::Config {
            thread_id: Some("svc".into()),
            ..Default::default()
        };
        let mut engine = Engine::simulated(
            &config,
            robobrain_core::world::World::builtin("apartment").unwrap(),
        )
        .unwrap();
        let mcp = McpConfig {
            services: vec![McpServiceConfig {
                name: "ghost".into(),
                command: "/nonexistent/ghost-mcp".into(),
                args: Vec::new(),
                capabilities: Vec::new(),
                risk: None,
                url: None,
                token: None,
            }],
        };
        let errors = connect_all(&mcp, &mut engine).await;
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].starts_with("MCP service `ghost` cannot start"),
            "{}",
            errors[0]
        );
        assert!(
            engine
                .registry_mut()
                .specs()
                .all(|s| !s.name.starts_with("mcp."))
        );
    }
}
