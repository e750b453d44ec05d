//! One robot's side of the fleet as plain logic: messages from the broker,
//! the run's snapshots and events go in; what to publish and which
//! [`Command`]s to give the run come out. No IO here — [`super::FleetLink`]
//! carries the effects out — so every mapping (VDA 5050 ↔ the run, the
//! command ids, the order's progress) is tested message by message.
//!
//! - Own protocol: the `hello` frame and the snapshot (retained), every
//!   event, and a reply to every command: `accepted`, `duplicate` (an id
//!   already seen: dropped, so a command resent after a broker restart is
//!   applied once), `refused` (the run said no) or `rejected` (malformed or
//!   oversized: nothing else happens). The E-stop is never a duplicate: a
//!   repeated one stops the robot again.
//! - VDA 5050: an `order` becomes one [`Command::Chain`] of `navigate_to`
//!   calls, one per node, so the kernel's guardrails, approvals and ledger
//!   judge it like any task; an order that cannot be one, or that the
//!   kernel refuses or aborts, is an error in `state` (`validationError`,
//!   `orderError`, `orderUpdateError`). Instant actions map to pause,
//!   resume, stop and the E-stop; `factsheetRequest` publishes the factsheet.
//!   An `eStop` is never deduplicated — a repeat, even with the same
//!   `actionId`, is an E-stop again — and `eStopRelease` is the kernel's
//!   `reset_estop`: it releases the latch and never restarts a task (ISO
//!   13850: a reset is not a start).

use std::collections::{HashMap, HashSet, VecDeque};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::order::{Leg, Map, OrderRun, Refusal};
use super::topics::{Kind, Topics};
use super::vda5050::{
    self, Action, ActionState, ActionStatus, AgvPosition, BatteryState, Connection,
    ConnectionState, EdgeState, Header, Info, InstantActions, NodeState, Order, Reference,
    SafetyState, State, VdaError, Velocity, Visualization,
};
use crate::geometry::Point;
use crate::protocol::{
    Command, Event, EventKind, Hello, ServerMessage, Snapshot, TaskStatus, Verdict,
};
use crate::world::World;

/// The largest command a robot reads on its command topic, in bytes.
pub const MAX_COMMAND_BYTES: usize = crate::protocol::MAX_LINE_BYTES;
/// The largest `instantActions` message a robot reads, in bytes.
pub const MAX_INSTANT_ACTIONS_BYTES: usize = 64 * 1024;
/// The largest `order` a robot reads, in bytes.
pub const MAX_ORDER_BYTES: usize = 256 * 1024;
/// How many command ids a robot remembers to drop repeats.
const SEEN_IDS: usize = 4096;
/// How many errors `state` keeps, and how many finished or failed action
/// states (a new order clears those; running ones are always kept).
const KEPT: usize = 32;

/// MQTT's delivery guarantee for one publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Qos {
    /// At most once: the snapshot, events, and VDA 5050's `state`,
    /// `visualization` and `factsheet` (§6.2).
    AtMostOnce,
    /// At least once: hello, replies, and VDA 5050's `connection` (§6.2).
    AtLeastOnce,
}

/// One message to publish.
#[derive(Debug, Clone, PartialEq)]
pub struct Publish {
    /// Its topic.
    pub topic: String,
    /// Its bytes (JSON).
    pub payload: Vec<u8>,
    /// Kept by the broker for late subscribers.
    pub retain: bool,
    /// Delivery guarantee.
    pub qos: Qos,
}

/// What the bridge asks its IO to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Publish this.
    Publish(Publish),
    /// Give this command to the run, then tell the bridge the outcome with
    /// [`Bridge::outcome`] when `id` is set, or with [`Bridge::refused`]
    /// when it has none and the run said no.
    Command {
        /// The command's id, when it came with one (own protocol).
        id: Option<String>,
        /// The command.
        command: Command,
    },
}

/// A command on a robot's own command topic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// Unique per command: a repeat of an id is dropped.
    pub id: String,
    /// The command.
    pub command: Command,
}

pub use crate::protocol::fleet::{Reply, ReplyStatus};

/// What the bridge is told about the robot and its broker identity.
#[derive(Debug, Clone)]
pub struct Identity {
    /// The robot's topics (its id and manufacturer).
    pub topics: Topics,
    /// The world, for zones and the map id.
    pub world: World,
}

