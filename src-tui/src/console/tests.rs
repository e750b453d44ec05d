//! The console's screens, state by state, as insta snapshots of ratatui's
//! `TestBackend`. The engine runs in lockstep (no clock, no terminal), its
//! events and snapshots go through `App::update` exactly as the driver
//! sends them, and commands the app asks for go back to the engine.
//! Sim times and goal ids are filtered so a retuned core does not churn them.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use robobrain_core::config::Config;
use robobrain_core::engine::Engine;
use robobrain_core::protocol::{
    Activity, ApprovalStatus, Command, DecisionType, Event, EventKind, Mode, Origin,
};
use robobrain_core::skills::Risk;
use robobrain_core::world::World;
use std::time::Instant;

use super::app::{ANSWER_GUARD, Action, App, Effect, Stage};
use super::{keys, ui};

struct Harness {
    engine: Engine,
    app: App,
    sent: Vec<Command>,
    /// The wall time the app is told (the answer guard is measured on it).
    clock: Instant,
}

impl Harness {
    fn new(config: &Config) -> Self {
        let mut config = config.clone();
        config.thread_id = Some("console-test".into());
        let world = World::resolve(&config.world).unwrap();
        let engine = Engine::simulated(&config, world.clone()).unwrap();
        let clock = Instant::now();
        let mut app = App::new(world, engine.snapshot(), true);
        app.set_clock(clock);
        Self {
            engine,
            app,
            sent: Vec::new(),
            clock,
        }
    }

    /// Moves the app's wall clock past the answer guard.
    fn after_the_guard(&mut self) {
        self.clock += ANSWER_GUARD;
        self.app.set_clock(self.clock);
    }

    /// F2, a wait past the guard, then `key`: the deliberate way to answer.
    fn answer(&mut self, key: KeyCode) {
        self.press(KeyCode::F(2));
        self.after_the_guard();
        self.press(key);
    }

    /// Commands sent that answer an approval.
    fn answers(&self) -> Vec<&Command> {
        self.sent
            .iter()
            .filter(|c| {
                matches!(
                    c,
                    Command::Approve { .. } | Command::Reject { .. } | Command::Edit { .. }
                )
            })
            .collect()
    }

    fn default() -> Self {
        Self::new(&Config::default())
    }

    /// Sends a command as the console would (through `App::update`'s effect).
    fn send(&mut self, cmd: Command) {
        self.sent.push(cmd.clone());
        self.engine.submit(cmd, Origin::console());
    }

    fn act(&mut self, action: Action) {
        match self.app.update(action) {
            Some(Effect::Send(cmd)) => self.send(cmd),
            Some(Effect::Quit) | None => {}
        }
    }

    fn press(&mut self, code: KeyCode) {
        if let Some(a) = keys::action(&self.app, KeyEvent::new(code, KeyModifiers::NONE)) {
            self.act(a);
        }
    }

    fn type_line(&mut self, text: &str) {
        for c in text.chars() {
            self.press(KeyCode::Char(c));
        }
        self.press(KeyCode::Enter);
    }

    /// Ticks until `stop` matches an event (true) or `seconds` pass (false).
    fn run_until(&mut self, seconds: f64, stop: impl Fn(&Event) -> bool) -> bool {
        let end = self.engine.time() + seconds;
        let mut out = Vec::new();
        while self.engine.time() < end {
            self.engine.tick(&mut out);
            let hit = out.iter().any(&stop);
            for e in out.drain(..) {
                self.act(Action::Core(Box::new(e)));
            }
            self.act(Action::Snapshot(Box::new(self.engine.snapshot())));
            if hit {
                return true;
            }
        }
        false
    }

    fn run_for(&mut self, seconds: f64) {
        self.run_until(seconds, |_| false);
    }

    fn screen(&self, width: u16, height: u16) -> String {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal.draw(|f| ui::draw(&self.app, f)).unwrap();
        terminal.backend().to_string()
    }
}

/// Snapshots a screen with sim times, decimals and goal ids filtered.
macro_rules! screen {
    ($name:literal, $screen:expr) => {
        insta::with_settings!({
            filters => vec![
                (r"\bg\d+\.\d+\b", "[goal]"),
                (r"\d+\.\d+", "#.#"),
            ],
            prepend_module_to_snapshot => false,
        }, {
            insta::assert_snapshot!($name, $screen);
        });
    };
}

