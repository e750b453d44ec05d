//! [`Ros2Link`]: the robot link on ROS 2 itself, through `ros2-client`
//! (RustDDS). One worker thread owns the ROS node and polls it; the kernel
//! talks to it through channels, so its tick never waits on the network.
//!
//! - `navigate_to` is a Nav2 `NavigateToPose` goal, `dock` a `DockRobot`
//!   goal when the robot serves `dock_robot` (else a `NavigateToPose` to the
//!   world's dock pose). Every accepted goal gets a `get_result` request at
//!   once; its answer is the goal's [`LinkReply::Result`].
//! - Every send of a goal gets a fresh ROS goal UUID whose first 8 bytes
//!   are a fixed hash of the goal id ([`super::goal_uuid`]): Nav2's server
//!   dies on a UUID it already holds, and a brain resumed after a kill
//!   still finds whichever send Nav2 knows: a status query reads the
//!   action's `status` topic (transient local: the latest array arrives on
//!   joining) and, for a finished goal, asks `get_result`.
//! - `stop_base` cancels the goals robobrain sent, by their UUIDs, and
//!   publishes a zero `Twist` on `cmd_vel` (other clients' goals stay; only
//!   the E-stop cancels every goal, and only with `estop_cancel_all=true`);
//!   the E-stop line does the same from the caller's
//!   thread — or, when the worker is inside a call on the wire, has the
//!   worker do it at its next poll, so the line never waits. Goals the
//!   kernel sends while the line holds are dropped, never sent
//!   ([`RobotLink::take_held_back`]).
//! - The link is up while the `navigate_to_pose` server is discovered (a
//!   reader on its `send_goal` request topic) and `battery_state` has not
//!   been silent for `lost_after` ([`Silence`]).
//! - A dock's success waits for `battery_state` to say charging; docks
//!   again back off and stop at a limit ([`DockGate`]). Feedback is
//!   coalesced ([`Coalescer`]). A `send_goal` or `get_result` answer that
//!   never comes is made good from the status topic.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ros2_client::action::{ActionClientQosPolicies, GoalStatusEnum, SendGoalRequest};
use ros2_client::dds::rustdds::{DomainParticipant, DomainParticipantBuilder, GUID};
use ros2_client::qos::{Durability, History, Reliability, WhenFull};
use ros2_client::unique_identifier_msgs::UUID;
use ros2_client::{
    ActionClient, ActionTypeName, Context, MessageTypeName, Name, Node, NodeName, NodeOptions,
    Publisher, QosProfile, RmwRequestId, ServiceMapping, Subscription,
};

use super::msgs::{
    BatteryState, DockRobotFeedback, DockRobotGoal, DockRobotResult, Header,
    NavigateToPoseFeedback, NavigateToPoseGoal, NavigateToPoseResult, Odometry,
    POWER_SUPPLY_STATUS_CHARGING, POWER_SUPPLY_STATUS_FULL, PoseStamped, PoseWithCovarianceStamped,
    Quaternion, Twist, Vec3,
};
use super::pace::{Coalescer, DockGate, DockVerdict, Silence};
use super::{
    Action, GoalState, NavFailure, PoseSource, Rmw, Ros2Options, goal_key, goal_uuid, outcome_of,
    settled, uuid_of,
};
use crate::geometry::{Point, Pose};
use crate::link::{
    EStopLine, GoalId, GoalKind, GoalOutcome, GoalStatus, LinkError, LinkReply, LinkRequest,
    NavErrorCode, NavFeedback, RobotLink, Telemetry,
};
use crate::world::World;

/// How often the worker looks at the wire when nothing arrives.
const POLL: Duration = Duration::from_millis(1);
/// How often telemetry goes to the kernel.
const TELEMETRY_EVERY: Duration = Duration::from_millis(100);
/// How often the worker checks which action servers are discovered.
const DISCOVERY_EVERY: Duration = Duration::from_millis(100);
/// After a server is first seen, this long for it to see us too.
const MATCH_GRACE: Duration = Duration::from_millis(400);
/// While the robot is away, the link rejoins the domain this often.
const REJOIN_EVERY: Duration = Duration::from_secs(2);
/// A status query waits this long for the status topic before answering `unknown`.
const QUERY_PATIENCE: Duration = Duration::from_secs(3);
/// A `send_goal` or `get_result` answer missing this long is looked for
/// on the status topic (a reply can still be lost: rmw_cyclonedds gives up
/// on a client whose reply reader it has not matched within 100 ms, and a
/// network can drop it).
const REPLY_PATIENCE: Duration = Duration::from_secs(2);
/// Sends of one goal whose `send_goal` answer never came, before the link
/// reports it rejected.
const MAX_SENDS: u32 = 3;
/// A dock's success waits this long for `battery_state` to say charging
/// (Nav2's docking server waits `wait_charge_timeout`, 5 s by default).
const CHARGE_PATIENCE: Duration = Duration::from_secs(5);

type NavClient = ActionClient<NavigateToPoseGoal, NavigateToPoseResult, NavigateToPoseFeedback>;
type DockClient = ActionClient<DockRobotGoal, DockRobotResult, DockRobotFeedback>;

/// What both the worker and the E-stop line write through.
struct Wire {
    nav: NavClient,
    dock: DockClient,
    cmd_vel: Publisher<Twist>,
    /// The UUIDs of robobrain's goals not known to be finished: what a
    /// stop cancels.
    ours: Vec<(Action, [u8; 16])>,
}

impl Wire {
    /// Cancels robobrain's goals (with `all`, every goal of both actions:
    /// zero UUID, zero stamp) and publishes a zero twist.
    fn stop(&self, all: bool) -> Result<(), String> {
        let twist = self.cmd_vel.publish(Twist::default());
        let mut failed = Vec::new();
        if all {
            for (name, r) in [
                ("navigate_to_pose", self.nav.cancel_all_goals()),
                ("dock_robot", self.dock.cancel_all_goals()),
            ] {
                if let Err(e) = r {
                    failed.push(format!("{name} cancel: {e:?}"));
                }
            }
        } else {
            for (action, bytes) in &self.ours {
                if let Err(e) = self.cancel(*action, *bytes) {
                    failed.push(format!("{} cancel: {e}", action.ros_name()));
                }
            }
        }
        twist.map_err(|e| format!("cmd_vel: {e:?}"))?;
        failed.first().map_or(Ok(()), |e| Err(e.clone()))
    }

    /// Cancels the goal `bytes` of `action`.
    fn cancel(&self, action: Action, bytes: [u8; 16]) -> Result<(), String> {
        let r = match action {
            Action::Navigate => self.nav.cancel_goal(uuid(bytes)),
            Action::Dock => self.dock.cancel_goal(uuid(bytes)),
        };
        r.map(|_| ()).map_err(|e| format!("{e:?}"))
    }