/// An order's part of `state`: its ids, the last node reached, and the
/// nodes and edges ahead (base and horizon; none once it is deleted).
fn progress(o: &OrderRun) -> (String, u64, (String, u64), Vec<NodeState>, Vec<EdgeState>) {
    let nodes = o.nodes_ahead().map(NodeState::from).collect();
    let edges = o.edges_ahead().map(EdgeState::from).collect();
    (
        o.order_id.clone(),
        o.update_id,
        o.last.clone(),
        nodes,
        edges,
    )
}

/// `state`'s one `information` entry: the run's mode, activity, task,
/// waiting approvals and open alerts.
fn information(s: &Snapshot) -> Vec<Info> {
    let active = s.tasks.first();
    let mut references = vec![
        Reference::new("mode", s.mode.as_str()),
        Reference::new("activity", s.activity.as_str()),
    ];
    if let Some(task) = active {
        references.push(Reference::new("task", task.title.clone()));
    }
    vec![Info {
        info_type: "robobrain".into(),
        info_description: format!(
            "mode {}, activity {}, {} approval(s) waiting, {} open alert(s)",
            s.mode.as_str(),
            s.activity.as_str(),
            s.approvals.len(),
            s.alerts.len()
        ),
        info_references: references,
        info_level: "INFO".into(),
    }]
}

/// One robot's fleet bridge (see the module doc).
#[derive(Debug)]
pub struct Bridge {
    topics: Topics,
    map: Map,
    headers: HashMap<Kind, u64>,
    seen: HashSet<String>,
    seen_order: VecDeque<String>,
    order: Option<OrderRun>,
    actions: VecDeque<ActionState>,
    errors: VecDeque<VdaError>,
    /// A task failed or was refused: why (for the order's error).
    refusals: HashMap<String, String>,
    snapshot: Snapshot,
    /// The `cancelOrder` still RUNNING: its action id.
    cancelling: Option<String>,
    /// The `lastNodeId` an `initPosition` gave (until the next order).
    init_node: Option<String>,
    /// What the last `state` said: driving, and where the order stood.
    reported: (bool, Option<(String, u64)>, Option<String>),
}

impl Bridge {
    /// A bridge for this robot.
    pub fn new(id: Identity) -> Self {
        Self {
            topics: id.topics,
            map: Map::new(id.world),
            headers: HashMap::new(),
            seen: HashSet::new(),
            seen_order: VecDeque::new(),
            order: None,
            actions: VecDeque::new(),
            errors: VecDeque::new(),
            refusals: HashMap::new(),
            snapshot: Snapshot::default(),
            cancelling: None,
            init_node: None,
            reported: (false, None, None),
        }
    }

    /// The robot's topics.
    pub fn topics(&self) -> &Topics {
        &self.topics
    }

    /// What to subscribe to: the robot's in-topics.
    pub fn subscriptions(&self) -> Vec<String> {
        [Kind::Command, Kind::Order, Kind::InstantActions]
            .into_iter()
            .map(|k| self.topics.of(k))
            .collect()
    }

    /// The last will: `connection` CONNECTIONBROKEN, retained.
    pub fn will(&mut self, wall_ms: u64) -> Publish {
        self.connection(ConnectionState::ConnectionBroken, wall_ms)
    }

    /// `connection` OFFLINE, retained: said before a clean disconnect.
    pub fn offline(&mut self, wall_ms: u64) -> Publish {
        self.connection(ConnectionState::Offline, wall_ms)
    }

    /// Connected (first time or again): `hello`, `connection` ONLINE, the
    /// snapshot and `state` — everything a console needs to resynchronise.
    pub fn connected(&mut self, hello: &Hello, snapshot: &Snapshot, wall_ms: u64) -> Vec<Publish> {
        let hello = ServerMessage::Hello(Box::new(hello.clone())).to_text();
        let mut out = vec![
            self.publish(Kind::Hello, hello.into_bytes(), true, Qos::AtLeastOnce),
            self.connection(ConnectionState::Online, wall_ms),
        ];
        out.extend(self.snapshot(snapshot, wall_ms));
        out
    }

