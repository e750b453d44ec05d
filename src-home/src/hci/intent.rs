//! Home intents, by rules, in Chinese and English (local first, like Home
//! Assistant's sentence matching): an utterance becomes device calls and
//! queries, a scene, or a clarifying question — or `None` when it is not
//! about the home (then the robot's own intents get it).
//!
//! An utterance is split into clauses ("笑一个再把亮度调到100", "turn on the
//! lamp and is the kettle on?"); each clause names devices (by name or alias,
//! a kind word with a room, or "it"/"它" for the last ones) and a verb or a
//! question. A name that fits several devices is never guessed: it becomes a
//! clarifying question listing them.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::session::{Pending, Session};
use crate::text::{self, lower_folded as normalize};

fn find_all(t: &str, phrase: &str) -> Vec<usize> {
    text::find_all(t, phrase, &[])
}

fn has(t: &str, phrase: &str) -> bool {
    text::has(t, phrase, &[])
}
pub use super::verb::Verb;
use crate::devices::{Device, DeviceKind, DeviceWorld, Scene};
use crate::lines::{self, Lang};

/// One resolved step of a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// A device call.
    Control {
        /// Device id.
        device: String,
        /// Capability.
        action: String,
        /// Its arguments.
        args: Value,
    },
    /// A question about a device's state.
    Query {
        /// Device id.
        device: String,
    },
}

impl Step {
    /// The device call this step makes, if it makes one: (device, action, args).
    pub fn call(&self) -> Option<(String, String, Value)> {
        match self {
            Step::Control {
                device,
                action,
                args,
            } => Some((device.clone(), action.clone(), args.clone())),
            Step::Query { .. } => None,
        }
    }
}

/// What an utterance asks of the home.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Understood {
    /// Device calls and queries, in order.
    Steps {
        /// The steps.
        steps: Vec<Step>,
    },
    /// A scene by name.
    Scene {
        /// Its name.
        name: String,
    },
    /// A question back to the user.
    Clarify {
        /// The question.
        question: String,
        /// The candidate device ids.
        candidates: Vec<String>,
        /// What is to be done with the one meant (`None`: a question about it).
        verb: Option<Verb>,
    },
    /// A device was named but cannot do what was asked.
    Cannot {
        /// What to say.
        message: String,
    },
}

const SPLITTERS: &[&str] = &[
    "，",
    ",",
    "。",
    "；",
    ";",
    "？",
    "?",
    "！",
    "!",
    "然后",
    "再把",
    "再",
    "并且",
    "顺便",
    "同时",
    " and then ",
    " then ",
    " and ",
    " also ",
];
const QUESTION: &[&str] = &[
    "吗",
    "么",
    "嘛",
    "是不是",
    "有没有",
    "多少",
    "状态",
    "怎么样",
    "在烧",
    "开着",
    "关着",
    "锁着",
    "锁了没",
    "is the",
    "are the",
    "is it",
    "is my",
    "what",
    "how",
    "whether",
    "did ",
    "check the",
    "status",
];
const POLITE: &[&str] = &[
    "能",
    "可以",
    "帮",
    "请",
    "can you",
    "could you",
    "would you",
    "please",
];
const PRONOUNS: &[&str] = &[
    "它们", "它", "这个", "那个", "them", "it", "that one", "this one", "that",
];
const ALL: &[&str] = &["所有", "全部", "都", "all the", "all", "every", "both"];

/// Phrases for the robot's face: `(phrase, expression)`.
const EXPRESSIONS: &[(&str, &str)] = &[
    ("笑一个", "smile"),
    ("笑", "smile"),
    ("smile", "smile"),
    ("哭", "cry"),
    ("cry", "cry"),
    ("惊讶", "amazed"),
    ("look amazed", "amazed"),
    ("闭眼", "close_eyes"),
    ("close your eyes", "close_eyes"),
];

