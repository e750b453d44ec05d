//! robobrain-core: a robot brain you can watch think.
//!
//! The map of the crate, outside in:
//!
//! - [`protocol`]: the wire — `Command` in, `Event` out, `Snapshot` for a first paint.
//! - [`session`]: one run assembled from a config — brain, memory, MCP services, store, log, robot — and started.
//! - [`runtime`]: the async handle faces hold; one task owns the [`engine`].
//! - [`engine`]: one synchronous tick — kernel K1–K6, then the ReAct loop R1–R8.
//! - [`kernel`]: hard rules: mode arbitration, the priority task queue, preemption.
//! - [`react`]: the inner loop as a pure state machine, with guardrails and loop guards.
//! - [`brain`]: decision providers (`RuleBrain`, `LlmBrain`, `ScriptedBrain`) and intent parsing.
//! - [`llm`]: the OpenAI-compatible client, prompts, and the `mock-llm` server.
//! - [`skills`]: the skill registry, specs, the goal runner and the built-in skills.
//! - [`perception`]: cameras (the simulated one renders PNGs) and vision results.
//! - [`mcp`]: skills as MCP tools and one outside call's outcome (the transport is in the faces).
//! - [`policy`]: which ops need an operator's approval.
//! - [`timezone`]: the home's IANA time zone (daylight saving included) and its local hour.
//! - [`link`]: the brain ↔ robot boundary (`RobotLink`), shaped like a ROS 2 action;
//!   in process (`SimLink`) or over TCP (`TcpLink`).
//! - [`world`]: the map — zones, passages, routes — read from world files; the grid and the A* planner.
//! - [`sim`]: the simulated robot in a world: base, battery, goals, faults; `SimLink`, `SimServer`.
//! - [`scenario`]: scripted headless runs with expectations and a report.
//! - [`source`]: file:line:col errors for the files people write.
//! - [`config`]: layered configuration with precise errors.
//! - [`eventlog`]: the JSONL event log every run writes.
//! - [`mcap`]: a run as an MCAP file for Foxglove (`--mcap`, `robobrain export mcap`).
//! - [`audio`]: WAV files, and sound through cpal (feature `audio`).
//! - [`voice`]: speech as WAV files (espeak-ng) or text only; barge-in.
//! - [`hci`]: the home's conversational fast path: intents, policy gate, three-track replies, audit.
//! - [`lines`]: what robobrain itself says, in the language it was spoken to (English, Chinese).
//! - [`intents`]: language as data: Home Assistant's template grammar (and the robot's own) and one matcher.
//! - [`fleet`]: many robots on one MQTT broker — robobrain's own protocol and VDA 5050 — and a fleet console's side.
//! - [`devices`]: smart-home devices (rooms, capabilities, state), simulated or real.
//! - [`store`]: SQLite: threads, checkpoints, the side-effect ledger, approvals, events.
//! - [`model_assistant`]: `assist --model`: what the rules miss on an assist dataset, sent to the model.
//! - [`metrics`]: the run's Prometheus metrics (counted from its events, read off its snapshot) and its health.
//! - [`memory`]: conversation windows, long-term summaries, hybrid (BM25 + embedding) retrieval, preferences.
//! - `testing` (feature `test-utils`): the test suite's prerequisites — required, or a skip that is said.

pub mod diagnostics;
pub mod engine;
pub mod eventlog;
pub mod mcap;
pub mod model_assistant;
pub mod runtime;
pub mod scenario;
pub mod session;
pub mod voice;

#[cfg(test)]
mod doors_through_the_engine;
#[cfg(test)]
mod fleet_through_the_session;
#[cfg(test)]
mod home_assistant_through_the_session;
#[cfg(test)]
mod mcp_through_the_engine;
#[cfg(test)]
mod skills_through_the_engine;

// The layers below the core, each its own crate (ARCHITECTURE.md, "Crates"),
// re-exported so that `robobrain_core::protocol::…` and `crate::protocol::…`
// name the same items as before the split.
pub use robobrain_config::config;
pub use robobrain_fleet::fleet;
pub use robobrain_home::{assist, devices, hci, policy};
pub use robobrain_intents::intents;
pub use robobrain_kernel::{brain, kernel, react};
pub use robobrain_link::{link, sim};
pub use robobrain_llm::{audio, llm};
pub use robobrain_mcp::mcp;
pub use robobrain_memory::memory;
pub use robobrain_ros2::ros2;
pub use robobrain_skills::{offload, perception, skills, webhook};
pub use robobrain_store::store;
#[cfg(any(test, feature = "test-utils"))]
pub use robobrain_wire::testing;
pub use robobrain_wire::{
    geometry, lines, mapview, metrics, places, progress, protocol, rng, secrets, source, text,
    timezone, world,
};
