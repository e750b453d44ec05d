//! K1: commands and utterances become tasks, interrupts and answers.

use super::Engine;
use crate::brain::{Intent, parse_intent};
use crate::kernel::{PlanStep, TaskKind};
use crate::lines::Lang;
use crate::link::LinkRequest;
use crate::protocol::{
    AlertStatus, Command, Event, EventKind, Mode, Node, Origin, Priority, SkillCall, SpeechTrack,
    TaskStatus,
};
use crate::react::{LastResult, Phase};

impl Engine {
    /// Takes in one command at once, between ticks (K1 without the rest of
    /// a tick), commits what it did and appends its events to `out`. The
    /// runtime hands commands over one by one this way, so that an urgent
    /// one that comes meanwhile is taken before the next (an E-stop still
    /// goes through [`Engine::submit`]). A halted engine keeps it pending.
    pub fn take_in(&mut self, command: Command, origin: Origin, out: &mut Vec<Event>) {
        if self.halted().is_some() {
            self.traffic.pending.push((command, origin));
            return;
        }
        self.ingest(command, origin);
        self.deliver(out);
    }

    /// Takes in one command from `origin`: every event it causes carries
    /// the origin, and a task it queues remembers it (for its approvals).
    pub(super) fn ingest(&mut self, command: Command, origin: Origin) {
        let refused = (!origin.may_act())
            .then(|| format!("{origin} may only watch: `{}` was refused", command.name()));
        self.traffic.cause = Some(origin);
        if let Some(message) = refused {
            // A door should not have sent it (the runtime refuses it
            // unqueued); the kernel refuses it whatever drives it.
            self.node(Node::HciIngress);
            self.emit(EventKind::Error {
                code: "watch_only".into(),
                message,
            });
        } else {
            self.ingest_caused(command);
        }
        self.traffic.cause = None;
    }

    fn ingest_caused(&mut self, command: Command) {
        self.node(Node::HciIngress);
        // Every face's utterance passes here: one that is too long is
        // refused before the home, the intent parser or memory see it.
        if let Err(e) = command.check_limits() {
            self.emit(EventKind::Error {
                code: e.code().into(),
                message: e.to_string(),
            });
            return;
        }
        match command {
            Command::Say { text } => {
                if let Some(memory) = &self.mind.memory {
                    memory.add_message("user", &text);
                }
                self.hush("the operator spoke");
                self.say(&text);
            }
            Command::Approve { approval_id } => self.approve(&approval_id, None),
            Command::Edit { approval_id, args } => self.approve(&approval_id, Some(&args)),
            Command::Reject {
                approval_id,
                reason,
            } => self.reject(&approval_id, &reason),
            Command::Pause => self.pause(Lang::default()),
            Command::Resume => self.resume(),
            Command::Stop => self.cancel_active("stopped by the operator", Lang::default()),
            Command::EStop => self.estop_now(),
            Command::ResetEStop => self.reset_estop(),
            Command::StartPatrol { route } => self.start_patrol(route.as_deref(), Lang::default()),
            Command::Acknowledge { incident_id, by } => {
                self.acknowledge(incident_id.as_deref(), &by, Lang::default());
            }
            Command::Inject { fault } if self.device_fault(&fault) => {}
            Command::Inject { fault } => {
                if let Err(e) = self.robot.link.send(LinkRequest::Inject { fault }) {
                    self.emit(EventKind::Error {
                        code: "inject_refused".into(),
                        message: e.to_string(),
                    });
                }
            }
            Command::Shutdown => self.shutdown(),
            Command::Call {
                call_id,
                skill,
                args,
            } => {
                self.add_task(TaskKind::Call { skill, args }, &format!("call {call_id}"));
            }
            Command::Chain { call_id, calls } => self.chain(&call_id, calls),
            Command::Report {
                code: Some(code),
                message,
            } => self.emit(EventKind::Error { code, message }),
            Command::Report {
                code: None,
                message,
            } => self.log("info", &message),
        }
    }

