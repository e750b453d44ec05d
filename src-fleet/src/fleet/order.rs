//! What an `order` must be before anything drives, and where one stands
//! while it runs — plain logic, no IO: [`super::bridge`] feeds it the
//! order, the robot's pose and the task's events.
//!
//! The checks are VDA 5050 v2.1's (§6.6): a `validationError` for an order
//! that breaks the standard's rules (at least one node, edges = nodes − 1
//! joining the nodes in turn, even node and odd edge `sequenceId`s counting
//! up by one, the base released before the horizon, angles in [-π, π]); an
//! `orderError` for one this robot cannot carry out (a `trajectory` or
//! `corridor`, node or edge actions: §6.6.4.2, the wrong fields as
//! references); a `noRouteError` for a node off the map, in a wall, or not
//! reachable from where the robot stands — all before a wheel turns. A new
//! order's first node must be where the robot is (within its deviation
//! range, §6.6.1), an update's first node the current base's last (§6.6.2,
//! stitching).
//!
//! While it runs, an order is driven in legs: each leg is one
//! [`crate::protocol::Command::Chain`] of `navigate_to` calls through the
//! base nodes not yet driven, so the kernel judges it like any task. An
//! update that extends the base while a leg runs waits, as the next leg,
//! until that leg has ended.

use serde_json::json;

use super::vda5050::{Action, Edge, Node, Order, Reference};
use crate::geometry::Point;
use crate::protocol::{SkillCall, TaskStatus};
use crate::world::World;
use crate::world::grid::Grid;

/// How close to a node counts as standing on it when the order gives no
/// larger `allowedDeviationXY`, in metres (a robobrain base stops within
/// this of its goal).
pub const VEHICLE_DEVIATION_M: f64 = 0.5;

/// Why an order was not taken: the `errorType`, its references and words.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// `validationError`, `orderError`, `noRouteError` or `orderUpdateError`.
    pub error_type: &'static str,
    /// What it is about (`nodeId`, `edgeId`, `actionId`, …).
    pub references: Vec<Reference>,
    /// In words.
    pub description: String,
}

impl Refusal {
    fn new(error_type: &'static str, references: Vec<Reference>, description: String) -> Self {
        Self {
            error_type,
            references,
            description,
        }
    }
}

fn node_ref(n: &Node) -> Vec<Reference> {
    vec![
        Reference::new("nodeId", n.node_id.clone()),
        Reference::new("sequenceId", n.sequence_id.to_string()),
    ]
}

fn edge_ref(e: &Edge) -> Vec<Reference> {
    vec![
        Reference::new("edgeId", e.edge_id.clone()),
        Reference::new("sequenceId", e.sequence_id.to_string()),
    ]
}

fn in_range(angle: Option<f64>) -> bool {
    angle.is_none_or(|a| (-std::f64::consts::PI..=std::f64::consts::PI).contains(&a))
}

/// The standard's own rules (§6.6.1): `validationError` when broken.
pub fn check_shape(order: &Order) -> Result<(), Refusal> {
    let invalid = |refs, why: String| Err(Refusal::new("validationError", refs, why));
    let (nodes, edges) = (&order.nodes, &order.edges);
    let Some(first) = nodes.first() else {
        return invalid(Vec::new(), "an order needs at least one node".into());
    };
    if edges.len() + 1 != nodes.len() {
        return invalid(
            Vec::new(),
            format!(
                "{} nodes need {} edges, the order has {}",
                nodes.len(),
                nodes.len() - 1,
                edges.len()
            ),
        );
    }
    if first.sequence_id % 2 != 0 || !first.released {
        return invalid(
            node_ref(first),
            "the first node must be released and have an even sequenceId".into(),
        );
    }
    for (i, n) in nodes.iter().enumerate() {
        let want = first.sequence_id + 2 * i as u64;
        if n.sequence_id != want {
            return invalid(
                node_ref(n),
                format!(
                    "node `{}` has sequenceId {}, expected {want}",
                    n.node_id, n.sequence_id
                ),
            );
        }
        let position = n.node_position.as_ref();
        if !in_range(position.and_then(|p| p.theta))
            || !in_range(position.and_then(|p| p.allowed_deviation_theta))
        {
            return invalid(
                node_ref(n),
                format!("node `{}`: theta must be in [-π, π]", n.node_id),
            );
        }
        if position
            .and_then(|p| p.allowed_deviation_x_y)
            .is_some_and(|d| d < 0.0)
        {
            return invalid(
                node_ref(n),
                format!(
                    "node `{}`: allowedDeviationXY must not be negative",
                    n.node_id
                ),
            );
        }
    }
    for (i, e) in edges.iter().enumerate() {
        check_edge(e, &nodes[i], &nodes[i + 1])?;
    }
    check_released(order)
}

