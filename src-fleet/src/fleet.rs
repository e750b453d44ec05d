//! A fleet of robots on an MQTT broker (docs/fleet.md): each robot's brain
//! is its own process, and with `[fleet] broker` its run publishes to and
//! listens on the broker, in robobrain's own protocol (the same `hello`,
//! snapshots, events and commands a WebSocket console gets, under
//! `robobrain/<robot>/…`) and in VDA 5050 v2.1 (`uagv/v2/<manufacturer>/<robot>/…`).
//!
//! - [`topics`]: the topic names both ways, and the mosquitto ACL a fleet needs.
//! - [`vda5050`]: VDA 5050's messages as serde types.
//! - [`order`]: what a VDA 5050 order must be before anything drives, and
//!   where one stands while it runs.
//! - [`bridge`]: one robot's side as plain logic (messages in, publishes
//!   and commands out); [`FleetLink`] is the IO around it, started by the
//!   session builder, never by a face.
//! - [`view`]: the console's side as plain logic — every robot's newest
//!   state, one approval queue across the fleet; [`FleetClient`] is its IO.

pub mod board;
pub mod bridge;
mod client;
pub mod hub;
pub mod link;
pub mod order;
#[cfg(any(test, feature = "test-utils"))]
pub mod testkit;
pub mod topics;
pub mod vda5050;
pub mod view;

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use thiserror::Error;

pub use bridge::{Bridge, Envelope, Reply, ReplyStatus};
pub use client::FleetClient;
pub use link::FleetLink;
pub use view::{ClientEvent, FleetApproval, FleetView, RobotEntry};

use crate::config::{FleetConfig, parse_fleet_broker};
use crate::devices::mqtt::{MqttConfig, MqttError};

/// Why the fleet link or a fleet console could not start.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum FleetError {
    /// The broker URL is not `mqtt://HOST:PORT` or `mqtts://HOST:PORT`.
    #[error("fleet broker: expected mqtt://HOST:PORT or mqtts://HOST:PORT, found {0:?}")]
    Broker(String),
    /// `mqtts://` without a CA to check the broker's certificate with.
    #[error("fleet broker {0}: mqtts:// needs a CA certificate ([fleet] ca, --ca)")]
    NoCa(String),
    /// The broker password could not be read.
    #[error("[fleet] password: {0}")]
    Password(String),
    /// The CA certificate could not be read.
    #[error("[fleet] ca {path}: {message}")]
    Ca {
        /// The file.
        path: PathBuf,
        /// What the system said.
        message: String,
    },
    /// The client has stopped.
    #[error("the fleet connection has stopped")]
    Stopped,
}

/// Where the broker is and who this side is on it.
#[derive(Debug, Clone)]
pub struct FleetSettings {
    /// The connection (host, port, credentials, TLS, keep-alive).
    pub mqtt: MqttConfig,
    /// The robot id (a robot's side) or the console's client name.
    pub robot_id: String,
    /// The VDA 5050 manufacturer.
    pub manufacturer: String,
    /// How often snapshots, `state` and `visualization` go out.
    pub publish_every: Duration,
    /// Cut off this long, the robot pauses its task.
    pub cutoff_pause: Duration,
}

impl FleetSettings {
    /// The settings `[fleet]` gives; `None` without a broker.
    pub fn from_config(fleet: &FleetConfig) -> Result<Option<Self>, FleetError> {
        let Some(url) = &fleet.broker else {
            return Ok(None);
        };
        let mut mqtt = connection(
            url,
            fleet.username.as_deref(),
            fleet.password_env.as_deref(),
            fleet.password_file.as_deref(),
            fleet.ca.as_deref(),
        )?;
        mqtt.keep_alive = mqtt_keep_alive(fleet.keep_alive_s);
        mqtt.client_id = format!("robobrain-{}", fleet.robot_id);
        Ok(Some(Self {
            mqtt,
            robot_id: fleet.robot_id.clone(),
            manufacturer: fleet.manufacturer.clone(),
            publish_every: Duration::from_millis(fleet.publish_ms),
            cutoff_pause: Duration::from_secs_f64(fleet.cutoff_pause_s),
        }))
    }
}

/// The connection to the broker `url` names, logged in as `user` (with
/// the password from `password_env` or `password_file`), over TLS checked
/// against `ca` for `mqtts://`.
pub fn connection(
    url: &str,
    user: Option<&str>,
    password_env: Option<&str>,
    password_file: Option<&std::path::Path>,
    ca: Option<&std::path::Path>,
) -> Result<MqttConfig, FleetError> {
    let (tls, host, port) =
        parse_fleet_broker(url).ok_or_else(|| FleetError::Broker(url.to_string()))?;
    if tls && ca.is_none() {
        return Err(FleetError::NoCa(url.to_string()));
    }
    let mut mqtt = MqttConfig::new(host, port);
    mqtt.reconnect_delay = Duration::from_millis(250);
    mqtt.log_in(user, password_env, password_file, ca.filter(|_| tls))
        .map_err(|e| match e {
            MqttError::Password(m) => FleetError::Password(m),
            MqttError::Ca { path, message } => FleetError::Ca { path, message },
            other => FleetError::Password(other.to_string()),
        })?;
    Ok(mqtt)
}

/// The MQTT keep-alive that has the broker notice a lost robot within
/// `keep_alive_s`: a broker drops a client 1.5 keep-alives after its last
/// packet (MQTT 3.1.1 §3.1.2.10), so two thirds of it, whole seconds (the
/// protocol's unit), one at least.
fn mqtt_keep_alive(keep_alive_s: u64) -> Duration {
    Duration::from_secs((keep_alive_s * 2 / 3).max(1))
}

/// Milliseconds since the Unix epoch, now.
fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_broker_notices_a_lost_robot_within_keep_alive_s() {
        for s in [1_u64, 2, 5, 10, 60] {
            let k = super::mqtt_keep_alive(s).as_secs_f64();
            assert!(k >= 1.0 && (k * 1.5 <= s as f64 || s == 1), "{s}: {k}");
        }
    }
}
