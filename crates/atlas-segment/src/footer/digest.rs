//! What the calls across datasets need of a segment, taken from its footer
//! without array-format's open: each array's name, type, shape and
//! statistics (one attribute of every array is read by `attributes`).
//!
//! array-format's open decodes its whole footer into memory (chunk tables,
//! attribute columns, an index by name), which for a segment of tens of
//! thousands of arrays costs more than reading the footer. A fold of
//! statistics needs three fields per array, so they are read off the archive
//! while validation validates and walks it anyway: one validation, no full
//! decode. The validated archive is kept for an attribute asked for next
//! (only its values decoded) and for an open that may follow, which then
//! neither reads nor validates the footer again.

use std::collections::HashMap;

use crate::error::SegmentError;
use crate::footer::schema::ArchivedArrayMeta;
use crate::footer::validate::ArrayProblem;
use crate::read::segment::Segment;
use crate::types::value::{ArrayStats, dtype_from_archived, stats_from_archived};

/// One array of a segment as the statistics calls see it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ArrayDigest {
    /// The array's (its dataset's) name.
    pub name: String,
    /// Its element type.
    pub dtype: atlas_format::DType,
    /// The statistics its writer recorded, if any.
    pub stats: Option<ArrayStats>,
    /// The lowest id of the data blocks its written chunks lie in (None:
    /// nothing written). Writers fill blocks in array order, so arrays
    /// sharing this id share a block: one read serves them all.
    pub first_block: Option<u32>,
    /// Its shape, as the segment records it (what a collection-wide view
    /// needs to lay datasets end to end without opening the segment).
    pub shape: Vec<u64>,
}

/// Every array of one segment, in segment order, with what validation found
/// wrong with single arrays.
#[derive(Debug, Clone)]
pub struct SegmentDigest {
    segment: String,
    arrays: Vec<ArrayDigest>,
    problems: HashMap<String, ArrayProblem>,
}

impl SegmentDigest {
    /// The arrays, in segment order (damaged ones included: see [`SegmentDigest::check`]).
    pub fn arrays(&self) -> &[ArrayDigest] {
        &self.arrays
    }

    /// `Err` if validation found array `array` unusable, as [`Segment::check`].
    pub fn check(&self, array: &str) -> Result<(), SegmentError> {
        SegmentError::validated(&self.segment, array, &self.problems)
    }

    /// The digest of a segment already open.
    pub(crate) fn of_segment(segment: &Segment) -> Self {
        let first_blocks = segment.first_blocks().iter().copied();
        Self {
            segment: segment.name().to_owned(),
            arrays: segment
                .arrays()
                .zip(first_blocks.chain(std::iter::repeat(None)))
                .map(|(a, first_block)| digest_of(a.meta(), first_block))
                .collect(),
            problems: segment.problems().clone(),
        }
    }

    /// A digest from arrays read off the footer and validation's findings.
    pub(crate) fn new(
        segment: &str,
        arrays: Vec<ArrayDigest>,
        problems: HashMap<String, ArrayProblem>,
    ) -> Self {
        Self {
            segment: segment.to_owned(),
            arrays,
            problems,
        }
    }
}

/// The digest of one archived array (already validated), whose written
/// chunks start in block `first_block`.
pub(crate) fn digest_of(array: &ArchivedArrayMeta, first_block: Option<u32>) -> ArrayDigest {
    ArrayDigest {
        name: array.name.as_str().to_owned(),
        dtype: dtype_from_archived(&array.dtype),
        stats: array.stats.as_ref().map(stats_from_archived),
        first_block,
        shape: array
            .shape
            .iter()
            .map(|n| u64::from(n.to_native()))
            .collect(),
    }
}