/// Verb phrases, the longest match in a clause wins.
fn verbs() -> Vec<(&'static str, Verb)> {
    let mut v = vec![
        ("打开", Verb::On),
        ("开启", Verb::On),
        ("开一下", Verb::On),
        ("点亮", Verb::On),
        ("拉开", Verb::On),
        ("turn on", Verb::On),
        ("switch on", Verb::On),
        ("power on", Verb::On),
        ("open", Verb::On),
        ("开", Verb::On),
        ("关掉", Verb::Off),
        ("关闭", Verb::Off),
        ("关上", Verb::Off),
        ("关了", Verb::Off),
        ("拉上", Verb::Off),
        ("熄灭", Verb::Off),
        ("turn off", Verb::Off),
        ("switch off", Verb::Off),
        ("power off", Verb::Off),
        ("shut", Verb::Off),
        ("it off", Verb::Off),
        ("them off", Verb::Off),
        ("it on", Verb::On),
        ("them on", Verb::On),
        ("close", Verb::Off),
        ("关", Verb::Off),
        ("锁门", Verb::Lock),
        ("锁上", Verb::Lock),
        ("上锁", Verb::Lock),
        ("lock", Verb::Lock),
        ("开锁", Verb::Unlock),
        ("解锁", Verb::Unlock),
        ("开门", Verb::Unlock),
        ("unlock", Verb::Unlock),
        ("开始打扫", Verb::Start),
        ("开始扫地", Verb::Start),
        ("开始清扫", Verb::Start),
        ("开始清洁", Verb::Start),
        ("去扫地", Verb::Start),
        ("开始", Verb::Start),
        ("启动", Verb::Start),
        ("start", Verb::Start),
        ("暂停", Verb::Pause),
        ("pause", Verb::Pause),
        ("停止", Verb::Stop),
        ("停下", Verb::Stop),
        ("stop", Verb::Stop),
        ("回基站", Verb::Dock),
        ("回充电座", Verb::Dock),
        ("回去充电", Verb::Dock),
        ("回充", Verb::Dock),
        ("return to base", Verb::Dock),
        ("return to the base", Verb::Dock),
        ("return to its base", Verb::Dock),
        ("return to the dock", Verb::Dock),
        ("return to its dock", Verb::Dock),
        ("back to base", Verb::Dock),
        ("back to the dock", Verb::Dock),
        ("back to its dock", Verb::Dock),
        ("dock", Verb::Dock),
        ("water the", Verb::Water),
        ("water my", Verb::Water),
        ("irrigate", Verb::Water),
        ("浇水", Verb::Water),
        ("浇花", Verb::Water),
        ("浇灌", Verb::Water),
        ("灌溉", Verb::Water),
        ("洒水", Verb::Water),
        ("布防", Verb::Arm),
        ("arm", Verb::Arm),
        ("撤防", Verb::Disarm),
        ("disarm", Verb::Disarm),
    ];
    v.extend(
        EXPRESSIONS
            .iter()
            .map(|&(phrase, name)| (phrase, Verb::Expression { name: name.into() })),
    );
    v.sort_by_key(|(p, _)| std::cmp::Reverse(p.chars().count()));
    v
}

fn split_clauses(text: &str) -> Vec<String> {
    let mut parts = vec![format!(" {text} ")];
    for s in SPLITTERS {
        parts = parts
            .iter()
            .flat_map(|p| p.split(s).map(str::to_string).collect::<Vec<_>>())
            .collect();
    }
    parts
        .into_iter()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

/// A number in digits or simple Chinese numerals (up to 100).
fn number_in(text: &str) -> Option<i64> {
    let digits: String = text
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    if let Ok(n) = digits.parse() {
        return Some(n);
    }
    let cn = |c: char| {
        "零一二三四五六七八九"
            .chars()
            .position(|d| d == c)
            .map(|p| p as i64)
    };
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c == '百' && i > 0 && chars[i - 1] == '一' {
            return Some(100);
        }
        if c == '十' {
            let tens = if i > 0 {
                cn(chars[i - 1]).unwrap_or(1)
            } else {
                1
            };
            let ones = chars.get(i + 1).and_then(|&c| cn(c)).unwrap_or(0);
            return Some(tens * 10 + ones);
        }
    }
    None
}

fn level_verb(clause: &str) -> Option<Verb> {
    let n = number_in(clause)?;
    // "亮度" (brightness) ends in 度 (degree) too.
    let unlit = clause.replace("亮度", "");
    let temp = ["度", "degree", "°", "temperature"]
        .iter()
        .any(|w| unlit.contains(w));
    let level = [
        "亮度",
        "brightness",
        "调到",
        "调成",
        "set",
        "%",
        "百分之",
        "percent",
        "位置",
        "position",
    ]
    .iter()
    .any(|w| clause.contains(w));
    if temp {
        Some(Verb::Temperature { value: n })
    } else if level {
        Some(Verb::Level { value: n })
    } else {
        None
    }
}

