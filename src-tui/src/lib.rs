//! The faces of robobrain that live in the terminal. The library holds the
//! operator console (so benches and tests can drive it without a terminal);
//! the `robobrain` binary (`main.rs`) adds the demo, headless and scenario
//! subcommands.

pub mod console;
pub mod mcp;
pub mod session;
