//! A language's compiled intents: the JSON that the PyPI package
//! `home-assistant-intents` ships per language
//! (`home_assistant_intents/data/en.json`), or the same structure written
//! as YAML (robobrain's own `assets/intents/*.yaml`). Loading parses every
//! template, list and rule once; a bad one is refused with the file, the
//! intent, the template and the position.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::{Map, Value};
use thiserror::Error;

use super::slots::{SlotList, parse_list};
use super::template::{Expr, Names, parse_sentence};

/// Why a grammar could not be loaded.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum GrammarError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not the expected JSON or YAML.
    #[error("{file}: {message}")]
    Format {
        /// The file.
        file: String,
        /// What was expected, with the line and column.
        message: String,
    },
    /// A sentence template does not parse.
    #[error(
        "{file}: intent `{intent}`, template `{template}`: {message} (at character {position})"
    )]
    Template {
        /// The file.
        file: String,
        /// The intent.
        intent: String,
        /// The template.
        template: String,
        /// Character position in the template.
        position: usize,
        /// What is wrong.
        message: String,
    },
    /// An expansion rule does not parse.
    #[error("{file}: expansion rule `<{rule}>`: {message} (at character {position})")]
    Rule {
        /// The file.
        file: String,
        /// The rule.
        rule: String,
        /// Character position in its body.
        position: usize,
        /// What is wrong.
        message: String,
    },
    /// A slot list is malformed.
    #[error("{file}: list `{{{list}}}`: {message}")]
    List {
        /// The file.
        file: String,
        /// The list.
        list: String,
        /// What is wrong.
        message: String,
    },
    /// A template uses a rule nobody defines.
    #[error("{file}: intent `{intent}`, template `{template}`: no expansion rule `<{rule}>`")]
    MissingRule {
        /// The file.
        file: String,
        /// The intent.
        intent: String,
        /// The template.
        template: String,
        /// The rule.
        rule: String,
    },
}

/// One sentence template.
#[derive(Debug, Clone, PartialEq)]
pub struct Sentence {
    /// As written.
    pub text: String,
    /// Parsed.
    pub expr: Expr,
}

/// A block of sentences of an intent, with what they share.
#[derive(Debug, Clone, PartialEq)]
pub struct IntentData {
    /// The templates, in hassil's order (wildcard sentences with more text first).
    pub sentences: Vec<Sentence>,
    /// Slots every match gets (`domain: light`).
    pub slots: Map<String, Value>,
    /// Context a match needs (`domain: [light, switch]`, `area: {slot: true}`).
    pub requires_context: Map<String, Value>,
    /// Context a match must not have.
    pub excludes_context: Map<String, Value>,
    /// The response's key.
    pub response: Option<String>,
    /// Metadata (`slot_combination`).
    pub metadata: Option<Value>,
    /// Words at least one of which the text must have.
    pub required_keywords: Option<Vec<String>>,
    /// Rules local to the block: (rule id, body).
    pub local_rules: Vec<(usize, Expr)>,
    /// Lists local to the block: (list id, list).
    pub local_lists: Vec<(usize, SlotList)>,
}

/// An intent and its blocks.
#[derive(Debug, Clone, PartialEq)]
pub struct Intent {
    /// Its name (`HassTurnOn`).
    pub name: String,
    /// Its blocks of sentences.
    pub data: Vec<IntentData>,
}

/// A language's intents, lists, rules and responses.
#[derive(Debug, Clone)]
pub struct Grammar {
    /// The language (`en`, `zh-CN`).
    pub language: String,
    /// Whether white space between CJK characters is ignored.
    pub ignore_whitespace: bool,
    /// Words dropped before matching.
    pub skip_words: Vec<String>,
    /// The intents, by name.
    pub intents: Vec<Intent>,
    /// Lists by id (global).
    pub lists: Vec<Option<SlotList>>,
    /// Rule bodies by id (global).
    pub rules: Vec<Option<Expr>>,
    /// Rule and list names.
    pub names: Names,
    /// Response templates: intent → key → text.
    pub responses: BTreeMap<String, BTreeMap<String, String>>,
    /// Error responses: key → text.
    pub errors: BTreeMap<String, String>,
    /// Where it came from (for messages).
    pub source: String,
    /// The lists each block uses, worked out once for the grammar (by the
    /// first matcher built over it).
    pub(super) list_uses: OnceLock<Vec<ListUse>>,
}

