//! The robot as Home Assistant sees it, through MQTT discovery — plain
//! logic with no IO: what to publish for a [`Snapshot`] and which
//! [`Command`] a button press on a command topic is.
//!
//! Every entity's config goes to
//! `<prefix>/<component>/<node_id>/<object_id>/config` (retained), with one
//! shared `device` block and the availability topic
//! `robobrain/<node_id>/availability` (`online`, and `offline` as the
//! connection's last will). States go to `robobrain/<node_id>/<object_id>`
//! (retained), and only when they change ([`Changes`]). Buttons publish
//! `PRESS` on `robobrain/<node_id>/command/<object_id>`.
//!
//! The keys follow Home Assistant's MQTT pages: discovery
//! (<https://www.home-assistant.io/integrations/mqtt/#mqtt-discovery>),
//! sensor (<https://www.home-assistant.io/integrations/sensor.mqtt/>),
//! binary sensor (<https://www.home-assistant.io/integrations/binary_sensor.mqtt/>),
//! button (<https://www.home-assistant.io/integrations/button.mqtt/>) and
//! image (<https://www.home-assistant.io/integrations/image.mqtt/>).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::protocol::{AlertStatus, Command, Snapshot};

/// What a button press payload must be.
pub const PAYLOAD_PRESS: &str = "PRESS";
/// The availability payloads.
pub const ONLINE: &str = "online";
/// The availability payload of the last will.
pub const OFFLINE: &str = "offline";

/// What one publish carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    /// Text (a state, a JSON config).
    Text(String),
    /// The bytes of this file (a PNG frame), read when published.
    File(PathBuf),
}

/// One publish: topic, payload, retained or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The topic.
    pub topic: String,
    /// The payload.
    pub payload: Payload,
    /// Whether the broker keeps it for later subscribers.
    pub retain: bool,
}

impl Message {
    fn text(topic: String, payload: impl Into<String>) -> Self {
        Self {
            topic,
            payload: Payload::Text(payload.into()),
            retain: true,
        }
    }
}

/// The robot's buttons (`[home] buttons`): what a press asks of the run.
pub use crate::config::HaButton as Button;

/// Object ids that earlier versions announced and no button has now
/// (`resume` released the E-stop's tasks from Home Assistant): their
/// configs are removed, so Home Assistant drops the entities.
const RETIRED: [&str; 1] = ["resume"];

/// The robot's sensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sensor {
    Battery,
    Mode,
    Activity,
    Zone,
}

impl Sensor {
    const ALL: [Self; 4] = [Self::Battery, Self::Mode, Self::Activity, Self::Zone];

    fn object_id(self) -> &'static str {
        match self {
            Self::Battery => "battery",
            Self::Mode => "mode",
            Self::Activity => "activity",
            Self::Zone => "zone",
        }
    }

    fn state(self, s: &Snapshot) -> String {
        match self {
            Self::Battery => format!("{:.0}", s.robot.battery_pct.clamp(0.0, 100.0)),
            Self::Mode => s.mode.as_str().to_string(),
            Self::Activity => s.activity.as_str().to_string(),
            // Home Assistant reads `None` as unknown.
            Self::Zone => s.robot.zone.clone().unwrap_or_else(|| "None".into()),
        }
    }
}

const ALERT: &str = "alert";
const FRAME: &str = "frame";

/// The robot's discovery: its names and topics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovery {
    /// Home Assistant's discovery prefix (`homeassistant`).
    pub prefix: String,
    /// The node id: one robot on the broker (`robobrain`).
    pub node_id: String,
    /// The device's name in Home Assistant.
    pub name: String,
    /// The software version shown on the device page.
    pub sw_version: String,
    /// The buttons offered (`[home] buttons`); the others' configs are
    /// removed.
    pub buttons: Vec<Button>,
}

impl Discovery {
    /// The discovery of robot `node_id` under `prefix`, named after its node.
    pub fn new(prefix: &str, node_id: &str) -> Self {
        Self {
            prefix: prefix.to_string(),
            node_id: node_id.to_string(),
            name: format!("robobrain {node_id}"),
            sw_version: env!("CARGO_PKG_VERSION").to_string(),
            buttons: vec![Button::EStop],
        }
    }

