//! The home heard through Home Assistant's grammar (DESIGN §12): the
//! utterance is matched against the home's names, areas and floors
//! ([`crate::intents`]), and the intent with its slots becomes the same
//! plan the rules make — device calls, queries, a scene, a clarifying
//! question — so that the policy, the approvals and the three tracks do not
//! care who understood it. What Home Assistant's intent means here:
//!
//! | intent | on what | call |
//! |---|---|---|
//! | `HassTurnOn` / `HassTurnOff` | lights, switches, fans, media, climate | `turn_on` / `turn_off` |
//! | | covers, valves | `open` / `close` |
//! | | locks | `lock` / `unlock` (high risk: always confirmed) |
//! | | scenes, scripts | the scene |
//! | `HassLightSet` | lights | `set_brightness`, `set_color` |
//! | `HassSetPosition` | covers, valves | `set_position` |
//! | `HassFanSetSpeed` | fans | `set_speed` |
//! | `HassClimateSetTemperature` | climate | `set_temperature` |
//! | `HassMediaPause` / `Unpause` / `Next` / `Previous` | media players | `pause` / `play` / `next_track` / `previous_track` |
//! | `HassSetVolume` / `HassSetVolumeRelative` / `Mute` / `Unmute` | media players | `set_volume` / `mute` / `unmute` |
//! | `HassVacuumStart` / `HassVacuumReturnToBase` | vacuums | `start` / `return_to_base` |
//! | `HassVacuumCleanArea` | the vacuum (the area is where to clean) | `clean_area` (else `start`) |
//! | `HassListAddItem` / `HassShoppingListAddItem` | to-do lists (the shopping list) | `add_item` |
//! | `HassListCompleteItem` / `HassShoppingListCompleteItem` / `HassListRemoveItem` | to-do lists | `complete_item` / `remove_item` |
//! | `HassGetState` | anything | answered from state as its response key asks: yes/no, any, all, which, how many, or the state |
//! | `HassClimateGetTemperature` | what measures a temperature | what it reads (else how it is set) |
//! | `HassNevermind`, `HassGetCurrentTime`, `HassGetCurrentDate`, `HassRespond`, `HassBroadcast` | — | an answer |
//!
//! Targets are found as Home Assistant finds them: a name (with the
//! domain its list value carries), an area, a floor, a domain, a device
//! class — each a filter, never a widening: "the upstairs lights" are the
//! lights of rooms on that floor, and a sensor called "kitchen light level"
//! is never a light. A name that fits several devices is asked about, never
//! guessed; a name said with "all" / 都 / 所有 is every device of its kind
//! in its room. A house of two floors answers to "upstairs" / "楼上" and
//! "downstairs" / "楼下" as well as to their names. Responses are Home Assistant's English response templates when
//! they are plain text with slots; the rest are robobrain's own.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::intent::{Step, Understood, Verb, clarify};
use crate::devices::{Device, DeviceKind, DeviceWorld, Scene};
use crate::intents::{Grammar, HomeNames, Matcher, NamedArea, NamedEntity, NamedFloor, Recognized};
use crate::lines::{self, Lang, line};

/// What the grammar made of an utterance about the home.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Device calls, queries, a scene or a question back; with Home
    /// Assistant's response line for it, when there is one.
    Understood(Understood, Option<String>),
    /// Nothing to run: just say this.
    Answer(String),
    /// The grammar understood the words, but nothing in this home fits them
    /// (no such device, area, class or feature): what to say if nobody
    /// else understands it either.
    NotFound(String),
    /// Something for the robot's own timers (the engine keeps them).
    Timer(TimerAsk),
}

/// What a timer intent asks of the timers the robot keeps on its clock
/// (`HassStartTimer`, `HassCancelTimer`, `HassCancelAllTimers`,
/// `HassTimerStatus`, `HassPauseTimer`, `HassUnpauseTimer`,
/// `HassIncreaseTimer`, `HassDecreaseTimer`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimerAsk {
    /// Home Assistant's intent.
    pub intent: String,
    /// The duration said (`hours`, `minutes`, `seconds`): to start, add or take away.
    pub seconds: Option<f64>,
    /// Which timer, by the duration it was started with (`start_*`).
    pub start_seconds: Option<f64>,
    /// Which timer, by name.
    pub name: Option<String>,
    /// What to do when it ends ("turn off the lights in 5 minutes").
    pub command: Option<String>,
    /// Home Assistant's response, when it is plain text.
    pub response: Option<String>,
    /// Home Assistant's words for "no such timer" (`timer_not_found`).
    pub not_found: Option<String>,
    /// The language it was asked in (its lines are said in it).
    pub lang: Lang,
}

/// The seconds of `prefix`hours / minutes / seconds in a match, when any is said.
fn duration_of(r: &Recognized, prefix: &str) -> Option<f64> {
    let part = |unit: &str, scale: f64| r.number_of(&format!("{prefix}{unit}")).map(|n| n * scale);
    let parts = [
        part("hours", 3600.0),
        part("minutes", 60.0),
        part("seconds", 1.0),
    ];
    parts
        .iter()
        .any(Option::is_some)
        .then(|| parts.iter().flatten().sum())
}

/// An utterance the grammar matched.
#[derive(Debug, Clone, PartialEq)]
pub struct Heard {
    /// What was said.
    pub text: String,
    /// The grammar's language (`en`, `zh-CN`).
    pub language: String,
    /// The match.
    pub recognized: Recognized,
}

/// The grammars the home hears with, compiled with its names.
#[derive(Debug)]
pub struct Hearing {
    matchers: Vec<Matcher>,
    /// The grammars, for their response templates (a Chinese match is
    /// answered with zh-CN's, else English's).
    responses: Vec<Arc<Grammar>>,
    /// Every device and area name, lower-case, longest first (to find
    /// "A and B" in a sentence that names two).
    names: Vec<String>,
}

/// Grammars read once per process, by file.
fn cache() -> &'static Mutex<HashMap<PathBuf, Arc<Grammar>>> {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, Arc<Grammar>>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Home Assistant's grammars in `dir` (`en.json`, `zh-CN.json`), each read
/// once per process; with a notice saying what is missing, if anything.
pub fn load_grammars(dir: &Path) -> (Vec<Arc<Grammar>>, Option<String>) {
    let mut grammars = Vec::new();
    let mut missing = Vec::new();
    for lang in crate::intents::LANGUAGES {
        let file = dir.join(format!("{lang}.json"));
        let cached = cache()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&file)
            .cloned();
        if let Some(g) = cached {
            grammars.push(g);
            continue;
        }
        match Grammar::load(&file) {
            Ok(g) => {
                let g = Arc::new(g);
                cache()
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(file, g.clone());
                grammars.push(g);
            }
            Err(e) => missing.push(e.to_string()),
        }
    }
    let notice = (!missing.is_empty()).then(|| {
        format!(
            "Home Assistant's intents are not loaded ({}): the home is understood by robobrain's own rules only; run ./x setup to download them",
            missing.join("; ")
        )
    });
    (grammars, notice)
}

/// What the grammar's lists see of a device world and its scenes.
pub fn names_of(world: &DeviceWorld, scenes: &[Scene]) -> HomeNames {
    let mut entities: Vec<NamedEntity> = world
        .devices()
        .iter()
        .filter_map(|d| {
            let domain = d.domain()?;
            Some(NamedEntity {
                id: d.id.clone(),
                names: all_names(d.name.clone(), &d.aliases),
                domain: domain.to_string(),
                device_class: d.device_class(),
                area: Some(d.room.clone()),
            })
        })
        .collect();
    for s in scenes {
        entities.push(NamedEntity {
            id: scene_id(&s.name),
            names: all_names(s.name.replace('_', " "), &s.aliases),
            domain: "scene".into(),
            device_class: None,
            area: None,
        });
    }
    HomeNames {
        entities,
        areas: world
            .rooms()
            .iter()
            .map(|r| NamedArea {
                id: r.id.clone(),
                names: all_names(r.name.clone(), &r.aliases),
                floor: r.floor.clone(),
            })
            .collect(),
        floors: floors_named(world.floors()),
    }
}

