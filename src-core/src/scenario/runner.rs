//! Driving an [`Engine`] through a scenario in lockstep: steps become
//! commands submitted before the next tick, `on` triggers watch every event,
//! and the run ends once every step fired and the engine stayed settled, or
//! at `max_time`. Nothing here reads a clock, so the same seed gives the same
//! events.

use std::collections::BTreeMap;

use serde_json::Value;

use super::ScenarioError;
use super::format::{Action, BrainChoice, Located, Scenario, Trigger};
use super::report::{Check, EndReason, Report, evaluate};
use crate::brain::{Brain, LlmBrain, ScriptedBrain};
use crate::engine::Engine;
use crate::link::Fault;
use crate::llm::mock_script;
use crate::llm::mock_server::MockServer;
use crate::protocol::{Command, Event};
use crate::source::SourceError;
use crate::world::World;

/// Slack for comparing accumulated sim times.
const EPS: f64 = 1e-6;

/// What a run produced.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// Whether every check held.
    pub passed: bool,
    /// Every event, in order.
    pub events: Vec<Event>,
    /// The judged checks, printable.
    pub report: Report,
}

/// Wall time a lockstep run waits for a thinking brain before looking again.
const BRAIN_WAIT: std::time::Duration = std::time::Duration::from_millis(50);

/// The scenario's world as it runs: resolved, with `[start]` applied, and
/// the names the scenario uses checked against it.
pub fn world_of(scenario: &Scenario) -> Result<World, ScenarioError> {
    let mut world = World::resolve(&scenario.world)?;
    apply_start(scenario, &mut world)?;
    check_names(scenario, &world)?;
    Ok(world)
}

/// Builds the engine over the scenario's world ([`world_of`]) and gives it
/// the scenario's brain (starting its mock model, if it has one).
pub fn prepare(scenario: &Scenario) -> Result<Engine, ScenarioError> {
    let world = world_of(scenario)?;
    let mut engine = Engine::simulated(&scenario.config, world)?;
    if let Some(brain) = brain_for(scenario)? {
        engine.set_brain(brain);
    }
    Ok(engine)
}

/// The scenario's brain (`None`: the engine's rule brain).
fn brain_for(scenario: &Scenario) -> Result<Option<Box<dyn Brain>>, ScenarioError> {
    let brain_err = |source| ScenarioError::Brain {
        file: scenario.file.clone(),
        source,
    };
    match &scenario.brain {
        BrainChoice::Rule => Ok(None),
        BrainChoice::Scripted(decisions) => Ok(Some(Box::new(ScriptedBrain::new(
            decisions.iter().cloned(),
        )))),
        BrainChoice::Llm { mock: None } => {
            if !scenario.config.llm.is_configured() {
                return Err(brain_err(crate::brain::BrainError::Unavailable(
                    "brain = \"llm\" needs mock_llm = \"SCRIPT\" or [config.llm] base_url".into(),
                )));
            }
            Ok(Some(Box::new(
                LlmBrain::new(&scenario.config.llm).map_err(brain_err)?,
            )))
        }
        BrainChoice::Llm { mock: Some(path) } => {
            let script = mock_script::load(path)?;
            let server =
                MockServer::start(script, "127.0.0.1:0").map_err(|source| ScenarioError::Mock {
                    file: scenario.file.clone(),
                    source,
                })?;
            let mut llm = scenario.config.llm.clone();
            llm.base_url = Some(server.base_url());
            llm.api_key
                .get_or_insert_with(|| crate::llm::Secret::new("mock-llm-key"));
            let mut brain = LlmBrain::new(&llm).map_err(brain_err)?;
            brain.keep_alive(Box::new(server));
            Ok(Some(Box::new(brain)))
        }
    }
}

fn unknown(scenario: &Scenario, at: &Located<impl Sized>, field: &str, msg: String) -> SourceError {
    SourceError {
        file: scenario.file.clone(),
        line: at.line,
        col: at.col,
        field: field.into(),
        message: msg,
    }
}

