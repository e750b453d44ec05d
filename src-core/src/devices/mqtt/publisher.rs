//! The IO around [`Discovery`]: one rumqttc connection (with `offline` as
//! its last will) that announces the robot to Home Assistant, publishes its
//! states from the run's snapshots as they change, and hands every button
//! press to the run as a [`Command`] — the same queue an operator's
//! console writes to, so the kernel, the policy and its approvals treat a
//! press exactly like an operator's command.

use rumqttc::{AsyncClient, LastWill, QoS};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use super::MqttConfig;
use super::discovery::{Changes, Discovery, Message, Payload};
use super::running::{Running, disconnect};
use super::zigbee2mqtt::{Net, poll};
use crate::protocol::{Command, Door, Origin, Snapshot};

/// Where presses go, with their origin: the run's command queue (`Err`
/// says why it refused).
pub type CommandSink = Box<dyn Fn(Command, Origin) -> Result<(), String> + Send + Sync>;

/// A running Home Assistant discovery publisher. Dropped without
/// [`HaPublisher::stop`], the broker's last will says `offline`.
pub struct HaPublisher {
    running: Running,
}

impl std::fmt::Debug for HaPublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HaPublisher").finish_non_exhaustive()
    }
}

enum Input {
    Net(Option<Net>),
    Snapshot(bool),
    Stop,
}

impl HaPublisher {
    /// Starts publishing on the current tokio runtime: it connects to the
    /// broker `mqtt` names (and keeps reconnecting), follows `snapshots`,
    /// and gives each press to `commands`.
    pub fn start(
        mqtt: &MqttConfig,
        discovery: Discovery,
        snapshots: watch::Receiver<Snapshot>,
        commands: CommandSink,
    ) -> Self {
        let mut options = mqtt.options(&format!("{}-ha-{}", mqtt.client_id, discovery.node_id));
        let will = discovery.availability(false);
        options.set_last_will(LastWill::new(
            will.topic,
            payload_bytes(&will.payload),
            QoS::AtLeastOnce,
            true,
        ));
        let (client, eventloop) = AsyncClient::new(options, 64);
        let (net_tx, net) = mpsc::channel(64);
        let poller = tokio::spawn(poll(eventloop, net_tx, mqtt.reconnect_delay));
        let poller_handle = poller.abort_handle();
        let (stop, stopped) = oneshot::channel();
        let worker = Worker {
            discovery,
            client,
            commands,
            changes: Changes::default(),
            connected: false,
        };
        let task = tokio::spawn(worker.run(net, snapshots, stopped, poller));
        Self {
            running: Running::new(stop, task, poller_handle),
        }
    }

    /// Says `offline` (retained), disconnects, and waits (two seconds at
    /// most) until that has gone out. Later calls do nothing.
    pub async fn stop(&self) {
        self.running.stop().await;
    }
}

struct Worker {
    discovery: Discovery,
    client: AsyncClient,
    commands: CommandSink,
    changes: Changes,
    connected: bool,
}

impl Worker {
    async fn run(
        mut self,
        mut net: mpsc::Receiver<Net>,
        mut snapshots: watch::Receiver<Snapshot>,
        mut stop: oneshot::Receiver<()>,
        poller: JoinHandle<()>,
    ) {
        loop {
            let input = tokio::select! {
                n = net.recv() => Input::Net(n),
                c = snapshots.changed() => Input::Snapshot(c.is_ok()),
                _ = &mut stop => Input::Stop,
            };
            match input {
                // Stopped, the connection gone, or the run ended (its
                // snapshots with it): nothing more to publish.
                Input::Net(None) | Input::Stop | Input::Snapshot(false) => break,
                Input::Net(Some(n)) => self.net(n, &snapshots),
                Input::Snapshot(true) => {
                    let snapshot = snapshots.borrow_and_update().clone();
                    self.states(&snapshot);
                }
            }
        }
        if self.connected {
            self.publish(self.discovery.availability(false));
            disconnect(&self.client, &mut net).await;
        }
        poller.abort();
    }

    fn net(&mut self, net: Net, snapshots: &watch::Receiver<Snapshot>) {
        match net {
            Net::Up => {
                self.connected = true;
                let _ = self
                    .client
                    .try_subscribe(self.discovery.command_subscription(), QoS::AtLeastOnce);
                let _ = self
                    .client
                    .try_subscribe(self.discovery.status_topic(), QoS::AtLeastOnce);
                self.announce();
                // A new connection publishes every state again.
                self.changes.clear();
                let snapshot = snapshots.borrow().clone();
                self.states(&snapshot);
            }
            Net::Down(_) => self.connected = false,
            Net::Closed => {}
            Net::Message(topic, payload) => {
                if let Some(command) = self.discovery.command(&topic, &payload) {
                    // A refusal (the queue is full, the run has stopped) is
                    // the run's to report; the press is not retried.
                    // MQTT does not say which broker user pressed: the
                    // topic is what is known (its ACL decides who may write).
                    let origin = Origin::new(Door::HomeAssistant, format!("topic {topic}"));
                    let _ = (self.commands)(command, origin);
                } else if self.discovery.is_birth(&topic, &payload) {
                    self.announce();
                }
            }
        }
    }

    /// The configs, then `online`.
    fn announce(&self) {
        for message in self.discovery.configs() {
            self.publish(message);
        }
        self.publish(self.discovery.availability(true));
    }

    fn states(&mut self, snapshot: &Snapshot) {
        if !self.connected {
            return;
        }
        for message in self.changes.fresh(self.discovery.states(snapshot)) {
            self.publish(message);
        }
    }

    fn publish(&self, message: Message) {
        let bytes = payload_bytes(&message.payload);
        let _ = self
            .client
            .try_publish(message.topic, QoS::AtLeastOnce, message.retain, bytes);
    }
}

/// The bytes a payload carries: a text, or the file's content (empty when
/// the file cannot be read: the frame shows nothing rather than an old one).
fn payload_bytes(payload: &Payload) -> Vec<u8> {
    match payload {
        Payload::Text(text) => text.clone().into_bytes(),
        Payload::File(path) => std::fs::read(path).unwrap_or_default(),
    }
}
