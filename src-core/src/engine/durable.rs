//! The durable side of the engine: the per-tick commit, the ledger around
//! dispatch, resume from a checkpoint and reconciliation with the robot.
//!
//! The rule that makes a resume safe: nothing a tick wants to send leaves
//! the [`Outbox`](crate::link::Outbox) until the tick's events, checkpoint
//! and ledger `started` rows are committed. So after a kill, a goal the
//! robot may have received always has a ledger row, and the checkpoint the
//! brain restores already counts it as running; the robot is then asked
//! about each open row by goal id before anything is sent again.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::Engine;
use super::checkpoint::{Checkpoint, Parts};
use crate::link::{GoalStatus, LinkReply, LinkRequest, RobotLink};
use crate::protocol::{Event, EventKind};
use crate::skills::runner::GoalResult;
use crate::store::{
    CheckpointBody, Commit, LedgerEntry, LedgerStatus, Store, StoreConfig, StoreError, ThreadRow,
    guard::FileGuard,
};

/// The store and what the current tick owes it.
pub(super) struct Durable {
    store: Store,
    config: StoreConfig,
    /// The last checkpoint written, kept up to date tick by tick, to
    /// compute the next delta.
    last: Option<Checkpoint>,
    /// Checkpoints written for this thread so far.
    count: u64,
    /// Goals dispatched this tick: goal id → (step, op index, skill).
    dispatched: BTreeMap<String, (u64, u32, String)>,
    /// Ledger rows that moved on this tick.
    updates: Vec<(String, LedgerStatus, Option<Value>)>,
    /// Open ledger rows by goal id, with the exact request sent.
    open: BTreeMap<String, LinkRequest>,
    /// The write that failed; the thread is halted until a restart.
    failed: Option<String>,
    /// Stops sent straight to the robot, awaiting their ledger row.
    sent: Vec<LinkRequest>,
    /// The database file, watched for deletion, replacement, `chmod a-w`.
    guard: Option<FileGuard>,
}

impl Engine {
    /// Records this run in `store`: a new thread, or (with `resume`) the
    /// thread's last checkpoint restored and its open side effects
    /// reconciled with the robot before anything is sent again.
    pub fn attach_store(
        &mut self,
        mut store: Store,
        config: &StoreConfig,
        resume: bool,
    ) -> Result<(), StoreError> {
        let thread = self.thread_id().to_string();
        let count = if resume {
            self.restore_checkpoint(&store, &thread)?
        } else {
            store.create_thread(&thread, self.state.mode.as_str())?;
            0
        };
        let open = store
            .open_ledger(&thread)?
            .into_iter()
            .map(|l| (l.goal_id, l.request))
            .collect();
        // Home calls the last process was cut short in, settled below.
        let settled_calls = attach_audit(&self.home.handle, &store, resume);
        let guard = FileGuard::new(store.path());
        self.durable = Some(Durable {
            store,
            config: config.clone(),
            // The first checkpoint of a process is full: it starts from it.
            last: None,
            count,
            dispatched: BTreeMap::new(),
            updates: Vec::new(),
            open,
            failed: None,
            sent: Vec::new(),
            guard,
        });
        if resume {
            self.announce_resume(&thread, &settled_calls);
        }
        // The first checkpoint of a process is full, so it stands alone.
        self.commit_and_flush(true);
        Ok(())
    }

    /// Restores the kernel state, the running goals and the home from
    /// `thread`'s last checkpoint in `store`; the number of checkpoints
    /// written so far.
    fn restore_checkpoint(&mut self, store: &Store, thread: &str) -> Result<u64, StoreError> {
        store.thread(thread)?;
        // A damaged record is refused before anything is written after it.
        store.check_events(thread)?;
        let Some(r) = store.restore(thread)? else {
            return Err(StoreError::NoCheckpoint {
                path: store.path().to_path_buf(),
                id: thread.to_string(),
            });
        };
        let decode = |what: &str, e: serde_json::Error| StoreError::Decode {
            path: store.path().to_path_buf(),
            what: format!("{what} in the checkpoint of thread `{thread}`"),
            detail: e.to_string(),
        };
        self.state = serde_json::from_value(r.state["state"].clone())
            .map_err(|e| decode("the kernel state", e))?;
        self.mind.runner = serde_json::from_value(r.state["runner"].clone())
            .map_err(|e| decode("the running goals", e))?;
        if let Some(home) = r.state.get("home") {
            crate::hci::lock(&self.home.handle).devices.restore(home);
        }
        ask_again(&mut self.state.queue);
        Ok(r.count)
    }

