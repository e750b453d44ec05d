//! The fleet view: a header, every robot in a table (connection, mode,
//! activity, battery, task, alerts, approvals), the approval queue across
//! the fleet, the last notice and the keys. An opened robot is drawn by
//! today's single-robot console instead.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use robobrain_core::protocol::describe;

use super::super::fleet::{FleetApp, Pane};
use super::Theme;

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

    let online = fleet.view.robots().filter(|r| r.online()).count();
    let link = if fleet.connected {
        Span::styled("broker up", theme.good())
    } else {
        Span::styled("broker DOWN", theme.bad())
    };
    frame.render_widget(
        Paragraph::new(Line::from(vec![
            Span::styled(
                " robobrain fleet ",
                theme.bold().add_modifier(Modifier::REVERSED),
            ),
            Span::raw(format!(" {} · ", fleet.broker)),
            link,
            Span::raw(format!(
                " · {online}/{} robots online · {} approval(s) waiting",
                fleet.view.len(),
                approvals.len()
            )),
        ])),
        header,
    );

    let mut lines = vec![Line::styled(
        format!(
            "  {:<14} {:<16} {:<6} {:<11} {:>5}  {:<28} {:>6} {:>9}",
            "ROBOT", "LINK", "MODE", "ACTIVITY", "BATT", "TASK", "ALERTS", "APPROVALS"
        ),
        theme.dim(),
    )];
    for (i, robot) in fleet.view.robots().enumerate() {
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
        lines.push(Line::styled(row, style));
    }
    if fleet.view.is_empty() {
        lines.push(Line::styled("  no robot heard yet", theme.dim()));
    }
    let title = if fleet.pane == Pane::Robots {
        " Robots (keys) "
    } else {
        " Robots "
    };
    frame.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)),
        robots,
    );

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
    let title = if fleet.pane == Pane::Approvals {
        " Approvals across the fleet (keys) "
    } else {
        " Approvals across the fleet "
    };
    frame.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)),
        queue,
    );

    let notice_line = if fleet.confirm_estop_all {
        Line::styled(
            " E-STOP EVERY ROBOT? y / Enter: yes, any other key: no",
            theme.bad(),
        )
    } else if let Some((level, text)) = &fleet.notice {
        Line::styled(format!(" {text}"), theme.level(*level))
    } else {
        Line::raw("")
    };
    frame.render_widget(Paragraph::new(notice_line), notice);
    frame.render_widget(
        Paragraph::new(Line::styled(
            " ↑↓ select · Enter open robot (Ctrl-F back) · Tab robots/approvals · a/F3 approve · r/F8 reject · F12 E-stop robot · E E-stop all · q quit",
            theme.dim(),
        )),
        hints,
    );
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}