    /// The periodic publishes for the newest snapshot: the snapshot
    /// (retained), `state` and `visualization`.
    pub fn snapshot(&mut self, snapshot: &Snapshot, wall_ms: u64) -> Vec<Publish> {
        self.take(snapshot);
        let own = serde_json::to_vec(snapshot).unwrap_or_default();
        vec![
            self.publish(Kind::Snapshot, own, true, Qos::AtMostOnce),
            self.state(wall_ms),
            self.visualization(wall_ms),
        ]
    }

    /// A snapshot between the periodic rounds: `state` and `visualization`
    /// at once when what `state` says has changed — the base started or
    /// stopped, a node was reached, a `cancelOrder` finished — and nothing
    /// otherwise (the next round carries the rest).
    pub fn snapshot_changed(&mut self, snapshot: &Snapshot, wall_ms: u64) -> Vec<Publish> {
        self.take(snapshot);
        if self.summary() == self.reported {
            return Vec::new();
        }
        vec![self.state(wall_ms), self.visualization(wall_ms)]
    }

    fn take(&mut self, snapshot: &Snapshot) {
        self.snapshot.clone_from(snapshot);
        self.follow_tasks();
        self.settle_cancel();
    }

    fn visualization(&mut self, wall_ms: u64) -> Publish {
        let vis = Visualization {
            header: self.header(Kind::Visualization, wall_ms),
            agv_position: self.position(),
            velocity: self.velocity(),
        };
        self.publish_json(Kind::Visualization, &vis, false, Qos::AtMostOnce)
    }

    /// What a `state` says that a master control waits on: driving, the
    /// last node reached, the `cancelOrder` still running.
    fn summary(&self) -> (bool, Option<(String, u64)>, Option<String>) {
        (
            self.driving(),
            self.order.as_ref().map(|o| o.last.clone()),
            self.cancelling.clone(),
        )
    }

    fn driving(&self) -> bool {
        let twist = self.snapshot.robot.twist;
        twist.linear.abs() > 1e-3 || twist.angular.abs() > 1e-3
    }

    /// Where the robot stands.
    fn at(&self) -> Point {
        Point::new(self.snapshot.robot.pose.x, self.snapshot.robot.pose.y)
    }

    /// An event of the run: published as is; an event about the order's
    /// task may change `state`, which is then published too, and may start
    /// the order's next leg.
    pub fn event(&mut self, event: &Event) -> Vec<Effect> {
        let text = ServerMessage::event(event.clone()).to_text();
        let mut out = vec![Effect::Publish(self.publish(
            Kind::Events,
            text.into_bytes(),
            false,
            Qos::AtMostOnce,
        ))];
        let (changed, next) = self.order_event(event);
        out.extend(next.map(|command| Effect::Command { id: None, command }));
        if changed {
            out.push(Effect::Publish(self.state(event.wall_ms)));
        }
        out
    }

    /// What the run said about a command with an id: the reply.
    pub fn outcome(&mut self, id: &str, result: Result<(), String>) -> Publish {
        let reply = match result {
            Ok(()) => Reply {
                id: Some(id.to_string()),
                status: ReplyStatus::Accepted,
                code: String::new(),
                message: String::new(),
                topic: String::new(),
            },
            Err(message) => Reply {
                id: Some(id.to_string()),
                status: ReplyStatus::Refused,
                code: "refused".into(),
                message,
                topic: String::new(),
            },
        };
        self.publish_json(Kind::Reply, &reply, false, Qos::AtLeastOnce)
    }

    /// The run refused `command`, which a VDA 5050 message or the order's
    /// progress asked for (its queue is full, it has stopped): an error in
    /// the next `state`; a leg of the order that cannot start ends the order.
    pub fn refused(&mut self, command: &Command, why: &str) {
        let refs = self
            .order
            .iter()
            .map(|o| Reference::new("orderId", o.order_id.clone()))
            .collect();
        if let (Command::Chain { .. }, Some(order)) = (command, self.order.as_mut()) {
            order.leg = None;
            order.end(TaskStatus::Aborted);
        }
        self.error("commandRefused", refs, format!("the run refused: {why}"));
    }