    pub(super) fn say(&mut self, text: &str) {
        // The robot's own commands, as its grammar has them, first (a bare
        // "stop" stops the robot, not a media player).
        if let Some(intent) = crate::brain::intent::hear(text, &self.setup.world) {
            self.act_on(text, intent, true);
            return;
        }
        // The home's fast path: device calls, queries, scenes.
        if self.home_say(text) {
            self.remember_home_session();
            return;
        }
        // Local first; a brain that understands more gets what the rules
        // could not parse, and answers later (`heard`).
        let intent = parse_intent(text, &self.setup.world);
        if matches!(intent, Intent::Unknown | Intent::UnknownPlace { .. })
            && self
                .mind
                .brain
                .recognize(text, &self.setup.world, &self.mind.registry)
        {
            if let Some(origin) = &self.traffic.cause {
                // Bounded: a recognition the brain never reports back
                // does not keep its origin for ever.
                if self.mind.recognizing.len() >= 64 {
                    self.mind.recognizing.remove(0);
                }
                self.mind
                    .recognizing
                    .push((text.to_string(), origin.clone()));
            }
            self.emit(EventKind::Log {
                level: "info".into(),
                message: format!("asking the model what \"{text}\" means"),
            });
            return;
        }
        self.act_on(text, intent, true);
    }

    /// Keeps what the home's last turn referred to ("it", "there", the
    /// plan) in memory's session state, where the planner's input shows it.
    fn remember_home_session(&self) {
        let Some(memory) = &self.mind.memory else {
            return;
        };
        let home = crate::hci::lock(&self.home.handle);
        let session = &home.session;
        let kept = [
            ("last_devices", session.last_devices.join(", ")),
            ("last_room", session.last_room.clone().unwrap_or_default()),
            ("last_plan", session.last_plan.clone().unwrap_or_default()),
        ];
        // A turn that left one empty keeps the last one known.
        for (key, value) in kept.iter().filter(|(_, v)| !v.is_empty()) {
            memory.set_state(key, value);
        }
    }

    /// Utterances the brain has finished recognising: the model's intent, or
    /// the rule parser's when the model did not understand either.
    pub(super) fn heard(&mut self) {
        for (text, understood) in self
            .mind
            .brain
            .recognized(&self.setup.world, &self.mind.registry)
        {
            // The model call is accounted before its result.
            self.brain_notes();
            // Carried out as from where it was said.
            self.traffic.cause = self
                .mind
                .recognizing
                .iter()
                .position(|(said, _)| *said == text)
                .map(|i| self.mind.recognizing.remove(i).1);
            if let Some(intent) = understood {
                self.act_on(&text, intent, false);
            } else {
                let intent = parse_intent(&text, &self.setup.world);
                self.act_on(&text, intent, true);
            }
            self.traffic.cause = None;
        }
    }

