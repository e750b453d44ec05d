//! The desktop app end to end: `robobrain-gui` under Xvfb, driven over
//! WebDriver by `tauri-driver` and Debian's `WebKitWebDriver` — say "go to
//! the kitchen"; typing in the chat leaves the approval waiting and a click
//! as the dialog opens is refused (the page's rule, in the app too); a click
//! after the guard approves; see the task finish in the kitchen;
//! the window's screenshot is kept in `target/ui-artifacts/gui.png`. The
//! driving script is `ui/tests/tauri-e2e.mjs` (plain WebDriver HTTP from
//! Node, no npm packages).

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// `name` on the PATH or in `~/.cargo/bin`.
fn tool(name: &str) -> Option<PathBuf> {
    let dirs = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>());
    let cargo_bin = std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo/bin"));
    dirs.chain(cargo_bin)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

#[test]
fn the_desktop_app_under_xvfb_says_approves_and_finishes() {
    let needed = ["xvfb-run", "tauri-driver", "WebKitWebDriver", "node"];
    let missing: Vec<_> = needed.iter().filter(|n| tool(n).is_none()).collect();
    if !missing.is_empty() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the desktop app test: missing {missing:?} (./x setup installs them)"
        );
        eprintln!("skipped: missing {missing:?} (./x setup installs them)");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let target = Path::new(env!("CARGO_BIN_EXE_robobrain-gui"))
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let artifacts = target.join("ui-artifacts");
    let out = Command::new(tool("xvfb-run").unwrap())
        .args([
            "-a",
            "-s",
            "-screen 0 1280x900x24",
            "node",
            "ui/tests/tauri-e2e.mjs",
        ])
        .current_dir(root)
        .env("ROBOBRAIN_GUI", env!("CARGO_BIN_EXE_robobrain-gui"))
        .env("TAURI_DRIVER", tool("tauri-driver").unwrap())
        .env("ROBOBRAIN_ARTIFACTS", &artifacts)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed, 0 failed"),
        "the desktop app e2e failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shot = std::fs::read(artifacts.join("gui.png")).unwrap();
    assert!(shot.starts_with(b"\x89PNG"), "the screenshot is a PNG");
    assert!(
        shot.len() > 10_000,
        "the screenshot shows a drawn window ({} bytes)",
        shot.len()
    );
}
