//! Text as the matcher sees it, exactly as Home Assistant's matcher
//! (hassil 3.12) prepares it: white space folded, the typographic
//! apostrophe made ASCII, punctuation dropped at the ends of words and of
//! the whole text, skip words ("please", "请问") removed, and — for
//! languages written without spaces — white space between two CJK
//! characters dropped. Agreement with hassil is the acceptance test, so
//! each function names the hassil step it mirrors.
//!
//! Everything here works on `char`s: positions are character indices, as
//! Python's are.

/// The punctuation hassil strips (`hassil.util.PUNCTUATION_STR`).
const PUNCTUATION: &str = ".。,，?¿？؟!¡！;；:：’…—–―";

/// Whether `c` is punctuation hassil strips.
pub fn is_punct(c: char) -> bool {
    PUNCTUATION.contains(c)
}

pub use crate::text::is_cjk;

/// Whether `c` is a word character (Python's `\w`: alphanumeric or `_`).
pub fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The case-insensitive form of a character (Python's `re.IGNORECASE`
/// compares simple lower-case forms).
pub fn fold(c: char) -> char {
    let mut lower = c.to_lowercase();
    match (lower.next(), lower.next()) {
        (Some(l), None) => l,
        _ => c,
    }
}

/// Folds every white-space run to one space and `’` to `'`
/// (`hassil.util.normalize_text`, without NFC: input is taken as composed).
pub fn normalize_text(text: &str) -> String {
    let chars: Vec<char> = text
        .chars()
        .map(|c| if c == '’' { '\'' } else { c })
        .collect();
    collapse(&chars).into_iter().collect()
}

/// Removes the characters whose flag is set.
fn without(chars: &[char], drop: &[bool]) -> Vec<char> {
    chars
        .iter()
        .zip(drop)
        .filter(|(_, d)| !**d)
        .map(|(c, _)| *c)
        .collect()
}

fn word_at(chars: &[char], i: Option<usize>) -> bool {
    i.and_then(|i| chars.get(i)).is_some_and(|c| is_word(*c))
}

/// One `re.sub(pattern, "")` pass for the patterns of the form
/// `(?<=BEFORE)[P]+(?=AFTER)`, where each side is "word", "not word" or
/// "anything"; runs are matched left to right, the longest run whose
/// look-ahead holds (the regex engine's backtracking).
fn strip_runs(
    chars: &[char],
    punct: impl Fn(char) -> bool,
    before: Option<bool>,
    after: Option<bool>,
) -> Vec<char> {
    let n = chars.len();
    let mut drop = vec![false; n];
    let mut i = 0;
    while i < n {
        if !punct(chars[i]) {
            i += 1;
            continue;
        }
        let behind_ok = match before {
            None => true,
            // A look-behind needs a character before it.
            Some(w) => i > 0 && is_word(chars[i - 1]) == w,
        };
        if !behind_ok {
            i += 1;
            continue;
        }
        let mut end = i;
        while end < n && punct(chars[end]) {
            end += 1;
        }
        // Try the longest run first, then shorter ones.
        let mut matched = None;
        let mut e = end;
        while e > i {
            let ahead_ok = match after {
                None => true,
                Some(w) => e < n && is_word(chars[e]) == w,
            };
            if ahead_ok {
                matched = Some(e);
                break;
            }
            e -= 1;
        }
        match matched {
            Some(e) => {
                drop[i..e].iter_mut().for_each(|d| *d = true);
                i = e;
            }
            None => i += 1,
        }
    }
    without(chars, &drop)
}

/// Whether the text ends with an initialism ("A.C.": `\b(?:\w\.){2,}$`).
fn ends_with_initialism(chars: &[char]) -> bool {
    let n = chars.len();
    let mut pairs = 0;
    while n >= 2 * (pairs + 1)
        && chars[n - 2 * pairs - 1] == '.'
        && is_word(chars[n - 2 * pairs - 2])
    {
        pairs += 1;
    }
    (2..=pairs).any(|k| {
        let s = n - 2 * k;
        s == 0 || !is_word(chars[s - 1])
    })
}

/// Removes punctuation from the start and end of words and of the whole
/// text (`hassil.util.remove_punctuation`).
pub fn remove_punctuation(chars: &[char]) -> Vec<char> {
    // ^[P]+
    let lead = chars.iter().take_while(|c| is_punct(**c)).count();
    let mut t: Vec<char> = chars[lead..].to_vec();
    // [P]+$, unless the text ends with an initialism.
    if !ends_with_initialism(&t) {
        while t.last().is_some_and(|c| is_punct(*c)) {
            t.pop();
        }
    }
    // (?<=\W)[P]+(?=\w)
    t = strip_runs(&t, is_punct, Some(false), Some(true));
    // (?<=\w)[P without "."]+(?=\W)
    t = strip_runs(&t, |c| c != '.' && is_punct(c), Some(true), Some(false));
    // (?<!\w\.\w)\.(?=\W)
    let n = t.len();
    let mut drop = vec![false; n];
    for i in 0..n {
        if t[i] != '.' || i + 1 >= n || is_word(t[i + 1]) {
            continue;
        }
        let initialism = i >= 3 && word_at(&t, Some(i - 3)) && t[i - 2] == '.' && is_word(t[i - 1]);
        if !initialism {
            drop[i] = true;
        }
    }
    t = without(&t, &drop);
    // (?<=\W)[P]+(?=\W)
    strip_runs(&t, is_punct, Some(false), Some(false))
}

/// Strips white space at both ends.
pub fn strip(chars: &[char]) -> &[char] {
    let start = chars
        .iter()
        .position(|c| !c.is_whitespace())
        .unwrap_or(chars.len());
    let end = chars
        .iter()
        .rposition(|c| !c.is_whitespace())
        .map_or(start, |e| e + 1);
    &chars[start..end.max(start)]
}

/// Match-ready text: normalised, punctuation removed, stripped
/// (`hassil.util.normalize_for_matching`).
pub fn for_matching(text: &str) -> Vec<char> {
    let normal: Vec<char> = normalize_text(text).chars().collect();
    strip(&remove_punctuation(&normal)).to_vec()
}

/// Folds white-space runs to one space.
fn collapse(chars: &[char]) -> Vec<char> {
    let mut out = Vec::with_capacity(chars.len());
    let mut in_space = false;
    for &c in chars {
        if c.is_whitespace() {
            if !in_space {
                out.push(' ');
            }
            in_space = true;
        } else {
            in_space = false;
            out.push(c);
        }
    }
    out
}

/// Removes white space between two CJK characters (`CJK_WHITESPACE`).
pub fn drop_cjk_spaces(chars: &[char]) -> Vec<char> {
    let n = chars.len();
    let mut drop = vec![false; n];
    let mut i = 0;
    while i < n {
        if chars[i].is_whitespace() && i > 0 && is_cjk(chars[i - 1]) {
            let mut e = i;
            while e < n && chars[e].is_whitespace() {
                e += 1;
            }
            if e < n && is_cjk(chars[e]) {
                drop[i..e].iter_mut().for_each(|d| *d = true);
            }
            i = e;
        } else {
            i += 1;
        }
    }
    without(chars, &drop)
}

/// Whether `word` (folded) occurs in `text` at `i`, compared folded.
fn folded_at(text: &[char], i: usize, word: &[char]) -> bool {
    i + word.len() <= text.len()
        && text[i..i + word.len()]
            .iter()
            .zip(word)
            .all(|(a, b)| fold(*a) == *b)
}

/// Skip words, longest first, folded; empty ones dropped.
pub fn skip_word_list(words: &[String]) -> Vec<Vec<char>> {
    let mut list: Vec<Vec<char>> = words
        .iter()
        .map(|w| w.trim().chars().map(fold).collect::<Vec<char>>())
        .filter(|w| !w.is_empty())
        .collect();
    list.sort();
    list.dedup();
    // Python sorts by length only (stable over a set, so any order among
    // equal lengths); alternatives of equal length cannot both match at a
    // position unless equal.
    list.sort_by_key(|w| std::cmp::Reverse(w.len()));
    list
}

/// Where skip words are removed: anywhere, only at the start, only at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Anywhere in the text.
    Anywhere,
    /// Repeatedly at the start (for sentences ending in a wildcard).
    Start,
    /// Repeatedly at the end (for sentences starting with a wildcard).
    End,
}

