//! Power loss: the brain's files as a power cut leaves them, at random
//! moments, then the invariants checked on what is left
//! (docs/durability.md, "The power-loss test").
//!
//! The brain (`robobrain headless --robot tcp://…`, the default `[store]
//! synchronous = "effects"`) runs under `strace`, which writes down every write, truncation,
//! `fsync`/`fdatasync` and deletion it makes to a file, with the bytes, and
//! every line it writes to the robot's socket, in the order the kernel saw
//! them. From that record the test rebuilds, for a cut point (a place in the
//! record), the files as the disk holds them when the power goes there: a
//! write reaches the disk only through a sync of its file that began after
//! the write had returned and ended before the cut; every other write is
//! thrown away (the `-shm` file, never synced, is gone). Then for each cut:
//!
//! - `PRAGMA integrity_check` passes;
//! - every goal the brain had begun to write to the robot's socket before
//!   the cut has its ledger row (stops excepted: they go out before they are
//!   recorded, on purpose);
//! - no ledger row says the robot accepted or finished a goal it was never
//!   sent (a `started` row for a goal never sent is reconciled as unknown);
//! - the thread resumes in process against a robot that knows exactly the
//!   goals sent before the cut, and sends none of them again.
//!
//! `ROBOBRAIN_POWER_CUTS` sets the number of cut points (default 40, what
//! `./x test` runs; `./x soak` runs 1 000), `ROBOBRAIN_POWER_SEED` replays
//! a run, and `ROBOBRAIN_POWER_SYNCHRONOUS=normal` (or `full`) runs the
//! brain with that `[store] synchronous` (`normal` fails: it does not
//! promise that an effect's record survives a power cut).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use robobrain_core::config::Config;
use robobrain_core::engine::Engine;
use robobrain_core::link::{
    GoalOutcome, GoalStatus, LinkError, LinkReply, LinkRequest, RobotLink, Telemetry,
};
use robobrain_core::rng::SplitMix64;
use robobrain_core::store::{Store, StoreError, Synchronous};
use robobrain_core::world::World;

use super::{Brain, THREAD, is_approval_request};
use crate::sim_process::SimProcess;
use crate::support::temp_dir;

/// One file operation from the trace, with the lines it began and ended on.
#[derive(Debug, Clone)]
struct Op {
    /// The file's name in the run's folder.
    path: String,
    kind: OpKind,
    entry: usize,
    exit: usize,
}

#[derive(Debug, Clone)]
enum OpKind {
    Write { offset: Option<u64>, data: Vec<u8> },
    Truncate(u64),
    Sync,
    Unlink,
}

/// What the brain did, as `strace` recorded it.
#[derive(Debug, Default)]
struct Trace {
    /// File operations, in the order they ended.
    ops: Vec<Op>,
    /// Goals written to the robot: the line the write began on, the goal id.
    sends: Vec<(usize, String)>,
    /// Lines in the record.
    lines: usize,
}

