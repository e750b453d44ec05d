//! robobrain's intent matcher against Home Assistant's own (hassil 3.12.1)
//! on thousands of sentences generated from Home Assistant's templates
//! (home-assistant-intents 2026.10.27, CC BY 4.0) with the test home's
//! names, areas and floors (`tests/fixtures/intents/test_home.yaml`).
//!
//! `tests/fixtures/intents/hassil_compare.py` generates the sentences (4
//! random expansions per template, seeded) and answers each with hassil's
//! `recognize_best(…, best_slot_name="name")`; this test answers the same
//! sentences with `robobrain_core::intents::Matcher` and compares the intent
//! and every slot. The floors below are the agreement measured when they
//! were set (docs/intents.md), not tuned numbers: a change that makes the
//! matcher disagree more fails here.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use robobrain_core::intents::{Grammar, HomeFile, Matcher, numbers};
use serde_json::Value;

use crate::support::root;

/// Random expansions per template.
const PER_TEMPLATE: &str = "4";
/// The sampler's seed.
const SEED: &str = "2026";

fn python() -> String {
    if let Ok(p) = std::env::var("ROBOBRAIN_PYTHON") {
        return p;
    }
    let home = std::env::var("HOME").unwrap_or_default();
    let venv = PathBuf::from(home).join(".cache/robobrain/py/bin/python");
    venv.to_string_lossy().into_owned()
}

/// The grammar file, or a failure that says how to get it.
fn grammar_file(lang: &str) -> PathBuf {
    let file = robobrain_core::intents::default_dir().join(format!("{lang}.json"));
    assert!(
        file.is_file(),
        "{} is missing: run `./x setup` (it downloads home-assistant-intents=={} into {})",
        file.display(),
        robobrain_core::intents::HA_INTENTS_VERSION,
        robobrain_core::intents::default_dir().display()
    );
    file
}

