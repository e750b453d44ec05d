//! brain (in progress).
