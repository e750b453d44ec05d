//! What the test suite needs from the machine, in one place for the unit
//! tests beside the code, the end-to-end tests in `tests/` and the desktop
//! app's test (feature `test-utils`; always on in this crate's own tests).
//!
//! Two kinds of prerequisite, two answers:
//! - what `./x test` installs (espeak-ng, the embedding model, Chromium,
//!   the page's npm packages, tauri-driver, mosquitto, the Python tools) and
//!   the public test data the repository carries (`tests/data/`) are
//!   required: a missing one fails the test with what is missing and the
//!   command that installs it ([`require`], [`program`], [`test_data`]).
//!   A test never passes by not running.
//! - hardware this machine may not have (a sound card, a camera) cannot be
//!   installed: the test returns early and [`skip`] records it in a file
//!   that `./x test` reads to print `N skipped: …` at the end, so a skip is
//!   always said, never hidden by the test runner.

// A test helper: failing the test is what it is for.
#![allow(clippy::panic)]

use std::io::Write;
use std::path::{Path, PathBuf};

/// The variable naming another test data folder of the same layout as
/// `tests/data/` (the repository's own copy, used without it).
pub const TEST_DATA_ENV: &str = "ROBOBRAIN_TEST_DATA";

/// The variable naming the file skips are recorded in (`./x test` sets it;
/// without it, `target/test-skips.txt` in the workspace).
pub const SKIP_LOG_ENV: &str = "ROBOBRAIN_SKIP_LOG";

/// The command that installs everything the tests need.
pub const SETUP: &str = "./x setup";

/// The workspace root (the folder holding `Cargo.toml`, `x` and `tests/`).
pub fn workspace_root() -> PathBuf {
    let core = Path::new(env!("CARGO_MANIFEST_DIR"));
    core.parent().unwrap_or(core).to_path_buf()
}

/// `found`, or the test fails: `what` is missing, and `install` is the
/// command that installs it.
#[track_caller]
pub fn require<T>(what: &str, install: &str, found: Option<T>) -> T {
    match found {
        Some(v) => v,
        None => panic!(
            "missing prerequisite: {what}; install it with `{install}` \
             (./x test installs what the tests need: a missing one fails, it is never skipped)"
        ),
    }
}

/// The program `name` — on `PATH`, in `~/.cargo/bin` or in `/usr/sbin`
/// (Debian's daemons) — or the test fails naming `install`.
#[track_caller]
pub fn program(name: &str, install: &str) -> PathBuf {
    require(
        &format!("the program `{name}`"),
        install,
        find_program(name),
    )
}

pub use crate::places::find_program;

/// The test data folder: `$ROBOBRAIN_TEST_DATA`, else `tests/data/` in
/// the workspace — public data copied into the repository with its source
/// and licence (`tests/data/README.md`), so a clone tests on its own.
pub fn test_data_dir() -> PathBuf {
    std::env::var_os(TEST_DATA_ENV)
        .map_or_else(|| workspace_root().join("tests/data"), PathBuf::from)
}

/// `rel` inside the test data folder; the test fails naming the path when
/// it is not there.
#[track_caller]
pub fn test_data(rel: &str) -> PathBuf {
    let path = test_data_dir().join(rel);
    assert!(
        path.exists(),
        "missing test data: {} is absent. The repository carries its test data in \
         tests/data/ (see tests/data/README.md); {TEST_DATA_ENV} names another folder \
         of the same layout",
        path.display()
    );
    path
}

/// The embedding model's folder (`$ROBOBRAIN_EMBED_MODEL`, else the cache
/// `./x setup` downloads it into); the test fails when it holds no model.
#[track_caller]
pub fn embedding_model() -> PathBuf {
    let dir = std::env::var_os(crate::places::EMBED_MODEL_ENV)
        .map_or_else(crate::places::default_embed_model_dir, PathBuf::from);
    let found = dir
        .join("model.safetensors")
        .is_file()
        .then_some(dir.clone());
    require(
        &format!(
            "the embedding model (all-MiniLM-L6-v2) in {}",
            dir.display()
        ),
        SETUP,
        found,
    )
}

/// espeak-ng, which voices speech into WAV files.
#[track_caller]
pub fn espeak() -> PathBuf {
    program("espeak-ng", "./x setup (Debian package espeak-ng)")
}

/// Records that the running test skips because of `why` (hardware this
/// machine lacks), for the summary `./x test` prints. The test's name is
/// its thread's (libtest and nextest name the thread after the test).
pub fn skip(why: &str) {
    let current = std::thread::current();
    let test = current.name().unwrap_or("an unnamed test");
    let file = std::env::var_os(SKIP_LOG_ENV).map_or_else(
        || workspace_root().join("target/test-skips.txt"),
        PathBuf::from,
    );
    if let Err(e) = record_skip(&file, test, why) {
        panic!(
            "cannot record the skip of {test} in {}: {e}",
            file.display()
        );
    }
}

/// Appends `test: why` to `file`: one short append per skip, so lines stay
/// whole with tests running in parallel processes.
fn record_skip(file: &Path, test: &str, why: &str) -> std::io::Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)?
        .write_all(format!("{test}: {why}\n").as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_prerequisite_fails_with_the_install_command() {
        assert_eq!(require("x", "y", Some(3)), 3);
        let e = std::panic::catch_unwind(|| {
            require::<()>("espeak-ng", "apt-get install espeak-ng", None);
        })
        .unwrap_err();
        let msg = e.downcast_ref::<String>().unwrap();
        assert!(
            msg.starts_with(
                "missing prerequisite: espeak-ng; install it with `apt-get install espeak-ng`"
            ),
            "{msg}"
        );
        let e =
            std::panic::catch_unwind(|| program("robobrain-no-such-program", SETUP)).unwrap_err();
        let msg = e.downcast_ref::<String>().unwrap();
        assert!(msg.contains("`robobrain-no-such-program`") && msg.contains("./x setup"));
    }

    #[test]
    fn missing_test_data_is_named_by_path() {
        let e = std::panic::catch_unwind(|| test_data("no/such/folder")).unwrap_err();
        let msg = e.downcast_ref::<String>().unwrap();
        assert!(
            msg.starts_with("missing test data: ") && msg.contains("no/such/folder is absent"),
            "{msg}"
        );
    }

    #[test]
    fn skips_are_appended_one_line_each() {
        let file = std::env::temp_dir().join(format!("rb-skips-{}/skips.txt", std::process::id()));
        let _ = std::fs::remove_file(&file);
        record_skip(&file, "a::test", "no sound card").unwrap();
        record_skip(&file, "b::test", "no camera").unwrap();
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "a::test: no sound card\nb::test: no camera\n"
        );
        let _ = std::fs::remove_dir_all(file.parent().unwrap());
    }
}
