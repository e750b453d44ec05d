//! Rule parsing of device commands, in English and Chinese, against any
//! [`DeviceWorld`]: the verb picks the capabilities it could mean (`open`
//! is `open` for a curtain and `turn_on` for a light in 打开), the words
//! pick the device — by name or alias, else by room and kind noun
//! ("the entry lock", "vacuum in the living room"), else the only device
//! that can do it. Two candidates are never guessed between.

use serde_json::{Value, json};

use crate::devices::{Device, DeviceKind, DeviceWorld};
use crate::text;

/// Lower-cased words, `%` a word of its own (`50%` → `50 %`).
fn normalize(t: &str) -> String {
    text::lower_folded(&text::words(t, &['%']).replace('%', " % "))
}

fn has(t: &str, phrase: &str) -> bool {
    text::has(t, phrase, &[])
}

fn find(t: &str, phrase: &str) -> Option<usize> {
    text::find(t, phrase, &[])
}

fn any(t: &str, phrases: &[&str]) -> bool {
    text::has_any(t, phrases, &[])
}

/// What a sentence asks of the devices.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// One capability call.
    Call {
        /// The device's id.
        device: String,
        /// The capability.
        capability: String,
        /// Its arguments.
        args: Value,
    },
    /// Several devices fit: ask which.
    Ambiguous {
        /// The capability wanted.
        capability: String,
        /// The devices it could be, by id.
        candidates: Vec<String>,
    },
    /// The verb was understood but no device that can do it was named.
    NoDevice {
        /// The capabilities the verb could mean.
        wanted: Vec<String>,
    },
    /// Not a device command this parser knows.
    NotUnderstood,
}

/// A verb: the capabilities it may mean, in order of preference, and the
/// percent argument it carries.
struct Verb {
    capabilities: Vec<&'static str>,
    percent: Option<i64>,
}

/// The first number followed by `%` / `percent` / `度`, or after 调到 / to.
fn percent(text: &str) -> Option<i64> {
    let words: Vec<&str> = text.split(' ').collect();
    for (i, w) in words.iter().enumerate() {
        let next = words.get(i + 1).copied();
        if matches!(next, Some("%" | "percent")) {
            let digits: String = w.chars().rev().take_while(char::is_ascii_digit).collect();
            return digits.chars().rev().collect::<String>().parse().ok();
        }
    }
    // 调到50 / 50%（already split）/ 百分之五十 is not handled.
    let digits: String = text
        .split(['到', '成', '为'])
        .nth(1)?
        .trim()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The verb in `text`, if any: what it may mean, and its percent.
fn verb(text: &str) -> Option<Verb> {
    let percent = percent(text);
    let has_pct = percent.is_some();
    let capabilities =
        lock_media_capabilities(text, has_pct).or_else(|| setting_capabilities(text, has_pct))?;
    Some(Verb {
        capabilities: capabilities.to_vec(),
        percent,
    })
}

/// The capabilities a lock, media, vacuum-dock or pause verb may mean
/// (checked before the on/off verbs: "unlock" is not "lock").
fn lock_media_capabilities(text: &str, has_pct: bool) -> Option<&'static [&'static str]> {
    if any(text, &["unlock", "解锁", "开锁", "把门打开"]) {
        return Some(&["unlock"]);
    }
    if any(text, &["lock", "锁上", "锁门", "上锁", "锁好"]) && !any(text, &["unlock"]) {
        return Some(&["lock"]);
    }
    if any(text, &["volume", "音量"]) && has_pct {
        return Some(&["set_volume"]);
    }
    if any(text, &["mute", "静音"]) {
        return Some(&["mute"]);
    }
    if any(
        text,
        &[
            "skip",
            "next track",
            "next song",
            "下一首",
            "下一曲",
            "切歌",
        ],
    ) {
        return Some(&["next_track"]);
    }
    if any(
        text,
        &["previous track", "previous song", "上一首", "上一曲"],
    ) {
        return Some(&["previous_track"]);
    }
    if any(text, &["return", "dock", "回充", "回去充电"])
        && any(text, &["base", "dock", "回充", "回去充电"])
    {
        return Some(&["return_to_base"]);
    }
    if any(text, &["unpause", "resume", "继续播放", "接着放"]) {
        return Some(&["play", "start"]);
    }
    if any(text, &["pause", "暂停"]) {
        return Some(&["pause"]);
    }
    None
}

