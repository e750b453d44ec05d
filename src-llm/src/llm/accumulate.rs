//! Rebuilding a streamed chat completion from its chunks: content, refusal
//! and reasoning text per choice, tool calls by index (the first non-empty id
//! and name win, arguments are concatenated), the finish reason and the
//! usage. Pure: chunks (JSON) in, a [`Completion`] out — the same code serves
//! a streamed reply and a plain one.
//!
//! Providers differ in small ways this tolerates: ids and names empty or
//! missing on later chunks, tool indexes starting at 1, a missing `index`
//! (taken as the call's position), reasoning text before the call, usage on
//! a last chunk with no choices.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool call, rebuilt.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ToolCall {
    /// The index the provider gave it.
    pub index: u64,
    /// Its id (the first non-empty one seen).
    pub id: String,
    /// The function's name (the first non-empty one seen).
    pub name: String,
    /// The arguments, as text (JSON when the model behaved).
    pub arguments: String,
}

/// One choice, rebuilt.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Choice {
    /// The text written.
    pub content: String,
    /// A refusal, when the model refused.
    pub refusal: String,
    /// Reasoning text some providers stream before the answer.
    pub reasoning: String,
    /// Tool calls, by index.
    pub tool_calls: Vec<ToolCall>,
    /// Why it stopped (`stop`, `tool_calls`, `length`, …); `None` when the
    /// stream ended before saying (a truncated reply).
    pub finish_reason: Option<String>,
}

/// Token counts, as the endpoint reported them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
}

/// A whole reply.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Completion {
    /// Choices by index.
    pub choices: BTreeMap<u64, Choice>,
    /// Usage, when reported.
    pub usage: Option<Usage>,
}

impl Completion {
    /// Choice 0's text, trimmed (empty when there is none).
    pub fn first_text(&self) -> String {
        self.choices
            .get(&0)
            .map(|c| c.content.trim().to_string())
            .unwrap_or_default()
    }
}

/// What one chunk added to choice 0, for streaming it out as tokens.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Delta {
    /// New content or tool-call argument text of choice 0.
    pub text: String,
}

/// Accumulates chunks into a [`Completion`].
#[derive(Debug, Clone, Default)]
pub struct Accumulator {
    completion: Completion,
}

fn text(v: Option<&Value>) -> &str {
    v.and_then(Value::as_str).unwrap_or("")
}

impl Accumulator {
    /// An empty accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one streamed chunk (`chat.completion.chunk`); returns the text it
    /// added to choice 0.
    pub fn push_chunk(&mut self, chunk: &Value) -> Delta {
        let mut delta_out = Delta::default();
        if let Some(usage) = chunk.get("usage").filter(|u| !u.is_null()) {
            self.completion.usage = Some(parse_usage(usage));
        }
        let Some(choices) = chunk.get("choices").and_then(Value::as_array) else {
            return delta_out;
        };
        for (pos, c) in choices.iter().enumerate() {
            let index = c.get("index").and_then(Value::as_u64).unwrap_or(pos as u64);
            let choice = self.completion.choices.entry(index).or_default();
            if let Some(delta) = c.get("delta") {
                let added = merge_message(choice, delta);
                if index == 0 {
                    delta_out.text.push_str(&added);
                }
            }
            if let Some(reason) = c.get("finish_reason").and_then(Value::as_str) {
                choice.finish_reason = Some(reason.to_string());
            }
        }
        delta_out
    }

    /// Adds a plain (non-streamed) `chat.completion` reply.
    pub fn push_completion(&mut self, reply: &Value) {
        if let Some(usage) = reply.get("usage").filter(|u| !u.is_null()) {
            self.completion.usage = Some(parse_usage(usage));
        }
        let Some(choices) = reply.get("choices").and_then(Value::as_array) else {
            return;
        };
        for (pos, c) in choices.iter().enumerate() {
            let index = c.get("index").and_then(Value::as_u64).unwrap_or(pos as u64);
            let choice = self.completion.choices.entry(index).or_default();
            if let Some(message) = c.get("message") {
                merge_message(choice, message);
            }
            if let Some(reason) = c.get("finish_reason").and_then(Value::as_str) {
                choice.finish_reason = Some(reason.to_string());
            }
        }
    }

    /// The reply so far.
    pub fn completion(&self) -> &Completion {
        &self.completion
    }

    /// The reply.
    pub fn finish(self) -> Completion {
        self.completion
    }
}

