//! Utterance → intent + slots, with Home Assistant's matching semantics
//! (hassil 3.12's `recognize_best` with `best_slot_name="name"`, as Home
//! Assistant's default agent calls it): every template that can match is
//! matched, and the best result wins — one that names a device, the longest
//! name, then the fewest wildcards, the most literal text, the least
//! wildcard text, the intent's name.
//!
//! Speed comes from work done once: templates, rules and lists are parsed
//! when the grammar loads; the matcher indexes (on its first match, so that
//! a brain starting or resuming does not wait for it) every template by the
//! literal fragments any matching text must contain (so an utterance is
//! tried only against the templates whose words it has), slot lists by a
//! prefix trie of their values, and number words per range. Matching itself
//! walks the template with continuations and undo on one mutable state — no
//! allocation per branch — in exactly the order hassil's generators do, so
//! that ties are broken as hassil breaks them.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use serde::Serialize;
use serde_json::{Map, Value};
use thiserror::Error;

use super::grammar::{Grammar, IntentData, ListUse, Sentence};
use super::slots::{NumberWords, RangeList, SlotList, TextList, ValueInput};
use super::template::{Chunk, Expr, ListRef};
use super::text::{self, Skip, fold, is_punct, is_word};

/// Why a matcher cannot be built over a grammar.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum MatcherError {
    /// A template uses a list that neither the grammar nor the caller gives.
    #[error(
        "{file}: intent `{intent}`, template `{template}`: no list `{{{list}}}` (the grammar defines some, the home gives name, area and floor)"
    )]
    MissingList {
        /// The grammar's file.
        file: String,
        /// The intent.
        intent: String,
        /// The template.
        template: String,
        /// The list.
        list: String,
    },
}

/// One slot of a match.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Slot {
    /// The slot's name (`name`, `area`, `brightness`).
    pub name: String,
    /// Its value (a list value's `out`, a number, the words matched).
    pub value: Value,
    /// The words it matched (empty for slots the template fixes).
    pub text: String,
    /// Whether a wildcard matched it.
    pub wildcard: bool,
    /// The list value's metadata.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

/// The best match of an utterance.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recognized {
    /// The intent (`HassTurnOn`).
    pub intent: String,
    /// The slots, in the order they were matched, then the template's fixed
    /// slots, then slots copied from the context.
    pub slots: Vec<Slot>,
    /// The response key (`default` when the template names none).
    pub response: String,
    /// The context at the end of the match (the caller's, plus what list values added).
    pub context: Map<String, Value>,
    /// The template that matched.
    pub template: String,
    /// The template block's metadata.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// Literal characters matched (hassil's `text_chunks_matched`).
    pub literal_chars: usize,
}

impl Recognized {
    /// The slot called `name` (the last one, as hassil's `entities` map keeps).
    pub fn slot(&self, name: &str) -> Option<&Slot> {
        self.slots.iter().rev().find(|s| s.name == name)
    }

    /// A slot's value as text.
    pub fn text_of(&self, name: &str) -> Option<&str> {
        self.slot(name).and_then(|s| s.value.as_str())
    }

    /// A slot's value as a number.
    pub fn number_of(&self, name: &str) -> Option<f64> {
        self.slot(name).and_then(|s| s.value.as_f64())
    }
}

/// A template's prefilter: clauses of fragment ids, each clause needing one.
type Clauses = Vec<Vec<u32>>;

/// A grammar with the caller's lists, ready to match.
///
/// Building it checks that every list a template uses exists (a home whose
/// names leave a list open is refused here, when the home loads). The index
/// that makes matching fast — the templates' required fragments, the number
/// words of each range — is most of a matcher's cost (milliseconds for Home
/// Assistant's English grammar) and is built on the first match instead: a
/// brain that starts or resumes does not wait for it before its robot moves.
#[derive(Debug)]
pub struct Matcher {
    grammar: Arc<Grammar>,
    /// Lists by id: the grammar's, overridden by the caller's.
    lists: Vec<Option<Arc<SlotList>>>,
    /// Inline ranges (`{1..10:x}`) by list id.
    inline: Vec<Option<Arc<SlotList>>>,
    skip: Vec<Vec<char>>,
    /// The index, built on the first match.
    index: OnceLock<Index>,
}

/// What a matcher builds on its first match.
#[derive(Debug)]
struct Index {
    /// Number words of each range list (and inline range), by list id.
    words: Vec<Option<NumberWords>>,
    /// Distinct literal fragments (folded).
    fragments: Vec<String>,
    /// Per intent, per block, per sentence.
    clauses: Vec<Vec<Vec<Clauses>>>,
    /// Sentence shape: which text it is matched against.
    shapes: Vec<Vec<Vec<Shape>>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Skip words removed anywhere (and also tried with them kept).
    Plain,
    /// The whole sentence is a wildcard: the text as said.
    Whole,
    /// Starts with a wildcard: skip words removed at the end only.
    WildStart,
    /// Ends with a wildcard: skip words removed at the start only.
    WildEnd,
}

const MAX_CLAUSE_DEPTH: usize = 24;

fn rule_body<'a>(g: &'a Grammar, d: &'a IntentData, id: usize) -> Option<&'a Expr> {
    d.local_rules
        .iter()
        .find(|(l, _)| *l == id)
        .map(|(_, e)| e)
        .or_else(|| g.rules.get(id).and_then(Option::as_ref))
}

/// Literal fragments a match must contain, in conjunctive normal form
/// (`hassil.expression._required_clauses`): sound, so a template is skipped
/// only when it cannot match.
fn required(e: &Expr, g: &Grammar, d: &IntentData, depth: usize) -> Vec<Vec<String>> {
    if depth > MAX_CLAUSE_DEPTH {
        return Vec::new();
    }
    match e {
        Expr::Text(c) => c
            .text
            .split_whitespace()
            .filter(|piece| !piece.chars().any(is_punct))
            .map(|piece| vec![piece.chars().map(fold).collect()])
            .collect(),
        Expr::Alt { items, optional } => {
            if *optional || items.is_empty() {
                return Vec::new();
            }
            let mut merged = Vec::new();
            for item in items {
                let branch = required(item, g, d, depth + 1);
                let Some(smallest) = branch.iter().min_by_key(|c| c.len()) else {
                    return Vec::new();
                };
                merged.extend(smallest.iter().cloned());
            }
            merged.sort();
            merged.dedup();
            vec![merged]
        }
        Expr::Seq(items) | Expr::Perm(items) => {
            let mut all: Vec<Vec<String>> = items
                .iter()
                .flat_map(|i| required(i, g, d, depth + 1))
                .collect();
            all.sort();
            all.dedup();
            all
        }
        Expr::Rule { id, .. } => {
            rule_body(g, d, *id).map_or_else(Vec::new, |b| required(b, g, d, depth + 1))
        }
        Expr::List(_) => Vec::new(),
    }
}

/// The lists `exprs` use, directly or through the rules they name (each
/// rule walked once).
fn lists_used<'a>(
    g: &'a Grammar,
    d: &'a IntentData,
    exprs: impl IntoIterator<Item = &'a Expr>,
) -> Vec<&'a ListRef> {
    let mut used = Vec::new();
    let mut rules_seen = HashSet::new();
    let mut stack: Vec<&Expr> = exprs.into_iter().collect();
    let mut rules = Vec::new();
    while let Some(e) = stack.pop() {
        list_refs(e, &mut used);
        collect_rule_ids(e, &mut rules);
        for r in rules.drain(..) {
            if rules_seen.insert(r)
                && let Some(b) = rule_body(g, d, r)
            {
                stack.push(b);
            }
        }
    }
    used
}