/// Removes skip words (`hassil.util.remove_skip_words`).
pub fn remove_skip_words(
    chars: &[char],
    words: &[Vec<char>],
    ignore_whitespace: bool,
    where_: Skip,
) -> Vec<char> {
    if words.is_empty() {
        return chars.to_vec();
    }
    match (ignore_whitespace, where_) {
        (true, Skip::Anywhere) => skip_cjk_anywhere(chars, words),
        (true, Skip::Start) => skip_cjk_at_start(chars, words),
        (true, Skip::End) => skip_cjk_at_end(chars, words),
        (false, Skip::Anywhere) => skip_anywhere(chars, words),
        (false, Skip::Start) => skip_at_start(chars, words),
        (false, Skip::End) => skip_at_end(chars, words),
    }
}

/// Skip words removed anywhere, white space ignored.
fn skip_cjk_anywhere(chars: &[char], words: &[Vec<char>]) -> Vec<char> {
    let mut out = Vec::with_capacity(chars.len());
    let mut i = 0;
    while i < chars.len() {
        if let Some(w) = words.iter().find(|w| folded_at(chars, i, w)) {
            i += w.len();
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

/// Skip words removed repeatedly at the start, white space ignored.
fn skip_cjk_at_start(chars: &[char], words: &[Vec<char>]) -> Vec<char> {
    let mut t = chars.to_vec();
    while let Some(w) = words.iter().find(|w| folded_at(&t, 0, w)) {
        t.drain(..w.len());
    }
    t
}

/// Skip words removed repeatedly at the end, white space ignored.
fn skip_cjk_at_end(chars: &[char], words: &[Vec<char>]) -> Vec<char> {
    let mut t = chars.to_vec();
    while let Some(w) = words
        .iter()
        .find(|w| w.len() <= t.len() && folded_at(&t, t.len() - w.len(), w))
    {
        t.truncate(t.len() - w.len());
    }
    t
}

/// Skip words removed anywhere as whole words.
fn skip_anywhere(chars: &[char], words: &[Vec<char>]) -> Vec<char> {
    // (?<!\w)(?:words)(?!\w) → " ", then fold spaces and strip.
    let mut out = Vec::with_capacity(chars.len());
    let mut i = 0;
    while i < chars.len() {
        let free_before = i == 0 || !is_word(chars[i - 1]);
        let hit = free_before
            .then(|| {
                words
                    .iter()
                    .find(|w| folded_at(chars, i, w) && !word_at(chars, Some(i + w.len())))
            })
            .flatten();
        if let Some(w) = hit {
            out.push(' ');
            i += w.len();
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    strip(&collapse(&out)).to_vec()
}

/// Skip words removed repeatedly at the start, as whole words.
fn skip_at_start(chars: &[char], words: &[Vec<char>]) -> Vec<char> {
    // ^\s*(?:words)(?=\s|$|[^\w])\s*, repeated.
    until_stable(chars, |t| {
        let lead = t.iter().take_while(|c| c.is_whitespace()).count();
        let hit = words.iter().find(|w| {
            folded_at(t.as_slice(), lead, w) && !word_at(t.as_slice(), Some(lead + w.len()))
        });
        if let Some(w) = hit {
            let mut end = lead + w.len();
            while end < t.len() && t[end].is_whitespace() {
                end += 1;
            }
            t.drain(..end);
        }
    })
}

/// Skip words removed repeatedly at the end, as whole words.
fn skip_at_end(chars: &[char], words: &[Vec<char>]) -> Vec<char> {
    // \s*(?<!\w)(?:words)\s*$, repeated.
    until_stable(chars, |t| {
        let trail = t.iter().rev().take_while(|c| c.is_whitespace()).count();
        let end = t.len() - trail;
        let hit = words.iter().find(|w| {
            w.len() <= end
                && folded_at(t.as_slice(), end - w.len(), w)
                && (end == w.len() || !is_word(t[end - w.len() - 1]))
        });
        if let Some(w) = hit {
            let mut start = end - w.len();
            while start > 0 && t[start - 1].is_whitespace() {
                start -= 1;
            }
            t.truncate(start);
        }
    })
}

/// Applies `step` to the text, white space folded and stripped after each
/// time, until the text no longer changes.
fn until_stable(chars: &[char], step: impl Fn(&mut Vec<char>)) -> Vec<char> {
    let mut t = chars.to_vec();
    loop {
        let before = t.clone();
        step(&mut t);
        t = strip(&collapse(&t)).to_vec();
        if t == before {
            return t;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(chars: &[char]) -> String {
        chars.iter().collect()
    }

    #[test]
    fn punctuation_goes_at_word_ends_but_initialisms_and_decimals_stay() {
        assert_eq!(
            s(&for_matching("Turn on the lights, please!")),
            "Turn on the lights please"
        );
        assert_eq!(
            s(&for_matching("  turn   on\tthe A.C.")),
            "turn on the A.C."
        );
        assert_eq!(
            s(&for_matching("set it to 20.5 degrees.")),
            "set it to 20.5 degrees"
        );
        assert_eq!(s(&for_matching("打开客厅的灯。")), "打开客厅的灯");
        assert_eq!(s(&for_matching("what’s the time?")), "what's the time");
        assert_eq!(s(&for_matching("a!!b")), "a!b");
    }

    /// Words, white space ignored, where, text, what is left.
    type Case<'a> = (&'a [Vec<char>], bool, Skip, &'a str, &'a str);

    #[test]
    fn skip_words_go_as_whole_words_or_anywhere_in_chinese() {
        let en = skip_word_list(&["please".into(), "can you".into()]);
        let zh = skip_word_list(&["请问".into(), "麻烦你".into(), "麻烦".into()]);
        let cases: [Case; 5] = [
            (
                &en,
                false,
                Skip::Anywhere,
                "Can you turn on the light please",
                "turn on the light",
            ),
            (&en, false, Skip::Anywhere, "pleased", "pleased"),
            (&zh, true, Skip::Anywhere, "麻烦你打开灯", "打开灯"),
            (
                &en,
                false,
                Skip::Start,
                "please add milk please",
                "add milk please",
            ),
            (
                &en,
                false,
                Skip::End,
                "please add milk please",
                "please add milk",
            ),
        ];
        for (words, cjk, at, text, want) in cases {
            let t: Vec<char> = text.chars().collect();
            assert_eq!(s(&remove_skip_words(&t, words, cjk, at)), want, "{text}");
        }
    }

    #[test]
    fn spaces_between_cjk_characters_go() {
        let t: Vec<char> = "打开 客厅 的 Living Room 灯".chars().collect();
        assert_eq!(s(&drop_cjk_spaces(&t)), "打开客厅的 Living Room 灯");
    }
}
