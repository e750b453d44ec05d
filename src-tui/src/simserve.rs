//! `robobrain sim --listen ADDR`: the simulated robot as its own process,
//! so a brain can be killed and resumed while the robot keeps moving —
//! until its dead-man (`[link] deadman_s`) brings the base to rest.

use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
use robobrain_core::config::Config;
use robobrain_core::{
    sim::{Sim, SimServer},
    world::World,
};

/// Arguments of `robobrain sim`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Address to listen on; port 0 picks a free port (printed on stdout).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7000")]
    pub listen: String,
    /// Append every goal received (repeats included) to this JSONL file.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Sim seconds per wall second.
    #[arg(long, value_name = "N", default_value_t = 1.0)]
    pub speed: f64,
}

/// Serves until the process is stopped.
pub(crate) fn run(config: &Config, args: &Args) -> Result<ExitCode> {
    anyhow::ensure!(
        args.speed.is_finite() && args.speed > 0.0,
        "--speed: expected a positive number of sim seconds per wall second, found {}",
        args.speed
    );
    let world = World::resolve(&config.world)?;
    let mut server = SimServer::new(Sim::new(world, config.seed), config.tick_s, args.speed)
        .with_deadman(config.link.deadman_s);
    if let Some(path) = &args.record {
        server.record_to(path)?;
    }
    let listener = TcpListener::bind(&args.listen)
        .with_context(|| format!("--listen {}: cannot listen there", args.listen))?;
    let addr = listener.local_addr().context("the listening address")?;
    let mut out = std::io::stdout();
    writeln!(out, "listening on tcp://{addr}")?;
    out.flush()?;
    server.serve(listener, &Arc::new(AtomicBool::new(false)))?;
    Ok(ExitCode::SUCCESS)
}
