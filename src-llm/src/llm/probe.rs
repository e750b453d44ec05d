//! Finding out what an endpoint honours before a decision relies on it.
//!
//! Providers differ in what they do with a structured request, and not all
//! say so with an error: llama.cpp's server answers a `tool_choice` given as
//! an object with HTTP 200 and plain text (`type must be string, but is
//! object` in its log); a server may also accept `response_format` and not
//! enforce it. So the probe looks at what came back, not at the status: it
//! asks for a tiny structured answer (`{"status": "ready"}`) in each form,
//! best first — a forced tool call, then a JSON-schema response format — and
//! the first form whose reply *is* that answer wins; when none does,
//! decisions are asked as plain JSON described in the prompt, which any chat
//! endpoint can serve. Building the requests and judging the replies is pure;
//! [`probe`] sends them through the real client.

use serde_json::{Value, json};

use super::accumulate::Completion;
use super::client::{CallResult, LlmClient};
use super::config::{Role, Structured};

/// The name of the probe's tool and of its response schema: the mock
/// server recognises a probe by it.
pub const PROBE_NAME: &str = "robobrain_probe";

/// The longest probe reply, in tokens: the answer is about ten; a server
/// that ignores the form stops here instead of writing on.
pub const PROBE_MAX_TOKENS: u32 = 64;

/// The forms the probe tries, best first; plain JSON is what is left.
pub const PROBED: [Structured; 2] = [Structured::Tools, Structured::JsonSchema];

/// The answer each probe asks for.
pub fn probe_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"status": {"type": "string", "enum": ["ready"]}},
        "required": ["status"],
        "additionalProperties": false,
    })
}

/// The probe request for `mode` (`tools` or `json_schema`), for `model`.
pub fn request(mode: Structured, model: &str) -> Value {
    let mut body = json!({
        "model": model,
        "messages": [
            {"role": "system", "content": "You are a robot's planner. Answer only in the form asked for."},
            {"role": "user", "content": "Report that you are ready: status \"ready\"."},
        ],
        "temperature": 0.0,
        "stream": false,
        "max_tokens": PROBE_MAX_TOKENS,
    });
    let Some(fields) = body.as_object_mut() else {
        return body;
    };
    match mode {
        Structured::Tools | Structured::Auto => {
            fields.insert(
                "tools".into(),
                json!([{
                    "type": "function",
                    "function": {
                        "name": PROBE_NAME,
                        "description": "Report the planner's status.",
                        "parameters": probe_schema(),
                    },
                }]),
            );
            fields.insert(
                "tool_choice".into(),
                json!({"type": "function", "function": {"name": PROBE_NAME}}),
            );
        }
        Structured::JsonSchema => {
            fields.insert(
                "response_format".into(),
                json!({
                    "type": "json_schema",
                    "json_schema": {"name": PROBE_NAME, "strict": true, "schema": probe_schema()},
                }),
            );
        }
        Structured::Json => {}
    }
    body
}

/// Whether `request` is a probe (its forced tool or its schema is the probe's).
pub fn is_probe(request: &Value) -> bool {
    let named =
        |pointer: &str| request.pointer(pointer).and_then(Value::as_str) == Some(PROBE_NAME);
    named("/tool_choice/function/name") || named("/response_format/json_schema/name")
}

/// What one probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The reply was the answer, in the form asked for.
    Honoured,
    /// The endpoint answered, but not in the form asked for (what it did instead).
    Ignored(String),
    /// The endpoint refused the form (its error).
    Refused(String),
    /// No reply to judge (the endpoint could not be reached, timed out, failed).
    NoAnswer(String),
}

impl Verdict {
    /// A short name for logs (`honoured`, `ignored`, `refused`, `no answer`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Honoured => "honoured",
            Self::Ignored(_) => "ignored",
            Self::Refused(_) => "refused",
            Self::NoAnswer(_) => "no answer",
        }
    }
}

