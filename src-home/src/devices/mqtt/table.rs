//! What the adapter knows about the devices under the base topic, updated
//! message by message; no IO, so every rule is tested without a broker.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use super::MqttError;
use super::codec::{self, CodecError, Topic};

/// Whether a device can be reached, and if not, why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reachability {
    /// Everything says it is there.
    Online,
    /// Its availability topic says `offline`.
    Offline,
    /// zigbee2mqtt's bridge says `offline`.
    BridgeOffline,
    /// The adapter has no connection to the broker.
    Disconnected,
}

/// One device as last reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MqttDevice {
    /// zigbee2mqtt's friendly name (the topic after the base).
    pub name: String,
    /// The last state reported on `<base>/<name>` (empty before the first).
    pub state: Map<String, Value>,
    /// The last availability reported (`None` before the first).
    pub available: Option<bool>,
    /// Whether it can be reached now.
    pub reachability: Reachability,
}

/// A change the table saw in one message.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A device reported its state.
    State(String),
    /// A device's availability changed.
    Availability(String, bool),
    /// The bridge's availability changed.
    Bridge(bool),
    /// The bridge listed its devices (`<base>/bridge/devices`).
    BridgeDevices(Vec<codec::BridgeDevice>),
    /// Nothing anyone needs to hear about (a command, a bridge log line).
    None,
}

#[derive(Debug, Clone, Default)]
struct Entry {
    state: Map<String, Value>,
    available: Option<bool>,
}

/// The devices under one base topic.
#[derive(Debug, Clone)]
pub struct DeviceTable {
    base: String,
    broker: String,
    connected: bool,
    bridge_online: Option<bool>,
    devices: BTreeMap<String, Entry>,
}

impl DeviceTable {
    /// An empty table for `base`; `broker` (`host:port`) is named in errors.
    pub fn new(base: &str, broker: &str) -> Self {
        Self {
            base: base.to_string(),
            broker: broker.to_string(),
            connected: false,
            bridge_online: None,
            devices: BTreeMap::new(),
        }
    }

    /// The broker link came up or went down.
    pub fn set_connected(&mut self, connected: bool) {
        self.connected = connected;
    }

    /// Whether the broker link is up.
    pub fn connected(&self) -> bool {
        self.connected
    }

    /// Takes one message; a malformed payload is refused and the prior state kept.
    pub fn apply(&mut self, topic: &str, payload: &[u8]) -> Result<Change, CodecError> {
        let Some(parsed) = codec::parse_topic(&self.base, topic) else {
            return Ok(Change::None);
        };
        Ok(match parsed {
            Topic::State(device) => {
                let state = codec::parse_object(topic, payload)?;
                self.devices.entry(device.to_string()).or_default().state = state;
                Change::State(device.to_string())
            }
            Topic::Availability(device) => {
                let online = codec::parse_availability(topic, payload)?;
                let entry = self.devices.entry(device.to_string()).or_default();
                if entry.available == Some(online) {
                    Change::None
                } else {
                    entry.available = Some(online);
                    Change::Availability(device.to_string(), online)
                }
            }
            Topic::BridgeState => {
                let online = codec::parse_availability(topic, payload)?;
                if self.bridge_online == Some(online) {
                    Change::None
                } else {
                    self.bridge_online = Some(online);
                    Change::Bridge(online)
                }
            }
            Topic::Bridge("devices") => {
                Change::BridgeDevices(codec::parse_bridge_devices(topic, payload)?)
            }
            Topic::Set(_) | Topic::Get(_) | Topic::Bridge(_) => Change::None,
        })
    }

    /// Whether `name` can be reached now (unknown devices are `Disconnected`
    /// only while the link is down, otherwise `Online` until they say otherwise).
    pub fn reachability(&self, name: &str) -> Reachability {
        if !self.connected {
            Reachability::Disconnected
        } else if self.bridge_online == Some(false) {
            Reachability::BridgeOffline
        } else if self.devices.get(name).and_then(|e| e.available) == Some(false) {
            Reachability::Offline
        } else {
            Reachability::Online
        }
    }

