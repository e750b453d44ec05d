//! The console end to end, as a new user meets it: `robobrain` with no
//! arguments in a real terminal (tmux, on a server of its own), typed at
//! with `send-keys`, read with `capture-pane`.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::support::{root, temp_dir};

/// How long a console gets to exit after a signal: a liveness deadline, not
/// a measure of speed (it takes well under a second).
const EXIT_DEADLINE: u64 = 15;

/// A tmux server of its own for one test, running one session with one pane
/// (socket and session named after the test process and a counter, so tests
/// in parallel, in one process or many, never meet). The server stays up
/// with no session left (`exit-empty off`), so it reaps what ran in a
/// killed session.
///
/// Dropping it, on a panic too, kills the pane's process group (the console
/// and any shell around it) and then the server. A watchdog outside the
/// test's process group does the same when the test process dies without
/// dropping it (interrupted, killed by a timeout). Both remove the socket
/// file, which tmux leaves behind.
pub(crate) struct Tmux {
    name: String,
    socket: PathBuf,
    pane_pid: u32,
    watchdog: Option<Child>,
}

impl Tmux {
    pub(crate) fn start(command: &str, width: u16, height: u16) -> Self {
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let version = Command::new("tmux").arg("-V").output();
        assert!(
            version.is_ok_and(|o| o.status.success()),
            "the console test needs tmux (`./x setup` installs it)"
        );
        let name = format!(
            "robobrain-e2e-{}-{}",
            std::process::id(),
            STARTED.fetch_add(1, Ordering::Relaxed)
        );
        let mut tmux = Self {
            name,
            socket: PathBuf::new(),
            pane_pid: 0,
            watchdog: None,
        };
        tmux.run(&[
            "-f",
            "/dev/null",
            "start-server",
            ";",
            "set-option",
            "-s",
            "exit-empty",
            "off",
            ";",
            "new-session",
            "-d",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            "-s",
            &tmux.name,
            command,
        ]);
        tmux.pane_pid = tmux.pane("pane_pid").parse().unwrap();
        tmux.socket = PathBuf::from(tmux.pane("socket_path"));
        tmux.watchdog = Some(tmux.watchdog());
        tmux
    }

    /// `sh` in a process group of its own, so a signal to the test's group
    /// does not reach it: once the test process is gone it cleans up.
    fn watchdog(&self) -> Child {
        let script = format!(
            "while kill -0 {test} 2>/dev/null; do sleep 1; done; \
             kill -KILL -- -{pane} 2>/dev/null; tmux -L {name} kill-server 2>/dev/null; \
             rm -f {socket}",
            test = std::process::id(),
            pane = self.pane_pid,
            name = self.name,
            socket = shell(&self.socket),
        );
        Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap()
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.name)
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

    /// A format variable of the pane (`pane_pid`, `alternate_on`, …).
    fn pane(&self, variable: &str) -> String {
        let format = format!("#{{{variable}}}");
        self.run(&["display-message", "-p", "-t", &self.name, &format])
            .trim()
            .to_owned()
    }

    pub(crate) fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", &self.name])
    }

    pub(crate) fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.name];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    pub(crate) fn type_text(&self, text: &str) {
        self.run(&["send-keys", "-t", &self.name, "-l", text]);
        self.keys(&["Enter"]);
    }

    /// Waits until the screen passes `ok`, failing with the screen after `secs`.
    pub(crate) fn wait_for(&self, what: &str, secs: u64, ok: impl Fn(&str) -> bool) -> String {
        let s = poll(secs, || {
            let s = self.screen();
            ok(&s).then_some(s)
        });
        s.unwrap_or_else(|| panic!("waited {secs} s for {what}; the screen:\n{}", self.screen()))
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        // The pane's process is the leader of its process group.
        if self.pane_pid != 0 {
            send_signal(self.pane_pid, "-KILL", true);
        }
        let _ = Command::new("tmux")
            .args(["-L", &self.name, "kill-server"])
            .output();
        // The server leaves its socket file behind.
        if !self.socket.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.socket);
        }
        if let Some(mut watchdog) = self.watchdog.take() {
            send_signal(watchdog.id(), "-KILL", true);
            let _ = watchdog.wait();
        }
    }
}

