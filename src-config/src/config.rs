//! Configuration: defaults built in, then `robobrain.toml`, then environment
//! variables, then command-line flags (applied by the binary).
//!
//! Files are parsed into an all-optional raw form and then validated into a
//! typed [`Config`]; a refusal names the file, line, key and what was expected.
//! Every key is documented in `docs/config.md`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::llm::LlmConfig;
use crate::places::Places;
use crate::protocol::Risk;
use crate::source::SourceError;

/// Thresholds and loop guards of the kernel and the ReAct loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KernelConfig {
    /// Battery percent at or below which CHARGE preempts.
    pub battery_low_pct: f64,
    /// Battery percent at which charging ends and preempted work resumes.
    pub battery_resume_pct: f64,
    /// Sim seconds between progress checks (a `CONTINUE` decision) of a running skill.
    pub progress_check_s: f64,
    /// Sim seconds without progress before the observation says "no progress".
    pub no_progress_window_s: f64,
    /// Metres of `distance_remaining` that count as progress within the window.
    pub no_progress_min_m: f64,
    /// ReAct iterations allowed per task before the loop guard asks the operator.
    pub max_iterations: u32,
    /// Consecutive failures of one skill before the loop guard asks the operator.
    pub max_skill_failures: u32,
    /// Sim seconds a `REPLAN` waits when no other route exists.
    pub replan_wait_s: f64,
    /// Sim seconds between telemetry events.
    pub telemetry_interval_s: f64,
}

impl Default for KernelConfig {
    fn default() -> Self {
        Self {
            battery_low_pct: 20.0,
            battery_resume_pct: 80.0,
            progress_check_s: 5.0,
            no_progress_window_s: 8.0,
            no_progress_min_m: 0.1,
            max_iterations: 60,
            max_skill_failures: 3,
            replan_wait_s: 3.0,
            telemetry_interval_s: 1.0,
        }
    }
}

/// Which ops need an operator's approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    /// Leaving the apartment (a zone marked `outside`) needs approval.
    pub approve_outside: bool,
    /// Entering a zone marked `restricted` needs approval.
    pub approve_restricted: bool,
    /// Skills at these risk levels always need approval.
    pub approve_risks: Vec<Risk>,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        Self {
            approve_outside: true,
            approve_restricted: true,
            approve_risks: vec![Risk::HighWrite],
        }
    }
}

/// The smart home (`[home]`, seed 001 §5): which home file, and when
/// device writes need confirmation beyond the fixed rules (locks, gas,
/// alarms, several devices at once and high power always do).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HomeConfig {
    /// A home file (docs/devices.md); default: the built-in home of the world
    /// (`apartment`), or no devices for a world without one.
    pub file: Option<PathBuf>,
    /// The user's preference: single-device low-risk writes (a light) need
    /// confirmation too.
    pub confirm_low_write: bool,
    /// Hours of the night `[start, end)`, 0–24: low-risk writes need
    /// confirmation then (with `confirm_at_night`).
    pub night: [f64; 2],
    /// Stricter at night.
    pub confirm_at_night: bool,
    /// Whether someone is at home; when not, every write needs confirmation
    /// (with `confirm_when_away`).
    pub occupied: bool,
    /// Stricter when nobody is home.
    pub confirm_when_away: bool,
    /// Switching on a device rated at this many watts or more is high risk.
    pub high_power_w: f64,
    /// The hour of day the policy sees (0–24); unset: the clock, in
    /// `time_zone`. Scenarios fix it for determinism.
    pub hour: Option<f64>,
    /// The home's IANA time zone (`Europe/Berlin`), daylight saving
    /// included; unset: the machine's (`TZ`, then `/etc/localtime`).
    pub time_zone: Option<String>,
    /// A zigbee2mqtt broker, `HOST:PORT`: the home's devices are the real ones
    /// there (a device's friendly name is its id); unset: simulated.
    pub mqtt: Option<String>,
    /// zigbee2mqtt's base topic.
    pub mqtt_base: String,
    /// The user name on the broker; unset: anonymous.
    pub mqtt_username: Option<String>,
    /// The environment variable holding the broker password (with `mqtt_username`).
    pub mqtt_password_env: Option<String>,
    /// The file holding the broker password (one line, mode 0600; with `mqtt_username`).
    pub mqtt_password_file: Option<PathBuf>,
    /// A CA certificate (PEM): the broker is spoken to over TLS and its
    /// certificate must be signed by this CA; unset: plain TCP.
    pub mqtt_ca: Option<PathBuf>,
    /// Device id → zigbee2mqtt friendly name, or the device's IEEE address
    /// (`0x…`), read as its current friendly name from
    /// `<base>/bridge/devices`; a device not named here is its id.
    pub mqtt_names: std::collections::BTreeMap<String, String>,
    /// Learn friendly names from `<base>/bridge/devices` too: a device whose
    /// friendly name written as an id (`Living Room/Light` →
    /// `living_room_light`) is a home device's id is that device.
    pub mqtt_bridge_names: bool,
    /// With `mqtt`: publish the robot to Home Assistant through MQTT
    /// discovery (sensors, buttons, the last watch frame).
    pub discovery: bool,
    /// The broker user the discovery publisher logs in as; unset: the
    /// home's (`mqtt_username`). A broker that ties a client's id to its
    /// user (`use_username_as_clientid`) needs one of its own, or the
    /// home's two connections close each other.
    pub discovery_username: Option<String>,
    /// The environment variable holding `discovery_username`'s password.
    pub discovery_password_env: Option<String>,
    /// The file holding `discovery_username`'s password (one line, mode 0600).
    pub discovery_password_file: Option<PathBuf>,
    /// The buttons Home Assistant is shown (`["estop"]` by default). The
    /// E-stop acts at once; `patrol` and `dock` start motion, so a press of
    /// either only *asks*: the task it queues waits for an operator's
    /// approval before the robot moves (docs/home-io.md). Nothing that
    /// releases the E-stop or resumes tasks is ever offered.
    pub buttons: Vec<HaButton>,
    /// Home Assistant's discovery prefix.
    pub discovery_prefix: String,
    /// The robot's node id in discovery topics (letters, digits, `_`, `-`).
    pub node_id: String,
    /// The folder with Home Assistant's compiled intents (`en.json`,
    /// `zh-CN.json`, downloaded by `./x setup`); unset: `$ROBOBRAIN_INTENTS_DIR`,
    /// else `~/.cache/robobrain/intents`.
    pub intents: Option<PathBuf>,
    /// Understand the home with Home Assistant's grammar first (`false`: the
    /// rules only).
    pub grammar: bool,
    /// The semantic fallback of the language pipeline: when no grammar or
    /// rule matched, the nearest of the grammar's own sentences by sentence
    /// embedding (all-MiniLM-L6-v2, `[memory] model_dir`; docs/intents.md).
    pub semantic: bool,
    /// Who writes the summary of a control turn: `rule` (no model) or `model`
    /// (the `[llm]` endpoint, from forged success results).
    pub summary: String,
}

