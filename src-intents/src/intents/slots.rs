//! Slot lists: what a `{list}` in a template can match — text values (each
//! with the value it puts into the slot, context it adds, metadata), a
//! number range (digits and words, fractions, a multiplier), or a wildcard
//! — and the three lists the home fills in: `{name}` (every device's names,
//! with its domain as context), `{area}` and `{floor}`.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::numbers::spellings;
use super::template::{Chunk, Expr, Names, ParseError, parse_sentence};
use super::text::{fold, normalize_text};

/// What one text value matches.
#[derive(Debug, Clone, PartialEq)]
pub enum ValueInput {
    /// Plain text.
    Text(Chunk),
    /// A template (`auto[matic]`, `(closed|shut)`).
    Template(Expr),
}

/// One value of a text list.
#[derive(Debug, Clone, PartialEq)]
pub struct TextValue {
    /// What it matches.
    pub input: ValueInput,
    /// What goes into the slot (`None`: the words matched).
    pub out: Option<Value>,
    /// Context added when it matches (`{"domain": "light"}`).
    pub context: Option<Map<String, Value>>,
    /// Metadata returned with it.
    pub metadata: Option<Value>,
}

impl TextValue {
    /// A plain-text value `text` → `out`, with context.
    pub fn plain(text: &str, out: Value, context: Option<Map<String, Value>>) -> Self {
        Self {
            input: ValueInput::Text(Chunk::new(&normalize_text(text))),
            out: Some(out),
            context,
            metadata: None,
        }
    }
}

/// A char trie over the values' folded texts, for the candidates that can
/// match at the start of some text (hassil's `TextSlotList.get_candidates`).
#[derive(Debug, Clone, Default, PartialEq)]
struct Trie {
    /// Node → (char → child).
    children: Vec<HashMap<char, usize>>,
    /// Node → the value indices whose key ends there.
    values: Vec<Vec<usize>>,
}

impl Trie {
    fn new() -> Self {
        Self {
            children: vec![HashMap::new()],
            values: vec![Vec::new()],
        }
    }

    fn insert(&mut self, key: &[char], value: usize) {
        let mut node = 0;
        for c in key {
            node = if let Some(n) = self.children[node].get(c) {
                *n
            } else {
                let n = self.children.len();
                self.children.push(HashMap::new());
                self.values.push(Vec::new());
                self.children[node].insert(*c, n);
                n
            };
        }
        self.values[node].push(value);
    }

    /// Values whose key is a prefix of `text` (folded), shortest first.
    fn prefixes(&self, text: impl Iterator<Item = char>, out: &mut Vec<usize>) {
        let mut node = 0;
        for c in text {
            let Some(n) = self.children[node].get(&fold(c)) else {
                return;
            };
            node = *n;
            out.extend(&self.values[node]);
        }
    }
}

/// A list of text values.
#[derive(Debug, Clone, PartialEq)]
pub struct TextList {
    /// The values, in order.
    pub values: Vec<TextValue>,
    trie: Trie,
    /// Keys as matched when white space between CJK characters is ignored.
    trie_cjk: Trie,
    /// Values the tries cannot hold (templates): always candidates.
    unindexed: Vec<usize>,
}

impl TextList {
    /// A list of `values`.
    pub fn new(values: Vec<TextValue>) -> Self {
        let mut trie = Trie::new();
        let mut trie_cjk = Trie::new();
        let mut unindexed = Vec::new();
        for (i, v) in values.iter().enumerate() {
            match &v.input {
                ValueInput::Text(c) if c.text.trim().is_empty() => {}
                ValueInput::Text(c) => {
                    let lead = c.folded.iter().take_while(|c| c.is_whitespace()).count();
                    trie.insert(&c.folded[lead..], i);
                    trie_cjk.insert(&c.folded_cjk, i);
                }
                ValueInput::Template(_) => unindexed.push(i),
            }
        }
        Self {
            values,
            trie,
            trie_cjk,
            unindexed,
        }
    }

