//! The sentence-template language of Home Assistant's intents, parsed the
//! way hassil parses it (`hassil/parser.py`, `parse_expression.py`):
//!
//! | syntax | meaning |
//! |---|---|
//! | `word word` | literal text (case and white space folded) |
//! | `(a \| b)` | one of the alternatives |
//! | `[a \| b]` | optional: one of them or nothing |
//! | `(a; b; c)` | a permutation: every item, in any order |
//! | `{list}` / `{list:slot}` | a value of a slot list (text values, a number range, a wildcard), into `slot` |
//! | `{list:@capture}` / `{@list}` | a value captured for the response only |
//! | `{1..10:slot}` | an inline number range |
//! | `<rule>` | an expansion rule |
//! | `\(` | an escaped delimiter |
//!
//! A word keeps the spaces that follow it (`"turn "`), which is how the
//! matcher knows where words end; a permutation's items get a space on both
//! sides. Parsing is pure: text in, [`Expr`] out, or a [`ParseError`] at a
//! character position.

use std::collections::HashMap;

use thiserror::Error;

use super::text::{drop_cjk_spaces, fold, normalize_text};

/// Why a template does not parse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("at character {position}: {message}")]
pub struct ParseError {
    /// Character index in the template.
    pub position: usize,
    /// What was wrong or expected.
    pub message: String,
}

/// Literal text of a template.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    /// The text, white space folded, case kept (empty: the "nothing" of an optional).
    pub text: String,
    /// Its characters, case-folded, for matching.
    pub folded: Box<[char]>,
    /// The same without white space between CJK characters (languages that ignore it).
    pub folded_cjk: Box<[char]>,
    /// Whether the text ends a word (ends with a space or an apostrophe).
    pub ends_word: bool,
}

impl Chunk {
    /// A chunk of `text` (already normalised).
    pub fn new(text: &str) -> Self {
        let folded: Box<[char]> = text.chars().map(fold).collect();
        let folded_cjk = drop_cjk_spaces(&folded).into_boxed_slice();
        Self {
            text: text.to_string(),
            folded,
            folded_cjk,
            ends_word: text.ends_with(' ') || text.ends_with('\''),
        }
    }
}

/// A reference to a slot list: `{list}`, `{list:slot}`, `{list:@capture}`.
#[derive(Debug, Clone, PartialEq)]
pub struct ListRef {
    /// The list's name.
    pub list: String,
    /// The list's interned id.
    pub list_id: usize,
    /// The slot its value goes into.
    pub slot: String,
    /// Captured for the response only (no entity).
    pub capture: bool,
    /// Whether white space follows the reference in the template.
    pub end_of_word: bool,
    /// `{1..10,2:slot}`: an inline range (from, to, step).
    pub inline_range: Option<(i64, i64, i64)>,
}

/// A parsed template expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// Literal text.
    Text(Chunk),
    /// Every item in order.
    Seq(Vec<Expr>),
    /// One of the items; an optional's last item is the empty chunk.
    Alt {
        /// The alternatives.
        items: Vec<Expr>,
        /// Written `[…]`.
        optional: bool,
    },
    /// Every item, in any order.
    Perm(Vec<Expr>),
    /// A slot list.
    List(ListRef),
    /// An expansion rule, by interned id.
    Rule {
        /// The rule's name.
        name: String,
        /// Its interned id.
        id: usize,
    },
}

impl Expr {
    /// The number of literal chunks in the expression, not looking into
    /// rules (`Group.text_chunk_count`, which orders wildcard sentences).
    pub fn text_chunk_count(&self) -> usize {
        match self {
            Self::Text(_) => 1,
            Self::Seq(items) | Self::Alt { items, .. } | Self::Perm(items) => items
                .iter()
                .map(|i| match i {
                    Self::Text(_) => 1,
                    Self::Seq(_) | Self::Alt { .. } | Self::Perm(_) => i.text_chunk_count(),
                    _ => 0,
                })
                .sum(),
            _ => 0,
        }
    }

    /// Every list reference, not looking into rules.
    pub fn lists(&self, out: &mut Vec<usize>) {
        match self {
            Self::List(l) => out.push(l.list_id),
            Self::Seq(items) | Self::Alt { items, .. } | Self::Perm(items) => {
                for i in items {
                    i.lists(out);
                }
            }
            _ => {}
        }
    }
}

/// Names interned to ids (rules and lists have their own tables).
#[derive(Debug, Default, Clone)]
pub struct Interner {
    ids: HashMap<String, usize>,
    names: Vec<String>,
}

