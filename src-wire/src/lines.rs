//! What robobrain itself says, in the language it was spoken to
//! (docs/intents.md, "Replies in the language spoken"). The one place that
//! picks the language is [`Lang::of`]: an utterance in Chinese script is
//! answered in Chinese, anything else in English (the default). Every line
//! the robot and the home speak of their own — confirmations, clarifying
//! questions, refusals, summaries, timers — is a key of
//! `assets/lines.toml`, filled with `#{slot}`s by [`line`]; a key that
//! Chinese lacks is said in English.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The built-in catalogue of lines.
pub const BUILTIN_LINES: &str = include_str!("../../assets/lines.toml");

/// A language robobrain answers in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lang {
    /// English, the default.
    #[default]
    En,
    /// Chinese (Simplified).
    Zh,
}

impl Lang {
    /// The language to answer `utterance` in: Chinese when it has Chinese
    /// script in it, else English.
    pub fn of(utterance: &str) -> Self {
        if crate::text::has_cjk(utterance) {
            Self::Zh
        } else {
            Self::En
        }
    }

    /// The language of a grammar's language code (`zh-CN` → Chinese).
    pub fn of_code(code: &str) -> Self {
        if code.starts_with("zh") {
            Self::Zh
        } else {
            Self::En
        }
    }

    /// Its key in the catalogue (`en`, `zh`).
    pub fn key(self) -> &'static str {
        match self {
            Self::En => "en",
            Self::Zh => "zh",
        }
    }
}

type Catalogue = HashMap<String, HashMap<String, String>>;

fn catalogue() -> &'static Catalogue {
    static LINES: OnceLock<Catalogue> = OnceLock::new();
    // The built-in file is checked by a test; a broken one says the keys.
    LINES.get_or_init(|| toml::from_str(BUILTIN_LINES).unwrap_or_default())
}

/// The template of `key` in `lang`, else in English.
fn lookup(lang: Lang, key: &str) -> Option<&'static str> {
    let cat = catalogue();
    cat.get(lang.key())
        .and_then(|l| l.get(key))
        .or_else(|| cat.get(Lang::En.key()).and_then(|l| l.get(key)))
        .map(String::as_str)
}

/// The line `key` in `lang`, its `#{slot}`s filled from `slots` (a key
/// the catalogue lacks is said as itself; a test keeps every key used in it).
pub fn line(lang: Lang, key: &str, slots: &[(&str, &str)]) -> String {
    let get = |k: &str| slots.iter().find(|(n, _)| *n == k).map(|(_, v)| *v);
    lookup(lang, key).map_or_else(|| key.to_string(), |t| fill_with(t, &get))
}

/// The line `key` in `lang` when the catalogue has it and every one of its
/// `#{slot}`s gets a value with something in it; `None` otherwise — so a
/// caller falls back to another line rather than say one with a hole in it
/// ("已把扫地机器人设为。").
pub fn line_filled(lang: Lang, key: &str, slots: &[(&str, &str)]) -> Option<String> {
    let template = lookup(lang, key)?;
    let get = |k: &str| slots.iter().find(|(n, _)| *n == k).map(|(_, v)| *v);
    slot_names(template)
        .all(|k| get(k).is_some_and(|v| !v.trim().is_empty()))
        .then(|| fill_with(template, &get))
}

/// The `#{slot}`s of `template` that `slots` leaves without a value or
/// with an empty one.
pub fn holes(template: &str, slots: &Value) -> Vec<String> {
    slot_names(template)
        .filter(|k| match slots.get(*k) {
            None | Some(Value::Null) => true,
            Some(Value::String(s)) => s.trim().is_empty(),
            Some(_) => false,
        })
        .map(str::to_string)
        .collect()
}

