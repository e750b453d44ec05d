//! The desktop app end to end: `robobrain-gui` under Xvfb, driven over
//! WebDriver by `tauri-driver` and Debian's `WebKitWebDriver` — say "go to
//! the kitchen"; typing in the chat leaves the approval waiting and a click
//! as the dialog opens is refused (the page's rule, in the app too); a click
//! after the guard approves; see the task finish in the kitchen;
//! the window's screenshot is kept in `target/ui-artifacts/gui.png`. The
//! driving script is `ui/tests/tauri-e2e.mjs` (plain WebDriver HTTP from
//! Node, no npm packages).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;

use robobrain_core::testing::program;

#[test]
fn the_desktop_app_under_xvfb_says_approves_and_finishes() {
    let xvfb_run = program("xvfb-run", "./x setup (Debian package xvfb)");
    let tauri_driver = program("tauri-driver", "./x setup (cargo install tauri-driver)");
    program(
        "WebKitWebDriver",
        "./x setup (Debian package webkit2gtk-driver)",
    );
    program("node", "./x setup (Node.js)");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let target = Path::new(env!("CARGO_BIN_EXE_robobrain-gui"))
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let artifacts = target.join("ui-artifacts");
    // Its own data folder (Tauri's app data dir, under XDG_DATA_HOME).
    let data = std::env::temp_dir().join(format!("rb-gui-data-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    let out = Command::new(xvfb_run)
        .args([
            "-a",
            "-s",
            "-screen 0 1280x900x24",
            "node",
            "ui/tests/tauri-e2e.mjs",
        ])
        .current_dir(root)
        .env("ROBOBRAIN_GUI", env!("CARGO_BIN_EXE_robobrain-gui"))
        .env("TAURI_DRIVER", tauri_driver)
        .env("ROBOBRAIN_ARTIFACTS", &artifacts)
        .env("XDG_DATA_HOME", &data)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed, 0 failed"),
        "the desktop app e2e failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Its diagnostics went to a log file in its own data folder, not to a
    // terminal it does not have nor to the folder it was started from.
    let logs = data.join("dev.robobrain.gui/logs");
    let log = std::fs::read_dir(&logs)
        .unwrap_or_else(|e| panic!("{}: {e}", logs.display()))
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().starts_with("desktop-"))
        .unwrap_or_else(|| panic!("no desktop-*.log in {}", logs.display()));
    let text = std::fs::read_to_string(log.path()).unwrap();
    assert!(text.contains("desktop started"), "{text}");
    let shot = std::fs::read(artifacts.join("gui.png")).unwrap();
    assert!(shot.starts_with(b"\x89PNG"), "the screenshot is a PNG");
    assert!(
        shot.len() > 10_000,
        "the screenshot shows a drawn window ({} bytes)",
        shot.len()
    );
}
