//! Operator lines: what a person (or a script) types to a headless run, a
//! served page's chat box, the desktop app or an MCP server's side channel.
//! `{…}` is a command as JSON; any other text is said. Pure: text in, a
//! [`Line`] out; the faces read the bytes (`robobrain_tui::operator`).

use super::{Command, MAX_LINE_BYTES, TooLong};

/// What an operator line asks for.
#[derive(Debug, PartialEq)]
pub enum Line {
    /// A command to send.
    Command(Command),
    /// Nothing (a blank line).
    Blank,
    /// A line that is refused, with why.
    Bad(Refused),
}

/// Why an operator line was refused: an `error` code and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// `invalid_command`, `invalid_utf8`, `line_too_long` or `utterance_too_long`.
    pub code: &'static str,
    /// What was wrong and what was expected.
    pub why: String,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.why)
    }
}

impl From<TooLong> for Refused {
    fn from(e: TooLong) -> Self {
        Self {
            code: e.code(),
            why: e.to_string(),
        }
    }
}

/// Reads one operator line: `{…}` is a command, other text is said. A line
/// over [`MAX_LINE_BYTES`] or an utterance over the core's limit is refused
/// before it is parsed.
pub fn parse_line(line: &str) -> Line {
    if line.len() > MAX_LINE_BYTES {
        return Line::Bad(
            TooLong::Line {
                bytes: line.len(),
                limit: MAX_LINE_BYTES,
            }
            .into(),
        );
    }
    let text = line.trim();
    if text.is_empty() {
        return Line::Blank;
    }
    let command = if text.starts_with('{') {
        match serde_json::from_str(text) {
            Ok(cmd) => cmd,
            Err(e) => {
                return Line::Bad(Refused {
                    code: "invalid_command",
                    why: format!(
                        "expected a command as JSON, e.g. {{\"cmd\":\"say\",\"text\":\"去厨房\"}} or {{\"cmd\":\"approve\",\"approval_id\":\"a1\"}}: {e}"
                    ),
                });
            }
        }
    } else {
        Command::Say { text: text.into() }
    };
    match command.check_limits() {
        Ok(()) => Line::Command(command),
        Err(e) => Line::Bad(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_utterance_over_the_limit_is_refused_before_parsing() {
        let long = "好".repeat(2000); // 6 000 bytes
        match parse_line(&long) {
            Line::Bad(r) => assert_eq!(r.code, "utterance_too_long", "{}", r.why),
            other => panic!("{other:?}"),
        }
        let json = format!("{{\"cmd\":\"say\",\"text\":\"{long}\"}}");
        match parse_line(&json) {
            Line::Bad(r) => assert_eq!(r.code, "utterance_too_long", "{}", r.why),
            other => panic!("{other:?}"),
        }
        let line = format!(
            "{{\"cmd\":\"say\",\"text\":\"{}\"}}",
            "a".repeat(MAX_LINE_BYTES)
        );
        match parse_line(&line) {
            Line::Bad(r) => assert_eq!(r.code, "line_too_long", "{}", r.why),
            other => panic!("{other:?}"),
        }
    }
}