/// `kill SIGNAL PID` (the process group PID when `group`); whether it was sent.
fn send_signal(pid: u32, signal: &str, group: bool) -> bool {
    let target = if group {
        format!("-{pid}")
    } else {
        pid.to_string()
    };
    Command::new("kill")
        .args([signal, "--", &target])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether process `pid` is running (a zombie is not).
fn running(pid: u32) -> bool {
    Command::new("ps")
        .args(["-o", "stat=", "-p", &pid.to_string()])
        .output()
        .is_ok_and(|o| o.status.success() && !o.stdout.trim_ascii().starts_with(b"Z"))
}

/// Polls `probe` every 100 ms until it answers, for at most `secs`.
pub(crate) fn poll<T>(secs: u64, probe: impl Fn() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        if let Some(found) = probe() {
            return Some(found);
        }
        if start.elapsed() > Duration::from_secs(secs) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Where the robot's arrow is on the map (row, column in chars of the
/// screen). Only the map pane is searched: the panes beside and below it
/// print arrows in text ("EXEC → SAFE", "living_room → kitchen"), and one
/// of those, whose column moved as its line changed, once read as a robot
/// that moved after the E-stop.
fn robot(screen: &str) -> Option<(usize, usize)> {
    let lines: Vec<&str> = screen.lines().collect();
    let top = lines
        .iter()
        .position(|l| l.contains(" Map ") && l.contains(" Status "))?;
    // The map pane ends where the status pane's title begins, and above the
    // timeline's title.
    let right = lines[top].find(" Status ")?;
    let right = lines[top][..right].chars().count();
    let bottom = lines
        .iter()
        .skip(top)
        .position(|l| l.contains("ReAct timeline"))
        .map_or(lines.len(), |n| top + n);
    (top + 1..bottom).find_map(|r| {
        lines[r]
            .chars()
            .take(right)
            .position(|c| "→↘↓↙←↖↑↗".contains(c))
            .map(|c| (r, c))
    })
}

#[test]
fn the_robot_is_read_from_the_map_pane_only() {
    let screen = [
        " robobrain  apartment",
        " Map ──────────── Status ─────────────",
        "█kitchen     █  mode at 9.1 s: EXEC → SAFE",
        "█      ↗     █  battery 87 %",
        " ReAct timeline ── Events ───",
        "  t1 route: living_room → kitchen",
    ]
    .join("\n");
    assert_eq!(robot(&screen), Some((3, 7)));
    let gone = screen.replace('↗', " ");
    assert_eq!(robot(&gone), None, "text arrows are not the robot");
}

#[test]
fn a_new_user_sends_the_robot_to_the_kitchen_approves_and_stops_it() {
    let dir = temp_dir("console");
    let config = config_in(
        &dir,
        "[policy]\napprove_risks = [\"low_write\", \"high_write\"]\n",
    );
    let command = console_then_shell(&config, "");
    let tmux = Tmux::start(&command, 120, 40);
    // The console paints before the run's first snapshot arrives (a loaded
    // machine can show that frame): wait for the one with the map.
    let first = tmux.wait_for("the first frame with the robot on the map", 20, |s| {
        s.contains("robobrain") && s.contains("mode IDLE") && robot(s).is_some()
    });
    let start = robot(&first).expect("the robot is on the map");

    tmux.type_text("去厨房");
    // The timeline may paint its lines a frame after the approval card.
    let s = tmux.wait_for("the approval prompt and the utterance", 30, |s| {
        s.contains("Approval 1 of 1") && s.contains("heard “去厨房”")
    });
    assert!(s.contains("navigate_to kitchen"), "{s}");
    assert!(s.contains("route: living_room → kitchen"), "{s}");

    approve_on_the_card(&tmux);
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
    approve_on_the_card(&tmux);
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
    let end = tmux.wait_for("the console to exit", 10, |s| s.contains("tty="));
    assert!(end.contains("exit=0"), "{end}");
    assert_restored(&tmux, &end);
    let events = the_event_log(&dir);
    assert!(events.iter().any(|e| e.kind.name() == "approval"));
}

/// The deliberate act that approves: F2 gives the card the keys, and after
/// the guard (one second) F3 approves.
pub(crate) fn approve_on_the_card(tmux: &Tmux) {
    tmux.keys(&["F2"]);
    tmux.wait_for("the card to take the keys", 5, |s| s.contains("keys here"));
    std::thread::sleep(Duration::from_millis(1200));
    tmux.keys(&["F3"]);
}

/// The bug this guards against: a card that opened while the operator
/// typed took the keyboard, and the `a` of `patrol` approved a drive out of
/// the apartment. Now `go outside` asks for an approval and, while its card
/// appears, `patrol`, `yes`, `approve`, `a`, Enter and `y` are typed into the
/// input line in six orders (each token first once and last once): the
/// run's event log shows the approval still waiting, with no answer, and
/// the typed text is on the input line. Then F2 and F3 approve it.
#[test]
fn typing_never_answers_an_approval_and_f2_then_f3_does() {
    let dir = temp_dir("typing");
    let tmux = Tmux::start(&console_then_shell(&config_in(&dir, ""), "tui"), 120, 40);
    tmux.wait_for("the first frame", 20, |s| s.contains("mode IDLE"));
    tmux.type_text("go outside");
    let tokens = ["patrol", "yes", "approve", "a", "Enter", "y"];
    for round in 0..tokens.len() {
        let mut line = String::new();
        for token in tokens[round..].iter().chain(&tokens[..round]) {
            if *token == "Enter" {
                tmux.keys(&["Enter"]);
                line.clear();
            } else {
                tmux.run(&["send-keys", "-t", &tmux.name, "-l", token]);
                line.push_str(token);
            }
        }
        let want = if line.is_empty() {
            "› say 去厨房".to_string()
        } else {
            format!("› {line}")
        };
        tmux.wait_for(&format!("{want:?} on the input line"), 5, |s| {
            s.lines().any(|l| l.trim_end().starts_with(&want))
        });
        tmux.keys(&["C-u"]);
        if round == 0 {
            // The first round was typed as the card came; the rest with it open.
            // Both lines of the card: a capture can fall between the
            // terminal's drawing of one line and the next.
            tmux.wait_for("the card, saying how it is answered", 30, |s| {
                s.contains("Approval 1 of") && s.contains("[F2] answer this card")
            });
        }
    }
    let s = tmux.screen();
    assert!(s.contains("Approval 1 of"), "the card is gone:\n{s}");
    let events = the_event_log(&dir);
    let asked: Vec<&str> = approvals(&events, "requested")
        .into_iter()
        .filter(|a| a.1 == "outside")
        .map(|a| a.0)
        .collect();
    let [outside] = asked.as_slice() else {
        panic!("one approval to go outside: {asked:?}")
    };
    for status in ["approved", "edited", "rejected"] {
        assert_eq!(
            approvals(&events, status),
            vec![],
            "typing answered an approval"
        );
    }

    approve_on_the_card(&tmux);
    let approved = poll(20, || {
        let events = the_event_log(&dir);
        let found = approvals(&events, "approved")
            .iter()
            .any(|a| a.0 == *outside);
        found.then_some(())
    });
    assert!(
        approved.is_some(),
        "F2 then F3 did not approve {outside}; the screen:\n{}",
        tmux.screen()
    );
}

/// The `(approval id, zone)` of every `approval` event with `status`.
fn approvals<'a>(
    events: &'a [robobrain_core::protocol::Event],
    status: &str,
) -> Vec<(&'a str, &'a str)> {
    use robobrain_core::protocol::{EventKind, Op};
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Approval {
                approval_id,
                status: s,
                op: Op::Dispatch { args, .. },
                ..
            } if serde_json::to_value(s).is_ok_and(|v| v == status) => Some((
                approval_id.as_str(),
                args.get("zone")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or(""),
            )),
            _ => None,
        })
        .collect()
}

