//! robobrain-skills: what the robot can do, and the plumbing it needs —
//! everything above the configuration and below the home, the brains and
//! the engine, which all call skills.
//!
//! - [`skills`]: the skill registry, specs, the goal runner and the built-in skills.
//! - [`perception`]: cameras (the simulated one renders PNGs; a real one
//!   with feature `camera`) and vision results.
//! - [`webhook`]: the alert webhook (`[alert]`), POSTed off the kernel's thread.
//! - [`offload`]: work the kernel hands off and never waits for, on a small
//!   runtime of its own.

pub mod offload;
pub mod perception;
pub mod skills;
pub mod webhook;

use robobrain_config::config;
use robobrain_link::link;
#[cfg(test)]
use robobrain_link::sim;
use robobrain_llm::{audio, llm};
use robobrain_store::store;
#[cfg(all(test, feature = "camera"))]
use robobrain_wire::testing;
use robobrain_wire::{geometry, protocol, rng, world};
