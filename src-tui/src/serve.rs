//! `robobrain serve`: the run the session builder assembles, with the web
//! console — the page over HTTP and the
//! protocol over a WebSocket ([`robobrain_tui::web`]). Localhost only unless
//! `--token` is given; `--viewer-token` lets others watch without commanding.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use robobrain_core::config::Config;
use robobrain_core::runtime::Pace;
use robobrain_core::session::{Session, SessionOptions};
use tokio_util::sync::CancellationToken;

use robobrain_tui::web::{Access, Served, WebServer, access};

use crate::flags::{Durability, LOG_HELP, MCAP_HELP, secret};

/// Events kept for viewers that reconnect.
const RECENT_EVENTS: usize = 20_000;

/// Arguments of `robobrain serve`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Address to serve on (port 0 picks a free one).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7878")]
    pub listen: SocketAddr,
    /// The operator's token; required beyond loopback (pages connect with
    /// ?token=…). Visible in `ps`: prefer --token-file or ROBOBRAIN_TOKEN.
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// The operator's token, read from FILE (one line; mode 0600).
    #[arg(long, value_name = "FILE", conflicts_with = "token")]
    pub token_file: Option<PathBuf>,
    /// A token for read-only viewers (they watch; their commands are
    /// refused). Or --viewer-token-file, or ROBOBRAIN_VIEWER_TOKEN.
    #[arg(long, value_name = "TOKEN")]
    pub viewer_token: Option<String>,
    /// The viewers' token, read from FILE.
    #[arg(long, value_name = "FILE", conflicts_with = "viewer_token")]
    pub viewer_token_file: Option<PathBuf>,
    /// Sim seconds per wall second.
    #[arg(long, value_name = "N", default_value_t = 1.0)]
    pub speed: f64,
    /// Say this at start (repeatable).
    #[arg(long, value_name = "TEXT")]
    pub say: Vec<String>,
    #[arg(long, value_name = "FILE", help = LOG_HELP)]
    pub log: Option<PathBuf>,
    #[arg(long, value_name = "FILE", help = MCAP_HELP)]
    pub mcap: Option<PathBuf>,
}

/// Serves until Ctrl-C or SIGTERM.
pub fn run(config: &Config, args: &Args, durable: &Durability) -> Result<ExitCode> {
    let access = Access {
        token: secret(
            "--token",
            args.token.as_deref(),
            args.token_file.as_deref(),
            "ROBOBRAIN_TOKEN",
        )?,
        viewer_token: secret(
            "--viewer-token",
            args.viewer_token.as_deref(),
            args.viewer_token_file.as_deref(),
            "ROBOBRAIN_VIEWER_TOKEN",
        )?,
        loopback: args.listen.ip().is_loopback(),
    };
    access::check_bind(args.listen, access.token.as_deref()).map_err(anyhow::Error::msg)?;
    let options = SessionOptions {
        pace: Pace::RealTime { speed: args.speed },
        log: args.log.clone(),
        mcap: args.mcap.clone(),
        say: args.say.clone(),
        keep_recent: RECENT_EVENTS,
        ..durable.options("serve")?
    };
    let rt = crate::flags::async_runtime(2)?;
    rt.block_on(async {
        let session = Session::open(config, options).await?;
        for service in &session.info().services {
            if let Some(e) = &service.error {
                eprintln!("error: MCP service `{}` {e}", service.name);
            }
        }
        serve(session, access, args).await
    })
}

async fn serve(session: Session, access: Access, args: &Args) -> Result<ExitCode> {
    let served = Arc::new(Served { session, access });
    let server = WebServer::bind(Arc::clone(&served), args.listen).await?;
    // Tests and scripts read the address (the real port) from this line.
    eprintln!("robobrain serve: {}", served.session.info().summary());
    eprintln!(
        "robobrain serve: thread {} at http://{}/",
        served.session.thread_id(),
        server.addr
    );
    let shutdown = CancellationToken::new();
    tokio::spawn(crate::mcpserve::on_signal(shutdown.clone()));
    server.serve(shutdown).await?;
    served.session.stop().await?;
    Ok(ExitCode::SUCCESS)
}
