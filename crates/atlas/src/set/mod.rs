//! Collection sets (docs/sets.md): what a committer records of a member and what a deep verify checks.

pub(crate) mod integrity;
pub(crate) mod summary;
