//! MCP (the Model Context Protocol): how a [`SkillSpec`] looks as an MCP
//! tool, how a tool call's arguments are checked before it reaches the
//! kernel, how the events of one call (`Command::Call`) add up to its
//! outcome — all pure — and the client that makes configured MCP services
//! skill sources. The server side (`robobrain mcp`) is a face (crate
//! `robobrain-tui`).
//!
//! - `tools.rs`: specs → MCP tool definitions; arguments checked against them.
//! - `call.rs`: one call's events → confirmation required, succeeded or failed.
//! - `remote.rs`: a configured MCP service's tools as skills `mcp.<service>.<tool>`.
//! - `client.rs`: starting those services (rmcp's client) and making their calls.

pub mod call;
pub mod client;
pub mod remote;
pub mod tools;

pub use call::{CallOutcome, CallWatch};
pub use tools::{ToolError, ToolSet, tool_definition};
