//! Skills driven through a whole engine: `listen` (typed words and
//! recordings heard and acted on) and `notify` (an incident's webhook held
//! for approval). The skills live in `robobrain-skills`, below the engine;
//! their tests that need one run here.

mod listen {
    use crate::protocol::Origin;
    use std::path::Path;

    use serde_json::{Value, json};

    use crate::config::Config;
    use crate::engine::Engine;
    use crate::kernel::TaskKind;
    use crate::llm::mock_script::parse;
    use crate::llm::mock_server::MockServer;
    use crate::protocol::{Command, Event, EventKind, SkillStatus};
    use crate::world::World;

    /// Runs a `listen` call with `args` for up to 30 sim seconds.
    fn listen(config: &Config, args: Value) -> (Engine, Vec<Event>) {
        let mut engine = Engine::simulated(config, World::builtin("apartment").unwrap()).unwrap();
        assert!(
            !engine.registry().is_initialized("listen"),
            "listen is lazy by default (seed 000 §8.1)"
        );
        engine.submit(
            Command::Call {
                call_id: "l1".into(),
                skill: "listen".into(),
                args,
            },
            Origin::console(),
        );
        let mut events = Vec::new();
        while engine.time() < 30.0 {
            engine.tick(&mut events);
            if engine.registry().is_waiting() {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
        (engine, events)
    }

    fn went_to_kitchen(engine: &Engine) -> bool {
        engine
            .state()
            .queue
            .tasks()
            .iter()
            .any(|t| matches!(&t.kind, TaskKind::Goto { zone } if zone == "kitchen"))
    }

    fn failure(events: &[Event]) -> Option<(String, String)> {
        events.iter().find_map(|e| match &e.kind {
            EventKind::Skill {
                skill,
                status: SkillStatus::Failed,
                error,
                message,
                ..
            } if skill == "listen" => Some((error.clone().unwrap_or_default(), message.clone())),
            _ => None,
        })
    }

    /// A folder with a WAV file of `samples` at 16 kHz in it.
    fn recording(name: &str, samples: usize) -> (std::path::PathBuf, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!("{name}{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let wav = dir.join("said.wav");
        let clip = crate::audio::Clip {
            rate: 16_000,
            samples: vec![0.1; samples],
        };
        crate::audio::write_wav(&wav, &clip).unwrap();
        (dir, wav)
    }

    fn config() -> Config {
        let mut config = Config {
            thread_id: Some("listen".into()),
            ..Config::default()
        };
        config.speech.voice = crate::voice::VoiceChoice::Text;
        config
    }

    #[test]
    fn typed_words_are_heard_and_acted_on_without_a_model() {
        let (engine, _) = listen(&config(), json!({"text": "去厨房"}));
        assert!(went_to_kitchen(&engine));
        assert_eq!(
            engine.state().shared.get("user_command"),
            Some(&json!("去厨房"))
        );
    }

    #[test]
    fn a_recording_is_transcribed_by_the_model_and_acted_on() {
        let script = parse(
            "[[reply]]\ncontent = \"go to the kitchen\"\n",
            Path::new("m.toml"),
        )
        .unwrap();
        let server = MockServer::start(script, "127.0.0.1:0").unwrap();
        let (dir, wav) = recording("rb-listen-", 8000);
        let mut config = config();
        config.llm.base_url = Some(server.base_url());
        let (engine, events) = listen(&config, json!({"wav": wav}));
        assert_eq!(failure(&events), None);
        assert!(went_to_kitchen(&engine), "the transcript became a goto");
        let got = server.received();
        assert_eq!(got[0].body["endpoint"], "audio/transcriptions");
        assert_eq!(got[0].body["model"], "qwen-omni-flash");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn audio_without_a_model_or_not_a_wav_fails_with_a_reason() {
        let (dir, wav) = recording("rb-listen-bad-", 800);
        let (engine, events) = listen(&config(), json!({"wav": wav}));
        let (code, message) = failure(&events).unwrap();
        assert_eq!(code, "no_transcriber");
        assert!(message.contains("type the words instead"), "{message}");
        assert!(!went_to_kitchen(&engine));

        let junk = dir.join("junk.wav");
        std::fs::write(&junk, "not audio").unwrap();
        let (_, events) = listen(&config(), json!({"wav": junk}));
        let (code, message) = failure(&events).unwrap();
        assert_eq!(code, "bad_audio");
        assert!(
            message.contains("junk.wav") && message.contains("RIFF"),
            "{message}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

mod notify {
    use crate::protocol::Origin;
    use serde_json::Value;

    use crate::config::Config;
    use crate::engine::Engine;
    use crate::link::Fault;
    use crate::protocol::{ApprovalStatus, Command, Event, EventKind, SkillStatus, TaskStatus};
    use crate::world::World;
    use robobrain_skills::webhook::test_receiver as receiver;

    /// Smoke during a patrol with a webhook configured: the incident is
    /// recorded at once; the call to the outside service waits for the
    /// operator's approval (high risk) while the robot waits for an
    /// acknowledgement; once approved it is POSTed (a 503 retried), and
    /// the patrol resumes after the acknowledgement.
    #[test]
    fn an_incident_goes_to_the_webhook_after_approval_with_retries() {
        let (url, got) = receiver(vec![503, 200]);
        let mut config = Config {
            thread_id: Some("notify".into()),
            ..Config::default()
        };
        config.skills.keep_frames = false;
        config.alert.webhook = Some(url);
        config.alert.backoff_ms = 5;
        let mut engine = Engine::simulated(&config, World::builtin("apartment").unwrap()).unwrap();
        assert_eq!(
            engine.registry().spec("notify").map(|s| s.risk),
            Some(crate::skills::Risk::HighWrite)
        );
        engine.submit(
            Command::Say {
                text: "巡逻".into(),
            },
            Origin::console(),
        );
        engine.submit(
            Command::Inject {
                fault: Fault::Incident {
                    zone: "kitchen".into(),
                    kind: "smoke".into(),
                },
            },
            Origin::console(),
        );
        let mut events: Vec<Event> = Vec::new();
        let mut approval = None;
        let mut acked = false;
        while engine.time() < 900.0 {
            let from = events.len();
            engine.tick(&mut events);
            if engine.registry().is_waiting() {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            for e in &events[from..] {
                match &e.kind {
                    EventKind::Approval {
                        approval_id,
                        status: ApprovalStatus::Requested,
                        op,
                        ..
                    } if serde_json::to_value(op).unwrap()["skill"] == "notify" => {
                        assert!(
                            got.lock().unwrap().is_empty(),
                            "nothing is sent before approval"
                        );
                        approval = Some(approval_id.clone());
                    }
                    EventKind::Skill {
                        skill,
                        status: SkillStatus::Succeeded,
                        ..
                    } if skill == "notify" && !acked => {
                        acked = true;
                        engine.submit(
                            Command::Acknowledge {
                                incident_id: None,
                                by: "ops".into(),
                            },
                            Origin::console(),
                        );
                    }
                    _ => {}
                }
            }
            if let Some(id) = approval.take() {
                engine.submit(Command::Approve { approval_id: id }, Origin::console());
            }
        }
        let got = got.lock().unwrap();
        assert_eq!(got.len(), 2, "one 503, then delivered");
        assert_eq!(got[1]["event"], "incident");
        assert_eq!(got[1]["incident"]["zone"], "kitchen");
        assert_eq!(got[1]["incident"]["kinds"][0], "smoke");
        let notified = events.iter().find_map(|e| match &e.kind {
            EventKind::Skill {
                skill,
                status: SkillStatus::Succeeded,
                output: Some(o),
                ..
            } if skill == "notify" => Some(o.clone()),
            _ => None,
        });
        assert_eq!(
            notified
                .as_ref()
                .and_then(|o| o.get("attempts"))
                .and_then(Value::as_u64),
            Some(2)
        );
        let tasks = engine.state().queue.tasks();
        assert!(
            tasks
                .iter()
                .any(|t| t.kind.name() == "patrol" && t.status == TaskStatus::Succeeded),
            "the patrol finished after the acknowledgement: {:?}",
            tasks
                .iter()
                .map(|t| (t.title(), t.status))
                .collect::<Vec<_>>()
        );
    }
}
