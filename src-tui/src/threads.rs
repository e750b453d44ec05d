//! `robobrain threads`: the durable threads in the database, and
//! `robobrain threads show ID`: one thread's event history.

use std::fmt::Write as _;
use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use robobrain_core::config::Config;
use robobrain_core::store::{Store, ThreadInfo};

use crate::pretty::{Style, render};

/// `threads show ID`.
#[derive(Debug, Clone, clap::Subcommand)]
pub(crate) enum Show {
    /// Print a thread's events, oldest first.
    Show {
        /// Thread id.
        id: String,
        /// One JSON event per line instead of readable text.
        #[arg(long)]
        json: bool,
    },
}

/// Lists threads, or prints one thread's history.
pub(crate) fn run(config: &Config, show: Option<&Show>) -> Result<ExitCode> {
    let path = config.db_path();
    anyhow::ensure!(
        path.exists(),
        "{}: no database yet (runs record there with `--thread ID` or `--db FILE`)",
        path.display()
    );
    let store = Store::open(&path, config.store.synchronous)?;
    let mut out = std::io::stdout().lock();
    match show {
        None => {
            let threads = store.threads()?;
            writeln!(out, "{}", table(&threads))?;
        }
        Some(Show::Show { id, json }) => {
            store.thread(id)?;
            let style = Style::detect();
            for event in store.events(id).context("reading the event history")? {
                if *json {
                    writeln!(out, "{}", serde_json::to_string(&event)?)?;
                } else if let Some(line) = render(&event, style) {
                    writeln!(out, "#{:<5} step {:<5} {line}", event.seq, event.step)?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The thread list as an aligned table.
pub(crate) fn table(threads: &[ThreadInfo]) -> String {
    let mut s = format!(
        "{:<28} {:<18} {:<6} {:>9}  {}",
        "THREAD", "STATUS", "MODE", "LAST STEP", "PENDING APPROVAL"
    );
    if threads.is_empty() {
        s.push_str("\n(no threads)");
    }
    for t in threads {
        let _ = write!(
            s,
            "\n{:<28} {:<18} {:<6} {:>9}  {}",
            t.id,
            t.status,
            t.mode,
            t.last_step,
            t.pending_approval.as_deref().unwrap_or("-")
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_lists_status_step_mode_and_approval() {
        let t = ThreadInfo {
            id: "patrol-1".into(),
            status: "awaiting_approval".into(),
            mode: "EXEC".into(),
            last_step: 42,
            last_seq: 100,
            pending_approval: Some("a1".into()),
            updated_ms: 0,
        };
        let s = table(&[t]);
        let row = s.lines().nth(1).unwrap();
        assert!(row.starts_with("patrol-1"), "{s}");
        assert!(
            row.contains("awaiting_approval") && row.contains("42") && row.ends_with("a1"),
            "{s}"
        );
        assert!(table(&[]).ends_with("(no threads)"));
    }
}
