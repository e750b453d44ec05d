//! Rule-based intent recognition for common commands, in Chinese and
//! English: local first, like Home Assistant's "prefer handling commands
//! locally". An unknown place or an utterance it cannot parse becomes a
//! clarifying question, never a failure.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::text::{self, is_cjk};
use crate::world::World;

/// Characters that glue a robot command's words (`e-stop`, `kitchen_2`).
const JOINERS: &[char] = &['-', '_'];

fn normalize(t: &str) -> String {
    text::words(t, JOINERS)
}

fn any(t: &str, phrases: &[&str]) -> bool {
    text::has_any(t, phrases, JOINERS)
}

/// What an utterance asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "intent", rename_all = "snake_case")]
pub enum Intent {
    /// Go to a zone.
    Goto {
        /// Canonical zone name.
        zone: String,
    },
    /// Patrol: the listed zones, or a route when none are listed.
    Patrol {
        /// Zones named in the utterance, in order.
        zones: Vec<String>,
    },
    /// Cancel the current task and stop the base.
    Stop,
    /// Pause the current task.
    Pause,
    /// Resume a paused task.
    Resume,
    /// Go and charge.
    Charge,
    /// Come back to the home zone.
    ComeBack,
    /// Cancel the current task.
    Cancel,
    /// Try a stuck task again.
    Retry,
    /// Emergency stop.
    Estop,
    /// The operator has seen the alert and deals with it.
    Acknowledge,
    /// A place was named that the world does not have.
    UnknownPlace {
        /// The words taken for a place.
        phrase: String,
    },
    /// Not understood.
    Unknown,
}

impl Intent {
    /// The intent's name as written in `intent` events.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Goto { .. } => "goto",
            Self::Patrol { .. } => "patrol",
            Self::Stop => "stop",
            Self::Pause => "pause",
            Self::Resume => "resume",
            Self::Charge => "charge",
            Self::ComeBack => "come_back",
            Self::Cancel => "cancel",
            Self::Retry => "retry",
            Self::Estop => "estop",
            Self::Acknowledge => "acknowledge",
            Self::UnknownPlace { .. } => "unknown_place",
            Self::Unknown => "unknown",
        }
    }

    /// The intent's arguments as written in `intent` events.
    pub fn args(&self) -> Value {
        match self {
            Self::Goto { zone } => json!({ "zone": zone }),
            Self::Patrol { zones } => json!({ "zones": zones }),
            Self::UnknownPlace { phrase } => json!({ "phrase": phrase }),
            _ => json!({}),
        }
    }
}

/// The robot's own commands in the grammar's template language (English).
pub const ROBOT_EN: &str = include_str!("../../../assets/intents/robot.en.yaml");
/// The robot's own commands in the grammar's template language (Chinese).
pub const ROBOT_ZH: &str = include_str!("../../../assets/intents/robot.zh.yaml");

/// The robot's grammars compiled with a world's zones, per world.
fn robot_matchers(world: &World) -> Option<std::sync::Arc<Vec<crate::intents::Matcher>>> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};

    use crate::intents::slots::{SlotList, TextList, TextValue};
    use crate::intents::{Grammar, Matcher};

    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Vec<Matcher>>>>> = OnceLock::new();
    let key = std::iter::once(world.name.clone())
        .chain(
            world
                .zones
                .iter()
                .map(|z| format!("{}={}", z.name, z.aliases.join("|"))),
        )
        .collect::<Vec<_>>()
        .join(";");
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(m) = cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&key)
    {
        return Some(m.clone());
    }
    let zones: Vec<TextValue> = world
        .zones
        .iter()
        .flat_map(|z| {
            let names = [z.name.clone(), z.name.replace('_', " ")]
                .into_iter()
                .chain(z.aliases.iter().cloned());
            names
                .map(|n| TextValue::plain(&n, json!(z.name), None))
                .collect::<Vec<_>>()
        })
        .collect();
    let mut matchers = Vec::new();
    for (text, file) in [
        (ROBOT_EN, "assets/intents/robot.en.yaml"),
        (ROBOT_ZH, "assets/intents/robot.zh.yaml"),
    ] {
        // The embedded files are parsed by a unit test: an error here is a build defect.
        let grammar = Grammar::from_yaml(text, file).ok()?;
        let zone_list = SlotList::Text(TextList::new(zones.clone()));
        matchers.push(Matcher::new(Arc::new(grammar), vec![("zone".into(), zone_list)]).ok()?);
    }
    let matchers = Arc::new(matchers);
    cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(key, matchers.clone());
    Some(matchers)
}

