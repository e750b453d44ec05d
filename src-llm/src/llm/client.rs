//! One OpenAI-compatible chat client over async-openai: base URL and key from
//! [`LlmConfig`], a deadline per call, retries with backoff and jitter on 429,
//! 5xx and connection errors (our own tower service, so every attempt is
//! counted and `Retry-After` is obeyed), streaming, and the accounting of
//! each call. Request and reply bodies are plain JSON (async-openai's `byot`
//! methods): the endpoint's quirks are handled by [`super::accumulate`], not
//! by strict types.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use async_openai::types::audio::{
    AudioInput, CreateSpeechRequest, CreateTranscriptionRequestArgs, SpeechModel,
    SpeechResponseFormat, Voice,
};
use futures_util::StreamExt;
use serde_json::Value;

use super::accumulate::{Accumulator, Completion};
use super::config::{MaxTokens, Role};
use super::retry::{Backoff, Retryable, classify_status, parse_retry_after};
use super::slots::Slots;
use super::{LlmConfig, LlmError};
use crate::rng::SplitMix64;

/// A retry that happened during a call.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryNote {
    /// What failed (`429`, `503`, `connection`).
    pub cause: String,
    /// How long the client waited before trying again.
    pub delay: Duration,
}

/// What one call cost and how it went.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CallStats {
    /// HTTP attempts made.
    pub attempts: u32,
    /// Wall time from request to the last byte.
    pub latency: Duration,
    /// Wall time to the first streamed token.
    pub first_token: Option<Duration>,
    /// Retries, in order.
    pub retries: Vec<RetryNote>,
}

/// The reply of one call, with its accounting.
#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    /// The reply, or why there is none.
    pub reply: Result<Completion, LlmError>,
    /// The accounting.
    pub stats: CallStats,
}

/// The client. Cheap to clone; every call gets its own attempt counter.
#[derive(Clone)]
pub struct LlmClient {
    http: reqwest::Client,
    config: OpenAIConfig,
    backoff: Backoff,
    timeout: Duration,
    max_tokens: MaxTokens,
    /// The endpoint's slots, shared by every client of it in the process.
    slots: Option<Arc<Slots>>,
}

impl LlmClient {
    /// A client for `config`'s endpoint.
    pub fn new(config: &LlmConfig) -> Result<Self, LlmError> {
        let timeout = Duration::from_secs_f64(config.timeout_s);
        let http = reqwest::Client::builder()
            .connect_timeout(timeout)
            .build()
            .map_err(|e| LlmError::Setup(e.to_string()))?;
        let mut openai = OpenAIConfig::new().with_api_base(config.effective_base_url());
        // A keyless local server (Ollama, llama.cpp) still gets a harmless bearer.
        openai = openai.with_api_key(
            config
                .api_key
                .as_ref()
                .map_or("none", |k| k.expose())
                .to_string(),
        );
        Ok(Self {
            http,
            config: openai,
            backoff: Backoff {
                max_retries: config.max_retries,
                base: Duration::from_millis(config.backoff_ms),
                max: Duration::from_millis(config.backoff_max_ms),
            },
            timeout,
            max_tokens: config.max_tokens,
            slots: super::slots::for_endpoint(
                config.effective_base_url(),
                config.effective_slots() as usize,
            ),
        })
    }

    /// Sends a chat-completions request as background work
    /// ([`Role::Summary`]: its reply cap, and it yields its slot to any
    /// other call); see [`LlmClient::chat_as`].
    pub async fn chat(&self, body: Value, on_text: &mut (dyn FnMut(&str) + Send)) -> CallResult {
        self.chat_as(Role::Summary, body, on_text).await
    }

