//! The property of issue 35 item 1, through every door the core has in
//! process: random goals in every form — a zone name said or called, an
//! alias, coordinates, a chain step, a VDA 5050 order node by id or by
//! position (through the real [`Bridge`]), a model's decision (a scripted
//! brain), the dock and Home Assistant's buttons — from random starts with
//! random passages blocked, in the apartment and in a flat whose short way
//! runs through a restricted room. Judged against the robot itself: the
//! path the simulator planned for the goal it was sent (telemetry), and
//! where that goal is. Every goal whose place or path enters a restricted
//! zone or leaves the apartment waits for an approval; nothing else does —
//! but a Home Assistant press, which only asks: its task's first leg
//! waits whatever its goal (issue 35 item 2).

#![allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]

use serde_json::{Value, json};

use crate::brain::ScriptedBrain;
use crate::config::Config;
use crate::devices::mqtt::discovery::{Button, Discovery};
use crate::engine::Engine;
use crate::fleet::bridge::{Bridge, Effect as BridgeEffect, Identity};
use crate::fleet::topics::Topics;
use crate::geometry::{Point, Pose};
use crate::link::Fault;
use crate::protocol::{
    Command, DecisionType, Event, EventKind, Op, Origin, SkillCall, SkillStatus,
};
use crate::react::Decision;
use crate::rng::SplitMix64;
use crate::world::World;

/// How many random goals are sent.
const CASES: usize = 160;

