//! The console end to end, as a new user meets it: `robobrain` with no
//! arguments in a real terminal (tmux, on a server of its own), typed at
//! with `send-keys`, read with `capture-pane`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::{root, temp_dir};

/// A tmux server for one test, killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(command: &str, width: u16, height: u16) -> Self {
        let version = Command::new("tmux").arg("-V").output();
        assert!(
            version.is_ok_and(|o| o.status.success()),
            "the console test needs tmux (`./x setup` installs it)"
        );
        let tmux = Self {
            socket: format!("robobrain-e2e-{}", std::process::id()),
        };
        tmux.run(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            "-s",
            "main",
            command,
        ]);
        tmux
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .env("LANG", "C.UTF-8")
            .env("LC_ALL", "C.UTF-8")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "main"])
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "main"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    fn type_text(&self, text: &str) {
        self.run(&["send-keys", "-t", "main", "-l", text]);
        self.keys(&["Enter"]);
    }

    /// Waits until the screen passes `ok`, failing with the screen after `secs`.
    fn wait_for(&self, what: &str, secs: u64, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(secs),
                "waited {secs} s for {what}; the screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// Where the robot's arrow is on the screen (row, column in chars).
fn robot(screen: &str) -> Option<(usize, usize)> {
    screen.lines().enumerate().find_map(|(r, line)| {
        line.chars()
            .position(|c| "→↘↓↙←↖↑↗".contains(c))
            .map(|c| (r, c))
    })
}

#[test]
fn a_new_user_sends_the_robot_to_the_kitchen_approves_and_stops_it() {
    let dir = temp_dir("console");
    let config = dir.join("robobrain.toml");
    std::fs::write(
        &config,
        format!(
            "runs_dir = {:?}\n[policy]\napprove_risks = [\"low_write\", \"high_write\"]\n",
            dir.to_str().unwrap()
        ),
    )
    .unwrap();
    // The shell stays after the console exits, so its last words can be read.
    let command = format!(
        "cd {} && NO_COLOR=1 {} --config {}; echo exit=$?; sleep 600",
        shell(&root()),
        shell(Path::new(env!("CARGO_BIN_EXE_robobrain"))),
        shell(&config)
    );
    let tmux = Tmux::start(&command, 120, 40);
    let first = tmux.wait_for("the first frame", 20, |s| {
        s.contains("robobrain") && s.contains("mode IDLE")
    });
    let start = robot(&first).expect("the robot is on the map");

    tmux.type_text("去厨房");
    let s = tmux.wait_for("the approval prompt", 30, |s| s.contains("Approval 1 of 1"));
    assert!(s.contains("navigate_to kitchen"), "{s}");
    assert!(s.contains("route: living_room → kitchen"), "{s}");
    assert!(s.contains("heard “去厨房”"), "the utterance renders:\n{s}");

    tmux.keys(&["a"]);
    tmux.wait_for("the robot to move", 30, |s| {
        robot(s).is_some_and(|p| p != start) && s.contains("mode EXEC")
    });
    let s = tmux.wait_for("the task to finish", 60, |s| {
        s.contains("FINISH") && s.contains("succeeded")
    });
    assert!(s.contains("in kitchen"), "{s}");

    // Off again, and the E-stop key stops it on the way.
    tmux.type_text("去卧室");
    tmux.wait_for("the second approval", 30, |s| s.contains("Approval 1 of 1"));
    tmux.keys(&["a"]);
    let moving = tmux.wait_for("the robot to leave the kitchen", 30, |s| {
        s.contains("navigate_to bedroom") && s.contains("mode EXEC")
    });
    tmux.keys(&["F12"]);
    let stopped = tmux.wait_for("the E-stop", 10, |s| {
        s.contains("mode SAFE") && s.contains("E-STOP")
    });
    std::thread::sleep(Duration::from_secs(2));
    let later = tmux.screen();
    assert_eq!(
        robot(&stopped),
        robot(&later),
        "the robot moved after the E-stop:\n{moving}\n{later}"
    );

    // Quitting asks first while the stopped task is still around, then
    // restores the terminal and names the event log.
    tmux.keys(&["C-c"]);
    let s = tmux.wait_for("the quit question or the exit", 10, |s| {
        s.contains("Quit?") || s.contains("event log:")
    });
    if s.contains("Quit?") {
        tmux.keys(&["y"]);
    }
    let end = tmux.wait_for("the console to exit", 10, |s| s.contains("exit=0"));
    assert!(end.contains("event log:"), "{end}");
    assert!(
        !end.contains("ReAct timeline"),
        "the screen was not restored:\n{end}"
    );
    let logs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert_eq!(logs.len(), 1, "one event log in {}", dir.display());
    let events = robobrain_core::eventlog::read(&logs[0].path()).unwrap();
    assert!(events.iter().any(|e| e.kind.name() == "approval"));
}

/// `path` quoted for `sh`.
fn shell(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', "'\\''"))
}