    /// What the operator asked of the robot, carried out, and answered in
    /// the language it was said in.
    fn act_on(&mut self, text: &str, intent: Intent, processed_locally: bool) {
        let lang = Lang::of(text);
        self.emit(EventKind::Intent {
            utterance: text.to_string(),
            intent: intent.name().into(),
            args: intent.args(),
            processed_locally,
        });
        let operator = format!("operator: {text}");
        match intent {
            Intent::Goto { zone } => {
                let name = self.zone_name(&zone, lang);
                self.say_line(
                    lang,
                    "heading_to",
                    &[("zone", &name)],
                    SpeechTrack::Template,
                );
                self.add_task(TaskKind::Goto { zone }, &operator);
            }
            Intent::Patrol { zones } if zones.is_empty() => self.start_patrol(None, lang),
            Intent::Patrol { zones } => {
                self.say_line(lang, "starting_patrol", &[], SpeechTrack::Template);
                self.add_task(TaskKind::Patrol { route: None, zones }, &operator);
            }
            Intent::Charge => {
                self.say_line(lang, "going_to_charge", &[], SpeechTrack::Template);
                self.add_task(TaskKind::Charge, &operator);
            }
            Intent::ComeBack => {
                let zone = self.setup.world.home_zone.clone();
                let name = self.zone_name(&zone, lang);
                self.say_line(
                    lang,
                    "coming_back",
                    &[("zone", &name)],
                    SpeechTrack::Template,
                );
                self.add_task(TaskKind::Goto { zone }, &operator);
            }
            Intent::Stop | Intent::Cancel => self.cancel_active("cancelled by the operator", lang),
            Intent::Pause => self.pause(lang),
            Intent::Resume | Intent::Retry => self.resume(),
            Intent::Estop => self.estop_now(),
            Intent::Acknowledge => self.acknowledge(None, "operator", lang),
            Intent::UnknownPlace { phrase } => {
                let known: Vec<String> = self
                    .setup
                    .world
                    .zones
                    .iter()
                    .map(|z| crate::lines::name_in(lang, &z.name, &z.aliases))
                    .collect();
                let known = crate::lines::list(lang, &known, false);
                self.say_line(
                    lang,
                    "unknown_place",
                    &[("phrase", &phrase), ("known", &known)],
                    SpeechTrack::Answer,
                );
            }
            Intent::Unknown => {
                // Never the sentence's own words back: an echo reads as
                // an answer to whoever checks the reply for them.
                self.say_line(lang, "not_understood", &[], SpeechTrack::Answer);
            }
        }
    }

    /// A zone's name in `lang` (its Chinese alias for Chinese).
    fn zone_name(&self, zone: &str, lang: Lang) -> String {
        self.setup
            .world
            .zones
            .iter()
            .find(|z| z.name == zone)
            .map_or_else(
                || zone.replace('_', " "),
                |z| crate::lines::name_in(lang, &z.name, &z.aliases),
            )
    }

    /// Speaks the line `key` of the catalogue in `lang` ([`crate::lines`]).
    pub(super) fn say_line(
        &mut self,
        lang: Lang,
        key: &str,
        slots: &[(&str, &str)],
        track: SpeechTrack,
    ) {
        let text = crate::lines::line(lang, key, slots);
        self.speak(&text, track);
    }

    /// Queues a task: main priority when nothing else is open, user-interrupt otherwise.
    pub(super) fn add_task(&mut self, kind: TaskKind, reason: &str) -> String {
        let busy = self
            .state
            .queue
            .tasks()
            .iter()
            .any(super::super::kernel::task::Task::is_runnable);
        let priority = if busy {
            Priority::UserInterrupt
        } else {
            Priority::Main
        };
        let id = self.state.queue.push(kind, priority, self.state.time);
        if let Some(task) = self.state.queue.get_mut(&id) {
            task.origin.clone_from(&self.traffic.cause);
            if !self.setup.config.patrol.look_around {
                // Patrols that only go round: no look at each waypoint.
                task.plan.retain(|step| step.skill != "watch");
            }
        }
        self.task_event(&id, reason);
        id
    }

    /// `execute_chain`: the calls as one task whose plan is the calls in
    /// order. An empty chain is refused with an error event.
    fn chain(&mut self, call_id: &str, calls: Vec<SkillCall>) {
        if calls.is_empty() {
            self.emit(EventKind::Error {
                code: "empty_chain".into(),
                message: format!("chain {call_id}: `calls` needs at least one skill call"),
            });
            return;
        }
        let calls = calls
            .into_iter()
            .map(|c| PlanStep {
                skill: c.skill,
                args: c.args,
            })
            .collect();
        self.add_task(TaskKind::Chain { calls }, &format!("chain {call_id}"));
    }

