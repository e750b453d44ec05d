//! The IO around one robot's [`Bridge`]: one rumqttc connection with
//! `connection` CONNECTIONBROKEN as its last will; it follows the run's
//! snapshots (at most one publish round per `publish_ms`) and events,
//! gives commands to the run's queue — the same queue a console writes to,
//! so the kernel judges them like any operator's — and, cut off from the
//! broker for `cutoff_pause_s`, pauses the active task.

use std::time::Duration;

use rumqttc::{AsyncClient, LastWill, QoS};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::{Instant, MissedTickBehavior};

use super::bridge::{Bridge, Effect, Identity, Publish, Qos};
use super::topics::Topics;
use super::{FleetSettings, wall_ms};
pub use crate::devices::mqtt::CommandSink;
use crate::devices::mqtt::discovery::Echo;
use crate::devices::mqtt::{Net, Running, Subscriptions, disconnect, spawn_poll};
use crate::protocol::{Command, Door, Event, Hello, Origin, Snapshot};
use crate::world::World;

/// A running fleet link (one robot on the broker). Dropped without
/// [`FleetLink::stop`], the broker's last will says CONNECTIONBROKEN.
pub struct FleetLink {
    running: Running,
}

impl std::fmt::Debug for FleetLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetLink").finish_non_exhaustive()
    }
}

/// What the run gives the link.
pub struct RunFeed {
    /// The `hello` frame consoles get first.
    pub hello: Hello,
    /// The run's snapshots.
    pub snapshots: watch::Receiver<Snapshot>,
    /// The run's events.
    pub events: broadcast::Receiver<Event>,
    /// The run's command queue.
    pub commands: CommandSink,
}

enum Input {
    Net(Option<Net>),
    Event(Result<Box<Event>, RecvError>),
    Publish,
    /// The run's snapshot changed (`Err`: the run has ended).
    Snapshot(Result<(), watch::error::RecvError>),
    CutOff,
    EchoDue,
    Stop,
}

/// How long the link waits to hear its ONLINE back before it says the
/// broker did not take it.
const ECHO_WAIT: Duration = crate::devices::mqtt::ECHO_WAIT;

impl FleetLink {
    /// Starts the link on the current tokio runtime: it connects (and keeps
    /// reconnecting) to the broker `settings` name, as the robot in `world`.
    pub fn start(settings: &FleetSettings, world: World, feed: RunFeed) -> Self {
        let topics = Topics::new(&settings.manufacturer, &settings.robot_id);
        let echo = Echo::watching(vec![topics.of(super::topics::Kind::Connection)]);
        let mut bridge = Bridge::new(Identity { topics, world });
        let mut options = settings.mqtt.options(&settings.mqtt.client_id);
        let will = bridge.will(wall_ms());
        options.set_last_will(LastWill::new(
            will.topic,
            will.payload,
            QoS::AtLeastOnce,
            true,
        ));
        options.set_request_channel_capacity(1024);
        let (client, eventloop) = AsyncClient::new(options, 1024);
        let (net_tx, net) = mpsc::channel(256);
        let (poller, subscriptions) = spawn_poll(eventloop, net_tx, settings.mqtt.reconnect_delay);
        let poller_handle = poller.abort_handle();
        let (stop, stopped) = oneshot::channel();
        let worker = Worker {
            subscriptions,
            bridge,
            client,
            hello: feed.hello,
            commands: feed.commands,
            connected: false,
            publish_every: settings.publish_every,
            cutoff_pause: settings.cutoff_pause,
            down_since: None,
            paused_for_cutoff: false,
            echo,
            echo_due: None,
            dirty: true,
        };
        let task = tokio::spawn(worker.run(net, feed.snapshots, feed.events, stopped, poller));
        Self {
            running: Running::new(stop, task, poller_handle),
        }
    }

    /// Says OFFLINE (retained), disconnects, and waits (two seconds at
    /// most) until that has gone out. Later calls do nothing.
    pub async fn stop(&self) {
        self.running.stop().await;
    }
}

