//! The language pipeline through the engine: one test per row of
//! [`PIPELINE`], each reading the one `understanding` event an utterance
//! makes — who took it, as what, and why each earlier row passed.

use serde_json::json;

use super::Engine;
use crate::brain::{Brain, Intent, RuleBrain, Thinking};
use crate::config::Config;
use crate::protocol::understanding::{Outcome, PIPELINE, RowTrace, Trace, Understander};
use crate::protocol::{BrainKind, Command, Event, EventKind, Origin};
use crate::react::Observation;
use crate::skills::SkillRegistry;
use crate::world::World;

fn engine(config: &Config) -> Engine {
    Engine::simulated(config, World::builtin("apartment").unwrap()).unwrap()
}

fn noon() -> Config {
    let mut config = Config {
        thread_id: Some("pipeline".into()),
        ..Config::default()
    };
    config.home.hour = Some(12.0);
    config
}

/// Says `text` and returns its one `understanding` event's trace, with
/// every event it made.
fn say(engine: &mut Engine, text: &str) -> (Trace, Vec<Event>) {
    let mut events = Vec::new();
    engine.take_in(
        Command::Say { text: text.into() },
        Origin::console(),
        &mut events,
    );
    (only_trace(&events, text), events)
}

fn only_trace(events: &[Event], text: &str) -> Trace {
    let traces: Vec<&Trace> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Understanding { utterance, trace } if utterance == text => Some(trace),
            _ => None,
        })
        .collect();
    assert_eq!(
        traces.len(),
        1,
        "one understanding event for {text:?}: {traces:?}"
    );
    traces[0].clone()
}

/// The row that took it, and each earlier row that passed (in order).
fn passed_before(trace: &Trace) -> Vec<Understander> {
    trace
        .rows
        .iter()
        .filter(|r| r.outcome == Outcome::Passed)
        .map(|r| r.understander)
        .collect()
}

/// The row of `who` in `trace`.
fn row(trace: &Trace, who: Understander) -> &RowTrace {
    trace.rows.iter().find(|r| r.understander == who).unwrap()
}

fn took(trace: &Trace) -> Understander {
    let last = trace.rows.last().unwrap();
    assert_eq!(last.outcome, Outcome::Took, "{}", trace.text());
    assert_eq!(trace.by, Some(last.understander));
    last.understander
}

#[test]
fn robot_grammar_takes_the_robots_own_commands_first() {
    let mut e = engine(&noon());
    let (trace, _) = say(&mut e, "go to the kitchen");
    assert_eq!(took(&trace), Understander::RobotGrammar, "{}", trace.text());
    assert_eq!(trace.reading.intent, "goto");
    assert_eq!(trace.reading.slots, json!({"zone": "kitchen"}));
    assert_eq!(trace.rows.len(), 1);
}

#[test]
fn answer_takes_the_reply_to_a_question_the_home_asked() {
    let mut e = engine(&noon());
    let (asked, events) = say(&mut e, "turn on the lamp");
    assert!(
        events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::Intent { intent, .. } if intent == "clarify")),
        "{}",
        asked.text()
    );
    // Before the question, the answer row had nothing to answer.
    let answer = row(&asked, Understander::Answer);
    assert_eq!(answer.reason, "no question is waiting for an answer");
    let (trace, _) = say(&mut e, "the floor lamp");
    assert_eq!(took(&trace), Understander::Answer, "{}", trace.text());
    assert_eq!(trace.reading.intent, "home_control");
    assert_eq!(passed_before(&trace), [Understander::RobotGrammar]);
}

#[test]
fn home_grammar_takes_what_home_assistants_sentences_say() {
    let mut e = engine(&noon());
    let (trace, events) = say(&mut e, "turn on the kitchen light");
    assert_eq!(took(&trace), Understander::HomeGrammar, "{}", trace.text());
    assert_eq!(trace.reading.intent, "HassTurnOn");
    assert_eq!(trace.reading.slots["name"], "kitchen light");
    assert_eq!(
        passed_before(&trace),
        [Understander::RobotGrammar, Understander::Answer]
    );
    // Carried out: the light is on.
    assert!(events.iter().any(|e| matches!(&e.kind,
        EventKind::Device { device, state, .. } if device == "kitchen_light" && state["on"] == true)));
}

#[test]
fn home_rules_take_what_refers_back_and_the_grammar_does_not_know() {
    let mut e = engine(&noon());
    say(&mut e, "打开客厅灯");
    let (trace, _) = say(&mut e, "把它关掉");
    assert_eq!(took(&trace), Understander::HomeRules, "{}", trace.text());
    assert_eq!(trace.reading.intent, "home_control");
    assert_eq!(
        trace.reading.slots["steps"][0]["device"],
        "living_room_light",
        "{}",
        trace.text()
    );
    let grammar = row(&trace, Understander::HomeGrammar);
    assert_eq!(grammar.outcome, Outcome::Passed, "{}", trace.text());
}

