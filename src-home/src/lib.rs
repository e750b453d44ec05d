//! robobrain-home: the home and the safety rules every door obeys.
//!
//! - [`devices`]: the device model, the simulated backend, MQTT devices with
//!   Home Assistant discovery and zigbee2mqtt;
//! - [`assist`]: Home Assistant's assist datasets — homes and test files as
//!   published, a home as a device world, and the runner that judges;
//! - [`policy`]: which ops need an operator's approval — a motion judged by
//!   where it goes, a device write by what it does;
//! - [`hci`]: what people say to the home, understood, gated and answered.
//!
//! The tests that drive a whole engine or session through these sit in the
//! core (`home_assistant_through_the_session.rs`,
//! `doors_through_the_engine.rs`); this crate's `test-utils` feature lends
//! them a real mosquitto and a fake MQTT device.

pub mod assist;
pub mod devices;
pub mod hci;
pub mod policy;

use robobrain_config::config;
use robobrain_intents::intents;
use robobrain_llm::llm;
use robobrain_skills::skills;
use robobrain_store::store;
#[cfg(any(test, feature = "test-utils"))]
use robobrain_wire::testing;
use robobrain_wire::{
    geometry, lines, progress, protocol, rng, secrets, source, text, timezone, world,
};
