//! The simulated robot in its world, as pure logic: requests in, replies
//! out, time advanced only by [`Sim::step`]. No IO, no wall clock, and the
//! same seed and inputs give the same replies, bit for bit.

use std::collections::BTreeMap;

use crate::geometry::{Point, Pose, Twist, normalize_angle};
use crate::link::{
    Fault, GoalId, GoalKind, GoalOutcome, GoalStatus, Incident, LinkError, LinkReply, LinkRequest,
    NavErrorCode, Telemetry,
};
use crate::rng::SplitMix64;

use super::base::{Base, GOAL_TOLERANCE_M, follow, turn_command};
use super::battery::Battery;
use super::goal::{ActiveGoal, FEEDBACK_PERIOD_S, Job, Phase};
use crate::world::grid::Grid;
use crate::world::planner::{Path, PlanError, plan};
use crate::world::{ScriptedIncident, World};

/// Longest internal integration step, seconds.
pub const SUBSTEP_S: f64 = 0.05;
/// How far ahead on the path an obstruction stops the robot, metres.
pub const BLOCK_LOOKAHEAD_M: f64 = 1.0;
/// How long each local recovery waits for an obstruction to clear, seconds.
pub const RECOVERY_WAIT_S: f64 = 1.0;
/// Local recoveries before a blocked goal fails.
pub const MAX_RECOVERIES: u32 = 2;
/// Heading error that counts as aligned on the dock, radians.
const DOCK_ALIGN_RAD: f64 = 0.05;
/// Largest share of wheel travel lost to slip in one step.
const MAX_SLIP: f64 = 0.02;

/// The simulated robot and its world.
#[derive(Debug, Clone)]
pub struct Sim {
    world: World,
    grid: Grid,
    /// Cells of each passage, in world order.
    passage_cells: Vec<Vec<usize>>,
    /// Whether each passage is blocked, in world order.
    blocked: Vec<bool>,
    base: Base,
    battery: Battery,
    rng: SplitMix64,
    time: f64,
    stalled: bool,
    docked: bool,
    goal: Option<ActiveGoal>,
    goals: BTreeMap<GoalId, GoalStatus>,
    incidents: Vec<Incident>,
    /// Why the camera fails, while it does.
    camera_fault: Option<String>,
    /// The world's scripted incidents, by time.
    script: Vec<ScriptedIncident>,
    next_scripted: usize,
    outbox: Vec<LinkReply>,
}

impl Sim {
    /// A robot at the world's start pose, at rest, with the initial charge;
    /// `seed` drives the (small) wheel slip.
    pub fn new(world: World, seed: u64) -> Self {
        let grid = Grid::new(&world);
        let passage_cells = world
            .passages
            .iter()
            .map(|p| world.passage_cells(p))
            .collect();
        let mut script = world.incidents.clone();
        script.sort_by(|a, b| a.at.total_cmp(&b.at));
        Self {
            blocked: vec![false; world.passages.len()],
            base: Base::new(world.start_pose, world.base),
            battery: Battery::new(world.battery),
            rng: SplitMix64::new(seed),
            time: 0.0,
            stalled: false,
            docked: false,
            goal: None,
            goals: BTreeMap::new(),
            incidents: Vec::new(),
            camera_fault: None,
            script,
            next_scripted: 0,
            outbox: Vec::new(),
            grid,
            passage_cells,
            world,
        }
    }

    /// The world.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// The occupancy grid with current blockages.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    /// Sim seconds since start.
    pub fn time(&self) -> f64 {
        self.time
    }

    /// Where the robot is.
    pub fn pose(&self) -> Pose {
        self.base.pose()
    }

    /// How the robot is moving.
    pub fn twist(&self) -> Twist {
        self.base.twist()
    }

    /// State of charge, percent.
    pub fn battery_pct(&self) -> f64 {
        self.battery.pct()
    }

    /// Whether the robot is on the dock, charging.
    pub fn is_charging(&self) -> bool {
        self.docked
    }

    /// Whether the base is stalled.
    pub fn is_stalled(&self) -> bool {
        self.stalled
    }

    /// The id of the running base goal, if any.
    pub fn active_goal(&self) -> Option<&str> {
        self.goal.as_ref().map(|g| g.id.as_str())
    }

    /// The running goal's planned path, start first (empty when idle).
    pub fn path(&self) -> &[Point] {
        self.goal.as_ref().map_or(&[], |g| g.path.points())
    }