/// Runs the comparison script, or fails saying how to install hassil.
fn hassil(args: &[&str]) -> String {
    let py = python();
    let script = root().join("tests/fixtures/intents/hassil_compare.py");
    let out = Command::new(&py)
        .arg(&script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {py}: {e}; run `./x setup` (it creates the test virtualenv ~/.cache/robobrain/py)"));
    assert!(
        out.status.success(),
        "{py} {} failed: {}\ninstall the reference with `~/.cache/robobrain/py/bin/pip install hassil==3.12.1 home-assistant-intents==2026.10.27` (./x setup does)",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn home() -> (HomeFile, PathBuf) {
    let path = root().join("tests/fixtures/intents/test_home.yaml");
    let home = HomeFile::from_yaml(&std::fs::read_to_string(&path).unwrap()).unwrap();
    (home, path)
}

/// Slot values as hassil prints them: numbers as floats.
fn normal(v: &Value) -> Value {
    match v.as_f64() {
        Some(f) if v.is_number() => serde_json::json!(f),
        _ => v.clone(),
    }
}

/// The one disagreement we keep on purpose: hassil caches the words of a
/// number range by (from, to, step, fractions) and not by multiplier, so a
/// range with `multiplier: -1` ("volume down by twenty") gets the words'
/// values of a range without one (+20) when another 0–100 range was spelled
/// first; digits get −20. robobrain applies the multiplier to words too.
fn known(ours: &Value, hassil: &Value) -> bool {
    let (Some(o), Some(h)) = (ours.as_object(), hassil.as_object()) else {
        return false;
    };
    o.len() == h.len()
        && o.iter().all(
            |(k, v)| match (k.as_str(), v.as_f64(), h.get(k).and_then(Value::as_f64)) {
                ("volume_step", Some(x), Some(y)) => x == -y || x == y,
                _ => h.get(k) == Some(v),
            },
        )
}

struct Agreement {
    total: usize,
    agree: usize,
    /// Disagreements not of the one known kind (see `known`).
    unexplained: usize,
    hassil_matched: usize,
    ours_matched: usize,
    disagreements: Vec<String>,
}

fn compare(lang: &str) -> Agreement {
    let file = grammar_file(lang);
    let (home, home_path) = home();
    let grammar = Arc::new(Grammar::load(&file).unwrap());
    let matcher = Matcher::new(grammar, home.names().lists()).unwrap();
    let context = home.context();
    let lines = hassil(&[
        "sentences",
        file.to_str().unwrap(),
        home_path.to_str().unwrap(),
        PER_TEMPLATE,
        SEED,
    ]);
    let mut a = Agreement {
        total: 0,
        agree: 0,
        unexplained: 0,
        hassil_matched: 0,
        ours_matched: 0,
        disagreements: Vec::new(),
    };
    for line in lines.lines().filter(|l| !l.trim().is_empty()) {
        let want: Value = serde_json::from_str(line).unwrap();
        let text = want["text"].as_str().unwrap();
        let ours = matcher.recognize(text, &context);
        a.total += 1;
        if !want["intent"].is_null() {
            a.hassil_matched += 1;
        }
        let (intent, slots) = match &ours {
            Some(r) => {
                a.ours_matched += 1;
                let mut slots = serde_json::Map::new();
                for s in &r.slots {
                    slots.insert(s.name.clone(), normal(&s.value));
                }
                (Value::String(r.intent.clone()), Value::Object(slots))
            }
            None => (Value::Null, serde_json::json!({})),
        };
        let want_slots: serde_json::Map<String, Value> = want["slots"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), normal(v)))
            .collect();
        let want_slots = Value::Object(want_slots);
        if intent == want["intent"] && slots == want_slots {
            a.agree += 1;
        } else {
            if !(intent == want["intent"] && known(&slots, &want_slots)) {
                a.unexplained += 1;
            }
            a.disagreements.push(format!(
                "{text:?} (template {:?}): hassil {} {}, ours {intent} {slots}",
                want["template"].as_str().unwrap_or_default(),
                want["intent"],
                want["slots"]
            ));
        }
    }
    let pct = |n: usize| 100.0 * n as f64 / a.total.max(1) as f64;
    eprintln!(
        "{lang}: {} sentences; agreement {}/{} = {:.2} % ({} disagreements not the known volume_step one); matched: hassil {:.2} %, ours {:.2} %",
        a.total,
        a.agree,
        a.total,
        pct(a.agree),
        a.unexplained,
        pct(a.hassil_matched),
        pct(a.ours_matched)
    );
    for d in a.disagreements.iter().take(40) {
        eprintln!("  {d}");
    }
    let out = std::env::temp_dir().join(format!("robobrain-intents-disagreements-{lang}.txt"));
    std::fs::write(&out, a.disagreements.join("\n")).unwrap();
    eprintln!("all disagreements: {}", out.display());
    a
}

/// Measured 2026-11-25: en 3404 of 3424 (99.42 %), every one of the 20
/// disagreements the known `volume_step` sign; zh-CN 2666 of 2686 (99.26 %),
/// likewise.
/// Asserts `lang`'s comparison: enough sentences, no disagreement but
/// the known one, agreement at least `floor` per 10 000.
fn assert_agreement(lang: &str, min_total: usize, floor: usize) {
    let a = compare(lang);
    assert!(a.total >= min_total, "{lang}: only {} sentences", a.total);
    assert_eq!(
        a.unexplained, 0,
        "{lang}: disagreements beyond the known one"
    );
    assert!(
        a.agree * 10_000 >= a.total * floor,
        "{lang}: agreement fell below {}.{:02} %",
        floor / 100,
        floor % 100
    );
}

#[test]
fn agrees_with_hassil_in_english() {
    assert_agreement("en", 3000, 9941);
}

#[test]
fn agrees_with_hassil_in_chinese() {
    assert_agreement("zh-CN", 2500, 9925);
}

/// Number words for every range the grammars use, as unicode_rbnf spells them.
#[test]
fn number_words_are_hassils() {
    for lang in ["en", "zh-CN"] {
        let file = grammar_file(lang);
        let want: serde_json::Map<String, Value> =
            serde_json::from_str(&hassil(&["numbers", file.to_str().unwrap()])).unwrap();
        assert!(want.len() > 100, "{lang}: {} numbers", want.len());
        for (n, words) in want {
            let value: f64 = n.parse().unwrap();
            let mut expect: Vec<String> = words
                .as_array()
                .unwrap()
                .iter()
                .map(|w| w.as_str().unwrap().to_string())
                .collect();
            let mut ours = numbers::spellings(lang, value);
            expect.sort();
            ours.sort();
            assert_eq!(ours, expect, "{lang}: {value}");
        }
    }
}

/// `robobrain assist` reads each feature of the dataset format (our own
/// small fixtures, tests/fixtures/assist-formats): floors, an entity state
/// as a mapping, a top-level `language`, `context_device`, `ignore_changes`
/// in its shapes, and a questions file scored by `expect_response`.
#[test]
fn assist_reads_every_dataset_format_feature() {
    let out = crate::support::robobrain(
        &[
            "assist",
            "--dataset",
            "tests/fixtures/assist-formats",
            "--json",
        ],
        "",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.len(), 5, "{}", out.stdout);
    for r in results {
        assert_eq!(r["passed"], true, "{r}");
        assert_eq!(r["language"], "en", "the file's `language` names it: {r}");
    }
    assert_eq!(report["by_category"]["questions"]["passed"], 2);
    // A batch run synthesises no speech.
    assert!(!out.stderr.contains("espeak"), "{}", out.stderr);
}

/// A question whose answer lacks the expected words fails, saying why.
#[test]
fn a_question_is_scored_by_its_expected_answer() {
    let dir = crate::support::temp_dir("assist-question");
    let home = dir.join("h1-en-q");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::copy(
        root().join("tests/fixtures/assist-formats/house1-en-formats/_fixtures.yaml"),
        home.join("_fixtures.yaml"),
    )
    .unwrap();
    std::fs::write(
        home.join("q.yaml"),
        "category: questions\ntests:\n  - sentences: [Is the study lamp on?]\n    expect_response: [\"it is purple\"]\n",
    )
    .unwrap();
    let out = crate::support::robobrain(
        &["assist", "--dataset", dir.to_str().unwrap(), "--failures"],
        "",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("overall: 0 of 1"), "{}", out.stdout);
    assert!(
        out.stdout.contains("the answer has none of `it is purple`"),
        "{}",
        out.stdout
    );
}

/// assist-mini through Home Assistant's grammar first, robobrain's rules
/// after: at least 47 of 50, 32 of them through the grammar (measured
/// 2026-11-25; `tests/assist.rs` pins the rest of the report). A development set:
/// the rules were written while reading it; the grammar is Home
/// Assistant's, unchanged.
#[test]
fn assist_mini_passes_47_of_50_with_the_grammar() {
    grammar_file("en");
    let dir = root().join("tests/data/home-assistant-datasets/assist-mini");
    assert!(
        dir.is_dir(),
        "{} is missing (the shared test data)",
        dir.display()
    );
    let out = crate::support::robobrain(
        &["assist", "--dataset", dir.to_str().unwrap(), "--json"],
        "",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let passed = report["overall"]["passed"].as_u64().unwrap();
    assert!(passed >= 47, "assist-mini: {passed} of 50");
    let by_grammar = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            r["passed"] == true && r["turn"]["calls"].to_string().contains("\\\"grammar\\\"")
        })
        .count();
    assert!(
        by_grammar >= 32,
        "only {by_grammar} passed through the grammar"
    );
}