/// A button the robot shows Home Assistant (`[home] buttons`): its fixed
/// facts and what a press sends ([`HaButton::command`]) are here; announcing
/// it and hearing presses is robobrain-core's `devices::mqtt::discovery`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HaButton {
    /// The E-stop: acts at once, from any press.
    #[serde(rename = "estop")]
    EStop,
    /// A patrol of the world's default route — asked for, not started: the
    /// operator approves it before the robot moves.
    Patrol,
    /// Go and charge — asked for, not started, as `Patrol`.
    Dock,
}

impl HaButton {
    /// Every button there is, in the order they are announced.
    pub const ALL: [Self; 3] = [Self::EStop, Self::Patrol, Self::Dock];

    /// Its object id (the last topic level).
    pub fn object_id(self) -> &'static str {
        match self {
            Self::EStop => "estop",
            Self::Patrol => "patrol",
            Self::Dock => "dock",
        }
    }

    /// Its name in Home Assistant.
    pub fn name(self) -> &'static str {
        match self {
            Self::EStop => "E-stop",
            Self::Patrol => "Patrol",
            Self::Dock => "Dock",
        }
    }

    /// Its icon in Home Assistant.
    pub fn icon(self) -> &'static str {
        match self {
            Self::EStop => "mdi:alert-octagon",
            Self::Patrol => "mdi:routes",
            Self::Dock => "mdi:battery-charging",
        }
    }

    /// The command a press sends — the same an operator's console sends.
    /// Sent from Home Assistant's door, a command that moves the robot
    /// only asks: its task waits for an operator's approval
    /// ([`crate::protocol::Door::only_asks`]).
    pub fn command(self) -> crate::protocol::Command {
        match self {
            Self::EStop => crate::protocol::Command::EStop,
            Self::Patrol => crate::protocol::Command::StartPatrol { route: None },
            Self::Dock => crate::protocol::Command::Say {
                text: "go charge".into(),
            },
        }
    }
}

/// A broker address, `HOST:PORT` (`[home] mqtt`) → its parts; `None` when
/// it is not that.
pub fn parse_broker(addr: &str) -> Option<(String, u16)> {
    let (host, port) = addr.rsplit_once(':')?;
    let port = port.parse().ok().filter(|p| *p > 0)?;
    (!host.is_empty()).then(|| (host.to_string(), port))
}

impl HomeConfig {
    /// The first `[home]` key out of range, and what was expected.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        let h = self;
        if !h.night.iter().all(|x| (0.0..=24.0).contains(x)) {
            return Some((
                "home.night",
                format!("expected two hours in [0, 24], found {:?}", h.night),
            ));
        }
        if let Some(hour) = h.hour
            && !(0.0..24.0).contains(&hour)
        {
            return Some((
                "home.hour",
                format!("expected an hour in [0, 24), found {hour}"),
            ));
        }
        if let Some(zone) = &h.time_zone
            && let Err(e) = crate::timezone::named(zone)
        {
            return Some(("home.time_zone", e.to_string()));
        }
        if let Some(addr) = &h.mqtt
            && parse_broker(addr).is_none()
        {
            return Some((
                "home.mqtt",
                format!("expected HOST:PORT (`127.0.0.1:1883`), found {addr:?}"),
            ));
        }
        if let Some(problem) = h.mqtt_problem() {
            return Some(problem);
        }
        if !(h.summary == "rule" || h.summary == "model") {
            return Some((
                "home.summary",
                format!("expected \"rule\" or \"model\", found {:?}", h.summary),
            ));
        }
        None
    }

    /// The first `[home]` MQTT key that is refused, with why.
    fn mqtt_problem(&self) -> Option<(&'static str, String)> {
        let logins = [
            (
                &self.mqtt_username,
                &self.mqtt_password_env,
                &self.mqtt_password_file,
                [
                    "mqtt_username",
                    "home.mqtt_password_env",
                    "home.mqtt_password_file",
                ],
            ),
            (
                &self.discovery_username,
                &self.discovery_password_env,
                &self.discovery_password_file,
                [
                    "discovery_username",
                    "home.discovery_password_env",
                    "home.discovery_password_file",
                ],
            ),
        ];
        for (user, env, file, [user_key, env_key, file_key]) in logins {
            if env.is_some() && file.is_some() {
                let short = |k: &str| k.trim_start_matches("home.").to_string();
                return Some((
                    env_key,
                    format!("expected one of {}, {}", short(env_key), short(file_key)),
                ));
            }
            if user.is_none() {
                let key = if env.is_some() {
                    Some(env_key)
                } else if file.is_some() {
                    Some(file_key)
                } else {
                    None
                };
                if let Some(key) = key {
                    return Some((
                        key,
                        format!("a password goes with {user_key}, which is unset"),
                    ));
                }
            }
        }
        let id_like = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        if self.node_id.is_empty() || !self.node_id.chars().all(id_like) {
            return Some((
                "home.node_id",
                format!(
                    "expected letters, digits, `_` or `-`, found {:?}",
                    self.node_id
                ),
            ));
        }
        if self.discovery_prefix.is_empty()
            || self.discovery_prefix.contains(['#', '+'])
            || self.discovery_prefix.ends_with('/')
        {
            return Some((
                "home.discovery_prefix",
                format!(
                    "expected a topic prefix without wildcards, found {:?}",
                    self.discovery_prefix
                ),
            ));
        }
        None
    }
}