    /// After a resume: the face is told where the thread stands (a
    /// snapshot, the resume, the approvals still waiting, the home calls
    /// settled), then the robot is asked about every goal still open.
    fn announce_resume(&mut self, thread: &str, settled_calls: &[String]) {
        self.traffic.outbox.clear();
        let snapshot = self.snapshot();
        self.emit(EventKind::Snapshot {
            snapshot: Box::new(snapshot),
        });
        self.emit(EventKind::Log {
            level: "info".into(),
            message: format!(
                "resumed thread {thread} at step {}, event {}",
                self.state.step, self.state.seq
            ),
        });
        // The same prompt as before the restart, with the same id.
        for a in self.state.approvals.clone() {
            self.emit(EventKind::Approval {
                approval_id: a.id,
                task_id: a.task_id,
                status: crate::protocol::ApprovalStatus::Requested,
                op: a.op,
                reason: a.reason,
                requested_by: a.requested_by,
            });
        }
        for line in settled_calls {
            self.log("warn", &format!("a home call the brain stopped in: {line}"));
        }
        self.reconcile();
    }

    /// Why the thread stopped recording, if it did. A halted engine runs no
    /// more ticks: a thread pauses rather than running unrecorded.
    pub fn halted(&self) -> Option<&str> {
        self.durable.as_ref().and_then(|d| d.failed.as_deref())
    }

    /// Ends the run: brings the robot to rest (sent before anything is
    /// recorded), commits what is left and, when nothing is left to do,
    /// marks the thread finished and applies the checkpoint retention.
    /// Closing twice does nothing the second time.
    pub fn close(&mut self) {
        if self.robot.closed {
            return;
        }
        self.robot.closed = true;
        // Whether the thread is done, judged before the stop's own events.
        let settled = self.traffic.pending.is_empty()
            && self.state.approvals.is_empty()
            && self.is_settled_now();
        self.rest("the brain is shutting down", !settled);
        let value = self.checkpoint_value();
        let thread = self.thread_id().to_string();
        if let Some(d) = self.durable.as_mut()
            && d.failed.is_none()
            && settled
            && let Err(e) = d.store.finish(&thread, &value, d.config.keep_checkpoints)
        {
            d.failed = Some(e.to_string());
        }
        self.mind.registry.cleanup_all();
    }

    /// Marks the store failed (nothing more is committed) with `why`.
    pub(super) fn fail_store(&mut self, why: &str) {
        if let Some(d) = self.durable.as_mut()
            && d.failed.is_none()
        {
            d.failed = Some(why.to_string());
        }
    }

    /// Goals the ledger holds open or the brain is asking the robot about.
    pub(super) fn open_goals(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.robot.reconciling.keys().cloned().collect();
        if let Some(d) = &self.durable {
            ids.extend(
                d.open
                    .keys()
                    .filter(|id| !self.robot.reconciling.contains_key(*id))
                    .cloned(),
            );
        }
        ids
    }

    /// Notes a stop already sent straight to the robot by the dispatch node
    /// `step`: its ledger row is written with the next commit.
    pub(super) fn ledger_sent(
        &mut self,
        goal_id: &str,
        step: u64,
        skill: &str,
        request: LinkRequest,
    ) {
        self.ledger_dispatch(goal_id, step, 0, skill);
        if let Some(d) = self.durable.as_mut() {
            d.sent.push(request);
        }
    }

    /// Notes a goal about to be sent by the dispatch node `step`, op `op`.
    pub(super) fn ledger_dispatch(&mut self, goal_id: &str, step: u64, op: usize, skill: &str) {
        if let Some(d) = self.durable.as_mut() {
            d.dispatched
                .insert(goal_id.to_string(), (step, op as u32, skill.to_string()));
        }
    }

    /// Notes that a goal moved on (accepted, or done with its result).
    pub(super) fn ledger_update(
        &mut self,
        goal_id: &str,
        status: LedgerStatus,
        result: Option<Value>,
    ) {
        if let Some(d) = self.durable.as_mut()
            && (d.open.contains_key(goal_id) || d.dispatched.contains_key(goal_id))
        {
            if status == LedgerStatus::Done {
                d.open.remove(goal_id);
            }
            d.updates.push((goal_id.to_string(), status, result));
        }
    }

    /// The result of a finished goal, as the ledger stores it.
    pub(super) fn ledger_result(result: &GoalResult) -> Value {
        serde_json::to_value(result).unwrap_or(Value::Null)
    }

    /// Asks the robot about every goal this brain tracks: running goals and
    /// open ledger rows. The answers come back as `GoalStatus` replies.
    pub(super) fn reconcile(&mut self) {
        let mut ids: BTreeMap<String, Option<LinkRequest>> = self
            .mind
            .runner
            .running()
            .iter()
            .map(|g| (g.goal_id.clone(), None))
            .collect();
        if let Some(d) = &self.durable {
            for (id, request) in &d.open {
                ids.insert(id.clone(), Some(request.clone()));
            }
        }
        for (goal_id, request) in ids {
            self.robot.reconciling.insert(goal_id.clone(), request);
            let _ = self.robot.held.send(LinkRequest::QueryGoal { goal_id });
        }
    }

    /// Whether the brain asked the robot about `goal_id` and awaits the answer.
    pub(super) fn is_reconciling(&self, goal_id: &str) -> bool {
        self.robot.reconciling.contains_key(goal_id)
    }

