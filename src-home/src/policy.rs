//! Which ops need an operator's approval. The policy — never a model —
//! decides; its rules come from config (`[policy]`, `[home]`).
//!
//! A motion is judged by where it goes, not by what a door called the
//! place ([`motion`]): the goal point and the planned path against the
//! world's restricted and outside zones.
//!
//! Device writes (seed 001 §5, docs/home.md "Risk tiers"): locks, doors
//! (covers whose class is a door, a garage door or a gate), gas, security
//! and high-power devices are `high_write` and always need confirmation;
//! lights, media and the rest are `low_write`. A plan is confirmed for what
//! it is — its riskiest call — never for how many devices it touches: "turn
//! off the lights upstairs" runs, a scene that locks the door asks. A
//! low-risk write needs confirmation when the user asked for that, at
//! night, or when nobody is home. The rules look only at the call and the
//! device model — never at text in device names or tool results.

pub mod motion;

use serde_json::Value;

use crate::config::{HomeConfig, PolicyConfig};
use crate::devices::{DeviceWorld, Scene};
use crate::skills::{Motion, Risk, SkillSpec};
use crate::timezone::{self, TimeZone, Timestamp};
use crate::world::World;

/// What the home policy sees besides the call: the devices, the scenes,
/// the `[home]` rules and the hour of day.
#[derive(Debug, Clone, Copy)]
pub struct HomeGate<'a> {
    /// The `[home]` section.
    pub config: &'a HomeConfig,
    /// The devices.
    pub devices: &'a DeviceWorld,
    /// The home's scenes.
    pub scenes: &'a [Scene],
    /// Hour of day, 0–24.
    pub hour: f64,
}

/// Why `skill` with `args` needs approval under `policy`, or `None` if it
/// may run: the home's rules for device calls, the skill's risk, then where
/// its `motion` goes from `start` ([`motion::reason`]).
pub fn approval_reason(
    policy: &PolicyConfig,
    spec: &SkillSpec,
    args: &Value,
    motion: &Motion,
    world: &World,
    start: &motion::Start<'_>,
    home: Option<&HomeGate<'_>>,
) -> Option<String> {
    if let Some(gate) = home
        && let Some(reason) = home_reason(gate, &spec.name, args)
    {
        return Some(reason);
    }
    if policy.approve_risks.contains(&spec.risk) {
        return Some(format!("{} is {} risk", spec.name, spec.risk.as_str()));
    }
    motion::reason(policy, &spec.name, motion, world, start)
}

/// The device calls `(device, action)` a tool call would make: one for
/// `devices.invoke`, each of `actions.batch_invoke`'s, a scene's; none for
/// reads and dialogue.
pub fn device_calls(tool: &str, args: &Value, scenes: &[Scene]) -> Vec<(String, String)> {
    let one = |v: &Value| {
        Some((
            v.get("device")?.as_str()?.to_string(),
            v.get("action")?.as_str()?.to_string(),
        ))
    };
    match tool {
        "devices.invoke" => one(args).into_iter().collect(),
        "actions.batch_invoke" => args
            .get("calls")
            .and_then(Value::as_array)
            .map(|calls| calls.iter().filter_map(one).collect())
            .unwrap_or_default(),
        "scenes.run" => {
            let name = args.get("scene").and_then(Value::as_str).unwrap_or("");
            scenes
                .iter()
                .find(|s| s.name == name)
                .map(|s| {
                    s.calls
                        .iter()
                        .map(|(d, a, _)| (d.clone(), a.clone()))
                        .collect()
                })
                .unwrap_or_default()
        }
        _ => Vec::new(),
    }
}

/// Seed 001's high tier a device belongs to, whatever the action: `lock`,
/// `door`, `gas` or `security`; `None` for the low tier (lights, media,
/// covers, fans, climate, vacuums, water valves, lists…), where only a
/// capability marked `high_write` or high power raises a call.
pub fn high_tier(device: &crate::devices::Device) -> Option<&'static str> {
    use crate::devices::DeviceKind;
    let class = device.device_class();
    match (device.kind, class.as_deref()) {
        (DeviceKind::Lock, _) => Some("lock"),
        (DeviceKind::Alarm, _) => Some("security"),
        (DeviceKind::Curtain, Some("door" | "garage" | "gate")) => Some("door"),
        (DeviceKind::Valve, Some("gas")) => Some("gas"),
        _ => None,
    }
}