impl Default for HomeConfig {
    fn default() -> Self {
        Self {
            file: None,
            confirm_low_write: false,
            night: [23.0, 7.0],
            confirm_at_night: true,
            occupied: true,
            confirm_when_away: true,
            high_power_w: 1500.0,
            hour: None,
            time_zone: None,
            mqtt: None,
            mqtt_base: "zigbee2mqtt".into(),
            mqtt_username: None,
            mqtt_password_env: None,
            mqtt_password_file: None,
            mqtt_ca: None,
            mqtt_names: std::collections::BTreeMap::new(),
            mqtt_bridge_names: false,
            discovery: true,
            discovery_username: None,
            discovery_password_env: None,
            discovery_password_file: None,
            buttons: vec![HaButton::EStop],
            discovery_prefix: "homeassistant".into(),
            node_id: "robobrain".into(),
            intents: None,
            grammar: true,
            semantic: false,
            summary: "rule".into(),
        }
    }
}

/// The fleet (`[fleet]`, docs/fleet.md): this robot's brain on an MQTT
/// broker, speaking robobrain's own protocol and VDA 5050 beside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FleetConfig {
    /// The broker, `mqtt://HOST:PORT` (or `mqtts://HOST:PORT` with `ca`);
    /// unset: no fleet.
    pub broker: Option<String>,
    /// This robot's id: its topics' name, its VDA 5050 serial number and,
    /// by convention, its user name on the broker (letters, digits, `_`, `-`).
    pub robot_id: String,
    /// The VDA 5050 manufacturer in its topics and headers.
    pub manufacturer: String,
    /// The user name on the broker; unset: anonymous.
    pub username: Option<String>,
    /// The environment variable holding the broker password (with `username`).
    pub password_env: Option<String>,
    /// The file holding the broker password (with `username`).
    pub password_file: Option<PathBuf>,
    /// The CA certificate (PEM) the broker's TLS certificate is signed by.
    pub ca: Option<PathBuf>,
    /// Within this many seconds of the robot falling silent the broker
    /// says CONNECTIONBROKEN (the MQTT keep-alive is two thirds of it).
    pub keep_alive_s: u64,
    /// How often the snapshot, the VDA 5050 state and the visualization
    /// are published while they change, milliseconds.
    pub publish_ms: u64,
    /// Cut off from the broker this long (seconds), the robot pauses its
    /// active task and waits for an operator (docs/fleet.md, "Cut off").
    pub cutoff_pause_s: f64,
}

impl Default for FleetConfig {
    fn default() -> Self {
        Self {
            broker: None,
            robot_id: "robobrain".into(),
            manufacturer: "robobrain".into(),
            username: None,
            password_env: None,
            password_file: None,
            ca: None,
            keep_alive_s: 5,
            publish_ms: 250,
            cutoff_pause_s: 10.0,
        }
    }
}

/// A fleet broker URL, `mqtt://HOST:PORT` or `mqtts://HOST:PORT` → (TLS,
/// host, port); `None` when it is not that.
pub fn parse_fleet_broker(url: &str) -> Option<(bool, String, u16)> {
    let (tls, rest) = if let Some(rest) = url.strip_prefix("mqtts://") {
        (true, rest)
    } else {
        (false, url.strip_prefix("mqtt://")?)
    };
    let (host, port) = parse_broker(rest.trim_end_matches('/'))?;
    Some((tls, host, port))
}

/// Whether `id` is letters, digits, `_` or `-` (and not empty): safe in a
/// topic level and a broker user name.
pub fn is_topic_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl FleetConfig {
    /// The first `[fleet]` key that is refused, with why.
    fn problem(&self) -> Option<(&'static str, String)> {
        if let Some(url) = &self.broker
            && parse_fleet_broker(url).is_none()
        {
            return Some((
                "fleet.broker",
                format!("expected mqtt://HOST:PORT or mqtts://HOST:PORT, found {url:?}"),
            ));
        }
        if !is_topic_id(&self.robot_id) {
            return Some((
                "fleet.robot_id",
                format!(
                    "expected letters, digits, `_` or `-`, found {:?}",
                    self.robot_id
                ),
            ));
        }
        if !is_topic_id(&self.manufacturer) {
            return Some((
                "fleet.manufacturer",
                format!(
                    "expected letters, digits, `_` or `-`, found {:?}",
                    self.manufacturer
                ),
            ));
        }
        if self.password_env.is_some() && self.password_file.is_some() {
            return Some((
                "fleet.password_env",
                "expected one of password_env, password_file".into(),
            ));
        }
        if self.username.is_none() && (self.password_env.is_some() || self.password_file.is_some())
        {
            return Some((
                "fleet.username",
                "a password goes with username, which is unset".into(),
            ));
        }
        if self.keep_alive_s == 0 || self.publish_ms == 0 {
            return Some((
                "fleet.keep_alive_s",
                "expected keep_alive_s and publish_ms above zero".into(),
            ));
        }
        if !(self.cutoff_pause_s.is_finite() && self.cutoff_pause_s > 0.0) {
            return Some((
                "fleet.cutoff_pause_s",
                format!("expected positive seconds, found {}", self.cutoff_pause_s),
            ));
        }
        None
    }
}