/// One edge between `start` and `end`: its place, its ends, its angle.
fn check_edge(e: &Edge, start: &Node, end: &Node) -> Result<(), Refusal> {
    let invalid = |why: String| Err(Refusal::new("validationError", edge_ref(e), why));
    if e.sequence_id != start.sequence_id + 1 {
        return invalid(format!(
            "edge `{}` has sequenceId {}, expected {}",
            e.edge_id,
            e.sequence_id,
            start.sequence_id + 1
        ));
    }
    if e.start_node_id != start.node_id || e.end_node_id != end.node_id {
        return invalid(format!(
            "edge `{}` joins `{}` to `{}`; in this place it must join `{}` to `{}`",
            e.edge_id, e.start_node_id, e.end_node_id, start.node_id, end.node_id
        ));
    }
    if !in_range(e.orientation) {
        return invalid(format!(
            "edge `{}`: orientation must be in [-π, π]",
            e.edge_id
        ));
    }
    if e.released && !(start.released && end.released) {
        return invalid(format!(
            "edge `{}` is released but a node it joins is not",
            e.edge_id
        ));
    }
    Ok(())
}

/// The base first, then the horizon: nothing released after the first
/// element (node or edge, in `sequenceId` order) that is not.
fn check_released(order: &Order) -> Result<(), Refusal> {
    let mut items: Vec<(u64, bool, Vec<Reference>)> = order
        .nodes
        .iter()
        .map(|n| (n.sequence_id, n.released, node_ref(n)))
        .chain(
            order
                .edges
                .iter()
                .map(|e| (e.sequence_id, e.released, edge_ref(e))),
        )
        .collect();
    items.sort_by_key(|(seq, ..)| *seq);
    let mut horizon = false;
    for (_, released, refs) in items {
        if released && horizon {
            return Err(Refusal::new(
                "validationError",
                refs,
                "a released node or edge after an unreleased one: the base must come before the \
                 horizon"
                    .into(),
            ));
        }
        horizon |= !released;
    }
    Ok(())
}

/// What this robot cannot use (§6.6.4.2): `orderError`, the fields named.
/// robobrain plans its own path, so an edge's `trajectory` or `corridor`
/// is refused; it has no skill a node or edge action could run, so every
/// such action is refused too — never silently ignored.
pub fn check_usable(order: &Order) -> Result<(), Refusal> {
    let refuse = |mut refs: Vec<Reference>, what: &str, a: Option<&Action>| {
        if let Some(a) = a {
            refs.push(Reference::new("actionId", a.action_id.clone()));
            refs.push(Reference::new("actionType", a.action_type.clone()));
        }
        Err(Refusal::new("orderError", refs, what.to_string()))
    };
    let nodes = order
        .nodes
        .iter()
        .map(|n| ("node", &n.node_id, node_ref(n), &n.actions));
    let edges = order
        .edges
        .iter()
        .map(|e| ("edge", &e.edge_id, edge_ref(e), &e.actions));
    for (kind, id, refs, actions) in nodes.chain(edges) {
        if let Some(a) = actions.first() {
            let what = format!(
                "{kind} `{id}`: action `{}` is not supported (robobrain carries out no {kind} \
                 actions)",
                a.action_type
            );
            return refuse(refs, &what, Some(a));
        }
    }
    for e in &order.edges {
        for (field, given) in [
            ("trajectory", e.trajectory.is_some()),
            ("corridor", e.corridor.is_some()),
        ] {
            if given {
                let mut refs = edge_ref(e);
                refs.push(Reference::new("field", field));
                let what = format!(
                    "edge `{}`: `{field}` is not supported (robobrain plans its own path)",
                    e.edge_id
                );
                return refuse(refs, &what, None);
            }
        }
    }
    Ok(())
}