/// The lists each block of `g` uses, once each (each rule walked once).
fn list_uses(g: &Grammar) -> Vec<ListUse> {
    let mut memo = HashMap::new();
    let mut uses = Vec::new();
    for (i, intent) in g.intents.iter().enumerate() {
        for (b, d) in intent.data.iter().enumerate() {
            let mut used = block_lists(g, d, &mut memo);
            used.sort_by_key(|l| (l.list_id, l.inline_range));
            used.dedup_by_key(|l| (l.list_id, l.inline_range));
            uses.extend(used.into_iter().map(|l| ListUse {
                intent: i,
                block: b,
                list_id: l.list_id,
                list: l.list.clone(),
                inline_range: l.inline_range,
            }));
        }
    }
    uses
}

/// The lists a block's templates use; `memo` keeps each global rule's
/// lists for the blocks without rules of their own.
fn block_lists<'a>(
    g: &'a Grammar,
    d: &'a IntentData,
    memo: &mut HashMap<usize, Vec<&'a ListRef>>,
) -> Vec<&'a ListRef> {
    if !d.local_rules.is_empty() {
        return lists_used(g, d, d.sentences.iter().map(|s| &s.expr));
    }
    let mut used = Vec::new();
    let mut rules = Vec::new();
    for s in &d.sentences {
        list_refs(&s.expr, &mut used);
        collect_rule_ids(&s.expr, &mut rules);
    }
    rules.sort_unstable();
    rules.dedup();
    for r in rules {
        let lists = memo
            .entry(r)
            .or_insert_with(|| rule_body(g, d, r).map_or_else(Vec::new, |b| lists_used(g, d, [b])));
        used.extend(lists.iter().copied());
    }
    used
}

fn list_refs<'a>(e: &'a Expr, out: &mut Vec<&'a ListRef>) {
    match e {
        Expr::List(l) => out.push(l),
        Expr::Seq(items) | Expr::Alt { items, .. } | Expr::Perm(items) => {
            for i in items {
                list_refs(i, out);
            }
        }
        _ => {}
    }
}

impl Matcher {
    /// The grammar with the caller's lists (`name`, `area`, `floor`, or any
    /// the grammar leaves open; they override the grammar's); an error when
    /// a template uses a list neither gives.
    pub fn new(
        grammar: Arc<Grammar>,
        extra: Vec<(String, SlotList)>,
    ) -> Result<Self, MatcherError> {
        let g = &*grammar;
        let mut lists: Vec<Option<Arc<SlotList>>> =
            g.lists.iter().map(|l| l.clone().map(Arc::new)).collect();
        for (name, list) in extra {
            if let Some(id) = g.names.lists.get(&name) {
                lists[id] = Some(Arc::new(list));
            }
        }
        let mut inline: Vec<Option<Arc<SlotList>>> = vec![None; g.names.lists.len()];
        // Every list a block's templates use must exist.
        for u in g.list_uses.get_or_init(|| list_uses(g)) {
            let intent = &g.intents[u.intent];
            let d = &intent.data[u.block];
            let local = d.local_lists.iter().any(|(id, _)| *id == u.list_id);
            if lists[u.list_id].is_some() || local {
                continue;
            }
            if let Some((from, to, step)) = u.inline_range {
                let range = RangeList::integers(from, to, step);
                inline[u.list_id] = Some(Arc::new(SlotList::Range(range)));
                continue;
            }
            let template = d
                .sentences
                .iter()
                .find(|s| {
                    lists_used(g, d, [&s.expr])
                        .iter()
                        .any(|l| l.list_id == u.list_id)
                })
                .map_or_else(String::new, |s| s.text.clone());
            return Err(MatcherError::MissingList {
                file: g.source.clone(),
                intent: intent.name.clone(),
                template,
                list: u.list.clone(),
            });
        }
        let skip = text::skip_word_list(&g.skip_words);
        Ok(Self {
            grammar,
            lists,
            inline,
            skip,
            index: OnceLock::new(),
        })
    }

    /// The index, built on the first call.
    fn index(&self) -> &Index {
        self.index.get_or_init(|| self.build_index())
    }

    fn build_index(&self) -> Index {
        let g = &*self.grammar;
        let lists = &self.lists;
        let mut words: Vec<Option<NumberWords>> = vec![None; g.names.lists.len()];
        for (id, l) in lists.iter().enumerate() {
            if let Some(list) = l
                && let SlotList::Range(r) = &**list
                && r.words
            {
                words[id] = Some(r.words_trie(&g.language));
            }
        }
        for (id, l) in self.inline.iter().enumerate() {
            if let Some(list) = l
                && let SlotList::Range(r) = &**list
            {
                words[id] = Some(r.words_trie(&g.language));
            }
        }
        let mut fragment_ids: HashMap<String, u32> = HashMap::new();
        let mut fragments = Vec::new();
        let mut clauses = Vec::new();
        let mut shapes = Vec::new();
        let is_wildcard = |e: &Expr| matches!(e, Expr::List(l) if matches!(lists.get(l.list_id).and_then(Option::as_deref), Some(SlotList::Wildcard)));
        for intent in &g.intents {
            let mut ic = Vec::new();
            let mut is = Vec::new();
            for d in &intent.data {
                let mut dc = Vec::new();
                let mut ds = Vec::new();
                for s in &d.sentences {
                    let cl: Clauses = required(&s.expr, g, d, 0)
                        .into_iter()
                        .map(|clause| {
                            clause
                                .into_iter()
                                .map(|f| {
                                    *fragment_ids.entry(f.clone()).or_insert_with(|| {
                                        fragments.push(f);
                                        (fragments.len() - 1) as u32
                                    })
                                })
                                .collect()
                        })
                        .collect();
                    dc.push(cl);
                    let shape = match &s.expr {
                        Expr::Seq(items) if items.len() == 1 && is_wildcard(&items[0]) => {
                            Shape::Whole
                        }
                        Expr::Seq(items) if items.len() > 1 && is_wildcard(&items[0]) => {
                            Shape::WildStart
                        }
                        Expr::Seq(items)
                            if items.len() > 1 && items.last().is_some_and(is_wildcard) =>
                        {
                            Shape::WildEnd
                        }
                        _ => Shape::Plain,
                    };
                    ds.push(shape);
                }
                ic.push(dc);
                is.push(ds);
            }
            clauses.push(ic);
            shapes.push(is);
        }
        // Local lists' number words.
        for intent in &g.intents {
            for d in &intent.data {
                for (id, l) in &d.local_lists {
                    if let SlotList::Range(r) = l
                        && r.words
                        && words[*id].is_none()
                    {
                        words[*id] = Some(r.words_trie(&g.language));
                    }
                }
            }
        }
        Index {
            words,
            fragments,
            clauses,
            shapes,
        }
    }

    /// The grammar.
    pub fn grammar(&self) -> &Grammar {
        &self.grammar
    }

