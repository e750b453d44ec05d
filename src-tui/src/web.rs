//! `robobrain serve`: the web console. One page (`ui/`, built and embedded
//! in the binary) over HTTP, the Command/Event protocol over a WebSocket,
//! many viewers at once, operators and read-only viewers; with `--fleet`,
//! the same page for every robot on an MQTT broker ([`fleet`]).

pub mod access;
pub mod assets;
pub mod fleet;
pub mod server;

pub use access::{Access, Role};
pub use fleet::FleetServed;
pub use server::{Served, WebServer};
