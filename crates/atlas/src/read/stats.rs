//! Statistics, blocks and shapes of one array per dataset, as the across-datasets questions list them.

use std::borrow::Borrow;

use atlas_format::DType;
use atlas_segment::ArrayStats;
use smol_str::SmolStr;

/// `stats` folded as the collection-wide questions fold them: element and
/// null counts summed, least minimum, greatest maximum; `None` for none.
pub(crate) fn fold_stats<S: Borrow<ArrayStats>>(
    stats: impl IntoIterator<Item = S>,
) -> Option<ArrayStats> {
    let mut folded: Option<ArrayStats> = None;
    for stats in stats {
        match folded.as_mut() {
            Some(acc) => acc.merge(stats.borrow()),
            None => folded = Some(stats.borrow().clone()),
        }
    }
    folded
}

/// One dataset's statistics of one array, as [`crate::Atlas::array_stats_by_dataset`] lists them.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DatasetStats {
    /// The dataset's name.
    pub dataset: SmolStr,
    /// The dataset's ordinal.
    pub ordinal: u32,
    /// Its statistics of the array.
    pub stats: ArrayStats,
}

/// Where one dataset's array starts among the data blocks of its segment, as
/// [`crate::Atlas::array_blocks_by_dataset`] lists them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DatasetBlock {
    /// The dataset's name.
    pub dataset: SmolStr,
    /// The dataset's ordinal.
    pub ordinal: u32,
    /// The lowest data block id its written chunks lie in (None: nothing
    /// written, it reads as fill). Datasets sharing it share a block.
    pub first_block: Option<u32>,
}

/// One dataset's shape and element type of one array, as
/// [`crate::Atlas::array_shapes_by_dataset`] lists them.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct DatasetShape {
    /// The dataset's name.
    pub dataset: SmolStr,
    /// The dataset's ordinal.
    pub ordinal: u32,
    /// The array's element type, as its segment records it.
    pub dtype: DType,
    /// The array's shape, as its segment records it.
    pub shape: Vec<u64>,
}