/// The capabilities a setting, start, play, on/off, open/close or stop
/// verb may mean, in order of preference.
fn setting_capabilities(text: &str, has_pct: bool) -> Option<&'static [&'static str]> {
    if has_pct
        && any(
            text,
            &[
                "set",
                "brightness",
                "亮度",
                "调到",
                "调成",
                "设为",
                "设置",
                "开到",
            ],
        )
    {
        return Some(&["set_brightness", "set_position", "set_speed", "set_volume"]);
    }
    if any(text, &["start", "开始", "启动", "扫地", "打扫"]) {
        return Some(&["start", "turn_on"]);
    }
    if any(text, &["play", "播放"]) {
        return Some(&["play"]);
    }
    if asks_off(text) {
        return Some(&["turn_off", "close", "stop"]);
    }
    if any(text, &["close", "shut", "拉上", "合上"]) {
        return Some(&["close", "turn_off"]);
    }
    if asks_on(text) {
        return Some(&["turn_on", "open"]);
    }
    if any(text, &["open", "拉开"]) {
        return Some(&["open", "turn_on"]);
    }
    if any(text, &["stop", "停止"]) {
        return Some(&["stop", "pause"]);
    }
    None
}

/// Whether `text` asks for something off ("turn off", "关掉", "… off").
fn asks_off(text: &str) -> bool {
    any(
        text,
        &[
            "turn off",
            "switch off",
            "shut off",
            "关掉",
            "关闭",
            "关上",
            "关了",
            "熄灭",
        ],
    ) || text.ends_with(" off")
        || (text.starts_with("turn ") && has(text, "off"))
        || text.starts_with('关')
}

/// Whether `text` asks for something on ("turn on", "打开", "… on").
fn asks_on(text: &str) -> bool {
    any(
        text,
        &["turn on", "switch on", "打开", "开启", "开一下", "点亮"],
    ) || text.ends_with(" on")
        || (text.starts_with("turn ") && has(text, "on"))
        || text.starts_with('开')
}

/// Verb words, taken out of the sentence before devices are looked for in
/// it, so that "lock" in "lock the kitchen light" is not a lock's name.
const VERB_WORDS: &[&str] = &[
    "unlock",
    "lock",
    "turn on",
    "turn off",
    "switch on",
    "switch off",
    "shut off",
    "turn",
    "open",
    "close",
    "shut",
    "start",
    "stop",
    "pause",
    "unpause",
    "resume",
    "play",
    "mute",
    "skip",
    "return",
    "set",
    "解锁",
    "开锁",
    "锁上",
    "锁门",
    "上锁",
    "打开",
    "开启",
    "关掉",
    "关闭",
    "关上",
    "拉开",
    "拉上",
    "暂停",
    "播放",
    "静音",
    "启动",
];

/// `text` without its first verb word (the earliest one said).
fn strip_verb(text: &str) -> String {
    let first = VERB_WORDS
        .iter()
        .filter_map(|w| find(text, w).map(|pos| (pos, w.len())))
        .min_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    match first {
        Some((pos, len)) => format!("{} {}", &text[..pos], &text[(pos + len).min(text.len())..])
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
        None => text.to_string(),
    }
}

/// Capabilities only one kind of device has: a sentence with one of these
/// verbs and no device named goes to the only device that can.
const SPECIFIC: &[&str] = &[
    "set_volume",
    "mute",
    "next_track",
    "previous_track",
    "return_to_base",
];