/// A floor's place in the house when its words say it: below ground,
/// ground, or above.
fn floor_rank(f: &crate::devices::Floor) -> Option<i32> {
    let words = std::iter::once(f.id.replace('_', " "))
        .chain(std::iter::once(f.name.clone()))
        .chain(f.aliases.iter().cloned())
        .map(|w| w.to_lowercase())
        .collect::<Vec<_>>()
        .join(" | ");
    let says = |ws: &[&str]| ws.iter().any(|w| words.contains(w));
    if says(&["basement", "cellar", "地下"]) {
        Some(-1)
    } else if says(&["ground", "downstairs", "一楼", "楼下", "底层"]) {
        Some(0)
    } else if says(&[
        "upstairs", "second", "2nd", "attic", "loft", "二楼", "楼上", "阁楼",
    ]) {
        Some(2)
    } else if says(&["first", "1st"]) {
        Some(1)
    } else {
        None
    }
}

/// The floors as the grammar's `floor` list names them. A house of two
/// floors also answers to "upstairs" / "楼上" for the upper one and
/// "downstairs" / "楼下" for the lower one (their words say which, else
/// the order they are listed in, lowest first), unless a floor already
/// has those names.
fn floors_named(floors: &[crate::devices::Floor]) -> Vec<NamedFloor> {
    let mut named: Vec<NamedFloor> = floors
        .iter()
        .map(|f| NamedFloor {
            id: f.id.clone(),
            names: all_names(f.name.clone(), &f.aliases),
        })
        .collect();
    if let [a, b] = floors {
        let lower_first = match (floor_rank(a), floor_rank(b)) {
            (Some(x), Some(y)) => x <= y,
            _ => true,
        };
        let (low, high) = if lower_first { (0, 1) } else { (1, 0) };
        let taken = |w: &str| {
            named
                .iter()
                .any(|f| f.names.iter().any(|n| n.eq_ignore_ascii_case(w)))
        };
        let mut extra: Vec<(usize, &str)> = Vec::new();
        for (i, words) in [(high, ["upstairs", "楼上"]), (low, ["downstairs", "楼下"])] {
            extra.extend(words.into_iter().filter(|w| !taken(w)).map(|w| (i, w)));
        }
        for (i, w) in extra {
            named[i].names.push(w.to_string());
        }
    }
    named
}

/// A name followed by its aliases.
fn all_names(name: String, aliases: &[String]) -> Vec<String> {
    std::iter::once(name)
        .chain(aliases.iter().cloned())
        .collect()
}

fn scene_id(name: &str) -> String {
    format!("scene:{name}")
}

fn is_cjk_text(text: &str) -> bool {
    crate::text::has_cjk(text)
}

impl Hearing {
    /// The grammars compiled with the home's names.
    pub fn new(
        grammars: &[Arc<Grammar>],
        world: &DeviceWorld,
        scenes: &[Scene],
    ) -> Result<Self, crate::intents::MatcherError> {
        let names = names_of(world, scenes);
        let mut matchers = Vec::new();
        for g in grammars {
            matchers.push(Matcher::new(g.clone(), names.lists())?);
        }
        let responses = grammars.to_vec();
        let mut all: Vec<String> = names
            .entities
            .iter()
            .flat_map(|e| e.names.iter())
            .chain(names.areas.iter().flat_map(|a| a.names.iter()))
            .map(|n| n.to_lowercase())
            .collect();
        all.sort_by_key(|n| std::cmp::Reverse(n.len()));
        all.dedup();
        Ok(Self {
            matchers,
            responses,
            names: all,
        })
    }

    /// Several targets in one sentence ("turn on the living room and
    /// kitchen lights", "打开客厅和卧室的灯"): where two known names stand
    /// joined by "and" / "和", the sentence said once for each; both must
    /// match the same intent. Home Assistant's grammar has no such
    /// templates, so this is robobrain's own step before it.
    pub fn hear_several(&self, text: &str, here: Option<(&str, &str)>) -> Option<Vec<Heard>> {
        let lower = text.to_lowercase();
        if lower.len() != text.len() {
            return None;
        }
        for sep in [" and ", " & ", "和", "跟", "以及", "还有"] {
            for (i, _) in lower.match_indices(sep) {
                let (left, right) = (&lower[..i], &lower[i + sep.len()..]);
                let heads = self.names.iter().filter(|n| left.ends_with(n.as_str()));
                for a in heads {
                    for b in self.names.iter().filter(|n| right.starts_with(n.as_str())) {
                        let a_start = i - a.len();
                        let b_end = i + sep.len() + b.len();
                        let first = format!("{}{}", &text[..i], &text[b_end..]);
                        let second = format!("{}{}", &text[..a_start], &text[i + sep.len()..]);
                        if let (Some(x), Some(y)) =
                            (self.hear(&first, here), self.hear(&second, here))
                            && x.recognized.intent == y.recognized.intent
                        {
                            return Some(vec![x, y]);
                        }
                    }
                }
            }
        }
        None
    }

    /// The best match of `text` in its language's grammar (Chinese script:
    /// the Chinese grammar, else the English one); `here` is the room the
    /// speaker is in, for "the lights here".
    pub fn hear(&self, text: &str, here: Option<(&str, &str)>) -> Option<Heard> {
        let cjk = is_cjk_text(text);
        let mut context = Map::new();
        if let Some((id, name)) = here {
            context.insert("area".into(), json!({"value": id, "text": name}));
        }
        self.matchers
            .iter()
            .filter(|m| m.grammar().language.starts_with("zh") == cjk)
            .find_map(|m| {
                m.recognize(text, &context).map(|recognized| Heard {
                    text: text.to_string(),
                    language: m.grammar().language.clone(),
                    recognized,
                })
            })
    }

    /// The grammar whose responses answer `language`: its own (a Chinese
    /// sentence is never answered with an English response; where zh-CN's
    /// has logic robobrain's own Chinese line stands in).
    fn speaking<'a>(&'a self, language: &'a str) -> impl Iterator<Item = &'a Grammar> + 'a {
        self.responses
            .iter()
            .find(|g| g.language == language)
            .into_iter()
            .map(|g| &**g)
    }

    /// Home Assistant's response template `key` for `intent` in `language`,
    /// as written.
    fn template<'a>(&'a self, language: &'a str, intent: &str, key: &str) -> Option<&'a str> {
        self.speaking(language)
            .find_map(|g| g.response(intent, key))
    }

    /// Home Assistant's response `key` for `intent` in `language`, filled
    /// with the slots, when it is plain text (no logic) — else `None`.
    pub fn response(
        &self,
        language: &str,
        intent: &str,
        key: &str,
        r: &Recognized,
    ) -> Option<String> {
        let get = |name: &str| {
            name.strip_prefix("slots.").and_then(|slot| {
                r.slot(slot).map(|s| {
                    if s.text.is_empty() {
                        value_text(&s.value)
                    } else {
                        s.text.clone()
                    }
                })
            })
        };
        self.speaking(language)
            .filter_map(|g| g.response(intent, key))
            .find_map(|t| render(t, &get))
    }

    /// Home Assistant's error response `key` in `language`, filled in.
    pub fn error(&self, language: &str, key: &str, values: &[(&str, String)]) -> Option<String> {
        let get = |name: &str| {
            values
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.clone())
        };
        self.speaking(language)
            .filter_map(|g| g.errors.get(key))
            .find_map(|t| render(t, &get))
    }
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.as_f64().map_or_else(
            || n.to_string(),
            |f| {
                if f.fract() == 0.0 {
                    format!("{}", f as i64)
                } else {
                    format!("{f}")
                }
            },
        ),
        other => other.to_string(),
    }
}

