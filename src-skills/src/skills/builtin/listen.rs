//! `listen` (seed 000 §3.4): words from people nearby. Three sources, one
//! per call: typed `text` (always accepted — the fallback), a WAV file
//! (`wav`), or the microphone for `seconds` (feature `audio`). Audio is
//! transcribed by the model's transcription endpoint (`[llm] omni_model`)
//! when a model is configured; recording and transcribing run off the
//! kernel ([`crate::offload`]), and the result comes back through
//! [`Skill::poll`]. What was heard is the run's `user_command` (shared data,
//! seed 000 §6.2) and is acted on as an utterance (`utterance` in the output).

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Value, json};

use super::super::runner::GoalResult;
use super::super::{Recovery, Risk, Skill, SkillContext, SkillError, SkillSpec, Started, SubType};
use crate::llm::{LlmClient, LlmConfig, LlmError};
use crate::offload::Offload;

/// Longest microphone recording, seconds.
pub(super) const MAX_SECONDS: f64 = 30.0;

/// What a listen ended with: the words, or a failure (code, message).
type Heard = Result<String, (String, String)>;

/// The model that transcribes.
struct Transcriber {
    client: LlmClient,
    model: String,
}

/// Hears what people say.
pub struct Listen {
    spec: SkillSpec,
    transcriber: Option<Transcriber>,
    offload: Option<Offload<Heard>>,
    /// Jobs in flight: job id → (goal id, source).
    asked: HashMap<u64, (String, &'static str)>,
}

impl Listen {
    /// The skill without a model: typed text only.
    pub fn new() -> Self {
        let mut spec = super::spec(
            "listen",
            "Listen to what a person says: typed `text`, a `wav` recording, or the microphone for `seconds`; what is heard is acted on as an utterance.",
            json!({
                "type": "object",
                "properties": {
                    "text": {"type": "string", "minLength": 1, "maxLength": 2000},
                    "wav": {"type": "string", "minLength": 1},
                    "seconds": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_SECONDS}
                },
                "additionalProperties": false
            }),
        );
        spec.sub_type = SubType::Query;
        spec.risk = Risk::Read;
        spec.shared_resources = vec!["microphone".into()];
        spec.cancel_supported = true;
        spec.error_map = vec![
            ("no_transcriber".into(), Recovery::Skip),
            ("no_microphone".into(), Recovery::Skip),
            ("bad_audio".into(), Recovery::AskHuman),
            ("transcription_failed".into(), Recovery::AskHuman),
        ];
        super::declare(
            &mut spec,
            MAX_SECONDS + 30.0,
            "words were heard",
            "listening",
        );
        Self {
            spec,
            transcriber: None,
            offload: None,
            asked: HashMap::new(),
        }
    }

    /// This skill, transcribing audio with `config`'s model (`omni_model`).
    #[must_use]
    pub fn transcribing(mut self, config: &LlmConfig) -> Self {
        self.transcriber = LlmClient::new(config).ok().map(|client| Transcriber {
            client,
            model: config.omni_model.clone(),
        });
        self
    }

    /// Hands `wav` (or, without it, a recording of `seconds`) to the
    /// transcriber; the failure to report at once when that cannot be.
    fn transcribe(
        &mut self,
        goal_id: &str,
        wav: Option<Vec<u8>>,
        seconds: f64,
    ) -> Result<(), (String, String)> {
        let (Some(t), Some(offload)) = (self.transcriber.as_ref(), self.offload.as_mut()) else {
            return Err((
                "no_transcriber".into(),
                "no transcription model is configured ([llm] base_url and omni_model, or OPENAI_BASE_URL and QWEN_OMNI_MODEL); type the words instead".into(),
            ));
        };
        let (client, model) = (t.client.clone(), t.model.clone());
        let source = if wav.is_some() { "wav" } else { "microphone" };
        let wav = match wav {
            Some(wav) => wav,
            None => microphone_ready().map(|()| Vec::new())?,
        };
        let id = offload.submit(async move {
            let wav = if wav.is_empty() {
                record(seconds).await?
            } else {
                wav
            };
            client
                .transcribe(&model, wav)
                .await
                .map_err(|e: LlmError| ("transcription_failed".into(), e.to_string()))
        });
        self.asked.insert(id, (goal_id.to_string(), source));
        Ok(())
    }
}

impl Skill for Listen {
    fn spec(&self) -> &SkillSpec {
        &self.spec
    }