/// Edits `world` so the robot starts as `[start]` says: at the goal point of
/// its zone, with its battery charge.
pub fn apply_start(scenario: &Scenario, world: &mut World) -> Result<(), SourceError> {
    if let Some(b) = scenario.start.battery {
        world.battery.initial_pct = b;
    }
    if let Some(z) = &scenario.start.zone {
        let goal = world.zone(&z.value).map(|zone| zone.goal).ok_or_else(|| {
            unknown(
                scenario,
                z,
                "start.zone",
                format!(
                    "expected a zone of world `{}` ({}), found {:?}",
                    world.name,
                    world.zone_list(),
                    z.value
                ),
            )
        })?;
        world.start_pose.x = goal.x;
        world.start_pose.y = goal.y;
    }
    Ok(())
}

/// Checks zone, passage and route names in `[final]` and step actions.
fn check_names(scenario: &Scenario, world: &World) -> Result<(), SourceError> {
    if let Some(z) = &scenario.final_state.zone
        && world.zone(&z.value).is_none()
    {
        return Err(unknown(
            scenario,
            z,
            "final.zone",
            format!(
                "expected a zone ({}), found {:?}",
                world.zone_list(),
                z.value
            ),
        ));
    }
    for (i, step) in scenario.steps.iter().enumerate() {
        let field = format!("step[{}].{}", i + 1, step.action.value.verb());
        let problem = match &step.action.value {
            Action::Inject(Fault::Block { passage } | Fault::Unblock { passage })
                if world.passage(passage).is_none() =>
            {
                let names: Vec<&str> = world.passages.iter().map(|p| p.name.as_str()).collect();
                Some(format!(
                    "expected a passage ({}), found {passage:?}",
                    names.join(", ")
                ))
            }
            Action::Inject(Fault::Incident { zone, .. } | Fault::ClearIncident { zone })
                if world.zone(zone).is_none() =>
            {
                Some(format!(
                    "expected a zone ({}), found {zone:?}",
                    world.zone_list()
                ))
            }
            Action::Patrol(Some(route)) if world.route(route).is_none() => {
                let names: Vec<&str> = world.routes.iter().map(|(n, _)| n.as_str()).collect();
                Some(format!(
                    "expected a route ({}), found {route:?}",
                    names.join(", ")
                ))
            }
            _ => None,
        };
        if let Some(msg) = problem {
            return Err(unknown(scenario, &step.action, &field, msg));
        }
    }
    Ok(())
}

/// Where a step is in its life.
#[derive(Debug, Clone, Default)]
struct StepState {
    /// Sim time it is due, and the event that triggered it (for `on`).
    due: Option<(f64, Option<Value>)>,
    /// Sim time its trigger matched.
    triggered_at: Option<f64>,
    /// Sim time it fired, and what came of it.
    fired: Option<(f64, Result<(), String>)>,
}

/// Approval ids and their latest status, in request order.
#[derive(Debug, Default)]
struct Approvals {
    order: Vec<String>,
    status: BTreeMap<String, String>,
}

impl Approvals {
    fn observe(&mut self, event: &Value) {
        if event.get("kind").and_then(Value::as_str) != Some("approval") {
            return;
        }
        let (Some(id), Some(status)) = (
            event.get("approval_id").and_then(Value::as_str),
            event.get("status").and_then(Value::as_str),
        ) else {
            return;
        };
        if !self.status.contains_key(id) {
            self.order.push(id.to_string());
        }
        self.status.insert(id.to_string(), status.to_string());
    }

    /// The newest approval still waiting (requested, or its edit refused).
    fn latest_pending(&self) -> Option<&str> {
        self.order
            .iter()
            .rev()
            .find(|id| {
                matches!(
                    self.status.get(*id).map(String::as_str),
                    Some("requested" | "edit_refused")
                )
            })
            .map(String::as_str)
    }
}

