//! One run, assembled in one place (DESIGN §12, "One run, many faces"):
//! a [`Config`] and a few [`SessionOptions`] become an engine with the brain
//! the config asks for (a model with the rule brain standing in, or the
//! rule brain), its memory (or none), the configured MCP services' tools
//! as skills, the durable store when asked for, the robot the URL names,
//! and the run's logs (the JSONL log, and an MCAP recording for Foxglove
//! when asked: [`RunLog`]) — and, started, a [`Session`]: the running
//! [`Runtime`] with its recorder. Every face (console, desktop app, web
//! page, headless, demo, MCP server) gets its run here and only translates
//! it; what a run is made of is one [`RunInfo`], announced in a `run`
//! event and carried by every snapshot and `hello`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use robobrain_core::config::Config;
//! use robobrain_core::protocol::{Command, Origin};
//! use robobrain_core::session::{Session, SessionOptions};
//! let mut session = Session::open(&Config::default(), SessionOptions::new("console")).await?;
//! let mut events = session.take_events();
//! session.runtime().send(Command::Say { text: "巡逻".into() }, Origin::console()).await?;
//! while let Ok(event) = events.recv().await {
//!     println!("{}", event.to_json());
//! }
//! session.stop().await?;
//! # Ok(()) }
//! ```
//!
//! - `robot.rs`: [`RobotUrl`], which link a run drives (`sim:`, `tcp://…`, `ros2://…`).
//! - `recorder.rs`: the task that writes every event to the logs and keeps the recent ones.
//! - `runlog.rs`: [`RunLog`], the JSONL log and the MCAP recording every writer of events writes to.

pub mod recorder;
pub mod robot;
pub mod runlog;

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use thiserror::Error;
use tokio::sync::broadcast;

pub use recorder::{Recent, RecordError, Recorder};
pub use robot::RobotUrl;
pub use runlog::RunLog;

use crate::brain::BrainError;
use crate::config::Config;
use crate::devices::mqtt::{Discovery, HaPublisher, MqttConfig, MqttError};
use crate::engine::{Engine, EngineError};
use crate::eventlog::{self, EventLog, EventLogError};
use crate::fleet::link::RunFeed;
use crate::fleet::{FleetLink, FleetSettings};
use crate::link::LinkError;
use crate::mapview::MapView;
use crate::mcap::{McapError, McapLog};
use crate::memory::{MemoryError, MemoryHandle};
use crate::protocol::run::{BrainChoice, BrainInfo, MemoryInfo, MemoryMode};
use crate::protocol::{Command, Event, Hello, Origin, Role, RunInfo, SkillView};
use crate::runtime::{Pace, Runtime, RuntimeError};
use crate::source::SourceError;
use crate::store::{Store, StoreError};
use crate::world::World;

/// How long [`Session::stop`] waits for the kernel, then for the log.
const STOP_WAIT: Duration = Duration::from_secs(2);

