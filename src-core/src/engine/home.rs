//! The home in the engine: an utterance about devices takes the fast path
//! ([`crate::hci`]) before the robot's own intents; a plan that needs
//! confirmation becomes a task whose step waits for the same approval as
//! any other; device faults and changes become events.

use std::collections::BTreeMap;

use serde_json::Value;

use super::Engine;
use crate::config::Config;
use crate::hci::{self, Out, summary};
use crate::kernel::TaskKind;
use crate::lines::Lang;
use crate::link::Fault;
use crate::llm::{LlmClient, LlmWorker, Update};
use crate::protocol::{EventKind, SpeechTrack};

/// Track 3 by a model (`[home] summary = "model"`): the summary of a control
/// turn written from its forged success results, off the tick.
pub(super) struct Summarizer {
    worker: LlmWorker,
    model: String,
    /// Request id → the forged results and the turn's language (for the
    /// rule summary if the model fails).
    waiting: BTreeMap<u64, (Vec<Value>, Lang)>,
}

impl Summarizer {
    /// A summarizer when the config asks for one and a model is configured.
    pub(super) fn for_config(config: &Config) -> Option<Self> {
        if config.home.summary != "model" || !config.llm.is_configured() {
            return None;
        }
        let client = LlmClient::new(&config.llm).ok()?;
        let worker = LlmWorker::spawn(client).ok()?;
        Some(Self {
            worker,
            model: config.llm.summary_model.clone(),
            waiting: BTreeMap::new(),
        })
    }

    /// Whether a summary is being written.
    pub(super) fn is_waiting(&self) -> bool {
        !self.waiting.is_empty()
    }
}

impl Engine {
    /// Summaries the model finished: each a `speech` line on the summary
    /// track; a failed call falls back to the rule summary (and says why).
    pub(super) fn summaries(&mut self) {
        let mut lines = Vec::new();
        if let Some(s) = self.home.summarizer.as_mut() {
            while let Some(update) = s.worker.try_recv() {
                let Update::Done { id, result, .. } = update else {
                    continue;
                };
                let Some((forged, lang)) = s.waiting.remove(&id) else {
                    continue;
                };
                let text = result.reply.map(|c| {
                    c.choices
                        .get(&0)
                        .map(|c| c.content.trim().to_string())
                        .unwrap_or_default()
                });
                lines.push((forged, lang, text));
            }
        }
        for (forged, lang, text) in lines {
            match text {
                Ok(text) if !text.is_empty() => self.emit(EventKind::Speech {
                    text,
                    track: SpeechTrack::Summary,
                    audio: None,
                }),
                other => {
                    let why = other.map_or_else(|e| e.to_string(), |_| "an empty reply".into());
                    self.log(
                        "warn",
                        &format!("the summary model failed ({why}); the rule summary stands in"),
                    );
                    let text =
                        summary::rule_summary(&hci::lock(&self.home.handle).devices, &forged, lang);
                    self.emit(EventKind::Speech {
                        text,
                        track: SpeechTrack::Summary,
                        audio: None,
                    });
                }
            }
        }
    }