impl Interner {
    /// The id of `name`, new ones added.
    pub fn id(&mut self, name: &str) -> usize {
        if let Some(id) = self.ids.get(name) {
            return *id;
        }
        let id = self.names.len();
        self.ids.insert(name.to_string(), id);
        self.names.push(name.to_string());
        id
    }

    /// The id of `name` if it was interned.
    pub fn get(&self, name: &str) -> Option<usize> {
        self.ids.get(name).copied()
    }

    /// How many names there are.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The name of `id`.
    pub fn name(&self, id: usize) -> &str {
        self.names.get(id).map_or("", String::as_str)
    }
}

/// The interners a parse fills in.
#[derive(Debug, Default, Clone)]
pub struct Names {
    /// Rule names.
    pub rules: Interner,
    /// List names.
    pub lists: Interner,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Word,
    Group,
    Opt,
    List,
    Rule,
    Alt,
    Perm,
}

const ESCAPE: char = '\\';

fn is_delim(c: char) -> bool {
    matches!(c, '(' | '[' | '{' | '<' | ')' | ']' | '}' | '>')
}

fn peek(text: &[char], at: usize) -> Option<Kind> {
    Some(match *text.get(at)? {
        '(' => Kind::Group,
        '[' => Kind::Opt,
        '{' => Kind::List,
        '<' => Kind::Rule,
        '|' => Kind::Alt,
        ';' => Kind::Perm,
        _ => Kind::Word,
    })
}

/// The characters of `text` from `start` that are not escaped, with their
/// index: an escape and the character after it are passed over.
fn unescaped(text: &[char], start: usize) -> impl Iterator<Item = (usize, char)> + '_ {
    let mut escaped = false;
    text.iter()
        .enumerate()
        .skip(start)
        .filter_map(move |(i, &c)| {
            if escaped {
                escaped = false;
                None
            } else if c == ESCAPE {
                escaped = true;
                None
            } else {
                Some((i, c))
            }
        })
}

fn find_end_delimiter(text: &[char], start: usize, open: char, close: char) -> Option<usize> {
    let mut stack = 1i32;
    for (i, c) in unescaped(text, start) {
        if c == close {
            stack -= 1;
            if stack <= 0 {
                return (stack == 0).then_some(i + 1);
            }
        }
        if c == open {
            stack += 1;
        }
    }
    None
}

fn find_end_word(text: &[char], start: usize) -> Option<usize> {
    let mut separator = false;
    for (i, c) in unescaped(text, start) {
        if i > start && c == ' ' {
            separator = true;
            continue;
        }
        if separator || c == '|' || c == ';' || is_delim(c) {
            return Some(i);
        }
    }
    (start < text.len()).then_some(text.len())
}

/// The next chunk of `text` from `start`: its kind and end.
fn next_chunk(
    text: &[char],
    start: usize,
    offset: usize,
) -> Result<Option<(Kind, usize)>, ParseError> {
    let Some(kind) = peek(text, start) else {
        return Ok(None);
    };
    let end = match kind {
        Kind::Word => find_end_word(text, start).ok_or_else(|| ParseError {
            position: offset + start,
            message: "unable to find the end of a word".into(),
        })?,
        Kind::Group | Kind::Opt | Kind::List | Kind::Rule => {
            let (open, close, what) = match kind {
                Kind::Group => ('(', ')', "group ')'"),
                Kind::Opt => ('[', ']', "optional ']'"),
                Kind::List => ('{', '}', "list '}'"),
                _ => ('<', '>', "rule '>'"),
            };
            find_end_delimiter(text, start + 1, open, close).ok_or_else(|| ParseError {
                position: offset + start,
                message: format!("unable to find the end of the {what}"),
            })?
        }
        Kind::Alt | Kind::Perm => start + 1,
    };
    Ok(Some((kind, end)))
}

fn remove_escapes(text: &[char]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut escaped = false;
    for &c in text {
        if !escaped && c == ESCAPE {
            escaped = true;
            continue;
        }
        escaped = false;
        out.push(c);
    }
    out
}

/// Group under construction (hassil's Sequence / Alternative / Permutation).
enum Building {
    Seq(Vec<Expr>),
    Alt(Vec<Expr>),
    Perm(Vec<Expr>),
}

impl Building {
    fn finish(self) -> Expr {
        match self {
            Self::Seq(items) => Expr::Seq(items),
            Self::Alt(items) => Expr::Alt {
                items,
                optional: false,
            },
            Self::Perm(mut items) => {
                for item in &mut items {
                    if let Expr::Seq(seq) = item {
                        seq.insert(0, Expr::Text(Chunk::new(" ")));
                        seq.push(Expr::Text(Chunk::new(" ")));
                    }
                }
                Expr::Perm(items)
            }
        }
    }
}

