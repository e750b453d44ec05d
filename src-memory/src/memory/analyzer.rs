//! What a memory is about (seed 004's ContentAnalyzer): keywords, entities,
//! rooms and devices mentioned, and times. [`analyze_rules`] needs no model
//! (term frequency, a bilingual room/device lexicon, time expressions);
//! [`parse_model_reply`] checks a model's JSON answer to the
//! `memory_analysis.txt` prompt, and the caller falls back to the rules
//! when it is unusable.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::tokenize::words;

/// A memory's analysis.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// The most frequent meaningful words.
    pub keywords: Vec<String>,
    /// Names (capitalised words, quoted names, people).
    pub entities: Vec<String>,
    /// Rooms mentioned (canonical English names).
    pub rooms: Vec<String>,
    /// Devices mentioned (canonical English names).
    pub devices: Vec<String>,
    /// Time expressions as written.
    pub times: Vec<String>,
    /// `rules` or `model`.
    pub source: String,
}

/// Rooms: canonical name, then the words that mean it.
const ROOMS: &[(&str, &[&str])] = &[
    ("kitchen", &["kitchen", "厨房"]),
    ("living room", &["living room", "lounge", "客厅", "起居室"]),
    ("bedroom", &["bedroom", "卧室", "主卧", "次卧", "睡房"]),
    (
        "bathroom",
        &["bathroom", "toilet", "卫生间", "浴室", "洗手间", "厕所"],
    ),
    ("study", &["study", "office", "书房"]),
    ("balcony", &["balcony", "阳台"]),
    (
        "hallway",
        &["hallway", "corridor", "entrance", "走廊", "玄关", "门厅"],
    ),
    ("dining room", &["dining room", "餐厅"]),
    ("garage", &["garage", "车库"]),
    ("kids room", &["kids room", "nursery", "儿童房"]),
];

/// Devices: canonical name, then the words that mean it.
const DEVICES: &[(&str, &[&str])] = &[
    ("light", &["light", "lamp", "灯", "台灯", "吊灯"]),
    (
        "air conditioner",
        &["air conditioner", "aircon", "a/c", "空调"],
    ),
    ("tv", &["tv", "television", "电视"]),
    ("curtain", &["curtain", "blind", "窗帘"]),
    ("fan", &["fan", "风扇"]),
    (
        "heater",
        &["heater", "heating", "radiator", "暖气", "取暖器"],
    ),
    ("kettle", &["kettle", "水壶", "烧水壶"]),
    ("fridge", &["fridge", "refrigerator", "冰箱"]),
    ("washing machine", &["washing machine", "washer", "洗衣机"]),
    ("door lock", &["door lock", "lock", "门锁"]),
    ("window", &["window", "窗户"]),
    ("vacuum", &["vacuum", "robot vacuum", "扫地机", "吸尘器"]),
    ("speaker", &["speaker", "音箱"]),
    ("camera", &["camera", "摄像头"]),
    ("thermostat", &["thermostat", "温控器"]),
    ("oven", &["oven", "烤箱", "微波炉", "microwave"]),
    ("plug", &["plug", "socket", "插座"]),
    ("humidifier", &["humidifier", "加湿器"]),
    ("purifier", &["air purifier", "purifier", "净化器"]),
    ("charger", &["charger", "dock", "充电桩", "充电座"]),
];

const TIME_EN: &[&str] = &[
    "today",
    "tomorrow",
    "yesterday",
    "tonight",
    "morning",
    "afternoon",
    "evening",
    "night",
    "noon",
    "midnight",
    "weekend",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "every day",
    "daily",
    "weekly",
];

const TIME_ZH: &[&str] = &[
    "今天", "明天", "昨天", "今晚", "早上", "上午", "中午", "下午", "晚上", "夜里", "半夜", "周末",
    "周一", "周二", "周三", "周四", "周五", "周六", "周日", "星期", "每天", "每周", "凌晨", "后天",
    "前天",
];

/// Whether `needle` occurs in `hay` (lower-cased) as a word (English) or at all (Chinese).
fn mentions(hay: &str, needle: &str) -> bool {
    if needle.is_ascii() {
        hay.match_indices(needle).any(|(i, _)| {
            let before = hay[..i].chars().next_back();
            let after = hay[i + needle.len()..].chars().next();
            let edge = |c: Option<char>| c.is_none_or(|c| !c.is_ascii_alphanumeric());
            // Allow an English plural after the word.
            edge(before)
                && (edge(after)
                    || (after == Some('s') && edge(hay[i + needle.len() + 1..].chars().next())))
        })
    } else {
        hay.contains(needle)
    }
}

fn lexicon(lower: &str, table: &[(&str, &[&str])]) -> Vec<String> {
    table
        .iter()
        .filter(|(_, words)| words.iter().any(|w| mentions(lower, w)))
        .map(|(name, _)| (*name).to_string())
        .collect()
}