    /// The robot's answer about a goal this brain asked after.
    pub(super) fn reconciled(&mut self, goal_id: &str, status: &GoalStatus) {
        let request = self.robot.reconciling.remove(goal_id).flatten();
        let tracked = self
            .mind
            .runner
            .running()
            .iter()
            .any(|g| g.goal_id == goal_id);
        let note = match (status, tracked) {
            (GoalStatus::Unknown, true) => {
                if let Some(request) = request {
                    // The robot does not know it: never received, or
                    // forgotten by a restarted server (a ROS 2 link sends
                    // it under a new goal UUID). Either way it is sent now.
                    let _ = self.robot.held.send(request);
                    "unknown to the robot (never received, or forgotten by a restart); sent now"
                } else {
                    let result = GoalResult::Failed {
                        code: "lost".into(),
                        message: "the robot has no record of this goal".into(),
                    };
                    self.finish_lost(goal_id, result);
                    "unknown to the robot and not in the ledger; reported lost"
                }
            }
            (GoalStatus::Unknown, false) => {
                self.ledger_update(
                    goal_id,
                    LedgerStatus::Done,
                    Some(json!({"status": "not_sent", "why": "unknown to the robot"})),
                );
                "unknown to the robot (never received, or forgotten by a restart) and no longer wanted"
            }
            (GoalStatus::Running, true) => {
                self.ledger_update(goal_id, LedgerStatus::Accepted, None);
                "still running on the robot"
            }
            (GoalStatus::Running, false) => {
                let _ = self.robot.held.send(LinkRequest::Cancel {
                    goal_id: goal_id.to_string(),
                });
                self.ledger_update(
                    goal_id,
                    LedgerStatus::Done,
                    Some(json!({"status": "cancelled"})),
                );
                "running on the robot but no longer wanted; cancelled"
            }
            (GoalStatus::Finished { outcome }, _) => {
                let reply = LinkReply::Result {
                    goal_id: goal_id.to_string(),
                    outcome: outcome.clone(),
                };
                if tracked {
                    self.apply_goal_reply(&reply);
                } else {
                    self.ledger_update(
                        goal_id,
                        LedgerStatus::Done,
                        serde_json::to_value(outcome).ok(),
                    );
                }
                "finished on the robot while the brain was away"
            }
        };
        self.emit(EventKind::Log {
            level: "info".into(),
            message: format!("reconcile {goal_id}: {note}"),
        });
    }

    fn finish_lost(&mut self, goal_id: &str, result: GoalResult) {
        let reply = match result {
            GoalResult::Failed { message, .. } => LinkReply::Rejected {
                goal_id: goal_id.to_string(),
                error: crate::link::NavErrorCode::Unavailable,
                message,
            },
            _ => return,
        };
        self.apply_goal_reply(&reply);
    }

    /// The state a checkpoint holds, built from the whole state.
    pub(super) fn checkpoint_value(&self) -> Value {
        super::checkpoint::whole(
            &self.state,
            &self.mind.runner,
            &crate::hci::lock(&self.home.handle).devices,
        )
    }

    /// Commits the tick's record, then sends what the tick held back.
    /// Without a store the requests go at once. When the commit fails the
    /// requests are dropped unsent, the robot is brought to rest (before
    /// anything else) and the engine halts.
    pub(super) fn commit_and_flush(&mut self, force_full: bool) {
        if let Some(d) = &self.durable {
            if d.failed.is_some() {
                self.robot.held.take();
                return;
            }
            let changed = !self.traffic.outbox.is_empty()
                || !self.robot.held.requests().is_empty()
                || !d.updates.is_empty()
                || !d.sent.is_empty()
                || force_full;
            // Nothing to write still looks at the file: a database deleted
            // or made read-only is noticed within a tick, not at the next
            // event.
            let written = if changed {
                self.commit()
            } else {
                let checked = d.guard.as_ref().map_or(Ok(()), FileGuard::check);
                if let Some(d) = self.durable.as_mut() {
                    d.store.sync_if_due();
                }
                checked
            };
            if let Err(e) = written {
                let message = e.to_string();
                self.robot.held.take();
                self.fail_store(&message);
                self.bring_to_rest("the thread cannot be recorded");
                self.emit(EventKind::Error {
                    code: "store_failed".into(),
                    message: format!(
                        "{message}; the robot was brought to rest, the thread is paused and nothing more is sent"
                    ),
                });
                return;
            }
        }
        self.traffic.ready.append(&mut self.traffic.outbox);
        for request in self.robot.held.take() {
            // A request that cannot go is reconciled after the link comes back.
            let _ = self.robot.link.send(request);
        }
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        if let Some(guard) = self.durable.as_ref().and_then(|d| d.guard.as_ref()) {
            guard.check()?;
        }
        let thread = self.thread_id().to_string();
        let row = self.thread_row();
        let home = crate::hci::lock(&self.home.handle);
        let Some(d) = self.durable.as_mut() else {
            return Ok(());
        };
        let mut parts = Parts {
            state: &mut self.state,
            runner: &self.mind.runner,
            home: &home.devices,
        };
        let checkpoint = d.next_checkpoint(&mut parts);
        drop(home);
        let held = self.robot.held.requests();
        let started = d.started_rows(held);
        let has_checkpoint = checkpoint.is_some();
        let outward = d.outward(held, &self.traffic.outbox);
        d.store.commit(&Commit {
            thread: &thread,
            step: self.state.step,
            seq: self.state.seq,
            checkpoint,
            events: &self.traffic.outbox,
            started: &started,
            updates: &d.updates,
            row,
            outward,
        })?;
        d.committed(started, has_checkpoint);
        Ok(())
    }