/// Judges the reply to the probe for `mode`: honoured only when the reply is
/// `{"status": "ready"}` in that form, whatever the HTTP status said.
pub fn judge(mode: Structured, result: &CallResult) -> Verdict {
    let completion = match &result.reply {
        Ok(c) => c,
        Err(e) if e.is_unsupported_feature() => return Verdict::Refused(e.to_string()),
        Err(e) => return Verdict::NoAnswer(e.to_string()),
    };
    match mode {
        Structured::Tools | Structured::Auto => judge_tool_call(completion),
        Structured::JsonSchema => judge_content(completion),
        Structured::Json => Verdict::Honoured,
    }
}

fn is_answer(text: &str) -> bool {
    serde_json::from_str::<Value>(text).is_ok_and(|v| v == json!({"status": "ready"}))
}

fn cut(completion: &Completion) -> &'static str {
    match completion
        .choices
        .get(&0)
        .and_then(|c| c.finish_reason.as_deref())
    {
        Some("length") => ", cut at the token cap",
        _ => "",
    }
}

fn judge_tool_call(completion: &Completion) -> Verdict {
    let Some(choice) = completion.choices.get(&0) else {
        return Verdict::Ignored("no choice came back".into());
    };
    match choice.tool_calls.first() {
        Some(call) if call.name == PROBE_NAME && is_answer(&call.arguments) => Verdict::Honoured,
        Some(call) if call.name == PROBE_NAME => Verdict::Ignored(format!(
            "the forced call's arguments were {}",
            clip(&call.arguments)
        )),
        Some(call) => Verdict::Ignored(format!("it called {} instead", clip(&call.name))),
        None => Verdict::Ignored(format!(
            "no tool call: it answered text ({}){}",
            clip(&choice.content),
            cut(completion)
        )),
    }
}

fn judge_content(completion: &Completion) -> Verdict {
    let Some(choice) = completion.choices.get(&0) else {
        return Verdict::Ignored("no choice came back".into());
    };
    if is_answer(choice.content.trim()) {
        Verdict::Honoured
    } else {
        Verdict::Ignored(format!(
            "the reply did not follow the schema ({}){}",
            clip(&choice.content),
            cut(completion)
        ))
    }
}

/// At most 60 characters of `text`, on one line.
fn clip(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 60 {
        format!("{}…", one_line.chars().take(60).collect::<String>())
    } else {
        format!("{one_line:?}")
    }
}

/// What the probe found: the form to ask in, and each form tried.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// The form decisions are asked in; `None` when the endpoint gave no
    /// reply to judge (it may be down): the caller keeps its own.
    pub mode: Option<Structured>,
    /// Each form tried, in order, with its verdict.
    pub tried: Vec<(Structured, Verdict)>,
}

impl Probe {
    /// The choice the probe's answers lead to (pure): the first form
    /// honoured; plain JSON when every form was refused or ignored; `None`
    /// when one had no answer before any was honoured.
    pub fn from_verdicts(tried: Vec<(Structured, Verdict)>) -> Self {
        let mut mode = Some(Structured::Json);
        for (form, verdict) in &tried {
            match verdict {
                Verdict::Honoured => {
                    mode = Some(*form);
                    break;
                }
                Verdict::NoAnswer(_) => {
                    mode = None;
                    break;
                }
                Verdict::Ignored(_) | Verdict::Refused(_) => {}
            }
        }
        Self { mode, tried }
    }

    /// One line for the run's log: what each form did and what was picked.
    pub fn summary(&self) -> String {
        let tried: Vec<String> = self
            .tried
            .iter()
            .map(|(form, verdict)| match verdict {
                Verdict::Honoured => format!("{} honoured", form.as_str()),
                Verdict::Ignored(why) | Verdict::Refused(why) | Verdict::NoAnswer(why) => {
                    format!("{} {} ({why})", form.as_str(), verdict.as_str())
                }
            })
            .collect();
        let tried = tried.join("; ");
        match self.mode {
            Some(mode) => format!(
                "structured output probed: {tried}: decisions are asked with {} from now on",
                mode.as_str()
            ),
            None => format!(
                "structured output could not be probed: {tried}: decisions are asked with tools, stepping down when refused"
            ),
        }
    }
}

