//! The smart-home device model (seed 001): devices with an id, a name and
//! aliases, a room, a kind, capabilities whose arguments have a JSON Schema,
//! a state, whether they are online and how long they take to answer.
//!
//! A [`DeviceWorld`] holds the devices of one home and carries out
//! capability calls through a [`DeviceBackend`]: the in-process
//! [`SimBackend`] (the default, deterministic), or an adapter to real devices
//! (MQTT in `devices/mqtt.rs`). A world is built from a catalogue of device
//! types plus a home file ([`catalogue`]), or from any list of [`Device`]s
//! (a Home Assistant description in `assist/world.rs`).
//!
//! The world enforces what seed 001 §3.2 asks of the tool layer at the last
//! step before a device: only a capability the device has, arguments valid
//! against its schema (the failing path named), and each request id applied
//! at most once.

pub mod backend;
pub mod catalogue;
pub mod mqtt;

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use thiserror::Error;

use crate::skills::Risk;

pub use backend::{DeviceBackend, DeviceUpdate, SimBackend};
pub use catalogue::{Home, Scene, builtin_home, load_home, parse_home};

/// What kind of device it is (Home Assistant's domain, roughly).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceKind {
    /// A light (on/off, maybe dimmable).
    Light,
    /// A curtain, blind or cover.
    Curtain,
    /// A switched socket (a kettle's plug).
    Plug,
    /// An air conditioner or thermostat.
    Climate,
    /// A door lock.
    Lock,
    /// A valve (gas, water).
    Valve,
    /// A security alarm.
    Alarm,
    /// A fan.
    Fan,
    /// A media player or TV.
    MediaPlayer,
    /// A vacuum cleaner.
    Vacuum,
    /// A sensor (read only).
    Sensor,
    /// A screen (the robot's own display).
    Screen,
    /// The robot's face.
    Expression,
    /// Anything else with an on/off switch.
    Switch,
    /// A to-do or shopping list (items added by voice).
    Todo,
}

impl DeviceKind {
    /// The Home Assistant domain of this kind (what the grammar's `{name}`
    /// values carry as context); `None` for the robot's own screen and face.
    pub fn domain(self) -> Option<&'static str> {
        Some(match self {
            Self::Light => "light",
            Self::Curtain => "cover",
            Self::Plug | Self::Switch => "switch",
            Self::Climate => "climate",
            Self::Lock => "lock",
            Self::Valve => "valve",
            Self::Alarm => "alarm_control_panel",
            Self::Fan => "fan",
            Self::MediaPlayer => "media_player",
            Self::Vacuum => "vacuum",
            Self::Sensor => "sensor",
            Self::Todo => "todo",
            Self::Screen | Self::Expression => return None,
        })
    }

    /// The name as written in files and events.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Light => "light",
            Self::Curtain => "curtain",
            Self::Plug => "plug",
            Self::Climate => "climate",
            Self::Lock => "lock",
            Self::Valve => "valve",
            Self::Alarm => "alarm",
            Self::Fan => "fan",
            Self::MediaPlayer => "media_player",
            Self::Vacuum => "vacuum",
            Self::Sensor => "sensor",
            Self::Screen => "screen",
            Self::Expression => "expression",
            Self::Switch => "switch",
            Self::Todo => "todo",
        }
    }
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One thing a device can do (`turn_on`, `set_brightness`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Capability {
    /// Its name, unique on the device.
    pub name: String,
    /// What it does, for people and models.
    pub description: String,
    /// JSON Schema of its arguments (an object schema).
    pub args_schema: Value,
    /// How the simulated device's state changes: state key → a constant, or
    /// `"#{arg}"` for an argument's value.
    pub effects: BTreeMap<String, Value>,
    /// Risk of calling it, before the policy looks at the device and the time.
    pub risk: Risk,
}

/// A room of the home.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Room {
    /// Its id (`living_room`), the world's zone name where there is one.
    pub id: String,
    /// Its name in words (`living room`).
    pub name: String,
    /// Other names, in Chinese and English (`客厅`, `lounge`).
    pub aliases: Vec<String>,
    /// The floor it is on (a [`Floor`]'s id), when the home has floors.
    #[serde(default)]
    pub floor: Option<String>,
}

