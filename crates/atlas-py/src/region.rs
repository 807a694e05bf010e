//! numpy basic indexing turned into the facade's [`Region`]: the one place the
//! package interprets a key such as `arr[2, -3:, ::2, ...]`.
//!
//! `convert` reads the Python key into [`KeyItem`]s without looking at any
//! shape; [`plan`] applies numpy's rules against the array's shape: one `...`
//! at most, no more indices than axes, negative positions counted from the
//! end, slice bounds clamped to the axis. The facade's `Region` has no
//! negative positions or steps, so a stepped slice reads the block that covers
//! it and [`Plan::steps`] says how to step through the result in memory
//! ([`stepped`]). Bounds the facade can check (a position past the end) are
//! left to it, so its `InvalidRegion` is what the user sees.
//!
//! A leaf: it depends on the facade only, and `core` turns its [`InvalidKey`]
//! into the binding's error.

use std::fmt;

use atlas::ndarray::{ArrayD, Slice};
use atlas::{ArrayData, Region, Selection};

/// One entry of a numpy basic-indexing key, as Python gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyItem {
    /// An integer position (negative: from the end); drops its axis.
    Index(i64),
    /// A slice; `None` parts take numpy's defaults.
    Slice {
        /// First position (inclusive).
        start: Option<i64>,
        /// Where to stop (exclusive).
        stop: Option<i64>,
        /// Distance between positions; never 0.
        step: Option<i64>,
    },
    /// `...`: as many whole axes as the other entries leave.
    Ellipsis,
}

/// What to read for a key: the region, and per axis of the result the step
/// to take through what was read (1 where the read is the answer already).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The covering region, for the facade.
    pub region: Region,
    /// Per kept axis, the step through the covering block (negative: from its end).
    pub steps: Vec<i64>,
}

/// A key numpy's basic-indexing rules refuse for an array: which array, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidKey {
    /// The array the key was for.
    pub array: String,
    /// What is wrong with the key.
    pub problem: KeyProblem,
}

/// Why a key names no region of an array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyProblem {
    /// More than one `...`.
    TwoEllipses,
    /// More positions and slices than the array has axes.
    TooManyIndices {
        /// Entries of the key other than `...`.
        given: usize,
        /// Axes of the array.
        rank: usize,
    },
    /// An integer position before the start of its axis (counted from the end).
    IndexBeforeStart {
        /// The axis.
        axis: usize,
        /// The position given.
        index: i64,
        /// The axis's length.
        len: u64,
    },
    /// A slice with step 0.
    ZeroStep {
        /// The axis.
        axis: usize,
    },
}

impl fmt::Display for InvalidKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid region of array {:?}: ", self.array)?;
        match self.problem {
            KeyProblem::TwoEllipses => write!(f, "an index can only have one ellipsis ('...')"),
            KeyProblem::TooManyIndices { given, rank } => {
                write!(f, "too many indices: {given} for an array of rank {rank}")
            }
            KeyProblem::IndexBeforeStart { axis, index, len } => {
                write!(f, "axis {axis}: index {index} is outside -{len}..{len}")
            }
            KeyProblem::ZeroStep { axis } => write!(f, "axis {axis}: slice step cannot be zero"),
        }
    }
}

impl std::error::Error for InvalidKey {}

/// The region (and steps) `key` names in an array of `shape`, by numpy's rules.
pub fn plan(array: &str, key: &[KeyItem], shape: &[u64]) -> Result<Plan, InvalidKey> {
    let invalid = |problem| InvalidKey {
        array: array.to_owned(),
        problem,
    };
    let rank = shape.len();
    let ellipses = key.iter().filter(|k| **k == KeyItem::Ellipsis).count();
    if ellipses > 1 {
        return Err(invalid(KeyProblem::TwoEllipses));
    }
    let given = key.len() - ellipses;
    if given > rank {
        return Err(invalid(KeyProblem::TooManyIndices { given, rank }));
    }
    let mut expanded: Vec<KeyItem> = Vec::with_capacity(rank);
    for item in key {
        if *item == KeyItem::Ellipsis {
            expanded.extend(std::iter::repeat_n(FULL, rank - given));
        } else {
            expanded.push(*item);
        }
    }
    expanded.resize(rank, FULL);
    let mut axes = Vec::with_capacity(rank);
    let mut steps = Vec::new();
    for (axis, (item, &size)) in expanded.iter().zip(shape).enumerate() {
        let len = i128::from(size);
        match *item {
            KeyItem::Index(i) => {
                let at = if i < 0 {
                    i128::from(i) + len
                } else {
                    i128::from(i)
                };
                let at = u64::try_from(at).map_err(|_| {
                    invalid(KeyProblem::IndexBeforeStart {
                        axis,
                        index: i,
                        len: size,
                    })
                })?;
                // Past the end: the facade reports it.
                axes.push(Selection::Index(at));
            }
            KeyItem::Slice { start, stop, step } => {
                let (lo, hi, step) = covering(start, stop, step, len)
                    .ok_or_else(|| invalid(KeyProblem::ZeroStep { axis }))?;
                axes.push(Selection::Range {
                    start: lo,
                    end: Some(hi),
                });
                steps.push(step);
            }
            // Every ellipsis was expanded above.
            KeyItem::Ellipsis => axes.push(Selection::All),
        }
    }
    Ok(Plan {
        region: Region::from(axes),
        steps,
    })
}

