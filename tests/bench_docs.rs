//! The benchmark docs against what `./x bench` runs and what the tests pin.
//!
//! No timing is compared here: a latency depends on the machine and on
//! what else runs on it, so the docs give each one with its date, its load
//! and its command (docs/BENCHMARKS.md), and a test that compared one would
//! fail on a busy machine and pass on a broken one. What is checked is what
//! must not drift whatever the machine:
//! - every `./x bench GROUP` the docs name is a group `scripts/bench.sh`
//!   runs, and every group it runs is documented;
//! - the figures that do not depend on the machine — assist-mini's pass
//!   counts and the memory eval's quality — are the ones the tests pin
//!   (`ASSIST_MINI_FLOORS`, `tests/memory.rs`);
//! - `scripts/bench_results.py` turns a run into the `results.json` the docs
//!   describe: commit, date, machine, the load around each group, every
//!   figure, and the peers' ratios computed from the same run only.

use std::path::PathBuf;
use std::process::Command;

use robobrain_core::assist::runner::{ASSIST_MINI_FLOORS, ASSIST_MINI_OVERALL};
use serde_json::{Value, json};

use crate::support::{root, temp_dir};

/// The groups `scripts/bench.sh` runs (its `ALL_GROUPS=(…)`).
fn bench_groups() -> Vec<String> {
    let script = std::fs::read_to_string(root().join("scripts/bench.sh")).unwrap();
    let line = script
        .lines()
        .find_map(|l| l.strip_prefix("ALL_GROUPS=("))
        .expect("scripts/bench.sh has ALL_GROUPS=(…)");
    line.trim_end_matches(')')
        .split_whitespace()
        .map(String::from)
        .collect()
}

