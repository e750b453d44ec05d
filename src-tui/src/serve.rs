//! `robobrain serve`: the brain on the simulated robot (as `robobrain
//! headless` sets it up) with the web console — the page over HTTP and the
//! protocol over a WebSocket ([`robobrain_tui::web`]). Localhost only unless
//! `--token` is given; `--viewer-token` lets others watch without commanding.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use robobrain_core::config::Config;
use robobrain_core::mapview::MapView;
use robobrain_core::protocol::Command;
use robobrain_core::runtime::{Pace, Runtime};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use robobrain_tui::session::{self, Durability};
use robobrain_tui::web::{Access, Served, WebServer, access};

/// Events kept for viewers that reconnect.
const RECENT_EVENTS: usize = 20_000;

/// Arguments of `robobrain serve`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Address to serve on (port 0 picks a free one).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7878")]
    pub listen: SocketAddr,
    /// The operator's token; required beyond loopback (pages connect with ?token=…).
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// A token for read-only viewers (they watch; their commands are refused).
    #[arg(long, value_name = "TOKEN")]
    pub viewer_token: Option<String>,
    /// Sim seconds per wall second.
    #[arg(long, value_name = "N", default_value_t = 1.0)]
    pub speed: f64,
    /// Say this at start (repeatable).
    #[arg(long, value_name = "TEXT")]
    pub say: Vec<String>,
    #[arg(long, value_name = "FILE", help = crate::cli::LOG_HELP)]
    pub log: Option<PathBuf>,
}

/// Serves until Ctrl-C or SIGTERM.
pub fn run(config: Config, args: &Args, durable: &Durability) -> Result<ExitCode> {
    crate::cli::check_speed(args.speed)?;
    access::check_bind(args.listen, args.token.as_deref()).map_err(anyhow::Error::msg)?;
    let (session, rt) = crate::cli::served_session(config, "serve", args.log.as_deref(), durable)?;
    rt.block_on(serve(session, args))
}

async fn serve(session: session::Session, args: &Args) -> Result<ExitCode> {
    let mut engine = session.engine;
    let skills = engine
        .registry_mut()
        .specs()
        .map(|s| json!({"name": s.name, "description": s.description, "args_schema": s.args_schema, "risk": s.risk}))
        .collect();
    let (runtime, events) = Runtime::start_subscribed(engine, Pace::RealTime { speed: args.speed });
    let recent = robobrain_tui::recorder::start(RECENT_EVENTS, events, Some(session.log));
    for text in &args.say {
        runtime.send(Command::Say { text: text.clone() }).await?;
    }
    let served = Arc::new(Served {
        runtime,
        recent,
        map: MapView::of(&session.world),
        skills,
        access: Access {
            token: args.token.clone(),
            viewer_token: args.viewer_token.clone(),
            loopback: args.listen.ip().is_loopback(),
        },
    });
    let server = WebServer::bind(Arc::clone(&served), args.listen).await?;
    // Tests and scripts read the address (the real port) from this line.
    eprintln!(
        "robobrain serve: thread {} at http://{}/",
        session.thread_id, server.addr
    );
    let shutdown = CancellationToken::new();
    tokio::spawn(crate::mcpserve::on_signal(shutdown.clone()));
    server.serve(shutdown).await?;
    // The robot is at rest and the thread closed before the process ends.
    served.runtime.stop().await;
    Ok(ExitCode::SUCCESS)
}
