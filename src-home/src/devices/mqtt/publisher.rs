//! The IO around [`Discovery`]: one rumqttc connection (with `offline` as
//! its last will) that announces the robot to Home Assistant, publishes its
//! states from the run's snapshots as they change, and hands every button
//! press to the run as a [`Command`] — the same queue an operator's
//! console writes to, so the kernel, the policy and its approvals treat a
//! press exactly like an operator's command.
//!
//! A broker's ACL can refuse what the publisher does, and MQTT 3.1.1 says
//! so only for subscriptions (SUBACK 0x80): a refused publish is dropped
//! in silence (mosquitto still sends PUBACK). So the publisher listens to
//! its own discovery configs and availability ([`Echo`]): what it
//! announced and does not hear back within [`ECHO_WAIT`] was not accepted
//! (or is not readable back). Either refusal is said loudly — an `error`
//! event `mqtt_refused` in the run and an error on the diagnostics.

use std::time::Duration;

use rumqttc::{AsyncClient, LastWill, QoS};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::MqttConfig;
use super::connection::{Net, Subscriptions, spawn_poll};
use super::discovery::{Changes, Discovery, Echo, Message, Payload};
use super::running::{Running, disconnect};
use crate::protocol::{Command, Door, Origin, Snapshot};

/// How long the publisher waits to hear its announcement back from the
/// broker before it says the broker did not take it.
pub const ECHO_WAIT: Duration = Duration::from_secs(5);

/// Where an MQTT door's commands go, with their origin: the run's command
/// queue (`Err` says why it refused). The Home Assistant publisher and the
/// fleet link both hand theirs over through one.
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
    EchoDue,
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
        let (poller, subscriptions) = spawn_poll(eventloop, net_tx, mqtt.reconnect_delay);
        let poller_handle = poller.abort_handle();
        let (stop, stopped) = oneshot::channel();
        let worker = Worker {
            echo: Echo::new(&discovery),
            discovery,
            client,
            subscriptions,
            commands,
            changes: Changes::default(),
            connected: false,
            echo_due: None,
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
    subscriptions: Subscriptions,
    commands: CommandSink,
    changes: Changes,
    connected: bool,
    /// What was announced and not yet heard back.
    echo: Echo,
    /// When what is not heard back by then is reported.
    echo_due: Option<Instant>,
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
            let echo_due = self.echo_due;
            let input = tokio::select! {
                n = net.recv() => Input::Net(n),
                c = snapshots.changed() => Input::Snapshot(c.is_ok()),
                () = sleep_until(echo_due) => Input::EchoDue,
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
                Input::EchoDue => self.echo_checked(),
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
                for filter in [
                    self.discovery.command_subscription(),
                    self.discovery.status_topic(),
                ]
                .into_iter()
                .chain(self.echo.subscriptions())
                {
                    self.subscriptions.subscribe(&self.client, filter);
                }
                self.announce();
                // A new connection publishes every state again.
                self.changes.clear();
                let snapshot = snapshots.borrow().clone();
                self.states(&snapshot);
            }
            Net::Down(_) => self.connected = false,
            Net::Closed => {}
            // A retained press is an old one the broker kept: never acted
            // on (it would press again on every reconnect).
            Net::Refused(filter) => {
                if self.echo.subscriptions().contains(&filter) {
                    // Nothing can be heard back: no publish can be checked.
                    self.echo.give_up();
                }
                let message = super::refused_subscription(&filter);
                self.said(format!("Home Assistant discovery: {message}"));
            }
            Net::Retained(topic, payload) => {
                self.echo.heard(&topic, &payload);
                if self.discovery.is_birth(&topic, &payload) {
                    self.announce();
                } else if self.discovery.command(&topic, &payload).is_some() {
                    super::ignored_retained(&topic);
                }
            }
            Net::Message(topic, payload) => {
                self.echo.heard(&topic, &payload);
                if let Some(command) = self.discovery.command(&topic, &payload) {
                    // A refusal (the queue is full, the run has stopped) is
                    // the run's to report; the press is not retried.
                    // MQTT does not say which broker user pressed: the
                    // topic is what is known (its ACL decides who may write).
                    let origin = Origin::new(Door::HomeAssistant, format!("topic {topic}"));
                    let _ = (self.commands)(command, origin);
                } else if let Some(object) = self.discovery.not_offered(&topic, &payload) {
                    let _ = (self.commands)(
                        Command::Report {
                            code: Some("button_not_offered".into()),
                            message: format!(
                                "Home Assistant: a press of `{object}` (topic {topic}) was \
                                 ignored: `[home] buttons` does not offer it"
                            ),
                        },
                        Origin::new(Door::HomeAssistant, format!("topic {topic}")),
                    );
                } else if self.discovery.is_birth(&topic, &payload) {
                    self.announce();
                }
            }
        }
    }

    /// [`ECHO_WAIT`] after an announcement: what was not heard back is
    /// said loudly; all of it heard, a note says the broker took it. Not
    /// connected, or with no way to hear back (that refusal was said when
    /// it came), nothing.
    fn echo_checked(&mut self) {
        self.echo_due = None;
        let Some(missing) = self.echo.overdue(self.connected) else {
            return;
        };
        if missing.is_empty() {
            let _ = (self.commands)(
                Command::Report {
                    code: None,
                    message: "Home Assistant discovery: the MQTT broker took every config and \
                              the availability (each heard back)"
                        .into(),
                },
                Origin::new(Door::HomeAssistant, "the broker's answers"),
            );
            return;
        }
        let presses = if missing.contains(&self.discovery.probe().topic) {
            format!(
                "; the robot cannot read {}: Home Assistant's buttons, the E-stop among them, \
                 do not reach it",
                self.discovery.command_subscription()
            )
        } else {
            String::new()
        };
        self.report(&format!(
            "the MQTT broker did not take {} of the robot's Home Assistant publishes within {} s \
             ({}): its ACL denies publishing (or reading back) there, and Home Assistant does \
             not see the robot{presses}",
            missing.len(),
            ECHO_WAIT.as_secs(),
            missing.join(", ")
        ));
    }

    /// The configs, then `online`, then a probe on the command topics;
    /// each is to be heard back within [`ECHO_WAIT`].
    fn announce(&mut self) {
        let mut all = self.discovery.configs();
        all.push(self.discovery.availability(true));
        all.push(self.discovery.probe());
        self.echo.expect(&all);
        if self.echo.checking() {
            self.echo_due = Some(Instant::now() + ECHO_WAIT);
        }
        for message in all {
            self.publish(message);
        }
    }

    /// A refusal, loudly: on the diagnostics and as the run's `error` event.
    fn report(&self, message: &str) {
        tracing::error!("mqtt: Home Assistant discovery: {message}");
        self.said(format!("Home Assistant discovery: {message}"));
    }

    /// The run's `error` event `mqtt_refused` (a refusal of the queue —
    /// the run has stopped — leaves the diagnostics' line alone).
    fn said(&self, message: String) {
        let _ = (self.commands)(
            Command::Report {
                code: Some("mqtt_refused".into()),
                message,
            },
            Origin::new(Door::HomeAssistant, "the broker's answers"),
        );
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

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
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
