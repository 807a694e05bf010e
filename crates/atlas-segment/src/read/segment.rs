//! [`Segment`]: one opened segment, and the view of one of its arrays the
//! API hands out ([`ArrayRef`]: layout and statistics).
//!
//! A segment is opened by [`crate::ContainerSegments`]: its footer validated,
//! then kept and read in place (`archive`), so layouts, statistics and
//! attributes cost no decode of the whole footer and reads of fixed-width
//! arrays fetch only data blocks (`blocks`). array-format opens the segment
//! only when a read needs its own path (arrays that are not fixed-width).
//! A view of some fixed-width arrays made from chunk places known elsewhere
//! (a dataset index) has no footer at all: its records are the places,
//! checked as a footer's would be, and it reads through blocks only. Every
//! array-format call runs with its panics caught (`compat::panics`), and I/O
//! failures array-format flattens into strings are recovered
//! (`compat::error_kinds`), so an error still says not-found versus transient.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use array_format::{ArrayFile, BlockCache, ReadConfig};
use atlas_format::DType;
use ndarray::ArrayD;
use object_store::ObjectStore;
use object_store::path::Path;
use tokio::sync::OnceCell;

use crate::compat::error_kinds::track_io;
use crate::compat::panics::guarded;
use crate::error::SegmentError;
use smallvec::SmallVec;

use crate::footer::archive::{FooterArchive, NameIndex};
use crate::footer::attributes;
use crate::footer::digest::{ArrayDigest, BlockPlace, SharedDims, block_places, digest_of};
use crate::footer::schema::ArchivedArrayMeta;
use crate::footer::validate::{ArrayProblem, Checked, ValidatedFooter};
use crate::read::blocks::{BlockSource, ChunkTable};
use crate::read::segment_store::SegmentStore;
use crate::types::any_array::ArrayData;
use crate::types::attr::Attr;
use crate::types::element::{Element, sealed::Sealed};
use crate::types::value::{
    ArrayStats, Value, dtype_from_archived, fill_from_stored, fill_to_stored, stats_from_archived,
};

/// One opened segment: its footer validated and read in place (layouts,
/// statistics and attributes without a decoded copy), its data on demand.
pub struct Segment {
    name: String,
    records: Records,
    names: NameIndex,
    /// Array (dataset) name to why that array cannot be used.
    problems: HashMap<String, ArrayProblem>,
    /// Per array in footer order, the lowest data block its chunks name.
    first_blocks: Vec<Option<u32>>,
    len: u64,
    /// Reads fixed-width arrays block by block, each block decoded once.
    source: BlockSource,
    /// array-format's open of the segment, made the first time a read
    /// needs it (strings, bool and list elements, unknown codecs).
    file: OnceCell<ArrayFile>,
    /// `None` for a view with no footer (array-format cannot open it).
    opener: Option<FileOpener>,
    /// For a view made from places: its virtual file, removed from the
    /// store when the view is dropped (after the last read through it).
    registration: Option<Registration>,
    /// How far before its hint [`Segment::array_near`] last found an array.
    hint_shift: AtomicUsize,
}

/// Where an open segment's array records come from.
enum Records {
    /// Its footer, validated and read in place.
    Footer(FooterArchive),
    /// Chunk places known without the footer (a view of some arrays): no
    /// attributes, and array-format never opens it.
    Placed(Placed),
}

/// The records of a view made from chunk places.
pub(crate) struct Placed {
    /// The arrays, in view order.
    pub arrays: Vec<ArrayDigest>,
    /// Each array's shape as a footer records it (every axis fits `u32`).
    pub shapes: Vec<SmallVec<[u32; 4]>>,
    /// The segment's block table.
    pub blocks: Vec<BlockPlace>,
    /// Where the segment's data region ends.
    pub data_end: u64,
}

