//! The scenario file format (documented in `docs/scenarios.md`) and its
//! parser: text in, a validated [`Scenario`] out, or a [`SourceError`] that
//! names the file, line, column, field and what was expected.
//!
//! Parsing is two passes, like the config: serde reads an all-optional raw
//! form that denies unknown fields (with positions from `toml::Spanned`),
//! then validation checks what serde cannot (ranges, one verb per step,
//! event kinds, counts) and builds the typed form.

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};
use toml::Spanned;

use super::matcher::{Count, FieldTest, Pattern};
use crate::config::Config;
use crate::link::Fault;
use crate::protocol::{Activity, Mode, TaskStatus};
use crate::react::Decision;
use crate::source::{SourceError, line_col};

/// Every event `kind` an `on` trigger or an expectation may name.
pub const EVENT_KINDS: &[&str] = &[
    "snapshot",
    "update",
    "intent",
    "understanding",
    "decision",
    "guardrail",
    "mode",
    "activity",
    "task",
    "skill",
    "approval",
    "alert",
    "speech",
    "telemetry",
    "fault",
    "device",
    "token",
    "llm_call",
    "memory",
    "log",
    "error",
];

/// The verbs a step may use, one per step.
pub const ACTIONS: &[&str] = &[
    "say",
    "approve",
    "edit",
    "reject",
    "inject",
    "estop",
    "reset_estop",
    "pause",
    "resume",
    "stop",
    "patrol",
];

/// Default `max_time`, sim seconds.
pub const DEFAULT_MAX_TIME: f64 = 600.0;
/// Default `settle`, sim seconds.
pub const DEFAULT_SETTLE: f64 = 2.0;

/// A value with the 1-based line and column it was written at.
#[derive(Debug, Clone, PartialEq)]
pub struct Located<T> {
    /// The value.
    pub value: T,
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1.
    pub col: usize,
}

/// A parsed, validated scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// The file it came from (a label for embedded scenarios).
    pub file: PathBuf,
    /// Its name (the file stem when the file gives none).
    pub name: String,
    /// What it shows, in words.
    pub description: String,
    /// A built-in world name, or a world file path (already joined to the
    /// scenario file's folder).
    pub world: String,
    /// The simulation seed.
    pub seed: u64,
    /// Sim seconds after which the run ends regardless.
    pub max_time: f64,
    /// Sim seconds the engine must stay settled, after every step fired,
    /// for the run to end early.
    pub settle: f64,
    /// The robot's state at start.
    pub start: Start,
    /// The configuration: defaults with the file's `[config]` merged over,
    /// and `world`/`seed` set from the scenario.
    pub config: Config,
    /// The scripted steps, in file order.
    pub steps: Vec<Step>,
    /// Expectations on events.
    pub expects: Vec<Expectation>,
    /// Expectations on the order of events.
    pub orders: Vec<OrderExpectation>,
    /// Expectations on the final state.
    pub final_state: FinalExpect,
    /// Which brain decides.
    pub brain: BrainChoice,
}

/// Which brain a scenario runs (`brain = "rule" | "llm" | "scripted"`).
#[derive(Debug, Clone, PartialEq, Default)]
pub enum BrainChoice {
    /// The rule brain (the default).
    #[default]
    Rule,
    /// The model brain, against a `mock-llm` script the run starts (`mock_llm`,
    /// already joined to the scenario's folder) or `[config.llm] base_url`.
    Llm {
        /// The mock script.
        mock: Option<PathBuf>,
    },
    /// The scripted brain with the `[[decision]]` list, in order.
    Scripted(Vec<Decision>),
}

/// The robot's state at start (`[start]`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Start {
    /// Battery percent.
    pub battery: Option<f64>,
    /// Zone whose goal point the robot starts at.
    pub zone: Option<Located<String>>,
}

/// One `[[step]]`: when it fires and what it does.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Line of its `[[step]]` header.
    pub line: usize,
    /// When it fires.
    pub trigger: Trigger,
    /// Sim seconds to wait after the trigger.
    pub after: f64,
    /// What it does.
    pub action: Located<Action>,
}

/// When a step fires.
#[derive(Debug, Clone, PartialEq)]
pub enum Trigger {
    /// At this sim time (seconds from start).
    At(f64),
    /// Once, on the first event matching the pattern.
    On(Pattern),
}

/// What a step does; each becomes one [`crate::protocol::Command`].
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Say this.
    Say(String),
    /// Approve this approval id, or (`None`) the triggering event's approval
    /// or else the latest pending one.
    Approve(Option<String>),
    /// Approve with these edited arguments (approval chosen as for `Approve`).
    Edit(Value),
    /// Reject (approval chosen as for `Approve`) with this reason.
    Reject(String),
    /// Inject a simulated fault.
    Inject(Fault),
    /// Emergency stop.
    EStop,
    /// Reset a latched E-stop (it starts nothing).
    ResetEStop,
    /// Pause the active task.
    Pause,
    /// Resume the paused tasks (refused while the E-stop is latched).
    Resume,
    /// Cancel the active task.
    Stop,
    /// Start a patrol of this route (the world's default when `None`).
    Patrol(Option<String>),
}

