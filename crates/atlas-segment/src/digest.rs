//! What the calls across datasets need of a segment, taken from its footer
//! without array-format's open: each array's name, type, shape and
//! statistics, and one attribute of every array.
//!
//! array-format's open decodes its whole footer into memory (chunk tables,
//! attribute columns, an index by name), which for a segment of tens of
//! thousands of arrays costs more than reading the footer. A fold of
//! statistics needs three fields per array, so they are read off the archive
//! while the screen validates and walks it anyway: one validation, no full
//! decode. The footer bytes are kept for an attribute asked for next (read
//! off the archive again, only its values decoded) and for an open that may
//! follow, which then reads nothing again.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use foldhash::fast::FixedState;

use crate::attr::Attr;
use crate::error::SegmentError;
use crate::mirror::{ArchivedArrayMeta, ArchivedFooter, DiskValue};
use crate::screen::{ArrayProblem, FooterProblem, attribute_budget, with_footer};
use crate::segment::Segment;
use crate::value::{ArrayStats, dtype_from_stored, stats_from_archived};

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

/// Every array of one segment, in segment order, with what screening found
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

    /// `Err` if screening found array `array` unusable, as [`Segment::check`].
    pub fn check(&self, array: &str) -> Result<(), SegmentError> {
        SegmentError::screened(&self.segment, array, &self.problems)
    }

    /// The digest of a segment already open.
    pub(crate) fn of_segment(segment: &Segment) -> Self {
        Self {
            segment: segment.name().to_owned(),
            arrays: segment
                .arrays()
                .zip(
                    segment
                        .first_blocks()
                        .iter()
                        .copied()
                        .chain(std::iter::repeat(None)),
                )
                .map(|(a, first_block)| ArrayDigest {
                    name: a.name().to_owned(),
                    dtype: a.dtype(),
                    stats: a.stats(),
                    first_block,
                    shape: a.shape().iter().map(|&n| u64::from(n)).collect(),
                })
                .collect(),
            problems: segment.problems().clone(),
        }
    }

    /// A digest from arrays read off the footer and the screen's findings.
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

/// The digest of one archived array (validated by the screen), whose written
/// chunks start in block `first_block`.
pub(crate) fn digest_of(
    array: &ArchivedArrayMeta,
    first_block: Option<u32>,
) -> Result<ArrayDigest, FooterProblem> {
    let dtype = rkyv::deserialize::<array_format::DType, rkyv::rancor::Error>(&array.dtype)
        .map_err(|e| FooterProblem::DoesNotValidate {
            message: e.to_string(),
        })?;
    Ok(ArrayDigest {
        name: array.name.as_str().to_owned(),
        dtype: dtype_from_stored(&dtype),
        stats: array.stats.as_ref().map(stats_from_archived),
        first_block,
        shape: array
            .shape
            .iter()
            .map(|n| u64::from(n.to_native()))
            .collect(),
    })
}

/// Attribute `key` of every array of the segment whose footer ends `tail`,
/// in footer order (`None` for an array without it), read off the archive
/// without array-format's open; `None` when no array stores it.
///
/// Only the values asked for are decoded, each distinct one once, and the
/// memory of the answer is counted before any of it is allocated: values
/// are pooled, so a small footer can name one large value from every array.
pub(crate) fn attribute_cells(
    tail: &[u8],
    key: &str,
) -> Result<Option<Vec<Option<Attr>>>, FooterProblem> {
    with_footer(tail, |footer, footer_len| {
        let Some(key_at) = footer.strings.iter().position(|s| s.as_str() == key) else {
            return Ok(None);
        };
        let budget = attribute_budget(footer_len);
        let over = || FooterProblem::AttributeValues {
            key: key.to_owned(),
            budget,
        };
        // Which pool value each array names (keys are pooled strings, so the
        // key is one index; a later pair wins), and what the answer will cost.
        let mut picks = Vec::with_capacity(footer.arrays.len());
        // Each distinct value decoded once, with the number of arrays naming it.
        let mut decoded: HashMap<u32, (Attr, usize), FixedState> =
            HashMap::with_hasher(FixedState::default());
        let mut cost: u64 = 0;
        for array in footer.arrays.iter() {
            let pick = array
                .attributes
                .iter()
                .rev()
                .find(|pair| usize::try_from(pair.0.to_native()).ok() == Some(key_at))
                .map(|pair| pair.1.to_native());
            if let Some(index) = pick {
                let (value, uses) = match decoded.entry(index) {
                    Entry::Occupied(e) => e.into_mut(),
                    Entry::Vacant(e) => {
                        e.insert((pooled_value(footer, array, index, budget, &over)?, 0))
                    }
                };
                *uses = uses.saturating_add(1);
                cost = cost
                    .saturating_add(std::mem::size_of::<Option<Attr>>() as u64)
                    .saturating_add(value.heap_bytes() as u64);
                if cost > budget {
                    return Err(over());
                }
            }
            picks.push(pick);
        }
        if picks.iter().all(Option::is_none) {
            return Ok(None);
        }
        Ok(Some(
            picks
                .into_iter()
                .map(|pick| pick.and_then(|index| take_or_clone(&mut decoded, index)))
                .collect(),
        ))
    })
}

/// Value `index` for one array naming it: the decoded value itself for the
/// last of them, a copy for the others.
fn take_or_clone(
    decoded: &mut HashMap<u32, (Attr, usize), FixedState>,
    index: u32,
) -> Option<Attr> {
    let Entry::Occupied(mut entry) = decoded.entry(index) else {
        return None;
    };
    let (value, uses) = entry.get_mut();
    *uses = uses.saturating_sub(1);
    if *uses == 0 {
        Some(entry.remove().0)
    } else {
        Some(value.clone())
    }
}

/// Entry `index` of the footer's value pool, named by an attribute of
/// `array`; its strings count against `budget` before they are copied.
fn pooled_value(
    footer: &ArchivedFooter,
    array: &ArchivedArrayMeta,
    index: u32,
    budget: u64,
    over: &impl Fn() -> FooterProblem,
) -> Result<Attr, FooterProblem> {
    let outside = |pool, index, len| FooterProblem::AttributePool {
        array: array.name.as_str().to_owned(),
        pool,
        index,
        len,
    };
    let archived = usize::try_from(index)
        .ok()
        .and_then(|i| footer.values.get(i))
        .ok_or_else(|| outside("value", index, footer.values.len()))?;
    let value = rkyv::deserialize::<DiskValue, rkyv::rancor::Error>(archived).map_err(|e| {
        FooterProblem::DoesNotValidate {
            message: e.to_string(),
        }
    })?;
    let strings = &footer.strings;
    let mut failure = None;
    let mut spent: u64 = 0;
    let attr = Attr::from_disk(value, |i| {
        let Some(s) = usize::try_from(i).ok().and_then(|at| strings.get(at)) else {
            failure = Some(outside("string", i, strings.len()));
            return None;
        };
        spent = spent.saturating_add(s.len() as u64);
        if spent > budget {
            failure = Some(over());
            return None;
        }
        Some(s.as_str().to_owned())
    });
    attr.ok_or_else(|| failure.unwrap_or_else(|| outside("string", index, strings.len())))
}
