//! Keys → [`Action`]s, depending on what has focus. Pure, so every binding
//! is tested without a terminal; [`BINDINGS`] is what `?` shows.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::app::{Action, App, Overlay, Stage};
use super::line::Edit;

/// Every binding, for the help screen: (keys, where, what).
pub const BINDINGS: &[(&str, &str, &str)] = &[
    ("F12 / Ctrl-X", "anywhere", "EMERGENCY STOP"),
    ("Enter", "input", "send the line (utterance or /command)"),
    ("↑ / ↓", "input", "previous / next line sent"),
    (
        "←→ Home End",
        "input",
        "move; Ctrl-U / Ctrl-W delete line / word",
    ),
    ("? (empty line)", "input", "this help"),
    ("Esc", "input", "leave the input line for the panels"),
    ("Tab / Shift-Tab", "anywhere", "next / previous panel"),
    ("j k ↓ ↑", "panel", "scroll one line (newer / older)"),
    ("PgDn PgUp", "panel", "scroll a page"),
    ("g G Home End", "panel", "oldest / newest"),
    ("i / Enter", "panel", "back to the input line (typing also)"),
    ("q", "panel", "quit (asks while a task runs)"),
    ("Ctrl-C", "anywhere", "quit (asks while a task runs)"),
    ("F2", "anywhere", "give the keys to the approval card"),
    (
        "F3 / F4 / F8",
        "card",
        "approve / edit args (JSON) / reject (a reason)",
    ),
    ("[ ] ← →", "card", "previous / next pending approval"),
    ("Esc", "card", "back to the input line (the card stays)"),
    ("Ctrl-A", "anywhere", "hide / show the approval card"),
    ("F1 / ?", "anywhere", "this help; any key closes it"),
];

/// What `key` means to `app` now, if anything.
pub fn action(app: &App, key: KeyEvent) -> Option<Action> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    // Bindings that work whatever has focus.
    match key.code {
        KeyCode::F(12) => return Some(Action::EStop),
        KeyCode::Char('x' | 'X') if ctrl => return Some(Action::EStop),
        KeyCode::Char('c' | 'C') if ctrl => {
            return Some(if app.overlay == Overlay::QuitConfirm {
                Action::ConfirmQuit
            } else {
                Action::Quit
            });
        }
        KeyCode::Char('a' | 'A') if ctrl => return Some(Action::ToggleApprovals),
        KeyCode::F(2) => return Some(Action::FocusCard),
        KeyCode::F(1) => return Some(Action::Help),
        KeyCode::Tab => return Some(Action::FocusNext),
        KeyCode::BackTab => return Some(Action::FocusPrev),
        _ => {}
    }
    match app.overlay {
        Overlay::Help => return Some(Action::Escape),
        Overlay::QuitConfirm => {
            return match key.code {
                KeyCode::Char('y' | 'Y' | 'q') | KeyCode::Enter => Some(Action::ConfirmQuit),
                _ => Some(Action::Escape),
            };
        }
        Overlay::None => {}
    }
    // The card answers only once F2 gave it the keys, and only to keys
    // that are no part of typing; a letter goes back to the input line.
    if app.card_focused() {
        return match app.prompt.stage {
            Stage::Edit { .. } | Stage::Reject { .. } => editing(key, ctrl),
            Stage::View | Stage::Sent(_) => match key.code {
                KeyCode::F(3) => Some(Action::Approve),
                KeyCode::F(4) => Some(Action::EditArgs),
                KeyCode::F(8) => Some(Action::Reject),
                KeyCode::Char(']') | KeyCode::Right | KeyCode::Down => Some(Action::NextApproval),
                KeyCode::Char('[') | KeyCode::Left | KeyCode::Up => Some(Action::PrevApproval),
                KeyCode::Char('?') => Some(Action::Help),
                KeyCode::Esc => Some(Action::Escape),
                KeyCode::Enter => Some(Action::CardKeys),
                KeyCode::Char(_) if ctrl => None,
                KeyCode::Char(c) => Some(Action::Type(c.to_string())),
                _ => None,
            },
        };
    }
    if app.is_typing() {
        return match key.code {
            KeyCode::Char('?') if app.input.is_empty() => Some(Action::Help),
            KeyCode::Up => Some(Action::HistoryPrev),
            KeyCode::Down => Some(Action::HistoryNext),
            KeyCode::PageUp => Some(Action::Scroll(10)),
            KeyCode::PageDown => Some(Action::Scroll(-10)),
            _ => editing(key, ctrl),
        };
    }
    panel(key)
}

