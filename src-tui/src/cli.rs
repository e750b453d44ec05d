//! Command-line arguments and the `demo` and `scenario` subcommands.
//! With no subcommand, `robobrain` opens the console on a terminal and runs
//! the demo without one (a pipe, CI).
//!
//! Exit codes: 0 when every expectation held, 1 when one failed, 2 when a
//! file (scenario, world, config) is malformed or the run could not start.
//! The console exits 0 when the operator quits and 128 + N when signal N
//! (SIGTERM, SIGHUP, SIGINT) ended it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use robobrain_core::config::Config;
use robobrain_core::eventlog::{self, EventLog};
use robobrain_core::llm::{mock_script, mock_server::MockServer};
use robobrain_core::places::{CONFIG_FILE, Places};
use robobrain_core::protocol::Event;
use robobrain_core::runtime::Pace;
use robobrain_core::scenario::{self, Scenario};
use robobrain_core::session::{BrainSource, Run, fresh_thread_id};
use robobrain_core::session::{RecordError, RunLog};

use robobrain_tui::console;

use crate::flags::{Durability, LOG_HELP, MCAP_HELP};
use crate::headless;
use crate::pretty::{Style, Throttle, render};

/// The demo scenario, embedded so `robobrain demo` works from anywhere.
const DEMO: &str = include_str!("../../assets/scenarios/demo.toml");
/// How the demo is named in errors.
const DEMO_FILE: &str = "assets/scenarios/demo.toml";
/// Default demo pace, sim seconds per wall second.
const DEMO_SPEED: f64 = 10.0;

