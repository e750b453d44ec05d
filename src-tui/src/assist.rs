//! `robobrain assist --dataset DIR`: runs a Home Assistant assist dataset
//! (homes in `_fixtures.yaml`, sentences with expected changes) through the
//! engine with the rule brain (no model) — Home Assistant's grammar first,
//! unless the config's `[home] grammar = false` — and prints the pass rate per category, language and home
//! locale, and overall. With `--model`, what the path misses goes to the
//! configured model, and the report ends with what the model contributed;
//! with `--semantic` (or `[home] semantic`) the semantic fallback is a row
//! of the pipeline, each home's index built before its first sentence.
//! A malformed file is named by file:line:col (exit 2);
//! a finished run exits 0 whatever its pass rate — it is a measurement.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args as ClapArgs;
use robobrain_core::assist::{load_dataset, runner};
use robobrain_core::engine::assist::EngineAssistant;
use robobrain_core::model_assistant::{self, ModelAssistant};

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
    /// Send what the path misses to the configured model (`[llm]`, the
    /// intent role) and report what the model contributed.
    #[arg(long)]
    pub model: bool,
    /// Turn the semantic fallback on (as `[home] semantic = true` does):
    /// what no grammar or rule understood goes to the nearest of Home
    /// Assistant's own sentences by sentence embedding (docs/intents.md).
    #[arg(long)]
    pub semantic: bool,
}

/// Runs the dataset and prints the report.
pub(crate) fn run(config: &robobrain_core::config::Config, args: &Args) -> Result<ExitCode> {
    let homes = load_dataset(&args.dataset).context("loading the dataset")?;
    let semantic = args.semantic || config.home.semantic;
    let mut assistant: Box<dyn runner::Assistant> = if args.path == "commands" {
        if semantic {
            bail!(
                "the semantic fallback is a row of the engine's pipeline: drop `--path commands`"
            );
        }
        Box::new(runner::CommandAssistant::default())
    } else if semantic {
        if let Some(missing) = config.memory.model_missing() {
            bail!(
                "the semantic fallback needs the sentence model: {missing}; `./x setup` fetches it"
            );
        }
        Box::new(
            EngineAssistant::with_grammar(&config.home).with_semantic(config.memory.model_path()),
        )
    } else {
        Box::new(EngineAssistant::with_grammar(&config.home))
    };
    if args.model {
        assistant =
            Box::new(ModelAssistant::new(assistant, &config.llm).context("assist --model")?);
    }
    let report = runner::run(
        &homes,
        assistant.as_mut(),
        &crate::progress::Bar::on_stderr(),
    );
    let model = args.model.then(|| model_assistant::contribution(&report));
    let mut out = std::io::stdout().lock();
    if args.json {
        let mut json = serde_json::to_value(&report)?;
        if let Some(m) = &model {
            json["model"] = serde_json::to_value(m)?;
        }
        serde_json::to_writer_pretty(&mut out, &json)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", runner::render(&report))?;
        if let Some(m) = &model {
            write!(out, "{}", model_assistant::render(m, report.overall.total))?;
        }
        if args.failures {
            write!(out, "\n{}", runner::render_failures(&report))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
