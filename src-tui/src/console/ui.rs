//! Drawing: one function, [`draw`], paints a frame from `&App` and never
//! changes it. The layout adapts to the terminal: three columns from 140
//! columns up, two below; panels shrink (and the smallest vanish) rather
//! than overflow, so any size from 80×24 up draws without a panic.
//!
//! - `map.rs`: the world map (walls, zones, passages, path, robot, incidents).
//! - `overlay.rs`: the approval prompt, the help screen and the quit question.
//! - `fleet.rs`: the fleet view (`robobrain fleet`).

pub mod fleet;
mod map;
mod overlay;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use robobrain_core::protocol::describe;
use robobrain_core::protocol::run::MemoryMode;
use robobrain_core::protocol::{
    ApprovalStatus, BrainKind, DecisionType, Mode, Role, SkillStatus, SpeechTrack, TaskStatus,
    Verdict,
};

use super::app::{App, Focus, Level, Step, Timed, status_words};

/// Colours that read on dark and light terminals alike (named ANSI colours,
/// no backgrounds), or none at all under `NO_COLOR`.
#[derive(Debug, Clone, Copy)]
pub struct Theme {
    color: bool,
}

impl Theme {
    /// `color` false gives bold/reverse only.
    pub fn new(color: bool) -> Self {
        Self { color }
    }