#[derive(Deserialize)]
struct RawGrammar {
    language: String,
    #[serde(default)]
    settings: RawSettings,
    #[serde(default)]
    skip_words: Vec<String>,
    #[serde(default)]
    intents: BTreeMap<String, RawIntent>,
    #[serde(default)]
    lists: BTreeMap<String, Value>,
    #[serde(default)]
    expansion_rules: BTreeMap<String, String>,
    #[serde(default)]
    responses: RawResponses,
}

#[derive(Deserialize, Default)]
struct RawSettings {
    #[serde(default)]
    ignore_whitespace: bool,
}

#[derive(Deserialize, Default)]
struct RawResponses {
    #[serde(default)]
    errors: BTreeMap<String, String>,
    #[serde(default)]
    intents: BTreeMap<String, BTreeMap<String, String>>,
}

#[derive(Deserialize)]
struct RawIntent {
    data: Vec<RawData>,
}

#[derive(Deserialize)]
struct RawData {
    sentences: Vec<String>,
    #[serde(default)]
    slots: Map<String, Value>,
    #[serde(default)]
    requires_context: Map<String, Value>,
    #[serde(default)]
    excludes_context: Map<String, Value>,
    #[serde(default)]
    expansion_rules: BTreeMap<String, String>,
    #[serde(default)]
    lists: BTreeMap<String, Value>,
    response: Option<String>,
    metadata: Option<Value>,
    required_keywords: Option<Vec<String>>,
}

fn collect_rules(e: &Expr, out: &mut Vec<(usize, String)>) {
    match e {
        Expr::Rule { name, id } => out.push((*id, name.clone())),
        Expr::Seq(items) | Expr::Alt { items, .. } | Expr::Perm(items) => {
            for i in items {
                collect_rules(i, out);
            }
        }
        _ => {}
    }
}

impl Grammar {
    /// Reads a grammar file: `.json` (Home Assistant's compiled intents) or
    /// `.yaml` / `.yml` (the same structure, robobrain's own templates).
    pub fn load(path: &Path) -> Result<Self, GrammarError> {
        let text = std::fs::read_to_string(path).map_err(|source| GrammarError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let file = path.display().to_string();
        let yaml = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml")
        );
        if yaml {
            Self::from_yaml(&text, &file)
        } else {
            Self::from_json(&text, &file)
        }
    }

    /// Parses compiled intents (JSON); `file` names it in errors.
    pub fn from_json(text: &str, file: &str) -> Result<Self, GrammarError> {
        let raw: RawGrammar = serde_json::from_str(text).map_err(|e| GrammarError::Format {
            file: file.to_string(),
            message: format!("line {} column {}: {e}", e.line(), e.column()),
        })?;
        Self::from_raw(raw, file)
    }

    /// Parses intents written as YAML; `file` names it in errors.
    pub fn from_yaml(text: &str, file: &str) -> Result<Self, GrammarError> {
        let raw: RawGrammar = serde_norway::from_str(text).map_err(|e| GrammarError::Format {
            file: file.to_string(),
            message: e.location().map_or_else(
                || e.to_string(),
                |l| format!("line {} column {}: {e}", l.line(), l.column()),
            ),
        })?;
        Self::from_raw(raw, file)
    }