/// Fills a response template that is text with `{{ name }}` holes (filters
/// `capitalize`, `lower`, `default('…')`, `.replace('_', ' ')`); `None` for
/// templates with logic (`{% … %}`) or holes it cannot fill.
pub fn render(template: &str, get: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    if template.contains("{%") {
        return None;
    }
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("}}")? + start;
        let expr = rest[start + 2..end].trim();
        let mut parts = expr.split('|').map(str::trim);
        let head = parts.next()?;
        let (name, replace) = match head.split_once(".replace(") {
            Some((n, _)) => (n.trim(), true),
            None => (head, false),
        };
        let mut value = get(name);
        if replace {
            value = value.map(|v| v.replace('_', " "));
        }
        for filter in parts {
            // `default('…')`: the text when the hole has no value.
            if let Some(fallback) = filter
                .strip_prefix("default(")
                .and_then(|f| f.strip_suffix(')'))
            {
                let fallback = fallback.trim().trim_matches(|c| c == '\'' || c == '"');
                value = value.or_else(|| Some(fallback.to_string()));
                continue;
            }
            let v = value?;
            value = Some(match filter {
                "capitalize" => {
                    let mut c = v.chars();
                    c.next().map_or_else(String::new, |f| {
                        f.to_uppercase()
                            .chain(c.flat_map(char::to_lowercase))
                            .collect()
                    })
                }
                "lower" => v.to_lowercase(),
                _ => return None,
            });
        }
        out.push_str(&value?);
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    let out = out.split_whitespace().collect::<Vec<_>>().join(" ");
    (!out.is_empty()).then_some(out)
}

/// The filters a match puts on targets.
#[derive(Debug, Default)]
struct Want<'r> {
    name: Option<&'r str>,
    area: Option<&'r str>,
    area_text: Option<&'r str>,
    floor: Option<&'r str>,
    floor_text: Option<&'r str>,
    domains: Vec<String>,
    device_classes: Vec<String>,
}

fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

fn want(r: &Recognized) -> Want<'_> {
    let slot = |n: &str| r.slot(n).filter(|s| !s.wildcard);
    let mut w = Want {
        name: slot("name").and_then(|s| s.value.as_str()),
        area: slot("area").and_then(|s| s.value.as_str()),
        area_text: slot("area").map(|s| s.text.as_str()),
        floor: slot("floor").and_then(|s| s.value.as_str()),
        floor_text: slot("floor").map(|s| s.text.as_str()),
        ..Want::default()
    };
    if let Some(d) = r.slot("domain") {
        w.domains = strings(&d.value);
    } else if w.name.is_some()
        && let Some(d) = r.context.get("domain")
    {
        // The domain of the name's list value: "kitchen light" the light,
        // not the sensor of the same words.
        w.domains = strings(d);
    }
    if let Some(c) = r.slot("device_class") {
        w.device_classes = strings(&c.value);
    }
    w
}

fn same_name(d: &Device, name: &str) -> bool {
    let name = name.trim().to_lowercase();
    d.name.to_lowercase() == name || d.aliases.iter().any(|a| a.to_lowercase() == name)
}

/// The devices a match means, or what to say instead.
fn targets<'w>(
    w: &Want<'_>,
    world: &'w DeviceWorld,
    hearing: &Hearing,
    language: &str,
) -> Result<Vec<&'w Device>, Option<String>> {
    let mut found: Vec<&Device> = world
        .devices()
        .iter()
        .filter(|d| d.domain().is_some())
        .filter(|d| w.name.is_none_or(|n| same_name(d, n)))
        .filter(|d| {
            w.domains.is_empty()
                || d.domain()
                    .is_some_and(|dm| w.domains.iter().any(|x| x == dm))
        })
        .filter(|d| {
            w.device_classes.is_empty()
                || d.device_class()
                    .is_some_and(|c| w.device_classes.contains(&c))
        })
        .collect();
    if let Some(area) = w.area {
        found.retain(|d| d.room == area);
    }
    if let Some(floor) = w.floor {
        found.retain(|d| world.floor_of(d) == Some(floor));
    }
    if !found.is_empty() {
        return Ok(found);
    }
    let area = w.area_text.unwrap_or_default().to_string();
    let floor = w.floor_text.unwrap_or_default().to_string();
    let domain = w.domains.first().cloned().unwrap_or_default();
    let (key, values) = match (w.name, w.area.is_some(), w.floor.is_some()) {
        (Some(n), true, _) => (
            "no_entity_in_area",
            vec![("entity", n.to_string()), ("area", area)],
        ),
        (Some(n), _, true) => (
            "no_entity_in_floor",
            vec![("entity", n.to_string()), ("floor", floor)],
        ),
        (Some(n), _, _) => ("no_entity", vec![("entity", n.to_string())]),
        (None, true, _) if !w.device_classes.is_empty() => (
            "no_device_class_in_area",
            vec![
                ("device_class", w.device_classes[0].clone()),
                ("area", area),
            ],
        ),
        (None, true, _) => (
            "no_domain_in_area",
            vec![("domain", domain), ("area", area)],
        ),
        (None, _, true) => (
            "no_domain_in_floor",
            vec![("domain", domain), ("floor", floor)],
        ),
        (None, _, _) => ("no_domain", vec![("domain", domain)]),
    };
    let message = hearing
        .error(language, key, &values)
        .unwrap_or_else(|| line(Lang::of_code(language), "no_such_device", &[]));
    Err(Some(message))
}

fn number(r: &Recognized, slot: &str) -> Option<i64> {
    r.number_of(slot).map(|n| n.round() as i64)
}

/// The call `intent` means on `d`: `(capability, args)`; `None` when it
/// cannot do it.
fn call_for(intent: &str, r: &Recognized, d: &Device) -> Option<(String, Value)> {
    let domain = d.domain().unwrap_or_default();
    let (cap, args) = match (intent, domain) {
        ("HassTurnOn", "cover" | "valve") => ("open", json!({})),
        ("HassTurnOff", "cover" | "valve") => ("close", json!({})),
        ("HassTurnOn", "lock") => ("lock", json!({})),
        ("HassTurnOff", "lock") => ("unlock", json!({})),
        ("HassTurnOn", "alarm_control_panel") => ("arm", json!({})),
        ("HassTurnOff", "alarm_control_panel") => ("disarm", json!({})),
        ("HassTurnOn", "vacuum") | ("HassVacuumStart", _) => ("start", json!({})),
        ("HassTurnOff", "vacuum") | ("HassVacuumReturnToBase", _) => ("return_to_base", json!({})),
        ("HassTurnOn", _) => ("turn_on", json!({})),
        ("HassTurnOff", _) => ("turn_off", json!({})),
        ("HassLightSet", _) => {
            if let Some(level) = number(r, "brightness") {
                ("set_brightness", json!({"level": level}))
            } else if let Some(color) = r.text_of("color") {
                ("set_color", json!({"color": color}))
            } else {
                return None;
            }
        }
        ("HassSetPosition", _) => ("set_position", json!({"position": number(r, "position")?})),
        ("HassFanSetSpeed", _) => ("set_speed", json!({"level": number(r, "percentage")?})),
        ("HassClimateSetTemperature", _) => (
            "set_temperature",
            json!({"temperature": number(r, "temperature")?}),
        ),
        ("HassMediaPause", _) => ("pause", json!({})),
        ("HassMediaUnpause", _) => ("play", json!({})),
        ("HassMediaNext", _) => ("next_track", json!({})),
        ("HassMediaPrevious", _) => ("previous_track", json!({})),
        ("HassMediaPlayerMute", _) => ("mute", json!({})),
        ("HassMediaPlayerUnmute", _) => ("unmute", json!({})),
        ("HassSetVolume", _) => ("set_volume", json!({"level": number(r, "volume_level")?})),
        ("HassSetVolumeRelative", _) => {
            let now = d
                .state
                .get("volume")
                .and_then(Value::as_f64)
                .or_else(|| {
                    d.state
                        .get("volume_level")
                        .and_then(Value::as_f64)
                        .map(|v| v * 100.0)
                })
                .unwrap_or(50.0);
            let step = match r.slot("volume_step").map(|s| &s.value) {
                Some(Value::String(s)) if s == "down" => -10.0,
                Some(v) if !v.is_string() => v.as_f64().unwrap_or(10.0),
                _ => 10.0,
            };
            (
                "set_volume",
                json!({"level": (now + step).clamp(0.0, 100.0).round() as i64}),
            )
        }

        ("HassListAddItem" | "HassShoppingListAddItem", _) => {
            ("add_item", json!({"item": list_item(r)?}))
        }
        ("HassListCompleteItem" | "HassShoppingListCompleteItem", _) => {
            ("complete_item", json!({"item": list_item(r)?}))
        }
        ("HassListRemoveItem", _) => ("remove_item", json!({"item": list_item(r)?})),
        ("HassVacuumCleanArea", _) => {
            let area = r
                .slot("area")
                .map(|s| s.text.trim().to_string())
                .filter(|a| !a.is_empty())?;
            if d.capability("clean_area").is_none() {
                // A vacuum that cannot be sent to one room still starts.
                d.capability("start")?;
                return Some(("start".into(), json!({})));
            }
            ("clean_area", json!({"area": area}))
        }
        _ => return None,
    };
    d.capability(cap)?;
    Some((cap.to_string(), args))
}

