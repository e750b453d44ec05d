//! The fleet end to end: a real mosquitto with passwords and the fleet
//! ACL, two robots each in its own `robobrain headless` process, and the
//! fleet console (`robobrain fleet`) in tmux — one approval queue across
//! the fleet, a robot opened into the single-robot view, E-stop all, and a
//! robot frozen (SIGSTOP) that the broker reports CONNECTIONBROKEN within
//! its keep-alive and that comes back ONLINE when it thaws.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use robobrain_core::fleet::testkit::{OPERATOR, fleet_broker, robot_password};

use crate::console::{Tmux, console_then_shell};
use crate::support::{quiet_config, root, temp_dir};

/// A robot's config in `dir`: quiet, on the broker at `port` as `id`.
pub(crate) fn robot_config(dir: &Path, id: &str, port: u16) -> std::path::PathBuf {
    let config = quiet_config(dir);
    let password = dir.join("password");
    std::fs::write(&password, robot_password(id)).unwrap();
    let text = std::fs::read_to_string(&config).unwrap();
    let text = text
        + &format!(
            "[fleet]\nbroker = \"mqtt://127.0.0.1:{port}\"\nrobot_id = \"{id}\"\nusername = \"{id}\"\n\
         password_file = {:?}\nkeep_alive_s = 2\n",
            password.display().to_string()
        );
    std::fs::write(&config, text).unwrap();
    config
}

/// Robot `id` as its own process, saying `say` at start.
pub(crate) fn robot(name: &str, id: &str, port: u16, say: &[&str]) -> Child {
    let dir = temp_dir(&format!("fleet-{name}-{id}"));
    let config = robot_config(&dir, id, port);
    let mut args = vec![
        "--config",
        config.to_str().unwrap(),
        "headless",
        "--speed",
        "4",
    ];
    for s in say {
        args.extend(["--say", s]);
    }
    // Its JSONL goes nowhere (the run's own log keeps it); stdin stays open.
    Command::new(env!("CARGO_BIN_EXE_robobrain"))
        .args(&args)
        .current_dir(root())
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("stderr.log")).unwrap())
        .spawn()
        .unwrap()
}

pub(crate) fn signal(child: &Child, sig: &str) {
    let status = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {sig} {}", child.id());
}

/// The table row of `robot` on the screen.
fn row<'s>(screen: &'s str, robot: &str) -> &'s str {
    screen
        .lines()
        .find(|l| {
            l.trim_start_matches(['│', ' ', '>'])
                .starts_with(&format!("{robot} "))
        })
        .unwrap_or("")
}

#[test]
fn one_console_supervises_and_approves_across_the_fleet() {
    let broker = fleet_broker("e2e", &["r1", "r2"], |_| String::new());
    let mut r1 = robot("e2e", "r1", broker.port, &["go to the study"]);
    let mut r2 = robot("e2e", "r2", broker.port, &[]);

    let dir = temp_dir("fleet-console");
    let config = quiet_config(&dir);
    let args = format!(
        "fleet --broker mqtt://127.0.0.1:{} --user {} --password-env ROBOBRAIN_TEST_FLEET_PW",
        broker.port, OPERATOR.0
    );
    let command = format!(
        "export ROBOBRAIN_TEST_FLEET_PW={}; {}",
        OPERATOR.1,
        console_then_shell(&config, &args)
    );
    let tmux = Tmux::start(&command, 160, 40);

    // Both robots, and r1's approval in the fleet's queue.
    let s = tmux.wait_for("both robots and r1's approval", 60, |s| {
        row(s, "r1").contains("ONLINE") && row(s, "r2").contains("ONLINE") && s.contains("study")
    });
    assert!(s.contains("2/2 robots online"), "{s}");
    assert!(s.contains("1 approval(s) waiting"), "{s}");

    // Approve it from the queue: r1 goes on to the study.
    tmux.keys(&["Tab"]);
    tmux.keys(&["a"]);
    let s = tmux.wait_for("the approval answered", 30, |s| {
        s.contains("no approval waiting")
    });
    assert!(s.contains("r1: "), "{s}");
    tmux.wait_for("r1 on its way", 30, |s| row(s, "r1").contains("EXEC"));

    // Open r2: today's single-robot console; Ctrl-F comes back.
    tmux.keys(&["Tab", "Down", "Enter"]);
    tmux.wait_for("r2's own console", 20, |s| {
        s.contains("mode IDLE") && s.contains("r2")
    });
    tmux.keys(&["C-f"]);
    tmux.wait_for("the fleet again", 20, |s| s.contains("robobrain fleet"));

    // E-stop all, asked first.
    tmux.keys(&["E"]);
    tmux.wait_for("the question", 10, |s| s.contains("E-STOP EVERY ROBOT?"));
    tmux.keys(&["y"]);
    tmux.wait_for("every robot stopped", 30, |s| {
        row(s, "r1").contains("ESTOP") && row(s, "r2").contains("ESTOP")
    });

    // r2 frozen: the broker says CONNECTIONBROKEN (its last will) within
    // 1.5 keep-alives; thawed, it reconnects and says ONLINE again.
    signal(&r2, "-STOP");
    tmux.wait_for("r2 broken", 30, |s| {
        row(s, "r2").contains("CONNECTIONBROKEN")
    });
    signal(&r2, "-CONT");
    tmux.wait_for("r2 back", 30, |s| row(s, "r2").contains("ONLINE"));

    tmux.keys(&["q"]);
    tmux.wait_for("the console to end", 20, |s| s.contains("exit=0"));
    for robot in [&mut r1, &mut r2] {
        signal(robot, "-TERM");
        robot.wait().unwrap();
    }
}
