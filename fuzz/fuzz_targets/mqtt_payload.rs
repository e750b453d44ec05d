//! Fuzz target `mqtt_payload`: see `harness::mqtt_payload`.
#![no_main]

#[path = "../harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::mqtt_payload(data));
