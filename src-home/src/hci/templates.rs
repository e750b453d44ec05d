//! Reply templates (seed 002 §2 step 1): generated for every tool and every
//! device capability when they are registered — from the description and
//! the argument schema, with `#{arg}` slots — and replaced by hand-written
//! ones from `assets/replies.toml`. A session keeps its [`Templates`] and
//! picks one per reply, so the template track costs a lookup and a fill.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use crate::devices::DeviceWorld;
use crate::lines::Lang;
use crate::rng::SplitMix64;
use crate::skills::SkillSpec;

/// The built-in hand-written templates.
pub const BUILTIN_REPLIES: &str = include_str!("../../../assets/replies.toml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReplies {
    templates: HashMap<String, Vec<String>>,
    #[serde(default)]
    zh: HashMap<String, Vec<String>>,
}

/// Templates generated from a description and an args schema: the
/// description as a sentence, with a slot for each argument it does not
/// already name.
pub fn generate(description: &str, schema: &Value) -> Vec<String> {
    let mut base = description.trim().trim_end_matches('.').to_string();
    if let Some(first) = base.chars().next() {
        base = first.to_lowercase().chain(base.chars().skip(1)).collect();
    }
    let slots: Vec<String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| {
            p.keys()
                .filter(|k| !matches!(k.as_str(), "plan_id" | "step_id" | "request_id" | "args"))
                .filter(|k| !base.contains(&format!("#{{{k}}}")))
                .map(|k| format!("{k} #{{{k}}}"))
                .collect()
        })
        .unwrap_or_default();
    let tail = if slots.is_empty() {
        String::new()
    } else {
        format!(" ({})", slots.join(", "))
    };
    vec![
        format!("OK: {base}{tail}."),
        format!("Got it, {base}{tail}, just a moment."),
    ]
}

/// A session's reply templates by key, and the generator that picks one.
#[derive(Debug, Clone)]
pub struct Templates {
    by_key: HashMap<String, Vec<String>>,
    hand: std::collections::HashSet<String>,
    /// The hand-written Chinese ones (`_any`: for a call none names).
    zh: HashMap<String, Vec<String>>,
    rng: SplitMix64,
}

impl Templates {
    /// Templates for `tools` and every capability of `devices`, generated,
    /// then replaced by the hand-written ones.
    pub fn build(tools: &[SkillSpec], devices: &DeviceWorld, seed: u64) -> Self {
        let mut by_key: HashMap<String, Vec<String>> = HashMap::new();
        for t in tools {
            by_key.insert(t.name.clone(), t.reply_templates.clone());
        }
        for d in devices.devices() {
            for c in &d.capabilities {
                by_key
                    .entry(format!("{}.{}", d.kind, c.name))
                    .or_insert_with(|| {
                        generate(
                            &format!("{} of the #{{device}}", c.description),
                            &c.args_schema,
                        )
                    });
            }
        }
        let mut hand = std::collections::HashSet::new();
        let mut zh = HashMap::new();
        // The built-in file is checked by a test; a broken one only loses the overrides.
        if let Ok(raw) = toml::from_str::<RawReplies>(BUILTIN_REPLIES) {
            zh = raw.zh;
            for (k, v) in raw.templates {
                if !v.is_empty() {
                    hand.insert(k.clone());
                    by_key.insert(k, v);
                }
            }
        }
        Self {
            by_key,
            hand,
            zh,
            rng: SplitMix64::new(seed),
        }
    }

    /// The templates for a device call in `lang`: hand-written
    /// `kind.capability`, then hand-written `capability`, then (English)
    /// the generated ones or (Chinese) `_any`.
    pub fn for_call(&self, kind: &str, capability: &str, lang: Lang) -> Option<&[String]> {
        let specific = format!("{kind}.{capability}");
        if lang == Lang::Zh {
            return [specific.as_str(), capability, "_any"]
                .iter()
                .find_map(|k| self.zh.get(*k))
                .map(Vec::as_slice);
        }
        if self.hand.contains(&specific) {
            return self.by_key.get(&specific).map(Vec::as_slice);
        }
        self.by_key
            .get(capability)
            .or_else(|| self.by_key.get(&specific))
            .map(Vec::as_slice)
    }

    /// The templates under `key` (a tool name) in `lang`.
    pub fn get(&self, key: &str, lang: Lang) -> Option<&[String]> {
        match lang {
            Lang::Zh => self.zh.get(key).or_else(|| self.by_key.get(key)),
            Lang::En => self.by_key.get(key),
        }
        .map(Vec::as_slice)
    }

    /// Picks one of `choices` and fills its slots from `slots`.
    pub fn pick(&mut self, choices: &[String], slots: &Value) -> String {
        let i = self.rng.below(choices.len());
        choices.get(i).map_or_else(String::new, |t| fill(t, slots))
    }
}

pub use crate::lines::fill;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn generated_templates_have_a_slot_per_argument() {
        let t = generate(
            "Set the screen brightness",
            &json!({"type": "object", "properties": {"level": {"type": "integer"}}}),
        );
        assert_eq!(t[0], "OK: set the screen brightness (level #{level}).");
        assert_eq!(
            fill(&t[0], &json!({"level": 100})),
            "OK: set the screen brightness (level 100)."
        );
    }

    #[test]
    fn hand_written_templates_replace_generated_ones() {
        let devices = DeviceWorld::builtin().unwrap();
        let tools = super::super::tools::specs();
        let mut t = Templates::build(&tools, &devices, 1);
        let choices = t
            .for_call("screen", "set_brightness", Lang::En)
            .unwrap()
            .to_vec();
        assert!(choices[0].contains("screen brightness"), "{choices:?}");
        let line = t.pick(&choices, &json!({"level": 100}));
        assert!(line.contains("100"), "{line}");
        let light = t.for_call("light", "turn_on", Lang::En).unwrap();
        assert!(light[0].starts_with("OK, turning on"), "{light:?}");
        let light = t.for_call("light", "turn_on", Lang::Zh).unwrap();
        assert!(light[0].starts_with("好的"), "{light:?}");
        let other = t.for_call("vacuum", "locate", Lang::Zh).unwrap();
        assert_eq!(other, ["好的，马上处理#{device}。"]);
        assert!(toml::from_str::<RawReplies>(BUILTIN_REPLIES).is_ok());
    }
}