/// The robot's command in `text` by its grammar (`assets/intents/`), when a
/// template matches the whole utterance; `None` otherwise (the rules and the
/// home get it).
pub fn hear(text: &str, world: &World) -> Option<Intent> {
    let matchers = robot_matchers(world)?;
    let cjk = text.chars().any(is_cjk);
    let r = matchers
        .iter()
        .filter(|m| m.grammar().language.starts_with("zh") == cjk)
        .find_map(|m| m.recognize(text, &serde_json::Map::new()))?;
    let zones: Vec<String> = r
        .slots
        .iter()
        .filter(|s| s.name == "zone")
        .filter_map(|s| s.value.as_str().map(str::to_string))
        .fold(Vec::new(), |mut v, z| {
            if !v.contains(&z) {
                v.push(z);
            }
            v
        });
    Some(match r.intent.as_str() {
        "RobotGoto" => Intent::Goto {
            zone: zones.into_iter().next()?,
        },
        "RobotPatrol" => Intent::Patrol { zones },
        "RobotStop" => Intent::Stop,
        "RobotPause" => Intent::Pause,
        "RobotResume" => Intent::Resume,
        "RobotCharge" => Intent::Charge,
        "RobotComeBack" => Intent::ComeBack,
        "RobotCancel" => Intent::Cancel,
        "RobotRetry" => Intent::Retry,
        "RobotEstop" => Intent::Estop,
        "RobotAcknowledge" => Intent::Acknowledge,
        _ => return None,
    })
}

const ESTOP: &[&str] = &[
    "急停",
    "紧急停止",
    "emergency stop",
    "e-stop",
    "estop",
    "e stop",
];
const ACKNOWLEDGE: &[&str] = &[
    "收到",
    "知道了",
    "已处理",
    "确认警报",
    "解除警报",
    "acknowledge",
    "acknowledged",
    "ack",
    "alert handled",
    "all clear",
];
const PATROL: &[&str] = &["巡逻", "巡检", "巡查", "patrol"];
const CHARGE: &[&str] = &[
    "去充电",
    "回去充电",
    "充电",
    "go charge",
    "go and charge",
    "recharge",
    "charge",
];
const COME_BACK: &[&str] = &[
    "回来",
    "过来",
    "回家",
    "come back",
    "come here",
    "return home",
    "go home",
];
const RETRY: &[&str] = &["重试", "再试", "再来一次", "retry", "try again"];
const CANCEL: &[&str] = &[
    "取消",
    "算了",
    "不用了",
    "cancel",
    "abort",
    "never mind",
    "forget it",
];
const PAUSE: &[&str] = &["暂停", "等一下", "等等", "pause", "hold on", "wait"];
const RESUME: &[&str] = &["继续", "恢复", "resume", "continue", "go on", "carry on"];
const STOP: &[&str] = &["停下", "停止", "别动", "停", "stop", "halt", "freeze"];
const GOTO_EN: &[&str] = &[
    "navigate to",
    "go to",
    "goto",
    "move to",
    "head to",
    "drive to",
    "walk to",
    "go into",
    "go",
];
const GOTO_ZH: &[&str] = &["前往", "回到", "走到", "去", "到"];
const FILLERS: &[&str] = &[
    "please", "请", "帮我", "你", "the", "now", "一下", "吧", "去", "看看", "里", "那里", "那边",
];

