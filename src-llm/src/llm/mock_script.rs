//! The script `robobrain mock-llm` plays: settings, then one `[[reply]]` per
//! request, in order. A reply with a `when` answers only a request whose
//! last message holds it (a substring, or a subset match on the JSON in
//! it); any other request gets an error instead and the reply waits for the
//! next one. Parsing is pure (text in, [`Script`] out) and refuses a bad
//! file with its name, line, field and what was expected.
//!
//! ```toml
//! chunk_chars = 4          # characters per streamed chunk
//! chunk_delay_ms = 0       # wall milliseconds between chunks
//! refuse = ["tools"]       # request features answered with 400 (tools, json_schema, json_object)
//! ignore = ["tool_choice"] # request features taken (200) but not honoured (tool_choice, json_schema):
//!                          # a forced tool call or a schema gets plain text, as llama.cpp's server
//!                          # does with an object tool_choice
//! slots = 1                # requests worked on at once, like a one-slot llama.cpp server (default: no limit)
//!
//! [[reply]]                # a decision: a `decide` tool call when the request
//! decision = { type = "REPLAN", reason = "door blocked", ops = [] }   # offers one, else JSON text
//!
//! [[reply]]
//! content = "plain text"   # or tool_calls = [{ name = "navigate_to", arguments = { zone = "kitchen" } }]
//! latency_ms = 200         # wait before answering
//! choices = 2              # several choices with the same reply
//! finish_reason = "length" # the reason the reply says it stopped (default: stop, or tool_calls)
//!
//! [[reply]]
//! fault = "rate_limit"     # rate_limit (429, retry_after), server_error (500), hang,
//! retry_after = 1          # garbage (not JSON), cut (the stream stops mid-reply)
//!
//! [[reply]]
//! replay = "recorded.sse"  # a recorded body (SSE or one chunk a line), relative to the script
//!
//! [[reply]]                # only for a request whose last message contains the text and
//! when = { contains = "Observation", json = { "last_result.code" = "blocked" } }
//! decision = { type = "REPLAN", reason = "blocked", ops = [] }   # whose JSON matches
//! ```

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use toml::Spanned;

use crate::matcher::{FieldTest, field_tests, lookup};
use crate::source::SourceError;

/// What a reply says.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// A decision: a `decide` tool call if the request offers that tool,
    /// else the decision as JSON text.
    Decision(Value),
    /// Plain text.
    Content(String),
    /// Tool calls: (name, arguments).
    ToolCalls(Vec<(String, Value)>),
    /// A recorded body, sent as it was.
    Replay(String),
}

/// A failure to play.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    /// 429 with `Retry-After` seconds.
    RateLimit {
        /// Seconds.
        retry_after: f64,
    },
    /// 500.
    ServerError,
    /// No answer at all (past any client's timeout).
    Hang,
    /// 200 with a body that is not JSON.
    Garbage,
    /// The stream stops halfway through the reply, connection dropped.
    Cut,
}

/// What the request's last message must hold for a reply to answer it.
#[derive(Debug, Clone, PartialEq)]
pub struct When {
    /// Its text must contain this (as written, case and all).
    pub contains: Option<String>,
    /// The JSON in it — the whole text, or from its first `{` on (a
    /// prompt's label before a JSON body) — must pass these tests, with
    /// the scenario matcher's leaf rules (`~text`, `">=2"`, alternatives,
    /// `null` for absent).
    pub json: Vec<FieldTest>,
}

impl When {
    /// Why `request` (a chat-completions body) does not hold, or `None`
    /// when it does.
    pub fn mismatch(&self, request: &Value) -> Option<String> {
        let text = last_message_text(request);
        if let Some(needle) = &self.contains
            && !text.contains(needle.as_str())
        {
            return Some(format!("its last message does not contain {needle:?}"));
        }
        if self.json.is_empty() {
            return None;
        }
        let Some(json) = embedded_json(&text) else {
            return Some("its last message holds no JSON".into());
        };
        self.json.iter().find(|t| !t.holds(&json)).map(|t| {
            let found = lookup(&json, &t.path).map_or_else(|| "absent".into(), Value::to_string);
            format!(
                "`{}` in its last message is {found}, wanted {}",
                t.path.join("."),
                t.want
            )
        })
    }
}