    /// The best match of `text`, with `context` (`area` of the speaker for
    /// "here" sentences); `None` when nothing matches.
    pub fn recognize(&self, text: &str, context: &Map<String, Value>) -> Option<Recognized> {
        let g = &*self.grammar;
        let ign = g.ignore_whitespace;
        let with_skip = text::for_matching(text);
        let no_skip = text::remove_skip_words(&with_skip, &self.skip, ign, Skip::Anywhere);
        let keywords = keywords_of(&no_skip);
        let haystack = haystack_of(&with_skip, &no_skip, ign);
        let index = self.index();
        let present: Vec<bool> = index
            .fragments
            .iter()
            .map(|f| haystack.contains(f.as_str()))
            .collect();
        let mut texts = Candidates::new(with_skip, &no_skip, &self.skip, ign);
        let mut best: Option<Best> = None;
        for (ii, intent) in g.intents.iter().enumerate() {
            for (di, d) in intent.data.iter().enumerate() {
                if !block_applies(d, &keywords, context) {
                    continue;
                }
                for (si, s) in d.sentences.iter().enumerate() {
                    let ok = index.clauses[ii][di][si]
                        .iter()
                        .all(|clause| clause.iter().any(|f| present[*f as usize]));
                    if !ok {
                        continue;
                    }
                    for t in texts.for_shape(index.shapes[ii][di][si]) {
                        self.walk(d, &intent.name, s, t, context, &mut best);
                    }
                }
            }
        }
        best.map(|b| b.result)
    }

    /// Walks sentence `s` of block `data` over text `t`, keeping the best
    /// complete match in `best`.
    fn walk<'a>(
        &'a self,
        data: &'a IntentData,
        intent: &'a str,
        s: &'a Sentence,
        t: &'a Texts,
        context: &'a Map<String, Value>,
        best: &mut Option<Best>,
    ) {
        let g = &*self.grammar;
        let run = Run {
            m: self,
            g,
            data,
            intent,
            sentence: &s.text,
            t,
            ign: g.ignore_whitespace,
            context,
            next_wildcard: RefCell::new(0),
            consumed: RefCell::new(HashMap::new()),
        };
        let mut st = St {
            pos: 0,
            broken: false,
            sow: true,
            chunks: 0,
            ents: Vec::new(),
            ctx: Vec::new(),
        };
        run.expr(&s.expr, &mut st, &mut |st| run.finish(st, best));
    }
}

/// The words of the text without skip words (for a block's required keywords).
fn keywords_of(no_skip: &[char]) -> Vec<String> {
    no_skip
        .iter()
        .collect::<String>()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// The folded text, with and without skip words (and, for languages that
/// ignore white space, without white space between CJK characters), one per
/// line: a template's required fragments are looked for in it.
fn haystack_of(with_skip: &[char], no_skip: &[char], ign: bool) -> String {
    let mut haystack: String = with_skip.iter().map(|c| fold(*c)).collect();
    haystack.push('\n');
    haystack.extend(no_skip.iter().map(|c| fold(*c)));
    if ign {
        let stripped: Vec<char> = text::drop_cjk_spaces(&haystack.chars().collect::<Vec<_>>());
        haystack.push('\n');
        haystack.extend(stripped);
    }
    haystack
}

/// Whether a block is tried at all: the text has one of its required
/// keywords, and the caller's context (when given) is one it accepts.
fn block_applies(d: &IntentData, keywords: &[String], context: &Map<String, Value>) -> bool {
    if let Some(kw) = &d.required_keywords
        && !kw.is_empty()
        && !kw.iter().any(|k| keywords.contains(k))
    {
        return false;
    }
    context.is_empty()
        || ((d.requires_context.is_empty()
            || check_required(&d.requires_context, &|k| context.get(k), true))
            && (d.excludes_context.is_empty()
                || check_excluded(&d.excludes_context, &|k| context.get(k))))
}

/// A text as the matcher walks it: white space between CJK characters
/// dropped for languages that ignore it, else a space appended.
fn matchable(t: &[char], ign: bool) -> Texts {
    let mut v = if ign {
        text::drop_cjk_spaces(t)
    } else {
        t.to_vec()
    };
    if !ign {
        v.push(' ');
    }
    Texts::new(v)
}

/// The texts an utterance is matched as: with and without its skip words,
/// and (made when a sentence first needs them) without them at one end only.
struct Candidates<'s> {
    /// The text as said (skip words kept), before `matchable`.
    said: Vec<char>,
    skip: &'s [Vec<char>],
    ign: bool,
    /// Whether removing skip words changed the text.
    had_skip: bool,
    with_skip: Texts,
    no_skip: Texts,
    /// Skip words removed at the start only.
    start: Option<Texts>,
    /// Skip words removed at the end only.
    end: Option<Texts>,
}

impl<'s> Candidates<'s> {
    /// The candidates of the text as said, `said`, and without skip words, `no_skip`.
    fn new(said: Vec<char>, no_skip: &[char], skip: &'s [Vec<char>], ign: bool) -> Self {
        let had_skip = no_skip != said.as_slice();
        Self {
            no_skip: matchable(no_skip, ign),
            with_skip: matchable(&said, ign),
            said,
            skip,
            ign,
            had_skip,
            start: None,
            end: None,
        }
    }

    /// The texts a sentence of `shape` is matched against, in hassil's order.
    fn for_shape(&mut self, shape: Shape) -> Vec<&Texts> {
        match shape {
            Shape::Plain if self.had_skip => vec![&self.with_skip, &self.no_skip],
            Shape::Plain => vec![&self.no_skip],
            Shape::Whole => vec![&self.with_skip],
            Shape::WildStart | Shape::WildEnd => {
                let (kept, side) = if shape == Shape::WildStart {
                    (&mut self.end, Skip::End)
                } else {
                    (&mut self.start, Skip::Start)
                };
                let (said, skip, ign) = (&self.said, self.skip, self.ign);
                let t = kept.get_or_insert_with(|| {
                    matchable(&text::remove_skip_words(said, skip, ign, side), ign)
                });
                if self.had_skip && t.orig == self.no_skip.orig {
                    vec![&self.with_skip, &self.no_skip]
                } else {
                    vec![&*t]
                }
            }
        }
    }
}

fn collect_rule_ids(e: &Expr, out: &mut Vec<usize>) {
    match e {
        Expr::Rule { id, .. } => out.push(*id),
        Expr::Seq(items) | Expr::Alt { items, .. } | Expr::Perm(items) => {
            for i in items {
                collect_rule_ids(i, out);
            }
        }
        _ => {}
    }
}

/// A candidate text: as said and folded, each also with `-`/`_` as spaces.
#[derive(Debug)]
struct Texts {
    orig: Vec<char>,
    fold: Vec<char>,
    orig_b: Vec<char>,
    fold_b: Vec<char>,
}

