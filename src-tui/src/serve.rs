//! `robobrain serve`: the run the session builder assembles, with the web
//! console — the page over HTTP and the
//! protocol over a WebSocket ([`robobrain_tui::web`]). Localhost only unless
//! `--token` is given; `--viewer-token` lets others watch without commanding;
//! HTTPS and `wss://` with `--tls-cert` and `--tls-key`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use robobrain_core::config::Config;
use robobrain_core::runtime::Pace;
use robobrain_core::session::{Session, SessionOptions};
use tokio_util::sync::CancellationToken;

use robobrain_tui::web::{Access, FleetServed, Served, WebServer, access, tls};
use tokio_rustls::rustls::ServerConfig;

use crate::flags::{BrokerLogin, Durability, LOG_HELP, MCAP_HELP, secret};

/// Events kept for viewers that reconnect.
const RECENT_EVENTS: usize = 20_000;

/// Arguments of `robobrain serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
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
    /// Serve HTTPS and wss:// with this certificate (PEM; the chain, the
    /// server's own first) instead of plain HTTP; needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key (PEM) of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
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
    /// Serve the fleet on this MQTT broker (mqtt://HOST:PORT or
    /// mqtts://HOST:PORT) instead of a run of its own: every robot, one
    /// approval queue, each robot's own view (docs/fleet.md).
    #[arg(long, value_name = "URL", conflicts_with_all = ["say", "log", "mcap"])]
    pub fleet: Option<String>,
    /// With --fleet: how to log in to the broker.
    #[command(flatten)]
    pub login: BrokerLogin,
}

/// Serves until Ctrl-C or SIGTERM.
pub(crate) fn run(config: &Config, args: &Args, durable: &Durability) -> Result<ExitCode> {
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
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(tls::server_config(cert, key).context("--tls-cert")?),
        _ => None,
    };
    if let Some(url) = &args.fleet {
        anyhow::ensure!(
            !durable.record && !durable.resume && durable.robot.is_none(),
            "serve --fleet has no run of its own: --thread, --db, --resume and --robot do not go with it"
        );
        let mqtt = args
            .login
            .connection(url, format!("robobrain-serve-{}", std::process::id()))?;
        let rt = crate::flags::async_runtime(2)?;
        return rt.block_on(serve_fleet(&mqtt, url, access, args.listen, tls));
    }
    anyhow::ensure!(
        !args.login.given(),
        "--user, --password-env, --password-file and --ca log in to a fleet's broker: they go with --fleet URL"
    );
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
        serve(session, access, args.listen, tls).await
    })
}

async fn serve(
    session: Session,
    access: Access,
    listen: SocketAddr,
    tls: Option<Arc<ServerConfig>>,
) -> Result<ExitCode> {
    let served = Arc::new(Served { session, access });
    let server = WebServer::bind(Arc::clone(&served), listen)
        .await?
        .with_tls(tls);
    // Tests and scripts read the address (the real port) from this line.
    eprintln!("robobrain serve: {}", served.session.info().summary());
    eprintln!(
        "robobrain serve: thread {} at {}://{}/",
        served.session.thread_id(),
        server.scheme(),
        server.addr
    );
    let shutdown = CancellationToken::new();
    tokio::spawn(crate::mcpserve::on_signal(shutdown.clone()));
    server.serve(shutdown).await?;
    served.session.stop().await?;
    Ok(ExitCode::SUCCESS)
}

/// Serves the fleet on the broker `mqtt` names until Ctrl-C or SIGTERM.
async fn serve_fleet(
    mqtt: &robobrain_core::devices::mqtt::MqttConfig,
    url: &str,
    access: Access,
    listen: SocketAddr,
    tls: Option<Arc<ServerConfig>>,
) -> Result<ExitCode> {
    let hub = Arc::new(robobrain_core::fleet::hub::FleetHub::start(mqtt, url));
    let served = Arc::new(FleetServed { hub, access });
    let server = WebServer::bind_fleet(served, listen).await?.with_tls(tls);
    // Tests and scripts read the address (the real port) from this line.
    eprintln!(
        "robobrain serve: the fleet on {url} at {}://{}/",
        server.scheme(),
        server.addr
    );
    let shutdown = CancellationToken::new();
    tokio::spawn(crate::mcpserve::on_signal(shutdown.clone()));
    server.serve(shutdown).await?;
    Ok(ExitCode::SUCCESS)
}
