//! A run's metrics in Prometheus' text exposition format (0.0.4), and its
//! health. Pure: the counters are fed the run's events, one at a time, by
//! whoever already reads every one of them (the session's recorder), and
//! the gauges are read off a [`Snapshot`] at scrape time; the kernel's tick
//! times come from the runtime as a [`Histogram`]. Nothing in the engine
//! counts for them.
//!
//! | metric | type | from |
//! |---|---|---|
//! | `robobrain_kernel_tick_seconds` | histogram | the runtime's tick times (compute and publish) |
//! | `robobrain_events_total{kind}` | counter | every event, by kind |
//! | `robobrain_model_calls_total{purpose,outcome}` | counter | `llm_call` events |
//! | `robobrain_model_tokens_total{kind}` | counter | `llm_call` events' usage (`prompt`, `completion`) |
//! | `robobrain_approvals_waiting` | gauge | the snapshot's approvals |
//! | `robobrain_robot_link_up` | gauge | the snapshot's link (1 up, 0 down) |
//! | `robobrain_memory_items{kind}` | gauge | the snapshot's memory (`memories`, `messages`; absent without memory) |
//! | `robobrain_kernel_up` | gauge | whether the kernel thread runs |
//! | `robobrain_battery_percent`, `robobrain_sim_time_seconds` | gauge | the snapshot |
//! | `robobrain_run_info{thread_id,brain,memory,robot}` | gauge | the snapshot's run, always 1 |

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::protocol::{Event, EventKind, LinkState, Snapshot};

/// The kernel tick histogram's upper bounds, seconds: 50 µs to 100 ms
/// (a tick at 10 Hz has 100 ms in all).
pub const TICK_BOUNDS: [f64; 12] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
];

/// The content type of [`render`]'s text.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Observations counted into fixed buckets, cumulative since the start.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    bounds: &'static [f64],
    /// Per bucket (not cumulative), the last one above every bound.
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    /// An empty histogram with these upper bounds (ascending).
    pub fn new(bounds: &'static [f64]) -> Self {
        Self {
            bounds,
            counts: vec![0; bounds.len() + 1],
            sum: 0.0,
            count: 0,
        }
    }

    /// Counts one observation of `value`.
    pub fn observe(&mut self, value: f64) {
        let i = self.bounds.partition_point(|b| *b < value);
        self.counts[i] += 1;
        self.sum += value;
        self.count += 1;
    }

    /// Observations so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Their sum.
    pub fn sum(&self) -> f64 {
        self.sum
    }

    /// `(upper bound, observations at or below it)`, cumulative, ending
    /// with `+Inf` (`f64::INFINITY`) and the count.
    pub fn cumulative(&self) -> Vec<(f64, u64)> {
        let mut total = 0;
        self.bounds
            .iter()
            .copied()
            .chain(std::iter::once(f64::INFINITY))
            .zip(&self.counts)
            .map(|(bound, n)| {
                total += n;
                (bound, total)
            })
            .collect()
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new(&TICK_BOUNDS)
    }
}

/// What the run's events add up to since the start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventCounts {
    /// Events by kind (`telemetry`, `decision`, …).
    pub by_kind: BTreeMap<&'static str, u64>,
    /// Model calls by `(purpose, outcome)`.
    pub model_calls: BTreeMap<(String, String), u64>,
    /// Prompt tokens the endpoints reported.
    pub prompt_tokens: u64,
    /// Completion tokens the endpoints reported.
    pub completion_tokens: u64,
}

impl EventCounts {
    /// Counts one event.
    pub fn observe(&mut self, event: &Event) {
        *self.by_kind.entry(event.kind.name()).or_default() += 1;
        if let EventKind::LlmCall(call) = &event.kind {
            *self
                .model_calls
                .entry((call.purpose.clone(), call.outcome.clone()))
                .or_default() += 1;
            self.prompt_tokens += call.prompt_tokens.unwrap_or(0);
            self.completion_tokens += call.completion_tokens.unwrap_or(0);
        }
    }

    /// Events counted, of every kind.
    pub fn total(&self) -> u64 {
        self.by_kind.values().sum()
    }
}