    /// Candidate values at the start of `text` (already left-stripped),
    /// in hassil's order: shortest key first, then the same for the text
    /// with `-`/`_` as spaces, then the templates.
    pub fn candidates(&self, text: &[char], out: &mut Vec<usize>) {
        self.trie.prefixes(text.iter().copied(), out);
        if text.iter().any(|c| *c == '-' || *c == '_') {
            self.trie.prefixes(
                text.iter()
                    .map(|c| if *c == '-' || *c == '_' { ' ' } else { *c }),
                out,
            );
        }
        out.extend(&self.unindexed);
    }

    /// Candidate values when white space is ignored: those whose text is a
    /// prefix of `text` (or of it with `-`/`_` as spaces), and the templates,
    /// in list order.
    pub fn candidates_cjk(&self, text: &[char], out: &mut Vec<usize>) {
        self.trie_cjk.prefixes(text.iter().copied(), out);
        if text.iter().any(|c| *c == '-' || *c == '_') {
            self.trie_cjk.prefixes(
                text.iter()
                    .map(|c| if *c == '-' || *c == '_' { ' ' } else { *c }),
                out,
            );
        }
        out.extend(&self.unindexed);
        out.sort_unstable();
        out.dedup();
    }
}

/// Fractions a range includes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fractions {
    /// .5
    Halves,
    /// .1 … .9
    Tenths,
}

/// A number range.
#[derive(Debug, Clone, PartialEq)]
pub struct RangeList {
    /// First number.
    pub from: i64,
    /// Last number (included).
    pub to: i64,
    /// Step between integers.
    pub step: i64,
    /// `number`, `percentage` or `temperature` (informational).
    pub kind: String,
    /// Fractions after each integer.
    pub fractions: Option<Fractions>,
    /// The value put into the slot is the number times this.
    pub multiplier: Option<f64>,
    /// Digits match.
    pub digits: bool,
    /// Words match.
    pub words: bool,
    /// The language of the words (default: the grammar's).
    pub words_language: Option<String>,
}

impl RangeList {
    /// A plain integer range.
    pub fn integers(from: i64, to: i64, step: i64) -> Self {
        Self {
            from,
            to,
            step,
            kind: "number".into(),
            fractions: None,
            multiplier: None,
            digits: true,
            words: true,
            words_language: None,
        }
    }

    /// Every number in the range, in order (each integer, then its fractions).
    pub fn numbers(&self) -> Vec<f64> {
        let fractions: &[f64] = match self.fractions {
            None => &[],
            Some(Fractions::Halves) => &[0.5],
            Some(Fractions::Tenths) => &[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9],
        };
        let mut out = Vec::new();
        let mut i = self.from;
        while i <= self.to {
            out.push(i as f64);
            out.extend(fractions.iter().map(|f| i as f64 + f));
            i += self.step.max(1);
        }
        out
    }

    /// Whether `value` (read from digits) is in the range.
    pub fn contains(&self, value: f64) -> bool {
        if self.step == 1 && self.fractions.is_none() {
            (self.from as f64) <= value && value <= self.to as f64
        } else {
            self.numbers().contains(&value)
        }
    }

    /// The slot value of a number.
    pub fn value_of(&self, n: f64) -> f64 {
        self.multiplier.map_or(n, |m| n * m)
    }

    /// The words for every number (`language`), as a trie.
    pub fn words_trie(&self, language: &str) -> NumberWords {
        let mut words = NumberWords::default();
        let language = self.words_language.as_deref().unwrap_or(language);
        for n in self.numbers() {
            for w in spellings(language, n) {
                words.insert(&w, self.value_of(n));
            }
        }
        words
    }
}

/// Number words → values (hassil's range trie).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NumberWords {
    children: Vec<HashMap<char, usize>>,
    /// Node → (the word as a chunk to match, its values).
    ends: Vec<Option<(Chunk, Vec<f64>)>>,
}

