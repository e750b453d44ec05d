//! What the fleet's tests share (feature `test-utils`): a mosquitto with a
//! fleet's users and ACL, VDA 5050's official JSON Schemas as an outside
//! validator, and an observer that hears everything as the operator.

// A test helper: failing the test is what it is for.
#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::time::Duration;

use rumqttc::{AsyncClient, Event as NetEvent, MqttOptions, Packet, QoS};
use serde_json::Value;
use tokio::sync::mpsc;

use super::topics;
use crate::devices::mqtt::broker::{Mosquitto, users};

/// The operator's user name and password on a test broker.
pub const OPERATOR: (&str, &str) = ("operator", "op-pass");

/// The password of robot `id` on a test broker.
pub fn robot_password(id: &str) -> String {
    format!("{id}-pass")
}

/// A broker on loopback for robots `robots` (each its id as user name,
/// [`robot_password`]) and the operator, with the fleet ACL; `extra`
/// (given the broker's folder) adds listener settings such as TLS.
pub fn fleet_broker(
    name: &str,
    robots: &[&str],
    extra: impl FnOnce(&std::path::Path) -> String,
) -> Mosquitto {
    Mosquitto::start_with(name, |dir| {
        let passwords: Vec<String> = robots.iter().map(|r| robot_password(r)).collect();
        let mut logins: Vec<(&str, &str)> = robots
            .iter()
            .zip(&passwords)
            .map(|(r, p)| (*r, p.as_str()))
            .collect();
        logins.push(OPERATOR);
        logins.push(("viewer", "view-pass"));
        let listener = users(dir, &logins);
        std::fs::write(
            dir.join("acl"),
            topics::mosquitto_acl(&[OPERATOR.0], &["viewer"]),
        )
        .expect("writing the ACL");
        format!(
            "{listener}acl_file {}/acl\nmessage_size_limit 1048576\n{}",
            dir.display(),
            extra(dir)
        )
    })
}

/// VDA 5050 v2.1's JSON Schemas (`tests/data/vda5050/json_schemas`).
pub struct Schemas {
    validators: HashMap<&'static str, jsonschema::Validator>,
}

impl Schemas {
    /// Loads the six schemas.
    pub fn load() -> Self {
        let dir = crate::testing::test_data("vda5050/json_schemas");
        let validators = [
            "connection",
            "state",
            "visualization",
            "factsheet",
            "order",
            "instantActions",
        ]
        .into_iter()
        .map(|name| {
            let path = dir.join(format!("{name}.schema"));
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let schema: Value = serde_json::from_str(&text).unwrap();
            let validator = jsonschema::options()
                .should_validate_formats(true)
                .build(&schema)
                .unwrap_or_else(|e| panic!("{name}.schema: {e}"));
            (name, validator)
        })
        .collect();
        Self { validators }
    }

    /// Whether `message` is valid for `leaf` (`state`, `order`, …).
    pub fn valid(&self, leaf: &str, message: &Value) -> bool {
        self.validators
            .get(leaf)
            .unwrap_or_else(|| panic!("no VDA 5050 schema for `{leaf}`"))
            .is_valid(message)
    }

    /// Panics, naming every error, unless `message` is valid for `leaf`
    /// (`state`, `order`, …).
    pub fn check(&self, leaf: &str, message: &Value) {
        let validator = self
            .validators
            .get(leaf)
            .unwrap_or_else(|| panic!("no VDA 5050 schema for `{leaf}`"));
        let errors: Vec<String> = validator
            .iter_errors(message)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{leaf} does not validate against VDA 5050's schema: {errors:#?}\n{message:#}"
        );
    }
}

/// A client that hears every topic it may read and checks every VDA 5050
/// message it hears against the schemas.
pub struct Observer {
    /// The client (to publish as this user).
    pub client: AsyncClient,
    rx: mpsc::UnboundedReceiver<(String, Vec<u8>)>,
    qos: std::sync::Arc<std::sync::Mutex<HashMap<String, u8>>>,
    schemas: Schemas,
    /// How many VDA 5050 messages were validated.
    pub validated: usize,
    history: Vec<(String, Vec<u8>)>,
    /// Where [`Observer::until`] starts looking in the history.
    from: usize,
    task: tokio::task::JoinHandle<()>,
}