struct Worker {
    subscriptions: Subscriptions,
    bridge: Bridge,
    client: AsyncClient,
    hello: Hello,
    commands: CommandSink,
    connected: bool,
    publish_every: Duration,
    cutoff_pause: Duration,
    down_since: Option<Instant>,
    paused_for_cutoff: bool,
    /// The ONLINE published and not yet heard back.
    echo: Echo,
    /// When what is not heard back by then is reported.
    echo_due: Option<Instant>,
    /// A snapshot came since the last periodic round.
    dirty: bool,
}

impl Worker {
    async fn run(
        mut self,
        mut net: mpsc::Receiver<Net>,
        mut snapshots: watch::Receiver<Snapshot>,
        mut events: broadcast::Receiver<Event>,
        mut stop: oneshot::Receiver<()>,
        poller: JoinHandle<()>,
    ) {
        let mut publish = tokio::time::interval(self.publish_every);
        publish.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut events_open = true;
        loop {
            let cutoff = self
                .down_since
                .filter(|_| !self.paused_for_cutoff)
                .map(|since| since + self.cutoff_pause);
            let input = tokio::select! {
                n = net.recv() => Input::Net(n),
                e = events.recv(), if events_open => Input::Event(e.map(Box::new)),
                _ = publish.tick() => Input::Publish,
                r = snapshots.changed() => Input::Snapshot(r),
                () = sleep_until(cutoff) => Input::CutOff,
                () = sleep_until(self.echo_due) => Input::EchoDue,
                _ = &mut stop => Input::Stop,
            };
            match input {
                // The run has ended (its snapshots with it): nothing more to publish.
                Input::Net(None) | Input::Stop | Input::Snapshot(Err(_)) => break,
                Input::Net(Some(n)) => self.net(n, &snapshots),
                Input::Event(Ok(event)) => {
                    if self.connected {
                        let effects = self.bridge.event(&event);
                        self.effects(effects, None);
                    }
                }
                // Fell behind: the next snapshot repaints the consoles.
                Input::Event(Err(RecvError::Lagged(_))) => {}
                Input::Event(Err(RecvError::Closed)) => events_open = false,
                Input::Publish => {
                    if self.connected && std::mem::take(&mut self.dirty) {
                        let snapshot = snapshots.borrow().clone();
                        for p in self.bridge.snapshot(&snapshot, wall_ms()) {
                            self.publish(p);
                        }
                    }
                }
                // Between rounds, `state` goes out at once when what it
                // says changed (driving, a node reached, a cancel done).
                Input::Snapshot(Ok(())) => {
                    self.dirty = true;
                    if self.connected {
                        let snapshot = snapshots.borrow_and_update().clone();
                        for p in self.bridge.snapshot_changed(&snapshot, wall_ms()) {
                            self.publish(p);
                        }
                    }
                }
                Input::EchoDue => self.echo_checked(),
                Input::CutOff => {
                    self.paused_for_cutoff = true;
                    let snapshot = snapshots.borrow().clone();
                    self.bridge.snapshot(&snapshot, wall_ms());
                    if let Some(command) = self.bridge.cut_off() {
                        // Refused only when the run has stopped: nothing to keep safe.
                        let origin = Origin::new(Door::Fleet, "cut off from the broker");
                        let _ = (self.commands)(command, origin);
                    }
                }
            }
        }
        if self.connected {
            let offline = self.bridge.offline(wall_ms());
            self.publish(offline);
            disconnect(&self.client, &mut net).await;
        }
        poller.abort();
    }