/// Decodes `\xHH…` (strace's `-xx`) into bytes.
fn unhex(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len() / 4);
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1] == b'x' {
            let hex = std::str::from_utf8(&b[i + 2..i + 4]).unwrap_or("00");
            out.push(u8::from_str_radix(hex, 16).unwrap_or(0));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// The arguments of one call: its quoted strings (decoded), the path of its
/// first descriptor (`-y`), and its other arguments as text.
#[derive(Debug, Default)]
struct Args {
    strings: Vec<Vec<u8>>,
    fd_path: Option<String>,
    plain: Vec<String>,
}

fn parse_args(args: &str) -> Args {
    let mut out = Args::default();
    let b = args.as_bytes();
    let mut i = 0;
    let mut plain = String::new();
    while i < b.len() {
        match b[i] {
            b'"' => {
                let end = args[i + 1..].find('"').map_or(b.len(), |e| i + 1 + e);
                out.strings.push(unhex(&args[i + 1..end]));
                i = end + 1;
            }
            b'<' if out.fd_path.is_none() => {
                let end = args[i + 1..].find('>').map_or(b.len(), |e| i + 1 + e);
                out.fd_path = Some(String::from_utf8_lossy(&unhex(&args[i + 1..end])).into());
                i = end + 1;
            }
            b',' => {
                out.plain
                    .push(std::mem::take(&mut plain).trim().to_string());
                i += 1;
            }
            c => {
                plain.push(c as char);
                i += 1;
            }
        }
    }
    out.plain.push(plain.trim().to_string());
    out
}

/// Splits `ARGS) = RET…` (strace pads before the `=` to align the
/// results) into the arguments and the return value's text. The arguments
/// hold no `)` of their own: every string and path is `\xHH`.
fn split_result(tail: &str) -> Option<(&str, &str)> {
    let close = tail.find(')')?;
    let ret = tail[close + 1..].trim_start().strip_prefix('=')?;
    Some((&tail[..close], ret.trim_start()))
}

/// The database's files as the trace names them: `-y` gives the path the
/// kernel resolves (`/proc/PID/fd`), an `unlink` the path SQLite passed;
/// the two can differ (a temp folder behind a symlink, a doubled `/`), so a
/// file is known by its name in the run's folder, resolved once.
struct Files {
    dir: PathBuf,
    names: [String; 3],
}

impl Files {
    fn new(db: &Path) -> Self {
        let dir = db.parent().unwrap();
        let name = db.file_name().unwrap().to_string_lossy().to_string();
        Self {
            dir: std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()),
            // The rollback journal: SQLite makes a new file with one
            // before it turns WAL on.
            names: [
                name.clone(),
                format!("{name}-wal"),
                format!("{name}-journal"),
            ],
        }
    }

    /// The file's name when `path` is one of the database's files.
    fn name(&self, path: &str) -> Option<String> {
        let path = Path::new(path);
        let name = path.file_name()?.to_string_lossy().to_string();
        if !self.names.contains(&name) {
            return None;
        }
        let parent = path.parent()?;
        let same = parent == self.dir || std::fs::canonicalize(parent).is_ok_and(|p| p == self.dir);
        same.then_some(name)
    }
}

/// Reads strace's record (`-f -qq -y -xx`). File operations are keyed by
/// the file's name in the run's folder ([`Files`]); goals are read from
/// what the brain wrote to sockets, line by line across writes.
fn parse_trace(text: &str, db: &Path) -> Trace {
    let files = Files::new(db);
    let mut trace = Trace::default();
    // A call begun on one thread and ended later: pid → (name, args, entry).
    let mut unfinished: BTreeMap<String, (String, String, usize)> = BTreeMap::new();
    // Per socket: the bytes of a line not finished yet, and the record line
    // its first write began on.
    let mut partial: BTreeMap<String, (Vec<u8>, usize)> = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        trace.lines = n + 1;
        let Some((pid, rest)) = line.split_once(' ') else {
            continue;
        };
        let rest = rest.trim_start();
        let (name, args, ret, entry) = if let Some(resumed) = rest.strip_prefix("<... ") {
            let Some((_, tail)) = resumed.split_once(" resumed>") else {
                continue;
            };
            let Some((name, args, entry)) = unfinished.remove(pid) else {
                continue;
            };
            let ret = split_result(tail).map_or("", |(_, r)| r);
            (name, args, ret.to_string(), entry)
        } else if let Some(begun) = rest.strip_suffix(" <unfinished ...>") {
            if let Some((name, args)) = begun.split_once('(') {
                unfinished.insert(pid.to_string(), (name.to_string(), args.to_string(), n));
            }
            continue;
        } else {
            let Some((name, tail)) = rest.split_once('(') else {
                continue;
            };
            let Some((args, ret)) = split_result(tail) else {
                continue;
            };
            (name.to_string(), args.to_string(), ret.to_string(), n)
        };
        let ret: i64 = ret
            .split_whitespace()
            .next()
            .and_then(|r| r.parse().ok())
            .unwrap_or(-1);
        if ret < 0 {
            continue;
        }
        let a = parse_args(&args);
        let fd_path = a.fd_path.clone().unwrap_or_default();
        let file = files.name(&fd_path);
        let op = |kind| Op {
            path: file.clone().unwrap_or_default(),
            kind,
            entry,
            exit: n,
        };
        match name.as_str() {
            "write" | "writev" | "sendto" | "sendmsg"
                if fd_path.starts_with("socket:") || fd_path.starts_with("TCP") =>
            {
                let mut data: Vec<u8> = a.strings.concat();
                data.truncate(usize::try_from(ret).unwrap_or(0));
                let (buf, began) = partial.entry(fd_path).or_insert((Vec::new(), entry));
                if buf.is_empty() {
                    *began = entry;
                }
                buf.extend_from_slice(&data);
                while let Some(end) = buf.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = buf.drain(..=end).collect();
                    if let Some(id) = goal_sent(&line) {
                        trace.sends.push((*began, id));
                    }
                    *began = entry;
                }
            }
            "pwrite64" | "write" if file.is_some() => {
                let mut data = a.strings.concat();
                data.truncate(usize::try_from(ret).unwrap_or(0));
                let offset = (name == "pwrite64")
                    .then(|| a.plain.last().and_then(|o| o.parse().ok()))
                    .flatten();
                trace.ops.push(op(OpKind::Write { offset, data }));
            }
            "ftruncate" if file.is_some() => {
                if let Some(len) = a.plain.last().and_then(|l| l.parse().ok()) {
                    trace.ops.push(op(OpKind::Truncate(len)));
                }
            }
            "fsync" | "fdatasync" if file.is_some() => trace.ops.push(op(OpKind::Sync)),
            "unlink" | "unlinkat" => {
                let target = a
                    .strings
                    .first()
                    .map(|s| String::from_utf8_lossy(s).to_string())
                    .unwrap_or_default();
                if let Some(name) = files.name(&target) {
                    trace.ops.push(Op {
                        path: name,
                        kind: OpKind::Unlink,
                        entry,
                        exit: n,
                    });
                }
            }
            _ => {}
        }
    }
    trace.ops.sort_by_key(|o| o.exit);
    trace
}

