//! [`Region`]: which part of an array a read returns.
//!
//! One selection per axis: an index (the axis is dropped from the result, as
//! numpy's basic indexing does), a range (`2..`, `0..4`, `..=3`) or the whole
//! axis. [`Region::all`] is the whole array whatever its rank.
//!
//! Cost: a read fetches each block holding a written chunk that overlaps the
//! region and is not cached, in one request per block; unwritten chunks read
//! as the fill value and cost nothing. So a region's cost follows the chunks
//! it touches, not its element count: an index on a chunked axis touches one
//! chunk row, a whole axis every chunk along it. There are no strided
//! selections: read the enclosing range and step through it in memory.

use std::ops::{Bound, Range, RangeBounds, RangeFrom, RangeFull, RangeInclusive, RangeTo};

use crate::error::{AtlasError, Result};

/// The selection on one axis.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Selection {
    /// One position; the axis is dropped from the result.
    Index(u64),
    /// Positions `start..end` (`end` `None`: to the end of the axis).
    Range {
        /// First position.
        start: u64,
        /// One past the last position; `None` for the axis length.
        end: Option<u64>,
    },
    /// The whole axis.
    All,
}

impl From<u64> for Selection {
    fn from(i: u64) -> Self {
        Selection::Index(i)
    }
}

impl From<Range<u64>> for Selection {
    fn from(r: Range<u64>) -> Self {
        Selection::Range {
            start: r.start,
            end: Some(r.end),
        }
    }
}

impl From<RangeFrom<u64>> for Selection {
    fn from(r: RangeFrom<u64>) -> Self {
        Selection::Range {
            start: r.start,
            end: None,
        }
    }
}

impl From<RangeTo<u64>> for Selection {
    fn from(r: RangeTo<u64>) -> Self {
        Selection::Range {
            start: 0,
            end: Some(r.end),
        }
    }
}

impl From<RangeInclusive<u64>> for Selection {
    fn from(r: RangeInclusive<u64>) -> Self {
        let start = *r.start();
        let end = match r.end_bound() {
            Bound::Included(&e) => e.checked_add(1),
            Bound::Excluded(&e) => Some(e),
            Bound::Unbounded => None,
        };
        // `..=u64::MAX` cannot be written as an exclusive end; it is out of
        // bounds for every axis (at most u32::MAX long), which `resolve` reports.
        Selection::Range {
            start,
            end: Some(end.unwrap_or(u64::MAX)),
        }
    }
}

impl From<RangeFull> for Selection {
    fn from(_: RangeFull) -> Self {
        Selection::All
    }
}

/// Which part of an array to read: see the module docs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Region {
    /// `None`: the whole array, whatever its rank.
    axes: Option<Vec<Selection>>,
    /// Why the region cannot be used (reported by every read).
    malformed: Option<String>,
}

/// A region checked against an array's shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// First position on each axis.
    pub origin: Vec<u64>,
    /// Positions read on each axis.
    pub extent: Vec<u64>,
    /// The result's shape: `extent` without the indexed axes.
    pub shape: Vec<usize>,
    /// Per axis, whether the result keeps it (false for an index).
    pub kept: Vec<bool>,
}

impl Region {
    /// The whole array, whatever its rank.
    pub fn all() -> Self {
        Self::default()
    }

    /// An empty list of selections, to be extended axis by axis with
    /// [`index`](Self::index), [`range`](Self::range) and [`full`](Self::full).
    /// With no axis added it selects the whole of a rank-0 array.
    pub fn new() -> Self {
        Self {
            axes: Some(Vec::new()),
            malformed: None,
        }
    }

    /// The block starting at `start` with extent `shape` (one entry per axis;
    /// both empty: the whole array).
    pub fn block(start: &[u64], shape: &[u64]) -> Self {
        if start.is_empty() && shape.is_empty() {
            return Self::all();
        }
        if start.len() != shape.len() {
            return Self {
                axes: None,
                malformed: Some(format!(
                    "start has {} axes and shape {}",
                    start.len(),
                    shape.len()
                )),
            };
        }
        Self {
            axes: Some(
                start
                    .iter()
                    .zip(shape)
                    .map(|(&s, &n)| Selection::Range {
                        start: s,
                        end: Some(s.saturating_add(n)),
                    })
                    .collect(),
            ),
            malformed: None,
        }
    }

    /// Adds an axis selected at position `i` (dropped from the result).
    pub fn index(self, i: u64) -> Self {
        self.push(Selection::Index(i))
    }

    /// Adds an axis selected by a range: `2..`, `0..4`, `..3`, `1..=2`, `..`.
    pub fn range(self, r: impl RangeBounds<u64>) -> Self {
        let start = match r.start_bound() {
            Bound::Included(&s) => s,
            Bound::Excluded(&s) => s.saturating_add(1),
            Bound::Unbounded => 0,
        };
        let end = match r.end_bound() {
            Bound::Included(&e) => Some(e.saturating_add(1)),
            Bound::Excluded(&e) => Some(e),
            Bound::Unbounded => None,
        };
        self.push(Selection::Range { start, end })
    }

    /// Adds an axis selected whole.
    pub fn full(self) -> Self {
        self.push(Selection::All)
    }

    fn push(mut self, s: Selection) -> Self {
        self.axes.get_or_insert_with(Vec::new).push(s);
        self
    }

    /// The selections, one per axis; `None` for [`Region::all`].
    pub fn selections(&self) -> Option<&[Selection]> {
        self.axes.as_deref()
    }

