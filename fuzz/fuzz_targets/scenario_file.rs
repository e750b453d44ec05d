//! Fuzz target `scenario_file`: see `harness::scenario_file`.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::scenario_file(data));