/// Changes from the setting a device has now: `(phrases, setting, by)`.
const NUDGES: &[(&[&str], &str, i64)] = &[
    (
        &[
            "brighter",
            "brighten",
            "more light",
            "亮一点",
            "亮一些",
            "亮点",
            "调亮",
            "更亮",
            "亮度调高",
            "调高亮度",
            "亮度高一点",
            "亮度大一点",
        ],
        "brightness",
        20,
    ),
    (
        &[
            "dimmer",
            "dim",
            "darker",
            "less bright",
            "暗一点",
            "暗一些",
            "暗点",
            "调暗",
            "更暗",
            "亮度调低",
            "调低亮度",
            "亮度低一点",
            "亮度小一点",
        ],
        "brightness",
        -20,
    ),
    (
        &[
            "louder",
            "volume up",
            "turn up the volume",
            "turn the volume up",
            "raise the volume",
            "increase the volume",
            "大声",
            "声音大",
            "声音调大",
            "调大声音",
            "音量调高",
            "调高音量",
            "音量大",
            "音量调大",
        ],
        "volume",
        10,
    ),
    (
        &[
            "quieter",
            "softer",
            "less loud",
            "volume down",
            "turn down the volume",
            "turn the volume down",
            "lower the volume",
            "decrease the volume",
            "小声",
            "声音小",
            "声音调小",
            "调小声音",
            "音量调低",
            "调低音量",
            "音量小",
            "音量调小",
        ],
        "volume",
        -10,
    ),
    (
        &[
            "warmer",
            "hotter",
            "heat up",
            "暖和",
            "暖一点",
            "热一点",
            "温度调高",
            "调高温度",
            "升温",
            "温度高一点",
        ],
        "temperature",
        1,
    ),
    (
        &[
            "cooler",
            "colder",
            "cool down",
            "凉快",
            "凉一点",
            "冷一点",
            "温度调低",
            "调低温度",
            "降温",
            "温度低一点",
        ],
        "temperature",
        -1,
    ),
    (
        &["faster", "风大", "风速调高", "调高风速", "风速大一点"],
        "speed",
        20,
    ),
    (
        &["slower", "风小", "风速调低", "调低风速", "风速小一点"],
        "speed",
        -20,
    ),
];

/// A change from the setting a device has now, when the clause asks for
/// one ("客厅灯暗一点", "turn the TV down a bit", "a bit warmer").
fn nudge_in(clause: &str) -> Option<Verb> {
    NUDGES
        .iter()
        .flat_map(|(phrases, setting, by)| phrases.iter().map(move |p| (*p, *setting, *by)))
        .filter(|(p, _, _)| has(clause, p))
        .max_by_key(|(p, _, _)| p.chars().count())
        .map(|(_, setting, by)| Verb::Nudge {
            setting: setting.to_string(),
            by,
        })
}

/// The verb of a clause, if it has one.
fn verb_in(clause: &str) -> Option<Verb> {
    if let Some(v) = level_verb(clause) {
        return Some(v);
    }
    if let Some(v) = nudge_in(clause) {
        return Some(v);
    }
    verbs()
        .into_iter()
        .find(|(p, _)| has(clause, p))
        .map(|(_, v)| v)
}

/// A device mention: where it was found and every device it fits.
#[derive(Debug)]
struct Mention {
    start: usize,
    end: usize,
    devices: Vec<String>,
}

fn mentions(clause: &str, world: &DeviceWorld) -> Vec<Mention> {
    let mut hits: Vec<(usize, usize, String)> = Vec::new();
    for d in world.devices() {
        for name in d.names() {
            for start in find_all(clause, &name) {
                hits.push((start, start + name.len(), d.id.clone()));
            }
        }
    }
    // Longest first; a shorter hit inside a longer one is dropped, the same
    // span naming several devices is one ambiguous mention.
    hits.sort_by_key(|(s, e, _)| (std::cmp::Reverse(e - s), *s));
    let mut out: Vec<Mention> = Vec::new();
    for (s, e, id) in hits {
        if let Some(m) = out.iter_mut().find(|m| m.start == s && m.end == e) {
            if !m.devices.contains(&id) {
                m.devices.push(id);
            }
            continue;
        }
        if out.iter().any(|m| s < m.end && m.start < e) {
            continue;
        }
        out.push(Mention {
            start: s,
            end: e,
            devices: vec![id],
        });
    }
    out.sort_by_key(|m| m.start);
    out
}

fn room_in(clause: &str, world: &DeviceWorld) -> Option<String> {
    world
        .rooms()
        .iter()
        .find(|r| {
            std::iter::once(r.id.replace('_', " "))
                .chain(std::iter::once(r.name.to_lowercase()))
                .chain(r.aliases.iter().map(|a| a.to_lowercase()))
                .any(|n| has(clause, &n))
        })
        .map(|r| r.id.clone())
}

