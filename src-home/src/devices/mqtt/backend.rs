//! Real devices behind the device world's [`DeviceBackend`] seam: the
//! world's sync calls become zigbee2mqtt commands on the adapter, which runs
//! on a small runtime of its own (so a call may block the engine's thread
//! for the device's answer without ever waiting on itself).
//!
//! The device model's state words are translated both ways: `on` ↔
//! `state: ON/OFF`, `brightness` percent ↔ zigbee2mqtt's 0–254, `locked` ↔
//! `state: LOCK/UNLOCK` (or `lock_state`), a valve's `open` ↔ `state:
//! ON/OFF`, `power` → `power_w`; other keys pass through as they are.

use std::collections::BTreeMap;
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use super::codec;
use super::zigbee2mqtt::{MqttEvent, Zigbee2Mqtt};
use super::{MqttConfig, MqttError, Reachability};
use crate::devices::backend::simulate;
use crate::devices::{Capability, Device, DeviceBackend, DeviceError, DeviceKind, DeviceUpdate};

/// The device world's backend over MQTT (zigbee2mqtt conventions).
pub struct MqttBackend {
    runtime: Option<tokio::runtime::Runtime>,
    adapter: Zigbee2Mqtt,
    events: broadcast::Receiver<MqttEvent>,
    /// Device id → (zigbee2mqtt friendly name, kind).
    devices: BTreeMap<String, (String, DeviceKind)>,
    /// The names `[home] mqtt_names` gives.
    explicit: BTreeMap<String, String>,
    /// Whether names are learnt from `<base>/bridge/devices`.
    learn: bool,
    wait: Duration,
}

impl std::fmt::Debug for MqttBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MqttBackend")
            .field("devices", &self.devices.len())
            .finish_non_exhaustive()
    }
}

impl MqttBackend {
    /// Connects to the broker for `devices`; each device's zigbee2mqtt
    /// friendly name is its id unless `names` maps it to another.
    pub fn connect(
        config: MqttConfig,
        devices: &[Device],
        names: &BTreeMap<String, String>,
    ) -> Result<Self, DeviceError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("robobrain-mqtt")
            .enable_all()
            .build()
            .map_err(|e| DeviceError::Backend {
                device: "mqtt".into(),
                message: format!("cannot start the MQTT runtime: {e}"),
            })?;
        let wait = config.invoke_timeout + Duration::from_secs(1);
        let learn = config.bridge_names;
        let adapter = {
            let _inside = runtime.enter();
            Zigbee2Mqtt::start(config)
        };
        let events = adapter.subscribe();
        let resolved =
            codec::resolve_names(devices.iter().map(|d| d.id.as_str()), names, &[], learn);
        let devices = devices
            .iter()
            .map(|d| {
                let name = resolved.get(&d.id).cloned().unwrap_or_else(|| d.id.clone());
                (d.id.clone(), (name, d.kind))
            })
            .collect();
        Ok(Self {
            runtime: Some(runtime),
            adapter,
            events,
            devices,
            explicit: names.clone(),
            learn,
            wait,
        })
    }

    /// Each device's friendly name now.
    pub fn names(&self) -> BTreeMap<String, String> {
        self.devices
            .iter()
            .map(|(id, (name, _))| (id.clone(), name.clone()))
            .collect()
    }

    /// The bridge listed its devices: the names are resolved again; whether
    /// any changed.
    fn rename(&mut self, bridge: &[codec::BridgeDevice]) -> bool {
        let resolved = codec::resolve_names(
            self.devices.keys().map(String::as_str),
            &self.explicit,
            bridge,
            self.learn,
        );
        let mut changed = false;
        for (id, (name, _)) in &mut self.devices {
            if let Some(new) = resolved.get(id)
                && new != name
            {
                name.clone_from(new);
                changed = true;
            }
        }
        changed
    }

    /// Runs `f` on the adapter's runtime and waits for its answer.
    fn block<T: Send + 'static>(
        &self,
        f: impl std::future::Future<Output = T> + Send + 'static,
    ) -> Option<T> {
        let runtime = self.runtime.as_ref()?;
        let (tx, rx) = std_mpsc::channel();
        runtime.spawn(async move {
            let _ = tx.send(f.await);
        });
        rx.recv_timeout(self.wait).ok()
    }

    fn friendly(&self, id: &str) -> Option<&(String, DeviceKind)> {
        self.devices.get(id)
    }
}

