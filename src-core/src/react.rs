//! react (in progress).
