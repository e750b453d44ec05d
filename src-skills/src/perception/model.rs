//! A vision model behind the OpenAI-compatible endpoint (`QWEN_VL_MODEL`):
//! the frame goes out as a PNG data URL with the seed-000 prompt, on the
//! model worker's thread, so the tick never waits for it. Its reply is
//! validated; an unusable one falls back to the offline stand-in and says
//! why.

use base64::Engine as _;
use serde_json::json;

use super::Frame;
use super::vision::{self, VisionResult};
use crate::llm::prompt::Prompts;
use crate::llm::worker::Update;
use crate::llm::{LlmClient, LlmConfig, LlmError, LlmWorker};

/// A vision model and the calls in flight.
pub struct VisionModel {
    worker: LlmWorker,
    model: String,
    prompts: Prompts,
}

/// What a finished call gave.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    /// The result to use.
    pub result: VisionResult,
    /// Why the model's own answer was not used, when it was not.
    pub fallback: Option<String>,
}

impl VisionModel {
    /// Starts the worker for `config`'s endpoint and vision role.
    pub fn new(config: &LlmConfig) -> Result<Self, LlmError> {
        let client = LlmClient::new(config)?;
        let prompts = Prompts::load(config.prompts_dir.as_deref().map(std::path::Path::new))
            .map_err(|e| LlmError::Setup(e.to_string()))?;
        Ok(Self {
            worker: LlmWorker::spawn(client)?,
            model: config.vision_model.clone(),
            prompts,
        })
    }

    /// Sends `frame` to the model; the returned id comes back from [`VisionModel::poll`].
    pub fn ask(&mut self, frame: &Frame) -> Result<u64, LlmError> {
        let zone = frame
            .zone
            .clone()
            .unwrap_or_else(|| "an unknown place".into());
        let prompt = self
            .prompts
            .render("watch.txt", &[("zone", &zone)])
            .map_err(|e| LlmError::Setup(e.to_string()))?;
        let png = frame
            .png
            .as_ref()
            .ok_or_else(|| LlmError::Setup("the frame has no picture to send".into()))?;
        let image = base64::engine::general_purpose::STANDARD.encode(png);
        let body = json!({
            "model": self.model,
            "stream": false,
            "messages": [{
                "role": "user",
                "content": [
                    {"type": "text", "text": prompt},
                    {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{image}")}}
                ]
            }]
        });
        self.worker.submit("watch", body)
    }

    /// Calls that ended since the last poll: `(id, reply text or error)`.
    pub fn poll(&mut self) -> Vec<(u64, Result<String, LlmError>)> {
        let mut done = Vec::new();
        while let Some(update) = self.worker.try_recv() {
            if let Update::Done { id, result, .. } = update {
                let text = result.reply.map(|c| {
                    c.choices
                        .get(&0)
                        .map(|choice| choice.content.clone())
                        .unwrap_or_default()
                });
                done.push((id, text));
            }
        }
        done
    }
}

/// The result for a finished call: the model's, validated, or the
/// stand-in's with the reason the model's was not used.
pub fn judge(
    reply: Result<String, LlmError>,
    frame_labels: &Frame,
) -> Result<Seen, vision::VisionError> {
    let why = match reply {
        Ok(text) => match vision::parse_model_reply(&text) {
            Ok(result) => {
                return Ok(Seen {
                    result,
                    fallback: None,
                });
            }
            Err(e) => e.to_string(),
        },
        Err(e) => format!("the vision model call failed: {e}"),
    };
    let mut result = vision::stand_in(frame_labels)?;
    result.description = format!("{} — {why}", result.description);
    Ok(Seen {
        result,
        fallback: Some(why),
    })
}
