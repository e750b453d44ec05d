//! Bringing the robot to rest: the E-stop, and every way the brain stops
//! thinking on its own (the store fails, the process shuts down, the
//! kernel panics).
//!
//! Stopping is the one thing the brain sends without a commit first.
//! Goals go through the ledger before they leave (durable.rs) so that a
//! resumed brain never repeats one; a stop needs no such care — sending
//! it twice does no harm, and not sending it leaves a robot moving with
//! nobody watching. So `stop_base` and a cancel of every goal the brain
//! tracks go straight to the link, and are recorded afterwards when the
//! store can take them; when it cannot, an event says so.
//!
//! Stop goals get ids no other process can have (`<thread>/rest<n>.<nonce>`,
//! `<thread>/estop<n>.<nonce>`): a robot answers a goal id it has seen
//! from its record without running it again, and a brain resumed from a
//! checkpoint older than its last stop would otherwise repeat an id.

use serde_json::json;

use super::Engine;
use crate::link::{GoalKind, LinkReply, LinkRequest, RobotLink};
use crate::protocol::{EventKind, Mode, Node, SkillStatus};
use crate::react::Phase;
use crate::skills::runner::Completion;

/// A stop just sent: its goal id and the goals it cancelled.
pub(super) struct Stop {
    goal_id: String,
    cancelled: Vec<Completion>,
    /// Goals the link's E-stop line held back: dispatched, never sent.
    never_sent: Vec<String>,
    /// Requests the link could not carry (it was down), in words.
    unsent: Vec<String>,
}

/// Whether a request held for the robot may still go after a stop: cancels
/// and queries may, a goal a tick dispatched but that has not left yet must
/// never start (a stop's own `stop_base` aside).
fn survives_stop(request: &LinkRequest) -> bool {
    !matches!(request, LinkRequest::SendGoal { kind, .. } if *kind != GoalKind::StopBase)
}

/// The cancels a stop sends after its `stop_base`, decided from what the
/// brain tracks: `queued`, the requests the runner queued while cancelling
/// the goals it drives (`cancelled`); then every goal the ledger holds open
/// that nothing cancels yet (a resumed brain still reconciling it may run
/// on the robot too). Goals the E-stop line held back (`never_sent`) never
/// reached the robot, so nothing is cancelled there. Pure: the engine
/// sends what this returns, in order.
fn stop_cancels(
    queued: Vec<LinkRequest>,
    never_sent: &[String],
    cancelled: &[String],
    open: Vec<String>,
) -> Vec<LinkRequest> {
    let mut cancels: Vec<LinkRequest> = queued
        .into_iter()
        .filter(|r| !matches!(r, LinkRequest::Cancel { goal_id } if never_sent.contains(goal_id)))
        .collect();
    for goal_id in open {
        if !cancels
            .iter()
            .any(|r| matches!(r, LinkRequest::Cancel { goal_id: g } if *g == goal_id))
            && !cancelled.contains(&goal_id)
            && !never_sent.contains(&goal_id)
        {
            cancels.push(LinkRequest::Cancel { goal_id });
        }
    }
    cancels
}

impl Engine {
    /// Brings the robot to rest because the brain stops thinking: `why`
    /// says what happened (the store failed, a shutdown, a panic).
    ///
    /// `stop_base` and a cancel of every goal the brain tracks are sent to
    /// the robot first, without waiting for a commit; then the running
    /// goals end as cancelled, each task that was driving is set to resume
    /// at the same step, the mode goes SAFE, and — when the store can take
    /// it — all of that is recorded. Calling it again sends another stop;
    /// that is harmless.
    pub fn bring_to_rest(&mut self, why: &str) {
        self.rest(why, true);
    }