/// A robot brain you can watch think.
#[derive(Debug, Parser)]
#[command(name = "robobrain", version, about, after_help = robobrain_core::intents::CREDITS)]
pub(crate) struct Cli {
    /// Config file (default: ./robobrain.toml when present, else
    /// ~/.config/robobrain/robobrain.toml when present; `robobrain paths`).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// World: a built-in name (`apartment`) or a world file.
    #[arg(long, global = true, value_name = "NAME|PATH")]
    pub world: Option<String>,
    /// Simulation seed.
    #[arg(long, global = true, value_name = "N")]
    pub seed: Option<u64>,
    /// Durable thread id: the run is checkpointed in the database under it.
    #[arg(long, global = true, value_name = "ID")]
    pub thread: Option<String>,
    /// Continue `--thread ID` from its last checkpoint.
    #[arg(long, global = true, requires = "thread")]
    pub resume: bool,
    /// Database file (default: config `[store] db`, else <runs_dir>/robobrain.db).
    #[arg(long, global = true, value_name = "FILE")]
    pub db: Option<PathBuf>,
    /// A robot in another process, e.g. tcp://127.0.0.1:7000 (`robobrain sim --listen`).
    #[arg(long, global = true, value_name = "URL")]
    pub robot: Option<String>,
    /// More diagnostics (-v info, -vv debug, -vvv trace); RUST_LOG, when set, decides.
    #[arg(short = 'v', global = true, action = clap::ArgAction::Count)]
    pub verbosity: u8,
    /// Errors only in the diagnostics.
    #[arg(
        short = 'q',
        long = "quiet",
        global = true,
        conflicts_with = "verbosity"
    )]
    pub quiet: bool,
    /// What to run.
    #[command(subcommand)]
    pub command: Option<Cmd>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Cmd {
    /// The operator console (the default on a terminal).
    #[command(alias = "console")]
    Tui {
        /// Sim seconds per wall second.
        #[arg(long, value_name = "N", default_value_t = 1.0)]
        speed: f64,
        #[arg(long, value_name = "FILE", help = LOG_HELP)]
        log: Option<PathBuf>,
        #[arg(long, value_name = "FILE", help = MCAP_HELP)]
        mcap: Option<PathBuf>,
        /// Attach to a running `robobrain serve` instead of running a brain
        /// here: ws://HOST:PORT, or wss://HOST:PORT over TLS (a viewer token
        /// watches only). The token: ROBOBRAIN_TOKEN or --token-file, sent
        /// as an `Authorization: Bearer` header.
        #[arg(long, value_name = "URL", conflicts_with_all = ["speed", "log", "mcap"])]
        connect: Option<String>,
        /// With --connect: the token, read from FILE (one line; mode 0600).
        #[arg(long, value_name = "FILE", requires = "connect")]
        token_file: Option<PathBuf>,
        /// With --connect wss://…: the CA certificate (PEM) the server's
        /// certificate must be signed by (default: the system's roots).
        #[arg(long, value_name = "FILE", requires = "connect")]
        ca: Option<PathBuf>,
    },
    /// A headless patrol printed as a readable, coloured event log.
    Demo {
        /// As fast as possible (no pacing).
        #[arg(long)]
        fast: bool,
        /// Sim seconds per wall second.
        #[arg(long, value_name = "N", default_value_t = DEMO_SPEED)]
        speed: f64,
        #[arg(long, value_name = "FILE", help = LOG_HELP)]
        log: Option<PathBuf>,
        #[arg(long, value_name = "FILE", help = MCAP_HELP)]
        mcap: Option<PathBuf>,
    },
    /// JSONL events on stdout; commands (JSON) or utterances on stdin.
    Headless(headless::Args),
    /// An MCP server: the skills as tools, the snapshot and events as resources (stdio, or --http).
    Mcp(crate::mcpserve::Args),
    /// The fleet console on an MQTT broker (`fleet up --robots N`: a local
    /// broker and N simulated robots; `fleet down`: stop them).
    Fleet(crate::fleetcli::Args),
    /// The web console: the page over HTTP, the protocol over a WebSocket (localhost unless --token).
    Serve(crate::serve::Args),
    /// List durable threads, or show one thread's event history.
    Threads {
        /// `show ID` prints the thread's events.
        #[command(subcommand)]
        show: Option<crate::threads::Show>,
    },
    /// List the audit log of home tool calls (filters: --trace, --plan, --tool, --failed).
    Audit(crate::audit::Args),
    /// Run the simulated robot as its own process, serving the robot link over TCP.
    Sim(crate::simserve::Args),
    /// Run scenario files and report; exit 0 when all pass.
    Scenario {
        /// Scenario files.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Folder for the runs' event logs (default: config `runs_dir`).
        #[arg(long, value_name = "DIR")]
        log_dir: Option<PathBuf>,
        /// Print each run's event log as it happens.
        #[arg(long)]
        verbose: bool,
    },
    /// A local OpenAI-compatible chat endpoint that plays a script (replies,
    /// recorded streams, faults): for tests, benchmarks and offline demos.
    MockLlm {
        /// The script (docs/providers.md describes the format).
        #[arg(long, value_name = "FILE")]
        script: PathBuf,
        /// Address to listen on.
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8765")]
        listen: String,
    },
    /// Runs a Home Assistant assist dataset (homes, sentences, expected
    /// changes) through Home Assistant's grammar and the rules (`[home]
    /// grammar = false`: the rules alone): pass rate per category and overall.
    Assist(crate::assist::Args),
    /// Memory: search, stats, eval, preferences (`robobrain memory --help`).
    Memory(crate::memorycli::Args),
    /// A self-contained HTML report of a run's JSONL event log: the map with
    /// the trajectory, battery, mode and activity over time, decisions,
    /// approvals, incidents.
    Report {
        /// The run's event log (`runs/<thread>.jsonl`).
        log: PathBuf,
        /// Where to write the HTML.
        #[arg(short, long, value_name = "FILE", default_value = "report.html")]
        output: PathBuf,
    },
    /// Converts a run's JSONL event log for other tools: `export mcap RUN.jsonl -o RUN.mcap` (Foxglove).
    Export {
        /// What to convert to.
        #[command(subcommand)]
        to: crate::export::To,
    },
    /// Prints a shell completion script: `source <(robobrain completions bash)`,
    /// or save it where your shell looks (README, "Shell completions").
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Prints the man page (roff): `robobrain man > robobrain.1 && man -l robobrain.1`.
    Man,
    /// Where the config is read from and the data is kept (XDG folders unless configured).
    Paths,
}