/// The goal id of a `send_goal` line to the robot (stops aside: they go
/// out before they are recorded, on purpose).
fn goal_sent(line: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(line).ok()?;
    (v["request"] == "send_goal" && v["goal"] != "stop_base")
        .then(|| v["goal_id"].as_str().map(str::to_string))
        .flatten()
}

/// The files as the disk holds them, advanced cut by cut.
#[derive(Default)]
struct Disk {
    /// File name → its durable bytes (absent: the file is not on the disk).
    files: BTreeMap<String, Vec<u8>>,
    /// File name → how many of its writes and truncations (in the order they
    /// ended) are already on the disk.
    applied: BTreeMap<String, usize>,
    /// How many of the trace's ops have been looked at.
    next: usize,
}

impl Disk {
    /// Moves to `cut`: every sync and deletion that ended before it.
    fn advance(&mut self, trace: &Trace, by_path: &BTreeMap<String, Vec<&Op>>, cut: usize) {
        while let Some(op) = trace.ops.get(self.next) {
            if op.exit >= cut {
                break;
            }
            self.next += 1;
            let writes = by_path.get(&op.path).map_or(&[][..], Vec::as_slice);
            let done = self.applied.entry(op.path.clone()).or_default();
            match op.kind {
                OpKind::Sync => {
                    let file = self.files.entry(op.path.clone()).or_default();
                    while let Some(w) = writes.get(*done) {
                        // Only what had returned when the sync began.
                        if w.exit >= op.entry {
                            break;
                        }
                        apply(file, w);
                        *done += 1;
                    }
                }
                OpKind::Unlink => {
                    self.files.remove(&op.path);
                    while writes.get(*done).is_some_and(|w| w.exit < op.exit) {
                        *done += 1;
                    }
                }
                _ => {}
            }
        }
    }

    /// Writes the files into `dir` under their own names.
    fn materialise(&self, dir: &Path) {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).unwrap();
        for (name, bytes) in &self.files {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
    }
}

fn apply(file: &mut Vec<u8>, op: &Op) {
    match &op.kind {
        OpKind::Write { offset, data } => {
            let at = offset.map_or(file.len(), |o| usize::try_from(o).unwrap());
            if file.len() < at + data.len() {
                file.resize(at + data.len(), 0);
            }
            file[at..at + data.len()].copy_from_slice(data);
        }
        OpKind::Truncate(len) => file.resize(usize::try_from(*len).unwrap(), 0),
        OpKind::Sync | OpKind::Unlink => {}
    }
}