/// A floor of the home ("upstairs", "二楼").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Floor {
    /// Its id (`first`).
    pub id: String,
    /// Its name (`first floor`).
    pub name: String,
    /// Other names (`upstairs`, `二楼`).
    pub aliases: Vec<String>,
}

/// One device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Device {
    /// Unique id (`living_room_light`).
    pub id: String,
    /// Its name in words (`living room light`).
    pub name: String,
    /// Other names, in Chinese and English (`客厅灯`, `ceiling light`).
    pub aliases: Vec<String>,
    /// The room's id.
    pub room: String,
    /// What kind of device.
    pub kind: DeviceKind,
    /// What it can do.
    pub capabilities: Vec<Capability>,
    /// Its last known state (`on`, `brightness`, `power_w`, …).
    pub state: Map<String, Value>,
    /// Whether it answers.
    pub online: bool,
    /// How long it takes to answer, milliseconds (simulated; measured on real ones).
    pub latency_ms: u64,
    /// Power it draws when on, watts (a kettle: 1800), when known.
    pub rated_power_w: Option<f64>,
    /// What its state does not tell (`only the plug's on/off state and power
    /// draw are known, not the water temperature`), said with every answer about it.
    pub caveat: Option<String>,
}

impl Device {
    /// The capability called `name`.
    pub fn capability(&self, name: &str) -> Option<&Capability> {
        self.capabilities.iter().find(|c| c.name == name)
    }

    /// Its Home Assistant domain: the prefix of an entity id
    /// (`light.kitchen`), else its kind's.
    pub fn domain(&self) -> Option<&str> {
        match self.id.split_once('.') {
            Some((d, rest))
                if !d.is_empty()
                    && !rest.is_empty()
                    && d.chars().all(|c| c.is_ascii_lowercase() || c == '_') =>
            {
                Some(d)
            }
            _ => self.kind.domain(),
        }
    }

    /// Its device class (`garage`, `temperature`), from its state; the
    /// enum form the assist datasets write (`cover.CoverDeviceClass.GARAGE`)
    /// read as Home Assistant's value (`garage`).
    pub fn device_class(&self) -> Option<String> {
        let raw = self.state.get("device_class").and_then(Value::as_str)?;
        Some(match raw.rsplit_once("DeviceClass.") {
            Some((_, name)) => name.to_lowercase(),
            None => raw.to_string(),
        })
    }

    /// Every name it answers to, lower-case: id, name, aliases.
    pub fn names(&self) -> impl Iterator<Item = String> + '_ {
        [
            self.id.clone(),
            self.id.replace('_', " "),
            self.name.clone(),
        ]
        .into_iter()
        .chain(self.aliases.iter().cloned())
        .map(|n| n.to_lowercase())
    }
}

/// A capability call as the tool layer sends it: every write carries the
/// request, plan and step it belongs to (seed 001 §3.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Invocation {
    /// Unique per write; a repeated id is refused.
    pub request_id: String,
    /// The plan it is part of.
    pub plan_id: String,
    /// Its step in the plan.
    pub step_id: String,
    /// The device's id.
    pub device: String,
    /// The capability's name.
    pub capability: String,
    /// Its arguments.
    pub args: Value,
}

/// A capability call that was carried out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Applied {
    /// The request's id.
    pub request_id: String,
    /// The device's id.
    pub device: String,
    /// The capability.
    pub capability: String,
    /// The state before.
    pub before: Map<String, Value>,
    /// The state after.
    pub after: Map<String, Value>,
    /// How long the device took, milliseconds.
    pub latency_ms: u64,
}

/// Why a device lookup or call failed. Each is an expected condition with
/// its own variant, so the caller can tell the user precisely.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum DeviceError {
    /// No device has this id.
    #[error("no device `{0}`")]
    UnknownDevice(String),
    /// The device has no such capability.
    #[error("`{device}` cannot `{capability}`; it can: {}", available.join(", "))]
    NotCapable {
        /// The device.
        device: String,
        /// What was asked.
        capability: String,
        /// What it can do.
        available: Vec<String>,
    },
    /// The arguments break the capability's schema.
    #[error("invalid args for `{device}.{capability}` at `{path}`: {message}")]
    InvalidArgs {
        /// The device.
        device: String,
        /// The capability.
        capability: String,
        /// JSON pointer to the offending value (`/level`), empty for the root.
        path: String,
        /// What was expected.
        message: String,
    },
    /// The device does not answer.
    #[error("`{0}` is offline")]
    Offline(String),
    /// This request id was applied already; it is not applied twice.
    #[error("request `{request_id}` was already applied (to `{device}.{capability}`)")]
    DuplicateRequest {
        /// The repeated id.
        request_id: String,
        /// The device it was applied to.
        device: String,
        /// The capability it called.
        capability: String,
    },
    /// The backend (a broker, a hub) failed.
    #[error("`{device}`: {message}")]
    Backend {
        /// The device.
        device: String,
        /// What went wrong.
        message: String,
    },
    /// The home description is inconsistent.
    #[error("invalid home: {0}")]
    InvalidHome(String),
}

