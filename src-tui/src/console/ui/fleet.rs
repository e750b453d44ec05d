//! The fleet view: a header, every robot in a table (connection, mode,
//! activity, battery, task, alerts, approvals), the approval queue across
//! the fleet, the last notice and the keys. An opened robot is drawn by
//! today's single-robot console instead.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use robobrain_core::fleet::{FleetApproval, RobotEntry};
use robobrain_core::protocol::describe;

use super::super::fleet::{FleetApp, Pane};
use super::Theme;

/// A bordered pane titled `name`, marked `(keys)` while it has the keyboard.
fn pane(name: &str, keys: bool) -> Block<'static> {
    let title = if keys {
        format!(" {name} (keys) ")
    } else {
        format!(" {name} ")
    };
    Block::default().borders(Borders::ALL).title(title)
}

/// Paints the fleet console.
pub fn draw(fleet: &FleetApp, frame: &mut Frame) {
    if let Some((_, app)) = &fleet.robot {
        super::draw(app, frame);
        return;
    }
    let theme = Theme::new(fleet.color);
    let approvals = fleet.approvals();
    let [header, robots, queue, notice, hints] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(4),
        Constraint::Length(u16::try_from(approvals.len().clamp(1, 8)).unwrap_or(8) + 2),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(frame.area());

    frame.render_widget(
        Paragraph::new(header_line(fleet, approvals.len(), theme)),
        header,
    );

    frame.render_widget(
        Paragraph::new(robot_lines(fleet, theme)).block(pane("Robots", fleet.pane == Pane::Robots)),
        robots,
    );

    frame.render_widget(
        Paragraph::new(approval_lines(fleet, &approvals, theme)).block(pane(
            "Approvals across the fleet",
            fleet.pane == Pane::Approvals,
        )),
        queue,
    );

    frame.render_widget(Paragraph::new(notice_line(fleet, theme)), notice);
    frame.render_widget(
        Paragraph::new(Line::styled(
            " ↑↓ select · Enter open robot (Ctrl-F back) · Tab robots/approvals · a/F3 approve · r/F8 reject · F12 E-stop robot · E E-stop all · q quit",
            theme.dim(),
        )),
        hints,
    );
}

/// The header: the broker, whether it is up, robots online and approvals waiting.
fn header_line(fleet: &FleetApp, waiting: usize, theme: Theme) -> Line<'static> {
    let online = fleet.view.robots().filter(|r| r.online()).count();
    let link = if fleet.connected {
        Span::styled("broker up", theme.good())
    } else {
        Span::styled("broker DOWN", theme.bad())
    };
    Line::from(vec![
        Span::styled(
            " robobrain fleet ",
            theme.bold().add_modifier(Modifier::REVERSED),
        ),
        Span::raw(format!(" {} · ", fleet.broker)),
        link,
        Span::raw(format!(
            " · {online}/{} robots online · {waiting} approval(s) waiting",
            fleet.view.len(),
        )),
    ])
}

/// The robot table: a heading, then one row per robot (or a note that none
/// was heard yet).
fn robot_lines(fleet: &FleetApp, theme: Theme) -> Vec<Line<'static>> {
    let mut lines = vec![Line::styled(
        format!(
            "  {:<14} {:<16} {:<6} {:<11} {:>5}  {:<28} {:>6} {:>9}",
            "ROBOT", "LINK", "MODE", "ACTIVITY", "BATT", "TASK", "ALERTS", "APPROVALS"
        ),
        theme.dim(),
    )];
    for (i, robot) in fleet.view.robots().enumerate() {
        lines.push(robot_row(fleet, i, robot, theme));
    }
    if fleet.view.is_empty() {
        lines.push(Line::styled("  no robot heard yet", theme.dim()));
    }
    lines
}

/// Row `i` of the robot table: offline or E-stopped robots in red, the
/// selected one reversed while the table has the keys.
fn robot_row(fleet: &FleetApp, i: usize, robot: &RobotEntry, theme: Theme) -> Line<'static> {
    let s = robot.snapshot.as_ref();
    let task = s.and_then(|s| s.tasks.first()).map_or_else(
        || "-".to_string(),
        |t| format!("{} ({})", t.title, describe::word(&t.status)),
    );
    let mode = s.map_or("-", |s| if s.estop { "ESTOP" } else { s.mode.as_str() });
    let row = format!(
        "{} {:<14} {:<16} {:<6} {:<11} {:>4.0}%  {:<28} {:>6} {:>9}",
        if i == fleet.selected { ">" } else { " " },
        robot.id,
        robot.connection_label(),
        mode,
        s.map_or("-", |s| s.activity.as_str()),
        s.map_or(0.0, |s| s.robot.battery_pct),
        truncate(&task, 28),
        s.map_or(0, |s| s.alerts.len()),
        s.map_or(0, |s| s.approvals.len()),
    );
    let mut style = if robot.online() {
        ratatui::style::Style::default()
    } else {
        theme.bad()
    };
    if s.is_some_and(|s| s.estop) {
        style = theme.bad();
    }
    if i == fleet.selected && fleet.pane == Pane::Robots {
        style = style.add_modifier(Modifier::REVERSED);
    }
    Line::styled(row, style)
}

/// The approval queue across the fleet, one line per approval (or a note
/// that none is waiting).
fn approval_lines(
    fleet: &FleetApp,
    approvals: &[FleetApproval],
    theme: Theme,
) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    for (i, a) in approvals.iter().enumerate() {
        let what = describe::op(&a.approval.op);
        let mut style = theme.warn();
        if i == fleet.approval && fleet.pane == Pane::Approvals {
            style = style.add_modifier(Modifier::REVERSED);
        }
        lines.push(Line::styled(
            format!(
                "{} {:<12} {:<8} {}  — {} (risk {})",
                if i == fleet.approval { ">" } else { " " },
                a.robot,
                a.approval.approval_id,
                truncate(&what, 40),
                a.approval.reason,
                a.approval.risk
            ),
            style,
        ));
    }
    if lines.is_empty() {
        lines.push(Line::styled("  no approval waiting", theme.dim()));
    }
    lines
}

/// The notice line: the E-stop-all question, else the last notice.
fn notice_line(fleet: &FleetApp, theme: Theme) -> Line<'static> {
    if fleet.confirm_estop_all {
        Line::styled(
            " E-STOP EVERY ROBOT? y / Enter: yes, any other key: no",
            theme.bad(),
        )
    } else if let Some((level, text)) = &fleet.notice {
        Line::styled(format!(" {text}"), theme.level(*level))
    } else {
        Line::raw("")
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}