/// The text of a request's last message: its `content` string, or the
/// `text` of its content parts joined.
pub fn last_message_text(request: &Value) -> String {
    let content = request
        .get("messages")
        .and_then(Value::as_array)
        .and_then(|m| m.last())
        .and_then(|m| m.get("content"));
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// `text` as JSON, or the JSON from its first `{` on.
fn embedded_json(text: &str) -> Option<Value> {
    serde_json::from_str(text)
        .ok()
        .or_else(|| serde_json::from_str(&text[text.find('{')?..]).ok())
}

/// One scripted reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// Line of its `[[reply]]`.
    pub line: usize,
    /// What the request must hold for this reply to answer it.
    pub when: Option<When>,
    /// What it says (absent for pure faults).
    pub body: Option<Body>,
    /// A fault instead of (or, for `cut`, in the middle of) the reply.
    pub fault: Option<Fault>,
    /// Wall milliseconds before answering.
    pub latency_ms: u64,
    /// How many choices.
    pub choices: u32,
    /// How many requests this reply answers.
    pub times: u32,
    /// The finish reason it gives instead of `stop` / `tool_calls`
    /// (`length`: cut at the token cap).
    pub finish_reason: Option<String>,
}

/// A parsed script.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    /// The file it came from.
    pub file: PathBuf,
    /// Characters per streamed chunk.
    pub chunk_chars: usize,
    /// Wall milliseconds between streamed chunks.
    pub chunk_delay_ms: u64,
    /// Request features answered with 400.
    pub refuse: Vec<String>,
    /// Request features accepted but not honoured (`tool_choice`,
    /// `json_schema`): a forced tool call or a schema gets plain text.
    pub ignore: Vec<String>,
    /// Requests worked on at once (the others wait their turn); `None`: no limit.
    pub slots: Option<usize>,
    /// Replies, in order.
    pub replies: Vec<Reply>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScript {
    chunk_chars: Option<Spanned<i64>>,
    chunk_delay_ms: Option<u64>,
    #[serde(default)]
    refuse: Vec<Spanned<String>>,
    #[serde(default)]
    ignore: Vec<Spanned<String>>,
    slots: Option<Spanned<i64>>,
    #[serde(default)]
    reply: Vec<Spanned<RawReply>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToolCall {
    name: String,
    #[serde(default)]
    arguments: Option<toml::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWhen {
    contains: Option<String>,
    json: Option<toml::Table>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReply {
    when: Option<Spanned<RawWhen>>,
    decision: Option<toml::Value>,
    content: Option<String>,
    tool_calls: Option<Vec<RawToolCall>>,
    replay: Option<String>,
    fault: Option<Spanned<String>>,
    retry_after: Option<f64>,
    latency_ms: Option<u64>,
    choices: Option<Spanned<i64>>,
    times: Option<Spanned<i64>>,
    finish_reason: Option<String>,
}

/// Request features a script may refuse.
pub const FEATURES: &[&str] = &["tools", "json_schema", "json_object"];
/// Request features a script may take without honouring them.
pub const IGNORABLE: &[&str] = &["tool_choice", "json_schema"];
/// Faults a reply may play.
pub const FAULTS: &[&str] = &["rate_limit", "server_error", "hang", "garbage", "cut"];

/// Reads and parses a script file.
pub fn load(path: &Path) -> Result<Script, SourceError> {
    let text = std::fs::read_to_string(path).map_err(|e| SourceError {
        file: path.to_path_buf(),
        line: 0,
        col: 0,
        field: String::new(),
        message: format!("cannot read the script: {e}"),
    })?;
    parse(&text, path)
}

/// Parses a script; `file` names it in errors and anchors `replay` paths.
pub fn parse(text: &str, file: &Path) -> Result<Script, SourceError> {
    let raw: RawScript =
        toml::from_str(text).map_err(|e| SourceError::from_toml(file, text, &e))?;
    let src = ScriptText { file, text };
    let chunk_chars =
        at_least_one(raw.chunk_chars.as_ref(), "chunk_chars", &src)?.map_or(4, |n| n as usize);
    for (field, list, known) in [
        ("refuse", &raw.refuse, FEATURES),
        ("ignore", &raw.ignore, IGNORABLE),
    ] {
        if let Some(f) = list.iter().find(|f| !known.contains(&f.get_ref().as_str())) {
            return Err(src.at(
                f.span(),
                field,
                format!(
                    "expected one of {}, found {:?}",
                    known.join(", "),
                    f.get_ref()
                ),
            ));
        }
    }
    let dir = file.parent().unwrap_or_else(|| Path::new(""));
    let replies = raw
        .reply
        .into_iter()
        .enumerate()
        .map(|(i, r)| parse_reply(i, r, dir, &src))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Script {
        file: file.to_path_buf(),
        chunk_chars,
        chunk_delay_ms: raw.chunk_delay_ms.unwrap_or(0),
        refuse: raw.refuse.into_iter().map(Spanned::into_inner).collect(),
        ignore: raw.ignore.into_iter().map(Spanned::into_inner).collect(),
        slots: at_least_one(raw.slots.as_ref(), "slots", &src)?.map(|n| n as usize),
        replies,
    })
}

/// The script being parsed, for locating errors.
struct ScriptText<'a> {
    file: &'a Path,
    text: &'a str,
}

impl ScriptText<'_> {
    /// An error in `field`, at the start of `span`.
    fn at(&self, span: Range<usize>, field: &str, msg: String) -> SourceError {
        SourceError::at_offset(self.file, self.text, span.start, field, msg)
    }
}

