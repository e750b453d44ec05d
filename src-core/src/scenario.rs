//! scenario (in progress).
