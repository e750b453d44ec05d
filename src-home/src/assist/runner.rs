//! Runs the assist datasets: for every sentence of every case, a fresh
//! device world from the home with the case's `setup` applied, the sentence
//! understood and carried out, and the outcome judged by upstream's rules
//! (home-assistant-datasets' `entity_state/diff.py` and its assist eval):
//!
//! - the states expected are the states before the sentence with
//!   `expect_changes` laid over them (a state replaced, attributes merged;
//!   `null` expects none); every entity's attributes are compared with
//!   those, any attribute that differs or appeared is a difference, and only
//!   then are the `ignore_changes` attributes (and the derived `is_closed`,
//!   `is_opening`, `is_closing`) dropped — so an ignored attribute is never
//!   judged, even one the case also expects;
//! - two values are equal as upstream compares them: equal, or equal as
//!   Python prints them (`128` and `"128"`, `None` and absent); a colour
//!   (`rgb_color`, `hs_color`, `xy_color`, …) is a tuple in Home Assistant,
//!   which upstream's comparison takes as equal to anything but absent;
//! - a case that expects changes fails when the answer says "Sorry"; a case
//!   with `expect_response` passes only when the answer holds one of them
//!   (any case).
//!
//! A call that needs confirmation (locks: high risk) is approved by the
//! runner and counted. Pass rates come out per category label, per sentence
//! language (the test file's, else the home's, else the sentence's script),
//! per home locale, and overall; each sentence's result carries which
//! understander took it and how long the assistant took.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;
use serde_json::{Map, Value};

use super::dataset::{EntityPatch, HomeCase, TestCase, language_of};
use super::fixture::HaHome;
use super::world::world_of;
use crate::devices::{DeviceWorld, Invocation};
use crate::hci::device_command::{Command, parse_command};
use crate::skills::Risk;

/// What understanding one sentence did to the world.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Turn {
    /// The calls carried out, as `device.capability(args)`.
    pub calls: Vec<String>,
    /// Confirmations asked for (and approved by the runner).
    pub confirmations: usize,
    /// Devices that changed before the turn's first confirmation was
    /// approved, in a turn that asked for one: a gate that let the call
    /// through and asked afterwards. Empty when every change waited.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed_before_confirmation: Vec<String>,
    /// Why nothing (or not everything) was done, when so.
    pub note: Option<String>,
    /// Everything said, in order (to score a question by its answer).
    pub said: Vec<String>,
    /// Which understander took the sentence (`robot grammar`, `Home
    /// Assistant grammar`, `home rules`, `device parser`, `model`, …), when
    /// the assistant can tell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub understander: Option<String>,
    /// The intent understood, when one was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
    /// Milliseconds from the sentence to the turn's end, as the assistant
    /// measured it (the runner times the whole `handle` when it did not).
    pub latency_ms: f64,
    /// What the model did, when the sentence went to one (`assist --model`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelUse>,
    /// The language pipeline's trace in words (its `understanding` event):
    /// who took the sentence and why each row before it passed — what
    /// explains a misunderstood sentence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
}

/// A model's part in one sentence: the rules missed it and the model was asked.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModelUse {
    /// `ok`, or why the call gave no usable reply (`timeout`, `server_error`, …).
    pub outcome: String,
    /// The device calls it asked for.
    pub calls: usize,
    /// Those the device world or the risk gate refused.
    pub refused: usize,
    /// Wall milliseconds of the call.
    pub latency_ms: u64,
}

/// Understands a sentence and acts on the world; the runner judges the result.
pub trait Assistant {
    /// A short name for the report (`engine`, `commands`).
    fn name(&self) -> &str;
    /// Acts on `sentence` in `world`, approving what needs confirmation;
    /// gives the world back as it is afterwards.
    fn handle(&mut self, sentence: &str, world: DeviceWorld) -> (DeviceWorld, Turn);
    /// The area the next requests come from (`(id, name)`: a case's
    /// `context_device`), or none.
    fn set_here(&mut self, here: Option<(String, String)>) {
        let _ = here;
    }
}

