//! The assist runner's main assistant: the whole engine, as a person would
//! reach it. The home's device world goes into a fresh simulated engine's
//! home, the sentence is said (`Command::Say`), the engine ticks — the home
//! fast path's rule intents, the policy, the tool layer, the kernel's
//! approvals — and every approval it asks for is approved
//! (`Command::Approve`) and counted, until the engine settles. A device
//! that changes before the first approval, in a turn that asked for one,
//! is reported: the gate must hold the call until the answer.
//!
//! The engine runs on a world of its own ([`ASSIST_WORLD`]: one room, the
//! robot's dock, which no Home Assistant home has), not on the built-in
//! apartment: "here" is only what the dataset says (a case's
//! `context_device`), never the room a simulated robot happens to stand in,
//! and the robot's own room names ("go to the living room") do not shadow
//! the home's.

use serde_json::{Value, json};

use crate::assist::runner::{Assistant, Turn};
use crate::config::Config;
use crate::devices::{DeviceWorld, SimBackend};
use crate::engine::Engine;
use crate::hci::semantic::Semantic;
use crate::hci::{self, Home};
use crate::protocol::{ApprovalStatus, Command, EventKind, Origin, SpeechTrack};
use crate::world::World;

/// Ticks a sentence may take before the runner gives up on it.
const MAX_TICKS: usize = 5_000;

/// The world the assist engine's robot lives in: a 2 m square whose one
/// zone (`robobrain_dock`, home and charger) is where it starts, so the
/// robot's position names no room of a dataset's home (docs/world.md).
pub const ASSIST_WORLD: &str = r#"name = "assist"
resolution = 0.25
home_zone = "robobrain_dock"
charger_zone = "robobrain_dock"
start = { x = 1.0, y = 1.0, heading_deg = 0 }
dock = { x = 1.0, y = 1.0, heading_deg = 0 }
map = """
##########
#........#
#........#
#........#
#........#
#........#
#........#
#........#
#........#
##########
"""

[[zones]]
name = "robobrain_dock"
rect = [0.0, 0.0, 2.5, 2.5]
goal = [1.0, 1.0]
"#;

/// Which understander took a turn, read off its `intent` event: the name
/// the event gives (`understander` in its args), else what the event
/// shows — a model's turn is not `processed_locally`; a home turn whose
/// args carry what Home Assistant's grammar matched was the grammar's;
/// another home turn the home's rules (the device-command parser among
/// them); anything else the robot's own grammar or rules.
pub fn understander_of(intent: &str, args: &Value, processed_locally: bool) -> String {
    if let Some(named) = args.get("understander").and_then(Value::as_str) {
        return named.to_string();
    }
    let home = intent.starts_with("home_")
        || matches!(intent, "scene" | "clarify" | "cannot" | "answer" | "timer");
    match (processed_locally, home, args.get("grammar").is_some()) {
        (false, ..) => "model",
        (true, true, true) => "Home Assistant grammar",
        (true, true, false) => "home rules",
        (true, false, _) => "robot",
    }
    .to_string()
}

/// Drives sentences through a simulated engine (rule brain, no model).
#[derive(Debug)]
pub struct EngineAssistant {
    config: Config,
    /// Where the request comes from (a case's `context_device`'s area).
    here: Option<(String, String)>,
    /// The semantic fallback, when asked for ([`Self::with_semantic`]).
    semantic: Option<SemanticIndexes>,
}

/// The semantic fallback for a batch run: the sentence model's folder and
/// one index per home, built on the home's first sentence (on this thread,
/// before its latency is timed) and kept for the home's other sentences.
#[derive(Debug)]
struct SemanticIndexes {
    model_dir: std::path::PathBuf,
    by_home: std::collections::HashMap<String, Semantic>,
}

impl SemanticIndexes {
    /// Gives `home` its index: the one built for a home with the same name,
    /// room names and device names, or a new one.
    fn attach(&mut self, home: &mut Home) {
        let world = &home.devices;
        let key = std::iter::once(world.name())
            .chain(world.rooms().iter().map(|r| r.name.as_str()))
            .chain(world.devices().iter().map(|d| d.name.as_str()))
            .collect::<Vec<_>>()
            .join("\n");
        if let Some(index) = self.by_home.get(&key) {
            home.semantic = Some(index.clone());
            return;
        }
        home.enable_semantic(self.model_dir.clone(), true);
        if let Some(index) = &home.semantic {
            self.by_home.insert(key, index.clone());
        }
    }
}

impl Default for EngineAssistant {
    fn default() -> Self {
        let mut config = Config::default();
        // Midday with someone home: only the policy's fixed rules (locks,
        // gas, alarms, several devices, high power) ask for confirmation,
        // whatever the hour the benchmark runs at.
        config.home.hour = Some(12.0);
        // A batch run is text only: no speech is synthesised.
        config.speech.voice = crate::voice::VoiceChoice::Text;
        Self {
            config,
            here: None,
            semantic: None,
        }
    }
}

impl EngineAssistant {
    /// Home Assistant's grammar as `home` has it (`[home] grammar` and
    /// `intents`): `grammar = false` measures robobrain's rules alone.
    #[must_use]
    pub fn with_grammar(home: &crate::config::HomeConfig) -> Self {
        let mut me = Self::default();
        me.config.home.grammar = home.grammar;
        me.config.home.intents.clone_from(&home.intents);
        me
    }

    /// With the semantic fallback (`[home] semantic`), the sentence model
    /// in `model_dir`: each home's index is built once, before its first
    /// sentence is timed.
    #[must_use]
    pub fn with_semantic(mut self, model_dir: std::path::PathBuf) -> Self {
        self.semantic = Some(SemanticIndexes {
            model_dir,
            by_home: std::collections::HashMap::new(),
        });
        self
    }
}