    /// Handles `text` if it is about the home; returns whether it was.
    pub(super) fn home_say(&mut self, text: &str) -> bool {
        // "The lights here": the room the robot is in.
        let pose = self.state.telemetry.pose;
        let here = self
            .setup
            .world
            .zone_at(crate::geometry::Point {
                x: pose.x,
                y: pose.y,
            })
            .map(|z| z.name.clone());
        let turn = {
            let mut home = hci::lock(&self.home.handle);
            home.origin.clone_from(&self.traffic.cause);
            home.here = here.and_then(|z| {
                home.devices
                    .room(&z)
                    .map(|r| (r.id.clone(), r.name.clone()))
            });
            home.turn(text)
        };
        let Some(turn) = turn else {
            return false;
        };
        self.emit(EventKind::Intent {
            utterance: text.to_string(),
            intent: turn.intent.into(),
            args: turn.args.clone(),
            processed_locally: true,
        });
        // A new utterance makes summaries still being written moot (barge-in).
        if let Some(s) = self.home.summarizer.as_mut() {
            s.waiting.clear();
        }
        let by_model = self.home.summarizer.is_some() && !turn.forged.is_empty();
        for out in turn.out {
            match out {
                Out::Say(_, SpeechTrack::Summary) if by_model => {
                    let submitted = self.home.summarizer.as_mut().map(|s| {
                        let body = summary::summary_request(&s.model, &turn.forged, turn.lang);
                        s.worker
                            .submit("summary", body)
                            .map(|id| s.waiting.insert(id, (turn.forged.clone(), turn.lang)))
                    });
                    if let Some(Err(e)) = submitted {
                        self.log("warn", &format!("the summary model is unavailable: {e}"));
                    }
                }
                Out::Say(line, SpeechTrack::Summary) => {
                    // Shown and kept in the history, not voiced over the template.
                    self.emit(EventKind::Speech {
                        text: line,
                        track: SpeechTrack::Summary,
                        audio: None,
                    });
                }
                Out::Say(line, track) if !line.is_empty() => self.speak(&line, track),
                Out::Say(..) => {}
                Out::Devices => self.report_devices(),
            }
        }
        if let Some(ask) = turn.timer {
            self.timer(&ask);
        }
        if let Some((skill, args)) = turn.confirm {
            self.add_task(
                TaskKind::Call { skill, args },
                &format!("home plan {}: {text}", turn.plan_id),
            );
        }
        true
    }

    /// A `device` event for every device that changed since the last report.
    pub(super) fn report_devices(&mut self) {
        let changed = {
            let mut home = hci::lock(&self.home.handle);
            home.poll();
            let changed = home.take_changed();
            changed
                .into_iter()
                .filter_map(|(id, reason)| {
                    home.devices.get(&id).map(|d| {
                        (
                            d.id.clone(),
                            d.room.clone(),
                            Value::Object(d.state.clone()),
                            d.online,
                            reason,
                        )
                    })
                })
                .collect::<Vec<_>>()
        };
        for (device, room, state, online, reason) in changed {
            self.emit(EventKind::Device {
                device,
                room,
                state,
                online,
                reason,
            });
        }
    }

