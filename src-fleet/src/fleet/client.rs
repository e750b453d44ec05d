//! A fleet console's connection to the broker: it follows every robot's
//! own-protocol topics and VDA 5050 `connection`, hands what it hears over
//! as [`ClientEvent`]s, and sends commands with fresh ids to one robot or
//! to all. A command not yet answered is sent again, with the same id,
//! every [`RESEND`] and when the connection comes back (a robot still
//! reconnecting to a restarted broker misses what is sent before it
//! subscribes) — the robot drops a repeat, so a command is applied once.

use std::collections::BTreeMap;
use std::time::Duration;

use rumqttc::{AsyncClient, QoS};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::bridge::{Envelope, ReplyStatus};
use super::topics::{self, Kind, Topics};
use super::view::{self, ClientEvent};
use super::{FleetError, wall_ms};
use crate::devices::mqtt::{MqttConfig, Net, Subscriptions, spawn_poll};
use crate::protocol::Command;

/// How long a command waits for its reply before it is sent again.
pub(super) const RESEND: Duration = Duration::from_secs(1);

/// A fleet console's connection.
pub struct FleetClient {
    client: AsyncClient,
    events: mpsc::Receiver<ClientEvent>,
    outgoing: mpsc::UnboundedSender<(String, Envelope)>,
    prefix: String,
    next: u64,
    tasks: [JoinHandle<()>; 2],
}

impl std::fmt::Debug for FleetClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetClient").finish_non_exhaustive()
    }
}

impl FleetClient {
    /// Connects (and keeps reconnecting) to the broker `mqtt` names, on the
    /// current tokio runtime.
    pub fn connect(mqtt: &MqttConfig) -> Self {
        let mut options = mqtt.options(&mqtt.client_id);
        options.set_request_channel_capacity(1024);
        let (client, eventloop) = AsyncClient::new(options, 1024);
        let (net_tx, net) = mpsc::channel(1024);
        let (poller, subscriptions) = spawn_poll(eventloop, net_tx, mqtt.reconnect_delay);
        let (events_tx, events) = mpsc::channel(4096);
        let (outgoing, sends) = mpsc::unbounded_channel();
        let reader = tokio::spawn(read((client.clone(), subscriptions), net, sends, events_tx));
        Self {
            client,
            events,
            outgoing,
            prefix: format!("{}-{}", mqtt.client_id, wall_ms()),
            next: 0,
            tasks: [poller, reader],
        }
    }

    /// The next thing heard; `Err` when the connection has stopped.
    pub async fn recv(&mut self) -> Result<ClientEvent, FleetError> {
        self.events.recv().await.ok_or(FleetError::Stopped)
    }

    /// Sends `command` to `robot` with a fresh id, which it returns.
    pub fn send(&mut self, robot: &str, command: Command) -> Result<String, FleetError> {
        self.next += 1;
        let id = format!("{}-{}", self.prefix, self.next);
        self.outgoing
            .send((
                robot.to_string(),
                Envelope {
                    id: id.clone(),
                    command,
                },
            ))
            .map_err(|_| FleetError::Stopped)?;
        Ok(id)
    }

    /// Publishes raw bytes on a topic (a VDA 5050 master control's orders
    /// and instant actions, or a test's malformed message).
    pub async fn publish_raw(&self, topic: &str, payload: Vec<u8>) -> Result<(), FleetError> {
        self.client
            .publish(topic, QoS::AtLeastOnce, false, payload)
            .await
            .map_err(|_| FleetError::Stopped)
    }

    /// Disconnects.
    pub async fn close(self) {
        let _ = self.client.disconnect().await;
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Drop for FleetClient {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// The reader: turns the connection's messages into events, sends
/// commands, and sends the unanswered ones again after a reconnect.
async fn read(
    (client, subscriptions): (AsyncClient, Subscriptions),
    mut net: mpsc::Receiver<Net>,
    mut sends: mpsc::UnboundedReceiver<(String, Envelope)>,
    events: mpsc::Sender<ClientEvent>,
) {
    enum Input {
        Net(Option<Net>),
        Send(Option<(String, Envelope)>),
        Resend,
    }
    let mut pending: BTreeMap<String, (String, Vec<u8>)> = BTreeMap::new();
    let mut resend = tokio::time::interval(RESEND);
    let mut connected = false;
    let mut sends_open = true;
    loop {
        let input = tokio::select! {
            n = net.recv() => Input::Net(n),
            s = sends.recv(), if sends_open => Input::Send(s),
            _ = resend.tick(), if !pending.is_empty() => Input::Resend,
        };
        let event = match input {
            Input::Net(None) => return,
            Input::Send(None) => {
                sends_open = false;
                continue;
            }
            Input::Resend => {
                if connected {
                    for (topic, bytes) in pending.values() {
                        let _ = client.try_publish(topic, QoS::AtLeastOnce, false, bytes.clone());
                    }
                }
                continue;
            }
            Input::Send(Some((robot, envelope))) => {
                let topic = Topics::new("", &robot).of(Kind::Command);
                let bytes = serde_json::to_vec(&envelope).unwrap_or_default();
                if connected {
                    let _ = client.try_publish(&topic, QoS::AtLeastOnce, false, bytes.clone());
                }
                pending.insert(envelope.id, (topic, bytes));
                continue;
            }
            Input::Net(Some(Net::Up)) => {
                connected = true;
                for topic in topics::console_subscriptions() {
                    subscriptions.subscribe(&client, topic);
                }
                for (topic, bytes) in pending.values() {
                    let _ = client.try_publish(topic, QoS::AtLeastOnce, false, bytes.clone());
                }
                ClientEvent::Connected
            }
            Input::Net(Some(Net::Down(why))) => {
                if !connected {
                    continue;
                }
                connected = false;
                ClientEvent::Disconnected(why)
            }
            Input::Net(Some(Net::Closed)) => continue,
            // Said on the diagnostics; the robots it hides stay unseen.
            Input::Net(Some(Net::Refused(filter))) => {
                crate::devices::mqtt::refused_subscription(&filter);
                continue;
            }
            // The hello and the snapshot are retained: a console reads both.
            Input::Net(Some(Net::Message(topic, payload) | Net::Retained(topic, payload))) => {
                let Some(event) = view::read(&topic, &payload) else {
                    continue;
                };
                if let ClientEvent::Reply { reply, .. } = &event
                    && let Some(id) = &reply.id
                    && reply.status != ReplyStatus::Rejected
                {
                    pending.remove(id);
                }
                event
            }
        };
        if events.send(event).await.is_err() {
            return;
        }
    }
}
