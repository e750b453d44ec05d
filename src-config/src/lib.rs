//! robobrain-config: the layered configuration, lowest first — defaults
//! built in, the user's `robobrain.toml`, environment variables,
//! command-line flags (applied by the binary) — parsed into an
//! all-optional raw form, then validated into a typed [`config::Config`]
//! whose refusals name the file, line and key (docs/config.md).
//!
//! - [`config`]: `Config` and its sections; the sections of the lower
//!   crates (`[llm]`, `[store]`, `[link]`, `[robot]`, `[memory]`) are their
//!   own types, checked here with the rest, a `ros2:` robot URL by the ROS 2
//!   crate.

pub mod config;

use robobrain_link::link;
use robobrain_llm::llm;
use robobrain_memory::memory;
use robobrain_ros2::ros2;
use robobrain_store::store;
use robobrain_wire::{places, protocol, secrets, source, timezone};
