//! [`Segment`]: one opened segment, and the views of it the API hands out
//! ([`ArrayRef`]: one array's layout and statistics; [`AttributeColumn`]:
//! one attribute over every array).
//!
//! A segment is opened by [`crate::SegmentSet`] (its footer screened first);
//! from then on its arrays' layouts, statistics and attributes are in memory
//! and reads fetch only data blocks. Every read runs under the panic guard,
//! and I/O failures array-format flattens into strings are recovered by
//! `track`, so an error still says not-found versus transient.

use std::collections::HashMap;

use array_format::{ArrayFile, ArrayInfo, AttributeValue};
use atlas_format::DType;
use ndarray::ArrayD;

use crate::any::ArrayData;
use crate::attr::Attr;
use crate::blocks::BlockSource;
use crate::element::{Element, sealed::Sealed};
use crate::error::SegmentError;
use crate::guard::guarded;
use crate::screen::ArrayProblem;
use crate::track::track_io;
use crate::value::{ArrayStats, FillValue, dtype_from_stored, fill_from_stored, stats_from_stored};

/// One opened segment: its arrays' layouts, statistics and attributes in
/// memory, their data on demand.
pub struct Segment {
    name: String,
    file: ArrayFile,
    /// Array (dataset) name to why that array cannot be used.
    problems: HashMap<String, ArrayProblem>,
    /// Per array in footer order, the lowest data block its chunks name.
    first_blocks: Vec<Option<u32>>,
    len: u64,
    /// Reads fixed-width arrays block by block, each block decoded once.
    source: BlockSource,
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("name", &self.name)
            .field("len", &self.len)
            .field("arrays", &self.file.arrays().len())
            .finish_non_exhaustive()
    }
}

impl Segment {
    /// A segment array-format opened as `file`, with what screening found
    /// wrong with single arrays (`problems`), each array's first data block
    /// (`first_blocks`, footer order) and its length in bytes.
    pub(crate) fn new(
        name: &str,
        file: ArrayFile,
        problems: HashMap<String, ArrayProblem>,
        first_blocks: Vec<Option<u32>>,
        len: u64,
        source: BlockSource,
    ) -> Self {
        Self {
            name: name.to_owned(),
            file,
            problems,
            first_blocks,
            len,
            source,
        }
    }

    /// Position of `info` (one of this segment's arrays) in footer order.
    fn position_of(&self, info: &ArrayInfo) -> Option<usize> {
        let arrays = self.file.arrays();
        let at = (info as *const ArrayInfo as usize).checked_sub(arrays.as_ptr() as usize)?;
        let position = at.checked_div(std::mem::size_of::<ArrayInfo>())?;
        arrays
            .get(position)
            .filter(|a| std::ptr::eq(*a, info))
            .map(|_| position)
    }

    /// The segment's (variable's) name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Bytes of the segment.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the segment has no bytes (never true of an opened one).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Arrays in the segment.
    pub fn array_count(&self) -> usize {
        self.file.arrays().len()
    }