#[test]
fn device_parser_takes_one_call_of_one_device_the_others_miss() {
    let mut e = engine(&noon());
    let (trace, _) = say(&mut e, "living room tv volume 30 percent");
    assert_eq!(took(&trace), Understander::DeviceParser, "{}", trace.text());
    assert_eq!(trace.reading.intent, "device_call");
    assert_eq!(trace.reading.slots["device"], "living_room_tv");
}

#[test]
fn robot_rules_take_the_robots_verbs_in_free_word_order() {
    let mut e = engine(&noon());
    let (trace, _) = say(&mut e, "the battery is low so please charge yourself now");
    assert_eq!(took(&trace), Understander::RobotRules, "{}", trace.text());
    assert_eq!(trace.reading.intent, "charge");
    let before = passed_before(&trace);
    assert!(
        before.contains(&Understander::HomeGrammar),
        "{}",
        trace.text()
    );
    assert!(
        before.contains(&Understander::DeviceParser),
        "{}",
        trace.text()
    );
}

#[test]
fn semantic_takes_a_paraphrase_nothing_else_matched_and_says_how_near() {
    let mut config = noon();
    config.memory.model_dir = Some(crate::testing::embedding_model());
    let mut e = engine(&config);
    {
        let mut home = crate::hci::lock(e.home());
        home.enable_semantic(crate::testing::embedding_model(), true);
    }
    let (trace, _) = say(&mut e, "make the kitchen bright");
    assert_eq!(took(&trace), Understander::Semantic, "{}", trace.text());
    let last = trace.rows.last().unwrap();
    assert!(
        last.reason.starts_with("nearest template \""),
        "{}",
        last.reason
    );
    assert!(trace.reading.slots["semantic"]["score"].as_f64().unwrap() >= 0.75);
    // Off by default: the same sentence is not understood, and the trace says why.
    let mut plain = engine(&noon());
    let (trace, _) = say(&mut plain, "make the kitchen bright");
    let semantic = row(&trace, Understander::Semantic);
    assert_eq!(semantic.reason, "off (`[home] semantic = false`)");
}

#[test]
fn semantic_never_runs_a_high_risk_call_at_once() {
    let mut e = engine(&noon());
    {
        let mut home = crate::hci::lock(e.home());
        home.enable_semantic(crate::testing::embedding_model(), true);
    }
    let (trace, events) = say(&mut e, "could you get the front door lock unlocked");
    if trace.by == Some(Understander::Semantic) {
        let row = trace.rows.last().unwrap();
        assert!(row.reason.contains("high risk"), "{}", row.reason);
    }
    // Whoever took it, the lock did not move without an approval.
    assert!(!events.iter().any(|e| matches!(&e.kind,
        EventKind::Device { device, .. } if device == "front_door_lock")));
}

/// A brain that recognises every utterance it is given as "charge".
struct Recognizer {
    rules: RuleBrain,
    asked: Vec<String>,
}

impl Brain for Recognizer {
    fn kind(&self) -> BrainKind {
        BrainKind::Model
    }
    fn decide(&mut self, observation: &Observation, registry: &SkillRegistry) -> Thinking {
        self.rules.decide(observation, registry)
    }
    fn recognize(&mut self, utterance: &str, _: &World, _: &SkillRegistry) -> bool {
        self.asked.push(utterance.to_string());
        true
    }
    fn recognized(&mut self, _: &World, _: &SkillRegistry) -> Vec<(String, Option<Intent>)> {
        self.asked
            .drain(..)
            .map(|t| (t, Some(Intent::Charge)))
            .collect()
    }
    fn is_recognizing(&self) -> bool {
        !self.asked.is_empty()
    }
}

#[test]
fn model_takes_what_no_other_row_understood_and_its_trace_waits_for_the_answer() {
    let mut e = engine(&noon());
    e.set_brain(Box::new(Recognizer {
        rules: RuleBrain::new(),
        asked: Vec::new(),
    }));
    let text = "my socks are feeling rather low today";
    let mut events = Vec::new();
    e.take_in(
        Command::Say { text: text.into() },
        Origin::console(),
        &mut events,
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.kind, EventKind::Understanding { .. })),
        "no trace before the model answers"
    );
    e.tick(&mut events);
    let trace = only_trace(&events, text);
    assert_eq!(took(&trace), Understander::Model, "{}", trace.text());
    assert_eq!(trace.reading.intent, "charge");
    // Every row was asked before the model, in the table's order.
    let asked: Vec<Understander> = trace.rows.iter().map(|r| r.understander).collect();
    assert_eq!(asked, PIPELINE);
}

#[test]
fn nobody_understanding_it_is_one_trace_of_every_row() {
    let mut e = engine(&noon());
    let (trace, events) = say(&mut e, "my socks are feeling rather low today");
    assert_eq!(trace.by, None, "{}", trace.text());
    let asked: Vec<Understander> = trace.rows.iter().map(|r| r.understander).collect();
    assert_eq!(asked, PIPELINE);
    assert!(trace.rows.iter().all(|r| !r.reason.is_empty()));
    assert!(events.iter().any(|e| matches!(&e.kind,
        EventKind::Intent { intent, .. } if intent == "unknown")));
}
