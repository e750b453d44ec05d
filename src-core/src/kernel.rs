//! kernel (in progress).