/// `items` as a list in `lang`: "a, b and c" / "a、b和c" (`or`: "a, b or c").
pub fn list(lang: Lang, items: &[String], or: bool) -> String {
    let last = lookup(lang, if or { "list_or" } else { "list_and" }).unwrap_or(" and ");
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., tail] => format!(
            "{}{last}{tail}",
            init.join(lookup(lang, "list_sep").unwrap_or(", "))
        ),
    }
}

/// What to call something with a `name` and `aliases` in `lang`: in
/// Chinese its first alias in Chinese script, when it has one; else its
/// name (underscores as spaces).
pub fn name_in(lang: Lang, name: &str, aliases: &[String]) -> String {
    if lang == Lang::Zh
        && let Some(zh) = aliases.iter().find(|a| crate::text::has_cjk(a))
    {
        return zh.clone();
    }
    name.replace('_', " ")
}

/// Replaces each `#{key}` with `slots[key]` (strings bare, other values as
/// JSON; a missing one as its key in words).
pub fn fill(template: &str, slots: &Value) -> String {
    let get = |k: &str| slots.get(k);
    let mut out = String::with_capacity(template.len() + 16);
    let mut rest = template;
    while let Some(start) = rest.find("#{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let key = &after[..end];
        match get(key) {
            Some(Value::String(s)) => out.push_str(s),
            Some(v) => out.push_str(&v.to_string()),
            None => out.push_str(&key.replace('_', " ")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

fn fill_with<'a>(template: &str, get: &dyn Fn(&str) -> Option<&'a str>) -> String {
    let slots: serde_json::Map<String, Value> = slot_names(template)
        .filter_map(|k| get(k).map(|v| (k.to_string(), Value::String(v.to_string()))))
        .collect();
    fill(template, &Value::Object(slots))
}

fn slot_names(template: &str) -> impl Iterator<Item = &str> {
    template
        .split("#{")
        .skip(1)
        .filter_map(|s| s.split_once('}').map(|(k, _)| k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_language_is_the_utterances() {
        assert_eq!(Lang::of("打开客厅灯"), Lang::Zh);
        assert_eq!(Lang::of("打开tv"), Lang::Zh);
        assert_eq!(Lang::of("turn on the TV"), Lang::En);
        assert_eq!(Lang::of(""), Lang::En);
        assert_eq!(Lang::of_code("zh-CN"), Lang::Zh);
        assert_eq!(Lang::of_code("en"), Lang::En);
    }

    /// Every English line has a Chinese one with the same slots, and
    /// nothing else is in the file.
    #[test]
    fn every_line_is_said_in_both_languages_with_the_same_slots() {
        let cat: Catalogue = toml::from_str(BUILTIN_LINES).unwrap();
        let mut langs: Vec<&String> = cat.keys().collect();
        langs.sort();
        assert_eq!(langs, ["en", "zh"]);
        let (en, zh) = (&cat["en"], &cat["zh"]);
        for (key, text) in en {
            let other = zh
                .get(key)
                .unwrap_or_else(|| panic!("no zh line for `{key}`"));
            let mut a: Vec<&str> = slot_names(text).collect();
            let mut b: Vec<&str> = slot_names(other).collect();
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b, "`{key}`: {text} / {other}");
        }
        for key in zh.keys() {
            assert!(en.contains_key(key), "zh line `{key}` has no English one");
        }
    }

    /// Every line of the catalogue, with every slot given each kind of
    /// value: whole when each has something in it, refused (never said
    /// with a hole) when one is empty or missing.
    #[test]
    fn no_line_is_said_with_a_hole_in_it() {
        let cat: Catalogue = toml::from_str(BUILTIN_LINES).unwrap();
        for (lang, lines) in [(Lang::En, &cat["en"]), (Lang::Zh, &cat["zh"])] {
            for (key, template) in lines {
                let names: Vec<&str> = slot_names(template).collect();
                for value in ["word", "42", "21.5", "true", "牛奶"] {
                    let slots: Vec<(&str, &str)> = names.iter().map(|n| (*n, value)).collect();
                    let said = line_filled(lang, key, &slots)
                        .unwrap_or_else(|| panic!("`{key}` refused {value}"));
                    assert!(!said.contains("#{"), "`{key}`: {said}");
                    let json: serde_json::Map<String, Value> = names
                        .iter()
                        .map(|n| ((*n).to_string(), Value::from(value)))
                        .collect();
                    assert!(holes(template, &Value::Object(json)).is_empty(), "`{key}`");
                }
                for empty in ["", " "] {
                    let slots: Vec<(&str, &str)> = names.iter().map(|n| (*n, empty)).collect();
                    assert_eq!(
                        line_filled(lang, key, &slots).is_none(),
                        !names.is_empty(),
                        "`{key}` with {empty:?}"
                    );
                }
                if !names.is_empty() {
                    assert_eq!(line_filled(lang, key, &[]), None, "`{key}` with no value");
                    assert_eq!(holes(template, &Value::Null).len(), names.len(), "`{key}`");
                }
            }
        }
    }

    /// Every key the code asks for by name is in the catalogue (a missing
    /// one would be said as its key).
    #[test]
    fn every_key_the_code_names_is_in_the_catalogue() {
        fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    sources(&path, out);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    out.push(path);
                }
            }
        }
        let cat: Catalogue = toml::from_str(BUILTIN_LINES).unwrap();
        let mut files = Vec::new();
        // Every crate of the workspace (`src-*/src`): the lines are said everywhere.
        let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for entry in std::fs::read_dir(&workspace).unwrap().flatten() {
            let name = entry.file_name();
            if name.to_string_lossy().starts_with("src-") {
                sources(&entry.path().join("src"), &mut files);
            }
        }
        files.sort();
        let mut checked = 0;
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for (i, _) in text.match_indices("line(") {
                // `line(` and `say_line(`, not `online(` or `outcome_line(`.
                let before = text[..i].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                    && !text[..i].ends_with("say_")
                {
                    continue;
                }
                // The call's second argument, when it is a literal key.
                let mut end = text.len().min(i + 200);
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                let call = &text[i..end];
                let Some(start) = call.find('"') else {
                    continue;
                };
                let rest = &call[start + 1..];
                let Some(end) = rest.find('"') else { continue };
                let key = &rest[..end];
                let head = &call["line(".len()..start];
                if head.contains(['(', ')', '{', '}'])
                    || head.matches(',').count() != 1
                    || key.is_empty()
                    || !key.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                {
                    continue;
                }
                assert!(
                    cat["en"].contains_key(key),
                    "{}: no line `{key}`",
                    file.display()
                );
                checked += 1;
            }
        }
        assert!(checked > 40, "only {checked} keys found");
        for verb in [
            "turn_on", "turn_off", "open", "close", "lock", "unlock", "arm", "disarm",
        ] {
            for form in ["past", "base"] {
                assert!(
                    cat["en"].contains_key(&format!("{form}_{verb}")),
                    "{form}_{verb}"
                );
            }
        }
    }

    #[test]
    fn lines_are_filled_and_listed_in_their_language() {
        assert_eq!(
            line(Lang::En, "heading_to", &[("zone", "kitchen")]),
            "OK, heading to kitchen."
        );
        assert_eq!(
            line(Lang::Zh, "heading_to", &[("zone", "厨房")]),
            "好的，这就去厨房。"
        );
        let items = vec!["a".to_string(), "b".into(), "c".into()];
        assert_eq!(list(Lang::En, &items, false), "a, b and c");
        assert_eq!(list(Lang::Zh, &items, true), "a、b还是c");
        let aliases = vec!["ceiling light".to_string(), "客厅灯".into()];
        assert_eq!(name_in(Lang::Zh, "living room light", &aliases), "客厅灯");
        assert_eq!(name_in(Lang::En, "living_room", &aliases), "living room");
        assert_eq!(name_in(Lang::Zh, "hall", &[]), "hall");
    }
}
