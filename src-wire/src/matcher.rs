//! Matching events against the patterns scenario files write.
//!
//! A [`Pattern`] is an event kind plus a *subset match* on the event's JSON
//! (the wire form of [`crate::protocol::Event`]): every field the pattern
//! names must be present and agree; fields it does not name are ignored.
//! Nested tables and dotted keys (`"task.status"`) both reach into objects,
//! and a numeric segment (`"ops.0.skill"`) indexes an array.
//!
//! Leaf values:
//! - a string, number or boolean must equal the event's value (numbers
//!   compare as numbers, so `3` matches `3.0`);
//! - a string starting with `~` matches when the event's value contains the
//!   rest, ignoring case (`reason = "~battery"`); non-strings are searched in
//!   their JSON text;
//! - a string `"<=20"`, `">=1"`, `"<5"`, `">0"` compares a numeric value;
//! - an array lists alternatives: any one may match;
//! - when the event's value is an array, a non-array leaf matches if any
//!   element does.
//!
//! A path must start at a field the event kind has ([`EVENT_FIELDS`], plus
//! the envelope's [`ENVELOPE_FIELDS`]): a misspelt key would otherwise
//! never match, and `count = 0` on it would pass without checking anything.
//! What lies inside a field (a skill's `args`, a device's `state`) is open.

use std::fmt;

use serde_json::{Map, Value};

/// The fields every event has, whatever its kind.
/// (`origin` only on events a command caused.)
pub const ENVELOPE_FIELDS: &[&str] = &[
    "seq",
    "time",
    "wall_ms",
    "thread_id",
    "step",
    "origin",
    "kind",
];

/// Each event kind and the top-level fields of its JSON (the wire form of
/// [`crate::protocol::EventKind`]; a test checks the two agree).
pub const EVENT_FIELDS: &[(&str, &[&str])] = &[
    ("snapshot", &["snapshot"]),
    ("update", &["node", "changed"]),
    (
        "intent",
        &["utterance", "intent", "args", "processed_locally"],
    ),
    ("understanding", &["utterance", "by", "reading", "rows"]),
    (
        "decision",
        &[
            "task_id",
            "iteration",
            "decision_type",
            "reason",
            "brain",
            "ops",
        ],
    ),
    ("guardrail", &["task_id", "op", "verdict", "reason"]),
    ("mode", &["from", "to", "reason"]),
    ("activity", &["from", "to", "reason"]),
    ("task", &["task", "reason"]),
    (
        "skill",
        &[
            "goal_id", "skill", "status", "args", "feedback", "error", "message", "output",
        ],
    ),
    (
        "approval",
        &[
            "approval_id",
            "task_id",
            "status",
            "op",
            "reason",
            "requested_by",
        ],
    ),
    ("alert", &["incident"]),
    ("speech", &["text", "track", "audio"]),
    (
        "telemetry",
        &[
            "pose",
            "battery_pct",
            "charging",
            "zone",
            "distance_to_target",
            "busy",
        ],
    ),
    ("fault", &["fault"]),
    ("device", &["device", "room", "state", "online", "reason"]),
    ("token", &["purpose", "text"]),
    (
        "llm_call",
        &[
            "purpose",
            "model",
            "outcome",
            "attempts",
            "latency_ms",
            "first_token_ms",
            "prompt_tokens",
            "completion_tokens",
            "structured",
            "error",
        ],
    ),
    (
        "memory",
        &["query", "mode", "used", "tokens", "budget", "dropped"],
    ),
    ("log", &["level", "message"]),
    ("error", &["code", "message"]),
];

/// The fields of events of `kind` (without the envelope's), if it is a kind.
pub fn fields_of(kind: &str) -> Option<&'static [&'static str]> {
    EVENT_FIELDS
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, fields)| *fields)
}

/// One leaf test of a pattern: the value at `path` must satisfy `want`.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldTest {
    /// Object keys (or array indices) from the event's top level.
    pub path: Vec<String>,
    /// The wanted value, with the leaf semantics of this module.
    pub want: Value,
}

