//! The `[llm]` configuration: where the model lives, which model plays which
//! role, and how patient the client is. The API key is a [`Secret`]: it is
//! never serialised, printed or logged.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::source::SourceError;

/// A value that must never be shown: `Debug` and `Display` print `[redacted]`,
/// and it is never serialised.
#[derive(Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself, for the one place that needs it (the HTTP header).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// How the decision is asked for in structured form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Structured {
    /// Probe the endpoint before the first decision ([`super::probe`]): the
    /// first of tool calling with a forced `tool_choice`, a JSON-schema
    /// response format and plain JSON that it honours — judged by what
    /// comes back, not the status — and step down further when it refuses
    /// one later (remembered per run).
    #[default]
    Auto,
    /// A forced `decide` tool call.
    Tools,
    /// `response_format: json_schema`.
    JsonSchema,
    /// Plain JSON described in the prompt (works with any chat endpoint).
    Json,
}

impl Structured {
    /// The name as written in config and events.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Tools => "tools",
            Self::JsonSchema => "json_schema",
            Self::Json => "json",
        }
    }
}

/// How much the decide prompt says (`[llm] prompt`): a small local model
/// reads every prompt token before it writes one (365–445 tokens/s on two
/// cores), so it gets the compact prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptSize {
    /// `compact` for a local endpoint, `full` for others.
    #[default]
    Auto,
    /// The short system prompt: decision types in one paragraph, each skill
    /// as a one-line signature (about a third of `full`).
    Compact,
    /// The long system prompt: patrol rules and every skill's function
    /// definition with its whole argument schema.
    Full,
}

impl PromptSize {
    /// The name as written in config.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Compact => "compact",
            Self::Full => "full",
        }
    }
}

/// The longest reply each role may write, in tokens (`[llm.max_tokens]`,
/// sent as `max_tokens`): a small model that repeats itself stops at the
/// cap instead of holding the server for minutes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MaxTokens {
    /// A decision (and its repair).
    pub decide: u32,
    /// Understanding an utterance.
    pub intent: u32,
    /// A summary or an analysis of a conversation, a home turn's summary.
    pub summary: u32,
    /// What the camera sees.
    pub vision: u32,
}

impl Default for MaxTokens {
    fn default() -> Self {
        Self {
            decide: 400,
            intent: 200,
            summary: 300,
            vision: 300,
        }
    }
}

/// What a model call is for: its reply cap and its place in the queue for
/// an endpoint's slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// A decision, or its repair.
    Decide,
    /// Understanding an utterance.
    Intent,
    /// A summary or an analysis: background work.
    Summary,
    /// A look through the camera.
    Vision,
}

impl Role {
    /// The role of a call made for `purpose` (`decide`, `repair`, `intent`,
    /// `watch`, `summary`, …): anything not named is background work.
    pub fn of_purpose(purpose: &str) -> Self {
        match purpose {
            "decide" | "repair" => Self::Decide,
            "intent" => Self::Intent,
            "watch" | "vision" => Self::Vision,
            _ => Self::Summary,
        }
    }

    /// Its reply cap in `limits`.
    pub fn max_tokens(self, limits: &MaxTokens) -> u32 {
        match self {
            Self::Decide => limits.decide,
            Self::Intent => limits.intent,
            Self::Summary => limits.summary,
            Self::Vision => limits.vision,
        }
    }

    /// Its priority for a slot.
    pub fn priority(self) -> super::slots::Priority {
        use super::slots::Priority;
        match self {
            Self::Decide => Priority::Decide,
            Self::Intent => Priority::Intent,
            Self::Vision => Priority::Vision,
            Self::Summary => Priority::Background,
        }
    }
}