/// The risk of one device call, with the rule that set it.
pub fn call_risk(gate: &HomeGate<'_>, device: &str, action: &str) -> (Risk, String) {
    let Some(d) = gate.devices.get(device) else {
        return (Risk::LowWrite, format!("no device `{device}`"));
    };
    let Some(c) = d.capability(action) else {
        return (Risk::LowWrite, format!("`{device}` cannot `{action}`"));
    };
    let tier = high_tier(d);
    if c.risk == Risk::HighWrite || tier.is_some() {
        return (
            Risk::HighWrite,
            format!(
                "{action} on {device} ({}) is high risk: locks, doors, gas and security always need confirmation",
                tier.unwrap_or(d.kind.as_str())
            ),
        );
    }
    if let Some(watts) = d.rated_power_w
        && watts >= gate.config.high_power_w
        && c.effects.get("on") == Some(&Value::Bool(true))
    {
        return (
            Risk::HighWrite,
            format!("{action} on {device} switches on {watts} W: high power needs confirmation"),
        );
    }
    (Risk::LowWrite, format!("{action} on {device} is low risk"))
}

/// Whether `hour` falls in the night `[start, end)` (which may wrap midnight).
pub fn is_night(night: [f64; 2], hour: f64) -> bool {
    let [start, end] = night;
    if start > end {
        hour >= start || hour < end
    } else {
        (start..end).contains(&hour)
    }
}

/// The hour of day the policy sees: `[home] hour`, or the clock in the
/// home's time zone.
pub fn hour_now(config: &HomeConfig) -> f64 {
    hour_at(config, Timestamp::now())
}

/// The hour of day the policy sees at the instant `at`: `[home] hour` when
/// it is fixed, else the local hour in `[home] time_zone` (the machine's
/// zone when unset; a name the config check would refuse reads as UTC).
pub fn hour_at(config: &HomeConfig, at: Timestamp) -> f64 {
    if let Some(h) = config.hour {
        return h;
    }
    let zone = timezone::configured(config.time_zone.as_deref()).unwrap_or(TimeZone::UTC);
    timezone::local_hour(&zone, at)
}