    fn initialize(&mut self, _config: &Value) -> Result<(), SkillError> {
        if self.transcriber.is_some() {
            let offload = Offload::spawn("robobrain-listen").map_err(|e| SkillError::Refused {
                skill: self.spec.name.clone(),
                message: e.to_string(),
            })?;
            self.offload = Some(offload);
        }
        Ok(())
    }

    fn start(
        &mut self,
        goal_id: &str,
        args: &Value,
        _ctx: &mut SkillContext<'_>,
    ) -> Result<Started, SkillError> {
        if let Some(text) = args.get("text").and_then(Value::as_str) {
            return Ok(Started::Done(heard(text, "typed")));
        }
        let wav = match args.get("wav").and_then(Value::as_str) {
            Some(path) => match read_recording(Path::new(path)) {
                Ok(bytes) => Some(bytes),
                Err(message) => {
                    return Ok(Started::Failed {
                        code: "bad_audio".into(),
                        message,
                    });
                }
            },
            None => None,
        };
        let seconds = args.get("seconds").and_then(Value::as_f64).unwrap_or(5.0);
        Ok(match self.transcribe(goal_id, wav, seconds) {
            Ok(()) => Started::OnRobot,
            Err((code, message)) => Started::Failed { code, message },
        })
    }

    fn cancel(&mut self, goal_id: &str, _ctx: &mut SkillContext<'_>) -> Result<(), SkillError> {
        let jobs: Vec<u64> = self
            .asked
            .iter()
            .filter(|(_, (g, _))| g == goal_id)
            .map(|(id, _)| *id)
            .collect();
        for id in jobs {
            self.asked.remove(&id);
            if let Some(o) = self.offload.as_mut() {
                o.abort(id);
            }
        }
        Ok(())
    }

    fn poll(&mut self, done: &mut Vec<(String, GoalResult)>) {
        let Some(offload) = self.offload.as_mut() else {
            return;
        };
        for (id, outcome) in offload.finished() {
            let Some((goal_id, source)) = self.asked.remove(&id) else {
                continue;
            };
            let result = match outcome {
                Ok(text) if text.trim().is_empty() => GoalResult::Succeeded {
                    output: json!({"text": "", "source": source, "summary": "nothing was heard"}),
                },
                Ok(text) => GoalResult::Succeeded {
                    output: heard(&text, source),
                },
                Err((code, message)) => GoalResult::Failed { code, message },
            };
            done.push((goal_id, result));
        }
    }

    fn is_waiting(&self) -> bool {
        !self.asked.is_empty()
    }

    fn cleanup(&mut self) {
        self.offload = None;
        self.asked.clear();
    }
}

/// The output for words heard from `source`.
fn heard(text: &str, source: &str) -> Value {
    let text = text.trim();
    json!({
        "text": text,
        "source": source,
        "summary": format!("heard ({source}): {text}"),
        "utterance": text,
        "shared": {"user_command": text},
    })
}

/// The bytes of a WAV recording, checked to be one.
fn read_recording(path: &Path) -> Result<Vec<u8>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    crate::audio::parse_wav(&bytes, &path.display().to_string()).map_err(|e| e.to_string())?;
    Ok(bytes)
}

/// Whether the microphone can be recorded from.
fn microphone_ready() -> Result<(), (String, String)> {
    let no = |why: String| {
        (
            "no_microphone".to_string(),
            format!("{why}; type the words instead"),
        )
    };
    if !cfg!(feature = "audio") {
        return Err(no(
            "this robobrain was built without the `audio` feature".into()
        ));
    }
    crate::audio::check_card().map_err(|e| no(e.to_string()))
}

/// Records `seconds` from the microphone, as WAV bytes.
#[cfg_attr(not(feature = "audio"), allow(clippy::unused_async))]
async fn record(seconds: f64) -> Result<Vec<u8>, (String, String)> {
    #[cfg(feature = "audio")]
    {
        let clip = tokio::task::spawn_blocking(move || crate::audio::record(seconds))
            .await
            .map_err(|e| ("no_microphone".to_string(), e.to_string()))?
            .map_err(|e| ("no_microphone".to_string(), e.to_string()))?;
        Ok(crate::audio::wav_bytes(&clip))
    }
    #[cfg(not(feature = "audio"))]
    {
        let _ = seconds;
        Err((
            "no_microphone".into(),
            "this robobrain was built without the `audio` feature".into(),
        ))
    }
}