/// The item a list intent names, as said: in Chinese without the 上 of
/// 加上 / 记上 (the grammar's "在{name}里加{item}" reads "加上牛奶" as the
/// item "上牛奶").
fn list_item(r: &Recognized) -> Option<String> {
    let slot = r.slot("item")?;
    let raw = slot.value.as_str().unwrap_or(&slot.text).trim();
    // Only where the template's verb stands right before the item: in
    // "把上海青加到购物清单" the 上 is the item's own.
    let after_verb = ["加{", "添加{", "记{"]
        .iter()
        .any(|v| r.template.contains(v));
    let item = match raw.strip_prefix('上') {
        Some(rest) if after_verb && crate::text::has_cjk(rest) => rest.trim(),
        _ => raw,
    };
    (!item.is_empty()).then(|| item.to_string())
}

fn is_query(intent: &str) -> bool {
    matches!(intent, "HassGetState" | "HassClimateGetTemperature")
}

/// Whether a device's state is what a query's `state` slot asks
/// (`on`, `off`, `open`, `closed`, `locked`, `unlocked`).
fn in_state(d: &Device, want: &str) -> bool {
    let s = &d.state;
    let text = s.get("state").and_then(Value::as_str);
    let on = s.get("on").and_then(Value::as_bool);
    match want {
        "on" => {
            text.is_some_and(|t| t != "off" && t != "closed" && t != "unavailable")
                || on == Some(true)
        }
        "off" => text == Some("off") || on == Some(false),
        "open" => {
            text == Some("open")
                || s.get("position")
                    .and_then(Value::as_i64)
                    .is_some_and(|p| p > 0)
                || s.get("open").and_then(Value::as_bool) == Some(true)
        }
        "closed" => {
            text == Some("closed")
                || s.get("position").and_then(Value::as_i64) == Some(0)
                || s.get("open").and_then(Value::as_bool) == Some(false)
        }
        "locked" => {
            text == Some("locked") || s.get("locked").and_then(Value::as_bool) == Some(true)
        }
        "unlocked" => {
            text == Some("unlocked") || s.get("locked").and_then(Value::as_bool) == Some(false)
        }
        other => text == Some(other),
    }
}

fn names_list(ds: &[&Device], lang: Lang) -> String {
    let n: Vec<String> = ds
        .iter()
        .map(|d| lines::name_in(lang, &d.name, &d.aliases))
        .collect();
    lines::list(lang, &n, false)
}

/// What the grammar's match means in this home.
pub fn plan(
    heard: &Heard,
    hearing: &Hearing,
    world: &DeviceWorld,
    scenes: &[Scene],
    clock_h: f64,
) -> Option<Plan> {
    let r = &heard.recognized;
    let intent = r.intent.as_str();
    let language = heard.language.as_str();
    let lang = Lang::of_code(language);
    let response = hearing.response(language, intent, &r.response, r);
    if let Some(plan) = without_devices(heard, hearing, clock_h, response.as_deref()) {
        return Some(plan);
    }
    let w = want(r);
    // A scene or a script by name.
    if intent == "HassTurnOn"
        && let Some(s) = scene_named(&w, scenes)
    {
        return Some(Plan::Understood(
            Understood::Scene {
                name: s.name.clone(),
            },
            response,
        ));
    }
    let found = match intent {
        // The area is where to clean, not where the vacuum stands.
        "HassVacuumCleanArea" => one_kind(&w, world, DeviceKind::Vacuum, &[]),
        // Home Assistant's shopping list is one to-do list: the one called so.
        "HassShoppingListAddItem" | "HassShoppingListCompleteItem" => one_kind(
            &w,
            world,
            DeviceKind::Todo,
            &["shopping", "grocer", "购物", "买菜"],
        ),
        _ => targets(&w, world, hearing, language),
    };
    let mut found = match found {
        Ok(found) => found,
        Err(None) => {
            let domain = if intent.starts_with("HassVacuum") {
                "vacuum"
            } else {
                "todo"
            };
            let message = hearing
                .error(language, "no_domain", &[("domain", domain.to_string())])
                .unwrap_or_else(|| line(lang, "no_such_device", &[]));
            return Some(Plan::NotFound(message));
        }
        Err(Some(missing)) => return Some(Plan::NotFound(missing)),
    };
    // "把卧室的灯都关了", "turn off all the bedroom light": a name said with
    // "all" means every device of its kind in its room.
    let all = !is_query(intent) && w.name.is_some() && says_all(&heard.text);
    if all && let [d] = found.as_slice() {
        let (domain, room) = (d.domain().map(str::to_string), d.room.clone());
        found = world
            .devices()
            .iter()
            .filter(|x| x.domain() == domain.as_deref() && x.room == room)
            .collect();
    }
    // One name, several devices: ask which (never guess; all only when said).
    let one_meant = w.name.is_some()
        || intent.starts_with("HassVacuum")
        || intent.starts_with("HassShoppingList");
    if one_meant && found.len() > 1 && !all {
        let ids = found.iter().map(|d| d.id.clone()).collect();
        let verb = found
            .first()
            .and_then(|d| call_for(intent, r, d))
            .map(|(action, args)| Verb::Call { action, args });
        return Some(Plan::Understood(clarify(world, ids, verb, lang), None));
    }
    if intent == "HassClimateGetTemperature" {
        return Some(temperature_plan(&found, lang));
    }
    if is_query(intent) {
        return Some(query_plan(r, &found, lang));
    }
    Some(control_plan(heard, hearing, &found, response))
}

/// Whether a sentence says "all" of something ("all", "every", "both",
/// 都, 所有, 全部).
fn says_all(text: &str) -> bool {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    words.iter().any(|w| matches!(*w, "all" | "every" | "both"))
        || ["都", "所有", "全部"].iter().any(|w| lower.contains(w))
}

/// The devices of `kind` an intent without an area filter means: the one
/// named, else those whose names have one of `called` in them, else all of
/// them (several are asked about by the caller); `Err(None)` when the home
/// has none.
fn one_kind<'w>(
    w: &Want<'_>,
    world: &'w DeviceWorld,
    kind: DeviceKind,
    called: &[&str],
) -> Result<Vec<&'w Device>, Option<String>> {
    let of_kind: Vec<&Device> = world.devices().iter().filter(|d| d.kind == kind).collect();
    let named: Vec<&Device> = match w.name {
        Some(n) => of_kind
            .iter()
            .copied()
            .filter(|d| same_name(d, n))
            .collect(),
        None => of_kind
            .iter()
            .copied()
            .filter(|d| {
                d.names()
                    .any(|n| called.iter().any(|c| n.to_lowercase().contains(*c)))
            })
            .collect(),
    };
    let found = if named.is_empty() && w.name.is_none() {
        of_kind
    } else {
        named
    };
    if found.is_empty() {
        return Err(None);
    }
    Ok(found)
}