    /// [`Engine::bring_to_rest`]; `safe`: whether the mode goes SAFE (an
    /// orderly close of a thread with nothing left to do keeps its mode).
    pub(super) fn rest(&mut self, why: &str, safe: bool) {
        self.robot.rests += 1;
        let stop = self.send_stop("rest", self.robot.rests);
        if safe {
            self.set_mode(Mode::Safe, format!("robot brought to rest: {why}"));
        }
        let interrupted = self.note_stop(&stop);
        for id in interrupted {
            self.interrupt(&id, &format!("interrupted: {why}"));
        }
        self.log("warn", &format!("robot brought to rest: {why}"));
        self.record_stop("the stop");
    }

    /// Sends `stop_base` (goal `<thread>/<kind><n>.<nonce>`), then a cancel
    /// of every goal the brain tracks, straight to the robot; held goals
    /// that have not left yet never will. Only the sends happen here, and
    /// the runner's bookkeeping of the cancelled goals.
    pub(super) fn send_stop(&mut self, kind: &str, n: u64) -> Stop {
        let goal_id = format!("{}/{kind}{n}.{:x}", self.setup.thread_id, self.setup.nonce);
        let mut unsent = Vec::new();
        let mut send = |link: &mut Box<dyn crate::link::RobotLink>, request| {
            if let Err(e) = link.send(request) {
                unsent.push(e.to_string());
            }
        };
        send(
            &mut self.robot.link,
            LinkRequest::SendGoal {
                goal_id: goal_id.clone(),
                kind: GoalKind::StopBase,
            },
        );
        // Goals the E-stop line kept from the robot since it held: the
        // robot never heard of them, so there is nothing to cancel there.
        let never_sent = self.robot.link.take_held_back();
        // A goal a tick dispatched but has not sent yet must not start
        // after the stop; cancels and queries may still go.
        let held: Vec<LinkRequest> = self
            .robot
            .held
            .take()
            .into_iter()
            .filter(survives_stop)
            .collect();
        let (cancelled, _speech) = self.with_skills(|runner, registry, ctx, _| {
            let running: Vec<String> = runner.running().iter().map(|g| g.goal_id.clone()).collect();
            running
                .iter()
                .filter_map(|id| runner.cancel(registry, ctx, id).ok().flatten())
                .collect::<Vec<_>>()
        });
        let cancelled_ids: Vec<String> = cancelled.iter().map(|c| c.goal_id.clone()).collect();
        let cancels = stop_cancels(
            self.robot.held.take(),
            &never_sent,
            &cancelled_ids,
            self.open_goals(),
        );
        for request in cancels {
            send(&mut self.robot.link, request);
        }
        for request in held {
            let _ = self.robot.held.send(request);
        }
        Stop {
            goal_id,
            cancelled,
            never_sent,
            unsent,
        }
    }

    /// Records a stop just sent as the events and ledger row of a
    /// `stop_base` dispatch; returns the tasks whose running step it cut.
    pub(super) fn note_stop(&mut self, stop: &Stop) -> Vec<String> {
        self.node(Node::Dispatch);
        let stop_request = LinkRequest::SendGoal {
            goal_id: stop.goal_id.clone(),
            kind: GoalKind::StopBase,
        };
        self.ledger_sent(&stop.goal_id, self.state.step, "stop_base", stop_request);
        self.skill_event(
            &stop.goal_id,
            "stop_base",
            &json!({}),
            SkillStatus::Dispatched,
            None,
            "",
        );
        self.completion_event(&Completion {
            goal_id: stop.goal_id.clone(),
            skill: "stop_base".into(),
            args: json!({}),
            task_id: None,
            result: crate::skills::runner::GoalResult::Succeeded {
                output: json!({"stopped": true}),
            },
        });
        for why in &stop.unsent {
            self.emit(EventKind::Error {
                code: "stop_unsent".into(),
                message: format!("{why}; the stop is sent again when the link is back"),
            });
        }
        // Recorded as not sent before their ends are: the first `done`
        // closes a ledger row.
        for goal_id in &stop.never_sent {
            self.ledger_update(
                goal_id,
                crate::store::LedgerStatus::Done,
                Some(json!({"status": "not_sent", "why": "held back by the E-stop line"})),
            );
            self.emit(EventKind::Log {
                level: "info".into(),
                message: format!(
                    "reconcile {goal_id}: held back by the E-stop line, never sent to the robot"
                ),
            });
        }
        let mut interrupted = Vec::new();
        for c in &stop.cancelled {
            self.completion_event(c);
            let cut = c.task_id.as_deref().is_some_and(|id| {
                self.state.queue.get(id).is_some_and(
                    |t| matches!(&t.react.phase, Phase::Running { goal_id } if *goal_id == c.goal_id),
                )
            });
            if let (true, Some(id)) = (cut, &c.task_id) {
                interrupted.push(id.clone());
            }
        }
        interrupted
    }

