//! Real devices over MQTT, in zigbee2mqtt's conventions ([`codec`]): the
//! adapter ([`Zigbee2Mqtt`]) keeps one connection to the broker with
//! rumqttc, follows every device's retained state and availability under the
//! base topic, and turns an invoke into a publish on `<base>/<device>/set`
//! that succeeds only when the device reports the new state.
//!
//! [`MqttBackend`] puts the adapter behind the device world's backend seam,
//! translating the device model's state words to zigbee2mqtt's and back.
//!
//! What the house can see goes through [`DeviceTable`], plain logic with no
//! IO: a device is reachable only while the broker link is up, the bridge
//! has not said `offline` and the device's own availability is not
//! `offline`. When the broker goes away every device reads offline; rumqttc
//! reconnects, the adapter subscribes again and the retained messages bring
//! the devices back.

mod backend;
pub mod codec;
mod table;
mod zigbee2mqtt;

#[cfg(test)]
pub(crate) mod broker;
#[cfg(test)]
pub(crate) mod fake;

use std::time::Duration;

use thiserror::Error;

pub use backend::{MqttBackend, from_z2m, to_z2m};
pub use table::{DeviceTable, MqttDevice, Reachability};
pub use zigbee2mqtt::{MqttEvent, Zigbee2Mqtt};

pub use crate::config::parse_broker;

/// Where the broker is and how the adapter talks to it.
#[derive(Debug, Clone, PartialEq)]
pub struct MqttConfig {
    /// Broker host name or address.
    pub host: String,
    /// Broker port (1883 by default).
    pub port: u16,
    /// zigbee2mqtt's base topic (`zigbee2mqtt` by default).
    pub base_topic: String,
    /// The MQTT client id (unique per connection).
    pub client_id: String,
    /// How long an invoke waits for the device to report the new state.
    pub invoke_timeout: Duration,
    /// How long to wait before trying the broker again after the link drops.
    pub reconnect_delay: Duration,
    /// The MQTT keep-alive interval.
    pub keep_alive: Duration,
}

impl MqttConfig {
    /// A config for `host:port` with zigbee2mqtt's defaults.
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        Self {
            host: host.into(),
            port,
            base_topic: "zigbee2mqtt".into(),
            client_id: format!("robobrain-{}", std::process::id()),
            invoke_timeout: Duration::from_secs(3),
            reconnect_delay: Duration::from_millis(500),
            keep_alive: Duration::from_secs(5),
        }
    }
}

/// Why an invoke over MQTT did not happen or was not confirmed.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MqttError {
    /// The device said it is offline (its availability topic).
    #[error("device `{0}` is offline")]
    Offline(String),
    /// The bridge (zigbee2mqtt itself) said it is offline.
    #[error("device `{0}` is offline: the zigbee2mqtt bridge is offline")]
    BridgeOffline(String),
    /// The broker link is down (the adapter keeps trying to reconnect).
    #[error("device `{device}` is offline: no connection to the MQTT broker at {broker}")]
    NotConnected {
        /// The device asked for.
        device: String,
        /// `host:port`.
        broker: String,
    },
    /// No state or availability was ever seen for this device.
    #[error("no device `{device}` under `{base}/` (known: {known})")]
    UnknownDevice {
        /// The device asked for.
        device: String,
        /// The base topic.
        base: String,
        /// The devices that are known, comma-separated.
        known: String,
    },
    /// The command was sent but the device did not report the new state in time.
    #[error("device `{device}` did not confirm the command within {after_ms} ms")]
    Timeout {
        /// The device.
        device: String,
        /// How long the adapter waited.
        after_ms: u64,
    },
    /// The link dropped while waiting for the device's report.
    #[error("device `{0}`: the MQTT connection dropped before the device confirmed")]
    ConnectionLost(String),
    /// The adapter has shut down.
    #[error("the MQTT adapter has stopped")]
    Stopped,
}

impl MqttError {
    /// Whether this error means the device cannot be reached right now.
    pub fn is_offline(&self) -> bool {
        matches!(
            self,
            Self::Offline(_) | Self::BridgeOffline(_) | Self::NotConnected { .. }
        )
    }
}

/// The MQTT backend for these devices on the broker at `broker`
/// (`HOST:PORT`, `[home] mqtt`) under `base_topic` (`[home] mqtt_base`);
/// `None` when there is no broker (the home is simulated).
pub fn backend_for(
    broker: Option<&str>,
    base_topic: &str,
    devices: &[crate::devices::Device],
) -> Result<Option<MqttBackend>, crate::devices::DeviceError> {
    let Some(addr) = broker else {
        return Ok(None);
    };
    let (host, port) = parse_broker(addr).ok_or_else(|| {
        crate::devices::DeviceError::InvalidHome(format!(
            "[home] mqtt: expected HOST:PORT, found {addr:?}"
        ))
    })?;
    let mut mqtt = MqttConfig::new(host, port);
    mqtt.base_topic = base_topic.to_string();
    MqttBackend::connect(mqtt, devices, &std::collections::BTreeMap::new()).map(Some)
}

#[cfg(test)]
mod tests;
