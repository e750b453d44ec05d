//! `robobrain serve`: the web console. One page (`ui/`, built and embedded
//! in the binary) over HTTP, the Command/Event protocol over a WebSocket,
//! many viewers at once, operators and read-only viewers.

pub mod access;
pub mod assets;
pub mod server;

pub use access::{Access, Role};
pub use server::{Served, WebServer};
