//! What is drawn over the panels: the approval prompt (what will happen,
//! approve / edit / reject, the queue of pending approvals), the help
//! screen, and the question before quitting a running task.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::Theme;
use crate::console::app::{App, Overlay, Stage};
use crate::console::forecast::NoForecast;
use crate::console::keys::BINDINGS;
use crate::console::line::LineEditor;
use crate::console::slash::{COMMANDS, FAULTS};
use robobrain_core::protocol::ApprovalView;
use robobrain_core::protocol::describe;

/// Draws whichever overlay is open.
pub(super) fn draw(app: &App, frame: &mut Frame, area: Rect, theme: Theme) {
    match app.overlay {
        Overlay::Help => help(frame, area, theme),
        Overlay::QuitConfirm => quit(frame, area, theme),
        Overlay::None if app.prompt_open() => approval(app, frame, area, theme),
        Overlay::None => {}
    }
}

/// A centred box of at most `w` × `h` inside `area`, cleared.
fn popup(frame: &mut Frame, area: Rect, w: u16, h: u16, title: String, theme: Theme) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    let rect = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    frame.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(Span::styled(title, theme.bold()));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    inner
}

/// Draws the approval card: what will happen, where it goes, the queue of
/// pending approvals and the keys (or field) that answer it.
fn approval(app: &App, frame: &mut Frame, area: Rect, theme: Theme) {
    let Some(a) = app.selected_approval() else {
        return;
    };
    let n = app.snap.approvals.len();
    let index = app
        .snap
        .approvals
        .iter()
        .position(|x| x.approval_id == a.approval_id)
        .unwrap_or(0);
    let title = approval_title(app, a, index, n);
    let width = area.width.min(78);
    let inner_width = usize::from(width.saturating_sub(2));
    let mut lines = proposal_lines(a, theme);
    lines.extend(forecast_lines(app, a, theme));
    if n > 1 {
        lines.push(queue_line(app, index, theme));
    }
    lines.push(Line::raw(""));
    let cursor = stage_lines(app, a, &mut lines, inner_width, theme);
    let rows: usize = lines
        .iter()
        .map(|l| l.width().div_ceil(inner_width.max(1)).max(1))
        .sum();
    let inner = popup(frame, area, width, rows as u16 + 2, title, theme);
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
    if let Some((x, y)) = cursor
        && (y as u16) < inner.height
    {
        frame.set_cursor_position((inner.x + x as u16, inner.y + y as u16));
    }
}

/// The card's title: which approval of how many, its task, and whether the
/// card has the keys.
fn approval_title(app: &App, a: &ApprovalView, index: usize, n: usize) -> String {
    format!(
        " Approval {} of {n} · {} for task {}{} ",
        index + 1,
        a.approval_id,
        a.task_id,
        if app.prompt.focused {
            " · keys here"
        } else {
            ""
        }
    )
}

/// The proposal itself: the op and its arguments, the risk, why, and who asked.
fn proposal_lines(a: &ApprovalView, theme: Theme) -> Vec<Line<'static>> {
    let args = match &a.op {
        robobrain_core::protocol::Op::Dispatch { args, .. } => args.to_string(),
        _ => String::new(),
    };
    vec![
        Line::from(vec![
            Span::styled(describe::op(&a.op), theme.bold()),
            Span::raw(format!(" {args}  ")),
            Span::styled(format!("risk {}", a.risk), theme.warn()),
        ]),
        Line::from(vec![
            Span::styled("why: ", theme.dim()),
            Span::raw(a.reason.clone()),
        ]),
        Line::from(vec![
            Span::styled("asked by: ", theme.dim()),
            Span::raw(a.requested_by.as_ref().map_or_else(
                || "no one: the robot's own task".to_string(),
                ToString::to_string,
            )),
        ]),
    ]
}

/// Where a move would go and what it costs, or why that is not known.
fn forecast_lines(app: &App, a: &ApprovalView, theme: Theme) -> Vec<Line<'static>> {
    match app.forecasts.get(&a.approval_id) {
        Some(Ok(f)) => vec![
            Line::from(vec![
                Span::styled("route: ", theme.dim()),
                Span::raw(format!(
                    "{}  ({:.1} m, ETA {:.0} s)",
                    f.zones.join(" → "),
                    f.distance_m,
                    f.eta_s
                )),
            ]),
            Line::from(vec![
                Span::styled("battery: ", theme.dim()),
                Span::raw(format!(
                    "{:.1} % now → {:.1} % on arrival",
                    app.snap.robot.battery_pct, f.battery_after
                )),
            ]),
        ],
        Some(Err(NoForecast::NoPath(why))) => vec![Line::styled(
            format!("route: none from here ({why})"),
            theme.bad(),
        )],
        Some(Err(NoForecast::UnknownPlace(p))) => vec![Line::styled(
            format!("route: unknown place {p}"),
            theme.bad(),
        )],
        Some(Err(NoForecast::NotAMove)) | None => {
            vec![Line::styled("route: the base does not move", theme.dim())]
        }
    }
}

/// The pending approvals in a row, the shown one (`index`) highlighted.
fn queue_line(app: &App, index: usize, theme: Theme) -> Line<'static> {
    let queue: Vec<Span> = app
        .snap
        .approvals
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let text = format!(" {} {} ", q.approval_id, describe::op(&q.op));
            if i == index {
                Span::styled(text, theme.bold().add_modifier(Modifier::REVERSED))
            } else {
                Span::raw(text)
            }
        })
        .collect();
    let mut line = vec![Span::styled("queue:", theme.dim())];
    line.extend(queue);
    Line::from(line)
}

