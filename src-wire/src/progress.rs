//! How far a long job is, for a face to show: a bar on a terminal, nothing
//! in a pipe. The core's long jobs — a memory index build, a retrieval
//! evaluation, a Home Assistant dataset run — report through [`Progress`];
//! they never draw anything themselves.

/// Something that shows how far a job is.
pub trait Progress {
    /// `done` of `total` units of `what` (`"sentences"`, `"documents
    /// indexed"`) are done. Called often; cheap to call.
    fn update(&self, what: &str, done: u64, total: u64);
}

/// Shows nothing (tests, libraries, a face without a terminal).
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Progress for Silent {
    fn update(&self, _what: &str, _done: u64, _total: u64) {}
}
