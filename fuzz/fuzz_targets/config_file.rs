//! Fuzz target `config_file`: see `harness::config_file`.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::config_file(data));