/// Merges a delta (or a whole message) into a choice; returns the text added
/// (content, then tool-call arguments).
fn merge_message(choice: &mut Choice, delta: &Value) -> String {
    let mut added = String::new();
    let content = text(delta.get("content"));
    choice.content.push_str(content);
    added.push_str(content);
    choice.refusal.push_str(text(delta.get("refusal")));
    choice.reasoning.push_str(text(
        delta
            .get("reasoning_content")
            .or_else(|| delta.get("reasoning")),
    ));
    if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
        for (pos, call) in calls.iter().enumerate() {
            let index = call
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(pos as u64);
            if !choice.tool_calls.iter().any(|t| t.index == index) {
                choice.tool_calls.push(ToolCall {
                    index,
                    ..ToolCall::default()
                });
                choice.tool_calls.sort_by_key(|t| t.index);
            }
            let Some(slot) = choice.tool_calls.iter_mut().find(|t| t.index == index) else {
                continue;
            };
            let id = text(call.get("id"));
            if slot.id.is_empty() && !id.is_empty() {
                slot.id = id.to_string();
            }
            let function = call.get("function");
            let name = text(function.and_then(|f| f.get("name")));
            if slot.name.is_empty() && !name.is_empty() {
                slot.name = name.to_string();
            }
            let args = function.and_then(|f| f.get("arguments"));
            let args = match args {
                Some(Value::String(s)) => s.clone(),
                // Some servers send arguments as an object in plain replies.
                Some(v) if !v.is_null() => v.to_string(),
                _ => String::new(),
            };
            slot.arguments.push_str(&args);
            added.push_str(&args);
        }
    }
    added
}

fn parse_usage(usage: &Value) -> Usage {
    let n = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        prompt_tokens: n("prompt_tokens"),
        completion_tokens: n("completion_tokens"),
    }
}

/// The JSON chunks of a recorded stream body: SSE (`data: {…}` lines, up to
/// `data: [DONE]`) or one chunk JSON a line. Lines that are neither are skipped.
pub fn chunks_of(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|line| {
            let line = line.trim();
            let data = line.strip_prefix("data:").map_or(line, str::trim_start);
            if data.is_empty() || data == "[DONE]" || !data.starts_with('{') {
                return None;
            }
            serde_json::from_str(data).ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_calls_rebuild_by_index_with_the_first_id_and_name() {
        let mut acc = Accumulator::new();
        acc.push_chunk(&json!({"choices":[{"index":0,"delta":{"content":"Reading"}}]}));
        let d = acc.push_chunk(&json!({"choices":[{"index":0,"delta":{"tool_calls":[
            {"index":1,"id":"call_1","type":"function","function":{"name":"read","arguments":""}}]}}]}));
        assert_eq!(d.text, "");
        acc.push_chunk(&json!({"choices":[{"index":0,"delta":{"tool_calls":[
            {"index":1,"id":"","function":{"name":"","arguments":"{\"pa"}}]}}]}));
        let d = acc.push_chunk(&json!({"choices":[{"index":0,"delta":{"tool_calls":[
            {"index":1,"function":{"arguments":"th\":1}"}}]},"finish_reason":"tool_calls"}]}));
        assert_eq!(d.text, "th\":1}");
        acc.push_chunk(&json!({"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3}}));
        let c = acc.finish();
        let choice = &c.choices[&0];
        assert_eq!(choice.content, "Reading");
        assert_eq!(
            choice.tool_calls,
            vec![ToolCall {
                index: 1,
                id: "call_1".into(),
                name: "read".into(),
                arguments: "{\"path\":1}".into()
            }]
        );
        assert_eq!(choice.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(c.usage.unwrap().prompt_tokens, 7);
    }

    #[test]
    fn a_stream_without_a_finish_reason_is_visibly_truncated() {
        let mut acc = Accumulator::new();
        acc.push_chunk(&json!({"choices":[{"index":0,"delta":{"content":"{\"ty"}}]}));
        assert_eq!(acc.finish().choices[&0].finish_reason, None);
    }

    #[test]
    fn recorded_bodies_split_into_chunks() {
        let sse = "data: {\"a\":1}\n\ndata: [DONE]\n\n";
        assert_eq!(chunks_of(sse), vec![json!({"a":1})]);
        let jsonl = "{\"a\":1}\n{\"b\":2}\n";
        assert_eq!(chunks_of(jsonl).len(), 2);
    }
}
