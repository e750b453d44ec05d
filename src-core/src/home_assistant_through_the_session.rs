//! The home's MQTT side against a real mosquitto: Home Assistant discovery
//! of a running session (configs checked against Home Assistant's
//! documented keys, buttons pressed, states followed), the last will, a
//! broker that wants a password, one that speaks only TLS, and zigbee2mqtt
//! friendly names.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use rumqttc::{AsyncClient, ConnectionError, Event as NetEvent, MqttOptions, Packet, QoS};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use crate::config::{Config, HaButton, HomeConfig};
use crate::devices::mqtt::broker::{Mosquitto, certificates, password_file, users};
use crate::devices::mqtt::fake::FakeDevice;
use crate::devices::mqtt::*;
use crate::protocol::{ApprovalStatus, Event, EventKind, Mode, Op, Risk};
use crate::runtime::Pace;
use crate::session::{Session, SessionOptions};

/// The discovery schema: one definition per component, from Home
/// Assistant's MQTT pages (cited in the file).
const SCHEMA: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/ha-mqtt/discovery.schema.json"
));

/// Checks a discovery config against its component's definition; the
/// errors, one a line.
fn schema_errors(component: &str, config: &Value) -> Vec<String> {
    let mut schema: Value = serde_json::from_str(SCHEMA).expect("the schema is JSON");
    schema["$ref"] = json!(format!("#/$defs/{component}"));
    assert!(
        schema["$defs"].get(component).is_some(),
        "no definition for component `{component}`"
    );
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    validator
        .iter_errors(config)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

#[test]
fn the_schema_checker_refuses_what_home_assistant_would() {
    let d = Discovery::new("homeassistant", "rb");
    let button = d
        .configs()
        .into_iter()
        .find(|m| m.topic.contains("/button/"))
        .unwrap();
    let discovery::Payload::Text(text) = button.payload else {
        panic!("a text config")
    };
    let mut config: Value = serde_json::from_str(&text).unwrap();
    assert!(schema_errors("button", &config).is_empty());
    config["state_topic"] = json!("robobrain/rb/x");
    assert!(
        !schema_errors("button", &config).is_empty(),
        "a key a button does not have"
    );
    let mut config: Value = serde_json::from_str(&text).unwrap();
    config.as_object_mut().unwrap().remove("command_topic");
    assert!(
        !schema_errors("button", &config).is_empty(),
        "no command topic"
    );
    let battery =
        json!({"state_topic": "a/b", "device_class": "battery", "unit_of_measurement": "V"});
    assert!(
        !schema_errors("sensor", &battery).is_empty(),
        "a battery in volts"
    );
    let device = json!({"state_topic": "a/b", "device": {"name": "no identifiers"}});
    assert!(
        !schema_errors("sensor", &device).is_empty(),
        "a device without identifiers"
    );
    assert!(!schema_errors("image", &json!({"content_type": "image/png"})).is_empty());
}

/// A Home Assistant stand-in: a plain MQTT client that keeps the last
/// message of every topic under the discovery prefix and `robobrain/`.
struct HaClient {
    client: AsyncClient,
    seen: mpsc::UnboundedReceiver<(String, Vec<u8>, bool)>,
    last: BTreeMap<String, (Vec<u8>, bool)>,
}

impl HaClient {
    fn start(options: MqttOptions) -> Self {
        let (client, mut eventloop) = AsyncClient::new(options, 64);
        let (tx, seen) = mpsc::unbounded_channel();
        let sub = client.clone();
        tokio::spawn(async move {
            loop {
                match eventloop.poll().await {
                    Ok(NetEvent::Incoming(Packet::ConnAck(_))) => {
                        let _ = sub.try_subscribe("homeassistant/#", QoS::AtLeastOnce);
                        let _ = sub.try_subscribe("robobrain/#", QoS::AtLeastOnce);
                    }
                    Ok(NetEvent::Incoming(Packet::Publish(p))) => {
                        if tx.send((p.topic, p.payload.to_vec(), p.retain)).is_err() {
                            return;
                        }
                    }
                    Ok(_) => {}
                    Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                }
            }
        });
        Self {
            client,
            seen,
            last: BTreeMap::new(),
        }
    }

    /// Waits (20 s at most) until `topic`'s last payload is `want`.
    async fn until(&mut self, topic: &str, want: &str) {
        self.until_bytes(topic, want.as_bytes()).await;
    }

    /// Waits (20 s at most) until `topic`'s last payload is these bytes.
    async fn until_bytes(&mut self, topic: &str, want: &[u8]) {
        let found = tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                if self.last.get(topic).is_some_and(|(p, _)| p == want) {
                    return;
                }
                let (t, p, retain) = self.seen.recv().await.expect("the client runs");
                self.last.insert(t, (p, retain));
            }
        })
        .await;
        assert!(
            found.is_ok(),
            "`{topic}` never said {:?}; last: {:?}",
            String::from_utf8_lossy(want),
            self.last
                .get(topic)
                .map(|(p, _)| String::from_utf8_lossy(p))
        );
    }

    /// Waits until `n` discovery configs have arrived.
    async fn until_configs(&mut self, n: usize) -> BTreeMap<String, (Value, bool)> {
        let configs =
            |last: &BTreeMap<String, (Vec<u8>, bool)>| -> BTreeMap<String, (Value, bool)> {
                last.iter()
                    // An empty config removes the entity: not one.
                    .filter(|(t, (p, _))| {
                        t.starts_with("homeassistant/") && t.ends_with("/config") && !p.is_empty()
                    })
                    .map(|(t, (p, r))| {
                        (
                            t.clone(),
                            (serde_json::from_slice(p).expect("a JSON config"), *r),
                        )
                    })
                    .collect()
            };
        tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                if configs(&self.last).len() >= n {
                    return;
                }
                let (t, p, retain) = self.seen.recv().await.expect("the client runs");
                self.last.insert(t, (p, retain));
            }
        })
        .await
        .expect("every config within 20 s");
        configs(&self.last)
    }

    /// A press, as Home Assistant sends it: `payload_press` on `command_topic`.
    async fn press(&self, config: &Value) {
        let topic = config["command_topic"].as_str().expect("a command topic");
        let payload = config["payload_press"].as_str().unwrap_or("PRESS");
        self.client
            .publish(topic, QoS::AtLeastOnce, false, payload)
            .await
            .expect("published");
    }
}