    /// Every array in segment order (damaged ones included: see [`Segment::problem`]).
    pub fn arrays(&self) -> impl Iterator<Item = ArrayRef<'_>> {
        self.file.arrays().iter().map(|info| ArrayRef { info })
    }

    /// The array called `array`, screened: `Array` if screening found it
    /// damaged, `Corrupt` if the segment holds none.
    pub fn array(&self, array: &str) -> Result<ArrayRef<'_>, SegmentError> {
        self.check(array)?;
        self.file
            .array(array)
            .map(|info| ArrayRef { info })
            .ok_or_else(|| {
                SegmentError::corrupt(
                    &self.name,
                    Some(array),
                    "the segment holds no array for this dataset",
                )
            })
    }

    /// [`Segment::array`], looking first at footer position `hint`: where
    /// the caller can guess the position (a dataset's ordinal, in a segment
    /// written in ordinal order), one name comparison replaces a lookup in
    /// the name index; a wrong or out-of-range guess costs that comparison.
    pub fn array_near(&self, array: &str, hint: usize) -> Result<ArrayRef<'_>, SegmentError> {
        match self.file.arrays().get(hint) {
            Some(info) if info.name.as_str() == array => {
                self.check(array)?;
                Ok(ArrayRef { info })
            }
            _ => self.array(array),
        }
    }

    /// Why screening flagged array `array`, if it did.
    pub fn problem(&self, array: &str) -> Option<&ArrayProblem> {
        self.problems.get(array)
    }

    /// Every array screening flagged, with why.
    /// Per array in [`Segment::arrays`] order, the lowest data block id its
    /// written chunks name (None: nothing written).
    pub(crate) fn first_blocks(&self) -> &[Option<u32>] {
        &self.first_blocks
    }

    pub(crate) fn problems(&self) -> &HashMap<String, ArrayProblem> {
        &self.problems
    }

    /// The same as [`Segment::problem`], as the error a use of the array returns.
    pub fn check(&self, array: &str) -> Result<(), SegmentError> {
        SegmentError::screened(&self.name, array, &self.problems)
    }

    /// Attribute `key` of array `array`, if stored.
    pub fn attribute(&self, array: &str, key: &str) -> Option<Attr> {
        self.file.get_attribute(array, key).map(Attr::from_stored)
    }

    /// Every attribute of array `array` as `(key, value)`, in the segment's
    /// key order; empty if the array does not exist.
    pub fn attributes(&self, array: &str) -> Vec<(String, Attr)> {
        self.file
            .attributes(array)
            .map(|it| {
                it.map(|(k, v)| (k.to_string(), Attr::from_stored(v)))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The column of attribute `key` over every array, in segment order; `None`
    /// if no array stores it.
    pub fn attribute_column(&self, key: &str) -> Option<AttributeColumn<'_>> {
        self.file
            .attribute_column(key)
            .map(|cells| AttributeColumn { cells })
    }

    /// Reads the region of `array` from `origin` with `extent` (both empty:
    /// the whole array), row-major. `T` must be the stored element type.
    ///
    /// Unwritten chunks read as the fill value and cost no request; written
    /// ones cost one read per block not already cached.
    pub async fn read<T: Element>(
        &self,
        array: &str,
        origin: &[u64],
        extent: &[u64],
    ) -> Result<ArrayD<T>, SegmentError> {
        self.read_found(self.array(array)?, origin, extent).await
    }

    /// [`Segment::read`] of an array already found in this segment (by
    /// [`Segment::array`] or [`Segment::array_near`]), without looking its
    /// name up again.
    pub async fn read_found<T: Element>(
        &self,
        found: ArrayRef<'_>,
        origin: &[u64],
        extent: &[u64],
    ) -> Result<ArrayD<T>, SegmentError> {
        let array = found.name();
        let stored = found.dtype();
        if stored != T::ATLAS_DTYPE {
            return Err(SegmentError::DTypeMismatch {
                array: array.to_owned(),
                stored,
                requested: T::ATLAS_DTYPE,
            });
        }
        let (origin, extent) = (to_usizes(origin, array)?, to_usizes(extent, array)?);
        // Fixed-width arrays: read here, each block decoded once for every
        // array in it; anything else goes through array-format.
        if let Some(position) = self.position_of(found.info)
            && let Some(read) = self
                .source
                .read::<<T as Sealed>::Stored>(&self.name, position, found.info, &origin, &extent)
                .await
        {
            return read.map(T::from_stored);
        }
        // Boxed: array-format's read future is large, and moving it through
        // the guard, the tracking scope and every caller cost a copy per read.
        let (outcome, failure) = track_io(guarded(Box::pin(
            self.file
                .read_array::<<T as Sealed>::Stored>(array, origin, extent),
        )))
        .await;
        match outcome {
            Ok(Ok(data)) => Ok(T::from_stored(data.into_owned())),
            Ok(Err(e)) => Err(match failure {
                Some(failure) => SegmentError::Io(failure.into_error()),
                None => SegmentError::corrupt(&self.name, Some(array), format!("reading: {e}")),
            }),
            Err(panicked) => Err(SegmentError::corrupt(
                &self.name,
                Some(array),
                format!("reading: {panicked}"),
            )),
        }
    }

    /// [`Segment::read`] for an element type known only at run time: one
    /// variant of [`ArrayData`] per stored type. `Unsupported` for bool and list arrays.
    pub async fn read_any(
        &self,
        array: &str,
        origin: &[u64],
        extent: &[u64],
    ) -> Result<ArrayData, SegmentError> {
        self.read_any_found(self.array(array)?, origin, extent)
            .await
    }

    /// [`Segment::read_any`] of an array already found in this segment,
    /// without looking its name up again.
    pub async fn read_any_found(
        &self,
        found: ArrayRef<'_>,
        origin: &[u64],
        extent: &[u64],
    ) -> Result<ArrayData, SegmentError> {
        let (array, dtype) = (found.name(), found.dtype());
        macro_rules! read {
            ($variant:ident, $t:ty) => {
                ArrayData::$variant(self.read_found::<$t>(found, origin, extent).await?)
            };
        }
        Ok(match dtype {
            DType::Int8 => read!(Int8, i8),
            DType::Int16 => read!(Int16, i16),
            DType::Int32 => read!(Int32, i32),
            DType::Int64 => read!(Int64, i64),
            DType::UInt8 => read!(UInt8, u8),
            DType::UInt16 => read!(UInt16, u16),
            DType::UInt32 => read!(UInt32, u32),
            DType::UInt64 => read!(UInt64, u64),
            DType::Float32 => read!(Float32, f32),
            DType::Float64 => read!(Float64, f64),
            DType::TimestampNs => read!(Timestamp, crate::value::Timestamp),
            DType::String => read!(String, String),
            DType::Binary => read!(Binary, Vec<u8>),
            other => {
                return Err(SegmentError::Unsupported {
                    array: array.to_owned(),
                    dtype: other,
                });
            }
        })
    }
}

/// One array of a segment as its footer records it (no data).
#[derive(Debug, Clone, Copy)]
pub struct ArrayRef<'a> {
    info: &'a ArrayInfo,
}