    /// The same discovery offering `buttons` (in [`Button::ALL`]'s order,
    /// each once).
    #[must_use]
    pub fn with_buttons(mut self, buttons: &[Button]) -> Self {
        self.buttons = Button::ALL
            .into_iter()
            .filter(|b| buttons.contains(b))
            .collect();
        self
    }

    fn base(&self) -> String {
        format!("robobrain/{}", self.node_id)
    }

    /// `robobrain/<node_id>/availability`: `online`, or `offline` (the last will).
    pub fn availability_topic(&self) -> String {
        format!("{}/availability", self.base())
    }

    /// The availability message.
    pub fn availability(&self, online: bool) -> Message {
        Message::text(
            self.availability_topic(),
            if online { ONLINE } else { OFFLINE },
        )
    }

    /// `<prefix>/<component>/<node_id>/<object_id>/config`.
    pub fn config_topic(&self, component: &str, object_id: &str) -> String {
        format!(
            "{}/{component}/{}/{object_id}/config",
            self.prefix, self.node_id
        )
    }

    /// Where an entity's state goes.
    pub fn state_topic(&self, object_id: &str) -> String {
        format!("{}/{object_id}", self.base())
    }

    /// Where a button's presses arrive.
    pub fn command_topic(&self, button: Button) -> String {
        format!("{}/command/{}", self.base(), button.object_id())
    }

    /// A message on the robot's own command topics that no button takes
    /// (`…/command/probe`, not retained): heard back, the broker lets the
    /// robot read the presses. mosquitto's ACL does not refuse a
    /// subscription it will never deliver to (MQTT 3.1.1 grants it), so
    /// this is how a denied read of the buttons — the E-stop's among them
    /// — is found.
    pub fn probe(&self) -> Message {
        Message {
            topic: format!("{}/command/probe", self.base()),
            payload: Payload::Text("probe".into()),
            retain: false,
        }
    }

    /// What to subscribe to for the buttons.
    pub fn command_subscription(&self) -> String {
        format!("{}/command/+", self.base())
    }

    /// Home Assistant's birth message topic (`<prefix>/status`): on its
    /// `online` the configs are published again.
    pub fn status_topic(&self) -> String {
        format!("{}/status", self.prefix)
    }

    /// The fields every entity shares: its name, unique id, the device, the
    /// availability.
    fn entity(&self, object_id: &str, name: &str) -> Value {
        json!({
            "name": name,
            "unique_id": format!("{}_{object_id}", self.node_id),
            "device": {
                "identifiers": [format!("robobrain_{}", self.node_id)],
                "name": self.name,
                "manufacturer": "robobrain",
                "model": "robobrain robot",
                "sw_version": self.sw_version,
            },
            "origin": {
                "name": "robobrain",
                "sw_version": self.sw_version,
            },
            "availability_topic": self.availability_topic(),
            "payload_available": ONLINE,
            "payload_not_available": OFFLINE,
        })
    }

    fn config(&self, component: &str, object_id: &str, name: &str, extra: Value) -> Message {
        let body = merge(self.entity(object_id, name), extra);
        Message::text(self.config_topic(component, object_id), body.to_string())
    }

    /// An empty retained config: Home Assistant removes the entity, the
    /// broker forgets the config it kept.
    fn removal(&self, component: &str, object_id: &str) -> Message {
        Message::text(self.config_topic(component, object_id), "")
    }

