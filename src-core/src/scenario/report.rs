//! Judging a finished run against a scenario's expectations, and the
//! readable report: one line per check, ✓ or ✗, with what was expected and
//! what happened (the count found, the nearest events of the kind wanted).
//!
//! Everything here is pure: events and the final snapshot in, checks out.

use std::fmt;
use std::path::PathBuf;

use serde_json::Value;

use super::format::{Expectation, FinalExpect, OrderExpectation, Scenario, TaskExpect};
use super::matcher::{Pattern, find_in_order};
use crate::protocol::{Snapshot, TaskStatus};

/// Longest abbreviated event shown in a report, in characters.
const BRIEF_CHARS: usize = 160;
/// Near-miss events shown under a failed check.
const NEAREST: usize = 3;

/// One judged item: a step, an expectation or a final-state check.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// Whether it held.
    pub ok: bool,
    /// What was expected, with where it was written.
    pub label: String,
    /// What happened, in one line.
    pub outcome: String,
    /// Supporting lines (near misses), shown indented.
    pub detail: Vec<String>,
}

impl Check {
    fn new(ok: bool, label: impl Into<String>, outcome: impl Into<String>) -> Self {
        Self {
            ok,
            label: label.into(),
            outcome: outcome.into(),
            detail: Vec::new(),
        }
    }
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EndReason {
    /// Every step fired and the engine stayed settled for `settle` seconds.
    Settled,
    /// `max_time` was reached.
    MaxTime,
}

/// The outcome of one scenario run, printable.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Scenario name.
    pub name: String,
    /// Scenario file.
    pub file: PathBuf,
    /// Sim time the run ended.
    pub end_time: f64,
    /// Why it ended.
    pub end: EndReason,
    /// Events seen.
    pub event_count: usize,
    /// Every check, steps first, then expectations, order, final state.
    pub checks: Vec<Check>,
}

impl Report {
    /// Whether every check held.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.ok)
    }

    /// One line: `PASS name: 9/9 checks held (ended at 42.0 s, settled)`.
    pub fn summary(&self) -> String {
        let held = self.checks.iter().filter(|c| c.ok).count();
        format!(
            "{} {}: {held}/{} checks held ({})",
            if self.passed() { "PASS" } else { "FAIL" },
            self.name,
            self.checks.len(),
            self.ending()
        )
    }

    fn ending(&self) -> String {
        let why = match self.end {
            EndReason::Settled => "settled",
            EndReason::MaxTime => "max_time reached",
        };
        format!("ended at {:.1} s, {why}", self.end_time)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "scenario {} ({})", self.name, self.file.display())?;
        writeln!(f, "  {}, {} events", self.ending(), self.event_count)?;
        for c in &self.checks {
            let mark = if c.ok { '✓' } else { '✗' };
            writeln!(f, "  {mark} {} — {}", c.label, c.outcome)?;
            for d in &c.detail {
                writeln!(f, "      {d}")?;
            }
        }
        write!(f, "{}", self.summary())
    }
}

/// Judges the expectations and final state of `scenario` against the run's
/// events (as JSON, in order) and its final snapshot.
pub fn evaluate(scenario: &Scenario, events: &[Value], last: &Snapshot) -> Vec<Check> {
    let mut checks = Vec::new();
    for (i, e) in scenario.expects.iter().enumerate() {
        checks.push(expectation(i + 1, e, events));
    }
    for (i, o) in scenario.orders.iter().enumerate() {
        checks.push(order(i + 1, o, events));
    }
    final_state(&scenario.final_state, events, last, &mut checks);
    checks
}

fn with_note(label: String, note: Option<&String>) -> String {
    match note {
        Some(n) => format!("{label} “{n}”"),
        None => label,
    }
}

fn time_of(event: &Value) -> f64 {
    event.get("time").and_then(Value::as_f64).unwrap_or(0.0)
}