/// The robot's map, for where nodes are and whether it can get there.
#[derive(Debug, Clone)]
pub struct Map {
    world: World,
    grid: Grid,
}

impl Map {
    /// The map of `world` (its walls; passages open).
    pub fn new(world: World) -> Self {
        let grid = Grid::new(&world);
        Self { world, grid }
    }

    /// The world.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// Where `node` is: its position on this map when it has one, else
    /// its zone's goal when its id is a zone. A `noRouteError` when it is
    /// neither, on another map, off this one or inside a wall.
    pub fn place(&self, node: &Node) -> Result<Point, Refusal> {
        let no_route = |why: String| Err(Refusal::new("noRouteError", node_ref(node), why));
        let Some(p) = &node.node_position else {
            if let Some(zone) = self.world.zone(&node.node_id) {
                return Ok(zone.goal);
            }
            return no_route(format!(
                "node `{}` is not a zone of `{}` and has no nodePosition",
                node.node_id, self.world.name
            ));
        };
        if p.map_id != self.world.name {
            return no_route(format!(
                "node `{}` is on map `{}`; this robot is on `{}`",
                node.node_id, p.map_id, self.world.name
            ));
        }
        let point = Point::new(p.x, p.y);
        if self.world.cell_of(point).is_none() {
            return no_route(format!(
                "node `{}` at ({}, {}) is off the map `{}` ({:.2} × {:.2} m)",
                node.node_id,
                p.x,
                p.y,
                self.world.name,
                self.world.width_m(),
                self.world.height_m()
            ));
        }
        if !self.world.is_free(point) {
            return no_route(format!(
                "node `{}` at ({}, {}) is inside a wall",
                node.node_id, p.x, p.y
            ));
        }
        Ok(point)
    }

    /// Every node's place, each reachable from `from` (a `noRouteError`
    /// naming the first that is not).
    pub fn route(&self, nodes: &[Node], from: Point) -> Result<Vec<Point>, Refusal> {
        let reachable = self
            .grid
            .index_of(from)
            .map(|start| self.grid.reachable_from(start));
        nodes
            .iter()
            .map(|node| {
                let p = self.place(node)?;
                let ok = match (&reachable, self.grid.index_of(p)) {
                    (Some(r), Some(i)) => r.get(i).copied().unwrap_or(false),
                    _ => false,
                };
                if ok {
                    Ok(p)
                } else {
                    Err(Refusal::new(
                        "noRouteError",
                        node_ref(node),
                        format!(
                            "node `{}` cannot be reached from where the robot stands ({:.2}, {:.2})",
                            node.node_id, from.x, from.y
                        ),
                    ))
                }
            })
            .collect()
    }

    /// Whether a robot at `at` stands on `node` (its first node): within
    /// the node's `allowedDeviationXY` (at least [`VEHICLE_DEVIATION_M`]) of
    /// its place, or, for a zone, inside it.
    pub fn stands_on(&self, node: &Node, at: Point) -> Result<(), Refusal> {
        if let Some(zone) = self.world.zone(&node.node_id)
            && node.node_position.is_none()
            && zone.rect.contains(at)
        {
            return Ok(());
        }
        let place = self.place(node)?;
        let range = node
            .node_position
            .as_ref()
            .and_then(|p| p.allowed_deviation_x_y)
            .unwrap_or(0.0)
            .max(VEHICLE_DEVIATION_M);
        let off = place.distance(at);
        if off <= range {
            return Ok(());
        }
        Err(Refusal::new(
            "noRouteError",
            node_ref(node),
            format!(
                "the first node `{}` is {off:.2} m from the robot, beyond its deviation range of \
                 {range:.2} m: an order starts where the robot stands",
                node.node_id
            ),
        ))
    }
}