/// Kind nouns in English and Chinese.
const KIND_WORDS: &[(&str, DeviceKind)] = &[
    ("light", DeviceKind::Light),
    ("lights", DeviceKind::Light),
    ("lamp", DeviceKind::Light),
    ("lamps", DeviceKind::Light),
    ("灯", DeviceKind::Light),
    ("fan", DeviceKind::Fan),
    ("风扇", DeviceKind::Fan),
    ("lock", DeviceKind::Lock),
    ("门锁", DeviceKind::Lock),
    ("锁", DeviceKind::Lock),
    ("door", DeviceKind::Curtain),
    ("curtain", DeviceKind::Curtain),
    ("curtains", DeviceKind::Curtain),
    ("blind", DeviceKind::Curtain),
    ("blinds", DeviceKind::Curtain),
    ("shade", DeviceKind::Curtain),
    ("shades", DeviceKind::Curtain),
    ("窗帘", DeviceKind::Curtain),
    ("valve", DeviceKind::Valve),
    ("阀门", DeviceKind::Valve),
    ("阀", DeviceKind::Valve),
    ("vacuum", DeviceKind::Vacuum),
    ("扫地机", DeviceKind::Vacuum),
    ("speaker", DeviceKind::MediaPlayer),
    ("speakers", DeviceKind::MediaPlayer),
    ("music", DeviceKind::MediaPlayer),
    ("tv", DeviceKind::MediaPlayer),
    ("音箱", DeviceKind::MediaPlayer),
    ("音乐", DeviceKind::MediaPlayer),
    ("电视", DeviceKind::MediaPlayer),
    ("plug", DeviceKind::Plug),
    ("插座", DeviceKind::Plug),
    ("kettle", DeviceKind::Plug),
    ("水壶", DeviceKind::Plug),
    ("空调", DeviceKind::Climate),
    ("air conditioner", DeviceKind::Climate),
];

fn can(d: &Device, caps: &[&str]) -> bool {
    caps.iter().any(|c| d.capability(c).is_some())
}

/// The names a device answers to in a sentence: its names and their plurals.
fn mentioned(text: &str, d: &Device) -> Option<usize> {
    d.names()
        .map(|n| normalize(&n))
        .filter(|n| !n.is_empty())
        .filter_map(|n| {
            let plural = format!("{n}s");
            has(text, &n)
                .then(|| n.chars().count())
                .or_else(|| has(text, &plural).then(|| n.chars().count()))
        })
        .max()
}

/// Rooms named in the sentence (the longest name wins where two overlap).
fn rooms_named(text: &str, world: &DeviceWorld) -> Vec<String> {
    let mut hits: Vec<(usize, usize, String)> = Vec::new();
    for r in world.rooms() {
        let names = [r.id.replace('_', " "), r.name.clone()]
            .into_iter()
            .chain(r.aliases.iter().cloned())
            .map(|n| normalize(&n));
        for n in names {
            if let Some(pos) = find(text, &n) {
                hits.push((pos, n.len(), r.id.clone()));
            }
        }
    }
    hits.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut rooms = Vec::new();
    let mut until = 0;
    for (pos, len, id) in hits {
        if pos < until && !rooms.is_empty() {
            continue;
        }
        until = pos + len;
        if !rooms.contains(&id) {
            rooms.push(id);
        }
    }
    rooms
}

fn pick(devices: &[&Device], verb: &Verb) -> Command {
    match devices {
        [] => Command::NoDevice {
            wanted: verb.capabilities.iter().map(|c| (*c).to_string()).collect(),
        },
        [d] => call(d, verb),
        many => Command::Ambiguous {
            capability: verb
                .capabilities
                .first()
                .copied()
                .unwrap_or_default()
                .to_string(),
            candidates: many.iter().map(|d| d.id.clone()).collect(),
        },
    }
}

fn call(d: &Device, verb: &Verb) -> Command {
    let Some(capability) = verb.capabilities.iter().find(|c| d.capability(c).is_some()) else {
        return Command::NoDevice {
            wanted: verb.capabilities.iter().map(|c| (*c).to_string()).collect(),
        };
    };
    let arg = match *capability {
        "set_position" => Some("position"),
        "set_brightness" | "set_speed" | "set_volume" => Some("level"),
        _ => None,
    };
    let args = match (arg, verb.percent) {
        (Some(name), Some(p)) => json!({ name: p }),
        _ => json!({}),
    };
    Command::Call {
        device: d.id.clone(),
        capability: (*capability).to_string(),
        args,
    }
}

