//! Home Assistant homes as device worlds, and the assist datasets as a
//! benchmark of understanding.
//!
//! - [`command`]: rule parsing of device commands (English and Chinese) against a device world.
//! - the runner's assistant through the whole engine is `robobrain_core::engine::assist` (it drives an engine, which sits above the home).
//! - [`fixture`]: a home description (areas, devices, entities with state).
//! - [`dataset`]: the test files (sentences, setup, expected changes).
//! - [`runner`]: the dataset runner: pass rates per category, language and locale.
//! - [`world`]: a home as a device world, moved the way Home Assistant services move it.
//! - [`yaml`]: YAML parsing with file:line:col errors.

pub mod command;
pub mod dataset;
pub mod fixture;
pub mod runner;
pub mod world;
pub mod yaml;

pub use dataset::{EntityPatch, HomeCase, TestCase, TestFile, load_dataset};
pub use fixture::{HaArea, HaDevice, HaEntity, HaHome};
