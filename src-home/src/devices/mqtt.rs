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
mod connection;
pub mod discovery;
mod publisher;
mod running;
mod table;
mod zigbee2mqtt;

#[cfg(any(test, feature = "test-utils"))]
pub mod broker;
#[cfg(any(test, feature = "test-utils"))]
pub mod fake;

use std::path::PathBuf;
use std::time::Duration;

use rumqttc::{MqttOptions, TlsConfiguration, Transport};
use thiserror::Error;

use crate::config::HomeConfig;
use crate::llm::Secret;

pub use backend::{MqttBackend, from_z2m, to_z2m};
pub use connection::{Net, Subscriptions, spawn_poll};
pub use discovery::Discovery;
pub use publisher::{CommandSink, ECHO_WAIT, HaPublisher};
pub use running::{Running, disconnect};
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
    /// User name and password on the broker; none: anonymous.
    pub credentials: Option<(String, Secret)>,
    /// The CA certificate (PEM) the broker's TLS certificate must be signed
    /// by; none: plain TCP.
    pub tls_ca: Option<Vec<u8>>,
    /// Learn the home's friendly names from zigbee2mqtt's retained
    /// `<base>/bridge/devices`: a device whose friendly name, written as an
    /// id (`Living Room/Light` → `living_room_light`), is a home device's id.
    pub bridge_names: bool,
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
            credentials: None,
            tls_ca: None,
            bridge_names: false,
        }
    }

    /// The broker `[home]` names (`mqtt`, `mqtt_base`, the user name, the
    /// password read now from `mqtt_password_env` or `mqtt_password_file`,
    /// the CA read from `mqtt_ca`); `None` when there is no broker.
    pub fn from_home(home: &HomeConfig) -> Result<Option<Self>, MqttError> {
        let Some(addr) = &home.mqtt else {
            return Ok(None);
        };
        let (host, port) = parse_broker(addr).ok_or_else(|| MqttError::Broker(addr.clone()))?;
        let mut mqtt = Self::new(host, port);
        mqtt.base_topic.clone_from(&home.mqtt_base);
        mqtt.log_in(
            home.mqtt_username.as_deref(),
            home.mqtt_password_env.as_deref(),
            home.mqtt_password_file.as_deref(),
            home.mqtt_ca.as_deref(),
        )?;
        Ok(Some(mqtt))
    }

    /// The broker of `[home] mqtt` as Home Assistant's discovery publisher
    /// logs in to it: as `[home] discovery_username` when set (a broker
    /// that ties client ids to users needs the two home connections under
    /// two users), else as the home's user; `None` without `mqtt`.
    pub fn for_discovery(home: &HomeConfig) -> Result<Option<Self>, MqttError> {
        let Some(mut mqtt) = Self::from_home(home)? else {
            return Ok(None);
        };
        if home.discovery_username.is_some() {
            mqtt.log_in(
                home.discovery_username.as_deref(),
                home.discovery_password_env.as_deref(),
                home.discovery_password_file.as_deref(),
                None,
            )?;
        }
        Ok(Some(mqtt))
    }

    /// Sets the credentials (`user` with the password read now from the
    /// variable `password_env` or the file `password_file`) and the CA
    /// read from `ca`, each when given.
    pub fn log_in(
        &mut self,
        user: Option<&str>,
        password_env: Option<&str>,
        password_file: Option<&std::path::Path>,
        ca: Option<&std::path::Path>,
    ) -> Result<(), MqttError> {
        if let Some(user) = user {
            let password = match (password_env, password_file) {
                (Some(name), _) => crate::secrets::from_env(name).map(Some),
                (None, Some(path)) => crate::secrets::from_file(path).map(Some),
                (None, None) => Ok(None),
            }
            .map_err(|e| MqttError::Password(e.to_string()))?;
            self.credentials = Some((user.to_string(), Secret::new(password.unwrap_or_default())));
        }
        if let Some(path) = ca {
            let pem = std::fs::read(path).map_err(|e| MqttError::Ca {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
            self.tls_ca = Some(pem);
        }
        Ok(())
    }

    /// `host:port`, as errors name the broker.
    pub fn broker(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// rumqttc's options for one connection as `client_id`: keep-alive,
    /// clean session, the credentials and TLS when configured.
    pub fn options(&self, client_id: &str) -> MqttOptions {
        let mut options = MqttOptions::new(client_id, &self.host, self.port);
        options
            .set_keep_alive(self.keep_alive)
            .set_clean_session(true)
            .set_max_packet_size(4 * 1024 * 1024, 4 * 1024 * 1024);
        if let Some((user, password)) = &self.credentials {
            options.set_credentials(user, password.expose());
        }
        if let Some(ca) = &self.tls_ca {
            options.set_transport(Transport::tls_with_config(TlsConfiguration::Simple {
                ca: ca.clone(),
                alpn: None,
                client_auth: None,
            }));
        }
        options
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
    /// `[home] mqtt` is not `HOST:PORT`.
    #[error("[home] mqtt: expected HOST:PORT, found {0:?}")]
    Broker(String),
    /// The broker password could not be read.
    #[error("[home] mqtt password: {0}")]
    Password(String),
    /// The CA certificate could not be read.
    #[error("[home] mqtt_ca {path}: {message}")]
    Ca {
        /// The file.
        path: PathBuf,
        /// What the system said.
        message: String,
    },
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

/// Says, on the diagnostics (stderr, or the face's log file), that a
/// retained message on a command topic was not acted on: the broker kept
/// an old press, command or order and replayed it when we subscribed. A
/// command is only ever a message forwarded live.
pub fn ignored_retained(topic: &str) {
    tracing::warn!(
        "mqtt: ignored a retained message on the command topic `{topic}`: retained messages \
         are never acted on (clear it with an empty retained publish)"
    );
}

/// Says loudly — on the diagnostics (stderr, or the face's log file) —
/// that the broker refused a subscription to `filter`, and returns the
/// words for the run's `error` event.
pub fn refused_subscription(filter: &str) -> String {
    let message = format!(
        "the MQTT broker refused the subscription to `{filter}` (SUBACK 0x80: its ACL denies it); \
         nothing published there reaches robobrain"
    );
    tracing::error!("mqtt: {message}");
    message
}

/// The MQTT backend for these devices on the broker `[home]` names
/// (`mqtt`, `mqtt_base`, credentials, TLS, `mqtt_names`); `None` when
/// there is no broker (the home is simulated).
pub fn backend_for(
    home: &HomeConfig,
    devices: &[crate::devices::Device],
) -> Result<Option<MqttBackend>, crate::devices::DeviceError> {
    let Some(mut mqtt) = MqttConfig::from_home(home)
        .map_err(|e| crate::devices::DeviceError::InvalidHome(e.to_string()))?
    else {
        return Ok(None);
    };
    mqtt.bridge_names = home.mqtt_bridge_names;
    MqttBackend::connect(mqtt, devices, &home.mqtt_names).map(Some)
}

#[cfg(test)]
mod tests;