    /// Records what a stop changed, now that it has reached the robot;
    /// when the store has failed, says that it cannot be recorded.
    pub(super) fn record_stop(&mut self, what: &str) {
        if let Some(why) = self.halted().map(str::to_string) {
            self.emit(EventKind::Log {
                level: "warn".into(),
                message: format!("{what} reached the robot but cannot be recorded: {why}"),
            });
        }
        self.commit_and_flush(false);
    }

    /// The robot says it stopped the base on its own: it heard nothing from
    /// the brain for `silent_s` (its dead-man). The goals it stopped end,
    /// and their tasks resume at the same step when they run again.
    pub(super) fn on_deadman(&mut self, reply: &LinkReply) {
        let LinkReply::Deadman {
            silent_s,
            time,
            stopped,
        } = reply
        else {
            return;
        };
        self.emit(EventKind::Error {
            code: "robot_deadman".into(),
            message: format!(
                "the robot brought itself to rest at robot time {time:.1} s after hearing nothing from the brain for {silent_s:.2} s (its dead-man){}",
                if stopped.is_empty() {
                    String::new()
                } else {
                    format!("; it stopped {}", stopped.join(", "))
                }
            ),
        });
        for goal_id in stopped {
            let task = self
                .mind
                .runner
                .running()
                .iter()
                .find(|g| &g.goal_id == goal_id)
                .and_then(|g| g.task_id.clone());
            let result = LinkReply::Result {
                goal_id: goal_id.clone(),
                outcome: crate::link::GoalOutcome::Canceled,
            };
            if let Some(crate::skills::runner::GoalUpdate::Ended(c)) =
                self.mind.runner.on_reply(&result)
            {
                self.completion_event(&c);
            }
            if let Some(id) = task {
                self.interrupt(&id, "interrupted: the robot's dead-man stopped the base");
            }
        }
    }

    /// After a panic on the kernel thread: nothing more is recorded (the
    /// state may be half-updated; a resume starts from the last commit),
    /// the robot is brought to rest and an `error` event says why.
    pub fn halt_on_panic(&mut self, message: &str) {
        let why = format!("the kernel panicked: {message}");
        self.fail_store(&why);
        self.bring_to_rest(&why);
        self.emit(EventKind::Error {
            code: "kernel_panic".into(),
            message: format!("{why}; the robot was brought to rest and nothing more is recorded"),
        });
    }

