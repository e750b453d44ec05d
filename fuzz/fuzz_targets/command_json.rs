//! Fuzz target `command_json`: see `harness::command_json`.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::command_json(data));
