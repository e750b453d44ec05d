//! Fuzz target `checkpoint_delta`: see `harness::checkpoint_delta`.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::checkpoint_delta(data));