/// The model brain's settings (`[llm]`).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    /// OpenAI-compatible base URL (`…/v1`); env `OPENAI_BASE_URL`.
    pub base_url: Option<String>,
    /// API key; env `OPENAI_API_KEY`. Never serialised or shown.
    #[serde(skip_serializing)]
    pub api_key: Option<Secret>,
    /// Model that decides (seed 000: `qwen-max`); env `QWEN_MAX_MODEL`.
    pub decision_model: String,
    /// Model that looks at images; env `QWEN_VL_MODEL`.
    pub vision_model: String,
    /// Model that speaks and listens; env `QWEN_OMNI_MODEL`.
    pub omni_model: String,
    /// Model that writes summaries; env `ROBOBRAIN_SUMMARY_MODEL`.
    pub summary_model: String,
    /// Wall seconds one model call may take, retries included; env `ACTION_TIMEOUT`.
    pub timeout_s: f64,
    /// Retries on 429, 5xx and connection errors.
    pub max_retries: u32,
    /// First backoff delay, milliseconds (doubles per retry, with jitter).
    pub backoff_ms: u64,
    /// Longest backoff delay, milliseconds.
    pub backoff_max_ms: u64,
    /// How the decision is asked for.
    pub structured: Structured,
    /// Stream tokens as the model writes them.
    pub stream: bool,
    /// Sampling temperature.
    pub temperature: f64,
    /// Consecutive failed decisions after which the model rests.
    pub cooldown_after: u32,
    /// Sim seconds the model rests; the rule brain decides meanwhile.
    pub cooldown_s: f64,
    /// Folder of prompt templates overriding the built-in ones (`decide_system.txt`, …).
    pub prompts_dir: Option<String>,
    /// How much the decide prompt says; unset (`auto`): `compact` for a
    /// local endpoint, `full` for others.
    pub prompt: PromptSize,
    /// Ask the model what the rule parser did not understand.
    pub recognize_intents: bool,
    /// The longest reply per role, in tokens.
    pub max_tokens: MaxTokens,
    /// Calls the endpoint works on at once (0: no limit); unset: 1 for an
    /// endpoint on this machine or the local network (a llama.cpp or
    /// Ollama server), no limit for others.
    pub slots: Option<u32>,
}

impl fmt::Debug for LlmConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("decision_model", &self.decision_model)
            .field("timeout_s", &self.timeout_s)
            .field("structured", &self.structured)
            .finish_non_exhaustive()
    }
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            base_url: None,
            api_key: None,
            decision_model: "qwen-max".into(),
            vision_model: "qwen-vl-plus".into(),
            omni_model: "qwen-omni-flash".into(),
            summary_model: "qwen-max".into(),
            timeout_s: 10.0,
            max_retries: 2,
            backoff_ms: 200,
            backoff_max_ms: 4000,
            structured: Structured::Auto,
            stream: true,
            temperature: 0.0,
            cooldown_after: 3,
            cooldown_s: 60.0,
            prompts_dir: None,
            prompt: PromptSize::Auto,
            recognize_intents: true,
            max_tokens: MaxTokens::default(),
            slots: None,
        }
    }
}

impl LlmConfig {
    /// Whether a model endpoint is configured (a base URL or an API key).
    pub fn is_configured(&self) -> bool {
        self.base_url.as_deref().is_some_and(|u| !u.is_empty())
            || self.api_key.as_ref().is_some_and(|k| !k.is_empty())
    }

    /// The base URL in use (OpenAI's when none is set).
    pub fn effective_base_url(&self) -> &str {
        self.base_url
            .as_deref()
            .filter(|u| !u.is_empty())
            .unwrap_or("https://api.openai.com/v1")
    }

    /// Calls the endpoint works on at once (0: no limit): `slots`, else 1
    /// for a local endpoint (loopback, a private address, `localhost`,
    /// `*.local`), else no limit.
    pub fn effective_slots(&self) -> u32 {
        self.slots
            .unwrap_or_else(|| u32::from(is_local(self.effective_base_url())))
    }