    /// The running goal's progress along [`Sim::path`], metres.
    pub fn path_progress(&self) -> f64 {
        self.goal.as_ref().map_or(0.0, |g| g.s)
    }

    /// Incidents happening now, anywhere.
    pub fn incidents(&self) -> &[Incident] {
        &self.incidents
    }

    /// Names of the passages blocked now, in world order.
    pub fn blocked_passages(&self) -> impl Iterator<Item = &str> {
        self.world
            .passages
            .iter()
            .zip(&self.blocked)
            .filter(|(_, b)| **b)
            .map(|(p, _)| p.name.as_str())
    }

    /// What the robot knows about goal `id`.
    pub fn goal_status(&self, id: &str) -> GoalStatus {
        self.goals.get(id).cloned().unwrap_or(GoalStatus::Unknown)
    }

    /// Plans from the robot's position to `target` with the current
    /// blockages, without starting anything.
    pub fn plan_to(&self, target: Point) -> Result<Path, PlanError> {
        plan(&self.grid, self.pose().point(), target)
    }

    /// Applies a request. Goals, cancels and queries always succeed here and
    /// answer through [`Sim::drain`]; a fault naming an unknown passage or
    /// zone, or a battery level outside 0–100, is refused.
    pub fn apply(&mut self, request: LinkRequest) -> Result<(), LinkError> {
        match request {
            LinkRequest::SendGoal { goal_id, kind } => self.send_goal(goal_id, kind),
            LinkRequest::Cancel { goal_id } => self.cancel(goal_id),
            LinkRequest::QueryGoal { goal_id } => {
                let status = self.goal_status(&goal_id);
                self.outbox.push(LinkReply::GoalStatus { goal_id, status });
            }
            LinkRequest::Inject { fault } => {
                self.inject(&fault)?;
                self.outbox.push(LinkReply::FaultApplied { fault });
            }
            LinkRequest::Heartbeat => {}
        }
        Ok(())
    }

    /// Whether the base has somewhere to go or is still moving.
    pub fn is_moving(&self) -> bool {
        self.goal.as_ref().is_some_and(|g| g.job != Job::Stop) || !self.base.is_at_rest()
    }

    /// Brings the base to rest on the robot's own account (the dead-man):
    /// the running base goal ends as canceled and a stop goal `goal_id`
    /// brakes the base. Returns the goal it stopped, if one ran.
    pub fn bring_to_rest(&mut self, goal_id: GoalId) -> Option<GoalId> {
        let stopped = self
            .goal
            .as_ref()
            .filter(|g| g.job != Job::Stop)
            .map(|g| g.id.clone());
        self.send_goal(goal_id, GoalKind::StopBase);
        stopped
    }

    /// Moves every reply produced so far into `out`, oldest first.
    pub fn drain(&mut self, out: &mut Vec<LinkReply>) {
        out.append(&mut self.outbox);
    }

    /// Queues a telemetry reply with the current state.
    pub fn publish_telemetry(&mut self) {
        let telemetry = self.telemetry();
        self.outbox.push(LinkReply::Telemetry { telemetry });
    }

