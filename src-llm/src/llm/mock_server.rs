//! `robobrain mock-llm`: a real HTTP server on loopback that speaks the
//! OpenAI chat-completions protocol — plain JSON and SSE streaming, tool
//! calls, several choices — and plays a [`Script`]: per request the next
//! reply, a recorded stream, or a fault (429 with `Retry-After`, 500, a hang,
//! a body that is not JSON, a stream cut mid-reply). Tests and benchmarks
//! point the real client at it; people use it for offline demos.
//!
//! The server runs on its own thread with its own runtime, so synchronous
//! callers (the scenario runner, tests) can start it too. It keeps a log of
//! the request bodies it received (never their headers: no key is stored)
//! and of when each streamed chunk left, for the latency benchmark.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body as HttpBody, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::mock_script::{Body, Fault, Reply, Script};

/// A request the server received.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    /// The JSON body.
    pub body: Value,
    /// Which `[[reply]]` answered it (from 0), if any did.
    pub reply: Option<usize>,
    /// When it arrived.
    pub at: Instant,
}

/// A streamed chunk that left the server.
#[derive(Debug, Clone, PartialEq)]
pub struct Sent {
    /// The request it answers (index into [`MockServer::received`]).
    pub request: usize,
    /// The text of choice 0 it carries.
    pub text: String,
    /// When it was written.
    pub at: Instant,
}

#[derive(Default)]
struct Log {
    received: Vec<Received>,
    /// Probes of what the endpoint honours (refused ones too): answered
    /// from the script's `refuse` and `ignore`, never from its replies.
    probes: Vec<Value>,
    sent: Vec<Sent>,
    /// (reply index, times used).
    cursor: (usize, u32),
}

struct Shared {
    script: Script,
    log: Mutex<Log>,
    /// The script's `slots`: one permit per request worked on.
    gate: Option<Arc<tokio::sync::Semaphore>>,
}

impl Shared {
    fn log(&self) -> std::sync::MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Logs `request` and, when `answer`, takes the next scripted reply
    /// for it — unless the request does not hold that reply's `when`, which
    /// then waits for the next request.
    fn take_reply(&self, request: &Value, answer: bool) -> (usize, Pick) {
        let mut log = self.log();
        let (i, used) = log.cursor;
        let pick = match self.script.replies.get(i) {
            _ if !answer => Pick::Refused,
            None => Pick::Exhausted,
            Some(r) => {
                if let Some(why) = r.when.as_ref().and_then(|w| w.mismatch(request)) {
                    Pick::Mismatch(format!(
                        "mock-llm: request {} does not match reply[{}] (line {}): {why}",
                        log.received.len() + 1,
                        i + 1,
                        r.line
                    ))
                } else {
                    log.cursor = if used + 1 >= r.times {
                        (i + 1, 0)
                    } else {
                        (i, used + 1)
                    };
                    Pick::Reply(i, r.clone())
                }
            }
        };
        log.received.push(Received {
            body: request.clone(),
            reply: match &pick {
                Pick::Reply(i, _) => Some(*i),
                _ => None,
            },
            at: Instant::now(),
        });
        (log.received.len() - 1, pick)
    }
}

/// What a request gets.
enum Pick {
    /// This reply (its index and the reply).
    Reply(usize, Reply),
    /// Nothing: the request uses a feature the script refuses.
    Refused,
    /// Nothing: every reply has been played.
    Exhausted,
    /// Nothing: the next reply's `when` does not hold, and why.
    Mismatch(String),
}

/// A running mock server; dropping it stops the server.
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MockError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// The IO error.
        source: std::io::Error,
    },
}