    /// Sends a chat-completions request made for `role` (`body` is the JSON
    /// request; its `stream` flag decides the transport) and returns the
    /// whole reply. `body` gets the role's `max_tokens` unless it sets its
    /// own. With a slot limit on the endpoint the call waits for a slot
    /// (decisions first), and a background call gives its slot up to a
    /// more urgent one and sends again when it gets one back; the deadline
    /// covers all of it. `on_text` gets each piece of choice 0's text as it
    /// streams.
    pub async fn chat_as(
        &self,
        role: Role,
        mut body: Value,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> CallResult {
        if let Some(fields) = body.as_object_mut()
            && !fields.contains_key("max_completion_tokens")
        {
            fields
                .entry("max_tokens")
                .or_insert_with(|| role.max_tokens(&self.max_tokens).into());
        }
        let started = Instant::now();
        let notes = Arc::new(Mutex::new(Attempts::default()));
        let client = self.openai(&notes);
        let mut first_token = None;
        let call = async {
            loop {
                let Some(slots) = &self.slots else {
                    return attempt(&client, body.clone(), started, &mut first_token, on_text)
                        .await;
                };
                let mut permit = slots.acquire(role.priority()).await;
                tokio::select! {
                    reply = attempt(&client, body.clone(), started, &mut first_token, on_text) => {
                        return reply;
                    }
                    () = permit.yielded() => {}
                }
            }
        };
        let reply = match tokio::time::timeout(self.timeout, call).await {
            Ok(Ok(completion)) => check_complete(completion),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(LlmError::Timeout {
                seconds: self.timeout.as_secs_f64(),
            }),
        };
        let attempts = std::mem::take(&mut *notes.lock().unwrap_or_else(PoisonError::into_inner));
        CallResult {
            reply: reply.map_err(|e| e.after_attempts(attempts.count)),
            stats: CallStats {
                attempts: attempts.count,
                latency: started.elapsed(),
                first_token,
                retries: attempts.retries,
            },
        }
    }
}

/// One request and its reply, streamed or whole.
async fn attempt(
    client: &Client<OpenAIConfig>,
    body: Value,
    started: Instant,
    first_token: &mut Option<Duration>,
    on_text: &mut (dyn FnMut(&str) + Send),
) -> Result<Completion, LlmError> {
    let mut acc = Accumulator::new();
    if body.get("stream").and_then(Value::as_bool) == Some(true) {
        let mut stream = client
            .chat()
            .create_stream_byot::<Value, Value>(body)
            .await
            .map_err(map_error)?;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(map_error)?;
            let delta = acc.push_chunk(&chunk);
            if !delta.text.is_empty() {
                first_token.get_or_insert_with(|| started.elapsed());
                on_text(&delta.text);
            }
        }
    } else {
        let reply: Value = client.chat().create_byot(body).await.map_err(map_error)?;
        acc.push_completion(&reply);
    }
    Ok(acc.finish())
}

impl LlmClient {
    /// The async-openai client over our retrying HTTP layer, counting attempts in `notes`.
    fn openai(&self, notes: &Arc<Mutex<Attempts>>) -> Client<OpenAIConfig> {
        Client::build(self.http.clone(), self.config.clone()).with_http_service(RetryService {
            http: self.http.clone(),
            backoff: self.backoff,
            notes: notes.clone(),
        })
    }

    /// One call with the deadline and retries of a chat call; errors carry
    /// the attempts made.
    async fn audio_call<T, F>(
        &self,
        call: impl FnOnce(Client<OpenAIConfig>) -> F,
    ) -> Result<T, LlmError>
    where
        F: std::future::Future<Output = Result<T, OpenAIError>>,
    {
        let notes = Arc::new(Mutex::new(Attempts::default()));
        let reply = match tokio::time::timeout(self.timeout, call(self.openai(&notes))).await {
            Ok(reply) => reply.map_err(map_error),
            Err(_) => Err(LlmError::Timeout {
                seconds: self.timeout.as_secs_f64(),
            }),
        };
        let attempts = notes.lock().unwrap_or_else(PoisonError::into_inner).count;
        reply.map_err(|e| e.after_attempts(attempts))
    }

    /// Speech for `text` from `model` with `voice` (`/audio/speech`), as WAV bytes.
    pub async fn speech(&self, model: &str, voice: &str, text: &str) -> Result<Vec<u8>, LlmError> {
        let request = CreateSpeechRequest {
            input: text.to_string(),
            model: SpeechModel::Other(model.to_string()),
            voice: Voice::Other(voice.to_string()),
            instructions: None,
            response_format: Some(SpeechResponseFormat::Wav),
            speed: None,
            stream_format: None,
        };
        let reply = self
            .audio_call(|client| async move { client.audio().speech().create(request).await })
            .await?;
        Ok(reply.bytes.to_vec())
    }