struct Parser<'n> {
    names: &'n mut Names,
}

impl Parser<'_> {
    /// Parses a `(…)` or `[…]` chunk (`text` includes the delimiters).
    fn group(&mut self, text: &[char], offset: usize) -> Result<Expr, ParseError> {
        let inner = &text[1..text.len() - 1];
        let offset = offset + 1;
        let mut grp = Building::Seq(Vec::new());
        let mut at = 0;
        while let Some((kind, end)) = next_chunk(inner, at, offset)? {
            match kind {
                Kind::Alt => {
                    grp = match grp {
                        Building::Alt(mut items) => {
                            items.push(Expr::Seq(Vec::new()));
                            Building::Alt(items)
                        }
                        other => Building::Alt(vec![other.finish(), Expr::Seq(Vec::new())]),
                    };
                }
                Kind::Perm => {
                    grp = match grp {
                        Building::Perm(mut items) => {
                            items.push(Expr::Seq(Vec::new()));
                            Building::Perm(items)
                        }
                        other => Building::Perm(vec![other.finish(), Expr::Seq(Vec::new())]),
                    };
                }
                _ => {
                    let end_of_word = end < inner.len() && inner[end].is_whitespace();
                    let item = self.expr(kind, &inner[at..end], offset + at, end_of_word)?;
                    match &mut grp {
                        Building::Seq(items) => items.push(item),
                        Building::Alt(items) | Building::Perm(items) => match items.last_mut() {
                            Some(Expr::Seq(seq)) => seq.push(item),
                            _ => {
                                return Err(ParseError {
                                    position: offset + at,
                                    message: "an item after an alternative or permutation that is not a sequence".into(),
                                });
                            }
                        },
                    }
                }
            }
            if end == at {
                return Err(ParseError {
                    position: offset + at,
                    message: "unable to proceed".into(),
                });
            }
            at = end;
        }
        Ok(grp.finish())
    }

    fn expr(
        &mut self,
        kind: Kind,
        text: &[char],
        offset: usize,
        end_of_word: bool,
    ) -> Result<Expr, ParseError> {
        Ok(match kind {
            Kind::Word => Expr::Text(Chunk::new(&normalize_text(&remove_escapes(text)))),
            Kind::Group => self.group(text, offset)?,
            Kind::Opt => {
                let grp = self.group(text, offset)?;
                let mut items = match grp {
                    Expr::Alt { items, .. } => items,
                    other => vec![other],
                };
                items.push(Expr::Text(Chunk::new("")));
                Expr::Alt {
                    items,
                    optional: true,
                }
            }
            Kind::List => {
                let name = remove_escapes(&text[1..text.len() - 1]);
                Expr::List(self.list_ref(&name, end_of_word, offset)?)
            }
            Kind::Rule => {
                let name = remove_escapes(&text[1..text.len() - 1]);
                let id = self.names.rules.id(&name);
                Expr::Rule { name, id }
            }
            Kind::Alt | Kind::Perm => {
                return Err(ParseError {
                    position: offset,
                    message: "unexpected separator".into(),
                });
            }
        })
    }

    fn list_ref(
        &mut self,
        name: &str,
        end_of_word: bool,
        offset: usize,
    ) -> Result<ListRef, ParseError> {
        let (list, slot, capture) = if let Some((list, slot)) = name.split_once(':') {
            match slot.strip_prefix('@') {
                Some(capture) => (list.to_string(), capture.to_string(), true),
                None => (list.to_string(), slot.to_string(), false),
            }
        } else if let Some(list) = name.strip_prefix('@') {
            (list.to_string(), list.to_string(), true)
        } else {
            (name.to_string(), name.to_string(), false)
        };
        if list.is_empty() || slot.is_empty() {
            return Err(ParseError {
                position: offset,
                message: format!("an empty list or slot name in `{{{name}}}`"),
            });
        }
        let inline_range = if name.contains(':') {
            inline_range(&list)
        } else {
            None
        };
        Ok(ListRef {
            list_id: self.names.lists.id(&list),
            list,
            slot,
            capture,
            end_of_word,
            inline_range,
        })
    }
}

/// `N..M` or `N..M,S` (hassil's `INLINE_RANGE_PATTERN`).
fn inline_range(list: &str) -> Option<(i64, i64, i64)> {
    let (range, step) = match list.split_once(',') {
        Some((r, s)) => (r, Some(s)),
        None => (list, None),
    };
    // `^(\d+)..(\d+)`: the two dots are any two characters.
    let digits = range.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let rest: String = range.chars().skip(digits + 2).collect();
    if range.chars().count() < digits + 3
        || !rest.chars().all(|c| c.is_ascii_digit())
        || rest.is_empty()
    {
        return None;
    }
    let from: i64 = range[..digits].parse().ok()?;
    let to: i64 = rest.parse().ok()?;
    let step = match step {
        Some(s) if !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()) => s.parse().ok()?,
        Some(_) => return None,
        None => 1,
    };
    Some((from, to, step))
}