    /// The robot has been cut off from the broker for the configured time:
    /// pause the active task (docs/fleet.md, "Cut off"). Nothing when no
    /// task is running.
    pub fn cut_off(&self) -> Option<Command> {
        let running = self
            .snapshot
            .tasks
            .first()
            .is_some_and(|t| matches!(t.status, TaskStatus::Running | TaskStatus::Queued));
        (running && !self.snapshot.estop).then_some(Command::Pause)
    }

    /// A message on one of the robot's topics.
    pub fn message(&mut self, topic: &str, payload: &[u8], wall_ms: u64) -> Vec<Effect> {
        match self.topics.kind(topic) {
            Some(Kind::Command) => self.command(topic, payload),
            Some(Kind::InstantActions) => self.instant_actions(topic, payload, wall_ms),
            Some(Kind::Order) => self.order(topic, payload, wall_ms),
            _ => Vec::new(),
        }
    }

    fn command(&mut self, topic: &str, payload: &[u8]) -> Vec<Effect> {
        if payload.len() > MAX_COMMAND_BYTES {
            return vec![self.rejected(
                None,
                topic,
                "too_large",
                format!("{} bytes, the limit is {MAX_COMMAND_BYTES}", payload.len()),
            )];
        }
        let envelope: Envelope = match serde_json::from_slice(payload) {
            Ok(e) => e,
            Err(e) => {
                let id = serde_json::from_slice::<Value>(payload)
                    .ok()
                    .and_then(|v| v.get("id").and_then(Value::as_str).map(str::to_string));
                return vec![self.rejected(id, topic, "malformed", e.to_string())];
            }
        };
        let Envelope { id, command } = envelope;
        if id.is_empty() {
            return vec![self.rejected(None, topic, "malformed", "an empty `id`".into())];
        }
        if let Err(e) = command.check_limits() {
            return vec![self.rejected(Some(id), topic, e.code(), e.to_string())];
        }
        // An E-stop again is an E-stop again: stopping twice does no harm,
        // dropping one might.
        if command != Command::EStop && !self.first_time(&format!("cmd:{id}")) {
            let reply = Reply {
                id: Some(id),
                status: ReplyStatus::Duplicate,
                code: String::new(),
                message: "already applied".into(),
                topic: String::new(),
            };
            return vec![Effect::Publish(self.publish_json(
                Kind::Reply,
                &reply,
                false,
                Qos::AtLeastOnce,
            ))];
        }
        if matches!(command, Command::Shutdown) {
            return vec![Effect::Publish(
                self.outcome(&id, Err("`shutdown` is not taken over the fleet".into())),
            )];
        }
        vec![Effect::Command {
            id: Some(id),
            command,
        }]
    }

    fn instant_actions(&mut self, topic: &str, payload: &[u8], wall_ms: u64) -> Vec<Effect> {
        let message: InstantActions =
            match self.vda_message(topic, payload, MAX_INSTANT_ACTIONS_BYTES, wall_ms) {
                Ok(m) => m,
                Err(out) => return out,
            };
        let mut out = Vec::new();
        for action in message.actions {
            // An E-stop is never dropped as a repeat (see `command`).
            if action.action_type != "eStop"
                && !self.first_time(&format!("action:{}", action.action_id))
            {
                continue;
            }
            let (status, result, effect) = self.instant_action(&action, wall_ms);
            if let Some(effect) = effect {
                out.push(effect);
            }
            self.action_state(ActionState {
                action_id: action.action_id,
                action_type: Some(action.action_type),
                action_status: status,
                result_description: result,
            });
        }
        out.push(Effect::Publish(self.state(wall_ms)));
        out
    }

