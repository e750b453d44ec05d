//! Text normalisation for every utterance parser: the robot's commands
//! (`brain/intent.rs`), the home's intents (`hci/intent.rs`) and the
//! device-command parser (`hci/device_command.rs`) read a
//! sentence with these functions, so a sentence is cut into words, and a
//! phrase found in it, the same way on every path. (Home Assistant's
//! grammar keeps hassil's own rules, `intents/text.rs`, to agree with it
//! exactly; its `is_cjk` is this one.)
//!
//! The rules: letters are compared lower-cased; white space runs are one
//! space; a phrase with a CJK character is found anywhere (Chinese has no
//! spaces), any other phrase only as whole words — its neighbours are not
//! ASCII letters or digits (or a parser's joiners, such as `-` in
//! `e-stop`), so `tv` is heard in `打开tv` but not in `tvs`.

/// Whether `c` is in a script written without spaces: CJK ideographs
/// (with extension A), kana, hangul (hassil's `CJK` set).
pub fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{4e00}'..='\u{9fff}'
        | '\u{3400}'..='\u{4dbf}'
        | '\u{3040}'..='\u{30ff}'
        | '\u{ac00}'..='\u{d7af}')
}

/// Whether `text` has a character of a script written without spaces.
pub fn has_cjk(text: &str) -> bool {
    text.chars().any(is_cjk)
}

/// Lower-cased with white space folded; punctuation kept (a parser that
/// splits clauses on it needs it).
pub fn lower_folded(text: &str) -> String {
    text.to_lowercase()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Lower-cased words: every character that is not a letter, a digit or
/// one of `keep` becomes a space, and white space is folded.
pub fn words(text: &str, keep: &[char]) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || keep.contains(&c) {
                c
            } else {
                ' '
            }
        })
        .collect();
    lower_folded(&cleaned)
}

/// Byte offsets where `phrase` occurs in `text` by the rules above;
/// `joiners` are characters that glue words together (not boundaries).
pub fn find_all(text: &str, phrase: &str, joiners: &[char]) -> Vec<usize> {
    if phrase.is_empty() {
        return Vec::new();
    }
    let anywhere = has_cjk(phrase);
    let glue =
        |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || joiners.contains(&c));
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(phrase) {
        let start = from + i;
        let end = start + phrase.len();
        if anywhere
            || !(glue(text[..start].chars().next_back()) || glue(text[end..].chars().next()))
        {
            out.push(start);
        }
        from = end;
    }
    out
}

/// The first offset of `phrase` in `text` ([`find_all`]).
pub fn find(text: &str, phrase: &str, joiners: &[char]) -> Option<usize> {
    find_all(text, phrase, joiners).first().copied()
}

/// Whether `phrase` is in `text` ([`find_all`]).
pub fn has(text: &str, phrase: &str, joiners: &[char]) -> bool {
    find(text, phrase, joiners).is_some()
}

/// Whether any of `phrases` is in `text` ([`find_all`]).
pub fn has_any(text: &str, phrases: &[&str], joiners: &[char]) -> bool {
    phrases.iter().any(|p| has(text, p, joiners))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_rule_for_words_and_chinese() {
        assert_eq!(
            words("Go to the Kitchen, please!", &[]),
            "go to the kitchen please"
        );
        assert_eq!(words("e-stop now", &['-']), "e-stop now");
        assert_eq!(
            lower_folded("  Turn  ON,\tthe light "),
            "turn on, the light"
        );
        assert!(has("打开tv", "tv", &[]));
        assert!(!has("the tvs", "tv", &[]));
        assert!(has("打开客厅灯", "客厅", &[]));
        assert!(has("kitchen, then", "kitchen", &[]));
        assert!(!has("e-stop", "stop", &['-']));
        assert!(has("e-stop", "stop", &[]));
        assert_eq!(find_all("on and on", "on", &[]), vec![0, 7]);
        assert_eq!(find_all("aaa", "aa", &[]), Vec::<usize>::new());
        assert!(is_cjk('灯') && is_cjk('ひ') && !is_cjk('a'));
    }
}