    fn fg(self, c: Color) -> Style {
        if self.color {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    }

    fn good(self) -> Style {
        self.fg(Color::Green)
    }
    fn warn(self) -> Style {
        self.fg(Color::Yellow)
    }
    fn bad(self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }
    fn accent(self) -> Style {
        self.fg(Color::Cyan)
    }
    fn dim(self) -> Style {
        if self.color {
            Style::default().add_modifier(Modifier::DIM)
        } else {
            Style::default()
        }
    }
    // A method like the others, so call sites read alike; bold survives NO_COLOR.
    #[allow(clippy::unused_self)]
    fn bold(self) -> Style {
        Style::default().add_modifier(Modifier::BOLD)
    }
    fn level(self, level: Level) -> Style {
        match level {
            Level::Info => Style::default(),
            Level::Warn => self.warn(),
            Level::Error => self.bad(),
        }
    }
}

/// Paints the whole console.
pub fn draw(app: &App, frame: &mut Frame) {
    let theme = Theme::new(app.color);
    let area = frame.area();
    let [header, body, input, hints] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_header(app, frame, header, theme);
    draw_body(app, frame, body, theme);
    draw_input(app, frame, input, theme);
    draw_hints(app, frame, hints, theme);
    overlay::draw(app, frame, area, theme);
}

fn draw_header(app: &App, frame: &mut Frame, area: Rect, theme: Theme) {
    let s = app.snapshot();
    let brain = match (s.brain, &s.run) {
        (Some(BrainKind::Model), Some(run)) => run.brain_label(),
        (Some(BrainKind::Rule) | None, _) => "rule brain (offline)".into(),
        (Some(BrainKind::Model), None) => "model brain".into(),
        (Some(BrainKind::Fallback), _) => "rule brain (model fallback)".into(),
        (Some(BrainKind::Scripted), _) => "scripted brain".into(),
        (Some(BrainKind::Kernel), _) => "kernel".into(),
    };
    let mut spans = vec![Span::styled(
        " robobrain ",
        theme.bold().add_modifier(Modifier::REVERSED),
    )];
    if let Some((url, role)) = &app.remote {
        let url = url.split('?').next().unwrap_or(url);
        let role = match role {
            Role::Operator => "operator",
            Role::Viewer => "viewer: watching only",
        };
        spans.push(Span::styled(format!(" ⇄ {url} ({role})"), theme.warn()));
    }
    spans.push(Span::raw(format!(
        " {} · {brain} · t {:.1} s ",
        s.world, s.time
    )));
    if s.estop || app.estop_sent {
        spans.push(Span::styled(
            " E-STOP ",
            theme.bad().add_modifier(Modifier::REVERSED),
        ));
    }
    if !s.approvals.is_empty() {
        spans.push(Span::styled(
            format!(" {} approval(s) waiting · F2 ", s.approvals.len()),
            theme.warn().add_modifier(Modifier::REVERSED),
        ));
    }
    spans.push(Span::styled("  ? help", theme.dim()));
    if let Some(run) = &s.run {
        spans.push(Span::styled(
            format!(
                " · memory {} · mcp {}",
                run.memory_label(),
                run.services_label()
            ),
            theme.dim(),
        ));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// Paints one panel of the layout.
type Painter = fn(&App, &mut Frame, Rect, Theme);

/// Stacks panels top to bottom in `area`, each with its height constraint.
fn column(
    app: &App,
    frame: &mut Frame,
    area: Rect,
    theme: Theme,
    panels: &[(Constraint, Painter)],
) {
    let areas = Layout::vertical(panels.iter().map(|(c, _)| *c)).split(area);
    for ((_, paint), rect) in panels.iter().zip(areas.iter()) {
        paint(app, frame, *rect, theme);
    }
}

fn draw_body(app: &App, frame: &mut Frame, area: Rect, theme: Theme) {
    if area.width >= 140 {
        let [left, mid, right] = Layout::horizontal([
            Constraint::Percentage(38),
            Constraint::Percentage(32),
            Constraint::Percentage(30),
        ])
        .areas(area);
        draw_left(app, frame, left, theme);
        column(
            app,
            frame,
            mid,
            theme,
            &[
                (Constraint::Length(8), draw_status),
                (Constraint::Fill(2), draw_tasks),
                (Constraint::Fill(1), draw_running),
                (Constraint::Fill(2), draw_speech),
            ],
        );
        column(
            app,
            frame,
            right,
            theme,
            &[
                (Constraint::Fill(2), draw_tokens),
                (Constraint::Fill(1), draw_devices),
                (Constraint::Fill(1), draw_memory),
                (Constraint::Fill(3), draw_log),
            ],
        );
    } else {
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(52), Constraint::Percentage(48)])
                .areas(area);
        draw_left(app, frame, left, theme);
        column(
            app,
            frame,
            right,
            theme,
            &[
                (Constraint::Length(7), draw_status),
                (Constraint::Min(3), draw_tasks),
                (Constraint::Min(2), draw_running),
                (Constraint::Min(3), draw_speech),
                (Constraint::Min(2), draw_tokens),
                (Constraint::Fill(1), draw_log),
            ],
        );
    }
}

fn draw_left(app: &App, frame: &mut Frame, area: Rect, theme: Theme) {
    let [map_area, timeline] =
        Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(area);
    let block = panel("Map", false, theme);
    let inner = block.inner(map_area);
    frame.render_widget(block, map_area);
    map::draw(app, frame.buffer_mut(), inner, theme);
    draw_timeline(app, frame, timeline, theme);
}

/// A panel: a title on its top rule, highlighted when it has focus.
fn panel(title: &str, focused: bool, theme: Theme) -> Block<'static> {
    let style = if focused {
        theme
            .accent()
            .add_modifier(Modifier::BOLD | Modifier::REVERSED)
    } else {
        theme.bold()
    };
    Block::default()
        .borders(Borders::TOP)
        .border_style(theme.dim())
        .title(Span::styled(format!(" {title} "), style))
}

/// A feed panel: the newest lines at the bottom, long lines wrapped with a
/// hanging indent, scrolled back by the focus's offset (shown in the title).
/// Only the lines that can show are built and wrapped.
fn feed(
    app: &App,
    frame: &mut Frame,
    area: Rect,
    title: &str,
    focus: Focus,
    lines: impl DoubleEndedIterator<Item = Line<'static>>,
    theme: Theme,
) {
    let rows = area.height.saturating_sub(1) as usize;
    let want = app.scroll_of(focus);
    let need = rows.saturating_add(want);
    // Newest first.
    let mut wrapped: Vec<Line> = Vec::new();
    for line in lines.rev() {
        wrapped.extend(wrap_line(&line, usize::from(area.width)).into_iter().rev());
        if wrapped.len() >= need {
            break;
        }
    }
    let back = want.min(wrapped.len().saturating_sub(rows));
    let title = if back > 0 {
        format!("{title} ↑{back}")
    } else {
        title.to_string()
    };
    let shown: Vec<Line> = wrapped.into_iter().skip(back).take(rows).rev().collect();
    frame.render_widget(
        Paragraph::new(shown).block(panel(&title, app.focus == focus, theme)),
        area,
    );
}