    /// One instant action: its status, a result in words, and what to do.
    fn instant_action(
        &mut self,
        action: &Action,
        wall_ms: u64,
    ) -> (ActionStatus, Option<String>, Option<Effect>) {
        let run = |command| Some(Effect::Command { id: None, command });
        match action.action_type.as_str() {
            "startPause" => (ActionStatus::Finished, None, run(Command::Pause)),
            "stopPause" if self.snapshot.estop => (
                ActionStatus::Failed,
                Some("the E-stop is latched: release it with eStopRelease".into()),
                None,
            ),
            "stopPause" => (ActionStatus::Finished, None, run(Command::Resume)),
            // A reset, not a start: the task the E-stop paused waits for a
            // `stopPause` (or an operator's resume).
            "eStopRelease" => (ActionStatus::Finished, None, run(Command::ResetEStop)),
            "cancelOrder" => self.cancel_order(&action.action_id),
            "eStop" => (ActionStatus::Finished, None, run(Command::EStop)),
            "factsheetRequest" => {
                let header = self.header(Kind::Factsheet, wall_ms);
                let sheet = vda5050::factsheet(&header, self.map.world().base.max_speed);
                let publish = self.publish_json(Kind::Factsheet, &sheet, true, Qos::AtMostOnce);
                (ActionStatus::Finished, None, Some(Effect::Publish(publish)))
            }
            // The state goes out after every instant actions message.
            "stateRequest" => (ActionStatus::Finished, None, None),
            "initPosition" => self.init_position(action),
            other => {
                self.error(
                    "validationError",
                    vec![Reference::new("actionType", other)],
                    format!(
                        "unsupported instant action `{other}`; supported: {}",
                        vda5050::INSTANT_ACTIONS.join(", ")
                    ),
                );
                (
                    ActionStatus::Failed,
                    Some(format!("unsupported action `{other}`")),
                    None,
                )
            }
        }
    }

    /// `cancelOrder` (§6.6.3): RUNNING until the base has stopped, then
    /// FINISHED; FAILED, with a `noOrderToCancel` warning, without an order.
    fn cancel_order(&mut self, action_id: &str) -> (ActionStatus, Option<String>, Option<Effect>) {
        let Some(order) = self.order.as_mut().filter(|o| o.busy()) else {
            self.error(
                "noOrderToCancel",
                vec![Reference::new("actionId", action_id)],
                "there is no order to cancel".into(),
            );
            return (
                ActionStatus::Failed,
                Some("no order to cancel".into()),
                None,
            );
        };
        // Only the order's own task is stopped, and only while it runs.
        let stop = order.leg.is_some().then_some(Effect::Command {
            id: None,
            command: Command::Stop,
        });
        order.end(TaskStatus::Cancelled);
        self.cancelling = Some(action_id.to_string());
        (ActionStatus::Running, None, stop)
    }

    /// The `cancelOrder` RUNNING is FINISHED once the order's task has
    /// ended and the base stands still.
    fn settle_cancel(&mut self) {
        let leg_gone = self.order.as_ref().is_none_or(|o| o.leg.is_none());
        if !leg_gone || self.driving() {
            return;
        }
        if let Some(action_id) = self.cancelling.take() {
            self.action_state(ActionState {
                action_id,
                action_type: Some("cancelOrder".into()),
                action_status: ActionStatus::Finished,
                result_description: Some("the base has stopped; the order is cancelled".into()),
            });
        }
    }

    /// `initPosition`: robobrain localises itself on its map and cannot be
    /// set elsewhere, so the pose given must be where it already is (within
    /// its deviation range); then `lastNodeId` is the node given. Else
    /// FAILED, saying why.
    fn init_position(&mut self, action: &Action) -> (ActionStatus, Option<String>, Option<Effect>) {
        let failed = |why: String| (ActionStatus::Failed, Some(why), None);
        let param = |key: &str| {
            action
                .action_parameters
                .iter()
                .flatten()
                .find(|p| p.key == key)
                .map(|p| &p.value)
        };
        let number = |key: &str| param(key).and_then(Value::as_f64);
        let (Some(x), Some(y), Some(theta)) = (number("x"), number("y"), number("theta")) else {
            return failed("initPosition needs x, y and theta (numbers)".into());
        };
        let (Some(map_id), Some(node)) = (
            param("mapId").and_then(Value::as_str),
            param("lastNodeId").and_then(Value::as_str),
        ) else {
            return failed("initPosition needs mapId and lastNodeId (strings)".into());
        };
        if !(-std::f64::consts::PI..=std::f64::consts::PI).contains(&theta) {
            return failed(format!("theta {theta} is not in [-π, π]"));
        }
        if self.order.as_ref().is_some_and(OrderRun::busy) {
            return failed("an order is running: cancel it first".into());
        }
        if map_id != self.map.world().name {
            return failed(format!(
                "map `{map_id}` is not this robot's map `{}`",
                self.map.world().name
            ));
        }
        let off = Point::new(x, y).distance(self.at());
        if off > super::order::VEHICLE_DEVIATION_M {
            return failed(format!(
                "the pose cannot be reset: robobrain localises itself on its map, and the pose                  given is {off:.2} m from where it is ({:.2}, {:.2})",
                self.snapshot.robot.pose.x, self.snapshot.robot.pose.y
            ));
        }
        self.init_node = Some(node.to_string());
        (ActionStatus::Finished, None, None)
    }