/// One goal, in one form, through one door.
#[derive(Debug, Clone)]
enum Door {
    /// An operator's words (console, page, headless: `Command::Say`).
    Say(String),
    /// One skill call (MCP's tools, the page's and headless' `call`).
    Call(&'static str, Value),
    /// A chain of calls (the protocol's `chain`).
    Chain(Vec<SkillCall>),
    /// A VDA 5050 order, through the fleet bridge.
    Order(Value),
    /// A model's decision for whatever task runs.
    Model(Op),
    /// A Home Assistant button press, through discovery's command topic.
    Button(Button),
}

/// A flagged place (restricted, outside or off the map) holds `p`.
fn flagged_at(world: &World, p: Point) -> bool {
    world.cell_of(p).is_none()
        || world
            .zones
            .iter()
            .any(|z| (z.restricted || z.outside) && z.rect.contains(p))
}

/// The robot's own path passes into a flagged zone it did not start in
/// (sampled every 2 cm: an oracle apart from the check's own sampling).
fn path_enters(world: &World, path: &[Point]) -> bool {
    let Some(&first) = path.first() else {
        return false;
    };
    world
        .zones
        .iter()
        .filter(|z| z.restricted || z.outside)
        .any(|z| {
            let mut inside = z.rect.contains(first);
            for pair in path.windows(2) {
                let (from, to) = (pair[0], pair[1]);
                let steps = (from.distance(to) / 0.02).ceil().max(1.0) as usize;
                for k in 1..=steps {
                    let t = k as f64 / steps as f64;
                    let here =
                        Point::new(from.x + (to.x - from.x) * t, from.y + (to.y - from.y) * t);
                    let now = z.rect.contains(here);
                    if now && !inside {
                        return true;
                    }
                    inside = now;
                }
            }
            false
        })
}

/// Where an op sends the base, read off its arguments.
fn target_of(world: &World, skill: &str, args: &Value) -> Option<Point> {
    match skill {
        "dock" => Some(world.dock_pose.point()),
        "navigate_to" => match args.get("zone").and_then(Value::as_str) {
            Some(z) => world.zone(z).map(|z| z.goal),
            None => Some(Point::new(args["x"].as_f64()?, args["y"].as_f64()?)),
        },
        _ => None,
    }
}

fn random_point(rng: &mut SplitMix64, world: &World) -> Point {
    let (w, h) = (world.width_m(), world.height_m());
    // A little off the map on every side, rounded to the centimetre.
    let x = ((rng.next_f64() * (w + 1.0) - 0.5) * 100.0).round() / 100.0;
    let y = ((rng.next_f64() * (h + 1.0) - 0.5) * 100.0).round() / 100.0;
    Point::new(x, y)
}

fn free_point(rng: &mut SplitMix64, world: &World) -> Point {
    loop {
        let c = rng.below(world.width);
        let r = rng.below(world.height);
        if !world.walls[r * world.width + c] {
            return Point::new(
                (c as f64 + 0.5) * world.resolution,
                (r as f64 + 0.5) * world.resolution,
            );
        }
    }
}

/// An order from where the robot stands (`start`, its first node, as
/// VDA 5050 wants it: §6.6.1) to `node`.
fn order(start: Point, world: &World, node: &Value) -> Value {
    let mut node = node.clone();
    node["sequenceId"] = json!(2);
    json!({"headerId": 1, "timestamp": "2026-11-28T08:00:00.000Z", "version": "2.1.0",
           "manufacturer": "acme", "serialNumber": "r1", "orderId": "o1", "orderUpdateId": 0,
           "nodes": [{"nodeId": "here", "sequenceId": 0, "released": true, "actions": [],
                      "nodePosition": {"x": start.x, "y": start.y, "mapId": world.name}}, node],
           "edges": [{"edgeId": "e1", "sequenceId": 1, "released": true, "startNodeId": "here",
                      "endNodeId": node["nodeId"], "actions": []}]})
}

/// A random goal through a random door, for a robot at `start`.
fn random_door(rng: &mut SplitMix64, world: &World, start: Point) -> Door {
    let zone = &world.zones[rng.below(world.zones.len())];
    let name = if zone.aliases.is_empty() || rng.below(2) == 0 {
        zone.name.clone()
    } else {
        zone.aliases[rng.below(zone.aliases.len())].clone()
    };
    let p = if rng.below(3) == 0 {
        free_point(rng, world)
    } else {
        random_point(rng, world)
    };
    let xy = json!({"x": p.x, "y": p.y});
    let apartment = world.name == "apartment";
    match rng.below(10) {
        0 => Door::Say(format!("go to the {name}")),
        1 => Door::Call("navigate_to", json!({"zone": zone.name})),
        2 => Door::Call("navigate_to", xy),
        3 => Door::Chain(vec![
            SkillCall {
                skill: "speak".into(),
                args: json!({"text": "going"}),
            },
            SkillCall {
                skill: "navigate_to".into(),
                args: xy,
            },
        ]),
        4 => Door::Order(order(
            start,
            world,
            &json!({"nodeId": zone.name, "sequenceId": 0, "released": true, "actions": []}),
        )),
        5 => Door::Order(order(
            start,
            world,
            &json!({"nodeId": "n1", "sequenceId": 0, "released": true, "actions": [],
                   "nodePosition": {"x": p.x, "y": p.y, "mapId": world.name}}),
        )),
        6 => Door::Model(Op::Dispatch {
            skill: "navigate_to".into(),
            args: xy,
        }),
        7 => Door::Call("dock", json!({})),
        8 if apartment => Door::Button(if rng.below(2) == 0 {
            Button::Dock
        } else {
            Button::Patrol
        }),
        _ => Door::Say(format!("take me to {name}")),
    }
}

/// What happened to one goal.
#[derive(Debug, Default)]
struct Seen {
    /// Legs that waited for an approval, then ran once approved.
    asked: usize,
    /// Legs that ran without one.
    ran: usize,
}

/// Sends `door` to a fresh engine on `world` whose robot starts at
/// `start` with `blocked` passages blocked, and checks the property on
/// every leg of the task (the first three at most).
fn send(world: &World, start: Point, blocked: Option<&str>, door: &Door, seen: &mut Seen) {
    let mut events = Vec::new();
    let (world, mut engine) = engine_at(world, start, blocked, &mut events);
    let origin = origin_of(door);
    let commands = commands_of(door, &world, &mut engine);
    for c in commands {
        engine.submit(c, origin.clone());
    }
    let mut watch = Watch {
        world: &world,
        what: format!("{door:?} from {start:?}, blocked {blocked:?}"),
        legs: 0,
        approved: None,
        leg: None,
        path: Vec::new(),
        quiet_ticks: 0,
        // A press only asks: its task's first leg waits whatever its goal.
        only_asked: matches!(door, Door::Button(_)),
    };
    watch.run(&mut engine, &mut events, seen);
}

/// A fresh engine on a copy of `world` whose robot starts at `start`,
/// with `blocked` passage blocked (three ticks into `events` to take),
/// and that copy of the world.
fn engine_at(
    world: &World,
    start: Point,
    blocked: Option<&str>,
    events: &mut Vec<Event>,
) -> (World, Engine) {
    let mut world = world.clone();
    world.start_pose = Pose::new(start.x, start.y, 0.0);
    let mut config = Config {
        thread_id: Some("doors".into()),
        ..Config::default()
    };
    config.skills.keep_frames = false;
    config.patrol.look_around = false;
    let mut engine = Engine::simulated(&config, world.clone()).unwrap();
    if let Some(passage) = blocked {
        engine.submit(
            Command::Inject {
                fault: Fault::Block {
                    passage: passage.into(),
                },
            },
            Origin::console(),
        );
        for _ in 0..3 {
            engine.tick(events);
        }
    }
    (world, engine)
}

/// Where each door's commands come from, as the door stamps it.
fn origin_of(door: &Door) -> Origin {
    match door {
        Door::Say(_) => Origin::console(),
        Door::Call(..) | Door::Model(_) => Origin::new(crate::protocol::Door::Mcp, "stdio mcp-1"),
        Door::Chain(_) => Origin::headless(),
        Door::Order(_) => Origin::new(
            crate::protocol::Door::Vda5050,
            "topic uagv/v2/acme/r1/order",
        ),
        Door::Button(_) => Origin::new(crate::protocol::Door::HomeAssistant, "topic (a button's)"),
    }
}

/// The commands `door` hands the engine (a model's door installs its
/// scripted brain on `engine` and only starts a task).
fn commands_of(door: &Door, world: &World, engine: &mut Engine) -> Vec<Command> {
    match door {
        Door::Say(text) => vec![Command::Say { text: text.clone() }],
        Door::Call(skill, args) => vec![Command::Call {
            call_id: "c1".into(),
            skill: (*skill).into(),
            args: args.clone(),
        }],
        Door::Chain(calls) => vec![Command::Chain {
            call_id: "c1".into(),
            calls: calls.clone(),
        }],
        Door::Order(order) => {
            let mut bridge = Bridge::new(Identity {
                topics: Topics::new("acme", "r1"),
                world: world.clone(),
            });
            // The bridge knows where the robot stands, as the link's does.
            let mut snapshot = crate::protocol::Snapshot::default();
            snapshot.robot.pose = world.start_pose;
            bridge.snapshot(&snapshot, 0);
            let payload = serde_json::to_vec(order).unwrap();
            bridge
                .message("uagv/v2/acme/r1/order", &payload, 0)
                .into_iter()
                .filter_map(|e| match e {
                    BridgeEffect::Command { command, .. } => Some(command),
                    BridgeEffect::Publish(_) => None,
                })
                .collect()
        }
        Door::Model(op) => {
            engine.set_brain(Box::new(ScriptedBrain::new([Decision::new(
                DecisionType::Replan,
                "the model goes its own way",
            )
            .with_ops([op.clone()])])));
            vec![Command::Call {
                call_id: "c1".into(),
                skill: "speak".into(),
                args: json!({"text": "hello"}),
            }]
        }
        Door::Button(button) => {
            let discovery = Discovery::new("homeassistant", "robobrain").with_buttons(&Button::ALL);
            let topic = discovery.command_topic(*button);
            discovery.command(&topic, b"PRESS").into_iter().collect()
        }
    }
}

/// One task's legs as the engine runs them, judged one by one.
struct Watch<'a> {
    /// The world the engine runs.
    world: &'a World,
    /// The case, for the failure messages.
    what: String,
    /// Legs judged so far.
    legs: usize,
    /// The approved op of the leg under way, if it was approved.
    approved: Option<(String, Value)>,
    /// The leg under way: its skill and arguments.
    leg: Option<(String, Value)>,
    /// The robot's path for the leg under way, once it has one.
    path: Vec<Point>,
    /// Ticks since anything happened.
    quiet_ticks: u32,
    /// A press only asks: its task's first leg waits whatever its goal.
    only_asked: bool,
}