/// MCP services whose tools become skills (`[[mcp.services]]`, seed 000 §7.2).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// The services, by name.
    pub services: Vec<McpServiceConfig>,
}

/// One MCP server: a child process spoken to over stdio (`command`), or a
/// streamable-HTTP endpoint (`url`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServiceConfig {
    /// The service's name: its tools become skills `mcp.<name>.<tool>`.
    pub name: String,
    /// The program to run (or `url`).
    #[serde(default)]
    pub command: String,
    /// The endpoint to connect to (or `command`), e.g. `http://127.0.0.1:8931/mcp`.
    #[serde(default)]
    pub url: Option<String>,
    /// A bearer token for `url`, written here (prefer `token_env` or
    /// `token_file`: a config file is often shared or checked in).
    #[serde(default)]
    pub token: Option<String>,
    /// The environment variable holding the bearer token for `url`.
    #[serde(default)]
    pub token_env: Option<String>,
    /// The file holding the bearer token for `url` (one line, mode 0600).
    #[serde(default)]
    pub token_file: Option<std::path::PathBuf>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Capability tags its skills carry (`home`, `search`, …).
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// The risk of every one of its tools; when absent, `read` for tools
    /// annotated read-only and `low_write` for the rest.
    #[serde(default)]
    pub risk: Option<Risk>,
}

impl McpServiceConfig {
    /// The bearer token for `url`: written in the config, or read from
    /// `token_env` / `token_file` now.
    pub fn bearer(&self) -> Result<Option<String>, crate::secrets::SecretError> {
        if let Some(name) = &self.token_env {
            return crate::secrets::from_env(name).map(Some);
        }
        if let Some(path) = &self.token_file {
            return crate::secrets::from_file(path).map(Some);
        }
        Ok(self.token.clone())
    }

    /// A service run as `command ARGS…` and spoken to over stdio, with no
    /// capability tags and the risk its tools' annotations give.
    pub fn command(name: &str, command: &str, args: &[&str]) -> Self {
        Self {
            name: name.into(),
            command: command.into(),
            url: None,
            token: None,
            token_env: None,
            token_file: None,
            args: args.iter().map(|a| (*a).to_string()).collect(),
            capabilities: Vec::new(),
            risk: None,
        }
    }
}

/// The skills (`[skills]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SkillsConfig {
    /// Skills initialised on first use rather than at start (seed 000 §8.1).
    pub lazy: Vec<String>,
    /// Keep the frames that show an emergency, as alert evidence, under
    /// `<runs_dir>/frames/<thread>/`, and the newest ordinary look under
    /// its `last/` (one file).
    pub keep_frames: bool,
    /// `sim` (the simulated camera) or `v4l` (a real one; needs the
    /// `camera` feature).
    pub camera: CameraChoice,
    /// The real camera's device (env `VIDEO_DEV`).
    pub video_dev: PathBuf,
}

/// Which camera `watch` uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CameraChoice {
    /// The simulator's view.
    #[default]
    Sim,
    /// Video4Linux; the simulator's view stands in when it fails.
    V4l,
}

impl Default for SkillsConfig {
    fn default() -> Self {
        Self {
            lazy: vec!["listen".into()],
            keep_frames: true,
            camera: CameraChoice::Sim,
            video_dev: PathBuf::from("/dev/video0"),
        }
    }
}

/// Speech (`[speech]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SpeechConfig {
    /// `auto` (espeak-ng when installed), `espeak`, `model` (the speech
    /// endpoint, `[llm] omni_model`), or `text` (no audio); env `ROBOBRAIN_VOICE`.
    pub voice: VoiceChoice,
    /// The speech endpoint's voice name (with `voice = "model"`).
    pub model_voice: String,
    /// Also play the lines on the sound card (feature `audio`).
    pub play: bool,
}

impl Default for SpeechConfig {
    fn default() -> Self {
        Self {
            voice: VoiceChoice::Auto,
            model_voice: "Cherry".into(),
            play: false,
        }
    }
}

/// Alerts (`[alert]`): who else hears of an incident.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AlertConfig {
    /// URL every new incident is POSTed to as JSON by the `notify` skill
    /// (env `ROBOBRAIN_ALERT_WEBHOOK`); none: incidents stay in robobrain.
    pub webhook: Option<String>,
    /// Calling the webhook needs an operator's approval (seed 000 §11.2:
    /// calling outside services is high risk). `false` makes it low risk.
    pub confirm: bool,
    /// Retries after a connection error, a timeout, 429 or 5xx.
    pub retries: u32,
    /// First wait before a retry, milliseconds (doubles each time).
    pub backoff_ms: u64,
    /// Wall seconds one attempt may take.
    pub timeout_s: f64,
}

impl Default for AlertConfig {
    fn default() -> Self {
        Self {
            webhook: None,
            confirm: true,
            retries: 3,
            backoff_ms: 500,
            timeout_s: 5.0,
        }
    }
}

/// Patrols (`[patrol]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PatrolConfig {
    /// Seconds from the start of one patrol round to the start of the next
    /// (env `PATROL_INTERVAL`); none: a patrol is one round.
    pub interval_s: Option<f64>,
    /// Look around (`watch`) at every waypoint.
    pub look_around: bool,
}