    fn net(&mut self, net: Net, snapshots: &watch::Receiver<Snapshot>) {
        match net {
            Net::Up => {
                self.connected = true;
                self.down_since = None;
                self.paused_for_cutoff = false;
                for topic in self
                    .bridge
                    .subscriptions()
                    .into_iter()
                    .chain(self.echo.subscriptions())
                {
                    self.subscriptions.subscribe(&self.client, topic);
                }
                let snapshot = snapshots.borrow().clone();
                let publishes = self.bridge.connected(&self.hello, &snapshot, wall_ms());
                let heard_back: Vec<(String, Vec<u8>)> = publishes
                    .iter()
                    .filter(|p| self.echo.watches(&p.topic))
                    .map(|p| (p.topic.clone(), p.payload.clone()))
                    .collect();
                self.echo.expect_bytes(heard_back);
                if self.echo.checking() {
                    self.echo_due = Some(Instant::now() + ECHO_WAIT);
                }
                for p in publishes {
                    self.publish(p);
                }
            }
            Net::Down(_) => {
                self.connected = false;
                self.down_since.get_or_insert_with(Instant::now);
            }
            Net::Closed => {}
            // Everything the robot subscribes to is a command, an order or
            // an instant action: a retained one is never acted on.
            // (Its own connection message, retained, is heard back.)
            Net::Retained(topic, payload) => {
                if self.echo.watches(&topic) {
                    self.echo.heard(&topic, &payload);
                } else {
                    crate::devices::mqtt::ignored_retained(&topic);
                }
            }
            // Commands cannot reach the robot: the operator hears of it.
            Net::Refused(filter) => {
                if self.echo.subscriptions().contains(&filter) {
                    // Nothing can be heard back: no publish can be checked.
                    self.echo.give_up();
                }
                let message = crate::devices::mqtt::refused_subscription(&filter);
                let _ = (self.commands)(
                    Command::Report {
                        code: Some("mqtt_refused".into()),
                        message: format!("fleet link: {message}"),
                    },
                    Origin::new(Door::Fleet, "the broker's answers"),
                );
            }
            Net::Message(topic, payload) => {
                self.echo.heard(&topic, &payload);
                let effects = self.bridge.message(&topic, &payload, wall_ms());
                self.effects(effects, Some(&topic));
            }
        }
    }

    /// Carries out the bridge's effects; `topic` is where the message that
    /// caused them came (none: the order's progress).
    fn effects(&mut self, effects: Vec<Effect>, topic: Option<&str>) {
        for effect in effects {
            match effect {
                Effect::Publish(p) => self.publish(p),
                Effect::Command { id, command } => {
                    let origin = match topic {
                        Some(topic) => self.origin(topic, id.as_deref()),
                        None => Origin::new(Door::Vda5050, "the order's next leg"),
                    };
                    let result = (self.commands)(command.clone(), origin);
                    if let Some(id) = id {
                        let reply = self.bridge.outcome(&id, result);
                        self.publish(reply);
                    } else if let Err(why) = result {
                        // A VDA 5050 command the run refused: said in `state`.
                        self.bridge.refused(&command, &why);
                    }
                }
            }
        }
    }

    /// [`ECHO_WAIT`] after an ONLINE: not heard back, the broker did not
    /// take it (its ACL), and that is said loudly.
    fn echo_checked(&mut self) {
        self.echo_due = None;
        let Some(missing) = self.echo.overdue(self.connected).filter(|m| !m.is_empty()) else {
            return;
        };
        let message = format!(
            "fleet link: the MQTT broker did not take the robot's connection message within {} s \
             ({}): its ACL denies publishing (or reading it back) there, and the master control \
             does not see the robot",
            ECHO_WAIT.as_secs(),
            missing.join(", ")
        );
        tracing::error!("mqtt: {message}");
        let _ = (self.commands)(
            Command::Report {
                code: Some("mqtt_refused".into()),
                message,
            },
            Origin::new(Door::Fleet, "the broker's answers"),
        );
    }

    /// Where a command on `topic` came from. MQTT does not tell a
    /// subscriber which broker user published: the topic is what is known,
    /// and the broker's ACL decides who may write to it.
    fn origin(&self, topic: &str, id: Option<&str>) -> Origin {
        let door = match self.bridge.topics().kind(topic) {
            Some(super::topics::Kind::Order | super::topics::Kind::InstantActions) => Door::Vda5050,
            _ => Door::Fleet,
        };
        let detail = match id {
            Some(id) => format!("topic {topic}, id {id}"),
            None => format!("topic {topic}"),
        };
        Origin::new(door, detail)
    }

    fn publish(&self, p: Publish) {
        if !self.connected {
            return;
        }
        let qos = match p.qos {
            Qos::AtMostOnce => QoS::AtMostOnce,
            Qos::AtLeastOnce => QoS::AtLeastOnce,
        };
        let _ = self.client.try_publish(p.topic, qos, p.retain, p.payload);
    }
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