/// Splits a line into lines of at most `width` columns (wide characters
/// count two); continuation lines are indented past the time stamp.
fn wrap_line(line: &Line<'static>, width: usize) -> Vec<Line<'static>> {
    use unicode_width::UnicodeWidthChar;
    let indent = if width >= 24 { 7 } else { 0 };
    let width = width.max(1);
    let mut out = Vec::new();
    let mut current: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for span in &line.spans {
        let mut piece = String::new();
        for c in span.content.chars() {
            let w = c.width().unwrap_or(0);
            if used + w > width && used > indent {
                if !piece.is_empty() {
                    current.push(Span::styled(std::mem::take(&mut piece), span.style));
                }
                out.push(Line::from(std::mem::take(&mut current)));
                current.push(Span::raw(" ".repeat(indent)));
                used = indent;
            }
            piece.push(c);
            used += w;
        }
        if !piece.is_empty() {
            current.push(Span::styled(piece, span.style));
        }
    }
    out.push(Line::from(current));
    out
}

fn stamp(time: f64, theme: Theme) -> Span<'static> {
    Span::styled(format!("{time:>6.1} "), theme.dim())
}

fn draw_status(app: &App, frame: &mut Frame, area: Rect, theme: Theme) {
    let s = app.snapshot();
    let mode_style = match s.mode {
        Mode::Safe => theme.bad(),
        Mode::Charge => theme.warn().add_modifier(Modifier::BOLD),
        Mode::Exec => theme.good().add_modifier(Modifier::BOLD),
        Mode::Idle => theme.bold(),
    };
    let mut lines = vec![Line::from(vec![
        Span::raw("mode "),
        Span::styled(s.mode.as_str(), mode_style),
        Span::raw("  activity "),
        Span::styled(
            s.activity.as_str(),
            if s.activity == robobrain_core::protocol::Activity::Alert {
                theme.bad()
            } else {
                theme.bold()
            },
        ),
        Span::raw(format!(
            "  in {}",
            s.robot.zone.as_deref().unwrap_or("(no zone)")
        )),
    ])];
    for (label, why) in [("mode", &app.mode_why), ("activity", &app.activity_why)] {
        if let Some(Timed { time, item }) = why {
            lines.push(Line::from(vec![
                Span::styled(format!("  {label} at {time:.1} s: "), theme.dim()),
                Span::raw(item.clone()),
            ]));
        }
    }
    lines.push(battery_line(app, area.width, theme));
    lines.push(nav_line(app, theme));
    if let Some(f) = &s.last_failure {
        lines.push(Line::from(vec![
            Span::styled("last failure: ", theme.bad()),
            Span::raw(f.clone()),
        ]));
    }
    if s.estop {
        lines.push(Line::styled(
            "E-STOP latched — /reset resets it; /resume then starts",
            theme.bad(),
        ));
    }
    frame.render_widget(
        Paragraph::new(lines).block(panel("Status", false, theme)),
        area,
    );
}

fn battery_line(app: &App, width: u16, theme: Theme) -> Line<'static> {
    let s = app.snapshot();
    let pct = s.robot.battery_pct.clamp(0.0, 100.0);
    let cells = usize::from(width.saturating_sub(40).clamp(5, 20));
    let full = ((pct / 100.0) * cells as f64).round() as usize;
    let style = if pct <= 20.0 {
        theme.bad()
    } else if pct <= 40.0 {
        theme.warn()
    } else {
        theme.good()
    };
    let trend = match app.battery_trend() {
        Some(t) if s.robot.charging => format!(" ▲ charging {t:+.1} %/min"),
        Some(t) if t < -0.05 => format!(" ▼ {t:+.1} %/min"),
        Some(t) if t > 0.05 => format!(" ▲ {t:+.1} %/min"),
        Some(_) => " steady".to_string(),
        None if s.robot.charging => " charging".to_string(),
        None => String::new(),
    };
    Line::from(vec![
        Span::raw("battery "),
        Span::styled("█".repeat(full), style),
        Span::styled("░".repeat(cells - full.min(cells)), theme.dim()),
        Span::styled(format!(" {pct:.1} %"), style),
        Span::raw(trend),
    ])
}

