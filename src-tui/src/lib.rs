//! The faces of robobrain: the operator console (in the library, so benches
//! and tests can drive it without a terminal), the MCP server and the web
//! console;
//! the `robobrain` binary (`main.rs`) adds the demo, headless and scenario
//! subcommands.

pub mod console;
pub mod mcp;
pub mod operator;
pub mod report;
pub mod web;