const FULL: KeyItem = KeyItem::Slice {
    start: None,
    stop: None,
    step: None,
};

/// The block `start..stop` with `step` covers on an axis of `len`, as `(lo,
/// hi, step)` with `lo..hi` inside the axis (Python's `slice.indices` rules);
/// `None` for a zero step. An empty slice covers an empty block.
fn covering(
    start: Option<i64>,
    stop: Option<i64>,
    step: Option<i64>,
    len: i128,
) -> Option<(u64, u64, i64)> {
    let step = step.unwrap_or(1);
    if step == 0 {
        return None;
    }
    let (lower, upper) = if step < 0 { (-1, len - 1) } else { (0, len) };
    let clamp = |v: Option<i64>, default: i128| -> i128 {
        match v.map(i128::from) {
            None => default,
            Some(v) if v < 0 => (v + len).max(lower),
            Some(v) => v.min(upper),
        }
    };
    let (first, stop) = if step < 0 {
        (clamp(start, upper), clamp(stop, lower))
    } else {
        (clamp(start, lower), clamp(stop, upper))
    };
    let wide = i128::from(step);
    let count = if step > 0 && first < stop {
        (stop - first - 1) / wide + 1
    } else if step < 0 && stop < first {
        (first - stop - 1) / -wide + 1
    } else {
        0
    };
    let to_u64 = |v: i128| u64::try_from(v.clamp(0, len)).unwrap_or(0);
    if count == 0 {
        let at = to_u64(first);
        return Some((at, at, 1));
    }
    let last = first + (count - 1) * wide;
    let (lo, hi) = if step < 0 {
        (last, first)
    } else {
        (first, last)
    };
    Some((to_u64(lo), to_u64(hi + 1), step))
}

fn step_through<T: Clone>(a: ArrayD<T>, steps: &[i64]) -> ArrayD<T> {
    let view = a.slice_each_axis(|ax| {
        let step = steps.get(ax.axis.index()).copied().unwrap_or(1);
        Slice::new(0, None, isize::try_from(step).unwrap_or(1))
    });
    // In logical order, so the result is C-contiguous whatever the strides were.
    let values: Vec<T> = view.iter().cloned().collect();
    ArrayD::from_shape_vec(view.raw_dim(), values).unwrap_or(a)
}

/// The read of a covering block stepped through as `steps` says (a positive
/// step from the block's start, a negative one from its end).
pub fn stepped(data: ArrayData, steps: &[i64]) -> ArrayData {
    match data {
        ArrayData::Int8(a) => ArrayData::Int8(step_through(a, steps)),
        ArrayData::Int16(a) => ArrayData::Int16(step_through(a, steps)),
        ArrayData::Int32(a) => ArrayData::Int32(step_through(a, steps)),
        ArrayData::Int64(a) => ArrayData::Int64(step_through(a, steps)),
        ArrayData::UInt8(a) => ArrayData::UInt8(step_through(a, steps)),
        ArrayData::UInt16(a) => ArrayData::UInt16(step_through(a, steps)),
        ArrayData::UInt32(a) => ArrayData::UInt32(step_through(a, steps)),
        ArrayData::UInt64(a) => ArrayData::UInt64(step_through(a, steps)),
        ArrayData::Float32(a) => ArrayData::Float32(step_through(a, steps)),
        ArrayData::Float64(a) => ArrayData::Float64(step_through(a, steps)),
        ArrayData::Timestamp(a) => ArrayData::Timestamp(step_through(a, steps)),
        ArrayData::String(a) => ArrayData::String(step_through(a, steps)),
        ArrayData::Binary(a) => ArrayData::Binary(step_through(a, steps)),
        // A kind of array this binding does not know: `convert` refuses it.
        other => other,
    }
}