/// The device-command parser alone, no model and no engine:
/// [`parse_command`], then the risk gate (a high-risk capability needs
/// confirmation, which the runner approves), then the device world's
/// checked invoke.
#[derive(Debug, Default)]
pub struct CommandAssistant {
    requests: u64,
}

impl Assistant for CommandAssistant {
    fn name(&self) -> &'static str {
        "commands"
    }

    fn handle(&mut self, sentence: &str, mut world: DeviceWorld) -> (DeviceWorld, Turn) {
        let mut turn = Turn {
            understander: Some("device parser".into()),
            ..Turn::default()
        };
        match parse_command(sentence, &world) {
            Command::Call {
                device,
                capability,
                args,
            } => {
                let high = world
                    .get(&device)
                    .and_then(|d| d.capability(&capability))
                    .is_some_and(|c| c.risk == Risk::HighWrite);
                if high {
                    turn.confirmations += 1;
                }
                self.requests += 1;
                let call = Invocation {
                    request_id: format!("assist-{}", self.requests),
                    plan_id: format!("assist-plan-{}", self.requests),
                    step_id: "1".into(),
                    device: device.clone(),
                    capability: capability.clone(),
                    args: args.clone(),
                };
                turn.calls.push(format!("{device}.{capability}({args})"));
                if let Err(e) = world.invoke(&call) {
                    turn.note = Some(format!("the call failed: {e}"));
                }
            }
            Command::Ambiguous {
                capability,
                candidates,
            } => {
                turn.note = Some(format!(
                    "ambiguous `{capability}`: {}",
                    candidates.join(", ")
                ));
            }
            Command::NoDevice { wanted } => {
                turn.note = Some(format!("no device named that can {}", wanted.join(" / ")));
            }
            Command::NotUnderstood => turn.note = Some("not understood".into()),
        }
        (world, turn)
    }
}

/// One sentence's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SentenceResult {
    /// The home folder.
    pub home: String,
    /// The test file.
    pub file: PathBuf,
    /// The category (its first label).
    pub category: String,
    /// Every label of the category (upstream allows a list).
    pub categories: Vec<String>,
    /// The case's index in its file.
    pub case: usize,
    /// The sentence.
    pub sentence: String,
    /// Its language, by script.
    pub language: String,
    /// The home's locale.
    pub locale: String,
    /// Whether the expected changes, and only those, happened.
    pub passed: bool,
    /// Why not, when it failed.
    pub reason: Option<String>,
    /// Milliseconds the assistant took (see [`Turn::latency_ms`]).
    pub latency_ms: f64,
    /// What the assistant did.
    pub turn: Turn,
}

/// Passed out of run, with confirmations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Tally {
    /// Sentences that passed.
    pub passed: usize,
    /// Sentences run.
    pub total: usize,
    /// Confirmations approved by the runner.
    pub confirmations: usize,
}

impl Tally {
    /// Passed / total, 0 when empty.
    pub fn rate(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.passed as f64 / self.total as f64
        }
    }

    fn add(&mut self, r: &SentenceResult) {
        self.total += 1;
        self.passed += usize::from(r.passed);
        self.confirmations += r.turn.confirmations;
    }
}

/// A whole dataset's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AssistReport {
    /// Which assistant ran.
    pub assistant: String,
    /// Every sentence.
    pub results: Vec<SentenceResult>,
    /// By category.
    pub by_category: BTreeMap<String, Tally>,
    /// By sentence language.
    pub by_language: BTreeMap<String, Tally>,
    /// By home locale.
    pub by_locale: BTreeMap<String, Tally>,
    /// By the understander that took the sentence (`none` when nothing did).
    pub by_understander: BTreeMap<String, Tally>,
    /// Everything.
    pub overall: Tally,
    /// The assistant's time per sentence.
    pub latency: Latency,
}