/// A robot that knows exactly the goals it was sent before the cut: it says
/// they run, knows nothing of any other, and finishes what it is sent now.
struct RobotAtTheCut {
    known: BTreeSet<String>,
    sent: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    replies: Vec<LinkReply>,
    telemetry: Telemetry,
}

impl RobotLink for RobotAtTheCut {
    fn send(&mut self, request: LinkRequest) -> Result<(), LinkError> {
        match request {
            LinkRequest::QueryGoal { goal_id } => {
                let status = if self.known.contains(&goal_id) {
                    GoalStatus::Running
                } else {
                    GoalStatus::Unknown
                };
                self.replies.push(LinkReply::GoalStatus { goal_id, status });
            }
            LinkRequest::SendGoal { goal_id, kind } => {
                if !matches!(kind, robobrain_core::link::GoalKind::StopBase) {
                    self.sent.lock().unwrap().push(goal_id.clone());
                }
                self.replies.push(LinkReply::Accepted {
                    goal_id: goal_id.clone(),
                });
                self.replies.push(LinkReply::Result {
                    goal_id,
                    outcome: GoalOutcome::Succeeded {
                        navigation_time: 1.0,
                    },
                });
            }
            _ => {}
        }
        Ok(())
    }

    fn advance(&mut self, dt: f64) {
        self.telemetry.time += dt;
        self.telemetry.battery_pct = 90.0;
    }

    fn drain(&mut self, out: &mut Vec<LinkReply>) {
        out.append(&mut self.replies);
        out.push(LinkReply::Telemetry {
            telemetry: self.telemetry.clone(),
        });
    }
}

/// What one cut found wrong (empty: nothing).
fn check_cut(dir: &Path, config: &Config, seen: &BTreeSet<String>) -> Vec<String> {
    let mut wrong = Vec::new();
    let db = dir.join("brain.db");
    if !db.exists() || std::fs::metadata(&db).map_or(0, |m| m.len()) == 0 {
        if !seen.is_empty() {
            wrong.push(format!(
                "no database on the disk, but the robot was sent {seen:?}"
            ));
        }
        return wrong;
    }
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        let check: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap_or_else(|e| e.to_string());
        if check != "ok" {
            wrong.push(format!("integrity_check: {check}"));
            return wrong;
        }
        let rows: Vec<(String, String, Option<String>)> = conn
            .prepare("SELECT goal_id, status, result FROM ledger")
            .and_then(|mut s| {
                s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                    .and_then(Iterator::collect)
            })
            .unwrap_or_default();
        let ids: BTreeSet<&str> = rows.iter().map(|(id, _, _)| id.as_str()).collect();
        for goal in seen {
            if !ids.contains(goal.as_str()) && !goal.contains("/rest") && !goal.contains("/estop") {
                wrong.push(format!(
                    "goal {goal} reached the robot without its ledger row"
                ));
            }
        }
        for (id, status, result) in &rows {
            let claims = status == "accepted"
                || (status == "done"
                    && !result.as_deref().unwrap_or_default().contains("not_sent"));
            if claims && !seen.contains(id) && !id.contains("/rest") && !id.contains("/estop") {
                wrong.push(format!(
                    "ledger row {id} ({status}) claims a send the robot never saw"
                ));
            }
        }
    }
    let store = match Store::open(&db, Synchronous::Full) {
        Ok(s) => s,
        Err(e) => {
            wrong.push(format!("the store does not open: {e}"));
            return wrong;
        }
    };
    let sent = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let robot = RobotAtTheCut {
        known: seen.clone(),
        sent: sent.clone(),
        replies: Vec::new(),
        telemetry: Telemetry::default(),
    };
    let world = World::resolve(&config.world).unwrap();
    let mut engine = Engine::new(config, world, Box::new(robot)).unwrap();
    match engine.attach_store(store, &config.store, true) {
        Ok(()) => {}
        // Cut before the thread's first checkpoint reached the disk: there
        // is nothing to resume, and nothing may have been sent.
        Err(StoreError::UnknownThread { .. } | StoreError::NoCheckpoint { .. })
            if seen.is_empty() =>
        {
            return wrong;
        }
        Err(e) => {
            wrong.push(format!("the thread does not resume: {e}"));
            return wrong;
        }
    }
    let mut events = Vec::new();
    for _ in 0..200 {
        engine.tick(&mut events);
        events.clear();
    }
    engine.close();
    drop(engine);
    let sent = sent.lock().unwrap().clone();
    let mut once = BTreeSet::new();
    for goal in &sent {
        if seen.contains(goal) || !once.insert(goal.clone()) {
            wrong.push(format!("the resumed thread sent {goal} again"));
        }
    }
    wrong
}

