//! The language pipeline as data: the understanders, in the order they are
//! asked, each with one job ([`PIPELINE`]), and what the `understanding`
//! event says about one utterance — who took it, with which intent and
//! slots, and why each one asked before passed (docs/intents.md, "One
//! pipeline"). The rows are carried out where their knowledge lives (the
//! robot's in the kernel's brain, the home's in `robobrain-home`); the
//! order and the rules between rows live here, once.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One understander: a row of the pipeline.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Understander {
    /// The robot's own commands in the robot's grammar ("go to the kitchen", "stop").
    RobotGrammar,
    /// An answer to the question the home just asked ("both", "the floor lamp").
    Answer,
    /// Home Assistant's grammar, compiled with this home's names.
    HomeGrammar,
    /// robobrain's rules for the home: references ("turn it off"), scenes, queries.
    HomeRules,
    /// The device-command parser: one call of one device, by its name and capability.
    DeviceParser,
    /// The robot's rule parser: places, patrols and the robot's verbs in free word order.
    RobotRules,
    /// The sentence-embedding model: the nearest of the grammar's own sentences
    /// and the home's names, when no grammar or rule matched.
    Semantic,
    /// The configured model, asked off the tick.
    Model,
}

/// The pipeline: every understander, in the order each is asked. The first
/// that takes an utterance ends it; one that *holds* an answer (a clarifying
/// question, "nothing here is called that") lets later rows try first,
/// within [`Understander::runs_while_holding`].
pub const PIPELINE: [Understander; 8] = [
    Understander::RobotGrammar,
    Understander::Answer,
    Understander::HomeGrammar,
    Understander::HomeRules,
    Understander::DeviceParser,
    Understander::RobotRules,
    Understander::Semantic,
    Understander::Model,
];

impl Understander {
    /// The name as written in events.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RobotGrammar => "robot_grammar",
            Self::Answer => "answer",
            Self::HomeGrammar => "home_grammar",
            Self::HomeRules => "home_rules",
            Self::DeviceParser => "device_parser",
            Self::RobotRules => "robot_rules",
            Self::Semantic => "semantic",
            Self::Model => "model",
        }
    }

    /// Its one job, in words (docs and the console's help).
    pub fn job(self) -> &'static str {
        match self {
            Self::RobotGrammar => "the robot's own commands, in the robot's grammar",
            Self::Answer => "an answer to the question the home just asked",
            Self::HomeGrammar => "Home Assistant's grammar over this home's names",
            Self::HomeRules => "robobrain's home rules: references, scenes, queries",
            Self::DeviceParser => "one call of one device, by its name and capability",
            Self::RobotRules => "the robot's rule parser: places, patrols, robot verbs",
            Self::Semantic => "the nearest grammar sentence and home name, by sentence embedding",
            Self::Model => "the configured model, off the tick",
        }
    }

    /// Whether the home carries this row out (the rest are the robot's).
    pub fn is_home(self) -> bool {
        matches!(
            self,
            Self::Answer
                | Self::HomeGrammar
                | Self::HomeRules
                | Self::DeviceParser
                | Self::Semantic
        )
    }

    /// Whether this row is still asked while `holder` holds an answer. The
    /// home's rules and the device parser may still take what the grammar
    /// knew the words of but could not place, or settle a question the rules
    /// would ask; once the home holds an answer, nothing after the home's
    /// own rows overrides it (the home knew the words). The robot's "no such
    /// place" still lets the semantic row and the model try.
    pub fn runs_while_holding(self, holder: Self) -> bool {
        match self {
            Self::HomeRules | Self::DeviceParser => true,
            _ => !holder.is_home(),
        }
    }
}

/// What one understander did with an utterance.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// It understood the utterance: the pipeline ends here.
    Took,
    /// It did not understand it.
    Passed,
    /// It has an answer for when no later row takes it (a question, "no
    /// such device here", "no such place").
    Held,
    /// It was not asked (an answer held earlier stands).
    Skipped,
}

impl Outcome {
    /// The name as written in events.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Took => "took",
            Self::Passed => "passed",
            Self::Held => "held",
            Self::Skipped => "skipped",
        }
    }
}