    /// The thread's row as of now: awaiting approval, running or idle.
    fn thread_row(&self) -> ThreadRow {
        ThreadRow {
            status: if self.state.approvals.is_empty() {
                if self.is_settled_now() {
                    "idle"
                } else {
                    "running"
                }
            } else {
                "awaiting_approval"
            }
            .into(),
            mode: self.state.mode.as_str().into(),
            pending_approval: self.state.approvals.first().map(|a| a.id.clone()),
        }
    }

    fn is_settled_now(&self) -> bool {
        self.mind.runner.running().is_empty() && self.state.queue.best_runnable().is_none()
    }
}

impl Durable {
    /// This tick's checkpoint: the whole state when a full one is due (the
    /// first of a process, then one in `full_every`), else the changes
    /// since the last one (`None` when nothing changed).
    fn next_checkpoint(&mut self, parts: &mut Parts<'_>) -> Option<CheckpointBody> {
        // The first checkpoint of a process (none kept yet) stands alone.
        let full = self.last.is_none()
            || self
                .count
                .is_multiple_of(u64::from(self.config.full_every.max(1)));
        match (&mut self.last, full) {
            (Some(last), false) => {
                let changes = last.advance(parts);
                (!changes.is_empty()).then_some(CheckpointBody::Delta(changes))
            }
            (last, _) => {
                // A full one is built from the whole state, and the
                // incremental checkpoint starts afresh from it.
                let value = parts.value();
                #[cfg(debug_assertions)]
                if let Some(last) = last {
                    last.check(parts, &value);
                }
                *last = Some(Checkpoint::new(value.clone(), parts));
                Some(CheckpointBody::Full(value))
            }
        }
    }

    /// The ledger's `started` rows: the goals dispatched this tick, among
    /// the requests `held` for the robot and the stops already sent.
    fn started_rows(&self, held: &[LinkRequest]) -> Vec<LedgerEntry> {
        let mut started = Vec::new();
        for request in held.iter().chain(&self.sent) {
            if let LinkRequest::SendGoal { goal_id, .. } = request
                && let Some((step, op, skill)) = self.dispatched.get(goal_id)
            {
                started.push(LedgerEntry {
                    step: *step,
                    op: *op,
                    goal_id: goal_id.clone(),
                    skill: skill.clone(),
                    request: request.clone(),
                    status: LedgerStatus::Started,
                    result: None,
                });
            }
        }
        started
    }

    /// What leaves the brain with this tick, or already left: requests
    /// to the robot, ledger changes, approvals asked or answered,
    /// device writes. Their record is synced before they go
    /// (`Synchronous::Effects`).
    fn outward(&self, held: &[LinkRequest], outbox: &[Event]) -> bool {
        held.iter().any(changes_the_world)
            || !self.sent.is_empty()
            || !self.updates.is_empty()
            || outbox.iter().any(|e| {
                matches!(
                    e.kind,
                    EventKind::Approval { .. } | EventKind::Device { .. }
                )
            })
    }

    /// After a commit: the `started` rows stay open until done, and the
    /// tick's notes are cleared.
    fn committed(&mut self, started: Vec<LedgerEntry>, has_checkpoint: bool) {
        for l in started {
            self.open.insert(l.goal_id, l.request);
        }
        // A goal that ended in the same tick it started is closed by the update.
        for (goal_id, status, _) in &self.updates {
            if *status == LedgerStatus::Done {
                self.open.remove(goal_id);
            }
        }
        self.dispatched.clear();
        self.updates.clear();
        self.sent.clear();
        if has_checkpoint {
            self.count += 1;
        }
    }
}

/// Keeps the home's audit trail in the store's file (a store in memory
/// keeps none); on a resume, the home calls the last process was cut short
/// in, settled, for the log.
fn attach_audit(handle: &crate::hci::HomeHandle, store: &Store, resume: bool) -> Vec<String> {
    if store.path() != std::path::Path::new(":memory:")
        && let Ok(audit) =
            crate::store::audit::AuditLog::open_with(store.path(), store.synchronous())
    {
        let mut home = crate::hci::lock(handle);
        home.set_audit(audit);
        if resume {
            home.settle_unfinished()
        } else {
            Vec::new()
        }
    } else {
        Vec::new()
    }
}