/// Milliseconds per sentence: nearest-rank percentiles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Latency {
    /// The median.
    pub p50_ms: f64,
    /// The 99th percentile.
    pub p99_ms: f64,
    /// The slowest.
    pub max_ms: f64,
}

impl Latency {
    fn of(results: &[SentenceResult]) -> Self {
        let mut ms: Vec<f64> = results.iter().map(|r| r.latency_ms).collect();
        ms.sort_by(f64::total_cmp);
        let at = |q: f64| {
            let last = ms.len().saturating_sub(1);
            ms.get(((last as f64) * q).round() as usize)
                .copied()
                .unwrap_or_default()
        };
        Self {
            p50_ms: at(0.5),
            p99_ms: at(0.99),
            max_ms: at(1.0),
        }
    }
}

/// Runs every sentence of every home with `assistant`.
pub fn run(
    homes: &[HomeCase],
    assistant: &mut dyn Assistant,
    progress: &dyn crate::progress::Progress,
) -> AssistReport {
    let total: usize = homes
        .iter()
        .flat_map(|h| h.files.iter())
        .flat_map(|(_, tests)| tests.tests.iter())
        .map(|case| case.sentences.len())
        .sum();
    let mut results = Vec::new();
    progress.update("sentences", 0, total as u64);
    for h in homes {
        for (file, tests) in &h.files {
            for (i, case) in tests.tests.iter().enumerate() {
                for sentence in &case.sentences {
                    let (passed, reason, turn) = run_sentence(&h.home, case, sentence, assistant);
                    let language = tests
                        .language
                        .clone()
                        .or_else(|| h.home.language.clone())
                        .unwrap_or_else(|| language_of(sentence).to_string());
                    results.push(SentenceResult {
                        home: h.name.clone(),
                        file: file.clone(),
                        category: tests.categories.first().cloned().unwrap_or_default(),
                        categories: tests.categories.clone(),
                        case: i,
                        sentence: sentence.clone(),
                        language,
                        locale: h.locale.clone(),
                        passed,
                        reason,
                        latency_ms: turn.latency_ms,
                        turn,
                    });
                    progress.update("sentences", results.len() as u64, total as u64);
                }
            }
        }
    }
    let mut report = AssistReport {
        assistant: assistant.name().to_string(),
        by_category: BTreeMap::new(),
        by_language: BTreeMap::new(),
        by_locale: BTreeMap::new(),
        by_understander: BTreeMap::new(),
        overall: Tally::default(),
        latency: Latency::of(&results),
        results: Vec::new(),
    };
    for r in &results {
        for label in &r.categories {
            report.by_category.entry(label.clone()).or_default().add(r);
        }
        report
            .by_language
            .entry(r.language.clone())
            .or_default()
            .add(r);
        report.by_locale.entry(r.locale.clone()).or_default().add(r);
        report
            .by_understander
            .entry(r.turn.understander.clone().unwrap_or_else(|| "none".into()))
            .or_default()
            .add(r);
        report.overall.add(r);
    }
    report.results = results;
    report
}

fn run_sentence(
    home: &HaHome,
    case: &TestCase,
    sentence: &str,
    assistant: &mut dyn Assistant,
) -> (bool, Option<String>, Turn) {
    let home = with_setup(home, &case.setup);
    let world = match world_of("assist", &home) {
        Ok(w) => w,
        Err(e) => {
            return (
                false,
                Some(format!("the home is not a device world: {e}")),
                Turn::default(),
            );
        }
    };
    let here = case.context_device.as_deref().and_then(|device| {
        let area = home
            .devices
            .iter()
            .find(|d| d.id == device)
            .and_then(|d| d.area.clone())
            .or_else(|| {
                home.entity(device)
                    .and_then(|e| e.area_in(&home))
                    .map(str::to_string)
            })?;
        let name = home.area_name(&area).unwrap_or(&area).to_string();
        Some((area, name))
    });
    assistant.set_here(here);
    let before = states(&home, &world);
    let started = std::time::Instant::now();
    let (world, mut turn) = assistant.handle(sentence, world);
    if turn.latency_ms == 0.0 {
        turn.latency_ms = started.elapsed().as_secs_f64() * 1e3;
    }
    let after = states(&home, &world);
    let judged = judge(case, &before, &after)
        .and_then(|()| no_sorry(case, &turn.said))
        .and_then(|()| answer_has(case, &turn.said));
    match judged {
        Ok(()) => (true, None, turn),
        Err(reason) => {
            let reason = match &turn.note {
                Some(note) => format!("{reason} ({note})"),
                None => reason,
            };
            (false, Some(reason), turn)
        }
    }
}

