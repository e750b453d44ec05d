//! policy (in progress).