fn kind_in(clause: &str) -> Option<DeviceKind> {
    let words: &[(&str, DeviceKind)] = &[
        ("灯", DeviceKind::Light),
        ("lights", DeviceKind::Light),
        ("light", DeviceKind::Light),
        ("lamps", DeviceKind::Light),
        ("窗帘", DeviceKind::Curtain),
        ("curtains", DeviceKind::Curtain),
        ("curtain", DeviceKind::Curtain),
        ("blinds", DeviceKind::Curtain),
        ("空调", DeviceKind::Climate),
        ("air conditioners", DeviceKind::Climate),
        ("扫地机", DeviceKind::Vacuum),
        ("vacuum", DeviceKind::Vacuum),
        ("vacuuming", DeviceKind::Vacuum),
        ("cleaning", DeviceKind::Vacuum),
        ("打扫", DeviceKind::Vacuum),
        ("扫地", DeviceKind::Vacuum),
        ("tv", DeviceKind::MediaPlayer),
        ("电视", DeviceKind::MediaPlayer),
        ("speaker", DeviceKind::MediaPlayer),
        ("音箱", DeviceKind::MediaPlayer),
        ("music", DeviceKind::MediaPlayer),
        ("音乐", DeviceKind::MediaPlayer),
        ("fan", DeviceKind::Fan),
        ("风扇", DeviceKind::Fan),
    ];
    words.iter().find(|(w, _)| has(clause, w)).map(|(_, k)| *k)
}

/// The capability `verb` means on `device`, with its arguments.
pub fn capability_for(device: &Device, verb: &Verb) -> Option<(String, Value)> {
    use DeviceKind as K;
    let (name, args) = match (verb, device.kind) {
        (Verb::On, K::Curtain | K::Valve) | (Verb::Water, K::Valve) => ("open", json!({})),
        (Verb::Off, K::Curtain | K::Valve) => ("close", json!({})),
        (Verb::On | Verb::Unlock, K::Lock) => ("unlock", json!({})),
        (Verb::Off | Verb::Lock, K::Lock) => ("lock", json!({})),
        (Verb::On | Verb::Arm, K::Alarm) => ("arm", json!({})),
        (Verb::Off | Verb::Disarm, K::Alarm) => ("disarm", json!({})),
        (Verb::On | Verb::Water, _) => ("turn_on", json!({})),
        (Verb::Off, _) => ("turn_off", json!({})),
        (Verb::Start, _) => first_of(device, &["start", "play", "turn_on"])?,
        (Verb::Pause, _) => first_of(device, &["pause"])?,
        (Verb::Stop, _) => first_of(device, &["stop", "pause", "turn_off"])?,
        (Verb::Dock, _) => first_of(device, &["return_to_base"])?,
        (Verb::Nudge { setting, by }, _) => return nudged(device, setting, *by),
        (Verb::Level { value }, K::Curtain) => ("set_position", json!({ "position": value })),
        (Verb::Level { value }, _) => ("set_brightness", json!({ "level": value })),
        (Verb::Temperature { value }, _) => ("set_temperature", json!({ "temperature": value })),
        (Verb::Expression { name }, _) => ("set_expression", json!({ "expression": name })),
        (Verb::Call { action, args }, _) => (action.as_str(), args.clone()),
        _ => return None,
    };
    device.capability(name).map(|_| (name.to_string(), args))
}