/// Everything one scrape reads.
#[derive(Debug, Clone, Copy)]
pub struct Scrape<'a> {
    /// The events so far.
    pub events: &'a EventCounts,
    /// The kernel's tick times.
    pub ticks: &'a Histogram,
    /// The state as of the last tick.
    pub snapshot: &'a Snapshot,
    /// Whether the kernel thread is running.
    pub kernel_running: bool,
}

/// The text a Prometheus server scrapes.
pub fn render(s: &Scrape<'_>) -> String {
    let mut out = Text(String::with_capacity(4096));
    tick_metrics(&mut out, s.ticks);
    event_metrics(&mut out, s.events);
    state_metrics(&mut out, s.snapshot, s.kernel_running);
    run_info(&mut out, s.snapshot);
    out.0
}

/// The kernel tick histogram: its buckets, sum and count.
fn tick_metrics(out: &mut Text, ticks: &Histogram) {
    let name = "robobrain_kernel_tick_seconds";
    out.family(
        name,
        "histogram",
        "Wall time of one kernel tick on the kernel thread (the tick, then publishing its events and snapshot).",
    );
    for (bound, n) in ticks.cumulative() {
        let le = if bound.is_infinite() {
            "+Inf".to_string()
        } else {
            number(bound)
        };
        out.sample(&format!("{name}_bucket"), &[("le", &le)], n);
    }
    out.sample(&format!("{name}_sum"), &[], number(ticks.sum()));
    out.sample(&format!("{name}_count"), &[], ticks.count());
}

/// The counters fed by the run's events: by kind, model calls and tokens.
fn event_metrics(out: &mut Text, events: &EventCounts) {
    out.family(
        "robobrain_events_total",
        "counter",
        "Events the run emitted, by kind (rate() gives events per second).",
    );
    for (kind, n) in &events.by_kind {
        out.sample("robobrain_events_total", &[("kind", *kind)], n);
    }

    out.family(
        "robobrain_model_calls_total",
        "counter",
        "Model calls that ended, by purpose and outcome (ok, or the error's kind).",
    );
    for ((purpose, outcome), n) in &events.model_calls {
        out.sample(
            "robobrain_model_calls_total",
            &[("purpose", purpose.as_str()), ("outcome", outcome.as_str())],
            n,
        );
    }

    out.family(
        "robobrain_model_tokens_total",
        "counter",
        "Tokens the model endpoints reported using, by kind.",
    );
    out.sample(
        "robobrain_model_tokens_total",
        &[("kind", "prompt")],
        events.prompt_tokens,
    );
    out.sample(
        "robobrain_model_tokens_total",
        &[("kind", "completion")],
        events.completion_tokens,
    );
}

/// The gauges read off the snapshot (and whether the kernel runs), in order.
fn state_metrics(out: &mut Text, snap: &Snapshot, kernel_running: bool) {
    out.gauge(
        "robobrain_approvals_waiting",
        "Approvals waiting for the operator.",
        snap.approvals.len(),
    );
    out.gauge(
        "robobrain_robot_link_up",
        "1 while the brain hears the robot, 0 while the link is down (the kernel is then in SAFE).",
        u8::from(snap.link.is_up()),
    );
    out.family(
        "robobrain_memory_items",
        "gauge",
        "What the run's memory holds: searchable long-term memories and messages kept (no sample without memory).",
    );
    if let Some(m) = &snap.memory {
        out.sample(
            "robobrain_memory_items",
            &[("kind", "memories")],
            m.memories,
        );
        out.sample(
            "robobrain_memory_items",
            &[("kind", "messages")],
            m.messages,
        );
    }
    out.gauge(
        "robobrain_kernel_up",
        "1 while the kernel thread runs, 0 once it has stopped.",
        u8::from(kernel_running),
    );
    out.gauge(
        "robobrain_battery_percent",
        "The robot's battery, percent.",
        number(snap.robot.battery_pct),
    );
    out.gauge(
        "robobrain_sim_time_seconds",
        "Sim seconds since the run started.",
        number(snap.time),
    );
}

/// `robobrain_run_info`: what the run is, always 1.
fn run_info(out: &mut Text, snap: &Snapshot) {
    out.family(
        "robobrain_run_info",
        "gauge",
        "What the run is: its thread, brain, memory and robot (always 1).",
    );
    let run = snap.run.clone().unwrap_or_default();
    out.sample(
        "robobrain_run_info",
        &[
            ("thread_id", snap.thread_id.as_str()),
            ("brain", run.brain_label().as_str()),
            ("memory", run.memory_label()),
            ("robot", run.robot.as_str()),
        ],
        1,
    );
}