    fn from_raw(raw: RawGrammar, file: &str) -> Result<Self, GrammarError> {
        let mut names = Names::default();
        let rules_parsed = parse_rules(&raw.expansion_rules, &mut names, file)?;
        let lists_parsed = parse_lists(&raw.lists, &mut names, file)?;
        let mut intents = Vec::new();
        for (intent_name, raw_intent) in raw.intents {
            let mut data = Vec::new();
            for d in raw_intent.data {
                data.push(parse_data(d, &intent_name, &mut names, file)?);
            }
            intents.push(Intent {
                name: intent_name,
                data,
            });
        }
        let rules = by_id(rules_parsed, names.rules.len());
        let lists = by_id(lists_parsed, names.lists.len());
        sort_sentences(&mut intents, &lists);
        let grammar = Self {
            language: raw.language,
            ignore_whitespace: raw.settings.ignore_whitespace,
            skip_words: raw.skip_words,
            intents,
            lists,
            rules,
            names,
            responses: raw.responses.intents,
            errors: raw.responses.errors,
            source: file.to_string(),
            list_uses: OnceLock::new(),
        };
        grammar.check_rules()?;
        Ok(grammar)
    }

    /// Every rule a template uses exists (globally or in its block).
    fn check_rules(&self) -> Result<(), GrammarError> {
        let defined = |id: usize, d: &IntentData| {
            self.rules.get(id).is_some_and(Option::is_some)
                || d.local_rules.iter().any(|(l, _)| *l == id)
        };
        for intent in &self.intents {
            for d in &intent.data {
                for s in &d.sentences {
                    let mut used = Vec::new();
                    collect_rules(&s.expr, &mut used);
                    // Rules used inside rules, one level at a time.
                    let mut seen = HashSet::new();
                    while let Some((id, name)) = used.pop() {
                        if !seen.insert(id) {
                            continue;
                        }
                        if !defined(id, d) {
                            return Err(GrammarError::MissingRule {
                                file: self.source.clone(),
                                intent: intent.name.clone(),
                                template: s.text.clone(),
                                rule: name,
                            });
                        }
                        let body = d
                            .local_rules
                            .iter()
                            .find(|(l, _)| *l == id)
                            .map(|(_, e)| e)
                            .or_else(|| self.rules.get(id).and_then(Option::as_ref));
                        if let Some(body) = body {
                            collect_rules(body, &mut used);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The intent called `name`.
    pub fn intent(&self, name: &str) -> Option<&Intent> {
        self.intents.iter().find(|i| i.name == name)
    }

    /// The response template `key` of `intent`.
    pub fn response(&self, intent: &str, key: &str) -> Option<&str> {
        self.responses.get(intent)?.get(key).map(String::as_str)
    }

    /// Counts: (intents, blocks, templates).
    pub fn size(&self) -> (usize, usize, usize) {
        let blocks = self.intents.iter().map(|i| i.data.len()).sum();
        let templates = self
            .intents
            .iter()
            .flat_map(|i| &i.data)
            .map(|d| d.sentences.len())
            .sum();
        (self.intents.len(), blocks, templates)
    }
}

/// Parses expansion rules (the grammar's or a block's): (rule id, body).
fn parse_rules(
    raw: &BTreeMap<String, String>,
    names: &mut Names,
    file: &str,
) -> Result<Vec<(usize, Expr)>, GrammarError> {
    let mut parsed = Vec::new();
    for (name, body) in raw {
        let expr = parse_sentence(body, names).map_err(|e| GrammarError::Rule {
            file: file.to_string(),
            rule: name.clone(),
            position: e.position,
            message: e.message,
        })?;
        parsed.push((names.rules.id(name), expr));
    }
    Ok(parsed)
}

/// Parses slot lists (the grammar's or a block's): (list id, list).
fn parse_lists(
    raw: &BTreeMap<String, Value>,
    names: &mut Names,
    file: &str,
) -> Result<Vec<(usize, SlotList)>, GrammarError> {
    let mut parsed = Vec::new();
    for (name, raw_list) in raw {
        let list = parse_list(raw_list, names).map_err(|e| GrammarError::List {
            file: file.to_string(),
            list: name.clone(),
            message: e.0,
        })?;
        parsed.push((names.lists.id(name), list));
    }
    Ok(parsed)
}

/// Parses a block of intent `intent`: its rules, its lists, then its sentences.
fn parse_data(
    d: RawData,
    intent: &str,
    names: &mut Names,
    file: &str,
) -> Result<IntentData, GrammarError> {
    let local_rules = parse_rules(&d.expansion_rules, names, file)?;
    let local_lists = parse_lists(&d.lists, names, file)?;
    let mut sentences = Vec::new();
    for text in d.sentences {
        let expr = parse_sentence(&text, names).map_err(|e| GrammarError::Template {
            file: file.to_string(),
            intent: intent.to_string(),
            template: text.clone(),
            position: e.position,
            message: e.message,
        })?;
        sentences.push(Sentence { text, expr });
    }
    Ok(IntentData {
        sentences,
        slots: d.slots,
        requires_context: d.requires_context,
        excludes_context: d.excludes_context,
        response: d.response,
        metadata: d.metadata,
        required_keywords: d.required_keywords,
        local_rules,
        local_lists,
    })
}

/// A table of `len` entries by id, holding the parsed ones.
fn by_id<T>(parsed: Vec<(usize, T)>, len: usize) -> Vec<Option<T>> {
    let mut table: Vec<Option<T>> = std::iter::repeat_with(|| None).take(len).collect();
    for (id, item) in parsed {
        table[id] = Some(item);
    }
    table
}

/// Wildcard sentences with more literal text are tried first
/// (`IntentData._sentence_order`, a stable sort).
fn sort_sentences(intents: &mut [Intent], lists: &[Option<SlotList>]) {
    let wildcard: Vec<bool> = lists
        .iter()
        .map(|l| matches!(l, Some(SlotList::Wildcard)))
        .collect();
    for intent in intents {
        for d in &mut intent.data {
            d.sentences.sort_by_key(|s| {
                let mut refs = Vec::new();
                s.expr.lists(&mut refs);
                if refs
                    .iter()
                    .any(|l| wildcard.get(*l).copied().unwrap_or(false))
                {
                    -(s.expr.text_chunk_count() as i64)
                } else {
                    0
                }
            });
        }
    }
}

/// A list a block of a grammar uses, directly or through rules (the matcher
/// works these out once per grammar and caches them here).
#[derive(Debug, Clone)]
pub(super) struct ListUse {
    pub(super) intent: usize,
    pub(super) block: usize,
    pub(super) list_id: usize,
    pub(super) list: String,
    pub(super) inline_range: Option<(i64, i64, i64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_grammar_loads_and_bad_templates_name_their_place() {
        let g = Grammar::from_yaml(
            "language: en\nintents:\n  Demo:\n    data:\n      - sentences: [\"<go> to {zone}\"]\nexpansion_rules:\n  go: \"(go|drive)\"\nlists:\n  zone: {values: [kitchen]}\n",
            "demo.yaml",
        )
        .unwrap();
        assert_eq!(g.size(), (1, 1, 1));
        let e = Grammar::from_yaml(
            "language: en\nintents:\n  Demo:\n    data:\n      - sentences: [\"go to (the kitchen\"]\n",
            "bad.yaml",
        )
        .unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("bad.yaml")
                && text.contains("`Demo`")
                && text.contains("go to (the kitchen")
                && text.contains("character 6"),
            "{text}"
        );
        let e = Grammar::from_yaml(
            "language: en\nintents:\n  Demo:\n    data:\n      - sentences: [\"<nope> now\"]\n",
            "bad.yaml",
        )
        .unwrap_err();
        assert!(e.to_string().contains("no expansion rule `<nope>`"), "{e}");
        let e = Grammar::from_json("{\"language\": \"en\", \"intents\": 3}", "x.json").unwrap_err();
        assert!(e.to_string().contains("x.json: line 1"), "{e}");
    }
}