impl FieldTest {
    /// Whether the value at this test's path in `value` satisfies it.
    pub fn holds(&self, value: &Value) -> bool {
        value_matches(&self.want, lookup(value, &self.path))
    }
}

/// The leaf tests of a `match` table: nested tables and dotted keys
/// flattened into paths (also what `mock-llm` scripts' `when.json` use).
pub fn field_tests(matcher: &Map<String, Value>) -> Vec<FieldTest> {
    let mut fields = Vec::new();
    flatten(&[], matcher, &mut fields);
    fields
}

/// An event kind and a subset match on the event's JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    /// The event's `kind` tag (`decision`, `skill`, …).
    pub kind: String,
    /// Leaf tests, all of which must hold.
    pub fields: Vec<FieldTest>,
}

impl Pattern {
    /// A pattern from a kind and a `match` table (nested tables and dotted
    /// keys are flattened into paths).
    pub fn new(kind: impl Into<String>, matcher: &Map<String, Value>) -> Self {
        Self {
            kind: kind.into(),
            fields: field_tests(matcher),
        }
    }

    /// The first field test whose path does not start at a field events of
    /// this kind have (a misspelt key, or a field of another kind).
    pub fn unknown_field(&self) -> Option<&FieldTest> {
        let fields = fields_of(&self.kind).unwrap_or_default();
        self.fields.iter().find(|t| {
            t.path.first().is_none_or(|f| {
                !fields.contains(&f.as_str()) && !ENVELOPE_FIELDS.contains(&f.as_str())
            })
        })
    }

    /// Whether `event` (an event's JSON) is of this kind and passes every test.
    pub fn matches(&self, event: &Value) -> bool {
        self.kind_matches(event) && self.score(event) == self.fields.len()
    }

    /// Whether `event` is of this pattern's kind.
    pub fn kind_matches(&self, event: &Value) -> bool {
        event.get("kind").and_then(Value::as_str) == Some(self.kind.as_str())
    }

    /// How many leaf tests `event` passes (to rank near misses).
    pub fn score(&self, event: &Value) -> usize {
        self.fields.iter().filter(|t| t.holds(event)).count()
    }
}

impl fmt::Display for Pattern {
    /// `decision {decision_type=REPLAN, reason~battery}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.kind)?;
        if self.fields.is_empty() {
            return Ok(());
        }
        let parts: Vec<String> = self
            .fields
            .iter()
            .map(|t| {
                let path = t.path.join(".");
                match &t.want {
                    Value::String(s) => match s.strip_prefix('~') {
                        Some(needle) => format!("{path}~{needle}"),
                        None if parse_cmp(s).is_some() => format!("{path}{s}"),
                        None => format!("{path}={s}"),
                    },
                    other => format!("{path}={other}"),
                }
            })
            .collect();
        write!(f, " {{{}}}", parts.join(", "))
    }
}

fn flatten(prefix: &[String], map: &Map<String, Value>, out: &mut Vec<FieldTest>) {
    for (key, value) in map {
        let mut path = prefix.to_vec();
        path.extend(key.split('.').map(str::to_string));
        match value {
            Value::Object(inner) if !inner.is_empty() => flatten(&path, inner, out),
            _ => out.push(FieldTest {
                path,
                want: value.clone(),
            }),
        }
    }
}

/// The value at `path` inside `value`, if there is one.
pub fn lookup<'a>(value: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(value, |cur, seg| match cur {
        Value::Object(m) => m.get(seg),
        Value::Array(a) => seg.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

/// Whether an event's value (`None` when absent) satisfies a wanted leaf.
pub fn value_matches(want: &Value, got: Option<&Value>) -> bool {
    match (want, got) {
        (Value::Array(alternatives), _) => alternatives.iter().any(|w| value_matches(w, got)),
        (Value::Null, _) => got.is_none_or(Value::is_null),
        (_, None) => false,
        (Value::Object(_), Some(g)) => g.is_object(),
        (_, Some(Value::Array(items))) => items.iter().any(|g| scalar_matches(want, g)),
        (_, Some(g)) => scalar_matches(want, g),
    }
}

