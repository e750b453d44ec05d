//! The fuzz targets' checks (fuzz/harness.rs) over the committed seeds and
//! every input a fuzzer once failed on, on the stable toolchain: what
//! `./x fuzz` found stays fixed (docs/testing.md).

#[path = "../fuzz/harness.rs"]
mod harness;

use std::path::PathBuf;

use crate::support::root;

/// The folders `target`'s inputs come from: fuzz/corpus/TARGET and
/// fuzz/regressions/TARGET, and the shipped files fuzz/seeds.txt names.
fn folders(target: &str) -> Vec<PathBuf> {
    let root = root();
    let mut dirs = vec![
        root.join("fuzz/corpus").join(target),
        root.join("fuzz/regressions").join(target),
    ];
    let seeds = std::fs::read_to_string(root.join("fuzz/seeds.txt")).unwrap();
    for line in seeds.lines().filter(|l| !l.starts_with('#')) {
        let mut words = line.split_whitespace();
        if words.next() == Some(target) {
            dirs.extend(words.map(|d| root.join(d)));
        }
    }
    dirs
}

/// Runs `check` over every input of `target`.
fn replay(target: &str, check: fn(&[u8])) {
    let mut n = 0;
    for dir in folders(target) {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            // Sub-folders (tests/scenarios/mock) hold other files.
            if !path.is_file() {
                continue;
            }
            let data = std::fs::read(&path).unwrap();
            let outcome = std::panic::catch_unwind(|| check(&data));
            assert!(outcome.is_ok(), "{} fails its check", path.display());
            n += 1;
        }
    }
    assert!(n > 0, "no seeds for {target}");
}

#[test]
fn operator_line_seeds_and_regressions() {
    replay("operator_line", harness::operator_line);
}

#[test]
fn command_json_seeds_and_regressions() {
    replay("command_json", harness::command_json);
}

#[test]
fn world_file_seeds_and_regressions() {
    replay("world_file", harness::world_file);
}

#[test]
fn config_file_seeds_and_regressions() {
    replay("config_file", harness::config_file);
}

#[test]
fn scenario_file_seeds_and_regressions() {
    replay("scenario_file", harness::scenario_file);
}

#[test]
fn checkpoint_delta_seeds_and_regressions() {
    replay("checkpoint_delta", harness::checkpoint_delta);
}

#[test]
fn mqtt_payload_seeds_and_regressions() {
    replay("mqtt_payload", harness::mqtt_payload);
}