fn expectation(n: usize, e: &Expectation, events: &[Value]) -> Check {
    let within = e.within.map_or(String::new(), |w| format!(" within {w} s"));
    let before = e
        .before
        .as_ref()
        .map_or(String::new(), |b| format!(" before {b}"));
    let label = with_note(
        format!(
            "expect {n} (line {}): {} {}{within}{before}",
            e.line, e.pattern, e.count
        ),
        e.note.as_ref(),
    );
    // Up to the first event matching `before` (which must come).
    let mut window = events;
    if let Some(b) = &e.before {
        let Some(i) = events.iter().position(|ev| b.matches(ev)) else {
            let mut check = Check::new(false, label, format!("never saw {b}"));
            check.detail = nearest(b, &events.iter().collect::<Vec<_>>());
            return check;
        };
        window = &events[..i];
    }
    let in_time: Vec<&Value> = window
        .iter()
        .filter(|ev| e.within.is_none_or(|w| time_of(ev) <= w + 1e-9))
        .collect();
    let matched: Vec<&Value> = in_time
        .iter()
        .copied()
        .filter(|ev| e.pattern.matches(ev))
        .collect();
    let found = matched.len() as u64;
    let ok = e.count.holds(found);
    let outcome = match matched.first() {
        Some(first) => format!("found {found}, first at {:.1} s", time_of(first)),
        None => "found 0".to_string(),
    };
    let mut check = Check::new(ok, label, outcome);
    if !ok {
        check.detail = if found == 0 {
            nearest(&e.pattern, &in_time)
        } else {
            matched
                .iter()
                .take(NEAREST)
                .map(|ev| brief(ev))
                .chain(
                    (matched.len() > NEAREST)
                        .then(|| format!("… and {} more", matched.len() - NEAREST)),
                )
                .collect()
        };
    }
    check
}

/// The events of the pattern's kind that come closest to matching it.
fn nearest(pattern: &Pattern, events: &[&Value]) -> Vec<String> {
    let mut of_kind: Vec<(usize, &Value)> = events
        .iter()
        .filter(|ev| pattern.kind_matches(ev))
        .map(|ev| (pattern.score(ev), *ev))
        .collect();
    if of_kind.is_empty() {
        return vec![format!("no `{}` events at all", pattern.kind)];
    }
    // Stable sort: best score first, earliest first among equals.
    of_kind.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
    let mut lines = vec![format!("nearest `{}` events:", pattern.kind)];
    lines.extend(of_kind.iter().take(NEAREST).map(|(_, ev)| brief(ev)));
    lines
}