impl Observer {
    /// Connects to `port` as `user`/`password` and subscribes to both trees.
    pub async fn start(port: u16, name: &str, user: &str, password: &str) -> Self {
        let mut options = MqttOptions::new(name, "127.0.0.1", port);
        options.set_credentials(user, password);
        options.set_max_packet_size(4 * 1024 * 1024, 4 * 1024 * 1024);
        let (client, mut eventloop) = AsyncClient::new(options, 256);
        client
            .subscribe("robobrain/#", QoS::AtLeastOnce)
            .await
            .unwrap();
        client.subscribe("uagv/#", QoS::AtLeastOnce).await.unwrap();
        let (tx, rx) = mpsc::unbounded_channel();
        let qos = std::sync::Arc::new(std::sync::Mutex::new(HashMap::new()));
        let seen_qos = qos.clone();
        let task = tokio::spawn(async move {
            loop {
                match eventloop.poll().await {
                    Ok(NetEvent::Incoming(Packet::Publish(p))) => {
                        seen_qos
                            .lock()
                            .unwrap()
                            .insert(p.topic.clone(), p.qos as u8);
                        if tx.send((p.topic, p.payload.to_vec())).is_err() {
                            return;
                        }
                    }
                    Ok(_) => {}
                    Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                }
            }
        });
        Self {
            client,
            rx,
            qos,
            schemas: Schemas::load(),
            validated: 0,
            history: Vec::new(),
            from: 0,
            task,
        }
    }

    /// The QoS the newest message on `topic` came with (the observer
    /// subscribes with 1, so this is the publisher's, up to 1).
    pub fn qos_of(&self, topic: &str) -> Option<u8> {
        self.qos.lock().unwrap().get(topic).copied()
    }

    /// From now on, [`Observer::until`] looks only at messages heard after this.
    pub fn mark(&mut self) {
        while let Ok(message) = self.rx.try_recv() {
            self.record(message);
        }
        self.from = self.history.len();
    }

    /// The first message since the last [`Observer::mark`] on a topic
    /// starting `topic_prefix` and ending `/leaf` whose JSON satisfies
    /// `want`, waiting 30 s at most; every VDA 5050 message heard is
    /// validated against its schema.
    pub async fn until(
        &mut self,
        topic_prefix: &str,
        leaf: &str,
        want: impl Fn(&Value) -> bool,
    ) -> Value {
        let matches = |topic: &str, payload: &[u8]| -> Option<Value> {
            if !(topic.starts_with(topic_prefix) && topic.ends_with(&format!("/{leaf}"))) {
                return None;
            }
            serde_json::from_slice::<Value>(payload)
                .ok()
                .filter(|v| want(v))
        };
        for (topic, payload) in &self.history[self.from..] {
            if let Some(v) = matches(topic, payload) {
                return v;
            }
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let next = tokio::time::timeout_at(deadline, self.rx.recv()).await;
            let Ok(Some((topic, payload))) = next else {
                let last =
                    self.history.iter().rev().find(|(t, _)| {
                        t.starts_with(topic_prefix) && t.ends_with(&format!("/{leaf}"))
                    });
                panic!(
                    "no {topic_prefix}…/{leaf} as wanted within 30 s; last: {:?}",
                    last.map(|(_, p)| String::from_utf8_lossy(p).into_owned())
                );
            };
            let found = matches(&topic, &payload);
            self.record((topic, payload));
            if let Some(v) = found {
                return v;
            }
        }
    }

    fn record(&mut self, (topic, payload): (String, Vec<u8>)) {
        if let (Some((_, kind)), Ok(value)) = (
            topics::parse(&topic),
            serde_json::from_slice::<Value>(&payload),
        ) && kind.is_vda()
        {
            self.schemas.check(kind.leaf(), &value);
            self.validated += 1;
        }
        self.history.push((topic, payload));
    }

    /// Every message heard so far on `topic` (waited for or passed by).
    pub fn heard(&mut self, topic: &str) -> Vec<Vec<u8>> {
        while let Ok(message) = self.rx.try_recv() {
            self.record(message);
        }
        self.history
            .iter()
            .filter(|(t, _)| t == topic)
            .map(|(_, p)| p.clone())
            .collect()
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
