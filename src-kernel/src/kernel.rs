//! The outer loop's hard rules (seed 003 K1–K6): tasks and their priority
//! queue, mode arbitration and preemption. No model decides anything here.

pub mod arbitrate;
pub mod queue;
pub mod task;

pub use arbitrate::{Arbitration, ArbitrationInput, arbitrate};
pub use queue::TaskQueue;
pub use task::{PlanStep, Task, TaskKind};