fn is_decision(e: &Event, d: DecisionType) -> bool {
    matches!(&e.kind, EventKind::Decision { decision_type, .. } if *decision_type == d)
}

fn approvals_needed_for_moves() -> Config {
    let mut config = Config::default();
    config.policy.approve_risks = vec![Risk::LowWrite, Risk::HighWrite];
    config
}

#[test]
fn idle_at_the_smallest_supported_size() {
    let mut h = Harness::default();
    h.run_for(1.0);
    let s = h.screen(80, 24);
    assert!(s.contains("mode IDLE"), "{s}");
    assert!(s.contains('→'), "the robot is on the map:\n{s}");
    screen!("idle_80x24", s);
}

#[test]
fn navigating_shows_the_path_the_eta_and_the_decisions() {
    let mut h = Harness::default();
    h.type_line("去厨房");
    assert_eq!(
        h.sent,
        vec![Command::Say {
            text: "去厨房".into()
        }]
    );
    h.run_for(6.0);
    let s = h.screen(120, 40);
    assert!(s.contains("mode EXEC"), "{s}");
    assert!(s.contains("navigate_to kitchen"), "{s}");
    assert!(s.contains('·'), "the planned path is drawn:\n{s}");
    assert!(s.contains("“去厨房” → goto"), "{s}");
    screen!("navigating_120x40", s);
}

#[test]
fn a_blocked_door_shows_the_replan() {
    let mut h = Harness::default();
    h.type_line("go to the kitchen");
    h.run_for(2.5);
    h.type_line("/inject block kitchen_door");
    assert!(h.run_until(120.0, |e| is_decision(e, DecisionType::Replan)));
    h.run_for(1.0);
    let s = h.screen(120, 40);
    assert!(s.contains("REPLAN"), "{s}");
    assert!(s.contains('X'), "the blocked door is marked:\n{s}");
    screen!("blocked_replan_120x40", s);
}

#[test]
fn low_battery_preempts_to_charge() {
    let mut h = Harness::default();
    h.type_line("/inject battery 23");
    h.type_line("巡逻");
    assert!(h.run_until(600.0, |e| matches!(
        &e.kind,
        EventKind::Mode {
            to: Mode::Charge,
            ..
        }
    )));
    h.run_for(3.0);
    let s = h.screen(120, 40);
    assert!(s.contains("mode CHARGE"), "{s}");
    assert!(s.contains("preempted"), "{s}");
    screen!("charge_preemption_120x40", s);
}

fn pending_approval() -> Harness {
    let mut h = Harness::new(&approvals_needed_for_moves());
    h.type_line("去厨房");
    assert!(h.run_until(30.0, |e| matches!(
        &e.kind,
        EventKind::Approval {
            status: ApprovalStatus::Requested,
            ..
        }
    )));
    h
}

#[test]
fn an_approval_shows_what_will_happen() {
    let h = pending_approval();
    let s = h.screen(100, 30);
    for want in [
        "Approval 1 of 1",
        "navigate_to kitchen",
        "risk low_write",
        "route: living_room",
        "ETA",
        "on arrival",
        "[F2] answer this card",
        "/approve a1",
    ] {
        assert!(s.contains(want), "no {want:?} in\n{s}");
    }
    screen!("approval_pending_100x30", s);
}

#[test]
fn approving_sends_the_command_and_the_task_finishes() {
    let mut h = pending_approval();
    h.answer(KeyCode::F(3));
    assert!(matches!(h.sent.last(), Some(Command::Approve { approval_id }) if approval_id == "a1"));
    assert!(h.run_until(120.0, |e| is_decision(e, DecisionType::Finish)));
    h.run_for(1.0);
    assert!(!h.app.prompt_open());
    assert_eq!(h.app.snapshot().robot.zone.as_deref(), Some("kitchen"));
}