    /// Every entity's discovery config (retained): four sensors, the alert
    /// binary sensor, the buttons offered and the last watch frame's image
    /// — and an empty retained config for every button not offered (and
    /// every retired one), which removes it from Home Assistant.
    pub fn configs(&self) -> Vec<Message> {
        let mut out = Vec::new();
        for sensor in Sensor::ALL {
            let id = sensor.object_id();
            let state = json!({"state_topic": self.state_topic(id)});
            let extra = match sensor {
                Sensor::Battery => json!({
                    "state_topic": self.state_topic(id),
                    "device_class": "battery",
                    "unit_of_measurement": "%",
                    "state_class": "measurement",
                }),
                Sensor::Mode => merge(state, json!({"icon": "mdi:robot"})),
                Sensor::Activity => merge(state, json!({"icon": "mdi:run"})),
                Sensor::Zone => merge(state, json!({"icon": "mdi:map-marker"})),
            };
            let name = match sensor {
                Sensor::Battery => "Battery",
                Sensor::Mode => "Mode",
                Sensor::Activity => "Activity",
                Sensor::Zone => "Zone",
            };
            out.push(self.config("sensor", id, name, extra));
        }
        out.push(self.config(
            "binary_sensor",
            ALERT,
            "Alert",
            json!({
                "state_topic": self.state_topic(ALERT),
                "payload_on": "ON",
                "payload_off": "OFF",
                "device_class": "safety",
            }),
        ));
        for button in Button::ALL {
            if !self.buttons.contains(&button) {
                out.push(self.removal("button", button.object_id()));
                continue;
            }
            out.push(self.config(
                "button",
                button.object_id(),
                button.name(),
                json!({
                    "command_topic": self.command_topic(button),
                    "payload_press": PAYLOAD_PRESS,
                    "icon": button.icon(),
                }),
            ));
        }
        for id in RETIRED {
            out.push(self.removal("button", id));
        }
        out.push(self.config(
            "image",
            FRAME,
            "Last watch frame",
            json!({
                "image_topic": self.state_topic(FRAME),
                "content_type": "image/png",
            }),
        ));
        out
    }

    /// The states in `snapshot` (retained): battery %, mode, activity,
    /// zone, whether an alert is open (`ON`/`OFF`), and the newest frame
    /// `watch` kept ([`Snapshot::last_frame`]; before any, an open alert's
    /// evidence, as after a resume).
    pub fn states(&self, snapshot: &Snapshot) -> Vec<Message> {
        let mut out: Vec<Message> = Sensor::ALL
            .iter()
            .map(|s| Message::text(self.state_topic(s.object_id()), s.state(snapshot)))
            .collect();
        let open = snapshot
            .alerts
            .iter()
            .any(|a| a.status == AlertStatus::Open);
        out.push(Message::text(
            self.state_topic(ALERT),
            if open { "ON" } else { "OFF" },
        ));
        if let Some(frame) = snapshot.last_frame.clone().or_else(|| {
            snapshot
                .alerts
                .iter()
                .rev()
                .find_map(|a| a.evidence.clone())
        }) {
            out.push(Message {
                topic: self.state_topic(FRAME),
                payload: Payload::File(PathBuf::from(frame)),
                retain: true,
            });
        }
        out
    }

    /// The command a publish on `topic` asks for: an offered button's
    /// [`Button::command`] when the payload is `PRESS`; `None` for any
    /// other topic or payload (a button not offered is not pressed).
    pub fn command(&self, topic: &str, payload: &[u8]) -> Option<Command> {
        let button = self
            .buttons
            .iter()
            .copied()
            .find(|b| self.command_topic(*b) == topic)?;
        (payload == PAYLOAD_PRESS.as_bytes()).then(|| button.command())
    }

    /// The object id of a `PRESS` on a command topic that no offered
    /// button has (`resume`, or `patrol` when `[home] buttons` leaves it
    /// out): ignored, and said, for someone pressed something.
    pub fn not_offered<'t>(&self, topic: &'t str, payload: &[u8]) -> Option<&'t str> {
        let base = format!("{}/command/", self.base());
        let object = topic.strip_prefix(base.as_str())?;
        (payload == PAYLOAD_PRESS.as_bytes()
            && !object.contains('/')
            && self.command(topic, payload).is_none())
        .then_some(object)
    }

    /// Whether `topic`/`payload` is Home Assistant saying it (re)started.
    pub fn is_birth(&self, topic: &str, payload: &[u8]) -> bool {
        topic == self.status_topic() && payload == ONLINE.as_bytes()
    }
}