impl Action {
    /// The verb as written in files.
    pub fn verb(&self) -> &'static str {
        match self {
            Self::Say(_) => "say",
            Self::Approve(_) => "approve",
            Self::Edit(_) => "edit",
            Self::Reject(_) => "reject",
            Self::Inject(_) => "inject",
            Self::EStop => "estop",
            Self::ResetEStop => "reset_estop",
            Self::Pause => "pause",
            Self::Resume => "resume",
            Self::Stop => "stop",
            Self::Patrol(_) => "patrol",
        }
    }
}

/// One `[[expect]]`: how many events matching a pattern must occur.
#[derive(Debug, Clone, PartialEq)]
pub struct Expectation {
    /// Line of its `[[expect]]` header.
    pub line: usize,
    /// A note shown in the report.
    pub note: Option<String>,
    /// What to look for.
    pub pattern: Pattern,
    /// Only events up to this sim time count.
    pub within: Option<f64>,
    /// Only events before the first event matching this count (which must
    /// happen): "nothing was switched before the approval".
    pub before: Option<Pattern>,
    /// How many must be found.
    pub count: Count,
}

/// One `[[expect_order]]`: events that must occur in this order.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderExpectation {
    /// Line of its `[[expect_order]]` header.
    pub line: usize,
    /// A note shown in the report.
    pub note: Option<String>,
    /// The patterns, in the order they must match.
    pub events: Vec<Pattern>,
    /// Every match must happen by this sim time.
    pub within: Option<f64>,
}

/// The task whose final status `[final] task_status` checks.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskExpect {
    /// A task id, or `None` for the last task (that of the last `task` event).
    pub id: Option<String>,
    /// Its wanted status.
    pub status: TaskStatus,
}

/// `[final]`: the state when the run ends.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FinalExpect {
    /// Kernel mode.
    pub mode: Option<Mode>,
    /// Activity.
    pub activity: Option<Activity>,
    /// A task's status.
    pub task: Option<TaskExpect>,
    /// The robot's zone.
    pub zone: Option<Located<String>>,
    /// Battery percent range, inclusive.
    pub battery: Option<(f64, f64)>,
    /// Device state: `"<device>.<state key>"` (or `"<device>.online"`) → the value.
    pub devices: Vec<(String, serde_json::Value)>,
}

impl FinalExpect {
    /// Whether nothing is checked.
    pub fn is_empty(&self) -> bool {
        self.mode.is_none()
            && self.activity.is_none()
            && self.task.is_none()
            && self.zone.is_none()
            && self.battery.is_none()
            && self.devices.is_empty()
    }
}