/// SIGTERM (what `kill` and service managers send) ends the console the way
/// quitting does, with the terminal restored, and exit status 143.
#[test]
fn sigterm_ends_the_console_and_restores_the_terminal() {
    a_signal_ends_the_console("TERM", 143);
}

/// SIGHUP, sent alone, ends it the same way (129).
#[test]
fn sighup_ends_the_console_and_restores_the_terminal() {
    a_signal_ends_the_console("HUP", 129);
}

/// SIGINT from `kill` (Ctrl-C is a key in the console) ends it too (130).
#[test]
fn sigint_from_kill_ends_the_console_and_restores_the_terminal() {
    a_signal_ends_the_console("INT", 130);
}

/// The console runs in a shell that stays after it, sends it `signal` once
/// its first frame is up, and reads what the shell says after it exits.
fn a_signal_ends_the_console(signal: &str, status: u8) {
    let dir = temp_dir(&format!("sig{signal}"));
    let tmux = Tmux::start(&console_then_shell(&config_in(&dir, ""), "tui"), 100, 30);
    // Once sim time moves the core has sent events, so the log has some.
    tmux.wait_for("the clock to move", 20, |s| {
        s.contains("mode IDLE") && s.contains(" · t ") && !s.contains(" · t 0.0 s")
    });
    assert_eq!(tmux.pane("alternate_on"), "1", "{}", tmux.screen());
    let pid = console_pid(&tmux);

    assert!(
        send_signal(pid, &format!("-{signal}"), false),
        "kill -{signal} {pid}"
    );
    let gone = poll(EXIT_DEADLINE, || (!running(pid)).then_some(()));
    assert!(
        gone.is_some(),
        "the console still runs {EXIT_DEADLINE} s after SIG{signal}; the screen:\n{}",
        tmux.screen()
    );
    let end = tmux.wait_for("the shell after the console", 10, |s| s.contains("tty="));
    assert!(
        end.contains(&format!("exit={status}")),
        "SIG{signal}:\n{end}"
    );
    assert_restored(&tmux, &end);
    assert!(!the_event_log(&dir).is_empty());
}