fn nav_line(app: &App, theme: Theme) -> Line<'static> {
    let Some(nav) = &app.nav else {
        return Line::styled("nav: no goal yet", theme.dim());
    };
    let f = &nav.feedback;
    let state = match nav.status {
        SkillStatus::Dispatched | SkillStatus::Feedback => String::new(),
        SkillStatus::Succeeded => " (arrived)".to_string(),
        SkillStatus::Failed => " (failed)".to_string(),
        SkillStatus::Cancelled => " (cancelled)".to_string(),
    };
    Line::from(vec![
        Span::styled(
            format!("{} {}{state}: ", nav.skill, nav.target),
            theme.bold(),
        ),
        Span::raw(format!(
            "{:.1} m left · ETA {:.0} s · {:.0} s taken · {} recoveries",
            f.distance_remaining,
            f.estimated_time_remaining,
            f.navigation_time,
            f.number_of_recoveries
        )),
    ])
}

fn draw_tasks(app: &App, frame: &mut Frame, area: Rect, theme: Theme) {
    let s = app.snapshot();
    let lines = s.tasks.iter().map(|t| {
        let style = match t.status {
            TaskStatus::Running => theme.good().add_modifier(Modifier::BOLD),
            TaskStatus::WaitingHuman | TaskStatus::Paused | TaskStatus::Preempted => theme.warn(),
            TaskStatus::Aborted | TaskStatus::Cancelled => theme.dim(),
            TaskStatus::Succeeded | TaskStatus::Queued => Style::default(),
        };
        let deadline = t
            .deadline
            .map_or_else(String::new, |d| format!(" due {d:.0} s"));
        Line::from(vec![
            Span::styled(format!("{:<4}", t.id), theme.dim()),
            Span::raw(format!("{:<8} ", priority_words(t.priority))),
            Span::styled(format!("{:<15} ", status_words(t.status)), style),
            Span::raw(format!(
                "{} ({}/{}){deadline}",
                t.title,
                (t.step + 1).min(t.steps.max(1)),
                t.steps
            )),
        ])
    });
    feed(app, frame, area, "Tasks", Focus::Tasks, lines, theme);
}

fn priority_words(p: robobrain_core::protocol::Priority) -> &'static str {
    use robobrain_core::protocol::Priority;
    match p {
        Priority::Background => "backgr.",
        Priority::Main => "main",
        Priority::UserInterrupt => "user",
        Priority::Battery => "battery",
        Priority::Safety => "safety",
    }
}

fn draw_running(app: &App, frame: &mut Frame, area: Rect, theme: Theme) {
    let s = app.snapshot();
    let mut lines: Vec<Line> = s
        .running
        .iter()
        .map(|r| {
            Line::from(vec![
                Span::styled(format!("{} ", r.skill), theme.bold()),
                Span::raw(format!(
                    "{} · since {:.1} s · timeout {:.0} s · [{}]",
                    describe::target(&r.args),
                    r.started_at,
                    r.deadline,
                    r.resources.join(",")
                )),
            ])
        })
        .collect();
    if lines.is_empty() {
        lines.push(Line::styled("none", theme.dim()));
    }
    frame.render_widget(
        Paragraph::new(lines).block(panel("Running skills", false, theme)),
        area,
    );
}