/// The call that drives to `node` at `place`.
fn navigate(map: &Map, node: &Node, place: Point) -> SkillCall {
    let args = if node.node_position.is_none() && map.world.zone(&node.node_id).is_some() {
        json!({"zone": node.node_id})
    } else {
        json!({"x": place.x, "y": place.y})
    };
    SkillCall {
        skill: "navigate_to".into(),
        args,
    }
}

/// One leg: a chain of navigations through base nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct Leg {
    /// The chain's id (`vda-ORDER-UPDATE`).
    pub call_id: String,
    /// Its task, once the kernel has queued it.
    pub task_id: Option<String>,
    /// The nodes it drives to (`nodeId`, `sequenceId`), in order.
    pub targets: Vec<(String, u64)>,
    /// The calls.
    pub calls: Vec<SkillCall>,
    /// How many targets are reached.
    pub reached: usize,
}

/// An order being carried out, or the last one.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderRun {
    /// Its id.
    pub order_id: String,
    /// Its update.
    pub update_id: u64,
    /// Every node, base and horizon, in `sequenceId` order.
    pub nodes: Vec<Node>,
    /// Every edge.
    pub edges: Vec<Edge>,
    /// The last node reached (`nodeId`, `sequenceId`).
    pub last: (String, u64),
    /// The leg being driven (or, cancelled, still stopping).
    pub leg: Option<Leg>,
    /// The leg to drive once this one has ended (an update's extension).
    pub next: Option<Leg>,
    /// Failed or cancelled: the order is deleted (`nodeStates` empty).
    pub ended: Option<TaskStatus>,
}

/// The leg through `nodes` (base nodes after the last reached), if any.
fn leg(map: &Map, call_id: String, nodes: &[Node], places: &[Point]) -> Option<Leg> {
    let targets: Vec<(String, u64)> = nodes
        .iter()
        .map(|n| (n.node_id.clone(), n.sequence_id))
        .collect();
    let calls = nodes
        .iter()
        .zip(places)
        .map(|(n, p)| navigate(map, n, *p))
        .collect();
    (!targets.is_empty()).then_some(Leg {
        call_id,
        task_id: None,
        targets,
        calls,
        reached: 0,
    })
}

impl OrderRun {
    /// A new order for a robot at `at`: checked, its first node taken as
    /// reached, the leg through the rest of its base.
    pub fn start(map: &Map, order: &Order, at: Point) -> Result<Self, Refusal> {
        check_shape(order)?;
        check_usable(order)?;
        let places = map.route(&order.nodes, at)?;
        let first = &order.nodes[0];
        map.stands_on(first, at)?;
        let base = base_after(&order.nodes, first.sequence_id);
        let base_places = &places[1..=base.len()];
        Ok(Self {
            order_id: order.order_id.clone(),
            update_id: order.order_update_id,
            nodes: order.nodes.clone(),
            edges: order.edges.clone(),
            last: (first.node_id.clone(), first.sequence_id),
            leg: leg(map, call_id(order), &base, base_places),
            next: None,
            ended: None,
        })
    }

    /// The node an update must start from: the current base's last node
    /// (once it is reached, the last node reached) — `nodeId` and
    /// `sequenceId`.
    fn stitch(&self) -> (String, u64) {
        if self.ended.is_some() {
            return self.last.clone();
        }
        self.nodes
            .iter()
            .rfind(|n| n.released)
            .map_or_else(|| self.last.clone(), |n| (n.node_id.clone(), n.sequence_id))
    }

