//! `robobrain assist --dataset DIR`: runs a Home Assistant assist dataset
//! (homes in `_fixtures.yaml`, sentences with expected changes) through the
//! engine with the rule brain (no model) — Home Assistant's grammar first,
//! unless the config's `[home] grammar = false` — and prints the pass rate per category, language and home
//! locale, and overall. A malformed file is named by file:line:col (exit 2);
//! a finished run exits 0 whatever its pass rate — it is a measurement.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args as ClapArgs;
use robobrain_core::assist::{load_dataset, runner};
use robobrain_core::engine::assist::EngineAssistant;

/// Arguments of `robobrain assist`.
#[derive(Debug, ClapArgs)]
pub(crate) struct Args {
    /// The dataset folder: one sub-folder per home with a `_fixtures.yaml`
    /// and test files (e.g. tests/data/home-assistant-datasets/assist-mini).
    #[arg(long, value_name = "DIR")]
    pub dataset: PathBuf,
    /// Print the whole report (every sentence, what was done, why it failed) as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also list every failed sentence and why.
    #[arg(long)]
    pub failures: bool,
    /// Which path understands the sentences: `engine` (the whole engine, its
    /// home fast path, policy and approvals) or `commands` (the device-command
    /// parser and the risk gate alone).
    #[arg(long, value_name = "PATH", default_value = "engine", value_parser = ["engine", "commands"])]
    pub path: String,
}

/// Runs the dataset and prints the report.
pub(crate) fn run(config: &robobrain_core::config::Config, args: &Args) -> Result<ExitCode> {
    let homes = load_dataset(&args.dataset).context("loading the dataset")?;
    let report = {
        let bar = crate::progress::Bar::on_stderr();
        if args.path == "commands" {
            runner::run(&homes, &mut runner::CommandAssistant::default(), &bar)
        } else {
            runner::run(
                &homes,
                &mut EngineAssistant::with_grammar(&config.home),
                &bar,
            )
        }
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", runner::render(&report))?;
        if args.failures {
            write!(out, "\n{}", runner::render_failures(&report))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