/// The first of `capabilities` the device has, without arguments.
fn first_of(device: &Device, capabilities: &[&'static str]) -> Option<(&'static str, Value)> {
    capabilities
        .iter()
        .find(|c| device.capability(c).is_some())
        .map(|c| (*c, json!({})))
}

/// A number in the device's state under the first of `keys` there.
fn state_number(device: &Device, keys: &[&str]) -> Option<f64> {
    keys.iter()
        .find_map(|k| device.state.get(*k).and_then(Value::as_f64))
}

/// The call that moves `setting` by `by` from where the device has it now
/// (a light that is off starts from dark; Home Assistant's brightness is
/// 0–255 and its volume 0–1), kept within the capability's range.
fn nudged(device: &Device, setting: &str, by: i64) -> Option<(String, Value)> {
    let off = device.state.get("on") == Some(&Value::Bool(false))
        || device.state.get("state").and_then(Value::as_str) == Some("off");
    let (capability, arg, now, low, high) = match setting {
        "brightness" => {
            let now = if off {
                0.0
            } else if device.state.contains_key("state") {
                state_number(device, &["brightness"]).map_or(100.0, |b| b * 100.0 / 255.0)
            } else {
                state_number(device, &["brightness", "level"]).unwrap_or(100.0)
            };
            ("set_brightness", "level", now, 1.0, 100.0)
        }
        "volume" => {
            let now = state_number(device, &["volume"])
                .or_else(|| state_number(device, &["volume_level"]).map(|v| v * 100.0))
                .unwrap_or(50.0);
            ("set_volume", "level", now, 0.0, 100.0)
        }
        "temperature" => {
            let now = state_number(device, &["target_c", "temperature", "current_temperature"])?;
            ("set_temperature", "temperature", now, f64::MIN, f64::MAX)
        }
        "speed" => {
            let now = if off {
                0.0
            } else {
                state_number(device, &["speed", "percentage"]).unwrap_or(50.0)
            };
            ("set_speed", "level", now, 0.0, 100.0)
        }
        "position" => {
            let now = state_number(device, &["position", "current_position"]).unwrap_or(0.0);
            ("set_position", "position", now, 0.0, 100.0)
        }
        _ => return None,
    };
    let cap = device.capability(capability)?;
    // The schema's own bounds, when it has them (an air conditioner's 16–30 °C).
    let bound = |key: &str, fallback: f64| {
        cap.args_schema
            .pointer(&format!("/properties/{arg}/{key}"))
            .and_then(Value::as_f64)
            .unwrap_or(fallback)
    };
    // A light dimmed stays on, at its least.
    let value = (now + by as f64)
        .round()
        .clamp(bound("minimum", low).max(low), bound("maximum", high));
    Some((capability.to_string(), json!({ arg: value as i64 })))
}

/// Which candidates an answer to a clarifying question picks.
fn answer_pick(clause: &str, pending: &Pending, world: &DeviceWorld) -> Vec<String> {
    if ALL.iter().any(|w| has(clause, w)) || clause.contains("两个") {
        return pending.candidates.clone();
    }
    let ordinals: &[(&[&str], usize)] = &[
        (&["第一", "first", "1"], 0),
        (&["第二", "second", "2"], 1),
        (&["第三", "third", "3"], 2),
    ];
    for (words, i) in ordinals {
        if words.iter().any(|w| has(clause, w))
            && let Some(id) = pending.candidates.get(*i)
        {
            return vec![id.clone()];
        }
    }
    mentions(clause, world)
        .into_iter()
        .flat_map(|m| m.devices)
        .filter(|id| pending.candidates.contains(id))
        .collect()
}

fn names(world: &DeviceWorld, ids: &[String], lang: Lang) -> String {
    let names: Vec<String> = ids
        .iter()
        .map(|id| {
            let name = super::verb::name_of(world, id, lang);
            lines::line(lang, "the", &[("name", &name)])
        })
        .collect();
    lines::list(lang, &names, true)
}

/// The clarifying question for `candidates`, in `lang`.
pub fn clarify(
    world: &DeviceWorld,
    candidates: Vec<String>,
    verb: Option<Verb>,
    lang: Lang,
) -> Understood {
    Understood::Clarify {
        question: lines::line(
            lang,
            "which_one",
            &[("candidates", &names(world, &candidates, lang))],
        ),
        candidates,
        verb,
    }
}

/// Understands `text` against the home, the scenes and the session; `None`
/// when it is not about the home.
pub fn understand(
    text: &str,
    world: &DeviceWorld,
    scenes: &[Scene],
    session: &Session,
) -> Option<Understood> {
    let lang = Lang::of(text);
    let text = normalize(text);
    if let Some(scene) = scene_in(&text, scenes) {
        return Some(Understood::Scene {
            name: scene.name.clone(),
        });
    }
    if let Some(pending) = &session.pending
        && let Some(answer) = answer_to(&text, pending, world, lang)
    {
        return Some(answer);
    }
    let mut steps = Vec::new();
    let mut last_verb: Option<Verb> = None;
    let mut last_devices: Vec<String> = session.last_devices.clone();
    for clause in split_clauses(&text) {
        let question = QUESTION.iter().any(|q| has(&clause, q))
            && !(POLITE.iter().any(|p| has(&clause, p)) && verb_in(&clause).is_some());
        let verb = if question {
            None
        } else {
            verb_in(&clause).or_else(|| last_verb.clone())
        };
        if !question && verb.is_none() {
            // A device named without a verb or a question ("去门外") is not
            // about the device.
            continue;
        }
        let asked = Clause {
            text: &clause,
            verb: verb.as_ref(),
            question,
        };
        let targets = match targets_of(&asked, world, &last_devices, lang) {
            Targets::Devices(targets) => targets,
            Targets::Ask(which) => return Some(which),
            Targets::Skip => continue,
        };
        if let Err(message) = push_steps(&mut steps, &asked, &targets, world, lang) {
            return Some(Understood::Cannot { message });
        }
        last_verb = verb;
        last_devices = targets;
    }
    if steps.is_empty() {
        return None;
    }
    Some(Understood::Steps { steps })
}

/// The scene `text` names: by an alias, or as "<name> scene".
fn scene_in<'s>(text: &str, scenes: &'s [Scene]) -> Option<&'s Scene> {
    scenes.iter().find(|scene| {
        scene.aliases.iter().any(|a| has(text, &a.to_lowercase()))
            || has(text, &format!("{} scene", scene.name))
    })
}

