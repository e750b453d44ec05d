//! `robobrain memory …`: search, stats, add/import, eval, preferences and
//! session state of the memory in `[memory] dir` (default `<runs_dir>/memory`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::{Args as ClapArgs, Subcommand};
use robobrain_core::config::Config;
use robobrain_core::memory::embed::Embedder;
use robobrain_core::memory::manager::load_embedder;
use robobrain_core::memory::{MemoryError, MemoryManager, Mode, eval, prefs};
use robobrain_core::progress::Progress;

use crate::progress::Bar;

/// `robobrain memory` arguments.
#[derive(Debug, ClapArgs)]
pub(crate) struct Args {
    /// Memory folder (default: config `[memory] dir`, else <runs_dir>/memory).
    #[arg(long, global = true, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: MemoryCmd,
}

/// The memory subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum MemoryCmd {
    /// The memories most relevant to a query, with their scores and why (JSON).
    Search {
        /// What to look for.
        query: String,
        /// bm25, dense or hybrid (default: config `[memory] mode`).
        #[arg(long, value_name = "MODE")]
        mode: Option<String>,
        /// How many.
        #[arg(long, default_value_t = 5)]
        k: usize,
    },
    /// Counts, sizes and settings (JSON).
    Stats,
    /// Remembers a note (a long-term memory of its own).
    Add {
        /// The text.
        text: String,
    },
    /// Remembers every entry of a corpus file (`{"id","text"}` per line).
    Import {
        /// The JSONL file.
        #[arg(long, value_name = "FILE")]
        corpus: PathBuf,
    },
    /// Retrieval quality and latency on a corpus and its queries (JSON).
    Eval {
        /// Corpus: `{"id","text"}` per line (optional "time").
        #[arg(long, value_name = "FILE")]
        corpus: PathBuf,
        /// Queries: `{"id","query","relevant":[ids]}` per line.
        #[arg(long, value_name = "FILE")]
        queries: PathBuf,
        /// Results per query for MRR (hit@5/hit@10/recall@10 use the top 10).
        #[arg(long, default_value_t = 10)]
        k: usize,
        /// bm25, dense or hybrid.
        #[arg(long, value_name = "MODE", default_value = "hybrid")]
        mode: String,
        /// BM25's weight in hybrid mode (default: config `[memory] alpha`).
        #[arg(long, value_name = "A")]
        alpha: Option<f64>,
    },
    /// Explicit preferences: list, set, unset.
    Prefs {
        /// What to do with them.
        #[command(subcommand)]
        action: PrefsCmd,
    },
    /// A session's state (last_device, last_room, …): list or set.
    State {
        /// The session (a run's thread id).
        #[arg(long, default_value = "cli")]
        session: String,
        /// `KEY VALUE` to set; nothing to list.
        #[arg(num_args = 0..=2, value_name = "KEY VALUE")]
        set: Vec<String>,
    },
}

/// `robobrain memory prefs …`.
#[derive(Debug, Subcommand)]
pub(crate) enum PrefsCmd {
    /// Every preference with where it came from.
    List,
    /// Sets one.
    Set {
        /// The key, e.g. `temperature.bedroom`.
        key: String,
        /// The value.
        value: String,
        /// Why (kept beside it).
        #[arg(long, default_value = "")]
        reason: String,
    },
    /// Removes one.
    Unset {
        /// The key.
        key: String,
    },
}

fn parse_mode(s: &str) -> Result<Mode> {
    Mode::parse(s).with_context(|| format!("--mode: expected bm25, dense or hybrid, found {s:?}"))
}

/// The model, or why not. A model that is there but broken is an error
/// unless only BM25 is wanted.
fn embedder(config: &Config, mode: Mode) -> Result<Result<Arc<Embedder>, String>> {
    let dir = config.memory.model_path();
    match load_embedder(&dir) {
        Ok(e) => Ok(Ok(e)),
        Err(e @ MemoryError::ModelMissing { .. }) => {
            if mode == Mode::Dense {
                bail!("{}", MemoryError::NoDense(e.to_string()));
            }
            if mode == Mode::Hybrid {
                eprintln!("notice: BM25 alone: {e}");
            }
            Ok(Err(e.to_string()))
        }
        Err(e) if mode == Mode::Bm25 => Ok(Err(e.to_string())),
        Err(e) => Err(e.into()),
    }
}

/// The model `mode` needs: none for BM25, else [`embedder`].
fn embedder_for(config: &Config, mode: Mode) -> Result<Result<Arc<Embedder>, String>> {
    if mode == Mode::Bm25 {
        Ok(Err("BM25 mode".to_string()))
    } else {
        embedder(config, mode)
    }
}

fn open(config: &Config, dir: &Path, mode: Mode) -> Result<MemoryManager> {
    let e = embedder_for(config, mode)?;
    let mut m = MemoryManager::open(&config.memory, dir, &config.llm, "cli", e)
        .with_context(|| format!("memory in {}", dir.display()))?;
    for n in m.take_notices() {
        if !n.starts_with("BM25 alone") {
            eprintln!("notice: {n}");
        }
    }
    Ok(m)
}

fn print_json(v: &impl serde::Serialize) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

