//! `robobrain serve`: the web console. One page (`ui/`, built and embedded
//! in the binary) over HTTP, the Command/Event protocol over a WebSocket,
//! many viewers at once, operators and read-only viewers; with `--fleet`,
//! the same page for every robot on an MQTT broker ([`fleet`]); over TLS
//! with a certificate ([`tls`]).

pub mod access;
pub mod assets;
pub mod fleet;
pub mod server;
pub mod tls;

pub use access::{Access, Role};
pub use fleet::FleetServed;
pub use server::{Served, WebServer};