impl DeviceError {
    /// A stable code for audit rows and tool results.
    pub fn code(&self) -> &'static str {
        match self {
            Self::UnknownDevice(_) => "unknown_device",
            Self::NotCapable { .. } => "not_capable",
            Self::InvalidArgs { .. } => "invalid_args",
            Self::Offline(_) => "offline",
            Self::DuplicateRequest { .. } => "duplicate_request",
            Self::Backend { .. } => "backend",
            Self::InvalidHome(_) => "invalid_home",
        }
    }
}

/// The devices of one home and the backend that moves them.
pub struct DeviceWorld {
    name: String,
    rooms: Vec<Room>,
    floors: Vec<Floor>,
    devices: Vec<Device>,
    /// Compiled argument validators by (device index, capability index).
    validators: HashMap<(usize, usize), jsonschema::Validator>,
    /// Request ids applied, with what they did.
    applied: HashMap<String, Applied>,
    backend: Box<dyn DeviceBackend>,
    /// Changes whenever what [`DeviceWorld::durable`] returns may have.
    revision: u64,
}

/// Revisions of every [`DeviceWorld`] in the process come from one counter,
/// so two homes (or one rebuilt) never share a revision.
static REVISIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn next_revision() -> u64 {
    REVISIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl fmt::Debug for DeviceWorld {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceWorld")
            .field("name", &self.name)
            .field("rooms", &self.rooms.len())
            .field("devices", &self.devices.len())
            .field("backend", &self.backend.name())
            .finish_non_exhaustive()
    }
}

impl DeviceWorld {
    /// A world of `devices` in `rooms`, moved by `backend`. Refuses duplicate
    /// ids, devices in unknown rooms, and capability schemas that do not compile.
    pub fn new(
        name: &str,
        rooms: Vec<Room>,
        devices: Vec<Device>,
        backend: Box<dyn DeviceBackend>,
    ) -> Result<Self, DeviceError> {
        let mut validators = HashMap::new();
        for (di, d) in devices.iter().enumerate() {
            if devices[..di].iter().any(|o| o.id == d.id) {
                return Err(DeviceError::InvalidHome(format!(
                    "device id `{}` is used twice",
                    d.id
                )));
            }
            if !rooms.iter().any(|r| r.id == d.room) {
                let known: Vec<&str> = rooms.iter().map(|r| r.id.as_str()).collect();
                return Err(DeviceError::InvalidHome(format!(
                    "device `{}` is in room `{}`, which the home does not have (rooms: {})",
                    d.id,
                    d.room,
                    known.join(", ")
                )));
            }
            for (ci, c) in d.capabilities.iter().enumerate() {
                let v = jsonschema::validator_for(&c.args_schema).map_err(|e| {
                    DeviceError::InvalidHome(format!(
                        "`{}.{}` has an invalid args schema: {e}",
                        d.id, c.name
                    ))
                })?;
                validators.insert((di, ci), v);
            }
        }
        Ok(Self {
            name: name.to_string(),
            rooms,
            floors: Vec::new(),
            devices,
            validators,
            applied: HashMap::new(),
            backend,
            revision: next_revision(),
        })
    }

    /// The built-in home (`assets/homes/apartment.toml`), simulated.
    pub fn builtin() -> Result<Self, DeviceError> {
        let home = builtin_home().map_err(|e| DeviceError::InvalidHome(e.to_string()))?;
        Self::new(&home.name, home.rooms, home.devices, Box::new(SimBackend))
    }

    /// The home's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Moves the devices by `backend` from now on (the states kept).
    pub fn set_backend(&mut self, backend: Box<dyn DeviceBackend>) {
        self.backend = backend;
    }