/// Why the device calls of `tool` with `args` need confirmation, or `None`.
pub fn home_reason(gate: &HomeGate<'_>, tool: &str, args: &Value) -> Option<String> {
    let calls = device_calls(tool, args, gate.scenes);
    if calls.is_empty() {
        return None;
    }
    // A plan is as risky as its riskiest call: how many lights it touches
    // does not make it riskier (seed 001's tiers, docs/home.md).
    for (device, action) in &calls {
        let (risk, why) = call_risk(gate, device, action);
        if risk == Risk::HighWrite {
            return Some(why);
        }
    }
    let c = gate.config;
    if c.confirm_low_write {
        return Some("your preference: every device change is confirmed first".into());
    }
    if c.confirm_at_night && is_night(c.night, gate.hour) {
        return Some(format!(
            "it is night ({:02}:00–{:02}:00): device changes are confirmed first",
            c.night[0] as u32, c.night[1] as u32
        ));
    }
    if c.confirm_when_away && !c.occupied {
        return Some("nobody is home: device changes are confirmed first".into());
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn gate<'a>(
        config: &'a HomeConfig,
        devices: &'a DeviceWorld,
        scenes: &'a [Scene],
        hour: f64,
    ) -> HomeGate<'a> {
        HomeGate {
            config,
            devices,
            scenes,
            hour,
        }
    }

    #[test]
    fn locks_gas_alarms_and_high_power_always_need_confirmation() {
        let devices = DeviceWorld::builtin().unwrap();
        let home = crate::devices::builtin_home().unwrap();
        let config = HomeConfig::default();
        let g = gate(&config, &devices, &home.scenes, 12.0);
        let invoke = |d: &str, a: &str| json!({"device": d, "action": a});
        for (d, a) in [
            ("front_door_lock", "unlock"),
            ("gas_valve", "open"),
            ("alarm", "disarm"),
            ("kettle_plug", "turn_on"),
        ] {
            assert!(
                home_reason(&g, "devices.invoke", &invoke(d, a)).is_some(),
                "{d}.{a}"
            );
        }
        assert!(home_reason(&g, "devices.invoke", &invoke("kettle_plug", "turn_off")).is_none());
        assert!(
            home_reason(
                &g,
                "devices.invoke",
                &invoke("living_room_light", "turn_on")
            )
            .is_none()
        );
        // The sleep scene locks the front door: the lock makes it high.
        let sleep = home_reason(&g, "scenes.run", &json!({"scene": "sleep"})).unwrap();
        assert!(
            sleep.contains("front_door_lock (lock) is high risk"),
            "{sleep}"
        );
        // The movie scene dims a light and closes a curtain: low, it runs.
        assert_eq!(
            home_reason(&g, "scenes.run", &json!({"scene": "movie"})),
            None
        );
        assert!(
            home_reason(
                &g,
                "devices.get_state",
                &json!({"device": "front_door_lock"})
            )
            .is_none()
        );
    }

    #[test]
    fn low_risk_writes_are_confirmed_at_night_away_or_by_preference() {
        let devices = DeviceWorld::builtin().unwrap();
        let light = json!({"device": "living_room_light", "action": "turn_on"});
        let mut config = HomeConfig::default();
        assert!(
            home_reason(
                &gate(&config, &devices, &[], 23.5),
                "devices.invoke",
                &light
            )
            .unwrap()
            .contains("night")
        );
        assert!(
            home_reason(&gate(&config, &devices, &[], 6.0), "devices.invoke", &light).is_some()
        );
        assert!(
            home_reason(&gate(&config, &devices, &[], 7.0), "devices.invoke", &light).is_none()
        );
        config.occupied = false;
        assert!(
            home_reason(
                &gate(&config, &devices, &[], 12.0),
                "devices.invoke",
                &light
            )
            .unwrap()
            .contains("nobody")
        );
        config.occupied = true;
        config.confirm_low_write = true;
        assert!(
            home_reason(
                &gate(&config, &devices, &[], 12.0),
                "devices.invoke",
                &light
            )
            .unwrap()
            .contains("preference")
        );
    }

    fn invoke(device: &str, action: &str) -> Value {
        json!({"device": device, "action": action})
    }

    #[test]
    fn robot_ops_need_approval_by_risk_and_for_outside_or_restricted_zones() {
        let registry = crate::skills::SkillRegistry::with_builtins().unwrap();
        let world = World::builtin("apartment").unwrap();
        let nav = registry.spec("navigate_to").unwrap();
        let to = |z: &str| json!({"zone": z});
        let start = motion::Start {
            at: Some(world.start_pose.point()),
            blocked: &[],
            open: None,
        };
        let reason = |policy: &PolicyConfig, spec: &SkillSpec, args: &Value| {
            let motion = registry
                .motion(&spec.name, args, &world)
                .unwrap_or(Motion::Unknown);
            approval_reason(policy, spec, args, &motion, &world, &start, None)
        };
        let mut policy = PolicyConfig::default();
        assert_eq!(reason(&policy, nav, &to("kitchen")), None);
        // By coordinates, the same places.
        assert_eq!(
            reason(&policy, nav, &json!({"x": 3.0, "y": 2.0})).as_deref(),
            Some("navigate_to enters the restricted zone study")
        );
        assert_eq!(reason(&policy, nav, &json!({"x": 8.25, "y": 2.0})), None);
        // Arguments the skill cannot read (its check refuses them first)
        // say nowhere: judged as going anywhere.
        assert!(reason(&policy, nav, &to("nowhere")).is_some());
        assert!(reason(&policy, nav, &json!({})).is_some());
        assert_eq!(
            reason(&policy, nav, &to("outside")).as_deref(),
            Some("navigate_to leaves the apartment (outside)")
        );
        assert_eq!(
            reason(&policy, nav, &to("study")).as_deref(),
            Some("navigate_to enters the restricted zone study")
        );
        let mut risky = nav.clone();
        risky.risk = Risk::HighWrite;
        assert_eq!(
            reason(&policy, &risky, &to("kitchen")).as_deref(),
            Some("navigate_to is high_write risk")
        );
        policy.approve_outside = false;
        assert_eq!(reason(&policy, nav, &to("outside")), None);
        assert!(reason(&policy, nav, &to("study")).is_some());
        policy.approve_restricted = false;
        policy.approve_risks.clear();
        assert_eq!(reason(&policy, nav, &to("study")), None);
        assert_eq!(reason(&policy, &risky, &to("kitchen")), None);
        // The home's rules come first, whatever the robot's policy says.
        let devices = DeviceWorld::builtin().unwrap();
        let config = HomeConfig::default();
        let g = gate(&config, &devices, &[], 12.0);
        let mut tool = nav.clone();
        tool.name = "devices.invoke".into();
        let unlock = invoke("front_door_lock", "unlock");
        let still = Motion::Still;
        let why =
            approval_reason(&policy, &tool, &unlock, &still, &world, &start, Some(&g)).unwrap();
        assert!(why.contains("high risk"), "{why}");
        let light = invoke("living_room_light", "turn_on");
        assert_eq!(
            approval_reason(&policy, &tool, &light, &still, &world, &start, Some(&g)),
            None
        );
    }

    #[test]
    fn the_robots_screen_and_face_are_not_home_devices_in_a_plan() {
        let devices = DeviceWorld::builtin().unwrap();
        let config = HomeConfig::default();
        let g = gate(&config, &devices, &[], 12.0);
        let smile = json!({"calls": [invoke("screen", "set_brightness"), invoke("face", "set_expression")]});
        assert_eq!(home_reason(&g, "actions.batch_invoke", &smile), None);
        let with_light = json!({"calls": [
            invoke("screen", "set_brightness"),
            invoke("face", "set_expression"),
            invoke("living_room_light", "turn_on"),
        ]});
        assert_eq!(home_reason(&g, "actions.batch_invoke", &with_light), None);
        let same_twice = json!({"calls": [
            invoke("living_room_light", "turn_on"),
            invoke("living_room_light", "turn_off"),
        ]});
        assert_eq!(home_reason(&g, "actions.batch_invoke", &same_twice), None);
    }

    /// Seed 001's tiers: an area command on several lights is what it is —
    /// low risk — however many lights it touches; one lock among them
    /// makes the whole plan high.
    #[test]
    fn a_plan_is_confirmed_for_what_it_is_not_for_how_many_devices_it_touches() {
        let devices = DeviceWorld::builtin().unwrap();
        let config = HomeConfig::default();
        let g = gate(&config, &devices, &[], 12.0);
        let lights: Vec<Value> = [
            "living_room_light",
            "floor_lamp",
            "reading_lamp",
            "bedroom_light",
            "kitchen_light",
        ]
        .iter()
        .map(|d| invoke(d, "turn_off"))
        .collect();
        let all_lights = json!({"calls": lights});
        assert_eq!(home_reason(&g, "actions.batch_invoke", &all_lights), None);
        let media = json!({"calls": [invoke("living_room_tv", "turn_off"), invoke("living_room_light", "turn_off")]});
        assert_eq!(home_reason(&g, "actions.batch_invoke", &media), None);
        let mut with_lock = lights.clone();
        with_lock.push(invoke("front_door_lock", "lock"));
        let why = home_reason(&g, "actions.batch_invoke", &json!({"calls": with_lock})).unwrap();
        assert!(
            why.starts_with("lock on front_door_lock (lock) is high risk"),
            "{why}"
        );
    }

    /// Doors are high whatever the device calls itself: a cover of class
    /// garage, door or gate asks; a curtain and a water valve do not; a
    /// valve of class gas asks.
    #[test]
    fn doors_and_gas_are_high_by_their_class_curtains_and_water_are_low() {
        use crate::devices::DeviceKind::{Curtain, Valve};
        let builtin = DeviceWorld::builtin().unwrap();
        let curtain = builtin.get("bedroom_curtain").unwrap().clone();
        let with_class = |id: &str, kind, class: Option<&str>| {
            let mut d = curtain.clone();
            d.id = id.into();
            d.name = id.replace('_', " ");
            d.aliases.clear();
            d.kind = kind;
            if let Some(c) = class {
                d.state.insert("device_class".into(), json!(c));
            }
            d
        };
        let devices = vec![
            with_class("garage_door", Curtain, Some("garage")),
            with_class("front_gate", Curtain, Some("gate")),
            with_class("patio_door", Curtain, Some("cover.CoverDeviceClass.DOOR")),
            with_class("blind", Curtain, Some("blind")),
            with_class("curtain", Curtain, None),
            with_class("gas_main", Valve, Some("gas")),
            with_class("garden_water", Valve, Some("water")),
        ];
        let rooms = builtin.rooms().to_vec();
        let world =
            DeviceWorld::new("t", rooms, devices, Box::new(crate::devices::SimBackend)).unwrap();
        let config = HomeConfig::default();
        let g = gate(&config, &world, &[], 12.0);
        for (device, high) in [
            ("garage_door", true),
            ("front_gate", true),
            ("patio_door", true),
            ("blind", false),
            ("curtain", false),
            ("gas_main", true),
            ("garden_water", false),
        ] {
            let why = home_reason(&g, "devices.invoke", &invoke(device, "open"));
            assert_eq!(why.is_some(), high, "{device}: {why:?}");
        }
    }

    #[test]
    fn device_calls_come_from_invoke_batches_and_scenes_only() {
        let home = crate::devices::builtin_home().unwrap();
        let scenes = &home.scenes;
        assert_eq!(
            device_calls("devices.invoke", &invoke("a", "b"), scenes),
            [("a".to_string(), "b".to_string())]
        );
        assert!(device_calls("devices.invoke", &json!({"device": "a"}), scenes).is_empty());
        assert!(device_calls("actions.batch_invoke", &json!({}), scenes).is_empty());
        let batch = json!({"calls": [invoke("a", "b"), {"device": "c"}, invoke("d", "e")]});
        assert_eq!(
            device_calls("actions.batch_invoke", &batch, scenes).len(),
            2
        );
        let sleep = device_calls("scenes.run", &json!({"scene": "sleep"}), scenes);
        assert!(sleep.len() > 1, "{sleep:?}");
        assert!(device_calls("scenes.run", &json!({"scene": "nope"}), scenes).is_empty());
        assert!(device_calls("devices.get_state", &invoke("a", "b"), scenes).is_empty());
    }

    #[test]
    fn call_risk_says_which_rule_set_it() {
        let devices = DeviceWorld::builtin().unwrap();
        let mut config = HomeConfig::default();
        let risk = |config: &HomeConfig, d: &str, a: &str| {
            call_risk(&gate(config, &devices, &[], 12.0), d, a)
        };
        assert_eq!(
            risk(&config, "nope", "turn_on"),
            (Risk::LowWrite, "no device `nope`".to_string())
        );
        assert_eq!(
            risk(&config, "living_room_light", "fly"),
            (
                Risk::LowWrite,
                "`living_room_light` cannot `fly`".to_string()
            )
        );
        assert_eq!(
            risk(&config, "living_room_light", "turn_on"),
            (
                Risk::LowWrite,
                "turn_on on living_room_light is low risk".to_string()
            )
        );
        let (r, why) = risk(&config, "front_door_lock", "unlock");
        assert_eq!(r, Risk::HighWrite);
        assert!(why.starts_with("unlock on front_door_lock ("), "{why}");
        assert_eq!(
            risk(&config, "kettle_plug", "turn_on"),
            (
                Risk::HighWrite,
                "turn_on on kettle_plug switches on 1800 W: high power needs confirmation"
                    .to_string()
            )
        );
        assert_eq!(risk(&config, "kettle_plug", "turn_off").0, Risk::LowWrite);
        // At the threshold it is high power; above the device's rating, not.
        config.high_power_w = 1800.0;
        assert_eq!(risk(&config, "kettle_plug", "turn_on").0, Risk::HighWrite);
        config.high_power_w = 1800.5;
        assert_eq!(risk(&config, "kettle_plug", "turn_on").0, Risk::LowWrite);
    }

    #[test]
    fn the_night_may_wrap_midnight() {
        for (hour, night) in [
            (23.0, true),
            (6.9, true),
            (22.0, true),
            (7.0, false),
            (21.9, false),
            (12.0, false),
        ] {
            assert_eq!(is_night([22.0, 7.0], hour), night, "{hour}");
        }
        for (hour, night) in [
            (1.0, true),
            (3.0, true),
            (5.0, false),
            (0.5, false),
            (23.0, false),
        ] {
            assert_eq!(is_night([1.0, 5.0], hour), night, "{hour}");
        }
        // A night that ends when it starts is empty, not the whole day.
        for hour in [0.0, 6.0, 6.5, 12.0, 23.9] {
            assert!(!is_night([6.0, 6.0], hour), "{hour}");
        }
    }

    #[test]
    fn the_hour_is_the_configured_one_or_the_clock_in_the_homes_zone() {
        let mut config = HomeConfig {
            hour: Some(9.5),
            time_zone: Some("Asia/Kolkata".into()),
            ..HomeConfig::default()
        };
        let noon_utc: Timestamp = "2026-06-01T12:00:00Z".parse().unwrap();
        assert_eq!(hour_at(&config, noon_utc), 9.5, "a fixed hour wins");
        assert_eq!(hour_now(&config), 9.5);
        config.hour = None;
        assert_eq!(hour_at(&config, noon_utc), 17.5);
        config.time_zone = Some("America/Los_Angeles".into());
        assert_eq!(hour_at(&config, noon_utc), 5.0);
        config.time_zone = Some("UTC".into());
        assert_eq!(hour_at(&config, noon_utc), 12.0);
        let now = hour_now(&config);
        assert!((0.0..24.0).contains(&now), "{now}");
    }

    /// The night rule across a daylight-saving change: the same UTC time of
    /// day is a different local hour the day after, and the rule follows
    /// the local hour.
    #[test]
    fn the_night_rule_follows_local_time_across_daylight_saving_changes() {
        let devices = DeviceWorld::builtin().unwrap();
        let light = invoke("living_room_light", "turn_on");
        // (zone, night, UTC instant, local hour, night?)
        let cases = [
            // Berlin springs forward on 29 March 2026: 21:30 UTC is 22:30 CET, then 23:30 CEST.
            (
                "Europe/Berlin",
                [23.0, 7.0],
                "2026-03-28T21:30:00Z",
                22.5,
                false,
            ),
            (
                "Europe/Berlin",
                [23.0, 7.0],
                "2026-03-29T21:30:00Z",
                23.5,
                true,
            ),
            // …and falls back on 25 October: 05:30 UTC is 07:30 CEST, then 06:30 CET.
            (
                "Europe/Berlin",
                [23.0, 7.0],
                "2026-10-24T05:30:00Z",
                7.5,
                false,
            ),
            (
                "Europe/Berlin",
                [23.0, 7.0],
                "2026-10-25T05:30:00Z",
                6.5,
                true,
            ),
            // New York springs forward on 8 March: 03:30 UTC is 22:30 EST, then 23:30 EDT.
            (
                "America/New_York",
                [23.0, 7.0],
                "2026-03-07T03:30:00Z",
                22.5,
                false,
            ),
            (
                "America/New_York",
                [23.0, 7.0],
                "2026-03-09T03:30:00Z",
                23.5,
                true,
            ),
            // …and falls back on 1 November: 11:30 UTC is 07:30 EDT, then 06:30 EST.
            (
                "America/New_York",
                [23.0, 7.0],
                "2026-10-31T11:30:00Z",
                7.5,
                false,
            ),
            (
                "America/New_York",
                [23.0, 7.0],
                "2026-11-02T11:30:00Z",
                6.5,
                true,
            ),
        ];
        for (zone, night, utc, local, is_night_there) in cases {
            let config = HomeConfig {
                time_zone: Some(zone.into()),
                night,
                ..HomeConfig::default()
            };
            let at: Timestamp = utc.parse().unwrap();
            let hour = hour_at(&config, at);
            assert_eq!(hour, local, "{zone} at {utc}");
            let why = home_reason(
                &gate(&config, &devices, &[], hour),
                "devices.invoke",
                &light,
            );
            assert_eq!(
                why.as_deref().is_some_and(|w| w.contains("night")),
                is_night_there,
                "{zone} at {utc} ({hour}): {why:?}"
            );
        }
    }
}
