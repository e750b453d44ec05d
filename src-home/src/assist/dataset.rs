//! The home-assistant-datasets test format, read as upstream's loader reads
//! it: every `.yaml` file under the dataset folder, at any depth, is a test
//! file — except `_fixtures.yaml` (the home of the files beside it),
//! `_home.yaml` (synthetic-home's description the fixtures were made from),
//! `solution.yaml` and `dataset_card.yaml`, which upstream skips too. A
//! test file is a category (or a list of them) and cases of sentences, the
//! states to set first (`setup`), the changes expected (`expect_changes`),
//! the attributes not to judge (`ignore_changes`), the device spoken to
//! (`context_device`) and the answer expected (`expect_response`). Every
//! entity a case names must exist in the home; anything else is refused at
//! file:line:col.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::fixture::HaHome;
use super::yaml;
use crate::source::SourceError;

/// One test file: a category and its cases.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestFile {
    /// `light`, `lock`, `cover`… — one, or a list (each a label the
    /// sentences are counted under).
    #[serde(rename = "category", deserialize_with = "labels")]
    pub categories: Vec<String>,
    /// The language the sentences are in (`en`, `zh`), when the file says;
    /// otherwise each sentence's script tells.
    #[serde(default)]
    pub language: Option<String>,
    /// The cases.
    pub tests: Vec<TestCase>,
}

/// Sentences that should all lead to the same changes.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestCase {
    /// What a person says, each tried from the same setup.
    pub sentences: Vec<String>,
    /// Entity states to set before each sentence.
    #[serde(default)]
    pub setup: BTreeMap<String, EntityPatch>,
    /// Entity states expected after it.
    #[serde(default)]
    pub expect_changes: BTreeMap<String, EntityPatch>,
    /// Attributes whose changes are not judged, by entity: a list of
    /// attribute names as upstream writes it (`state` included), or one
    /// name, or a mapping whose keys are the names.
    #[serde(default, deserialize_with = "ignore_map")]
    pub ignore_changes: BTreeMap<String, Vec<String>>,
    /// The device the request is made at (a voice satellite): its area is
    /// "here".
    #[serde(default)]
    pub context_device: Option<String>,
    /// The time of the request (ISO 8601), when the case fixes it.
    #[serde(default)]
    pub context_now: Option<Value>,
    /// The answer must contain this (or one of these) — a question, scored
    /// by its expected answer.
    #[serde(default, deserialize_with = "one_or_many")]
    pub expect_response: Option<Vec<String>>,
    /// The model tool call upstream expects (`tool_name`, `tool_args`):
    /// read so the file loads, not judged — robobrain without a model makes
    /// no tool call to compare.
    #[serde(default)]
    pub expect_tool_call: Option<Value>,
}

/// A category: one label or a list of labels.
fn labels<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let labels = one_or_many(d)?.unwrap_or_default();
    if labels.is_empty() {
        return Err(serde::de::Error::custom(
            "expected a category (a name, or a list of names)",
        ));
    }
    Ok(labels)
}

/// `ignore_changes` as upstream (entity → attribute list), and the shapes
/// people also write (one attribute; a mapping of attributes).
fn ignore_map<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, Vec<String>>, D::Error> {
    let raw: Option<BTreeMap<String, Value>> = Option::deserialize(d)?;
    let mut out = BTreeMap::new();
    for (entity, v) in raw.unwrap_or_default() {
        let names = match v {
            Value::Null => Vec::new(),
            Value::String(s) => vec![s],
            Value::Array(a) => a
                .into_iter()
                .map(|x| match x {
                    Value::String(s) => Ok(s),
                    other => Err(serde::de::Error::custom(format!(
                        "ignore_changes.{entity}: expected attribute names, found {other}"
                    ))),
                })
                .collect::<Result<_, _>>()?,
            Value::Object(m) => m.into_iter().map(|(k, _)| k).collect(),
            other => {
                return Err(serde::de::Error::custom(format!(
                    "ignore_changes.{entity}: expected a list of attribute names, found {other}"
                )));
            }
        };
        out.insert(entity, names);
    }
    Ok(out)
}

/// One text or a list of texts.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(vec![s]),
        Some(Value::Array(a)) => Some(
            a.into_iter()
                .map(|x| match x {
                    Value::String(s) => Ok(s),
                    Value::Number(n) => Ok(n.to_string()),
                    other => Err(serde::de::Error::custom(format!(
                        "expected text, found {other}"
                    ))),
                })
                .collect::<Result<_, _>>()?,
        ),
        Some(Value::Number(n)) => Some(vec![n.to_string()]),
        Some(other) => {
            return Err(serde::de::Error::custom(format!(
                "expected the answer's text or a list of texts, found {other}"
            )));
        }
    })
}

