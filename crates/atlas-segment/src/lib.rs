//! # atlas-segment
//!
//! The one crate that knows array-format. An Atlas container holds one
//! array-format file ("segment") per variable, back to back; this crate opens
//! them from byte ranges of the container, validates their footers before
//! array-format parses them, reads arrays, layouts, statistics and attributes,
//! and writes new segments into a container being streamed. Its API is typed
//! and does not panic whatever the bytes: no array-format or object_store type
//! appears in it, so an upgrade of either stays inside.
//!
//! What lives here, by job:
//! - [`read`]: [`ContainerSegments`] (the segments of one container, each
//!   opened once on first use, with its options and caches), [`Segment`]
//!   (one opened segment, its footer read in place) and its view of one
//!   array, [`ArrayRef`]; privately, the reads that decode each data block
//!   once for every array in it, the read-ahead decisions over a data
//!   region, and the store that shows array-format one byte range of the
//!   container as a file;
//! - [`footer`]: a segment's end read without array-format's open: the tail
//!   and its trailer, the footer validated before anything walks it (its
//!   typed findings, [`FooterProblem`] and [`ArrayProblem`]), each array's
//!   name, type and statistics ([`SegmentDigest`]), one array's entry, and
//!   attributes; privately, the archived footer types as array-format lays
//!   them out, which the writer archives its footers with too;
//! - [`write`](mod@write): [`SegmentWriter`] and the [`ContainerSink`] it appends to;
//!   the file is built without array-format's writer, to the same bytes;
//!   segments finished into temporary storage ([`SpooledSegment`]) so a
//!   commit finishes several at once and appends them in order;
//! - [`types`]: the element types, attribute values, fill values,
//!   statistics and untyped arrays of the API;
//! - [`error`]: what can go wrong, as one [`SegmentError`];
//! - privately, `compat`: what exists only because of how array-format
//!   behaves around its calls (its panics caught, the error kinds it
//!   flattens into strings recovered, the `ObjectStore` methods it never
//!   calls refused). `docs/array-format-notes.md` says why each exists.

#[macro_use]
mod compat;

pub mod error;
pub mod footer;
pub mod read;
pub mod types;
pub mod write;

#[cfg(test)]
mod test_support;

pub use error::SegmentError;
pub use footer::digest::{ArrayDigest, BlockPlace, ChunkPlace, SegmentDigest};
pub use footer::tail::{ARRF_MAGIC, ARRF_TRAILER_LEN, DEFAULT_PREFETCH};
pub use footer::validate::{ArrayProblem, FooterProblem};
pub use read::blocks::BLOCKS_KEPT_PER_SEGMENT;
pub use read::container_segments::{
    ContainerSegments, DEFAULT_BLOCK_CACHE_BYTES, PLACED_ARRAYS_KEPT, SegmentOptions, SegmentRange,
    open_bytes,
};
pub use read::read_ahead::READ_AHEAD_START;
pub use read::segment::{ArrayRef, Segment};
pub use types::any_array::{AnyArray, ArrayData};
pub use types::attr::Attr;
pub use types::element::Element;
pub use types::value::{ArrayStats, Timestamp, Value};
pub use write::sink::{SinkError, WrittenSegment};
pub use write::spool::SpooledSegment;
pub use write::writer::{ContainerSink, DEFAULT_BLOCK_TARGET_SIZE, SegmentWriter, WriteOptions};