/// What the publisher announced and has not yet heard back from the
/// broker. A broker speaking MQTT 3.1.1 drops a publish its ACL denies
/// without a word, so the publisher subscribes to its own configs and
/// availability and waits to hear each one back with the bytes it sent:
/// one not heard was not taken (or cannot be read back — either way Home
/// Assistant is not shown the robot as announced). Not checked: the state
/// topics, and a denied publish whose retained predecessor had the same
/// bytes (Home Assistant has what it needs then).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Echo {
    filters: Vec<String>,
    waiting: BTreeMap<String, Vec<u8>>,
    checking: bool,
}

impl Echo {
    /// The check for `discovery`'s announcements.
    pub fn new(discovery: &Discovery) -> Self {
        Self::watching(vec![
            format!("{}/+/{}/+/config", discovery.prefix, discovery.node_id),
            discovery.availability_topic(),
        ])
    }

    /// A check that hears back what is published under `filters` (the
    /// fleet link's connection topic, say).
    pub fn watching(filters: Vec<String>) -> Self {
        Self {
            filters,
            waiting: BTreeMap::new(),
            checking: true,
        }
    }

    /// What to subscribe to, to hear the announcements back.
    pub fn subscriptions(&self) -> Vec<String> {
        self.filters.clone()
    }

    /// Expects to hear `messages` back (their text payloads).
    pub fn expect(&mut self, messages: &[Message]) {
        if !self.checking {
            return;
        }
        self.expect_bytes(messages.iter().filter_map(|m| match &m.payload {
            // A removal clears the retained config: nothing to hear back.
            Payload::Text(t) if t.is_empty() => None,
            Payload::Text(t) => Some((m.topic.clone(), t.clone().into_bytes())),
            Payload::File(_) => None,
        }));
    }

    /// Expects to hear these topics back with these bytes.
    pub fn expect_bytes(&mut self, published: impl IntoIterator<Item = (String, Vec<u8>)>) {
        if self.checking {
            self.waiting = published.into_iter().collect();
        }
    }

    /// Whether `topic` is one this check watches (exactly, not by a wildcard).
    pub fn watches(&self, topic: &str) -> bool {
        self.filters.iter().any(|f| f == topic)
    }

    /// A message heard on `topic`: the announcement it echoes is taken.
    pub fn heard(&mut self, topic: &str, payload: &[u8]) {
        if self.waiting.get(topic).is_some_and(|p| p == payload) {
            self.waiting.remove(topic);
        }
    }

    /// The topics announced and not heard back, in order.
    pub fn missing(&self) -> Vec<String> {
        self.waiting.keys().cloned().collect()
    }

    /// Stops checking: the broker refused the subscription that hears the
    /// announcements back (that refusal is reported on its own).
    pub fn give_up(&mut self) {
        self.checking = false;
        self.waiting.clear();
    }

    /// What was not heard back when the wait is over: `None` when nothing
    /// can be told (not `connected`, or not checking — that refusal was
    /// said when it came).
    pub fn overdue(&self, connected: bool) -> Option<Vec<String>> {
        (connected && self.checking).then(|| self.missing())
    }

    /// Whether announcements are being checked.
    pub fn checking(&self) -> bool {
        self.checking
    }
}

fn merge(mut a: Value, b: Value) -> Value {
    if let (Value::Object(a), Value::Object(b)) = (&mut a, b) {
        a.extend(b);
    }
    a
}

/// What was published last per topic: states go out only when they change.
#[derive(Debug, Default)]
pub struct Changes {
    last: BTreeMap<String, Payload>,
}

impl Changes {
    /// The messages of `all` whose payload differs from the last one
    /// published on their topic (and remembers them as published).
    pub fn fresh(&mut self, all: Vec<Message>) -> Vec<Message> {
        all.into_iter()
            .filter(|m| {
                if self.last.get(&m.topic) == Some(&m.payload) {
                    return false;
                }
                self.last.insert(m.topic.clone(), m.payload.clone());
                true
            })
            .collect()
    }

