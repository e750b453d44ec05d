//! `robobrain report LOG.jsonl -o report.html`: one self-contained HTML file
//! (inline SVG and CSS, no script, nothing fetched) for people who would
//! rather look than read — the map with the robot's trajectory, battery,
//! mode and activity over time, every decision with its reason, approvals,
//! incidents and how the tasks ended. Pure: events in, HTML out.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use robobrain_core::mapview::MapView;
use robobrain_core::protocol::describe;
use robobrain_core::protocol::{Event, EventKind, IncidentRecord, TaskView};

/// Width of the map drawing, pixels.
const MAP_WIDTH: f64 = 720.0;
/// Size of the time charts, pixels.
const CHART_WIDTH: f64 = 720.0;
const CHART_HEIGHT: f64 = 90.0;
/// Colours of the modes and activities in the bands.
const BAND_COLOURS: &[(&str, &str)] = &[
    ("SAFE", "#fca5a5"),
    ("CHARGE", "#fde68a"),
    ("EXEC", "#93c5fd"),
    ("IDLE", "#e2e8f0"),
    ("PATROLLING", "#86efac"),
    ("RESPONDING", "#a5b4fc"),
    ("ALERT", "#fb923c"),
];

/// What the run did, gathered from its events.
#[derive(Default)]
struct Run {
    thread: String,
    world: String,
    start: f64,
    end: f64,
    trail: Vec<(f64, f64)>,
    battery: Vec<(f64, f64)>,
    modes: Vec<(f64, String)>,
    activities: Vec<(f64, String)>,
    decisions: Vec<(f64, String, String, String)>,
    approvals: Vec<(f64, String, String, String, String)>,
    incidents: BTreeMap<String, IncidentRecord>,
    tasks: BTreeMap<String, TaskView>,
    distance: f64,
}

fn gather(events: &[Event]) -> Run {
    let mut run = Run {
        start: events.first().map_or(0.0, |e| e.time),
        end: events.last().map_or(0.0, |e| e.time),
        ..Run::default()
    };
    for e in events {
        match &e.kind {
            EventKind::Snapshot { snapshot } => {
                run.thread.clone_from(&snapshot.thread_id);
                run.world.clone_from(&snapshot.world);
                if run.modes.is_empty() {
                    run.modes.push((e.time, describe::word(&snapshot.mode)));
                    run.activities
                        .push((e.time, describe::word(&snapshot.activity)));
                    let p = snapshot.robot.pose;
                    run.trail.push((p.x, p.y));
                    run.battery.push((e.time, snapshot.robot.battery_pct));
                }
            }
            EventKind::Telemetry {
                pose, battery_pct, ..
            } => {
                if let Some(&(x, y)) = run.trail.last() {
                    run.distance += (pose.x - x).hypot(pose.y - y);
                }
                run.trail.push((pose.x, pose.y));
                run.battery.push((e.time, *battery_pct));
            }
            EventKind::Mode { to, .. } => run.modes.push((e.time, describe::word(to))),
            EventKind::Activity { to, .. } => run.activities.push((e.time, describe::word(to))),
            EventKind::Decision {
                decision_type,
                reason,
                brain,
                ..
            } => run.decisions.push((
                e.time,
                describe::word(decision_type),
                describe::word(brain),
                reason.clone(),
            )),
            EventKind::Approval {
                approval_id,
                status,
                op,
                reason,
                ..
            } => {
                run.approvals.push((
                    e.time,
                    approval_id.clone(),
                    describe::word(status),
                    describe::op(op),
                    reason.clone(),
                ));
            }
            EventKind::Alert { incident } => {
                run.incidents
                    .insert(incident.id.clone(), (**incident).clone());
            }
            EventKind::Task { task, .. } => {
                run.tasks.insert(task.id.clone(), task.clone());
            }
            _ => {}
        }
    }
    run
}

/// Escapes text for HTML.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The map's walls as one SVG path of horizontal runs of `#` cells, in metres.
fn walls_path(m: &MapView) -> String {
    let cell = m.resolution;
    let mut d = String::new();
    for (row, cells) in m.rows.iter().enumerate() {
        let mut col = 0;
        let chars: Vec<char> = cells.chars().collect();
        while col < chars.len() {
            if chars[col] == '#' {
                let from = col;
                while col < chars.len() && chars[col] == '#' {
                    col += 1;
                }
                let _ = write!(
                    d,
                    "M{:.2} {:.2}h{:.2}v{cell:.2}h-{:.2}z",
                    from as f64 * cell,
                    row as f64 * cell,
                    (col - from) as f64 * cell,
                    (col - from) as f64 * cell
                );
            } else {
                col += 1;
            }
        }
    }
    d
}