/// The home with a case's setup applied: states set, attributes merged
/// (`null` removes one).
pub fn with_setup(home: &HaHome, setup: &BTreeMap<String, EntityPatch>) -> HaHome {
    let mut home = home.clone();
    for (id, patch) in setup {
        if let Some(e) = home.entities.iter_mut().find(|e| &e.id == id) {
            if patch.state.is_some() {
                e.state.clone_from(&patch.state);
            }
            for (k, v) in &patch.attributes {
                if v.is_null() {
                    e.attributes.remove(k);
                } else {
                    e.attributes.insert(k.clone(), v.clone());
                }
            }
        }
    }
    home
}

/// Every entity's state by id: the world's devices, and the entities the
/// world left out (todo lists…) as the home gave them, since nothing moves those.
fn states(home: &HaHome, world: &DeviceWorld) -> BTreeMap<String, Map<String, Value>> {
    let mut all: BTreeMap<String, Map<String, Value>> = home
        .entities
        .iter()
        .map(|e| (e.id.clone(), super::world::entity_state(e)))
        .collect();
    for d in world.devices() {
        all.insert(d.id.clone(), d.state.clone());
    }
    all
}

fn shown(v: Option<&Value>) -> String {
    v.map_or_else(|| "absent".to_string(), Value::to_string)
}

/// Upstream's eval: a case that expects changes fails when the answer says
/// "Sorry" (as written, case and all).
pub fn no_sorry(case: &TestCase, said: &[String]) -> Result<(), String> {
    if !case.expect_changes.is_empty() && said.iter().any(|s| s.contains("Sorry")) {
        Err(format!(
            "the answer says Sorry though the changes are judged: {:?}",
            said.join(" ")
        ))
    } else {
        Ok(())
    }
}

/// Whether what was said has one of the case's expected answers (any
/// case, any of them), when it expects one.
pub fn answer_has(case: &TestCase, said: &[String]) -> Result<(), String> {
    let Some(wanted) = &case.expect_response else {
        return Ok(());
    };
    let all = said.join(" ").to_lowercase();
    if wanted.iter().any(|w| all.contains(&w.to_lowercase())) {
        Ok(())
    } else {
        Err(format!(
            "the answer has none of {}: {:?}",
            wanted
                .iter()
                .map(|w| format!("`{w}`"))
                .collect::<Vec<_>>()
                .join(", "),
            said.join(" ")
        ))
    }
}

/// Attributes that follow from a cover's or valve's state and position:
/// never judged (upstream's `DERIVED_STATE_ATTRIBUTES`).
const DERIVED: [&str; 3] = ["is_closed", "is_opening", "is_closing"];

/// Attributes Home Assistant keeps as tuples: upstream's comparison
/// (`compare_state`) takes a tuple on either side as equal — it compares
/// the actual value with itself — so only an absent one differs.
const TUPLES: [&str; 6] = [
    "hs_color",
    "rgb_color",
    "rgbw_color",
    "rgbww_color",
    "xy_color",
    "color_temp_kelvin_range",
];