/// A view's virtual file in the segment store, unregistered on drop.
struct Registration {
    store: Arc<SegmentStore>,
    path: Path,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.store.remove(&self.path);
    }
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("name", &self.name)
            .field("len", &self.len)
            .field("arrays", &self.array_count())
            .field("array_format_open", &self.file.initialized())
            .finish_non_exhaustive()
    }
}

/// How a segment has array-format open it when a read needs it: the
/// segment registered in the store array-format reads through.
#[derive(Clone)]
pub(crate) struct FileOpener {
    pub store: Arc<dyn ObjectStore>,
    pub path: Path,
    pub cache: Option<Arc<BlockCache>>,
}

impl FileOpener {
    /// array-format's open, guarded, checked to see the arrays validation counted.
    async fn open(&self, name: &str, arrays: usize) -> Result<ArrayFile, SegmentError> {
        let config = ReadConfig {
            cache_capacity: 0,
            io_cache_capacity: 0,
            cache: self.cache.clone(),
        };
        let (opened, failure) = track_io(guarded(ArrayFile::open(
            self.store.clone(),
            self.path.clone(),
            config,
        )))
        .await;
        let file = match opened {
            Ok(Ok(file)) => file,
            Ok(Err(e)) => {
                return Err(match failure {
                    Some(f) => SegmentError::Io(f.into_error()),
                    None => {
                        SegmentError::corrupt(name, None, format!("array-format refused it: {e}"))
                    }
                });
            }
            Err(panicked) => return Err(SegmentError::corrupt(name, None, panicked.to_string())),
        };
        if file.arrays().len() != arrays {
            return Err(SegmentError::corrupt(
                name,
                None,
                format!(
                    "array-format sees {} arrays, the footer holds {arrays}",
                    file.arrays().len()
                ),
            ));
        }
        Ok(file)
    }
}

impl Segment {
    /// A segment whose footer validation passed with the findings
    /// `validated`, `len` bytes long, reading its blocks through what
    /// `source` makes of the chunk table, and opened in array-format by
    /// `opener` if a read needs it.
    pub(crate) fn new(
        name: &str,
        validated: ValidatedFooter,
        len: u64,
        source: impl FnOnce(ChunkTable) -> BlockSource,
        opener: FileOpener,
    ) -> Self {
        let records = Records::Footer(validated.archive);
        Self::of_records(name, records, validated.checked, len, source, Some(opener))
    }

    /// A view of the fixed-width arrays of `placed` (a segment of `len`
    /// bytes), whose places passed the checks with the findings
    /// `checked`, reading its blocks through what `source` makes of the
    /// chunk table.
    pub(crate) fn placed(
        name: &str,
        placed: Placed,
        checked: Checked,
        len: u64,
        source: impl FnOnce(ChunkTable) -> BlockSource,
    ) -> Self {
        Self::of_records(name, Records::Placed(placed), checked, len, source, None)
    }

    fn of_records(
        name: &str,
        records: Records,
        checked: Checked,
        len: u64,
        source: impl FnOnce(ChunkTable) -> BlockSource,
        opener: Option<FileOpener>,
    ) -> Self {
        Self {
            name: name.to_owned(),
            records,
            names: checked.names,
            problems: checked.problems,
            first_blocks: checked.first_blocks,
            len,
            source: source(checked.chunks),
            file: OnceCell::new(),
            opener,
            registration: None,
            hint_shift: AtomicUsize::new(0),
        }
    }

    /// This segment as the view registered at `path` in `store`: the
    /// registration goes when the segment does.
    pub(crate) fn registered(mut self, store: Arc<SegmentStore>, path: Path) -> Self {
        self.registration = Some(Registration { store, path });
        self
    }

    /// The virtual file of a view made from places.
    pub(crate) fn view_path(&self) -> Option<&Path> {
        self.registration.as_ref().map(|r| &r.path)
    }

