//! The adapter's tasks: one owns the [`DeviceTable`] and the waiting
//! invokes; one polls rumqttc's event loop (which reconnects when polled
//! again after an error) and forwards what it saw. The handle talks to the
//! owner over a bounded channel and hears about changes on a broadcast.

use rumqttc::{AsyncClient, QoS};
use serde_json::{Map, Value};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::codec;
use super::connection::{Net, Subscriptions, spawn_poll};
use super::table::{Change, DeviceTable, MqttDevice};
use super::{MqttConfig, MqttError};

/// What the adapter tells whoever listens.
#[derive(Debug, Clone, PartialEq)]
pub enum MqttEvent {
    /// The broker accepted the connection (first time or after a drop).
    Connected,
    /// The broker link dropped; the adapter keeps trying.
    Disconnected {
        /// What rumqttc said.
        reason: String,
    },
    /// A device reported its state.
    State {
        /// Friendly name.
        device: String,
        /// The whole state it reported.
        state: Map<String, Value>,
    },
    /// A device's availability changed.
    Availability {
        /// Friendly name.
        device: String,
        /// Whether it is online now.
        online: bool,
    },
    /// The zigbee2mqtt bridge's availability changed.
    Bridge {
        /// Whether it is online now.
        online: bool,
    },
    /// The bridge listed its devices (`<base>/bridge/devices`).
    BridgeDevices {
        /// Every device but the coordinator.
        devices: Vec<codec::BridgeDevice>,
    },
    /// The broker refused our subscription (its ACL): no device is heard.
    Refused {
        /// What was refused, in words.
        error: String,
    },
    /// A payload that could not be read; the device's prior state is kept.
    Malformed {
        /// What was wrong, with the topic.
        error: String,
    },
}

/// A handle on one zigbee2mqtt installation behind one broker.
#[derive(Debug, Clone)]
pub struct Zigbee2Mqtt {
    requests: mpsc::Sender<Request>,
    events: broadcast::Sender<MqttEvent>,
}

#[derive(Debug)]
enum Request {
    Invoke {
        device: String,
        command: Map<String, Value>,
        reply: oneshot::Sender<Result<Map<String, Value>, MqttError>>,
    },
    Devices(oneshot::Sender<Vec<MqttDevice>>),
    Connected(oneshot::Sender<bool>),
    Shutdown,
}

struct Waiting {
    device: String,
    command: Map<String, Value>,
    deadline: Instant,
    reply: oneshot::Sender<Result<Map<String, Value>, MqttError>>,
}

impl Zigbee2Mqtt {
    /// Starts the adapter on the current tokio runtime; it connects in the
    /// background and keeps reconnecting until [`Zigbee2Mqtt::shutdown`].
    pub fn start(config: MqttConfig) -> Self {
        let (requests, rx) = mpsc::channel(64);
        let (events, _) = broadcast::channel(256);
        let (client, eventloop) = AsyncClient::new(config.options(&config.client_id), 64);
        let (net_tx, net_rx) = mpsc::channel(256);
        let (poller, subscriptions) = spawn_poll(eventloop, net_tx, config.reconnect_delay);
        let owner = Owner {
            subscriptions,
            table: DeviceTable::new(&config.base_topic, &config.broker()),
            config,
            client,
            events: events.clone(),
            waiting: Vec::new(),
        };
        tokio::spawn(owner.run(rx, net_rx, poller));
        Self { requests, events }
    }

    /// Sends `command` to `device` (`<base>/<device>/set`) and returns the
    /// state the device reported that confirms it.
    pub async fn invoke(
        &self,
        device: &str,
        command: Map<String, Value>,
    ) -> Result<Map<String, Value>, MqttError> {
        let (reply, answer) = oneshot::channel();
        let request = Request::Invoke {
            device: device.to_string(),
            command,
            reply,
        };
        self.requests
            .send(request)
            .await
            .map_err(|_| MqttError::Stopped)?;
        answer.await.map_err(|_| MqttError::Stopped)?
    }

    /// Every device seen so far, with its last state and whether it can be reached.
    pub async fn devices(&self) -> Result<Vec<MqttDevice>, MqttError> {
        let (reply, answer) = oneshot::channel();
        self.requests
            .send(Request::Devices(reply))
            .await
            .map_err(|_| MqttError::Stopped)?;
        answer.await.map_err(|_| MqttError::Stopped)
    }

    /// Whether the broker link is up.
    pub async fn is_connected(&self) -> bool {
        let (reply, answer) = oneshot::channel();
        if self.requests.send(Request::Connected(reply)).await.is_err() {
            return false;
        }
        answer.await.unwrap_or(false)
    }

    /// Changes as they happen.
    pub fn subscribe(&self) -> broadcast::Receiver<MqttEvent> {
        self.events.subscribe()
    }

    /// Stops both tasks; waiting invokes get [`MqttError::Stopped`].
    pub async fn shutdown(&self) {
        let _ = self.requests.send(Request::Shutdown).await;
    }
}

struct Owner {
    subscriptions: Subscriptions,
    config: MqttConfig,
    table: DeviceTable,
    client: AsyncClient,
    events: broadcast::Sender<MqttEvent>,
    waiting: Vec<Waiting>,
}