impl Watch<'_> {
    /// Ticks `engine` until three legs are judged or it falls quiet,
    /// approving whatever waits.
    fn run(&mut self, engine: &mut Engine, events: &mut Vec<Event>, seen: &mut Seen) {
        while self.legs < 3 && self.quiet_ticks < 200 {
            events.clear();
            engine.tick(events);
            self.quiet_ticks += 1;
            self.note_dispatches(events);
            if self.leg.is_some() && self.path.is_empty() {
                self.path.clone_from(&engine.state().telemetry.path);
            }
            // A leg is judged once the robot has its path, or a moment after
            // it was sent (a goal it refused, or one done at once).
            if let Some(leg) = self.leg.clone()
                && (!self.path.is_empty() || self.quiet_ticks > 10)
            {
                self.judge(&leg, seen);
                self.legs += 1;
                self.leg = None;
                self.approved = None;
                // Let the leg run its course before the next one.
                continue;
            }
            self.approve_first(engine);
        }
    }

    /// A dispatched op that moves the base starts a new leg.
    fn note_dispatches(&mut self, events: &[Event]) {
        for e in events {
            if let EventKind::Skill {
                skill,
                args,
                status: SkillStatus::Dispatched,
                ..
            } = &e.kind
                && target_of(self.world, skill, args).is_some()
            {
                self.leg = Some((skill.clone(), args.clone()));
                self.path.clear();
                self.quiet_ticks = 0;
            }
        }
    }

    /// Checks the property on `leg`: it waited for an approval exactly
    /// when its goal or path is flagged (or a press asked for it).
    fn judge(&mut self, leg: &(String, Value), seen: &mut Seen) {
        let (skill, args) = leg;
        let (world, what, path) = (self.world, &self.what, &self.path);
        let target = target_of(world, skill, args).unwrap();
        let enters = flagged_at(world, target) || path_enters(world, path);
        let was_approved = self.approved.as_ref() == Some(leg);
        if self.only_asked {
            assert!(
                was_approved,
                "{what}: {skill} {args} ran without an approval, but a Home Assistant \
                 press only asks"
            );
            self.only_asked = false;
            seen.asked += 1;
        } else if was_approved {
            assert!(
                enters,
                "{what}: {skill} {args} waited for an approval, but neither its goal \
                 {target:?} nor the robot's path {path:?} enters a restricted zone or \
                 leaves the apartment"
            );
            seen.asked += 1;
        } else {
            assert!(
                !enters,
                "{what}: {skill} {args} ran without an approval, but its goal {target:?} \
                 or the robot's path {path:?} enters a restricted zone or leaves the apartment"
            );
            seen.ran += 1;
        }
    }

    /// Approves the first op waiting, noting it if it moves the base.
    fn approve_first(&mut self, engine: &mut Engine) {
        if let Some(pending) = engine.state().approvals.first().cloned() {
            if let Op::Dispatch { skill, args } = &pending.op
                && target_of(self.world, skill, args).is_some()
            {
                self.approved = Some((skill.clone(), args.clone()));
            }
            engine.submit(
                Command::Approve {
                    approval_id: pending.id.clone(),
                },
                Origin::console(),
            );
            self.quiet_ticks = 0;
        }
    }
}

#[test]
fn every_goal_that_enters_a_restricted_zone_or_leaves_waits_and_nothing_else_does() {
    let worlds = [
        World::builtin("apartment").unwrap(),
        // A flat whose short way from the west room to the east room runs
        // through a restricted middle room; a corridor below goes round.
        World::load(&crate::testing::workspace_root().join("tests/fixtures/worlds/through.toml"))
            .unwrap(),
    ];
    let mut rng = SplitMix64::new(35);
    let mut seen = Seen::default();
    for case in 0..CASES {
        let world = &worlds[case % worlds.len()];
        let start = if rng.below(3) == 0 {
            free_point(&mut rng, world)
        } else {
            world.start_pose.point()
        };
        let blocked = if rng.below(4) == 0 {
            Some(
                world.passages[rng.below(world.passages.len())]
                    .name
                    .as_str(),
            )
        } else {
            None
        };
        let door = random_door(&mut rng, world, start);
        send(world, start, blocked, &door, &mut seen);
    }
    // Both sides of the property were exercised.
    assert!(seen.asked > 10, "{seen:?}");
    assert!(seen.ran > 10, "{seen:?}");
}