/// Probes `client`'s endpoint with `model`: each form in [`PROBED`] until
/// one is honoured or the endpoint gives no answer. At most two small
/// calls, each capped at [`PROBE_MAX_TOKENS`].
pub async fn probe(client: &LlmClient, model: &str) -> Probe {
    let mut tried = Vec::new();
    for form in PROBED {
        let result = client
            .chat_as(Role::Decide, request(form, model), &mut |_| {})
            .await;
        let verdict = judge(form, &result);
        let stop = matches!(verdict, Verdict::Honoured | Verdict::NoAnswer(_));
        tried.push((form, verdict));
        if stop {
            break;
        }
    }
    Probe::from_verdicts(tried)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::accumulate::{Choice, ToolCall};
    use crate::llm::{CallStats, LlmError};

    fn reply(content: &str, calls: &[(&str, &str)], finish: &str) -> CallResult {
        let mut completion = Completion::default();
        completion.choices.insert(
            0,
            Choice {
                content: content.into(),
                tool_calls: calls
                    .iter()
                    .map(|(name, args)| ToolCall {
                        name: (*name).into(),
                        arguments: (*args).into(),
                        ..ToolCall::default()
                    })
                    .collect(),
                finish_reason: Some(finish.into()),
                ..Choice::default()
            },
        );
        CallResult {
            reply: Ok(completion),
            stats: CallStats::default(),
        }
    }

    #[test]
    fn the_requests_force_the_probe_and_are_recognised() {
        let tools = request(Structured::Tools, "m");
        assert_eq!(tools["tool_choice"]["function"]["name"], PROBE_NAME);
        assert_eq!(tools["tools"][0]["function"]["parameters"], probe_schema());
        assert_eq!(tools["max_tokens"], PROBE_MAX_TOKENS);
        let schema = request(Structured::JsonSchema, "m");
        assert_eq!(schema["response_format"]["type"], "json_schema");
        assert!(schema.get("tools").is_none());
        assert!(is_probe(&tools) && is_probe(&schema));
        assert!(!is_probe(&request(Structured::Json, "m")));
    }

    /// llama.cpp answers an object `tool_choice` with 200 and text: ignored,
    /// not honoured, whatever the status.
    #[test]
    fn a_reply_is_honoured_only_when_it_is_the_answer_in_the_form_asked() {
        let ready = r#"{"status":"ready"}"#;
        let tools = |r: &CallResult| judge(Structured::Tools, r);
        assert_eq!(
            tools(&reply("", &[(PROBE_NAME, ready)], "tool_calls")),
            Verdict::Honoured
        );
        assert_eq!(
            tools(&reply("You can use the function", &[], "length")),
            Verdict::Ignored(
                "no tool call: it answered text (\"You can use the function\"), cut at the token cap".into()
            )
        );
        assert!(
            matches!(tools(&reply("", &[("other", ready)], "tool_calls")), Verdict::Ignored(w) if w == "it called \"other\" instead")
        );
        assert!(matches!(
            tools(&reply("", &[(PROBE_NAME, "{}")], "tool_calls")),
            Verdict::Ignored(_)
        ));
        let schema = |r: &CallResult| judge(Structured::JsonSchema, r);
        assert_eq!(
            schema(&reply("{\n  \"status\": \"ready\"\n}", &[], "stop")),
            Verdict::Honoured
        );
        assert!(matches!(
            schema(&reply("{\"hero\": 1}", &[], "stop")),
            Verdict::Ignored(_)
        ));
        let refused = CallResult {
            reply: Err(LlmError::Refused {
                status: 400,
                message: "no tools".into(),
            }),
            stats: CallStats::default(),
        };
        assert!(matches!(tools(&refused), Verdict::Refused(_)));
        let down = CallResult {
            reply: Err(LlmError::Connection("refused".into())),
            stats: CallStats::default(),
        };
        assert!(matches!(schema(&down), Verdict::NoAnswer(_)));
    }

    #[test]
    fn the_first_honoured_form_wins_and_no_answer_decides_nothing() {
        let ignored = || Verdict::Ignored("text".into());
        let p = Probe::from_verdicts(vec![
            (Structured::Tools, ignored()),
            (Structured::JsonSchema, Verdict::Honoured),
        ]);
        assert_eq!(p.mode, Some(Structured::JsonSchema));
        assert!(
            p.summary()
                .contains("tools ignored (text); json_schema honoured"),
            "{}",
            p.summary()
        );
        let p = Probe::from_verdicts(vec![
            (Structured::Tools, Verdict::Refused("400".into())),
            (Structured::JsonSchema, ignored()),
        ]);
        assert_eq!(p.mode, Some(Structured::Json));
        assert!(p.summary().ends_with("asked with json from now on"));
        let p = Probe::from_verdicts(vec![(Structured::Tools, Verdict::NoAnswer("down".into()))]);
        assert_eq!(p.mode, None);
        assert!(
            p.summary()
                .starts_with("structured output could not be probed")
        );
    }
}