    fn order(&mut self, topic: &str, payload: &[u8], wall_ms: u64) -> Vec<Effect> {
        let order: Order = match self.vda_message(topic, payload, MAX_ORDER_BYTES, wall_ms) {
            Ok(m) => m,
            Err(out) => return out,
        };
        let mut out = Vec::new();
        match self.take_order(&order) {
            Ok(Some(leg)) => out.push(Effect::Command {
                id: None,
                command: Command::Chain {
                    call_id: leg.call_id,
                    calls: leg.calls,
                },
            }),
            Ok(None) => {}
            Err(Refusal {
                error_type,
                references,
                description,
            }) => {
                let mut refs = vec![
                    Reference::new("headerId", order.header.header_id.to_string()),
                    Reference::new("orderId", order.order_id.clone()),
                    Reference::new("orderUpdateId", order.order_update_id.to_string()),
                ];
                refs.extend(references);
                self.error(error_type, refs, description);
            }
        }
        out.push(Effect::Publish(self.state(wall_ms)));
        out
    }

    /// Takes `order` as new or as an update (VDA 5050 §6.6.2, Figure 8):
    /// the leg to start now, if any, or why it is refused.
    fn take_order(&mut self, order: &Order) -> Result<Option<Leg>, Refusal> {
        let at = self.at();
        let refuse = |error_type, why: String| {
            Err(Refusal {
                error_type,
                references: Vec::new(),
                description: why,
            })
        };
        match self.order.as_mut() {
            Some(current) if current.order_id == order.order_id => {
                if order.order_update_id == current.update_id {
                    // The same order again (a resend): nothing new.
                    return Ok(None);
                }
                if order.order_update_id < current.update_id {
                    return refuse(
                        "orderUpdateError",
                        format!(
                            "update {} is older than the current update {}",
                            order.order_update_id, current.update_id
                        ),
                    );
                }
                let start = current.update(&self.map, order, at)?;
                let leg = current.leg.clone().filter(|_| start);
                self.errors.clear();
                self.init_node = None;
                Ok(leg)
            }
            Some(current) if current.busy() || self.cancelling.is_some() => refuse(
                "orderError",
                format!(
                    "order `{}` is still running or waiting for an update: cancel it \
                     (cancelOrder) first",
                    current.order_id
                ),
            ),
            _ => {
                let run = OrderRun::start(&self.map, order, at)?;
                let leg = run.leg.clone();
                self.order = Some(run);
                self.errors.clear();
                self.init_node = None;
                // A new order (not an update) clears what has ended.
                self.actions.retain(|a| !a.action_status.is_terminal());
                Ok(leg)
            }
        }
    }

    /// Reads a VDA 5050 message addressed to this robot, or the effects of
    /// refusing it (a `validationError` in `state`, and a rejection reply).
    fn vda_message<T: serde::de::DeserializeOwned + Addressed>(
        &mut self,
        topic: &str,
        payload: &[u8],
        limit: usize,
        wall_ms: u64,
    ) -> Result<T, Vec<Effect>> {
        let why = if payload.len() > limit {
            Err((
                "too_large",
                format!("{} bytes, the limit is {limit}", payload.len()),
            ))
        } else {
            serde_json::from_slice::<T>(payload)
                .map_err(|e| ("malformed", e.to_string()))
                .and_then(|m| {
                    let h = m.header();
                    if h.serial_number != self.topics.robot
                        || h.manufacturer != self.topics.manufacturer
                    {
                        Err((
                            "not_addressed",
                            format!(
                                "addressed to {}/{}, this is {}/{}",
                                h.manufacturer,
                                h.serial_number,
                                self.topics.manufacturer,
                                self.topics.robot
                            ),
                        ))
                    } else {
                        Ok(m)
                    }
                })
        };
        why.map_err(|(code, message)| {
            self.error(
                "validationError",
                vec![Reference::new("topic", topic)],
                format!("{code}: {message}"),
            );
            vec![
                self.rejected(None, topic, code, message),
                Effect::Publish(self.state(wall_ms)),
            ]
        })
    }