/// Python's `==` on JSON values: numbers by value (`1 == 1.0`, `True == 1`).
fn py_eq(a: &Value, b: &Value) -> bool {
    let num = |v: &Value| match v {
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        Value::Number(n) => n.as_f64(),
        _ => None,
    };
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| py_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| py_eq(v, w)))
        }
        _ => match (num(a), num(b)) {
            (Some(x), Some(y)) => x == y,
            _ => a == b,
        },
    }
}

/// A value as Python's `str()` prints it (scalars; lists and mappings as JSON).
fn py_str(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "None".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => if *b { "True" } else { "False" }.to_string(),
        Some(Value::Number(n)) if n.is_f64() => {
            let f = n.as_f64().unwrap_or_default();
            if f.fract() == 0.0 && f.abs() < 1e16 {
                format!("{f:.1}")
            } else {
                f.to_string()
            }
        }
        Some(other) => other.to_string(),
    }
}

/// Upstream's `compare_state(actual, expected)`.
fn equivalent(key: &str, actual: Option<&Value>, expected: &Value) -> bool {
    let actual = actual.filter(|v| !v.is_null());
    if TUPLES.contains(&key) {
        return actual.is_some() || expected.is_null();
    }
    match actual {
        None => expected.is_null() || py_str(None) == py_str(Some(expected)),
        Some(a) => py_eq(a, expected) || py_str(Some(a)) == py_str(Some(expected)),
    }
}

/// Whether `after` differs from `before` exactly as the case expects, by
/// upstream's rules (the module's doc): `Err` names every difference.
pub fn judge(
    case: &TestCase,
    before: &BTreeMap<String, Map<String, Value>>,
    after: &BTreeMap<String, Map<String, Value>>,
) -> Result<(), String> {
    let mut expected = before.clone();
    for (id, want) in &case.expect_changes {
        let e = expected.entry(id.clone()).or_default();
        if let Some(state) = &want.state {
            e.insert("state".into(), Value::String(state.clone()));
        }
        for (k, v) in &want.attributes {
            e.insert(k.clone(), v.clone());
        }
    }
    if let Some(id) = after.keys().find(|id| !expected.contains_key(*id)) {
        return Err(format!("unexpected new entity `{id}`"));
    }
    let empty = Map::new();
    let mut diffs = Vec::new();
    for (id, want) in &expected {
        let got = after.get(id).unwrap_or(&empty);
        let ignored = case.ignore_changes.get(id);
        let skip =
            |k: &str| DERIVED.contains(&k) || ignored.is_some_and(|i| i.iter().any(|x| x == k));
        for (k, v) in want {
            if !skip(k) && !equivalent(k, got.get(k), v) {
                diffs.push(format!(
                    "`{id}` `{k}` is {}, expected {}",
                    shown(got.get(k)),
                    if k == "state" {
                        format!("`{}`", py_str(Some(v)))
                    } else {
                        v.to_string()
                    }
                ));
            }
        }
        for (k, v) in got {
            if !k.is_empty() && !want.contains_key(k) && !skip(k) {
                diffs.push(format!("unexpected change: `{id}` `{k}` appeared as {v}"));
            }
        }
    }
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(diffs.join("; "))
    }
}

/// The report as a table: per category, language and locale, then overall.
pub fn render(report: &AssistReport) -> String {
    let mut out = format!("assist dataset, assistant: {}\n", report.assistant);
    let section = |out: &mut String, title: &str, rows: &BTreeMap<String, Tally>| {
        let _ = writeln!(
            out,
            "\n{title:<24} {:>6} {:>7} {:>7} {:>13}",
            "passed", "of", "rate", "confirmations"
        );
        for (name, t) in rows {
            let name = if name.is_empty() { "-" } else { name };
            let _ = writeln!(
                out,
                "{name:<24} {:>6} {:>7} {:>6.1}% {:>13}",
                t.passed,
                t.total,
                t.rate() * 100.0,
                t.confirmations
            );
        }
    };
    section(&mut out, "category", &report.by_category);
    section(&mut out, "language", &report.by_language);
    section(&mut out, "home locale", &report.by_locale);
    section(&mut out, "understander", &report.by_understander);
    let o = report.overall;
    let l = report.latency;
    let _ = writeln!(
        out,
        "\noverall: {} of {} passed ({:.1}%), {} confirmation(s) approved by the runner\n\
         per sentence: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        o.passed,
        o.total,
        o.rate() * 100.0,
        o.confirmations,
        l.p50_ms,
        l.p99_ms,
        l.max_ms
    );
    out
}

