//! MCP (the Model Context Protocol), the pure half: how a [`SkillSpec`]
//! looks as an MCP tool, how a tool call's arguments are checked before it
//! reaches the kernel, and how the events of one call (`Command::Call`) add
//! up to its outcome. No IO and no MCP library here: the `robobrain mcp`
//! face (crate `robobrain-tui`) does the transport.
//!
//! - `tools.rs`: specs → MCP tool definitions; arguments checked against them.
//! - `call.rs`: one call's events → confirmation required, succeeded or failed.
//! - `remote.rs`: a configured MCP service's tools as skills `mcp.<service>.<tool>`.

pub mod call;
pub mod remote;
pub mod tools;

pub use call::{CallOutcome, CallWatch};
pub use tools::{ToolError, ToolSet, tool_definition};
