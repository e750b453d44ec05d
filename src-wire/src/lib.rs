//! robobrain-wire: the bottom layer every other crate stands on — what the
//! faces and the brain say to each other, and the world they say it about.
//! Pure data and logic; it reads files but opens no socket and starts no thread.
//!
//! - [`protocol`]: the wire — `Command` in, `Event` out, `Snapshot` for a first paint.
//! - [`metrics`]: a run's metrics in Prometheus' text format and its health, counted from its events.
//! - [`matcher`]: subset matching of events against the patterns scenario files write.
//! - [`world`]: the map — zones, passages, routes — read from world files; the grid and the A* planner.
//! - [`mapview`]: the map as the faces draw it.
//! - [`geometry`]: points, poses, rectangles.
//! - [`source`]: file:line:col errors for the files people write.
//! - [`lines`]: what robobrain itself says, in the language it was spoken to (English, Chinese).
//! - [`text`]: text helpers shared by the understanders (CJK detection, normalising).
//! - [`places`]: where robobrain finds its config and keeps its data (XDG).
//! - [`secrets`]: secrets read from files or the environment, never printed.
//! - [`timezone`]: the home's IANA time zone (daylight saving included) and its local hour.
//! - [`rng`]: a small seeded generator (SplitMix64) for reproducible runs.
//! - [`progress`]: progress reported by long loads.
//! - `testing` (feature `test-utils`): the test suite's prerequisites — required, or a skip that is said.

pub mod geometry;
pub mod lines;
pub mod mapview;
pub mod matcher;
pub mod metrics;
pub mod places;
pub mod progress;
pub mod protocol;
pub mod rng;
pub mod secrets;
pub mod source;
#[cfg(any(test, feature = "test-utils"))]
pub mod testing;
pub mod text;
pub mod timezone;
pub mod world;