impl Texts {
    fn new(orig: Vec<char>) -> Self {
        let fold: Vec<char> = orig.iter().map(|c| text::fold(*c)).collect();
        let brk = |c: &char| if *c == '-' || *c == '_' { ' ' } else { *c };
        let orig_b = orig.iter().map(brk).collect();
        let fold_b = fold.iter().map(brk).collect();
        Self {
            orig,
            fold,
            orig_b,
            fold_b,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Span {
    start: usize,
    end: usize,
    broken: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum EntValue<'a> {
    /// A list value's `out`.
    Out(&'a Value),
    /// The words matched.
    Text,
    /// A number.
    Num(f64),
}

#[derive(Debug, Clone, PartialEq)]
struct Ent<'a> {
    name: &'a str,
    value: EntValue<'a>,
    span: Span,
    /// A number word's text (the trie's spelling) instead of the span's.
    word: Option<&'a str>,
    wildcard: bool,
    open: bool,
    end_of_word: bool,
    id: u32,
    metadata: Option<&'a Value>,
}

impl<'a> Ent<'a> {
    /// A list value or number (neither wildcard nor number word) over `span`.
    fn fixed(name: &'a str, value: EntValue<'a>, span: Span) -> Self {
        Self {
            name,
            value,
            span,
            word: None,
            wildcard: false,
            open: false,
            end_of_word: false,
            id: 0,
            metadata: None,
        }
    }
}

/// The one mutable state a match walks with (undone on the way back).
#[derive(Debug)]
struct St<'a> {
    pos: usize,
    broken: bool,
    sow: bool,
    chunks: usize,
    ents: Vec<Ent<'a>>,
    ctx: Vec<(&'a str, &'a Value)>,
}

/// Where a text chunk is looked for, and the chunk as compared there.
#[derive(Debug, Clone, Copy)]
struct Probe<'a> {
    /// The position in the text.
    at: usize,
    /// The chunk (folded; without leading white space at the start of a word).
    chunk: &'a [char],
    /// Its length without white space at either end.
    stripped: usize,
}

struct Best {
    key: (bool, usize),
    score: (usize, i64, usize),
    intent: String,
    result: Recognized,
}

struct Run<'a> {
    m: &'a Matcher,
    g: &'a Grammar,
    data: &'a IntentData,
    intent: &'a str,
    sentence: &'a str,
    t: &'a Texts,
    ign: bool,
    context: &'a Map<String, Value>,
    next_wildcard: RefCell<u32>,
    /// Open wildcards that a finished match filled (hassil mutates the
    /// shared entity, so later matches see it closed with that text).
    consumed: RefCell<HashMap<u32, Span>>,
}

type K<'k, 'a> = &'k mut dyn FnMut(&mut St<'a>);

fn lstrip(c: &[char]) -> &[char] {
    let n = c.iter().take_while(|c| c.is_whitespace()).count();
    &c[n..]
}

fn starts_with(t: &[char], p: usize, chunk: &[char]) -> bool {
    t.len() >= p + chunk.len() && t[p..p + chunk.len()] == *chunk
}

/// `hassil.util.match_first`: where `chunk` first occurs in `t[p + from..]`
/// (at a word boundary if asked), relative to `p`.
fn match_first(t: &[char], p: usize, chunk: &[char], from: usize, boundary: bool) -> Option<usize> {
    let s = t.get(p + from..)?;
    if chunk.len() > s.len() {
        return None;
    }
    (0..=s.len() - chunk.len()).find_map(|j| {
        if s[j..j + chunk.len()] != *chunk {
            return None;
        }
        if boundary {
            let before = j > 0 && is_word(s[j - 1]);
            let after = s.get(j).is_some_and(|c| is_word(*c));
            if before == after {
                return None;
            }
        }
        Some(from + j)
    })
}

fn py_eq(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if a.is_number() && b.is_number() => x == y,
        _ => a == b,
    }
}

fn unpack(v: &Value) -> Option<&Value> {
    match v {
        Value::Object(o) => o.get("value"),
        other => Some(other),
    }
}

/// `hassil.util.check_required_context`.
fn check_required<'v>(
    required: &Map<String, Value>,
    get: &dyn Fn(&str) -> Option<&'v Value>,
    allow_missing: bool,
) -> bool {
    for (key, want) in required {
        let Some(actual) = get(key) else {
            if allow_missing {
                continue;
            }
            return false;
        };
        let want = unpack(want).filter(|v| !v.is_null());
        let actual = unpack(actual);
        match want {
            Some(Value::Array(options))
                if !actual.is_some_and(|a| options.iter().any(|o| py_eq(o, a))) =>
            {
                return false;
            }
            Some(w) if !w.is_array() && !actual.is_some_and(|a| py_eq(a, w)) => return false,
            _ => {}
        }
    }
    true
}

