//! Runs the assist datasets: for every sentence of every case, a fresh
//! device world from the home with the case's `setup` applied, the sentence
//! understood and carried out, and the states judged against
//! `expect_changes` — every expected field as written (`null`: absent), and
//! no other change except the `ignore_changes` attributes. A call that needs
//! confirmation (locks: high risk) is approved by the runner and counted.
//!
//! Pass rates come out per category, per sentence language, per home
//! locale, and overall.

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
        let mut turn = Turn::default();
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
    /// The category.
    pub category: String,
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
    /// Everything.
    pub overall: Tally,
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
                    results.push(SentenceResult {
                        home: h.name.clone(),
                        file: file.clone(),
                        category: tests.category.clone(),
                        case: i,
                        sentence: sentence.clone(),
                        language: tests
                            .language
                            .clone()
                            .unwrap_or_else(|| language_of(sentence).to_string()),
                        locale: h.locale.clone(),
                        passed,
                        reason,
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
        overall: Tally::default(),
        results: Vec::new(),
    };
    for r in &results {
        report
            .by_category
            .entry(r.category.clone())
            .or_default()
            .add(r);
        report
            .by_language
            .entry(r.language.clone())
            .or_default()
            .add(r);
        report.by_locale.entry(r.locale.clone()).or_default().add(r);
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
    let (world, turn) = assistant.handle(sentence, world);
    let after = states(&home, &world);
    let judged = judge(case, &before, &after).and_then(|()| answer_has(case, &turn.said));
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

fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => (x - y).abs() < 1e-9,
        _ => a == b,
    }
}

fn shown(v: Option<&Value>) -> String {
    v.map_or_else(|| "absent".to_string(), Value::to_string)
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

/// Equal as upstream compares states: equal, or equal as text.
fn equivalent(a: Option<&Value>, b: Option<&Value>) -> bool {
    let text = |v: Option<&Value>| match v {
        None | Some(Value::Null) => "None".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => if *b { "True" } else { "False" }.to_string(),
        Some(other) => other.to_string(),
    };
    a == b || text(a) == text(b) || matches!((a, b), (Some(x), Some(y)) if same(x, y))
}

/// Whether `after` differs from `before` exactly as the case expects.
pub fn judge(
    case: &TestCase,
    before: &BTreeMap<String, Map<String, Value>>,
    after: &BTreeMap<String, Map<String, Value>>,
) -> Result<(), String> {
    let empty = Map::new();
    for (id, want) in &case.expect_changes {
        let now = after.get(id).unwrap_or(&empty);
        if let Some(state) = &want.state
            && now.get("state").and_then(Value::as_str) != Some(state.as_str())
        {
            return Err(format!(
                "`{id}` is {}, expected `{state}`",
                shown(now.get("state"))
            ));
        }
        for (k, v) in &want.attributes {
            let got = now.get(k).filter(|g| !g.is_null());
            let ok = if v.is_null() {
                got.is_none()
            } else {
                got.is_some_and(|g| same(g, v))
            };
            if !ok {
                return Err(format!(
                    "`{id}` attribute `{k}` is {}, expected {v}",
                    shown(got)
                ));
            }
        }
    }
    for (id, now) in after {
        let was = before.get(id).unwrap_or(&empty);
        let ignored = case.ignore_changes.get(id);
        let want = case.expect_changes.get(id);
        let keys: std::collections::BTreeSet<&String> = now.keys().chain(was.keys()).collect();
        for k in keys {
            if equivalent(was.get(k), now.get(k))
                || ignored.is_some_and(|i| i.contains(k))
                || DERIVED.contains(&k.as_str())
            {
                continue;
            }
            let expected = want.is_some_and(|w| {
                if k == "state" {
                    w.state.is_some()
                } else {
                    w.attributes.contains_key(k)
                }
            });
            if !expected {
                return Err(format!(
                    "unexpected change: `{id}` `{k}` went from {} to {}",
                    shown(was.get(k)),
                    shown(now.get(k))
                ));
            }
        }
    }
    Ok(())
}

/// The report as a table: per category, language and locale, then overall.
pub fn render(report: &AssistReport) -> String {
    let mut out = format!("assist dataset, assistant: {}\n", report.assistant);
    let section = |out: &mut String, title: &str, rows: &BTreeMap<String, Tally>| {
        let _ = writeln!(
            out,
            "\n{title:<14} {:>6} {:>7} {:>7} {:>13}",
            "passed", "of", "rate", "confirmations"
        );
        for (name, t) in rows {
            let name = if name.is_empty() { "-" } else { name };
            let _ = writeln!(
                out,
                "{name:<14} {:>6} {:>7} {:>6.1}% {:>13}",
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
    let o = report.overall;
    let _ = writeln!(
        out,
        "\noverall: {} of {} passed ({:.1}%), {} confirmation(s) approved by the runner",
        o.passed,
        o.total,
        o.rate() * 100.0,
        o.confirmations
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
                "`lock.smart_lock` is \"locked\", expected `unlocked` (no device named that can open / turn_on)"
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
            Err("unexpected change: `a.b` `state` went from \"on\" to \"off\"".into())
        );
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
