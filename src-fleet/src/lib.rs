//! robobrain-fleet: robots on an MQTT broker, in robobrain's own protocol
//! and in VDA 5050 v2.1 — one robot's side (the bridge, pure; the link, its
//! IO, which the session builder starts) and the operator's (the fleet
//! console's view and client, the fleet page's board and hub).
//!
//! - [`fleet`]: topics, VDA 5050's messages, the bridge and link, the view,
//!   the board and hub; `fleet::testkit` (feature `test-utils`) is what the
//!   tests above borrow. The tests that run whole sessions on a broker sit
//!   in the core (`fleet_through_the_session.rs`).

pub mod fleet;

use robobrain_config::config;
use robobrain_home::devices;
#[cfg(any(test, feature = "test-utils"))]
use robobrain_wire::testing;
use robobrain_wire::{geometry, metrics, protocol, world};