    fn start_patrol(&mut self, route: Option<&str>, lang: Lang) {
        let name = route.unwrap_or("default");
        let Some(zones) = self.setup.world.route(name).map(<[String]>::to_vec) else {
            let known: Vec<&str> = self
                .setup
                .world
                .routes
                .iter()
                .map(|(n, _)| n.as_str())
                .collect();
            self.emit(EventKind::Error {
                code: "unknown_route".into(),
                message: format!("no route called `{name}`; routes: {}", known.join(", ")),
            });
            return;
        };
        self.say_line(lang, "starting_patrol", &[], SpeechTrack::Template);
        self.add_task(
            TaskKind::Patrol {
                route: Some(name.to_string()),
                zones,
            },
            &format!("patrol route {name}"),
        );
        self.schedule_rounds(name);
    }

    fn pause(&mut self, lang: Lang) {
        let Some(id) = self.state.queue.active_id().map(str::to_string) else {
            self.say_line(lang, "nothing_to_pause", &[], SpeechTrack::Answer);
            return;
        };
        self.halt_task(&id, TaskStatus::Paused, "paused by the operator");
        self.say_line(lang, "paused", &[], SpeechTrack::Answer);
    }

    /// Marks open alerts acknowledged (the one named, or all), says so, and
    /// lets a task that waited on them go on.
    fn acknowledge(&mut self, incident_id: Option<&str>, by: &str, lang: Lang) {
        let now = self.state.time;
        let mut acknowledged = Vec::new();
        for incident in &mut self.state.incidents {
            if incident.acknowledged_by.is_none() && incident_id.is_none_or(|id| id == incident.id)
            {
                incident.status = AlertStatus::Acknowledged;
                incident.acknowledged_by = Some(by.to_string());
                incident.acknowledged_at = Some(now);
                acknowledged.push(incident.clone());
            }
        }
        if acknowledged.is_empty() {
            match incident_id {
                Some(id) => {
                    self.say_line(lang, "no_alert_named", &[("id", id)], SpeechTrack::Answer);
                }
                None => self.say_line(lang, "no_alert", &[], SpeechTrack::Answer),
            }
            return;
        }
        for incident in acknowledged {
            self.emit(EventKind::Alert {
                incident: Box::new(incident),
            });
        }
        if self
            .state
            .incidents
            .iter()
            .all(|i| i.acknowledged_by.is_some())
        {
            self.say_line(lang, "acknowledged", &[], SpeechTrack::Answer);
            self.resume_after("the alert was acknowledged", false);
        }
    }

    /// The operator's deliberate start: resumes paused tasks (those the
    /// E-stop set aside too) and retries tasks waiting for help. Refused
    /// while the E-stop is latched: a reset comes first, and is its own act.
    fn resume(&mut self) {
        if self.state.estop {
            self.emit(EventKind::Error {
                code: "estop_latched".into(),
                message: "the E-stop is latched: reset it first (`reset_estop`: the console's \
                          /reset, the page's reset E-stop); then resume starts the paused tasks"
                    .into(),
            });
            return;
        }
        self.resume_after("the operator said retry", true);
    }

    /// Resets a latched E-stop. It starts nothing (ISO 13850: a reset is
    /// not a start): every task that could run — set aside by the E-stop,
    /// or queued while it was latched — is held paused until a `resume`.
    fn reset_estop(&mut self) {
        if !self.state.estop {
            self.emit(EventKind::Log {
                level: "info".into(),
                message: "no E-stop is latched: nothing to reset".into(),
            });
            return;
        }
        self.state.estop = false;
        let held = self.hold_runnable("queued while the E-stop was latched", &[]);
        let by = self
            .traffic
            .cause
            .as_ref()
            .map_or_else(String::new, |o| format!(" ({o})"));
        let message = if held == 0 {
            format!("E-stop reset by the operator{by}: nothing restarts")
        } else {
            format!(
                "E-stop reset by the operator{by}: nothing restarts; {held} paused task(s) go on \
                 only on `resume`"
            )
        };
        self.emit(EventKind::Log {
            level: "info".into(),
            message,
        });
    }