/// A temperature asked about: what the thermometers and climate devices
/// among `found` read (or, without a reading, how they are set).
fn temperature_plan(found: &[&Device], lang: Lang) -> Plan {
    let warm: Vec<&Device> = found
        .iter()
        .copied()
        .filter(|d| {
            d.kind == DeviceKind::Climate
                || d.device_class().as_deref() == Some("temperature")
                || reading(d).is_some()
        })
        .collect();
    if warm.is_empty() {
        return Plan::NotFound(line(lang, "no_temperature", &[]));
    }
    let sep = line(lang, "sentence_sep", &[]);
    let said: Vec<String> = warm
        .iter()
        .map(|d| match reading(d).filter(|_| d.online) {
            Some(t) => line(
                lang,
                "temperature_is",
                &[
                    ("device", &lines::name_in(lang, &d.name, &d.aliases)),
                    ("n", &value_text(&json!(t))),
                ],
            ),
            None => super::summary::describe(d, lang),
        })
        .collect();
    Plan::Answer(said.join(&sep))
}

/// The temperature a device reads now, when it reads one.
fn reading(d: &Device) -> Option<f64> {
    let s = &d.state;
    s.get("current_temperature")
        .and_then(Value::as_f64)
        .or_else(|| {
            s.get("state")
                .and_then(Value::as_str)
                .and_then(|t| t.parse().ok())
                .filter(|_| d.device_class().as_deref() == Some("temperature"))
        })
        .or_else(|| s.get("temperature_c").and_then(Value::as_f64))
}

/// The intents that touch no device: an answer (with Home Assistant's
/// `response` when it has one), or something for the robot's timers.
fn without_devices(
    heard: &Heard,
    hearing: &Hearing,
    clock_h: f64,
    response: Option<&str>,
) -> Option<Plan> {
    let r = &heard.recognized;
    let intent = r.intent.as_str();
    let language = heard.language.as_str();
    let lang = Lang::of_code(language);
    let said_or = |key: &str| response.map_or_else(|| line(lang, key, &[]), str::to_string);
    Some(match intent {
        "HassNevermind" => Plan::Answer(said_or("nevermind")),
        "HassRespond" => Plan::Answer(said_or("hello")),
        "HassBroadcast" => Plan::Answer(
            r.text_of("message")
                .map_or_else(|| line(lang, "done_nothing", &[]), str::to_string),
        ),
        "HassGetCurrentTime" => {
            let h = clock_h.rem_euclid(24.0);
            let (hour, minute) = (h.floor() as u32, ((h.fract()) * 60.0).floor() as u32);
            let time = format!("{hour:02}:{minute:02}");
            Plan::Answer(line(lang, "time_now", &[("time", &time)]))
        }
        "HassStartTimer"
        | "HassCancelTimer"
        | "HassCancelAllTimers"
        | "HassIncreaseTimer"
        | "HassDecreaseTimer"
        | "HassPauseTimer"
        | "HassUnpauseTimer"
        | "HassTimerStatus" => Plan::Timer(TimerAsk {
            intent: intent.to_string(),
            seconds: duration_of(r, ""),
            start_seconds: duration_of(r, "start_"),
            name: r
                .slot("name")
                .map(|s| s.text.trim().to_string())
                .filter(|n| !n.is_empty()),
            command: r.text_of("conversation_command").map(str::to_string),
            response: response.map(str::to_string),
            not_found: hearing.error(language, "timer_not_found", &[]),
            lang,
        }),
        _ => return None,
    })
}

/// The scene or script `w` names, when it asks for one.
fn scene_named<'s>(w: &Want<'_>, scenes: &'s [Scene]) -> Option<&'s Scene> {
    let name = w.name?;
    if !w.domains.iter().any(|d| d == "scene" || d == "script") {
        return None;
    }
    scenes.iter().find(|s| {
        s.name.replace('_', " ").eq_ignore_ascii_case(name)
            || s.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
    })
}

/// A query about `found`, answered as Home Assistant's response key asks
/// (`one_yesno`, `any`, `all`, `which`, `how_many`; else each device's
/// state as it is, with what it cannot tell) — from the devices' real
/// state, never writing. An offline device's state is unknown: it is
/// never counted as in the state asked.
fn query_plan(r: &Recognized, found: &[&Device], lang: Lang) -> Plan {
    let Some(state) = r.text_of("state") else {
        return each_state(found);
    };
    let matched: Vec<&Device> = found
        .iter()
        .copied()
        .filter(|d| d.online && in_state(d, state))
        .collect();
    let unmatched: Vec<&Device> = found
        .iter()
        .copied()
        .filter(|d| !matched.iter().any(|m| m.id == d.id))
        .collect();
    let what = found.first().map_or_else(
        || line(lang, "kind_switch", &[]),
        |d| line(lang, &format!("kind_{}", d.kind.as_str()), &[]),
    );
    let what = what.as_str();
    let state_words = state_in(state, lang);
    let n = matched.len().to_string();
    let slots = |names: &[&Device]| names_list(names, lang);
    Plan::Answer(match (r.response.as_str(), found) {
        ("one_yesno", [d]) if !d.online => super::summary::describe(d, lang),
        ("one_yesno", [d]) if matched.is_empty() => line(
            lang,
            "no_then",
            &[("line", &super::summary::describe(d, lang))],
        ),
        ("one_yesno", [d]) => line(
            lang,
            "yes_it_is",
            &[
                ("device", &lines::name_in(lang, &d.name, &d.aliases)),
                ("state", &state_words),
            ],
        ),
        ("one_yesno", _) => return each_state(found),
        ("all", _) if unmatched.is_empty() => line(
            lang,
            "yes_all",
            &[("n", &n), ("what", what), ("state", &state_words)],
        ),
        ("all", _) => line(
            lang,
            "not_all",
            &[("names", &slots(&unmatched)), ("state", &state_words)],
        ),
        (_, _) if matched.is_empty() => line(
            lang,
            "none_in_state",
            &[("what", what), ("state", &state_words)],
        ),
        ("any", _) => line(
            lang,
            "yes_these",
            &[("names", &slots(&matched)), ("state", &state_words)],
        ),
        ("how_many", _) => line(
            lang,
            "how_many_in_state",
            &[
                ("n", &n),
                ("what", what),
                ("names", &slots(&matched)),
                ("state", &state_words),
            ],
        ),
        ("which", _) => line(
            lang,
            "some_in_state",
            &[
                ("n", &n),
                ("names", &slots(&matched)),
                ("state", &state_words),
            ],
        ),
        // A state asked about one device without a yes/no template: its state.
        (_, [_]) => return each_state(found),
        (_, _) => line(
            lang,
            "some_in_state",
            &[
                ("n", &n),
                ("names", &slots(&matched)),
                ("state", &state_words),
            ],
        ),
    })
}

/// Each device's state as it is, read through `devices.get_state`.
fn each_state(found: &[&Device]) -> Plan {
    let steps = found
        .iter()
        .map(|d| Step::Query {
            device: d.id.clone(),
        })
        .collect();
    Plan::Understood(Understood::Steps { steps }, None)
}

/// The state in words of the language heard ("on" → "开着").
fn state_in(state: &str, lang: Lang) -> String {
    if matches!(
        state,
        "on" | "off" | "open" | "closed" | "locked" | "unlocked"
    ) {
        line(lang, state, &[])
    } else {
        state.to_string()
    }
}

/// The device calls the intent makes on `found`, with Home Assistant's
/// `response` when it fits; what is missing when none of them can.
fn control_plan(
    heard: &Heard,
    hearing: &Hearing,
    found: &[&Device],
    response: Option<String>,
) -> Plan {
    let r = &heard.recognized;
    let intent = r.intent.as_str();
    let language = heard.language.as_str();
    let lang = Lang::of_code(language);
    let mut steps = Vec::new();
    for d in found {
        if let Some((action, args)) = call_for(intent, r, d) {
            steps.push(Step::Control {
                device: d.id.clone(),
                action,
                args,
            });
        }
    }
    if steps.is_empty() {
        let can = found.first().map(|d| super::intent::cannot(d, lang));
        let message = if found.len() == 1 {
            can.unwrap_or_default()
        } else {
            hearing
                .error(language, "feature_not_supported", &[])
                .unwrap_or_else(|| line(lang, "no_feature", &[]))
        };
        return Plan::NotFound(message);
    }
    // Home Assistant's response speaks for several devices ("Turned on the
    // lights") or carries what was said ("Added oat milk"); one device's
    // own template names it and the value.
    let response = response.filter(|_| {
        steps.len() > 1
            || hearing
                .template(language, intent, &r.response)
                .is_some_and(|t| t.contains("slots."))
    });
    Plan::Understood(Understood::Steps { steps }, response)
}