/// The map with the trajectory, as SVG (in metres, scaled by the viewBox).
fn map_svg(run: &Run, map: Option<&MapView>) -> String {
    let (width, height) = map.map_or_else(
        || {
            let max_x = run.trail.iter().map(|p| p.0).fold(1.0, f64::max);
            let max_y = run.trail.iter().map(|p| p.1).fold(1.0, f64::max);
            (max_x + 1.0, max_y + 1.0)
        },
        |m| {
            (
                m.width as f64 * m.resolution,
                m.height as f64 * m.resolution,
            )
        },
    );
    let px_h = MAP_WIDTH * height / width;
    let mut s = format!(
        "<svg id=\"map\" viewBox=\"0 0 {width:.2} {height:.2}\" width=\"{MAP_WIDTH:.0}\" height=\"{px_h:.0}\" xmlns=\"http://www.w3.org/2000/svg\"><rect width=\"{width:.2}\" height=\"{height:.2}\" fill=\"#f8fafc\"/>"
    );
    if let Some(m) = map {
        let d = walls_path(m);
        let _ = write!(s, "<path d=\"{d}\" fill=\"#334155\"/>");
        for z in &m.zones {
            let _ = write!(
                s,
                "<rect x=\"{:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{:.2}\" fill=\"none\" stroke=\"{}\" stroke-width=\"0.04\"/><text x=\"{:.2}\" y=\"{:.2}\" font-size=\"0.35\" fill=\"#475569\">{}</text>",
                z.rect.x0,
                z.rect.y0,
                z.rect.x1 - z.rect.x0,
                z.rect.y1 - z.rect.y0,
                if z.restricted { "#ea580c" } else { "#94a3b8" },
                z.rect.x0 + 0.3,
                z.rect.y0 + 0.6,
                esc(&z.name.replace('_', " "))
            );
        }
        for i in run.incidents.values() {
            if let Some(z) = m.zones.iter().find(|z| z.name == i.zone) {
                let _ = write!(
                    s,
                    "<circle class=\"incident\" cx=\"{:.2}\" cy=\"{:.2}\" r=\"0.6\" fill=\"#f97316\" fill-opacity=\"0.4\"><title>{} {}</title></circle>",
                    f64::midpoint(z.rect.x0, z.rect.x1),
                    f64::midpoint(z.rect.y0, z.rect.y1),
                    esc(&i.id),
                    esc(&i.kinds.join(", "))
                );
            }
        }
    }
    if !run.trail.is_empty() {
        let points: Vec<String> = run
            .trail
            .iter()
            .map(|(x, y)| format!("{x:.2},{y:.2}"))
            .collect();
        let _ = write!(
            s,
            "<polyline id=\"trajectory\" points=\"{}\" fill=\"none\" stroke=\"#2563eb\" stroke-width=\"0.08\" stroke-linejoin=\"round\"/>",
            points.join(" ")
        );
        let (sx, sy) = run.trail[0];
        let (ex, ey) = run.trail[run.trail.len() - 1];
        let _ = write!(
            s,
            "<circle cx=\"{sx:.2}\" cy=\"{sy:.2}\" r=\"0.2\" fill=\"#16a34a\"><title>start</title></circle><circle cx=\"{ex:.2}\" cy=\"{ey:.2}\" r=\"0.2\" fill=\"#dc2626\"><title>end</title></circle>"
        );
    }
    s.push_str("</svg>");
    s
}

/// x of `t` on a chart.
fn x_of(run: &Run, t: f64) -> f64 {
    let span = (run.end - run.start).max(1e-9);
    (t - run.start) / span * CHART_WIDTH
}

/// The battery over time.
fn battery_svg(run: &Run) -> String {
    let points: Vec<String> = run
        .battery
        .iter()
        .map(|(t, pct)| {
            format!(
                "{:.1},{:.1}",
                x_of(run, *t),
                CHART_HEIGHT - pct / 100.0 * CHART_HEIGHT
            )
        })
        .collect();
    format!(
        "<svg id=\"battery\" width=\"{CHART_WIDTH:.0}\" height=\"{CHART_HEIGHT:.0}\" xmlns=\"http://www.w3.org/2000/svg\"><rect width=\"100%\" height=\"100%\" fill=\"#f8fafc\"/><polyline points=\"{}\" fill=\"none\" stroke=\"#16a34a\" stroke-width=\"2\"/><text x=\"3\" y=\"11\" font-size=\"10\" fill=\"#64748b\">100%</text><text x=\"3\" y=\"{:.0}\" font-size=\"10\" fill=\"#64748b\">0%</text></svg>",
        points.join(" "),
        CHART_HEIGHT - 3.0
    )
}

