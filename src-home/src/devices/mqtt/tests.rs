//! The adapter against a real mosquitto on loopback, with fake zigbee2mqtt
//! devices on their own connections.

use std::time::Duration;

use rumqttc::{AsyncClient, MqttOptions, QoS};
use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use super::broker::Mosquitto;
use super::fake::{Control, FakeDevice};
use super::*;

const BASE: &str = "zigbee2mqtt";

fn config(port: u16, name: &str) -> MqttConfig {
    let mut c = MqttConfig::new("127.0.0.1", port);
    c.client_id = format!("robobrain-test-{name}-{port}");
    c.invoke_timeout = Duration::from_millis(1500);
    c.reconnect_delay = Duration::from_millis(100);
    c
}

fn obj(v: Value) -> Map<String, Value> {
    let Value::Object(map) = v else {
        unreachable!("an object")
    };
    map
}

/// Waits (10 s at most) until the adapter sees `device` with this reachability.
async fn until_reachability(z: &Zigbee2Mqtt, device: &str, want: Reachability) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let devices = z.devices().await.unwrap();
        if devices
            .iter()
            .any(|d| d.name == device && d.reachability == want)
        {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "`{device}` never became {want:?}: {devices:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The next event that matches, within 10 s.
async fn next_event(
    rx: &mut broadcast::Receiver<MqttEvent>,
    want: impl Fn(&MqttEvent) -> bool,
) -> MqttEvent {
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match rx.recv().await {
                Ok(e) if want(&e) => return e,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("adapter events closed: {e}"),
            }
        }
    })
    .await
    .expect("the event came within 10 s")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invoke_is_a_set_confirmed_by_the_device_report() {
    let broker = Mosquitto::start("invoke");
    let _lamp = FakeDevice::start(
        broker.port,
        BASE,
        "living_room/lamp",
        json!({"state": "OFF", "brightness": 0}),
    );
    let z = Zigbee2Mqtt::start(config(broker.port, "invoke"));
    until_reachability(&z, "living_room/lamp", Reachability::Online).await;

    let state = z
        .invoke(
            "living_room/lamp",
            obj(json!({"state": "ON", "brightness": 180})),
        )
        .await
        .unwrap();
    assert_eq!(state, obj(json!({"state": "ON", "brightness": 180})));
    let seen = z.devices().await.unwrap();
    assert_eq!(seen[0].state["brightness"], 180);
    assert_eq!(seen[0].available, Some(true));

    // A device nobody has heard of is refused, naming the known ones.
    assert_eq!(
        z.invoke("kettle", Map::new())
            .await
            .unwrap_err()
            .to_string(),
        "no device `kettle` under `zigbee2mqtt/` (known: living_room/lamp)"
    );

    // A malformed report is refused; the last good state is kept.
    let mut events = z.subscribe();
    let (rogue, mut rogue_loop) =
        AsyncClient::new(MqttOptions::new("rogue", "127.0.0.1", broker.port), 8);
    rogue
        .publish(
            "zigbee2mqtt/living_room/lamp",
            QoS::AtLeastOnce,
            false,
            "not json",
        )
        .await
        .unwrap();
    tokio::spawn(async move { while rogue_loop.poll().await.is_ok() {} });
    let bad = next_event(&mut events, |e| matches!(e, MqttEvent::Malformed { .. })).await;
    assert!(
        format!("{bad:?}").contains("zigbee2mqtt/living_room/lamp"),
        "{bad:?}"
    );
    assert_eq!(z.devices().await.unwrap()[0].state["state"], "ON");
    z.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offline_device_refuses_invokes_until_it_is_back() {
    let broker = Mosquitto::start("offline");
    let plug = FakeDevice::start(
        broker.port,
        BASE,
        "kettle_plug",
        json!({"state": "OFF", "power": 0}),
    );
    let z = Zigbee2Mqtt::start(config(broker.port, "offline"));
    until_reachability(&z, "kettle_plug", Reachability::Online).await;
    let mut events = z.subscribe();

    plug.control(Control::GoOffline).await;
    next_event(&mut events, |e| {
        matches!(e, MqttEvent::Availability { online: false, .. })
    })
    .await;
    let err = z
        .invoke("kettle_plug", obj(json!({"state": "ON"})))
        .await
        .unwrap_err();
    assert_eq!(err, MqttError::Offline("kettle_plug".into()));
    assert!(err.is_offline());
    assert_eq!(err.to_string(), "device `kettle_plug` is offline");
    assert_eq!(
        z.devices().await.unwrap()[0].reachability,
        Reachability::Offline
    );

    plug.control(Control::ComeBack).await;
    until_reachability(&z, "kettle_plug", Reachability::Online).await;
    let state = z
        .invoke("kettle_plug", obj(json!({"state": "ON"})))
        .await
        .unwrap();
    assert_eq!(state["state"], "ON");

    // Online but not answering: the invoke times out rather than claiming success.
    plug.control(Control::FallSilent).await;
    let err = z
        .invoke("kettle_plug", obj(json!({"state": "OFF"})))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "device `kettle_plug` did not confirm the command within 1500 ms"
    );
    z.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_restart_takes_devices_offline_and_brings_them_back() {
    let mut broker = Mosquitto::start("restart");
    let _lamp = FakeDevice::start(broker.port, BASE, "hall_lamp", json!({"state": "OFF"}));
    let z = Zigbee2Mqtt::start(config(broker.port, "restart"));
    until_reachability(&z, "hall_lamp", Reachability::Online).await;
    z.invoke("hall_lamp", obj(json!({"state": "ON"})))
        .await
        .unwrap();
    let mut events = z.subscribe();

    broker.stop();
    next_event(&mut events, |e| matches!(e, MqttEvent::Disconnected { .. })).await;
    assert!(!z.is_connected().await);
    let err = z
        .invoke("hall_lamp", obj(json!({"state": "OFF"})))
        .await
        .unwrap_err();
    assert!(err.is_offline(), "{err}");
    assert!(
        err.to_string().starts_with(
            "device `hall_lamp` is offline: no connection to the MQTT broker at 127.0.0.1:"
        ),
        "{err}"
    );
    assert_eq!(
        z.devices().await.unwrap()[0].reachability,
        Reachability::Disconnected
    );

    broker.restart();
    next_event(&mut events, |e| matches!(e, MqttEvent::Connected)).await;
    until_reachability(&z, "hall_lamp", Reachability::Online).await;
    // The state from before the restart came back (retained), and the device answers.
    assert_eq!(z.devices().await.unwrap()[0].state["state"], "ON");
    let state = z
        .invoke("hall_lamp", obj(json!({"state": "OFF"})))
        .await
        .unwrap();
    assert_eq!(state["state"], "OFF");
    z.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bridge_going_offline_takes_every_device_with_it() {
    let broker = Mosquitto::start("bridge");
    let _lamp = FakeDevice::start(broker.port, BASE, "lamp", json!({"state": "OFF"}));
    let z = Zigbee2Mqtt::start(config(broker.port, "bridge"));
    until_reachability(&z, "lamp", Reachability::Online).await;
    let (bridge, mut bridge_loop) =
        AsyncClient::new(MqttOptions::new("bridge", "127.0.0.1", broker.port), 8);
    tokio::spawn(async move { while bridge_loop.poll().await.is_ok() {} });
    bridge
        .publish(
            "zigbee2mqtt/bridge/state",
            QoS::AtLeastOnce,
            true,
            r#"{"state":"offline"}"#,
        )
        .await
        .unwrap();
    until_reachability(&z, "lamp", Reachability::BridgeOffline).await;
    assert_eq!(
        z.invoke("lamp", obj(json!({"state": "ON"})))
            .await
            .unwrap_err(),
        MqttError::BridgeOffline("lamp".into())
    );
    bridge
        .publish("zigbee2mqtt/bridge/state", QoS::AtLeastOnce, true, "online")
        .await
        .unwrap();
    until_reachability(&z, "lamp", Reachability::Online).await;
    z.shutdown().await;
}

/// Polls the world (as the engine does every tick) until `device` is
/// online / offline, 10 s at most.
fn until_online(world: &mut crate::devices::DeviceWorld, device: &str, online: bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        world.poll();
        if world.get(device).is_some_and(|d| d.online == online) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "`{device}` never became online={online}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The built-in home's living-room light as a fake zigbee2mqtt device, on `rt`.
fn fake_light(rt: &tokio::runtime::Runtime, port: u16) -> FakeDevice {
    let _inside = rt.enter();
    FakeDevice::start(
        port,
        BASE,
        "living_room_light",
        json!({"state": "OFF", "brightness": 0}),
    )
}

#[test]
fn the_device_world_over_mqtt_invokes_goes_offline_and_comes_back() {
    use crate::devices::{DeviceWorld, Invocation, builtin_home};

    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut broker = Mosquitto::start("world");
    let home = builtin_home().unwrap();
    let light = fake_light(&rt, broker.port);
    let plug = {
        let _inside = rt.enter();
        FakeDevice::start(
            broker.port,
            BASE,
            "kettle_plug",
            json!({"state": "OFF", "power": 0}),
        )
    };
    let mut names = std::collections::BTreeMap::new();
    names.insert("kettle_plug".to_string(), "kettle_plug".to_string());
    let backend =
        MqttBackend::connect(config(broker.port, "world"), &home.devices, &names).unwrap();
    let mut devices = home.devices.clone();
    for d in &mut devices {
        d.online = false; // until the broker says otherwise
    }
    let mut world = DeviceWorld::new("mqtt", home.rooms, devices, Box::new(backend)).unwrap();
    assert_eq!(world.backend_name(), "mqtt");
    until_online(&mut world, "living_room_light", true);
    until_online(&mut world, "kettle_plug", true);
    // Devices with no zigbee2mqtt counterpart stay offline.
    assert!(!world.get("bedroom_curtain").unwrap().online);

    let call = |id: &str, device: &str, capability: &str, args: Value| Invocation {
        request_id: id.into(),
        plan_id: "p".into(),
        step_id: "s".into(),
        device: device.into(),
        capability: capability.into(),
        args,
    };
    let done = world
        .invoke(&call(
            "r1",
            "living_room_light",
            "set_brightness",
            json!({"level": 40}),
        ))
        .unwrap();
    assert_eq!(done.after["on"], json!(true));
    assert_eq!(done.after["brightness"], json!(40));

    // The plug drops off the network: the world hears it and refuses with `offline`.
    rt.block_on(plug.control(Control::GoOffline));
    until_online(&mut world, "kettle_plug", false);
    let e = world
        .invoke(&call("r2", "kettle_plug", "turn_on", json!({})))
        .unwrap_err();
    assert_eq!(e.code(), "offline");
    assert_eq!(e.to_string(), "`kettle_plug` is offline");
    rt.block_on(plug.control(Control::ComeBack));
    until_online(&mut world, "kettle_plug", true);
    let done = world
        .invoke(&call("r2", "kettle_plug", "turn_on", json!({})))
        .unwrap();
    assert_eq!(done.after["on"], json!(true));

    // The broker restarts: everything is offline meanwhile, then back.
    broker.stop();
    until_online(&mut world, "living_room_light", false);
    let e = world
        .invoke(&call("r3", "living_room_light", "turn_off", json!({})))
        .unwrap_err();
    assert_eq!(e.code(), "offline");
    broker.restart();
    until_online(&mut world, "living_room_light", true);
    let done = world
        .invoke(&call("r3", "living_room_light", "turn_off", json!({})))
        .unwrap();
    assert_eq!(done.after["on"], json!(false));
    drop(world);
    drop((light, plug));
}

#[test]
fn home_mqtt_puts_the_fast_path_on_real_devices() {
    use crate::config::HomeConfig;
    use crate::hci::{Home, lock};

    assert_eq!(
        parse_broker("127.0.0.1:1883"),
        Some(("127.0.0.1".into(), 1883))
    );
    assert_eq!(parse_broker("localhost"), None);
    assert_eq!(parse_broker("h:0"), None);

    let rt = tokio::runtime::Runtime::new().unwrap();
    let broker = Mosquitto::start("home");
    let _light = fake_light(&rt, broker.port);
    let config = HomeConfig {
        mqtt: Some(format!("127.0.0.1:{}", broker.port)),
        hour: Some(12.0),
        ..HomeConfig::default()
    };
    let home = std::sync::Arc::new(std::sync::Mutex::new(
        Home::load(&config, "apartment", "t").unwrap(),
    ));
    assert_eq!(lock(&home).devices.backend_name(), "mqtt");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !lock(&home).devices.get("living_room_light").unwrap().online {
        lock(&home).poll();
        assert!(
            std::time::Instant::now() < deadline,
            "the light never came online"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let turn = lock(&home).turn("打开客厅灯").unwrap();
    assert_eq!(turn.intent, "home_control", "{turn:?}");
    let light = lock(&home)
        .devices
        .get("living_room_light")
        .unwrap()
        .clone();
    assert_eq!(light.state["on"], json!(true), "{light:?}");
    // A device with no zigbee2mqtt counterpart is offline, said plainly
    // (in Chinese, as it was asked).
    let turn = lock(&home).turn("打开卧室窗帘").unwrap();
    assert!(format!("{turn:?}").contains("卧室窗帘离线了"), "{turn:?}");
}
