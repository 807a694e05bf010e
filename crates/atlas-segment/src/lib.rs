//! # atlas-segment
//!
//! The one crate that knows array-format. An Atlas container holds one
//! array-format file ("segment") per variable, back to back; this crate opens
//! them from byte ranges of the container, screens their footers before
//! array-format parses them, reads arrays, layouts, statistics and attributes,
//! and writes new segments into a container being streamed. Its API is typed
//! and does not panic whatever the bytes: no array-format or object_store type
//! appears in it, so an upgrade of either stays inside.
//!
//! What lives here:
//! - [`set`]: [`SegmentSet`] (every segment of a container, opened once on
//!   first use, with its options and caches);
//! - [`segment`]: [`Segment`] (one opened segment, its footer read in
//!   place) and its view of one array, [`ArrayRef`];
//! - [`writer`]: [`SegmentWriter`] and the [`ContainerSink`] it appends to;
//!   the file itself is built without array-format's writer, to the same
//!   bytes (`pack`);
//! - [`spool`]: segments finished into temporary storage ([`SpooledSegment`]),
//!   so a commit finishes several at once and appends them in order;
//! - [`screen`]: the footer screen and its typed findings;
//! - [`digest`]: each array's name, type and statistics read off a footer
//!   without array-format's open;
//! - [`element`], [`attr`], [`value`], [`any`]: the element types, attribute
//!   values, fill values, statistics and untyped arrays of the API;
//! - privately, without I/O: the decoder that reads a segment's tail and
//!   checks its trailer (`tail`), the mirror of array-format's footer types
//!   that the screen, the one-array lookup and the digest validate footers
//!   with (`mirror`), a validated footer held with its bytes and its index
//!   by name (`archive`), attribute values read off it (`attributes`), the
//!   one-array footer lookup (`lookup`), and the read-ahead decisions over
//!   a segment's data region (`read_ahead`);
//! - privately, beside array-format's read path: the reads of fixed-width
//!   arrays that decode each block once for every array in it (`blocks`);
//! - privately, around array-format's calls: the object_store shims it reads
//!   and writes through (`store`, `sink`), the panic firewall (`guard`), the
//!   recovery of error kinds array-format flattens into strings (`track`) and
//!   the block codecs (`codec`). `docs/array-format-notes.md` says why each
//!   exists.

#[macro_use]
mod refusals;

pub mod any;
mod archive;
pub mod attr;
mod attributes;
mod blocks;
mod codec;
pub mod digest;
pub mod element;
pub mod error;
mod guard;
mod lookup;
mod mirror;
mod pack;
mod read_ahead;
pub mod screen;
pub mod segment;
pub mod set;
mod sink;
pub mod spool;
mod store;
mod tail;
mod track;
pub mod value;
pub mod writer;

#[cfg(test)]
mod blocks_tests;
#[cfg(test)]
mod pack_tests;
#[cfg(test)]
mod sink_tests;
#[cfg(test)]
mod store_tests;
#[cfg(test)]
mod test_support;

pub use any::{AnyArray, ArrayData};
pub use attr::Attr;
pub use blocks::BLOCKS_KEPT_PER_SEGMENT;
pub use digest::{ArrayDigest, SegmentDigest};
pub use element::Element;
pub use error::SegmentError;
pub use read_ahead::{READ_AHEAD_MAX, READ_AHEAD_START};
pub use screen::{ArrayProblem, FooterProblem};
pub use segment::{ArrayRef, Segment};
pub use set::{DEFAULT_BLOCK_CACHE_BYTES, SegmentOptions, SegmentRange, SegmentSet, open_bytes};
pub use sink::{SinkError, WrittenSegment};
pub use spool::SpooledSegment;
pub use tail::{ARRF_MAGIC, ARRF_TRAILER_LEN, DEFAULT_PREFETCH};
pub use value::{ArrayStats, FillValue, Stat, Timestamp};
pub use writer::{ContainerSink, DEFAULT_BLOCK_TARGET_SIZE, SegmentWriter, WriteOptions};
