//! robobrain-kernel: what decides, as data and pure functions.
//!
//! - [`kernel`]: the outer loop's hard rules (seed 003 K1–K6) — tasks, their
//!   priority queue, mode arbitration and preemption;
//! - [`react`]: the inner loop (R1–R8) — the per-task state, the decision a
//!   brain returns, the guardrails and loop guards, and `react::step::step`,
//!   the loop's transitions as one pure function;
//! - [`brain`]: the decision providers behind one trait — the rule brain
//!   (offline, the fallback of every other), the model's, a scripted one —
//!   and intent recognition.
//!
//! The engine (in the core) drives them; nothing here opens a file or a
//! socket, but the model brain's client.

pub mod brain;
pub mod kernel;
pub mod react;

use robobrain_config::config;
use robobrain_home::policy;
use robobrain_intents::intents;
use robobrain_link::link;
use robobrain_llm::llm;
use robobrain_memory::memory;
use robobrain_skills::{perception, skills};
use robobrain_wire::{protocol, text, world};