fn empty_world() -> DeviceWorld {
    // A world with no devices cannot be inconsistent.
    DeviceWorld::new("none", Vec::new(), Vec::new(), Box::new(SimBackend))
        .unwrap_or_else(|_| unreachable!("an empty world is valid"))
}

impl EngineAssistant {
    /// A fresh engine on [`ASSIST_WORLD`], or why not.
    fn engine(&self) -> Result<Engine, String> {
        let place = World::from_toml_str(ASSIST_WORLD, std::path::Path::new("<assist world>"))
            .map_err(|e| format!("the assist world is invalid: {e}"))?;
        Engine::simulated(&self.config, place).map_err(|e| format!("the engine did not start: {e}"))
    }

    /// Makes `world` `engine`'s home, with the case's "here" (and the
    /// semantic fallback's index, when on), or says why the home refused it.
    fn install_home(&mut self, engine: &Engine, world: DeviceWorld) -> Result<(), String> {
        let mut home = Home::new(world, Vec::new(), &self.config.home, "assist")
            .map_err(|e| format!("the home was refused: {e}"))?;
        home.context_area.clone_from(&self.here);
        if let Some(semantic) = &mut self.semantic {
            semantic.attach(&mut home);
        }
        *hci::lock(engine.home()) = home;
        Ok(())
    }
}

impl Assistant for EngineAssistant {
    fn name(&self) -> &'static str {
        "engine"
    }

    fn set_here(&mut self, here: Option<(String, String)>) {
        self.here = here;
    }

    fn handle(&mut self, sentence: &str, world: DeviceWorld) -> (DeviceWorld, Turn) {
        let mut turn = Turn::default();
        let mut engine = match self.engine() {
            Ok(engine) => engine,
            Err(why) => {
                turn.note = Some(why);
                return (world, turn);
            }
        };
        if let Err(why) = self.install_home(&engine, world) {
            turn.note = Some(why);
            return (empty_world(), turn);
        }
        let started = std::time::Instant::now();
        engine.submit(
            Command::Say {
                text: sentence.to_string(),
            },
            Origin::scenario("the assist runner"),
        );
        let mut batch = Vec::new();
        // Devices changed before any confirmation was approved: kept if
        // the turn turns out to have asked for one.
        let (mut approved, mut early) = (false, Vec::new());
        for tick in 0..MAX_TICKS {
            engine.tick(&mut batch);
            for event in batch.drain(..) {
                match event.kind {
                    EventKind::Approval {
                        approval_id,
                        status: ApprovalStatus::Requested,
                        ..
                    } => {
                        turn.confirmations += 1;
                        engine.submit(
                            Command::Approve { approval_id },
                            Origin::scenario("the assist runner"),
                        );
                    }
                    EventKind::Approval {
                        status: ApprovalStatus::Approved,
                        ..
                    } => approved = true,
                    EventKind::Device { device, .. } if !approved => early.push(device),
                    EventKind::Intent {
                        intent,
                        args,
                        processed_locally,
                        ..
                    } => {
                        if turn.understander.is_none() {
                            turn.understander =
                                Some(understander_of(&intent, &args, processed_locally));
                            turn.intent = Some(
                                args.pointer("/grammar/intent")
                                    .and_then(Value::as_str)
                                    .map_or_else(|| intent.clone(), str::to_string),
                            );
                        }
                        turn.calls.push(format!("{intent} {}", json!(args)));
                    }
                    EventKind::Understanding { trace, .. } if turn.trace.is_none() => {
                        turn.trace = Some(trace.text());
                    }
                    EventKind::Speech { text, track, .. } => {
                        if track == SpeechTrack::Answer {
                            turn.note = Some(text.clone());
                        }
                        turn.said.push(text);
                    }
                    _ => {}
                }
            }
            if tick > 0 && engine.is_settled() {
                break;
            }
        }
        turn.latency_ms = started.elapsed().as_secs_f64() * 1e3;
        if turn.confirmations > 0 {
            turn.changed_before_confirmation = early;
        }
        engine.shutdown();
        let world = std::mem::replace(&mut hci::lock(engine.home()).devices, empty_world());
        (world, turn)
    }
}

#[cfg(test)]
mod tests {
    use super::EngineAssistant;
    use crate::assist::dataset::{assist_mini_dir, load_dataset};
    use crate::assist::runner::{assert_floors, render_failures, run};

    /// With Home Assistant's grammar first (the engine path's default):
    /// overall, and the to-do sentences (the one Home Assistant's English
    /// grammar has); every other category as with the rules.
    const ASSIST_MINI_WITH_GRAMMAR: (usize, usize) = (47, 1);

    #[test]
    fn assist_mini_holds_todays_pass_rates_with_and_without_the_grammar() {
        let homes = load_dataset(&assist_mini_dir()).unwrap();
        let engine = run(
            &homes,
            &mut EngineAssistant::default(),
            &crate::progress::Silent,
        );
        assert_floors(&engine);
        let (overall, todo) = ASSIST_MINI_WITH_GRAMMAR;
        assert!(
            engine.overall.passed >= overall && engine.by_category["todo"].passed >= todo,
            "with the grammar: {} of 50, todo {}\n{}",
            engine.overall.passed,
            engine.by_category["todo"].passed,
            render_failures(&engine)
        );
        // The rules alone, through the engine: the floors as they were.
        let rules = run(
            &homes,
            &mut EngineAssistant::with_grammar(&crate::config::HomeConfig {
                grammar: false,
                ..crate::config::HomeConfig::default()
            }),
            &crate::progress::Silent,
        );
        assert_floors(&rules);
    }
}