/// The brain's run under `strace`: the record's path.
fn traced_run(dir: &Path, db: &Path, config: &Path) -> PathBuf {
    let record = dir.join("goals.jsonl");
    let sim = SimProcess::start(&record, "20", &[]);
    let trace = dir.join("strace.txt");
    let mut cmd = Command::new("strace");
    cmd.args([
        "-f",
        "-qq",
        "-y",
        "-xx",
        "-s",
        "1048576",
        "-e",
        "trace=write,writev,pwrite64,sendto,sendmsg,ftruncate,fsync,fdatasync,unlink,unlinkat",
        "-o",
    ])
    .arg(&trace)
    .arg(env!("CARGO_BIN_EXE_robobrain"))
    .arg("--config")
    .arg(config)
    .args([
        "headless", "--robot", &sim.url, "--thread", THREAD, "--speed", "20",
    ]);
    let mut brain = Brain::spawn(cmd, db, false, &["去门外"]);
    let wait = Duration::from_secs(30);
    // An approval asked and answered, a patrol (goals sent and finished), a
    // light switched (a device write): the effects a cut may fall among.
    assert!(
        brain.wait_for(wait, true, &is_approval_request).is_some(),
        "no approval prompt"
    );
    brain.wait_for(Duration::from_secs(2), true, &|_| false);
    brain.send("巡逻");
    brain.wait_for(Duration::from_secs(3), true, &|_| false);
    brain.send("打开厨房的灯");
    brain.wait_for(Duration::from_secs(3), true, &|_| false);
    brain.send(r#"{"cmd":"shutdown"}"#);
    let _ = brain.child.wait();
    trace
}

/// What a record holds, for a failure: its calls counted by name, and the
/// files and sockets written to.
fn record_summary(text: &str) -> String {
    let mut calls: BTreeMap<&str, usize> = BTreeMap::new();
    let mut paths = BTreeSet::new();
    for line in text.lines() {
        let Some((_, rest)) = line.split_once(' ') else {
            continue;
        };
        if let Some((name, args)) = rest.trim_start().split_once('(') {
            *calls.entry(name).or_default() += 1;
            if let Some(path) = parse_args(args).fd_path {
                paths.insert(path);
            }
        }
    }
    format!("calls {calls:?}; paths {paths:?}")
}

/// Whether `strace` can trace a child here (installed, and ptrace allowed).
fn strace_works() -> bool {
    Command::new("strace")
        .args(["-qq", "-e", "trace=none", "true"])
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_power_cut_at_random_moments_loses_no_record_of_a_side_effect() {
    assert!(
        strace_works(),
        "this test needs strace (`./x setup` installs it) and ptrace"
    );
    let cuts: usize = std::env::var("ROBOBRAIN_POWER_CUTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(40);
    let seed: u64 = std::env::var("ROBOBRAIN_POWER_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    eprintln!("power-loss test: seed {seed} ({cuts} cut points)");
    let dir = temp_dir(&format!("power-{seed}"));
    let db = dir.join("brain.db");
    let config_path = crate::support::quiet_config(&dir);
    // The default (`effects`) unless asked: `normal` shows what a power
    // cut costs without a sync before an effect (docs/durability.md):
    // goals sent whose ledger rows are lost.
    if let Ok(synchronous) = std::env::var("ROBOBRAIN_POWER_SYNCHRONOUS") {
        let text = std::fs::read_to_string(&config_path).unwrap();
        std::fs::write(
            &config_path,
            format!("{text}[store]\nsynchronous = \"{synchronous}\"\n"),
        )
        .unwrap();
    }
    let trace_path = traced_run(&dir, &db, &config_path);
    let text = std::fs::read_to_string(&trace_path).unwrap();
    let trace = parse_trace(&text, &db);
    let syncs = trace
        .ops
        .iter()
        .filter(|o| matches!(o.kind, OpKind::Sync))
        .count();
    eprintln!(
        "power-loss test: {} trace lines, {} file operations ({syncs} syncs), {} goals sent",
        trace.lines,
        trace.ops.len(),
        trace.sends.len()
    );
    assert!(
        syncs > 0 && !trace.sends.is_empty(),
        "the run did nothing as the reader sees it; the record ({}) holds: {}",
        trace_path.display(),
        record_summary(&text)
    );
    let mut config = Config::load(&config_path).unwrap();
    config.thread_id = Some(THREAD.into());
    let mut rng = SplitMix64::new(seed);
    let mut points: Vec<usize> = (0..cuts).map(|_| rng.below(trace.lines + 1)).collect();
    points.sort_unstable();
    let mut by_path: BTreeMap<String, Vec<&Op>> = BTreeMap::new();
    for op in &trace.ops {
        if matches!(op.kind, OpKind::Write { .. } | OpKind::Truncate(_)) {
            by_path.entry(op.path.clone()).or_default().push(op);
        }
    }
    let mut disk = Disk::default();
    let mut failures = Vec::new();
    let mut resumed_with_goals = 0;
    for (i, &cut) in points.iter().enumerate() {
        disk.advance(&trace, &by_path, cut);
        let seen: BTreeSet<String> = trace
            .sends
            .iter()
            .filter(|(at, _)| *at < cut)
            .map(|(_, id)| id.clone())
            .collect();
        let at = dir.join("cut");
        disk.materialise(&at);
        let wrong = check_cut(&at, &config, &seen);
        if !seen.is_empty() {
            resumed_with_goals += 1;
        }
        if !wrong.is_empty() {
            let keep = dir.join(format!("cut-{i}-line-{cut}"));
            let _ = std::fs::rename(&at, &keep);
            failures.push(format!("cut at line {cut} ({}): {wrong:?}", keep.display()));
        }
    }
    eprintln!(
        "power-loss test: {cuts} cut points, {resumed_with_goals} after a goal was sent, {} failed (seed {seed})",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "seed {seed}, files in {}:\n{}",
        dir.display(),
        failures.join("\n")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `\xHH` for every byte, as `strace -xx` writes strings and `-y` paths.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut out, b| {
        use std::fmt::Write as _;
        let _ = write!(out, "\\x{b:02x}");
        out
    })
}

/// strace pads a pid to five columns (`%-5u `): a pid under 10 000 — any
/// on a freshly booted machine or a container — is followed by two spaces
/// or more. The reader once took the second space as part of the call's
/// name and saw nothing in such a record ("the run did nothing" on fresh
/// clones, 4 runs in 5); a line to the robot split across two writes is
/// still one goal, dated by the write that began it.
#[test]
fn the_reader_takes_short_pids_and_lines_split_across_writes() {
    let dir = temp_dir("power-reader");
    let db = dir.join("brain.db");
    let wal = hex(format!("{}-wal", db.display()).as_bytes());
    let sock = hex(b"socket:[77]");
    let line = br#"{"request":"send_goal","goal_id":"t/g1.0","goal":{"navigate_to":"kitchen"}}"#;
    let (head, tail) = line.split_at(20);
    let mut tail = tail.to_vec();
    tail.push(b'\n');
    let text = [
        format!("42    pwrite64(3<{wal}>, \"{}\", 2, 0) = 2", hex(b"AB")),
        format!("42    fdatasync(3<{wal}>) = 0"),
        format!(
            "4321  sendto(5<{sock}>, \"{}\", {}, 0, NULL, 0) = {}",
            hex(head),
            head.len(),
            head.len()
        ),
        format!(
            "4321  write(5<{sock}>, \"{}\", {} <unfinished ...>",
            hex(&tail),
            tail.len()
        ),
        "42    +++ exited with 0 +++".to_string(),
        format!("4321  <... write resumed>) = {}", tail.len()),
    ]
    .join("\n");
    let trace = parse_trace(&text, &db);
    assert_eq!(trace.ops.len(), 2, "{:?}", trace.ops);
    assert_eq!(trace.ops[0].path, "brain.db-wal");
    assert!(matches!(trace.ops[1].kind, OpKind::Sync));
    assert_eq!(trace.sends, vec![(2, "t/g1.0".to_string())]);
    let _ = std::fs::remove_dir_all(&dir);
}
