//! `robobrain assist`: the assist-mini dataset (read in place from
//! ../shared/data, never copied) through the rule path, and a malformed
//! home named by file:line:col.

use serde_json::Value;

use crate::support::{robobrain, root, temp_dir};

fn assist_mini() -> Option<String> {
    let dir = root().join("../shared/data/home-assistant-datasets/assist-mini");
    if dir.is_dir() {
        Some(dir.to_string_lossy().into_owned())
    } else {
        eprintln!("skipped: ../shared/data/home-assistant-datasets/assist-mini is absent");
        None
    }
}

#[test]
fn assist_mini_pass_rates_per_category_with_locks_confirmed() {
    let Some(dir) = assist_mini() else { return };
    let out = robobrain(&["assist", "--dataset", &dir], "");
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

    let out = robobrain(&["assist", "--dataset", &dir, "--json"], "");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let results = report["results"].as_array().unwrap();
    assert_eq!(
        report["overall"]["total"].as_u64().unwrap() as usize,
        results.len()
    );
    // Every lock change that happened was confirmed first (and counted).
    let lock = &report["by_category"]["lock"];
    assert!(lock["passed"].as_u64().unwrap() > 0, "{lock}");
    assert_eq!(lock["confirmations"], lock["passed"]);
    for r in results
        .iter()
        .filter(|r| r["category"] == "lock" && r["passed"] == true)
    {
        assert_eq!(r["turn"]["confirmations"], 1, "{r}");
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
