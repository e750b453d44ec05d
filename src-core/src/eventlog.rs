//! eventlog (in progress).