/// The next event that matches, within 20 s.
async fn next_event(
    events: &mut broadcast::Receiver<Event>,
    want: impl Fn(&Event) -> bool,
) -> Event {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match events.recv().await {
                Ok(e) if want(&e) => return e,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("the run's events closed: {e}"),
            }
        }
    })
    .await
    .expect("the event came within 20 s")
}

/// An approval asked for.
fn is_request(e: &Event) -> bool {
    matches!(
        &e.kind,
        EventKind::Approval {
            status: ApprovalStatus::Requested,
            ..
        }
    )
}

/// A run with the home on the broker at `port`, every write needing approval.
fn config(name: &str, port: u16) -> Config {
    let dir = std::env::temp_dir().join(format!("rb-ha-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut config = Config {
        runs_dir: dir,
        ..Config::default()
    };
    config.memory.enabled = false;
    config.speech.voice = crate::voice::VoiceChoice::Text;
    config.home.mqtt = Some(format!("127.0.0.1:{port}"));
    config.home.hour = Some(12.0);
    config.home.node_id = "rb_test".into();
    config.policy.approve_risks = vec![Risk::LowWrite, Risk::HighWrite];
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn home_assistant_discovers_the_robot_and_its_buttons_reach_the_kernel() {
    let broker = Mosquitto::start("ha");
    // An older robobrain's Resume button, kept by the broker: removed.
    retain(
        broker.port,
        "old-robot",
        "homeassistant/button/rb_test/resume/config",
        r#"{"name":"Resume","command_topic":"robobrain/rb_test/command/resume"}"#,
    )
    .await;
    let mut config = config("discovery", broker.port);
    // Patrol and Dock turned on: a press of either only asks.
    config.home.buttons = vec![HaButton::EStop, HaButton::Patrol, HaButton::Dock];
    let options = SessionOptions {
        pace: Pace::RealTime { speed: 5.0 },
        ..SessionOptions::new("ha")
    };
    let mut session = Session::open(&config, options).await.unwrap();
    let mut events = session.take_events();
    let mut ha = HaClient::start(MqttOptions::new("ha-stand-in", "127.0.0.1", broker.port));

    // Every config is where discovery wants it and valid for its component.
    ha.until_configs(9).await;
    // The robot says it is online after its configs: once that has reached
    // a client it is in the broker's store too, so the late client below
    // can only get it from there, retained (before, under load, the late
    // client could subscribe first and hear it live).
    ha.until("robobrain/rb_test/availability", "online").await;
    // …and retained: a client that comes later gets them from the broker's
    // store — and not the removed Resume.
    let mut late = HaClient::start(MqttOptions::new("ha-late", "127.0.0.1", broker.port));
    late.until_configs(9).await;
    late.until("robobrain/rb_test/availability", "online").await;
    // Every retained config has come by now (before the states).
    let configs = late.until_configs(9).await;
    assert!(
        late.last["robobrain/rb_test/availability"].1,
        "availability is retained"
    );
    let mut by_id = BTreeMap::new();
    let mut devices = Vec::new();
    for (topic, (config, retained)) in &configs {
        assert!(retained, "{topic} is retained");
        let levels: Vec<&str> = topic.split('/').collect();
        let [prefix, component, node, object, "config"] = levels[..] else {
            panic!("{topic}: expected <prefix>/<component>/<node_id>/<object_id>/config");
        };
        assert_eq!((prefix, node), ("homeassistant", "rb_test"), "{topic}");
        let errors = schema_errors(component, config);
        assert!(errors.is_empty(), "{topic}: {errors:#?}\n{config:#}");
        assert_eq!(
            config["availability_topic"],
            "robobrain/rb_test/availability"
        );
        devices.push(config["device"].clone());
        by_id.insert(object.to_string(), (component.to_string(), config.clone()));
    }
    assert!(
        devices.windows(2).all(|w| w[0] == w[1]),
        "one shared device block"
    );
    assert_eq!(devices[0]["identifiers"], json!(["robobrain_rb_test"]));
    assert!(devices[0]["sw_version"].is_string() && devices[0]["model"].is_string());
    let components: Vec<(&str, &str)> = by_id
        .iter()
        .map(|(id, (c, _))| (id.as_str(), c.as_str()))
        .collect();
    assert_eq!(
        components,
        [
            ("activity", "sensor"),
            ("alert", "binary_sensor"),
            ("battery", "sensor"),
            ("dock", "button"),
            ("estop", "button"),
            ("frame", "image"),
            ("mode", "sensor"),
            ("patrol", "button"),
            ("zone", "sensor"),
        ]
    );
    assert_eq!(by_id["battery"].1["device_class"], "battery");
    assert_eq!(by_id["battery"].1["unit_of_measurement"], "%");

    // Online, and the states as the run has them.
    ha.until("robobrain/rb_test/availability", "online").await;
    ha.until("robobrain/rb_test/mode", "IDLE").await;
    ha.until("robobrain/rb_test/activity", "IDLE").await;
    ha.until("robobrain/rb_test/alert", "OFF").await;
    let battery = session.runtime().snapshot().robot.battery_pct;
    ha.until("robobrain/rb_test/battery", &format!("{battery:.0}"))
        .await;
    // In no zone, Home Assistant's unknown.
    let zone = session.runtime().snapshot().robot.zone;
    let zone = zone.unwrap_or_else(|| "None".into());
    ha.until("robobrain/rb_test/zone", &zone).await;

    // A press only asks: the patrol waits for the operator before it moves.
    ha.press(&by_id["patrol"].1).await;
    let asked = next_event(&mut events, is_request).await;
    let EventKind::Approval {
        op,
        requested_by,
        reason,
        ..
    } = &asked.kind
    else {
        unreachable!("matched above")
    };
    assert!(
        matches!(op, Op::Dispatch { skill, .. } if skill == "navigate_to"),
        "{asked:?}"
    );
    assert!(reason.contains("only asks"), "{asked:?}");
    // The card says who asked: MQTT names no broker user, so the topic
    // the press came on (its ACL says who may write to it).
    let pressed = |object: &str| {
        let topic = by_id[object].1["command_topic"].as_str().unwrap();
        Some(crate::protocol::Origin::new(
            crate::protocol::Door::HomeAssistant,
            format!("topic {topic}"),
        ))
    };
    assert_eq!(*requested_by, pressed("patrol"), "{asked:?}");
    assert!(
        !session.runtime().snapshot().approvals.is_empty(),
        "the patrol waits for approval"
    );

    // E-stop stops: the kernel goes SAFE, and Home Assistant sees it.
    ha.press(&by_id["estop"].1).await;
    let safe = next_event(&mut events, |e| {
        matches!(&e.kind, EventKind::Mode { to: Mode::Safe, .. })
    })
    .await;
    assert!(format!("{safe:?}").contains("E-stop pressed"), "{safe:?}");
    assert_eq!(safe.origin, pressed("estop"), "{safe:?}");
    assert!(session.runtime().snapshot().estop);
    ha.until("robobrain/rb_test/mode", "SAFE").await;

    // Nothing releases it from Home Assistant: a press on the old Resume
    // topic is ignored, and said.
    ha.client
        .publish(
            "robobrain/rb_test/command/resume",
            QoS::AtLeastOnce,
            false,
            "PRESS",
        )
        .await
        .unwrap();
    let ignored = next_event(
        &mut events,
        |e| matches!(&e.kind, EventKind::Error { code, .. } if code == "button_not_offered"),
    )
    .await;
    assert_eq!(
        ignored.origin,
        Some(crate::protocol::Origin::new(
            crate::protocol::Door::HomeAssistant,
            "topic robobrain/rb_test/command/resume"
        ))
    );
    assert!(session.runtime().snapshot().estop);
    session
        .runtime()
        .send(
            crate::protocol::Command::ResetEStop,
            crate::protocol::Origin::console(),
        )
        .await
        .unwrap();
    next_event(&mut events, |e| {
        matches!(
            &e.kind,
            EventKind::Mode {
                from: Mode::Safe,
                ..
            }
        )
    })
    .await;
    assert!(!session.runtime().snapshot().estop);

    // Dock is what an operator says for it: the kernel hears `charge`,
    // and the way to the dock waits for the operator too.
    ha.press(&by_id["dock"].1).await;
    let heard = next_event(&mut events, |e| matches!(&e.kind, EventKind::Intent { .. })).await;
    assert!(
        matches!(&heard.kind, EventKind::Intent { intent, processed_locally: true, .. } if intent == "charge"),
        "{heard:?}"
    );
    let asked = next_event(&mut events, is_request).await;
    assert!(
        matches!(&asked.kind, EventKind::Approval { reason, requested_by, .. }
            if reason.contains("only asks") && *requested_by == pressed("dock")),
        "{asked:?}"
    );

    // Stopped, the robot says it is offline.
    session.stop().await.unwrap();
    ha.until("robobrain/rb_test/availability", "offline").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_will_says_offline_when_the_robot_vanishes() {
    let broker = Mosquitto::start("will");
    let mqtt = MqttConfig::new("127.0.0.1", broker.port);
    let (_tx, snapshots) = tokio::sync::watch::channel(crate::protocol::Snapshot::default());
    let publisher = HaPublisher::start(
        &mqtt,
        Discovery::new("homeassistant", "will"),
        snapshots,
        Box::new(|_, _| Ok(())),
    );
    let mut ha = HaClient::start(MqttOptions::new("ha-will", "127.0.0.1", broker.port));
    ha.until("robobrain/will/availability", "online").await;
    ha.until("robobrain/will/battery", "0").await;
    // Gone without a word (no `stop`): the broker speaks its will.
    drop(publisher);
    ha.until("robobrain/will/availability", "offline").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_newest_alert_frame_is_published_as_the_image_bytes() {
    let broker = Mosquitto::start("frame");
    let dir = std::env::temp_dir().join(format!("rb-ha-frame-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let png = dir.join("g1.png");
    let bytes = b"\x89PNG\r\n\x1a\nnot really a picture".to_vec();
    std::fs::write(&png, &bytes).unwrap();
    let (tx, snapshots) = tokio::sync::watch::channel(crate::protocol::Snapshot::default());
    let publisher = HaPublisher::start(
        &MqttConfig::new("127.0.0.1", broker.port),
        Discovery::new("homeassistant", "frame"),
        snapshots,
        Box::new(|_, _| Ok(())),
    );
    let mut ha = HaClient::start(MqttOptions::new("ha-frame", "127.0.0.1", broker.port));
    ha.until("robobrain/frame/alert", "OFF").await;
    let mut snapshot = crate::protocol::Snapshot::default();
    snapshot.alerts.push(crate::protocol::IncidentRecord {
        id: "i1".into(),
        time: 1.0,
        zone: "kitchen".into(),
        kinds: vec!["smoke".into()],
        description: "smoke in the kitchen".into(),
        evidence: Some(png.display().to_string()),
        vision: Value::Null,
        status: crate::protocol::AlertStatus::Open,
        acknowledged_by: None,
        acknowledged_at: None,
    });
    tx.send_replace(snapshot);
    ha.until("robobrain/frame/alert", "ON").await;
    ha.until_bytes("robobrain/frame/frame", &bytes).await;
    publisher.stop().await;
}

/// Publishes `payload` on `topic`, retained, as client `id`, and waits
/// until the broker has it (its PUBACK).
async fn retain(port: u16, id: &str, topic: &str, payload: &str) {
    let (client, mut eventloop) = AsyncClient::new(MqttOptions::new(id, "127.0.0.1", port), 8);
    client
        .publish(topic, QoS::AtLeastOnce, true, payload)
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Ok(NetEvent::Incoming(Packet::PubAck(_))) = eventloop.poll().await {
                return;
            }
        }
    })
    .await
    .expect("the broker took the retained message within 10 s");
}

/// A retained PRESS is an old press the broker kept: it must never act
/// (it used to press again on every reconnect). A live press still does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retained_press_is_never_acted_on_and_a_live_one_is() {
    let broker = Mosquitto::start("retained");
    let dock = crate::protocol::Command::Say {
        text: "go charge".into(),
    };
    retain(
        broker.port,
        "old-press",
        "robobrain/ret/command/estop",
        "PRESS",
    )
    .await;
    let mut ha = HaClient::start(MqttOptions::new("ha-ret", "127.0.0.1", broker.port));
    // Connected, then again (a new publisher, the same broker store).
    for round in 0..2 {
        let (_tx, snapshots) = tokio::sync::watch::channel(crate::protocol::Snapshot::default());
        let (sink, mut pressed) = mpsc::unbounded_channel();
        let publisher = HaPublisher::start(
            &MqttConfig::new("127.0.0.1", broker.port),
            Discovery::new("homeassistant", "ret").with_buttons(&HaButton::ALL),
            snapshots,
            Box::new(move |command, _| sink.send(command).map_err(|e| e.to_string())),
        );
        // `online` goes out after the subscription: the broker has handed
        // the retained press over by now, before the live press that follows.
        if round > 0 {
            ha.until("robobrain/ret/availability", "offline").await;
        }
        ha.until("robobrain/ret/availability", "online").await;
        ha.client
            .publish(
                "robobrain/ret/command/dock",
                QoS::AtLeastOnce,
                false,
                "PRESS",
            )
            .await
            .unwrap();
        let first = loop {
            let c = tokio::time::timeout(Duration::from_secs(20), pressed.recv())
                .await
                .expect("the live press arrived")
                .unwrap();
            if !matches!(c, crate::protocol::Command::Report { .. }) {
                break c;
            }
        };
        assert_eq!(
            first, dock,
            "round {round}: the retained E-stop press was acted on"
        );
        publisher.stop().await;
    }
}

/// What the broker answers a connection made with `options`: the
/// CONNACK, or the error.
async fn connect_once(options: MqttOptions) -> Result<(), String> {
    let (_client, mut eventloop) = AsyncClient::new(options, 8);
    let answer = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match eventloop.poll().await {
                Ok(NetEvent::Incoming(Packet::ConnAck(_))) => return Ok(()),
                Ok(_) => {}
                Err(e) => return Err(e),
            }
        }
    })
    .await
    .expect("the broker answered within 10 s");
    answer.map_err(|e: ConnectionError| e.to_string())
}

