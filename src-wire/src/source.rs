//! Precise errors for the files people write: worlds, scenarios, config.
//!
//! Every refusal names the file, the line and column, the field, and what was
//! expected, so that a typo costs seconds rather than a debugging session.

use std::fmt;
use std::path::{Path, PathBuf};

/// A problem at a place in a text file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceError {
    /// The file (or a label such as `<builtin apartment>`).
    pub file: PathBuf,
    /// Line, from 1 (0 when unknown).
    pub line: usize,
    /// Column, from 1 (0 when unknown).
    pub col: usize,
    /// The field at fault, as a dotted path (`kernel.battery_low_pct`), or empty.
    pub field: String,
    /// What was expected and what was found.
    pub message: String,
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.col)?;
        }
        if self.field.is_empty() {
            write!(f, ": {}", self.message)
        } else {
            write!(f, ": `{}`: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for SourceError {}

impl SourceError {
    /// `file` could not be read (or listed): the OS error, no position.
    pub fn unreadable(file: &Path, err: &std::io::Error) -> Self {
        Self {
            file: file.to_path_buf(),
            line: 0,
            col: 0,
            field: String::new(),
            message: format!("cannot read: {err}"),
        }
    }

    /// An error about `field` found at byte `offset` of `text`.
    pub fn at_offset(
        file: &Path,
        text: &str,
        offset: usize,
        field: &str,
        message: impl Into<String>,
    ) -> Self {
        let (line, col) = line_col(text, offset);
        Self {
            file: file.to_path_buf(),
            line,
            col,
            field: field.to_string(),
            message: message.into(),
        }
    }

    /// An error about the dotted key `field` (`zones.kitchen.goal`), located by
    /// searching the text for the key's table and assignment.
    pub fn at_key(file: &Path, text: &str, field: &str, message: impl Into<String>) -> Self {
        let offset = locate_key(text, field).unwrap_or(usize::MAX);
        if offset == usize::MAX {
            return Self {
                file: file.to_path_buf(),
                line: 0,
                col: 0,
                field: field.to_string(),
                message: message.into(),
            };
        }
        Self::at_offset(file, text, offset, field, message)
    }

    /// Converts a TOML syntax or type error, keeping its position and naming
    /// the field it stopped at when the message says which.
    pub fn from_toml(file: &Path, text: &str, err: &toml::de::Error) -> Self {
        let message = err.message().trim().to_string();
        let offset = err.span().map_or(0, |s| s.start);
        let field = backtick_field(&message).unwrap_or_default();
        let mut e = Self::at_offset(file, text, offset, &field, message);
        if err.span().is_none() {
            e.line = 0;
            e.col = 0;
        }
        e
    }
}

/// 1-based line and column (in characters) of byte `offset`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..floor_char_boundary(text, offset)];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

fn floor_char_boundary(text: &str, mut i: usize) -> usize {
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Byte offset of a dotted key: the longest prefix that names a table header
/// (`[a.b]` or `[[a]]`), then the first `last =` assignment after it.
fn locate_key(text: &str, dotted: &str) -> Option<usize> {
    let parts: Vec<&str> = dotted.split('.').collect();
    let mut search_from = 0;
    for split in (1..parts.len()).rev() {
        let table = parts[..split].join(".");
        let headers = [format!("[{table}]"), format!("[[{table}]]")];
        if let Some(pos) = headers.iter().filter_map(|h| text.find(h.as_str())).min() {
            search_from = pos;
            let rest = parts[split..].join(".");
            return find_assignment(text, search_from, &rest).or(Some(pos));
        }
    }
    find_assignment(text, search_from, dotted)
}

fn find_assignment(text: &str, from: usize, key: &str) -> Option<usize> {
    let mut offset = from;
    for line in text[from..].split_inclusive('\n') {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix(key)
            && rest.trim_start().starts_with('=')
        {
            return Some(offset + (line.len() - trimmed.len()));
        }
        offset += line.len();
    }
    None
}

fn backtick_field(message: &str) -> Option<String> {
    let start = message.find('`')? + 1;
    let len = message[start..].find('`')?;
    Some(message[start..start + len].to_string())
}

/// The text of `file`, or a [`SourceError`] naming it.
pub fn read(file: &Path) -> Result<String, SourceError> {
    std::fs::read_to_string(file).map_err(|e| SourceError::unreadable(file, &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_lines_and_characters() {
        let text = "a = 1\n宽 = 2\nc = 3\n";
        assert_eq!(line_col(text, 0), (1, 1));
        let off = text.find("= 2").unwrap();
        assert_eq!(line_col(text, off), (2, 3));
    }

    #[test]
    fn keys_are_found_under_their_table() {
        let text = "x = 1\n[kernel]\nmax_iterations = 0\n";
        let e = SourceError::at_key(
            Path::new("f.toml"),
            text,
            "kernel.max_iterations",
            "expected at least 1",
        );
        assert_eq!((e.line, e.col), (3, 1));
        assert_eq!(
            e.to_string(),
            "f.toml:3:1: `kernel.max_iterations`: expected at least 1"
        );
    }

    #[test]
    fn toml_errors_keep_their_position() {
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct T {
            a: u32,
        }
        let text = "a = 1\nb = 2\n";
        let err = toml::from_str::<T>(text).unwrap_err();
        let e = SourceError::from_toml(Path::new("t.toml"), text, &err);
        assert_eq!(e.line, 2, "{e}");
        assert_eq!(e.field, "b");
    }
}
