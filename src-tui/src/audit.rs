//! `robobrain audit`: the audit log of home tool calls (seed 001 §3.2),
//! filtered by trace (run), plan, tool or outcome.

use std::fmt::Write as _;
use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use robobrain_core::config::Config;
use robobrain_core::store::audit::{AuditFilter, AuditLog, AuditRow};

/// Filters for `robobrain audit`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Args {
    /// Only this run (thread id).
    #[arg(long, value_name = "ID")]
    pub trace: Option<String>,
    /// Only this plan (`p3`).
    #[arg(long, value_name = "ID")]
    pub plan: Option<String>,
    /// Only tools whose name contains this (`invoke`, `devices.get_state`).
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// Only failures and calls held for confirmation.
    #[arg(long, conflicts_with = "ok")]
    pub failed: bool,
    /// Only successes.
    #[arg(long)]
    pub ok: bool,
    /// At most the newest N rows.
    #[arg(long, value_name = "N")]
    pub limit: Option<u32>,
    /// One JSON row per line.
    #[arg(long)]
    pub json: bool,
}

/// Lists the audit rows that pass the filters.
pub(crate) fn run(config: &Config, args: &Args) -> Result<ExitCode> {
    let path = config.db_path();
    anyhow::ensure!(
        path.exists(),
        "{}: no database yet (runs record there with `--thread ID` or `--db FILE`)",
        path.display()
    );
    let log = AuditLog::open(&path)?;
    let rows = log.list(&AuditFilter {
        trace_id: args.trace.clone(),
        plan_id: args.plan.clone(),
        tool: args.tool.clone(),
        ok: if args.failed {
            Some(false)
        } else if args.ok {
            Some(true)
        } else {
            None
        },
        limit: args.limit,
    })?;
    let mut out = std::io::stdout().lock();
    if args.json {
        for r in &rows {
            writeln!(out, "{}", serde_json::to_string(r)?)?;
        }
    } else {
        writeln!(out, "{}", table(&rows))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The rows as an aligned table.
pub(crate) fn table(rows: &[AuditRow]) -> String {
    let mut s = format!(
        "{:<5} {:<20} {:<6} {:<8} {:<28} {:>9}  {:<40} {:<28} args",
        "id", "trace", "plan", "step", "tool", "µs", "result", "origin"
    );
    for r in rows {
        let origin = if r.origin.is_empty() { "-" } else { &r.origin };
        let _ = write!(
            s,
            "\n{:<5} {:<20} {:<6} {:<8} {:<28} {:>9}  {:<40} {:<28} {}",
            r.id,
            r.trace_id,
            r.plan_id,
            r.step_id,
            r.tool,
            r.latency_us,
            r.result,
            origin,
            r.args_summary
        );
    }
    if rows.is_empty() {
        s.push_str("\n(no rows)");
    }
    s
}