impl<'a> ArrayRef<'a> {
    /// The array's (dataset's) name.
    pub fn name(&self) -> &'a str {
        self.info.name.as_str()
    }

    /// The stored element type.
    pub fn dtype(&self) -> DType {
        dtype_from_stored(&self.info.dtype)
    }

    /// Length of each axis.
    pub fn shape(&self) -> &'a [u32] {
        &self.info.shape
    }

    /// Extent of one chunk along each axis.
    pub fn chunk_shape(&self) -> &'a [u32] {
        &self.info.chunk_shape
    }

    /// Name of each axis.
    pub fn dimension_names(&self) -> &'a [String] {
        &self.info.dimension_names
    }

    /// What unwritten elements read as; `None` means zero (or empty).
    pub fn fill(&self) -> Option<FillValue> {
        self.info.fill_value.as_ref().map(fill_from_stored)
    }

    /// The statistics the writer recorded, if any.
    pub fn stats(&self) -> Option<ArrayStats> {
        self.info.stats.as_ref().map(stats_from_stored)
    }

    /// Coordinates (in chunks) of every written chunk, sorted; unwritten
    /// chunks read as the fill value.
    pub fn written_chunks(&self) -> impl Iterator<Item = &'a [u32]> + 'a {
        self.info.written_chunks()
    }
}

/// One attribute key's values over the arrays of a segment, in segment order.
#[derive(Debug, Clone, Copy)]
pub struct AttributeColumn<'a> {
    cells: &'a [Option<AttributeValue>],
}

impl AttributeColumn<'_> {
    /// The value of the array at `position`; `None` if it stores none.
    pub fn get(&self, position: usize) -> Option<Attr> {
        self.cells
            .get(position)
            .and_then(Option::as_ref)
            .map(Attr::from_stored)
    }

    /// Cells in the column (one per array).
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// Whether the column has no cells.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }
}

/// `v` as `usize`s, or `InvalidRegion` naming `array` for a value that does not fit.
fn to_usizes(v: &[u64], array: &str) -> Result<Vec<usize>, SegmentError> {
    v.iter()
        .map(|&x| {
            usize::try_from(x).map_err(|_| SegmentError::InvalidRegion {
                array: array.to_owned(),
                what: format!("{x} does not fit in memory"),
            })
        })
        .collect()
}
