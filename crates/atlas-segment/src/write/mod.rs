//! Writing segments: one segment built in memory ([`writer`]), its bytes laid
//! out without array-format's writer (`pack`), its blocks compressed
//! (`codec`), several finished at once into temporary storage ([`spool`]),
//! and appended in order to the container being streamed (`sink`).

pub(crate) mod codec;
pub(crate) mod pack;
pub(crate) mod sink;
pub mod spool;
pub mod writer;

#[cfg(test)]
mod pack_tests;
#[cfg(test)]
mod sink_tests;