    /// Pauses every task that could run (queued, running, set aside) and
    /// those named in `also`, keeping each one's step and approvals: it
    /// goes on only on `resume`. How many were held.
    fn hold_runnable(&mut self, why: &str, also: &[String]) -> usize {
        let ids: Vec<String> = self
            .state
            .queue
            .tasks()
            .iter()
            .filter(|t| t.is_runnable() || (also.contains(&t.id) && !t.status.is_terminal()))
            .map(|t| t.id.clone())
            .collect();
        for id in &ids {
            self.hold(id, why);
        }
        ids.len()
    }

    /// [`Engine::resume`], saying why a task waiting for help goes on;
    /// with `paused_too`, paused tasks go on as well. Never while the
    /// E-stop is latched: a task it would queue then waits for the reset
    /// and a `resume`.
    fn resume_after(&mut self, why: &str, paused_too: bool) {
        if self.state.estop {
            return;
        }
        let ids: Vec<(String, TaskStatus)> = self
            .state
            .queue
            .tasks()
            .iter()
            .filter(|t| match t.status {
                TaskStatus::Paused => paused_too,
                TaskStatus::WaitingHuman => true,
                _ => false,
            })
            .map(|t| (t.id.clone(), t.status))
            .collect();
        for (id, status) in ids {
            if let Some(task) = self.state.queue.get_mut(&id) {
                task.status = TaskStatus::Queued;
                // A task the E-stop set aside while it waited for the
                // operator goes on waiting for that approval.
                if !matches!(task.react.phase, Phase::AwaitingApproval { .. }) {
                    task.react.phase = Phase::Ready;
                }
                if status == TaskStatus::WaitingHuman {
                    task.react.last = Some(LastResult::Resumed { after: why.into() });
                    task.failures.clear();
                    task.react.iteration = 0;
                } else if !matches!(task.react.last, Some(LastResult::Resumed { .. })) {
                    task.react.last = Some(LastResult::Resumed {
                        after: "a pause".into(),
                    });
                }
            }
            self.task_event(&id, "resumed by the operator");
        }
    }

    fn cancel_active(&mut self, why: &str, lang: Lang) {
        // Stopping a patrol stops its rounds too.
        self.state.rounds = None;
        let target = self
            .state
            .queue
            .active_id()
            .map(str::to_string)
            .or_else(|| {
                self.state
                    .queue
                    .tasks()
                    .iter()
                    .rev()
                    .find(|t| !t.status.is_terminal())
                    .map(|t| t.id.clone())
            });
        match target {
            Some(id) => {
                self.halt_task(&id, TaskStatus::Cancelled, why);
                self.say_line(lang, "stopped", &[], SpeechTrack::Answer);
            }
            None => self.say_line(lang, "nothing_to_stop", &[], SpeechTrack::Answer),
        }
    }

    /// The E-stop: `stop_base` and a cancel of every goal go to the robot
    /// first — no brain, no commit on the path — then the stop is noted
    /// (events, ledger row), the E-stop latches and every task that could
    /// run is paused at its step (its approvals kept): after a reset only a
    /// `resume` starts it again. Repeating patrol rounds end, and timers
    /// lose the commands they would give. The record follows when the tick
    /// (or `submit`) commits.
    pub(super) fn estop_now(&mut self) {
        self.state.estops += 1;
        let stop = self.send_stop("estop", self.state.estops);
        self.hush("E-stop");
        self.state.estop = true;
        self.set_mode(Mode::Safe, "E-stop pressed".into());
        let cut = self.note_stop(&stop);
        if let Some(id) = self.state.queue.active_id().map(str::to_string) {
            self.cancel_task_goals(&id);
        }
        // A task whose goal the stop cut is held too, whatever its status.
        self.hold_runnable("E-stop", &cut);
        self.forget_schedules();
        if let Some(why) = self.halted().map(str::to_string) {
            self.emit(EventKind::Error {
                code: "not_recorded".into(),
                message: format!("the E-stop reached the robot but cannot be recorded: {why}"),
            });
        }
    }

