//! What a run is made of — which brain decides, what it remembers with,
//! which MCP services lend it tools, which robot it drives — as the session
//! builder assembled it (`crate::session`). Every face shows the same
//! [`RunInfo`] the same way: it is in the `run` event, in every snapshot and
//! in the `hello` frame, and [`RunInfo::summary`] is the line the console's
//! header and the page's header print.

use serde::{Deserialize, Serialize};

/// A run as it was assembled.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Who decides.
    pub brain: BrainInfo,
    /// What the run remembers with.
    pub memory: MemoryInfo,
    /// The configured MCP services, in config order.
    #[serde(default)]
    pub services: Vec<ServiceInfo>,
    /// The robot: `sim:` (in process) or `tcp://HOST:PORT`.
    pub robot: String,
    /// The thread database, when the run is recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db: Option<String>,
}

/// The brain a run was given.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrainInfo {
    /// `model` (the rule brain standing in when it fails) or `rules`.
    pub kind: BrainChoice,
    /// The decision model, with a model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Its endpoint (`…/v1`), with a model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
}

/// Which brain the config asked for.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BrainChoice {
    /// The rule brain, offline (no model configured).
    #[default]
    Rules,
    /// An OpenAI-compatible model, the rule brain standing in when it fails.
    Model,
    /// Decisions a scenario gives.
    Scripted,
}

/// The memory a run was given.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryInfo {
    /// How it retrieves.
    pub mode: MemoryMode,
    /// Why it runs as it does, when that is not what was asked for
    /// (`no embedding model at …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// How a run's memory retrieves.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryMode {
    /// No memory (`[memory] enabled = false`, or a scripted run).
    #[default]
    Off,
    /// BM25 alone.
    Bm25,
    /// Sentence embeddings alone.
    Dense,
    /// BM25 and embeddings together.
    Hybrid,
}

/// One configured MCP service.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceInfo {
    /// Its name: its tools are skills `mcp.<name>.<tool>`.
    pub name: String,
    /// Tools registered as skills.
    pub tools: usize,
    /// Why it could not start (it is left out), when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl BrainChoice {
    /// The name as written on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rules => "rules",
            Self::Model => "model",
            Self::Scripted => "scripted",
        }
    }
}

impl MemoryMode {
    /// The name as written on the wire and in `[memory] mode`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Bm25 => "bm25",
            Self::Dense => "dense",
            Self::Hybrid => "hybrid",
        }
    }
}

impl RunInfo {
    /// The brain in words: `model qwen-max` or `rules`.
    pub fn brain_label(&self) -> String {
        match &self.brain.model {
            Some(model) if self.brain.kind == BrainChoice::Model => format!("model {model}"),
            _ => self.brain.kind.as_str().to_string(),
        }
    }

    /// The memory in words: `hybrid`, `bm25`, `dense` or `off`.
    pub fn memory_label(&self) -> &'static str {
        self.memory.mode.as_str()
    }

    /// The MCP services in words: `time(2), ghost(failed)`, or `none`.
    pub fn services_label(&self) -> String {
        if self.services.is_empty() {
            return "none".into();
        }
        self.services
            .iter()
            .map(|s| match &s.error {
                Some(_) => format!("{}(failed)", s.name),
                None => format!("{}({})", s.name, s.tools),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The one line every face shows:
    /// `brain model qwen-max · memory hybrid · mcp time(2)`.
    pub fn summary(&self) -> String {
        format!(
            "brain {} · memory {} · mcp {}",
            self.brain_label(),
            self.memory_label(),
            self.services_label()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_in_one_line_and_on_the_wire() {
        let run = RunInfo {
            brain: BrainInfo {
                kind: BrainChoice::Model,
                model: Some("qwen-max".into()),
                endpoint: Some("http://127.0.0.1:8765/v1".into()),
            },
            memory: MemoryInfo {
                mode: MemoryMode::Bm25,
                note: Some("no embedding model".into()),
            },
            services: vec![
                ServiceInfo {
                    name: "time".into(),
                    tools: 2,
                    error: None,
                },
                ServiceInfo {
                    name: "ghost".into(),
                    tools: 0,
                    error: Some("no such program".into()),
                },
            ],
            robot: "sim:".into(),
            db: None,
        };
        assert_eq!(
            run.summary(),
            "brain model qwen-max · memory bm25 · mcp time(2), ghost(failed)"
        );
        let json = serde_json::to_value(&run).unwrap();
        assert_eq!(json["brain"]["kind"], "model");
        assert_eq!(json["memory"]["mode"], "bm25");
        assert_eq!(json["services"][1]["error"], "no such program");
        assert!(json.get("db").is_none());
        assert_eq!(serde_json::from_value::<RunInfo>(json).unwrap(), run);
        assert_eq!(
            RunInfo::default().summary(),
            "brain rules · memory off · mcp none"
        );
    }
}