enum Input {
    Request(Option<Request>),
    Net(Option<Net>),
    Deadline,
}

impl Owner {
    async fn run(
        mut self,
        mut requests: mpsc::Receiver<Request>,
        mut net: mpsc::Receiver<Net>,
        poller: JoinHandle<()>,
    ) {
        loop {
            let next_deadline = self.waiting.iter().map(|w| w.deadline).min();
            let input = tokio::select! {
                r = requests.recv() => Input::Request(r),
                n = net.recv() => Input::Net(n),
                () = sleep_until(next_deadline) => Input::Deadline,
            };
            match input {
                Input::Request(None | Some(Request::Shutdown)) | Input::Net(None) => break,
                Input::Request(Some(r)) => self.request(r),
                Input::Net(Some(n)) => self.net(n),
                Input::Deadline => self.expire(Instant::now()),
            }
        }
        poller.abort();
        let _ = self.client.try_disconnect();
        for w in self.waiting.drain(..) {
            let _ = w.reply.send(Err(MqttError::Stopped));
        }
    }

    fn request(&mut self, request: Request) {
        match request {
            Request::Invoke {
                device,
                command,
                reply,
            } => {
                if let Err(e) = self.table.check_invoke(&device) {
                    let _ = reply.send(Err(e));
                    return;
                }
                let topic = codec::set_topic(&self.config.base_topic, &device);
                let payload = Value::Object(command.clone()).to_string();
                if let Err(e) = self
                    .client
                    .try_publish(topic, QoS::AtLeastOnce, false, payload)
                {
                    let _ = reply.send(Err(MqttError::NotConnected {
                        device: format!("{device} ({e})"),
                        broker: self.config.broker(),
                    }));
                    return;
                }
                self.waiting.push(Waiting {
                    device,
                    command,
                    deadline: Instant::now() + self.config.invoke_timeout,
                    reply,
                });
            }
            Request::Devices(reply) => {
                let _ = reply.send(self.table.devices());
            }
            Request::Connected(reply) => {
                let _ = reply.send(self.table.connected());
            }
            Request::Shutdown => {}
        }
    }

    fn net(&mut self, net: Net) {
        match net {
            Net::Up => {
                self.table.set_connected(true);
                self.subscriptions
                    .subscribe(&self.client, codec::subscription(&self.config.base_topic));
                self.emit(MqttEvent::Connected);
            }
            Net::Down(reason) => {
                let was = self.table.connected();
                self.table.set_connected(false);
                for w in self.waiting.drain(..) {
                    let _ = w.reply.send(Err(MqttError::ConnectionLost(w.device)));
                }
                if was {
                    self.emit(MqttEvent::Disconnected { reason });
                }
            }
            Net::Closed => {}
            Net::Refused(filter) => {
                let error = super::refused_subscription(&filter);
                self.emit(MqttEvent::Refused { error });
            }
            // Devices' states and availability are retained by design.
            Net::Message(topic, payload) | Net::Retained(topic, payload) => {
                match self.table.apply(&topic, &payload) {
                    Ok(Change::State(device)) => self.reported(device),
                    Ok(Change::Availability(device, online)) => {
                        if !online {
                            self.fail_waiting(&device, &MqttError::Offline(device.clone()));
                        }
                        self.emit(MqttEvent::Availability { device, online });
                    }
                    Ok(Change::Bridge(online)) => self.emit(MqttEvent::Bridge { online }),
                    Ok(Change::BridgeDevices(devices)) => {
                        self.emit(MqttEvent::BridgeDevices { devices });
                    }
                    Ok(Change::None) => {}
                    Err(e) => self.emit(MqttEvent::Malformed {
                        error: e.to_string(),
                    }),
                }
            }
        }
    }

    /// A device reported: the invokes it confirms are answered.
    fn reported(&mut self, device: String) {
        let Some(state) = self.table.state(&device).cloned() else {
            return;
        };
        let (done, keep): (Vec<_>, Vec<_>) = self
            .waiting
            .drain(..)
            .partition(|w| w.device == device && codec::confirms(&w.command, &state));
        self.waiting = keep;
        for w in done {
            let _ = w.reply.send(Ok(state.clone()));
        }
        self.emit(MqttEvent::State { device, state });
    }

    fn fail_waiting(&mut self, device: &str, error: &MqttError) {
        let (failed, keep): (Vec<_>, Vec<_>) =
            self.waiting.drain(..).partition(|w| w.device == device);
        self.waiting = keep;
        for w in failed {
            let _ = w.reply.send(Err(error.clone()));
        }
    }

    fn expire(&mut self, now: Instant) {
        let (late, keep): (Vec<_>, Vec<_>) =
            self.waiting.drain(..).partition(|w| w.deadline <= now);
        self.waiting = keep;
        let after_ms = self.config.invoke_timeout.as_millis() as u64;
        for w in late {
            let _ = w.reply.send(Err(MqttError::Timeout {
                device: w.device,
                after_ms,
            }));
        }
    }

    fn emit(&self, event: MqttEvent) {
        let _ = self.events.send(event);
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}
