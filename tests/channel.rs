//! The operator's channel (issue 19 §4–5): lines that are not UTF-8 or are
//! too long are named and reading goes on, an E-stop overtakes whatever
//! input is queued, and a run ends when it should — after `shutdown`, after
//! the grace for an approval nobody can give, after a resumed run's
//! duration — on every face that reads operator lines.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use robobrain_core::protocol::{MAX_LINE_BYTES, MAX_UTTERANCE_BYTES};
use serde_json::Value;

use crate::support::{Output, robobrain, robobrain_bytes, start, temp_dir};

/// The JSON objects of a stream of lines (events on stdout, errors on stderr).
fn objects(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The `error` lines on stderr with this code.
fn errors(out: &Output, code: &str) -> Vec<Value> {
    objects(&out.stderr)
        .into_iter()
        .filter(|v| v["kind"] == "error" && v["code"] == code)
        .collect()
}

fn went_safe(events: &[Value]) -> bool {
    events
        .iter()
        .any(|e| e["kind"] == "mode" && e["to"] == "SAFE")
}

/// Runs `robobrain ARGS…` with `stdin`, killing it (and failing) if it has
/// not ended within `limit`.
fn ends_within(args: &[&str], stdin: &[u8], limit: Duration) -> Output {
    let mut child = start(args, &[]);
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin).unwrap();
    drop(input);
    let stdout = drain(child.stdout.take().unwrap());
    let stderr = drain(child.stderr.take().unwrap());
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "robobrain {args:?} did not end within {limit:?}\n--- stderr\n{}",
                stderr.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        code: status.code().unwrap_or(-1),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

fn drain(mut from: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = from.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// A config with no voice, its runs in `dir`.
fn quiet_config(dir: &Path) -> String {
    let config = dir.join("robobrain.toml");
    std::fs::write(
        &config,
        format!(
            "runs_dir = \"{}\"\n[speech]\nvoice = \"text\"\n",
            dir.join("runs").display()
        ),
    )
    .unwrap();
    config.display().to_string()
}

/// Lockstep, or paced at 20× the wall clock.
fn pace(fast: bool) -> &'static [&'static str] {
    if fast {
        &["--fast"]
    } else {
        &["--speed", "20"]
    }
}

const BAD_THEN_ESTOP: &[u8] = b"\xe5\xb7\xa1\xe9\x80\xbb\n\xff\xfe not text\n{\"cmd\":\"estop\"}\n";

#[test]
fn a_line_that_is_not_utf8_is_named_and_the_estop_after_it_still_arrives() {
    let dir = temp_dir("channel-utf8");
    let config = quiet_config(&dir);
    for fast in [false, true] {
        let mut args = vec!["--config", &config, "headless", "--duration", "10"];
        args.extend(pace(fast));
        let out = ends_within(&args, BAD_THEN_ESTOP, Duration::from_secs(60));
        assert_eq!(out.code, 0, "fast {fast}: {}", out.stderr);
        let bad = errors(&out, "invalid_utf8");
        assert_eq!(bad.len(), 1, "fast {fast}: {}", out.stderr);
        assert_eq!(bad[0]["line"], 2);
        assert!(
            bad[0]["message"]
                .as_str()
                .unwrap()
                .starts_with("stdin line 2: not valid UTF-8"),
            "{}",
            bad[0]
        );
        let events = objects(&out.stdout);
        assert!(
            events
                .iter()
                .any(|e| e["kind"] == "intent" && e["intent"] == "patrol"),
            "fast {fast}: the line before was not heard"
        );
        assert!(
            went_safe(&events),
            "fast {fast}: the E-stop after the bad line was lost"
        );
    }
}

#[test]
fn lines_and_utterances_over_the_limits_are_refused_before_parsing() {
    let mut stdin = Vec::new();
    stdin.extend(std::iter::repeat_n(b'{', 10 << 20)); // 10 MiB of "JSON"
    stdin.push(b'\n');
    stdin.extend("去".repeat(MAX_UTTERANCE_BYTES / 3 + 1).as_bytes());
    stdin.push(b'\n');
    stdin.extend(b"{\"cmd\":\"estop\"}\n");
    let out = robobrain_bytes(&["headless", "--fast", "--duration", "3"], &stdin);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let long = errors(&out, "line_too_long");
    assert_eq!(long.len(), 1, "{}", out.stderr);
    assert_eq!(long[0]["line"], 1);
    let text = long[0]["message"].as_str().unwrap();
    assert!(
        text.contains(&format!("{} bytes", 10 << 20))
            && text.contains(&format!("{MAX_LINE_BYTES}-byte limit")),
        "{text}"
    );
    let utterance = errors(&out, "utterance_too_long");
    assert_eq!(utterance.len(), 1, "{}", out.stderr);
    assert_eq!(utterance[0]["line"], 2);
    let events = objects(&out.stdout);
    assert!(
        !events.iter().any(|e| e["kind"] == "intent"),
        "a refused line reached the intent parser"
    );
    assert!(went_safe(&events));
}

/// A headless run whose stdin the test writes while it runs, its events
/// arriving with the wall time they were read at.
struct Live {
    child: Child,
    stdin: Option<ChildStdin>,
    events: Receiver<(Instant, Value)>,
    seen: Vec<Value>,
}

impl Live {
    fn start(args: &[&str]) -> Self {
        let mut child = start(args, &[]);
        let (tx, events) = channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if let Ok(v) = serde_json::from_str::<Value>(&line)
                    && tx.send((Instant::now(), v)).is_err()
                {
                    return;
                }
            }
        });
        drain(child.stderr.take().unwrap());
        Self {
            stdin: child.stdin.take(),
            child,
            events,
            seen: Vec::new(),
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// Events until one holds `pred`; returns when it was read and it.
    fn until(&mut self, limit: Duration, pred: impl Fn(&Value) -> bool) -> (Instant, Value) {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let (at, event) = self
                .events
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no such event within {limit:?}: {e}"));
            self.seen.push(event.clone());
            if pred(&event) {
                return (at, event);
            }
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn an_estop_overtakes_a_maximal_input_queued_before_it() {
    const QUEUED: usize = 300;
    let dir = temp_dir("channel-overtake");
    let config = quiet_config(&dir);
    let mut brain = Live::start(&[
        "--config", &config, "headless", "--speed", "20", "--say", "巡逻",
    ]);
    brain.until(Duration::from_secs(30), |e| {
        e["kind"] == "skill" && e["status"] == "dispatched" && e["skill"] == "navigate_to"
    });
    // The biggest input there is: a 10 MiB line (refused unread), then the
    // ordinary queue's worth of utterances at the limit, then the E-stop.
    let maximal = "zq ".repeat(MAX_UTTERANCE_BYTES / 3);
    let mut input = vec![b'x'; 10 << 20];
    input.push(b'\n');
    for _ in 0..QUEUED {
        input.extend(maximal.as_bytes());
        input.push(b'\n');
    }
    let started = Instant::now();
    brain.write(&input);
    let written = Instant::now();
    brain.write(b"{\"cmd\":\"estop\"}\n");
    let sent = Instant::now();
    let (safe_at, _) = brain.until(Duration::from_secs(10), |e| {
        e["kind"] == "mode" && e["to"] == "SAFE"
    });
    let heard = brain
        .seen
        .iter()
        .filter(|e| e["kind"] == "intent" && e["utterance"].as_str().is_some_and(|u| u.len() > 100))
        .count();
    eprintln!(
        "E-stop behind a 10 MiB line + {QUEUED} × {MAX_UTTERANCE_BYTES} B utterances: \
         {:.1} ms from its line to the SAFE event ({:.1} ms to write the input before it; \
         {heard} utterances taken in first)",
        safe_at.duration_since(sent).as_secs_f64() * 1e3,
        written.duration_since(started).as_secs_f64() * 1e3,
    );
    // Taken in ahead of most of what was queued: the kernel had looked at
    // a tick's worth at most.
    assert!(
        heard < QUEUED / 2,
        "{heard} of {QUEUED} utterances came before the E-stop"
    );
    // And it took effect: every goal ends, nothing new starts.
    brain.write(b"{\"cmd\":\"say\",\"text\":\"go to the kitchen\"}\n");
    std::thread::sleep(Duration::from_millis(500));
    let mut after = Vec::new();
    while let Ok((_, e)) = brain.events.try_recv() {
        after.push(e);
    }
    assert!(
        !after.iter().any(|e| e["kind"] == "skill"
            && e["status"] == "dispatched"
            && e["skill"] == "navigate_to"),
        "the robot drove on after the E-stop: {after:#?}"
    );
}

#[test]
fn shutdown_on_stdin_then_end_of_input_ends_the_run() {
    for extra in [&[][..], &["--fast"][..]] {
        let mut args = vec!["headless"];
        args.extend(extra);
        let out = ends_within(&args, b"{\"cmd\":\"shutdown\"}\n", Duration::from_secs(20));
        assert_eq!(out.code, 0, "{extra:?}: {}", out.stderr);
        let events = objects(&out.stdout);
        assert_eq!(
            events.first().map(|e| e["kind"].clone()),
            Some("snapshot".into()),
            "{extra:?}: {}",
            out.stdout
        );
    }
}

#[test]
fn with_an_approval_pending_and_stdin_closed_the_run_says_so_and_ends_after_the_grace() {
    let dir = temp_dir("channel-grace");
    let config = quiet_config(&dir);
    for fast in [false, true] {
        let mut args = vec!["--config", &config, "headless", "--grace", "3"];
        args.extend(pace(fast));
        let out = ends_within(&args, "去门外\n".as_bytes(), Duration::from_secs(60));
        assert_eq!(out.code, 0, "fast {fast}: {}", out.stderr);
        let events = objects(&out.stdout);
        let asked = events
            .iter()
            .find(|e| e["kind"] == "approval" && e["status"] == "requested")
            .unwrap_or_else(|| panic!("fast {fast}: no approval asked:\n{}", out.stdout));
        let said = objects(&out.stderr)
            .into_iter()
            .find(|v| v["kind"] == "log")
            .unwrap_or_else(|| panic!("fast {fast}: nothing said on stderr:\n{}", out.stderr));
        let said = said["message"].as_str().unwrap();
        assert!(
            said.contains(&format!(
                "waiting for approval {}",
                asked["approval_id"].as_str().unwrap()
            )) && said.contains("--grace"),
            "{said}"
        );
        // It waited the grace, and left the robot at rest.
        let last = events.last().unwrap()["time"].as_f64().unwrap();
        let asked_at = asked["time"].as_f64().unwrap();
        assert!(
            last >= asked_at + 2.5,
            "fast {fast}: ended at {last}, asked at {asked_at}"
        );
        let dispatched = events
            .iter()
            .filter(|e| e["kind"] == "skill" && e["status"] == "dispatched")
            .count();
        let ended = events
            .iter()
            .filter(|e| {
                e["kind"] == "skill"
                    && matches!(
                        e["status"].as_str(),
                        Some("succeeded" | "failed" | "cancelled")
                    )
            })
            .count();
        assert_eq!(dispatched, ended, "fast {fast}: a goal was left running");
    }
}

/// A database holding thread `thread`: a `--fast` patrol of `duration` sim
/// seconds recorded in a fresh file. Returns the file and what the run printed.
fn recorded(name: &str, thread: &str, duration: &str) -> (String, Output) {
    let db = temp_dir(name).join("t.db");
    let _ = std::fs::remove_file(&db);
    let db = db.to_str().unwrap().to_string();
    let args = ["headless", "--fast", "--thread", thread, "--db", &db];
    let first = robobrain(
        &[&args[..], &["--duration", duration, "--say", "巡逻"]].concat(),
        "",
    );
    assert_eq!(first.code, 0, "{}", first.stderr);
    (db, first)
}

#[test]
fn a_resumed_run_counts_its_duration_from_where_it_was() {
    let (db, first) = recorded("channel-resume", "r1", "20");
    let db = db.as_str();
    let ended = objects(&first.stdout).last().unwrap()["time"]
        .as_f64()
        .unwrap();
    assert!(ended > 15.0, "{ended}");
    for fast in [true, false] {
        let mut args = vec![
            "headless",
            "--thread",
            "r1",
            "--db",
            db,
            "--resume",
            "--duration",
            "3",
        ];
        args.extend(pace(fast));
        let out = ends_within(&args, b"", Duration::from_secs(30));
        assert_eq!(out.code, 0, "{}", out.stderr);
        let events = objects(&out.stdout);
        let from = events[0]["time"].as_f64().unwrap();
        assert!(from > 15.0, "resumed at {from}");
        let last = events.last().unwrap()["time"].as_f64().unwrap();
        assert!(
            last > from + 2.0 && last <= from + 3.0 + 1e-6,
            "fast {fast}: resumed at {from}, ran to {last}"
        );
        assert!(
            events.iter().filter(|e| e["kind"] == "telemetry").count() >= 2,
            "fast {fast}: the resumed run did nothing"
        );
    }
}

#[test]
fn a_locked_database_on_resume_exits_non_zero_and_says_so() {
    let (db, _) = recorded("channel-locked", "l1", "2");
    let other = rusqlite::Connection::open(&db).unwrap();
    other.execute_batch("BEGIN EXCLUSIVE").unwrap();
    for fast in [true, false] {
        let mut args = vec!["headless", "--thread", "l1", "--db", &db, "--resume"];
        args.extend(["--duration", "3"]);
        args.extend(pace(fast));
        let out = ends_within(&args, b"", Duration::from_secs(30));
        assert_ne!(out.code, 0, "fast {fast}: a locked database exited 0");
        assert!(
            out.stderr.contains("locked by another process") && out.stderr.contains("t.db"),
            "fast {fast}: {}",
            out.stderr
        );
        assert_eq!(
            out.stderr.matches(db.as_str()).count(),
            1,
            "fast {fast}: the error is said once, with the file: {}",
            out.stderr
        );
    }
    other.execute_batch("ROLLBACK").unwrap();
}

/// Makes a leaf page in the middle of the file claim one cell: rows vanish
/// from plain reads with no error from SQLite.
fn drop_rows_from_a_live_page(path: &Path) {
    let mut data = std::fs::read(path).unwrap();
    let page = usize::from(u16::from_be_bytes([data[16], data[17]]));
    let leaves: Vec<usize> = (1..data.len() / page)
        .filter(|p| matches!(data[p * page], 0x0a | 0x0d) && data[p * page + 4] > 1)
        .collect();
    let at = leaves[leaves.len() / 2] * page;
    data[at + 3..at + 5].copy_from_slice(&1u16.to_be_bytes());
    std::fs::write(path, data).unwrap();
}

#[test]
fn a_database_damaged_inside_its_pages_is_refused_by_every_command() {
    let (db, _) = recorded("channel-corrupt", "c1", "60");
    let db = db.as_str();
    drop_rows_from_a_live_page(Path::new(db));
    for args in [
        &["threads", "--db", db][..],
        &["threads", "--db", db, "show", "c1"][..],
        &[
            "headless",
            "--fast",
            "--thread",
            "c1",
            "--db",
            db,
            "--resume",
            "--duration",
            "1",
        ][..],
    ] {
        let out = ends_within(args, b"", Duration::from_secs(30));
        assert_ne!(out.code, 0, "{args:?} exited 0:\n{}", out.stdout);
        assert!(
            out.stderr.contains(db)
                && out.stderr.contains("corrupt")
                && out.stderr.contains("quick_check"),
            "{args:?}: {}",
            out.stderr
        );
        // Said once, with the file (issue 35).
        assert_eq!(
            out.stderr.matches(db).count(),
            1,
            "{args:?}: {}",
            out.stderr
        );
        assert!(
            out.stdout.is_empty(),
            "{args:?} printed a history: {}",
            out.stdout
        );
    }
}