/// `[home]` for the broker at `port` as user `robot` with the password in a file.
fn home_with_password(port: u16, dir: &Path) -> HomeConfig {
    let secret = dir.join("mqtt-password");
    std::fs::write(&secret, "s3cret\n").unwrap();
    HomeConfig {
        mqtt: Some(format!("127.0.0.1:{port}")),
        mqtt_username: Some("robot".into()),
        mqtt_password_file: Some(secret),
        ..HomeConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_that_wants_a_password_gets_the_one_from_the_file() {
    let broker = Mosquitto::start_with("auth", password_file);
    let dir = std::env::temp_dir().join(format!("rb-ha-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut home = home_with_password(broker.port, &dir);
    let mqtt = MqttConfig::from_home(&home).unwrap().unwrap();
    assert_eq!(
        format!("{:?}", mqtt.credentials),
        "Some((\"robot\", [redacted]))"
    );
    connect_once(mqtt.options("auth-ok")).await.unwrap();

    let anonymous = MqttConfig::new("127.0.0.1", broker.port);
    let e = connect_once(anonymous.options("auth-anon"))
        .await
        .unwrap_err();
    assert!(
        e.contains("NotAuthorized") || e.contains("BadUserNamePassword"),
        "{e}"
    );
    std::fs::write(home.mqtt_password_file.as_ref().unwrap(), "wrong\n").unwrap();
    let wrong = MqttConfig::from_home(&home).unwrap().unwrap();
    let e = connect_once(wrong.options("auth-wrong")).await.unwrap_err();
    assert!(
        e.contains("NotAuthorized") || e.contains("BadUserNamePassword"),
        "{e}"
    );

    // The password from an environment variable that is not set: named.
    home.mqtt_password_file = None;
    home.mqtt_password_env = Some("ROBOBRAIN_TEST_UNSET_MQTT_PASSWORD".into());
    assert_eq!(
        MqttConfig::from_home(&home).unwrap_err().to_string(),
        "[home] mqtt password: the environment variable ROBOBRAIN_TEST_UNSET_MQTT_PASSWORD is not set"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_broker_is_reached_with_the_configured_ca_and_the_robot_is_published_over_it() {
    let mut ca_dir = None;
    let broker = Mosquitto::start_with("tls", |dir| {
        certificates(dir);
        ca_dir = Some(dir.to_path_buf());
        format!(
            "cafile {0}/ca.crt\ncertfile {0}/server.crt\nkeyfile {0}/server.key\n{1}",
            dir.display(),
            password_file(dir)
        )
    });
    let dir = ca_dir.unwrap();
    let mut home = home_with_password(broker.port, &dir);
    home.mqtt_ca = Some(dir.join("ca.crt"));
    let mqtt = MqttConfig::from_home(&home).unwrap().unwrap();
    connect_once(mqtt.options("tls-ok")).await.unwrap();

    // Plain TCP to a TLS listener, and a CA that did not sign the broker's certificate: refused.
    let mut plain = mqtt.clone();
    plain.tls_ca = None;
    assert!(connect_once(plain.options("tls-plain")).await.is_err());
    home.mqtt_ca = Some(dir.join("other.crt"));
    let other = MqttConfig::from_home(&home).unwrap().unwrap();
    let e = connect_once(other.options("tls-other")).await.unwrap_err();
    assert!(
        e.to_lowercase().contains("certificate") || e.contains("UnknownIssuer"),
        "{e}"
    );
    home.mqtt_ca = Some(dir.join("missing.crt"));
    let e = MqttConfig::from_home(&home).unwrap_err().to_string();
    assert!(
        e.starts_with("[home] mqtt_ca ") && e.contains("missing.crt"),
        "{e}"
    );

    // The discovery publisher over TLS with the password, seen by a TLS client.
    let (_tx, snapshots) = tokio::sync::watch::channel(crate::protocol::Snapshot::default());
    let publisher = HaPublisher::start(
        &mqtt,
        Discovery::new("homeassistant", "tls"),
        snapshots,
        Box::new(|_, _| Ok(())),
    );
    let mut ha = HaClient::start(mqtt.options("ha-tls"));
    ha.until("robobrain/tls/availability", "online").await;
    publisher.stop().await;
    ha.until("robobrain/tls/availability", "offline").await;
}

#[test]
fn zigbee2mqtt_friendly_names_come_from_the_config_and_the_bridge() {
    use crate::hci::{Home, lock};

    let rt = tokio::runtime::Runtime::new().unwrap();
    let broker = Mosquitto::start("names");
    let (_light, _kettle) = {
        let _inside = rt.enter();
        (
            FakeDevice::start(
                broker.port,
                "zigbee2mqtt",
                "Living Room/Ceiling Light",
                json!({"state": "OFF", "brightness": 0}),
            ),
            FakeDevice::start(
                broker.port,
                "zigbee2mqtt",
                "Kitchen Kettle",
                json!({"state": "OFF", "power": 0}),
            ),
        )
    };
    // The bridge's retained device list, as zigbee2mqtt publishes it.
    rt.block_on(async {
        let (client, mut eventloop) =
            AsyncClient::new(MqttOptions::new("bridge", "127.0.0.1", broker.port), 8);
        let devices = json!([
            {"ieee_address": "0x0000000000000000", "type": "Coordinator", "friendly_name": "Coordinator"},
            {"ieee_address": "0x00158d0001a2b3c4", "type": "Router", "friendly_name": "Living Room/Ceiling Light"},
            {"ieee_address": "0x00158d0001a2b3c5", "type": "Router", "friendly_name": "Kitchen Kettle"},
        ]);
        client
            .publish("zigbee2mqtt/bridge/devices", QoS::AtLeastOnce, true, devices.to_string())
            .await
            .unwrap();
        loop {
            if let Ok(NetEvent::Incoming(Packet::PubAck(_))) = eventloop.poll().await {
                break;
            }
        }
    });
    let config = HomeConfig {
        mqtt: Some(format!("127.0.0.1:{}", broker.port)),
        hour: Some(12.0),
        // The light by its explicit name, the kettle by its IEEE address.
        mqtt_names: [
            (
                "living_room_light".to_string(),
                "Living Room/Ceiling Light".to_string(),
            ),
            ("kettle_plug".to_string(), "0x00158D0001A2B3C5".to_string()),
        ]
        .into(),
        ..HomeConfig::default()
    };
    let home = std::sync::Arc::new(std::sync::Mutex::new(
        Home::load(&config, "apartment", "t").unwrap(),
    ));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        lock(&home).poll();
        let online = |id: &str| lock(&home).devices.get(id).is_some_and(|d| d.online);
        if online("living_room_light") && online("kettle_plug") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the named devices never came online"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let turn = lock(&home).turn("打开客厅灯").unwrap();
    assert_eq!(turn.intent, "home_control", "{turn:?}");
    assert_eq!(
        lock(&home).devices.get("living_room_light").unwrap().state["on"],
        json!(true)
    );
    // A device neither named nor on the bridge stays offline.
    assert!(!lock(&home).devices.get("bedroom_curtain").unwrap().online);
}

#[test]
fn the_bridge_alone_names_devices_whose_friendly_name_is_their_id() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let broker = Mosquitto::start("learn");
    let _light = {
        let _inside = rt.enter();
        FakeDevice::start(
            broker.port,
            "zigbee2mqtt",
            "Living Room Light",
            json!({"state": "OFF", "brightness": 0}),
        )
    };
    rt.block_on(async {
        let (client, mut eventloop) =
            AsyncClient::new(MqttOptions::new("bridge-learn", "127.0.0.1", broker.port), 8);
        let devices = json!([
            {"ieee_address": "0x00158d0001a2b3c4", "type": "Router", "friendly_name": "Living Room Light"},
        ]);
        client
            .publish("zigbee2mqtt/bridge/devices", QoS::AtLeastOnce, true, devices.to_string())
            .await
            .unwrap();
        loop {
            if let Ok(NetEvent::Incoming(Packet::PubAck(_))) = eventloop.poll().await {
                break;
            }
        }
    });
    let home = crate::devices::builtin_home().unwrap();
    let mut mqtt = MqttConfig::new("127.0.0.1", broker.port);
    mqtt.client_id = format!("learn-{}", broker.port);
    mqtt.bridge_names = true;
    let mut backend = MqttBackend::connect(mqtt, &home.devices, &BTreeMap::new()).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let (mut online, mut state_heard) = (false, false);
    loop {
        use crate::devices::DeviceBackend;
        for update in backend.poll() {
            if update.device == "living_room_light" {
                online = update.online == Some(true);
                state_heard |= update.state.get("on") == Some(&json!(false));
            }
        }
        if online && state_heard {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the light was never learnt from the bridge"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(backend.names()["living_room_light"], "Living Room Light");
    assert_eq!(backend.names()["kettle_plug"], "kettle_plug");
}

/// The ACL docs/home-io.md gives a home: robobrain's user next to Home
/// Assistant's.
const HOME_ACL: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/ha-mqtt/home.acl"
));

/// A broker that wants passwords (`robobrain`/`robot-pw`,
/// `homeassistant`/`ha-pw`) and applies `acl`.
fn broker_with_acl(name: &str, acl: &str) -> Mosquitto {
    let acl = acl.to_string();
    Mosquitto::start_with(name, move |dir| {
        std::fs::write(dir.join("acl"), acl).unwrap();
        format!(
            "{}acl_file {}/acl\n",
            users(
                dir,
                &[("robobrain", "robot-pw"), ("homeassistant", "ha-pw")]
            ),
            dir.display()
        )
    })
}

/// The robot's `[home]` connection as its broker user.
fn robot_login(port: u16) -> MqttConfig {
    let mut mqtt = MqttConfig::new("127.0.0.1", port);
    mqtt.credentials = Some(("robobrain".into(), crate::llm::Secret::new("robot-pw")));
    mqtt
}

/// Home Assistant, logged in as its own user.
fn home_assistant(port: u16, id: &str) -> HaClient {
    let mut options = MqttOptions::new(id, "127.0.0.1", port);
    options.set_credentials("homeassistant", "ha-pw");
    HaClient::start(options)
}

/// The run's side of a publisher: its snapshots (kept, or it stops) and
/// what the publisher hands the run.
type Run = (
    tokio::sync::watch::Sender<crate::protocol::Snapshot>,
    mpsc::UnboundedReceiver<crate::protocol::Command>,
);

/// A publisher for node `robobrain` on `mqtt`, and its run's side.
fn publisher(mqtt: &MqttConfig) -> (HaPublisher, Run) {
    let (tx, snapshots) = tokio::sync::watch::channel(crate::protocol::Snapshot::default());
    let (sink, commands) = mpsc::unbounded_channel();
    let publisher = HaPublisher::start(
        mqtt,
        Discovery::new("homeassistant", "robobrain"),
        snapshots,
        Box::new(move |command, _| sink.send(command).map_err(|e| e.to_string())),
    );
    (publisher, (tx, commands))
}

/// The next report the publisher makes to the run (20 s at most),
/// skipping presses.
async fn next_report(
    commands: &mut mpsc::UnboundedReceiver<crate::protocol::Command>,
) -> (Option<String>, String) {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let crate::protocol::Command::Report { code, message } =
                commands.recv().await.expect("the publisher runs")
            {
                return (code, message);
            }
        }
    })
    .await
    .expect("a report within 20 s")
}

/// With the documented ACL, passwords on both sides and Home Assistant's
/// conventions (retained configs, its birth message, the last will), the
/// robot is discovered, pressed, and says the broker took everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_documented_home_acl_serves_discovery_next_to_a_home_assistant_user() {
    let broker = broker_with_acl("acl-ok", HOME_ACL);
    let (publisher, (_run, mut commands)) = publisher(&robot_login(broker.port));
    let mut ha = home_assistant(broker.port, "ha-acl");
    // Four sensors, the alert, the E-stop (the one button by default), the frame.
    let configs = ha.until_configs(7).await;
    ha.until("robobrain/robobrain/availability", "online").await;
    let (code, message) = next_report(&mut commands).await;
    assert_eq!(code, None, "{message}");

    // Home Assistant's user presses the E-stop: it reaches the run.
    let estop = &configs["homeassistant/button/robobrain/estop/config"].0;
    ha.press(estop).await;
    let pressed = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let c = commands.recv().await.expect("the publisher runs");
            if !matches!(c, crate::protocol::Command::Report { .. }) {
                return c;
            }
        }
    })
    .await
    .expect("the press within 20 s");
    assert_eq!(pressed, crate::protocol::Command::EStop);

    // Home Assistant restarts (its birth message): announced again, and taken.
    ha.client
        .publish("homeassistant/status", QoS::AtLeastOnce, false, "online")
        .await
        .unwrap();
    let (code, message) = next_report(&mut commands).await;
    assert_eq!(code, None, "{message}");

    // Gone without a word: the broker speaks the will, the ACL allowing it.
    drop(publisher);
    ha.until("robobrain/robobrain/availability", "offline")
        .await;
}