/// Whether a device kind is one the grammar's execution can reach (for docs and tests).
pub fn reachable(kind: DeviceKind) -> bool {
    kind.domain().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_responses_are_filled_and_logic_is_left_alone() {
        let get = |n: &str| match n {
            "slots.item" => Some("oat milk".to_string()),
            "area" => Some("Kitchen".to_string()),
            "domain" => Some("media_player".to_string()),
            _ => None,
        };
        assert_eq!(
            render("Added {{ slots.item }}", &get).as_deref(),
            Some("Added oat milk")
        );
        assert_eq!(
            render("Sorry, I am not aware of any {{ domain.replace('_', ' ') }} in the {{ area }} area", &get).as_deref(),
            Some("Sorry, I am not aware of any media player in the Kitchen area")
        );
        assert_eq!(
            render("{{ slots.item | capitalize }} is here", &get).as_deref(),
            Some("Oat milk is here")
        );
        assert_eq!(
            render("{{ slots.name|default('') }}已打开", &get).as_deref(),
            Some("已打开")
        );
        assert_eq!(
            render("正在打开{{ slots.item|default('阀门') }}", &get).as_deref(),
            Some("正在打开oat milk")
        );
        assert_eq!(render("{% if x %}Yes{% endif %}", &get), None);
        assert_eq!(render("{{ slots.missing }}", &get), None);
    }
}

#[cfg(test)]
mod home_tests {
    //! Home Assistant's grammar over robobrain homes. Needs the grammar
    //! (`./x setup` downloads it); without it these fail saying so.

    use std::path::Path;

    use super::*;
    use crate::devices::{SimBackend, builtin_home, parse_home};

    fn grammars() -> Vec<Arc<Grammar>> {
        let dir = crate::intents::default_dir();
        let (g, notice) = load_grammars(&dir);
        assert!(notice.is_none(), "{notice:?}: run ./x setup");
        g
    }

    const TWO_FLOORS: &str = r#"
name = "house"
[[floor]]
id = "ground"
aliases = ["downstairs"]
[[floor]]
id = "first"
aliases = ["upstairs", "楼上"]
[[room]]
id = "kitchen"
aliases = ["厨房"]
floor = "ground"
[[room]]
id = "bedroom"
aliases = ["卧室"]
floor = "first"
[[room]]
id = "study"
floor = "first"
[[room]]
id = "shed"
[[device]]
id = "kitchen_light"
type = "dimmer"
room = "kitchen"
[[device]]
id = "bedroom_light"
type = "dimmer"
aliases = ["卧室灯"]
room = "bedroom"
[[device]]
id = "study_lamp"
type = "light"
name = "lamp"
room = "study"
[[device]]
id = "bedroom_lamp"
type = "light"
name = "lamp"
room = "bedroom"
[[device]]
id = "shed_light"
type = "light"
room = "shed"
[[device]]
id = "bedroom_fan"
type = "fan"
room = "bedroom"
[[device]]
id = "groceries"
type = "todo_list"
name = "groceries"
aliases = ["购物清单"]
room = "kitchen"
"#;

    fn house() -> (DeviceWorld, Hearing) {
        let home = parse_home(
            Path::new("house.toml"),
            TWO_FLOORS,
            crate::devices::catalogue::BUILTIN_CATALOGUE,
        )
        .unwrap();
        let world = DeviceWorld::new(&home.name, home.rooms, home.devices, Box::new(SimBackend))
            .unwrap()
            .with_floors(home.floors);
        let hearing = Hearing::new(&grammars(), &world, &[]).unwrap();
        (world, hearing)
    }

    fn plan_of(text: &str, world: &DeviceWorld, hearing: &Hearing) -> Plan {
        let heard = hearing
            .hear(text, None)
            .unwrap_or_else(|| panic!("not heard: {text}"));
        plan(&heard, hearing, world, &[], 12.0).unwrap_or_else(|| panic!("no plan: {text}"))
    }

    fn controls(p: &Plan) -> Vec<(String, String, Value)> {
        match p {
            Plan::Understood(Understood::Steps { steps }, _) => {
                steps.iter().filter_map(Step::call).collect()
            }
            other => panic!("expected steps, got {other:?}"),
        }
    }

    #[test]
    fn a_floor_never_reaches_another_floors_lights() {
        let (w, h) = house();
        for text in [
            "turn off the lights upstairs",
            "Turn off all the upstairs lights",
            "关闭楼上的灯",
        ] {
            let mut got: Vec<String> = controls(&plan_of(text, &w, &h))
                .into_iter()
                .map(|c| c.0)
                .collect();
            got.sort();
            assert_eq!(
                got,
                vec!["bedroom_lamp", "bedroom_light", "study_lamp"],
                "{text}"
            );
        }
        // Areas: only that room's lights.
        let got: Vec<String> = controls(&plan_of("turn on the lights in the kitchen", &w, &h))
            .into_iter()
            .map(|c| c.0)
            .collect();
        assert_eq!(got, vec!["kitchen_light"]);
    }

    /// Home Assistant's responses in the language heard: zh-CN's for
    /// Chinese, English's for English.
    #[test]
    fn a_chinese_sentence_is_answered_with_chinese_responses() {
        let (w, h) = house();
        let response = |text: &str| match plan_of(text, &w, &h) {
            Plan::Understood(_, r) => r,
            other => panic!("{text}: {other:?}"),
        };
        assert_eq!(response("关闭楼上的灯").as_deref(), Some("楼上灯已关闭"));
        let en = response("turn off the lights upstairs").unwrap_or_default();
        assert!(en.is_ascii() && !en.is_empty(), "{en}");
    }

    #[test]
    fn two_rooms_in_one_sentence_are_both_heard() {
        let (_, h) = house();
        for text in [
            "turn on the kitchen and bedroom lights",
            "打开厨房和卧室的灯",
        ] {
            let several = h
                .hear_several(text, None)
                .unwrap_or_else(|| panic!("{text}"));
            let areas: Vec<&str> = several
                .iter()
                .filter_map(|x| x.recognized.text_of("area"))
                .collect();
            assert_eq!(areas, vec!["kitchen", "bedroom"], "{text}");
        }
        assert!(
            h.hear_several("turn on the kitchen light and sing", None)
                .is_none()
        );
    }

    #[test]
    fn a_turn_with_two_rooms_switches_all_their_lights_at_once() {
        let (w, _) = house();
        let config = crate::config::HomeConfig {
            hour: Some(12.0),
            ..crate::config::HomeConfig::default()
        };
        let mut home = crate::hci::Home::new(w, Vec::new(), &config, "t").unwrap();
        let turn = home.turn("turn on the kitchen and bedroom lights").unwrap();
        // Lights are low risk however many (seed 001's tiers): all run now.
        assert_eq!(turn.confirm, None);
        let mut devices: Vec<&str> = turn
            .forged
            .iter()
            .map(|c| c["response"]["device"].as_str().unwrap())
            .collect();
        devices.sort_unstable();
        assert_eq!(
            devices,
            vec!["bedroom_lamp", "bedroom_light", "kitchen_light"]
        );
        assert!(turn.args["grammar"]["several"].is_array(), "{}", turn.args);
    }