fn scalar_matches(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::String(w), _) if w.starts_with('~') => {
            let needle = w[1..].to_lowercase();
            let hay = match got {
                Value::String(s) => s.to_lowercase(),
                other => other.to_string().to_lowercase(),
            };
            hay.contains(&needle)
        }
        (Value::String(w), Value::Number(n)) => match (parse_cmp(w), n.as_f64()) {
            (Some((op, x)), Some(v)) => op.holds(&v, &x),
            _ => *w == n.to_string(),
        },
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        _ => want == got,
    }
}

/// A comparison operator, in patterns and counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    /// `==` (or no operator).
    Eq,
    /// `>=`.
    Ge,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `<`.
    Lt,
}

impl Cmp {
    fn holds<T: PartialOrd>(self, value: &T, bound: &T) -> bool {
        match self {
            Self::Eq => value == bound,
            Self::Ge => value >= bound,
            Self::Le => value <= bound,
            Self::Gt => value > bound,
            Self::Lt => value < bound,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Eq => "",
            Self::Ge => ">=",
            Self::Le => "<=",
            Self::Gt => ">",
            Self::Lt => "<",
        }
    }

    /// Splits a leading operator off `s` (`">=3"` → `(Ge, "3")`); no
    /// operator is `Eq`.
    fn split(s: &str) -> (Self, &str) {
        let s = s.trim();
        for (prefix, op) in [
            (">=", Self::Ge),
            ("<=", Self::Le),
            ("==", Self::Eq),
            (">", Self::Gt),
            ("<", Self::Lt),
            ("=", Self::Eq),
        ] {
            if let Some(rest) = s.strip_prefix(prefix) {
                return (op, rest.trim());
            }
        }
        (Self::Eq, s)
    }
}

/// `"<=20"` → `(Le, 20.0)`; a bare number is not a comparison.
fn parse_cmp(s: &str) -> Option<(Cmp, f64)> {
    let (op, rest) = Cmp::split(s);
    if op == Cmp::Eq {
        return None;
    }
    rest.parse().ok().map(|x| (op, x))
}

/// How many matching events an expectation wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    /// The comparison.
    pub op: Cmp,
    /// The bound.
    pub n: u64,
}

impl Default for Count {
    /// At least one.
    fn default() -> Self {
        Self { op: Cmp::Ge, n: 1 }
    }
}

impl Count {
    /// Exactly `n`.
    pub const fn exactly(n: u64) -> Self {
        Self { op: Cmp::Eq, n }
    }

    /// Parses `"3"`, `"==3"`, `">=1"`, `"<=2"`, `">0"`, `"<5"`.
    pub fn parse(s: &str) -> Option<Self> {
        let (op, rest) = Cmp::split(s);
        let n = rest.parse().ok()?;
        Some(Self { op, n })
    }

    /// Whether `found` matching events satisfy the count.
    pub fn holds(self, found: u64) -> bool {
        self.op.holds(&found, &self.n)
    }

    /// Whether any matching event at all fails the expectation (`0`, `<1`).
    pub fn forbids(self) -> bool {
        !self.holds(1) && self.holds(0)
    }
}

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.op {
            Cmp::Eq if self.n == 0 => write!(f, "none"),
            Cmp::Eq => write!(f, "exactly {}", self.n),
            op => write!(f, "{}{}", op.as_str(), self.n),
        }
    }
}