impl Default for PatrolConfig {
    fn default() -> Self {
        Self {
            interval_s: None,
            look_around: true,
        }
    }
}

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The world: `apartment` (built in) or a path to a world file.
    pub world: String,
    /// Seed for everything random in the simulation.
    pub seed: u64,
    /// Sim seconds per tick.
    pub tick_s: f64,
    /// Thread id of the run (generated when absent).
    pub thread_id: Option<String>,
    /// Folder for the data: the JSONL event logs, the database, memory,
    /// audio and logs (default: the XDG data folder, `~/.local/share/robobrain`,
    /// when the config is read through [`Config::layered`]; `runs` in [`Config::default`]).
    pub runs_dir: PathBuf,
    /// Kernel thresholds and loop guards.
    pub kernel: KernelConfig,
    /// Approval policy.
    pub policy: PolicyConfig,
    /// The model brain (`[llm]`).
    pub llm: LlmConfig,
    /// The durable store (`[store]`): database file, durability, retention.
    pub store: crate::store::StoreConfig,
    /// The robot link (`[link]`): the dead-man.
    pub link: crate::link::LinkConfig,
    /// The robot (`[robot]`): its URL when `--robot` is not given.
    pub robot: crate::link::RobotConfig,
    /// The skills (`[skills]`): lazy initialisation, evidence frames.
    pub skills: SkillsConfig,
    /// Patrols (`[patrol]`): repeated rounds.
    pub patrol: PatrolConfig,
    /// Speech (`[speech]`): the voice.
    pub speech: SpeechConfig,
    /// Alerts (`[alert]`): the webhook incidents go to.
    pub alert: AlertConfig,
    /// MCP services used as skill sources (`[mcp]`).
    pub mcp: McpConfig,
    /// The smart home (`[home]`).
    pub home: HomeConfig,
    /// The fleet (`[fleet]`): this robot on an MQTT broker.
    pub fleet: FleetConfig,
    /// Memory (`[memory]`): windows, summaries, retrieval, preferences.
    pub memory: crate::memory::MemoryConfig,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            world: "apartment".into(),
            seed: 1,
            tick_s: 0.1,
            thread_id: None,
            runs_dir: PathBuf::from("runs"),
            kernel: KernelConfig::default(),
            policy: PolicyConfig::default(),
            llm: LlmConfig::default(),
            store: crate::store::StoreConfig::default(),
            link: crate::link::LinkConfig::default(),
            robot: crate::link::RobotConfig::default(),
            skills: SkillsConfig::default(),
            patrol: PatrolConfig::default(),
            speech: SpeechConfig::default(),
            alert: AlertConfig::default(),
            mcp: McpConfig::default(),
            home: HomeConfig::default(),
            fleet: FleetConfig::default(),
            memory: crate::memory::MemoryConfig::default(),
        }
    }
}

/// Why a configuration was refused.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The IO error.
        source: std::io::Error,
    },
    /// The file is malformed or a value is out of range.
    #[error(transparent)]
    Invalid(#[from] SourceError),
    /// An environment variable holds a bad value.
    #[error("environment variable {name}: {message}")]
    Env {
        /// The variable.
        name: String,
        /// What was expected.
        message: String,
    },
}

impl Config {
    /// Parses and validates config text; `file` names it in errors.
    pub fn from_toml_str(text: &str, file: &Path) -> Result<Self, ConfigError> {
        let config: Config =
            toml::from_str(text).map_err(|e| SourceError::from_toml(file, text, &e))?;
        config.validate(text, file)?;
        Ok(config)
    }

    /// The database file: `[store] db`, or `<runs_dir>/robobrain.db`.
    pub fn db_path(&self) -> PathBuf {
        self.store
            .db
            .clone()
            .unwrap_or_else(|| self.runs_dir.join("robobrain.db"))
    }

    /// The layers every face reads, lowest first: the defaults, then the
    /// file (`path`, else `./robobrain.toml` when there is one, else the
    /// user's `~/.config/robobrain/robobrain.toml` — [`crate::places`]),
    /// then the environment (`get`). Command-line flags go on top, in the
    /// face. Data goes to the XDG data folder unless the file sets `runs_dir`.
    pub fn layered(
        path: Option<&Path>,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let places = Places::from_env(&get);
        Self::layered_in(&places, path, get)
    }

    /// [`Config::layered`] with the places given (the desktop app's own).
    pub fn layered_in(
        places: &Places,
        path: Option<&Path>,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let file = path
            .map(Path::to_path_buf)
            .or_else(|| places.config_file(Path::new(".")));
        let (mut config, sets_runs_dir) = match &file {
            Some(file) => Self::read(file)?,
            None => (Self::default(), false),
        };
        if !sets_runs_dir {
            config.runs_dir.clone_from(&places.data_dir);
        }
        config.apply_env(get)?;
        Ok(config)
    }

