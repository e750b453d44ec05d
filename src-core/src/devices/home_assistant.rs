//! Home Assistant homes as device worlds, and the assist datasets as a
//! benchmark of understanding.
//!
//! - [`fixture`]: a home description (areas, devices, entities with state).
//! - [`dataset`]: the test files (sentences, setup, expected changes).
//! - [`yaml`]: YAML parsing with file:line:col errors.

pub mod dataset;
pub mod fixture;
pub mod yaml;

pub use dataset::{EntityPatch, HomeCase, TestCase, TestFile, load_dataset};
pub use fixture::{HaArea, HaDevice, HaEntity, HaHome};