/// Every zone named in `text`, in order of appearance (longest alias wins).
fn zones_in(text: &str, world: &World) -> Vec<String> {
    let mut found: Vec<(usize, usize, String)> = Vec::new();
    for zone in &world.zones {
        let names = std::iter::once(zone.name.clone())
            .chain(std::iter::once(zone.name.replace('_', " ")))
            .chain(zone.aliases.iter().map(|a| normalize(a)));
        for name in names {
            if name.is_empty() {
                continue;
            }
            let hit = text::find(text, &name, JOINERS);
            if let Some(pos) = hit {
                found.push((pos, name.len(), zone.name.clone()));
            }
        }
    }
    // Earliest first; at one position the longest alias.
    found.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut zones = Vec::new();
    let mut covered_until = 0;
    for (pos, len, zone) in found {
        if pos < covered_until {
            continue;
        }
        covered_until = pos + len;
        if !zones.contains(&zone) {
            zones.push(zone);
        }
    }
    zones
}

/// The words after each go-to verb found, fillers stripped (empty when none).
fn goto_phrases(text: &str) -> Vec<String> {
    let mut phrases = Vec::new();
    for verb in GOTO_EN {
        if let Some(pos) = text::find(text, verb, JOINERS) {
            phrases.push(strip_fillers(&text[pos + verb.len()..]));
        }
    }
    for verb in GOTO_ZH {
        if let Some(pos) = text.find(verb) {
            phrases.push(strip_fillers(&text[pos + verb.len()..]));
        }
    }
    phrases
}

fn strip_fillers(text: &str) -> String {
    let mut t = text.trim().to_string();
    loop {
        let before = t.clone();
        for f in FILLERS {
            if f.chars().any(is_cjk) {
                t = t
                    .trim_start_matches(f)
                    .trim_end_matches(f)
                    .trim()
                    .to_string();
            } else {
                let words: Vec<&str> = t.split_whitespace().collect();
                let keep: Vec<&str> = words.into_iter().filter(|w| w != f).collect();
                t = keep.join(" ");
            }
        }
        if t == before {
            return t;
        }
    }
}

