//! The fleet page end to end (`robobrain serve --fleet`): a real mosquitto
//! with passwords and the fleet ACL, two robots each in its own `robobrain
//! headless`, the server logged in as the operator (password from the
//! environment), and the page in headless Chromium (`ui/tests/fleet-e2e.mjs`):
//! the board, one approval queue given only by an operator's deliberate
//! click (a viewer's approve refused), a robot opened into its own view
//! whose E-stop reaches it alone, E-stop all, and a frozen robot shown
//! CONNECTIONBROKEN.

use std::process::{Command, Stdio};

use robobrain_core::fleet::testkit::{OPERATOR, fleet_broker};

use crate::fleet::{robot, signal};
use crate::support::{after_stderr_line, quiet_config, root, temp_dir};

/// `robobrain serve --fleet` on the broker at `port`, logged in as the
/// operator; kills it when dropped.
struct FleetServer {
    child: std::process::Child,
    url: String,
}

impl Drop for FleetServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve_fleet(port: u16) -> FleetServer {
    let dir = temp_dir("fleet-page-serve");
    let config = quiet_config(&dir);
    let mut child = Command::new(env!("CARGO_BIN_EXE_robobrain"))
        .arg("--config")
        .arg(&config)
        .args(["serve", "--listen", "127.0.0.1:0", "--fleet"])
        .arg(format!("mqtt://127.0.0.1:{port}"))
        .args([
            "--user",
            OPERATOR.0,
            "--password-env",
            "ROBOBRAIN_TEST_FLEET_PW",
        ])
        .env("ROBOBRAIN_TEST_FLEET_PW", OPERATOR.1)
        .current_dir(root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The address it serves at, after "the fleet on mqtt://… at ".
    let (at, _rest) = after_stderr_line(
        &mut child,
        " at http://",
        "serve --fleet ended before serving",
    );
    let url = format!("http://{at}");
    FleetServer { child, url }
}

#[test]
fn the_fleet_page_supervises_approves_and_stops_every_robot() {
    crate::web::chromium();
    let broker = fleet_broker("page", &["r1", "r2"], |_| String::new());
    let mut r1 = robot("page", "r1", broker.port, &["go to the study"]);
    let mut r2 = robot("page", "r2", broker.port, &[]);
    let server = serve_fleet(broker.port);
    let artifacts = root().join("target/ui-artifacts");
    let out = Command::new("node")
        .arg("ui/tests/fleet-e2e.mjs")
        .current_dir(root())
        .env("ROBOBRAIN_FLEET_URL", &server.url)
        .env("R1_PID", r1.id().to_string())
        .env("R2_PID", r2.id().to_string())
        .env("ROBOBRAIN_ARTIFACTS", &artifacts)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    drop(server);
    for robot in [&mut r1, &mut r2] {
        signal(robot, "-CONT");
        signal(robot, "-TERM");
        robot.wait().unwrap();
    }
    assert!(
        out.status.success() && stdout.contains("6 passed, 0 failed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        artifacts.join("fleet.png").exists(),
        "the screenshot is kept"
    );
}

/// Credentials go with `--fleet`, and the password is never a flag's value.
#[test]
fn serve_takes_broker_credentials_only_with_fleet() {
    let out = crate::support::robobrain(&["serve", "--user", "operator"], "");
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains("they go with --fleet URL"),
        "{}",
        out.stderr
    );
    let out = crate::support::robobrain(
        &["serve", "--fleet", "mqtt://127.0.0.1:1", "--password", "x"],
        "",
    );
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("--password"), "{}", out.stderr);
}