/// Clock times and time words, as written.
fn times(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let mut out: Vec<String> = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_ascii_digit() || "一二三四五六七八九十两".contains(chars[i]) {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_digit() || "一二三四五六七八九十两:：".contains(chars[i]))
            {
                i += 1;
            }
            let rest: String = chars[i..].iter().take(4).collect::<String>().to_lowercase();
            let span: String = chars[start..i].iter().collect();
            let clock = span.contains([':', '：'])
                && span.chars().filter(char::is_ascii_digit).count() >= 2;
            let unit = [
                "点", "am", " am", "pm", " pm", "o'clock", " o'clock", "号", "月",
            ]
            .iter()
            .find(|u| rest.starts_with(*u));
            if clock || unit.is_some() {
                out.push(format!("{span}{}", unit.map_or("", |u| *u)));
            }
        }
        i += 1;
    }
    for w in TIME_EN {
        if mentions(&lower, w) {
            out.push((*w).to_string());
        }
    }
    for w in TIME_ZH {
        if lower.contains(w) {
            out.push((*w).to_string());
        }
    }
    out.dedup();
    out
}

/// Capitalised words not at a sentence start, and 「quoted」/"quoted" names.
fn entities(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut sentence_start = true;
    for raw in text.split_whitespace() {
        let word = raw.trim_matches(|c: char| !c.is_alphanumeric());
        if !sentence_start
            && word.chars().next().is_some_and(char::is_uppercase)
            && word.len() > 1
            && !out.contains(&word.to_string())
        {
            out.push(word.to_string());
        }
        sentence_start = raw.ends_with(['.', '!', '?', ':']);
    }
    for (open, close) in [('「', '」'), ('“', '”'), ('"', '"')] {
        let mut rest = text;
        while let Some(a) = rest.find(open) {
            let after = &rest[a + open.len_utf8()..];
            let Some(b) = after.find(close) else { break };
            let name = after[..b].trim();
            if !name.is_empty() && name.chars().count() <= 30 && !out.contains(&name.to_string()) {
                out.push(name.to_string());
            }
            rest = &after[b + close.len_utf8()..];
        }
    }
    out
}

/// The analysis without a model.
pub fn analyze_rules(text: &str) -> Analysis {
    let lower = text.to_lowercase();
    let mut counts: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (i, w) in words(text).into_iter().enumerate() {
        if (w.chars().count() < 2 && w.is_ascii()) || w == "user" || w == "assistant" {
            continue;
        }
        counts.entry(w).or_insert((0, i)).0 += 1;
    }
    let mut ranked: Vec<(String, (usize, usize))> = counts.into_iter().collect();
    ranked.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.1.1.cmp(&b.1.1)));
    Analysis {
        keywords: ranked.into_iter().take(8).map(|(w, _)| w).collect(),
        entities: entities(text),
        rooms: lexicon(&lower, ROOMS),
        devices: lexicon(&lower, DEVICES),
        times: times(text),
        source: "rules".into(),
    }
}

fn strings(v: &Value, key: &str) -> Result<Vec<String>, String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(|s| s.trim().to_string())
                    .ok_or_else(|| format!("`{key}`: expected an array of strings"))
            })
            .filter(|s| s.as_ref().map_or(true, |s| !s.is_empty()))
            .take(20)
            .collect(),
        Some(_) => Err(format!("`{key}`: expected an array of strings")),
    }
}

/// A model's reply to `memory_analysis.txt` (a JSON object, possibly in a
/// code fence) as an analysis.
pub fn parse_model_reply(reply: &str) -> Result<Analysis, String> {
    let t = reply.trim();
    let body = match (t.find('{'), t.rfind('}')) {
        (Some(a), Some(b)) if b > a => &t[a..=b],
        _ => return Err("expected a JSON object".into()),
    };
    let v: Value = serde_json::from_str(body).map_err(|e| format!("not JSON ({e})"))?;
    Ok(Analysis {
        keywords: strings(&v, "keywords")?,
        entities: strings(&v, "entities")?,
        rooms: strings(&v, "rooms")?,
        devices: strings(&v, "devices")?,
        times: strings(&v, "times")?,
        source: "model".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_rules_find_rooms_devices_times_and_names() {
        let a = analyze_rules(
            "user: 明天早上七点把卧室的空调打开\nassistant: OK, I will ask Alice to check the Kitchen lights at 7:30 pm.",
        );
        assert_eq!(a.rooms, ["kitchen", "bedroom"]);
        assert!(
            a.devices.contains(&"air conditioner".to_string())
                && a.devices.contains(&"light".to_string()),
            "{a:?}"
        );
        assert!(
            a.times.contains(&"明天".to_string()) && a.times.contains(&"七点".to_string()),
            "{:?}",
            a.times
        );
        assert!(a.times.contains(&"7:30 pm".to_string()), "{:?}", a.times);
        assert!(
            a.entities.contains(&"Alice".to_string()),
            "{:?}",
            a.entities
        );
        assert!(a.keywords.contains(&"卧室".to_string()), "{:?}", a.keywords);
        assert_eq!(a.source, "rules");
        assert!(
            analyze_rules("the bedrooms are dark")
                .rooms
                .contains(&"bedroom".to_string())
        );
        assert!(analyze_rules("a flight").devices.is_empty());
    }

    #[test]
    fn memory_model_analysis_is_checked() {
        let a = parse_model_reply(
            "```json\n{\"keywords\":[\"tea\"],\"rooms\":[\"kitchen\"],\"times\":null}\n```",
        )
        .unwrap();
        assert_eq!(
            (a.keywords.len(), a.rooms.len(), a.source.as_str()),
            (1, 1, "model")
        );
        assert!(parse_model_reply("no").unwrap_err().contains("JSON object"));
        assert!(
            parse_model_reply("{\"rooms\": \"kitchen\"}")
                .unwrap_err()
                .contains("`rooms`")
        );
    }
}
