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

fn main() -> anyhow::Result<()> {
    let speed: f64 = std::env::var("ROBOBRAIN_SPEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    let config = config()?;
    // The app has no terminal: its diagnostics go to a file per run.
    let verbosity = 0;
    let sink = Sink::FileIn(config.runs_dir.join("logs"), "desktop");
    robobrain_core::diagnostics::init(&sink, verbosity).context("the diagnostics log")?;
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
