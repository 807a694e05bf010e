//! The write path: building a collection.
//!
//! [`AtlasWriter`] owns one array-format writer per variable (array name),
//! each behind its own lock. [`DatasetWriter`]s buffer their arrays locally
//! and push them into those writers when they finish, so datasets built on
//! different tasks compress in parallel and an abandoned dataset leaves no
//! trace. [`AtlasWriter::finish`] streams the container front to back in one
//! pass. `docs/write-path.md` has the whole story.

mod buffer;
mod collection;
mod config;
mod dataset;
mod rewrite;
mod state;
mod variables;

pub use collection::{AtlasWriter, WriteSummary};
pub use config::{
    DEFAULT_SMALL_BLOCK_TARGET_SIZE, DEFAULT_ZSTD_LEVEL, SMALL_CHUNK_BYTES, WriterConfig,
};
pub use dataset::DatasetWriter;
pub(crate) use rewrite::copy_datasets;
pub use rewrite::rewrite;