/// Parses the arguments, runs, and turns the outcome into an exit code.
pub(crate) fn main() -> ExitCode {
    use clap::{CommandFactory, FromArgMatches};
    let help = format!(
        "{}\n\n{}",
        places_help(&Places::from_env(|n| std::env::var(n).ok())),
        robobrain_core::intents::CREDITS
    );
    let cli = match Cli::from_arg_matches(&Cli::command().after_help(help).get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            // Not `eprintln!`: it panics when the terminal has gone away.
            let _ = writeln!(std::io::stderr(), "error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    // Neither reads the config: a broken one must not break a shell.
    match &cli.command {
        Some(Cmd::Completions { shell }) => return completions(*shell),
        Some(Cmd::Man) => return man(),
        _ => {}
    }
    let config = load_config(&cli)?;
    init_diagnostics(&cli, &config)?;
    let durable = Durability {
        resume: cli.resume,
        robot: cli.robot.clone(),
        record: cli.thread.is_some() || cli.db.is_some(),
    };
    check_durability_flags(&cli)?;
    dispatch(cli, &config, &durable)
}

/// Sends diagnostics to stderr, or to a file when the console runs here,
/// as loud as `--quiet` / `-v` ask.
fn init_diagnostics(cli: &Cli, config: &Config) -> Result<()> {
    // The console's terminal is its UI: its diagnostics go to a file.
    let console_here = match &cli.command {
        None => console::has_terminal(),
        Some(Cmd::Tui { .. }) => true,
        Some(Cmd::Fleet(args)) => args.action.is_none(),
        _ => false,
    };
    let sink = if console_here {
        robobrain_core::diagnostics::Sink::FileIn(config.runs_dir.join("logs"), "console")
    } else {
        robobrain_core::diagnostics::Sink::Stderr
    };
    let verbosity = if cli.quiet {
        -1
    } else {
        i8::try_from(cli.verbosity).unwrap_or(i8::MAX)
    };
    robobrain_core::diagnostics::init(&sink, verbosity)?;
    Ok(())
}

/// Refuses `--resume` and `--robot` for the commands that replay a script
/// from its start.
fn check_durability_flags(cli: &Cli) -> Result<()> {
    if !matches!(
        cli.command,
        Some(Cmd::Headless(_) | Cmd::Tui { .. } | Cmd::Mcp(_) | Cmd::Serve(_)) | None
    ) {
        anyhow::ensure!(
            !cli.resume && cli.robot.is_none(),
            "--resume and --robot work with `robobrain headless`, `robobrain mcp`, `robobrain serve` and `robobrain tui` (demo and scenario replay a script from its start)"
        );
    }
    Ok(())
}

/// Runs the subcommand asked for (none: the console on a terminal, else the demo).
fn dispatch(cli: Cli, config: &Config, durable: &Durability) -> Result<ExitCode> {
    match cli.command {
        None if console::has_terminal() => tui(config, 1.0, Logs::default(), durable),
        None => demo(
            cli.world.as_deref(),
            cli.seed,
            config,
            DemoOptions {
                fast: false,
                speed: DEMO_SPEED,
                logs: Logs::default(),
                record: durable.record,
            },
        ),
        Some(Cmd::Tui {
            connect: Some(url),
            token_file,
            ca,
            ..
        }) => attach(&url, token_file.as_deref(), ca, durable),
        Some(Cmd::Tui {
            speed,
            log,
            mcap,
            connect: None,
            ..
        }) => tui(config, speed, Logs { log, mcap }, durable),
        Some(Cmd::Demo {
            fast,
            speed,
            log,
            mcap,
        }) => demo(
            cli.world.as_deref(),
            cli.seed,
            config,
            DemoOptions {
                fast,
                speed,
                logs: Logs { log, mcap },
                record: durable.record,
            },
        ),
        Some(Cmd::Headless(args)) => headless::run(config, &args, durable),
        Some(Cmd::Mcp(args)) => crate::mcpserve::run(config, &args, durable),
        Some(Cmd::Serve(args)) => crate::serve::run(config, &args, durable),
        Some(Cmd::Fleet(args)) => crate::fleetcli::run(config, &args, console::color_allowed()),
        Some(Cmd::Threads { show }) => crate::threads::run(config, show.as_ref()),
        Some(Cmd::Audit(args)) => crate::audit::run(config, &args),
        Some(Cmd::Sim(args)) => crate::simserve::run(config, &args),
        Some(Cmd::Scenario {
            files,
            log_dir,
            verbose,
        }) => {
            let dir = log_dir.unwrap_or_else(|| config.runs_dir.clone());
            scenarios(cli.world.as_deref(), cli.seed, &files, &dir, verbose)
        }
        Some(Cmd::MockLlm { script, listen }) => mock_llm(&script, &listen),
        Some(Cmd::Report { log, output }) => report(&log, &output, cli.world.as_deref()),
        Some(Cmd::Export { to }) => crate::export::run(&to, cli.world.as_deref()),
        Some(Cmd::Completions { .. } | Cmd::Man) => unreachable!("answered before the config"),
        Some(Cmd::Paths) => paths(cli.config.as_deref(), config),
        Some(Cmd::Assist(args)) => crate::assist::run(config, &args),
        Some(Cmd::Memory(args)) => crate::memorycli::run(config, &args),
    }
}

/// `--log` and `--mcap`, as given.
#[derive(Debug, Default)]
struct Logs {
    log: Option<PathBuf>,
    mcap: Option<PathBuf>,
}

fn tui(config: &Config, speed: f64, logs: Logs, durable: &Durability) -> Result<ExitCode> {
    anyhow::ensure!(
        console::has_terminal(),
        "the console needs a terminal; use `robobrain headless` or `robobrain demo` without one"
    );
    let session = robobrain_core::session::SessionOptions {
        pace: Pace::RealTime { speed },
        log: logs.log,
        mcap: logs.mcap,
        ..durable.options("console")?
    };
    let ended = console::run(config, session, console::color_allowed())?;
    Ok(ExitCode::from(ended.exit_status()))
}

/// `tui --connect URL`: the console on a run served elsewhere. The token
/// goes in a header: the URL's `?token=…` (warned about: `ps` shows it),
/// else `--token-file`'s, else ROBOBRAIN_TOKEN's.
fn attach(
    url: &str,
    token_file: Option<&Path>,
    ca: Option<PathBuf>,
    durable: &Durability,
) -> Result<ExitCode> {
    anyhow::ensure!(console::has_terminal(), "the console needs a terminal");
    anyhow::ensure!(
        !durable.record && !durable.resume && durable.robot.is_none(),
        "--connect attaches to a run `robobrain serve` assembled: --thread, --db, --resume and --robot belong to that command"
    );
    let in_url = url
        .split_once('?')
        .is_some_and(|(_, q)| q.split('&').any(|p| p.starts_with("token=")));
    if in_url {
        crate::flags::warn_visible(
            "the token in --connect's URL",
            "ROBOBRAIN_TOKEN=… or --token-file FILE",
        );
    }
    let options = console::transport::ConnectOptions {
        token: crate::flags::secret("--token", None, token_file, "ROBOBRAIN_TOKEN")?,
        ca,
    };
    let ended = console::attach(url, &options, console::color_allowed())?;
    Ok(ExitCode::from(ended.exit_status()))
}

/// Writes the HTML report of the run logged in `log`; the world is the one
/// the log's first snapshot names, unless `--world` says otherwise.
fn report(log: &Path, output: &Path, world: Option<&str>) -> Result<ExitCode> {
    let events = robobrain_core::eventlog::read_with(log, &crate::progress::Bar::on_stderr())?;
    anyhow::ensure!(
        !events.is_empty(),
        "{}: the log has no events",
        log.display()
    );
    let map = crate::export::map_of(&events, world, "the trajectory is drawn without walls");
    let html = robobrain_tui::report::render(&events, map.as_ref(), &log.display().to_string());
    std::fs::write(output, html).with_context(|| format!("cannot write {}", output.display()))?;
    eprintln!("wrote {} ({} events)", output.display(), events.len());
    Ok(ExitCode::SUCCESS)
}

fn mock_llm(script: &Path, listen: &str) -> Result<ExitCode> {
    let script = mock_script::load(script)?;
    let replies = script.replies.len();
    let server = MockServer::start(script, listen)?;
    println!(
        "mock-llm: {replies} scripted repl{} at {} (OPENAI_BASE_URL={}); Ctrl-C stops",
        if replies == 1 { "y" } else { "ies" },
        server.addr(),
        server.base_url()
    );
    server.wait();
    Ok(ExitCode::SUCCESS)
}

/// Defaults, then the config file, then the environment, then the flags.
fn load_config(cli: &Cli) -> Result<Config> {
    let mut config = Config::layered(cli.config.as_deref(), |name| std::env::var(name).ok())?;
    if let Some(world) = &cli.world {
        config.world.clone_from(world);
    }
    if let Some(seed) = cli.seed {
        config.seed = seed;
    }
    if let Some(thread) = &cli.thread {
        anyhow::ensure!(
            !thread.is_empty() && !thread.contains(char::is_whitespace),
            "--thread: expected an id without spaces, found {thread:?}"
        );
        config.thread_id = Some(thread.clone());
    }
    if let Some(db) = &cli.db {
        config.store.db = Some(db.clone());
    }
    Ok(config)
}

/// Applies `--world` and `--seed` over a scenario's own.
fn override_scenario(s: &mut Scenario, world: Option<&str>, seed: Option<u64>) {
    if let Some(w) = world {
        s.world = w.to_string();
        s.config.world = w.to_string();
    }
    if let Some(n) = seed {
        s.seed = n;
        s.config.seed = n;
    }
}

/// Prints each tick's events (throttled), writes them to the logs, and keeps
/// sim time at `speed` × wall time when paced.
struct Watcher {
    log: RunLog,
    log_error: Option<RecordError>,
    print: Option<(Style, Throttle)>,
    pace: Option<(Instant, f64)>,
}

impl Watcher {
    fn observe(&mut self, time: f64, events: &[Event]) {
        // A log that fails is closed; the others go on, and the first error stays.
        if let Err(e) = self.log.write_batch(events) {
            self.log_error.get_or_insert(e);
        }
        if let Some((style, throttle)) = &mut self.print {
            let mut out = std::io::stdout().lock();
            for event in events {
                if throttle.admit(event)
                    && let Some(line) = render(event, *style)
                {
                    // A closed stdout must not stop the run or its log.
                    let _ = writeln!(out, "{line}");
                }
            }
            let _ = out.flush();
        }
        if let Some((start, speed)) = self.pace {
            let due = Duration::from_secs_f64((time / speed).max(0.0));
            if let Some(wait) = due.checked_sub(start.elapsed()) {
                std::thread::sleep(wait);
            }
        }
    }

    /// Closes the logs; fails when one could not be written: a run must
    /// not go unrecorded.
    fn finish(self) -> Result<PathBuf> {
        let path = self.log.path().to_path_buf();
        let closed = self.log.finish();
        if let Some(e) = self.log_error {
            return Err(e).context("the event log could not be written");
        }
        closed.context("the event log could not be written")?;
        Ok(path)
    }
}

/// How the demo runs: its pace, its logs, whether it is recorded.
struct DemoOptions {
    fast: bool,
    speed: f64,
    logs: Logs,
    record: bool,
}

fn demo(
    world: Option<&str>,
    seed: Option<u64>,
    config: &Config,
    options: DemoOptions,
) -> Result<ExitCode> {
    let DemoOptions {
        fast,
        speed,
        logs,
        record,
    } = options;
    let mut s = scenario::parse(DEMO, Path::new(DEMO_FILE))?;
    override_scenario(&mut s, world, seed);
    let tid = config
        .thread_id
        .clone()
        .unwrap_or_else(|| fresh_thread_id("demo"));
    s.config.thread_id = Some(tid.clone());
    let world = scenario::world_of(&s)?;
    let engine = scenario::prepare(&s)?;
    let session = robobrain_core::session::SessionOptions {
        record,
        log: logs.log,
        mcap: logs.mcap,
        pace: Pace::RealTime { speed },
        brain: if s.brain == scenario::BrainChoice::Rule {
            BrainSource::Configured
        } else {
            BrainSource::Kept
        },
        ..robobrain_core::session::SessionOptions::new("demo")
    };
    // The configured MCP services' workers run on this runtime's thread,
    // beside the lockstep engine.
    let rt = crate::flags::async_runtime(1)?;
    let run = rt.block_on(Run::around(engine, world, config, session))?;
    let (engine, log) = run.into_lockstep();
    let style = Style::detect();
    println!(
        "{}",
        style.paint("1", &format!("robobrain demo — {}", s.description.trim()))
    );
    println!("event log: {}", log.path().display());
    if let Some(mcap) = log.mcap_path() {
        println!("MCAP recording: {}", mcap.display());
    }
    let mut watcher = Watcher {
        log,
        log_error: None,
        print: Some((style, Throttle::default())),
        pace: (!fast).then(|| (Instant::now(), speed)),
    };
    let result = scenario::run(&s, engine, &mut |t, evs| watcher.observe(t, evs));
    watcher.finish()?;
    if result.passed {
        println!("{}", style.paint("1;32", &result.report.summary()));
        Ok(ExitCode::SUCCESS)
    } else {
        println!("{}", result.report);
        Ok(ExitCode::from(1))
    }
}

fn scenarios(
    world: Option<&str>,
    seed: Option<u64>,
    files: &[PathBuf],
    log_dir: &Path,
    verbose: bool,
) -> Result<ExitCode> {
    // Parse and prepare every file before running any: a malformed file
    // means nothing starts.
    let mut prepared = Vec::new();
    let mut bad = 0;
    for file in files {
        let ready = scenario::load(file).and_then(|mut s| {
            override_scenario(&mut s, world, seed);
            s.config.thread_id = Some(s.config.thread_id.clone().unwrap_or_else(|| s.name.clone()));
            scenario::prepare(&s).map(|engine| (s, engine))
        });
        match ready {
            Ok(pair) => prepared.push(pair),
            Err(e) => {
                eprintln!("error: {e}");
                bad += 1;
            }
        }
    }
    if bad > 0 {
        eprintln!("{bad} scenario file(s) could not be loaded; nothing was run");
        return Ok(ExitCode::from(2));
    }
    let style = Style::detect();
    let mut failed = 0;
    for (s, engine) in prepared {
        let tid = s.config.thread_id.clone().unwrap_or_else(|| s.name.clone());
        let path = eventlog::default_path(log_dir, &tid);
        let mut watcher = Watcher {
            log: RunLog::new(EventLog::create(&path)?, None),
            log_error: None,
            print: verbose.then(|| (style, Throttle::default())),
            pace: None,
        };
        let result = scenario::run(&s, engine, &mut |t, evs| watcher.observe(t, evs));
        let path = watcher.finish()?;
        println!("{}", result.report);
        println!("event log: {}\n", path.display());
        if !result.passed {
            failed += 1;
        }
    }
    let total = files.len();
    let line = format!("{} of {total} scenario(s) passed", total - failed);
    if failed == 0 {
        println!("{}", style.paint("1;32", &line));
        Ok(ExitCode::SUCCESS)
    } else {
        println!("{}", style.paint("1;31", &line));
        Ok(ExitCode::from(1))
    }
}

/// The places rule in a few lines, for `--help`.
fn places_help(places: &Places) -> String {
    let user = places
        .user_config
        .as_ref()
        .map_or_else(|| "(no home folder)".into(), |p| p.display().to_string());
    format!(
        "Config: --config FILE, else ./{CONFIG_FILE}, else {user}.\n\
         Data (database, event logs, memory, logs): {} unless the config sets runs_dir.\n\
         `robobrain paths` shows what is in use.",
        places.data_dir.display()
    )
}

/// `robobrain paths`: the config file in use and where the data goes.
fn paths(named: Option<&Path>, config: &Config) -> Result<ExitCode> {
    let places = Places::from_env(|n| std::env::var(n).ok());
    let file = named
        .map(Path::to_path_buf)
        .or_else(|| places.config_file(Path::new(".")));
    let mut out = String::new();
    let mut row = |what: &str, path: String| {
        use std::fmt::Write as _;
        let _ = writeln!(out, "{what:<14}{path}");
    };
    row(
        "config file",
        file.map_or_else(
            || "none (built-in defaults)".into(),
            |f| f.display().to_string(),
        ),
    );
    if let Some(user) = &places.user_config {
        let missing = if user.is_file() { "" } else { " (not there)" };
        row("user config", format!("{}{missing}", user.display()));
    }
    row("data", config.runs_dir.display().to_string());
    row("database", config.db_path().display().to_string());
    row(
        "memory",
        config.memory.dir_in(&config.runs_dir).display().to_string(),
    );
    row(
        "console logs",
        config.runs_dir.join("logs").display().to_string(),
    );
    print_all(out.as_bytes())
}

/// `robobrain completions SHELL`: the completion script on stdout.
fn completions(shell: clap_complete::Shell) -> Result<ExitCode> {
    use clap::CommandFactory;
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "robobrain", &mut script);
    print_all(&script)
}

/// `robobrain man`: the man page, section 1, on stdout.
fn man() -> Result<ExitCode> {
    use clap::CommandFactory;
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut page)
        .context("cannot render the man page")?;
    print_all(&page)
}

