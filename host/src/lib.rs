//! Placeholder crate: filled in by its own issue.
