//! Talking to OpenAI-compatible models (DashScope's compatible mode for the
//! seeds' Qwen models, OpenAI, Ollama, vLLM, a llama.cpp server).
//!
//! - [`config`]: the `[llm]` settings, model roles and the redacted [`Secret`] key.
//! - [`client`]: one chat client over async-openai with a deadline, retries
//!   with backoff and jitter, streaming and per-call accounting.
//! - [`accumulate`]: rebuilding a reply (content, tool calls, usage) from
//!   streamed chunks — pure.
//! - [`retry`]: the backoff policy — pure.
//! - [`probe`]: what an endpoint honours (forced tool calls, JSON schemas),
//!   found by asking, not assumed.
//! - [`slots`]: how many calls an endpoint works on at once, decisions first.
//! - [`worker`]: a background thread with its own small tokio runtime, so the
//!   synchronous engine never blocks on the network.
//! - [`prompt`]: prompt templates (`assets/prompts/*.txt`) with `{var}` substitution.
//! - [`mock_server`] and [`mock_script`]: `robobrain mock-llm`, a real HTTP
//!   server speaking the chat-completions protocol from a script, for tests,
//!   benchmarks and offline demos.
//! - [`llama_server`]: llama.cpp's own server from the project venv, on
//!   loopback, for the real-model tests and benchmarks.
//! - [`model_name`]: skill names as a model may see them (OpenAI's function-name rule).

pub mod accumulate;
pub mod client;
pub mod config;
pub mod llama_server;
pub mod mock_script;
pub mod mock_server;
pub mod model_name;
pub mod probe;
pub mod prompt;
pub mod retry;
pub mod slots;
pub mod worker;

use thiserror::Error;

pub use client::{CallResult, CallStats, LlmClient};
pub use config::{LlmConfig, MaxTokens, PromptSize, Role, Secret, Structured};
pub use worker::{LlmWorker, Update};

/// Why a model call gave no usable reply. Messages never contain the API key.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum LlmError {
    /// The client could not be built.
    #[error("cannot set up the model client: {0}")]
    Setup(String),
    /// The call took longer than the deadline.
    #[error("no reply within {seconds} s")]
    Timeout {
        /// The deadline.
        seconds: f64,
    },
    /// 429 after every retry.
    #[error("rate limited (429) after {attempts} attempt(s)")]
    RateLimited {
        /// Attempts made.
        attempts: u32,
    },
    /// 5xx after every retry.
    #[error("server error ({status}) after {attempts} attempt(s)")]
    Server {
        /// The last status.
        status: u16,
        /// Attempts made.
        attempts: u32,
    },
    /// The endpoint refused the request (4xx other than 429).
    #[error("the endpoint refused the request ({status}): {message}")]
    Refused {
        /// The status.
        status: u16,
        /// The endpoint's message.
        message: String,
    },
    /// The endpoint could not be reached.
    #[error("cannot reach the endpoint: {0}")]
    Connection(String),
    /// The stream broke.
    #[error("the reply stream broke: {0}")]
    Stream(String),
    /// The stream ended before the model said it was done.
    #[error("the reply stream ended before the model finished")]
    Truncated,
    /// The body was not a chat completion.
    #[error("unusable reply: {0}")]
    BadReply(String),
    /// The worker thread is gone.
    #[error("the model worker has stopped")]
    WorkerGone,
}

impl LlmError {
    /// A short stable name for events (`timeout`, `rate_limited`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Setup(_) => "setup",
            Self::Timeout { .. } => "timeout",
            Self::RateLimited { .. } => "rate_limited",
            Self::Server { .. } => "server_error",
            Self::Refused { .. } => "refused",
            Self::Connection(_) => "connection",
            Self::Stream(_) => "stream_error",
            Self::Truncated => "truncated",
            Self::BadReply(_) => "bad_reply",
            Self::WorkerGone => "worker_gone",
        }
    }

    /// The same error with the attempt count filled in.
    pub(crate) fn after_attempts(self, n: u32) -> Self {
        match self {
            Self::RateLimited { .. } => Self::RateLimited { attempts: n },
            Self::Server { status, .. } => Self::Server {
                status,
                attempts: n,
            },
            other => other,
        }
    }

    /// Whether the endpoint refused a request feature (tools, response
    /// formats): the caller may ask again in a simpler form.
    pub fn is_unsupported_feature(&self) -> bool {
        matches!(
            self,
            Self::Refused {
                status: 400 | 404 | 415 | 422 | 501,
                ..
            }
        )
    }
}
