//! A small fake zigbee2mqtt device for the tests: its own MQTT client that
//! publishes its availability and state (retained, like zigbee2mqtt), takes
//! commands on `<base>/<name>/set`, merges them into its state and reports
//! the new state. It can fall silent (a device that stopped answering) or go
//! offline (zigbee2mqtt's availability check gave up on it).

// Test kit: a fake that cannot do what a test asks fails the test.
#![allow(clippy::expect_used)]

use std::time::Duration;

use rumqttc::{AsyncClient, LastWill, MqttOptions, QoS};
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::codec;
use super::connection::{Net, spawn_poll};

/// What a test tells the fake device to do.
#[derive(Debug, Clone, Copy)]
pub enum Control {
    /// Publish availability `offline` and stop answering.
    GoOffline,
    /// Publish availability `online` and answer again.
    ComeBack,
    /// Stay online but ignore commands.
    FallSilent,
}

/// A running fake device.
pub struct FakeDevice {
    control: mpsc::Sender<Control>,
    task: JoinHandle<()>,
}

impl FakeDevice {
    /// Connects `name` under `base` to the broker on `port` with this state.
    pub fn start(port: u16, base: &str, name: &str, state: Value) -> Self {
        let (control, rx) = mpsc::channel(8);
        let base = base.to_string();
        let name = name.to_string();
        let state = match state {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let task = tokio::spawn(run(port, base, name, state, rx));
        Self { control, task }
    }

    /// Tells the device to change its behaviour.
    pub async fn control(&self, c: Control) {
        self.control
            .send(c)
            .await
            .expect("the fake device is running");
    }
}

impl Drop for FakeDevice {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn run(
    port: u16,
    base: String,
    name: String,
    mut state: Map<String, Value>,
    mut control: mpsc::Receiver<Control>,
) {
    let availability = codec::availability_topic(&base, &name);
    let mut options = MqttOptions::new(format!("fake-{name}-{port}"), "127.0.0.1", port);
    options
        .set_keep_alive(Duration::from_secs(5))
        .set_last_will(LastWill::new(
            &availability,
            codec::availability_payload(false),
            QoS::AtLeastOnce,
            true,
        ));
    let (client, eventloop) = AsyncClient::new(options, 64);
    let (net_tx, mut net) = mpsc::channel(64);
    let (poller, subscriptions) = spawn_poll(eventloop, net_tx, Duration::from_millis(100));
    let (mut online, mut answering) = (true, true);
    let publish_state = |state: &Map<String, Value>| {
        let _ = client.try_publish(
            codec::state_topic(&base, &name),
            QoS::AtLeastOnce,
            true,
            Value::Object(state.clone()).to_string(),
        );
    };
    let publish_availability = |online: bool| {
        let _ = client.try_publish(
            &availability,
            QoS::AtLeastOnce,
            true,
            codec::availability_payload(online),
        );
    };
    loop {
        tokio::select! {
            c = control.recv() => match c {
                Some(Control::GoOffline) => { online = false; answering = false; publish_availability(false); }
                Some(Control::ComeBack) => { online = true; answering = true; publish_availability(true); }
                Some(Control::FallSilent) => answering = false,
                None => break,
            },
            n = net.recv() => match n {
                Some(Net::Up) => {
                    subscriptions.subscribe(&client, codec::set_topic(&base, &name));
                    publish_availability(online);
                    publish_state(&state);
                }
                Some(Net::Message(topic, payload)) if answering && topic == codec::set_topic(&base, &name) => {
                    if let Ok(command) = codec::parse_object(&topic, &payload) {
                        state.extend(command);
                        publish_state(&state);
                    }
                }
                Some(_) => {}
                None => break,
            },
        }
    }
    poller.abort();
}