    /// An update of this order (same id, a higher update id) for a robot at
    /// `at`: checked, stitched onto the base, its new base nodes a leg of
    /// their own — driven now, or after the running leg. Whether a leg is
    /// to start now.
    pub fn update(&mut self, map: &Map, order: &Order, at: Point) -> Result<bool, Refusal> {
        check_shape(order)?;
        check_usable(order)?;
        let (stitch_id, stitch_seq) = self.stitch();
        let first = &order.nodes[0];
        if first.node_id != stitch_id || first.sequence_id != stitch_seq {
            return Err(Refusal::new(
                "orderUpdateError",
                node_ref(first),
                format!(
                    "update {} starts at node `{}` (sequenceId {}); it must start at the base's \
                     last node `{stitch_id}` (sequenceId {stitch_seq})",
                    order.order_update_id, first.node_id, first.sequence_id
                ),
            ));
        }
        let places = map.route(&order.nodes, at)?;
        let base = base_after(&order.nodes, stitch_seq);
        let extension = leg(map, call_id(order), &base, &places[1..=base.len()]);
        self.nodes.retain(|n| n.sequence_id <= stitch_seq);
        self.nodes.extend(order.nodes.iter().skip(1).cloned());
        self.edges.retain(|e| e.sequence_id < stitch_seq);
        self.edges.extend(order.edges.iter().cloned());
        self.update_id = order.order_update_id;
        self.ended = None;
        let Some(extension) = extension else {
            return Ok(false);
        };
        if self.leg.is_some() {
            self.next = Some(match self.next.take() {
                Some(mut next) => {
                    next.call_id = extension.call_id;
                    next.targets.extend(extension.targets);
                    next.calls.extend(extension.calls);
                    next
                }
                None => extension,
            });
            Ok(false)
        } else {
            self.leg = Some(extension);
            Ok(true)
        }
    }

    /// Still to do: nodes or edges ahead (base or horizon) or a leg.
    pub fn busy(&self) -> bool {
        self.ended.is_none()
            && (self.leg.is_some() || self.nodes.iter().any(|n| n.sequence_id > self.last.1))
    }

    /// `nodeStates`-to-be: the nodes after the last reached (none once
    /// the order is deleted).
    pub fn nodes_ahead(&self) -> impl Iterator<Item = &Node> {
        self.nodes
            .iter()
            .filter(|n| self.ended.is_none() && n.sequence_id > self.last.1)
    }

    /// `edgeStates`-to-be: the edges after the last node reached.
    pub fn edges_ahead(&self) -> impl Iterator<Item = &Edge> {
        self.edges
            .iter()
            .filter(|e| self.ended.is_none() && e.sequence_id > self.last.1)
    }

    /// The leg's task has reached `step` targets.
    pub fn reached(&mut self, step: usize) {
        if self.ended.is_some() {
            return;
        }
        if let Some(leg) = self.leg.as_mut() {
            leg.reached = leg.reached.max(step).min(leg.targets.len());
            if let Some(t) = leg.reached.checked_sub(1).and_then(|i| leg.targets.get(i)) {
                self.last = t.clone();
            }
        }
    }

    /// The leg's task succeeded: every target reached; the next leg, if
    /// there is one, is to start now.
    pub fn leg_done(&mut self) -> Option<&Leg> {
        let leg = self.leg.take()?;
        if self.ended.is_none()
            && let Some(t) = leg.targets.last()
        {
            self.last = t.clone();
        }
        self.leg = self.next.take().filter(|_| self.ended.is_none());
        self.leg.as_ref()
    }

    /// The order ends here (failed or cancelled): deleted, nothing more
    /// driven. Its ids and last node stay.
    pub fn end(&mut self, status: TaskStatus) {
        self.ended.get_or_insert(status);
        self.next = None;
    }
}

/// The released nodes after `sequenceId` `after`, in order.
fn base_after(nodes: &[Node], after: u64) -> Vec<Node> {
    nodes
        .iter()
        .filter(|n| n.released && n.sequence_id > after)
        .cloned()
        .collect()
}

fn call_id(order: &Order) -> String {
    format!("vda-{}-{}", order.order_id, order.order_update_id)
}