    /// Reads, parses and validates a config file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        Self::read(path).map(|(config, _)| config)
    }

    /// A config file, and whether it sets `runs_dir`.
    fn read(path: &Path) -> Result<(Self, bool), ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let config = Self::from_toml_str(&text, path)?;
        let sets_runs_dir =
            toml::from_str::<toml::Table>(&text).is_ok_and(|t| t.contains_key("runs_dir"));
        Ok((config, sets_runs_dir))
    }

    /// Applies the environment overrides: `ROBOBRAIN_SEED`, `ROBOBRAIN_WORLD`
    /// and the model variables the seeds name (`OPENAI_API_KEY`,
    /// `OPENAI_BASE_URL`, `QWEN_*_MODEL`, `ACTION_TIMEOUT`).
    pub fn apply_env(&mut self, get: impl Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        if let Some(v) = get("ROBOBRAIN_SEED") {
            self.seed = v.trim().parse().map_err(|_| ConfigError::Env {
                name: "ROBOBRAIN_SEED".into(),
                message: format!("expected an unsigned integer, found {v:?}"),
            })?;
        }
        if let Some(v) = get("ROBOBRAIN_WORLD") {
            self.world = v;
        }
        if let Some(v) = get("VIDEO_DEV") {
            self.skills.video_dev = PathBuf::from(v);
        }
        if let Some(v) = get("PATROL_INTERVAL") {
            let seconds: f64 = v.trim().parse().map_err(|_| ConfigError::Env {
                name: "PATROL_INTERVAL".into(),
                message: format!("expected seconds, found {v:?}"),
            })?;
            if !(seconds.is_finite() && seconds > 0.0) {
                return Err(ConfigError::Env {
                    name: "PATROL_INTERVAL".into(),
                    message: format!("expected positive seconds, found {v:?}"),
                });
            }
            self.patrol.interval_s = Some(seconds);
        }
        if let Some(v) = get("ROBOBRAIN_VOICE") {
            self.speech.voice = VoiceChoice::parse(&v).ok_or_else(|| ConfigError::Env {
                name: "ROBOBRAIN_VOICE".into(),
                message: format!("expected auto, espeak, model or text, found {v:?}"),
            })?;
        }
        if let Some(v) = get("ROBOBRAIN_ALERT_WEBHOOK") {
            self.alert.webhook = Some(v).filter(|v| !v.trim().is_empty());
        }
        self.memory.apply_env(&get);
        self.llm
            .apply_env(&get)
            .map_err(|(name, message)| ConfigError::Env { name, message })?;
        Ok(())
    }

    /// Checks ranges and relations between keys; `text` locates the key.
    /// Each section answers for its own keys (`problem`: the first key out
    /// of range, and what was expected); the first problem found is the
    /// error, at its key's line.
    pub fn validate(&self, text: &str, file: &Path) -> Result<(), SourceError> {
        if self.skills.camera == CameraChoice::V4l && !cfg!(feature = "camera") {
            return Err(SourceError::at_key(
                file,
                text,
                "skills.camera",
                "expected \"sim\": this robobrain was built without the `camera` feature (cargo build --features robobrain-core/camera)".to_string(),
            ));
        }
        let tick = (!(self.tick_s > 0.0 && self.tick_s <= 1.0)).then(|| {
            (
                "tick_s",
                format!("expected seconds in (0, 1], found {}", self.tick_s),
            )
        });
        let problem = self
            .memory
            .problem()
            .or_else(|| self.link.problem())
            .or_else(|| self.robot.problem())
            .or_else(|| ros2_problem(&self.robot))
            .or_else(|| self.patrol.problem())
            .or_else(|| self.alert.problem())
            .or_else(|| self.home.problem())
            .or_else(|| self.fleet.problem())
            .or(tick)
            .or_else(|| self.kernel.problem())
            .or_else(|| self.mcp.problem())
            .or_else(|| self.store.problem());
        if let Some((key, message)) = problem {
            return Err(SourceError::at_key(file, text, key, message));
        }
        self.llm.validate(text, file)
    }
}

impl KernelConfig {
    /// The first `[kernel]` key out of range, and what was expected.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        let k = self;
        if !(0.0..100.0).contains(&k.battery_low_pct) {
            return Some((
                "kernel.battery_low_pct",
                format!(
                    "expected a percent in [0, 100), found {}",
                    k.battery_low_pct
                ),
            ));
        }
        if !(k.battery_resume_pct > k.battery_low_pct && k.battery_resume_pct <= 100.0) {
            return Some((
                "kernel.battery_resume_pct",
                format!(
                    "expected a percent above battery_low_pct ({}) and at most 100, found {}",
                    k.battery_low_pct, k.battery_resume_pct
                ),
            ));
        }
        if k.max_iterations == 0 {
            return Some((
                "kernel.max_iterations",
                "expected at least 1, found 0".into(),
            ));
        }
        if k.max_skill_failures == 0 {
            return Some((
                "kernel.max_skill_failures",
                "expected at least 1, found 0".into(),
            ));
        }
        for (key, v) in [
            ("kernel.progress_check_s", k.progress_check_s),
            ("kernel.no_progress_window_s", k.no_progress_window_s),
            ("kernel.telemetry_interval_s", k.telemetry_interval_s),
        ] {
            if v.is_nan() || v <= 0.0 {
                return Some((key, format!("expected positive seconds, found {v}")));
            }
        }
        if k.replan_wait_s.is_nan() || k.replan_wait_s < 0.0 {
            return Some((
                "kernel.replan_wait_s",
                format!("expected seconds ≥ 0, found {}", k.replan_wait_s),
            ));
        }
        None
    }
}

impl PatrolConfig {
    /// The `[patrol]` key out of range, and what was expected.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        self.interval_s
            .filter(|i| !(i.is_finite() && *i > 0.0))
            .map(|i| {
                (
                    "patrol.interval_s",
                    format!("expected positive seconds, found {i}"),
                )
            })
    }
}

impl AlertConfig {
    /// The first `[alert]` key out of range, and what was expected.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        if let Some(url) = &self.webhook
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Some((
                "alert.webhook",
                format!("expected an http:// or https:// URL, found {url:?}"),
            ));
        }
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0) {
            return Some((
                "alert.timeout_s",
                format!("expected positive seconds, found {}", self.timeout_s),
            ));
        }
        None
    }
}

impl McpConfig {
    /// The first `[[mcp.services]]` entry that is wrong, and why.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        let bad = |why: String| Some(("mcp.services", why));
        for (i, service) in self.services.iter().enumerate() {
            let name = &service.name;
            let ok = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !ok {
                return bad(format!(
                    "service {}: expected a name of letters, digits, `_` or `-`, found {name:?}",
                    i + 1
                ));
            }
            if self.services[..i].iter().any(|s| s.name == *name) {
                return bad(format!("service `{name}` is configured twice"));
            }
            match (service.command.trim().is_empty(), &service.url) {
                (true, None) => {
                    return bad(format!(
                        "service `{name}`: expected a command to run or a url"
                    ));
                }
                (false, Some(_)) => {
                    return bad(format!(
                        "service `{name}`: expected a command or a url, not both"
                    ));
                }
                (true, Some(url))
                    if !url.starts_with("http://") && !url.starts_with("https://") =>
                {
                    return bad(format!(
                        "service `{name}`: expected an http:// or https:// url, found {url:?}"
                    ));
                }
                _ => {}
            }
            let tokens = [
                service.token.is_some(),
                service.token_env.is_some(),
                service.token_file.is_some(),
            ];
            if tokens.iter().filter(|t| **t).count() > 1 {
                return bad(format!(
                    "service `{name}`: expected one of token, token_env, token_file"
                ));
            }
            if tokens.contains(&true) && service.url.is_none() {
                return bad(format!(
                    "service `{name}`: a token goes with a url (a command needs none)"
                ));
            }
        }
        None
    }
}