    /// The record of the array at `position`.
    fn record(&self, position: usize) -> Option<Record<'_>> {
        match &self.records {
            Records::Footer(archive) => archive.footer().arrays.get(position).map(Record::Archived),
            Records::Placed(placed) => Some(Record::Placed(
                placed.arrays.get(position)?,
                placed.shapes.get(position)?,
            )),
        }
    }

    fn name_at(&self, position: usize) -> Option<&str> {
        self.record(position).map(|r| r.name())
    }

    /// Position of the array called `array`.
    fn position(&self, array: &str) -> Option<usize> {
        self.names.find(array, |p| self.name_at(p))
    }

    /// The footer, if the segment was opened from one.
    fn archive(&self) -> Option<&FooterArchive> {
        match &self.records {
            Records::Footer(archive) => Some(archive),
            Records::Placed(_) => None,
        }
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
        match &self.records {
            Records::Footer(archive) => archive.footer().arrays.len(),
            Records::Placed(placed) => placed.arrays.len(),
        }
    }

    /// Whether array-format has opened the segment (a read needed it).
    pub fn array_format_opened(&self) -> bool {
        self.file.initialized()
    }

    /// Every array in segment order (damaged ones included: see [`Segment::problem`]).
    pub fn arrays(&self) -> impl Iterator<Item = ArrayRef<'_>> {
        (0..self.array_count()).filter_map(|position| {
            self.record(position)
                .map(|record| ArrayRef { record, position })
        })
    }

    /// The array called `array`, validated: `Array` if validation found it
    /// damaged, `Corrupt` if the segment holds none.
    pub fn array(&self, array: &str) -> Result<ArrayRef<'_>, SegmentError> {
        self.check(array)?;
        self.position(array)
            .and_then(|position| {
                self.record(position)
                    .map(|record| ArrayRef { record, position })
            })
            .ok_or_else(|| {
                SegmentError::corrupt(
                    &self.name,
                    Some(array),
                    "the segment holds no array for this dataset",
                )
            })
    }

    /// [`Segment::array`], looking first near `hint`: where the caller can
    /// guess the position (a dataset's ordinal, in a segment written in
    /// ordinal order), one name comparison replaces a lookup in the name
    /// index; a wrong or out-of-range guess costs that comparison. A view
    /// holding a stretch of the datasets has its arrays a fixed distance
    /// before their ordinals: the distance a lookup found is tried next.
    pub fn array_near(&self, array: &str, hint: usize) -> Result<ArrayRef<'_>, SegmentError> {
        let guess = hint.wrapping_sub(self.hint_shift.load(Ordering::Relaxed));
        match self.record(guess) {
            Some(record) if record.name() == array => {
                self.check(array)?;
                Ok(ArrayRef {
                    record,
                    position: guess,
                })
            }
            _ => {
                let found = self.array(array)?;
                self.hint_shift
                    .store(hint.wrapping_sub(found.position), Ordering::Relaxed);
                Ok(found)
            }
        }
    }

    /// Why validation flagged array `array`, if it did.
    pub fn problem(&self, array: &str) -> Option<&ArrayProblem> {
        self.problems.get(array)
    }

    /// Per array in [`Segment::arrays`] order, the lowest data block id its
    /// written chunks name (None: nothing written).
    pub(crate) fn first_blocks(&self) -> &[Option<u32>] {
        &self.first_blocks
    }

    /// The segment's block table.
    pub(crate) fn block_places(&self) -> Vec<BlockPlace> {
        match &self.records {
            Records::Footer(archive) => block_places(archive.footer().blocks.as_slice()),
            Records::Placed(placed) => placed.blocks.clone(),
        }
    }

    /// Where the data region ends: the segment less its footer and trailer.
    pub(crate) fn data_end(&self) -> u64 {
        match &self.records {
            Records::Footer(archive) => self
                .len
                .saturating_sub(archive.len())
                .saturating_sub(crate::footer::tail::ARRF_TRAILER_LEN),
            Records::Placed(placed) => placed.data_end,
        }
    }

    /// Every array validation flagged, with why.
    pub(crate) fn problems(&self) -> &HashMap<String, ArrayProblem> {
        &self.problems
    }

    /// The same as [`Segment::problem`], as the error a use of the array returns.
    pub fn check(&self, array: &str) -> Result<(), SegmentError> {
        SegmentError::validated(&self.name, array, &self.problems)
    }

    fn footer_error(&self, problem: crate::footer::validate::FooterProblem) -> SegmentError {
        SegmentError::Footer {
            segment: self.name.clone(),
            problem,
        }
    }

    /// Attribute `key` of array `array`, if stored (`None` too if the
    /// segment has no such array).
    pub fn attribute(&self, array: &str, key: &str) -> Result<Option<Attr>, SegmentError> {
        let (Some(archive), Some(position)) = (self.archive(), self.position(array)) else {
            return Ok(None);
        };
        attributes::attribute_of(archive, position, key).map_err(|p| self.footer_error(p))
    }

    /// Every attribute of array `array` as `(key, value)`, in the order the
    /// array stores them; empty if the array does not exist.
    pub fn attributes(&self, array: &str) -> Result<Vec<(String, Attr)>, SegmentError> {
        let (Some(archive), Some(position)) = (self.archive(), self.position(array)) else {
            return Ok(Vec::new());
        };
        attributes::attributes_of(archive, position).map_err(|p| self.footer_error(p))
    }

    /// Attribute `key` of every array, in segment order (`None` for an array
    /// without it); `None` if no array stores it.
    pub fn attribute_cells(&self, key: &str) -> Result<Option<Vec<Option<Attr>>>, SegmentError> {
        let Some(archive) = self.archive() else {
            return Ok(None);
        };
        attributes::attribute_cells(archive, key).map_err(|p| self.footer_error(p))
    }

    /// array-format's open of this segment, made on first use; `array` is
    /// what the read that needs it asks for (named if the segment is a view
    /// array-format cannot open).
    async fn file(&self, array: &str) -> Result<&ArrayFile, SegmentError> {
        let Some(opener) = &self.opener else {
            return Err(SegmentError::corrupt(
                &self.name,
                Some(array),
                "a view made from chunk places reads only whole fixed-width chunks",
            ));
        };
        self.file
            .get_or_try_init(|| opener.open(&self.name, self.array_count()))
            .await
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
        if let Some(read) = self
            .source
            .read::<<T as Sealed>::Stored>(&self.name, found, &origin, &extent)
            .await
        {
            return read.map(T::from_stored);
        }
        let file = self.file(array).await?;
        // Boxed: array-format's read future is large, and moving it through
        // the panic catch, the error-kind scope and every caller cost a copy per read.
        let (outcome, failure) = track_io(guarded(Box::pin(
            file.read_array::<<T as Sealed>::Stored>(array, origin, extent),
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
            DType::TimestampNs => read!(Timestamp, crate::types::value::Timestamp),
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

/// One array of a segment as its footer records it (no data), read in
/// place from the footer archive or from the chunk places of a view.
#[derive(Clone, Copy)]
pub struct ArrayRef<'a> {
    record: Record<'a>,
    position: usize,
}

/// Where an [`ArrayRef`]'s record lies.
#[derive(Clone, Copy)]
enum Record<'a> {
    Archived(&'a ArchivedArrayMeta),
    /// A view's array, with its shape as a footer records it.
    Placed(&'a ArrayDigest, &'a [u32]),
}

impl<'a> Record<'a> {
    fn name(self) -> &'a str {
        match self {
            Record::Archived(meta) => meta.name.as_str(),
            Record::Placed(digest, _) => digest.name.as_str(),
        }
    }
}

impl std::fmt::Debug for ArrayRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArrayRef")
            .field("name", &self.name())
            .field("position", &self.position)
            .finish_non_exhaustive()
    }
}