/// Parses a device command against `world`.
pub fn parse_command(sentence: &str, world: &DeviceWorld) -> Command {
    let text = normalize(sentence);
    let Some(verb) = verb(&text) else {
        return Command::NotUnderstood;
    };
    let text = strip_verb(&text);
    let able: Vec<&Device> = world
        .devices()
        .iter()
        .filter(|d| can(d, &verb.capabilities))
        .collect();
    // 1. Devices named outright (the longest name wins).
    let named: Vec<(&Device, usize)> = able
        .iter()
        .filter_map(|d| Some((*d, mentioned(&text, d)?)))
        .collect();
    if let Some(best) = named.iter().map(|(_, n)| *n).max() {
        let top: Vec<&Device> = named
            .iter()
            .filter(|(_, n)| *n == best)
            .map(|(d, _)| *d)
            .collect();
        return pick(&top, &verb);
    }
    // 2. A room and a kind noun, or either alone.
    let rooms = rooms_named(&text, world);
    let kinds: Vec<DeviceKind> = KIND_WORDS
        .iter()
        .filter(|(w, _)| has(&text, w))
        .map(|(_, k)| *k)
        .collect();
    let fits: Vec<&Device> = able
        .iter()
        .copied()
        .filter(|d| rooms.is_empty() || rooms.contains(&d.room))
        .filter(|d| kinds.is_empty() || kinds.contains(&d.kind))
        .collect();
    if rooms.is_empty() && kinds.is_empty() {
        // Nothing names a device: only a verb that belongs to one kind of
        // device ("turn the volume down", "skip the song") may go to the
        // only device that can do it; "open sesame" opens nothing.
        let specific = verb.capabilities.iter().all(|c| SPECIFIC.contains(c));
        return match able.as_slice() {
            [d] if specific => call(d, &verb),
            [] | [_] => Command::NoDevice {
                wanted: verb.capabilities.iter().map(|c| (*c).to_string()).collect(),
            },
            many => Command::Ambiguous {
                capability: verb.capabilities[0].to_string(),
                candidates: many.iter().map(|d| d.id.clone()).collect(),
            },
        };
    }
    pick(&fits, &verb)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apartment() -> DeviceWorld {
        DeviceWorld::builtin().unwrap()
    }

    fn call(device: &str, capability: &str, args: Value) -> Command {
        Command::Call {
            device: device.into(),
            capability: capability.into(),
            args,
        }
    }

    #[test]
    fn chinese_and_english_commands_on_the_builtin_home() {
        let w = apartment();
        assert_eq!(
            parse_command("打开客厅灯", &w),
            call("living_room_light", "turn_on", json!({}))
        );
        assert_eq!(
            parse_command("turn off the living room light", &w),
            call("living_room_light", "turn_off", json!({}))
        );
        assert_eq!(
            parse_command("把客厅灯调到40%", &w),
            call("living_room_light", "set_brightness", json!({"level": 40}))
        );
        assert_eq!(
            parse_command("set the living room light to 40%", &w),
            call("living_room_light", "set_brightness", json!({"level": 40}))
        );
        assert_eq!(
            parse_command("Unlock the front door lock", &w).clone(),
            parse_command("unlock the door lock", &w)
        );
        assert!(matches!(
            parse_command("what is the meaning of life", &w),
            Command::NotUnderstood
        ));
        // The verb is not a name: nothing in the kitchen locks.
        assert!(matches!(
            parse_command("lock the kitchen light", &w),
            Command::NoDevice { .. }
        ));
        assert_eq!(strip_verb("lock smart lock"), "smart lock");
        assert_eq!(strip_verb("打开客厅灯"), "客厅灯");
    }
}
