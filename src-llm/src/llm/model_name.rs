//! Skill names as a model may see them. OpenAI-style function calling only
//! accepts names matching `^[a-zA-Z0-9_-]{1,64}$`, and an endpoint that
//! checks it refuses the whole request otherwise; skills of MCP services
//! are named `mcp.<service>.<tool>` (and a tool's own name may hold other
//! characters). [`ModelNames`] maps every skill of a registry to a name a
//! model accepts and back, one to one: `.` becomes `__`, any other
//! character outside the pattern `_`, a name too long is cut and given a
//! short hash, and a name taken twice gets `_2`, `_3`…
//!
//! Names that already fit (every built-in skill) are their own model name.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The longest function name a model endpoint accepts.
pub const MAX_LEN: usize = 64;

/// Whether `name` is a function name OpenAI-style endpoints accept.
pub fn is_valid(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The name `skill` is shown as, before any clash with another is settled.
fn encode(skill: &str) -> String {
    if is_valid(skill) {
        return skill.to_string();
    }
    let mut out = String::with_capacity(skill.len() + 4);
    for c in skill.chars() {
        match c {
            '.' => out.push_str("__"),
            c if c.is_ascii_alphanumeric() || c == '_' || c == '-' => out.push(c),
            _ => out.push('_'),
        }
    }
    if out.is_empty() {
        out.push('_');
    }
    if out.len() > MAX_LEN {
        // Cut on a char boundary (all ASCII by now) and keep names apart.
        let hash = fnv1a(skill.as_bytes());
        out.truncate(MAX_LEN - 9);
        let _ = write!(out, "_{:08x}", hash as u32);
    }
    out
}

/// FNV-1a, 64 bits: stable across builds (unlike the std hasher).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A one-to-one map between skill names and the names a model sees.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelNames {
    to_model: BTreeMap<String, String>,
    to_skill: BTreeMap<String, String>,
}

impl ModelNames {
    /// The map for these skill names (in registration order: on a clash the
    /// first keeps the plain name).
    pub fn new<'a>(skills: impl IntoIterator<Item = &'a str>) -> Self {
        let mut names = Self::default();
        for skill in skills {
            if names.to_model.contains_key(skill) {
                continue;
            }
            let base = encode(skill);
            let mut model = base.clone();
            let mut n = 2;
            while names.to_skill.contains_key(&model) {
                let suffix = format!("_{n}");
                let mut cut = base.clone();
                cut.truncate(MAX_LEN - suffix.len());
                model = cut + &suffix;
                n += 1;
            }
            names.to_model.insert(skill.to_string(), model.clone());
            names.to_skill.insert(model, skill.to_string());
        }
        names
    }

    /// The name the model sees for `skill` (the skill's own when unknown).
    pub fn model<'a>(&'a self, skill: &'a str) -> &'a str {
        self.to_model.get(skill).map_or(skill, String::as_str)
    }

    /// The skill a model's name stands for. A model that echoes a skill's
    /// own name (from a description or an event) is understood too.
    pub fn skill<'a>(&'a self, model: &'a str) -> Option<&'a str> {
        self.to_skill
            .get(model)
            .map(String::as_str)
            .or_else(|| self.to_model.contains_key(model).then_some(model))
    }

    /// Every name a model sees, in order.
    pub fn model_names(&self) -> impl Iterator<Item = &str> {
        self.to_skill.keys().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_names_are_their_own_and_mcp_names_map_both_ways() {
        let names = ModelNames::new(["navigate_to", "mcp.home.lights_off", "mcp.time.get-time"]);
        assert_eq!(names.model("navigate_to"), "navigate_to");
        assert_eq!(names.model("mcp.home.lights_off"), "mcp__home__lights_off");
        assert_eq!(names.model("mcp.time.get-time"), "mcp__time__get-time");
        assert_eq!(
            names.skill("mcp__home__lights_off"),
            Some("mcp.home.lights_off")
        );
        assert_eq!(
            names.skill("mcp.home.lights_off"),
            Some("mcp.home.lights_off")
        );
        assert_eq!(names.skill("navigate_to"), Some("navigate_to"));
        assert_eq!(names.skill("mcp__home__nothing"), None);
        assert!(names.model_names().all(is_valid));
    }

    #[test]
    fn every_name_fits_the_pattern_and_no_two_skills_share_one() {
        let long = format!("mcp.svc.{}", "x".repeat(80));
        let long2 = format!("mcp.svc.{}y", "x".repeat(80));
        let skills = [
            "mcp.a.b",
            "mcp__a__b", // what mcp.a.b would become
            "mcp.a b.c/d",
            "mcp.天气.查询",
            "",
            long.as_str(),
            long2.as_str(),
        ];
        let names = ModelNames::new(skills);
        let mut seen = std::collections::BTreeSet::new();
        for skill in skills {
            let model = names.model(skill);
            assert!(is_valid(model), "{skill:?} → {model:?}");
            assert!(seen.insert(model.to_string()), "{model} twice");
            assert_eq!(names.skill(model), Some(skill));
        }
        assert_eq!(names.model("mcp.a b.c/d"), "mcp__a_b__c_d");
    }

    #[test]
    fn the_pattern_is_openais() {
        assert!(is_valid("decide"));
        assert!(is_valid("a-b_C9"));
        assert!(!is_valid("mcp.home.x"));
        assert!(!is_valid(""));
        assert!(!is_valid(&"a".repeat(65)));
        assert!(is_valid(&"a".repeat(64)));
    }
}