    /// Checks the region against an array of `shape`: `InvalidRegion` for the
    /// wrong rank, a position past the end, or a range ending before it starts.
    pub(crate) fn resolve(&self, array: &str, shape: &[u32]) -> Result<Resolved> {
        let invalid = |what: String| AtlasError::InvalidRegion {
            array: array.to_owned(),
            what,
        };
        if let Some(what) = &self.malformed {
            return Err(invalid(what.clone()));
        }
        let all: Vec<Selection>;
        let axes = match &self.axes {
            Some(axes) => axes.as_slice(),
            None => {
                all = vec![Selection::All; shape.len()];
                &all
            }
        };
        if axes.len() != shape.len() {
            return Err(invalid(format!(
                "the region selects {} axes, the array has {}",
                axes.len(),
                shape.len()
            )));
        }
        let mut origin = Vec::with_capacity(axes.len());
        let mut extent = Vec::with_capacity(axes.len());
        let mut out = Vec::with_capacity(axes.len());
        let mut kept = Vec::with_capacity(axes.len());
        for (axis, (sel, &len)) in axes.iter().zip(shape).enumerate() {
            let len = u64::from(len);
            let (start, end, keep) = match *sel {
                Selection::Index(i) => {
                    if i >= len {
                        return Err(invalid(format!(
                            "axis {axis}: index {i} is outside 0..{len}"
                        )));
                    }
                    (i, i + 1, false)
                }
                Selection::Range { start, end } => {
                    let end = end.unwrap_or(len);
                    if end < start {
                        return Err(invalid(format!(
                            "axis {axis}: range {start}..{end} ends before it starts"
                        )));
                    }
                    if end > len {
                        return Err(invalid(format!(
                            "axis {axis}: region {start}..{end} is outside 0..{len}"
                        )));
                    }
                    (start, end, true)
                }
                Selection::All => (0, len, true),
            };
            origin.push(start);
            extent.push(end - start);
            kept.push(keep);
            if keep {
                let n = usize::try_from(end - start)
                    .map_err(|_| invalid(format!("axis {axis}: region too large")))?;
                out.push(n);
            }
        }
        Ok(Resolved {
            origin,
            extent,
            shape: out,
            kept,
        })
    }
}

impl<const N: usize> From<[Range<u64>; N]> for Region {
    fn from(ranges: [Range<u64>; N]) -> Self {
        Vec::from_iter(ranges.into_iter().map(Selection::from)).into()
    }
}

impl From<Vec<Selection>> for Region {
    fn from(axes: Vec<Selection>) -> Self {
        Self {
            axes: Some(axes),
            malformed: None,
        }
    }
}

impl From<RangeFull> for Region {
    fn from(_: RangeFull) -> Self {
        Self::all()
    }
}

macro_rules! tuple_region {
    ($($name:ident),+) => {
        impl<$($name: Into<Selection>),+> From<($($name,)+)> for Region {
            #[allow(non_snake_case)]
            fn from(($($name,)+): ($($name,)+)) -> Self {
                vec![$($name.into()),+].into()
            }
        }
    };
}

tuple_region!(A);
tuple_region!(A, B);
tuple_region!(A, B, C);
tuple_region!(A, B, C, D);
tuple_region!(A, B, C, D, E);

#[cfg(test)]
// `[0..4]` is the one-axis region form itself, and a reversed range is what
// the last test must see refused.
#[allow(clippy::single_range_in_vec_init, clippy::reversed_empty_ranges)]
mod tests {
    use super::*;

    fn resolve(r: impl Into<Region>, shape: &[u32]) -> Result<(Vec<u64>, Vec<u64>, Vec<usize>)> {
        r.into()
            .resolve("a", shape)
            .map(|r| (r.origin, r.extent, r.shape))
    }

    #[test]
    fn the_whole_array_is_every_axis_in_full() {
        assert_eq!(
            resolve(Region::all(), &[4, 8]).ok(),
            Some((vec![0, 0], vec![4, 8], vec![4, 8]))
        );
        assert_eq!(
            resolve(Region::all(), &[]).ok(),
            Some((vec![], vec![], vec![]))
        );
        assert_eq!(
            resolve(Region::new(), &[]).ok(),
            Some((vec![], vec![], vec![]))
        );
    }

    #[test]
    fn an_index_drops_its_axis_and_ranges_keep_theirs() {
        assert_eq!(
            resolve(Region::new().index(3).range(2..).full(), &[4, 8, 5]).ok(),
            Some((vec![3, 2, 0], vec![1, 6, 5], vec![6, 5]))
        );
        assert_eq!(
            resolve((1u64, ..2u64), &[4, 8]).ok(),
            Some((vec![1, 0], vec![1, 2], vec![2]))
        );
        assert_eq!(
            resolve([0..4], &[5]).ok(),
            Some((vec![0], vec![4], vec![4]))
        );
        assert_eq!(
            resolve(Region::block(&[5], &[0]), &[5]).ok(),
            Some((vec![5], vec![0], vec![0])),
            "an empty region at the end is fine"
        );
    }

    #[test]
    fn wrong_ranks_bounds_and_reversed_ranges_are_invalid_regions() {
        let invalid = |r: Result<_>| matches!(r, Err(AtlasError::InvalidRegion { .. }));
        assert!(invalid(resolve([0..1], &[4, 8])), "wrong rank");
        assert!(
            invalid(resolve(Region::block(&[1], &[]), &[4])),
            "start without shape"
        );
        assert!(
            invalid(resolve(Region::new().index(4), &[4])),
            "index past the end"
        );
        assert!(invalid(resolve([2..5], &[4])), "range past the end");
        assert!(
            invalid(resolve(Region::new().range(3..1), &[4])),
            "reversed"
        );
        assert!(
            invalid(resolve(Region::block(&[u64::MAX], &[1]), &[4])),
            "overflow"
        );
    }
}
