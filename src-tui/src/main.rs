//! The `robobrain` binary.

fn main() {}
