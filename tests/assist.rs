//! `robobrain assist`: the assist-mini dataset (`tests/data/`, copied with
//! its source and licence) through the grammar and the rules, and a malformed
//! home named by file:line:col.

use serde_json::Value;

use crate::support::{robobrain, temp_dir};

/// Today's overall figure (docs/BENCHMARKS.md), Home Assistant's grammar
/// first and the rules after: passed at least, of (46 with the rules
/// alone). The per-category floors are pinned beside the runner
/// (`assist::runner`), for every path.
const OVERALL_FLOOR: (u64, u64) = (47, 50);

#[test]
fn assist_mini_pass_rates_per_category_with_locks_confirmed() {
    let dir = robobrain_core::testing::test_data("home-assistant-datasets/assist-mini");
    let dir = dir.to_str().unwrap();
    let out = robobrain(&["assist", "--dataset", dir], "");
    assert_eq!(out.code, 0, "{}", out.stderr);
    for category in [
        "cover",
        "fan",
        "light",
        "lock",
        "media-player",
        "todo",
        "vacuum",
        "valve",
    ] {
        assert!(
            out.stdout.lines().any(|l| l.starts_with(category)),
            "no row for {category}:\n{}",
            out.stdout
        );
    }
    assert!(out.stdout.contains("\noverall: "), "{}", out.stdout);

    let out = robobrain(&["assist", "--dataset", dir, "--json"], "");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let results = report["results"].as_array().unwrap();
    let (floor, total) = OVERALL_FLOOR;
    assert_eq!(report["overall"]["total"], total, "the dataset changed");
    assert_eq!(results.len() as u64, total);
    let passed = report["overall"]["passed"].as_u64().unwrap();
    assert!(
        passed >= floor,
        "{passed} of {total} passed, the floor is {floor}"
    );
    // Every lock change was confirmed first: each passed lock sentence
    // asked once, and no device changed before the approval.
    let lock = &report["by_category"]["lock"];
    assert_eq!(lock["passed"], lock["total"], "{lock}");
    assert_eq!(lock["confirmations"], lock["passed"]);
    for r in results
        .iter()
        .filter(|r| r["category"] == "lock" && r["passed"] == true)
    {
        assert_eq!(r["turn"]["confirmations"], 1, "{r}");
    }
    for r in results {
        assert!(
            r["turn"].get("changed_before_confirmation").is_none(),
            "a change before its confirmation: {r}"
        );
    }
}

#[test]
fn a_malformed_home_is_named_by_line() {
    let dir = temp_dir("assist-bad");
    let home = dir.join("home1-us-lock");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("_fixtures.yaml"),
        "areas:\n  - name: Entry\n    id: entry\nentities:\n  - name: Smart Lock\n    id: lock.smart_lock\n    area: hall\n",
    )
    .unwrap();
    std::fs::write(home.join("lock.yaml"), "category: lock\ntests: []\n").unwrap();
    let out = robobrain(&["assist", "--dataset", dir.to_str().unwrap()], "");
    assert_eq!(out.code, 2, "{}", out.stderr);
    let file = home.join("_fixtures.yaml");
    assert_eq!(
        out.stderr.lines().next().unwrap(),
        format!(
            "error: loading the dataset: {}:7:5: `entities[0].area`: unknown area `hall` (areas: entry)",
            file.display()
        )
    );
    assert!(out.stdout.is_empty());
}

/// A dataset run shows a progress bar on a terminal (here tmux) and none
/// in a pipe, whose stdout and stderr stay machine-readable (issue 25 item 4).
#[test]
fn a_dataset_run_shows_progress_on_a_terminal_only() {
    use std::path::Path;

    use crate::console::{Tmux, shell};
    let dir = robobrain_core::testing::test_data("home-assistant-datasets/assist-mini");
    let piped = robobrain(&["assist", "--dataset", dir.to_str().unwrap()], "");
    assert_eq!(piped.code, 0, "{}", piped.stderr);
    assert!(
        !piped.stderr.contains("sentences"),
        "a bar in a pipe:\n{}",
        piped.stderr
    );
    let command = format!(
        "{} assist --dataset {} > /dev/null; echo EXIT=$?; sleep 600",
        shell(Path::new(env!("CARGO_BIN_EXE_robobrain"))),
        shell(&dir)
    );
    let tmux = Tmux::start(&command, 120, 10);
    let screen = tmux.wait_for("the dataset run to end", 120, |s| s.contains("EXIT="));
    assert!(screen.contains("EXIT=0"), "{screen}");
    assert!(
        screen.contains("50/50 sentences"),
        "no finished bar on the terminal:\n{screen}"
    );
}