/// `text` as an answer to the clarifying question just asked: the steps
/// for the candidates it picks; `None` when it picks none, or says
/// another verb.
fn answer_to(text: &str, pending: &Pending, world: &DeviceWorld, lang: Lang) -> Option<Understood> {
    let picked = answer_pick(text, pending, world);
    if picked.is_empty() || verb_in(text).is_some_and(|v| Some(&v) != pending.verb.as_ref()) {
        return None;
    }
    let steps = picked
        .iter()
        .filter_map(|id| step_for(world, id, pending.verb.as_ref(), lang))
        .collect::<Result<Vec<_>, _>>();
    Some(match steps {
        Ok(steps) => Understood::Steps { steps },
        Err(message) => Understood::Cannot { message },
    })
}

/// One clause being understood: its words, its verb (said, or carried
/// over from the clause before) and whether it asks.
struct Clause<'a> {
    /// The clause's words.
    text: &'a str,
    /// What is to be done (`None`: a question).
    verb: Option<&'a Verb>,
    /// Whether it asks about the devices.
    question: bool,
}

/// Whom a clause is about.
enum Targets {
    /// These devices.
    Devices(Vec<String>),
    /// A name that fits several devices: ask which.
    Ask(Understood),
    /// Nothing here: the clause is not about the home.
    Skip,
}

/// The devices `clause` is about: named (the ones in the room said, when a
/// name fits several), of a kind, referred back to (`last_devices`), or
/// the robot's own screen and face.
fn targets_of(
    clause: &Clause<'_>,
    world: &DeviceWorld,
    last_devices: &[String],
    lang: Lang,
) -> Targets {
    let text = clause.text;
    let all = || ALL.iter().any(|w| has(text, w));
    let room = room_in(text, world);
    if clause.verb == Some(&Verb::Water) {
        return watering(room.as_deref(), world);
    }
    let mut targets: Vec<String> = Vec::new();
    for m in mentions(text, world) {
        let mut ids = in_room_if_several(m.devices, room.as_deref(), world);
        // "把卧室的灯都关了": one device named with "all" means every one
        // of its kind in its room.
        if all()
            && let [id] = ids.as_slice()
            && let Some(d) = world.get(id)
        {
            ids = world
                .search(None, Some(d.room.as_str()), Some(d.kind))
                .into_iter()
                .map(|x| x.id.clone())
                .collect();
        }
        if ids.len() > 1 && !all() {
            return Targets::Ask(clarify(world, ids, clause.verb.cloned(), lang));
        }
        targets.extend(ids);
    }
    if targets.is_empty()
        && let Some(kind) = kind_in(text)
    {
        let of_kind: Vec<String> = world
            .search(None, room.as_deref(), Some(kind))
            .into_iter()
            .map(|d| d.id.clone())
            .collect();
        if of_kind.len() > 1 && !all() {
            return Targets::Ask(clarify(world, of_kind, clause.verb.cloned(), lang));
        }
        targets = of_kind;
    }
    if targets.is_empty()
        && PRONOUNS.iter().any(|p| has(text, p))
        && (clause.verb.is_some() || clause.question)
    {
        targets = last_devices.to_vec();
    }
    if targets.is_empty()
        && let Some(verb @ Verb::Nudge { .. }) = clause.verb
    {
        // "Louder", "a bit warmer in the bedroom": whatever can (in the room said).
        let able: Vec<String> = world
            .devices()
            .iter()
            .filter(|d| room.as_ref().is_none_or(|r| &d.room == r))
            .filter(|d| capability_for(d, verb).is_some())
            .map(|d| d.id.clone())
            .collect();
        if able.len() > 1 && !all() {
            return Targets::Ask(clarify(world, able, clause.verb.cloned(), lang));
        }
        targets = able;
    }
    if targets.is_empty() {
        match own_devices(clause, world) {
            Some(own) => targets = own,
            None => return Targets::Skip,
        }
    }
    Targets::Devices(targets)
}

