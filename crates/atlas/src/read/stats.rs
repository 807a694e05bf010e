//! Statistics of one array per dataset, as the across-datasets questions list them.

use atlas_segment::ArrayStats;

/// One dataset's statistics of one array, as [`crate::Atlas::array_stats_by_dataset`] lists them.
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetStats {
    /// The dataset's name.
    pub dataset: String,
    /// The dataset's ordinal.
    pub ordinal: u32,
    /// Its statistics of the array.
    pub stats: ArrayStats,
}
