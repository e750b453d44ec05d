//! A closed window's summary and analysis: by the model's summary role
//! (`[llm] summary_model`, prompts `memory_summary.txt` and
//! `memory_analysis.txt`) when a model is configured, otherwise — or when
//! the call fails — an extractive summary and the rule analysis.
//!
//! The extractive summary keeps, from each message, the sentence that shares
//! most words with the whole window (the first on a tie), cut to 160
//! characters, as `operator: …` / `robot: …` joined by ` | `.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};

use super::analyzer::{self, Analysis};
use super::store::Message;
use super::tokenize::words;
use crate::llm::prompt::Prompts;
use crate::llm::{LlmClient, LlmConfig};

/// Longest sentence kept per message, in characters.
const SENTENCE_CHARS: usize = 160;

fn sentences(text: &str) -> Vec<&str> {
    text.split_inclusive(['.', '!', '?', '。', '！', '？', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

fn speaker(role: &str) -> &str {
    if role == "user" { "operator" } else { "robot" }
}

/// The extractive summary of `window`.
pub fn extractive(window: &[Message]) -> String {
    let all: BTreeSet<String> = window.iter().flat_map(|m| words(&m.content)).collect();
    window
        .iter()
        .filter_map(|m| {
            let best = sentences(&m.content)
                .into_iter()
                .enumerate()
                .max_by(|a, b| {
                    let score = |s: &str| words(s).iter().filter(|w| all.contains(*w)).count();
                    score(a.1).cmp(&score(b.1)).then(b.0.cmp(&a.0))
                })?;
            let s: String = best.1.chars().take(SENTENCE_CHARS).collect();
            Some(format!("{}: {s}", speaker(&m.role)))
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The model's summary role, called synchronously (only ever off the kernel thread).
pub struct ModelHelper {
    client: LlmClient,
    model: String,
    temperature: f64,
    prompts: Prompts,
    runtime: tokio::runtime::Runtime,
}

impl ModelHelper {
    /// The helper for `config`, or `None` when no model is configured.
    pub fn new(config: &LlmConfig) -> Result<Option<Self>, String> {
        if !config.is_configured() {
            return Ok(None);
        }
        let client = LlmClient::new(config).map_err(|e| e.to_string())?;
        let prompts = Prompts::load(config.prompts_dir.as_deref().map(std::path::Path::new))
            .map_err(|e| e.to_string())?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Some(Self {
            client,
            model: config.summary_model.clone(),
            temperature: config.temperature,
            prompts,
            runtime,
        }))
    }

    /// The summary model's name.
    pub fn model(&self) -> &str {
        &self.model
    }

    fn ask(&self, prompt: &str) -> Result<(String, Duration), String> {
        let body = json!({
            "model": self.model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": self.temperature,
            "stream": false,
        });
        let result = self
            .runtime
            .block_on(self.client.chat(body, &mut |_: &str| {}));
        let completion = result.reply.map_err(|e| e.to_string())?;
        let text = completion.first_text();
        if text.is_empty() {
            return Err("the model's reply is empty".into());
        }
        Ok((text, result.stats.latency))
    }

    /// The model's summary of a transcript.
    pub fn summarize(&self, transcript: &str) -> Result<String, String> {
        let prompt = self
            .prompts
            .render("memory_summary.txt", &[("conversation", transcript)])
            .map_err(|e| e.to_string())?;
        self.ask(&prompt).map(|r| r.0)
    }

    /// The model's analysis of a text.
    pub fn analyze(&self, text: &str) -> Result<Analysis, String> {
        let prompt = self
            .prompts
            .render("memory_analysis.txt", &[("text", text)])
            .map_err(|e| e.to_string())?;
        analyzer::parse_model_reply(&self.ask(&prompt)?.0)
    }
}

/// A summary and analysis with how they were made (`metadata`), and the
/// notices of any model failure that the fallback covered.
pub struct Summarised {
    /// The summary.
    pub summary: String,
    /// Its analysis.
    pub analysis: Analysis,
    /// Who made them.
    pub metadata: Value,
    /// What went wrong on the way (the fallback was used).
    pub notices: Vec<String>,
}

/// Summarises and analyses `window` with `model` when given, falling back
/// to the extractive summary and the rules.
pub fn summarise(window: &[Message], transcript: &str, model: Option<&ModelHelper>) -> Summarised {
    let mut notices = Vec::new();
    let (summary, by) = match model.map(|m| (m, m.summarize(transcript))) {
        Some((m, Ok(s))) => (s, format!("model:{}", m.model())),
        Some((_, Err(e))) => {
            notices.push(format!(
                "summary model failed ({e}): extractive summary used"
            ));
            (extractive(window), "extractive".to_string())
        }
        None => (extractive(window), "extractive".to_string()),
    };
    let analysis = match model.map(|m| m.analyze(&format!("{summary}\n\n{transcript}"))) {
        Some(Ok(a)) => a,
        Some(Err(e)) => {
            notices.push(format!("analysis model failed ({e}): rule analysis used"));
            analyzer::analyze_rules(transcript)
        }
        None => analyzer::analyze_rules(transcript),
    };
    Summarised {
        summary,
        metadata: json!({"summarizer": by, "analyzer": analysis.source}),
        analysis,
        notices,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_extractive_summary_keeps_the_central_sentence() {
        let w = [
            Message::said(
                "user",
                "Hi there. Please water the balcony plants every morning.",
            ),
            Message::said(
                "assistant",
                "Sure. I will water the balcony plants at 8 every morning.",
            ),
            Message::said("user", "谢谢。"),
        ];
        let s = extractive(&w);
        assert_eq!(
            s,
            "operator: Please water the balcony plants every morning. | robot: I will water the balcony plants at 8 every morning. | operator: 谢谢。"
        );
    }
}
