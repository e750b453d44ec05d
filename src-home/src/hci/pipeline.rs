//! The language pipeline's runner: asks the rows of
//! [`crate::protocol::understanding::PIPELINE`] in order, until one takes
//! the utterance, and writes down what each did ([`Trace`]). The engine
//! runs every row (the robot's and the home's, `engine::commands`);
//! [`crate::hci::Home::turn`] runs the home's alone. Pure: what a row
//! makes of the text is the caller's function.

use serde_json::{Value, json};

use crate::hci::{Step, Understood};
use crate::protocol::understanding::{Outcome, Reading, RowTrace, Trace, Understander};

/// What one row made of an utterance, with what it is to do `T`.
#[derive(Debug)]
pub enum Verdict<T> {
    /// Understood: the pipeline ends here. The reason says what matched.
    Took(T, Reading, String),
    /// An answer for when no later row takes it (a question back, "nothing
    /// here is called that"). The reason says why it is not taken yet.
    Held(T, Reading, String),
    /// Not understood, and why.
    Passed(String),
}

/// Asks each of `rows` in turn what `ask` makes of the utterance, and
/// returns what the first that took it is to do (or the last answer held,
/// when none took it), with the trace of every row asked.
pub fn run<T>(
    rows: impl IntoIterator<Item = Understander>,
    mut ask: impl FnMut(Understander) -> Verdict<T>,
) -> (Option<T>, Trace) {
    let mut trace = Trace::default();
    let mut held: Option<(Understander, T, Reading)> = None;
    for who in rows {
        if let Some((holder, ..)) = &held
            && !who.runs_while_holding(*holder)
        {
            note(
                &mut trace.rows,
                who,
                Outcome::Skipped,
                format!("{} holds the answer", holder.as_str()),
            );
            continue;
        }
        match ask(who) {
            Verdict::Took(what, reading, reason) => {
                note(&mut trace.rows, who, Outcome::Took, reason);
                trace.by = Some(who);
                trace.reading = reading;
                return (Some(what), trace);
            }
            Verdict::Held(what, reading, reason) => {
                note(&mut trace.rows, who, Outcome::Held, reason);
                held = Some((who, what, reading));
            }
            Verdict::Passed(reason) => note(&mut trace.rows, who, Outcome::Passed, reason),
        }
    }
    match held {
        Some((who, what, reading)) => {
            trace.by = Some(who);
            trace.reading = reading;
            (Some(what), trace)
        }
        None => (None, trace),
    }
}

/// Writes down what one row did.
fn note(rows: &mut Vec<RowTrace>, understander: Understander, outcome: Outcome, reason: String) {
    rows.push(RowTrace {
        understander,
        outcome,
        reason,
    });
}

/// What the home's rules understood, as a reading: `home_control`,
/// `home_query` or `home_mixed` with the calls and queries; `scene`,
/// `clarify` or `cannot`.
pub fn reading_of(understood: &Understood) -> Reading {
    match understood {
        Understood::Steps { steps } => {
            let calls: Vec<Value> = steps
                .iter()
                .map(|s| match s {
                    Step::Control {
                        device,
                        action,
                        args,
                    } => json!({"device": device, "action": action, "args": args}),
                    Step::Query { device } => json!({"device": device, "query": true}),
                })
                .collect();
            let controls = steps.iter().filter(|s| s.call().is_some()).count();
            let intent = match (controls, steps.len() - controls) {
                (_, 0) => "home_control",
                (0, _) => "home_query",
                _ => "home_mixed",
            };
            Reading::new(intent, json!({"steps": calls}))
        }
        Understood::Scene { name } => Reading::new("scene", json!({"scene": name})),
        Understood::Clarify { candidates, .. } => {
            Reading::new("clarify", json!({"candidates": candidates}))
        }
        Understood::Cannot { message } => Reading::new("cannot", json!({"message": message})),
    }
}

/// A grammar match's reading: its intent and slots, from what
/// [`crate::hci::Home`]'s grammar stage says it matched.
pub fn reading_of_grammar(about: &Value) -> Reading {
    Reading::new(
        about
            .get("intent")
            .and_then(Value::as_str)
            .unwrap_or_default(),
        about.get("slots").cloned().unwrap_or_else(|| json!({})),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::understanding::PIPELINE;

    #[test]
    fn the_first_row_that_takes_it_ends_the_run_and_each_earlier_says_why_it_passed() {
        let (taken, trace) = run(PIPELINE, |who| match who {
            Understander::HomeRules => {
                Verdict::Took("rules", Reading::new("scene", json!({})), "sleep".into())
            }
            Understander::Model => panic!("the model is never asked once a row took it"),
            other => Verdict::Passed(format!("{} knows nothing of it", other.as_str())),
        });
        assert_eq!(taken, Some("rules"));
        assert_eq!(trace.by, Some(Understander::HomeRules));
        let outcomes: Vec<(Understander, Outcome)> = trace
            .rows
            .iter()
            .map(|r| (r.understander, r.outcome))
            .collect();
        assert_eq!(
            outcomes,
            [
                (Understander::RobotGrammar, Outcome::Passed),
                (Understander::Answer, Outcome::Passed),
                (Understander::HomeGrammar, Outcome::Passed),
                (Understander::HomeRules, Outcome::Took),
            ]
        );
    }

    #[test]
    fn a_held_answer_stands_when_no_later_row_takes_it_and_the_model_is_not_asked() {
        let (taken, trace) = run(PIPELINE, |who| match who {
            Understander::HomeGrammar => Verdict::Held(
                "no garage light",
                Reading::new("HassTurnOn", json!({})),
                "no such device".into(),
            ),
            Understander::HomeRules => Verdict::Held(
                "which one?",
                Reading::new("clarify", json!({})),
                "two lamps".into(),
            ),
            Understander::Model => panic!("a held home answer stands against the model"),
            _ => Verdict::Passed("no".into()),
        });
        // The later hold replaces the earlier one (the rules' question beats
        // the grammar's "nothing here").
        assert_eq!(taken, Some("which one?"));
        assert_eq!(trace.by, Some(Understander::HomeRules));
        let last: Vec<Outcome> = trace.rows.iter().rev().take(3).map(|r| r.outcome).collect();
        assert_eq!(last, [Outcome::Skipped; 3]);
    }

    #[test]
    fn nobody_understanding_it_leaves_a_trace_of_every_row() {
        let (taken, trace) = run(PIPELINE, |_| Verdict::<()>::Passed("no".into()));
        assert_eq!(taken, None);
        assert_eq!(trace.by, None);
        assert_eq!(trace.rows.len(), PIPELINE.len());
    }
}
