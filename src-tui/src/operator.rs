//! Operator lines: what a person (or a script) types to a headless run, a
//! served page's chat box, or an MCP server's side channel. `{…}` is a
//! command as JSON; any other text is said.

use robobrain_core::protocol::Command;

/// What an operator line asks for.
#[derive(Debug, PartialEq)]
pub enum Line {
    /// A command to send.
    Command(Command),
    /// Nothing (a blank line).
    Blank,
    /// A line that is not a command, with what was expected.
    Bad(String),
}

/// Reads one operator line: `{…}` is a command, other text is said.
pub fn parse_line(line: &str) -> Line {
    let text = line.trim();
    if text.is_empty() {
        return Line::Blank;
    }
    if !text.starts_with('{') {
        return Line::Command(Command::Say { text: text.into() });
    }
    match serde_json::from_str(text) {
        Ok(cmd) => Line::Command(cmd),
        Err(e) => Line::Bad(format!(
            "expected a command as JSON, e.g. {{\"cmd\":\"say\",\"text\":\"去厨房\"}} or {{\"cmd\":\"approve\",\"approval_id\":\"a1\"}}: {e}"
        )),
    }
}
