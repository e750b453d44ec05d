//! Fuzz target `world_file`: see `harness::world_file`.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::world_file(data));