#[test]
fn a_refused_edit_keeps_the_prompt_with_the_error_inline() {
    let mut h = pending_approval();
    h.answer(KeyCode::F(4));
    // Clear the proposed args and type arguments that break the schema.
    for _ in 0..40 {
        h.press(KeyCode::Backspace);
    }
    h.type_line(r#"{"zone": 5}"#);
    let s = h.screen(100, 30);
    assert!(s.contains("refused: invalid args for `navigate_to`"), "{s}");
    assert!(
        !h.sent.iter().any(|c| matches!(c, Command::Edit { .. })),
        "a locally refused edit is not sent"
    );
    screen!("edit_refused_100x30", s);
    // An edit the kernel's guardrails refuse is shown the same way.
    h.send(Command::Edit {
        approval_id: "a1".into(),
        args: serde_json::json!({"zone": "moon"}),
    });
    h.run_for(0.3);
    match &h.app.prompt.stage {
        Stage::Edit { error: Some(e), .. } => assert!(e.contains("moon"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert!(h.app.prompt_open());
}

#[test]
fn several_approvals_queue_visibly_and_rejecting_asks_a_reason() {
    let mut h = pending_approval();
    // The kernel holds one op per task; a second task's approval joins the queue.
    let mut snap = h.app.snapshot().clone();
    let mut second = snap.approvals[0].clone();
    second.approval_id = "a2".into();
    second.task_id = "t2".into();
    second.op = robobrain_core::protocol::Op::Dispatch {
        skill: "navigate_to".into(),
        args: serde_json::json!({"zone": "bedroom"}),
    };
    snap.approvals.push(second);
    h.act(Action::Snapshot(Box::new(snap)));
    let s = h.screen(100, 30);
    assert!(s.contains("Approval 1 of 2"), "{s}");
    assert!(s.contains("queue:"), "{s}");
    h.press(KeyCode::F(2));
    h.press(KeyCode::Char(']'));
    assert!(
        h.screen(100, 30)
            .contains("Approval 2 of 2 · a2 for task t2 · keys here")
    );
    // Another approval on the card: the guard starts again.
    h.press(KeyCode::F(8));
    assert!(!matches!(h.app.prompt.stage, Stage::Reject { .. }));
    h.after_the_guard();
    h.press(KeyCode::F(8));
    h.type_line("not now");
    assert_eq!(
        h.sent.last(),
        Some(&Command::Reject {
            approval_id: "a2".into(),
            reason: "not now".into()
        })
    );
}

/// What the operator was typing when the card appeared goes to the input
/// line, whatever it is: no letter, word or Enter answers a card.
#[test]
fn typing_never_answers_a_card() {
    let mut h = pending_approval();
    h.after_the_guard();
    for word in ["patrol", "yes", "approve", "a", "y", "e", "r", "n"] {
        for c in word.chars() {
            h.press(KeyCode::Char(c));
        }
        assert_eq!(h.app.input.text(), word);
        assert!(h.answers().is_empty(), "{word} answered: {:?}", h.sent);
        for _ in word.chars() {
            h.press(KeyCode::Backspace);
        }
    }
    h.press(KeyCode::Enter);
    // The function keys that answer do nothing before F2 gives the card the keys.
    for key in [KeyCode::F(3), KeyCode::F(4), KeyCode::F(8)] {
        h.press(key);
    }
    assert!(h.answers().is_empty(), "{:?}", h.sent);
    assert!(h.app.prompt_open());
    // A line typed and sent is said, not taken as an answer.
    h.type_line("yes");
    assert_eq!(h.sent.last(), Some(&Command::Say { text: "yes".into() }));
    // F2 then F3 at once: too soon after the card took the keys.
    h.press(KeyCode::F(2));
    h.press(KeyCode::F(3));
    assert!(h.answers().is_empty(), "{:?}", h.sent);
    // On the focused card Enter explains, and a letter goes back to typing.
    h.press(KeyCode::Enter);
    h.press(KeyCode::Char('a'));
    assert!(!h.app.card_focused());
    assert_eq!(h.app.input.text(), "a");
    assert!(h.answers().is_empty(), "{:?}", h.sent);
    h.press(KeyCode::Backspace);
    h.answer(KeyCode::F(3));
    assert_eq!(
        h.answers(),
        vec![&Command::Approve {
            approval_id: "a1".into()
        }]
    );
}

/// `/approve ID`, `/reject ID WHY` and `/edit ID JSON` answer a card by name;
/// an id that is not waiting is refused and the line stays to fix.
#[test]
fn approvals_are_answered_by_slash_commands_typed_in_full() {
    let mut h = pending_approval();
    h.type_line("/approve a9");
    assert!(h.answers().is_empty());
    assert_eq!(h.app.input.text(), "/approve a9");
    let s = h.screen(100, 30);
    assert!(s.contains("no approval a9 is waiting; waiting: a1"), "{s}");
    for _ in 0..12 {
        h.press(KeyCode::Backspace);
    }
    h.type_line(r#"/edit a1 {"zone": 5}"#);
    assert!(h.answers().is_empty(), "{:?}", h.sent);
    assert!(h.screen(100, 30).contains("edit of a1 refused"));
    for _ in 0..30 {
        h.press(KeyCode::Backspace);
    }
    h.type_line("/approve a1");
    assert_eq!(
        h.answers(),
        vec![&Command::Approve {
            approval_id: "a1".into()
        }]
    );
    assert!(h.run_until(120.0, |e| is_decision(e, DecisionType::Finish)));
}

#[test]
fn alert_on_a_wide_terminal() {
    let mut h = Harness::default();
    h.run_for(0.5);
    // The robot sees the smoke when it looks around the kitchen on its patrol.
    h.type_line("/inject incident kitchen smoke");
    h.type_line("patrol");
    assert!(h.run_until(40.0, |e| matches!(
        &e.kind,
        EventKind::Activity {
            to: Activity::Alert,
            ..
        }
    )));
    h.run_for(1.0);
    let s = h.screen(200, 60);
    assert!(s.contains("ALERT"), "{s}");
    assert!(s.contains('!'), "the incident is on the map:\n{s}");
    assert!(
        s.contains("alert i1: smoke in kitchen"),
        "the alert is in the log:\n{s}"
    );
    screen!("alert_200x60", s);
}

#[test]
fn help_lists_every_binding_at_80x24() {
    let mut h = Harness::default();
    h.press(KeyCode::Char('?'));
    let s = h.screen(80, 24);
    for (keys, _, _) in keys::BINDINGS {
        assert!(s.contains(keys), "{keys} missing from\n{s}");
    }
    screen!("help_80x24", s);
    h.press(KeyCode::Char('x'));
    assert!(!h.screen(80, 24).contains("any key closes"));
}

#[test]
fn estop_key_stops_and_quitting_a_running_task_asks_first() {
    let mut h = Harness::default();
    h.type_line("去厨房");
    h.run_for(3.0);
    h.press(KeyCode::F(12));
    assert_eq!(h.sent.last(), Some(&Command::EStop));
    h.run_for(0.5);
    assert!(h.app.snapshot().estop);
    assert!(h.screen(80, 24).contains("E-STOP"));
    h.press(KeyCode::Esc);
    assert_eq!(h.app.update(Action::Quit), None, "asks first");
    assert!(h.screen(80, 24).contains("Quit?"));
    assert_eq!(h.app.update(Action::ConfirmQuit), Some(Effect::Quit));
}

#[test]
fn what_another_door_did_is_logged_with_its_origin_and_this_console_s_is_not() {
    let mut h = Harness::default();
    let page = Origin::new(robobrain_core::protocol::Door::Web, "ws#3 127.0.0.1:51234");
    for (seq, origin) in [(1, Some(page)), (2, Some(Origin::console()))] {
        h.act(Action::Core(Box::new(Event {
            seq,
            time: 1.0,
            wall_ms: 0,
            thread_id: "t".into(),
            step: seq,
            origin,
            kind: EventKind::Error {
                code: "unknown_route".into(),
                message: format!("no route r{seq}"),
            },
        })));
    }
    let lines: Vec<&str> = h.app.log.iter().map(|l| l.item.1.as_str()).collect();
    assert!(
        lines.contains(&"error unknown_route: no route r1 ← web: ws#3 127.0.0.1:51234"),
        "{lines:?}"
    );
    assert!(
        lines.contains(&"error unknown_route: no route r2"),
        "{lines:?}"
    );
}

#[test]
fn tokens_devices_and_memory_fill_their_panels_at_every_size() {
    let mut h = Harness::default();
    let event = |kind| {
        Action::Core(Box::new(Event {
            seq: 1,
            time: 1.0,
            wall_ms: 0,
            thread_id: "t".into(),
            step: 1,
            origin: None,
            kind,
        }))
    };
    h.act(event(EventKind::Log {
        level: "warn".into(),
        message: "走廊有点暗".into(),
    }));
    h.act(event(EventKind::Token {
        purpose: "decide".into(),
        text: "思考中… thinking".into(),
    }));
    for (device, state) in [("lamp1", "on"), ("lamp2", "off"), ("lamp1", "dim")] {
        h.act(event(EventKind::Device {
            device: device.into(),
            room: "kitchen".into(),
            state: serde_json::json!(state),
            online: true,
            reason: "reported".into(),
        }));
    }
    // One line a device, the newest: two devices are two lines.
    assert_eq!(
        h.app.devices,
        vec![
            ("lamp1".to_string(), r#"lamp1 "dim" — reported"#.to_string()),
            ("lamp2".to_string(), r#"lamp2 "off" — reported"#.to_string()),
        ]
    );
    h.act(event(EventKind::Memory {
        query: "kitchen".into(),
        mode: "bm25".into(),
        used: Vec::new(),
        tokens: 0,
        budget: 300,
        dropped: 0,
    }));
    for (w, hgt) in [(80, 24), (120, 40), (200, 60), (20, 5), (1, 1)] {
        let s = h.screen(w, hgt);
        if w >= 120 {
            assert!(s.contains("thinking"), "{s}");
            assert!(s.contains("log warn: 走廊有点暗"), "{s}");
        }
        if w >= 200 {
            assert!(s.contains("lamp1"), "{s}");
            assert!(s.contains("0 memories in the model's input"), "{s}");
        }
    }
}

#[test]
fn the_timeline_says_who_understood_an_utterance_and_why_the_others_passed() {
    let mut h = Harness::default();
    h.type_line("turn on the kitchen light");
    h.run_for(1.0);
    let s = h.screen(200, 60);
    assert!(s.contains("↳ home_grammar took HassTurnOn"), "{s}");
    assert!(s.contains("robot_grammar passed"), "{s}");
    h.type_line("my socks are feeling rather low today");
    h.run_for(1.0);
    let s = h.screen(200, 60);
    assert!(s.contains("↳ nobody understood it"), "{s}");
}

#[test]
fn no_color_draws_no_colours() {
    let mut h = Harness::default();
    h.app.color = false;
    h.run_for(1.0);
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    terminal.draw(|f| ui::draw(&h.app, f)).unwrap();
    let buf = terminal.backend().buffer();
    assert!(
        buf.content()
            .iter()
            .all(|c| c.fg == ratatui::style::Color::Reset && c.bg == ratatui::style::Color::Reset)
    );
}

#[test]
fn a_quit_exits_0_and_a_signal_128_plus_its_number() {
    use super::Ended;
    use tokio::signal::unix::SignalKind;
    assert_eq!(Ended::Quit.exit_status(), 0);
    for (kind, status) in [
        (SignalKind::terminate(), 143),
        (SignalKind::hangup(), 129),
        (SignalKind::interrupt(), 130),
    ] {
        assert_eq!(Ended::Signal(kind.as_raw_value()).exit_status(), status);
    }
}

/// An edit is checked against the skills the run announced (its `hello`),
/// not only the console's own built-ins: an MCP or home call is checked
/// too. Here the run announces `navigate_to` with a stricter schema than
/// the built-in one (only the kitchen), and an edit the built-in would pass
/// (the bedroom) is refused.
#[test]
fn an_edit_is_checked_against_the_skills_the_run_announced() {
    let mut h = pending_approval();
    h.app.set_skills(vec![robobrain_core::protocol::SkillView {
        name: "navigate_to".into(),
        description: "announced".into(),
        args_schema: serde_json::json!({
            "type": "object",
            "properties": {"zone": {"enum": ["kitchen"]}},
            "required": ["zone"]
        }),
        risk: robobrain_core::protocol::Risk::LowWrite,
    }]);
    h.type_line(r#"/edit a1 {"zone": "bedroom"}"#);
    assert!(h.answers().is_empty(), "{:?}", h.sent);
    let s = h.screen(100, 30);
    assert!(s.contains("edit of a1 refused"), "{s}");
    for _ in 0..40 {
        h.press(KeyCode::Backspace);
    }
    h.type_line(r#"/edit a1 {"zone": "kitchen"}"#);
    assert_eq!(h.answers().len(), 1, "{:?}", h.sent);
}