/// The terminal going away (its tmux session killed: the pane's process
/// group gets SIGHUP, and the terminal reads end-of-file from then on) ends
/// the console; it used to stay, spinning, for ever.
#[test]
fn the_console_exits_when_its_terminal_goes_away() {
    let dir = temp_dir("hangup");
    let command = format!(
        "cd {} && NO_COLOR=1 exec {} --config {} tui",
        shell(&root()),
        shell(Path::new(env!("CARGO_BIN_EXE_robobrain"))),
        shell(&config_in(&dir, ""))
    );
    let tmux = Tmux::start(&command, 100, 30);
    tmux.wait_for("the first frame", 20, |s| s.contains("mode IDLE"));
    let pid = tmux.pane_pid;
    assert!(running(pid));

    tmux.run(&["kill-session", "-t", &tmux.name]);
    let gone = poll(EXIT_DEADLINE, || (!running(pid)).then_some(()));
    assert!(
        gone.is_some(),
        "the console still runs {EXIT_DEADLINE} s after its terminal went away"
    );
    assert!(!the_event_log(&dir).is_empty());
}

/// A config in `dir` that puts the runs' event logs there, then `extra`.
fn config_in(dir: &Path, extra: &str) -> PathBuf {
    let config = dir.join("robobrain.toml");
    let runs = format!("runs_dir = {:?}\n{extra}", dir.to_str().unwrap());
    std::fs::write(&config, runs).unwrap();
    config
}

/// `robobrain --config CONFIG ARGS` in a shell that stays after it exits, so
/// its last words can be read, then says how it exited (`exit=N`) and
/// whether it left the terminal raw (`tty=raw`) or not (`tty=cooked`).
pub(crate) fn console_then_shell(config: &Path, args: &str) -> String {
    format!(
        "cd {} && NO_COLOR=1 {} --config {} {args}; echo exit=$?; \
         if stty -a | grep -q -- -icanon; then echo tty=raw; else echo tty=cooked; fi; \
         sleep 600",
        shell(&root()),
        shell(Path::new(env!("CARGO_BIN_EXE_robobrain"))),
        shell(config)
    )
}

/// The console's pid: the child of the pane's shell.
fn console_pid(tmux: &Tmux) -> u32 {
    let out = Command::new("pgrep")
        .args(["-P", &tmux.pane_pid.to_string(), "robobrain"])
        .output()
        .unwrap();
    let pids = String::from_utf8_lossy(&out.stdout);
    let mut pids = pids.split_whitespace();
    let pid = pids.next().expect("the console runs in the pane");
    assert_eq!(pids.next(), None, "one console in the pane");
    pid.parse().unwrap()
}

/// The terminal after the console exited (`end`: the screen once the shell
/// has said `tty=`): cooked, the main screen with the cursor shown, and on
/// it the event log's path, not the console's panels.
fn assert_restored(tmux: &Tmux, end: &str) {
    assert!(end.contains("tty=cooked"), "left in raw mode:\n{end}");
    assert_eq!(
        tmux.pane("alternate_on"),
        "0",
        "left on the alternate screen"
    );
    assert_eq!(tmux.pane("cursor_flag"), "1", "the cursor left hidden");
    assert!(end.contains("event log:"), "{end}");
    assert!(
        !end.contains("ReAct timeline"),
        "the screen was not restored:\n{end}"
    );
}

/// The one event log in `dir`, read.
fn the_event_log(dir: &Path) -> Vec<robobrain_core::protocol::Event> {
    let logs: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert_eq!(logs.len(), 1, "one event log in {}", dir.display());
    robobrain_core::eventlog::read(&logs[0].path()).unwrap()
}

/// `path` quoted for `sh`.
pub(crate) fn shell(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', "'\\''"))
}