    /// What was set to start motion later stops with the E-stop: the
    /// patrol's repeating rounds, and the commands timers would give
    /// (their reminders still ring). A start after the E-stop is the
    /// operator's, never a schedule's.
    fn forget_schedules(&mut self) {
        if let Some(rounds) = self.state.rounds.take() {
            self.emit(EventKind::Log {
                level: "info".into(),
                message: format!(
                    "the E-stop ended the rounds of patrol route {}; start it again to repeat",
                    rounds.route
                ),
            });
        }
        let mut dropped = Vec::new();
        for timer in &mut self.state.timers {
            if let Some(command) = timer.command.take() {
                dropped.push(format!("{} (\"{command}\")", timer.id));
            }
        }
        if !dropped.is_empty() {
            self.emit(EventKind::Log {
                level: "info".into(),
                message: format!(
                    "the E-stop dropped the commands of timer(s) {}; they still ring",
                    dropped.join(", ")
                ),
            });
        }
    }

    /// Speaks a line (an event; audio comes with the speech skills).
    pub(super) fn speak(&mut self, text: &str, track: SpeechTrack) {
        let audio = self
            .traffic
            .speaker
            .say(text)
            .map(|p| p.display().to_string());
        self.emit(EventKind::Speech {
            text: text.to_string(),
            track,
            audio,
        });
    }