/// Writes `bytes` to stdout; a reader that stopped early (`| head`) is fine.
fn print_all(bytes: &[u8]) -> Result<ExitCode> {
    match std::io::stdout().write_all(bytes) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(e).context("cannot write to stdout")
        }
        _ => Ok(ExitCode::SUCCESS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn global_flags_and_subcommands_parse() {
        let cli = Cli::try_parse_from([
            "robobrain",
            "scenario",
            "a.toml",
            "b.toml",
            "--seed",
            "3",
            "--log-dir",
            "out",
        ])
        .unwrap();
        assert_eq!(cli.seed, Some(3));
        match cli.command {
            Some(Cmd::Scenario {
                files,
                log_dir,
                verbose,
            }) => {
                assert_eq!(files.len(), 2);
                assert_eq!(log_dir, Some(PathBuf::from("out")));
                assert!(!verbose);
            }
            other => panic!("{other:?}"),
        }
        let cli = Cli::try_parse_from(["robobrain", "tui", "--speed", "5"]).unwrap();
        assert!(matches!(cli.command, Some(Cmd::Tui { speed, .. }) if speed == 5.0));
        let cli = Cli::try_parse_from(["robobrain"]).unwrap();
        assert!(cli.command.is_none());
        let cli = Cli::try_parse_from(["robobrain", "demo", "--fast"]).unwrap();
        assert!(matches!(cli.command, Some(Cmd::Demo { fast: true, .. })));
        assert!(Cli::try_parse_from(["robobrain", "scenario"]).is_err());
    }

    #[test]
    fn the_embedded_demo_parses() {
        let s = scenario::parse(DEMO, Path::new(DEMO_FILE)).unwrap();
        assert!(!s.expects.is_empty());
    }
}
