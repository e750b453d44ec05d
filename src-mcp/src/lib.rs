//! robobrain-mcp: the Model Context Protocol on robobrain's side — skills
//! as MCP tools, one call's events adding up to its outcome, and the client
//! that makes configured MCP services skill sources. The server
//! (`robobrain mcp`) is a face, in `robobrain-tui`.
//!
//! - [`mcp`]: tools, calls, remote tools and the client.

pub mod mcp;

use robobrain_config::config;
use robobrain_skills::skills;
use robobrain_wire::{protocol, secrets, world};
