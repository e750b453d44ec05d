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

use robobrain_core::fleet::testkit::{OPERATOR, fleet_broker, robot_password};
use robobrain_core::testing::program;

/// What a driving script needs on this machine, and where its artifacts go.
struct Harness {
    xvfb_run: std::path::PathBuf,
    tauri_driver: std::path::PathBuf,
    root: std::path::PathBuf,
    artifacts: std::path::PathBuf,
}

impl Harness {
    fn new() -> Self {
        let xvfb_run = program("xvfb-run", "./x setup (Debian package xvfb)");
        let tauri_driver = program("tauri-driver", "./x setup (cargo install tauri-driver)");
        program(
            "WebKitWebDriver",
            "./x setup (Debian package webkit2gtk-driver)",
        );
        program("node", "./x setup (Node.js)");
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .to_path_buf();
        let target = Path::new(env!("CARGO_BIN_EXE_robobrain-gui"))
            .parent()
            .unwrap()
            .parent()
            .unwrap()
            .to_path_buf();
        Self {
            xvfb_run,
            tauri_driver,
            root,
            artifacts: target.join("ui-artifacts"),
        }
    }

    /// Runs `node SCRIPT` under Xvfb with the app, tauri-driver and `env`;
    /// asserts it ends with "1 passed, 0 failed".
    fn run(&self, script: &str, env: &[(&str, &str)], data: &Path) {
        let out = Command::new(&self.xvfb_run)
            .args(["-a", "-s", "-screen 0 1280x900x24", "node", script])
            .current_dir(&self.root)
            .env("ROBOBRAIN_GUI", env!("CARGO_BIN_EXE_robobrain-gui"))
            .env("TAURI_DRIVER", &self.tauri_driver)
            .env("ROBOBRAIN_ARTIFACTS", &self.artifacts)
            .env("XDG_DATA_HOME", data)
            .envs(env.iter().copied())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed, 0 failed"),
            "{script} failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A fresh data folder (Tauri's app data dir, under XDG_DATA_HOME).
fn data_folder(name: &str) -> std::path::PathBuf {
    let data = std::env::temp_dir().join(format!("rb-gui-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    data
}

#[test]
fn the_desktop_app_under_xvfb_says_approves_and_finishes() {
    let driver = Harness::new();
    let artifacts = driver.artifacts.clone();
    let data = data_folder("data");
    driver.run("ui/tests/tauri-e2e.mjs", &[], &data);
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

/// `robobrain-gui --fleet mqtt://…` on a real mosquitto (passwords, the
/// fleet ACL) with two robot brains (runs the session builder assembles in
/// this test's process, each on the broker as itself): the window shows
/// the board with both robots ONLINE, and one clicked opens its own view
/// (`ui/tests/tauri-fleet-e2e.mjs`).
#[test]
fn the_desktop_app_shows_the_fleet_on_a_broker() {
    use robobrain_core::config::Config;
    use robobrain_core::runtime::Pace;
    use robobrain_core::session::{Session, SessionOptions};

    let driver = Harness::new();
    let ids = ["gr1", "gr2"];
    let broker = fleet_broker("gui", &ids, |_| String::new());
    let dir = data_folder("fleet-robots");
    std::fs::create_dir_all(&dir).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let robots: Vec<Session> = ids
        .iter()
        .map(|id| {
            let password = dir.join(format!("{id}.password"));
            std::fs::write(&password, robot_password(id)).unwrap();
            let mut config = Config {
                runs_dir: dir.join(id),
                ..Config::default()
            };
            config.memory.enabled = false;
            config.speech.voice = robobrain_core::voice::VoiceChoice::Text;
            config.fleet.broker = Some(format!("mqtt://127.0.0.1:{}", broker.port));
            config.fleet.robot_id = (*id).to_string();
            config.fleet.username = Some((*id).to_string());
            config.fleet.password_file = Some(password);
            let options = SessionOptions {
                pace: Pace::RealTime { speed: 1.0 },
                ..SessionOptions::new("headless")
            };
            rt.block_on(Session::open(&config, options)).unwrap()
        })
        .collect();
    let url = format!("mqtt://127.0.0.1:{}", broker.port);
    driver.run(
        "ui/tests/tauri-fleet-e2e.mjs",
        &[
            ("ROBOBRAIN_FLEET_BROKER", url.as_str()),
            ("ROBOBRAIN_FLEET_ROBOTS", &ids.join(",")),
            ("ROBOBRAIN_TEST_FLEET_PW", OPERATOR.1),
        ],
        &data_folder("fleet"),
    );
    for robot in &robots {
        rt.block_on(robot.stop()).unwrap();
    }
    let shot = std::fs::read(driver.artifacts.join("gui-fleet.png")).unwrap();
    assert!(shot.starts_with(b"\x89PNG"), "the screenshot is a PNG");
}
