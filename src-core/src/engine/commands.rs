//! K1: commands and utterances become tasks, interrupts and answers.

use super::Engine;
use crate::brain::{Intent, parse_intent};
use crate::kernel::{PlanStep, TaskKind};
use crate::lines::Lang;
use crate::link::LinkRequest;
use crate::protocol::{
    AlertStatus, Command, Event, EventKind, Mode, Node, Priority, SkillCall, SpeechTrack,
    TaskStatus,
};
use crate::react::{LastResult, Phase};

impl Engine {
    /// Takes in one command at once, between ticks (K1 without the rest of
    /// a tick), commits what it did and appends its events to `out`. The
    /// runtime hands commands over one by one this way, so that an urgent
    /// one that comes meanwhile is taken before the next (an E-stop still
    /// goes through [`Engine::submit`]). A halted engine keeps it pending.
    pub fn take_in(&mut self, command: Command, out: &mut Vec<Event>) {
        if self.halted().is_some() {
            self.pending.push(command);
            return;
        }
        self.ingest(command);
        self.deliver(out);
    }

    pub(super) fn ingest(&mut self, command: Command) {
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
                if let Some(memory) = &self.memory {
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
            Command::StartPatrol { route } => self.start_patrol(route.as_deref(), Lang::default()),
            Command::Acknowledge { incident_id, by } => {
                self.acknowledge(incident_id.as_deref(), &by, Lang::default());
            }
            Command::Inject { fault } if self.device_fault(&fault) => {}
            Command::Inject { fault } => {
                if let Err(e) = self.link.send(LinkRequest::Inject { fault }) {
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
        }
    }

    pub(super) fn say(&mut self, text: &str) {
        // The robot's own commands, as its grammar has them, first (a bare
        // "stop" stops the robot, not a media player).
        if let Some(intent) = crate::brain::intent::hear(text, &self.world) {
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
        let intent = parse_intent(text, &self.world);
        if matches!(intent, Intent::Unknown | Intent::UnknownPlace { .. })
            && self.brain.recognize(text, &self.world, &self.registry)
        {
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
        let Some(memory) = &self.memory else { return };
        let home = crate::hci::lock(&self.home);
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
        for (text, understood) in self.brain.recognized(&self.world, &self.registry) {
            // The model call is accounted before its result.
            self.brain_notes();
            if let Some(intent) = understood {
                self.act_on(&text, intent, false);
            } else {
                let intent = parse_intent(&text, &self.world);
                self.act_on(&text, intent, true);
            }
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
                let zone = self.world.home_zone.clone();
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
                self.say_line(
                    lang,
                    "not_understood",
                    &[("text", text)],
                    SpeechTrack::Answer,
                );
            }
        }
    }

    /// A zone's name in `lang` (its Chinese alias for Chinese).
    fn zone_name(&self, zone: &str, lang: Lang) -> String {
        self.world
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
        if !self.config.patrol.look_around
            && let Some(task) = self.state.queue.get_mut(&id)
        {
            // Patrols that only go round: no look at each waypoint.
            task.plan.retain(|step| step.skill != "watch");
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
        let Some(zones) = self.world.route(name).map(<[String]>::to_vec) else {
            let known: Vec<&str> = self.world.routes.iter().map(|(n, _)| n.as_str()).collect();
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
            self.resume_after("the alert was acknowledged");
        }
    }

    /// Releases an E-stop, resumes paused tasks and retries tasks waiting for help.
    fn resume(&mut self) {
        self.resume_after("the operator said retry");
    }

    /// [`Engine::resume`], saying why a task waiting for help goes on.
    fn resume_after(&mut self, why: &str) {
        if self.state.estop {
            self.state.estop = false;
            self.emit(EventKind::Log {
                level: "info".into(),
                message: "E-stop released by the operator".into(),
            });
        }
        let ids: Vec<(String, TaskStatus)> = self
            .state
            .queue
            .tasks()
            .iter()
            .filter(|t| matches!(t.status, TaskStatus::Paused | TaskStatus::WaitingHuman))
            .map(|t| (t.id.clone(), t.status))
            .collect();
        for (id, status) in ids {
            if let Some(task) = self.state.queue.get_mut(&id) {
                let after = if status == TaskStatus::Paused {
                    "a pause"
                } else {
                    why
                };
                task.status = TaskStatus::Queued;
                task.react.phase = Phase::Ready;
                task.react.last = Some(LastResult::Resumed {
                    after: after.into(),
                });
                if status == TaskStatus::WaitingHuman {
                    task.failures.clear();
                    task.react.iteration = 0;
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
    /// (events, ledger row), the E-stop latches and the active task is set
    /// aside. The record follows when the tick (or `submit`) commits.
    pub(super) fn estop_now(&mut self) {
        self.state.estops += 1;
        let stop = self.send_stop("estop", self.state.estops);
        self.hush("E-stop");
        self.state.estop = true;
        self.set_mode(Mode::Safe, "E-stop pressed".into());
        let cut = self.note_stop(&stop);
        let active = self.state.queue.active_id().map(str::to_string);
        if let Some(id) = &active {
            self.set_aside(id, "E-stop");
        }
        for id in cut.iter().filter(|id| Some(*id) != active.as_ref()) {
            self.interrupt(id, "E-stop");
        }
        if let Some(why) = self.halted().map(str::to_string) {
            self.emit(EventKind::Error {
                code: "not_recorded".into(),
                message: format!("the E-stop reached the robot but cannot be recorded: {why}"),
            });
        }
    }

    /// Speaks a line (an event; audio comes with the speech skills).
    pub(super) fn speak(&mut self, text: &str, track: SpeechTrack) {
        let audio = self.speaker.say(text).map(|p| p.display().to_string());
        self.emit(EventKind::Speech {
            text: text.to_string(),
            track,
            audio,
        });
    }

    /// Barge-in: the operator speaks (or presses the E-stop), the robot stops talking.
    fn hush(&mut self, why: &str) {
        let cut = self.speaker.interrupt();
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