/// Bands of a state over time (mode or activity).
fn band_svg(run: &Run, id: &str, states: &[(f64, String)]) -> String {
    let mut s = format!(
        "<svg id=\"{id}\" width=\"{CHART_WIDTH:.0}\" height=\"22\" xmlns=\"http://www.w3.org/2000/svg\">"
    );
    for (i, (t, state)) in states.iter().enumerate() {
        let until = states.get(i + 1).map_or(run.end, |(t, _)| *t);
        let colour = BAND_COLOURS
            .iter()
            .find(|(k, _)| k == state)
            .map_or("#cbd5e1", |(_, c)| c);
        let (x0, x1) = (x_of(run, *t), x_of(run, until));
        let _ = write!(
            s,
            "<rect x=\"{x0:.1}\" y=\"0\" width=\"{:.1}\" height=\"22\" fill=\"{colour}\"><title>{} from {t:.1} s</title></rect>",
            (x1 - x0).max(0.5),
            esc(state)
        );
        if x1 - x0 > 40.0 {
            let _ = write!(
                s,
                "<text x=\"{:.1}\" y=\"15\" font-size=\"11\">{}</text>",
                x0 + 3.0,
                esc(state)
            );
        }
    }
    s.push_str("</svg>");
    s
}

fn table(id: &str, head: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = format!("<table id=\"{id}\"><tr>");
    for h in head {
        let _ = write!(s, "<th>{h}</th>");
    }
    s.push_str("</tr>");
    for row in rows {
        s.push_str("<tr>");
        for cell in row {
            let _ = write!(s, "<td>{}</td>", esc(cell));
        }
        s.push_str("</tr>");
    }
    if rows.is_empty() {
        let _ = write!(
            s,
            "<tr><td colspan=\"{}\" class=\"muted\">none</td></tr>",
            head.len()
        );
    }
    s.push_str("</table>");
    s
}

/// How many decisions each brain made ("3 by llm, 2 by rules"), or "none".
fn brains_summary(run: &Run) -> String {
    let mut by_brain: BTreeMap<&str, usize> = BTreeMap::new();
    for d in &run.decisions {
        *by_brain.entry(d.2.as_str()).or_default() += 1;
    }
    let brains: Vec<String> = by_brain
        .iter()
        .map(|(b, n)| format!("{n} by {b}"))
        .collect();
    if brains.is_empty() {
        "none".into()
    } else {
        brains.join(", ")
    }
}

/// The note shown above the map when the run's world could not be loaded.
fn map_note(run: &Run, map: Option<&MapView>) -> String {
    if map.is_some() {
        String::new()
    } else {
        format!(
            "<p class=\"muted\">The world <code>{}</code> could not be loaded: the trajectory is drawn without walls (give it with <code>--world</code>).</p>",
            esc(&run.world)
        )
    }
}

/// The colour legend of the mode and activity bands.
fn legend() -> String {
    BAND_COLOURS.iter().fold(String::new(), |mut out, (k, c)| {
        let _ = write!(out, "<span style=\"background:{c}\">{k}</span>");
        out
    })
}

/// The decisions, one row each.
fn decisions_table(run: &Run) -> String {
    let rows: Vec<Vec<String>> = run
        .decisions
        .iter()
        .map(|(t, ty, brain, reason)| {
            vec![format!("{t:.1}"), ty.clone(), brain.clone(), reason.clone()]
        })
        .collect();
    table(
        "decisions",
        &["time (s)", "decision", "brain", "reason"],
        &rows,
    )
}

/// The approval events, one row each.
fn approvals_table(run: &Run) -> String {
    let rows: Vec<Vec<String>> = run
        .approvals
        .iter()
        .map(|(t, id, status, what, reason)| {
            vec![
                format!("{t:.1}"),
                id.clone(),
                status.clone(),
                what.clone(),
                reason.clone(),
            ]
        })
        .collect();
    table(
        "approvals",
        &["time (s)", "id", "status", "op", "reason"],
        &rows,
    )
}

/// The incidents, one row each, with who acknowledged them.
fn incidents_table(run: &Run) -> String {
    let rows: Vec<Vec<String>> = run
        .incidents
        .values()
        .map(|i| {
            vec![
                i.id.clone(),
                format!("{:.1}", i.time),
                i.zone.clone(),
                i.kinds.join(", "),
                i.description.clone(),
                i.acknowledged_by
                    .clone()
                    .unwrap_or_else(|| "not acknowledged".into()),
            ]
        })
        .collect();
    table(
        "incidents",
        &[
            "id",
            "time (s)",
            "zone",
            "what",
            "description",
            "acknowledged by",
        ],
        &rows,
    )
}

