//! A one-line text editor: the input line, the approval's JSON field and the
//! reject reason. Pure: keys come in as [`Edit`]s, the text and the cursor
//! come out. Positions are in `char`s; widths on screen come from
//! `unicode-width`, so Chinese (two columns a character) lines up.

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// One change to a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Insert text at the cursor (a typed character, an IME commit, a paste).
    Insert(String),
    /// Delete the character before the cursor.
    Backspace,
    /// Delete the character under the cursor.
    Delete,
    /// Move one character left.
    Left,
    /// Move one character right.
    Right,
    /// Move to the start.
    Home,
    /// Move to the end.
    End,
    /// Delete from the cursor back to the start (Ctrl-U).
    KillToStart,
    /// Delete the word before the cursor (Ctrl-W).
    KillWord,
}

/// A line of text with a cursor.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineEditor {
    text: String,
    /// Cursor position in chars, `0..=len`.
    cursor: usize,
}

impl LineEditor {
    /// A line holding `text`, the cursor at its end.
    pub fn with_text(text: &str) -> Self {
        Self {
            text: text.to_string(),
            cursor: text.chars().count(),
        }
    }

    /// The text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the line is empty.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Takes the text out, leaving the line empty.
    pub fn take(&mut self) -> String {
        self.cursor = 0;
        std::mem::take(&mut self.text)
    }

    /// Applies one change.
    pub fn apply(&mut self, edit: Edit) {
        let len = self.text.chars().count();
        match edit {
            Edit::Insert(s) => {
                // Control characters (a pasted newline, a tab) would break the line.
                let clean: String = s
                    .chars()
                    .map(|c| if c.is_control() { ' ' } else { c })
                    .collect();
                let at = self.byte_at(self.cursor);
                self.text.insert_str(at, &clean);
                self.cursor += clean.chars().count();
            }
            Edit::Backspace if self.cursor > 0 => {
                let at = self.byte_at(self.cursor - 1);
                self.text.remove(at);
                self.cursor -= 1;
            }
            Edit::Delete if self.cursor < len => {
                let at = self.byte_at(self.cursor);
                self.text.remove(at);
            }
            Edit::Left => self.cursor = self.cursor.saturating_sub(1),
            Edit::Right => self.cursor = (self.cursor + 1).min(len),
            Edit::Home => self.cursor = 0,
            Edit::End => self.cursor = len,
            Edit::KillToStart => {
                let at = self.byte_at(self.cursor);
                self.text.replace_range(..at, "");
                self.cursor = 0;
            }
            Edit::KillWord => {
                let chars: Vec<char> = self.text.chars().collect();
                let mut start = self.cursor;
                while start > 0 && chars[start - 1].is_whitespace() {
                    start -= 1;
                }
                while start > 0 && !chars[start - 1].is_whitespace() {
                    start -= 1;
                }
                let (a, b) = (self.byte_at(start), self.byte_at(self.cursor));
                self.text.replace_range(a..b, "");
                self.cursor = start;
            }
            Edit::Backspace | Edit::Delete => {}
        }
    }

    /// What to show in `width` columns and where the cursor goes: the part
    /// of the text around the cursor that fits, and the cursor's column in it.
    pub fn view(&self, width: usize) -> (String, usize) {
        let width = width.max(1);
        let chars: Vec<char> = self.text.chars().collect();
        let col = |c: &char| c.width().unwrap_or(0);
        // Scroll so the cursor (one column after the text at the end) fits.
        let mut start = 0;
        let mut before: usize = chars[..self.cursor].iter().map(col).sum();
        while before + 1 > width && start < self.cursor {
            before -= col(&chars[start]);
            start += 1;
        }
        let mut shown = String::new();
        let mut used = 0;
        for c in &chars[start..] {
            let w = col(c);
            if used + w > width {
                break;
            }
            shown.push(*c);
            used += w;
        }
        (shown, before)
    }

    /// Columns the whole text takes.
    pub fn width(&self) -> usize {
        self.text.width()
    }

    fn byte_at(&self, chars: usize) -> usize {
        self.text
            .char_indices()
            .nth(chars)
            .map_or(self.text.len(), |(i, _)| i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(s: &str) -> LineEditor {
        let mut e = LineEditor::default();
        for c in s.chars() {
            e.apply(Edit::Insert(c.to_string()));
        }
        e
    }

    #[test]
    fn chinese_text_edits_by_character_and_measures_two_columns_each() {
        let mut e = typed("去厨房");
        assert_eq!(e.width(), 6);
        e.apply(Edit::Left);
        e.apply(Edit::Backspace);
        assert_eq!(e.text(), "去房");
        assert_eq!(e.view(20), ("去房".to_string(), 2));
        e.apply(Edit::Insert("卧".into()));
        assert_eq!(e.text(), "去卧房");
        e.apply(Edit::Delete);
        assert_eq!(e.text(), "去卧");
    }

    #[test]
    fn a_long_line_scrolls_to_keep_the_cursor_in_view() {
        let e = typed("巡逻一次厨房和客厅然后回来");
        let (shown, cursor) = e.view(10);
        assert!(shown.ends_with("回来"), "{shown}");
        assert!(cursor <= 9, "{cursor}");
        assert!(shown.as_str().width() <= 10);
    }

    #[test]
    fn pasted_newlines_become_spaces_and_kills_work() {
        let mut e = LineEditor::default();
        e.apply(Edit::Insert("go to\nthe kitchen".into()));
        assert_eq!(e.text(), "go to the kitchen");
        e.apply(Edit::KillWord);
        assert_eq!(e.text(), "go to the ");
        e.apply(Edit::KillToStart);
        assert!(e.is_empty());
        e.apply(Edit::Backspace);
        e.apply(Edit::Delete);
        assert!(e.is_empty());
    }
}