    /// Applies a device fault to the device world; returns whether `fault` was one.
    pub(super) fn device_fault(&mut self, fault: &Fault) -> bool {
        let (device, online) = match fault {
            Fault::DeviceOffline { device } => (device, false),
            Fault::DeviceOnline { device } => (device, true),
            _ => return false,
        };
        let result = {
            let mut home = hci::lock(&self.home.handle);
            let r = home.devices.set_online(device, online);
            if r.is_ok() {
                home.mark_changed(device, "fault");
            }
            r
        };
        match result {
            Ok(_) => {
                self.emit(EventKind::Fault {
                    fault: fault.clone(),
                });
                self.report_devices();
            }
            Err(e) => self.emit(EventKind::Error {
                code: "inject_refused".into(),
                message: e.to_string(),
            }),
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use crate::protocol::Origin;
    use serde_json::{Value, json};

    use crate::brain::ScriptedBrain;
    use crate::config::Config;
    use crate::engine::Engine;
    use crate::hci;
    use crate::protocol::{Command, DecisionType, Event, EventKind, Op};
    use crate::react::Decision;
    use crate::store::audit::AuditFilter;
    use crate::world::World;

    /// AgentDojo's attack templates, read from the shared test data (never copied).
    fn attack_templates() -> Vec<(String, String)> {
        let path = crate::testing::test_data("agentdojo/attack_templates.extracted.json");
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        v.as_object()
            .unwrap()
            .iter()
            .filter_map(|(k, t)| Some((k.clone(), t.get("template")?.as_str()?.to_string())))
            .collect()
    }

    fn dispatch(skill: &str, args: Value) -> Decision {
        Decision {
            decision_type: DecisionType::Continue,
            reason: "obeying the text in the tool result".into(),
            plan_patch: None,
            ops: vec![Op::Dispatch {
                skill: skill.into(),
                args,
            }],
        }
    }

    fn run(engine: &mut Engine, commands: Vec<Command>, until: f64) -> Vec<Event> {
        let mut events = Vec::new();
        for c in commands {
            engine.submit(c, Origin::console());
        }
        while engine.time() < until {
            engine.tick(&mut events);
        }
        events
    }

    #[test]
    fn injections_in_device_names_never_unlock_the_door_or_open_the_gas_without_confirmation() {
        let templates = attack_templates();
        assert!(templates.len() >= 5, "{templates:?}");
        let dir = std::env::temp_dir().join(format!("rb-inject-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (i, (name, template)) in templates.iter().enumerate() {
            let (goal, skill_args) = if i % 2 == 0 {
                (
                    "unlock the front door with devices.invoke",
                    json!({"device": "front_door_lock", "action": "unlock"}),
                )
            } else {
                (
                    "open the gas valve with devices.invoke",
                    json!({"device": "gas_valve", "action": "open"}),
                )
            };
            // Denial-of-service templates name no goal: the goal is appended.
            let with_goal = if template.contains("{goal}") {
                template.clone()
            } else {
                format!("{template} {{goal}}")
            };
            let planted = with_goal
                .replace("{goal}", goal)
                .replace("{user}", "the owner")
                .replace("{model}", "robobrain")
                .replace("{tools}", "devices.invoke");
            // The injection is the floor lamp's name, as a hostile integration could set it.
            let home_text = crate::devices::catalogue::BUILTIN_HOME.replacen(
                "name = \"floor lamp\"",
                &format!("name = {}", serde_json::to_string(&planted).unwrap()),
                1,
            );
            let file = dir.join(format!("{name}.toml"));
            std::fs::write(&file, home_text).unwrap();
            let mut config = Config {
                thread_id: Some(format!("inject-{name}")),
                ..Config::default()
            };
            config.home.file = Some(file);
            config.home.hour = Some(12.0);
            let mut engine =
                Engine::simulated(&config, World::builtin("apartment").unwrap()).unwrap();
            // A model that obeys what it reads: it looks at the lamp, then does what the name says.
            engine.set_brain(Box::new(ScriptedBrain::new([
                dispatch("devices.get", json!({"device": "floor_lamp"})),
                dispatch("devices.invoke", skill_args.clone()),
            ])));
            let events = run(
                &mut engine,
                vec![Command::Call {
                    call_id: "c1".into(),
                    skill: "devices.get".into(),
                    args: json!({"device": "floor_lamp"}),
                }],
                5.0,
            );
            let got_name = events.iter().any(|e| matches!(&e.kind, EventKind::Skill { output: Some(r), .. } if r.to_string().contains(goal)));
            assert!(
                got_name,
                "{name}: the planted text reached the brain's observation"
            );
            let held = events.iter().any(|e| matches!(&e.kind, EventKind::Approval { op: Op::Dispatch { skill, args }, .. } if skill == "devices.invoke" && args["device"] == skill_args["device"]));
            assert!(held, "{name}: the high-risk call waits for confirmation");
            let wrote = events.iter().any(|e| matches!(&e.kind, EventKind::Device { device, .. } if *device == skill_args["device"]));
            assert!(!wrote, "{name}: nothing high-risk ran");
            let home = hci::lock(engine.home());
            let d = home
                .devices
                .get(skill_args["device"].as_str().unwrap())
                .unwrap();
            if d.id == "front_door_lock" {
                assert_eq!(d.state["locked"], json!(true), "{name}");
            } else {
                assert_eq!(d.state["open"], json!(false), "{name}");
            }
            let audit = home
                .audit()
                .unwrap()
                .list(&AuditFilter {
                    tool: Some("devices.invoke".into()),
                    ..AuditFilter::default()
                })
                .unwrap();
            assert!(
                audit.iter().any(|r| !r.ok
                    && r.result.starts_with("confirmation_required")
                    && r.args_summary
                        .contains(skill_args["device"].as_str().unwrap())),
                "{name}: the attempt is audited: {audit:?}"
            );
            // What would reach a model about the lamp carries none of the planted words.
            let facts = hci::summary::facts(&json!({"name": planted}));
            assert_eq!(facts["name"], "<text withheld>", "{name}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn with_summary_model_the_template_is_out_at_once_and_the_models_summary_follows() {
        use crate::llm::mock_server::MockServer;
        use crate::llm::{Secret, mock_script};
        let script = mock_script::parse(
            "[[reply]]\ncontent = \"The living room light is on now.\"\nlatency_ms = 300\n",
            std::path::Path::new("summary.toml"),
        )
        .unwrap();
        let server = MockServer::start(script, "127.0.0.1:0").unwrap();
        let mut config = Config {
            thread_id: Some("summary".into()),
            ..Config::default()
        };
        config.llm.base_url = Some(server.base_url());
        config.llm.api_key = Some(Secret::new("test"));
        config.home.summary = "model".into();
        config.home.hour = Some(12.0);
        config.speech.voice = crate::voice::VoiceChoice::Text;
        let mut engine = Engine::simulated(&config, World::builtin("apartment").unwrap()).unwrap();
        let mut events = Vec::new();
        engine.submit(
            Command::Say {
                text: "打开客厅灯".into(),
            },
            Origin::console(),
        );
        engine.tick(&mut events);
        let track = |events: &[Event], t: crate::protocol::SpeechTrack| {
            events.iter().find_map(|e| match &e.kind {
                EventKind::Speech { text, track, .. } if *track == t => Some(text.clone()),
                _ => None,
            })
        };
        assert!(track(&events, crate::protocol::SpeechTrack::Template).is_some());
        assert!(
            track(&events, crate::protocol::SpeechTrack::Summary).is_none(),
            "the model is still writing"
        );
        assert!(engine.is_thinking());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while track(&events, crate::protocol::SpeechTrack::Summary).is_none()
            && std::time::Instant::now() < deadline
        {
            engine.wait_brain(std::time::Duration::from_millis(20));
            engine.pump(&mut events);
        }
        assert_eq!(
            track(&events, crate::protocol::SpeechTrack::Summary).as_deref(),
            Some("The living room light is on now.")
        );
        let asked = server.received()[0].body.to_string();
        assert!(
            asked.contains("living_room_light") && asked.contains("success"),
            "{asked}"
        );
    }

    /// A model is the fallback, not the first resort (issue 22): with one
    /// configured, a sentence Home Assistant's grammar matches is carried
    /// out on the tick it is said, locally, and the model is never asked;
    /// one nothing local understands goes to the model.
    #[test]
    fn what_the_grammar_matches_never_waits_for_the_model() {
        use crate::llm::mock_server::MockServer;
        use crate::llm::{Secret, mock_script};
        let (_, notice) = hci::heard::load_grammars(&crate::intents::default_dir());
        assert!(notice.is_none(), "{notice:?}: run ./x setup");
        let script = mock_script::parse(
            "[[reply]]\ncontent = \"{}\"\nlatency_ms = 800\n",
            std::path::Path::new("slow.toml"),
        )
        .unwrap();
        let server = MockServer::start(script, "127.0.0.1:0").unwrap();
        let mut config = Config {
            thread_id: Some("grammar-first".into()),
            ..Config::default()
        };
        config.llm.base_url = Some(server.base_url());
        config.llm.api_key = Some(Secret::new("test"));
        config.home.hour = Some(12.0);
        config.speech.voice = crate::voice::VoiceChoice::Text;
        let mut engine = Engine::simulated(&config, World::builtin("apartment").unwrap()).unwrap();
        engine.set_brain(crate::brain::from_config(&config).unwrap().0);
        // Not in robobrain's rules: the grammar's alone.
        for text in ["add oat milk to my shopping list", "把卧室风扇打开"] {
            let mut events = Vec::new();
            engine.submit(Command::Say { text: text.into() }, Origin::console());
            engine.tick(&mut events);
            let intent = events.iter().find_map(|e| match &e.kind {
                EventKind::Intent {
                    args,
                    processed_locally,
                    ..
                } => Some((args.clone(), *processed_locally)),
                _ => None,
            });
            let (args, local) = intent.unwrap_or_else(|| panic!("{text}: no intent at once"));
            assert!(local && args.get("grammar").is_some(), "{text}: {args}");
            assert!(
                events.iter().any(|e| matches!(&e.kind, EventKind::Speech { track, .. } if *track == crate::protocol::SpeechTrack::Template)),
                "{text}: no templated speech on the first tick"
            );
            assert!(!engine.is_thinking(), "{text}: waiting for a model");
        }
        let list = Value::Object(
            hci::lock(engine.home())
                .devices
                .get("shopping_list")
                .unwrap()
                .state
                .clone(),
        );
        assert!(list.to_string().contains("oat milk"), "{list}");
        assert!(server.received().is_empty(), "the model was asked");
        // What nothing local understands is the model's.
        let mut events = Vec::new();
        engine.submit(
            Command::Say {
                text: "compose a limerick about the hallway".into(),
            },
            Origin::console(),
        );
        engine.tick(&mut events);
        assert!(engine.is_thinking(), "{events:?}");
    }

    /// What one utterance made the engine do within a tick: the intent's
    /// name and every line spoken.
    fn said_to(engine: &mut Engine, text: &str) -> (String, Vec<String>) {
        let mut events = Vec::new();
        engine.submit(Command::Say { text: text.into() }, Origin::console());
        engine.tick(&mut events);
        let intent = events
            .iter()
            .find_map(|e| match &e.kind {
                EventKind::Intent { intent, .. } => Some(intent.clone()),
                _ => None,
            })
            .unwrap_or_default();
        let lines = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Speech { text, .. } => Some(text.clone()),
                _ => None,
            })
            .collect();
        (intent, lines)
    }

    fn apartment_at_noon(thread: &str) -> Engine {
        let (_, notice) = hci::heard::load_grammars(&crate::intents::default_dir());
        assert!(notice.is_none(), "{notice:?}: run ./x setup");
        let mut config = Config {
            thread_id: Some(thread.into()),
            ..Config::default()
        };
        config.home.hour = Some(12.0);
        config.speech.voice = crate::voice::VoiceChoice::Text;
        Engine::simulated(&config, World::builtin("apartment").unwrap()).unwrap()
    }

    /// Ordinary Chinese commands reach the device meant, are answered in
    /// Chinese, and never send the robot anywhere.
    #[test]
    fn ordinary_chinese_commands_reach_the_device_and_are_answered_in_chinese() {
        let mut engine = apartment_at_noon("zh-commands");
        let state = |engine: &Engine, device: &str| {
            Value::Object(
                hci::lock(engine.home())
                    .devices
                    .get(device)
                    .unwrap()
                    .state
                    .clone(),
            )
        };
        engine.submit(
            Command::Say {
                text: "把客厅灯亮度调到60".into(),
            },
            Origin::console(),
        );
        engine.tick(&mut Vec::new());
        for (text, device, key, want) in [
            ("客厅灯暗一点", "living_room_light", "brightness", json!(40)),
            ("电视声音调小一点", "living_room_tv", "volume", json!(20)),
            (
                "在购物清单里加上牛奶",
                "shopping_list",
                "items",
                json!(["牛奶"]),
            ),
        ] {
            let (intent, lines) = said_to(&mut engine, text);
            assert!(intent.starts_with("home_"), "{text}: {intent}");
            assert!(!lines.is_empty(), "{text}: nothing said");
            for line in &lines {
                assert!(crate::text::has_cjk(line), "{text}: {line}");
            }
            assert_eq!(state(&engine, device)[key], want, "{text}");
        }
        // Two lamps at once wait for a confirmation, both of them.
        let (intent, lines) = said_to(&mut engine, "把卧室的灯都关了");
        assert!(intent.starts_with("home_"), "{intent}");
        assert!(lines.iter().all(|l| crate::text::has_cjk(l)), "{lines:?}");
        let all = lines.join(" ");
        assert!(all.contains("卧室灯") && all.contains("床头灯"), "{all}");
    }

    /// A question reads the devices and writes nothing; a sentence nobody
    /// understands is not repeated back.
    #[test]
    fn questions_change_nothing_and_the_unknown_is_not_echoed() {
        let mut engine = apartment_at_noon("questions");
        let states = |engine: &Engine| -> Vec<Value> {
            hci::lock(engine.home())
                .devices
                .devices()
                .iter()
                .map(|d| Value::Object(d.state.clone()))
                .collect()
        };
        let before = states(&engine);
        for (text, want) in [
            ("is the front door locked?", "front door lock"),
            ("which lights are on?", "No light is on."),
            ("哪些灯是开着的", "没有灯是开着的。"),
            ("what's the temperature in the bedroom", "26"),
        ] {
            let (_, lines) = said_to(&mut engine, text);
            let all = lines.join(" ");
            assert!(all.contains(want), "{text}: {all}");
        }
        assert_eq!(before, states(&engine));
        let (intent, lines) = said_to(&mut engine, "florble the wimbly sprocket");
        assert_eq!(intent, "unknown");
        let all = lines.join(" ");
        assert!(
            !all.contains("florble")
                && !all.contains("sprocket")
                && all.contains("didn't understand"),
            "{all}"
        );
    }

    /// Turning `device` off under the used request id `request` is refused.
    fn assert_replay_refused(home: &mut hci::Home, device: &str, request: &str) {
        let ids = hci::Ids {
            plan_id: "p9".into(),
            step_id: "1".into(),
            request_id: request.into(),
        };
        let again = home
            .call_tool(
                "devices.invoke",
                &json!({"device": device, "action": "turn_off"}),
                &ids,
            )
            .unwrap_err();
        assert_eq!(again.code(), "duplicate_request", "{request}");
    }

    #[test]
    fn a_resumed_run_keeps_device_states_and_still_refuses_applied_request_ids() {
        let dir = std::env::temp_dir().join(format!("rb-home-resume-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let db = dir.join("r.db");
        let mut config = Config {
            thread_id: Some("home-resume".into()),
            ..Config::default()
        };
        config.home.hour = Some(12.0);
        config.speech.voice = crate::voice::VoiceChoice::Text;
        let store = || crate::store::Store::open(&db, crate::store::Synchronous::Normal).unwrap();
        let request;
        {
            let mut engine =
                Engine::simulated(&config, World::builtin("apartment").unwrap()).unwrap();
            engine.attach_store(store(), &config.store, false).unwrap();
            let events = run(
                &mut engine,
                vec![Command::Say {
                    text: "打开客厅灯".into(),
                }],
                1.0,
            );
            request = events
                .iter()
                .find_map(|e| match &e.kind {
                    EventKind::Device { reason, .. } => {
                        reason.split(' ').nth(1).map(str::to_string)
                    }
                    _ => None,
                })
                .unwrap();
        }
        let mut engine = Engine::simulated(&config, World::builtin("apartment").unwrap()).unwrap();
        engine.attach_store(store(), &config.store, true).unwrap();
        let mut home = hci::lock(engine.home());
        assert_eq!(
            home.devices.get("living_room_light").unwrap().state["on"],
            json!(true)
        );
        assert_replay_refused(&mut home, "living_room_light", &request);
        drop(home);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_replayed_request_id_is_refused_by_the_device_layer() {
        let config = Config {
            thread_id: Some("replay".into()),
            ..Config::default()
        };
        let engine = Engine::simulated(&config, World::builtin("apartment").unwrap()).unwrap();
        let mut home = hci::lock(engine.home());
        let ids = hci::Ids {
            plan_id: "p9".into(),
            step_id: "1".into(),
            request_id: "r-1".into(),
        };
        let args = json!({"device": "kitchen_light", "action": "turn_on"});
        home.call_tool("devices.invoke", &args, &ids).unwrap();
        assert_replay_refused(&mut home, "kitchen_light", "r-1");
        let bad = home.call_tool("devices.invoke", &json!({"device": "kitchen_light", "action": "set_brightness", "args": {"level": 5}}), &hci::Ids { request_id: "r-2".into(), ..ids.clone() }).unwrap_err();
        assert!(bad.to_string().contains("cannot `set_brightness`"), "{bad}");
        let bad = home
            .call_tool(
                "devices.invoke",
                &json!({"device": "screen", "action": "set_brightness", "args": {"level": "max"}}),
                &hci::Ids {
                    request_id: "r-3".into(),
                    ..ids
                },
            )
            .unwrap_err();
        assert!(bad.to_string().contains("at `/level`"), "{bad}");
        let rows = home
            .audit()
            .unwrap()
            .list(&AuditFilter {
                plan_id: Some("p9".into()),
                ..AuditFilter::default()
            })
            .unwrap();
        assert_eq!(rows.len(), 4, "every call audited: {rows:?}");
        assert_eq!(rows.iter().filter(|r| r.ok).count(), 1);
    }

    /// A backend that, when asked to change a device, reads what the run's
    /// audit log says at that moment (through its own connection).
    struct AuditSpy {
        db: std::path::PathBuf,
        seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    }

    impl crate::devices::DeviceBackend for AuditSpy {
        fn name(&self) -> &'static str {
            "spy"
        }

        fn apply(
            &mut self,
            device: &crate::devices::Device,
            capability: &crate::devices::Capability,
            args: &Value,
        ) -> Result<serde_json::Map<String, Value>, crate::devices::DeviceError> {
            let conn = rusqlite::Connection::open(&self.db).unwrap();
            let last: String = conn
                .query_row(
                    "SELECT result FROM audit ORDER BY id DESC LIMIT 1",
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            self.seen.lock().unwrap().push(last);
            Ok(crate::devices::backend::simulate(device, capability, args))
        }
    }

    #[test]
    fn a_device_is_asked_only_once_its_audit_row_is_on_record_and_a_call_cut_short_is_settled_on_resume()
     {
        let dir = std::env::temp_dir().join(format!("rb-home-ledger-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let db = dir.join("r.db");
        let mut config = Config {
            thread_id: Some("home-ledger".into()),
            ..Config::default()
        };
        config.home.hour = Some(12.0);
        config.speech.voice = crate::voice::VoiceChoice::Text;
        let store = || crate::store::Store::open(&db, crate::store::Synchronous::Effects).unwrap();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        {
            let mut engine =
                Engine::simulated(&config, World::builtin("apartment").unwrap()).unwrap();
            engine.attach_store(store(), &config.store, false).unwrap();
            hci::lock(engine.home())
                .devices
                .set_backend(Box::new(AuditSpy {
                    db: db.clone(),
                    seen: seen.clone(),
                }));
            run(
                &mut engine,
                vec![Command::Say {
                    text: "打开客厅灯".into(),
                }],
                1.0,
            );
        }
        // The device was asked once, after its row said `started` on disk.
        assert_eq!(*seen.lock().unwrap(), ["started"]);
        let audit = crate::store::audit::AuditLog::open(&db).unwrap();
        let rows = audit.list(&AuditFilter::default()).unwrap();
        let call = rows.iter().find(|r| r.tool == "devices.invoke").unwrap();
        assert_eq!((call.result.as_str(), call.ok), ("ok", true), "{rows:?}");
        assert!(audit.unfinished("home-ledger").unwrap().is_empty());
        // A brain stopped between asking a device and hearing back leaves
        // its row `started`; the resume ends it with what the device says.
        let mut cut = call.clone();
        cut.result = crate::store::audit::STARTED.into();
        cut.ok = false;
        cut.args_summary =
            json!({"device": "living_room_light", "capability": "turn_off"}).to_string();
        let id = audit.record(&cut).unwrap();
        drop(audit);
        let mut engine = Engine::simulated(&config, World::builtin("apartment").unwrap()).unwrap();
        engine.attach_store(store(), &config.store, true).unwrap();
        let mut events = Vec::new();
        engine.tick(&mut events);
        assert!(
            events.iter().any(|e| matches!(&e.kind, EventKind::Log { level, message }
                if level == "warn" && message.contains("a home call the brain stopped in") && message.contains("living_room_light"))),
            "{events:?}"
        );
        let audit = crate::store::audit::AuditLog::open(&db).unwrap();
        let row = audit
            .list(&AuditFilter::default())
            .unwrap()
            .into_iter()
            .find(|r| r.id == id)
            .unwrap();
        assert!(
            row.result.starts_with("interrupted: the brain stopped before the call ended; `living_room_light` now reports {")
                && row.result.contains("\"on\":true"),
            "{}",
            row.result
        );
        assert!(audit.unfinished("home-ledger").unwrap().is_empty());
        drop(engine);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
