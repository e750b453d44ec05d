//! Fuzz target `operator_line`: see `harness::operator_line`.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::operator_line(data));