    /// Notes a goal of ours on the wire (`true`) or finished (`false`).
    fn track(&mut self, action: Action, bytes: [u8; 16], on: bool) {
        self.ours.retain(|(_, b)| *b != bytes);
        if on {
            self.ours.push((action, bytes));
        }
    }
}

/// State the worker shares with the link and its E-stop line.
struct Shared {
    wire: Mutex<Wire>,
    up: AtomicBool,
    reconnected: AtomicBool,
    stop: AtomicBool,
    /// The line holds: an E-stop is on its way to the kernel, whose own
    /// `stop_base` has not gone yet.
    fired: AtomicBool,
    /// A line stop found the worker holding the wire: the worker brings
    /// the base to rest at its next poll (within [`POLL`]).
    stop_pending: AtomicBool,
    count: AtomicU64,
    /// The E-stop cancels every goal (`estop_cancel_all=true`).
    estop_all: bool,
}

impl Shared {
    fn wire(&self) -> std::sync::MutexGuard<'_, Wire> {
        self.wire.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The E-stop line of a [`Ros2Link`].
struct Line(Arc<Shared>);

impl EStopLine for Line {
    fn hold(&self) {
        self.0.fired.store(true, Ordering::SeqCst);
    }

    fn stop(&self) -> Result<(), LinkError> {
        self.0.count.fetch_add(1, Ordering::SeqCst);
        if !self.0.up.load(Ordering::SeqCst) {
            return Err(LinkError::Disconnected(
                "E-stop line: the Nav2 server is not discovered".into(),
            ));
        }
        // Never wait for the worker, which may be inside a DDS call: when
        // it holds the wire, it stops the base itself at its next poll.
        let wire = match self.0.wire.try_lock() {
            Ok(wire) => wire,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                self.0.stop_pending.store(true, Ordering::SeqCst);
                return Ok(());
            }
        };
        wire.stop(self.0.estop_all)
            .map_err(|e| LinkError::Disconnected(format!("E-stop line: {e}")))
    }
}

/// A robot link over ROS 2 (Nav2).
pub struct Ros2Link {
    shared: Arc<Shared>,
    to_worker: Sender<LinkRequest>,
    from_worker: Receiver<LinkReply>,
    /// Goals the kernel sent while the line held, dropped unsent; handed
    /// to the kernel by [`RobotLink::take_held_back`].
    held_back: Vec<GoalId>,
    worker: Option<JoinHandle<()>>,
    label: String,
}

impl std::fmt::Debug for Ros2Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ros2Link")
            .field("robot", &self.label)
            .field("up", &self.shared.up.load(Ordering::SeqCst))
            .field("held_back", &self.held_back)
            .finish_non_exhaustive()
    }
}

/// Why the ROS entities could not be made.
fn create_error(what: &str, e: impl std::fmt::Debug) -> LinkError {
    LinkError::Disconnected(format!("ROS 2: cannot create {what}: {e:?}"))
}

fn qos(reliable: bool, transient: bool, depth: usize) -> QosProfile {
    let base = QosProfile::subscription_default()
        .history(History::KeepLast { depth })
        .durability(if transient {
            Durability::TransientLocal
        } else {
            Durability::Volatile
        });
    if reliable {
        base.reliability(Reliability::Reliable {
            when_full: WhenFull::DEFAULT,
        })
    } else {
        base
    }
}

/// AMCL publishes reliable and transient local, depth 1: read the same
/// way, its last pose arrives on joining (a robot standing still publishes
/// no new one).
fn amcl_qos() -> QosProfile {
    qos(true, true, 1)
}

/// The DDS name of a service's request topic under `namespace`.
fn request_topic(namespace: &str, action: &str) -> String {
    format!("rq{namespace}/{action}/_action/send_goalRequest")
}

/// Everything the link has in the domain: made at start, and made anew
/// after the robot was lost (see [`Worker::rejoin`]).
struct Parts {
    participant: DomainParticipant,
    node: Node,
    wire: Wire,
    battery: Subscription<BatteryState>,
    pose: PoseSub,
}

impl Parts {
    /// Joins the domain as a new participant with the link's node, action
    /// clients, publisher and subscriptions.
    fn join(opts: &Ros2Options) -> Result<Self, LinkError> {
        let mut builder = DomainParticipantBuilder::new(opts.domain);
        if !opts.networks.is_empty() {
            builder = builder.with_only_networks(opts.networks.iter().copied());
        }
        let participant = builder
            .build()
            .map_err(|e| create_error("the DDS participant", e))?;
        let context = Context::from_domain_participant(participant.clone())
            .map_err(|e| create_error("the ROS context", e))?;
        let ns = opts.namespace.as_str();
        let ns_or_root = if ns.is_empty() { "/" } else { ns };
        let mut node = context
            .new_node(
                NodeName::new(ns_or_root, "robobrain")
                    .map_err(|e| create_error("the node name", e))?,
                NodeOptions::new()
                    .enable_rosout(false)
                    .start_parameter_services(false),
            )
            .map_err(|e| create_error("the node", e))?;
        let mapping = match opts.rmw {
            Rmw::CycloneDds => ServiceMapping::Cyclone,
            Rmw::FastRtps => ServiceMapping::Enhanced,
        };
        let service = qos(true, false, 10);
        let policies = || ActionClientQosPolicies {
            goal_service: service.clone(),
            result_service: service.clone(),
            cancel_service: service.clone(),
            feedback_subscription: service.clone(),
            status_subscription: qos(true, true, 1),
        };
        let name = |base: &str| {
            Name::new(ns_or_root, base).map_err(|e| create_error(&format!("the name {base}"), e))
        };
        let nav = node
            .create_action_client(
                mapping,
                &name("navigate_to_pose")?,
                &ActionTypeName::new("nav2_msgs", "NavigateToPose"),
                policies(),
            )
            .map_err(|e| create_error("the navigate_to_pose client", e))?;
        let dock = node
            .create_action_client(
                mapping,
                &name("dock_robot")?,
                &ActionTypeName::new("nav2_msgs", "DockRobot"),
                policies(),
            )
            .map_err(|e| create_error("the dock_robot client", e))?;
        let topic = |base: &str, pkg: &str, ty: &str, q: &QosProfile| {
            node.create_topic(&name(base)?, MessageTypeName::new(pkg, ty), q)
                .map_err(|e| create_error(&format!("the topic {base}"), e))
        };
        let cmd_q = qos(true, false, 1);
        let cmd_topic = topic(&opts.cmd_vel, "geometry_msgs", "Twist", &cmd_q)?;
        let sensor = qos(false, false, 5);
        let amcl = amcl_qos();
        let battery_topic = topic(&opts.battery, "sensor_msgs", "BatteryState", &sensor)?;
        let pose_topic = match opts.pose {
            PoseSource::Odometry => topic(&opts.pose_topic, "nav_msgs", "Odometry", &sensor)?,
            PoseSource::Amcl => topic(
                &opts.pose_topic,
                "geometry_msgs",
                "PoseWithCovarianceStamped",
                &amcl,
            )?,
        };
        let cmd_vel = node
            .create_publisher(&cmd_topic, Some(cmd_q))
            .map_err(|e| create_error("the cmd_vel publisher", e))?;
        let battery = node
            .create_subscription(&battery_topic, Some(sensor.clone()))
            .map_err(|e| create_error("the battery subscription", e))?;
        let pose = match opts.pose {
            PoseSource::Odometry => PoseSub::Odom(
                node.create_subscription(&pose_topic, Some(sensor.clone()))
                    .map_err(|e| create_error("the odometry subscription", e))?,
            ),
            PoseSource::Amcl => PoseSub::Amcl(
                node.create_subscription(&pose_topic, Some(amcl))
                    .map_err(|e| create_error("the pose subscription", e))?,
            ),
        };
        Ok(Self {
            participant,
            node,
            wire: Wire {
                nav,
                dock,
                cmd_vel,
                ours: Vec::new(),
            },
            battery,
            pose,
        })
    }
}