fn draw_timeline(app: &App, frame: &mut Frame, area: Rect, theme: Theme) {
    let lines = app.timeline.iter().map(|Timed { time, item }| match item {
        Step::Heard {
            utterance,
            intent,
            local,
        } => Line::from(vec![
            stamp(*time, theme),
            Span::styled("heard ", theme.accent()),
            Span::raw(format!(
                "“{utterance}” → {intent}{}",
                if *local { " (local)" } else { "" }
            )),
        ]),
        Step::Understood { by, intent, passed } => {
            let (who, style) = match by {
                Some(by) => (format!("↳ {by} took {intent}"), theme.accent()),
                None => ("↳ nobody understood it".to_string(), theme.warn()),
            };
            let why = if passed.is_empty() {
                String::new()
            } else {
                format!(" — {}", passed.join("; "))
            };
            Line::from(vec![
                Span::raw("        "),
                Span::styled(who, style),
                Span::styled(why, theme.dim()),
            ])
        }
        Step::Decided {
            task_id,
            iteration,
            decision,
            reason,
            brain,
        } => Line::from(vec![
            stamp(*time, theme),
            Span::styled(format!("{task_id} #{iteration} "), theme.dim()),
            Span::styled(
                decision.as_str().to_string(),
                decision_style(*decision, theme),
            ),
            Span::styled(format!(" [{}] ", brain_words(*brain)), theme.dim()),
            Span::raw(reason.clone()),
        ]),
        Step::Judged {
            op,
            verdict,
            reason,
        } => {
            let (mark, style) = match verdict {
                Verdict::Allowed => ("✓ allowed", theme.good()),
                Verdict::NeedsApproval => ("? needs approval", theme.warn()),
                Verdict::Rejected => ("✗ rejected", theme.bad()),
            };
            Line::from(vec![
                Span::raw("        "),
                Span::styled(mark, style),
                Span::raw(format!(" {op} — {reason}")),
            ])
        }
        Step::Approval { id, status, reason } => {
            let (word, style) = match status {
                ApprovalStatus::Requested => ("requested", theme.warn()),
                ApprovalStatus::Approved => ("approved", theme.good()),
                ApprovalStatus::Edited => ("approved with edits", theme.good()),
                ApprovalStatus::EditRefused => ("edit refused", theme.bad()),
                ApprovalStatus::Rejected => ("rejected", theme.bad()),
            };
            Line::from(vec![
                stamp(*time, theme),
                Span::raw(format!("approval {id} ")),
                Span::styled(word, style),
                Span::raw(format!(" — {reason}")),
            ])
        }
    });
    feed(
        app,
        frame,
        area,
        "ReAct timeline",
        Focus::Timeline,
        lines,
        theme,
    );
}

fn decision_style(d: DecisionType, theme: Theme) -> Style {
    match d {
        DecisionType::Continue => theme.good(),
        DecisionType::Finish => theme.good().add_modifier(Modifier::BOLD),
        DecisionType::Replan | DecisionType::Retry | DecisionType::SwitchTask => {
            theme.warn().add_modifier(Modifier::BOLD)
        }
        DecisionType::AskHuman | DecisionType::Abort => theme.bad(),
    }
}

fn brain_words(b: BrainKind) -> &'static str {
    match b {
        BrainKind::Rule => "rule",
        BrainKind::Model => "model",
        BrainKind::Fallback => "fallback",
        BrainKind::Scripted => "scripted",
        BrainKind::Kernel => "kernel",
    }
}

fn draw_speech(app: &App, frame: &mut Frame, area: Rect, theme: Theme) {
    let lines = app.speech.iter().map(
        |Timed {
             time,
             item: (track, text),
         }| {
            let tag = match track {
                SpeechTrack::Template => "template",
                SpeechTrack::Summary => "summary",
                SpeechTrack::Answer => "answer",
            };
            Line::from(vec![
                stamp(*time, theme),
                Span::styled(format!("{tag:<8} "), theme.accent()),
                Span::raw(text.clone()),
            ])
        },
    );
    feed(app, frame, area, "Speech", Focus::Speech, lines, theme);
}

fn draw_tokens(app: &App, frame: &mut Frame, area: Rect, theme: Theme) {
    let model = app.snapshot().run.as_ref().and_then(|r| {
        let b = &r.brain;
        b.model
            .as_ref()
            .map(|m| (m, b.endpoint.as_deref().unwrap_or("?")))
    });
    let lines: Vec<Line> = if app.tokens.is_empty() {
        vec![Line::styled(
            match model {
                Some((model, at)) => format!("{model} at {at}: its tokens stream here"),
                None => "no model configured: the rule brain decides offline".into(),
            },
            theme.dim(),
        )]
    } else {
        app.tokens
            .split('\n')
            .map(|l| Line::raw(l.to_string()))
            .collect()
    };
    feed(
        app,
        frame,
        area,
        "Model tokens",
        Focus::Tokens,
        lines.into_iter(),
        theme,
    );
}