/// A broker with `acl` (the documented one, changed), the robot's
/// publisher on it, and the refusal it reports (`mqtt_refused`).
async fn refused_under(name: &str, acl: &str) -> (Mosquitto, HaPublisher, String) {
    assert_ne!(acl, HOME_ACL, "the documented ACL changed: update the test");
    let broker = broker_with_acl(name, acl);
    let (publisher, (_run, mut commands)) = publisher(&robot_login(broker.port));
    let (code, message) = next_report(&mut commands).await;
    assert_eq!(code.as_deref(), Some("mqtt_refused"), "{message}");
    (broker, publisher, message)
}

/// The issue's broker: the robot may read Home Assistant's configs but not
/// write them. mosquitto drops each publish in silence; robobrain says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discovery_publish_the_acl_denies_is_reported_not_silent() {
    let acl = HOME_ACL.replace(
        "topic readwrite homeassistant/+/robobrain/+/config",
        "topic read homeassistant/+/robobrain/+/config",
    );
    let (_broker, publisher, message) = refused_under("acl-pub", &acl).await;
    assert!(
        message.contains("homeassistant/button/robobrain/estop/config")
            && message.contains("did not take"),
        "{message}"
    );
    // Its availability went through (the ACL allows that): not named.
    assert!(!message.contains("availability"), "{message}");
    publisher.stop().await;
}