/// Finds `patterns` in order in `events` (each match strictly after the
/// previous one). `Ok` holds the matched indices; `Err` holds those matched
/// before the first pattern that could not be found.
pub fn find_in_order(patterns: &[Pattern], events: &[Value]) -> Result<Vec<usize>, Vec<usize>> {
    let mut found = Vec::with_capacity(patterns.len());
    let mut from = 0;
    for pattern in patterns {
        match events[from..].iter().position(|e| pattern.matches(e)) {
            Some(i) => {
                found.push(from + i);
                from += i + 1;
            }
            None => return Err(found),
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pat(kind: &str, m: &Value) -> Pattern {
        Pattern::new(kind, m.as_object().unwrap())
    }

    fn decision() -> Value {
        json!({"seq": 4, "time": 12.3, "kind": "decision", "task_id": "t1",
               "decision_type": "REPLAN", "reason": "Path BLOCKED at kitchen_door",
               "brain": "rule", "iteration": 2,
               "ops": [{"op": "dispatch", "skill": "navigate_to", "args": {"zone": "kitchen"}}]})
    }

    #[test]
    fn subset_match_ignores_unnamed_fields_and_checks_kind() {
        let ev = decision();
        assert!(pat("decision", &json!({})).matches(&ev));
        assert!(pat("decision", &json!({"decision_type": "REPLAN"})).matches(&ev));
        assert!(!pat("decision", &json!({"decision_type": "FINISH"})).matches(&ev));
        assert!(!pat("skill", &json!({})).matches(&ev));
        assert!(!pat("decision", &json!({"missing": "x"})).matches(&ev));
    }

    #[test]
    fn dotted_keys_nested_tables_and_indices_reach_inside() {
        let ev = decision();
        assert!(pat("decision", &json!({"ops.0.skill": "navigate_to"})).matches(&ev));
        assert!(pat("decision", &json!({"ops.0.args.zone": "kitchen"})).matches(&ev));
        assert!(
            pat(
                "decision",
                &json!({"ops": {"0": {"args": {"zone": "kitchen"}}}})
            )
            .matches(&ev)
        );
        assert!(!pat("decision", &json!({"ops.1.skill": "navigate_to"})).matches(&ev));
        let task = json!({"kind": "task", "task": {"id": "t1", "status": "succeeded"}});
        assert!(
            pat(
                "task",
                &json!({"task.status": "succeeded", "task": {"id": "t1"}})
            )
            .matches(&task)
        );
    }

    #[test]
    fn leaves_support_contains_comparisons_alternatives_and_numbers() {
        let ev = decision();
        assert!(pat("decision", &json!({"reason": "~blocked"})).matches(&ev));
        assert!(!pat("decision", &json!({"reason": "~battery"})).matches(&ev));
        assert!(pat("decision", &json!({"ops": "~navigate_to"})).matches(&ev));
        assert!(pat("decision", &json!({"iteration": ">=2"})).matches(&ev));
        assert!(!pat("decision", &json!({"iteration": "<2"})).matches(&ev));
        assert!(pat("decision", &json!({"iteration": 2.0})).matches(&ev));
        assert!(pat("decision", &json!({"decision_type": ["RETRY", "REPLAN"]})).matches(&ev));
        assert!(pat("decision", &json!({"absent": null})).matches(&ev));
        let tel = json!({"kind": "telemetry", "battery_pct": 19.5, "busy": ["base"]});
        assert!(pat("telemetry", &json!({"battery_pct": "<=20"})).matches(&tel));
        assert!(pat("telemetry", &json!({"busy": "base"})).matches(&tel));
    }

    #[test]
    fn score_counts_passing_leaves() {
        let p = pat(
            "decision",
            &json!({"decision_type": "REPLAN", "brain": "kernel"}),
        );
        assert_eq!(p.score(&decision()), 1);
        assert_eq!(
            p.to_string(),
            "decision {brain=kernel, decision_type=REPLAN}"
        );
        assert_eq!(
            pat("d", &json!({"reason": "~x", "n": "<=2", "k": 1})).to_string(),
            "d {k=1, n<=2, reason~x}"
        );
    }

    #[test]
    fn counts_parse_and_hold() {
        assert_eq!(Count::parse("0"), Some(Count::exactly(0)));
        assert_eq!(Count::parse(">=1"), Some(Count::default()));
        assert_eq!(Count::parse(" <= 2 "), Some(Count { op: Cmp::Le, n: 2 }));
        assert_eq!(Count::parse("==3"), Some(Count::exactly(3)));
        assert_eq!(Count::parse(">0"), Some(Count { op: Cmp::Gt, n: 0 }));
        assert_eq!(Count::parse("many"), None);
        assert_eq!(Count::parse(">=-1"), None);
        assert!(Count::parse("<=2").unwrap().holds(2));
        assert!(!Count::parse("<=2").unwrap().holds(3));
        assert!(Count::exactly(0).forbids());
        assert!(Count::parse("<1").unwrap().forbids());
        assert!(!Count::default().forbids());
        assert_eq!(Count::exactly(0).to_string(), "none");
        assert_eq!(Count::default().to_string(), ">=1");
        assert_eq!(Count::exactly(2).to_string(), "exactly 2");
    }

    #[test]
    fn order_is_a_strict_subsequence() {
        let evs: Vec<Value> = ["IDLE>EXEC", "EXEC>CHARGE", "CHARGE>EXEC", "EXEC>IDLE"]
            .iter()
            .map(|s| {
                let (from, to) = s.split_once('>').unwrap();
                json!({"kind": "mode", "from": from, "to": to})
            })
            .collect();
        let to = |m: &str| pat("mode", &json!({ "to": m }));
        assert_eq!(
            find_in_order(&[to("EXEC"), to("IDLE")], &evs),
            Ok(vec![0, 3])
        );
        assert_eq!(
            find_in_order(&[to("CHARGE"), to("EXEC"), to("EXEC")], &evs),
            Err(vec![1, 2])
        );
        assert_eq!(find_in_order(&[to("IDLE"), to("EXEC")], &evs), Err(vec![3]));
    }

    /// One event of each kind, every optional field filled.
    fn one_of_each() -> Vec<crate::protocol::EventKind> {
        use crate::protocol::{
            Activity, AlertStatus, ApprovalStatus, BrainKind, DecisionType, EventKind,
            IncidentRecord, LlmCallView, Mode, Node, Op, Priority, SkillStatus, SpeechTrack,
            TaskStatus, TaskView, Verdict,
        };
        let op = || Op::Wait { seconds: 1.0 };
        vec![
            EventKind::Snapshot {
                snapshot: Box::default(),
            },
            EventKind::Update {
                node: Node::Dispatch,
                changed: json!({}),
            },
            EventKind::Intent {
                utterance: "u".into(),
                intent: "goto".into(),
                args: json!({}),
                processed_locally: true,
            },
            EventKind::Understanding {
                utterance: "u".into(),
                trace: crate::protocol::Trace {
                    by: Some(crate::protocol::Understander::RobotGrammar),
                    reading: crate::protocol::Reading::new("goto", json!({})),
                    rows: Vec::new(),
                },
            },
            EventKind::Decision {
                task_id: "t1".into(),
                iteration: 1,
                decision_type: DecisionType::Continue,
                reason: "r".into(),
                brain: BrainKind::Rule,
                ops: vec![op()],
            },
            EventKind::Guardrail {
                task_id: "t1".into(),
                op: op(),
                verdict: Verdict::Allowed,
                reason: "r".into(),
            },
            EventKind::Mode {
                from: Mode::Idle,
                to: Mode::Exec,
                reason: "r".into(),
            },
            EventKind::Activity {
                from: Activity::Idle,
                to: Activity::Patrolling,
                reason: "r".into(),
            },
            EventKind::Task {
                task: TaskView {
                    id: "t1".into(),
                    title: "t".into(),
                    kind: "goto".into(),
                    priority: Priority::Main,
                    status: TaskStatus::Running,
                    step: 0,
                    steps: 1,
                    deadline: Some(1.0),
                },
                reason: "r".into(),
            },
            EventKind::Skill {
                goal_id: "g1".into(),
                skill: "navigate_to".into(),
                status: SkillStatus::Failed,
                args: json!({}),
                feedback: Some(crate::protocol::NavFeedback::default()),
                error: Some("blocked".into()),
                message: "m".into(),
                output: Some(json!({})),
            },
            EventKind::Approval {
                approval_id: "a1".into(),
                task_id: "t1".into(),
                status: ApprovalStatus::Requested,
                op: op(),
                reason: "r".into(),
                requested_by: Some(crate::protocol::Origin::console()),
            },
            EventKind::Alert {
                incident: Box::new(IncidentRecord {
                    id: "i1".into(),
                    time: 1.0,
                    zone: "kitchen".into(),
                    kinds: vec!["smoke".into()],
                    description: "d".into(),
                    evidence: None,
                    vision: json!({}),
                    status: AlertStatus::Open,
                    acknowledged_by: None,
                    acknowledged_at: None,
                }),
            },
            EventKind::Speech {
                text: "t".into(),
                track: SpeechTrack::Template,
                audio: Some("a.wav".into()),
            },
            EventKind::Telemetry {
                pose: crate::geometry::Pose::default(),
                battery_pct: 50.0,
                charging: false,
                zone: None,
                distance_to_target: None,
                busy: Vec::new(),
            },
            EventKind::Fault {
                fault: crate::protocol::Fault::Block {
                    passage: "p".into(),
                },
            },
            EventKind::Device {
                device: "d".into(),
                room: "r".into(),
                state: json!({}),
                online: true,
                reason: "r".into(),
            },
            EventKind::Token {
                purpose: "decide".into(),
                text: "t".into(),
            },
            EventKind::LlmCall(Box::new(LlmCallView {
                purpose: "decide".into(),
                model: "m".into(),
                outcome: "ok".into(),
                attempts: 1,
                latency_ms: 1,
                first_token_ms: Some(1),
                prompt_tokens: Some(1),
                completion_tokens: Some(1),
                structured: "tools".into(),
                error: "e".into(),
            })),
            EventKind::Memory {
                query: "q".into(),
                mode: "hybrid".into(),
                used: Vec::new(),
                tokens: 0,
                budget: 0,
                dropped: 0,
            },
            EventKind::Log {
                level: "info".into(),
                message: "m".into(),
            },
            EventKind::Error {
                code: "c".into(),
                message: "m".into(),
            },
        ]
    }

    #[test]
    fn the_field_table_is_the_events_wire_form() {
        let samples = one_of_each();
        let kinds: Vec<&str> = samples
            .iter()
            .map(crate::protocol::EventKind::name)
            .collect();
        let table: Vec<&str> = EVENT_FIELDS.iter().map(|(k, _)| *k).collect();
        assert_eq!(kinds, table, "one table row per event kind, in order");
        for kind in samples {
            let name = kind.name();
            let event = crate::protocol::Event {
                seq: 1,
                time: 0.0,
                wall_ms: 0,
                thread_id: "t".into(),
                step: 0,
                origin: Some(crate::protocol::Origin::console()),
                kind,
            };
            let mut got: Vec<String> = event
                .to_json()
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect();
            let mut want: Vec<String> = fields_of(name)
                .unwrap()
                .iter()
                .chain(ENVELOPE_FIELDS)
                .map(|f| (*f).to_string())
                .collect();
            got.sort();
            want.sort();
            assert_eq!(got, want, "`{name}` events");
        }
    }

    #[test]
    fn a_path_must_start_at_a_field_of_the_kind() {
        assert_eq!(
            pat("approval", &json!({"status": "approved", "op.skill": "x"})).unknown_field(),
            None
        );
        assert_eq!(pat("approval", &json!({"seq": ">1"})).unknown_field(), None);
        let p = pat(
            "approval",
            &json!({"status": "approved", "stauts": "approved"}),
        );
        assert_eq!(p.unknown_field().unwrap().path, ["stauts"]);
        // `device` is a field of device events, not of approvals.
        let p = pat("approval", &json!({"device.on": true}));
        assert_eq!(p.unknown_field().unwrap().path, ["device", "on"]);
        assert!(
            pat("device", &json!({"device": "lamp", "state.on": true}))
                .unknown_field()
                .is_none()
        );
    }
}