/// What `/healthz` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Health {
    /// `ok`, or `unavailable` when the kernel has stopped or the link is down.
    pub status: &'static str,
    /// `running` or `stopped`.
    pub kernel: &'static str,
    /// `up` or `down`.
    pub link: &'static str,
    /// The kernel's step as of the last tick.
    pub step: u64,
    /// The last event's sequence number.
    pub seq: u64,
}

impl Health {
    /// The health of a run whose kernel is running (or not) in the state `snapshot`.
    pub fn of(snapshot: &Snapshot, kernel_running: bool) -> Self {
        let ok = kernel_running && snapshot.link == LinkState::Up;
        Self {
            status: if ok { "ok" } else { "unavailable" },
            kernel: if kernel_running { "running" } else { "stopped" },
            link: snapshot.link.as_str(),
            step: snapshot.step,
            seq: snapshot.seq,
        }
    }

    /// Whether the run is alive and drives its robot (HTTP 200; else 503).
    pub fn is_ok(&self) -> bool {
        self.status == "ok"
    }
}

/// A number as Prometheus reads it (`NaN`, `+Inf`, `-Inf` spelt its way).
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

/// The exposition being written (also the fleet board's, `fleet::board`).
#[derive(Default)]
pub struct Text(String);

impl Text {
    /// The text written.
    pub fn finish(self) -> String {
        self.0
    }

    /// A metric family's `HELP` and `TYPE` lines.
    pub fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}");
        let _ = writeln!(self.0, "# TYPE {name} {kind}");
    }

    /// A gauge with no labels: its family and its one sample.
    pub fn gauge(&mut self, name: &str, help: &str, value: impl std::fmt::Display) {
        self.family(name, "gauge", help);
        self.sample(name, &[], value);
    }

    /// One sample: the name, the labels (values escaped) and the value.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
        self.0.push_str(name);
        if !labels.is_empty() {
            self.0.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.0.push(',');
                }
                let _ = write!(self.0, "{k}=\"");
                escape_into(&mut self.0, v);
                self.0.push('"');
            }
            self.0.push('}');
        }
        let _ = writeln!(self.0, " {value}");
    }
}

