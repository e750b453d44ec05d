//! Progress bars for the long subcommands (`memory import`, `memory eval`,
//! `assist`, and reading the log for `report` and `export mcap`): an `indicatif` bar on stderr when stderr is a terminal,
//! nothing otherwise (a pipe, CI, a file), so machine-read output stays clean.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use robobrain_core::progress::Progress;

/// A bar on stderr, drawn only on a terminal; it stays on screen, full,
/// when the job is done.
pub(crate) struct Bar {
    bar: ProgressBar,
}

impl Bar {
    /// A bar for one job, shown only when stderr is a terminal.
    pub(crate) fn on_stderr() -> Self {
        let target = if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(None, target);
        if let Ok(style) =
            ProgressStyle::with_template("{bar:30} {pos}/{len} {msg} ({elapsed}, {eta} left)")
        {
            bar.set_style(style);
        }
        Self { bar }
    }
}

impl Progress for Bar {
    fn update(&self, what: &str, done: u64, total: u64) {
        if self.bar.length() != Some(total) {
            self.bar.set_length(total);
        }
        if self.bar.message() != what {
            self.bar.set_message(what.to_string());
        }
        self.bar.set_position(done);
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.bar.finish();
    }
}