/// Parses an utterance against the world's zones.
pub fn parse_intent(utterance: &str, world: &World) -> Intent {
    let text = normalize(utterance);
    if text.is_empty() {
        return Intent::Unknown;
    }
    if any(&text, ESTOP) {
        return Intent::Estop;
    }
    if any(&text, ACKNOWLEDGE) {
        return Intent::Acknowledge;
    }
    if any(&text, PATROL) {
        return Intent::Patrol {
            zones: zones_in(&text, world),
        };
    }
    if any(&text, RETRY) {
        return Intent::Retry;
    }
    if any(&text, CANCEL) {
        return Intent::Cancel;
    }
    if any(&text, CHARGE) {
        return Intent::Charge;
    }
    if any(&text, COME_BACK) {
        return Intent::ComeBack;
    }
    if any(&text, RESUME) {
        return Intent::Resume;
    }
    if any(&text, PAUSE) {
        return Intent::Pause;
    }
    let phrases = goto_phrases(&text);
    if let Some(zone) = phrases
        .iter()
        .find_map(|p| zones_in(p, world).into_iter().next())
    {
        return if zone == world.charger_zone {
            Intent::Charge
        } else {
            Intent::Goto { zone }
        };
    }
    if let Some(phrase) = phrases.into_iter().find(|p| !p.is_empty()) {
        return Intent::UnknownPlace { phrase };
    }
    if any(&text, STOP) {
        return Intent::Stop;
    }
    // A bare place name ("厨房", "kitchen") means go there.
    match zones_in(&text, world).as_slice() {
        [z] if normalize(&text).chars().count() <= 20 => Intent::Goto { zone: z.clone() },
        _ => Intent::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world() -> World {
        World::builtin("apartment").unwrap()
    }

    fn goto(zone: &str) -> Intent {
        Intent::Goto { zone: zone.into() }
    }

    #[test]
    fn the_robot_grammar_hears_its_commands_in_both_languages() {
        for (file, text) in [("robot.en.yaml", ROBOT_EN), ("robot.zh.yaml", ROBOT_ZH)] {
            crate::intents::Grammar::from_yaml(text, file).unwrap_or_else(|e| panic!("{e}"));
        }
        let w = world();
        let cases = [
            ("Go to the kitchen, please.", goto("kitchen")),
            ("去厨房", goto("kitchen")),
            ("前往客厅吧", goto("living_room")),
            (
                "patrol the kitchen and the bedroom",
                Intent::Patrol {
                    zones: vec!["kitchen".into(), "bedroom".into()],
                },
            ),
            ("巡逻一次", Intent::Patrol { zones: vec![] }),
            ("stop", Intent::Stop),
            ("停下来", Intent::Stop),
            ("pause", Intent::Pause),
            ("继续", Intent::Resume),
            ("go charge", Intent::Charge),
            ("去充电", Intent::Charge),
            ("come back", Intent::ComeBack),
            ("cancel that", Intent::Cancel),
            ("重试", Intent::Retry),
            ("emergency stop", Intent::Estop),
            ("急停", Intent::Estop),
            ("acknowledge", Intent::Acknowledge),
            ("收到", Intent::Acknowledge),
        ];
        for (text, want) in cases {
            assert_eq!(hear(text, &w), Some(want), "{text}");
        }
        for other in [
            "turn on the kitchen light",
            "打开客厅灯",
            "go to the moon",
            "stop the vacuum",
        ] {
            assert_eq!(hear(other, &w), None, "{other}");
        }
    }

    #[test]
    fn go_to_a_place_in_chinese_and_english() {
        let w = world();
        for (text, zone) in [
            ("去厨房", "kitchen"),
            ("到卧室去", "bedroom"),
            ("请去客厅看看", "living_room"),
            ("前往玄关", "entrance"),
            ("去门外", "outside"),
            ("go to the kitchen", "kitchen"),
            ("Go to the living room, please.", "living_room"),
            ("navigate to the bedroom", "bedroom"),
            ("head to the front door", "entrance"),
            ("go outside", "outside"),
            ("厨房", "kitchen"),
            ("kitchen", "kitchen"),
        ] {
            assert_eq!(parse_intent(text, &w), goto(zone), "{text}");
        }
    }

    #[test]
    fn control_words_in_both_languages() {
        let w = world();
        for (text, intent) in [
            ("停下", Intent::Stop),
            ("stop", Intent::Stop),
            ("暂停", Intent::Pause),
            ("pause", Intent::Pause),
            ("继续", Intent::Resume),
            ("resume", Intent::Resume),
            ("go on", Intent::Resume),
            ("去充电", Intent::Charge),
            ("go charge", Intent::Charge),
            ("go to the dock", Intent::Charge),
            ("回来", Intent::ComeBack),
            ("come back", Intent::ComeBack),
            ("取消", Intent::Cancel),
            ("cancel", Intent::Cancel),
            ("重试", Intent::Retry),
            ("try again", Intent::Retry),
            ("急停", Intent::Estop),
            ("emergency stop!", Intent::Estop),
        ] {
            assert_eq!(parse_intent(text, &w), intent, "{text}");
        }
    }

    #[test]
    fn patrols_keep_the_zones_in_the_order_said() {
        let w = world();
        assert_eq!(parse_intent("巡逻", &w), Intent::Patrol { zones: vec![] });
        assert_eq!(
            parse_intent("巡逻一次厨房和客厅", &w),
            Intent::Patrol {
                zones: vec!["kitchen".into(), "living_room".into()]
            }
        );
        assert_eq!(
            parse_intent("patrol the bedroom and the kitchen", &w),
            Intent::Patrol {
                zones: vec!["bedroom".into(), "kitchen".into()]
            }
        );
    }

    #[test]
    fn unknown_places_and_gibberish_are_not_guessed() {
        let w = world();
        assert_eq!(
            parse_intent("去车库", &w),
            Intent::UnknownPlace {
                phrase: "车库".into()
            }
        );
        assert_eq!(
            parse_intent("go to the garage", &w),
            Intent::UnknownPlace {
                phrase: "garage".into()
            }
        );
        assert_eq!(
            parse_intent("what is the meaning of life", &w),
            Intent::Unknown
        );
        assert_eq!(parse_intent("  ", &w), Intent::Unknown);
    }
}