    /// The backend's name (`sim`, `mqtt`).
    pub fn backend_name(&self) -> &str {
        self.backend.name()
    }

    /// Every room.
    pub fn rooms(&self) -> &[Room] {
        &self.rooms
    }

    /// Every floor.
    pub fn floors(&self) -> &[Floor] {
        &self.floors
    }

    /// Gives the home its floors (rooms name theirs by id).
    pub fn with_floors(mut self, floors: Vec<Floor>) -> Self {
        self.floors = floors;
        self
    }

    /// The floor a device is on (through its room).
    pub fn floor_of(&self, device: &Device) -> Option<&str> {
        self.rooms
            .iter()
            .find(|r| r.id == device.room)
            .and_then(|r| r.floor.as_deref())
    }

    /// Every device, in file order.
    pub fn devices(&self) -> &[Device] {
        &self.devices
    }

    /// The device with this id.
    pub fn get(&self, id: &str) -> Option<&Device> {
        self.devices.iter().find(|d| d.id == id)
    }

    /// The room with this id, name or alias (any case).
    pub fn room(&self, name: &str) -> Option<&Room> {
        let lower = name.to_lowercase();
        self.rooms.iter().find(|r| {
            r.id == lower
                || r.id.replace('_', " ") == lower
                || r.name.to_lowercase() == lower
                || r.aliases.iter().any(|a| a.to_lowercase() == lower)
        })
    }

    /// Devices whose id, name or an alias is `name` (any case).
    pub fn by_name(&self, name: &str) -> Vec<&Device> {
        let lower = name.to_lowercase();
        self.devices
            .iter()
            .filter(|d| d.names().any(|n| n == lower))
            .collect()
    }

    /// Devices in the room `room` (id, name or alias).
    pub fn in_room(&self, room: &str) -> Vec<&Device> {
        match self.room(room) {
            Some(r) => self.devices.iter().filter(|d| d.room == r.id).collect(),
            None => Vec::new(),
        }
    }

    /// Devices matching every filter given: a word in a name or alias, a
    /// room, a kind.
    pub fn search(
        &self,
        query: Option<&str>,
        room: Option<&str>,
        kind: Option<DeviceKind>,
    ) -> Vec<&Device> {
        let room_id = room.map(|r| self.room(r).map(|r| r.id.clone()));
        let q = query.map(str::to_lowercase);
        self.devices
            .iter()
            .filter(|d| match &room_id {
                Some(Some(id)) => &d.room == id,
                Some(None) => false,
                None => true,
            })
            .filter(|d| kind.is_none_or(|k| d.kind == k))
            .filter(|d| {
                q.as_deref()
                    .is_none_or(|q| q.is_empty() || d.names().any(|n| n.contains(q)))
            })
            .collect()
    }

    /// The request applied under `request_id`, if one was.
    pub fn applied(&self, request_id: &str) -> Option<&Applied> {
        self.applied.get(request_id)
    }

    /// Checks a call without carrying it out: the device exists, has the
    /// capability, and the arguments fit its schema.
    pub fn check(&self, device: &str, capability: &str, args: &Value) -> Result<(), DeviceError> {
        self.locate(device, capability, args).map(|_| ())
    }

    fn locate(
        &self,
        device: &str,
        capability: &str,
        args: &Value,
    ) -> Result<(usize, usize), DeviceError> {
        let di = self
            .devices
            .iter()
            .position(|d| d.id == device)
            .ok_or_else(|| DeviceError::UnknownDevice(device.to_string()))?;
        let d = &self.devices[di];
        let ci = d
            .capabilities
            .iter()
            .position(|c| c.name == capability)
            .ok_or_else(|| DeviceError::NotCapable {
                device: device.to_string(),
                capability: capability.to_string(),
                available: d.capabilities.iter().map(|c| c.name.clone()).collect(),
            })?;
        if let Some(v) = self.validators.get(&(di, ci))
            && let Err(e) = v.validate(args)
        {
            return Err(DeviceError::InvalidArgs {
                device: device.to_string(),
                capability: capability.to_string(),
                path: e.instance_path().as_str().to_string(),
                message: e.to_string(),
            });
        }
        Ok((di, ci))
    }