    /// Moves the events not yet handed out into `out` (after
    /// [`Engine::close`], say, whose stop faces should see).
    pub fn take_events(&mut self, out: &mut Vec<crate::protocol::Event>) {
        out.append(&mut self.traffic.ready);
        out.append(&mut self.traffic.outbox);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cancel(id: &str) -> LinkRequest {
        LinkRequest::Cancel {
            goal_id: id.to_string(),
        }
    }

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn a_stop_keeps_cancels_and_its_own_goal_but_no_goal_that_has_not_left() {
        let goal = |kind| LinkRequest::SendGoal {
            goal_id: "g".into(),
            kind,
        };
        assert!(!survives_stop(&goal(GoalKind::Dock)));
        assert!(survives_stop(&goal(GoalKind::StopBase)));
        assert!(survives_stop(&cancel("g")));
    }

    #[test]
    fn a_stop_cancels_each_open_goal_once_and_none_the_robot_never_heard_of() {
        let cancels = stop_cancels(
            vec![cancel("driving"), cancel("held_back")],
            &ids(&["held_back", "open_held_back"]),
            &ids(&["driving", "ended_by_runner"]),
            ids(&[
                "driving",
                "ended_by_runner",
                "reconciling",
                "open_held_back",
            ]),
        );
        assert_eq!(cancels, vec![cancel("driving"), cancel("reconciling")]);
    }

    #[test]
    fn a_stop_with_nothing_tracked_sends_no_cancel() {
        assert!(stop_cancels(Vec::new(), &[], &[], Vec::new()).is_empty());
    }
    use crate::config::Config;
    use crate::link::LinkError;
    use crate::protocol::Origin;
    use crate::protocol::{Command, Event, TaskStatus};
    use crate::store::{Store, Synchronous};
    use crate::world::World;
    use std::sync::{Arc, Mutex};

    /// A robot link that records what it is sent, in order, over a real
    /// in-process simulator; with a database, it also notes for each stop
    /// whether the stop's ledger row was already committed when it was sent.
    struct Spy {
        inner: crate::sim::SimLink,
        sent: Arc<Mutex<Vec<LinkRequest>>>,
        db: Option<std::path::PathBuf>,
        committed_first: Arc<Mutex<Vec<bool>>>,
        /// The thread it serves: listed in [`BOOM`], its next advance
        /// panics (a bug on the kernel's path).
        thread: String,
    }

    impl RobotLink for Spy {
        fn send(&mut self, request: LinkRequest) -> Result<(), LinkError> {
            if let (
                Some(db),
                LinkRequest::SendGoal {
                    goal_id,
                    kind: GoalKind::StopBase,
                },
            ) = (&self.db, &request)
            {
                let conn = rusqlite::Connection::open(db).unwrap();
                let rows: i64 = conn
                    .query_row(
                        "SELECT count(*) FROM ledger WHERE goal_id = ?1",
                        [goal_id],
                        |r| r.get(0),
                    )
                    .unwrap_or(0);
                self.committed_first.lock().unwrap().push(rows > 0);
            }
            self.sent.lock().unwrap().push(request.clone());
            self.inner.send(request)
        }
        fn advance(&mut self, dt: f64) {
            assert!(!BOOM.lock().unwrap().contains(&self.thread), "boom");
            self.inner.advance(dt);
        }
        fn drain(&mut self, out: &mut Vec<LinkReply>) {
            self.inner.drain(out);
        }
    }

    type Sent = Arc<Mutex<Vec<LinkRequest>>>;

    /// Threads whose spied link panics on its next advance.
    static BOOM: Mutex<Vec<String>> = Mutex::new(Vec::new());

    fn spied(thread: &str) -> (Engine, Sent) {
        let (engine, sent, _) = spied_on(thread, None);
        (engine, sent)
    }

    fn spied_on(
        thread: &str,
        db: Option<&std::path::Path>,
    ) -> (Engine, Sent, Arc<Mutex<Vec<bool>>>) {
        let config = Config {
            thread_id: Some(thread.into()),
            ..Config::default()
        };
        let world = World::builtin("apartment").unwrap();
        let sent = Arc::new(Mutex::new(Vec::new()));
        let committed_first = Arc::new(Mutex::new(Vec::new()));
        let link = Spy {
            inner: crate::sim::SimLink::new(world.clone(), 1),
            sent: Arc::clone(&sent),
            db: db.map(std::path::Path::to_path_buf),
            committed_first: Arc::clone(&committed_first),
            thread: thread.to_string(),
        };
        let mut engine = Engine::new(&config, world, Box::new(link)).unwrap();
        if let Some(path) = db {
            let store = Store::open(path, Synchronous::Normal).unwrap();
            engine
                .attach_store(store, &crate::store::StoreConfig::default(), false)
                .unwrap();
        }
        (engine, sent, committed_first)
    }

    fn temp_db(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("rb-rest-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("robobrain.db")
    }

    /// Locks the database from another connection and ticks until the
    /// engine's commit fails.
    fn fail_the_store(
        engine: &mut Engine,
        path: &std::path::Path,
        events: &mut Vec<Event>,
    ) -> rusqlite::Connection {
        let other = rusqlite::Connection::open(path).unwrap();
        other.execute_batch("BEGIN EXCLUSIVE").unwrap();
        for _ in 0..50 {
            engine.tick(events);
            if engine.halted().is_some() {
                return other;
            }
        }
        panic!("the store never failed");
    }

    /// Sends the robot to the kitchen; the navigation's goal id once it runs.
    fn navigating(engine: &mut Engine, events: &mut Vec<Event>) -> String {
        engine.submit(
            Command::Say {
                text: "去厨房".into(),
            },
            Origin::console(),
        );
        for _ in 0..200 {
            engine.tick(events);
            let nav = engine
                .mind
                .runner
                .running()
                .iter()
                .find(|g| g.skill == "navigate_to");
            if let Some(g) = nav {
                return g.goal_id.clone();
            }
        }
        panic!("never navigated");
    }

    /// A spied engine (recording into `db` when given) whose robot is on
    /// its way to the kitchen, the link's record cleared: the engine, what
    /// it sends from now on, whether each stop's row was committed before
    /// it went, and the navigation's goal id.
    fn under_way(
        thread: &str,
        db: Option<&std::path::Path>,
    ) -> (Engine, Sent, Arc<Mutex<Vec<bool>>>, String) {
        let (mut engine, sent, committed_first) = spied_on(thread, db);
        let nav = navigating(&mut engine, &mut Vec::new());
        sent.lock().unwrap().clear();
        (engine, sent, committed_first, nav)
    }

    pub(crate) fn stops(sent: &[LinkRequest]) -> Vec<String> {
        sent.iter()
            .filter_map(|r| match r {
                LinkRequest::SendGoal {
                    goal_id,
                    kind: GoalKind::StopBase,
                } => Some(goal_id.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_rest_sends_stop_then_cancels_and_the_task_resumes_at_its_step() {
        let (mut engine, sent, _, nav) = under_way("r", None);
        engine.bring_to_rest("a test");
        let sent = sent.lock().unwrap().clone();
        assert!(
            matches!(&sent[0], LinkRequest::SendGoal { kind: GoalKind::StopBase, goal_id } if goal_id.starts_with("r/rest1.")),
            "{sent:?}"
        );
        assert!(
            sent[1..].contains(&LinkRequest::Cancel { goal_id: nav }),
            "{sent:?}"
        );
        assert!(engine.mind.runner.running().is_empty());
        let task = &engine.state().queue.tasks()[0];
        assert_eq!(task.status, TaskStatus::Preempted);
        assert_eq!(engine.state().mode, Mode::Safe);
    }

    #[test]
    fn stop_ids_differ_between_processes_of_one_thread() {
        let (mut a, sent_a) = spied("same");
        let (mut b, sent_b) = spied("same");
        b.setup.nonce = a.setup.nonce + 1;
        a.bring_to_rest("x");
        b.bring_to_rest("x");
        let (a, b) = (
            stops(&sent_a.lock().unwrap()),
            stops(&sent_b.lock().unwrap()),
        );
        assert_eq!(a.len(), 1);
        assert_ne!(a, b, "a resumed brain must not repeat a stop's id");
    }

    #[test]
    fn a_failed_commit_stops_the_robot_first_and_sends_nothing_else() {
        let path = temp_db("failed");
        let (mut engine, sent, _, nav) = under_way("f", Some(&path));
        let mut events = Vec::new();
        let other = fail_the_store(&mut engine, &path, &mut events);
        let sent = sent.lock().unwrap().clone();
        assert_eq!(stops(&sent).len(), 1, "{sent:?}");
        assert!(
            matches!(
                &sent[0],
                LinkRequest::SendGoal {
                    kind: GoalKind::StopBase,
                    ..
                }
            ),
            "{sent:?}"
        );
        assert!(
            sent.contains(&LinkRequest::Cancel { goal_id: nav }),
            "{sent:?}"
        );
        assert!(
            sent.iter().all(
                |r| !matches!(r, LinkRequest::SendGoal { kind, .. } if *kind != GoalKind::StopBase)
            ),
            "nothing but the stop and cancels: {sent:?}"
        );
        assert!(events.iter().any(|e| matches!(&e.kind,
            EventKind::Error { code, message } if code == "store_failed" && message.contains("the robot was brought to rest"))));
        other.execute_batch("ROLLBACK").unwrap();
        // The stop is not in the ledger: the store had failed.
        let store = Store::open(&path, Synchronous::Normal).unwrap();
        assert!(
            store
                .ledger("f")
                .unwrap()
                .iter()
                .all(|l| l.skill != "stop_base")
        );
    }

    #[test]
    fn the_estop_reaches_the_robot_before_its_commit_and_with_a_failed_store() {
        let path = temp_db("estop");
        let (mut engine, sent, committed_first, _) = under_way("e", Some(&path));
        let mut events = Vec::new();
        engine.submit(Command::EStop, Origin::console());
        let first = stops(&sent.lock().unwrap());
        assert_eq!(first.len(), 1);
        assert_eq!(
            *committed_first.lock().unwrap(),
            [false],
            "sent before its commit"
        );
        // … and recorded right after.
        let store = Store::open(&path, Synchronous::Normal).unwrap();
        let row = store
            .ledger("e")
            .unwrap()
            .into_iter()
            .find(|l| l.goal_id == first[0]);
        assert_eq!(
            row.map(|l| l.status),
            Some(crate::store::LedgerStatus::Done)
        );

        // The store fails; an E-stop still goes out, and says it is not recorded.
        let _other = fail_the_store(&mut engine, &path, &mut events);
        sent.lock().unwrap().clear();
        events.clear();
        engine.submit(Command::EStop, Origin::console());
        engine.tick(&mut events);
        assert_eq!(
            stops(&sent.lock().unwrap()).len(),
            1,
            "the E-stop is sent whatever the store"
        );
        assert!(events.iter().any(|e| matches!(&e.kind,
            EventKind::Error { code, message } if code == "not_recorded" && message.contains("reached the robot"))));
    }

    #[test]
    fn a_dropped_engine_that_ran_but_never_closed_stops_the_robot() {
        let (engine, sent, _, _) = under_way("d", None);
        drop(engine);
        assert_eq!(stops(&sent.lock().unwrap()).len(), 1);
        let (engine, sent) = spied("n");
        drop(engine);
        assert!(
            stops(&sent.lock().unwrap()).is_empty(),
            "a run that never started stops nothing"
        );
        let (mut engine, sent) = spied("c");
        engine.close();
        engine.close();
        drop(engine);
        assert_eq!(
            stops(&sent.lock().unwrap()).len(),
            1,
            "closing stops once; dropping after it, never"
        );
    }

    #[test]
    fn the_robots_dead_man_notice_is_an_error_and_the_task_resumes_its_step() {
        let (mut engine, _, _, nav) = under_way("m", None);
        let mut events = Vec::new();
        engine.robot.replies.push(LinkReply::Deadman {
            silent_s: 2.1,
            time: 12.0,
            stopped: vec![nav.clone()],
        });
        engine.tick(&mut events);
        assert!(events.iter().any(|e| matches!(&e.kind,
            EventKind::Error { code, message } if code == "robot_deadman" && message.contains(&nav))));
        // The task goes on: its step is sent again under a new goal id.
        let mut again = Vec::new();
        for _ in 0..50 {
            engine.tick(&mut again);
        }
        let running: Vec<_> = engine
            .mind
            .runner
            .running()
            .iter()
            .map(|g| g.goal_id.clone())
            .collect();
        assert!(running.iter().any(|g| *g != nav), "{running:?}");
    }

    #[test]
    fn a_panic_on_the_kernel_thread_stops_the_robot_and_says_so() {
        let (engine, sent, _, _) = under_way("p", None);
        let (runtime, mut rx) = crate::runtime::Runtime::start_subscribed(
            engine,
            crate::runtime::Pace::RealTime { speed: 1.0 },
        );
        BOOM.lock().unwrap().push("p".into());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut said = None;
        while said.is_none() && std::time::Instant::now() < deadline {
            match rx.try_recv() {
                Ok(e) => {
                    if let EventKind::Error { code, message } = e.kind
                        && code == "kernel_panic"
                    {
                        said = Some(message);
                    }
                }
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(5)),
            }
        }
        BOOM.lock().unwrap().retain(|t| t != "p");
        let said = said.expect("a kernel_panic event");
        assert!(
            said.contains("boom") && said.contains("brought to rest"),
            "{said}"
        );
        assert!(
            !stops(&sent.lock().unwrap()).is_empty(),
            "the stop went out"
        );
        drop(runtime);
    }

    /// A robot on loopback for a [`crate::link::tcp::TcpLink`]: it says
    /// `hello` on every connection; one that reads records every request
    /// and accepts every goal, a deaf one never reads a byte.
    struct FakeRobot {
        url: String,
        heard: Arc<Mutex<Vec<LinkRequest>>>,
    }

    impl FakeRobot {
        fn start(reads: bool) -> Self {
            use crate::link::tcp::write_line;
            use std::io::BufRead;
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let url = format!("tcp://{}", listener.local_addr().unwrap());
            let heard = Arc::new(Mutex::new(Vec::new()));
            let record = Arc::clone(&heard);
            std::thread::spawn(move || {
                let mut deaf = Vec::new();
                for stream in listener.incoming() {
                    let Ok(mut stream) = stream else { return };
                    let _ = write_line(&mut stream, &LinkReply::Hello { deadman_s: 0.0 });
                    if !reads {
                        deaf.push(stream);
                        continue;
                    }
                    let record = Arc::clone(&record);
                    std::thread::spawn(move || {
                        let reader = std::io::BufReader::new(stream.try_clone().unwrap());
                        for line in reader.lines() {
                            let Ok(line) = line else { return };
                            let Ok(request) = serde_json::from_str::<LinkRequest>(&line) else {
                                continue;
                            };
                            if let LinkRequest::SendGoal { goal_id, .. } = &request {
                                let accepted = LinkReply::Accepted {
                                    goal_id: goal_id.clone(),
                                };
                                let _ = write_line(&mut stream, &accepted);
                            }
                            record.lock().unwrap().push(request);
                        }
                    });
                }
            });
            Self { url, heard }
        }

        fn link(&self) -> Box<dyn RobotLink> {
            Box::new(crate::link::tcp::TcpLink::connect(&self.url).unwrap())
        }
    }

    #[test]
    fn goals_held_back_by_the_estop_line_are_never_sent_and_recorded_as_not_sent() {
        let robot = FakeRobot::start(true);
        let path = temp_db("held");
        let config = Config {
            thread_id: Some("h".into()),
            ..Config::default()
        };
        let world = World::builtin("apartment").unwrap();
        let mut engine = Engine::new(&config, world, robot.link()).unwrap();
        let store = Store::open(&path, Synchronous::Normal).unwrap();
        engine
            .attach_store(store, &crate::store::StoreConfig::default(), false)
            .unwrap();
        // An operator's E-stop is on its way: the line holds and stops the
        // robot, and the kernel, busy, has not taken the E-stop in yet ...
        let line = engine.estop_line().unwrap();
        line.hold();
        line.stop().unwrap();
        // ... while it dispatches a goal, recorded and handed to the link.
        let mut events = Vec::new();
        let nav = navigating(&mut engine, &mut events);
        // The kernel takes the E-stop in.
        engine.submit(Command::EStop, Origin::console());
        engine.tick(&mut events);
        // The robot reads in order: once it has the kernel's stop, it has
        // everything handed to the link before it.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let heard = loop {
            let heard = robot.heard.lock().unwrap().clone();
            if stops(&heard).iter().any(|g| g.starts_with("h/estop1.")) {
                break heard;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the kernel's stop never reached the robot: {heard:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        assert!(
            stops(&heard)
                .first()
                .is_some_and(|g| g.starts_with("line/estop")),
            "the line's stop came first: {heard:?}"
        );
        assert!(
            heard.iter().all(|r| match r {
                LinkRequest::SendGoal { goal_id, kind } =>
                    *kind == GoalKind::StopBase && *goal_id != nav,
                LinkRequest::Cancel { goal_id } | LinkRequest::QueryGoal { goal_id } =>
                    *goal_id != nav,
                _ => true,
            }),
            "nothing of the held-back goal {nav} reached the robot: {heard:?}"
        );
        // Recorded as not sent.
        assert!(events.iter().any(|e| matches!(&e.kind,
            EventKind::Log { message, .. } if *message == format!("reconcile {nav}: held back by the E-stop line, never sent to the robot"))));
        let row = Store::open(&path, Synchronous::Normal)
            .unwrap()
            .ledger("h")
            .unwrap()
            .into_iter()
            .find(|l| l.goal_id == nav)
            .expect("the goal's ledger row");
        assert_eq!(row.status, crate::store::LedgerStatus::Done);
        assert_eq!(
            row.result.as_ref().and_then(|r| r.get("status")),
            Some(&json!("not_sent")),
            "{row:?}"
        );
        // Paused by the E-stop: it goes on at its step on the operator's resume.
        let task = &engine.state().queue.tasks()[0];
        assert_eq!(task.status, TaskStatus::Paused);
        assert!(engine.mind.runner.running().is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_robot_that_stops_reading_keeps_neither_the_estop_from_the_kernel_nor_the_run_from_ending()
     {
        use crate::runtime::{Pace, Runtime};
        use std::time::{Duration, Instant};
        let robot = FakeRobot::start(false);
        let mut config = Config::default();
        config.speech.voice = crate::voice::VoiceChoice::Text;
        let world = World::builtin("apartment").unwrap();
        let engine = Engine::new(&config, world, robot.link()).unwrap();
        let (runtime, mut events) =
            Runtime::start_subscribed(engine, Pace::RealTime { speed: 1.0 });
        // The robot reads nothing: the brain writes far more than the
        // socket's buffers hold, until its writes stall.
        let big = crate::protocol::Fault::Block {
            passage: "x".repeat(1 << 20),
        };
        for _ in 0..32 {
            runtime
                .send(Command::Inject { fault: big.clone() }, Origin::console())
                .await
                .unwrap();
        }
        // The stalled write times out: the link is down (the kernel is not
        // stuck in it).
        let down = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                match events.recv().await {
                    Ok(e) if matches!(&e.kind, EventKind::Mode { to: Mode::Safe, reason, .. } if reason == "robot link is down") => return,
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(e) => panic!("{e}"),
                }
            }
        })
        .await;
        assert!(
            down.is_ok(),
            "the link never noticed the robot stopped reading"
        );
        // The E-stop is sent from a face's thread: it returns, whatever
        // the robot does ...
        let sender = runtime.sender();
        let (sent_tx, sent_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = sent_tx.send(sender.send(Command::EStop, Origin::console()));
        });
        let sent =
            tokio::task::spawn_blocking(move || sent_rx.recv_timeout(Duration::from_secs(20)))
                .await
                .unwrap();
        assert_eq!(sent, Ok(Ok(())), "sending the E-stop did not return");
        // ... the kernel takes it in ...
        let deadline = Instant::now() + Duration::from_secs(30);
        while !runtime.snapshot().estop {
            assert!(
                Instant::now() < deadline,
                "the E-stop never reached the kernel"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // ... and the run ends.
        assert!(
            tokio::time::timeout(Duration::from_secs(30), runtime.shutdown())
                .await
                .is_ok(),
            "the run hung on the robot"
        );
    }
}