/// The tasks and how they ended, one row each.
fn tasks_table(run: &Run) -> String {
    let rows: Vec<Vec<String>> = run
        .tasks
        .values()
        .map(|t| {
            vec![
                t.id.clone(),
                t.title.clone(),
                describe::word(&t.status),
                format!("{}/{}", t.step, t.steps),
            ]
        })
        .collect();
    table("tasks", &["task", "what", "ended", "steps"], &rows)
}

/// The report for `events`, with `map` when the run's world is known.
pub fn render(events: &[Event], map: Option<&MapView>, source: &str) -> String {
    let run = gather(events);
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>robobrain run {thread}</title>
<style>
body {{ font: 14px system-ui, sans-serif; color: #0f172a; margin: 24px; max-width: 1100px; }}
h1 {{ font-size: 20px; }} h2 {{ font-size: 15px; margin-top: 28px; color: #334155; }}
table {{ border-collapse: collapse; width: 100%; font-size: 13px; }}
th, td {{ text-align: left; padding: 3px 8px; border-bottom: 1px solid #e2e8f0; vertical-align: top; }}
th {{ background: #f1f5f9; }} .muted {{ color: #64748b; }} svg {{ display: block; margin: 6px 0; }}
.legend span {{ display: inline-block; padding: 0 6px; margin-right: 4px; border-radius: 3px; }}
</style></head><body>
<h1>robobrain run <code>{thread}</code></h1>
<p>World <b>{world}</b> · sim time {start:.1}–{end:.1} s · {n} events · {distance:.1} m driven · {ndec} decisions ({brains}) · {napp} approval events · {ninc} incidents · from <code>{source}</code></p>
<h2>Map and trajectory</h2>
{map_note}{map_svg}
<p class="muted">Green: start · red: end · orange: incidents.</p>
<h2>Battery</h2>
{battery}
<h2>Mode</h2>
{modes}
<h2>Activity</h2>
{activities}
<p class="legend">{legend}</p>
<h2>Tasks</h2>
{tasks}
<h2>Incidents</h2>
{incidents}
<h2>Approvals</h2>
{approvals}
<h2>Decisions</h2>
{decisions}
</body></html>
"#,
        thread = esc(&run.thread),
        world = esc(&run.world),
        start = run.start,
        end = run.end,
        n = events.len(),
        distance = run.distance,
        ndec = run.decisions.len(),
        brains = brains_summary(&run),
        napp = run.approvals.len(),
        ninc = run.incidents.len(),
        source = esc(source),
        map_note = map_note(&run, map),
        map_svg = map_svg(&run, map),
        battery = battery_svg(&run),
        modes = band_svg(&run, "modes", &run.modes),
        activities = band_svg(&run, "activities", &run.activities),
        legend = legend(),
        tasks = tasks_table(&run),
        incidents = incidents_table(&run),
        approvals = approvals_table(&run),
        decisions = decisions_table(&run),
    )
}

#[cfg(test)]
mod tests {
    use robobrain_core::config::Config;
    use robobrain_core::engine::Engine;
    use robobrain_core::protocol::{Command, Origin};
    use robobrain_core::world::World;

    use super::*;

    #[test]
    fn a_run_becomes_a_page_with_its_trajectory_decisions_and_tasks() {
        let world = World::builtin("apartment").unwrap();
        let config = Config {
            thread_id: Some("report".into()),
            ..Config::default()
        };
        let mut engine = Engine::simulated(&config, world.clone()).unwrap();
        engine.submit(
            Command::Say {
                text: "去厨房".into(),
            },
            Origin::console(),
        );
        let mut events = Vec::new();
        while engine.time() < 60.0 {
            engine.tick(&mut events);
        }
        let html = render(&events, Some(&MapView::of(&world)), "test");
        assert!(html.starts_with("<!doctype html>"));
        let trail = html.split("id=\"trajectory\" points=\"").nth(1).unwrap();
        let points = trail.split('"').next().unwrap().split(' ').count();
        assert!(points > 10, "a trajectory of {points} points");
        assert!(html.contains("<td>FINISH</td>"));
        assert!(html.contains("go to kitchen</td><td>succeeded"));
        assert!(
            !html.contains("<script"),
            "no script: the file stands alone"
        );
        let without = render(&events, None, "test");
        assert!(without.contains("could not be loaded"));
    }
}
