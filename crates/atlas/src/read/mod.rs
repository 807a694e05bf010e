//! The read path: opening a collection and reading from it.
//!
//! - [`Member`] (`member`): one container opened (one tail read of
//!   `data.atlas` plus the mask, concurrently) and its catalogue, answered
//!   from memory; `Live`, the snapshot of which ordinals a question covers;
//! - `directory`: the footer, the mask and their indexes, in one value;
//! - [`Dataset`] (`dataset`): an owned handle on one dataset's schema,
//!   layouts, statistics, attributes and data;
//! - `across_datasets`: statistics and attribute columns over every live
//!   dataset, one segment open and one pass each;
//! - [`Region`] (`region`): which part of an array a read returns;
//! - `many`: one array from many datasets as a stream, a bounded number of
//!   reads in flight over one shared segment and block cache;
//! - `delete`: the deletion mask, one GET and one PUT per batch;
//! - segments come from `atlas-segment`'s `ContainerSegments`: each opened
//!   once, its footer validated, on first use.
//!
//! The handle users open is [`Atlas`](crate::Atlas) (`set::reader`): a set,
//! or a lone collection as a set of one member.

mod across_datasets;
mod dataset;
mod delete;
mod directory;
mod many;
mod member;
mod region;
mod stats;

pub(crate) use across_datasets::{Source, declared_array, declared_by, declared_per_schema};
pub use dataset::{ArrayLayout, Dataset};
pub use delete::DeleteOutcome;
pub use many::Order;
pub(crate) use many::read_many;
pub(crate) use member::Live;
pub use member::{Member, OpenOptions, SegmentInfo};
pub use region::{Region, Selection};
pub(crate) use stats::fold_stats;
pub use stats::{DatasetBlock, DatasetShape, DatasetStats};