/// Why a run could not be assembled or did not end cleanly.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SessionError {
    /// `--speed` is not a positive number.
    #[error("--speed: expected a positive number of sim seconds per wall second, found {0}")]
    Speed(f64),
    /// The world could not be loaded.
    #[error(transparent)]
    World(#[from] SourceError),
    /// The robot could not be reached.
    #[error(transparent)]
    Robot(#[from] LinkError),
    /// The engine could not be built.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The model brain could not be built.
    #[error("the model brain: {0}")]
    Brain(#[from] BrainError),
    /// The memory could not be started.
    #[error("memory: {0}")]
    Memory(#[from] MemoryError),
    /// The thread database refused the run (the store's error names the
    /// file, so it is said once).
    #[error(transparent)]
    Store(StoreError),
    /// The thread database took the run but could not record its start
    /// (`why` is the store's error, which names the file).
    #[error("{why}")]
    Halted {
        /// The database file.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// The event log could not be created.
    #[error(transparent)]
    Log(#[from] EventLogError),
    /// The MCAP recording could not be created.
    #[error("the MCAP recording: {0}")]
    Mcap(#[from] McapError),
    /// The run's log is not the whole run.
    #[error("the event log could not be written: {0}")]
    Unrecorded(#[from] RecordError),
    /// The home's MQTT broker settings could not be used (a password or CA
    /// file that cannot be read).
    #[error(transparent)]
    Mqtt(#[from] MqttError),
    /// The fleet link (`[fleet]`) could not be set up.
    #[error(transparent)]
    Fleet(#[from] crate::fleet::FleetError),
    /// A `say` could not be given to the brain.
    #[error("cannot say {text:?}: {source}")]
    Say {
        /// What was to be said.
        text: String,
        /// Why not.
        source: RuntimeError,
    },
}

/// Who chooses a run's brain.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BrainSource {
    /// The config: a model when an endpoint is configured, else the rule brain.
    #[default]
    Configured,
    /// Whoever built the engine ([`Run::around`] a scenario that scripts its brain).
    Kept,
}

/// What a face asks of a run beside the config.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// The face's name: fresh thread ids are `NAME-<unix seconds>`.
    pub face: &'static str,
    /// The world, when not the config's (a scenario's, edited by its `[start]`).
    pub world: Option<World>,
    /// The robot (`--robot`); `None`: the config's `[robot] url`, else the simulator.
    pub robot: Option<RobotUrl>,
    /// Continue the thread from its last checkpoint (`--resume`).
    pub resume: bool,
    /// Record the run in the thread database (`--thread`, `--db`).
    pub record: bool,
    /// The event log (default `<runs_dir>/<thread>.jsonl`).
    pub log: Option<PathBuf>,
    /// Also record the run as an MCAP file for Foxglove here (`--mcap`).
    pub mcap: Option<PathBuf>,
    /// How fast sim time runs once started.
    pub pace: Pace,
    /// Said at start, in order.
    pub say: Vec<String>,
    /// Events kept in memory for faces that look back (a page that
    /// reconnects, MCP's `events` resource); 0 keeps none.
    pub keep_recent: usize,
    /// Who chooses the brain.
    pub brain: BrainSource,
}

impl SessionOptions {
    /// The defaults for face `face`: the config's world on the simulator,
    /// not recorded, the default log and no MCAP, real time, nothing said,
    /// nothing kept.
    pub fn new(face: &'static str) -> Self {
        Self {
            face,
            world: None,
            robot: None,
            resume: false,
            record: false,
            log: None,
            mcap: None,
            pace: Pace::RealTime { speed: 1.0 },
            say: Vec::new(),
            keep_recent: 0,
            brain: BrainSource::Configured,
        }
    }
}

/// A run assembled and not yet started: the engine with everything
/// attached. Start it ([`Run::start`]) for a [`Session`], or take its
/// engine to tick yourself in lockstep ([`Run::into_lockstep`]: headless
/// `--fast`, the demo). Before either, a face may only read the run and
/// add a skill of its own ([`Run::register_skill`]).
pub struct Run {
    /// The engine, the run's own until it starts or is taken.
    engine: Engine,
    /// Its world.
    pub world: World,
    /// The run's thread id.
    pub thread_id: String,
    /// What it is made of.
    pub info: RunInfo,
    /// The run's logs, created, empty: the JSONL log, and the MCAP
    /// recording when the options ask for one.
    pub log: RunLog,
    /// Where the robot is published to Home Assistant once started
    /// (`[home] mqtt` with `discovery`).
    home: Option<(MqttConfig, Discovery)>,
    fleet: Option<FleetSettings>,
    options: SessionOptions,
}

impl Run {
    /// Assembles a run of `config` as `options` ask: the world, the robot,
    /// the engine, then [`Run::around`] it. Call it inside a tokio runtime
    /// (the MCP services' workers run on it).
    pub async fn assemble(config: &Config, options: SessionOptions) -> Result<Self, SessionError> {
        // Boxed: assembling holds the whole run (engine, store, links) across
        // awaits; a caller's future then holds a pointer, not all of it.
        Box::pin(Self::assemble_boxed(config, options)).await
    }

    async fn assemble_boxed(
        config: &Config,
        options: SessionOptions,
    ) -> Result<Self, SessionError> {
        check_pace(options.pace)?;
        // Boxed: the config lives across the await below, and the future stays small.
        let mut config = Box::new(config.clone());
        let thread_id = config
            .thread_id
            .clone()
            .unwrap_or_else(|| fresh_thread_id(options.face));
        config.thread_id = Some(thread_id);
        let world = match &options.world {
            Some(world) => world.clone(),
            None => World::resolve(&config.world)?,
        };
        let robot = RobotUrl::chosen(options.robot.as_ref(), &config)?;
        let link = robot.connect(&config, &world)?;
        let engine = Engine::new(&config, world.clone(), link)?;
        let options = SessionOptions {
            robot: Some(robot),
            ..options
        };
        Self::around(engine, world, &config, options).await
    }

    /// Fits out an engine built elsewhere (the demo's, from its scenario) as
    /// `config` and `options` ask: the store (recording, or resuming), the
    /// brain, the memory, the MCP services, the `run` event, the logs.
    pub async fn around(
        mut engine: Engine,
        world: World,
        config: &Config,
        options: SessionOptions,
    ) -> Result<Self, SessionError> {
        check_pace(options.pace)?;
        let thread_id = engine.thread_id().to_string();
        let db = if options.record || options.resume {
            Some(record(&mut engine, config, options.resume)?)
        } else {
            None
        };
        let brain = match options.brain {
            BrainSource::Configured => use_configured_brain(&mut engine, config)?,
            BrainSource::Kept => BrainInfo {
                kind: BrainChoice::Scripted,
                model: None,
                endpoint: None,
            },
        };
        let memory = attach_memory(&mut engine, config, &thread_id)?;
        let services = crate::mcp::client::connect_all(&config.mcp, engine.registry_mut()).await;
        for service in &services {
            match &service.error {
                Some(e) => engine.log("warn", &format!("MCP service `{}` {e}", service.name)),
                None => engine.log(
                    "info",
                    &format!(
                        "MCP service `{}`: {} tools registered as skills mcp.{}.*",
                        service.name, service.tools, service.name
                    ),
                ),
            }
        }
        let home = home_discovery(config)?;
        if let Some((mqtt, discovery)) = &home {
            engine.log(
                "info",
                &format!(
                    "Home Assistant discovery: node `{}` under `{}/` on the broker at {}",
                    discovery.node_id,
                    discovery.prefix,
                    mqtt.broker()
                ),
            );
        }
        let fleet = FleetSettings::from_config(&config.fleet)?;
        if let Some(fleet) = &fleet {
            engine.log(
                "info",
                &format!(
                    "fleet: robot `{}` on the broker at {} (robobrain/{}/…, uagv/v2/{}/{}/…)",
                    fleet.robot_id,
                    fleet.mqtt.broker(),
                    fleet.robot_id,
                    fleet.manufacturer,
                    fleet.robot_id
                ),
            );
        }
        let info = RunInfo {
            brain,
            memory,
            services,
            robot: options.robot.clone().unwrap_or_default().to_string(),
            db: db.map(|p| p.display().to_string()),
        };
        engine.set_run_info(info.clone());
        let path = options
            .log
            .clone()
            .unwrap_or_else(|| eventlog::default_path(&config.runs_dir, &thread_id));
        let jsonl = EventLog::create(&path)?;
        let mcap = match &options.mcap {
            Some(file) => Some(McapLog::create(file, Some(MapView::of(&world)))?),
            None => None,
        };
        Ok(Self {
            engine,
            world,
            thread_id,
            info,
            log: RunLog::new(jsonl, mcap),
            home,
            fleet,
            options,
        })
    }

    /// Adds a face's own skill before the run starts (MCP's `robot_status`).
    pub fn register_skill(
        &mut self,
        skill: Box<dyn crate::skills::Skill>,
    ) -> Result<(), crate::skills::SkillError> {
        self.engine
            .registry_mut()
            .register(skill, &serde_json::Value::Null)
    }

    /// The specs of the run's skills (an MCP server's tool list).
    pub fn skill_specs(&self) -> Vec<crate::skills::SkillSpec> {
        self.engine.registry().specs().cloned().collect()
    }

    /// The run's sim time (a resumed thread's is where it was).
    pub fn time(&self) -> f64 {
        self.engine.time()
    }

    /// The run as a face's first paint needs it.
    pub fn snapshot(&self) -> crate::protocol::Snapshot {
        self.engine.snapshot()
    }

    /// The skills of the run, as a face's approval editor needs them.
    pub fn skills(&mut self) -> Vec<SkillView> {
        self.skill_specs().iter().map(SkillView::from).collect()
    }

    /// For a face that ticks the engine itself: what was to be said at
    /// start is given to it now.
    pub fn into_lockstep(mut self) -> (Engine, RunLog) {
        for text in std::mem::take(&mut self.options.say) {
            self.engine
                .submit(Command::Say { text }, Origin::command_line());
        }
        (self.engine, self.log)
    }

    /// Starts the run: the kernel at the options' pace, the recorder writing
    /// every event to the logs, and what was to be said sent. Call it inside
    /// a tokio runtime (the recorder runs on it).
    pub async fn start(mut self) -> Result<Session, SessionError> {
        let skills = self.skills();
        let (runtime, (events, logged)) =
            Runtime::start_subscribed_twice(self.engine, self.options.pace);
        let log_path = self.log.path().to_path_buf();
        let mcap_path = self.log.mcap_path().map(Path::to_path_buf);
        let recorder = Recorder::start(self.options.keep_recent, logged, Some(self.log));
        let home = self.home.map(|(mqtt, discovery)| {
            let sender = runtime.sender();
            HaPublisher::start(
                &mqtt,
                discovery,
                runtime.snapshots(),
                Box::new(move |command, origin| {
                    sender.send(command, origin).map_err(|e| e.to_string())
                }),
            )
        });
        for text in std::mem::take(&mut self.options.say) {
            runtime
                .send(Command::Say { text: text.clone() }, Origin::command_line())
                .await
                .map_err(|source| SessionError::Say { text, source })?;
        }
        let mut session = Session {
            runtime,
            events: Some(events),
            recorder,
            map: MapView::of(&self.world),
            world: self.world,
            thread_id: self.thread_id,
            info: self.info,
            skills,
            log_path,
            mcap_path,
            home,
            fleet: None,
        };
        if let Some(settings) = &self.fleet {
            let sender = session.runtime.sender();
            let feed = RunFeed {
                hello: session.hello(Role::Operator),
                snapshots: session.runtime.snapshots(),
                events: session.runtime.subscribe(),
                commands: Box::new(move |command, origin| {
                    sender.send(command, origin).map_err(|e| e.to_string())
                }),
            };
            session.fleet = Some(FleetLink::start(settings, session.world.clone(), feed));
        }
        Ok(session)
    }
}

/// A started run: the runtime every face talks to, and what it is made of.
pub struct Session {
    runtime: Runtime,
    events: Option<broadcast::Receiver<Event>>,
    recorder: Recorder,
    world: World,
    map: MapView,
    thread_id: String,
    info: RunInfo,
    skills: Vec<SkillView>,
    log_path: PathBuf,
    mcap_path: Option<PathBuf>,
    home: Option<HaPublisher>,
    /// The fleet link, with `[fleet] broker`.
    fleet: Option<FleetLink>,
}

impl Session {
    /// Assembles and starts a run ([`Run::assemble`], then [`Run::start`]).
    pub async fn open(config: &Config, options: SessionOptions) -> Result<Self, SessionError> {
        // Boxed: the run being assembled is large, the caller's future stays small.
        let run = Box::pin(Run::assemble(config, options)).await?;
        Box::pin(run.start()).await
    }

    /// The running brain: commands in, events out, snapshots.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Every event from the first (subscribed before the first tick); the
    /// first call takes that subscription, later ones subscribe from now on.
    pub fn take_events(&mut self) -> broadcast::Receiver<Event> {
        self.events
            .take()
            .unwrap_or_else(|| self.runtime.subscribe())
    }

    /// The first frame a face gets over a wire.
    pub fn hello(&self, role: Role) -> Hello {
        Hello {
            role,
            thread_id: self.thread_id.clone(),
            map: self.map.clone(),
            world: self.world.clone(),
            skills: self.skills.clone(),
            run: self.info.clone(),
        }
    }

    /// The run's skills, as its `hello` announces them.
    pub fn skills(&self) -> &[SkillView] {
        &self.skills
    }

    /// The run's world.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// The map of the run's world.
    pub fn map(&self) -> &MapView {
        &self.map
    }

    /// The run's thread id.
    pub fn thread_id(&self) -> &str {
        &self.thread_id
    }

    /// What the run is made of.
    pub fn info(&self) -> &RunInfo {
        &self.info
    }

    /// The recent events kept ([`SessionOptions::keep_recent`]).
    pub fn recent(&self) -> &Recent {
        self.recorder.recent()
    }

    /// The run's metrics in Prometheus' text format
    /// ([`metrics::render`](crate::metrics::render)): the events counted by
    /// the recorder, the kernel's tick times, the gauges of the last snapshot.
    pub fn metrics(&self) -> String {
        let events = self.recorder.counts();
        let ticks = self.runtime.tick_histogram();
        let snapshot = self.runtime.snapshot();
        crate::metrics::render(&crate::metrics::Scrape {
            events: &events,
            ticks: &ticks,
            snapshot: &snapshot,
            kernel_running: !self.runtime.is_finished(),
        })
    }

    /// Whether the run is alive: the kernel thread running and the robot link up.
    pub fn health(&self) -> crate::metrics::Health {
        crate::metrics::Health::of(&self.runtime.snapshot(), !self.runtime.is_finished())
    }

    /// Where the event log is.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// Where the MCAP recording is, when the run is recorded as MCAP.
    pub fn mcap_path(&self) -> Option<&Path> {
        self.mcap_path.as_deref()
    }

    /// Stops the kernel (it brings the robot to rest and closes the
    /// thread), waits for the last events to reach the logs (the MCAP
    /// recording is then closed), and says whether they hold the whole run.
    pub async fn stop(&self) -> Result<(), SessionError> {
        // The kernel brings the robot to rest and closes the thread first.
        self.runtime.stop().await;
        if let Some(home) = &self.home {
            home.stop().await;
        }
        if let Some(fleet) = &self.fleet {
            fleet.stop().await;
        }
        Ok(self.recorder.finished(STOP_WAIT).await?)
    }
}

fn check_pace(pace: Pace) -> Result<(), SessionError> {
    match pace {
        Pace::RealTime { speed } if !(speed.is_finite() && speed > 0.0) => {
            Err(SessionError::Speed(speed))
        }
        _ => Ok(()),
    }
}

/// The broker and the robot's discovery when `[home] mqtt` is set and
/// `discovery` is on; the password and CA are read now.
fn home_discovery(config: &Config) -> Result<Option<(MqttConfig, Discovery)>, SessionError> {
    if !config.home.discovery {
        return Ok(None);
    }
    Ok(MqttConfig::for_discovery(&config.home)?.map(|mqtt| {
        let discovery = Discovery::new(&config.home.discovery_prefix, &config.home.node_id)
            .with_buttons(&config.home.buttons);
        (mqtt, discovery)
    }))
}

/// Gives `engine` the brain `config` asks for (the model brain when an
/// endpoint is configured, else the rule brain) and logs which, and why.
fn use_configured_brain(engine: &mut Engine, config: &Config) -> Result<BrainInfo, SessionError> {
    let (brain, why) = crate::brain::from_config(config)?;
    engine.set_brain(brain);
    engine.log("info", &why);
    Ok(if config.llm.is_configured() {
        BrainInfo {
            kind: BrainChoice::Model,
            model: Some(config.llm.decision_model.clone()),
            endpoint: Some(config.llm.effective_base_url().to_string()),
        }
    } else {
        BrainInfo::default()
    })
}

/// Gives the run its memory when `[memory] enabled`: what is said is
/// remembered under the thread id, and the model brain's input gets the
/// memory's context. The memory opens on its own thread; how that went
/// arrives as `log` events. Without the embedding model it runs on BM25
/// alone, and says so.
fn attach_memory(
    engine: &mut Engine,
    config: &Config,
    thread_id: &str,
) -> Result<MemoryInfo, SessionError> {
    if !config.memory.enabled {
        return Ok(MemoryInfo::default());
    }
    let memory = MemoryHandle::spawn(&config.memory, &config.runs_dir, &config.llm, thread_id)?;
    engine.set_memory(memory);
    let missing = config.memory.model_missing();
    let mode = match (config.memory.mode, &missing) {
        (_, Some(_)) | (crate::memory::Mode::Bm25, None) => MemoryMode::Bm25,
        (crate::memory::Mode::Dense, None) => MemoryMode::Dense,
        (crate::memory::Mode::Hybrid, None) => MemoryMode::Hybrid,
    };
    Ok(MemoryInfo {
        mode,
        note: missing.map(|why| format!("{why}: BM25 alone")),
    })
}

/// Records `engine`'s thread in the database `config` names (resuming it
/// from its last checkpoint when `resume`); the database's path. Says on
/// stderr which thread is recorded where.
fn record(engine: &mut Engine, config: &Config, resume: bool) -> Result<PathBuf, SessionError> {
    let path = config.db_path();
    let store_err = SessionError::Store;
    let store = Store::open(&path, config.store.synchronous).map_err(store_err)?;
    engine
        .attach_store(store, &config.store, resume)
        .map_err(store_err)?;
    // The first commit is made while attaching: a database another process
    // holds (or a full disk) stops the run here, before anything moves.
    if let Some(why) = engine.halted() {
        return Err(SessionError::Halted {
            path,
            why: why.to_string(),
        });
    }
    eprintln!(
        "thread {}: {} in {}",
        engine.thread_id(),
        if resume { "resumed" } else { "recording" },
        path.display()
    );
    Ok(path)
}

/// A fresh thread id: `prefix-<unix seconds>`.
pub fn fresh_thread_id(prefix: &str) -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("{prefix}-{secs}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::McpServiceConfig;
    use crate::protocol::EventKind;
    use crate::protocol::run::ServiceInfo;

    /// A config whose files all go to a fresh folder; memory off unless asked.
    fn config(name: &str) -> Config {
        let dir = std::env::temp_dir().join(format!("rb-session-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut config = Config {
            runs_dir: dir,
            ..Config::default()
        };
        config.memory.enabled = false;
        config.speech.voice = crate::voice::VoiceChoice::Text;
        config
    }

    #[tokio::test]
    async fn a_run_says_what_it_is_made_of_in_its_run_event_and_snapshot() {
        let mut config = config("plain");
        config.memory.enabled = true;
        config.memory.model_dir = Some(config.runs_dir.join("no-model"));
        config.mcp.services.push(McpServiceConfig::command(
            "ghost",
            "/nonexistent/ghost-mcp",
            &[],
        ));
        let mut run = Run::assemble(&config, SessionOptions::new("test"))
            .await
            .unwrap();
        assert!(run.thread_id.starts_with("test-"), "{}", run.thread_id);
        assert_eq!(run.info.brain, BrainInfo::default());
        assert_eq!(run.info.memory.mode, MemoryMode::Bm25);
        assert!(
            run.info
                .memory
                .note
                .as_deref()
                .unwrap()
                .contains("no embedding model"),
            "{:?}",
            run.info.memory
        );
        assert_eq!(run.info.services.len(), 1);
        let ghost: &ServiceInfo = &run.info.services[0];
        assert!(
            ghost.error.as_deref().unwrap().starts_with("cannot start"),
            "{ghost:?}"
        );
        assert_eq!(run.info.robot, "sim:");
        assert_eq!(
            run.info.summary(),
            "brain rules · memory bm25 · mcp ghost(failed)"
        );
        assert_eq!(run.snapshot().run.as_ref(), Some(&run.info));
        let mut events = Vec::new();
        run.engine.tick(&mut events);
        let kinds: Vec<&str> = events.iter().map(|e| e.kind.name()).collect();
        assert_eq!(kinds[0], "snapshot", "{kinds:?}");
        let warned = events.iter().any(|e| {
            matches!(&e.kind, EventKind::Log { level, message }
                if level == "warn" && message.starts_with("MCP service `ghost` cannot start"))
        });
        assert!(warned, "{kinds:?}");
        let announced = events.iter().find_map(|e| match &e.kind {
            EventKind::Run { run } => Some(run.clone()),
            _ => None,
        });
        assert_eq!(announced.as_ref(), Some(&run.info));
        assert!(run.skills().iter().any(|s| s.name == "navigate_to"));
    }

    #[tokio::test]
    async fn a_configured_model_is_the_brain_and_a_bad_pace_is_refused() {
        let mut config = config("model");
        config.llm.base_url = Some("http://127.0.0.1:9/v1".into());
        config.llm.api_key = Some(crate::llm::Secret::new("k"));
        config.llm.decision_model = "qwen-max".into();
        let run = Run::assemble(&config, SessionOptions::new("test"))
            .await
            .unwrap();
        assert_eq!(run.info.brain.kind, BrainChoice::Model);
        assert_eq!(run.info.brain_label(), "model qwen-max");
        assert_eq!(
            run.info.brain.endpoint.as_deref(),
            Some("http://127.0.0.1:9/v1")
        );
        let slow = SessionOptions {
            pace: Pace::RealTime { speed: 0.0 },
            ..SessionOptions::new("test")
        };
        let e = Run::assemble(&config, slow).await.err().unwrap();
        assert!(matches!(e, SessionError::Speed(_)), "{e}");
        assert!(
            e.to_string()
                .starts_with("--speed: expected a positive number"),
            "{e}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_started_run_logs_every_event_and_says_things_said_at_start() {
        let config = config("started");
        let options = SessionOptions {
            pace: Pace::RealTime { speed: 50.0 },
            say: vec!["去厨房".into()],
            keep_recent: 100,
            ..SessionOptions::new("test")
        };
        let mut session = Session::open(&config, options).await.unwrap();
        let mut events = session.take_events();
        let heard = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                if let Ok(e) = events.recv().await
                    && e.kind.name() == "intent"
                {
                    return e;
                }
            }
        })
        .await
        .unwrap();
        assert!(heard.to_json()["utterance"] == "去厨房", "{heard:?}");
        let hello = session.hello(Role::Viewer);
        assert_eq!(hello.run, *session.info());
        assert_eq!(hello.map.name, "apartment");
        session.stop().await.unwrap();
        // The recorder runs beside the face: once stopped, it has seen all.
        assert!(!session.recent().all().is_empty());
        let logged = crate::eventlog::read(session.log_path()).unwrap();
        assert_eq!(logged.first().map(|e| e.kind.name()), Some("snapshot"));
        assert!(logged.iter().any(|e| e.kind.name() == "run"));
        assert!(
            logged.iter().any(|e| e.seq == heard.seq),
            "the log has what a face saw"
        );
        let seqs: Vec<u64> = logged.iter().map(|e| e.seq).collect();
        assert!(
            seqs.windows(2).all(|w| w[1] == w[0] + 1),
            "no gaps: {seqs:?}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_run_asked_for_mcap_records_every_event_of_its_log() {
        let config = config("mcap");
        let file = config.runs_dir.join("run.mcap");
        let options = SessionOptions {
            pace: Pace::RealTime { speed: 50.0 },
            say: vec!["去厨房".into()],
            mcap: Some(file.clone()),
            ..SessionOptions::new("test")
        };
        let mut session = Session::open(&config, options).await.unwrap();
        assert_eq!(session.mcap_path(), Some(file.as_path()));
        let mut events = session.take_events();
        tokio::time::timeout(Duration::from_secs(10), async {
            while let Ok(e) = events.recv().await {
                if e.kind.name() == "telemetry" {
                    break;
                }
            }
        })
        .await
        .unwrap();
        session.stop().await.unwrap();
        let logged = crate::eventlog::read(session.log_path()).unwrap();
        // Stopped, the recording is closed: its summary counts every message.
        let bytes = std::fs::read(&file).unwrap();
        let summary = ::mcap::Summary::read(&bytes).unwrap().unwrap();
        let stats = summary.stats.unwrap();
        let on = |prefix: &str| -> u64 {
            stats
                .channel_message_counts
                .iter()
                .filter(|(id, _)| summary.channels[id].topic.starts_with(prefix))
                .map(|(_, n)| n)
                .sum()
        };
        assert_eq!(on("/events/"), logged.len() as u64);
        let telemetry = logged
            .iter()
            .filter(|e| e.kind.name() == "telemetry")
            .count();
        assert!(telemetry > 0);
        assert_eq!(on("/robot/pose"), telemetry as u64);
        assert_eq!(on("/map"), 1);
    }
}