/// `hassil.util.check_excluded_context`.
fn check_excluded<'v>(
    excluded: &Map<String, Value>,
    get: &dyn Fn(&str) -> Option<&'v Value>,
) -> bool {
    for (key, not) in excluded {
        let Some(actual) = get(key) else { continue };
        let not = unpack(not);
        let actual = unpack(actual);
        match not {
            Some(Value::Array(options)) => {
                if actual.is_some_and(|a| options.iter().any(|o| py_eq(o, a))) {
                    return false;
                }
            }
            other => {
                let same = match (other, actual) {
                    (Some(x), Some(y)) => py_eq(x, y),
                    (None, None) => true,
                    _ => false,
                };
                if same {
                    return false;
                }
            }
        }
    }
    true
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

impl<'a> Run<'a> {
    fn fold_of(&self, broken: bool) -> &'a [char] {
        if broken { &self.t.fold_b } else { &self.t.fold }
    }

    fn orig_of(&self, broken: bool) -> &'a [char] {
        if broken { &self.t.orig_b } else { &self.t.orig }
    }

    fn len(&self) -> usize {
        self.t.orig.len()
    }

    /// The last entity when it is a wildcard still open.
    fn open_wildcard(&self, st: &St<'a>) -> Option<usize> {
        let last = st.ents.last()?;
        (last.wildcard && last.open && !self.consumed.borrow().contains_key(&last.id))
            .then(|| st.ents.len() - 1)
    }

    fn span_text(&self, s: Span) -> String {
        let o = self.orig_of(s.broken);
        o[s.start.min(o.len())..s.end.min(o.len()).max(s.start.min(o.len()))]
            .iter()
            .collect()
    }

    fn lookup(&self, st: &St<'a>, key: &str) -> Option<&'a Value> {
        st.ctx
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
            .or_else(|| self.context.get(key))
    }

    fn expr(&self, e: &'a Expr, st: &mut St<'a>, k: K<'_, 'a>) {
        match e {
            Expr::Text(c) => self.text(c, st, k),
            Expr::Seq(items) => self.seq(items, 0, st, k),
            Expr::Alt { items, .. } => {
                for item in items {
                    self.expr(item, st, k);
                }
            }
            Expr::Perm(items) => {
                if items.len() == 1 {
                    self.expr(&items[0], st, k);
                } else {
                    let all = if items.len() >= 64 {
                        u64::MAX
                    } else {
                        (1u64 << items.len()) - 1
                    };
                    self.perm(items, all, st, k);
                }
            }
            Expr::List(l) => self.list(l, st, k),
            Expr::Rule { id, .. } => {
                if let Some(body) = rule_body(self.g, self.data, *id) {
                    self.expr(body, st, k);
                }
            }
        }
    }

    fn seq(&self, items: &'a [Expr], i: usize, st: &mut St<'a>, k: K<'_, 'a>) {
        match items.get(i) {
            None => k(st),
            Some(item) => self.expr(item, st, &mut |st| self.seq(items, i + 1, st, k)),
        }
    }

    fn perm(&self, items: &'a [Expr], mask: u64, st: &mut St<'a>, k: K<'_, 'a>) {
        let left: Vec<usize> = (0..items.len().min(64))
            .filter(|i| mask & (1 << i) != 0)
            .collect();
        if let [only] = left[..] {
            return self.expr(&items[only], st, k);
        }
        for i in left {
            self.expr(&items[i], st, &mut |st| {
                self.perm(items, mask & !(1 << i), st, k);
            });
        }
    }

    /// Closes every open wildcard; returns what to restore.
    fn close_wildcards(st: &mut St<'a>) -> Option<usize> {
        let last = st.ents.len().checked_sub(1)?;
        if st.ents[last].open {
            st.ents[last].open = false;
            Some(last)
        } else {
            None
        }
    }

    fn text(&self, c: &'a Chunk, st: &mut St<'a>, k: K<'_, 'a>) {
        if c.text.is_empty() {
            return k(st);
        }
        let p = self.probe(c, st);
        if let Some(wi) = self.open_wildcard(st) {
            if p.stripped > 0 {
                self.fill_wildcard(c, &p, wi, st, k);
            } else {
                // An open wildcard is empty: it takes the text up to where the chunk is.
                let saved = (st.pos, st.sow);
                st.pos = p.at;
                st.sow = true;
                k(st);
                (st.pos, st.sow) = saved;
            }
            return;
        }
        let folded = self.fold_of(st.broken);
        let rest = &folded[p.at.min(folded.len())..];
        if starts_with(folded, p.at, p.chunk) {
            Self::take_chunk(c, &p, false, st, k);
        } else if rest.iter().all(|c| c.is_whitespace())
            && !p.chunk.is_empty()
            && p.chunk.iter().all(|c| c.is_whitespace())
        {
            k(st);
        } else {
            let hyphen = !st.broken && rest.iter().any(|c| *c == '-' || *c == '_');
            let broken = st.broken || hyphen;
            if hyphen && starts_with(self.fold_of(broken), p.at, p.chunk) {
                Self::take_chunk(c, &p, true, st, k);
            } else {
                self.extend_wildcard(&p, broken, st, k);
            }
        }
    }

    /// Where chunk `c` is looked for: past the white space at the start of
    /// a word (unless white space is ignored), and the chunk as compared.
    fn probe(&self, c: &'a Chunk, st: &St<'a>) -> Probe<'a> {
        let folded = self.fold_of(st.broken);
        let mut chunk: &'a [char] = if self.ign { &c.folded_cjk } else { &c.folded };
        let mut at = st.pos;
        if !self.ign && st.sow {
            chunk = lstrip(chunk);
            while at < folded.len() && folded[at].is_whitespace() {
                at += 1;
            }
        }
        Probe {
            at,
            chunk,
            stripped: text::strip(chunk).len(),
        }
    }

    /// An open wildcard (entity `wi`) takes the text up to each place where
    /// the chunk occurs (not at once: a wildcard cannot be empty), and the
    /// chunk is matched there.
    fn fill_wildcard(&self, c: &'a Chunk, p: &Probe<'a>, wi: usize, st: &mut St<'a>, k: K<'_, 'a>) {
        let folded = self.fold_of(st.broken);
        let (at, chunk) = (p.at, p.chunk);
        let boundary = !self.ign && st.ents[wi].end_of_word;
        let Some(mut start) = match_first(folded, at, chunk, 0, boundary) else {
            return;
        };
        if start == 0 {
            match match_first(folded, at, chunk, 1, boundary) {
                Some(s) => start = s,
                None => return,
            }
        }
        while start > 0 {
            let old = st.ents[wi].clone();
            st.ents[wi] = Ent {
                span: Span {
                    start: at,
                    end: at + start,
                    broken: st.broken,
                },
                open: false,
                value: EntValue::Text,
                ..old.clone()
            };
            let saved = (st.pos, st.sow);
            st.pos = at + start;
            st.sow = true;
            self.text(c, st, k);
            (st.pos, st.sow) = saved;
            st.ents[wi] = old;
            match match_first(folded, at, chunk, start + 1, false) {
                Some(s) => start = s,
                None => break,
            }
        }
    }

    /// Matches the chunk where it is and goes on, closing an open wildcard
    /// before it: on the text as said (counting the chunk's literal
    /// characters, a word starting where it ends), or on the text with
    /// `-`/`_` as spaces (`broken`; as hassil, neither then).
    fn take_chunk(c: &'a Chunk, p: &Probe<'a>, broken: bool, st: &mut St<'a>, k: K<'_, 'a>) {
        let saved = (st.pos, st.sow, st.chunks, st.broken);
        st.pos = p.at + p.chunk.len();
        if broken {
            st.broken = true;
        } else {
            st.sow = c.ends_word;
        }
        let closed = if p.stripped > 0 {
            if !broken {
                st.chunks += p.stripped;
            }
            Self::close_wildcards(st)
        } else {
            None
        };
        k(st);
        st.pos = saved.0;
        if broken {
            st.broken = saved.3;
        } else {
            (st.sow, st.chunks) = (saved.1, saved.2);
        }
        if let Some(i) = closed {
            st.ents[i].open = true;
        }
    }

    /// A wildcard with text already takes more, up to where the chunk is
    /// (hassil keeps this branch); `broken` when `-`/`_` count as spaces.
    fn extend_wildcard(&self, p: &Probe<'a>, broken: bool, st: &mut St<'a>, k: K<'_, 'a>) {
        let Some(last) = st.ents.last() else { return };
        if !(last.wildcard && last.open) || self.consumed.borrow().contains_key(&last.id) {
            return;
        }
        let (at, chunk) = (p.at, p.chunk);
        if let Some(skip) = match_first(self.fold_of(broken), at, chunk, 0, false)
            && skip > 0
        {
            let saved_ents = st.ents.clone();
            let w = last.clone();
            st.ents.retain(|e| e.name != w.name);
            st.ents.push(Ent {
                span: Span {
                    start: at,
                    end: at + skip,
                    broken,
                },
                open: false,
                value: EntValue::Text,
                ..w
            });
            let saved = (st.pos, st.broken, st.sow);
            st.pos = at + skip + chunk.len();
            st.broken = broken;
            st.sow = true;
            k(st);
            (st.pos, st.broken, st.sow) = saved;
            st.ents = saved_ents;
        }
    }

    fn list_of(&self, l: &ListRef) -> Option<&'a SlotList> {
        if let Some((_, list)) = self
            .data
            .local_lists
            .iter()
            .find(|(id, _)| *id == l.list_id)
        {
            return Some(list);
        }
        self.m
            .lists
            .get(l.list_id)
            .and_then(Option::as_deref)
            .or_else(|| self.m.inline.get(l.list_id).and_then(Option::as_deref))
    }

    fn list(&self, l: &'a ListRef, st: &mut St<'a>, k: K<'_, 'a>) {
        if st.pos >= self.len() {
            return;
        }
        match self.list_of(l) {
            Some(SlotList::Text(tl)) => self.text_list(l, tl, st, k),
            Some(SlotList::Range(r)) => self.range(l, r, st, k),
            Some(SlotList::Wildcard) => {
                let id = {
                    let mut n = self.next_wildcard.borrow_mut();
                    *n += 1;
                    *n
                };
                st.ents.push(Ent {
                    name: &l.slot,
                    value: EntValue::Text,
                    span: Span {
                        start: st.pos,
                        end: st.pos,
                        broken: st.broken,
                    },
                    word: None,
                    wildcard: true,
                    open: true,
                    end_of_word: l.end_of_word,
                    id,
                    metadata: None,
                });
                k(st);
                st.ents.pop();
            }
            None => {}
        }
    }

    fn text_list(&self, l: &'a ListRef, tl: &'a TextList, st: &mut St<'a>, k: K<'_, 'a>) {
        let open = self.open_wildcard(st);
        let rest = &self.fold_of(st.broken)[st.pos..];
        let mut cands = Vec::new();
        if open.is_none() && !self.ign && st.sow && !lstrip(rest).is_empty() {
            tl.candidates(lstrip(rest), &mut cands);
        } else if open.is_none() && self.ign {
            tl.candidates_cjk(rest, &mut cands);
        } else {
            cands.extend(0..tl.values.len());
        }
        let left = self.len() - st.pos;
        let req = &self.data.requires_context;
        let exc = &self.data.excludes_context;
        for i in cands {
            let v = &tl.values[i];
            if let ValueInput::Text(c) = &v.input
                && (c.text.trim().is_empty() || left < c.folded.len())
            {
                continue;
            }
            if let Some(vc) = &v.context {
                if !req.is_empty() && !check_required(req, &|key| vc.get(key), true) {
                    continue;
                }
                if !exc.is_empty() && !check_excluded(exc, &|key| vc.get(key)) {
                    continue;
                }
            }
            let entry = (st.pos, st.broken, st.sow, st.chunks);
            let mut on_value = |st: &mut St<'a>| {
                let whole = self.orig_of(entry.1);
                let mut start = entry.0;
                if let Some(w) = st.ents.last()
                    && w.wildcard
                {
                    let wtext: Vec<char> = self.span_text(w.span).chars().collect();
                    if starts_with(whole, entry.0, &wtext) {
                        start += wtext.len();
                    }
                }
                let end = st.pos.max(start);
                let saved = (st.sow, st.chunks);
                st.sow = entry.2;
                st.chunks = entry.3;
                let pushed = !l.capture;
                if pushed {
                    st.ents.push(Ent {
                        name: &l.slot,
                        value: v.out.as_ref().map_or(EntValue::Text, EntValue::Out),
                        span: Span {
                            start,
                            end,
                            broken: entry.1,
                        },
                        word: None,
                        wildcard: false,
                        open: false,
                        end_of_word: false,
                        id: 0,
                        metadata: v.metadata.as_ref(),
                    });
                }
                let before = st.ctx.len();
                if let Some(vc) = &v.context {
                    st.ctx.extend(vc.iter().map(|(k, v)| (k.as_str(), v)));
                }
                k(st);
                st.ctx.truncate(before);
                if pushed {
                    st.ents.pop();
                }
                (st.sow, st.chunks) = saved;
            };
            match &v.input {
                ValueInput::Text(c) => self.text(c, st, &mut on_value),
                ValueInput::Template(e) => self.expr(e, st, &mut on_value),
            }
        }
    }

    fn range(&self, list: &'a ListRef, range: &'a RangeList, st: &mut St<'a>, k: K<'_, 'a>) {
        let open = self.open_wildcard(st);
        let rest = &self.orig_of(st.broken)[st.pos..];
        let numbers = digits_in(rest, range.fractions.is_some(), open.is_none());
        let digits_match = range.digits && self.range_digits(list, range, &numbers, open, st, k);
        if !range.words || digits_match || !numbers.is_empty() {
            return;
        }
        self.range_words(list, open, st, k);
    }

    /// Goes on with each number in digits (`numbers`: spans in the rest of
    /// the text) that `range` holds; whether there was one.
    fn range_digits(
        &self,
        list: &'a ListRef,
        range: &'a RangeList,
        numbers: &[(usize, usize)],
        open: Option<usize>,
        st: &mut St<'a>,
        k: K<'_, 'a>,
    ) -> bool {
        let rest = &self.orig_of(st.broken)[st.pos..];
        let mut digits_match = false;
        for &(gs, ge) in numbers {
            let s: String = rest[gs..ge]
                .iter()
                .collect::<String>()
                .trim()
                .replace(',', ".");
            let Ok(n) = s.parse::<f64>() else { continue };
            if !range.contains(n) {
                continue;
            }
            digits_match = true;
            let span = Span {
                start: st.pos + gs,
                end: st.pos + ge,
                broken: st.broken,
            };
            let ent = Ent::fixed(&list.slot, EntValue::Num(range.value_of(n)), span);
            Self::with_number(ent, open, (gs, ge), st, k);
        }
        digits_match
    }

    /// Goes on with each number in words the list's range has, at the
    /// start of the rest of the text (anywhere in it after an open wildcard).
    fn range_words(&self, list: &'a ListRef, open: Option<usize>, st: &mut St<'a>, k: K<'_, 'a>) {
        let Some(words) = self
            .m
            .index()
            .words
            .get(list.list_id)
            .and_then(Option::as_ref)
        else {
            return;
        };
        let rest = &self.orig_of(st.broken)[st.pos..];
        let lower: Vec<char> = rest.iter().map(|c| fold(*c)).collect();
        for (s, _e, word, value) in words.find(&lower, open.is_none()) {
            if open.is_none() && s > 0 {
                continue;
            }
            let span = Span {
                start: st.pos + s,
                end: st.pos + s + word.folded.len(),
                broken: st.broken,
            };
            let ent = Ent {
                word: Some(word.text.as_str()),
                ..Ent::fixed(&list.slot, EntValue::Num(value), span)
            };
            Self::with_number(ent, open, (s, s), st, &mut |st| self.text(word, st, k));
        }
    }

    /// Goes on (`go`) with number entity `ent` pushed: `at.0` characters on
    /// is where it starts (an open wildcard `open` takes the text before),
    /// `at.1` characters on is where the walk resumes.
    fn with_number(
        ent: Ent<'a>,
        open: Option<usize>,
        at: (usize, usize),
        st: &mut St<'a>,
        go: K<'_, 'a>,
    ) {
        let saved_pos = st.pos;
        let closed = open.map(|wi| {
            let old = st.ents[wi].clone();
            st.ents[wi].span = Span {
                start: st.pos,
                end: st.pos + at.0,
                broken: st.broken,
            };
            st.ents[wi].open = false;
            (wi, old)
        });
        st.pos += at.1;
        st.ents.push(ent);
        go(st);
        st.ents.pop();
        st.pos = saved_pos;
        if let Some((wi, old)) = closed {
            st.ents[wi] = old;
        }
    }

    /// A complete walk of the template: close what is open, check what
    /// must be checked, and keep the result if it is the best so far.
    fn finish(&self, st: &mut St<'a>, best: &mut Option<Best>) {
        let Some(filled) = self.fill_last_wildcard(st) else {
            return;
        };
        // Wildcards cannot be empty.
        let Some((wildcards, wildcard_len)) = self.wildcard_lengths(st, filled) else {
            return;
        };
        let data = self.data;
        if !data.excludes_context.is_empty()
            && !check_excluded(&data.excludes_context, &|key| self.lookup(st, key))
        {
            return;
        }
        let Some(from_context) = self.context_slots(st) else {
            return;
        };
        // The key hassil's recognize_best ranks by.
        let key = self.rank_key(st, filled);
        let score = (wildcards, -(st.chunks as i64), wildcard_len);
        if let Some(b) = best.as_ref() {
            let better = key > b.key
                || (key == b.key && (score, self.intent) < (b.score, b.intent.as_str()));
            if !better {
                return;
            }
        }
        // Materialise.
        let slots = self.slots(st, filled, from_context);
        let mut context = self.context.clone();
        for (k, v) in &st.ctx {
            context.insert((*k).to_string(), (*v).clone());
        }
        *best = Some(Best {
            key,
            score,
            intent: self.intent.to_string(),
            result: Recognized {
                intent: self.intent.to_string(),
                slots,
                response: data.response.clone().unwrap_or_else(|| "default".into()),
                context,
                template: self.sentence.to_string(),
                metadata: data.metadata.clone(),
                literal_chars: st.chunks,
            },
        });
    }

    /// Gives an open wildcard at the end the text left (the first walk that
    /// ends there fills it: hassil mutates the shared entity, so later walks
    /// see that text); `None` when text is left that nothing took.
    fn fill_last_wildcard(&self, st: &St<'a>) -> Option<Filled> {
        let orig = self.orig_of(st.broken);
        let rest = &orig[st.pos.min(orig.len())..];
        let final_text = text::strip(rest);
        let mut filled: Filled = None;
        let mut rest_after: &[char] = rest;
        if let Some(last) = st.ents.last()
            && last.wildcard
            && last.open
        {
            let consumed = self.consumed.borrow().get(&last.id).copied();
            match consumed {
                Some(span) => filled = Some((st.ents.len() - 1, span)),
                None if !final_text.is_empty() => {
                    let lead = rest.iter().take_while(|c| c.is_whitespace()).count();
                    let span = Span {
                        start: st.pos + lead,
                        end: st.pos + lead + final_text.len(),
                        broken: st.broken,
                    };
                    self.consumed.borrow_mut().insert(last.id, span);
                    filled = Some((st.ents.len() - 1, span));
                    rest_after = &[];
                }
                None => {}
            }
        }
        text::strip(&text::remove_punctuation(rest_after))
            .is_empty()
            .then_some(filled)
    }

    /// The number of wildcards and the length of their text (trimmed);
    /// `None` when one is empty.
    fn wildcard_lengths(&self, st: &St<'a>, filled: Filled) -> Option<(usize, usize)> {
        let mut wildcard_len = 0;
        let mut wildcards = 0;
        for (i, e) in st.ents.iter().enumerate() {
            if e.wildcard {
                let folded = self.span_text(span_of(filled, i, e));
                let trimmed = folded.trim();
                if trimmed.is_empty() {
                    return None;
                }
                wildcards += 1;
                wildcard_len += trimmed.chars().count();
            }
        }
        Some((wildcards, wildcard_len))
    }

    /// Checks the block's required context against the match's (the
    /// caller's plus what list values added): the slots it copies from the
    /// context, or `None` when a requirement fails.
    fn context_slots(&self, st: &St<'a>) -> Option<Vec<Slot>> {
        let mut from_context: Vec<Slot> = Vec::new();
        for (key, want) in &self.data.requires_context {
            let (copy_to, want) = wanted_context(key, want);
            let (actual, actual_text, metadata) = context_value(self.lookup(st, key));
            let ok = match (want, actual) {
                (Some(Value::Array(options)), Some(a)) => options.iter().any(|o| py_eq(o, a)),
                (Some(w), Some(a)) => py_eq(w, a),
                (None, Some(_)) => true,
                _ => false,
            };
            if !ok {
                return None;
            }
            if let (Some(name), Some(a)) = (copy_to, actual) {
                from_context.push(Slot {
                    name,
                    value: a.clone(),
                    text: actual_text,
                    wildcard: false,
                    metadata,
                });
            }
        }
        Some(from_context)
    }

    /// The key hassil's `recognize_best` ranks by: whether the last entity
    /// called `name` is a slot (not a wildcard), and the length of its text.
    fn rank_key(&self, st: &St<'a>, filled: Filled) -> (bool, usize) {
        let name_ent = st
            .ents
            .iter()
            .enumerate()
            .rev()
            .find(|(_, e)| e.name == "name");
        match name_ent {
            Some((i, e)) if !e.wildcard => {
                let q = match e.value {
                    EntValue::Out(Value::String(_)) | EntValue::Text => e.word.map_or_else(
                        || self.span_text(span_of(filled, i, e)).chars().count(),
                        |w| w.chars().count(),
                    ),
                    _ => 0,
                };
                (true, q)
            }
            _ => (false, 0),
        }
    }

    /// The match's slots: its entities', then the block's fixed slots and
    /// those copied from the context, each unless an entity has its name.
    fn slots(&self, st: &St<'a>, filled: Filled, from_context: Vec<Slot>) -> Vec<Slot> {
        let mut slots: Vec<Slot> = st
            .ents
            .iter()
            .enumerate()
            .map(|(i, e)| self.slot_of(e, span_of(filled, i, e)))
            .collect();
        let names: HashSet<String> = slots.iter().map(|s| s.name.clone()).collect();
        for (name, value) in &self.data.slots {
            if !names.contains(name) {
                slots.push(Slot {
                    name: name.clone(),
                    value: value.clone(),
                    text: String::new(),
                    wildcard: false,
                    metadata: None,
                });
            }
        }
        for s in from_context {
            if !names.contains(&s.name) {
                slots.push(s);
            }
        }
        slots
    }

    /// The slot entity `e` (over `span`) gives.
    fn slot_of(&self, e: &Ent<'a>, span: Span) -> Slot {
        let raw = e.word.map_or_else(|| self.span_text(span), str::to_string);
        let text = if e.wildcard {
            raw.trim().to_string()
        } else {
            raw
        };
        let value = match e.value {
            EntValue::Out(v) => v.clone(),
            EntValue::Num(n) => serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number),
            EntValue::Text => Value::String(text.clone()),
        };
        Slot {
            name: e.name.to_string(),
            value,
            text,
            wildcard: e.wildcard,
            metadata: e.metadata.cloned(),
        }
    }
}

