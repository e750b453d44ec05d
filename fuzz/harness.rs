//! What each fuzz target checks, one function per target (docs/testing.md).
//!
//! Shared by the cargo-fuzz targets (`fuzz_targets/*.rs`, built with
//! libFuzzer by `./x fuzz`) and by `tests/fuzz_corpus.rs`, which runs every
//! function over the committed seeds (`fuzz/corpus/TARGET/`) and the inputs
//! that once failed (`fuzz/regressions/TARGET/`) on the stable toolchain in
//! every `./x test`. Each function takes any bytes; it panics only when a
//! property the project promises does not hold (a parser that panics, an
//! error that does not name its file, a codec that does not round-trip).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use robobrain_core::config::Config;
use robobrain_core::devices::mqtt::codec;
use robobrain_core::protocol::line::{Line, parse_line};
use robobrain_core::protocol::{Command, MAX_LINE_BYTES};
use robobrain_core::store::delta;
use robobrain_core::world::World;
use serde_json::Value;

/// The name a fuzzed file is parsed under; every error must name it.
const FILE: &str = "fuzz-input.toml";

/// The refusal codes docs/protocol.md lists for an operator line.
const CODES: &[&str] = &[
    "invalid_command",
    "invalid_utf8",
    "line_too_long",
    "utterance_too_long",
];

/// An operator line (`robobrain headless` stdin, the page's chat box;
/// `protocol::line::parse_line`): never a panic, a refusal only with a
/// documented code, and a command read from a line reads back the same from
/// its JSON form.
pub(super) fn operator_line(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_line(text) {
        Line::Blank => assert!(text.trim().is_empty(), "{text:?} is not blank"),
        Line::Bad(refused) => {
            assert!(CODES.contains(&refused.code), "{refused:?}");
            assert!(!refused.why.is_empty());
        }
        Line::Command(command) => {
            let json = serde_json::to_string(&command).unwrap();
            if json.len() <= MAX_LINE_BYTES {
                assert_eq!(
                    parse_line(&json),
                    Line::Command(command),
                    "{json} does not read back"
                );
            }
        }
    }
}

/// A command as JSON (the WebSocket, Tauri IPC, MCP's side channel): what
/// parses serialises and parses back to the same command.
pub(super) fn command_json(data: &[u8]) {
    let Ok(command) = serde_json::from_slice::<Command>(data) else {
        return;
    };
    let json = serde_json::to_string(&command).unwrap();
    let back: Command = serde_json::from_str(&json).unwrap();
    assert_eq!(back, command, "{json} does not read back");
}

/// Checks that an error from parsing a fuzzed file names the file.
fn names_the_file(result: Result<(), String>) {
    if let Err(e) = result {
        assert!(e.contains(FILE), "the error does not name the file: {e}");
    }
}

/// A world file (assets/worlds/*.toml): a world or an error naming the file.
pub(super) fn world_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    names_the_file(
        World::from_toml_str(text, Path::new(FILE))
            .map(drop)
            .map_err(|e| e.to_string()),
    );
}

/// A config file (robobrain.toml): a config or an error naming the file.
pub(super) fn config_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    names_the_file(
        Config::from_toml_str(text, Path::new(FILE))
            .map(drop)
            .map_err(|e| e.to_string()),
    );
}

/// A scenario file (tests/scenarios/*.toml): a scenario or an error naming the file.
pub(super) fn scenario_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    names_the_file(
        robobrain_core::scenario::format::parse(text, Path::new(FILE))
            .map(drop)
            .map_err(|e| e.to_string()),
    );
}

/// The checkpoint delta codec on a JSON array `[old, new]`: applying
/// `diff(old, new)` to `old` gives `new`, through the text the store keeps;
/// a value has no delta to itself.
pub(super) fn checkpoint_delta(data: &[u8]) {
    let Ok(Value::Array(pair)) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let [old, new] = pair.as_slice() else {
        return;
    };
    assert!(
        delta::diff(old, old).is_empty(),
        "a delta from {old} to itself"
    );
    let changes = delta::diff(old, new);
    let stored = serde_json::to_string(&changes).unwrap();
    let read: Vec<(String, Value)> = serde_json::from_str(&stored).unwrap();
    let mut rebuilt = old.clone();
    delta::apply(&mut rebuilt, &read).unwrap_or_else(|e| panic!("{e}: {old} → {new} by {stored}"));
    assert_eq!(&rebuilt, new, "{old} → {new} by {stored}");
}

/// zigbee2mqtt topics and payloads (`topic \0 payload`): topics read back
/// into the topic they came from, payloads are an object or a typed error,
/// and a state confirms the command that asked for exactly it.
pub(super) fn mqtt_payload(data: &[u8]) {
    const BASE: &str = "zigbee2mqtt";
    let split = data.iter().position(|b| *b == 0).unwrap_or(data.len());
    let (topic, payload) = (&data[..split], data.get(split + 1..).unwrap_or_default());
    let topic = String::from_utf8_lossy(topic);
    let rebuilt = match codec::parse_topic(BASE, &topic) {
        Some(codec::Topic::State(d)) => Some(codec::state_topic(BASE, d)),
        Some(codec::Topic::Set(d)) => Some(codec::set_topic(BASE, d)),
        Some(codec::Topic::Availability(d)) => Some(codec::availability_topic(BASE, d)),
        Some(codec::Topic::BridgeState) => Some(codec::bridge_state_topic(BASE)),
        Some(codec::Topic::Get(_) | codec::Topic::Bridge(_)) | None => None,
    };
    if let Some(rebuilt) = rebuilt {
        assert_eq!(rebuilt, topic, "the topic does not read back");
    }
    match codec::parse_object(&topic, payload) {
        Ok(state) => assert!(codec::confirms(&state, &state), "{state:?}"),
        Err(e) => assert!(e.to_string().contains(&*topic)),
    }
    if let Err(e) = codec::parse_availability(&topic, payload) {
        assert!(e.to_string().contains(&*topic));
    }
    for online in [true, false] {
        let p = codec::availability_payload(online);
        assert_eq!(codec::parse_availability(&topic, &p), Ok(online));
    }
}