/// Words that make a valve or a switch the garden's water.
const WATERING: &[&str] = &[
    "irrigation",
    "sprinkler",
    "water",
    "garden",
    "lawn",
    "浇",
    "灌溉",
    "喷淋",
    "洒水",
    "花园",
    "草坪",
];
/// Words that keep a valve out of it, whatever else it is called.
const NOT_WATER: &[&str] = &["gas", "燃气", "煤气", "天然气"];

/// What "water the garden" opens: the valves and switches whose names say
/// water or irrigation (or a valve of class `water`), never a gas valve —
/// in the room said, when one is.
fn watering(room: Option<&str>, world: &DeviceWorld) -> Targets {
    let says = |d: &Device, words: &[&str]| {
        d.names()
            .any(|n| words.iter().any(|w| n.to_lowercase().contains(*w)))
    };
    let taps: Vec<&Device> = world
        .devices()
        .iter()
        .filter(|d| matches!(d.kind, DeviceKind::Valve | DeviceKind::Switch))
        .filter(|d| !says(d, NOT_WATER) && d.device_class().as_deref() != Some("gas"))
        .filter(|d| says(d, WATERING) || d.device_class().as_deref() == Some("water"))
        .collect();
    let in_room: Vec<String> = taps
        .iter()
        .filter(|d| room.is_some_and(|r| d.room == r))
        .map(|d| d.id.clone())
        .collect();
    let all: Vec<String> = taps.iter().map(|d| d.id.clone()).collect();
    match (in_room.is_empty(), all.is_empty()) {
        (false, _) => Targets::Devices(in_room),
        (true, false) => Targets::Devices(all),
        (true, true) => Targets::Skip,
    }
}

/// Of several devices one name fits, the ones in `room` when any are.
fn in_room_if_several(ids: Vec<String>, room: Option<&str>, world: &DeviceWorld) -> Vec<String> {
    if ids.len() > 1
        && let Some(r) = room
    {
        let in_room: Vec<String> = ids
            .iter()
            .filter(|id| world.get(id).is_some_and(|d| d.room == r))
            .cloned()
            .collect();
        if !in_room.is_empty() {
            return in_room;
        }
    }
    ids
}

/// The robot's own screen and face need no name: a brightness goes to the
/// screen, an expression to the face; `None` for anything else.
fn own_devices(clause: &Clause<'_>, world: &DeviceWorld) -> Option<Vec<String>> {
    let kind = match clause.verb {
        Some(Verb::Level { .. })
            if clause.text.contains("亮度") || clause.text.contains("brightness") =>
        {
            DeviceKind::Screen
        }
        Some(Verb::Expression { .. }) => DeviceKind::Expression,
        _ => return None,
    };
    Some(
        world
            .search(None, None, Some(kind))
            .iter()
            .map(|d| d.id.clone())
            .collect(),
    )
}

/// Appends each target's step (a query when the clause asks) to `steps`;
/// what to say when a target cannot do what was asked.
fn push_steps(
    steps: &mut Vec<Step>,
    clause: &Clause<'_>,
    targets: &[String],
    world: &DeviceWorld,
    lang: Lang,
) -> Result<(), String> {
    for id in targets {
        let step = if clause.question {
            Some(Ok(Step::Query { device: id.clone() }))
        } else {
            step_for(world, id, clause.verb, lang)
        };
        match step {
            Some(Ok(s)) => steps.push(s),
            Some(Err(message)) => return Err(message),
            None => {}
        }
    }
    Ok(())
}

/// The step for `verb` on device `id`: a call, an error when the device
/// cannot do it, `None` without a verb.
fn step_for(
    world: &DeviceWorld,
    id: &str,
    verb: Option<&Verb>,
    lang: Lang,
) -> Option<Result<Step, String>> {
    let d = world.get(id)?;
    let Some(verb) = verb else {
        return Some(Ok(Step::Query {
            device: id.to_string(),
        }));
    };
    Some(match capability_for(d, verb) {
        Some((action, args)) => Ok(Step::Control {
            device: id.to_string(),
            action,
            args,
        }),
        None => Err(cannot(d, lang)),
    })
}