/// The first delimiter without its partner, per kind: `(position, what)`.
fn unbalanced(text: &[char]) -> Option<(usize, String)> {
    for (open, close, what) in [
        ('(', ')', "group"),
        ('[', ']', "optional"),
        ('{', '}', "list"),
        ('<', '>', "rule"),
    ] {
        let mut stack = Vec::new();
        for (i, c) in unescaped(text, 0) {
            if c == open {
                stack.push(i);
            } else if c == close && stack.pop().is_none() {
                return Some((i, format!("a '{close}' that closes no {what}")));
            }
        }
        if let Some(i) = stack.first() {
            return Some((
                *i,
                format!("unable to find the end of the {what} '{close}' opened here"),
            ));
        }
    }
    None
}

/// Parses one sentence template (`hassil.parse_expression.parse_sentence`).
pub fn parse_sentence(text: &str, names: &mut Names) -> Result<Expr, ParseError> {
    let trimmed = text.trim();
    let lead = text.chars().count() - text.trim_start().chars().count();
    let chars: Vec<char> = trimmed.chars().collect();
    if let Some((position, message)) = unbalanced(&chars) {
        return Err(ParseError {
            position: lead + position,
            message,
        });
    }
    let wrapped: Vec<char> = format!("({trimmed})").chars().collect();
    match next_chunk(&wrapped, 0, 0)? {
        Some((Kind::Group, end)) if end == wrapped.len() => {}
        _ => {
            return Err(ParseError {
                position: lead,
                message: "unbalanced delimiters".into(),
            });
        }
    }
    let mut parser = Parser { names };
    // Positions inside the wrapped text are one past the original's.
    let grp = parser.group(&wrapped, 0).map_err(|e| ParseError {
        position: (e.position + lead).saturating_sub(1),
        message: e.message,
    })?;
    Ok(match grp {
        Expr::Seq(mut items)
            if items.len() == 1
                && matches!(items[0], Expr::Seq(_) | Expr::Alt { .. } | Expr::Perm(_)) =>
        {
            items.remove(0)
        }
        Expr::Alt { items, optional } => Expr::Alt { items, optional },
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(e: &Expr) -> Vec<String> {
        match e {
            Expr::Text(c) => vec![c.text.clone()],
            Expr::Seq(i) | Expr::Alt { items: i, .. } | Expr::Perm(i) => {
                i.iter().flat_map(texts).collect()
            }
            Expr::List(l) => vec![format!("{{{}:{}}}", l.list, l.slot)],
            Expr::Rule { name, .. } => vec![format!("<{name}>")],
        }
    }

    #[test]
    fn words_keep_their_trailing_space_and_groups_nest() {
        let mut n = Names::default();
        let e = parse_sentence("<turn> on [the] {name}[s]", &mut n).unwrap();
        assert_eq!(
            texts(&e),
            vec!["<turn>", " on ", "the", "", " ", "{name:name}", "s", ""]
        );
        let e = parse_sentence("(a|b c)", &mut n).unwrap();
        assert!(
            matches!(e, Expr::Alt { ref items, optional: false } if items.len() == 2),
            "{e:?}"
        );
    }

    #[test]
    fn permutations_get_spaces_and_captures_and_ranges_parse() {
        let mut n = Names::default();
        let e = parse_sentence("(on;{area})", &mut n).unwrap();
        assert_eq!(texts(&e), vec![" ", "on", " ", " ", "{area:area}", " "]);
        let e = parse_sentence("{cover_classes:@device_class} {1..10,2:level}", &mut n).unwrap();
        let Expr::Seq(items) = e else { panic!() };
        assert!(matches!(&items[0], Expr::List(l) if l.capture && l.slot == "device_class"));
        assert!(matches!(&items[2], Expr::List(l) if l.inline_range == Some((1, 10, 2))));
    }

    #[test]
    fn errors_say_where() {
        let mut n = Names::default();
        let e = parse_sentence("turn on (the light", &mut n).unwrap_err();
        assert_eq!(e.position, 8, "{e}");
        assert!(e.message.contains("group ')'"), "{e}");
        let e = parse_sentence("turn {name", &mut n).unwrap_err();
        assert!(e.message.contains("list '}'"), "{e}");
    }
}