fn order(n: usize, o: &OrderExpectation, events: &[Value]) -> Check {
    let chain: Vec<String> = o.events.iter().map(ToString::to_string).collect();
    let within = o.within.map_or(String::new(), |w| format!(" within {w} s"));
    let label = with_note(
        format!("order {n} (line {}): {}{within}", o.line, chain.join(" → ")),
        o.note.as_ref(),
    );
    let times = |idx: &[usize]| {
        idx.iter()
            .map(|&i| format!("{:.1} s", time_of(&events[i])))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match find_in_order(&o.events, events) {
        Ok(idx) => {
            let last = idx.last().map_or(0.0, |&i| time_of(&events[i]));
            match o.within {
                Some(w) if last > w + 1e-9 => Check::new(
                    false,
                    label,
                    format!("in order at {}, but the last came after {w} s", times(&idx)),
                ),
                _ => Check::new(true, label, format!("in order at {}", times(&idx))),
            }
        }
        Err(idx) => {
            let missing = &o.events[idx.len()];
            let from = idx.last().map_or(0, |&i| i + 1);
            let outcome = if idx.is_empty() {
                format!("never saw {missing}")
            } else {
                format!(
                    "matched {} of {} (at {}), then never saw {missing}",
                    idx.len(),
                    o.events.len(),
                    times(&idx)
                )
            };
            let rest: Vec<&Value> = events[from..].iter().collect();
            let mut check = Check::new(false, label, outcome);
            check.detail = nearest(missing, &rest);
            check
        }
    }
}

fn final_state(want: &FinalExpect, events: &[Value], last: &Snapshot, out: &mut Vec<Check>) {
    let mut compare = |what: &str, expected: String, got: String| {
        let ok = expected == got;
        let outcome = if ok {
            got
        } else {
            format!("expected {expected}, found {got}")
        };
        out.push(Check::new(ok, format!("final {what}"), outcome));
    };
    if let Some(m) = want.mode {
        compare("mode", m.as_str().into(), last.mode.as_str().into());
    }
    if let Some(a) = want.activity {
        compare("activity", a.as_str().into(), last.activity.as_str().into());
    }
    if let Some(t) = &want.task {
        let (label, got) = task_status(t, events, last);
        compare(&label, status_name(t.status), got);
    }
    if let Some(z) = &want.zone {
        let got = last.robot.zone.clone().unwrap_or_else(|| "no zone".into());
        compare("zone", z.value.clone(), got);
    }
    if let Some((lo, hi)) = want.battery {
        let b = last.robot.battery_pct;
        let ok = (lo..=hi).contains(&b);
        let outcome = if ok {
            format!("{b:.1} %")
        } else {
            format!("expected {lo}–{hi} %, found {b:.1} %")
        };
        out.push(Check::new(ok, "final battery", outcome));
    }
    for (path, expected) in &want.devices {
        let (device, key) = path.split_once('.').unwrap_or((path.as_str(), ""));
        let entry = last.devices.get(device);
        let got = if key == "online" {
            entry.and_then(|d| d.get("online"))
        } else {
            entry.and_then(|d| d.get("state")).and_then(|s| s.get(key))
        };
        let same = match (got, expected) {
            (Some(a), b) if a.is_number() && b.is_number() => a.as_f64() == b.as_f64(),
            (Some(a), b) => a == b,
            (None, _) => false,
        };
        let outcome = match got {
            Some(g) if same => g.to_string(),
            Some(g) => format!("expected {expected}, found {g}"),
            None => format!("expected {expected}, found no such device state"),
        };
        out.push(Check::new(same, format!("final device {path}"), outcome));
    }
}

fn status_name(s: TaskStatus) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The checked task's label and status: the named task, or the task of the
/// last `task` event; the snapshot's status wins over the events'.
fn task_status(want: &TaskExpect, events: &[Value], last: &Snapshot) -> (String, String) {
    let task_events = events
        .iter()
        .filter(|e| e.get("kind").and_then(Value::as_str) == Some("task"));
    let id_of = |e: &Value| {
        e.pointer("/task/id")
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let id = want
        .id
        .clone()
        .or_else(|| task_events.clone().filter_map(id_of).next_back());
    let Some(id) = id else {
        return ("task status (last task)".into(), "no task at all".into());
    };
    let label = if want.id.is_some() {
        format!("task {id} status")
    } else {
        format!("task status (last task, {id})")
    };
    if let Some(t) = last.tasks.iter().find(|t| t.id == id) {
        return (label, status_name(t.status));
    }
    let from_events = task_events
        .filter(|e| id_of(e).as_deref() == Some(id.as_str()))
        .filter_map(|e| e.pointer("/task/status").and_then(Value::as_str))
        .next_back()
        .map_or_else(|| format!("no task {id}"), str::to_string);
    (label, from_events)
}

/// An event in one line: its time, kind and fields, without the envelope,
/// cut at [`BRIEF_CHARS`].
pub fn brief(event: &Value) -> String {
    let mut fields = event.as_object().cloned().unwrap_or_default();
    for key in ["seq", "time", "wall_ms", "thread_id", "step"] {
        fields.remove(key);
    }
    let kind = fields
        .remove("kind")
        .and_then(|k| k.as_str().map(str::to_string))
        .unwrap_or_default();
    let body = Value::Object(fields).to_string();
    let mut line = format!("[{:7.1}s] {kind} {body}", time_of(event));
    if line.chars().count() > BRIEF_CHARS {
        line = line.chars().take(BRIEF_CHARS - 1).collect::<String>() + "…";
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::format::parse;
    use serde_json::json;
    use std::path::Path;

    fn events() -> Vec<Value> {
        vec![
            json!({"seq":1,"time":0.1,"kind":"mode","from":"IDLE","to":"EXEC","reason":"task t1"}),
            json!({"seq":2,"time":0.1,"kind":"task","task":{"id":"t1","status":"running"},"reason":""}),
            json!({"seq":3,"time":0.2,"kind":"skill","skill":"navigate_to","status":"dispatched","args":{"zone":"kitchen"}}),
            json!({"seq":4,"time":3.5,"kind":"skill","skill":"navigate_to","status":"failed","error":"blocked","args":{"zone":"kitchen"}}),
            json!({"seq":5,"time":9.0,"kind":"task","task":{"id":"t1","status":"succeeded"},"reason":""}),
            json!({"seq":6,"time":9.0,"kind":"mode","from":"EXEC","to":"IDLE","reason":"done"}),
        ]
    }

    fn run(text: &str, snap: &Snapshot) -> Vec<Check> {
        let s = parse(text, Path::new("s.toml")).unwrap();
        evaluate(&s, &events(), snap)
    }

    #[test]
    fn counts_within_and_near_misses_are_reported() {
        let checks = run(
            r#"
[[expect]]
kind = "skill"
match = { skill = "navigate_to", status = "succeeded" }

[[expect]]
kind = "skill"
match = { status = "failed", error = "blocked" }
within = 2

[[expect]]
kind = "mode"
match = { to = "SAFE" }
count = 0
"#,
            &Snapshot::default(),
        );
        assert!(!checks[0].ok);
        assert_eq!(
            checks[0].label,
            "expect 1 (line 2): skill {skill=navigate_to, status=succeeded} >=1"
        );
        assert_eq!(checks[0].outcome, "found 0");
        assert_eq!(checks[0].detail[0], "nearest `skill` events:");
        assert!(
            checks[0].detail[1].contains("dispatched"),
            "{:?}",
            checks[0].detail
        );
        assert!(!checks[1].ok, "the failure came after 2 s");
        assert!(checks[2].ok);
        assert_eq!(checks[2].outcome, "found 0");
    }

    /// `before`: only events before the first match count, and that event
    /// must come.
    #[test]
    fn before_counts_only_what_came_first_and_needs_its_event() {
        let checks = run(
            r#"
[[expect]]
kind = "skill"
match = { status = "failed" }
before = { kind = "task", match = { "task.status" = "succeeded" } }
count = 1

[[expect]]
kind = "skill"
match = { status = "failed" }
before = { kind = "skill", match = { status = "failed" } }
count = 0

[[expect]]
kind = "skill"
count = 0
before = { kind = "mode", match = { to = "SAFE" } }
"#,
            &Snapshot::default(),
        );
        assert!(checks[0].ok, "{:?}", checks[0]);
        assert_eq!(
            checks[0].label,
            "expect 1 (line 2): skill {status=failed} exactly 1 before task {task.status=succeeded}"
        );
        assert!(checks[1].ok, "the failure itself is not before it");
        assert_eq!(checks[1].outcome, "found 0");
        assert!(!checks[2].ok, "a `before` event that never comes fails");
        assert_eq!(checks[2].outcome, "never saw mode {to=SAFE}");
        assert_eq!(checks[2].detail[0], "nearest `mode` events:");
    }

    #[test]
    fn order_reports_where_it_stopped() {
        let checks = run(
            r#"
[[expect_order]]
events = [{ kind = "mode", match = { to = "EXEC" } }, { kind = "mode", match = { to = "IDLE" } }]

[[expect_order]]
events = [{ kind = "task", match = { "task.status" = "succeeded" } }, { kind = "skill" }]
"#,
            &Snapshot::default(),
        );
        assert!(checks[0].ok);
        assert_eq!(checks[0].outcome, "in order at 0.1 s, 9.0 s");
        assert!(!checks[1].ok);
        assert_eq!(
            checks[1].outcome,
            "matched 1 of 2 (at 9.0 s), then never saw skill"
        );
        assert_eq!(checks[1].detail, vec!["no `skill` events at all"]);
    }

    #[test]
    fn final_state_uses_the_snapshot_and_the_last_task() {
        let mut snap = Snapshot::default();
        snap.robot.zone = Some("hallway".into());
        snap.robot.battery_pct = 55.0;
        let checks = run(
            "[final]\nmode = \"IDLE\"\ntask_status = \"succeeded\"\nzone = \"kitchen\"\nbattery = [50, 60]\n",
            &snap,
        );
        let outcomes: Vec<(bool, &str, &str)> = checks
            .iter()
            .map(|c| (c.ok, c.label.as_str(), c.outcome.as_str()))
            .collect();
        assert_eq!(
            outcomes,
            vec![
                (true, "final mode", "IDLE"),
                (true, "final task status (last task, t1)", "succeeded"),
                (false, "final zone", "expected kitchen, found hallway"),
                (true, "final battery", "55.0 %"),
            ]
        );
    }

    #[test]
    fn brief_drops_the_envelope_and_cuts_long_events() {
        let b = brief(&events()[3]);
        assert!(b.starts_with("[    3.5s] skill {"), "{b}");
        assert!(!b.contains("seq"), "{b}");
        let long = json!({"time": 1.0, "kind": "log", "message": "x".repeat(500)});
        assert_eq!(brief(&long).chars().count(), BRIEF_CHARS);
    }
}