impl NumberWords {
    fn insert(&mut self, word: &str, value: f64) {
        if self.children.is_empty() {
            self.children.push(HashMap::new());
            self.ends.push(None);
        }
        let mut node = 0;
        for c in word.chars() {
            node = if let Some(n) = self.children[node].get(&c) {
                *n
            } else {
                let n = self.children.len();
                self.children.push(HashMap::new());
                self.ends.push(None);
                self.children[node].insert(c, n);
                n
            };
        }
        match &mut self.ends[node] {
            Some((_, values)) => values.push(value),
            slot @ None => *slot = Some((Chunk::new(word), vec![value])),
        }
    }

    /// Every word found in `text` (lower-cased by the caller), as hassil's
    /// `Trie.find(unique=True)`: by start, then end; each word once.
    /// Returns `(start, end, word, value)` in characters.
    pub fn find(&self, text: &[char], only_at_start: bool) -> Vec<(usize, usize, &Chunk, f64)> {
        let mut out = Vec::new();
        if self.children.is_empty() {
            return out;
        }
        let mut visited = vec![false; self.ends.len()];
        let starts = if only_at_start {
            text.len().min(1)
        } else {
            text.len()
        };
        for i in 0..starts {
            let mut node = 0;
            for (j, c) in text[i..].iter().enumerate() {
                let Some(n) = self.children[node].get(c) else {
                    break;
                };
                node = *n;
                if let Some((word, values)) = &self.ends[node]
                    && !visited[node]
                {
                    visited[node] = true;
                    out.extend(values.iter().map(|v| (i, i + j + 1, word, *v)));
                }
            }
        }
        out
    }
}

/// What a `{list}` can match.
#[derive(Debug, Clone, PartialEq)]
pub enum SlotList {
    /// Text values.
    Text(TextList),
    /// A number range.
    Range(RangeList),
    /// Any text.
    Wildcard,
}

/// Why a list in a grammar file is malformed.
#[derive(Debug, Clone, PartialEq)]
pub struct ListError(pub String);

fn template_value(text: &str, names: &mut Names) -> Result<ValueInput, ParseError> {
    if text.contains(['(', ')', '{', '}', '<', '>', '[', ']', '|', '@']) {
        Ok(ValueInput::Template(parse_sentence(text, names)?))
    } else {
        Ok(ValueInput::Text(Chunk::new(&normalize_text(text))))
    }
}

/// Parses a list as written in a grammar file (`values`, `range` or `wildcard`).
pub fn parse_list(raw: &Value, names: &mut Names) -> Result<SlotList, ListError> {
    let err = |m: String| ListError(m);
    if let Some(values) = raw.get("values") {
        let values = values
            .as_array()
            .ok_or_else(|| err("`values` must be a list".into()))?;
        let mut out = Vec::with_capacity(values.len());
        for (i, v) in values.iter().enumerate() {
            let value = match v {
                Value::String(s) => TextValue {
                    input: template_value(s, names)
                        .map_err(|e| err(format!("value {i} `{s}` {e}")))?,
                    out: Some(json!(s)),
                    context: None,
                    metadata: None,
                },
                Value::Object(o) => {
                    let input = o
                        .get("in")
                        .and_then(Value::as_str)
                        .ok_or_else(|| err(format!("value {i} has no text `in`")))?;
                    TextValue {
                        input: template_value(input, names)
                            .map_err(|e| err(format!("value {i} `{input}` {e}")))?,
                        out: o.get("out").filter(|v| !v.is_null()).cloned(),
                        context: o.get("context").and_then(Value::as_object).cloned(),
                        metadata: o.get("metadata").cloned(),
                    }
                }
                other => {
                    return Err(err(format!(
                        "value {i} is neither text nor {{in, out}}: {other}"
                    )));
                }
            };
            out.push(value);
        }
        return Ok(SlotList::Text(TextList::new(out)));
    }
    if let Some(range) = raw.get("range") {
        let int = |k: &str| range.get(k).and_then(Value::as_i64);
        let from = int("from").ok_or_else(|| err("a range needs an integer `from`".into()))?;
        let to = int("to").ok_or_else(|| err("a range needs an integer `to`".into()))?;
        let step = int("step").unwrap_or(1);
        if from > to || step <= 0 {
            return Err(err(format!("range {from}..{to} step {step} is empty")));
        }
        let fractions = match range.get("fractions").and_then(Value::as_str) {
            None => None,
            Some("halves") => Some(Fractions::Halves),
            Some("tenths") => Some(Fractions::Tenths),
            Some(other) => {
                return Err(err(format!(
                    "unknown fractions `{other}` (expected halves or tenths)"
                )));
            }
        };
        return Ok(SlotList::Range(RangeList {
            from,
            to,
            step,
            kind: range
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("number")
                .to_string(),
            fractions,
            multiplier: range.get("multiplier").and_then(Value::as_f64),
            digits: range.get("digits").and_then(Value::as_bool).unwrap_or(true),
            words: range.get("words").and_then(Value::as_bool).unwrap_or(true),
            words_language: range
                .get("words_language")
                .and_then(Value::as_str)
                .map(str::to_string),
        }));
    }
    if raw.get("wildcard").and_then(Value::as_bool) == Some(true) {
        return Ok(SlotList::Wildcard);
    }
    Err(err(
        "a list needs `values`, `range` or `wildcard: true`".into()
    ))
}