    /// Follows the order's task through its events: whether `state`
    /// changed, and the next leg's chain when one is to start.
    fn order_event(&mut self, event: &Event) -> (bool, Option<Command>) {
        let Some(order) = self.order.as_mut() else {
            return (false, None);
        };
        let Some(leg) = order.leg.as_mut() else {
            return (false, None);
        };
        match &event.kind {
            EventKind::Task { task, reason } => {
                if leg.task_id.is_none() && *reason == format!("chain {}", leg.call_id) {
                    leg.task_id = Some(task.id.clone());
                }
                if leg.task_id.as_deref() != Some(task.id.as_str()) {
                    return (false, None);
                }
                order.reached(task.step);
                if !task.status.is_terminal() {
                    return (true, None);
                }
                if task.status == TaskStatus::Succeeded {
                    let next = order.leg_done().map(|l| Command::Chain {
                        call_id: l.call_id.clone(),
                        calls: l.calls.clone(),
                    });
                    return (true, next);
                }
                order.leg = None;
                if order.ended.is_some() {
                    // Cancelled already: its task's end is expected.
                    return (true, None);
                }
                order.end(task.status);
                let why = self
                    .refusals
                    .remove(&task.id)
                    .unwrap_or_else(|| reason.clone());
                if task.status != TaskStatus::Cancelled {
                    let refs = vec![
                        Reference::new("orderId", order.order_id.clone()),
                        Reference::new("taskId", task.id.clone()),
                    ];
                    let text = format!("order `{}` failed: {why}", order.order_id);
                    self.error("orderError", refs, text);
                }
                (true, None)
            }
            EventKind::Guardrail {
                task_id,
                verdict: Verdict::Rejected,
                reason,
                ..
            } if leg.task_id.as_deref() == Some(task_id.as_str()) => {
                self.refusals
                    .insert(task_id.clone(), format!("the kernel refused: {reason}"));
                (false, None)
            }
            _ => (false, None),
        }
    }

    /// Keeps the order's progress in step with the snapshot's task list.
    fn follow_tasks(&mut self) {
        let Some(order) = self.order.as_mut() else {
            return;
        };
        let Some(id) = order.leg.as_ref().and_then(|l| l.task_id.clone()) else {
            return;
        };
        if let Some(task) = self.snapshot.tasks.iter().find(|t| t.id == id) {
            order.reached(task.step);
        }
    }

    /// The VDA 5050 `state` from the newest snapshot and the order.
    pub fn state(&mut self, wall_ms: u64) -> Publish {
        self.settle_cancel();
        self.reported = self.summary();
        let header = self.header(Kind::State, wall_ms);
        let s = &self.snapshot;
        let (order_id, update_id, mut last, node_states, edge_states) =
            self.order.as_ref().map(progress).unwrap_or_default();
        if let Some(node) = &self.init_node {
            last = (node.clone(), 0);
        }
        let (last_node_id, last_node_sequence_id) = last;
        let active = s.tasks.first();
        let paused = active.is_some_and(|t| t.status == TaskStatus::Paused);
        let errors = self.state_errors();
        let information = information(s);
        let state = State {
            header,
            order_id,
            order_update_id: update_id,
            last_node_id,
            last_node_sequence_id,
            node_states,
            edge_states,
            driving: self.driving(),
            paused,
            new_base_request: false,
            operating_mode: if s.estop { "SERVICE" } else { "AUTOMATIC" }.into(),
            agv_position: self.position(),
            velocity: self.velocity(),
            loads: Vec::new(),
            action_states: self.actions.iter().cloned().collect(),
            battery_state: BatteryState {
                battery_charge: s.robot.battery_pct,
                charging: s.robot.charging,
            },
            errors,
            information,
            safety_state: SafetyState {
                e_stop: if s.estop { "REMOTE" } else { "NONE" }.into(),
                field_violation: false,
            },
        };
        self.publish_json(Kind::State, &state, false, Qos::AtMostOnce)
    }