/// The wildcard a finished walk fills with the text left: (entity, span).
type Filled = Option<(usize, Span)>;

/// Entity `i`'s span, or the one a finished walk filled it with.
fn span_of(filled: Filled, i: usize, e: &Ent<'_>) -> Span {
    match filled {
        Some((fi, s)) if fi == i => s,
        _ => e.span,
    }
}

/// A required context entry: the slot it copies to (`slot: name`, or the
/// key for `slot: true`) and the value wanted (none: any).
fn wanted_context<'v>(key: &str, want: &'v Value) -> (Option<String>, Option<&'v Value>) {
    match want {
        Value::Object(o) => {
            let copy = match o.get("slot") {
                Some(Value::String(s)) => Some(s.clone()),
                Some(v) if truthy(v) => Some(key.to_string()),
                _ => None,
            };
            (copy, o.get("value").filter(|v| !v.is_null()))
        }
        other => (None, Some(other).filter(|v| !v.is_null())),
    }
}

/// A context value: its value (none when null or absent), text and metadata.
fn context_value(raw: Option<&Value>) -> (Option<&Value>, String, Option<Value>) {
    match raw {
        Some(Value::Object(o)) => (
            o.get("value").filter(|v| !v.is_null()),
            o.get("text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            o.get("metadata").cloned(),
        ),
        Some(v) if !v.is_null() => (Some(v), String::new(), None),
        _ => (None, String::new(), None),
    }
}

/// Numbers in digits (hassil's `INTEGER_START` / `FLOAT_START`, or every one
/// when a wildcard may take the text before): spans of `\s*-?[0-9]+` (with
/// `[.,][0-9]+` for fractions), relative to `text`.
fn digits_in(text: &[char], fractions: bool, at_start: bool) -> Vec<(usize, usize)> {
    let at = |i: usize| -> Option<usize> {
        let mut j = i;
        while j < text.len() && text[j].is_whitespace() {
            j += 1;
        }
        if j < text.len() && text[j] == '-' {
            j += 1;
        }
        let digits = text[j.min(text.len())..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if digits == 0 {
            return None;
        }
        j += digits;
        if fractions
            && j + 1 < text.len()
            && (text[j] == '.' || text[j] == ',')
            && text[j + 1].is_ascii_digit()
        {
            j += 1;
            j += text[j..].iter().take_while(|c| c.is_ascii_digit()).count();
        }
        Some(j)
    };
    if at_start {
        return at(0).map(|e| vec![(0, e)]).unwrap_or_default();
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        match at(i) {
            Some(e) => {
                out.push((i, e));
                i = e.max(i + 1);
            }
            None => i += 1,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::intents::slots::{HomeNames, NamedArea, NamedEntity, NamedFloor};

    const GRAMMAR: &str = r#"
language: en
skip_words: [please, "can you"]
intents:
  HassTurnOn:
    data:
      - sentences:
          - "<turn> on [the] {name}"
          - "<turn> [the] {name} on"
        requires_context: {domain: [light, switch, fan]}
      - sentences:
          - "<turn> on [all] [the] {area} lights"
          - "<turn> on [all] [the] lights (in|on) [the] {area}"
        slots: {domain: light}
        response: lights_area
      - sentences:
          - "<turn> on [all] [the] {floor} lights"
        slots: {domain: light}
      - sentences: ["<turn> on [the] lights [in] here"]
        slots: {domain: light}
        requires_context: {area: {slot: true}}
  HassLightSet:
    data:
      - sentences:
          - "set [the] {name} [brightness] to {brightness}[%| percent]"
          - "(set;{name}) to {temperature} degrees"
  HassListAddItem:
    data:
      - sentences: ["add {item} to [my] {name} [list]"]
        requires_context: {domain: todo}
  HassBroadcast:
    data:
      - sentences: ["broadcast {message}"]
expansion_rules:
  turn: "(turn|switch)"
lists:
  brightness: {range: {type: percentage, from: 0, to: 100}}
  temperature: {range: {from: 0, to: 40, fractions: halves}}
  item: {wildcard: true}
  message: {wildcard: true}
"#;

    fn home() -> HomeNames {
        let e = |id: &str, names: &[&str], domain: &str, area: &str| NamedEntity {
            id: id.into(),
            names: names.iter().map(|s| (*s).to_string()).collect(),
            domain: domain.into(),
            device_class: None,
            area: Some(area.into()),
        };
        HomeNames {
            entities: vec![
                e("light.kitchen", &["Kitchen Light"], "light", "kitchen"),
                e(
                    "light.kitchen_strip",
                    &["Kitchen Light Strip"],
                    "light",
                    "kitchen",
                ),
                e(
                    "sensor.kitchen_light",
                    &["Kitchen Light Level"],
                    "sensor",
                    "kitchen",
                ),
                e("todo.shopping", &["Shopping"], "todo", "kitchen"),
            ],
            areas: vec![NamedArea {
                id: "kitchen".into(),
                names: vec!["Kitchen".into()],
                floor: Some("ground".into()),
            }],
            floors: vec![NamedFloor {
                id: "upstairs".into(),
                names: vec!["upstairs".into(), "first floor".into()],
            }],
        }
    }

    fn matcher() -> Matcher {
        let g = Arc::new(Grammar::from_yaml(GRAMMAR, "test.yaml").unwrap());
        Matcher::new(g, home().lists()).unwrap()
    }

    fn slots(r: &Recognized) -> Vec<(String, Value)> {
        r.slots
            .iter()
            .map(|s| (s.name.clone(), s.value.clone()))
            .collect()
    }

    #[test]
    fn a_template_using_a_list_nobody_gives_is_refused_naming_it() {
        let yaml = r#"
language: en
intents:
  HassTurnOn:
    data:
      - sentences: ["<turn> on [the] {name}", "paint it <colour_of>"]
expansion_rules:
  turn: "(turn|switch)"
  colour_of: "{colour}"
"#;
        let g = Arc::new(Grammar::from_yaml(yaml, "paint.yaml").unwrap());
        let err = Matcher::new(g.clone(), home().lists()).unwrap_err();
        assert_eq!(
            err,
            MatcherError::MissingList {
                file: "paint.yaml".into(),
                intent: "HassTurnOn".into(),
                template: "paint it <colour_of>".into(),
                list: "colour".into(),
            }
        );
        // Given by the caller, it is found.
        let mut lists = home().lists();
        lists.push(("colour".into(), SlotList::Wildcard));
        assert!(Matcher::new(g, lists).is_ok());
    }

    #[test]
    fn the_index_is_built_on_the_first_match_not_before() {
        // A brain that starts or resumes does not wait for it.
        let m = matcher();
        assert!(m.index.get().is_none());
        assert!(
            m.recognize("turn on the kitchen light strip", &Map::new())
                .is_some()
        );
        let index = m.index.get().expect("built by the first match");
        assert!(!index.fragments.is_empty());
        assert!(
            index.words.iter().any(Option::is_some),
            "the grammar's ranges have number words"
        );
    }

    #[test]
    fn names_areas_floors_and_fixed_slots() {
        let m = matcher();
        let none = Map::new();
        let r = m
            .recognize("Turn on the kitchen light strip, please!", &none)
            .unwrap();
        assert_eq!(r.intent, "HassTurnOn");
        assert_eq!(
            slots(&r),
            vec![("name".into(), json!("Kitchen Light Strip"))]
        );
        let r = m
            .recognize("switch on all the kitchen lights", &none)
            .unwrap();
        assert_eq!(
            slots(&r),
            vec![
                ("area".into(), json!("kitchen")),
                ("domain".into(), json!("light"))
            ]
        );
        assert_eq!(r.response, "lights_area");
        let r = m.recognize("turn on the upstairs lights", &none).unwrap();
        assert_eq!(r.slot("floor").unwrap().value, json!("upstairs"));
        // A sensor is never what "turn on" names.
        assert!(
            m.recognize("turn on the kitchen light level", &none)
                .is_none()
        );
        assert!(m.recognize("turn on the garage", &none).is_none());
    }

    #[test]
    fn numbers_in_digits_and_words_and_permutations() {
        let m = matcher();
        let none = Map::new();
        let r = m
            .recognize("set the kitchen light brightness to 40%", &none)
            .unwrap();
        assert_eq!(r.number_of("brightness"), Some(40.0));
        let r = m
            .recognize("set kitchen light to fifty percent", &none)
            .unwrap();
        assert_eq!(r.number_of("brightness"), Some(50.0));
        assert_eq!(r.slot("brightness").unwrap().text, "fifty");
        let r = m
            .recognize("kitchen light set to 21.5 degrees", &none)
            .unwrap();
        assert_eq!(r.number_of("temperature"), Some(21.5));
        assert!(m.recognize("set kitchen light to 140%", &none).is_none());
    }

    #[test]
    fn wildcards_context_and_here() {
        let m = matcher();
        let none = Map::new();
        let r = m
            .recognize("add oat milk to my shopping list", &none)
            .unwrap();
        assert_eq!(r.intent, "HassListAddItem");
        assert_eq!(r.slot("item").unwrap().value, json!("oat milk"));
        let r = m
            .recognize("broadcast dinner is ready please", &none)
            .unwrap();
        assert_eq!(r.text_of("message"), Some("dinner is ready please"));
        assert!(m.recognize("turn on the lights here", &none).is_none());
        let mut here = Map::new();
        here.insert(
            "area".into(),
            json!({"value": "kitchen", "text": "Kitchen"}),
        );
        let r = m.recognize("turn on the lights in here", &here).unwrap();
        assert_eq!(r.slot("area").unwrap().value, json!("kitchen"));
    }

    #[test]
    fn a_missing_list_is_named() {
        let g = Arc::new(
            Grammar::from_yaml(
                "language: en\nintents:\n  X:\n    data:\n      - sentences: [\"go to {zone}\"]\n",
                "x.yaml",
            )
            .unwrap(),
        );
        let e = Matcher::new(g, Vec::new()).unwrap_err();
        assert!(e.to_string().contains("no list `{zone}`"), "{e}");
    }
}
