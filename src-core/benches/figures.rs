//! What a benchmark measured, for `target/bench/results.json`.
//!
//! Each bench prints its figures for people and also records them here: one
//! JSON line (`id`, `name`, `value`, `unit`) appended to the file named by
//! `ROBOBRAIN_BENCH_FIGURES`, which `scripts/bench.sh` sets and
//! `scripts/bench_results.py` collects. Without the variable nothing is
//! written, so `cargo bench` alone behaves as before. The ids are what the
//! docs quote (docs/BENCHMARKS.md, "How the figures are kept").
//!
//! Shared by the benches of `robobrain-core` (`mod figures;`) and of
//! `robobrain-tui` (`#[path]`).

#![allow(dead_code, clippy::expect_used)]

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// Records one figure: `id` (dotted, `group.what`), a name people read,
/// the value and its unit.
pub(crate) fn record(id: &str, name: &str, value: f64, unit: &str) {
    let Some(file) = std::env::var_os("ROBOBRAIN_BENCH_FIGURES") else {
        return;
    };
    let line = serde_json::json!({"id": id, "name": name, "value": value, "unit": unit});
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&file)
        .expect("the figures file opens for appending");
    writeln!(out, "{line}").expect("the figures file takes a line");
}

/// The nearest-rank percentile `q` (0–1) of sorted samples.
pub(crate) fn percentile<T: Copy>(sorted: &[T], q: f64) -> T {
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize]
}

/// Records p50, p99 and max of `samples` (any order, already in `unit`) as
/// `id.p50`, `id.p99` and `id.max`.
pub(crate) fn record_spread(id: &str, name: &str, samples: &[f64], unit: &str) {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    for (stat, q) in [("p50", 0.5), ("p99", 0.99), ("max", 1.0)] {
        record(
            &format!("{id}.{stat}"),
            &format!("{name}, {stat} of {}", sorted.len()),
            percentile(&sorted, q),
            unit,
        );
    }
}

/// [`record_spread`] for durations, in milliseconds (`"ms"`) or microseconds (`"µs"`).
pub(crate) fn record_durations(id: &str, name: &str, samples: &[Duration], unit: &str) {
    let scale = if unit == "µs" { 1e6 } else { 1e3 };
    let xs: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * scale).collect();
    record_spread(id, name, &xs, unit);
}

/// Records criterion's median of benchmark `bench` (its id, `group/name`)
/// and the median's 95 % confidence bounds as `id`, `id.lo` and `id.hi`,
/// in microseconds. Reads the estimates criterion wrote under
/// `CRITERION_HOME` during this process (`since`); a benchmark that a
/// filter left out records nothing.
pub(crate) fn criterion(bench: &str, id: &str, name: &str, since: SystemTime) {
    if std::env::var_os("ROBOBRAIN_BENCH_FIGURES").is_none() {
        return;
    }
    let Some(home) = std::env::var_os("CRITERION_HOME").map(PathBuf::from) else {
        return;
    };
    // Criterion keeps `group/name` in the folder `group_name`.
    let file = home
        .join(bench.replace('/', "_"))
        .join("new")
        .join("estimates.json");
    let fresh = std::fs::metadata(&file)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t >= since);
    if !fresh {
        return;
    }
    let text = std::fs::read_to_string(&file).expect("criterion's estimates are readable");
    let v: serde_json::Value = serde_json::from_str(&text).expect("criterion's estimates are JSON");
    let median = &v["median"];
    let us = |x: &serde_json::Value| x.as_f64().unwrap_or(f64::NAN) / 1e3;
    record(
        id,
        &format!("{name} (criterion median)"),
        us(&median["point_estimate"]),
        "µs",
    );
    let ci = &median["confidence_interval"];
    record(
        &format!("{id}.lo"),
        &format!("{name} (median, 95 % lower bound)"),
        us(&ci["lower_bound"]),
        "µs",
    );
    record(
        &format!("{id}.hi"),
        &format!("{name} (median, 95 % upper bound)"),
        us(&ci["upper_bound"]),
        "µs",
    );
}