fn draw_devices(app: &App, frame: &mut Frame, area: Rect, theme: Theme) {
    let mut lines: Vec<Line> = app
        .devices
        .iter()
        .map(|(id, state)| {
            Line::from(vec![
                Span::styled(format!("{id} "), theme.bold()),
                Span::raw(state.clone()),
            ])
        })
        .collect();
    if lines.is_empty() {
        lines.push(Line::styled("no devices reported", theme.dim()));
    }
    frame.render_widget(
        Paragraph::new(lines).block(panel("Devices", false, theme)),
        area,
    );
}

fn draw_memory(app: &App, frame: &mut Frame, area: Rect, theme: Theme) {
    let mut lines: Vec<Line> = app
        .memory
        .iter()
        .map(|Timed { time, item }| Line::from(vec![stamp(*time, theme), Span::raw(item.clone())]))
        .collect();
    if lines.is_empty() {
        let text = match app.snapshot().run.as_ref().map(|r| &r.memory) {
            Some(m) if m.mode == MemoryMode::Off => "memory is off".to_string(),
            Some(m) => match &m.note {
                Some(note) => format!("memory {}: {note}; nothing retrieved yet", m.mode.as_str()),
                None => format!("memory {}: nothing retrieved yet", m.mode.as_str()),
            },
            None => "nothing retrieved yet".to_string(),
        };
        lines.push(Line::styled(text, theme.dim()));
    }
    feed(
        app,
        frame,
        area,
        "Memory",
        Focus::Memory,
        lines.into_iter(),
        theme,
    );
}

fn draw_log(app: &App, frame: &mut Frame, area: Rect, theme: Theme) {
    let lines = app.log.iter().map(
        |Timed {
             time,
             item: (level, text),
         }| {
            Line::from(vec![
                stamp(*time, theme),
                Span::styled(text.clone(), theme.level(*level)),
            ])
        },
    );
    feed(app, frame, area, "Events", Focus::Log, lines, theme);
}

fn draw_input(app: &App, frame: &mut Frame, area: Rect, theme: Theme) {
    let prompt = "› ";
    let focused = app.focus == Focus::Input && !app.card_focused();
    let style = if focused {
        theme.accent().add_modifier(Modifier::BOLD)
    } else {
        theme.dim()
    };
    let width = area.width.saturating_sub(2) as usize;
    if app.input.is_empty() && !focused {
        let how = if app.card_focused() {
            "the approval card has the keys; Esc (or a letter) to type here"
        } else {
            "press i to type"
        };
        frame.render_widget(
            Paragraph::new(Line::from(vec![
                Span::styled(prompt, style),
                Span::styled(how, theme.dim()),
            ])),
            area,
        );
        return;
    }
    let (shown, cursor) = app.input.view(width);
    let line = if app.input.is_empty() {
        Line::from(vec![
            Span::styled(prompt, style),
            Span::styled("say 去厨房 / go to the kitchen, or /help", theme.dim()),
        ])
    } else {
        Line::from(vec![Span::styled(prompt, style), Span::raw(shown)])
    };
    frame.render_widget(Paragraph::new(line), area);
    if app.is_typing() && !app.card_focused() {
        frame.set_cursor_position((area.x + 2 + cursor as u16, area.y));
    }
}

fn draw_hints(app: &App, frame: &mut Frame, area: Rect, theme: Theme) {
    let line = match &app.notice {
        Some((level, text)) => Line::styled(text.clone(), theme.level(*level)),
        None if !app.snapshot().approvals.is_empty() && !app.card_focused() => Line::styled(
            "F2 answers the approval card · Enter send · F12/Ctrl-X E-STOP · ? help",
            theme.dim(),
        ),
        None => Line::styled(
            "Enter send · Tab panels · F12/Ctrl-X E-STOP · ? help · Ctrl-C quit",
            theme.dim(),
        ),
    };
    frame.render_widget(Paragraph::new(line), area);
}