/// Which voice `[speech] voice` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VoiceChoice {
    /// espeak-ng when it is on the `PATH`, else text only.
    #[default]
    Auto,
    /// espeak-ng (text only, with a notice, when it is missing).
    Espeak,
    /// The model's speech endpoint (`[llm] omni_model`), espeak-ng standing
    /// in for a line that fails; espeak-ng, with a notice, when no model is
    /// configured.
    Model,
    /// Text only.
    Text,
}

impl VoiceChoice {
    /// Parses a `[speech] voice` value (`auto`, `espeak`, `model`, `text`).
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim() {
            "auto" => Some(Self::Auto),
            "espeak" => Some(Self::Espeak),
            "model" => Some(Self::Model),
            "text" => Some(Self::Text),
            _ => None,
        }
    }
}

/// What is wrong with a `ros2:` robot URL (`[robot] url`), as the ROS 2
/// crate reads it; `None` for any other URL (`RobotConfig::problem`).
fn ros2_problem(robot: &crate::link::RobotConfig) -> Option<(&'static str, String)> {
    let url = robot.url.as_deref()?.trim();
    if !url.starts_with("ros2:") {
        return None;
    }
    crate::ros2::Ros2Options::parse(url)
        .err()
        .map(|e| ("robot.url", e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patrol_interval_comes_from_the_environment_and_is_checked() {
        let mut c = Config::default();
        c.apply_env(|k| (k == "PATROL_INTERVAL").then(|| "45".to_string()))
            .unwrap();
        assert_eq!(c.patrol.interval_s, Some(45.0));
        for bad in ["soon", "0", "-3"] {
            let e = Config::default()
                .apply_env(|k| (k == "PATROL_INTERVAL").then(|| bad.to_string()))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("PATROL_INTERVAL") && e.contains("seconds"),
                "{e}"
            );
        }
        let e = Config::from_toml_str("[patrol]\ninterval_s = -1\n", Path::new("r.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("r.toml:2:") && e.contains("patrol.interval_s"),
            "{e}"
        );
    }

    #[test]
    fn defaults_validate() {
        Config::default().validate("", Path::new("x")).unwrap();
        let c = Config::from_toml_str("", Path::new("robobrain.toml")).unwrap();
        assert_eq!(c, Config::default());
    }

    #[test]
    fn unknown_keys_name_file_line_and_key() {
        let text = "seed = 3\n[kernel]\nbattery_lo = 10\n";
        let e = Config::from_toml_str(text, Path::new("robobrain.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("robobrain.toml:3:1: `battery_lo`: unknown field"),
            "{e}"
        );
    }

    #[test]
    fn ranges_are_checked_with_the_key_located() {
        let text = "[kernel]\nbattery_low_pct = 30\nbattery_resume_pct = 25\n";
        let e = Config::from_toml_str(text, Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "c.toml:3:1: `kernel.battery_resume_pct`: expected a percent above battery_low_pct (30) and at most 100, found 25"
        );
    }

    #[test]
    fn mcp_services_parse_and_bad_ones_are_named() {
        let text = "[[mcp.services]]\nname = \"home\"\ncommand = \"home-mcp\"\nargs = [\"--stdio\"]\ncapabilities = [\"home\"]\nrisk = \"high_write\"\n";
        let c = Config::from_toml_str(text, Path::new("c.toml")).unwrap();
        let s = &c.mcp.services[0];
        assert_eq!((s.name.as_str(), s.command.as_str()), ("home", "home-mcp"));
        assert_eq!(s.risk, Some(Risk::HighWrite));
        let refusal = |text: &str| {
            Config::from_toml_str(text, Path::new("c.toml"))
                .unwrap_err()
                .to_string()
        };
        let e = refusal(&format!(
            "{text}[[mcp.services]]\nname = \"home\"\ncommand = \"x\"\n"
        ));
        assert!(e.ends_with("service `home` is configured twice"), "{e}");
        let e = refusal("[[mcp.services]]\nname = \"a.b\"\ncommand = \"x\"\n");
        assert!(e.contains("expected a name of letters"), "{e}");
        let e = refusal("[[mcp.services]]\nname = \"a\"\ncommand = \"x\"\nurl = \"http://h\"\n");
        assert!(
            e.ends_with("service `a`: expected a command or a url, not both"),
            "{e}"
        );
        let e = refusal("[[mcp.services]]\nname = \"a\"\nurl = \"ftp://h\"\n");
        assert!(e.contains("expected an http:// or https:// url"), "{e}");
        let c = Config::from_toml_str(
            "[[mcp.services]]\nname = \"web\"\nurl = \"http://127.0.0.1:1/mcp\"\ntoken = \"t\"\n",
            Path::new("c.toml"),
        )
        .unwrap();
        assert_eq!(
            c.mcp.services[0].url.as_deref(),
            Some("http://127.0.0.1:1/mcp")
        );
        assert_eq!(c.mcp.services[0].bearer().unwrap().as_deref(), Some("t"));
        let e = refusal(
            "[[mcp.services]]\nname = \"a\"\nurl = \"http://h\"\ntoken = \"t\"\ntoken_env = \"T\"\n",
        );
        assert!(
            e.ends_with("expected one of token, token_env, token_file"),
            "{e}"
        );
        let e = refusal("[[mcp.services]]\nname = \"a\"\ncommand = \"x\"\ntoken_file = \"t\"\n");
        assert!(
            e.ends_with("a token goes with a url (a command needs none)"),
            "{e}"
        );
        let c = Config::from_toml_str(
            "[[mcp.services]]\nname = \"web\"\nurl = \"http://h\"\ntoken_env = \"ROBOBRAIN_TEST_UNSET_TOKEN\"\n",
            Path::new("c.toml"),
        )
        .unwrap();
        let e = c.mcp.services[0].bearer().unwrap_err().to_string();
        assert!(e.contains("ROBOBRAIN_TEST_UNSET_TOKEN is not set"), "{e}");
    }

    #[test]
    fn the_home_broker_keys_parse_and_bad_ones_are_named() {
        let c = Config::from_toml_str(
            "[home]\nmqtt = \"h:8883\"\nmqtt_username = \"robot\"\nmqtt_password_file = \"/etc/pw\"\n\
             mqtt_ca = \"ca.crt\"\nnode_id = \"rb-1\"\n[home.mqtt_names]\nlamp = \"Living Room/Lamp\"\n",
            Path::new("c.toml"),
        )
        .unwrap();
        assert_eq!(c.home.mqtt_names["lamp"], "Living Room/Lamp");
        assert!(c.home.discovery);
        assert_eq!(c.home.discovery_prefix, "homeassistant");
        let refusal = |text: &str| {
            Config::from_toml_str(text, Path::new("c.toml"))
                .unwrap_err()
                .to_string()
        };
        let e = refusal("[home]\nmqtt_password_env = \"PW\"\n");
        assert!(
            e.ends_with(
                "`home.mqtt_password_env`: a password goes with mqtt_username, which is unset"
            ),
            "{e}"
        );
        let e = refusal(
            "[home]\nmqtt_username = \"u\"\nmqtt_password_env = \"PW\"\nmqtt_password_file = \"f\"\n",
        );
        assert!(
            e.ends_with("expected one of mqtt_password_env, mqtt_password_file"),
            "{e}"
        );
        let e = refusal("[home]\nnode_id = \"my robot\"\n");
        assert!(
            e.ends_with("`home.node_id`: expected letters, digits, `_` or `-`, found \"my robot\""),
            "{e}"
        );
        let e = refusal("[home]\ndiscovery_prefix = \"ha/#\"\n");
        assert!(e.contains("`home.discovery_prefix`"), "{e}");
        // No button resumes: asking for one is refused, naming what may be.
        let e = refusal("[home]\nbuttons = [\"estop\", \"resume\"]\n");
        assert!(
            e.contains("unknown variant `resume`") && e.contains("`estop`, `patrol`, `dock`"),
            "{e}"
        );
        let c = Config::from_toml_str(
            "[home]\nbuttons = [\"estop\", \"dock\"]\n",
            Path::new("c.toml"),
        )
        .unwrap();
        assert_eq!(c.home.buttons, [HaButton::EStop, HaButton::Dock]);
        assert_eq!(Config::default().home.buttons, [HaButton::EStop]);
    }

    #[test]
    fn the_robot_url_is_read_and_checked() {
        let c = Config::from_toml_str(
            "[robot]\nurl = \"ros2://?domain=4&namespace=/robot1\"\n",
            Path::new("c.toml"),
        )
        .unwrap();
        assert_eq!(
            c.robot.url.as_deref(),
            Some("ros2://?domain=4&namespace=/robot1")
        );
        for (text, want) in [
            (
                "[robot]\nurl = \"ros2://?domain=999\"\n",
                "domain: expected 0 to 232",
            ),
            (
                "[robot]\nurl = \"http://x\"\n",
                "expected sim:, tcp://HOST:PORT or ros2://",
            ),
        ] {
            let e = Config::from_toml_str(text, Path::new("c.toml"))
                .unwrap_err()
                .to_string();
            assert!(e.contains("`robot.url`") && e.contains(want), "{e}");
        }
    }

    #[test]
    fn the_dead_man_defaults_to_two_seconds_and_is_checked() {
        assert_eq!(Config::default().link.deadman_s, 2.0);
        let c = Config::from_toml_str("[link]\ndeadman_s = 0\n", Path::new("c.toml")).unwrap();
        assert_eq!(c.link.deadman_s, 0.0);
        let e = Config::from_toml_str("[link]\ndeadman_s = 0.01\n", Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "c.toml:2:1: `link.deadman_s`: expected 0 (off) or at least 0.1 seconds, found 0.01"
        );
    }

    #[test]
    fn the_time_zone_is_an_iana_name_and_a_bad_one_names_file_key_and_what_was_expected() {
        let c = Config::from_toml_str(
            "[home]\ntime_zone = \"Europe/Berlin\"\n",
            Path::new("c.toml"),
        )
        .unwrap();
        assert_eq!(c.home.time_zone.as_deref(), Some("Europe/Berlin"));
        assert_eq!(Config::default().home.time_zone, None);
        let e = Config::from_toml_str(
            "[home]\nnight = [22, 6]\ntime_zone = \"Europe/Berlín\"\n",
            Path::new("/etc/robobrain/robobrain.toml"),
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "/etc/robobrain/robobrain.toml:3:1: `home.time_zone`: expected an IANA time zone name such as \"Europe/Berlin\" or \"America/New_York\", found \"Europe/Berlín\""
        );
        // The fixed offset it replaces is no longer a key: the refusal lists `time_zone`.
        let e = Config::from_toml_str("[home]\nutc_offset_h = 1\n", Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("c.toml:2:1: `utc_offset_h`: unknown field") && e.contains("time_zone"),
            "{e}"
        );
    }

    #[test]
    fn wrong_types_say_what_was_expected() {
        let e = Config::from_toml_str("seed = \"x\"\n", Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("c.toml:1:8"), "{e}");
        assert!(e.contains("expected"), "{e}");
    }
}
