//! What exists only because of how array-format 0.15 behaves around its
//! calls: its panics caught (`panics`), the storage error kinds it flattens
//! into strings recovered (`error_kinds`), and the `ObjectStore` methods it
//! never calls refused by this crate's stores (`unsupported_store_methods`).
//! `docs/array-format-notes.md` says why each exists and what would end it.

#[macro_use]
pub(crate) mod unsupported_store_methods;

pub(crate) mod error_kinds;
pub(crate) mod panics;
