//! Language as data (DESIGN §12): one matcher over one template grammar.
//!
//! Home Assistant's intents — the community's sentence templates for
//! Assist, compiled per language into the PyPI package
//! `home-assistant-intents` (CC BY 4.0) — are loaded from the JSON the setup
//! downloads (`~/.cache/robobrain/intents/en.json`, `zh-CN.json`); the
//! robot's own commands are written in the same template language
//! (`assets/intents/*.yaml`). The matcher returns the intent, its slots and
//! the context; [`targets`] turns slots into the devices they mean.
//!
//! - [`text`]: how an utterance is prepared (punctuation, case, skip words,
//!   white space between CJK characters), as hassil prepares it;
//! - [`template`]: the template language's parser;
//! - [`numbers`]: numbers in words, English and Chinese;
//! - [`slots`]: slot lists (text values, ranges, wildcards) and the home's
//!   `{name}`, `{area}`, `{floor}`;
//! - [`grammar`]: a language's intents, lists, rules and responses, loaded;
//! - [`matcher`]: utterance → the best match, with hassil's semantics.
//!
//! All of it is pure: text and data in, values out; the files are read by
//! [`grammar::Grammar::load`] only.

pub mod grammar;
pub mod matcher;
pub mod numbers;
pub mod slots;
pub mod template;
pub mod text;

pub use grammar::{Grammar, GrammarError};
pub use matcher::{Matcher, MatcherError, Recognized, Slot};
pub use slots::{HomeFile, HomeNames, NamedArea, NamedEntity, NamedFloor, SlotList};

use std::path::PathBuf;

/// The version of Home Assistant's intents the setup downloads (`./x setup`).
pub const HA_INTENTS_VERSION: &str = "2026.10.27";

/// The credit the faces show (`robobrain --help`, the console's help):
/// the grammar is the Home Assistant community's work, CC BY 4.0.
pub const CREDITS: &str = "Understands the home with Home Assistant intents (CC BY 4.0, the Home Assistant \
community's sentence templates, github.com/OHF-Voice/intents), downloaded by ./x setup; see docs/intents.md.";

/// The languages of Home Assistant's grammar robobrain loads.
pub const LANGUAGES: [&str; 2] = ["en", "zh-CN"];

/// Where the setup unpacks Home Assistant's intents: `$ROBOBRAIN_INTENTS_DIR`,
/// else `$XDG_CACHE_HOME/robobrain/intents`, else `~/.cache/robobrain/intents`.
pub fn default_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ROBOBRAIN_INTENTS_DIR") {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    cache.join("robobrain").join("intents")
}
