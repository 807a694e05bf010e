//! Transport for Atlas collections: moves bytes between storage and the format layer.
//!
//! `atlas-format` turns collections into bytes and back without doing I/O;
//! `atlas-segment` shows array-format the segments; the `atlas` facade decides
//! what to read and write. This crate sits between
//! them and knows how to move bytes over OpenDAL, but not what they mean:
//!
//! - [`read`]: range, suffix and whole-object reads that reject short reads,
//!   and big reads split into parts fetched concurrently ([`ReadParallelism`]);
//! - [`mask_store`]: atomic and conditional whole-object writes for the
//!   `deleted.mask` sidecar;
//! - `counting`: an OpenDAL layer that counts requests and injects faults,
//!   and `cas_memory`: an in-memory service with ETags and compare-and-swap
//!   writes. Both are test doubles, built only with the `testing` feature;
//! - [`leftovers`]: what interrupted writes leave behind (temp files, and
//!   through [`uploads`] S3's incomplete multipart uploads), listed and removed;
//! - [`transport`]: installs OpenDAL's HTTP transport for the cloud services;
//! - [`error`]: [`IoError`], the backend's failure with its kind, path and operation.

#[cfg(feature = "testing")]
pub mod cas_memory;
#[cfg(feature = "testing")]
pub mod counting;
pub mod error;
pub mod leftovers;
pub mod mask_store;
pub mod open;
pub mod path;
pub mod read;
pub mod retry;
pub mod transport;
pub mod uploads;

#[cfg(feature = "testing")]
pub use cas_memory::{CasMemory, HeldWrite};
#[cfg(feature = "testing")]
pub use counting::{CountingLayer, Counts, Faults, ReadRecord, RequestStats};
pub use error::{IoError, IoErrorKind, ShortRead};
pub use leftovers::{Leftover, LeftoverKind, list_leftovers, list_recursive, remove_leftovers};
pub use mask_store::{
    ATOMIC_WRITE_DIR, LOCK_SUFFIX, UpdateError, UpdateOutcome, WriteGuarantee, fs_operator,
    put_atomic, remove_empty_atomic_write_dir, update_checked, update_conditionally,
};
pub use path::object_path;
pub use read::{
    ReadParallelism, Snapshot, read_optional, read_range, read_ranges, read_split,
    read_split_pieces, read_suffix, stat_len, supports_suffix_reads,
};
pub use retry::RetryPolicy;
pub use transport::install_http_transport;
pub use uploads::{MultipartUploads, Upload};