/// Adds what the prompt's stage shows (the keys, or a field being edited);
/// returns where the cursor goes (column, line) if a field is open.
fn stage_lines(
    app: &App,
    a: &ApprovalView,
    lines: &mut Vec<Line<'static>>,
    inner_width: usize,
    theme: Theme,
) -> Option<(usize, usize)> {
    let mut cursor = None;
    match &app.prompt.stage {
        // Typing never answers the card: F2 gives it the keys first.
        Stage::View if !app.prompt.focused => {
            let id = &a.approval_id;
            lines.push(Line::from(vec![
                Span::styled("[F2]", theme.accent().add_modifier(Modifier::BOLD)),
                Span::raw(" answer this card   "),
                Span::styled(
                    format!("or type /approve {id} · /reject {id} · /edit {id}"),
                    theme.dim(),
                ),
            ]));
        }
        Stage::View => lines.push(Line::from(vec![
            Span::styled("[F3]", theme.good().add_modifier(Modifier::BOLD)),
            Span::raw(" approve   "),
            Span::styled("[F4]", theme.warn().add_modifier(Modifier::BOLD)),
            Span::raw(" edit args   "),
            Span::styled("[F8]", theme.bad()),
            Span::raw(" reject   "),
            Span::styled("[Esc]", theme.dim()),
            Span::raw(" back to typing"),
        ])),
        Stage::Edit {
            editor,
            error,
            sent,
        } => {
            cursor = Some(field(
                lines,
                "args (JSON): ",
                editor,
                inner_width,
                theme.warn(),
            ));
            if let Some(e) = error {
                lines.push(Line::styled(format!("refused: {e}"), theme.bad()));
            } else if *sent {
                lines.push(Line::styled(
                    "sent; the guardrails are checking…",
                    theme.dim(),
                ));
            }
            lines.push(Line::styled("Enter send · Esc back", theme.dim()));
        }
        Stage::Reject { editor } => {
            cursor = Some(field(lines, "reason: ", editor, inner_width, theme.bad()));
            lines.push(Line::styled("Enter reject · Esc back", theme.dim()));
        }
        Stage::Sent(what) => lines.push(Line::styled(
            format!("{what}; waiting for the kernel…"),
            theme.dim(),
        )),
    }
    cursor
}

/// Adds a labelled text field to `lines`; returns where its cursor goes
/// (column, line) inside the prompt.
fn field(
    lines: &mut Vec<Line<'static>>,
    label: &'static str,
    editor: &LineEditor,
    width: usize,
    style: Style,
) -> (usize, usize) {
    let (shown, col) = editor.view(width.saturating_sub(label.len() + 1));
    lines.push(Line::from(vec![
        Span::styled(label, style),
        Span::raw(shown),
    ]));
    (label.len() + col, lines.len() - 1)
}

fn help(frame: &mut Frame, area: Rect, theme: Theme) {
    let wide = area.width >= 120;
    let inner = popup(
        frame,
        area,
        if wide { 118 } else { 78 },
        (BINDINGS.len() + 3) as u16,
        " Keys — any key closes ".to_string(),
        theme,
    );
    let binding_lines: Vec<Line> = BINDINGS
        .iter()
        .map(|(keys, place, what)| {
            Line::from(vec![
                Span::styled(format!("{keys:<16}"), theme.bold()),
                Span::styled(format!("{place:<9}"), theme.dim()),
                Span::raw(*what),
            ])
        })
        .collect();
    let mut command_lines: Vec<Line> = COMMANDS
        .iter()
        .map(|(usage, what)| {
            Line::from(vec![
                Span::styled(format!("{usage:<16}"), theme.bold()),
                Span::raw(*what),
            ])
        })
        .collect();
    command_lines.push(Line::styled(format!("faults: {FAULTS}"), theme.dim()));
    command_lines.push(Line::raw(""));
    command_lines.push(Line::styled(
        "Anything else is said to the robot, in Chinese or English.",
        theme.dim(),
    ));
    command_lines.push(Line::raw(""));
    command_lines.push(Line::styled(robobrain_core::intents::CREDITS, theme.dim()));
    if wide {
        let [l, r] = Layout::horizontal([Constraint::Length(66), Constraint::Min(0)]).areas(inner);
        frame.render_widget(Paragraph::new(binding_lines), l);
        frame.render_widget(Paragraph::new(command_lines).wrap(Wrap { trim: true }), r);
    } else {
        let mut all = binding_lines;
        all.extend(command_lines);
        frame.render_widget(Paragraph::new(all), inner);
    }
}

fn quit(frame: &mut Frame, area: Rect, theme: Theme) {
    let inner = popup(frame, area, 52, 4, " Quit? ".to_string(), theme);
    frame.render_widget(
        Paragraph::new(vec![
            Line::raw("A task is under way; quitting stops the robot."),
            Line::from(vec![
                Span::styled("[y]", theme.bad()),
                Span::raw(" quit   "),
                Span::styled("[n]", theme.bold()),
                Span::raw(" stay"),
            ]),
        ]),
        inner,
    );
}
