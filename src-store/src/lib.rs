//! robobrain-store: SQLite as it ships — threads, checkpoints, the side-effect
//! ledger, approvals, events and the audit log (docs/durability.md).

pub mod store;

use robobrain_link::link;
use robobrain_wire::protocol;