impl Drop for MqttBackend {
    fn drop(&mut self) {
        let adapter = self.adapter.clone();
        let _ = self.block(async move { adapter.shutdown().await });
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl DeviceBackend for MqttBackend {
    fn name(&self) -> &'static str {
        "mqtt"
    }

    fn apply(
        &mut self,
        device: &Device,
        capability: &Capability,
        args: &Value,
    ) -> Result<Map<String, Value>, DeviceError> {
        let desired = simulate(device, capability, args);
        let command = to_z2m(&device.state, &desired, device.kind);
        let name = self
            .friendly(&device.id)
            .map_or_else(|| device.id.clone(), |(n, _)| n.clone());
        let adapter = self.adapter.clone();
        let reported = self
            .block(async move { adapter.invoke(&name, command).await })
            .unwrap_or(Err(MqttError::Stopped))
            .map_err(|e| match e {
                e if e.is_offline() => DeviceError::Offline(device.id.clone()),
                e => DeviceError::Backend {
                    device: device.id.clone(),
                    message: e.to_string(),
                },
            })?;
        let mut after = desired;
        after.extend(from_z2m(&reported, device.kind));
        Ok(after)
    }

    fn poll(&mut self) -> Vec<DeviceUpdate> {
        let mut by_name: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
        let (mut heard, mut renamed) = (false, false);
        loop {
            match self.events.try_recv() {
                Ok(MqttEvent::State { device, state }) => {
                    by_name.insert(device, state);
                    heard = true;
                }
                Ok(MqttEvent::BridgeDevices { devices }) => {
                    renamed |= self.rename(&devices);
                    heard = true;
                }
                Ok(_) | Err(broadcast::error::TryRecvError::Lagged(_)) => heard = true,
                Err(_) => break,
            }
        }
        if !heard {
            return Vec::new();
        }
        // Reachability is re-read for every device: a reconnect brings devices
        // back without an availability *change* in the adapter's table.
        let adapter = self.adapter.clone();
        let seen = self
            .block(async move { adapter.devices().await })
            .and_then(Result::ok)
            .unwrap_or_default();
        self.devices
            .iter()
            .map(|(id, (name, kind))| {
                let d = seen.iter().find(|d| &d.name == name);
                // A renamed device's state may have come before its new name.
                let reported = by_name
                    .get(name)
                    .or_else(|| d.filter(|_| renamed).map(|d| &d.state));
                DeviceUpdate {
                    device: id.clone(),
                    state: reported.map(|s| from_z2m(s, *kind)).unwrap_or_default(),
                    online: Some(d.is_some_and(|d| d.reachability == Reachability::Online)),
                }
            })
            .collect()
    }
}

/// The zigbee2mqtt command for going from `before` to `after` (changed keys only).
pub fn to_z2m(
    before: &Map<String, Value>,
    after: &Map<String, Value>,
    kind: DeviceKind,
) -> Map<String, Value> {
    let mut command = Map::new();
    for (key, value) in after {
        if before.get(key) == Some(value) || key == "power_w" {
            continue;
        }
        let on_off = |b: bool| json!(if b { "ON" } else { "OFF" });
        match (key.as_str(), value) {
            ("on", Value::Bool(b)) => {
                command.insert("state".into(), on_off(*b));
            }
            ("open", Value::Bool(b)) if kind == DeviceKind::Valve => {
                command.insert("state".into(), on_off(*b));
            }
            ("locked", Value::Bool(b)) => {
                command.insert("state".into(), json!(if *b { "LOCK" } else { "UNLOCK" }));
            }
            ("brightness", v) if v.is_number() => {
                let pct = v.as_f64().unwrap_or(0.0);
                command.insert(
                    "brightness".into(),
                    json!((pct * 254.0 / 100.0).round() as i64),
                );
            }
            _ => {
                command.insert(key.clone(), value.clone());
            }
        }
    }
    command
}

/// A zigbee2mqtt report in the device model's words.
pub fn from_z2m(reported: &Map<String, Value>, kind: DeviceKind) -> Map<String, Value> {
    let mut state = Map::new();
    for (key, value) in reported {
        match (key.as_str(), value.as_str()) {
            ("state", Some(s)) => {
                let s = s.to_ascii_uppercase();
                let (word, yes) = match kind {
                    DeviceKind::Lock => ("locked", s == "LOCK" || s == "LOCKED"),
                    DeviceKind::Valve => ("open", s == "ON" || s == "OPEN"),
                    _ => ("on", s == "ON"),
                };
                state.insert(word.into(), Value::Bool(yes));
            }
            ("lock_state", Some(s)) => {
                state.insert(
                    "locked".into(),
                    Value::Bool(s.eq_ignore_ascii_case("locked")),
                );
            }
            ("brightness", _) if value.is_number() => {
                let raw = value.as_f64().unwrap_or(0.0);
                state.insert(
                    "brightness".into(),
                    json!((raw * 100.0 / 254.0).round() as i64),
                );
            }
            ("power", _) => {
                state.insert("power_w".into(), value.clone());
            }
            _ => {
                state.insert(key.clone(), value.clone());
            }
        }
    }
    state
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        let Value::Object(map) = v else {
            unreachable!("an object")
        };
        map
    }

    #[test]
    fn state_words_translate_both_ways() {
        let cmd = to_z2m(
            &obj(json!({"on": false, "brightness": 0})),
            &obj(json!({"on": true, "brightness": 40})),
            DeviceKind::Light,
        );
        assert_eq!(cmd, obj(json!({"state": "ON", "brightness": 102})));
        assert_eq!(
            from_z2m(
                &obj(json!({"state": "ON", "brightness": 102, "linkquality": 80})),
                DeviceKind::Light
            ),
            obj(json!({"on": true, "brightness": 40, "linkquality": 80}))
        );
        assert_eq!(
            to_z2m(
                &obj(json!({"locked": true})),
                &obj(json!({"locked": false})),
                DeviceKind::Lock
            ),
            obj(json!({"state": "UNLOCK"}))
        );
        assert_eq!(
            from_z2m(
                &obj(json!({"state": "UNLOCK", "lock_state": "unlocked"})),
                DeviceKind::Lock
            ),
            obj(json!({"locked": false}))
        );
        assert_eq!(
            to_z2m(
                &obj(json!({"open": true})),
                &obj(json!({"open": false})),
                DeviceKind::Valve
            ),
            obj(json!({"state": "OFF"}))
        );
        assert_eq!(
            from_z2m(
                &obj(json!({"state": "ON", "power": 1795.5})),
                DeviceKind::Plug
            ),
            obj(json!({"on": true, "power_w": 1795.5}))
        );
    }
}
