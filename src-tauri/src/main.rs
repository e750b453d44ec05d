//! `robobrain-gui`: the desktop app. Reads its config like `robobrain`
//! (the file in `ROBOBRAIN_CONFIG`, else `./robobrain.toml`, else its own
//! config folder, then the environment), keeps its data in its own data
//! folder — Tauri's app config and data dirs,
//! `~/.config/dev.robobrain.gui/` and `~/.local/share/dev.robobrain.gui/`
//! ([`robobrain_core::places`]) — runs the run the session builder
//! assembles in this process (at `ROBOBRAIN_SPEED`, recorded as MCAP in
//! `ROBOBRAIN_MCAP` when set, as `--mcap` does), and shows the web
//! console's page.

use anyhow::Context;
use robobrain_core::config::Config;
use robobrain_core::diagnostics::Sink;
use tauri::Manager;
use tauri_plugin_notification::NotificationExt;

/// The same allocator as `robobrain` (docs/benchmarks/durable.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The app's identifier in tauri.conf.json.
const IDENTIFIER: &str = "dev.robobrain.gui";

fn config() -> anyhow::Result<Config> {
    let path = std::env::var_os("ROBOBRAIN_CONFIG").map(std::path::PathBuf::from);
    let env = |name: &str| std::env::var(name).ok();
    // Tauri's identifier (tauri.conf.json): the folders Tauri's
    // `app_config_dir` / `app_data_dir` name.
    let places = robobrain_core::places::Places::for_app(IDENTIFIER, env);
    Config::layered_in(&places, path.as_deref(), env).context("the configuration")
}

/// The desktop app's command line: with `--fleet`, the page's fleet view
/// of every robot on an MQTT broker instead of a run of its own.
#[derive(Debug, clap::Parser)]
#[command(name = "robobrain-gui", version, about)]
struct Args {
    /// Show the fleet on this MQTT broker (mqtt://HOST:PORT or mqtts://HOST:PORT).
    #[arg(long, value_name = "URL")]
    fleet: Option<String>,
    /// With --fleet: the user name on the broker.
    #[arg(long, value_name = "NAME", requires = "fleet")]
    user: Option<String>,
    /// With --fleet: the environment variable holding the password.
    #[arg(long, value_name = "VAR", requires = "fleet")]
    password_env: Option<String>,
    /// With --fleet: the file holding the password.
    #[arg(
        long,
        value_name = "FILE",
        requires = "fleet",
        conflicts_with = "password_env"
    )]
    password_file: Option<std::path::PathBuf>,
    /// With --fleet: the CA certificate (PEM) for mqtts://.
    #[arg(long, value_name = "FILE", requires = "fleet")]
    ca: Option<std::path::PathBuf>,
}

/// The fleet window: the page's fleet view of every robot on `url`.
fn fleet(args: &Args, url: &str) -> anyhow::Result<()> {
    let mut mqtt = robobrain_core::fleet::connection(
        url,
        args.user.as_deref(),
        args.password_env.as_deref(),
        args.password_file.as_deref(),
        args.ca.as_deref(),
    )?;
    mqtt.client_id = format!("robobrain-gui-{}", std::process::id());
    let (core, window) = robobrain_gui::FleetCore::start(&mqtt, url);
    robobrain_gui::with_fleet(tauri::Builder::default(), core)
        .plugin(tauri_plugin_notification::init())
        .setup(move |app| {
            let handle = app.handle().clone();
            tauri::async_runtime::spawn(robobrain_gui::forward_fleet(
                handle,
                window,
                |app, title, body| {
                    let _ = app.notification().builder().title(title).body(body).show();
                },
            ));
            if let Some(w) = app.get_webview_window("main") {
                let _ = w.set_title("robobrain fleet");
            }
            Ok(())
        })
        .run(tauri::generate_context!())
        .context("the desktop app")
}

fn main() -> anyhow::Result<()> {
    use clap::Parser;
    let args = Args::parse();
    let speed: f64 = std::env::var("ROBOBRAIN_SPEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    let config = config()?;
    // The app has no terminal: its diagnostics go to a file per run.
    let verbosity = 0;
    let sink = Sink::FileIn(config.runs_dir.join("logs"), "desktop");
    robobrain_core::diagnostics::init(&sink, verbosity).context("the diagnostics log")?;
    if let Some(url) = &args.fleet {
        return fleet(&args, url);
    }
    let mcap = std::env::var_os("ROBOBRAIN_MCAP").map(std::path::PathBuf::from);
    let (core, events) = robobrain_gui::Core::start(&config, speed, mcap)?;
    robobrain_gui::with_core(tauri::Builder::default(), core)
        .plugin(tauri_plugin_notification::init())
        .setup(move |app| {
            let handle = app.handle().clone();
            tauri::async_runtime::spawn(robobrain_gui::forward(
                handle,
                events,
                |app, title, body| {
                    let _ = app.notification().builder().title(title).body(body).show();
                },
            ));
            if let Some(window) = app.get_webview_window("main") {
                let _ = window.set_title("robobrain");
            }
            Ok(())
        })
        .run(tauri::generate_context!())
        .context("the desktop app")
}

#[cfg(test)]
mod tests {
    /// The folders are Tauri's only while the identifier is Tauri's.
    #[test]
    fn the_identifier_is_the_one_tauri_uses() {
        let conf: serde_json::Value =
            serde_json::from_str(include_str!("../tauri.conf.json")).unwrap();
        assert_eq!(conf["identifier"], super::IDENTIFIER);
    }
}