/// The command a step's action becomes, or why it cannot be sent.
fn command(
    action: &Action,
    trigger: Option<&Value>,
    approvals: &Approvals,
) -> Result<Command, String> {
    let approval_id = |explicit: Option<&String>| {
        explicit
            .cloned()
            .or_else(|| {
                trigger
                    .and_then(|e| e.get("approval_id"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .or_else(|| approvals.latest_pending().map(str::to_string))
            .ok_or_else(|| "no approval was pending".to_string())
    };
    Ok(match action {
        Action::Say(text) => Command::Say { text: text.clone() },
        Action::Approve(id) => Command::Approve {
            approval_id: approval_id(id.as_ref())?,
        },
        Action::Edit(args) => Command::Edit {
            approval_id: approval_id(None)?,
            args: args.clone(),
        },
        Action::Reject(reason) => Command::Reject {
            approval_id: approval_id(None)?,
            reason: reason.clone(),
        },
        Action::Inject(fault) => Command::Inject {
            fault: fault.clone(),
        },
        Action::EStop => Command::EStop,
        Action::ResetEStop => Command::ResetEStop,
        Action::Pause => Command::Pause,
        Action::Resume => Command::Resume,
        Action::Stop => Command::Stop,
        Action::Patrol(route) => Command::StartPatrol {
            route: route.clone(),
        },
    })
}

/// Runs `scenario` on `engine` to its end, calling `observe` with the sim
/// time after each tick and that tick's events (to print or log them as they happen), and judges it.
pub fn run(
    scenario: &Scenario,
    mut engine: Engine,
    observe: &mut dyn FnMut(f64, &[Event]),
) -> RunResult {
    let mut states: Vec<StepState> = scenario
        .steps
        .iter()
        .map(|s| match s.trigger {
            Trigger::At(at) => StepState {
                due: Some((at + s.after, None)),
                triggered_at: Some(at),
                fired: None,
            },
            Trigger::On(_) => StepState::default(),
        })
        .collect();
    let origin = crate::protocol::Origin::scenario(scenario.file.display().to_string());
    let mut approvals = Approvals::default();
    let mut events = Vec::new();
    let mut jsons = Vec::new();
    let mut batch = Vec::new();
    let mut settled_since: Option<f64> = None;
    let end = loop {
        let now = engine.time();
        for (step, state) in scenario.steps.iter().zip(states.iter_mut()) {
            match &state.due {
                Some((due, trigger)) if state.fired.is_none() && *due <= now + EPS => {
                    let outcome = command(&step.action.value, trigger.as_ref(), &approvals)
                        .map(|cmd| engine.submit(cmd, origin.clone()));
                    state.fired = Some((now, outcome));
                }
                _ => {}
            }
        }

        if engine.is_thinking() {
            // Sim time stands still while the brain thinks: the run stays
            // deterministic however slow the model is.
            engine.wait_brain(BRAIN_WAIT);
            engine.pump(&mut batch);
        } else {
            engine.tick(&mut batch);
        }
        for event in &batch {
            let json = event.to_json();
            approvals.observe(&json);
            for (step, state) in scenario.steps.iter().zip(states.iter_mut()) {
                if let Trigger::On(pattern) = &step.trigger
                    && state.due.is_none()
                    && pattern.matches(&json)
                {
                    state.due = Some((event.time + step.after, Some(json.clone())));
                    state.triggered_at = Some(event.time);
                }
            }
            jsons.push(json);
        }
        observe(engine.time(), &batch);
        events.append(&mut batch);

        let now = engine.time();
        if now >= scenario.max_time - EPS {
            break EndReason::MaxTime;
        }
        let all_fired = states.iter().all(|s| s.fired.is_some());
        if all_fired && engine.is_settled() {
            let since = *settled_since.get_or_insert(now);
            if now - since >= scenario.settle - EPS {
                break EndReason::Settled;
            }
        } else {
            settled_since = None;
        }
    };

    // Cleans the skills up and, with a store attached, closes the thread.
    engine.shutdown();
    let mut checks = step_checks(scenario, &states);
    checks.extend(evaluate(scenario, &jsons, &engine.snapshot()));
    let report = Report {
        name: scenario.name.clone(),
        file: scenario.file.clone(),
        end_time: engine.time(),
        end,
        event_count: events.len(),
        checks,
    };
    RunResult {
        passed: report.passed(),
        events,
        report,
    }
}

fn step_checks(scenario: &Scenario, states: &[StepState]) -> Vec<Check> {
    scenario
        .steps
        .iter()
        .zip(states)
        .enumerate()
        .map(|(i, (step, state))| {
            let label = format!(
                "step {} (line {}): {}",
                i + 1,
                step.line,
                describe(&step.action.value)
            );
            let when = match &step.trigger {
                Trigger::At(at) => format!("at {at} s"),
                Trigger::On(p) => format!("on {p}"),
            };
            let after = if step.after > 0.0 {
                format!(" + {} s", step.after)
            } else {
                String::new()
            };
            let (ok, outcome) = match (&state.fired, state.triggered_at) {
                (Some((t, Ok(()))), _) => (true, format!("fired at {t:.1} s ({when}{after})")),
                (Some((t, Err(why))), _) => (false, format!("could not fire at {t:.1} s: {why}")),
                (None, Some(t)) => (
                    false,
                    format!("triggered at {t:.1} s but the run ended before it was due{after}"),
                ),
                (None, None) => (false, format!("never fired: waiting {when}")),
            };
            Check {
                ok,
                label,
                outcome,
                detail: Vec::new(),
            }
        })
        .collect()
}

/// A step's action in a few words (`say "去厨房"`, `inject block kitchen_door`).
pub fn describe(action: &Action) -> String {
    match action {
        Action::Say(text) => format!("say {text:?}"),
        Action::Approve(Some(id)) => format!("approve {id}"),
        Action::Approve(None) => "approve".into(),
        Action::Edit(args) => format!("edit {args}"),
        Action::Reject(reason) => format!("reject {reason:?}"),
        Action::Inject(fault) => format!("inject {}", crate::protocol::describe::fault(fault)),
        Action::Patrol(Some(route)) => format!("patrol {route}"),
        other => other.verb().into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn approvals_choose_the_trigger_then_the_latest_pending() {
        let mut a = Approvals::default();
        for (id, status) in [("a1", "requested"), ("a2", "requested"), ("a2", "approved")] {
            a.observe(&json!({"kind": "approval", "approval_id": id, "status": status}));
        }
        assert_eq!(a.latest_pending(), Some("a1"));
        let cmd = command(&Action::Approve(None), None, &a).unwrap();
        assert_eq!(
            cmd,
            Command::Approve {
                approval_id: "a1".into()
            }
        );
        let trig = json!({"kind": "approval", "approval_id": "a9"});
        let cmd = command(&Action::Reject("no".into()), Some(&trig), &a).unwrap();
        assert_eq!(
            cmd,
            Command::Reject {
                approval_id: "a9".into(),
                reason: "no".into()
            }
        );
        a.observe(&json!({"kind": "approval", "approval_id": "a1", "status": "rejected"}));
        assert_eq!(
            command(&Action::Edit(json!({"zone": "x"})), None, &a),
            Err("no approval was pending".into())
        );
    }

    #[test]
    fn actions_are_described_briefly() {
        let inject = Action::Inject(Fault::Block {
            passage: "kitchen_door".into(),
        });
        assert_eq!(describe(&inject), "inject block kitchen_door");
        assert_eq!(describe(&Action::Inject(Fault::Stall)), "inject stall");
        assert_eq!(describe(&Action::Say("去厨房".into())), "say \"去厨房\"");
        assert_eq!(describe(&Action::EStop), "estop");
        assert_eq!(
            command(&Action::EStop, None, &Approvals::default()),
            Ok(Command::EStop)
        );
    }
}
