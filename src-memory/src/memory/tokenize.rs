//! Terms of Chinese and English text, the same for documents and queries:
//! jieba's search-mode cut (words and their sub-words), lower-cased, with
//! punctuation and a short list of stop words dropped, and a light English
//! plural fold (`lights` → `light`). [`JiebaTokenizer`] hands the terms to
//! tantivy.

use std::sync::OnceLock;

use jieba_rs::Jieba;
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// The shared segmenter (its dictionary takes a moment to load, so once).
fn jieba() -> &'static Jieba {
    static JIEBA: OnceLock<Jieba> = OnceLock::new();
    JIEBA.get_or_init(Jieba::new)
}

/// Whether `c` is a CJK ideograph (or CJK punctuation/fullwidth form).
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3000..=0x303F | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0xFF00..=0xFFEF)
}

const STOP_EN: &[&str] = &[
    "a", "an", "the", "is", "are", "was", "were", "be", "been", "to", "of", "and", "or", "in",
    "on", "at", "it", "its", "this", "that", "i", "you", "me", "my", "we", "our", "do", "does",
    "did", "can", "could", "would", "will", "please", "for", "with", "what", "which", "there",
    "so", "as", "by", "from", "about", "s", "t", "up", "ok",
];

const STOP_ZH: &[&str] = &[
    "的", "了", "吗", "呢", "吧", "啊", "是", "在", "我", "你", "他", "她", "它", "们", "和", "就",
    "都", "也", "还", "把", "被", "这", "那", "一个", "有", "要", "请", "一下", "什么", "怎么",
    "么", "过", "着", "得", "地", "会", "能", "说",
];

/// Whether `term` (already lower-cased) carries no meaning for retrieval.
pub fn is_stop(term: &str) -> bool {
    STOP_EN.contains(&term) || STOP_ZH.contains(&term)
}

/// Folds a regular English plural (`lights` → `light`, `boxes` → `box`).
fn fold(word: String) -> String {
    let ascii = word.bytes().all(|b| b.is_ascii_alphabetic());
    if !ascii || word.len() <= 3 || word.ends_with("ss") || word.ends_with("us") {
        return word;
    }
    if let Some(stem) = word.strip_suffix("ies") {
        return format!("{stem}y");
    }
    if word.ends_with("sses")
        || word.ends_with("ches")
        || word.ends_with("shes")
        || word.ends_with("xes")
    {
        return word[..word.len() - 2].to_string();
    }
    match word.strip_suffix('s') {
        Some(stem) => stem.to_string(),
        None => word,
    }
}

/// One term with where it came from (byte offsets into the text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// The normalised term.
    pub text: String,
    /// Byte offset of its start.
    pub from: usize,
    /// Byte offset past its end.
    pub to: usize,
}

/// The terms of `text`, in order (search mode: a long word and its parts).
pub fn terms(text: &str) -> Vec<Term> {
    let mut out = Vec::new();
    for token in jieba().cut_for_search(text, true) {
        let word = token.word.trim();
        if word.is_empty() || !word.chars().any(char::is_alphanumeric) {
            continue;
        }
        let lower = fold(word.to_lowercase());
        if is_stop(&lower) {
            continue;
        }
        out.push(Term {
            text: lower,
            from: token.byte_start,
            to: token.byte_end,
        });
    }
    out
}

/// The words of `text` without sub-words (default cut), normalised, stop
/// words kept out: what the analyzer counts as keywords.
pub fn words(text: &str) -> Vec<String> {
    jieba()
        .cut(text, true)
        .into_iter()
        .filter_map(|t| {
            let w = t.word.trim();
            if w.is_empty() || !w.chars().any(char::is_alphanumeric) {
                return None;
            }
            let lower = fold(w.to_lowercase());
            (!is_stop(&lower)).then_some(lower)
        })
        .collect()
}

/// The tantivy tokenizer over [`terms`] (registered as `rb_terms`).
#[derive(Debug, Clone, Default)]
pub struct JiebaTokenizer;

/// The name the index registers [`JiebaTokenizer`] under.
pub const TOKENIZER: &str = "rb_terms";

/// [`JiebaTokenizer`]'s stream.
pub struct TermStream {
    tokens: Vec<Token>,
    at: usize,
    none: Token,
}

impl Tokenizer for JiebaTokenizer {
    type TokenStream<'a> = TermStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> TermStream {
        let tokens = terms(text)
            .into_iter()
            .enumerate()
            .map(|(position, t)| Token {
                offset_from: t.from,
                offset_to: t.to,
                position,
                text: t.text,
                position_length: 1,
            })
            .collect();
        TermStream {
            tokens,
            at: 0,
            none: Token::default(),
        }
    }
}

impl TokenStream for TermStream {
    fn advance(&mut self) -> bool {
        if self.at < self.tokens.len() {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn token(&self) -> &Token {
        self.at
            .checked_sub(1)
            .and_then(|i| self.tokens.get(i))
            .unwrap_or(&self.none)
    }

    fn token_mut(&mut self) -> &mut Token {
        match self.at.checked_sub(1) {
            Some(i) if i < self.tokens.len() => &mut self.tokens[i],
            _ => &mut self.none,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(s: &str) -> Vec<String> {
        terms(s).into_iter().map(|t| t.text).collect()
    }

    #[test]
    fn memory_terms_cut_chinese_and_fold_english() {
        let t = texts("把厨房的灯关掉");
        assert!(t.contains(&"厨房".to_string()), "{t:?}");
        assert!(!t.contains(&"的".to_string()), "{t:?}");
        let e = texts("Turn off the Kitchen LIGHTS, please!");
        assert_eq!(e, ["turn", "off", "kitchen", "light"]);
        let mixed = texts("打开living room的空调");
        assert!(mixed.contains(&"living".to_string()) && mixed.contains(&"空调".to_string()));
    }

    #[test]
    fn memory_plural_fold_leaves_short_and_ss_words() {
        assert_eq!(fold("glasses".into()), "glass");
        assert_eq!(fold("glass".into()), "glass");
        assert_eq!(fold("batteries".into()), "battery");
        assert_eq!(fold("boxes".into()), "box");
        assert_eq!(fold("bus".into()), "bus");
    }
}