/// Runs `robobrain memory …`.
pub(crate) fn run(config: &Config, args: &Args) -> Result<ExitCode> {
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| config.memory.dir_in(&config.runs_dir));
    match &args.command {
        MemoryCmd::Search { query, mode, k } => {
            search(config, &dir, query, mode.as_deref(), *k)?;
        }
        MemoryCmd::Stats => {
            let m = open(config, &dir, config.memory.mode)?;
            print_json(&m.get_stats()?)?;
        }
        MemoryCmd::Add { text } => {
            let mut m = open(config, &dir, config.memory.mode)?;
            let id = m.add_memory("note", text)?;
            println!("remembered as memory {id}");
        }
        MemoryCmd::Import { corpus } => import(config, &dir, corpus)?,
        MemoryCmd::Eval {
            corpus,
            queries,
            k,
            mode,
            alpha,
        } => evaluate(config, corpus, queries, *k, mode, *alpha)?,
        MemoryCmd::Prefs { action } => prefs_cmd(config, &dir, action)?,
        MemoryCmd::State { session, set } => state_cmd(config, &dir, session, set)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `memory search`: the `k` memories most relevant to `query`, with their
/// scores and why, as JSON.
fn search(config: &Config, dir: &Path, query: &str, mode: Option<&str>, k: usize) -> Result<()> {
    let mode = mode.map_or(Ok(config.memory.mode), parse_mode)?;
    let mut c = config.clone();
    c.memory.mode = mode;
    let mut m = open(&c, dir, mode)?;
    let found = m.retrieve_relevant_memories(query, k)?;
    let out: Vec<serde_json::Value> = found
        .iter()
        .map(|r| {
            serde_json::json!({
                "id": r.hit.id,
                "score": r.hit.score,
                "bm25": r.hit.bm25,
                "dense": r.hit.dense,
                "text": r.memory.content,
                "kind": r.memory.kind,
                "why": robobrain_core::memory::context::explain(query, r),
            })
        })
        .collect();
    print_json(&out)
}

/// `memory import`: remembers every entry of `corpus`, after checking them
/// all, in batches of 512 with a progress bar.
fn import(config: &Config, dir: &Path, corpus: &Path) -> Result<()> {
    let docs = eval::read_corpus(corpus)?;
    let mut m = open(config, dir, config.memory.mode)?;
    let mut n = 0;
    let bar = Bar::on_stderr();
    for d in &docs {
        m.check_message(&d.text)
            .with_context(|| format!("{}: entry {:?}", corpus.display(), d.id))?;
    }
    for chunk in docs.chunks(512) {
        let memories: Vec<_> = chunk.iter().map(imported_memory).collect();
        let (ids, archived) = m.import_memories(&memories)?;
        n += ids.len();
        bar.update("memories imported", n as u64, docs.len() as u64);
        if !archived.is_empty() {
            eprintln!(
                "notice: {} older memories archived (memory.max_memories = {})",
                archived.len(),
                config.memory.max_memories
            );
        }
    }
    println!("imported {n} memories from {}", corpus.display());
    Ok(())
}

/// The long-term memory a corpus entry is imported as.
fn imported_memory(d: &eval::Doc) -> robobrain_core::memory::store::NewMemory {
    robobrain_core::memory::store::NewMemory {
        kind: "imported".into(),
        content: d.text.clone(),
        original: d.text.clone(),
        analysis: serde_json::to_value(robobrain_core::memory::analyzer::analyze_rules(&d.text))
            .unwrap_or_default(),
        metadata: serde_json::json!({"source_id": d.id, "time": d.time}),
        session_id: "import".into(),
        window_id: 0,
    }
}

/// `memory eval`: retrieval quality and latency on `corpus` and `queries`, as JSON.
fn evaluate(
    config: &Config,
    corpus: &Path,
    queries: &Path,
    k: usize,
    mode: &str,
    alpha: Option<f64>,
) -> Result<()> {
    let mode = parse_mode(mode)?;
    anyhow::ensure!(k >= 1, "--k: expected at least 1, found 0");
    let alpha = alpha.unwrap_or(config.memory.alpha);
    anyhow::ensure!(
        (0.0..=1.0).contains(&alpha),
        "--alpha: expected a weight in [0, 1], found {alpha}"
    );
    let docs = eval::read_corpus(corpus)?;
    let qs = eval::read_queries(queries, &docs)?;
    let e = embedder_for(config, mode)?;
    let report = eval::run(&docs, &qs, k, mode, alpha, e, &Bar::on_stderr())?;
    print_json(&report)
}

/// `memory prefs …`: lists, sets or unsets explicit preferences.
fn prefs_cmd(config: &Config, dir: &Path, action: &PrefsCmd) -> Result<()> {
    let m = open(config, dir, Mode::Bm25)?;
    let db = m.long().db();
    match action {
        PrefsCmd::List => {
            let all = prefs::list(db)?;
            if all.is_empty() {
                println!("no preferences set (robobrain memory prefs set KEY VALUE --reason WHY)");
            }
            for p in all {
                println!("{p}");
            }
        }
        PrefsCmd::Set { key, value, reason } => match prefs::set(db, key, value, "cli", reason)? {
            Some(old) => println!("{key} = {value} (was {old})"),
            None => println!("{key} = {value}"),
        },
        PrefsCmd::Unset { key } => {
            let old = prefs::unset(db, key)?;
            println!("{key} unset (was {old})");
        }
    }
    Ok(())
}

/// `memory state`: lists a session's state, or sets one `KEY VALUE`.
fn state_cmd(config: &Config, dir: &Path, session: &str, set: &[String]) -> Result<()> {
    let m = open(config, dir, Mode::Bm25)?;
    let db = m.long().db();
    match set {
        [] => {
            for (k, v) in prefs::states(db, session)? {
                println!("{k} = {v}");
            }
        }
        [key, value] => {
            prefs::set_state(db, session, key, value)?;
            println!("{session}: {key} = {value}");
        }
        _ => bail!("memory state: expected KEY VALUE to set, or nothing to list"),
    }
    Ok(())
}