impl Ros2Link {
    /// Joins the ROS 2 domain and waits (up to the options' `wait`) for the
    /// robot's `navigate_to_pose` server.
    pub fn connect(opts: &Ros2Options, world: &World) -> Result<Self, LinkError> {
        let Parts {
            participant,
            node,
            wire,
            battery,
            pose,
        } = Parts::join(opts)?;
        let shared = Arc::new(Shared {
            wire: Mutex::new(wire),
            up: AtomicBool::new(false),
            reconnected: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            fired: AtomicBool::new(false),
            stop_pending: AtomicBool::new(false),
            count: AtomicU64::new(0),
            estop_all: opts.estop_cancels_all,
        });
        let (to_worker, requests) = channel();
        let (replies, from_worker) = channel();
        let mut worker = Worker {
            shared: shared.clone(),
            participant,
            node,
            battery,
            pose,
            requests,
            replies,
            opts: opts.clone(),
            world: world.clone(),
            goals: HashMap::new(),
            by_uuid: HashMap::new(),
            goal_requests: BTreeMap::new(),
            result_requests: BTreeMap::new(),
            statuses: [None, None],
            queries: Vec::new(),
            unsent: Vec::new(),
            seen: [None, None],
            lost_at: None,
            servers: Vec::new(),
            restarted: false,
            gate: DockGate::default(),
            silence: Silence::default(),
            deferred: Vec::new(),
            awaiting_charge: None,
            nonce: nonce_seed(),
            robot: Robot::default(),
            started: Instant::now(),
            last_telemetry: Instant::now(),
            last_discovery: Instant::now(),
        };
        // Wait for the robot here, so an unreachable robot is an error at
        // start (as with tcp://), not a run that starts in SAFE.
        let deadline = Instant::now() + opts.wait;
        while !worker.discover() {
            if Instant::now() >= deadline {
                return Err(LinkError::Disconnected(format!(
                    "cannot reach the robot at {opts}: no Nav2 navigate_to_pose server \
                     (DDS reader on {}) in domain {} after {} s",
                    request_topic(&opts.namespace, "navigate_to_pose"),
                    opts.domain,
                    opts.wait.as_secs_f64()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // Up from here on, not from when the worker first runs.
        shared.up.store(true, Ordering::SeqCst);
        let label = opts.to_string();
        let handle = std::thread::Builder::new()
            .name("ros2-link".into())
            .spawn(move || worker.run())
            .map_err(|e| create_error("the worker thread", e))?;
        Ok(Self {
            shared,
            to_worker,
            from_worker,
            held_back: Vec::new(),
            worker: Some(handle),
            label,
        })
    }
}

impl Drop for Ros2Link {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.worker.take() {
            let _ = h.join();
        }
    }
}

impl RobotLink for Ros2Link {
    fn send(&mut self, request: LinkRequest) -> Result<(), LinkError> {
        if let LinkRequest::Inject { fault } = &request {
            return Err(LinkError::Unsupported(format!(
                "fault `{}` cannot be injected into a ROS 2 robot",
                serde_json::to_value(fault)
                    .ok()
                    .and_then(|v| v["fault"].as_str().map(str::to_string))
                    .unwrap_or_default()
            )));
        }
        if self.shared.fired.load(Ordering::SeqCst) {
            match &request {
                // The kernel's own stop: the line lets go.
                LinkRequest::SendGoal {
                    kind: GoalKind::StopBase,
                    ..
                } => self.shared.fired.store(false, Ordering::SeqCst),
                // Decided before the kernel took the E-stop in: it must
                // not reach the robot, before the stop or after it.
                LinkRequest::SendGoal { goal_id, .. } => {
                    self.held_back.push(goal_id.clone());
                    return Ok(());
                }
                _ => {}
            }
        }
        let stops = matches!(
            request,
            LinkRequest::Cancel { .. }
                | LinkRequest::SendGoal {
                    kind: GoalKind::StopBase,
                    ..
                }
        );
        if !self.shared.up.load(Ordering::SeqCst) && !stops {
            return Err(LinkError::Disconnected(format!(
                "robot at {}: the Nav2 server is not discovered",
                self.label
            )));
        }
        // Stops and cancels while down wait in the worker for the robot.
        self.to_worker
            .send(request)
            .map_err(|_| LinkError::Disconnected("the ROS 2 worker has stopped".into()))
    }

    /// The robot keeps its own time.
    fn advance(&mut self, _dt: f64) {}

    fn drain(&mut self, out: &mut Vec<LinkReply>) {
        out.extend(self.from_worker.try_iter());
    }

    fn is_connected(&self) -> bool {
        self.shared.up.load(Ordering::SeqCst)
    }

    fn take_reconnected(&mut self) -> bool {
        self.shared.reconnected.swap(false, Ordering::SeqCst)
    }

    fn estop_line(&self) -> Option<Arc<dyn EStopLine>> {
        Some(Arc::new(Line(self.shared.clone())))
    }

    fn take_held_back(&mut self) -> Vec<GoalId> {
        std::mem::take(&mut self.held_back)
    }
}

enum PoseSub {
    Odom(Subscription<Odometry>),
    Amcl(Subscription<PoseWithCovarianceStamped>),
}

/// A goal the worker follows.
struct Tracked {
    /// The UUID of its latest send (earlier ones are void).
    uuid: [u8; 16],
    action: Action,
    state: GoalState,
    sent: Instant,
    /// Answer the result as a status query's reply.
    query: bool,
    /// What it asks (`None`: adopted from the status topic).
    kind: Option<GoalKind>,
    /// How many times it was sent.
    sends: u32,
    /// When the status topic first said it finished without a result here.
    finished_seen: Option<Instant>,
    feedback: Coalescer,
}

impl Tracked {
    fn new(bytes: [u8; 16], action: Action, kind: Option<GoalKind>) -> Self {
        Self {
            uuid: bytes,
            action,
            state: GoalState::Sent,
            sent: Instant::now(),
            query: false,
            kind,
            sends: 1,
            finished_seen: None,
            feedback: Coalescer::default(),
        }
    }

    /// Whether it takes the robot to its dock.
    fn docks(&self) -> bool {
        matches!(self.kind, Some(GoalKind::Dock))
    }
}

/// A fresh start for the UUID nonces of this process: its id and the time.
fn nonce_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    (u64::from(std::process::id()) << 32) ^ (t as u64)
}

/// What the worker knows of the robot.
#[derive(Default)]
struct Robot {
    /// `None` until a pose arrives: no zone is made up for it.
    pose: Option<Pose>,
    twist: crate::geometry::Twist,
    battery_pct: Option<f64>,
    charging: bool,
    distance_to_target: Option<f64>,
}

struct Worker {
    shared: Arc<Shared>,
    participant: DomainParticipant,
    /// The ROS node the entities belong to, kept alive.
    node: Node,
    battery: Subscription<BatteryState>,
    pose: PoseSub,
    requests: Receiver<LinkRequest>,
    replies: Sender<LinkReply>,
    opts: Ros2Options,
    world: World,
    goals: HashMap<GoalId, Tracked>,
    by_uuid: HashMap<[u8; 16], GoalId>,
    /// `send_goal` requests in flight, with the UUID each sent.
    goal_requests: BTreeMap<RmwRequestId, (GoalId, [u8; 16])>,
    /// `get_result` requests in flight, with the UUID each asked about.
    result_requests: BTreeMap<RmwRequestId, (GoalId, [u8; 16])>,
    /// The latest status array of each action (`None`: none received yet).
    statuses: [Option<Statuses>; 2],
    /// Status queries waiting for the status topic.
    queries: Vec<(GoalId, Instant)>,
    /// Stops and cancels that came while the robot was away.
    unsent: Vec<LinkRequest>,
    /// When each action's server was first seen in this stretch (`None`: not seen).
    seen: [Option<Instant>; 2],
    /// When the robot was lost (`None`: it is up).
    lost_at: Option<Instant>,
    /// The `navigate_to_pose` server's `send_goal` readers last seen: a new
    /// one is a restarted server, even one back before anything noticed.
    servers: Vec<GUID>,
    /// A restarted server was seen and not yet acted on.
    restarted: bool,
    gate: DockGate,
    silence: Silence,
    /// Dock goals waiting for the gate: when, and what.
    deferred: Vec<(Instant, GoalId, GoalKind)>,
    /// A dock that succeeded, its result held until the battery charges:
    /// the goal, when it ended, its navigation time.
    awaiting_charge: Option<(GoalId, Instant, f64)>,
    /// The next UUID nonce.
    nonce: u64,
    robot: Robot,
    started: Instant,
    last_telemetry: Instant,
    last_discovery: Instant,
}

/// A `get_result` answer: the request, the goal's status, Nav2's error
/// code and message.
type ResultAnswer = (RmwRequestId, GoalStatusEnum, u16, String);

/// What one poll read off both actions, acted on once the wire is let go.
#[derive(Default)]
struct Inbox {
    /// `send_goal` answers: the request, and whether the goal was accepted.
    accepted: Vec<(RmwRequestId, bool)>,
    /// `get_result` answers.
    results: Vec<ResultAnswer>,
    /// Feedback, by goal UUID.
    feedback: Vec<([u8; 16], NavFeedback)>,
}

impl Inbox {
    /// Reads the goal responses, results, cancel answers and feedback of
    /// both actions; a dock goal's distance to go is `dock_distance`.
    fn drain(wire: &Wire, dock_distance: f64) -> Self {
        let mut inbox = Self::default();
        while let Ok(Some((id, resp))) = wire.nav.goal_client().receive_response() {
            inbox.accepted.push((id, resp.accepted));
        }
        while let Ok(Some((id, resp))) = wire.dock.goal_client().receive_response() {
            inbox.accepted.push((id, resp.accepted));
        }
        while let Ok(Some((id, resp))) = wire.nav.result_client().receive_response() {
            let r = resp.result;
            inbox
                .results
                .push((id, resp.status, r.error_code, r.error_msg));
        }
        while let Ok(Some((id, resp))) = wire.dock.result_client().receive_response() {
            let r = resp.result;
            inbox
                .results
                .push((id, resp.status, r.error_code, r.error_msg));
        }
        // Cancel answers carry nothing the results do not.
        while let Ok(Some(_)) = wire.nav.cancel_client().receive_response() {}
        while let Ok(Some(_)) = wire.dock.cancel_client().receive_response() {}
        while let Ok(Some((msg, _))) = wire.nav.feedback_subscription().take() {
            let f = msg.feedback;
            inbox.feedback.push((
                msg.goal_id.uuid.into_bytes(),
                NavFeedback {
                    distance_remaining: f64::from(f.distance_remaining),
                    estimated_time_remaining: f.estimated_time_remaining.seconds(),
                    navigation_time: f.navigation_time.seconds(),
                    number_of_recoveries: u32::try_from(f.number_of_recoveries).unwrap_or(0),
                },
            ));
        }
        while let Ok(Some((msg, _))) = wire.dock.feedback_subscription().take() {
            inbox.feedback.push((
                msg.goal_id.uuid.into_bytes(),
                NavFeedback {
                    distance_remaining: dock_distance,
                    estimated_time_remaining: 0.0,
                    navigation_time: msg.feedback.docking_time.seconds(),
                    number_of_recoveries: u32::from(msg.feedback.num_retries),
                },
            ));
        }
        inbox
    }
}

/// An action's status array: each goal's UUID and `action_msgs/GoalStatus` code.
type Statuses = Vec<([u8; 16], i8)>;

fn uuid(bytes: [u8; 16]) -> UUID {
    UUID {
        uuid: ::uuid::Uuid::from_bytes(bytes),
    }
}

fn status_code(s: GoalStatusEnum) -> i8 {
    s as i8
}

impl Worker {
    fn reply(&self, reply: LinkReply) {
        let _ = self.replies.send(reply);
    }

    /// Looks for the action servers; true when navigation is served (and
    /// has had time to see us) and the robot has not gone silent.
    fn discover(&mut self) -> bool {
        self.last_discovery = Instant::now();
        let readers = self.participant.discovered_readers();
        let ns = &self.opts.namespace;
        let nav_topic = request_topic(ns, Action::Navigate.ros_name());
        let servers: Vec<GUID> = readers
            .iter()
            .filter(|r| r.subscription_topic_data.topic_name == nav_topic)
            .map(|r| r.reader_proxy.remote_reader_guid)
            .collect();
        if !self.servers.is_empty() && servers.iter().any(|g| !self.servers.contains(g)) {
            self.restarted = true;
        }
        self.servers = servers;
        for (i, action) in [Action::Navigate, Action::Dock].into_iter().enumerate() {
            let topic = request_topic(ns, action.ros_name());
            let served = readers
                .iter()
                .any(|r| r.subscription_topic_data.topic_name == topic);
            self.seen[i] = match (served, self.seen[i]) {
                (true, Some(t)) => Some(t),
                (true, None) => Some(Instant::now()),
                (false, _) => None,
            };
        }
        self.seen[0].is_some_and(|t| t.elapsed() >= MATCH_GRACE)
            && !self.silence.lost(Instant::now(), self.opts.lost_after)
    }

    /// Joins the domain again as a new participant. RustDDS does not take
    /// back a peer whose lease ran out while that peer still knows us (it
    /// ignores the peer's announcements from then on), so a robot that
    /// comes back after a loss is only seen by a participant it has not
    /// met. Requests in flight die with the old one; the kernel asks again
    /// once the link is back (`take_reconnected`).
    fn rejoin(&mut self) {
        self.lost_at = Some(Instant::now());
        let Ok(mut parts) = Parts::join(&self.opts) else {
            return;
        };
        {
            let mut wire = self.shared.wire();
            parts.wire.ours = std::mem::take(&mut wire.ours);
            *wire = parts.wire;
        }
        self.participant = parts.participant;
        self.node = parts.node;
        self.battery = parts.battery;
        self.pose = parts.pose;
        self.goal_requests.clear();
        self.result_requests.clear();
        self.seen = [None, None];
        self.servers.clear();
        self.silence.reset();
    }

    fn dock_served(&self) -> bool {
        self.seen[1].is_some_and(|t| t.elapsed() >= MATCH_GRACE)
    }

    fn run(mut self) {
        let mut up = true;
        while !self.shared.stop.load(Ordering::SeqCst) {
            if self.shared.stop_pending.swap(false, Ordering::SeqCst) {
                let _ = self.shared.wire().stop(self.shared.estop_all);
            }
            match self.requests.recv_timeout(POLL) {
                Ok(request) => self.handle(request),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            while let Ok(request) = self.requests.try_recv() {
                self.handle(request);
            }
            if self.last_discovery.elapsed() >= DISCOVERY_EVERY {
                up = self.check_up(up);
                if up {
                    self.send_deferred();
                    self.watch_replies();
                }
            }
            self.poll_wire();
            self.answer_queries();
            self.answer_charging();
            if self.last_telemetry.elapsed() >= TELEMETRY_EVERY {
                self.last_telemetry = Instant::now();
                let telemetry = self.telemetry();
                self.reply(LinkReply::Telemetry { telemetry });
            }
        }
    }

    /// Whether the robot is up now (it was `up`): tells the kernel of a
    /// change, sends what waited for the robot, rejoins while it is away.
    fn check_up(&mut self, up: bool) -> bool {
        let now_up = self.discover();
        if now_up != up {
            self.shared.up.store(now_up, Ordering::SeqCst);
            if now_up {
                self.shared.reconnected.store(true, Ordering::SeqCst);
                for request in std::mem::take(&mut self.unsent) {
                    self.handle(request);
                }
            } else {
                // What it had said is lost with it; the kernel asks again.
                self.statuses = [None, None];
                self.lost_at = Some(Instant::now());
            }
        }
        if now_up && std::mem::take(&mut self.restarted) {
            // A new Nav2 knows none of the goals of the old one, and
            // answers none of the requests made to it: ask again.
            self.statuses = [None, None];
            self.goal_requests.clear();
            self.result_requests.clear();
            self.shared.reconnected.store(true, Ordering::SeqCst);
        }
        if !now_up && self.lost_at.is_some_and(|t| t.elapsed() >= REJOIN_EVERY) {
            self.rejoin();
        }
        now_up
    }

    fn handle(&mut self, request: LinkRequest) {
        let up = self.shared.up.load(Ordering::SeqCst);
        match request {
            LinkRequest::SendGoal {
                goal_id,
                kind: GoalKind::StopBase,
            } => {
                if !up {
                    self.unsent.push(LinkRequest::SendGoal {
                        goal_id,
                        kind: GoalKind::StopBase,
                    });
                    return;
                }
                // Ours only: other clients' goals are not this brain's to end.
                let wrote = self.shared.wire().stop(false);
                self.deferred.clear();
                self.reply(LinkReply::Accepted {
                    goal_id: goal_id.clone(),
                });
                let outcome = match wrote {
                    Ok(()) => GoalOutcome::Succeeded {
                        navigation_time: 0.0,
                    },
                    Err(message) => GoalOutcome::Failed {
                        error: NavErrorCode::Unavailable,
                        message,
                    },
                };
                self.reply(LinkReply::Result { goal_id, outcome });
            }
            LinkRequest::SendGoal { goal_id, kind } => self.send_goal(goal_id, kind),
            LinkRequest::Cancel { goal_id } => {
                if !up {
                    self.unsent.push(LinkRequest::Cancel { goal_id });
                    return;
                }
                self.cancel(goal_id);
            }
            LinkRequest::QueryGoal { goal_id } => self.queries.push((goal_id, Instant::now())),
            LinkRequest::Inject { .. } | LinkRequest::Heartbeat => {}
        }
    }

    fn cancel(&mut self, goal_id: GoalId) {
        // A dock whose success waits for charging, or one the gate holds:
        // ended here (the robot has nothing of it to cancel).
        let held = self
            .awaiting_charge
            .as_ref()
            .is_some_and(|(g, _, _)| *g == goal_id);
        let deferred = self.deferred.iter().position(|(_, g, _)| *g == goal_id);
        if held || deferred.is_some() {
            if held {
                self.awaiting_charge = None;
            }
            if let Some(i) = deferred {
                self.deferred.remove(i);
            }
            self.reply(LinkReply::Result {
                goal_id,
                outcome: GoalOutcome::Canceled,
            });
            return;
        }
        match self.goals.get(&goal_id) {
            Some(t) if !t.query => {
                let _ = self.shared.wire().cancel(t.action, t.uuid);
            }
            // Not ours to cancel (a former brain's): say what it is.
            _ => self.queries.push((goal_id, Instant::now())),
        }
    }

    /// A goal from the kernel: sent, or (a dock the gate holds) deferred.
    fn send_goal(&mut self, goal_id: GoalId, kind: GoalKind) {
        if let Some(t) = self.goals.get(&goal_id)
            && !t.query
        {
            // The same id again is the same goal: never a second send.
            if t.state == GoalState::Running {
                self.reply(LinkReply::Accepted { goal_id });
            }
            return;
        }
        if matches!(kind, GoalKind::Dock) {
            match self.gate.verdict(Instant::now()) {
                DockVerdict::Go => {}
                DockVerdict::At(at) => {
                    self.deferred.push((at, goal_id, kind));
                    return;
                }
                DockVerdict::GiveUp(n) => {
                    self.reply(LinkReply::Rejected {
                        goal_id,
                        error: NavErrorCode::Unavailable,
                        message: format!(
                            "{n} docks in a row ended without battery_state saying charging: \
                             not docking again until it does (check the charger and its contacts)"
                        ),
                    });
                    return;
                }
            }
            self.gate.tried();
        }
        self.write_goal(goal_id, kind, 1);
    }

    /// Dock goals whose wait is over go out.
    fn send_deferred(&mut self) {
        let now = Instant::now();
        let (due, wait): (Vec<_>, Vec<_>) = std::mem::take(&mut self.deferred)
            .into_iter()
            .partition(|(at, _, _)| *at <= now);
        self.deferred = wait;
        for (_, goal_id, kind) in due {
            self.send_goal(goal_id, kind);
        }
    }

    /// Writes `goal_id`'s `sends`-th send under a fresh UUID.
    fn write_goal(&mut self, goal_id: GoalId, kind: GoalKind, sends: u32) {
        let target = match &kind {
            GoalKind::Navigate { target, .. } => *target,
            _ => Point {
                x: self.world.dock_pose.x,
                y: self.world.dock_pose.y,
            },
        };
        let dock = matches!(kind, GoalKind::Dock) && self.dock_served();
        let action = if dock { Action::Dock } else { Action::Navigate };
        self.make_room(&goal_id, action);
        self.nonce = self.nonce.wrapping_add(1);
        let bytes = goal_uuid(&goal_id, self.nonce);
        let pose = self.target_pose(target, &kind);
        let sent = {
            let mut wire = self.shared.wire();
            let sent = if dock {
                let goal = DockRobotGoal {
                    use_dock_id: false,
                    dock_id: String::new(),
                    dock_pose: pose,
                    dock_type: String::new(),
                    max_staging_time: 1000.0,
                    navigate_to_staging_pose: true,
                };
                wire.dock.goal_client().send_request(SendGoalRequest {
                    goal_id: uuid(bytes),
                    goal,
                })
            } else {
                let goal = NavigateToPoseGoal {
                    pose,
                    behavior_tree: String::new(),
                };
                wire.nav.goal_client().send_request(SendGoalRequest {
                    goal_id: uuid(bytes),
                    goal,
                })
            };
            if sent.is_ok() {
                wire.track(action, bytes, true);
            }
            sent
        };
        match sent {
            Ok(request) => {
                self.goal_requests.insert(request, (goal_id.clone(), bytes));
                self.by_uuid.insert(bytes, goal_id.clone());
                let mut t = Tracked::new(bytes, action, Some(kind));
                t.sends = sends;
                self.goals.insert(goal_id, t);
            }
            Err(e) => self.reply(LinkReply::Rejected {
                goal_id,
                error: NavErrorCode::Unavailable,
                message: format!("the goal could not be written: {e:?}"),
            }),
        }
    }

    /// One goal moves the base. On the same server Nav2 ends the running
    /// one when a new one comes (aborted, no error code): ours is then a
    /// preemption. The other server (navigation and docking are separate
    /// servers, neither preempts the other) is told to cancel ours.
    fn make_room(&mut self, goal_id: &GoalId, action: Action) {
        let wire = self.shared.wire();
        for (id, t) in &mut self.goals {
            if id == goal_id || t.query || !matches!(t.state, GoalState::Running | GoalState::Sent)
            {
                continue;
            }
            if t.action != action {
                let _ = wire.cancel(t.action, t.uuid);
            }
            t.state = GoalState::Preempted;
        }
    }

    /// The goal pose in the map frame, facing the way there.
    fn target_pose(&self, target: Point, kind: &GoalKind) -> PoseStamped {
        let here = self.robot.pose.unwrap_or_default();
        let yaw = if matches!(kind, GoalKind::Dock) {
            self.world.dock_pose.theta
        } else {
            (target.y - here.y).atan2(target.x - here.x)
        };
        PoseStamped {
            header: Header {
                stamp: super::msgs::Stamp::default(),
                frame_id: self
                    .opts
                    .frame
                    .clone()
                    .or_else(|| self.world.frame.clone())
                    .unwrap_or_else(|| "map".into()),
            },
            pose: super::msgs::Pose {
                position: Vec3 {
                    x: target.x,
                    y: target.y,
                    z: 0.0,
                },
                orientation: Quaternion::from_yaw(yaw),
            },
        }
    }

    fn request_result(&mut self, goal_id: &GoalId) {
        let Some(t) = self.goals.get(goal_id) else {
            return;
        };
        let (action, bytes) = (t.action, t.uuid);
        let sent = {
            let wire = self.shared.wire();
            match action {
                Action::Navigate => wire.nav.request_result(uuid(bytes)),
                Action::Dock => wire.dock.request_result(uuid(bytes)),
            }
        };
        if let Ok(request) = sent {
            self.result_requests
                .insert(request, (goal_id.clone(), bytes));
        }
    }

    /// Answers that never came, made good from the status topic: a goal
    /// Nav2 lists was accepted; one it does not list after
    /// [`REPLY_PATIENCE`] is sent again under a fresh UUID (up to
    /// [`MAX_SENDS`]); a goal listed finished whose result did not come is
    /// asked for its result again.
    fn watch_replies(&mut self) {
        let mut accept = Vec::new();
        let mut resend = Vec::new();
        let mut ask = Vec::new();
        for (goal_id, t) in &mut self.goals {
            let listed = self.statuses[usize::from(t.action == Action::Dock)]
                .as_ref()
                .and_then(|l| l.iter().find(|(u, _)| *u == t.uuid).map(|(_, s)| *s));
            match (t.state, listed) {
                (GoalState::Sent, Some(_)) if t.sent.elapsed() >= REPLY_PATIENCE => {
                    accept.push(goal_id.clone());
                }
                (GoalState::Sent, None) if t.sent.elapsed() >= REPLY_PATIENCE => {
                    resend.push(goal_id.clone());
                }
                (_, Some(s)) if settled(s) && s != super::status::UNKNOWN => {
                    let seen = *t.finished_seen.get_or_insert_with(Instant::now);
                    if seen.elapsed() >= REPLY_PATIENCE {
                        t.finished_seen = Some(Instant::now());
                        ask.push(goal_id.clone());
                    }
                }
                _ => {}
            }
        }
        for goal_id in accept {
            self.goal_requests.retain(|_, (g, _)| *g != goal_id);
            self.accepted(&goal_id);
        }
        for goal_id in ask {
            self.request_result(&goal_id);
        }
        for goal_id in resend {
            self.resend(goal_id);
        }
    }

    /// Sends again a goal whose `send_goal` answer never came.
    fn resend(&mut self, goal_id: GoalId) {
        let Some(t) = self.goals.remove(&goal_id) else {
            return;
        };
        self.goal_requests.retain(|_, (g, _)| *g != goal_id);
        self.shared.wire().track(t.action, t.uuid, false);
        match t.kind {
            Some(kind) if t.sends < MAX_SENDS => self.write_goal(goal_id, kind, t.sends + 1),
            _ => self.reply(LinkReply::Rejected {
                goal_id,
                error: NavErrorCode::Unavailable,
                message: format!(
                    "{} never answered the goal ({} sends, each a new goal id)",
                    t.action.ros_name(),
                    t.sends
                ),
            }),
        }
    }
}

impl Worker {
    fn poll_wire(&mut self) {
        // Dock feedback carries no distance: it is the robot's to the dock.
        let dock = self.world.dock_pose;
        let here = self.robot.pose.unwrap_or_default();
        let dock_distance = (dock.x - here.x).hypot(dock.y - here.y);
        let inbox = {
            let wire = self.shared.wire();
            let inbox = Inbox::drain(&wire, dock_distance);
            while let Ok(Some(array)) = wire.nav.receive_status() {
                self.statuses[0] = Some(status_list(&array));
            }
            while let Ok(Some(array)) = wire.dock.receive_status() {
                self.statuses[1] = Some(status_list(&array));
            }
            inbox
        };
        self.answer_goal_responses(inbox.accepted);
        self.answer_results(inbox.results);
        let now = Instant::now();
        for (bytes, fb) in inbox.feedback {
            let Some(goal_id) = self.by_uuid.get(&bytes).cloned() else {
                continue;
            };
            let Some(t) = self.goals.get_mut(&goal_id).filter(|t| t.uuid == bytes) else {
                continue;
            };
            self.robot.distance_to_target = Some(fb.distance_remaining);
            if t.feedback.admit(now, fb.number_of_recoveries) {
                self.reply(LinkReply::Feedback {
                    goal_id,
                    feedback: fb,
                });
            }
        }
        self.read_robot_state();
    }

    /// Marks each accepted goal running and asks for its result; forgets
    /// and rejects each goal Nav2 refused.
    fn answer_goal_responses(&mut self, accepted: Vec<(RmwRequestId, bool)>) {
        for (request, ok) in accepted {
            let Some((goal_id, bytes)) = self.goal_requests.remove(&request) else {
                continue;
            };
            if self.goals.get(&goal_id).is_none_or(|t| t.uuid != bytes) {
                continue;
            }
            if ok {
                self.accepted(&goal_id);
            } else {
                self.forget(&goal_id);
                self.reply(LinkReply::Rejected {
                    goal_id,
                    error: NavErrorCode::Unavailable,
                    message: "the robot's Nav2 rejected the goal".into(),
                });
            }
        }
    }

    /// A goal Nav2 accepted: running, and its result asked for.
    fn accepted(&mut self, goal_id: &GoalId) {
        if let Some(t) = self.goals.get_mut(goal_id)
            && t.state == GoalState::Sent
        {
            t.state = GoalState::Running;
        }
        self.reply(LinkReply::Accepted {
            goal_id: goal_id.clone(),
        });
        self.request_result(goal_id);
    }

    /// Ends each goal whose result came: its outcome as the goal's
    /// `Result`, or as the answer to the status query that adopted it. A
    /// dock's success waits for the battery to say charging.
    fn answer_results(&mut self, results: Vec<ResultAnswer>) {
        for (request, status, code, message) in results {
            let Some((goal_id, bytes)) = self.result_requests.remove(&request) else {
                continue;
            };
            if self.goals.get(&goal_id).is_none_or(|t| t.uuid != bytes) {
                continue;
            }
            let Some(t) = self.goals.remove(&goal_id) else {
                continue;
            };
            self.result_requests.retain(|_, (g, _)| *g != goal_id);
            self.by_uuid.retain(|_, g| *g != goal_id);
            self.shared.wire().track(t.action, t.uuid, false);
            let failure = NavFailure {
                code,
                message,
                action: t.action,
            };
            let elapsed = t.sent.elapsed().as_secs_f64();
            let outcome = outcome_of(
                status_code(status),
                t.state == GoalState::Preempted,
                elapsed,
                &failure,
            );
            self.robot.distance_to_target = None;
            if t.docks() {
                self.gate.ended(Instant::now());
                if matches!(outcome, Some(GoalOutcome::Succeeded { .. })) && !t.query {
                    // Docked: the distance is 0 now (the coalesced feedback
                    // may have stopped short of it); charging is awaited.
                    self.reply(LinkReply::Feedback {
                        goal_id: goal_id.clone(),
                        feedback: NavFeedback {
                            distance_remaining: 0.0,
                            estimated_time_remaining: 0.0,
                            navigation_time: elapsed,
                            number_of_recoveries: 0,
                        },
                    });
                    self.awaiting_charge = Some((goal_id, Instant::now(), elapsed));
                    continue;
                }
            }
            self.report(goal_id, t.query, outcome);
        }
    }

    fn report(&self, goal_id: GoalId, query: bool, outcome: Option<GoalOutcome>) {
        match (query, outcome) {
            (true, outcome) => self.reply(LinkReply::GoalStatus {
                goal_id,
                status: outcome.map_or(GoalStatus::Unknown, |outcome| GoalStatus::Finished {
                    outcome,
                }),
            }),
            (false, Some(outcome)) => self.reply(LinkReply::Result { goal_id, outcome }),
            (false, None) => self.reply(LinkReply::Result {
                goal_id,
                outcome: GoalOutcome::Failed {
                    error: NavErrorCode::Unavailable,
                    message: "the robot's Nav2 does not know the goal".into(),
                },
            }),
        }
    }

    /// A docked robot's success once the battery charges; a failure when it
    /// does not within [`CHARGE_PATIENCE`].
    fn answer_charging(&mut self) {
        let Some((_, ended, time)) = &self.awaiting_charge else {
            return;
        };
        let outcome = if self.robot.charging {
            GoalOutcome::Succeeded {
                navigation_time: *time,
            }
        } else if ended.elapsed() >= CHARGE_PATIENCE {
            GoalOutcome::Failed {
                error: NavErrorCode::Unavailable,
                message: format!(
                    "docked, but {} did not say charging within {} s",
                    self.opts.battery,
                    CHARGE_PATIENCE.as_secs()
                ),
            }
        } else {
            return;
        };
        if let Some((goal_id, _, _)) = self.awaiting_charge.take() {
            // The kernel hears of the charging before the dock's end, or it
            // judges the dock by a battery that did not charge yet.
            self.reply(LinkReply::Telemetry {
                telemetry: self.telemetry(),
            });
            self.reply(LinkReply::Result { goal_id, outcome });
        }
    }

    /// Takes the battery state and the pose (odometry or AMCL) that arrived.
    fn read_robot_state(&mut self) {
        while let Ok(Some((b, _))) = self.battery.take() {
            self.silence.heard(Instant::now());
            if b.percentage.is_finite() {
                self.robot.battery_pct = Some(f64::from(b.percentage) * 100.0);
            }
            self.robot.charging = matches!(
                b.power_supply_status,
                POWER_SUPPLY_STATUS_CHARGING | POWER_SUPPLY_STATUS_FULL
            );
            if self.robot.charging {
                self.gate.charging();
            }
        }
        match &self.pose {
            PoseSub::Odom(sub) => {
                while let Ok(Some((odom, _))) = sub.take() {
                    let p = odom.pose.pose;
                    self.robot.pose =
                        Some(Pose::new(p.position.x, p.position.y, p.orientation.yaw()));
                    self.robot.twist = crate::geometry::Twist {
                        linear: odom.twist.twist.linear.x,
                        angular: odom.twist.twist.angular.z,
                    };
                }
            }
            PoseSub::Amcl(sub) => {
                while let Ok(Some((msg, _))) = sub.take() {
                    let p = msg.pose.pose;
                    self.robot.pose =
                        Some(Pose::new(p.position.x, p.position.y, p.orientation.yaw()));
                }
            }
        }
    }

    fn forget(&mut self, goal_id: &GoalId) {
        if let Some(t) = self.goals.remove(goal_id) {
            self.by_uuid.retain(|_, g| g != goal_id);
            self.shared.wire().track(t.action, t.uuid, false);
        }
    }

    /// The send of `goal_id` the status topics list (a running one first),
    /// with its action and status; `None` when neither lists one.
    fn find_listed(&self, goal_id: &str) -> Option<(Action, [u8; 16], i8)> {
        let key = goal_key(goal_id);
        let mut found = None;
        for (action, list) in [Action::Navigate, Action::Dock]
            .into_iter()
            .zip(&self.statuses)
        {
            for (u, s) in list.iter().flatten() {
                if uuid_of(u, &key) && found.is_none_or(|(_, _, f)| settled(f) && !settled(*s)) {
                    found = Some((action, *u, *s));
                }
            }
        }
        found
    }

    /// Answers the status queries the status topics can answer now.
    fn answer_queries(&mut self) {
        if self.queries.is_empty() || !self.shared.up.load(Ordering::SeqCst) {
            return;
        }
        let dock_served = self.dock_served();
        let known = [
            self.statuses[0].is_some(),
            self.statuses[1].is_some() || !dock_served,
        ];
        for (goal_id, asked) in std::mem::take(&mut self.queries) {
            match self.find_listed(&goal_id) {
                Some((action, bytes, status)) => self.adopt(&goal_id, action, bytes, status),
                // Not listed: never received, or forgotten by a restarted
                // Nav2. Whatever this link had sent is void.
                None if known.iter().all(|k| *k) || asked.elapsed() >= QUERY_PATIENCE => {
                    self.forget(&goal_id);
                    self.reply(LinkReply::GoalStatus {
                        goal_id,
                        status: GoalStatus::Unknown,
                    });
                }
                None => self.queries.push((goal_id, asked)),
            }
        }
    }

    /// A goal the status topic lists: running, it is adopted (its result is
    /// its `Result`); finished, its result answers the query.
    fn adopt(&mut self, goal_id: &str, action: Action, bytes: [u8; 16], status: i8) {
        let goal_id = goal_id.to_string();
        let running = !settled(status);
        if running {
            self.reply(LinkReply::GoalStatus {
                goal_id: goal_id.clone(),
                status: GoalStatus::Running,
            });
        }
        let tracked = self.goals.entry(goal_id.clone()).or_insert_with(|| {
            let mut t = Tracked::new(bytes, action, None);
            t.state = GoalState::Running;
            t
        });
        tracked.query = !running;
        tracked.uuid = bytes;
        tracked.action = action;
        if tracked.state == GoalState::Sent {
            tracked.state = GoalState::Running;
        }
        self.by_uuid.insert(bytes, goal_id.clone());
        if running {
            self.shared.wire().track(action, bytes, true);
        }
        if !self.result_requests.values().any(|(g, _)| *g == goal_id) {
            self.request_result(&goal_id);
        }
    }

    fn telemetry(&self) -> Telemetry {
        let r = &self.robot;
        let busy = self
            .goals
            .values()
            .any(|t| !t.query && matches!(t.state, GoalState::Sent | GoalState::Running));
        Telemetry {
            time: self.started.elapsed().as_secs_f64(),
            pose: r.pose.unwrap_or_default(),
            pose_unknown: r.pose.is_none(),
            twist: r.twist,
            battery_pct: r.battery_pct.unwrap_or(100.0),
            charging: r.charging,
            // A pose not known yet is in no zone (never the one at (0, 0)).
            zone: r
                .pose
                .and_then(|p| self.world.zone_at(Point { x: p.x, y: p.y }))
                .map(|z| z.name.clone()),
            distance_to_target: if busy { r.distance_to_target } else { None },
            busy: if busy {
                vec!["base".into()]
            } else {
                Vec::new()
            },
            ..Telemetry::default()
        }
    }
}

fn status_list(array: &ros2_client::action_msgs::GoalStatusArray) -> Statuses {
    array
        .status_list
        .iter()
        .map(|s| (s.goal_info.goal_id.uuid.into_bytes(), status_code(s.status)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_robot_nobody_serves_is_a_clear_error() {
        // A namespace no test robot uses: nothing answers in any domain.
        let opts =
            Ros2Options::parse("ros2://?domain=231&namespace=/nobody&interface=127.0.0.1&wait=0.3")
                .unwrap();
        let world = World::builtin("apartment").unwrap();
        let e = Ros2Link::connect(&opts, &world).unwrap_err().to_string();
        assert!(
            e.contains(
                "no Nav2 navigate_to_pose server (DDS reader on \
                 rq/nobody/navigate_to_pose/_action/send_goalRequest) in domain 231 after 0.3 s"
            ),
            "{e}"
        );
    }
}