/// A brain that was thinking when the process died holds no answer now;
/// nothing was sent yet, so each task deciding is simply asked again.
fn ask_again(queue: &mut crate::kernel::TaskQueue) {
    let thinking: Vec<String> = queue
        .tasks()
        .iter()
        .filter(|t| matches!(t.react.phase, crate::react::Phase::Deciding { .. }))
        .map(|t| t.id.clone())
        .collect();
    for id in thinking {
        if let Some(t) = queue.get_mut(&id) {
            t.react.phase = crate::react::Phase::Ready;
        }
    }
}

/// Whether a request to the robot changes something there (a goal, a
/// cancel, a fault injected), as a question about a goal or a heartbeat
/// does not.
fn changes_the_world(request: &LinkRequest) -> bool {
    match request {
        LinkRequest::SendGoal { .. } | LinkRequest::Cancel { .. } | LinkRequest::Inject { .. } => {
            true
        }
        LinkRequest::QueryGoal { .. } | LinkRequest::Heartbeat => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::protocol::Origin;
    use crate::protocol::{Command, Event, Mode, SkillStatus};
    use crate::store::Synchronous;
    use crate::world::World;

    fn temp_db(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("rb-durable-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("robobrain.db")
    }

    fn durable_engine(path: &std::path::Path, resume: bool) -> Engine {
        let config = Config {
            thread_id: Some("t".into()),
            ..Config::default()
        };
        let mut engine = Engine::simulated(&config, World::builtin("apartment").unwrap()).unwrap();
        let store = Store::open(path, Synchronous::Normal).unwrap();
        engine
            .attach_store(store, &StoreConfig::default(), resume)
            .unwrap();
        engine
    }

    fn tick_until(engine: &mut Engine, events: &mut Vec<Event>, f: impl Fn(&Event) -> bool) {
        for _ in 0..3000 {
            let from = events.len();
            engine.tick(events);
            if events[from..].iter().any(&f) {
                return;
            }
        }
        panic!("never happened");
    }

    /// Sends the robot to the kitchen; the navigation's goal id once dispatched.
    fn sent_to_the_kitchen(engine: &mut Engine, events: &mut Vec<Event>) -> String {
        engine.submit(
            Command::Say {
                text: "去厨房".into(),
            },
            Origin::console(),
        );
        tick_until(engine, events, dispatched);
        engine
            .mind
            .runner
            .running()
            .iter()
            .find(|g| g.skill == "navigate_to")
            .unwrap()
            .goal_id
            .clone()
    }

    fn dispatched(e: &Event) -> bool {
        matches!(
            &e.kind,
            EventKind::Skill {
                status: SkillStatus::Dispatched,
                ..
            }
        )
    }

    /// A timer is kernel state: the checkpoint keeps it, and the resumed
    /// brain rings it when sim time gets there (issue 22).
    #[test]
    fn a_timer_outlives_the_brain_and_rings_after_the_resume() {
        let path = temp_db("timer");
        let mut engine = durable_engine(&path, false);
        engine.submit(
            Command::Say {
                text: "set a timer for 1 minute".into(),
            },
            Origin::console(),
        );
        let mut events = Vec::new();
        while engine.time() < 10.0 {
            engine.tick(&mut events);
        }
        assert_eq!(engine.state().timers.len(), 1, "{events:?}");
        drop(engine);
        let mut engine = durable_engine(&path, true);
        assert_eq!(engine.state().timers.len(), 1, "the checkpoint keeps it");
        let mut after = Vec::new();
        let done = |e: &Event| matches!(&e.kind, EventKind::Speech { text, .. } if text == "Your timer is done.");
        tick_until(&mut engine, &mut after, done);
        let rang = after.iter().find(|e| done(e)).unwrap();
        assert!((rang.time - 60.0).abs() < 0.2, "rang at {}", rang.time);
        assert!(engine.state().timers.is_empty());
    }

    #[test]
    fn a_goal_the_robot_never_received_is_sent_once_after_the_resume() {
        let path = temp_db("unknown");
        let mut engine = durable_engine(&path, false);
        engine.submit(
            Command::Say {
                text: "去厨房".into(),
            },
            Origin::console(),
        );
        let mut events = Vec::new();
        tick_until(&mut engine, &mut events, dispatched);
        let last_seq = events.last().unwrap().seq;
        // The brain dies; the robot (a fresh in-process sim) never heard of the goal.
        drop(engine);
        let mut engine = durable_engine(&path, true);
        let mut after = Vec::new();
        tick_until(
            &mut engine,
            &mut after,
            |e| matches!(&e.kind, EventKind::Log { message, .. } if message.contains("unknown to the robot (never received, or forgotten by a restart); sent now")),
        );
        tick_until(&mut engine, &mut after, |e| {
            matches!(
                &e.kind,
                EventKind::Skill {
                    status: SkillStatus::Succeeded,
                    ..
                }
            )
        });
        assert_eq!(after[0].seq, last_seq + 1, "events continue without a gap");
        let again: Vec<_> = after
            .iter()
            .filter(|e| {
                dispatched(e)
                    && matches!(&e.kind, EventKind::Skill { skill, .. } if skill == "navigate_to")
            })
            .collect();
        assert!(
            again.is_empty(),
            "the navigation is not dispatched anew: {again:?}"
        );
        let store = Store::open(&path, Synchronous::Normal).unwrap();
        let ledger = store.ledger("t").unwrap();
        let nav: Vec<_> = ledger.iter().filter(|l| l.skill == "navigate_to").collect();
        assert_eq!(nav.len(), 1, "{ledger:?}");
        assert_eq!(nav[0].status, LedgerStatus::Done);
        assert!(nav[0].goal_id.starts_with("t/g"));
        let result = nav[0].result.clone().unwrap_or_default();
        assert!(
            result.to_string().contains("succeeded"),
            "the ledger keeps how the goal ended: {result}"
        );
    }

    /// The robot's status of a goal this brain did not ask about is not an
    /// answer to reconcile with; a goal the robot does not know and the
    /// ledger does not hold is reported lost (failed), not left running.
    #[test]
    fn only_goals_asked_about_are_reconciled_and_an_unknown_one_is_lost() {
        let path = temp_db("lost");
        let mut engine = durable_engine(&path, false);
        let mut events = Vec::new();
        let nav = sent_to_the_kitchen(&mut engine, &mut events);
        assert!(!engine.is_reconciling(&nav), "nothing was asked yet");
        drop(engine);
        let mut engine = durable_engine(&path, true);
        assert!(engine.is_reconciling(&nav));
        assert!(!engine.is_reconciling("t/g999"));
        // As if the ledger had no row for it: nothing to send again.
        engine.robot.reconciling.insert(nav.clone(), None);
        let mut after = Vec::new();
        tick_until(
            &mut engine,
            &mut after,
            |e| matches!(&e.kind, EventKind::Skill { status: SkillStatus::Failed, goal_id, .. } if *goal_id == nav),
        );
        assert!(after.iter().any(|e| matches!(&e.kind,
            EventKind::Log { message, .. } if message.contains("not in the ledger; reported lost"))));
        assert!(
            engine
                .mind
                .runner
                .running()
                .iter()
                .all(|g| g.goal_id != nav)
        );
    }

    fn thread_status(path: &std::path::Path) -> String {
        Store::open(path, Synchronous::Normal)
            .unwrap()
            .thread("t")
            .unwrap()
            .status
    }

    /// Closing finishes the thread (and prunes its checkpoints) only when
    /// nothing is left to do: not while a goal runs, not while an approval
    /// waits — a later run resumes those.
    #[test]
    fn closing_finishes_the_thread_only_when_nothing_is_left_to_do() {
        let mut events = Vec::new();
        let path = temp_db("close-idle");
        let mut engine = durable_engine(&path, false);
        for _ in 0..5 {
            engine.tick(&mut events);
        }
        let step = engine.state().step;
        let last_kind = || {
            rusqlite::Connection::open(&path)
                .unwrap()
                .query_row(
                    "SELECT kind FROM checkpoints ORDER BY n DESC LIMIT 1",
                    [],
                    |r| r.get::<_, String>(0),
                )
                .unwrap()
        };
        assert_eq!(last_kind(), "delta");
        engine.close();
        drop(engine);
        assert_eq!(thread_status(&path), "finished");
        // Its last checkpoint is the whole state: the thread opens again.
        assert_eq!(last_kind(), "full");
        let engine = durable_engine(&path, true);
        assert!(engine.state().step >= step);
        drop(engine);

        let path = temp_db("close-running");
        let mut engine = durable_engine(&path, false);
        sent_to_the_kitchen(&mut engine, &mut events);
        engine.close();
        drop(engine);
        assert_ne!(thread_status(&path), "finished", "a goal was running");

        let path = temp_db("close-approval");
        let mut engine = durable_engine(&path, false);
        engine.submit(
            Command::Say {
                text: "unlock the front door".into(),
            },
            Origin::console(),
        );
        tick_until(&mut engine, &mut events, |e| {
            matches!(e.kind, EventKind::Approval { .. })
        });
        for _ in 0..20 {
            engine.tick(&mut events);
        }
        assert_eq!(engine.state().approvals.len(), 1, "{events:?}");
        assert!(engine.traffic.pending.is_empty());
        engine.close();
        drop(engine);
        assert_eq!(thread_status(&path), "awaiting_approval");
    }

    /// The first checkpoint a process writes is full (it stands alone,
    /// also after a resume), and then one in `full_every`.
    #[test]
    fn a_process_starts_with_a_full_checkpoint_then_one_in_full_every() {
        let path = temp_db("full-every");
        let store_config = StoreConfig {
            full_every: 7,
            ..StoreConfig::default()
        };
        let config = Config {
            thread_id: Some("t".into()),
            ..Config::default()
        };
        let open = |resume| {
            let mut engine =
                Engine::simulated(&config, World::builtin("apartment").unwrap()).unwrap();
            let store = Store::open(&path, Synchronous::Normal).unwrap();
            engine.attach_store(store, &store_config, resume).unwrap();
            engine
        };
        let kinds = || -> Vec<(u64, String)> {
            let db = rusqlite::Connection::open(&path).unwrap();
            let mut stmt = db
                .prepare("SELECT n, kind FROM checkpoints ORDER BY n")
                .unwrap();
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        let mut engine = open(false);
        engine.submit(
            Command::Say {
                text: "去厨房".into(),
            },
            Origin::console(),
        );
        let mut events = Vec::new();
        // Stop where the next checkpoint's number is not one in 7.
        while kinds().len() < 10 || kinds().len() % 7 != 3 {
            engine.tick(&mut events);
        }
        drop(engine);
        let first = kinds();
        for (n, kind) in &first {
            assert_eq!(kind == "full", n % 7 == 0, "{first:?}");
        }
        let mut engine = open(true);
        for _ in 0..10 {
            engine.tick(&mut events);
        }
        drop(engine);
        let after = kinds();
        let (n, kind) = &after[first.len()];
        assert_eq!(kind, "full", "the resumed process's first, n = {n}");
        for (n, kind) in &after[first.len() + 1..] {
            assert_eq!(kind == "full", n % 7 == 0, "{after:?}");
        }
    }

    /// A tick with nothing new (no event, no request, no ledger change)
    /// writes nothing; one with an event commits it.
    #[test]
    fn a_tick_with_nothing_new_writes_nothing() {
        let path = temp_db("idle");
        let mut engine = durable_engine(&path, false);
        let mut events = Vec::new();
        for _ in 0..5 {
            engine.tick(&mut events);
        }
        let other = rusqlite::Connection::open(&path).unwrap();
        let version = || -> i64 {
            other
                .query_row("PRAGMA data_version", [], |r| r.get(0))
                .unwrap()
        };
        // Right after a telemetry event (one a second of robot time), an
        // idle brain has nothing to record for a few ticks.
        events.clear();
        tick_until(&mut engine, &mut events, |e| {
            matches!(e.kind, EventKind::Telemetry { .. })
        });
        let before = version();
        events.clear();
        for _ in 0..5 {
            engine.tick(&mut events);
        }
        assert!(events.is_empty(), "{events:?}");
        assert_eq!(version(), before, "nothing was committed");
        engine.submit(
            Command::Say {
                text: "去厨房".into(),
            },
            Origin::console(),
        );
        engine.tick(&mut events);
        assert_ne!(version(), before);
    }

    /// Under the default `effects`, the tick that dispatches a goal is
    /// synced before the goal goes; a tick that only reports (telemetry,
    /// feedback) is not.
    #[test]
    fn under_effects_a_dispatching_tick_syncs_and_a_reporting_one_does_not() {
        let path = temp_db("effects");
        let config = Config {
            thread_id: Some("t".into()),
            ..Config::default()
        };
        let mut engine = Engine::simulated(&config, World::builtin("apartment").unwrap()).unwrap();
        let store = Store::open(&path, Synchronous::default()).unwrap();
        engine
            .attach_store(store, &StoreConfig::default(), false)
            .unwrap();
        let synced = |engine: &Engine| engine.durable.as_ref().unwrap().store.synced_last();
        engine.submit(
            Command::Say {
                text: "去厨房".into(),
            },
            Origin::console(),
        );
        let (mut dispatches, mut unsynced) = (0, 0);
        for _ in 0..400 {
            let mut events = Vec::new();
            engine.tick(&mut events);
            if events.iter().any(dispatched) {
                dispatches += 1;
                assert!(synced(&engine), "a dispatch went out unsynced: {events:?}");
            } else if !events.is_empty()
                && events
                    .iter()
                    .all(|e| matches!(e.kind, EventKind::Telemetry { .. }))
                && !synced(&engine)
            {
                unsynced += 1;
            }
        }
        assert!(dispatches > 0 && unsynced > 0, "{dispatches} {unsynced}");
    }

    /// A resumed brain holds each goal the ledger left open once, until the
    /// robot has answered about it (a stop cancels each of them).
    #[test]
    fn a_resumed_brain_holds_each_goal_the_ledger_left_open_once() {
        let path = temp_db("open-goals");
        let mut engine = durable_engine(&path, false);
        assert!(engine.open_goals().is_empty());
        let mut events = Vec::new();
        let nav = sent_to_the_kitchen(&mut engine, &mut events);
        drop(engine);
        let engine = durable_engine(&path, true);
        assert_eq!(engine.open_goals(), vec![nav]);
    }

    /// A thread kept in a file keeps the home's audit trail in that file,
    /// where `robobrain audit` reads it.
    #[test]
    fn a_thread_in_a_file_keeps_the_homes_audit_trail_in_it() {
        use crate::store::audit::{AuditFilter, AuditLog, AuditRow};
        let path = temp_db("audit");
        let engine = durable_engine(&path, false);
        let row = AuditRow {
            id: 0,
            at_ms: 1,
            trace_id: "t".into(),
            session_id: "s".into(),
            plan_id: "p1".into(),
            step_id: "1".into(),
            tool: "devices.invoke".into(),
            args_summary: "kitchen_light turn_on".into(),
            result: "ok".into(),
            ok: true,
            latency_us: 5,
            origin: "console".into(),
        };
        crate::hci::lock(&engine.home.handle)
            .audit()
            .unwrap()
            .record(&row)
            .unwrap();
        let rows = AuditLog::open(&path)
            .unwrap()
            .list(&AuditFilter::default())
            .unwrap();
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(rows[0].args_summary, "kitchen_light turn_on");
    }

    /// The database file and its WAL, byte for byte.
    fn file_bytes(path: &std::path::Path) -> Vec<Vec<u8>> {
        ["", "-wal"]
            .iter()
            .map(|s| std::fs::read(format!("{}{s}", path.display())).unwrap_or_default())
            .collect()
    }

    /// A resume of a thread whose checkpoints are gone refuses, naming the
    /// thread, and writes nothing: starting it again from step 0 would
    /// write a second history over the first (issue 35).
    #[test]
    fn a_resume_without_a_checkpoint_refuses_and_writes_nothing() {
        let path = temp_db("no-checkpoint");
        let mut engine = durable_engine(&path, false);
        let mut events = Vec::new();
        sent_to_the_kitchen(&mut engine, &mut events);
        drop(engine);
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch("DELETE FROM checkpoints; PRAGMA wal_checkpoint(TRUNCATE);")
            .unwrap();
        let before = file_bytes(&path);
        let config = Config {
            thread_id: Some("t".into()),
            ..Config::default()
        };
        let mut engine = Engine::simulated(&config, World::builtin("apartment").unwrap()).unwrap();
        let store = Store::open(&path, Synchronous::Normal).unwrap();
        let e = engine
            .attach_store(store, &StoreConfig::default(), true)
            .unwrap_err();
        assert!(matches!(e, StoreError::NoCheckpoint { .. }), "{e:?}");
        let text = e.to_string();
        assert!(
            text.contains("thread `t` has no checkpoint to resume from; nothing was written"),
            "{text}"
        );
        drop(engine);
        assert!(file_bytes(&path) == before, "the file was written");
    }

    /// Bytes damaged inside a stored record (the pages around it sound, so
    /// `quick_check` passes): the resume refuses, naming the thread and the
    /// events of the damaged record, and writes nothing into the file.
    #[test]
    fn a_resume_refuses_a_damaged_record_naming_its_thread_and_events() {
        let path = temp_db("damaged-record");
        let mut engine = durable_engine(&path, false);
        let mut events = Vec::new();
        sent_to_the_kitchen(&mut engine, &mut events);
        drop(engine);
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
            .unwrap();
        let (first, last, body): (u64, u64, String) = conn
            .query_row(
                "SELECT first_seq, last_seq, body FROM event_batches ORDER BY id LIMIT 1 OFFSET 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        drop(conn);
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes
            .windows(body.len())
            .position(|w| w == body.as_bytes())
            .expect("the record is in the file");
        // A `{` in the middle of the record becomes a `#`.
        let brace = body[1..].find('{').unwrap() + 1;
        bytes[at + brace] = b'#';
        std::fs::write(&path, &bytes).unwrap();
        let before = file_bytes(&path);
        let config = Config {
            thread_id: Some("t".into()),
            ..Config::default()
        };
        let mut engine = Engine::simulated(&config, World::builtin("apartment").unwrap()).unwrap();
        let store = Store::open(&path, Synchronous::Normal).expect("quick_check passes");
        let e = engine
            .attach_store(store, &StoreConfig::default(), true)
            .unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains(&format!(
                "events {first} to {last} of thread `t` cannot be decoded"
            )),
            "{text}"
        );
        drop(engine);
        assert!(file_bytes(&path) == before, "the damaged file was written");
    }

    #[test]
    fn a_commit_that_fails_halts_the_thread_and_records_no_side_effect() {
        let path = temp_db("halt");
        let mut engine = durable_engine(&path, false);
        let mut events = Vec::new();
        engine.tick(&mut events);
        let other = rusqlite::Connection::open(&path).unwrap();
        other.execute_batch("BEGIN EXCLUSIVE").unwrap();
        engine.submit(
            Command::Say {
                text: "去厨房".into(),
            },
            Origin::console(),
        );
        events.clear();
        engine.tick(&mut events);
        let halted = engine.halted().unwrap().to_string();
        assert!(halted.contains("locked by another process"), "{halted}");
        assert!(events.iter().any(|e| matches!(&e.kind,
            EventKind::Error { code, message } if code == "store_failed" && message.contains("the thread is paused"))));
        assert_eq!(engine.state().mode, Mode::Safe);
        // No tick runs while halted.
        let step = engine.state().step;
        engine.tick(&mut events);
        assert_eq!(engine.state().step, step);
        other.execute_batch("ROLLBACK").unwrap();
        let store = Store::open(&path, Synchronous::Normal).unwrap();
        assert!(store.ledger("t").unwrap().is_empty());
    }
}
