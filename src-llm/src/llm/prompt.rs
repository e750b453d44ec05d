//! Prompt templates (seed 004: prompts live as files with variable
//! substitution). The built-in templates in `assets/prompts/*.txt` are
//! compiled in; `[llm] prompts_dir` may override any of them by file name.
//! A template names its variables as `{name}`; `{{` and `}}` are literal
//! braces. A variable the caller does not supply, or a template naming one
//! it should not, is an error naming the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use thiserror::Error;

/// Why a prompt could not be built.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum PromptError {
    /// An override file could not be read.
    #[error("cannot read prompt template {}: {message}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The IO error.
        message: String,
    },
    /// A template uses a variable the caller does not supply.
    #[error("prompt template {name}: unknown variable `{{{var}}}`; expected one of {expected}")]
    UnknownVariable {
        /// The template's file name.
        name: String,
        /// The variable.
        var: String,
        /// The variables it may use.
        expected: String,
    },
    /// A `{` without its `}`.
    #[error("prompt template {name}: unclosed `{{` at byte {at}")]
    Unclosed {
        /// The template's file name.
        name: String,
        /// Byte offset.
        at: usize,
    },
}

/// The built-in templates, by file name.
const BUILTIN: &[(&str, &str)] = &[
    (
        "decide_system.txt",
        include_str!("../../../assets/prompts/decide_system.txt"),
    ),
    (
        "decide_system_compact.txt",
        include_str!("../../../assets/prompts/decide_system_compact.txt"),
    ),
    (
        "decide_user.txt",
        include_str!("../../../assets/prompts/decide_user.txt"),
    ),
    (
        "repair.txt",
        include_str!("../../../assets/prompts/repair.txt"),
    ),
    (
        "output_tools.txt",
        include_str!("../../../assets/prompts/output_tools.txt"),
    ),
    (
        "output_json.txt",
        include_str!("../../../assets/prompts/output_json.txt"),
    ),
    (
        "assist_system.txt",
        include_str!("../../../assets/prompts/assist_system.txt"),
    ),
    (
        "intent_system.txt",
        include_str!("../../../assets/prompts/intent_system.txt"),
    ),
    (
        "watch.txt",
        include_str!("../../../assets/prompts/watch.txt"),
    ),
    (
        "memory_summary.txt",
        include_str!("../../../assets/prompts/memory_summary.txt"),
    ),
    (
        "memory_analysis.txt",
        include_str!("../../../assets/prompts/memory_analysis.txt"),
    ),
];

/// The variables each template may use.
const VARIABLES: &[(&str, &[&str])] = &[
    ("decide_system.txt", &["skills", "output_instructions"]),
    (
        "decide_system_compact.txt",
        &["skills", "output_instructions"],
    ),
    ("decide_user.txt", &["memory", "observation"]),
    ("repair.txt", &["error", "output_instructions"]),
    ("output_tools.txt", &[]),
    ("output_json.txt", &["decision_schema"]),
    ("assist_system.txt", &["here", "devices"]),
    ("intent_system.txt", &["zones"]),
    ("watch.txt", &["zone"]),
    ("memory_summary.txt", &["conversation"]),
    ("memory_analysis.txt", &["text"]),
];

/// The loaded templates, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompts {
    templates: BTreeMap<&'static str, String>,
}

impl Prompts {
    /// The built-in templates, with overrides from `dir` when given.
    pub fn load(dir: Option<&Path>) -> Result<Self, PromptError> {
        let mut templates = BTreeMap::new();
        for (name, text) in BUILTIN {
            let text = match dir.map(|d| d.join(name)) {
                Some(path) if path.exists() => {
                    std::fs::read_to_string(&path).map_err(|e| PromptError::Read {
                        path,
                        message: e.to_string(),
                    })?
                }
                _ => (*text).to_string(),
            };
            check(name, &text)?;
            templates.insert(*name, text);
        }
        Ok(Self { templates })
    }

    /// Fills template `name` with `vars` (every variable it uses must be given).
    pub fn render(&self, name: &str, vars: &[(&str, &str)]) -> Result<String, PromptError> {
        let text = self.templates.get(name).map_or("", String::as_str);
        substitute(name, text, &|var| {
            vars.iter().find(|(k, _)| *k == var).map(|(_, v)| *v)
        })
    }
}

fn allowed(name: &str) -> &'static [&'static str] {
    VARIABLES
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(&[], |(_, v)| v)
}

fn check(name: &str, text: &str) -> Result<(), PromptError> {
    let ok = allowed(name);
    substitute(name, text, &|var| ok.contains(&var).then_some("")).map(|_| ())
}

fn substitute<'a>(
    name: &str,
    text: &str,
    lookup: &dyn Fn(&str) -> Option<&'a str>,
) -> Result<String, PromptError> {
    let mut out = String::with_capacity(text.len() + 256);
    let mut rest = text;
    let mut offset = 0;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            out.push_str(&tail[..1]);
            rest = &tail[2..];
            offset += i + 2;
            continue;
        }
        if let Some(after) = tail.strip_prefix('}') {
            out.push('}');
            rest = after;
            offset += i + 1;
            continue;
        }
        let Some(end) = tail.find('}') else {
            return Err(PromptError::Unclosed {
                name: name.into(),
                at: offset + i,
            });
        };
        let var = &tail[1..end];
        let value = lookup(var).ok_or_else(|| PromptError::UnknownVariable {
            name: name.into(),
            var: var.into(),
            expected: allowed(name)
                .iter()
                .map(|v| format!("{{{v}}}"))
                .collect::<Vec<_>>()
                .join(", "),
        })?;
        out.push_str(value);
        rest = &tail[end + 1..];
        offset += i + end + 1;
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_templates_load_and_fill() {
        let p = Prompts::load(None).unwrap();
        let s = p
            .render(
                "repair.txt",
                &[("error", "bad"), ("output_instructions", "JSON.")],
            )
            .unwrap();
        assert!(s.starts_with("Your reply was rejected: bad"), "{s}");
        let e = p.render("repair.txt", &[("error", "x")]).unwrap_err();
        assert!(e.to_string().contains("`{output_instructions}`"), "{e}");
    }

    #[test]
    fn overrides_are_checked_and_braces_escape() {
        let dir = std::env::temp_dir().join(format!("robobrain-prompts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("decide_user.txt"), "obs {{json}}: {observation}").unwrap();
        let p = Prompts::load(Some(&dir)).unwrap();
        assert_eq!(
            p.render("decide_user.txt", &[("observation", "{}")])
                .unwrap(),
            "obs {json}: {}"
        );
        std::fs::write(dir.join("decide_user.txt"), "obs {obsrvation}").unwrap();
        let e = Prompts::load(Some(&dir)).unwrap_err().to_string();
        assert_eq!(
            e,
            "prompt template decide_user.txt: unknown variable `{obsrvation}`; expected one of {memory}, {observation}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