/// One row's part in understanding one utterance.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowTrace {
    /// The understander.
    pub understander: Understander,
    /// What it did.
    pub outcome: Outcome,
    /// Why: what it matched, or why it passed.
    pub reason: String,
}

impl RowTrace {
    /// The row in words: `robot_grammar passed: not one of the robot's commands`.
    pub fn text(&self) -> String {
        format!(
            "{} {}: {}",
            self.understander.as_str(),
            self.outcome.as_str(),
            self.reason
        )
    }
}

/// What an utterance was read as: the intent and its slots.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    /// The intent (`goto`, `HassTurnOn`, `home_control`, `device_call`, …).
    pub intent: String,
    /// Its slots (names, areas, values; `{}` when it has none).
    pub slots: Value,
}

impl Reading {
    /// A reading of `intent` with `slots`.
    pub fn new(intent: impl Into<String>, slots: Value) -> Self {
        Self {
            intent: intent.into(),
            slots,
        }
    }
}

/// The trace of one utterance through the pipeline (the `understanding`
/// event's body): enough to explain a misunderstanding on its own.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    /// Who took it (a held answer that stood counts); `None`: nobody understood it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<Understander>,
    /// What it was read as (empty when nobody understood it).
    pub reading: Reading,
    /// Every row asked, in order, with what it did and why.
    pub rows: Vec<RowTrace>,
}

impl Trace {
    /// The trace in words: `home_grammar took HassTurnOn {"name":"kitchen light"};
    /// robot_grammar passed: not a robot command`.
    pub fn text(&self) -> String {
        let head = match self.by {
            Some(by) => format!("{} took {}", by.as_str(), self.reading.intent),
            None => "nobody understood it".to_string(),
        };
        let slots = match &self.reading.slots {
            Value::Object(m) if m.is_empty() => String::new(),
            Value::Null => String::new(),
            s => format!(" {s}"),
        };
        let passed: Vec<String> = self
            .rows
            .iter()
            .filter(|r| r.outcome != Outcome::Took)
            .map(RowTrace::text)
            .collect();
        if passed.is_empty() {
            format!("{head}{slots}")
        } else {
            format!("{head}{slots}; {}", passed.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_understander_is_in_the_pipeline_once_with_a_job() {
        let mut names: Vec<&str> = PIPELINE.iter().map(|u| u.as_str()).collect();
        for u in PIPELINE {
            assert!(!u.job().is_empty());
            assert_eq!(
                serde_json::to_value(u).unwrap(),
                serde_json::json!(u.as_str())
            );
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), PIPELINE.len());
        // The grammars come before the rules, the rules before the
        // semantic fallback, and the model is last.
        let at = |u| PIPELINE.iter().position(|x| *x == u).unwrap();
        assert!(at(Understander::HomeGrammar) < at(Understander::HomeRules));
        assert!(at(Understander::RobotRules) < at(Understander::Semantic));
        assert_eq!(at(Understander::Model), PIPELINE.len() - 1);
    }

    #[test]
    fn a_held_home_answer_stands_against_the_robot_and_the_model() {
        use Understander::*;
        assert!(HomeRules.runs_while_holding(HomeGrammar));
        assert!(DeviceParser.runs_while_holding(HomeRules));
        for later in [RobotRules, Semantic, Model] {
            assert!(!later.runs_while_holding(HomeGrammar), "{later:?}");
        }
        assert!(Semantic.runs_while_holding(RobotRules));
        assert!(Model.runs_while_holding(RobotRules));
    }

    #[test]
    fn a_trace_reads_as_who_took_it_and_why_the_others_passed() {
        let t = Trace {
            by: Some(Understander::HomeGrammar),
            reading: Reading::new("HassTurnOn", serde_json::json!({"name": "kitchen light"})),
            rows: vec![
                RowTrace {
                    understander: Understander::RobotGrammar,
                    outcome: Outcome::Passed,
                    reason: "not a robot command".into(),
                },
                RowTrace {
                    understander: Understander::HomeGrammar,
                    outcome: Outcome::Took,
                    reason: "turn on {name}".into(),
                },
            ],
        };
        assert_eq!(
            t.text(),
            "home_grammar took HassTurnOn {\"name\":\"kitchen light\"}; robot_grammar passed: not a robot command"
        );
        assert_eq!(Trace::default().text(), "nobody understood it");
    }
}