    /// The decide prompt in use: `prompt`, or for `auto` `compact` when the
    /// endpoint is local (as for [`Self::effective_slots`]), else `full`.
    pub fn effective_prompt(&self) -> PromptSize {
        match self.prompt {
            PromptSize::Auto if is_local(self.effective_base_url()) => PromptSize::Compact,
            PromptSize::Auto => PromptSize::Full,
            chosen => chosen,
        }
    }

    /// Applies the seed's environment variables.
    pub fn apply_env(
        &mut self,
        get: &impl Fn(&str) -> Option<String>,
    ) -> Result<(), (String, String)> {
        if let Some(v) = get("OPENAI_BASE_URL") {
            self.base_url = Some(v);
        }
        if let Some(v) = get("OPENAI_API_KEY") {
            self.api_key = Some(Secret::new(v));
        }
        for (name, slot) in [
            ("QWEN_MAX_MODEL", &mut self.decision_model),
            ("QWEN_VL_MODEL", &mut self.vision_model),
            ("QWEN_OMNI_MODEL", &mut self.omni_model),
            ("ROBOBRAIN_SUMMARY_MODEL", &mut self.summary_model),
        ] {
            if let Some(v) = get(name) {
                *slot = v;
            }
        }
        if let Some(v) = get("ACTION_TIMEOUT") {
            match v.trim().parse::<f64>() {
                Ok(s) if s.is_finite() && s > 0.0 => self.timeout_s = s,
                _ => {
                    return Err((
                        "ACTION_TIMEOUT".into(),
                        format!("expected positive seconds, found {v:?}"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Checks ranges; `text` locates the key in `file`.
    pub fn validate(&self, text: &str, file: &Path) -> Result<(), SourceError> {
        let err = |key: &str, msg: String| Err(SourceError::at_key(file, text, key, msg));
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0) {
            return err(
                "llm.timeout_s",
                format!("expected positive seconds, found {}", self.timeout_s),
            );
        }
        if !(0.0..=2.0).contains(&self.temperature) {
            return err(
                "llm.temperature",
                format!("expected a number in [0, 2], found {}", self.temperature),
            );
        }
        if self.backoff_max_ms < self.backoff_ms {
            return err(
                "llm.backoff_max_ms",
                format!(
                    "expected at least backoff_ms ({}), found {}",
                    self.backoff_ms, self.backoff_max_ms
                ),
            );
        }
        if !(self.cooldown_s.is_finite() && self.cooldown_s >= 0.0) {
            return err(
                "llm.cooldown_s",
                format!("expected seconds ≥ 0, found {}", self.cooldown_s),
            );
        }
        if let Some(url) = &self.base_url
            && !url.is_empty()
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return err(
                "llm.base_url",
                format!("expected an http:// or https:// URL, found {url:?}"),
            );
        }
        for (key, cap) in [
            ("llm.max_tokens.decide", self.max_tokens.decide),
            ("llm.max_tokens.intent", self.max_tokens.intent),
            ("llm.max_tokens.summary", self.max_tokens.summary),
            ("llm.max_tokens.vision", self.max_tokens.vision),
        ] {
            if cap < 16 {
                return err(key, format!("expected at least 16 tokens, found {cap}"));
            }
        }
        for (key, model) in [
            ("llm.decision_model", &self.decision_model),
            ("llm.vision_model", &self.vision_model),
            ("llm.omni_model", &self.omni_model),
            ("llm.summary_model", &self.summary_model),
        ] {
            if model.trim().is_empty() {
                return err(key, "expected a model name, found an empty string".into());
            }
        }
        Ok(())
    }
}

/// Whether `url`'s host is this machine or the local network (`localhost`,
/// a `*.local` name, a loopback, private or link-local address).
fn is_local(url: &str) -> bool {
    use url::{Host, Url};
    match Url::parse(url).ok().as_ref().and_then(Url::host) {
        // The parser gives domain names in lower case.
        Some(Host::Domain(name)) => {
            name == "localhost" || name.rsplit_once('.').is_some_and(|(_, tld)| tld == "local")
        }
        Some(Host::Ipv4(ip)) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        Some(Host::Ipv6(ip)) => ip.is_loopback() || ip.is_unique_local(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_never_shown_or_serialised() {
        let c = LlmConfig {
            api_key: Some(Secret::new("sk-very-secret")),
            ..LlmConfig::default()
        };
        assert!(!format!("{c:?}").contains("sk-very"));
        assert_eq!(format!("{}", Secret::new("sk-x")), "[redacted]");
        let json = serde_json::to_string(&c).unwrap();
        assert!(!json.contains("sk-very"), "{json}");
    }

    #[test]
    fn local_endpoints_get_one_slot_by_default() {
        let slots = |url: &str| {
            LlmConfig {
                base_url: Some(url.into()),
                ..LlmConfig::default()
            }
            .effective_slots()
        };
        for local in [
            "http://127.0.0.1:8080/v1",
            "http://localhost:11434/v1",
            "http://192.168.1.20:8080/v1",
            "http://[::1]:8080/v1",
            "http://gpu-box.local/v1",
        ] {
            assert_eq!(slots(local), 1, "{local}");
        }
        for remote in [
            "https://api.openai.com/v1",
            "https://dashscope.aliyuncs.com/compatible-mode/v1",
        ] {
            assert_eq!(slots(remote), 0, "{remote}");
        }
        let four = LlmConfig {
            base_url: Some("http://127.0.0.1:8080/v1".into()),
            slots: Some(4),
            ..LlmConfig::default()
        };
        assert_eq!(four.effective_slots(), 4);
    }

    #[test]
    fn local_endpoints_get_the_compact_prompt_by_default() {
        let prompt = |url: &str, prompt: PromptSize| {
            LlmConfig {
                base_url: Some(url.into()),
                prompt,
                ..LlmConfig::default()
            }
            .effective_prompt()
        };
        let local = "http://127.0.0.1:8080/v1";
        let remote = "https://dashscope.aliyuncs.com/compatible-mode/v1";
        assert_eq!(prompt(local, PromptSize::Auto), PromptSize::Compact);
        assert_eq!(prompt(remote, PromptSize::Auto), PromptSize::Full);
        assert_eq!(prompt(local, PromptSize::Full), PromptSize::Full);
        assert_eq!(prompt(remote, PromptSize::Compact), PromptSize::Compact);
        let parsed: LlmConfig = toml::from_str("prompt = \"compact\"").unwrap();
        assert_eq!(parsed.prompt, PromptSize::Compact);
    }

    #[test]
    fn each_role_has_its_cap_and_decisions_go_first() {
        let caps = MaxTokens::default();
        assert_eq!(Role::of_purpose("repair"), Role::Decide);
        assert_eq!(Role::of_purpose("summary"), Role::Summary);
        assert_eq!(Role::of_purpose("watch").max_tokens(&caps), caps.vision);
        assert!(Role::Decide.priority() > Role::Intent.priority());
        assert!(Role::Vision.priority() > Role::Summary.priority());
    }

    #[test]
    fn the_seed_variables_override() {
        let mut c = LlmConfig::default();
        let env = |name: &str| match name {
            "OPENAI_BASE_URL" => Some("http://127.0.0.1:9/v1".to_string()),
            "OPENAI_API_KEY" => Some("k".to_string()),
            "QWEN_MAX_MODEL" => Some("qwen-plus".to_string()),
            "ACTION_TIMEOUT" => Some("2.5".to_string()),
            _ => None,
        };
        c.apply_env(&env).unwrap();
        assert_eq!(c.decision_model, "qwen-plus");
        assert_eq!(c.timeout_s, 2.5);
        assert!(c.is_configured());
        let bad = |name: &str| (name == "ACTION_TIMEOUT").then(|| "soon".to_string());
        let (name, msg) = c.apply_env(&bad).unwrap_err();
        assert_eq!(name, "ACTION_TIMEOUT");
        assert_eq!(msg, "expected positive seconds, found \"soon\"");
    }
}