    /// Forgets everything (a new connection publishes every state again).
    pub fn clear(&mut self) {
        self.last.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Activity, IncidentRecord, Mode};

    fn snapshot() -> Snapshot {
        let mut s = Snapshot::default();
        s.robot.battery_pct = 87.4;
        s.robot.zone = Some("kitchen".into());
        s.mode = Mode::Exec;
        s.activity = Activity::Patrolling;
        s
    }

    fn text(m: &Message) -> &str {
        match &m.payload {
            Payload::Text(t) => t,
            Payload::File(_) => "",
        }
    }

    #[test]
    fn every_entity_has_a_retained_config_under_its_component_and_node() {
        let d = Discovery::new("homeassistant", "rb1");
        let configs = d.configs();
        let topics: Vec<&str> = configs.iter().map(|m| m.topic.as_str()).collect();
        assert_eq!(
            topics,
            [
                "homeassistant/sensor/rb1/battery/config",
                "homeassistant/sensor/rb1/mode/config",
                "homeassistant/sensor/rb1/activity/config",
                "homeassistant/sensor/rb1/zone/config",
                "homeassistant/binary_sensor/rb1/alert/config",
                "homeassistant/button/rb1/estop/config",
                "homeassistant/button/rb1/patrol/config",
                "homeassistant/button/rb1/dock/config",
                "homeassistant/button/rb1/resume/config",
                "homeassistant/image/rb1/frame/config",
            ]
        );
        assert!(configs.iter().all(|m| m.retain));
        let battery: Value = serde_json::from_str(text(&configs[0])).unwrap();
        assert_eq!(battery["device_class"], "battery");
        assert_eq!(battery["unit_of_measurement"], "%");
        assert_eq!(battery["state_topic"], "robobrain/rb1/battery");
        assert_eq!(battery["availability_topic"], "robobrain/rb1/availability");
        assert_eq!(battery["device"]["identifiers"][0], "robobrain_rb1");
        let estop: Value = serde_json::from_str(text(&configs[5])).unwrap();
        assert_eq!(estop["command_topic"], "robobrain/rb1/command/estop");
        assert_eq!(estop["payload_press"], "PRESS");
        // By default only the E-stop is a button: patrol, dock and the
        // retired resume are removed (an empty retained config).
        let empty: Vec<&str> = configs
            .iter()
            .filter(|m| text(m).is_empty())
            .map(|m| m.topic.as_str())
            .collect();
        assert_eq!(
            empty,
            [
                "homeassistant/button/rb1/patrol/config",
                "homeassistant/button/rb1/dock/config",
                "homeassistant/button/rb1/resume/config",
            ]
        );
        // Turned on, patrol and dock are announced; resume never is.
        let on = d.with_buttons(&[Button::Dock, Button::Patrol, Button::EStop]);
        let configs = on.configs();
        let dock: Value = serde_json::from_str(text(&configs[7])).unwrap();
        assert_eq!(dock["command_topic"], "robobrain/rb1/command/dock");
        assert_eq!(text(&configs[8]), "");
    }