impl MockServer {
    /// Starts serving `script` on `addr` (`127.0.0.1:0` picks a free port).
    pub fn start(script: Script, addr: &str) -> Result<Self, MockError> {
        let bind_err = |source| MockError::Bind {
            addr: addr.to_string(),
            source,
        };
        let std_listener = std::net::TcpListener::bind(addr).map_err(bind_err)?;
        std_listener.set_nonblocking(true).map_err(bind_err)?;
        let local = std_listener.local_addr().map_err(bind_err)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(bind_err)?;
        let gate = script
            .slots
            .map(|n| Arc::new(tokio::sync::Semaphore::new(n)));
        let shared = Arc::new(Shared {
            script,
            log: Mutex::new(Log::default()),
            gate,
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/chat/completions", post(chat))
            .route("/v1/audio/speech", post(speech))
            .route("/audio/speech", post(speech))
            .route("/v1/audio/transcriptions", post(transcription))
            .route("/audio/transcriptions", post(transcription))
            .route("/v1/models", get(models))
            .route("/models", get(models))
            .with_state(shared.clone());
        let (stop, stopped) = oneshot::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("robobrain-mock-llm".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(std_listener) {
                        Ok(l) => l,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(()));
                    // Chunks leave at once (no Nagle delay), as from a real provider.
                    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
                        let _ = tcp.set_nodelay(true);
                    });
                    let _ = axum::serve(listener, app)
                        .with_graceful_shutdown(async {
                            let _ = stopped.await;
                        })
                        .await;
                });
                // Hung replies must not keep the thread alive.
                runtime.shutdown_background();
            })
            .map_err(bind_err)?;
        ready_rx
            .recv()
            .unwrap_or_else(|_| Err(std::io::Error::other("the server thread died")))
            .map_err(bind_err)?;
        Ok(Self {
            addr: local,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL to give a client (`http://127.0.0.1:PORT/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The requests received so far.
    pub fn received(&self) -> Vec<Received> {
        self.shared.log().received.clone()
    }

    /// The probe requests received so far ([`crate::llm::probe`]); they
    /// take no `[[reply]]` and are not in [`MockServer::received`].
    pub fn probes(&self) -> Vec<Value> {
        self.shared.log().probes.clone()
    }

    /// The streamed chunks sent so far.
    pub fn sent(&self) -> Vec<Sent> {
        self.shared.log().sent.clone()
    }

    /// Blocks until the server stops (for `robobrain mock-llm`).
    pub fn wait(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // Not joined: a hung reply ends with the runtime, in the background.
        self.thread.take();
    }
}

async fn models() -> Response {
    json_response(
        StatusCode::OK,
        &json!({"object": "list", "data": [{"id": "mock", "object": "model", "owned_by": "robobrain"}]}),
    )
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    raw_response(status, "application/json", body.to_string())
}

fn raw_response(status: StatusCode, content_type: &str, body: String) -> Response {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .body(HttpBody::from(body))
        .unwrap_or_default()
}

fn error_body(message: &str, kind: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
}

/// The request feature the script refuses, if the request uses one.
fn refused_feature(script: &Script, request: &Value) -> Option<&'static str> {
    let uses = |feature: &str| match feature {
        "tools" => request.get("tools").is_some_and(|t| !t.is_null()),
        "json_schema" | "json_object" => {
            request
                .pointer("/response_format/type")
                .and_then(Value::as_str)
                == Some(feature)
        }
        _ => false,
    };
    super::mock_script::FEATURES
        .iter()
        .find(|f| script.refuse.iter().any(|r| r == *f) && uses(f))
        .copied()
}

/// What a probe gets: the answer in the form it asks for, unless the
/// script `ignore`s that form — then plain text, as llama.cpp's server
/// answers an object `tool_choice`.
fn probe_reply(script: &Script, request: &Value) -> Reply {
    let ignores = |feature: &str| script.ignore.iter().any(|f| f == feature);
    let answer = json!({"status": "ready"});
    let body = if request.get("tool_choice").is_some_and(Value::is_object) {
        if ignores("tool_choice") {
            Body::Content("I am ready to help you. What would you like me to do?".into())
        } else {
            Body::ToolCalls(vec![(super::probe::PROBE_NAME.into(), answer)])
        }
    } else if ignores("json_schema") {
        Body::Content("Status: ready.".into())
    } else {
        Body::Content(answer.to_string())
    };
    Reply {
        line: 0,
        when: None,
        body: Some(body),
        fault: None,
        latency_ms: 0,
        choices: 1,
        times: 1,
        finish_reason: None,
    }
}

/// What OpenAI answers a request whose function names break its pattern
/// (`^[a-zA-Z0-9_-]+$`, at most 64): the whole request is refused.
fn bad_function_name(request: &Value) -> Option<String> {
    let tools = request.get("tools")?.as_array()?;
    tools.iter().enumerate().find_map(|(i, tool)| {
        let name = tool.pointer("/function/name").and_then(Value::as_str)?;
        (!crate::llm::model_name::is_valid(name)).then(|| {
            format!(
                "Invalid 'tools[{i}].function.name': string does not match pattern. \
                 Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$' \
                 (at most 64 characters), found {name:?}."
            )
        })
    })
}

async fn chat(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let request: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return json_response(
                StatusCode::BAD_REQUEST,
                &error_body(
                    &format!("mock-llm: the body is not JSON: {e}"),
                    "invalid_request_error",
                ),
            );
        }
    };
    if let Some(why) = bad_function_name(&request) {
        return json_response(
            StatusCode::BAD_REQUEST,
            &error_body(&why, "invalid_request_error"),
        );
    }
    // A request waits for its turn before it is read; a client that hangs
    // up meanwhile, or while it is served, frees its turn.
    let turn = match &shared.gate {
        Some(gate) => gate.clone().acquire_owned().await.ok(),
        None => None,
    };
    let refused = refused_feature(&shared.script, &request);
    if super::probe::is_probe(&request) {
        shared.log().probes.push(request.clone());
        if let Some(feature) = refused {
            return refusal(feature);
        }
        let reply = probe_reply(&shared.script, &request);
        return json_response(
            StatusCode::OK,
            &completion(&reply, &request, &shared.script.ignore),
        );
    }
    let (number, reply) = match reply_or_error(&shared, &request, refused) {
        Ok(picked) => picked,
        Err(response) => return *response,
    };
    let streamed = request.get("stream").and_then(Value::as_bool) == Some(true);
    if let Some(r) = delay_or_fault(&reply, streamed).await {
        return r;
    }
    let cut = reply.fault == Some(Fault::Cut);
    if streamed || matches!(reply.body, Some(Body::Replay(_))) {
        let mut frames = match &reply.body {
            Some(Body::Replay(text)) => replay_frames(text),
            _ => stream_frames(&reply, &request, &shared.script),
        };
        if cut {
            frames.truncate((frames.len() / 2).max(2));
        }
        stream_response(shared, number, frames, cut, turn)
    } else {
        json_response(
            StatusCode::OK,
            &completion(&reply, &request, &shared.script.ignore),
        )
    }
}

/// The request's number and the reply it gets, or the error it gets
/// instead: 400 for a refused feature, 409 when the script has run out or
/// the next reply's `when` does not hold (saying why).
fn reply_or_error(
    shared: &Shared,
    request: &Value,
    refused: Option<&str>,
) -> Result<(usize, Reply), Box<Response>> {
    let response = match shared.take_reply(request, refused.is_none()) {
        (number, Pick::Reply(_, reply)) => return Ok((number, reply)),
        (_, Pick::Refused) => refusal(refused.unwrap_or_default()),
        (_, Pick::Exhausted) => exhausted(shared),
        (_, Pick::Mismatch(why)) => {
            json_response(StatusCode::CONFLICT, &error_body(&why, "no_matching_reply"))
        }
    };
    Err(Box::new(response))
}

/// 400: the request uses a feature the script refuses.
fn refusal(feature: &str) -> Response {
    json_response(
        StatusCode::BAD_REQUEST,
        &error_body(
            &format!("mock-llm: this endpoint does not support {feature}"),
            "invalid_request_error",
        ),
    )
}

/// 409: every scripted reply has been played.
fn exhausted(shared: &Shared) -> Response {
    json_response(
        StatusCode::CONFLICT,
        &error_body(
            &format!(
                "mock-llm: the script has no more replies ({} played)",
                shared.script.replies.len()
            ),
            "script_exhausted",
        ),
    )
}

/// Waits the reply's latency; the response its fault calls for instead
/// of the reply (none for no fault or `cut`, which happens mid-stream).
async fn delay_or_fault(reply: &Reply, streamed: bool) -> Option<Response> {
    if reply.latency_ms > 0 {
        tokio::time::sleep(Duration::from_millis(reply.latency_ms)).await;
    }
    match reply.fault {
        Some(Fault::RateLimit { retry_after }) => {
            let mut r = json_response(
                StatusCode::TOO_MANY_REQUESTS,
                &error_body("mock-llm: rate limit reached", "rate_limit_error"),
            );
            if let Ok(v) = header::HeaderValue::from_str(&format!("{retry_after}")) {
                r.headers_mut().insert(header::RETRY_AFTER, v);
            }
            Some(r)
        }
        Some(Fault::ServerError) => Some(json_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            &error_body("mock-llm: internal error", "server_error"),
        )),
        Some(Fault::Hang) => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Some(json_response(
                StatusCode::GATEWAY_TIMEOUT,
                &error_body("mock-llm: hung", "server_error"),
            ))
        }
        Some(Fault::Garbage) if streamed => Some(raw_response(
            StatusCode::OK,
            "text/event-stream",
            "data: {\"choices\": [ {garbage\n\n".into(),
        )),
        Some(Fault::Garbage) => Some(raw_response(
            StatusCode::OK,
            "application/json",
            "{\"id\": \"x\", garbage".into(),
        )),
        Some(Fault::Cut) | None => None,
    }
}

/// `/audio/transcriptions`: the multipart upload must carry a WAV `file`;
/// the next `[[reply]]` answers (its `content` is the transcript; faults
/// as for chat). The logged request is `{"endpoint", "model", "file_bytes"}`.
async fn transcription(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let model = form_field(&body, "model").map(|m| String::from_utf8_lossy(m).trim().to_string());
    let file = form_field(&body, "file").unwrap_or_default();
    if !(file.starts_with(b"RIFF") && file.get(8..12) == Some(b"WAVE".as_slice())) {
        return json_response(
            StatusCode::BAD_REQUEST,
            &error_body(
                "mock-llm: the upload has no WAV `file` field",
                "invalid_request_error",
            ),
        );
    }
    let request = json!({
        "endpoint": "audio/transcriptions",
        "model": model,
        "file_bytes": file.len(),
    });
    let (_, reply) = match reply_or_error(&shared, &request, None) {
        Ok(picked) => picked,
        Err(response) => return *response,
    };
    if let Some(r) = delay_or_fault(&reply, false).await {
        return r;
    }
    let text = match &reply.body {
        Some(Body::Content(text)) => text.clone(),
        _ => String::new(),
    };
    #[allow(clippy::cast_precision_loss)]
    let seconds = (file.len().saturating_sub(44) / 32) as f64 / 1000.0;
    json_response(
        StatusCode::OK,
        &json!({ "text": text, "usage": {"type": "duration", "seconds": seconds} }),
    )
}

/// `/audio/speech`: a WAV tone as long as the text would take to say (60 ms
/// a character, 16 kHz mono). Speech uses no `[[reply]]`; the request is
/// logged as it came.
async fn speech(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let chars = request
        .get("input")
        .and_then(Value::as_str)
        .map_or(0, |t| t.chars().count());
    shared.take_reply(&request, false);
    let rate = 16_000_u32;
    let n = (chars.max(1) * 960).min(rate as usize * 60);
    let samples = (0..n)
        .map(|i| {
            #[allow(clippy::cast_precision_loss)]
            let t = i as f32 / rate as f32;
            0.2 * (2.0 * std::f32::consts::PI * 440.0 * t).sin()
        })
        .collect();
    let wav = crate::audio::wav_bytes(&crate::audio::Clip { rate, samples });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "audio/wav")
        .body(axum::body::Body::from(wav))
        .unwrap_or_default()
}

/// The value of multipart form field `name` (a plain scan: enough for a
/// mock that only async-openai talks to).
fn form_field<'a>(body: &'a [u8], name: &str) -> Option<&'a [u8]> {
    let boundary_end = body.windows(2).position(|w| w == b"\r\n")?;
    let boundary = &body[..boundary_end];
    let marker = format!("name=\"{name}\"");
    let at = find(body, marker.as_bytes())?;
    let start = at + find(&body[at..], b"\r\n\r\n")? + 4;
    let mut end_marker = b"\r\n".to_vec();
    end_marker.extend_from_slice(boundary);
    let end = start + find(&body[start..], &end_marker)?;
    Some(&body[start..end])
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Sends SSE frames one by one (paced by `chunk_delay_ms`), logging each;
/// a `cut` stream ends with an error, which drops the connection mid-body.
fn stream_response(
    shared: Arc<Shared>,
    request: usize,
    frames: Vec<(String, String)>,
    cut: bool,
    turn: Option<tokio::sync::OwnedSemaphorePermit>,
) -> Response {
    let delay = Duration::from_millis(shared.script.chunk_delay_ms);
    // The turn ends with the stream.
    let state = (frames.into_iter(), shared, false, turn);
    let stream =
        futures_util::stream::unfold(state, move |(mut frames, shared, done, turn)| async move {
            if done {
                return None;
            }
            match frames.next() {
                Some((data, text)) => {
                    if !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    shared.log().sent.push(Sent {
                        request,
                        text,
                        at: Instant::now(),
                    });
                    let frame: Result<Bytes, std::io::Error> =
                        Ok(Bytes::from(format!("data: {data}\n\n")));
                    Some((frame, (frames, shared, false, turn)))
                }
                None if cut => {
                    // Let what was sent reach the client before the connection drops.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Some((
                        Err(std::io::Error::other("mock-llm: stream cut")),
                        (frames, shared, true, turn),
                    ))
                }
                None => None,
            }
        });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(HttpBody::from_stream(stream))
        .unwrap_or_default()
}

/// A recorded body's events, as (data, text of choice 0).
fn replay_frames(body: &str) -> Vec<(String, String)> {
    let mut frames: Vec<(String, String)> = body
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let data = line.strip_prefix("data:").map_or(line, str::trim_start);
            (data.starts_with('{') || data == "[DONE]").then(|| (data.to_string(), String::new()))
        })
        .collect();
    if frames.last().is_none_or(|(d, _)| d != "[DONE]") {
        frames.push(("[DONE]".into(), String::new()));
    }
    frames
}

/// What a reply says, as (content, tool calls as (id, name, arguments text)).
/// A `decide` decision is a tool call when the request offers that tool,
/// unless the script ignores `tool_choice` (then it is text, as from a
/// server that did not force the call).
fn message_parts(
    reply: &Reply,
    request: &Value,
    ignore: &[String],
) -> (String, Vec<(String, String, String)>) {
    let forced = !ignore.iter().any(|f| f == "tool_choice");
    let offers_decide = forced
        && request
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|tools| {
                tools
                    .iter()
                    .any(|t| t.pointer("/function/name").and_then(Value::as_str) == Some("decide"))
            });
    match &reply.body {
        Some(Body::Decision(d)) if offers_decide => (
            String::new(),
            vec![("call_mock_0".into(), "decide".into(), d.to_string())],
        ),
        Some(Body::Decision(d)) => (d.to_string(), Vec::new()),
        Some(Body::Content(c)) => (c.clone(), Vec::new()),
        Some(Body::ToolCalls(calls)) => (
            String::new(),
            calls
                .iter()
                .enumerate()
                .map(|(i, (name, args))| (format!("call_mock_{i}"), name.clone(), args.to_string()))
                .collect(),
        ),
        Some(Body::Replay(_)) | None => (String::new(), Vec::new()),
    }
}

fn usage(request: &Value, content: &str, calls: &[(String, String, String)]) -> Value {
    let prompt = request.to_string().chars().count().div_ceil(4);
    let written =
        content.chars().count() + calls.iter().map(|c| c.2.chars().count()).sum::<usize>();
    let completion = written.div_ceil(4);
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion})
}

fn model_of(request: &Value) -> &str {
    request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("mock")
}

/// A plain `chat.completion` body.
fn completion(reply: &Reply, request: &Value, ignore: &[String]) -> Value {
    let (content, calls) = message_parts(reply, request, ignore);
    let finish = finish_reason(reply, &calls);
    let message = if calls.is_empty() {
        json!({"role": "assistant", "content": content})
    } else {
        let tool_calls: Vec<Value> = calls
            .iter()
            .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}}))
            .collect();
        json!({"role": "assistant", "content": null, "tool_calls": tool_calls})
    };
    let choices: Vec<Value> = (0..reply.choices)
        .map(|i| json!({"index": i, "message": message, "finish_reason": finish}))
        .collect();
    json!({
        "id": "chatcmpl-mock", "object": "chat.completion", "created": 0,
        "model": model_of(request), "choices": choices,
        "usage": usage(request, &content, &calls),
    })
}

/// Why the reply says it stopped: the script's word, else `stop` or `tool_calls`.
fn finish_reason<'a>(reply: &'a Reply, calls: &[(String, String, String)]) -> &'a str {
    match &reply.finish_reason {
        Some(reason) => reason,
        None if calls.is_empty() => "stop",
        None => "tool_calls",
    }
}

fn pieces(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n.max(1)).map(|c| c.iter().collect()).collect()
}

/// The SSE frames of a reply, as (data, text of choice 0).
fn stream_frames(reply: &Reply, request: &Value, script: &Script) -> Vec<(String, String)> {
    let (content, calls) = message_parts(reply, request, &script.ignore);
    let chunk_chars = script.chunk_chars;
    let model = model_of(request);
    let chunk = |choice: u32, delta: Value, finish: Option<&str>| {
        json!({
            "id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": model,
            "choices": [{"index": choice, "delta": delta, "finish_reason": finish}],
        })
        .to_string()
    };
    let mut frames = Vec::new();
    for choice in 0..reply.choices {
        let text_of = |t: &str| {
            if choice == 0 {
                t.to_string()
            } else {
                String::new()
            }
        };
        frames.push((
            chunk(choice, json!({"role": "assistant", "content": ""}), None),
            String::new(),
        ));
        for piece in pieces(&content, chunk_chars) {
            frames.push((
                chunk(choice, json!({"content": piece}), None),
                text_of(&piece),
            ));
        }
        for (i, (id, name, args)) in calls.iter().enumerate() {
            let head = json!({"tool_calls": [{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]});
            frames.push((chunk(choice, head, None), String::new()));
            for piece in pieces(args, chunk_chars) {
                let d = json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]});
                frames.push((chunk(choice, d, None), text_of(&piece)));
            }
        }
        let finish = finish_reason(reply, &calls);
        frames.push((chunk(choice, json!({}), Some(finish)), String::new()));
    }
    let usage_chunk = json!({
        "id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": model,
        "choices": [], "usage": usage(request, &content, &calls),
    });
    frames.push((usage_chunk.to_string(), String::new()));
    frames.push(("[DONE]".into(), String::new()));
    frames
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::accumulate::{Accumulator, chunks_of};
    use crate::llm::mock_script::parse;
    use std::path::Path;

    fn script(text: &str) -> Script {
        parse(text, Path::new("mock.toml")).unwrap()
    }

    #[test]
    fn streamed_frames_rebuild_into_the_reply() {
        let s = script(
            "[[reply]]\ntool_calls = [{ name = \"navigate_to\", arguments = { zone = \"kitchen\" } }]\nchoices = 2\n",
        );
        let s = Script {
            chunk_chars: 3,
            ..s
        };
        let frames = stream_frames(&s.replies[0], &json!({"model": "m"}), &s);
        let body = frames.iter().fold(String::new(), |mut body, (d, _)| {
            body.push_str("data: ");
            body.push_str(d);
            body.push_str("\n\n");
            body
        });
        let mut acc = Accumulator::new();
        for c in chunks_of(&body) {
            acc.push_chunk(&c);
        }
        let c = acc.finish();
        assert_eq!(c.choices.len(), 2);
        let call = &c.choices[&1].tool_calls[0];
        assert_eq!(call.name, "navigate_to");
        assert_eq!(call.arguments, "{\"zone\":\"kitchen\"}");
        assert_eq!(c.choices[&0].finish_reason.as_deref(), Some("tool_calls"));
        assert!(c.usage.is_some());
    }

    /// A reply with `when` answers only a request whose last message holds
    /// it; another request gets why not, and the reply waits for the next.
    #[test]
    fn a_reply_with_when_answers_only_a_request_that_holds_it() {
        let shared = Shared {
            script: script(
                r#"
[[reply]]
when = { contains = "Observation", json = { "last_result.code" = "blocked", "last_result.skill" = "~navigate" } }
content = "replan"

[[reply]]
content = "next"
"#,
            ),
            log: Mutex::new(Log::default()),
            gate: None,
        };
        let ask = |text: &str| json!({"messages": [{"role": "system", "content": "Observation {}"}, {"role": "user", "content": text}]});
        let why = |pick: Pick| match pick {
            Pick::Mismatch(why) => why,
            _ => panic!("expected a mismatch"),
        };
        let observed = |code: &str| {
            ask(&format!(
                "Observation (JSON):\n{{\"last_result\":{{\"result\":\"failed\",\"skill\":\"navigate_to\",\"code\":\"{code}\"}}}}"
            ))
        };
        assert_eq!(
            why(shared.take_reply(&observed("timeout"), true).1),
            "mock-llm: request 1 does not match reply[1] (line 2): `last_result.code` in its last message is \"timeout\", wanted \"blocked\""
        );
        assert_eq!(
            why(shared.take_reply(&ask("go to the kitchen"), true).1),
            "mock-llm: request 2 does not match reply[1] (line 2): its last message does not contain \"Observation\""
        );
        assert_eq!(
            why(shared.take_reply(&ask("Observation: none"), true).1),
            "mock-llm: request 3 does not match reply[1] (line 2): its last message holds no JSON"
        );
        assert!(matches!(
            shared.take_reply(&observed("blocked"), true).1,
            Pick::Reply(0, _)
        ));
        assert!(matches!(
            shared.take_reply(&ask("anything"), true).1,
            Pick::Reply(1, _)
        ));
        assert!(matches!(
            shared.take_reply(&ask("anything"), true).1,
            Pick::Exhausted
        ));
        let replies: Vec<Option<usize>> = shared.log().received.iter().map(|r| r.reply).collect();
        assert_eq!(replies, [None, None, None, Some(0), Some(1), None]);
    }

    #[test]
    fn a_decision_is_a_tool_call_only_when_the_request_offers_decide() {
        let s = script("[[reply]]\ndecision = { type = \"FINISH\", reason = \"done\" }\n");
        let with_tool = json!({"tools": [{"type": "function", "function": {"name": "decide"}}]});
        let (content, calls) = message_parts(&s.replies[0], &with_tool, &[]);
        assert!(content.is_empty());
        assert_eq!(calls[0].1, "decide");
        let llama_like = ["tool_choice".to_string()];
        let (content, calls) = message_parts(&s.replies[0], &with_tool, &llama_like);
        assert!(calls.is_empty(), "an ignored tool_choice forces no call");
        assert!(content.contains("FINISH"));
        let (content, calls) = message_parts(&s.replies[0], &json!({}), &[]);
        assert!(calls.is_empty());
        assert_eq!(
            serde_json::from_str::<Value>(&content).unwrap()["type"],
            "FINISH"
        );
    }
}

/// The audio endpoints, through the real client.
#[cfg(test)]
mod audio_tests {
    use std::path::Path;

    use super::*;
    use crate::llm::mock_script::parse;
    use crate::llm::{LlmClient, LlmConfig, LlmError};

    fn client(server: &MockServer) -> LlmClient {
        let config = LlmConfig {
            base_url: Some(server.base_url()),
            max_retries: 2,
            backoff_ms: 5,
            ..LlmConfig::default()
        };
        LlmClient::new(&config).unwrap()
    }

    fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn speech_is_a_wav_as_long_as_the_text_and_takes_no_reply() {
        let server =
            MockServer::start(parse("", Path::new("m.toml")).unwrap(), "127.0.0.1:0").unwrap();
        let wav =
            block_on(client(&server).speech("qwen-omni-flash", "Cherry", "All normal.")).unwrap();
        let clip = crate::audio::parse_wav(&wav, "speech").unwrap();
        assert_eq!(clip.rate, 16_000);
        assert_eq!(clip.samples.len(), 11 * 960);
        let got = server.received();
        assert_eq!(got[0].body["model"], "qwen-omni-flash");
        assert_eq!(got[0].body["voice"], "Cherry");
        assert_eq!(got[0].body["response_format"], "wav");
        assert_eq!(got[0].reply, None);
    }

    #[test]
    fn a_transcription_uploads_the_wav_and_retries_a_server_error() {
        let script = "[[reply]]\nfault = \"server_error\"\n\n[[reply]]\ncontent = \"去厨房\"\n";
        let server =
            MockServer::start(parse(script, Path::new("m.toml")).unwrap(), "127.0.0.1:0").unwrap();
        let wav = crate::audio::wav_bytes(&crate::audio::Clip {
            rate: 16_000,
            samples: vec![0.0; 1600],
        });
        let text = block_on(client(&server).transcribe("qwen-omni-flash", wav.clone())).unwrap();
        assert_eq!(text, "去厨房");
        let got = server.received();
        assert_eq!(got.len(), 2, "the 500 was retried");
        assert_eq!(got[1].body["model"], "qwen-omni-flash");
        assert_eq!(got[1].body["file_bytes"], wav.len());

        let e = block_on(client(&server).transcribe("m", b"not audio".to_vec())).unwrap_err();
        assert!(matches!(e, LlmError::Refused { status: 400, .. }), "{e:?}");
    }
}