/// A state and attributes to set or to expect; an attribute expected as
/// `null` must be absent (Home Assistant drops `brightness` from a light that is off).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntityPatch {
    /// The state, when given.
    #[serde(default, deserialize_with = "yaml::state_text")]
    pub state: Option<String>,
    /// Attributes, when given.
    #[serde(default)]
    pub attributes: Map<String, Value>,
}

/// One home of a dataset with its test files.
#[derive(Debug, Clone, PartialEq)]
pub struct HomeCase {
    /// The folder's name (`home1-us-lock`).
    pub name: String,
    /// The locale in the folder's name (`us`, `pl`, `cn`), empty when none.
    pub locale: String,
    /// The home.
    pub home: HaHome,
    /// Its test files, by path.
    pub files: Vec<(PathBuf, TestFile)>,
}

impl TestFile {
    /// Parses and checks a test file against `home` (`file` names it in errors).
    pub fn parse(file: &Path, text: &str, home: &HaHome) -> Result<Self, SourceError> {
        let parsed: Self = yaml::parse(file, text)?;
        for (i, case) in parsed.tests.iter().enumerate() {
            let case_at = nth_item(text, i);
            if case.sentences.iter().all(|s| s.trim().is_empty()) {
                return Err(yaml::error_at(
                    file,
                    text,
                    case_at
                        .and_then(|o| yaml::find_key(text, o, "sentences"))
                        .or(case_at),
                    &format!("tests[{i}].sentences"),
                    "expected at least one sentence",
                ));
            }
            if let Some(device) = &case.context_device
                && home.devices.iter().all(|d| &d.id != device)
                && home.entity(device).is_none()
            {
                let at = case_at
                    .and_then(|o| yaml::find_key(text, o, "context_device"))
                    .or(case_at);
                return Err(yaml::error_at(
                    file,
                    text,
                    at,
                    &format!("tests[{i}].context_device"),
                    format!(
                        "unknown device `{device}`: the home's devices are {}",
                        home.devices
                            .iter()
                            .map(|d| d.id.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
            let named = [
                ("setup", case.setup.keys().collect::<Vec<_>>()),
                ("expect_changes", case.expect_changes.keys().collect()),
                ("ignore_changes", case.ignore_changes.keys().collect()),
            ];
            for (section, ids) in named {
                for id in ids {
                    if home.entity(id).is_none() {
                        let section_at = case_at.and_then(|o| yaml::find_key(text, o, section));
                        return Err(yaml::error_at(
                            file,
                            text,
                            section_at
                                .and_then(|o| yaml::find_key(text, o, id))
                                .or(section_at),
                            &format!("tests[{i}].{section}.{id}"),
                            format!(
                                "unknown entity `{id}`: the home's entities are {}",
                                entity_list(home)
                            ),
                        ));
                    }
                }
            }
        }
        Ok(parsed)
    }
}

/// Where the `index`-th item of the top-level `tests:` list starts.
fn nth_item(text: &str, index: usize) -> Option<usize> {
    let tests = yaml::find_key(text, 0, "tests")?;
    let mut offset = tests;
    let mut indent = None;
    let mut seen = 0;
    for line in text[tests..].split_inclusive('\n') {
        let trimmed = line.trim_start();
        let this = line.len() - trimmed.len();
        if trimmed.starts_with("- ") && indent.is_none_or(|i| i == this) {
            indent = Some(this);
            if seen == index {
                return Some(offset + this);
            }
            seen += 1;
        }
        offset += line.len();
    }
    None
}

fn entity_list(home: &HaHome) -> String {
    home.entities
        .iter()
        .map(|e| e.id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Files upstream's loader never reads as tests.
const NOT_TESTS: [&str; 4] = [
    "_fixtures.yaml",
    "_home.yaml",
    "solution.yaml",
    "dataset_card.yaml",
];

/// Loads a dataset folder as upstream does: every `.yaml` under it (at any
/// depth) but the [`NOT_TESTS`] is a test file, whose home is the
/// `_fixtures.yaml` beside it. Homes are sorted by folder, their files by name.
pub fn load_dataset(dir: &Path) -> Result<Vec<HomeCase>, SourceError> {
    let mut tests = Vec::new();
    test_files(dir, &mut tests)?;
    let mut folders: Vec<PathBuf> = tests
        .iter()
        .filter_map(|p| p.parent().map(Path::to_path_buf))
        .collect();
    folders.sort();
    folders.dedup();
    if folders.is_empty() {
        return Err(SourceError {
            file: dir.to_path_buf(),
            line: 0,
            col: 0,
            field: String::new(),
            message: "no test files here: expected `.yaml` test files beside a `_fixtures.yaml`, \
                      in this folder or below it"
                .into(),
        });
    }
    folders
        .iter()
        .map(|folder| {
            let mut files: Vec<PathBuf> = tests
                .iter()
                .filter(|p| p.parent() == Some(folder.as_path()))
                .cloned()
                .collect();
            files.sort();
            load_home_files(dir, folder, &files)
        })
        .collect()
}

/// Every test file under `dir`, depth first (hidden folders left out).
fn test_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), SourceError> {
    let entries = std::fs::read_dir(dir).map_err(|e| SourceError::unreadable(dir, &e))?;
    for path in entries.filter_map(Result::ok).map(|e| e.path()) {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            test_files(&path, out)?;
        } else if path.extension().is_some_and(|x| x == "yaml")
            && !NOT_TESTS.contains(&name.as_str())
        {
            out.push(path);
        }
    }
    Ok(())
}

/// Loads one home folder (`_fixtures.yaml` and its test files).
pub fn load_home_case(folder: &Path) -> Result<HomeCase, SourceError> {
    let mut files = Vec::new();
    test_files(folder, &mut files)?;
    files.retain(|p| p.parent() == Some(folder));
    files.sort();
    load_home_files(folder, folder, &files)
}

/// The home in `folder` with its test `files`; `root` is the dataset
/// folder its name is taken relative to.
fn load_home_files(root: &Path, folder: &Path, files: &[PathBuf]) -> Result<HomeCase, SourceError> {
    let fixtures = folder.join("_fixtures.yaml");
    if !fixtures.is_file() {
        return Err(SourceError {
            file: files
                .first()
                .cloned()
                .unwrap_or_else(|| folder.to_path_buf()),
            line: 0,
            col: 0,
            field: String::new(),
            message: format!(
                "no home for this test file: expected {} beside it",
                fixtures.display()
            ),
        });
    }
    let home = HaHome::load(&fixtures)?;
    let mut parsed = Vec::new();
    for path in files {
        let text = crate::source::read(path)?;
        parsed.push((path.clone(), TestFile::parse(path, &text, &home)?));
    }
    let name = match folder.strip_prefix(root) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.to_string_lossy().into_owned(),
        _ => folder
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    let mut locale = locale_of(&name);
    if locale.is_empty() {
        locale = home.language.clone().unwrap_or_default();
    }
    Ok(HomeCase {
        locale,
        name,
        home,
        files: parsed,
    })
}

/// `home5-cn-light` → `cn`: the two-letter part of a home folder's name.
pub fn locale_of(folder: &str) -> String {
    folder
        .split('-')
        .skip(1)
        .find(|p| p.len() == 2 && p.chars().all(|c| c.is_ascii_lowercase()))
        .unwrap_or_default()
        .to_string()
}

/// The language a sentence is written in, by its script: `zh` (Han), `ru`
/// (Cyrillic), `en` (Latin letters only, no accents), `latin` (other Latin).
pub fn language_of(sentence: &str) -> &'static str {
    if sentence
        .chars()
        .any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
    {
        "zh"
    } else if sentence
        .chars()
        .any(|c| ('\u{0400}'..='\u{04ff}').contains(&c))
    {
        "ru"
    } else if sentence.is_ascii() {
        "en"
    } else {
        "latin"
    }
}

/// The assist-mini dataset in the shared test data (read in place, never
/// copied); the test fails naming the path when it is absent.
#[cfg(any(test, feature = "test-utils"))]
pub fn assist_mini_dir() -> PathBuf {
    crate::testing::test_data("home-assistant-datasets/assist-mini")
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOME: &str = "areas:\n  - name: Entry\n    id: entry\nentities:\n  - name: Smart Lock\n    id: lock.smart_lock\n    area: entry\n    state: locked\n";
    const TESTS: &str = "---\ncategory: lock\ntests:\n  - sentences:\n      - Lock smart lock\n    setup:\n      lock.smart_lock:\n        state: unlocked\n    expect_changes:\n      lock.smart_lock:\n        state: locked\n  - sentences:\n      - Unlock smart lock\n    expect_changes:\n      lock.smart_lock:\n        state: unlocked\n        attributes:\n          changed_by: null\n";

    fn home() -> HaHome {
        HaHome::parse(Path::new("_fixtures.yaml"), HOME).unwrap()
    }

    fn err(text: &str) -> String {
        TestFile::parse(Path::new("lock.yaml"), text, &home())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_test_file_parses() {
        let t = TestFile::parse(Path::new("lock.yaml"), TESTS, &home()).unwrap();
        assert_eq!(t.categories, ["lock"]);
        assert_eq!(t.tests.len(), 2);
        assert_eq!(
            t.tests[0].setup["lock.smart_lock"].state.as_deref(),
            Some("unlocked")
        );
        assert_eq!(
            t.tests[1].expect_changes["lock.smart_lock"].attributes["changed_by"],
            Value::Null
        );
    }

    #[test]
    fn bad_test_files_are_placed() {
        assert_eq!(
            err(&TESTS.replace(
                "      lock.smart_lock:\n        state: unlocked\n    expect",
                "      lock.smart_lok:\n        state: unlocked\n    expect"
            )),
            "lock.yaml:7:7: `tests[0].setup.lock.smart_lok`: unknown entity `lock.smart_lok`: the home's entities are lock.smart_lock"
        );
        assert_eq!(
            err(&TESTS.replace(
                "        state: unlocked\n        attributes",
                "        state: unlocked\n        atributes"
            )),
            "lock.yaml:17:9: `tests[1].expect_changes.lock.smart_lock`: unknown field `atributes`, expected `state` or `attributes`"
        );
        assert_eq!(
            err(&TESTS.replace("category: lock\n", "")),
            "lock.yaml:2:1: missing field `category`"
        );
        assert_eq!(
            err(&TESTS.replace("      - Unlock smart lock\n", "      - \" \"\n")),
            "lock.yaml:12:5: `tests[1].sentences`: expected at least one sentence"
        );
    }

    /// Our own homes in the published folders' layout: a language folder
    /// and a nested home, `_home.yaml` and the dataset card skipped, a
    /// category given as a list.
    #[test]
    fn folders_load_as_upstream_lays_them_out() {
        let dir = crate::testing::workspace_root().join("tests/fixtures/assist-published");
        let homes = load_dataset(&dir).unwrap();
        let names: Vec<&str> = homes.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["en", "homes/cottage-gb"]);
        let en = &homes[0];
        assert_eq!(
            en.locale, "en",
            "the home's language, when the folder names none"
        );
        assert_eq!(homes[1].locale, "gb");
        let files: Vec<String> = en
            .files
            .iter()
            .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(files, ["fan.yaml", "light.yaml"], "no _home.yaml, no card");
        assert_eq!(en.files[1].1.categories, ["light", "floors"]);
    }

    #[test]
    fn a_test_file_without_a_home_is_named() {
        let dir =
            std::env::temp_dir().join(format!("robobrain-assist-homeless-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("a")).unwrap();
        std::fs::write(dir.join("a/lock.yaml"), TESTS).unwrap();
        let e = load_dataset(&dir).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{}: no home for this test file: expected {} beside it",
                dir.join("a/lock.yaml").display(),
                dir.join("a/_fixtures.yaml").display()
            )
        );
        assert_eq!(
            err(&TESTS.replace("category: lock", "category: []")),
            "lock.yaml:2:1: expected a category (a name, or a list of names)"
        );
    }

    #[test]
    fn locales_and_languages() {
        assert_eq!(locale_of("home5-cn-light"), "cn");
        assert_eq!(locale_of("dom1-pl-todo"), "pl");
        assert_eq!(locale_of("kitchen"), "");
        assert_eq!(language_of("Turn on the kitchen light"), "en");
        assert_eq!(language_of("打开厨房灯"), "zh");
        assert_eq!(language_of("Включи свет"), "ru");
        assert_eq!(language_of("Tænd lyset"), "latin");
    }

    #[test]
    fn the_assist_mini_dataset_loads() {
        let dir = assist_mini_dir();
        let homes = load_dataset(&dir).unwrap();
        assert_eq!(homes.len(), 10);
        let sentences: usize = homes
            .iter()
            .flat_map(|h| &h.files)
            .flat_map(|(_, f)| &f.tests)
            .map(|c| c.sentences.len())
            .sum();
        assert!(sentences >= 40, "{sentences} sentences");
        assert!(homes.iter().any(|h| h.locale == "dk"));
    }
}