/// What to say when a device cannot do what was asked: what it can do (in `lang`).
pub fn cannot(d: &Device, lang: Lang) -> String {
    // The verbs the lines know in words of the language ("打开"), the rest by name.
    let can: Vec<String> = d
        .capabilities
        .iter()
        .map(|c| {
            super::verb::verb(&c.name).map_or_else(
                || c.name.replace('_', " "),
                |v| lines::line(lang, &format!("base_{v}"), &[]),
            )
        })
        .collect();
    lines::line(
        lang,
        "cannot",
        &[
            ("device", &lines::name_in(lang, &d.name, &d.aliases)),
            ("can", &can.join(&lines::line(lang, "list_sep", &[]))),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world() -> (DeviceWorld, Vec<Scene>) {
        let home = crate::devices::builtin_home().unwrap();
        (DeviceWorld::builtin().unwrap(), home.scenes)
    }

    fn steps(u: Option<Understood>) -> Vec<Step> {
        match u {
            Some(Understood::Steps { steps }) => steps,
            other => panic!("expected steps, got {other:?}"),
        }
    }

    #[test]
    fn control_in_chinese_and_english() {
        let (w, sc) = world();
        let s = Session::default();
        assert_eq!(
            steps(understand("打开客厅灯", &w, &sc, &s)),
            vec![Step::Control {
                device: "living_room_light".into(),
                action: "turn_on".into(),
                args: json!({})
            }]
        );
        assert_eq!(
            steps(understand("Turn off the kitchen light", &w, &sc, &s))[0],
            Step::Control {
                device: "kitchen_light".into(),
                action: "turn_off".into(),
                args: json!({})
            }
        );
        let two = steps(understand("笑一个再把亮度调到100", &w, &sc, &s));
        assert_eq!(two.len(), 2, "{two:?}");
        assert_eq!(
            two[1],
            Step::Control {
                device: "screen".into(),
                action: "set_brightness".into(),
                args: json!({"level": 100})
            }
        );
        let t = steps(understand("把卧室空调调到二十六度", &w, &sc, &s));
        assert_eq!(
            t[0],
            Step::Control {
                device: "bedroom_ac".into(),
                action: "set_temperature".into(),
                args: json!({"temperature": 26})
            }
        );
    }

    #[test]
    fn it_means_the_last_device_and_an_ambiguous_name_is_asked_about() {
        let (w, sc) = world();
        let s = Session {
            last_devices: vec!["living_room_light".into()],
            ..Session::default()
        };
        assert_eq!(
            steps(understand("把它关掉", &w, &sc, &s))[0],
            Step::Control {
                device: "living_room_light".into(),
                action: "turn_off".into(),
                args: json!({})
            }
        );
        match understand("打开台灯", &w, &sc, &Session::default()) {
            Some(Understood::Clarify {
                candidates,
                question,
                ..
            }) => {
                assert_eq!(candidates, vec!["floor_lamp", "reading_lamp"]);
                // Asked in Chinese, with their Chinese names.
                assert_eq!(question, "你指的是哪一个：落地灯还是阅读灯？");
            }
            other => panic!("{other:?}"),
        }
        let s = Session {
            pending: Some(Pending {
                verb: Some(Verb::On),
                candidates: vec!["floor_lamp".into(), "reading_lamp".into()],
            }),
            ..Session::default()
        };
        assert_eq!(
            steps(understand("落地灯", &w, &sc, &s))[0],
            Step::Control {
                device: "floor_lamp".into(),
                action: "turn_on".into(),
                args: json!({})
            }
        );
    }

    #[test]
    fn questions_never_write_and_robot_commands_are_left_alone() {
        let (w, sc) = world();
        let s = Session::default();
        assert_eq!(
            steps(understand("水在烧了么", &w, &sc, &s)),
            vec![Step::Query {
                device: "kettle_plug".into()
            }]
        );
        assert_eq!(
            steps(understand("Is the front door locked?", &w, &sc, &s)),
            vec![Step::Query {
                device: "front_door_lock".into()
            }]
        );
        let mixed = steps(understand("打开客厅灯，水在烧了么", &w, &sc, &s));
        assert!(
            matches!(mixed[0], Step::Control { .. }) && matches!(mixed[1], Step::Query { .. }),
            "{mixed:?}"
        );
        for robot in [
            "去厨房",
            "go to the kitchen",
            "开始巡逻",
            "stop",
            "回来充电",
            "去门外",
            "去门口",
        ] {
            assert_eq!(understand(robot, &w, &sc, &s), None, "{robot}");
        }
        assert_eq!(
            understand("我要睡觉了", &w, &sc, &s),
            Some(Understood::Scene {
                name: "sleep".into()
            })
        );
    }
}