/// A device as the grammar's `{name}` list sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedEntity {
    /// Its id.
    pub id: String,
    /// Every name it answers to (the name first, then aliases).
    pub names: Vec<String>,
    /// Its Home Assistant domain (`light`, `cover`, `todo`, …).
    pub domain: String,
    /// Its device class (`garage`, `temperature`), when it has one.
    pub device_class: Option<String>,
    /// The area it is in.
    pub area: Option<String>,
}

/// An area (room) as `{area}` sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedArea {
    /// Its id.
    pub id: String,
    /// Every name (the name first, then aliases).
    pub names: Vec<String>,
    /// The floor it is on.
    pub floor: Option<String>,
}

/// A floor as `{floor}` sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedFloor {
    /// Its id.
    pub id: String,
    /// Every name (the name first, then aliases: "upstairs", "二楼").
    pub names: Vec<String>,
}

/// The home as the grammar sees it: what `{name}`, `{area}` and `{floor}` match.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HomeNames {
    /// Devices.
    pub entities: Vec<NamedEntity>,
    /// Areas.
    pub areas: Vec<NamedArea>,
    /// Floors.
    pub floors: Vec<NamedFloor>,
}

/// A home written for the grammar alone (`tests/fixtures/intents/test_home.yaml`):
/// floors, areas and devices with their Home Assistant domains.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HomeFile {
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// The area the speaker is in (the matcher's context for "here").
    #[serde(default)]
    pub speaker_area: Option<IdName>,
    /// Floors.
    #[serde(default)]
    pub floors: Vec<FileFloor>,
    /// Areas.
    #[serde(default)]
    pub areas: Vec<FileArea>,
    /// Devices.
    #[serde(default)]
    pub entities: Vec<FileEntity>,
}

/// An id and a name.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdName {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
}

/// A floor in a [`HomeFile`].
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileFloor {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
    /// Other names.
    #[serde(default)]
    pub aliases: Vec<String>,
}

/// An area in a [`HomeFile`].
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileArea {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
    /// Other names.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Its floor's id.
    #[serde(default)]
    pub floor: Option<String>,
}

/// A device in a [`HomeFile`].
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileEntity {
    /// Id (`light.kitchen`).
    pub id: String,
    /// Name.
    pub name: String,
    /// Other names.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Home Assistant domain.
    pub domain: String,
    /// Device class.
    #[serde(default)]
    pub device_class: Option<String>,
    /// Area id.
    #[serde(default)]
    pub area: Option<String>,
}