    /// The errors `state` reports: those kept, and the robot link when it is down.
    fn state_errors(&self) -> Vec<VdaError> {
        let mut errors: Vec<VdaError> = self.errors.iter().cloned().collect();
        if !self.snapshot.link.is_up() {
            errors.push(VdaError {
                error_type: "robotLinkDown".into(),
                error_references: Vec::new(),
                error_description: "the brain does not hear the robot; the kernel is in SAFE"
                    .into(),
                error_level: "FATAL".into(),
            });
        }
        errors
    }

    fn position(&self) -> AgvPosition {
        let pose = self.snapshot.robot.pose;
        AgvPosition {
            x: pose.x,
            y: pose.y,
            theta: pose.theta,
            map_id: self.map.world().name.clone(),
            position_initialized: true,
        }
    }

    /// In the vehicle's frame (VDA 5050 §6.10.6): a differential drive
    /// moves along its heading only.
    fn velocity(&self) -> Velocity {
        let twist = self.snapshot.robot.twist;
        Velocity {
            vx: twist.linear,
            vy: 0.0,
            omega: twist.angular,
        }
    }

    fn connection(&mut self, state: ConnectionState, wall_ms: u64) -> Publish {
        let message = Connection {
            header: self.header(Kind::Connection, wall_ms),
            connection_state: state,
        };
        self.publish_json(Kind::Connection, &message, true, Qos::AtLeastOnce)
    }

    fn header(&mut self, kind: Kind, wall_ms: u64) -> Header {
        let id = self.headers.entry(kind).or_insert(0);
        let header_id = *id;
        *id += 1;
        Header {
            header_id,
            timestamp: vda5050::timestamp(wall_ms),
            version: vda5050::VERSION.into(),
            manufacturer: self.topics.manufacturer.clone(),
            serial_number: self.topics.robot.clone(),
        }
    }

    fn first_time(&mut self, key: &str) -> bool {
        if self.seen.contains(key) {
            return false;
        }
        self.seen.insert(key.to_string());
        self.seen_order.push_back(key.to_string());
        if self.seen_order.len() > SEEN_IDS
            && let Some(old) = self.seen_order.pop_front()
        {
            self.seen.remove(&old);
        }
        true
    }

    fn action_state(&mut self, state: ActionState) {
        // One state per action id: a repeated eStop's is its newest.
        self.actions.retain(|a| a.action_id != state.action_id);
        self.actions.push_back(state);
        // Past the limit, the oldest ended one goes; running ones stay.
        while self.actions.len() > KEPT {
            let Some(i) = self
                .actions
                .iter()
                .position(|a| a.action_status.is_terminal())
            else {
                break;
            };
            self.actions.remove(i);
        }
    }

    fn error(&mut self, error_type: &str, references: Vec<Reference>, description: String) {
        self.errors.push_back(VdaError {
            error_type: error_type.into(),
            error_references: references,
            error_description: description,
            error_level: "WARNING".into(),
        });
        while self.errors.len() > KEPT {
            self.errors.pop_front();
        }
    }

    fn rejected(&mut self, id: Option<String>, topic: &str, code: &str, message: String) -> Effect {
        let reply = Reply {
            id,
            status: ReplyStatus::Rejected,
            code: code.into(),
            message,
            topic: topic.into(),
        };
        Effect::Publish(self.publish_json(Kind::Reply, &reply, false, Qos::AtLeastOnce))
    }

    fn publish(&self, kind: Kind, payload: Vec<u8>, retain: bool, qos: Qos) -> Publish {
        Publish {
            topic: self.topics.of(kind),
            payload,
            retain,
            qos,
        }
    }

    fn publish_json(&self, kind: Kind, value: &impl Serialize, retain: bool, qos: Qos) -> Publish {
        self.publish(
            kind,
            serde_json::to_vec(value).unwrap_or_default(),
            retain,
            qos,
        )
    }
}

/// A VDA 5050 message with a header.
trait Addressed {
    fn header(&self) -> &Header;
}

impl Addressed for Order {
    fn header(&self) -> &Header {
        &self.header
    }
}

impl Addressed for InstantActions {
    fn header(&self) -> &Header {
        &self.header
    }
}

#[cfg(test)]
#[path = "bridge_tests.rs"]
mod tests;