/// The value of an optional count, refused when it is below 1.
fn at_least_one(
    v: Option<&Spanned<i64>>,
    field: &str,
    src: &ScriptText<'_>,
) -> Result<Option<i64>, SourceError> {
    match v {
        Some(n) if *n.get_ref() < 1 => Err(src.at(
            n.span(),
            field,
            format!("expected at least 1, found {}", n.get_ref()),
        )),
        other => Ok(other.map(|n| *n.get_ref())),
    }
}

/// Reply `i` (from 0) of the script; `dir` anchors its `replay` path.
fn parse_reply(
    i: usize,
    r: Spanned<RawReply>,
    dir: &Path,
    src: &ScriptText<'_>,
) -> Result<Reply, SourceError> {
    let field = format!("reply[{}]", i + 1);
    let span = r.span();
    let r = r.into_inner();
    let fault = match &r.fault {
        None => None,
        Some(f) => Some(parse_fault(f, r.retry_after, &field, src)?),
    };
    let mut bodies = inline_bodies(r.decision, r.content, r.tool_calls);
    if let Some(path) = r.replay {
        let full = dir.join(&path);
        let body = std::fs::read_to_string(&full).map_err(|e| {
            src.at(
                span.clone(),
                &format!("{field}.replay"),
                format!("cannot read {}: {e}", full.display()),
            )
        })?;
        bodies.push(Body::Replay(body));
    }
    let body = one_body(bodies, fault, span.clone(), &field, src)?;
    let when = match r.when {
        None => None,
        Some(w) => Some(parse_when(w, &field, src)?),
    };
    let count = |v: Option<&Spanned<i64>>, name: &str| {
        at_least_one(v, &format!("{field}.{name}"), src).map(|n| n.map_or(1, |n| n as u32))
    };
    Ok(Reply {
        line: crate::source::line_col(src.text, span.start).0,
        when,
        body,
        fault,
        latency_ms: r.latency_ms.unwrap_or(0),
        choices: count(r.choices.as_ref(), "choices")?,
        times: count(r.times.as_ref(), "times")?,
        finish_reason: r.finish_reason,
    })
}

/// The fault a reply plays, by name; `retry_after` goes with `rate_limit`.
fn parse_fault(
    f: &Spanned<String>,
    retry_after: Option<f64>,
    field: &str,
    src: &ScriptText<'_>,
) -> Result<Fault, SourceError> {
    Ok(match f.get_ref().as_str() {
        "rate_limit" => Fault::RateLimit {
            retry_after: retry_after.unwrap_or(1.0).max(0.0),
        },
        "server_error" => Fault::ServerError,
        "hang" => Fault::Hang,
        "garbage" => Fault::Garbage,
        "cut" => Fault::Cut,
        other => {
            return Err(src.at(
                f.span(),
                &format!("{field}.fault"),
                format!("expected one of {}, found {other:?}", FAULTS.join(", ")),
            ));
        }
    })
}

/// The bodies a reply writes out in the script (all but `replay`), in the
/// order they are checked.
fn inline_bodies(
    decision: Option<toml::Value>,
    content: Option<String>,
    tool_calls: Option<Vec<RawToolCall>>,
) -> Vec<Body> {
    let mut bodies = Vec::new();
    if let Some(d) = decision {
        bodies.push(Body::Decision(
            serde_json::to_value(d).unwrap_or(Value::Null),
        ));
    }
    if let Some(c) = content {
        bodies.push(Body::Content(c));
    }
    if let Some(calls) = tool_calls {
        bodies.push(Body::ToolCalls(
            calls
                .into_iter()
                .map(|c| {
                    let args = c
                        .arguments
                        .map_or(Value::Object(serde_json::Map::new()), |a| {
                            serde_json::to_value(a).unwrap_or(Value::Null)
                        });
                    (c.name, args)
                })
                .collect(),
        ));
    }
    bodies
}