    /// Barge-in: the operator speaks (or presses the E-stop), the robot stops talking.
    fn hush(&mut self, why: &str) {
        let cut = self.traffic.speaker.interrupt();
        if !cut.is_empty() {
            let files: Vec<String> = cut.iter().map(|p| p.display().to_string()).collect();
            self.emit(EventKind::Log {
                level: "info".into(),
                message: format!("speech cut: {why} ({})", files.join(", ")),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::engine::tests::run;
    use crate::protocol::{Command, EventKind, SkillCall, SkillStatus, TaskStatus};

    fn call(skill: &str, args: serde_json::Value) -> SkillCall {
        SkillCall {
            skill: skill.into(),
            args,
        }
    }

    /// `execute_chain`: the steps run in order, each after the one before
    /// it succeeded, as one task.
    #[test]
    fn a_chain_runs_its_calls_one_after_the_other() {
        let chain = Command::Chain {
            call_id: "c1".into(),
            calls: vec![
                call("speak", json!({"text": "Going to the kitchen."})),
                call("navigate_to", json!({"zone": "kitchen"})),
                call("speak", json!({"text": "Arrived."})),
            ],
        };
        let (engine, events) = run(&[(0.5, chain)], 120.0);
        let task = &engine.state().queue.tasks()[0];
        assert_eq!(task.kind.name(), "chain");
        assert_eq!(task.status, TaskStatus::Succeeded, "{}", task.title());
        let ends: Vec<(String, f64)> = events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Skill {
                    skill,
                    status,
                    args,
                    ..
                } if *status == SkillStatus::Succeeded => {
                    let text = args.get("text").and_then(serde_json::Value::as_str);
                    Some((
                        format!(
                            "{skill}{}",
                            text.map(|t| format!(" {t}")).unwrap_or_default()
                        ),
                        e.time,
                    ))
                }
                _ => None,
            })
            .collect();
        let names: Vec<&str> = ends.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(
            names[..3],
            [
                "speak Going to the kitchen.",
                "navigate_to",
                "speak Arrived."
            ]
        );
        assert!(ends[0].1 < ends[1].1 && ends[1].1 <= ends[2].1, "{ends:?}");
    }

    fn say(text: &str) -> Command {
        Command::Say { text: text.into() }
    }

    /// Navigation goals sent after sim time `t`.
    fn goals_after(events: &[crate::protocol::Event], t: f64) -> usize {
        events
            .iter()
            .filter(|e| {
                e.time > t
                    && matches!(&e.kind, EventKind::Skill { skill, status, .. }
                        if skill == "navigate_to" && *status == SkillStatus::Dispatched)
            })
            .count()
    }

    /// ISO 13850: resetting the E-stop starts nothing. A resume while it
    /// is latched is refused; after the reset the task stays paused, the
    /// robot still, until the operator's resume.
    #[test]
    fn an_estop_reset_is_not_a_start_and_only_a_resume_goes_on() {
        let script = [
            (0.5, say("去厨房")),
            (3.0, Command::EStop),
            (5.0, Command::Resume),
            (6.0, Command::ResetEStop),
        ];
        let (engine, events) = run(&script, 40.0);
        let task = &engine.state().queue.tasks()[0];
        assert_eq!(task.status, TaskStatus::Paused, "{}", task.title());
        assert!(!engine.state().estop);
        assert_eq!(engine.state().mode, crate::protocol::Mode::Idle);
        assert_eq!(
            goals_after(&events, 3.0),
            0,
            "nothing moved after the E-stop"
        );
        assert!(events.iter().any(|e| matches!(&e.kind,
            EventKind::Error { code, .. } if code == "estop_latched")));
        let twist = engine.state().telemetry.twist;
        assert!(
            twist.linear.abs() < 1e-9 && twist.angular.abs() < 1e-9,
            "{twist:?}"
        );

        let mut script = script.to_vec();
        script.push((10.0, Command::Resume));
        let (engine, events) = run(&script, 120.0);
        assert_eq!(
            engine.state().queue.tasks()[0].status,
            TaskStatus::Succeeded
        );
        assert_eq!(goals_after(&events, 10.0), 1);
    }

    /// A task asked for while the E-stop is latched does not start at the
    /// reset either, nor does one an acknowledge would retry.
    #[test]
    fn a_task_queued_while_latched_is_held_at_the_reset() {
        let script = [
            (0.5, Command::EStop),
            (1.0, say("go to the kitchen")),
            (2.0, Command::ResetEStop),
        ];
        let (engine, events) = run(&script, 20.0);
        let task = &engine.state().queue.tasks()[0];
        assert_eq!(task.status, TaskStatus::Paused);
        assert_eq!(goals_after(&events, 0.0), 0);
        assert!(events.iter().any(|e| matches!(&e.kind,
            EventKind::Log { message, .. } if message.contains("nothing restarts"))));
    }

    /// A door's report is the operator's to see: an `error` with its
    /// code, or an `info` log.
    #[test]
    fn a_doors_report_is_an_error_event_or_a_note() {
        let script = [
            (
                0.5,
                Command::Report {
                    code: Some("mqtt_refused".into()),
                    message: "denied".into(),
                },
            ),
            (
                0.5,
                Command::Report {
                    code: None,
                    message: "all taken".into(),
                },
            ),
        ];
        let (_, events) = run(&script, 1.0);
        assert!(events.iter().any(|e| matches!(&e.kind,
            EventKind::Error { code, message } if code == "mqtt_refused" && message == "denied")));
        assert!(events.iter().any(|e| matches!(&e.kind,
            EventKind::Log { level, message } if level == "info" && message == "all taken")));
    }

    #[test]
    fn an_empty_chain_is_refused_with_a_reason() {
        let chain = Command::Chain {
            call_id: "c2".into(),
            calls: Vec::new(),
        };
        let (engine, events) = run(&[(0.5, chain)], 2.0);
        assert!(engine.state().queue.tasks().is_empty());
        assert!(
            events.iter().any(|e| matches!(&e.kind,
            EventKind::Error { code, message } if code == "empty_chain" && message.contains("c2")))
        );
    }
}