    /// Carries out a capability call: refuses a request id applied before,
    /// an unknown device or capability, bad arguments and an offline device;
    /// otherwise the backend applies it and the new state is kept.
    pub fn invoke(&mut self, call: &Invocation) -> Result<Applied, DeviceError> {
        if let Some(done) = self.applied.get(&call.request_id) {
            return Err(DeviceError::DuplicateRequest {
                request_id: call.request_id.clone(),
                device: done.device.clone(),
                capability: done.capability.clone(),
            });
        }
        let (di, ci) = self.locate(&call.device, &call.capability, &call.args)?;
        let device = &self.devices[di];
        if !device.online {
            return Err(DeviceError::Offline(device.id.clone()));
        }
        let capability = &device.capabilities[ci];
        let after = self.backend.apply(device, capability, &call.args)?;
        let device = &mut self.devices[di];
        let before = std::mem::replace(&mut device.state, after.clone());
        let applied = Applied {
            request_id: call.request_id.clone(),
            device: device.id.clone(),
            capability: call.capability.clone(),
            before,
            after,
            latency_ms: device.latency_ms,
        };
        self.applied
            .insert(call.request_id.clone(), applied.clone());
        self.revision = next_revision();
        Ok(applied)
    }

    /// Marks a device on- or offline (a simulator fault, or the backend's
    /// availability report). Returns whether it changed.
    pub fn set_online(&mut self, id: &str, online: bool) -> Result<bool, DeviceError> {
        let d = self
            .devices
            .iter_mut()
            .find(|d| d.id == id)
            .ok_or_else(|| DeviceError::UnknownDevice(id.to_string()))?;
        let changed = d.online != online;
        d.online = online;
        if changed {
            self.revision = next_revision();
        }
        Ok(changed)
    }

    /// Takes in what the backend heard from the devices since the last poll
    /// (state reports, availability); returns the ids of devices that changed.
    pub fn poll(&mut self) -> Vec<String> {
        let mut changed = Vec::new();
        for update in self.backend.poll() {
            let Some(d) = self.devices.iter_mut().find(|d| d.id == update.device) else {
                continue;
            };
            if let Some(online) = update.online {
                d.online = online;
            }
            for (k, v) in update.state {
                d.state.insert(k, v);
            }
            if !changed.contains(&d.id) {
                changed.push(d.id.clone());
            }
        }
        if !changed.is_empty() {
            self.revision = next_revision();
        }
        changed
    }

    /// A number that changes whenever [`DeviceWorld::durable`] may return
    /// something new (a call applied, a device's state or availability
    /// changed, a restore), unique across the process: the durable
    /// engine rebuilds the home's part of a checkpoint only when it moved.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// What a checkpoint keeps: every device's state and availability, and
    /// the request ids applied (so a resumed run still refuses them).
    pub fn durable(&self) -> Value {
        let mut applied: Vec<Value> = self
            .applied
            .values()
            .map(|a| serde_json::json!({"request_id": a.request_id, "device": a.device, "capability": a.capability}))
            .collect();
        applied.sort_by(|a, b| a["request_id"].as_str().cmp(&b["request_id"].as_str()));
        serde_json::json!({"states": self.states(), "applied": applied})
    }

    /// Restores what [`DeviceWorld::durable`] kept; devices the home no
    /// longer has are skipped.
    pub fn restore(&mut self, kept: &Value) {
        self.revision = next_revision();
        if let Some(states) = kept.get("states").and_then(Value::as_object) {
            for (id, s) in states {
                let Some(d) = self.devices.iter_mut().find(|d| &d.id == id) else {
                    continue;
                };
                if let Some(state) = s.get("state").and_then(Value::as_object) {
                    d.state.clone_from(state);
                }
                if let Some(online) = s.get("online").and_then(Value::as_bool) {
                    d.online = online;
                }
            }
        }
        for a in kept
            .get("applied")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let field = |k: &str| {
                a.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            let request_id = field("request_id");
            self.applied.insert(
                request_id.clone(),
                Applied {
                    request_id,
                    device: field("device"),
                    capability: field("capability"),
                    before: Map::new(),
                    after: Map::new(),
                    latency_ms: 0,
                },
            );
        }
    }