/// The failures, one line each: where, the sentence, and why.
pub fn render_failures(report: &AssistReport) -> String {
    let mut out = String::new();
    for r in report.results.iter().filter(|r| !r.passed) {
        let _ = writeln!(
            out,
            "FAIL {}/{} #{}: {:?}: {}",
            r.home,
            r.category,
            r.case,
            r.sentence,
            r.reason.as_deref().unwrap_or("")
        );
        if let Some(trace) = &r.turn.trace {
            let _ = writeln!(out, "     understood: {trace}");
        }
    }
    out
}

/// Today's figures on assist-mini with robobrain's rules alone (no
/// grammar; the engine path and the command path), per category: (category, sentences, passed at least). The runner's
/// tests fail on a regression below them, and `tests/bench_docs.rs` checks
/// that docs/BENCHMARKS.md's assist-mini table shows exactly these; raise a
/// floor, and the table, when the rule path improves.
pub const ASSIST_MINI_FLOORS: &[(&str, usize, usize)] = &[
    ("cover", 12, 12),
    ("fan", 4, 4),
    ("light", 7, 7),
    ("lock", 4, 4),
    ("media-player", 10, 10),
    ("todo", 4, 0),
    ("vacuum", 4, 4),
    ("valve", 5, 5),
];
/// Overall on assist-mini: (sentences, passed at least) — 46 of 50 (the 4
/// `todo` sentences need to-do lists, which the device model lacks).
pub const ASSIST_MINI_OVERALL: (usize, usize) = (50, 46);

