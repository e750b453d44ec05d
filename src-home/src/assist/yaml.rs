//! YAML in, typed values out, with every refusal placed at file:line:col.

use std::path::Path;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::source::SourceError;

/// Parses `text` (the contents of `file`) into `T`, or says where and why not.
pub fn parse<T: DeserializeOwned>(file: &Path, text: &str) -> Result<T, SourceError> {
    serde_norway::from_str(text).map_err(|e| {
        let full = e.to_string();
        let message = full.find(" at line ").map_or(full.as_str(), |i| &full[..i]);
        // serde_norway writes `path.to[1].field: message`.
        let (field, message) = match message.split_once(": ") {
            Some((path, rest)) if !path.contains(' ') => (path.to_string(), rest.to_string()),
            _ => (String::new(), message.to_string()),
        };
        // A state's own check fails on the whole entity: point at its `state:`.
        if message.starts_with(STATE_EXPECTED) {
            let offset = e
                .location()
                .and_then(|l| find_key(text, l.index(), "state"));
            let field = if field.is_empty() {
                "state".to_string()
            } else {
                format!("{field}.state")
            };
            return error_at(file, text, offset, &field, message);
        }
        let (line, col) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
        SourceError {
            file: file.to_path_buf(),
            line,
            col,
            field,
            message,
        }
    })
}

const STATE_EXPECTED: &str = "expected a state (";

/// An entity state as Home Assistant writes it: text, or a YAML boolean
/// (`false` is `off`) or number, read as text; `null` when absent.
pub fn state_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    scalar_state(Value::deserialize(d)?, "text, number or boolean")
        .map_err(serde::de::Error::custom)
}

/// A state value as text (`false` is `off`), `None` for null; `expected`
/// says what else would have done when it is neither.
fn scalar_state(v: Value, expected: &str) -> Result<Option<String>, String> {
    Ok(match v {
        Value::Null => None,
        Value::Bool(true) => Some("on".into()),
        Value::Bool(false) => Some("off".into()),
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s),
        other => {
            return Err(format!(
                "{STATE_EXPECTED}{expected}), found {}",
                if other.is_array() {
                    "a list"
                } else {
                    "a mapping"
                }
            ));
        }
    })
}

/// A fixture entity's `state`: text (as [`state_text`]), or a mapping as
/// the datasets' setup writes an entity state — `{state: on, attributes:
/// {brightness: 128}}` — whose attributes join the entity's.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StateSpec {
    /// The state.
    pub state: Option<String>,
    /// Attributes given with it.
    pub attributes: serde_json::Map<String, Value>,
}

impl<'de> Deserialize<'de> for StateSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let scalar = |v: Value| scalar_state(v, "text, number or boolean, or {state, attributes}");
        match Value::deserialize(d)? {
            Value::Object(mut m) => {
                if let Some(k) = m.keys().find(|k| *k != "state" && *k != "attributes") {
                    return Err(serde::de::Error::custom(format!(
                        "{STATE_EXPECTED}a mapping of `state` and `attributes`), found the key `{k}`"
                    )));
                }
                let state = scalar(m.remove("state").unwrap_or(Value::Null))
                    .map_err(serde::de::Error::custom)?;
                let attributes = match m.remove("attributes") {
                    None | Some(Value::Null) => serde_json::Map::new(),
                    Some(Value::Object(a)) => a,
                    Some(_) => {
                        return Err(serde::de::Error::custom(format!(
                            "{STATE_EXPECTED}`attributes` as a mapping)"
                        )));
                    }
                };
                Ok(Self { state, attributes })
            }
            other => Ok(Self {
                state: scalar(other).map_err(serde::de::Error::custom)?,
                attributes: serde_json::Map::new(),
            }),
        }
    }
}

/// Byte offset of the first line at or after `from` that reads `key: value`
/// (the value bare or quoted, the line maybe starting a list item).
pub fn find_pair(text: &str, from: usize, key: &str, value: &str) -> Option<usize> {
    let mut offset = from.min(text.len());
    while offset < text.len() && !text.is_char_boundary(offset) {
        offset += 1;
    }
    for line in text[offset..].split_inclusive('\n') {
        let trimmed = line.trim_start().trim_start_matches("- ").trim_start();
        if let Some(rest) = trimmed.strip_prefix(key).and_then(|r| r.strip_prefix(':')) {
            let v = rest.trim().trim_matches(|c| c == '"' || c == '\'');
            if v == value {
                return Some(offset + (line.len() - trimmed.len()));
            }
        }
        offset += line.len();
    }
    None
}

/// Byte offset of the first line at or after `from` that starts with `key:`
/// (a mapping key, at any indentation).
pub fn find_key(text: &str, from: usize, key: &str) -> Option<usize> {
    let mut offset = from.min(text.len());
    for line in text[offset..].split_inclusive('\n') {
        let trimmed = line.trim_start().trim_start_matches("- ").trim_start();
        let bare = trimmed.trim_start_matches(['"', '\'']);
        if bare
            .strip_prefix(key)
            .is_some_and(|r| r.trim_start_matches(['"', '\'']).starts_with(':'))
        {
            return Some(offset + (line.len() - trimmed.len()));
        }
        offset += line.len();
    }
    None
}

/// The start of the list item that holds byte `offset` (the nearest line
/// before it that starts with `- `), or `offset` itself.
pub fn item_start(text: &str, offset: usize) -> usize {
    let offset = offset.min(text.len());
    let mut start = offset;
    for line in text[..offset].split_inclusive('\n').rev() {
        start -= line.len();
        if line.trim_start().starts_with("- ") {
            return start + (line.len() - line.trim_start().len());
        }
    }
    offset
}

/// An error at byte `offset` (or with no position when `None`).
pub fn error_at(
    file: &Path,
    text: &str,
    offset: Option<usize>,
    field: &str,
    message: impl Into<String>,
) -> SourceError {
    match offset {
        Some(o) => SourceError::at_offset(file, text, o, field, message),
        None => SourceError {
            file: file.to_path_buf(),
            line: 0,
            col: 0,
            field: field.to_string(),
            message: message.into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_and_items_are_found() {
        let text =
            "entities:\n  - name: A\n    id: light.a\n    area: kitchen\n  - id: \"light.b\"\n";
        let a = find_pair(text, 0, "id", "light.a").unwrap();
        assert_eq!(crate::source::line_col(text, a), (3, 5));
        let b = find_pair(text, 0, "id", "light.b").unwrap();
        assert_eq!(crate::source::line_col(text, b), (5, 5));
        assert_eq!(crate::source::line_col(text, item_start(text, a)), (2, 3));
        assert_eq!(
            crate::source::line_col(text, find_pair(text, 0, "name", "A").unwrap()),
            (2, 5)
        );
        let area = find_pair(text, item_start(text, a), "area", "kitchen").unwrap();
        assert_eq!(crate::source::line_col(text, area), (4, 5));
        assert_eq!(
            crate::source::line_col(text, find_key(text, 0, "area").unwrap()),
            (4, 5)
        );
        assert_eq!(find_pair(text, 0, "id", "light.c"), None);
    }
}
