//! Utterance → intent with slots, Home Assistant's grammar (en and zh-CN,
//! from `./x setup`'s download) over a home of 100 devices, 20 areas and
//! 3 floors (`tests/fixtures/intents/test_home.yaml`), on sentences
//! generated from every template (one per template, seeded), with Home
//! Assistant's own matcher (hassil 3.12.1, `recognize_best`) timed on the
//! same sentences in the same run for the ratio.
//!
//! Run with `cargo bench -p robobrain-core --bench intents` (needs the
//! grammar in `~/.cache/robobrain/intents` and hassil in
//! `~/.cache/robobrain/py`: `./x setup`).

#![allow(missing_docs, clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use robobrain_core::intents::{Grammar, HomeFile, Matcher};

const ROUNDS: usize = 5;

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn python() -> String {
    std::env::var("ROBOBRAIN_PYTHON").unwrap_or_else(|_| {
        let home = std::env::var("HOME").unwrap_or_default();
        format!("{home}/.cache/robobrain/py/bin/python")
    })
}

fn run_py(args: &[&str]) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let script = root.join("tests/fixtures/intents/hassil_compare.py");
    let out = Command::new(python())
        .arg(script)
        .args(args)
        .output()
        .expect("the test virtualenv's python (./x setup)");
    assert!(
        out.status.success(),
        "hassil_compare.py failed (./x setup installs hassil): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let home_path = root.join("tests/fixtures/intents/test_home.yaml");
    let home = HomeFile::from_yaml(&std::fs::read_to_string(&home_path).unwrap()).unwrap();
    let names = home.names();
    let context = home.context();
    println!(
        "home: {} devices, {} areas, {} floors",
        names.entities.len(),
        names.areas.len(),
        names.floors.len()
    );
    for lang in ["en", "zh-CN"] {
        let file: PathBuf = robobrain_core::intents::default_dir().join(format!("{lang}.json"));
        assert!(
            file.is_file(),
            "{} is missing: run ./x setup",
            file.display()
        );
        let started = Instant::now();
        let grammar = Arc::new(Grammar::load(&file).unwrap());
        let loaded = started.elapsed();
        let started = Instant::now();
        let matcher = Matcher::new(grammar, names.lists()).unwrap();
        let compiled = started.elapsed();
        let lines = run_py(&[
            "sentences",
            file.to_str().unwrap(),
            home_path.to_str().unwrap(),
            "1",
            "7",
        ]);
        let texts: Vec<String> = lines
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["text"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        let mut us = Vec::with_capacity(texts.len() * ROUNDS);
        let mut matched = 0;
        for round in 0..ROUNDS {
            for t in &texts {
                let start = Instant::now();
                let r = matcher.recognize(t, &context);
                us.push(start.elapsed().as_secs_f64() * 1e6);
                if round == 0 && r.is_some() {
                    matched += 1;
                }
            }
        }
        // The slowest sentences (their best of the rounds), for whoever
        // wants to make them faster.
        let n = texts.len();
        let mut per: Vec<(f64, &str)> = (0..n)
            .map(|i| {
                let best = (0..ROUNDS)
                    .map(|r| us[r * n + i])
                    .fold(f64::INFINITY, f64::min);
                (best, texts[i].as_str())
            })
            .collect();
        per.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (t, text) in per.iter().take(5) {
            println!("  slowest: {t:.0} µs  {text:?}");
        }
        us.sort_by(f64::total_cmp);
        let (p50, p99) = (percentile(&us, 0.5), percentile(&us, 0.99));
        println!(
            "{lang}: grammar loaded in {:.1} ms, compiled with the home in {:.1} ms; {} sentences × {ROUNDS}: ours p50 {p50:.1} µs, p99 {p99:.1} µs, max {:.1} µs ({matched} matched)",
            loaded.as_secs_f64() * 1e3,
            compiled.as_secs_f64() * 1e3,
            texts.len(),
            us[us.len() - 1]
        );
        // hassil on the same sentences, now.
        let tmp = std::env::temp_dir().join(format!("robobrain-bench-intents-{lang}.jsonl"));
        std::fs::write(&tmp, &lines).unwrap();
        let h: serde_json::Value = serde_json::from_str(
            run_py(&[
                "time",
                file.to_str().unwrap(),
                home_path.to_str().unwrap(),
                tmp.to_str().unwrap(),
            ])
            .trim(),
        )
        .unwrap();
        let (hp50, hp99) = (
            h["p50_ms"].as_f64().unwrap() * 1e3,
            h["p99_ms"].as_f64().unwrap() * 1e3,
        );
        println!(
            "{lang}: hassil p50 {hp50:.1} µs, p99 {hp99:.1} µs — ratio hassil/ours: p50 ×{:.0}, p99 ×{:.0}",
            hp50 / p50,
            hp99 / p99
        );
    }
}