/// A label value, escaped: backslash, double quote and line feed.
fn escape_into(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{LlmCallView, MemorySize, RunInfo};

    fn event(seq: u64, kind: EventKind) -> Event {
        Event {
            seq,
            time: 0.0,
            wall_ms: 0,
            thread_id: "t".into(),
            step: 0,
            origin: None,
            kind,
        }
    }

    fn call(purpose: &str, outcome: &str, tokens: Option<(u64, u64)>) -> EventKind {
        EventKind::LlmCall(Box::new(LlmCallView {
            purpose: purpose.into(),
            model: "m".into(),
            outcome: outcome.into(),
            attempts: 1,
            latency_ms: 5,
            first_token_ms: None,
            prompt_tokens: tokens.map(|t| t.0),
            completion_tokens: tokens.map(|t| t.1),
            structured: "tools".into(),
            error: String::new(),
        }))
    }

    fn log() -> EventKind {
        EventKind::Log {
            level: "info".into(),
            message: "x".into(),
        }
    }

    #[test]
    fn a_histogram_counts_into_cumulative_buckets_with_inf_last() {
        static BOUNDS: [f64; 3] = [0.001, 0.01, 0.1];
        let mut h = Histogram::new(&BOUNDS);
        for v in [0.0005, 0.001, 0.002, 0.05, 3.0] {
            h.observe(v);
        }
        assert_eq!(
            h.cumulative(),
            vec![(0.001, 2), (0.01, 3), (0.1, 4), (f64::INFINITY, 5)],
            "a value on a bound counts in that bucket (le)"
        );
        assert_eq!(h.count(), 5);
        assert!((h.sum() - 3.0535).abs() < 1e-12);
    }

    #[test]
    fn events_are_counted_by_kind_and_model_calls_by_purpose_outcome_and_tokens() {
        let mut c = EventCounts::default();
        c.observe(&event(1, log()));
        c.observe(&event(2, log()));
        c.observe(&event(3, call("decide", "ok", Some((120, 30)))));
        c.observe(&event(4, call("decide", "ok", Some((100, 20)))));
        c.observe(&event(5, call("intent", "timeout", None)));
        assert_eq!(c.total(), 5);
        assert_eq!(c.by_kind["log"], 2);
        assert_eq!(c.by_kind["llm_call"], 3);
        assert_eq!(c.model_calls[&("decide".into(), "ok".into())], 2);
        assert_eq!(c.model_calls[&("intent".into(), "timeout".into())], 1);
        assert_eq!((c.prompt_tokens, c.completion_tokens), (220, 50));
    }

    #[test]
    fn the_text_has_every_family_typed_and_escapes_label_values() {
        let mut events = EventCounts::default();
        events.observe(&event(1, log()));
        events.observe(&event(2, call("decide", "ok", Some((7, 3)))));
        let mut ticks = Histogram::default();
        ticks.observe(0.0002);
        let snapshot = Snapshot {
            thread_id: "serve-\"1\"\\x\ny".into(),
            memory: Some(MemorySize {
                memories: 2,
                messages: 9,
            }),
            run: Some(RunInfo {
                robot: "sim:".into(),
                ..RunInfo::default()
            }),
            ..Snapshot::default()
        };
        let text = render(&Scrape {
            events: &events,
            ticks: &ticks,
            snapshot: &snapshot,
            kernel_running: true,
        });
        for line in [
            "# TYPE robobrain_kernel_tick_seconds histogram",
            "robobrain_kernel_tick_seconds_bucket{le=\"0.0001\"} 0",
            "robobrain_kernel_tick_seconds_bucket{le=\"0.00025\"} 1",
            "robobrain_kernel_tick_seconds_bucket{le=\"+Inf\"} 1",
            "robobrain_kernel_tick_seconds_sum 0.0002",
            "robobrain_kernel_tick_seconds_count 1",
            "# TYPE robobrain_events_total counter",
            "robobrain_events_total{kind=\"llm_call\"} 1",
            "robobrain_events_total{kind=\"log\"} 1",
            "robobrain_model_calls_total{purpose=\"decide\",outcome=\"ok\"} 1",
            "robobrain_model_tokens_total{kind=\"prompt\"} 7",
            "robobrain_model_tokens_total{kind=\"completion\"} 3",
            "# TYPE robobrain_approvals_waiting gauge",
            "robobrain_approvals_waiting 0",
            "robobrain_robot_link_up 1",
            "robobrain_memory_items{kind=\"memories\"} 2",
            "robobrain_memory_items{kind=\"messages\"} 9",
            "robobrain_kernel_up 1",
            "robobrain_run_info{thread_id=\"serve-\\\"1\\\"\\\\x\\ny\",brain=\"rules\",memory=\"off\",robot=\"sim:\"} 1",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "no line {line:?} in\n{text}"
            );
        }
        assert!(text.ends_with('\n'));
        let down = Snapshot {
            link: LinkState::Down,
            ..Snapshot::default()
        };
        let text = render(&Scrape {
            events: &EventCounts::default(),
            ticks: &Histogram::default(),
            snapshot: &down,
            kernel_running: false,
        });
        assert!(
            text.lines().any(|l| l == "robobrain_robot_link_up 0"),
            "{text}"
        );
        assert!(text.lines().any(|l| l == "robobrain_kernel_up 0"), "{text}");
        assert!(
            !text.contains("robobrain_memory_items{"),
            "no memory, no sample: {text}"
        );
    }

    #[test]
    fn health_is_ok_only_with_the_kernel_running_and_the_link_up() {
        let up = Snapshot {
            step: 7,
            seq: 40,
            ..Snapshot::default()
        };
        let ok = Health::of(&up, true);
        assert!(ok.is_ok());
        assert_eq!(
            serde_json::to_value(&ok).unwrap(),
            serde_json::json!({"status": "ok", "kernel": "running", "link": "up", "step": 7, "seq": 40})
        );
        let stopped = Health::of(&up, false);
        assert!(!stopped.is_ok());
        assert_eq!((stopped.status, stopped.kernel), ("unavailable", "stopped"));
        let down = Snapshot {
            link: LinkState::Down,
            ..up
        };
        let lost = Health::of(&down, true);
        assert!(!lost.is_ok());
        assert_eq!((lost.status, lost.link), ("unavailable", "down"));
    }
}