    /// Refuses an invoke on a device that cannot take it, with the reason.
    pub fn check_invoke(&self, name: &str) -> Result<(), MqttError> {
        if !self.devices.contains_key(name) && self.connected {
            return Err(MqttError::UnknownDevice {
                device: name.to_string(),
                base: self.base.clone(),
                known: self.names().join(", "),
            });
        }
        match self.reachability(name) {
            Reachability::Online => Ok(()),
            Reachability::Offline => Err(MqttError::Offline(name.to_string())),
            Reachability::BridgeOffline => Err(MqttError::BridgeOffline(name.to_string())),
            Reachability::Disconnected => Err(MqttError::NotConnected {
                device: name.to_string(),
                broker: self.broker.clone(),
            }),
        }
    }

    /// The last state `name` reported.
    pub fn state(&self, name: &str) -> Option<&Map<String, Value>> {
        self.devices.get(name).map(|e| &e.state)
    }

    /// Every device seen, by name.
    pub fn names(&self) -> Vec<String> {
        self.devices.keys().cloned().collect()
    }

    /// Every device seen, as reported, sorted by name.
    pub fn devices(&self) -> Vec<MqttDevice> {
        self.devices
            .iter()
            .map(|(name, e)| MqttDevice {
                name: name.clone(),
                state: e.state.clone(),
                available: e.available,
                reachability: self.reachability(name),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> DeviceTable {
        let mut t = DeviceTable::new("z2m", "127.0.0.1:1883");
        t.set_connected(true);
        t
    }

    #[test]
    fn state_and_availability_are_followed() {
        let mut t = table();
        assert_eq!(
            t.apply("z2m/lamp", br#"{"state":"ON"}"#),
            Ok(Change::State("lamp".into()))
        );
        assert_eq!(t.state("lamp").unwrap()["state"], "ON");
        assert_eq!(t.reachability("lamp"), Reachability::Online);
        assert_eq!(
            t.apply("z2m/lamp/availability", b"offline"),
            Ok(Change::Availability("lamp".into(), false))
        );
        assert_eq!(
            t.apply("z2m/lamp/availability", b"offline"),
            Ok(Change::None)
        );
        assert_eq!(
            t.check_invoke("lamp"),
            Err(MqttError::Offline("lamp".into()))
        );
        assert_eq!(
            t.apply("z2m/lamp/availability", br#"{"state":"online"}"#),
            Ok(Change::Availability("lamp".into(), true))
        );
        assert_eq!(t.check_invoke("lamp"), Ok(()));
        assert_eq!(
            t.apply("z2m/lamp/set", br#"{"state":"OFF"}"#),
            Ok(Change::None)
        );
        assert_eq!(t.apply("elsewhere/lamp", b"junk"), Ok(Change::None));
    }

    #[test]
    fn a_bad_payload_keeps_the_last_state() {
        let mut t = table();
        t.apply("z2m/lamp", br#"{"state":"ON"}"#).unwrap();
        assert!(t.apply("z2m/lamp", b"not json").is_err());
        assert!(t.apply("z2m/lamp/availability", b"perhaps").is_err());
        assert_eq!(t.state("lamp").unwrap()["state"], "ON");
        assert_eq!(t.reachability("lamp"), Reachability::Online);
    }

    #[test]
    fn the_bridge_and_the_link_take_every_device_offline() {
        let mut t = table();
        t.apply("z2m/lamp", b"{}").unwrap();
        t.apply("z2m/bridge/state", b"offline").unwrap();
        assert_eq!(
            t.check_invoke("lamp").unwrap_err().to_string(),
            "device `lamp` is offline: the zigbee2mqtt bridge is offline"
        );
        t.apply("z2m/bridge/state", br#"{"state":"online"}"#)
            .unwrap();
        assert_eq!(t.check_invoke("lamp"), Ok(()));
        t.set_connected(false);
        let err = t.check_invoke("lamp").unwrap_err();
        assert!(err.is_offline());
        assert_eq!(
            err.to_string(),
            "device `lamp` is offline: no connection to the MQTT broker at 127.0.0.1:1883"
        );
        assert_eq!(t.devices()[0].reachability, Reachability::Disconnected);
    }

    #[test]
    fn unknown_devices_are_named_with_the_known_ones() {
        let mut t = table();
        t.apply("z2m/lamp", b"{}").unwrap();
        t.apply("z2m/plug", b"{}").unwrap();
        assert_eq!(
            t.check_invoke("kettle").unwrap_err().to_string(),
            "no device `kettle` under `z2m/` (known: lamp, plug)"
        );
    }
}