/// The floors assist-mini must hold (`ASSIST_MINI_OVERALL`, `ASSIST_MINI_FLOORS`),
/// and the lock rule: every lock sentence that acted asked first, once.
#[cfg(any(test, feature = "test-utils"))]
pub fn assert_floors(report: &AssistReport) {
    let failures = render_failures(report);
    let (total, floor) = ASSIST_MINI_OVERALL;
    assert_eq!(report.overall.total, total, "the dataset changed");
    assert!(
        report.overall.passed >= floor,
        "{}: {} of {total} passed, the floor is {floor}\n{failures}",
        report.assistant,
        report.overall.passed
    );
    assert_eq!(report.by_category.len(), ASSIST_MINI_FLOORS.len());
    for &(category, total, floor) in ASSIST_MINI_FLOORS {
        let t = report.by_category[category];
        assert_eq!(t.total, total, "{category}: the dataset changed");
        assert!(
            t.passed >= floor,
            "{} {category}: {} of {total} passed, the floor is {floor}\n{failures}",
            report.assistant,
            t.passed
        );
    }
    // Locks are high risk: every lock sentence that acted asked first,
    // once, and nothing changed before the answer.
    let lock = report.by_category["lock"];
    assert_eq!(lock.confirmations, lock.passed, "{}", report.assistant);
    for r in report
        .results
        .iter()
        .filter(|r| r.category == "lock" && r.passed)
    {
        assert_eq!(r.turn.confirmations, 1, "{}: {r:?}", report.assistant);
    }
    for r in &report.results {
        assert!(
            r.turn.changed_before_confirmation.is_empty(),
            "{}: changed before the confirmation: {r:?}",
            report.assistant
        );
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::assist::dataset::{TestFile, assist_mini_dir, load_dataset};

    const HOME: &str = "areas:\n  - {name: Entry, id: entry}\n  - {name: Kitchen, id: kitchen}\nentities:\n  - {name: Smart Lock, id: lock.smart_lock, area: entry, state: locked}\n  - name: Kitchen Light\n    id: light.kitchen_light\n    area: kitchen\n    attributes: {supported_color_modes: [brightness], color_mode: brightness, brightness: 100}\n";
    const TESTS: &str = "category: lock\ntests:\n  - sentences: [Unlock smart lock, Unlock the entry lock, Open sesame, Turn off the kitchen light]\n    setup:\n      lock.smart_lock: {state: locked}\n    expect_changes:\n      lock.smart_lock: {state: unlocked}\n  - sentences: [Kitchen light off]\n    setup:\n      light.kitchen_light: {state: \"on\"}\n    expect_changes:\n      light.kitchen_light:\n        state: \"off\"\n        attributes: {brightness: null, color_mode: null}\n";

    fn homes() -> Vec<HomeCase> {
        let home = HaHome::parse(Path::new("h.yaml"), HOME).unwrap();
        let file = TestFile::parse(Path::new("lock.yaml"), TESTS, &home).unwrap();
        vec![HomeCase {
            name: "home1-us-lock".into(),
            locale: "us".into(),
            home,
            files: vec![(PathBuf::from("lock.yaml"), file)],
        }]
    }

    #[test]
    fn sentences_are_judged_on_the_changes_and_locks_are_confirmed() {
        let report = run(
            &homes(),
            &mut CommandAssistant::default(),
            &crate::progress::Silent,
        );
        let r = &report.results;
        assert!(r[0].passed, "{:?}", r[0]);
        assert_eq!(r[0].turn.confirmations, 1);
        assert!(r[1].passed, "{:?}", r[1]);
        assert!(!r[2].passed);
        assert_eq!(
            r[2].reason.as_deref(),
            Some(
                "`lock.smart_lock` `state` is \"locked\", expected `unlocked` (no device named that can open / turn_on)"
            )
        );
        // The wrong device moved: the light changed, the lock did not.
        assert!(!r[3].passed);
        assert!(r[4].passed, "{:?}", r[4]);
        assert_eq!(
            report.overall,
            Tally {
                passed: 3,
                total: 5,
                confirmations: 2
            }
        );
        assert_eq!(report.by_category["lock"].total, 5);
        assert_eq!(report.by_language["en"].passed, 3);
        let table = render(&report);
        assert!(
            table.contains(
                "overall: 3 of 5 passed (60.0%), 2 confirmation(s) approved by the runner"
            ),
            "{table}"
        );
        assert!(render_failures(&report).contains("FAIL home1-us-lock/lock #0: \"Open sesame\""));
    }

    #[test]
    fn an_unexpected_change_fails_the_sentence() {
        let case = TestCase {
            sentences: vec!["x".into()],
            setup: BTreeMap::new(),
            expect_changes: BTreeMap::new(),
            ignore_changes: BTreeMap::from([("a.b".to_string(), vec!["pos".to_string()])]),
            context_device: None,
            context_now: None,
            expect_response: None,
            expect_tool_call: None,
        };
        let state = |s: &str, pos: i64| {
            BTreeMap::from([(
                "a.b".to_string(),
                serde_json::json!({"state": s, "pos": pos})
                    .as_object()
                    .unwrap()
                    .clone(),
            )])
        };
        assert_eq!(judge(&case, &state("on", 1), &state("on", 2)), Ok(()));
        assert_eq!(
            judge(&case, &state("on", 1), &state("off", 1)),
            Err("`a.b` `state` is \"off\", expected `on`".into())
        );
    }

    fn case(yaml: &str) -> TestCase {
        serde_norway::from_str(yaml).unwrap()
    }

    fn states(json: Value) -> BTreeMap<String, Map<String, Value>> {
        serde_json::from_value(json).unwrap()
    }

    /// Upstream drops the ignored attributes before it compares anything:
    /// an attribute both expected and ignored is never judged.
    #[test]
    fn ignore_changes_apply_before_the_expected_values() {
        let c = case(
            "sentences: [x]\nexpect_changes:\n  light.l:\n    state: \"on\"\n    attributes: {brightness: 255}\nignore_changes:\n  light.l: [brightness]\n",
        );
        let before = states(serde_json::json!({"light.l": {"state": "off"}}));
        let after = states(serde_json::json!({"light.l": {"state": "on", "brightness": 128}}));
        assert_eq!(judge(&c, &before, &after), Ok(()));
        let after = states(serde_json::json!({"light.l": {"state": "on"}}));
        assert_eq!(judge(&c, &before, &after), Ok(()));
        // Without the ignore, the expected value is judged.
        let c = case(
            "sentences: [x]\nexpect_changes:\n  light.l:\n    attributes: {brightness: 255}\n",
        );
        let after = states(serde_json::json!({"light.l": {"state": "off", "brightness": 128}}));
        assert_eq!(
            judge(&c, &before, &after),
            Err("`light.l` `brightness` is 128, expected 255".into())
        );
    }

    /// Values compare as upstream's `compare_state`: equal, or equal as
    /// Python prints them; `null` is absent; a colour tuple is equal to
    /// anything present.
    #[test]
    fn values_compare_as_upstream_compares_them() {
        let c = case(
            "sentences: [x]\nexpect_changes:\n  light.l:\n    attributes: {brightness: \"128\", color_mode: null, rgb_color: [0, 0, 255]}\n",
        );
        let before = states(
            serde_json::json!({"light.l": {"state": "on", "brightness": 10, "rgb_color": [255, 0, 0]}}),
        );
        let after = states(
            serde_json::json!({"light.l": {"state": "on", "brightness": 128, "rgb_color": [1, 2, 3]}}),
        );
        assert_eq!(judge(&c, &before, &after), Ok(()));
        let after = states(
            serde_json::json!({"light.l": {"state": "on", "brightness": 128.0, "rgb_color": [1, 2, 3]}}),
        );
        assert!(
            judge(&c, &before, &after).is_err(),
            "128.0 prints as 128.0, not \"128\""
        );
        let after = states(serde_json::json!({"light.l": {"state": "on", "brightness": 128}}));
        assert_eq!(
            judge(&c, &before, &after),
            Err("`light.l` `rgb_color` is absent, expected [0,0,255]".into())
        );
        assert!(py_eq(&serde_json::json!(1), &serde_json::json!(1.0)));
        assert!(py_eq(&serde_json::json!(true), &serde_json::json!(1)));
        assert_eq!(py_str(Some(&serde_json::json!(0.5))), "0.5");
        assert_eq!(py_str(Some(&serde_json::json!(false))), "False");
        // An attribute that appears is a change; so is a new entity.
        let c = case("sentences: [x]\n");
        let after = states(
            serde_json::json!({"light.l": {"state": "on", "brightness": 10, "rgb_color": [255, 0, 0], "color_mode": "hs"}}),
        );
        assert_eq!(
            judge(&c, &before, &after),
            Err("unexpected change: `light.l` `color_mode` appeared as \"hs\"".into())
        );
    }

    /// A case that expects changes fails when the answer says "Sorry".
    #[test]
    fn sorry_fails_a_case_that_expects_changes() {
        let changing = case("sentences: [x]\nexpect_changes:\n  light.l: {state: \"on\"}\n");
        let said = vec!["Sorry, I could not do that.".to_string()];
        assert!(no_sorry(&changing, &said).is_err());
        assert_eq!(no_sorry(&changing, &["sorry".to_string()]), Ok(()));
        assert_eq!(no_sorry(&case("sentences: [x]\n"), &said), Ok(()));
    }

    #[test]
    fn assist_mini_holds_todays_pass_rates_through_the_command_parser() {
        let homes = load_dataset(&assist_mini_dir()).unwrap();
        let commands = run(
            &homes,
            &mut CommandAssistant::default(),
            &crate::progress::Silent,
        );
        assert_floors(&commands);
    }
}