    /// The words in a WAV recording, by `model` (`/audio/transcriptions`).
    pub async fn transcribe(&self, model: &str, wav: Vec<u8>) -> Result<String, LlmError> {
        let request = CreateTranscriptionRequestArgs::default()
            .file(AudioInput::from_vec_u8("speech.wav".into(), wav))
            .model(model)
            .build()
            .map_err(|e| LlmError::Setup(e.to_string()))?;
        // Lenient about the rest of the body: providers differ on `usage`.
        let reply: Value = self
            .audio_call(|client| async move {
                client.audio().transcription().create_byot(request).await
            })
            .await?;
        reply
            .get("text")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| LlmError::BadReply("the transcription has no `text`".into()))
    }
}

/// A reply whose stream ended before any choice said why is truncated.
fn check_complete(completion: Completion) -> Result<Completion, LlmError> {
    match completion.choices.get(&0) {
        Some(c) if c.finish_reason.is_some() => Ok(completion),
        Some(_) => Err(LlmError::Truncated),
        None => Err(LlmError::BadReply("the reply has no choices".into())),
    }
}

#[derive(Debug, Default)]
struct Attempts {
    count: u32,
    retries: Vec<RetryNote>,
}

/// The HTTP layer under async-openai: sends, and retries what is worth retrying.
#[derive(Clone)]
struct RetryService {
    http: reqwest::Client,
    backoff: Backoff,
    notes: Arc<Mutex<Attempts>>,
}

impl RetryService {
    /// An attempt starts: counted now, so one a deadline cuts short counts too.
    fn started(&self) {
        self.notes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .count += 1;
    }

    fn note(&self, retry: RetryNote) {
        let mut notes = self.notes.lock().unwrap_or_else(PoisonError::into_inner);
        notes.retries.push(retry);
    }

    async fn send(self, factory: HttpRequestFactory) -> Result<reqwest::Response, OpenAIError> {
        let mut rng = SplitMix64::new(jitter_seed());
        let mut retry = 0;
        loop {
            let request = factory.build().await?;
            self.started();
            let outcome = self.http.execute(request).await;
            let (cause, retry_after) = match &outcome {
                Ok(response) => {
                    let after = response
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(parse_retry_after);
                    match classify_status(response.status().as_u16(), after) {
                        Retryable::Yes { retry_after } => {
                            (response.status().as_u16().to_string(), retry_after)
                        }
                        Retryable::No => (String::new(), None),
                    }
                }
                Err(e) if e.is_connect() => ("connection".to_string(), None),
                Err(_) => (String::new(), None),
            };
            if cause.is_empty() || retry >= self.backoff.max_retries {
                return outcome.map_err(OpenAIError::Reqwest);
            }
            let delay = self.backoff.delay(retry, retry_after, rng.next_f64());
            self.note(RetryNote { cause, delay });
            tokio::time::sleep(delay).await;
            retry += 1;
        }
    }
}

impl tower::Service<HttpRequestFactory> for RetryService {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<reqwest::Response, OpenAIError>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, factory: HttpRequestFactory) -> Self::Future {
        Box::pin(self.clone().send(factory))
    }
}

fn jitter_seed() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(7, |d| d.as_nanos() as u64)
}

/// Keeps at most `n` characters of a server's message.
fn clip(text: &str, n: usize) -> String {
    let t = text.trim();
    if t.chars().count() <= n {
        t.to_string()
    } else {
        format!("{}…", t.chars().take(n).collect::<String>())
    }
}

fn map_error(e: OpenAIError) -> LlmError {
    match e {
        OpenAIError::ApiError(api) => {
            let status = api.status_code.as_u16();
            let message = clip(&api.api_error.message, 300);
            match status {
                429 => LlmError::RateLimited { attempts: 0 },
                500..=599 => LlmError::Server {
                    status,
                    attempts: 0,
                },
                _ => LlmError::Refused { status, message },
            }
        }
        OpenAIError::Reqwest(e) if e.is_connect() => {
            LlmError::Connection(clip(&e.to_string(), 300))
        }
        OpenAIError::Reqwest(e) if e.is_timeout() => {
            LlmError::Connection(clip(&e.to_string(), 300))
        }
        OpenAIError::Reqwest(e) => LlmError::Stream(clip(&e.to_string(), 300)),
        OpenAIError::JSONDeserialize(e, _) => {
            LlmError::BadReply(format!("the endpoint sent a body that is not JSON: {e}"))
        }
        OpenAIError::StreamError(e) => LlmError::Stream(clip(&e.to_string(), 300)),
        other => LlmError::Stream(clip(&other.to_string(), 300)),
    }
}
