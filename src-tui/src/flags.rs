//! What the subcommands share: the help of `--log` and `--mcap`, the global flags
//! (`--robot`, `--thread`, `--resume`, `--db`) as the session builder's
//! options, and the async runtime a session runs on. Below `cli.rs` and
//! every subcommand, so no subcommand reaches back into `cli.rs`.

use anyhow::{Context, Result};
use robobrain_core::session::{RobotUrl, SessionOptions};
use tokio::runtime::Runtime;

/// Help for `--log`.
pub(crate) const LOG_HELP: &str = "Event log file (default: <runs_dir>/<thread_id>.jsonl)";
/// Help for `--mcap`.
pub(crate) const MCAP_HELP: &str =
    "Also record the run as an MCAP file for Foxglove (docs/foxglove.md)";

/// The durability and robot flags, as given.
#[derive(Debug, Clone, Default)]
pub(crate) struct Durability {
    /// `--resume`: continue the thread from its last checkpoint.
    pub resume: bool,
    /// `--robot URL`.
    pub robot: Option<String>,
    /// Whether to record the run in the database (`--thread` or `--db`).
    pub record: bool,
}

impl Durability {
    /// The session options of face `face` with these flags applied.
    pub(crate) fn options(&self, face: &'static str) -> Result<SessionOptions> {
        let robot = match &self.robot {
            Some(url) => Some(url.parse::<RobotUrl>().context("--robot")?),
            None => None,
        };
        Ok(SessionOptions {
            robot,
            resume: self.resume,
            record: self.record,
            ..SessionOptions::new(face)
        })
    }
}

/// The async runtime a subcommand runs its session on: `workers` threads
/// (the kernel has its own; the MCP services' workers and the run's
/// recorder run here, in lockstep runs too).
pub(crate) fn async_runtime(workers: usize) -> Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// A secret a subcommand takes: `--NAME VALUE` (visible to every user of
/// the machine in `ps`: a warning says so), `--NAME-file FILE`, or the
/// environment variable `env`, in that order.
pub(crate) fn secret(
    flag: &str,
    given: Option<&str>,
    file: Option<&std::path::Path>,
    env: &str,
) -> Result<Option<String>> {
    if let Some(value) = given {
        warn_visible(flag, &format!("{env}=… or {flag}-file FILE"));
        return Ok(Some(value.to_string()));
    }
    if let Some(path) = file {
        if robobrain_core::secrets::readable_by_others(path) {
            eprintln!(
                "warning: {} can be read by other users (chmod 600 it)",
                path.display()
            );
        }
        return robobrain_core::secrets::from_file(path)
            .map(Some)
            .with_context(|| format!("{flag}-file"));
    }
    Ok(robobrain_core::secrets::from_env(env).ok())
}

/// Says on stderr that the secret `what` was given on the command line,
/// where every user of the machine sees it (`ps`), and what to use instead.
pub(crate) fn warn_visible(what: &str, instead: &str) {
    eprintln!(
        "warning: {what} on the command line is visible to other users of this machine (ps); use {instead}"
    );
}

/// How a console logs in to a fleet's MQTT broker (`robobrain fleet`,
/// `robobrain serve --fleet`): a user, its password from the environment or
/// a file — never a flag's value, which `ps` shows — and the CA for mqtts://.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct BrokerLogin {
    /// The user name on the broker (the operator role may command and approve).
    #[arg(long, value_name = "NAME")]
    pub user: Option<String>,
    /// The environment variable holding the password.
    #[arg(long, value_name = "VAR")]
    pub password_env: Option<String>,
    /// The file holding the password.
    #[arg(long, value_name = "FILE", conflicts_with = "password_env")]
    pub password_file: Option<std::path::PathBuf>,
    /// The CA certificate (PEM) for mqtts://.
    #[arg(long, value_name = "FILE")]
    pub ca: Option<std::path::PathBuf>,
}

impl BrokerLogin {
    /// Whether any of it was given.
    pub(crate) fn given(&self) -> bool {
        self.user.is_some()
            || self.password_env.is_some()
            || self.password_file.is_some()
            || self.ca.is_some()
    }

    /// The connection to the broker at `url`, as the client `client_id`.
    pub(crate) fn connection(
        &self,
        url: &str,
        client_id: String,
    ) -> Result<robobrain_core::devices::mqtt::MqttConfig> {
        let mut mqtt = robobrain_core::fleet::connection(
            url,
            self.user.as_deref(),
            self.password_env.as_deref(),
            self.password_file.as_deref(),
            self.ca.as_deref(),
        )?;
        mqtt.client_id = client_id;
        Ok(mqtt)
    }
}