impl HomeFile {
    /// Parses the YAML; errors carry the line and column.
    pub fn from_yaml(text: &str) -> Result<Self, String> {
        serde_norway::from_str(text).map_err(|e| {
            e.location().map_or_else(
                || e.to_string(),
                |l| format!("line {} column {}: {e}", l.line(), l.column()),
            )
        })
    }

    /// What the grammar's lists see of it.
    pub fn names(&self) -> HomeNames {
        let with = |name: &str, aliases: &[String]| {
            std::iter::once(name.to_string())
                .chain(aliases.iter().cloned())
                .collect()
        };
        HomeNames {
            entities: self
                .entities
                .iter()
                .map(|e| NamedEntity {
                    id: e.id.clone(),
                    names: with(&e.name, &e.aliases),
                    domain: e.domain.clone(),
                    device_class: e.device_class.clone(),
                    area: e.area.clone(),
                })
                .collect(),
            areas: self
                .areas
                .iter()
                .map(|a| NamedArea {
                    id: a.id.clone(),
                    names: with(&a.name, &a.aliases),
                    floor: a.floor.clone(),
                })
                .collect(),
            floors: self
                .floors
                .iter()
                .map(|f| NamedFloor {
                    id: f.id.clone(),
                    names: with(&f.name, &f.aliases),
                })
                .collect(),
        }
    }

    /// The matcher's context for the speaker's area (`{"area": {"value", "text"}}`).
    pub fn context(&self) -> Map<String, Value> {
        let mut m = Map::new();
        if let Some(a) = &self.speaker_area {
            m.insert("area".into(), json!({"value": a.id, "text": a.name}));
        }
        m
    }
}

impl HomeNames {
    /// The three lists: `name` (value: the name said, context: domain and
    /// device class), `area` and `floor` (value: the id).
    pub fn lists(&self) -> Vec<(String, SlotList)> {
        let mut names = Vec::new();
        for e in &self.entities {
            let mut context = Map::new();
            context.insert("domain".into(), json!(e.domain));
            if let Some(c) = &e.device_class {
                context.insert("device_class".into(), json!(c));
            }
            for n in &e.names {
                names.push(TextValue::plain(n, json!(n), Some(context.clone())));
            }
        }
        let areas = self
            .areas
            .iter()
            .flat_map(|a| {
                a.names
                    .iter()
                    .map(|n| TextValue::plain(n, json!(a.id), None))
            })
            .collect();
        let floors = self
            .floors
            .iter()
            .flat_map(|f| {
                f.names
                    .iter()
                    .map(|n| TextValue::plain(n, json!(f.id), None))
            })
            .collect();
        vec![
            ("name".into(), SlotList::Text(TextList::new(names))),
            ("area".into(), SlotList::Text(TextList::new(areas))),
            ("floor".into(), SlotList::Text(TextList::new(floors))),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_and_index_by_prefix() {
        let mut names = Names::default();
        let SlotList::Text(list) = parse_list(
            &json!({"values": ["kitchen", {"in": "kitchen light", "out": "k"}, {"in": "auto[matic]", "out": "auto"}]}),
            &mut names,
        )
        .unwrap() else {
            panic!()
        };
        let mut found = Vec::new();
        list.candidates(&"Kitchen Light on".chars().collect::<Vec<_>>(), &mut found);
        assert_eq!(found, vec![0, 1, 2]);
        let SlotList::Range(range) = parse_list(
            &json!({"range": {"from": 0, "to": 2, "fractions": "halves"}}),
            &mut names,
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(range.numbers(), vec![0.0, 0.5, 1.0, 1.5, 2.0, 2.5]);
        assert!(range.contains(1.5) && !range.contains(1.2));
        let words = range.words_trie("en");
        let t: Vec<char> = "one point five degrees".chars().collect();
        let found = words.find(&t, true);
        assert_eq!(
            found.iter().map(|f| f.3).collect::<Vec<_>>(),
            vec![1.0, 1.5]
        );
        let e = parse_list(&json!({"range": {"from": 5, "to": 1}}), &mut names).unwrap_err();
        assert!(e.0.contains("empty"), "{e:?}");
    }
}
