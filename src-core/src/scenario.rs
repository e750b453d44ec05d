//! Scripted headless runs (seed 003 §11): a TOML scenario gives the start
//! state, timed and event-triggered steps, and expectations on the events and
//! the final state; the runner drives the [`crate::engine::Engine`] in
//! lockstep and reports what held and what did not.
//!
//! - [`format`]: the file format and its parser (text in, [`Scenario`] out).
//! - [`matcher`]: subset matching of events, counts and ordering.
//! - [`runner`]: the lockstep driving loop.
//! - [`report`]: judging a finished run and the readable report.
//!
//! The format is documented in `docs/scenarios.md`.
//!
//! ```no_run
//! # fn demo() -> Result<(), robobrain_core::scenario::ScenarioError> {
//! use robobrain_core::scenario;
//! let s = scenario::load(std::path::Path::new("tests/scenarios/01_goto_success.toml"))?;
//! let engine = scenario::prepare(&s)?;
//! let result = scenario::run(&s, engine, &mut |_time, _events| {});
//! println!("{}", result.report);
//! # Ok(()) }
//! ```

pub mod format;
pub use robobrain_wire::matcher;
pub mod report;
pub mod runner;

use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::brain::BrainError;
use crate::engine::EngineError;
use crate::llm::mock_server::MockError;
use crate::source::SourceError;

pub use format::{Action, BrainChoice, Scenario, Step, Trigger, parse};
pub use matcher::{Count, Pattern};
pub use report::{Check, EndReason, Report};
pub use runner::{RunResult, prepare, run, world_of};

/// Why a scenario could not start.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The IO error.
        source: std::io::Error,
    },
    /// The scenario (or its world) is malformed: file, line, field, expectation.
    #[error(transparent)]
    Invalid(#[from] SourceError),
    /// The engine refused the scenario's configuration or world.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The brain could not be set up.
    #[error("{}: brain: {source}", file.display())]
    Brain {
        /// The scenario file.
        file: PathBuf,
        /// Why.
        source: BrainError,
    },
    /// The scenario's mock model could not start.
    #[error("{}: mock_llm: {source}", file.display())]
    Mock {
        /// The scenario file.
        file: PathBuf,
        /// Why.
        source: MockError,
    },
}

/// Reads and parses a scenario file.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(parse(&text, path)?)
}