    /// Every device's state as JSON (for snapshots and checkpoints):
    /// id → {state, online, room}; the room lets a face place it on the map.
    pub fn states(&self) -> Value {
        let map: Map<String, Value> = self
            .devices
            .iter()
            .map(|d| {
                (
                    d.id.clone(),
                    serde_json::json!({ "state": d.state, "online": d.online, "room": d.room }),
                )
            })
            .collect();
        Value::Object(map)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(id: &str, device: &str, capability: &str, args: Value) -> Invocation {
        Invocation {
            request_id: id.into(),
            plan_id: "p1".into(),
            step_id: "s1".into(),
            device: device.into(),
            capability: capability.into(),
            args,
        }
    }

    #[test]
    fn the_builtin_home_has_every_catalogue_kind_in_rooms() {
        let w = DeviceWorld::builtin().unwrap();
        for kind in [
            DeviceKind::Light,
            DeviceKind::Curtain,
            DeviceKind::Plug,
            DeviceKind::Climate,
            DeviceKind::Lock,
            DeviceKind::Valve,
            DeviceKind::Alarm,
            DeviceKind::Screen,
            DeviceKind::Expression,
        ] {
            assert!(
                !w.search(None, None, Some(kind)).is_empty(),
                "no {kind} in the home"
            );
        }
        assert_eq!(w.by_name("客厅灯")[0].id, "living_room_light");
        assert!(w.in_room("客厅").len() >= 3);
        assert_eq!(w.room("bedroom").unwrap().name, "bedroom");
    }

    #[test]
    fn a_call_changes_state_and_its_request_id_is_not_applied_twice() {
        let mut w = DeviceWorld::builtin().unwrap();
        let done = w
            .invoke(&call(
                "r1",
                "living_room_light",
                "set_brightness",
                json!({"level": 40}),
            ))
            .unwrap();
        assert_eq!(done.after["brightness"], json!(40));
        assert_eq!(done.after["on"], json!(true));
        assert_eq!(
            w.get("living_room_light").unwrap().state["brightness"],
            json!(40)
        );
        let again = w
            .invoke(&call("r1", "living_room_light", "turn_off", json!({})))
            .unwrap_err();
        assert_eq!(again.code(), "duplicate_request");
        assert_eq!(w.get("living_room_light").unwrap().state["on"], json!(true));
    }

    #[test]
    fn bad_calls_get_precise_errors_and_change_nothing() {
        let mut w = DeviceWorld::builtin().unwrap();
        let e = w
            .invoke(&call(
                "r1",
                "living_room_light",
                "set_brightness",
                json!({"level": 140}),
            ))
            .unwrap_err();
        assert!(
            matches!(&e, DeviceError::InvalidArgs { path, .. } if path == "/level"),
            "{e}"
        );
        let e = w
            .invoke(&call("r2", "front_door_lock", "explode", json!({})))
            .unwrap_err();
        assert!(e.to_string().contains("it can: lock, unlock"), "{e}");
        w.set_online("bedroom_curtain", false).unwrap();
        let e = w
            .invoke(&call("r3", "bedroom_curtain", "close", json!({})))
            .unwrap_err();
        assert_eq!(e, DeviceError::Offline("bedroom_curtain".into()));
        // A failed request may be sent again under the same id once the device is back.
        w.set_online("bedroom_curtain", true).unwrap();
        w.invoke(&call("r3", "bedroom_curtain", "close", json!({})))
            .unwrap();
    }

    #[test]
    fn the_kettle_plug_reports_power_when_on() {
        let mut w = DeviceWorld::builtin().unwrap();
        let done = w
            .invoke(&call("r1", "kettle_plug", "turn_on", json!({})))
            .unwrap();
        assert_eq!(done.after["power_w"], json!(1800.0));
        let done = w
            .invoke(&call("r2", "kettle_plug", "turn_off", json!({})))
            .unwrap();
        assert_eq!(done.after["power_w"], json!(0.0));
        assert!(w.get("kettle_plug").unwrap().caveat.is_some());
    }

    #[test]
    fn a_world_refuses_devices_in_unknown_rooms() {
        let home = builtin_home().unwrap();
        let mut devices = home.devices.clone();
        devices[0].room = "attic".into();
        let e = DeviceWorld::new("x", home.rooms, devices, Box::new(SimBackend)).unwrap_err();
        assert!(e.to_string().contains("room `attic`"), "{e}");
    }
}