    #[test]
    fn states_follow_the_snapshot_and_go_out_only_when_they_change() {
        let d = Discovery::new("homeassistant", "rb1");
        let mut changes = Changes::default();
        let first = changes.fresh(d.states(&snapshot()));
        let pairs: Vec<(&str, &str)> = first.iter().map(|m| (m.topic.as_str(), text(m))).collect();
        assert_eq!(
            pairs,
            [
                ("robobrain/rb1/battery", "87"),
                ("robobrain/rb1/mode", "EXEC"),
                ("robobrain/rb1/activity", "PATROLLING"),
                ("robobrain/rb1/zone", "kitchen"),
                ("robobrain/rb1/alert", "OFF"),
            ]
        );
        assert!(changes.fresh(d.states(&snapshot())).is_empty());
        let mut s = snapshot();
        s.robot.battery_pct = 87.2; // the same whole percent
        s.activity = Activity::Alert;
        s.alerts.push(IncidentRecord {
            id: "i1".into(),
            time: 3.0,
            zone: "kitchen".into(),
            kinds: vec!["smoke".into()],
            description: "smoke".into(),
            evidence: Some("/runs/frames/t/g1.png".into()),
            vision: Value::Null,
            status: AlertStatus::Open,
            acknowledged_by: None,
            acknowledged_at: None,
        });
        let next = changes.fresh(d.states(&s));
        let topics: Vec<&str> = next.iter().map(|m| m.topic.as_str()).collect();
        assert_eq!(
            topics,
            [
                "robobrain/rb1/activity",
                "robobrain/rb1/alert",
                "robobrain/rb1/frame"
            ]
        );
        assert_eq!(
            next[2].payload,
            Payload::File("/runs/frames/t/g1.png".into())
        );
        changes.clear();
        assert_eq!(changes.fresh(d.states(&s)).len(), 6);
        // A later, ordinary look replaces the alert's frame in the image.
        s.last_frame = Some("/runs/frames/t/last/g2.png".into());
        let newer = changes.fresh(d.states(&s));
        assert_eq!(newer.len(), 1);
        assert_eq!(
            newer[0].payload,
            Payload::File("/runs/frames/t/last/g2.png".into())
        );
    }

    #[test]
    fn the_echo_check_names_what_was_not_heard_back_with_the_bytes_sent() {
        let d = Discovery::new("homeassistant", "rb1");
        let mut echo = Echo::new(&d);
        assert_eq!(
            echo.subscriptions(),
            ["homeassistant/+/rb1/+/config", "robobrain/rb1/availability"]
        );
        let mut all = d.configs();
        all.push(d.availability(true));
        echo.expect(&all);
        // Removals (empty configs) clear the broker's copy: nothing to hear.
        assert_eq!(echo.missing().len(), 8);
        for m in &all[..10] {
            echo.heard(&m.topic, text(m).as_bytes());
        }
        // An old `offline` the broker kept is not our `online`.
        echo.heard("robobrain/rb1/availability", b"offline");
        assert_eq!(echo.missing(), ["robobrain/rb1/availability"]);
        echo.heard("robobrain/rb1/availability", b"online");
        assert!(echo.missing().is_empty());
        echo.expect(&all);
        echo.give_up();
        assert!(echo.missing().is_empty() && !echo.checking());
    }

    #[test]
    fn a_press_is_the_operators_command_and_anything_else_is_nothing() {
        let d = Discovery::new("homeassistant", "rb1");
        let press =
            |d: &Discovery, b: &str| d.command(&format!("robobrain/rb1/command/{b}"), b"PRESS");
        // By default only the E-stop is pressed; nothing resumes, ever.
        assert_eq!(press(&d, "estop"), Some(Command::EStop));
        for b in ["patrol", "dock", "resume", "reset_estop"] {
            assert_eq!(press(&d, b), None, "{b}");
        }
        let d = d.with_buttons(&Button::ALL);
        let press = |b: &str| press(&d, b);
        assert_eq!(press("resume"), None);
        assert_eq!(press("patrol"), Some(Command::StartPatrol { route: None }));
        assert_eq!(
            press("dock"),
            Some(Command::Say {
                text: "go charge".into()
            })
        );
        assert_eq!(press("launch"), None);
        assert_eq!(
            d.not_offered("robobrain/rb1/command/launch", b"PRESS"),
            Some("launch")
        );
        assert_eq!(
            d.not_offered("robobrain/rb1/command/patrol", b"PRESS"),
            None
        );
        assert_eq!(d.not_offered("robobrain/rb1/command/launch", b"go"), None);
        assert_eq!(
            d.not_offered("robobrain/rb2/command/launch", b"PRESS"),
            None
        );
        assert_eq!(d.command("robobrain/rb1/command/estop", b"press"), None);
        assert_eq!(d.command("robobrain/rb2/command/estop", b"PRESS"), None);
        assert!(d.is_birth("homeassistant/status", b"online"));
        assert!(!d.is_birth("homeassistant/status", b"offline"));
    }
}
