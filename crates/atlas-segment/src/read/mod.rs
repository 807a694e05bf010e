//! Reading segments: the segments of one container, each opened once and
//! kept with its caches ([`container_segments`]), one opened segment and its
//! arrays ([`segment`]), the reads that decode each data block once
//! (`blocks`), the read-ahead decisions over a data region (`read_ahead`),
//! and the byte ranges of the container shown to array-format as files
//! (`segment_store`).

pub(crate) mod blocks;
pub mod container_segments;
pub(crate) mod read_ahead;
pub mod segment;
pub(crate) mod segment_store;

#[cfg(test)]
mod blocks_tests;
#[cfg(test)]
mod segment_store_tests;