impl<'a> ArrayRef<'a> {
    /// The array's (dataset's) name.
    pub fn name(&self) -> &'a str {
        self.record.name()
    }

    /// Its position in the segment (footer order).
    pub fn position(&self) -> usize {
        self.position
    }

    /// The stored element type.
    pub fn dtype(&self) -> DType {
        match self.record {
            Record::Archived(meta) => dtype_from_archived(&meta.dtype),
            Record::Placed(digest, _) => digest.dtype.clone(),
        }
    }

    /// Length of each axis.
    pub fn shape(&self) -> Vec<u32> {
        match self.record {
            Record::Archived(meta) => meta.shape.iter().map(|d| d.to_native()).collect(),
            Record::Placed(_, shape) => shape.to_vec(),
        }
    }

    /// Extent of one chunk along each axis.
    pub fn chunk_shape(&self) -> Vec<u32> {
        match self.record {
            Record::Archived(meta) => meta.chunk_shape.iter().map(|d| d.to_native()).collect(),
            Record::Placed(digest, _) => digest.chunk_shape.to_vec(),
        }
    }

    /// Name of each axis.
    pub fn dimension_names(&self) -> Vec<String> {
        match self.record {
            Record::Archived(meta) => meta
                .dimension_names
                .iter()
                .map(|n| n.as_str().to_owned())
                .collect(),
            Record::Placed(digest, _) => digest.dimension_names.to_vec(),
        }
    }

    /// What unwritten elements read as; `None` means zero (or empty).
    pub fn fill(&self) -> Option<Value> {
        match self.record {
            Record::Archived(_) => self.stored_fill().as_ref().map(fill_from_stored),
            Record::Placed(digest, _) => digest.fill.clone(),
        }
    }

    /// The fill value as array-format's type.
    pub(crate) fn stored_fill(&self) -> Option<array_format::FillValue> {
        match self.record {
            Record::Archived(meta) => rkyv::deserialize::<
                Option<array_format::FillValue>,
                rkyv::rancor::Error,
            >(&meta.fill_value)
            .ok()
            .flatten(),
            Record::Placed(digest, _) => digest.fill.as_ref().and_then(fill_to_stored),
        }
    }

    /// The statistics the writer recorded, if any.
    pub fn stats(&self) -> Option<ArrayStats> {
        match self.record {
            Record::Archived(meta) => meta.stats.as_ref().map(stats_from_archived),
            Record::Placed(digest, _) => digest.stats.clone(),
        }
    }

    /// Coordinates (in chunks) of every written chunk, sorted; unwritten
    /// chunks read as the fill value.
    pub fn written_chunks(&self) -> impl Iterator<Item = Vec<u32>> + 'a {
        let coords: Vec<Vec<u32>> = match self.record {
            Record::Archived(meta) => meta
                .chunks
                .iter()
                .map(|c| c.coord.iter().map(|x| x.to_native()).collect())
                .collect(),
            Record::Placed(digest, _) => digest.chunks.iter().map(|c| c.coord.to_vec()).collect(),
        };
        coords.into_iter()
    }

    /// Its shape and chunk shape as `usize`s (what a read of its blocks
    /// indexes with), read straight off its record.
    pub(crate) fn grid(&self) -> (Vec<usize>, Vec<usize>) {
        let wide = |d: u32| d as usize;
        match self.record {
            Record::Archived(meta) => (
                meta.shape.iter().map(|d| wide(d.to_native())).collect(),
                meta.chunk_shape
                    .iter()
                    .map(|d| wide(d.to_native()))
                    .collect(),
            ),
            Record::Placed(digest, shape) => (
                shape.iter().copied().map(wide).collect(),
                digest.chunk_shape.iter().copied().map(wide).collect(),
            ),
        }
    }

    /// The array's digest, its written chunks starting in block
    /// `first_block`, its axis names from `dims`.
    pub(crate) fn digest(&self, first_block: Option<u32>, dims: &mut SharedDims) -> ArrayDigest {
        match self.record {
            Record::Archived(meta) => digest_of(meta, first_block, dims),
            Record::Placed(digest, _) => digest.clone(),
        }
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
