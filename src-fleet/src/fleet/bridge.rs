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
use serde_json::{Value, json};

use super::topics::{Kind, Topics};
use super::vda5050::{
    self, Action, ActionState, ActionStatus, AgvPosition, BatteryState, Connection,
    ConnectionState, EdgeState, Header, Info, InstantActions, NodeState, Order, Reference,
    SafetyState, State, VdaError, Velocity, Visualization,
};
use crate::protocol::{
    Command, Event, EventKind, Hello, ServerMessage, SkillCall, Snapshot, TaskStatus, Verdict,
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
/// How many action states and errors `state` keeps.
const KEPT: usize = 32;

/// MQTT's delivery guarantee for one publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Qos {
    /// At most once: the snapshot, events, visualization.
    AtMostOnce,
    /// At least once: hello, replies, state, connection, factsheet.
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
    /// [`Bridge::outcome`] when `id` is set.
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

/// An order being carried out, or the last one.
#[derive(Debug, Clone, PartialEq)]
struct OrderRun {
    order_id: String,
    update_id: u64,
    nodes: Vec<vda5050::Node>,
    edges: Vec<vda5050::Edge>,
    call_id: String,
    task_id: Option<String>,
    /// Nodes reached so far (the task's plan step).
    reached: usize,
    ended: Option<TaskStatus>,
}

/// An order's part of `state`: its ids, the last node reached, and the
/// nodes and edges still ahead (none once it has ended).
#[derive(Debug, Default)]
struct OrderProgress {
    order_id: String,
    update_id: u64,
    last_node: Option<(String, u64)>,
    node_states: Vec<NodeState>,
    edge_states: Vec<EdgeState>,
}

impl OrderRun {
    fn active(&self) -> bool {
        self.ended.is_none()
    }

    /// Where the order stands, for `state`: the nodes reached are left out.
    fn progress(&self) -> OrderProgress {
        let released: Vec<&vda5050::Node> = self.nodes.iter().filter(|n| n.released).collect();
        let done = self.reached.min(released.len());
        let last = done.checked_sub(1).and_then(|i| released.get(i));
        let last_seq = last.map_or(0, |n| n.sequence_id);
        let nodes = self
            .nodes
            .iter()
            .filter(|n| !(n.released && n.sequence_id <= last_seq && last.is_some()))
            .filter(|_| self.active())
            .map(|n| NodeState {
                node_id: n.node_id.clone(),
                sequence_id: n.sequence_id,
                released: n.released,
                node_position: n.node_position.clone(),
            })
            .collect();
        let edges = self
            .edges
            .iter()
            .filter(|e| e.sequence_id > last_seq && self.active())
            .map(|e| EdgeState {
                edge_id: e.edge_id.clone(),
                sequence_id: e.sequence_id,
                released: e.released,
            })
            .collect();
        OrderProgress {
            order_id: self.order_id.clone(),
            update_id: self.update_id,
            last_node: last.map(|n| (n.node_id.clone(), n.sequence_id)),
            node_states: nodes,
            edge_states: edges,
        }
    }
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
    id: Identity,
    headers: HashMap<Kind, u64>,
    seen: HashSet<String>,
    seen_order: VecDeque<String>,
    order: Option<OrderRun>,
    actions: VecDeque<ActionState>,
    errors: VecDeque<VdaError>,
    /// A task failed or was refused: why (for the order's error).
    refusals: HashMap<String, String>,
    snapshot: Snapshot,
}

impl Bridge {
    /// A bridge for this robot.
    pub fn new(id: Identity) -> Self {
        Self {
            id,
            headers: HashMap::new(),
            seen: HashSet::new(),
            seen_order: VecDeque::new(),
            order: None,
            actions: VecDeque::new(),
            errors: VecDeque::new(),
            refusals: HashMap::new(),
            snapshot: Snapshot::default(),
        }
    }

    /// The robot's topics.
    pub fn topics(&self) -> &Topics {
        &self.id.topics
    }

    /// What to subscribe to: the robot's in-topics.
    pub fn subscriptions(&self) -> Vec<String> {
        [Kind::Command, Kind::Order, Kind::InstantActions]
            .into_iter()
            .map(|k| self.id.topics.of(k))
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
        self.snapshot.clone_from(snapshot);
        self.follow_tasks();
        let own = serde_json::to_vec(snapshot).unwrap_or_default();
        let vis = Visualization {
            header: self.header(Kind::Visualization, wall_ms),
            agv_position: self.position(),
            velocity: self.velocity(),
        };
        vec![
            self.publish(Kind::Snapshot, own, true, Qos::AtMostOnce),
            self.state(wall_ms),
            self.publish_json(Kind::Visualization, &vis, false, Qos::AtMostOnce),
        ]
    }

    /// An event of the run: published as is; an event about the order's
    /// task may change `state`, which is then published too.
    pub fn event(&mut self, event: &Event) -> Vec<Publish> {
        let text = ServerMessage::event(event.clone()).to_text();
        let mut out = vec![self.publish(Kind::Events, text.into_bytes(), false, Qos::AtMostOnce)];
        if self.order_event(event) {
            out.push(self.state(event.wall_ms));
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

    /// The run refused a command a VDA 5050 message asked for (its queue is
    /// full, it has stopped): an error in the next `state`.
    pub fn refused(&mut self, why: &str) {
        let refs = self
            .order
            .iter()
            .map(|o| Reference::new("orderId", o.order_id.clone()))
            .collect();
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
        match self.id.topics.kind(topic) {
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
            "cancelOrder" => match &self.order {
                Some(o) if o.active() => (ActionStatus::Finished, None, run(Command::Stop)),
                _ => {
                    self.error(
                        "noOrderToCancel",
                        vec![Reference::new("actionId", action.action_id.clone())],
                        "there is no order to cancel".into(),
                    );
                    (
                        ActionStatus::Failed,
                        Some("no order to cancel".into()),
                        None,
                    )
                }
            },
            "eStop" => (ActionStatus::Finished, None, run(Command::EStop)),
            "factsheetRequest" => {
                let header = self.header(Kind::Factsheet, wall_ms);
                let sheet = vda5050::factsheet(&header, self.id.world.base.max_speed);
                let publish = self.publish_json(Kind::Factsheet, &sheet, true, Qos::AtLeastOnce);
                (ActionStatus::Finished, None, Some(Effect::Publish(publish)))
            }
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

    fn order(&mut self, topic: &str, payload: &[u8], wall_ms: u64) -> Vec<Effect> {
        let order: Order = match self.vda_message(topic, payload, MAX_ORDER_BYTES, wall_ms) {
            Ok(m) => m,
            Err(out) => return out,
        };
        let refs = |o: &Order| {
            vec![
                Reference::new("headerId", o.header.header_id.to_string()),
                Reference::new("orderId", o.order_id.clone()),
                Reference::new("orderUpdateId", o.order_update_id.to_string()),
            ]
        };
        if let Some(current) = &self.order {
            if current.order_id == order.order_id {
                if order.order_update_id == current.update_id {
                    // The same order again (a resend): nothing new.
                    return vec![Effect::Publish(self.state(wall_ms))];
                }
                if order.order_update_id < current.update_id {
                    self.error(
                        "orderUpdateError",
                        refs(&order),
                        format!(
                            "update {} is older than the current update {}",
                            order.order_update_id, current.update_id
                        ),
                    );
                    return vec![Effect::Publish(self.state(wall_ms))];
                }
            }
            if current.active() {
                self.error(
                    "orderError",
                    refs(&order),
                    format!(
                        "order `{}` is still running: cancel it (cancelOrder) first; \
                         robobrain takes whole orders, not extensions",
                        current.order_id
                    ),
                );
                return vec![Effect::Publish(self.state(wall_ms))];
            }
        }
        let calls = match self.calls(&order) {
            Ok(calls) => calls,
            Err(why) => {
                self.error("validationError", refs(&order), why);
                return vec![Effect::Publish(self.state(wall_ms))];
            }
        };
        let mut nodes = order.nodes.clone();
        nodes.sort_by_key(|n| n.sequence_id);
        let mut edges = order.edges.clone();
        edges.sort_by_key(|e| e.sequence_id);
        let call_id = format!("vda-{}-{}", order.order_id, order.order_update_id);
        self.errors.clear();
        self.order = Some(OrderRun {
            order_id: order.order_id,
            update_id: order.order_update_id,
            nodes,
            edges,
            call_id: call_id.clone(),
            task_id: None,
            reached: 0,
            ended: None,
        });
        vec![
            Effect::Command {
                id: None,
                command: Command::Chain { call_id, calls },
            },
            Effect::Publish(self.state(wall_ms)),
        ]
    }

    /// The order's released nodes as `navigate_to` calls: a node whose id
    /// is a zone goes to that zone, else to its position on this map.
    fn calls(&self, order: &Order) -> Result<Vec<SkillCall>, String> {
        let mut nodes: Vec<&vda5050::Node> = order.nodes.iter().filter(|n| n.released).collect();
        nodes.sort_by_key(|n| n.sequence_id);
        if nodes.is_empty() {
            return Err("the order has no released node".into());
        }
        nodes
            .into_iter()
            .map(|node| {
                if let Some(zone) = self.id.world.zone(&node.node_id) {
                    return Ok(SkillCall {
                        skill: "navigate_to".into(),
                        args: json!({"zone": zone.name}),
                    });
                }
                let Some(p) = &node.node_position else {
                    return Err(format!(
                        "node `{}` is not a zone and has no nodePosition",
                        node.node_id
                    ));
                };
                if p.map_id != self.id.world.name {
                    return Err(format!(
                        "node `{}` is on map `{}`; this robot is on `{}`",
                        node.node_id, p.map_id, self.id.world.name
                    ));
                }
                Ok(SkillCall {
                    skill: "navigate_to".into(),
                    args: json!({"x": p.x, "y": p.y}),
                })
            })
            .collect()
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
                    if h.serial_number != self.id.topics.robot
                        || h.manufacturer != self.id.topics.manufacturer
                    {
                        Err((
                            "not_addressed",
                            format!(
                                "addressed to {}/{}, this is {}/{}",
                                h.manufacturer,
                                h.serial_number,
                                self.id.topics.manufacturer,
                                self.id.topics.robot
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

    /// Follows the order's task through its events; whether `state` changed.
    fn order_event(&mut self, event: &Event) -> bool {
        let Some(order) = self.order.as_mut() else {
            return false;
        };
        match &event.kind {
            EventKind::Task { task, reason } => {
                if order.task_id.is_none() && *reason == format!("chain {}", order.call_id) {
                    order.task_id = Some(task.id.clone());
                }
                if order.task_id.as_deref() != Some(task.id.as_str()) {
                    return false;
                }
                order.reached = order.reached.max(task.step);
                if task.status.is_terminal() && order.ended.is_none() {
                    order.ended = Some(task.status);
                    if task.status == TaskStatus::Succeeded {
                        order.reached = order.nodes.iter().filter(|n| n.released).count();
                    } else {
                        let why = self
                            .refusals
                            .remove(&task.id)
                            .unwrap_or_else(|| reason.clone());
                        let refs = vec![
                            Reference::new("orderId", order.order_id.clone()),
                            Reference::new("taskId", task.id.clone()),
                        ];
                        let what = match task.status {
                            TaskStatus::Cancelled => "cancelled",
                            _ => "failed",
                        };
                        let text = format!("order `{}` {what}: {why}", order.order_id);
                        if task.status != TaskStatus::Cancelled {
                            self.error("orderError", refs, text);
                        }
                    }
                }
                true
            }
            EventKind::Guardrail {
                task_id,
                verdict: Verdict::Rejected,
                reason,
                ..
            } if order.task_id.as_deref() == Some(task_id.as_str()) => {
                self.refusals
                    .insert(task_id.clone(), format!("the kernel refused: {reason}"));
                false
            }
            EventKind::Error { code, message }
                if code == "empty_chain" && message.contains(&order.call_id) =>
            {
                order.ended = Some(TaskStatus::Aborted);
                let refs = vec![Reference::new("orderId", order.order_id.clone())];
                self.error("orderError", refs, message.clone());
                true
            }
            _ => false,
        }
    }

    /// Keeps the order's progress in step with the snapshot's task list.
    fn follow_tasks(&mut self) {
        let Some(order) = self.order.as_mut() else {
            return;
        };
        let Some(id) = &order.task_id else {
            return;
        };
        if let Some(task) = self.snapshot.tasks.iter().find(|t| &t.id == id) {
            order.reached = order.reached.max(task.step);
        }
    }

    /// The VDA 5050 `state` from the newest snapshot and the order.
    pub fn state(&mut self, wall_ms: u64) -> Publish {
        let header = self.header(Kind::State, wall_ms);
        let s = &self.snapshot;
        let OrderProgress {
            order_id,
            update_id,
            last_node,
            node_states,
            edge_states,
        } = self
            .order
            .as_ref()
            .map(OrderRun::progress)
            .unwrap_or_default();
        let (last_node_id, last_node_sequence_id) = last_node.unwrap_or_default();
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
            driving: s.robot.twist.linear.abs() > 1e-3 || s.robot.twist.angular.abs() > 1e-3,
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
        self.publish_json(Kind::State, &state, false, Qos::AtLeastOnce)
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
            map_id: self.id.world.name.clone(),
            position_initialized: true,
        }
    }

    fn velocity(&self) -> Velocity {
        let (twist, theta) = (self.snapshot.robot.twist, self.snapshot.robot.pose.theta);
        Velocity {
            vx: twist.linear * theta.cos(),
            vy: twist.linear * theta.sin(),
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
            manufacturer: self.id.topics.manufacturer.clone(),
            serial_number: self.id.topics.robot.clone(),
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
        while self.actions.len() > KEPT {
            self.actions.pop_front();
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
            topic: self.id.topics.of(kind),
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