/// The benchmark pages: docs/BENCHMARKS.md and docs/benchmarks/*.md.
fn bench_docs() -> Vec<(String, String)> {
    let root = root();
    let mut files = vec![root.join("docs/BENCHMARKS.md")];
    let mut more: Vec<PathBuf> = std::fs::read_dir(root.join("docs/benchmarks"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    more.sort();
    files.extend(more);
    files
        .into_iter()
        .map(|p| {
            let name = p.strip_prefix(&root).unwrap().display().to_string();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

/// The groups named after each `./x bench` in `text`: the words of the
/// command up to the end of its code span (or line, or clause), stopping at
/// the first that is not a plain word (a flag, an ellipsis).
fn named_groups(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices("./x bench") {
        let rest = &text[i + "./x bench".len()..];
        let command = rest
            .split(['`', '\n', ')', ';', ','])
            .next()
            .unwrap_or_default();
        for word in command.split_whitespace() {
            if !word
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            {
                break;
            }
            out.push(word.to_string());
        }
    }
    out
}

#[test]
fn every_bench_group_the_docs_name_is_run_and_every_group_is_documented() {
    let groups = bench_groups();
    assert!(groups.len() >= 10, "{groups:?}");
    let mut docs = bench_docs();
    for extra in ["docs/testing.md", "README.md"] {
        docs.push((
            extra.to_string(),
            std::fs::read_to_string(root().join(extra)).unwrap(),
        ));
    }
    for (name, text) in &docs {
        for group in named_groups(text) {
            assert!(
                groups.contains(&group),
                "{name} names `./x bench {group}`, which scripts/bench.sh does not run (its groups: {groups:?})"
            );
        }
    }
    let bench_md = &docs[0].1;
    for group in &groups {
        assert!(
            bench_md.contains(&format!("| `{group}` |")),
            "docs/BENCHMARKS.md's table of groups has no row for `{group}`"
        );
    }
}

#[test]
fn named_groups_reads_the_commands_as_the_docs_write_them() {
    assert_eq!(
        named_groups("run `./x bench durable react` or `./x bench --list`; `./x bench`."),
        ["durable", "react"]
    );
    assert_eq!(named_groups("(`./x bench memory`, and more)"), ["memory"]);
}

/// The cells of the markdown table rows in the section of `text` whose
/// heading starts with `heading`, bold marks removed.
fn table_rows(text: &str, heading: &str) -> Vec<Vec<String>> {
    let start = text
        .find(heading)
        .unwrap_or_else(|| panic!("no section {heading:?}"));
    let section = &text[start + heading.len()..];
    let end = section.find("\n#").unwrap_or(section.len());
    section[..end]
        .lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|---"))
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(|c| c.replace("**", "").trim().to_string())
                .collect()
        })
        .collect()
}

/// assist-mini's pass counts do not depend on the machine: the table in
/// docs/BENCHMARKS.md must show exactly what the runner's tests pin.
#[test]
fn the_assist_mini_table_shows_the_pinned_counts() {
    let text = std::fs::read_to_string(root().join("docs/BENCHMARKS.md")).unwrap();
    let rows = table_rows(&text, "## Smart home: assist-mini");
    let row = |name: &str| {
        rows.iter()
            .find(|r| r[0] == name)
            .unwrap_or_else(|| panic!("the assist-mini table has no `{name}` row"))
    };
    let number = |cell: &str| -> usize {
        cell.parse()
            .unwrap_or_else(|_| panic!("`{cell}` is not a count"))
    };
    assert_eq!(
        rows[0][..3],
        ["category", "passed", "of"],
        "the table's columns moved"
    );
    for &(category, total, floor) in ASSIST_MINI_FLOORS {
        let r = row(category);
        assert_eq!(
            (number(&r[1]), number(&r[2])),
            (floor, total),
            "docs/BENCHMARKS.md's `{category}` row against ASSIST_MINI_FLOORS (passed, of)"
        );
    }
    let (total, passed) = ASSIST_MINI_OVERALL;
    let overall = row("overall");
    assert_eq!((number(&overall[1]), number(&overall[2])), (passed, total));
    let rate = format!("{:.1} %", 100.0 * passed as f64 / total as f64);
    assert!(
        overall.contains(&rate),
        "overall rate: {overall:?}, want {rate}"
    );
    assert_eq!(rows.len(), ASSIST_MINI_FLOORS.len() + 2, "{rows:?}");
}

/// The memory eval's quality is deterministic: both pages quote what
/// tests/memory.rs pins.
#[test]
fn the_memory_quality_figures_are_the_pinned_ones() {
    let memory = std::fs::read_to_string(root().join("docs/benchmarks/memory.md")).unwrap();
    let rows = table_rows(&memory, "## Quality on the eval set");
    let overview = std::fs::read_to_string(root().join("docs/BENCHMARKS.md")).unwrap();
    for (mode, hit5, mrr) in crate::memory::EVAL_FIGURES {
        let r = rows
            .iter()
            .find(|r| r[0].starts_with(mode))
            .unwrap_or_else(|| panic!("docs/benchmarks/memory.md has no `{mode}` row"));
        assert_eq!(
            (r[1].as_str(), r[4].as_str()),
            (format!("{hit5:.3}").as_str(), format!("{mrr:.3}").as_str()),
            "docs/benchmarks/memory.md, {mode}: hit@5 and MRR against tests/memory.rs"
        );
        let quoted = match mode {
            "hybrid" => format!("hybrid hit@5 {hit5:.3}, MRR {mrr:.3}"),
            "bm25" => format!("BM25 {hit5:.3} / {mrr:.3}"),
            _ => format!("{mode} {hit5:.3} / {mrr:.3}"),
        };
        assert!(
            overview.contains(&quoted),
            "docs/BENCHMARKS.md does not quote `{quoted}` (tests/memory.rs)"
        );
    }
}

fn write_lines(path: PathBuf, lines: &[Value]) {
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(path, text.join("\n") + "\n").unwrap();
}

/// One made-up run of two groups through scripts/bench_results.py: the
/// file has what docs/BENCHMARKS.md says it has, a group run again replaces
/// only its own figures, and a ratio is computed only when both of its
/// figures come from this run.
#[test]
fn bench_results_collects_a_run_as_the_docs_describe() {
    let dir = temp_dir("bench-results");
    let run = dir.join("run");
    std::fs::create_dir_all(&run).unwrap();
    let group = |name: &str, ok: bool| {
        json!({"group": name, "started": "2026-11-25T14:00:00Z", "ended": "2026-11-25T14:01:00Z",
               "load_before": [3.5, 4.0, 4.5], "load_after": [5.5, 4.2, 4.6], "seconds": 60.0, "ok": ok})
    };
    write_lines(
        run.join("groups.jsonl"),
        &[group("react", true), group("memory", false)],
    );
    let fig = |id: &str, value: f64, unit: &str| json!({"id": id, "name": id, "value": value, "unit": unit});
    write_lines(
        run.join("figures-react.jsonl"),
        &[
            fig("react.iteration", 10.0, "µs"),
            fig("langgraph.none.iteration.p50", 1500.0, "µs"),
        ],
    );
    // An earlier run: durable's figures stay (durable did not run now) but
    // make no ratio, not being of this run; the groups run now lose their
    // old figures, even the one that failed.
    let results = dir.join("results.json");
    let old = |value: f64, group: &str| json!({"name": "x", "value": value, "unit": "µs", "group": group});
    std::fs::write(
        &results,
        json!({"format": 1, "groups": {"durable": {"ok": true}}, "figures": {
            "durable.iteration": old(400.0, "durable"),
            "langgraph.sqlite_node.iteration.p50": old(9000.0, "durable"),
            "react.old": old(1.0, "react"),
            "memory.10k.bm25.p50": old(0.04, "memory"),
        }})
        .to_string(),
    )
    .unwrap();
    let out = Command::new("python3")
        .arg("scripts/bench_results.py")
        .arg(&run)
        .arg(&results)
        .current_dir(root())
        .output()
        .expect("python3 runs (./x setup installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
    for key in [
        "format", "commit", "date", "machine", "load", "groups", "figures",
    ] {
        assert!(!r[key].is_null(), "results.json has no `{key}`: {r:#}");
    }
    assert!(r["machine"]["cores"].as_u64().is_some_and(|n| n > 0));
    assert!(r["machine"]["cpu"].is_string());
    assert_eq!(r["load"]["before"], json!([3.5, 4.0, 4.5]));
    assert_eq!(r["groups"]["react"]["load_after"], json!([5.5, 4.2, 4.6]));
    assert_eq!(r["groups"]["memory"]["ok"], false);
    assert!(r["groups"]["react"]["commit"].is_string());
    assert!(
        r["groups"]["durable"].is_object(),
        "a group not run is kept"
    );
    let figures = r["figures"].as_object().unwrap();
    assert_eq!(figures["load.react.before"]["value"], 3.5);
    assert_eq!(figures["react.iteration"]["group"], "react");
    assert_eq!(figures["durable.iteration"]["value"], 400.0);
    for gone in ["react.old", "memory.10k.bm25.p50"] {
        assert!(!figures.contains_key(gone), "{gone}: its group ran again");
    }
    let ratio = &figures["ratio.langgraph_none_vs_react"];
    assert_eq!(ratio["value"], 150.0);
    assert_eq!(ratio["unit"], "×");
    assert!(
        !figures.contains_key("ratio.langgraph_sqlite_node_vs_durable"),
        "a ratio from an earlier run's figures"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// docs/benchmarks/results.md is the committed results file rendered, so
/// no figure on it was typed by hand.
#[test]
fn the_results_page_is_the_committed_results_file_rendered() {
    let root = root();
    let out = Command::new("python3")
        .arg(root.join("scripts/bench_results.py"))
        .arg("render")
        .arg(root.join("docs/benchmarks/results.json"))
        .output()
        .expect("python3 runs (./x setup installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(root.join("docs/benchmarks/results.md")).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        page,
        "docs/benchmarks/results.md is stale: python3 scripts/bench_results.py render \
         docs/benchmarks/results.json docs/benchmarks/results.md"
    );
    let results: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("docs/benchmarks/results.json")).unwrap(),
    )
    .unwrap();
    // Every group scripts/bench.sh runs has its figures in the committed run.
    for group in bench_groups() {
        assert!(
            results["groups"][&group].is_object(),
            "docs/benchmarks/results.json has no `{group}` group: run ./x bench {group} and copy target/bench/results.json"
        );
    }
}