// ---- raw form -------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Option<String>,
    #[serde(default)]
    description: String,
    world: Option<String>,
    seed: Option<u64>,
    max_time: Option<Spanned<f64>>,
    settle: Option<Spanned<f64>>,
    #[serde(default)]
    start: RawStart,
    config: Option<Config>,
    #[serde(default)]
    step: Vec<Spanned<RawStep>>,
    #[serde(default)]
    expect: Vec<Spanned<RawExpect>>,
    #[serde(default)]
    expect_order: Vec<Spanned<RawOrder>>,
    #[serde(rename = "final", default)]
    final_state: RawFinal,
    brain: Option<Spanned<String>>,
    mock_llm: Option<Spanned<String>>,
    #[serde(default)]
    decision: Vec<Spanned<toml::Value>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawStart {
    battery: Option<Spanned<f64>>,
    zone: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPattern {
    kind: Spanned<String>,
    #[serde(rename = "match")]
    matcher: Option<Spanned<toml::Table>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    at: Option<Spanned<f64>>,
    on: Option<RawPattern>,
    after: Option<Spanned<f64>>,
    say: Option<Spanned<String>>,
    approve: Option<Spanned<toml::Value>>,
    edit: Option<Spanned<toml::Table>>,
    reject: Option<Spanned<String>>,
    inject: Option<Spanned<Fault>>,
    estop: Option<Spanned<bool>>,
    reset_estop: Option<Spanned<bool>>,
    pause: Option<Spanned<bool>>,
    resume: Option<Spanned<bool>>,
    stop: Option<Spanned<bool>>,
    patrol: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    kind: Spanned<String>,
    #[serde(rename = "match")]
    matcher: Option<Spanned<toml::Table>>,
    within: Option<Spanned<f64>>,
    before: Option<RawPattern>,
    count: Option<Spanned<toml::Value>>,
    note: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOrder {
    events: Spanned<Vec<RawPattern>>,
    within: Option<Spanned<f64>>,
    note: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawFinal {
    mode: Option<Mode>,
    activity: Option<Activity>,
    task_status: Option<Spanned<toml::Value>>,
    zone: Option<Spanned<String>>,
    battery: Option<Spanned<Vec<f64>>>,
    #[serde(default)]
    devices: std::collections::BTreeMap<String, serde_json::Value>,
}

// ---- validation ----------------------------------------------------------

/// Builds errors located in one file's text.
struct Ctx<'a> {
    file: &'a Path,
    text: &'a str,
}

impl Ctx<'_> {
    fn err(&self, span: &Range<usize>, field: &str, message: impl Into<String>) -> SourceError {
        SourceError::at_offset(self.file, self.text, span.start, field, message)
    }

    fn located<T>(&self, s: Spanned<T>) -> Located<T> {
        let (line, col) = line_col(self.text, s.span().start);
        Located {
            value: s.into_inner(),
            line,
            col,
        }
    }

    fn line(&self, span: &Range<usize>) -> usize {
        line_col(self.text, span.start).0
    }

    /// Offset of `key = ` before the value at `value_start` (for verbs).
    fn key_span(&self, key: &str, value: &Range<usize>) -> Range<usize> {
        let start = self.text[..value.start].rfind(key).unwrap_or(value.start);
        start..value.end
    }

    fn seconds(
        &self,
        v: Option<&Spanned<f64>>,
        field: &str,
        positive: bool,
    ) -> Result<Option<f64>, SourceError> {
        let Some(v) = v else { return Ok(None) };
        let x = *v.get_ref();
        let ok = x.is_finite() && if positive { x > 0.0 } else { x >= 0.0 };
        if ok {
            Ok(Some(x))
        } else {
            let want = if positive { "> 0" } else { "≥ 0" };
            Err(self.err(
                &v.span(),
                field,
                format!("expected sim seconds {want}, found {x}"),
            ))
        }
    }

    fn pattern(&self, raw: RawPattern, field: &str) -> Result<Pattern, SourceError> {
        let kind = raw.kind.get_ref();
        if !EVENT_KINDS.contains(&kind.as_str()) {
            return Err(self.err(
                &raw.kind.span(),
                &format!("{field}.kind"),
                format!(
                    "expected an event kind (one of {}), found {kind:?}",
                    EVENT_KINDS.join(", ")
                ),
            ));
        }
        let table = raw.matcher.as_ref().map(Spanned::span);
        let matcher = match raw.matcher {
            Some(m) => self.json_table(&m, &format!("{field}.match"))?,
            None => Map::new(),
        };
        let pattern = Pattern::new(kind.clone(), &matcher);
        if let (Some(test), Some(table)) = (pattern.unknown_field(), table) {
            return Err(self.unknown_field(kind, test, &table, field));
        }
        Ok(pattern)
    }

    /// A `match` key that events of `kind` do not have, at the key.
    fn unknown_field(
        &self,
        kind: &str,
        test: &FieldTest,
        table: &Range<usize>,
        field: &str,
    ) -> SourceError {
        let key = test.path.first().map_or("", String::as_str);
        let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        let inside = &self.text[table.clone()];
        let at = inside
            .match_indices(key)
            .find(|(i, _)| {
                !word(inside[..*i].chars().next_back())
                    && !word(inside[i + key.len()..].chars().next())
            })
            .map_or(table.start, |(i, _)| table.start + i);
        let fields = super::matcher::fields_of(kind).unwrap_or_default();
        self.err(
            &(at..at),
            &format!("{field}.match.{}", test.path.join(".")),
            format!(
                "expected a field of `{kind}` events ({}; or {}), found `{key}`",
                fields.join(", "),
                super::matcher::ENVELOPE_FIELDS.join(", ")
            ),
        )
    }

    fn json_table(
        &self,
        table: &Spanned<toml::Table>,
        field: &str,
    ) -> Result<Map<String, Value>, SourceError> {
        match serde_json::to_value(table.get_ref()) {
            Ok(Value::Object(m)) => Ok(m),
            _ => Err(self.err(
                &table.span(),
                field,
                "expected a table of plain values (dates cannot be matched)",
            )),
        }
    }
}

/// Parses and validates a scenario; `file` names it in errors and anchors
/// a relative `world` path.
pub fn parse(text: &str, file: &Path) -> Result<Scenario, SourceError> {
    let raw: RawScenario =
        toml::from_str(text).map_err(|e| SourceError::from_toml(file, text, &e))?;
    let cx = Ctx { file, text };

    let mut config = raw.config.unwrap_or_default();
    config
        .validate(text, file)
        .map_err(|e| SourceError::at_key(file, text, &format!("config.{}", e.field), e.message))?;
    if let Some(world) = raw.world {
        config.world = resolve_world(&world, file);
    }
    if let Some(seed) = raw.seed {
        config.seed = seed;
    }

    let max_time = cx
        .seconds(raw.max_time.as_ref(), "max_time", true)?
        .unwrap_or(DEFAULT_MAX_TIME);
    let settle = cx
        .seconds(raw.settle.as_ref(), "settle", false)?
        .unwrap_or(DEFAULT_SETTLE);

    let start = Start {
        battery: percent(&cx, raw.start.battery.as_ref(), "start.battery")?,
        zone: raw.start.zone.map(|z| cx.located(z)),
    };

    let steps = raw
        .step
        .into_iter()
        .enumerate()
        .map(|(i, s)| step(&cx, s, &format!("step[{}]", i + 1), max_time))
        .collect::<Result<Vec<_>, _>>()?;
    let expects = raw
        .expect
        .into_iter()
        .enumerate()
        .map(|(i, e)| expectation(&cx, e, &format!("expect[{}]", i + 1)))
        .collect::<Result<Vec<_>, _>>()?;
    let orders = raw
        .expect_order
        .into_iter()
        .enumerate()
        .map(|(i, o)| order(&cx, o, &format!("expect_order[{}]", i + 1)))
        .collect::<Result<Vec<_>, _>>()?;
    let final_state = final_expect(&cx, raw.final_state)?;
    let brain = brain_choice(&cx, raw.brain.as_ref(), raw.mock_llm, raw.decision)?;
    if steps.is_empty() && expects.is_empty() && orders.is_empty() && final_state.is_empty() {
        return Err(SourceError {
            file: file.to_path_buf(),
            line: 0,
            col: 0,
            field: String::new(),
            message: "the scenario is empty: expected at least one `[[step]]`, `[[expect]]`, \
                      `[[expect_order]]` or `[final]` (with nothing to do or check, a run \
                      would pass without testing anything)"
                .into(),
        });
    }

    let name = raw.name.unwrap_or_else(|| {
        file.file_stem()
            .map_or_else(|| "scenario".into(), |s| s.to_string_lossy().into_owned())
    });
    Ok(Scenario {
        file: file.to_path_buf(),
        name,
        description: raw.description,
        world: config.world.clone(),
        seed: config.seed,
        max_time,
        settle,
        start,
        config,
        steps,
        expects,
        orders,
        final_state,
        brain,
    })
}

/// `brain`, `mock_llm` and `[[decision]]`, checked against each other.
fn brain_choice(
    cx: &Ctx<'_>,
    brain: Option<&Spanned<String>>,
    mock: Option<Spanned<String>>,
    decisions: Vec<Spanned<toml::Value>>,
) -> Result<BrainChoice, SourceError> {
    let name = brain.map_or("rule", |b| b.get_ref().as_str());
    if let Some(m) = &mock
        && name != "llm"
    {
        return Err(cx.err(
            &m.span(),
            "mock_llm",
            format!("a mock model needs brain = \"llm\", found brain = {name:?}"),
        ));
    }
    if let Some(d) = decisions.first()
        && name != "scripted"
    {
        return Err(cx.err(
            &d.span(),
            "decision[1]",
            format!("[[decision]] needs brain = \"scripted\", found brain = {name:?}"),
        ));
    }
    match name {
        "rule" => Ok(BrainChoice::Rule),
        "llm" => Ok(BrainChoice::Llm {
            mock: mock.map(|m| {
                let dir = cx.file.parent().unwrap_or_else(|| Path::new(""));
                dir.join(m.get_ref())
            }),
        }),
        "scripted" => {
            let mut list = Vec::new();
            for (i, d) in decisions.into_iter().enumerate() {
                let span = d.span();
                let json = serde_json::to_value(d.into_inner()).unwrap_or(Value::Null);
                let decision: Decision = serde_json::from_value(json).map_err(|e| {
                    cx.err(
                        &span,
                        &format!("decision[{}]", i + 1),
                        format!("expected a decision (type, reason, ops, plan_patch): {e}"),
                    )
                })?;
                list.push(decision);
            }
            Ok(BrainChoice::Scripted(list))
        }
        other => Err(cx.err(
            &brain.map_or(0..0, Spanned::span),
            "brain",
            format!("expected \"rule\", \"llm\" or \"scripted\", found {other:?}"),
        )),
    }
}

/// A name without a slash or a `.toml` ending is a built-in world; anything
/// else is a path relative to the scenario file's folder.
fn resolve_world(world: &str, file: &Path) -> String {
    let is_path = world.contains('/')
        || world.contains('\\')
        || Path::new(world)
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    if !is_path || Path::new(world).is_absolute() {
        return world.to_string();
    }
    let dir = file.parent().unwrap_or_else(|| Path::new(""));
    dir.join(world).to_string_lossy().into_owned()
}

fn percent(
    cx: &Ctx<'_>,
    v: Option<&Spanned<f64>>,
    field: &str,
) -> Result<Option<f64>, SourceError> {
    let Some(v) = v else { return Ok(None) };
    let x = *v.get_ref();
    if (0.0..=100.0).contains(&x) {
        Ok(Some(x))
    } else {
        Err(cx.err(
            &v.span(),
            field,
            format!("expected a percent in [0, 100], found {x}"),
        ))
    }
}

/// One verb a step names: the verb, the span of its value, and the action
/// (or why the value is not one).
type Verb = (&'static str, Range<usize>, Result<Action, String>);

/// A `[[step]]`, validated: its trigger, its delay and its one action.
fn step(
    cx: &Ctx<'_>,
    raw: Spanned<RawStep>,
    field: &str,
    max_time: f64,
) -> Result<Step, SourceError> {
    let header = raw.span();
    let mut raw = raw.into_inner();
    let trigger = step_trigger(cx, raw.at.take(), raw.on.take(), &header, field, max_time)?;
    let after = cx
        .seconds(raw.after.as_ref(), &format!("{field}.after"), false)?
        .unwrap_or(0.0);
    let verbs = step_verbs(cx, raw, field)?;
    let action = only_action(cx, verbs, &header, field)?;
    Ok(Step {
        line: cx.line(&header),
        trigger,
        after,
        action,
    })
}

/// A step's `at` or `on` (exactly one), checked: `at` within `max_time`.
fn step_trigger(
    cx: &Ctx<'_>,
    at: Option<Spanned<f64>>,
    on: Option<RawPattern>,
    header: &Range<usize>,
    field: &str,
    max_time: f64,
) -> Result<Trigger, SourceError> {
    match (at, on) {
        (Some(at), None) => {
            let t = cx
                .seconds(Some(&at), &format!("{field}.at"), false)?
                .unwrap_or(0.0);
            if t > max_time {
                return Err(cx.err(
                    &at.span(),
                    &format!("{field}.at"),
                    format!("expected a time within max_time ({max_time} s), found {t}"),
                ));
            }
            Ok(Trigger::At(t))
        }
        (None, Some(on)) => Ok(Trigger::On(cx.pattern(on, &format!("{field}.on"))?)),
        (Some(at), Some(_)) => Err(cx.err(
            &cx.key_span("at", &at.span()),
            &format!("{field}.at"),
            "expected either `at` or `on`, not both",
        )),
        (None, None) => Err(cx.err(
            header,
            field,
            "expected `at = <sim seconds>` or `on = { kind = \"…\", match = {…} }`",
        )),
    }
}

/// Every verb a step names, in the order of [`ACTIONS`]; only an `edit`
/// that is not a table of plain values fails here.
fn step_verbs(cx: &Ctx<'_>, raw: RawStep, field: &str) -> Result<Vec<Verb>, SourceError> {
    let mut actions: Vec<Verb> = Vec::new();
    let mut push = |verb: &'static str, span: Range<usize>, action: Result<Action, String>| {
        actions.push((verb, span, action));
    };
    if let Some(v) = raw.say {
        push("say", v.span(), Ok(Action::Say(v.into_inner())));
    }
    if let Some(v) = raw.approve {
        push("approve", v.span(), approve(v.get_ref()));
    }
    if let Some(v) = raw.edit {
        let args = cx.json_table(&v, &format!("{field}.edit"))?;
        push("edit", v.span(), Ok(Action::Edit(Value::Object(args))));
    }
    if let Some(v) = raw.reject {
        push("reject", v.span(), Ok(Action::Reject(v.into_inner())));
    }
    if let Some(v) = raw.inject {
        push("inject", v.span(), Ok(Action::Inject(v.into_inner())));
    }
    for (verb, flag, action) in [
        ("estop", raw.estop, Action::EStop),
        ("reset_estop", raw.reset_estop, Action::ResetEStop),
        ("pause", raw.pause, Action::Pause),
        ("resume", raw.resume, Action::Resume),
        ("stop", raw.stop, Action::Stop),
    ] {
        if let Some(v) = flag {
            let action = if *v.get_ref() {
                Ok(action)
            } else {
                Err(format!(
                    "expected `{verb} = true` (a step with `{verb} = false` does nothing)"
                ))
            };
            push(verb, v.span(), action);
        }
    }
    if let Some(v) = raw.patrol {
        push("patrol", v.span(), patrol(v.get_ref()));
    }
    Ok(actions)
}

/// The one action of a step, located at its key: an error when the step
/// names none, several, or a verb with a bad value.
fn only_action(
    cx: &Ctx<'_>,
    mut actions: Vec<Verb>,
    header: &Range<usize>,
    field: &str,
) -> Result<Located<Action>, SourceError> {
    let (verb, span, action) = match actions.len() {
        0 => {
            return Err(cx.err(
                header,
                field,
                format!("expected one action ({})", ACTIONS.join(", ")),
            ));
        }
        1 => actions.remove(0),
        _ => {
            let (second, span, _) = &actions[1];
            return Err(cx.err(
                &cx.key_span(second, span),
                &format!("{field}.{second}"),
                format!(
                    "expected exactly one action per step, found `{}` and `{second}`",
                    actions[0].0
                ),
            ));
        }
    };
    let span = cx.key_span(verb, &span);
    let action = action.map_err(|msg| cx.err(&span, &format!("{field}.{verb}"), msg))?;
    let (line, col) = line_col(cx.text, span.start);
    Ok(Located {
        value: action,
        line,
        col,
    })
}

fn approve(v: &toml::Value) -> Result<Action, String> {
    match v {
        toml::Value::Boolean(true) => Ok(Action::Approve(None)),
        toml::Value::String(id) if !id.trim().is_empty() => Ok(Action::Approve(Some(id.clone()))),
        other => Err(format!(
            "expected `true` (the pending approval) or an approval id, found {other}"
        )),
    }
}

fn patrol(v: &toml::Value) -> Result<Action, String> {
    match v {
        toml::Value::Boolean(true) => Ok(Action::Patrol(None)),
        toml::Value::String(route) if !route.trim().is_empty() => {
            Ok(Action::Patrol(Some(route.clone())))
        }
        other => Err(format!(
            "expected a route name or `true` (the default route), found {other}"
        )),
    }
}

fn expectation(
    cx: &Ctx<'_>,
    raw: Spanned<RawExpect>,
    field: &str,
) -> Result<Expectation, SourceError> {
    let line = cx.line(&raw.span());
    let raw = raw.into_inner();
    let pattern = cx.pattern(
        RawPattern {
            kind: raw.kind,
            matcher: raw.matcher,
        },
        field,
    )?;
    let within = cx.seconds(raw.within.as_ref(), &format!("{field}.within"), true)?;
    let before = raw
        .before
        .map(|b| cx.pattern(b, &format!("{field}.before")))
        .transpose()?;
    let count = match raw.count {
        None => Count::default(),
        Some(c) => count(c.get_ref()).ok_or_else(|| {
            cx.err(
                &c.span(),
                &format!("{field}.count"),
                format!(
                    "expected a number of events (2) or a comparison (\">=1\", \"<=2\", \"0\"), found {}",
                    c.get_ref()
                ),
            )
        })?,
    };
    Ok(Expectation {
        line,
        note: raw.note,
        pattern,
        within,
        before,
        count,
    })
}

fn count(v: &toml::Value) -> Option<Count> {
    match v {
        toml::Value::Integer(n) => u64::try_from(*n).ok().map(Count::exactly),
        toml::Value::String(s) => Count::parse(s),
        _ => None,
    }
}

fn order(
    cx: &Ctx<'_>,
    raw: Spanned<RawOrder>,
    field: &str,
) -> Result<OrderExpectation, SourceError> {
    let line = cx.line(&raw.span());
    let raw = raw.into_inner();
    let span = raw.events.span();
    let events = raw
        .events
        .into_inner()
        .into_iter()
        .enumerate()
        .map(|(i, p)| cx.pattern(p, &format!("{field}.events[{}]", i + 1)))
        .collect::<Result<Vec<_>, _>>()?;
    if events.len() < 2 {
        return Err(cx.err(
            &span,
            &format!("{field}.events"),
            format!(
                "expected at least two events to order, found {}",
                events.len()
            ),
        ));
    }
    Ok(OrderExpectation {
        line,
        note: raw.note,
        events,
        within: cx.seconds(raw.within.as_ref(), &format!("{field}.within"), true)?,
    })
}

fn final_expect(cx: &Ctx<'_>, raw: RawFinal) -> Result<FinalExpect, SourceError> {
    let task = match raw.task_status {
        None => None,
        Some(v) => Some(
            task_expect(v.get_ref()).map_err(|msg| cx.err(&v.span(), "final.task_status", msg))?,
        ),
    };
    let battery = match raw.battery {
        None => None,
        Some(v) => match v.get_ref().as_slice() {
            &[lo, hi] if (0.0..=100.0).contains(&lo) && (lo..=100.0).contains(&hi) => {
                Some((lo, hi))
            }
            other => {
                return Err(cx.err(
                    &v.span(),
                    "final.battery",
                    format!(
                        "expected [min, max] percents with 0 ≤ min ≤ max ≤ 100, found {other:?}"
                    ),
                ));
            }
        },
    };
    Ok(FinalExpect {
        mode: raw.mode,
        activity: raw.activity,
        task,
        zone: raw.zone.map(|z| cx.located(z)),
        battery,
        devices: raw.devices.into_iter().collect(),
    })
}

fn task_expect(v: &toml::Value) -> Result<TaskExpect, String> {
    let status = |v: &toml::Value| {
        v.clone().try_into::<TaskStatus>().map_err(|e| {
            format!(
                "expected a task status (queued, running, preempted, paused, waiting_human, succeeded, aborted, cancelled): {}",
                e.message().trim()
            )
        })
    };
    match v {
        toml::Value::String(_) => Ok(TaskExpect {
            id: None,
            status: status(v)?,
        }),
        toml::Value::Table(t) => {
            if let Some(k) = t.keys().find(|k| *k != "id" && *k != "status") {
                return Err(format!("unknown field `{k}`, expected `id` or `status`"));
            }
            let id = match t.get("id") {
                Some(toml::Value::String(id)) => id.clone(),
                _ => return Err("expected `id = \"t1\"` beside `status`".into()),
            };
            let s = t
                .get("status")
                .ok_or_else(|| "expected `status = \"…\"` beside `id`".to_string())?;
            Ok(TaskExpect {
                id: Some(id),
                status: status(s)?,
            })
        }
        other => Err(format!(
            "expected a status (\"succeeded\") or {{ id = \"t1\", status = \"succeeded\" }}, found {other}"
        )),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn every_event_kind_the_matcher_knows_is_a_kind_scenarios_may_name() {
        let table: Vec<&str> = crate::scenario::matcher::EVENT_FIELDS
            .iter()
            .map(|(k, _)| *k)
            .collect();
        assert_eq!(table, super::EVENT_KINDS);
    }
    use super::*;

    fn p(text: &str) -> Result<Scenario, String> {
        parse(text, Path::new("s.toml")).map_err(|e| e.to_string())
    }

    const FULL: &str = r#"
name = "full"
world = "apartment"
seed = 7
max_time = 120

[start]
battery = 24
zone = "living_room"

[config.kernel]
max_iterations = 5

[[step]]
at = 1
say = "去厨房"

[[step]]
on = { kind = "skill", match = { skill = "navigate_to", status = "dispatched" } }
after = 3
inject = { fault = "block", passage = "kitchen_door" }

[[step]]
on = { kind = "approval", match = { status = "requested" } }
approve = true

[[step]]
at = 50
patrol = "default"

[[expect]]
kind = "decision"
match = { decision_type = "REPLAN", "ops.0.skill" = "navigate_to" }
within = 60
count = ">=1"

[[expect]]
kind = "mode"
match = { to = "SAFE" }
count = 0

[[expect_order]]
events = [
  { kind = "mode", match = { to = "EXEC" } },
  { kind = "mode", match = { from = "EXEC", to = "IDLE" } },
]

[final]
mode = "IDLE"
activity = "IDLE"
task_status = { id = "t1", status = "succeeded" }
zone = "kitchen"
battery = [10, 100]
"#;

    #[test]
    fn a_full_scenario_parses_into_typed_values() {
        let s = p(FULL).unwrap();
        assert_eq!(s.name, "full");
        assert_eq!(s.seed, 7);
        assert_eq!(s.config.seed, 7);
        assert_eq!(s.config.kernel.max_iterations, 5);
        assert_eq!(s.max_time, 120.0);
        assert_eq!(s.settle, DEFAULT_SETTLE);
        assert_eq!(s.start.battery, Some(24.0));
        assert_eq!(s.start.zone.as_ref().unwrap().value, "living_room");
        assert_eq!(s.steps.len(), 4);
        assert_eq!(s.steps[0].trigger, Trigger::At(1.0));
        assert_eq!(s.steps[0].action.value, Action::Say("去厨房".into()));
        assert_eq!(s.steps[0].line, 14);
        assert_eq!(s.steps[1].after, 3.0);
        assert_eq!(
            s.steps[1].action.value,
            Action::Inject(Fault::Block {
                passage: "kitchen_door".into()
            })
        );
        assert_eq!(s.steps[2].action.value, Action::Approve(None));
        assert_eq!(
            s.steps[3].action.value,
            Action::Patrol(Some("default".into()))
        );
        assert_eq!(s.expects[0].within, Some(60.0));
        assert_eq!(s.expects[0].count, Count::default());
        assert_eq!(s.expects[1].count, Count::exactly(0));
        assert_eq!(s.orders[0].events.len(), 2);
        assert_eq!(s.final_state.mode, Some(Mode::Idle));
        assert_eq!(
            s.final_state.task,
            Some(TaskExpect {
                id: Some("t1".into()),
                status: TaskStatus::Succeeded
            })
        );
        assert_eq!(s.final_state.battery, Some((10.0, 100.0)));
    }

    #[test]
    fn worlds_are_names_or_paths_next_to_the_scenario() {
        let step = "[[step]]\nat = 1\nsay = \"x\"\n";
        let s = parse(
            &format!("world = \"worlds/small.toml\"\n{step}"),
            Path::new("tests/scenarios/a.toml"),
        )
        .unwrap();
        assert_eq!(s.world, "tests/scenarios/worlds/small.toml");
        let s = parse(step, Path::new("tests/scenarios/a.toml")).unwrap();
        assert_eq!(s.world, "apartment");
        assert_eq!(s.name, "a");
    }

    #[test]
    fn bad_steps_are_located_with_field_and_expectation() {
        assert_eq!(
            p("[[step]]\nat = -1\nsay = \"x\"\n").unwrap_err(),
            "s.toml:2:6: `step[1].at`: expected sim seconds ≥ 0, found -1"
        );
        assert_eq!(
            p("[[step]]\nat = 1\nsay = \"x\"\nestop = true\n").unwrap_err(),
            "s.toml:4:1: `step[1].estop`: expected exactly one action per step, found `say` and `estop`"
        );
        assert_eq!(
            p("[[step]]\nat = 1\n").unwrap_err(),
            "s.toml:1:1: `step[1]`: expected one action (say, approve, edit, reject, inject, estop, reset_estop, pause, resume, stop, patrol)"
        );
        assert_eq!(
            p("[[step]]\nat = 1\napprove = false\n").unwrap_err(),
            "s.toml:3:1: `step[1].approve`: expected `true` (the pending approval) or an approval id, found false"
        );
        assert_eq!(
            p("[[step]]\non = { kind = \"skil\" }\nstop = true\n").unwrap_err(),
            "s.toml:2:15: `step[1].on.kind`: expected an event kind (one of snapshot, update, intent, understanding, decision, guardrail, mode, activity, task, skill, approval, alert, speech, telemetry, fault, device, token, llm_call, memory, log, error), found \"skil\""
        );
        assert_eq!(
            p("[[step]]\nsay = \"x\"\n").unwrap_err(),
            "s.toml:1:1: `step[1]`: expected `at = <sim seconds>` or `on = { kind = \"…\", match = {…} }`"
        );
        let e = p("[[step]]\nat = 1\nshout = \"x\"\n").unwrap_err();
        assert!(
            e.starts_with("s.toml:3:1: `shout`: unknown field `shout`"),
            "{e}"
        );
    }

    #[test]
    fn bad_expectations_and_config_are_located() {
        assert_eq!(
            p("[[expect]]\nkind = \"mode\"\ncount = \"lots\"\n").unwrap_err(),
            "s.toml:3:9: `expect[1].count`: expected a number of events (2) or a comparison (\">=1\", \"<=2\", \"0\"), found \"lots\""
        );
        assert_eq!(
            p("[[expect]]\nkind = \"mode\"\ncount = -2\n").unwrap_err(),
            "s.toml:3:9: `expect[1].count`: expected a number of events (2) or a comparison (\">=1\", \"<=2\", \"0\"), found -2"
        );
        assert_eq!(
            p("[config.kernel]\nmax_iterations = 0\n").unwrap_err(),
            "s.toml:2:1: `config.kernel.max_iterations`: expected at least 1, found 0"
        );
        assert_eq!(
            p("[final]\nbattery = [50, 10]\n").unwrap_err(),
            "s.toml:2:11: `final.battery`: expected [min, max] percents with 0 ≤ min ≤ max ≤ 100, found [50.0, 10.0]"
        );
        let e = p("[final]\nmode = \"RUNNING\"\n").unwrap_err();
        assert!(e.starts_with("s.toml:2:8"), "{e}");
        assert!(e.contains("expected one of"), "{e}");
        let e = p("[final]\ntask_status = \"done\"\n").unwrap_err();
        assert!(
            e.starts_with("s.toml:2:15: `final.task_status`: expected a task status"),
            "{e}"
        );
    }

    #[test]
    fn brains_and_scripted_decisions_parse_and_are_checked() {
        let s = p(r#"
brain = "scripted"

[[decision]]
type = "REPLAN"
reason = "scripted"
ops = [{ op = "wait", seconds = 2 }]

[[step]]
at = 1
say = "go"
"#)
        .unwrap();
        let BrainChoice::Scripted(list) = &s.brain else {
            panic!("{:?}", s.brain)
        };
        assert_eq!(list[0].decision_type, crate::protocol::DecisionType::Replan);
        let s =
            p("brain = \"llm\"\nmock_llm = \"mock/a.toml\"\n[final]\nmode = \"IDLE\"\n").unwrap();
        assert_eq!(
            s.brain,
            BrainChoice::Llm {
                mock: Some(PathBuf::from("mock/a.toml"))
            }
        );
        assert_eq!(
            p("brain = \"gpt\"\n").unwrap_err(),
            "s.toml:1:9: `brain`: expected \"rule\", \"llm\" or \"scripted\", found \"gpt\""
        );
        assert_eq!(
            p("[[decision]]\ntype = \"FINISH\"\nreason = \"x\"\n").unwrap_err(),
            "s.toml:1:1: `decision[1]`: [[decision]] needs brain = \"scripted\", found brain = \"rule\""
        );
        let e =
            p("brain = \"scripted\"\n[[decision]]\ntype = \"JUMP\"\nreason = \"x\"\n").unwrap_err();
        assert!(
            e.starts_with("s.toml:2:1: `decision[1]`: expected a decision (type, reason, ops, plan_patch): unknown variant `JUMP`"),
            "{e}"
        );
        assert!(
            p("mock_llm = \"m.toml\"\n")
                .unwrap_err()
                .contains("a mock model needs brain = \"llm\"")
        );
    }
}
