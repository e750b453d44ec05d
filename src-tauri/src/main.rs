//! `robobrain-gui`: the desktop app. Reads `robobrain.toml` (or the file in
//! `ROBOBRAIN_CONFIG`) and the environment like `robobrain`, runs the run
//! the session builder assembles in this process (at `ROBOBRAIN_SPEED`,
//! recorded as MCAP in `ROBOBRAIN_MCAP` when set, as `--mcap` does), and
//! shows the web console's page.

use anyhow::Context;
use robobrain_core::config::Config;
use tauri::Manager;
use tauri_plugin_notification::NotificationExt;

fn config() -> anyhow::Result<Config> {
    let path = std::env::var_os("ROBOBRAIN_CONFIG").map(std::path::PathBuf::from);
    Config::layered(path.as_deref(), |name| std::env::var(name).ok()).context("the configuration")
}

fn main() -> anyhow::Result<()> {
    let speed: f64 = std::env::var("ROBOBRAIN_SPEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    let mcap = std::env::var_os("ROBOBRAIN_MCAP").map(std::path::PathBuf::from);
    let (core, events) = robobrain_gui::Core::start(&config()?, speed, mcap)?;
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