/// Keys in a text field.
fn editing(key: KeyEvent, ctrl: bool) -> Option<Action> {
    let edit = match key.code {
        KeyCode::Enter => return Some(Action::Submit),
        KeyCode::Esc => return Some(Action::Escape),
        KeyCode::Char('u') if ctrl => Edit::KillToStart,
        KeyCode::Char('w') if ctrl => Edit::KillWord,
        KeyCode::Char(_) if ctrl => return None,
        KeyCode::Char(c) => Edit::Insert(c.to_string()),
        KeyCode::Backspace => Edit::Backspace,
        KeyCode::Delete => Edit::Delete,
        KeyCode::Left => Edit::Left,
        KeyCode::Right => Edit::Right,
        KeyCode::Home => Edit::Home,
        KeyCode::End => Edit::End,
        _ => return None,
    };
    Some(Action::Edit(edit))
}

/// Keys on a panel.
fn panel(key: KeyEvent) -> Option<Action> {
    Some(match key.code {
        KeyCode::Char('q') => Action::Quit,
        KeyCode::Char('?') => Action::Help,
        KeyCode::Char('j') | KeyCode::Down => Action::Scroll(-1),
        KeyCode::Char('k') | KeyCode::Up => Action::Scroll(1),
        KeyCode::PageDown => Action::Scroll(-10),
        KeyCode::PageUp => Action::Scroll(10),
        KeyCode::Char('g') | KeyCode::Home => Action::ScrollOldest,
        KeyCode::Char('G') | KeyCode::End => Action::ScrollNewest,
        KeyCode::Char('i') | KeyCode::Enter | KeyCode::Esc => Action::Escape,
        KeyCode::Char(c) => Action::Type(c.to_string()),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::app::Focus;
    use robobrain_core::protocol::Snapshot;
    use robobrain_core::world::World;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn app() -> App {
        App::new(
            World::builtin("apartment").unwrap(),
            Snapshot::default(),
            false,
        )
    }

    #[test]
    fn the_input_line_takes_text_and_the_panels_take_commands() {
        let mut app = app();
        assert_eq!(
            action(&app, key(KeyCode::Char('q'))),
            Some(Action::Edit(Edit::Insert("q".into())))
        );
        assert_eq!(action(&app, key(KeyCode::Char('?'))), Some(Action::Help));
        app.update(Action::Escape);
        assert_eq!(app.focus, Focus::Timeline);
        assert_eq!(action(&app, key(KeyCode::Char('q'))), Some(Action::Quit));
        assert_eq!(
            action(&app, key(KeyCode::Char('k'))),
            Some(Action::Scroll(1))
        );
        assert_eq!(
            action(&app, key(KeyCode::Char('去'))),
            Some(Action::Type("去".into()))
        );
    }

    #[test]
    fn estop_and_quit_work_from_anywhere() {
        let app = app();
        assert_eq!(action(&app, key(KeyCode::F(12))), Some(Action::EStop));
        let ctrl_x = KeyEvent::new(KeyCode::Char('x'), KeyModifiers::CONTROL);
        assert_eq!(action(&app, ctrl_x), Some(Action::EStop));
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(action(&app, ctrl_c), Some(Action::Quit));
        assert_eq!(action(&app, key(KeyCode::Tab)), Some(Action::FocusNext));
    }

    #[test]
    fn every_binding_in_the_help_is_unique() {
        let mut seen = std::collections::HashSet::new();
        for (keys, place, _) in BINDINGS {
            assert!(seen.insert((keys, place)), "{keys} in {place} twice");
        }
    }
}