    /// The robot's state now.
    pub fn telemetry(&self) -> Telemetry {
        let pose = self.pose();
        let zone = self.world.zone_at(pose.point()).map(|z| z.name.clone());
        let incidents_in_view = zone
            .as_deref()
            .map(|z| {
                self.incidents
                    .iter()
                    .filter(|i| i.zone == z)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        Telemetry {
            time: self.time,
            pose,
            // The simulator always knows where its robot is.
            pose_unknown: false,
            twist: self.twist(),
            battery_pct: self.battery.pct(),
            charging: self.docked,
            zone,
            distance_to_target: self
                .goal
                .as_ref()
                .and_then(|g| g.target().map(|_| g.remaining(pose.point()))),
            busy: if self.goal.is_some() {
                vec!["base".to_string()]
            } else {
                Vec::new()
            },
            stalled: self.stalled,
            blocked_passages: self.blocked_passages().map(str::to_string).collect(),
            incidents_in_view,
            path: self.path().to_vec(),
            camera_fault: self.camera_fault.clone(),
        }
    }

    /// Lets `dt` sim seconds pass, in substeps of at most [`SUBSTEP_S`].
    pub fn step(&mut self, dt: f64) {
        if !(dt.is_finite() && dt > 0.0) {
            return;
        }
        let n = (dt / SUBSTEP_S).ceil().max(1.0);
        let h = dt / n;
        for _ in 0..n as u64 {
            self.substep(h);
        }
    }

    fn substep(&mut self, h: f64) {
        self.time += h;
        self.fire_scripted();
        let command = if self.battery.is_empty() {
            Twist::default()
        } else {
            self.command()
        };
        let slip = self.rng.next_f64() * MAX_SLIP;
        let moved = self.base.drive(command, h, slip, self.stalled);
        self.battery.update(h, moved, self.docked);
        if let Some(goal) = self.goal.take() {
            self.advance_goal(goal, moved);
        }
    }

    /// What the running goal asks of the base now.
    fn command(&self) -> Twist {
        let Some(goal) = &self.goal else {
            return Twist::default();
        };
        let pose = self.pose();
        match (goal.phase, &goal.job) {
            (Phase::Driving, _) => follow(
                &goal.path,
                goal.s,
                goal.remaining(pose.point()),
                pose,
                self.world.base,
            ),
            (Phase::Aligning, Job::Dock { dock }) => Twist {
                linear: 0.0,
                angular: turn_command(normalize_angle(dock.theta - pose.theta), self.world.base),
            },
            _ => Twist::default(),
        }
    }

    fn advance_goal(&mut self, mut goal: ActiveGoal, moved: f64) {
        goal.travelled += moved;
        let pose = self.pose();
        let finished = match goal.phase {
            Phase::Driving => {
                let (seg, s) = goal.path.project(pose.point(), goal.seg, 3);
                (goal.seg, goal.s) = (seg, s);
                self.drive_phase(&mut goal, pose)
            }
            Phase::Recovering { until } if self.time >= until - 1e-9 => {
                goal.rescan_blocked(&self.grid);
                if !goal.blocked_within(BLOCK_LOOKAHEAD_M) {
                    goal.phase = Phase::Driving;
                    None
                } else if goal.recoveries < MAX_RECOVERIES {
                    goal.recoveries += 1;
                    goal.phase = Phase::Recovering {
                        until: self.time + RECOVERY_WAIT_S,
                    };
                    None
                } else {
                    Some(GoalOutcome::Failed {
                        error: NavErrorCode::Blocked,
                        message: self.blocked_message(&goal),
                    })
                }
            }
            Phase::Recovering { .. } => None,
            Phase::Aligning => {
                let aligned = match goal.job {
                    Job::Dock { dock } => {
                        normalize_angle(dock.theta - pose.theta).abs() < DOCK_ALIGN_RAD
                    }
                    _ => true,
                };
                (aligned && self.twist().angular.abs() < 0.05).then(|| {
                    self.docked = true;
                    self.succeeded(&goal)
                })
            }
            Phase::Braking => self.base.is_at_rest().then(|| self.succeeded(&goal)),
        };
        if let Some(outcome) = finished {
            self.finish(goal.id, outcome);
            return;
        }
        if self.time >= goal.next_feedback - 1e-9 {
            goal.next_feedback += FEEDBACK_PERIOD_S;
            let feedback = goal.feedback(self.time, pose.point(), 0.8 * self.world.base.max_speed);
            self.outbox.push(LinkReply::Feedback {
                goal_id: goal.id.clone(),
                feedback,
            });
        }
        self.goal = Some(goal);
    }

    /// One driving step: arrived, stopped by an obstruction, or on its way.
    fn drive_phase(&mut self, goal: &mut ActiveGoal, pose: Pose) -> Option<GoalOutcome> {
        let target = goal.target()?;
        if pose.point().distance(target) < GOAL_TOLERANCE_M {
            if matches!(goal.job, Job::Dock { .. }) {
                goal.phase = Phase::Aligning;
                return None;
            }
            return Some(self.succeeded(goal));
        }
        if goal.blocked_within(BLOCK_LOOKAHEAD_M) {
            goal.recoveries += 1;
            goal.phase = Phase::Recovering {
                until: self.time + RECOVERY_WAIT_S,
            };
        }
        None
    }

    fn succeeded(&self, goal: &ActiveGoal) -> GoalOutcome {
        GoalOutcome::Succeeded {
            navigation_time: self.time - goal.started,
        }
    }

    fn blocked_message(&self, goal: &ActiveGoal) -> String {
        let passage = goal.blocked_at.and_then(|(_, cell)| {
            self.passage_cells
                .iter()
                .zip(&self.blocked)
                .position(|(cells, b)| *b && cells.contains(&cell))
                .map(|i| self.world.passages[i].name.as_str())
        });
        match passage {
            Some(name) => format!(
                "the path is blocked at `{name}`; {} recoveries did not clear it",
                goal.recoveries
            ),
            None => format!(
                "the path is blocked; {} recoveries did not clear it",
                goal.recoveries
            ),
        }
    }

    fn finish(&mut self, goal_id: GoalId, outcome: GoalOutcome) {
        self.goals.insert(
            goal_id.clone(),
            GoalStatus::Finished {
                outcome: outcome.clone(),
            },
        );
        self.outbox.push(LinkReply::Result { goal_id, outcome });
    }

    fn send_goal(&mut self, goal_id: GoalId, kind: GoalKind) {
        // The same id again is the same goal: report it, do not redo it.
        match self.goals.get(&goal_id) {
            Some(GoalStatus::Finished { outcome }) => {
                let outcome = outcome.clone();
                self.outbox.push(LinkReply::Result { goal_id, outcome });
                return;
            }
            Some(_) => {
                self.outbox.push(LinkReply::Accepted { goal_id });
                return;
            }
            None => {}
        }
        let (job, zone) = match kind {
            GoalKind::Navigate { target, zone } => (Job::Navigate { target }, zone),
            GoalKind::Dock => (
                Job::Dock {
                    dock: self.world.dock_pose,
                },
                Some(self.world.charger_zone.clone()),
            ),
            GoalKind::StopBase => (Job::Stop, None),
        };
        let planned = job
            .target()
            .map_or_else(|| Ok(Path::default()), |t| self.plan_to(t));
        let target = job.target();
        let place = || {
            let at = target.map_or_else(String::new, |t| format!("({}, {})", t.x, t.y));
            zone.as_ref()
                .map_or_else(|| at.clone(), |z| format!("{z} {at}"))
        };
        if let Err(e @ (PlanError::TargetOffMap | PlanError::TargetInWall)) = planned {
            let error = NavErrorCode::InvalidGoal;
            let message = format!("{e}: {}", place());
            self.outbox.push(LinkReply::Rejected {
                goal_id: goal_id.clone(),
                error,
                message: message.clone(),
            });
            let outcome = GoalOutcome::Failed { error, message };
            self.goals.insert(goal_id, GoalStatus::Finished { outcome });
            return;
        }
        self.preempt();
        self.outbox.push(LinkReply::Accepted {
            goal_id: goal_id.clone(),
        });
        self.goals.insert(goal_id.clone(), GoalStatus::Running);
        if job != Job::Stop {
            self.docked = false;
        }
        match planned {
            Ok(path) => {
                let mut goal = ActiveGoal::new(goal_id, job, path, self.time);
                goal.rescan_blocked(&self.grid);
                self.goal = Some(goal);
            }
            Err(e) => {
                let from = self.pose();
                let message = format!("{e} from ({}, {}) to {}", from.x, from.y, place());
                self.finish(
                    goal_id,
                    GoalOutcome::Failed {
                        error: NavErrorCode::NoPath,
                        message,
                    },
                );
            }
        }
    }

    /// Ends the running goal, if any, as canceled.
    fn preempt(&mut self) {
        if let Some(old) = self.goal.take() {
            self.finish(old.id, GoalOutcome::Canceled);
        }
    }

    fn cancel(&mut self, goal_id: GoalId) {
        if self.goal.as_ref().is_some_and(|g| g.id == goal_id) {
            self.preempt();
        } else {
            let status = self.goal_status(&goal_id);
            self.outbox.push(LinkReply::GoalStatus { goal_id, status });
        }
    }

    fn inject(&mut self, fault: &Fault) -> Result<(), LinkError> {
        match fault {
            Fault::Block { passage } => self.set_blocked(passage, true)?,
            Fault::Unblock { passage } => self.set_blocked(passage, false)?,
            Fault::SetBattery { pct } => {
                if !(0.0..=100.0).contains(pct) {
                    return Err(LinkError::Invalid(format!(
                        "battery percent must be in [0, 100], found {pct}"
                    )));
                }
                self.battery.set_pct(*pct);
            }
            Fault::Stall => self.stalled = true,
            Fault::Unstall => self.stalled = false,
            Fault::Incident { zone, kind } => {
                let zone = self.zone_name(zone)?;
                self.add_incident(Incident {
                    zone,
                    kind: kind.clone(),
                });
            }
            Fault::ClearIncident { zone } => {
                let zone = self.zone_name(zone)?;
                self.incidents.retain(|i| i.zone != zone);
            }
            Fault::CameraFail { reason } => self.camera_fault = Some(reason.clone()),
            Fault::CameraRestore => self.camera_fault = None,
            Fault::DeviceOffline { .. } | Fault::DeviceOnline { .. } => {
                return Err(LinkError::Invalid(
                    "device faults are applied by the brain's device world, not the robot".into(),
                ));
            }
        }
        Ok(())
    }

    fn set_blocked(&mut self, passage: &str, blocked: bool) -> Result<(), LinkError> {
        let Some(i) = self.world.passages.iter().position(|p| p.name == passage) else {
            let known: Vec<&str> = self
                .world
                .passages
                .iter()
                .map(|p| p.name.as_str())
                .collect();
            return Err(LinkError::Invalid(format!(
                "unknown passage `{passage}`; expected one of: {}",
                known.join(", ")
            )));
        };
        if self.blocked[i] == blocked {
            return Ok(());
        }
        self.blocked[i] = blocked;
        self.grid.set_blocked(&self.passage_cells[i], blocked);
        if let Some(goal) = &mut self.goal {
            goal.rescan_blocked(&self.grid);
        }
        Ok(())
    }

    /// The canonical name of the zone `name` means (name or alias).
    fn zone_name(&self, name: &str) -> Result<String, LinkError> {
        self.world
            .find_zone(name)
            .map(|z| z.name.clone())
            .ok_or_else(|| {
                let known: Vec<&str> = self.world.zones.iter().map(|z| z.name.as_str()).collect();
                LinkError::Invalid(format!(
                    "unknown zone `{name}`; expected one of: {}",
                    known.join(", ")
                ))
            })
    }

    fn add_incident(&mut self, incident: Incident) {
        if !self.incidents.contains(&incident) {
            self.incidents.push(incident);
        }
    }

    fn fire_scripted(&mut self) {
        while let Some(s) = self.script.get(self.next_scripted)
            && s.at <= self.time + 1e-9
        {
            let incident = Incident {
                zone: s.zone.clone(),
                kind: s.kind.clone(),
            };
            self.next_scripted += 1;
            self.add_incident(incident);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sim() -> Sim {
        Sim::new(World::builtin("apartment").unwrap(), 7)
    }

    fn go(sim: &mut Sim, id: &str, zone: &str) {
        let target = sim.world().zone(zone).unwrap().goal;
        sim.apply(LinkRequest::SendGoal {
            goal_id: id.into(),
            kind: GoalKind::Navigate {
                target,
                zone: Some(zone.into()),
            },
        })
        .unwrap();
    }

    fn inject(sim: &mut Sim, fault: Fault) {
        sim.apply(LinkRequest::Inject { fault }).unwrap();
    }

    /// Steps until goal `id` ends (or `max_s` passes); returns its outcome
    /// and every reply seen.
    fn run(sim: &mut Sim, id: &str, max_s: f64) -> (Option<GoalOutcome>, Vec<LinkReply>) {
        let mut seen = Vec::new();
        let end = sim.time() + max_s;
        while sim.time() < end {
            sim.step(0.1);
            let from = seen.len();
            sim.drain(&mut seen);
            for r in &seen[from..] {
                if let LinkReply::Result { goal_id, outcome } = r
                    && goal_id == id
                {
                    return (Some(outcome.clone()), seen);
                }
            }
        }
        (None, seen)
    }

    fn succeeded(outcome: Option<&GoalOutcome>) -> bool {
        matches!(outcome, Some(GoalOutcome::Succeeded { .. }))
    }

    #[test]
    fn navigates_to_every_zone_and_stops_within_tolerance() {
        let mut s = sim();
        let names: Vec<String> = s.world().zones.iter().map(|z| z.name.clone()).collect();
        for name in names {
            go(&mut s, &name, &name);
            let (outcome, _) = run(&mut s, &name, 120.0);
            assert!(succeeded(outcome.as_ref()), "{name}: {outcome:?}");
            s.step(3.0);
            let goal = s.world().zone(&name).unwrap().goal;
            let off = s.pose().point().distance(goal);
            assert!(off < 0.25, "{name}: stopped {off} m from the goal");
            assert_eq!(
                s.telemetry().zone.as_deref(),
                Some(name.as_str()),
                "at {:?}",
                s.pose()
            );
        }
    }

    #[test]
    fn crossing_the_flat_takes_tens_of_seconds() {
        let mut s = sim();
        go(&mut s, "g", "bedroom");
        let (outcome, _) = run(&mut s, "g", 120.0);
        let Some(GoalOutcome::Succeeded { navigation_time }) = outcome else {
            panic!("{outcome:?}");
        };
        assert!((15.0..60.0).contains(&navigation_time), "{navigation_time}");
    }

    #[test]
    fn a_blocked_door_fails_after_two_recoveries_and_a_new_goal_goes_round() {
        let mut s = sim();
        let direct = s.plan_to(s.world().zone("kitchen").unwrap().goal).unwrap();
        go(&mut s, "k1", "kitchen");
        s.step(2.0);
        inject(
            &mut s,
            Fault::Block {
                passage: "kitchen_door".into(),
            },
        );
        let (outcome, replies) = run(&mut s, "k1", 60.0);
        let Some(GoalOutcome::Failed { error, message }) = outcome else {
            panic!("{outcome:?}");
        };
        assert_eq!(error, NavErrorCode::Blocked);
        assert!(message.contains("kitchen_door"), "{message}");
        let last_feedback = replies.iter().rev().find_map(|r| match r {
            LinkReply::Feedback { feedback, .. } => Some(feedback.clone()),
            _ => None,
        });
        assert_eq!(last_feedback.unwrap().number_of_recoveries, 2);
        let door = s.world().passage("kitchen_door").unwrap().rect.center();
        assert!(
            s.pose().point().distance(door) > 0.3,
            "stopped short of the door"
        );
        let kitchen = s.world().zone("kitchen").unwrap().goal;
        let around = s.plan_to(kitchen).unwrap();
        let mut open = s.clone();
        inject(
            &mut open,
            Fault::Unblock {
                passage: "kitchen_door".into(),
            },
        );
        let through = open.plan_to(kitchen).unwrap();
        assert!(
            around.length() > through.length() + 1.0,
            "{} vs {}",
            around.length(),
            through.length()
        );
        assert!(direct.length() < 7.0, "{}", direct.length());
        go(&mut s, "k2", "kitchen");
        let (outcome, _) = run(&mut s, "k2", 90.0);
        assert!(succeeded(outcome.as_ref()), "{outcome:?}");
    }

    #[test]
    fn an_obstruction_that_clears_during_recovery_lets_the_goal_finish() {
        let mut s = sim();
        go(&mut s, "k", "kitchen");
        inject(
            &mut s,
            Fault::Block {
                passage: "kitchen_door".into(),
            },
        );
        let mut recovering = false;
        for _ in 0..200 {
            s.step(0.1);
            if matches!(
                s.goal.as_ref().map(|g| g.phase),
                Some(Phase::Recovering { .. })
            ) {
                recovering = true;
                break;
            }
        }
        assert!(recovering);
        inject(
            &mut s,
            Fault::Unblock {
                passage: "kitchen_door".into(),
            },
        );
        let (outcome, _) = run(&mut s, "k", 60.0);
        assert!(succeeded(outcome.as_ref()), "{outcome:?}");
    }

    #[test]
    fn the_only_door_blocked_means_no_path() {
        let mut s = sim();
        inject(
            &mut s,
            Fault::Block {
                passage: "hall_door".into(),
            },
        );
        go(&mut s, "b", "bedroom");
        let mut out = Vec::new();
        s.drain(&mut out);
        assert!(matches!(&out[1], LinkReply::Accepted { goal_id } if goal_id == "b"));
        let LinkReply::Result {
            outcome: GoalOutcome::Failed { error, .. },
            ..
        } = &out[2]
        else {
            panic!("{out:?}");
        };
        assert_eq!(*error, NavErrorCode::NoPath);
        assert!(s.telemetry().busy.is_empty());
    }

    #[test]
    fn targets_in_walls_or_off_the_map_are_rejected() {
        let mut s = sim();
        for (id, target) in [
            ("wall", Point::new(0.1, 0.1)),
            ("off", Point::new(-3.0, 2.0)),
        ] {
            s.apply(LinkRequest::SendGoal {
                goal_id: id.into(),
                kind: GoalKind::Navigate { target, zone: None },
            })
            .unwrap();
        }
        let mut out = Vec::new();
        s.drain(&mut out);
        assert!(out.iter().all(|r| matches!(
            r,
            LinkReply::Rejected {
                error: NavErrorCode::InvalidGoal,
                ..
            }
        )));
        assert!(matches!(s.goal_status("wall"), GoalStatus::Finished { .. }));
        assert_eq!(s.active_goal(), None);
    }

    #[test]
    fn driving_drains_faster_than_idling_and_the_dock_charges() {
        let mut idle = sim();
        idle.step(30.0);
        let idle_drop = 90.0 - idle.battery_pct();
        let mut s = sim();
        go(&mut s, "g", "bedroom");
        s.step(30.0);
        let drive_drop = 90.0 - s.battery_pct();
        assert!(drive_drop > idle_drop * 3.0, "{drive_drop} vs {idle_drop}");
        s.apply(LinkRequest::SendGoal {
            goal_id: "d".into(),
            kind: GoalKind::Dock,
        })
        .unwrap();
        let (outcome, _) = run(&mut s, "d", 120.0);
        assert!(succeeded(outcome.as_ref()), "{outcome:?}");
        let t = s.telemetry();
        assert!(t.charging);
        assert_eq!(t.zone.as_deref(), Some("charger"));
        let before = s.battery_pct();
        s.step(5.0);
        assert!(s.battery_pct() > before + 4.0);
        s.step(200.0);
        assert_eq!(s.battery_pct(), 100.0);
        go(&mut s, "away", "hallway");
        assert!(!s.is_charging(), "a new goal leaves the dock");
    }

    #[test]
    fn a_stalled_base_stays_put_without_failing() {
        let mut s = sim();
        inject(&mut s, Fault::Stall);
        go(&mut s, "g", "kitchen");
        let start = s.pose();
        let (outcome, replies) = run(&mut s, "g", 10.0);
        assert!(outcome.is_none());
        assert_eq!(s.pose(), start);
        assert!(s.telemetry().stalled);
        let feedbacks = replies
            .iter()
            .filter(|r| matches!(r, LinkReply::Feedback { .. }))
            .count();
        assert!(
            (19..=21).contains(&feedbacks),
            "about every 0.5 s: {feedbacks}"
        );
        inject(&mut s, Fault::Unstall);
        let (outcome, _) = run(&mut s, "g", 60.0);
        assert!(succeeded(outcome.as_ref()));
    }

    #[test]
    fn a_flat_battery_stops_the_base() {
        let mut s = sim();
        go(&mut s, "g", "bedroom");
        s.step(3.0);
        inject(&mut s, Fault::SetBattery { pct: 0.0 });
        s.step(3.0);
        let here = s.pose();
        s.step(5.0);
        assert_eq!(s.pose().point(), here.point());
        assert_eq!(s.battery_pct(), 0.0);
    }

    #[test]
    fn cancel_and_preemption_reply_canceled() {
        let mut s = sim();
        go(&mut s, "a", "kitchen");
        s.step(1.0);
        go(&mut s, "b", "bedroom");
        let mut out = Vec::new();
        s.drain(&mut out);
        assert!(out.contains(&LinkReply::Result {
            goal_id: "a".into(),
            outcome: GoalOutcome::Canceled,
        }));
        assert_eq!(s.active_goal(), Some("b"));
        s.apply(LinkRequest::Cancel {
            goal_id: "b".into(),
        })
        .unwrap();
        s.drain(&mut out);
        assert_eq!(
            out.last(),
            Some(&LinkReply::Result {
                goal_id: "b".into(),
                outcome: GoalOutcome::Canceled,
            })
        );
        assert!(s.telemetry().busy.is_empty());
    }

    #[test]
    fn stop_base_cancels_and_brakes() {
        let mut s = sim();
        go(&mut s, "a", "bedroom");
        s.step(5.0);
        assert!(s.twist().linear > 0.2);
        s.apply(LinkRequest::SendGoal {
            goal_id: "stop".into(),
            kind: GoalKind::StopBase,
        })
        .unwrap();
        assert_eq!(
            s.goal_status("a"),
            GoalStatus::Finished {
                outcome: GoalOutcome::Canceled
            }
        );
        let (outcome, _) = run(&mut s, "stop", 5.0);
        assert!(succeeded(outcome.as_ref()));
        assert!(s.base.is_at_rest());
    }

    #[test]
    fn status_queries_cover_every_goal_ever_received() {
        let mut s = sim();
        let query = |s: &mut Sim, id: &str| {
            s.apply(LinkRequest::QueryGoal { goal_id: id.into() })
                .unwrap();
            let mut out = Vec::new();
            s.drain(&mut out);
            match out.pop() {
                Some(LinkReply::GoalStatus { status, .. }) => status,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(query(&mut s, "x"), GoalStatus::Unknown);
        go(&mut s, "x", "hallway");
        assert_eq!(query(&mut s, "x"), GoalStatus::Running);
        let (outcome, _) = run(&mut s, "x", 60.0);
        assert_eq!(
            query(&mut s, "x"),
            GoalStatus::Finished {
                outcome: outcome.unwrap()
            }
        );
        // Sending the same id again reports, rather than redoes, the goal.
        go(&mut s, "x", "kitchen");
        assert_eq!(s.active_goal(), None);
    }

    #[test]
    fn faults_name_what_they_do_not_know() {
        let mut s = sim();
        let e = s
            .apply(LinkRequest::Inject {
                fault: Fault::Block {
                    passage: "garage_door".into(),
                },
            })
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid request: unknown passage `garage_door`; expected one of: kitchen_door, kitchen_back_door, hall_door, front_door, study_door"
        );
        let e = s.apply(LinkRequest::Inject {
            fault: Fault::Incident {
                zone: "garage".into(),
                kind: "smoke".into(),
            },
        });
        assert!(matches!(e, Err(LinkError::Invalid(_))));
        assert!(
            s.apply(LinkRequest::Inject {
                fault: Fault::SetBattery { pct: 120.0 }
            })
            .is_err()
        );
        let mut out = Vec::new();
        s.drain(&mut out);
        assert!(out.is_empty(), "refused faults are not applied: {out:?}");
    }

    #[test]
    fn incidents_are_seen_only_from_their_zone() {
        let mut s = sim();
        inject(
            &mut s,
            Fault::Incident {
                zone: "厨房".into(),
                kind: "smoke".into(),
            },
        );
        assert!(s.telemetry().incidents_in_view.is_empty());
        go(&mut s, "k", "kitchen");
        run(&mut s, "k", 60.0);
        assert_eq!(
            s.telemetry().incidents_in_view,
            vec![Incident {
                zone: "kitchen".into(),
                kind: "smoke".into()
            }]
        );
        inject(
            &mut s,
            Fault::ClearIncident {
                zone: "kitchen".into(),
            },
        );
        assert!(s.telemetry().incidents_in_view.is_empty());
    }

    #[test]
    fn scripted_incidents_appear_on_time() {
        let mut world = World::builtin("apartment").unwrap();
        world.incidents.push(ScriptedIncident {
            at: 12.0,
            zone: "living_room".into(),
            kind: "person".into(),
        });
        let mut s = Sim::new(world, 1);
        s.step(11.9);
        assert!(s.incidents().is_empty());
        s.step(0.2);
        assert_eq!(s.telemetry().incidents_in_view.len(), 1);
    }

    #[test]
    fn limits_hold_on_a_whole_patrol() {
        let mut s = sim();
        let limits = s.world().base;
        let route: Vec<String> = s.world().route("default").unwrap().to_vec();
        let dt = SUBSTEP_S;
        for (i, zone) in route.iter().enumerate() {
            go(&mut s, &i.to_string(), zone);
            let mut prev = s.twist();
            let mut done = false;
            for _ in 0..4000 {
                s.step(dt);
                let t = s.twist();
                assert!(t.linear.abs() <= limits.max_speed + 1e-9);
                assert!(t.angular.abs() <= limits.max_turn_rate + 1e-9);
                assert!((t.linear - prev.linear).abs() <= limits.max_accel * dt + 1e-9);
                assert!((t.angular - prev.angular).abs() <= limits.max_turn_accel * dt + 1e-9);
                prev = t;
                if s.active_goal().is_none() {
                    done = true;
                    break;
                }
            }
            assert!(done, "{zone} not reached");
        }
    }
}
