//! Home Assistant's assist datasets (allenporter/home-assistant-datasets)
//! as a benchmark of understanding: the homes and test files as published,
//! a home as a device world, and the runner that judges any [`runner::Assistant`].
//!
//! - [`fixture`]: a home description (areas, devices, entities with state).
//! - [`dataset`]: the test files (sentences, setup, expected changes).
//! - [`world`]: a home as a device world, moved the way Home Assistant services move it.
//! - [`runner`]: the dataset runner: pass rates per category, language and locale.
//! - [`yaml`]: YAML parsing with file:line:col errors.
//!
//! The runner's assistant through the whole engine is
//! `robobrain_core::engine::assist` (it drives an engine, which sits above
//! the home); the device-command parser it can also run alone is
//! [`crate::hci::device_command`].

pub mod dataset;
pub mod fixture;
pub mod runner;
pub mod world;
pub mod yaml;

pub use dataset::{EntityPatch, HomeCase, TestCase, TestFile, load_dataset};
pub use fixture::{HaArea, HaDevice, HaEntity, HaHome};
