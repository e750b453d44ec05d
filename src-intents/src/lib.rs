//! robobrain-intents: language as data — Home Assistant's template grammar
//! (and the robot's own, in the same format) and one matcher over it.
//! Depends only on the wire's text helpers.

pub mod intents;

use robobrain_wire::text;