    #[test]
    fn a_shared_name_is_asked_about_and_an_area_settles_it() {
        let (w, h) = house();
        match plan_of("turn on the lamp", &w, &h) {
            Plan::Understood(Understood::Clarify { candidates, .. }, _) => {
                assert_eq!(candidates, vec!["study_lamp", "bedroom_lamp"]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            controls(&plan_of("turn on the lamp in the study", &w, &h)),
            vec![("study_lamp".into(), "turn_on".into(), json!({}))]
        );
    }

    #[test]
    fn levels_fans_lists_and_chinese() {
        let (w, h) = house();
        assert_eq!(
            controls(&plan_of("set the bedroom light brightness to 30%", &w, &h)),
            vec![(
                "bedroom_light".into(),
                "set_brightness".into(),
                json!({"level": 30})
            )]
        );
        assert_eq!(
            controls(&plan_of("set the bedroom fan speed to 40%", &w, &h)),
            vec![(
                "bedroom_fan".into(),
                "set_speed".into(),
                json!({"level": 40})
            )]
        );
        let p = plan_of("add oat milk to my groceries list", &w, &h);
        assert_eq!(
            controls(&p),
            vec![(
                "groceries".into(),
                "add_item".into(),
                json!({"item": "oat milk"})
            )]
        );
        assert!(
            matches!(&p, Plan::Understood(_, Some(r)) if r == "Added oat milk"),
            "{p:?}"
        );
        assert_eq!(
            controls(&plan_of("把卧室灯的亮度调到百分之五十", &w, &h)),
            vec![(
                "bedroom_light".into(),
                "set_brightness".into(),
                json!({"level": 50})
            )]
        );
    }

    #[test]
    fn a_question_reads_and_nothing_found_says_what_is_missing() {
        let (w, h) = house();
        match plan_of("is the kitchen light on?", &w, &h) {
            Plan::Answer(text) => {
                assert!(text.starts_with("No. The kitchen light is off"), "{text}");
            }
            other => panic!("{other:?}"),
        }
        match plan_of("what is the state of the kitchen light", &w, &h) {
            Plan::Understood(Understood::Steps { steps }, _) => {
                assert_eq!(
                    steps,
                    vec![Step::Query {
                        device: "kitchen_light".into()
                    }]
                );
            }
            other => panic!("{other:?}"),
        }
        match plan_of("which lights are on?", &w, &h) {
            Plan::Answer(text) => assert_eq!(text, "No light is on."),
            other => panic!("{other:?}"),
        }
        match plan_of("turn on the fan in the kitchen", &w, &h) {
            Plan::NotFound(text) => {
                assert!(text.contains("fan") && text.contains("kitchen"), "{text}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_sensor_named_light_is_never_the_light() {
        let home = builtin_home().unwrap();
        let mut devices = home.devices.clone();
        let mut sensor = devices[0].clone();
        sensor.id = "kitchen_light_level".into();
        sensor.name = "kitchen light level".into();
        sensor.aliases = vec!["kitchen light".into()];
        sensor.kind = DeviceKind::Sensor;
        sensor.capabilities.clear();
        sensor.room = "kitchen".into();
        devices.push(sensor);
        let world = DeviceWorld::new("x", home.rooms, devices, Box::new(SimBackend)).unwrap();
        let h = Hearing::new(&grammars(), &world, &home.scenes).unwrap();
        assert_eq!(
            controls(&plan_of("turn on the kitchen light", &world, &h)),
            vec![("kitchen_light".into(), "turn_on".into(), json!({}))]
        );
    }
}

#[cfg(test)]
mod missing_tests {
    /// Without the grammar the home runs on the rules and says why.
    #[test]
    fn without_the_grammar_the_rules_run_and_say_so() {
        let config = crate::config::HomeConfig {
            intents: Some(std::path::PathBuf::from("/nonexistent/robobrain-intents")),
            ..crate::config::HomeConfig::default()
        };
        let mut home = crate::hci::Home::load(&config, "apartment", "t").unwrap();
        assert!(home.hearing.is_none());
        let notice = home.hearing_notice.clone().unwrap();
        assert!(
            notice.contains("/nonexistent/robobrain-intents") && notice.contains("./x setup"),
            "{notice}"
        );
        let turn = home.turn("打开客厅灯").unwrap();
        assert_eq!(turn.intent, "home_control");
        assert!(turn.args.get("grammar").is_none(), "{}", turn.args);
    }
}

#[cfg(test)]
mod general_knowledge_tests {
    //! What people ordinarily say to a home, in our own sentences (English
    //! and Chinese), through the whole turn: Home Assistant's grammar where
    //! it has the form, robobrain's rules where it does not. None of these
    //! sentences comes from a published test set.

    use std::path::Path;

    use serde_json::{Value, json};

    use crate::devices::{DeviceWorld, SimBackend, parse_home};
    use crate::hci::{Home, Out, Turn};

    const HOUSE: &str = r#"
name = "house"
[[floor]]
id = "first"
name = "first floor"
[[floor]]
id = "ground"
name = "ground floor"
[[room]]
id = "kitchen"
aliases = ["厨房"]
floor = "ground"
[[room]]
id = "garden"
aliases = ["花园"]
floor = "ground"
[[room]]
id = "bedroom"
aliases = ["卧室"]
floor = "first"
[[device]]
id = "kitchen_light"
type = "dimmer"
room = "kitchen"
[[device]]
id = "bedroom_light"
type = "dimmer"
aliases = ["卧室灯"]
room = "bedroom"
[[device]]
id = "bedroom_lamp"
type = "light"
name = "lamp"
aliases = ["台灯"]
room = "bedroom"
[[device]]
id = "garden_irrigation"
type = "water_valve"
name = "garden irrigation"
aliases = ["花园浇水"]
room = "garden"
[[device]]
id = "gas_valve"
type = "gas_valve"
aliases = ["燃气阀"]
room = "kitchen"
[[device]]
id = "mower_shed_water"
type = "water_valve"
name = "sprinkler"
room = "kitchen"
"#;

    fn config() -> crate::config::HomeConfig {
        crate::config::HomeConfig {
            hour: Some(12.0),
            ..crate::config::HomeConfig::default()
        }
    }

    fn house() -> Home {
        let home = parse_home(
            Path::new("house.toml"),
            HOUSE,
            crate::devices::catalogue::BUILTIN_CATALOGUE,
        )
        .unwrap();
        let world = DeviceWorld::new(&home.name, home.rooms, home.devices, Box::new(SimBackend))
            .unwrap()
            .with_floors(home.floors);
        Home::new(world, Vec::new(), &config(), "t").unwrap()
    }

    fn apartment() -> Home {
        Home::load(&config(), "apartment", "t").unwrap()
    }

    /// The device calls a turn runs or holds for confirmation, sorted.
    fn calls(turn: &Turn) -> Vec<(String, String, Value)> {
        let mut calls: Vec<(String, String, Value)> = match &turn.confirm {
            Some((_, args)) => match args.get("calls").and_then(Value::as_array) {
                Some(list) => list.iter().map(super::super::call_of).collect(),
                None => vec![super::super::call_of(args)],
            },
            None => turn.args["steps"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|s| s["step"] == "control")
                .map(|s| {
                    (
                        s["device"].as_str().unwrap_or_default().to_string(),
                        s["action"].as_str().unwrap_or_default().to_string(),
                        s["args"].clone(),
                    )
                })
                .collect(),
        };
        calls.sort_by(|a, b| a.0.cmp(&b.0));
        calls
    }

    fn said(turn: &Turn) -> Vec<String> {
        turn.out
            .iter()
            .filter_map(|o| match o {
                Out::Say(line, _) => Some(line.clone()),
                Out::Devices => None,
            })
            .collect()
    }

    fn call(device: &str, action: &str, args: Value) -> (String, String, Value) {
        (device.into(), action.into(), args)
    }

    fn turn(home: &mut Home, text: &str) -> Turn {
        home.turn(text)
            .unwrap_or_else(|| panic!("not understood: {text}"))
    }

    /// `text` understood as exactly the calls `want`, answered in its own
    /// language.
    fn does(home: &mut Home, text: &str, want: &[(String, String, Value)]) {
        let t = turn(home, text);
        assert_eq!(calls(&t), want, "{text}");
        in_language(&t, text);
    }

    /// The devices a turn's calls go to, in order.
    fn devices_of(turn: &Turn) -> Vec<String> {
        calls(turn).into_iter().map(|c| c.0).collect()
    }

    /// Each line said in Chinese for a Chinese sentence, English for an
    /// English one, and none with an empty slot.
    fn in_language(turn: &Turn, text: &str) {
        let zh = crate::text::has_cjk(text);
        for line in said(turn) {
            assert!(!line.trim().is_empty(), "{text}: an empty line");
            assert!(!line.contains("#{"), "{text}: {line}");
            if zh {
                assert!(crate::text::has_cjk(&line), "{text}: answered {line}");
            } else {
                assert!(!crate::text::has_cjk(&line), "{text}: answered {line}");
            }
        }
    }

    #[test]
    fn the_vacuum_starts_pauses_stops_docks_and_cleans_a_room() {
        let mut home = apartment();
        let v = "robot_vacuum";
        for (text, action, args) in [
            ("Start vacuuming", "start", json!({})),
            ("pause the vacuum", "pause", json!({})),
            ("Stop the vacuum", "stop", json!({})),
            (
                "return the robot vacuum to base",
                "return_to_base",
                json!({}),
            ),
            (
                "send the vacuum back to its dock",
                "return_to_base",
                json!({}),
            ),
            (
                "clean the kitchen",
                "clean_area",
                json!({"area": "kitchen"}),
            ),
            ("扫地机器人开始打扫", "start", json!({})),
            ("暂停扫地机器人", "pause", json!({})),
            ("停止扫地机器人", "stop", json!({})),
            ("让扫地机器人回基站", "return_to_base", json!({})),
            ("打扫厨房", "clean_area", json!({"area": "厨房"})),
        ] {
            does(&mut home, text, &[call(v, action, args)]);
        }
        assert_eq!(home.devices.get(v).unwrap().state["status"], "cleaning");
    }

    #[test]
    fn watering_the_garden_opens_its_water_never_the_gas() {
        let mut home = house();
        for text in [
            "water the garden",
            "给花园浇水",
            "turn on the garden irrigation",
        ] {
            does(
                &mut home,
                text,
                &[call("garden_irrigation", "open", json!({}))],
            );
        }
        assert_eq!(home.devices.get("gas_valve").unwrap().state["open"], false);
        // Without a room, every water valve and none of the gas.
        let t = turn(&mut home, "water the plants");
        assert_eq!(
            devices_of(&t),
            vec!["garden_irrigation", "mower_shed_water"]
        );
        // "irrigation" names the valve; the verb says what to do with it.
        let t = turn(&mut home, "close the garden irrigation");
        assert_eq!(
            calls(&t),
            vec![call("garden_irrigation", "close", json!({}))]
        );
    }

    #[test]
    fn a_lock_by_its_name_is_locked_after_a_confirmation() {
        let mut home = apartment();
        for text in [
            "Lock the front door lock",
            "lock the front door",
            "把门锁锁上",
        ] {
            does(
                &mut home,
                text,
                &[call("front_door_lock", "lock", json!({}))],
            );
        }
    }

    #[test]
    fn to_do_lists_add_check_off_and_remove_on_the_list_named() {
        let mut home = apartment();
        let list = "shopping_list";
        for (text, action, item) in [
            ("在购物清单里加上牛奶", "add_item", "牛奶"),
            ("把上海青加到购物清单", "add_item", "上海青"),
            ("add oat milk to my shopping list", "add_item", "oat milk"),
            (
                "check oat milk off my shopping list",
                "complete_item",
                "oat milk",
            ),
            ("删除购物清单里的牛奶", "remove_item", "牛奶"),
            ("把上海青从购物清单删掉", "remove_item", "上海青"),
        ] {
            does(
                &mut home,
                text,
                &[call(list, action, json!({"item": item}))],
            );
        }
        let state = &home.devices.get(list).unwrap().state;
        assert_eq!(state["items"], json!([]), "{state:?}");
        assert_eq!(state["done"], json!(["oat milk"]), "{state:?}");
    }

    #[test]
    fn floors_answer_to_upstairs_and_downstairs() {
        let mut home = house();
        for (text, devices) in [
            (
                "turn on the lights upstairs",
                vec!["bedroom_lamp", "bedroom_light"],
            ),
            ("打开楼下的灯", vec!["kitchen_light"]),
        ] {
            let t = turn(&mut home, text);
            assert_eq!(devices_of(&t), devices, "{text}");
            in_language(&t, text);
        }
    }

    #[test]
    fn relative_changes_start_from_the_setting_now() {
        let mut home = apartment();
        let t = turn(&mut home, "客厅灯暗一点");
        // Off: dimmer means the least light, not the robot going to the living room.
        assert_eq!(
            calls(&t),
            vec![call(
                "living_room_light",
                "set_brightness",
                json!({"level": 1})
            )]
        );
        in_language(&t, "客厅灯暗一点");
        turn(&mut home, "把客厅灯亮度调到50");
        for (text, call_) in [
            (
                "客厅灯亮一点",
                call("living_room_light", "set_brightness", json!({"level": 70})),
            ),
            (
                "make the living room light dimmer",
                call("living_room_light", "set_brightness", json!({"level": 50})),
            ),
            (
                "电视声音调小一点",
                call("living_room_tv", "set_volume", json!({"level": 20})),
            ),
            (
                "make the TV louder",
                call("living_room_tv", "set_volume", json!({"level": 30})),
            ),
            (
                "卧室暖和一点",
                call("bedroom_ac", "set_temperature", json!({"temperature": 27})),
            ),
            (
                "make the bedroom a bit cooler",
                call("bedroom_ac", "set_temperature", json!({"temperature": 26})),
            ),
        ] {
            does(&mut home, text, &[call_]);
        }
        // Two air conditioners and no room: asked, not guessed.
        let t = turn(&mut home, "a bit warmer");
        assert_eq!(t.intent, "clarify");
    }

    #[test]
    fn all_the_lights_in_a_room_are_all_of_them() {
        for text in [
            "把卧室的灯都关了",
            "卧室的灯全部打开",
            "turn off all the lights in the bedroom",
        ] {
            let mut home = apartment();
            let t = turn(&mut home, text);
            assert_eq!(
                devices_of(&t),
                vec!["bedroom_light", "bedside_lamp"],
                "{text}"
            );
            in_language(&t, text);
        }
    }

    /// Questions are answered from the devices' state and never write.
    #[test]
    fn questions_are_answered_from_state_and_change_nothing() {
        let mut home = house();
        turn(&mut home, "turn on the bedroom light");
        let before: Vec<Value> = home
            .devices
            .devices()
            .iter()
            .map(|d| json!(d.state))
            .collect();
        let answers: Vec<(&str, &str)> = vec![
            ("is the bedroom light on?", "Yes, the bedroom light is on."),
            ("is the kitchen light on", "No. The kitchen light is off"),
            ("which lights are on?", "bedroom light"),
            ("which lights are on upstairs?", "bedroom light"),
            ("how many lights are on?", "1 light(s) on: bedroom light."),
            (
                "are all the lights on?",
                "No: kitchen light and lamp not on.",
            ),
            ("are any lights on downstairs?", "No light is on."),
            ("卧室灯是不是开着的", "是的，卧室灯开着。"),
            ("有几个灯是开着的", "1个灯开着：卧室灯。"),
            ("哪些灯是开着的", "卧室灯"),
            ("what is the brightness of the bedroom light", "100%"),
        ];
        for (text, want) in answers {
            let t = turn(&mut home, text);
            assert!(t.confirm.is_none() && calls(&t).is_empty(), "{text}: {t:?}");
            let said = said(&t).join(" ");
            assert!(said.contains(want), "{text}: {said}");
            in_language(&t, text);
        }
        let after: Vec<Value> = home
            .devices
            .devices()
            .iter()
            .map(|d| json!(d.state))
            .collect();
        assert_eq!(before, after);
    }

    #[test]
    fn a_temperature_is_read_from_what_measures_it() {
        let mut home = apartment();
        let before = home.devices.get("bedroom_ac").unwrap().state.clone();
        for (text, want) in [
            ("what's the temperature in the bedroom", "26"),
            ("卧室温度是多少", "26"),
        ] {
            let t = turn(&mut home, text);
            assert!(calls(&t).is_empty(), "{text}");
            let said = said(&t).join(" ");
            assert!(said.contains(want), "{text}: {said}");
            in_language(&t, text);
        }
        assert_eq!(home.devices.get("bedroom_ac").unwrap().state, before);
    }
}