/// The reply's one body, if any: refused when it gives several, or none
/// and no fault, or none for a `cut` to cut.
fn one_body(
    mut bodies: Vec<Body>,
    fault: Option<Fault>,
    span: Range<usize>,
    field: &str,
    src: &ScriptText<'_>,
) -> Result<Option<Body>, SourceError> {
    if bodies.len() > 1 {
        return Err(src.at(
            span,
            field,
            "expected one of decision, content, tool_calls or replay, found several".into(),
        ));
    }
    let body = bodies.pop();
    match (&body, fault) {
        (None, None) => Err(src.at(
            span,
            field,
            "expected a decision, content, tool_calls, replay or fault".into(),
        )),
        (None, Some(Fault::Cut)) => Err(src.at(
            span,
            &format!("{field}.fault"),
            "`cut` cuts a reply: give the decision, content or tool_calls it cuts".into(),
        )),
        _ => Ok(body),
    }
}

/// A reply's `when`: a `contains` text, a table of JSON tests, or both.
fn parse_when(w: Spanned<RawWhen>, field: &str, src: &ScriptText<'_>) -> Result<When, SourceError> {
    let span = w.span();
    let w = w.into_inner();
    let json = match w.json {
        None => Vec::new(),
        Some(table) => match serde_json::to_value(table) {
            Ok(Value::Object(m)) if !m.is_empty() => field_tests(&m),
            _ => {
                return Err(src.at(
                    span,
                    &format!("{field}.when.json"),
                    "expected a table of paths and plain values".into(),
                ));
            }
        },
    };
    if w.contains.is_none() && json.is_empty() {
        return Err(src.at(
            span,
            &format!("{field}.when"),
            "expected `contains`, `json` or both".into(),
        ));
    }
    Ok(When {
        contains: w.contains,
        json,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Result<Script, String> {
        parse(text, Path::new("mock.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn replies_and_faults_parse() {
        let s = p(r#"
chunk_chars = 2
refuse = ["tools"]

[[reply]]
decision = { type = "FINISH", reason = "done" }

[[reply]]
fault = "rate_limit"
retry_after = 0.5
times = 2

[[reply]]
tool_calls = [{ name = "navigate_to", arguments = { zone = "kitchen" } }]
fault = "cut"
"#)
        .unwrap();
        assert_eq!(s.chunk_chars, 2);
        assert_eq!(s.replies.len(), 3);
        assert_eq!(s.replies[0].line, 5);
        assert_eq!(
            s.replies[1].fault,
            Some(Fault::RateLimit { retry_after: 0.5 })
        );
        assert_eq!(s.replies[1].times, 2);
        assert!(matches!(s.replies[2].body, Some(Body::ToolCalls(_))));
    }

    #[test]
    fn bad_scripts_name_the_line_and_field() {
        assert_eq!(
            p("[[reply]]\nfault = \"explode\"\n").unwrap_err(),
            "mock.toml:2:9: `reply[1].fault`: expected one of rate_limit, server_error, hang, garbage, cut, found \"explode\""
        );
        assert_eq!(
            p("[[reply]]\nlatency_ms = 3\n").unwrap_err(),
            "mock.toml:1:1: `reply[1]`: expected a decision, content, tool_calls, replay or fault"
        );
        assert!(
            p("refuse = [\"vision\"]\n")
                .unwrap_err()
                .starts_with("mock.toml:1:11: `refuse`")
        );
        assert_eq!(
            p("ignore = [\"tools\"]\n").unwrap_err(),
            "mock.toml:1:11: `ignore`: expected one of tool_choice, json_schema, found \"tools\""
        );
        assert_eq!(
            p("ignore = [\"tool_choice\"]\n").unwrap().ignore,
            ["tool_choice"]
        );
        assert!(
            p("[[reply]]\ncontents = \"x\"\n")
                .unwrap_err()
                .contains("unknown field")
        );
    }

    #[test]
    fn when_reads_the_last_message_and_refuses_an_empty_condition() {
        let s = p("[[reply]]\nwhen = { contains = \"blocked\" }\ncontent = \"x\"\n").unwrap();
        let when = s.replies[0].when.as_ref().unwrap();
        let parts = serde_json::json!({"messages": [
            {"role": "user", "content": "the door"},
            {"role": "user", "content": [{"type": "text", "text": "is"}, {"type": "image_url"}, {"type": "text", "text": "blocked"}]},
        ]});
        assert_eq!(last_message_text(&parts), "is\nblocked");
        assert_eq!(when.mismatch(&parts), None);
        assert_eq!(
            when.mismatch(&serde_json::json!({"messages": []}))
                .as_deref(),
            Some("its last message does not contain \"blocked\"")
        );
        assert_eq!(
            p("[[reply]]\nwhen = {}\ncontent = \"x\"\n").unwrap_err(),
            "mock.toml:2:8: `reply[1].when`: expected `contains`, `json` or both"
        );
        assert!(
            p("[[reply]]\nwhen = { path = \"a\" }\ncontent = \"x\"\n")
                .unwrap_err()
                .contains("unknown field `path`")
        );
    }
}
