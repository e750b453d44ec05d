//! `robobrain mcp`: the run the session builder assembles, served to MCP
//! clients over stdio, or over streamable HTTP with `--http ADDR`.
//!
//! The operator's side channel: in HTTP mode stdin takes operator lines as
//! `robobrain headless` does (`{"cmd":"approve","approval_id":"a1"}`, or an
//! utterance); in stdio mode stdin belongs to the MCP client, so operator
//! lines come from `--operator FILE` (a FIFO, say). Diagnostics go to
//! stderr; in stdio mode stdout carries only MCP messages. The configured
//! MCP services (`[[mcp.services]]`) are part of the run; their tools are
//! skills, so they are tools here too.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use rmcp::ServiceExt;
use robobrain_core::config::Config;
use robobrain_core::protocol::{Door, Origin};
use robobrain_core::runtime::Pace;
use robobrain_core::session::{Run, SessionOptions};
use tokio_util::sync::CancellationToken;

use robobrain_tui::mcp::http::{HttpServer, PATH, check_bind};
use robobrain_tui::mcp::{McpServer, Options, RECENT_EVENTS};
use robobrain_tui::operator::forward;

use crate::flags::{Durability, LOG_HELP, MCAP_HELP, secret};

/// Arguments of `robobrain mcp`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Serve streamable HTTP at ADDR (endpoint `/mcp`) instead of stdio; stdin then takes operator lines.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Bearer token HTTP clients must send; required when `--http` is not a
    /// loopback address. Visible in `ps`: prefer --token-file or ROBOBRAIN_TOKEN.
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// The bearer token, read from FILE (one line; mode 0600).
    #[arg(long, value_name = "FILE", conflicts_with = "token")]
    pub token_file: Option<PathBuf>,
    /// Operator lines (as on `robobrain headless` stdin) read from FILE, e.g. a FIFO.
    #[arg(long, value_name = "FILE")]
    pub operator: Option<PathBuf>,
    /// Sim seconds per wall second.
    #[arg(long, value_name = "N", default_value_t = 1.0)]
    pub speed: f64,
    /// Wall seconds a tool call waits for its outcome before answering "still running".
    #[arg(long, value_name = "S", default_value_t = 300.0)]
    pub call_timeout: f64,
    #[arg(long, value_name = "FILE", help = LOG_HELP)]
    pub log: Option<PathBuf>,
    #[arg(long, value_name = "FILE", help = MCAP_HELP)]
    pub mcap: Option<PathBuf>,
}

/// Runs the MCP server until the client leaves (stdio) or a signal (HTTP).
pub(crate) fn run(config: &Config, args: &Args, durable: &Durability) -> Result<ExitCode> {
    anyhow::ensure!(
        args.call_timeout.is_finite() && args.call_timeout > 0.0,
        "--call-timeout: expected positive seconds, found {}",
        args.call_timeout
    );
    let token = if let Some(addr) = args.http {
        let token = secret(
            "--token",
            args.token.as_deref(),
            args.token_file.as_deref(),
            "ROBOBRAIN_TOKEN",
        )?;
        check_bind(addr, token.as_deref())?;
        token
    } else if args.token.is_some() || args.token_file.is_some() {
        anyhow::bail!("--token goes with --http (stdio needs none)");
    } else {
        None
    };
    let options = SessionOptions {
        pace: Pace::RealTime { speed: args.speed },
        log: args.log.clone(),
        mcap: args.mcap.clone(),
        keep_recent: RECENT_EVENTS,
        ..durable.options("mcp")?
    };
    let rt = crate::flags::async_runtime(2)?;
    rt.block_on(serve(config, options, token, args))
}

async fn serve(
    config: &Config,
    session: SessionOptions,
    token: Option<String>,
    args: &Args,
) -> Result<ExitCode> {
    let run = Run::assemble(config, session).await?;
    // A service that cannot start is named; the rest runs without it.
    for service in &run.info.services {
        if let Some(e) = &service.error {
            eprintln!("error: MCP service `{}` {e}", service.name);
        }
    }
    let thread_id = run.thread_id.clone();
    let options = Options {
        call_timeout: Duration::from_secs_f64(args.call_timeout),
        transport: args
            .http
            .map_or_else(|| "stdio".to_string(), |addr| format!("http {addr}")),
    };
    // The run (the engine with its world) is large: the future lives on the heap.
    let server = Box::pin(McpServer::start(run, options)).await?;
    let shutdown = CancellationToken::new();
    tokio::spawn(on_signal(shutdown.clone()));
    // Operator lines are read on a thread of their own and go straight to
    // the kernel; a blocked read never holds up the exit on a signal.
    let operator = server.runtime().sender();
    if let Some(path) = args.operator.clone() {
        let label = format!("--operator {}", path.display());
        let origin = Origin::new(Door::Headless, label.clone());
        forward(
            &label,
            move || std::fs::File::open(path),
            operator,
            origin,
            drop,
        );
    } else if args.http.is_some() {
        let origin = Origin::new(Door::Headless, "stdin of robobrain mcp --http");
        forward("stdin", || Ok(std::io::stdin()), operator, origin, drop);
    }
    match args.http {
        None => {
            eprintln!("robobrain mcp: thread {thread_id} on stdio");
            let running = server
                .clone()
                .serve(rmcp::transport::stdio())
                .await
                .context("the MCP session over stdio")?;
            tokio::select! {
                _ = running.waiting() => {}
                () = shutdown.cancelled() => {}
            }
        }
        Some(addr) => {
            let http =
                HttpServer::bind(server.clone(), addr, token.clone(), shutdown.clone()).await?;
            // Tests and scripts read the address (the real port) from this line.
            eprintln!(
                "robobrain mcp: thread {} serving http://{}{PATH}",
                thread_id, http.addr
            );
            http.serve().await?;
        }
    }
    server.session().stop().await?;
    Ok(ExitCode::SUCCESS)
}

/// Cancels `shutdown` on Ctrl-C or SIGTERM.
pub(crate) async fn on_signal(shutdown: CancellationToken) {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        if let Ok(mut term) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            tokio::select! {
                _ = ctrl_c => {}
                _ = term.recv() => {}
            }
            shutdown.cancel();
            return;
        }
    }
    let _ = ctrl_c.await;
    shutdown.cancel();
}