/// A broker that ties each client's id to its user
/// (`use_username_as_clientid`): the home's two connections — the
/// zigbee2mqtt adapter and the discovery publisher — log in as two users
/// (`[home] discovery_username`), so neither closes the other; the robot
/// is announced, a press reaches the run, and the broker never closed a
/// connection for a takeover.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_home_s_two_connections_log_in_as_two_users_on_a_broker_that_ties_ids_to_users() {
    let acl = HOME_ACL.replace(
        "topic readwrite homeassistant/+/robobrain/+/config\ntopic read homeassistant/status\ntopic readwrite robobrain/robobrain/#\n",
        "\nuser robobrain-ha\ntopic readwrite homeassistant/+/robobrain/+/config\ntopic read homeassistant/status\ntopic readwrite robobrain/robobrain/#\n",
    );
    assert_ne!(
        acl, HOME_ACL,
        "the documented ACL changed: update this test"
    );
    let broker = Mosquitto::start_with("two-users", move |dir| {
        std::fs::write(dir.join("acl"), acl).unwrap();
        format!(
            "{}acl_file {}/acl\nuse_username_as_clientid true\n",
            users(
                dir,
                &[
                    ("robobrain", "robot-pw"),
                    ("robobrain-ha", "robot-ha-pw"),
                    ("homeassistant", "ha-pw"),
                ]
            ),
            dir.display()
        )
    });
    let mut config = config("two-users", broker.port);
    config.home.node_id = "robobrain".into();
    let secrets = config.runs_dir.join("secrets");
    std::fs::create_dir_all(&secrets).unwrap();
    for (file, password) in [("home", "robot-pw"), ("ha", "robot-ha-pw")] {
        std::fs::write(secrets.join(file), password).unwrap();
    }
    config.home.mqtt_username = Some("robobrain".into());
    config.home.mqtt_password_file = Some(secrets.join("home"));
    config.home.discovery_username = Some("robobrain-ha".into());
    config.home.discovery_password_file = Some(secrets.join("ha"));
    let options = SessionOptions {
        pace: Pace::RealTime { speed: 5.0 },
        ..SessionOptions::new("two-users")
    };
    let mut session = Session::open(&config, options).await.unwrap();
    let mut events = session.take_events();
    let taken = next_event(&mut events, |e| {
        matches!(&e.kind, EventKind::Log { message, .. } if message.contains("took every config"))
            || matches!(&e.kind, EventKind::Error { code, .. } if code == "mqtt_refused")
    })
    .await;
    assert!(
        matches!(&taken.kind, EventKind::Log { .. }),
        "{taken:?}\n{}",
        broker.log()
    );
    let mut ha = home_assistant(broker.port, "homeassistant");
    let configs = ha.until_configs(7).await;
    ha.press(&configs["homeassistant/button/robobrain/estop/config"].0)
        .await;
    next_event(&mut events, |e| {
        matches!(&e.kind, EventKind::Mode { to: Mode::Safe, .. })
    })
    .await;
    session.stop().await.unwrap();
    let log = broker.log();
    assert!(
        log.contains("as robobrain-ha") || log.contains("u'robobrain-ha'"),
        "the publisher logged in as its own user:\n{log}"
    );
    assert!(
        !log.contains("already connected"),
        "a connection was closed for another with its id:\n{log}"
    );
}

/// A broker whose ACL lets the robot publish on its own topics but not
/// read its button presses. mosquitto grants the subscription (its SUBACK
/// says nothing) and never delivers a press; robobrain's probe on its own
/// command topics is not heard back, and it says so — the buttons, the
/// E-stop among them, do not reach it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_button_topic_the_robot_may_not_read_is_reported_not_silent() {
    let acl = HOME_ACL.replace(
        "topic readwrite robobrain/robobrain/#",
        "topic write robobrain/robobrain/#\ntopic read robobrain/robobrain/availability",
    );
    let (_broker, _publisher, message) = refused_under("acl-sub", &acl).await;
    assert!(
        message.contains("(robobrain/robobrain/command/probe)")
            && message.contains("cannot read robobrain/robobrain/command/+")
            && message.contains("the E-stop among them"),
        "the unread presses are named, and only they: {message}"
    );
}