/// The probe through the real client against `mock-llm` imitating each
/// provider's behaviour.
#[cfg(test)]
mod through_the_mock {
    use std::path::Path;

    use super::*;
    use crate::llm::LlmConfig;
    use crate::llm::mock_script::parse;
    use crate::llm::mock_server::MockServer;

    /// What the probe finds at `url` (no retries, 2 s at most).
    fn probe_at(url: String) -> Probe {
        let client = LlmClient::new(&LlmConfig {
            base_url: Some(url),
            max_retries: 0,
            timeout_s: 2.0,
            ..LlmConfig::default()
        })
        .unwrap();
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(probe(&client, "m"))
    }

    /// The mode found for a mock with `settings`, and the server.
    fn probed(settings: &str) -> (Probe, MockServer) {
        let script = format!("{settings}\n[[reply]]\ncontent = \"scripted\"\n");
        let server =
            MockServer::start(parse(&script, Path::new("m.toml")).unwrap(), "127.0.0.1:0").unwrap();
        (probe_at(server.base_url()), server)
    }

    #[test]
    fn each_provider_behaviour_gets_the_mode_that_works() {
        let (p, server) = probed("");
        assert_eq!(p.mode, Some(Structured::Tools), "{}", p.summary());
        assert_eq!(server.probes().len(), 1);
        assert!(
            server.received().is_empty(),
            "a probe takes no scripted reply"
        );

        // llama.cpp: the object tool_choice answered with 200 and text.
        let (p, server) = probed("ignore = [\"tool_choice\"]");
        assert_eq!(p.mode, Some(Structured::JsonSchema), "{}", p.summary());
        assert!(
            matches!(&p.tried[0], (Structured::Tools, Verdict::Ignored(why)) if why.starts_with("no tool call"))
        );
        assert_eq!(server.probes().len(), 2);

        let (p, _) = probed("ignore = [\"tool_choice\", \"json_schema\"]");
        assert_eq!(p.mode, Some(Structured::Json), "{}", p.summary());

        let (p, server) = probed("refuse = [\"tools\", \"json_schema\"]");
        assert_eq!(p.mode, Some(Structured::Json), "{}", p.summary());
        assert!(matches!(p.tried[0].1, Verdict::Refused(_)));
        assert_eq!(server.probes().len(), 2, "each form was asked, and refused");
        assert!(server.received().is_empty());
    }

    #[test]
    fn an_endpoint_that_is_not_there_decides_nothing() {
        // A port just released: nothing listens there.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let p = probe_at(format!("http://127.0.0.1:{port}/v1"));
        assert_eq!(p.mode, None);
        assert_eq!(p.tried.len(), 1);
    }
}
