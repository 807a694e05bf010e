//! [`Dataset`]: one dataset of an opened collection, as an owned handle. Its schema comes from
//! the container footer (no request); layouts, statistics, attribute values and
//! data come from the segments.

use std::sync::Arc;

use atlas_format::{ArrayMeta, DATASETS_SEGMENT, DType, DatasetSchema, SchemaView};
use atlas_segment::{AnyArray, ArrayDigest, ArrayRef, ArrayStats, Attr, Element, Segment, Value};

use super::member::{Member, Need};
use super::region::{Region, Resolved};
use crate::error::{AtlasError, Result};

/// A single read may materialize this many bytes whatever the segment's size...
const READ_FLOOR_BYTES: u64 = 1 << 30;
/// ...or this many times the segment's bytes, whichever is larger. Past that a
/// shape is more likely damaged than meant; read such an array in parts.
const READ_EXPANSION: u64 = 64;

/// What a segment records about one array: type, shape, chunking, dimension
/// names and fill value.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ArrayLayout {
    /// Element type.
    pub dtype: DType,
    /// Length of each axis.
    pub shape: Vec<u64>,
    /// Extent of one chunk along each axis.
    pub chunk_shape: Vec<u64>,
    /// Name of each axis.
    pub dimension_names: Vec<String>,
    /// Value of unwritten elements; `None` means zero (or empty).
    pub fill_value: Option<Value>,
    /// Elements in the whole array (the product of `shape`).
    pub element_count: u64,
}

/// One live dataset of a [`Member`]: an owned handle (the member, the name as
/// the footer holds it, the ordinal and the schema's pool index), cheap to clone and
/// `Send + Sync + 'static`, so it can move into a spawned task.
#[derive(Clone)]
pub struct Dataset {
    member: Member,
    // The name is the footer's, found by ordinal: a handle stays 16 bytes,
    // so listing every dataset of a large container stays cheap.
    ordinal: u32,
    schema: u32,
}

impl std::fmt::Debug for Dataset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dataset")
            .field("name", &self.name())
            .field("ordinal", &self.ordinal)
            .field("schema", &self.schema)
            .finish()
    }
}

impl Dataset {
    /// The handle of the dataset at `ordinal` of `member`'s footer, which
    /// declares it with schema `schema`.
    pub(crate) fn new(member: Member, ordinal: u32, schema: u32) -> Self {
        Self {
            member,
            ordinal,
            schema,
        }
    }

    /// The dataset's name.
    pub fn name(&self) -> &str {
        self.member
            .footer()
            .datasets
            .get_index(self.ordinal as usize)
            .map_or("", |(name, _)| name.as_str())
    }

    /// The dataset's ordinal: its position in the container, which never changes.
    pub fn ordinal(&self) -> u32 {
        self.ordinal
    }

    /// The member (container) this dataset is stored in.
    pub fn member(&self) -> &Member {
        &self.member
    }

    /// The dataset's declaration (array names and types, attribute keys), from memory.
    pub fn schema(&self) -> SchemaView<'_> {
        self.member.directory().schema(self.schema)
    }

    /// The declaration of array `array`, if the dataset has one.
    pub fn array_meta(&self, array: &str) -> Option<ArrayMeta<'_>> {
        self.schema().array(array)
    }

    /// An owned copy of the declaration.
    pub fn to_owned_schema(&self) -> DatasetSchema {
        self.schema().to_owned_schema()
    }

    /// `DatasetNotFound` if the dataset was deleted since this handle was taken.
    fn ensure_live(&self) -> Result<()> {
        if self.member.is_live(self.ordinal) {
            Ok(())
        } else {
            Err(AtlasError::DatasetNotFound {
                name: self.name().to_owned(),
            })
        }
    }

    fn declared(&self, array: &str) -> Result<ArrayMeta<'_>> {
        self.schema()
            .array(array)
            .ok_or_else(|| AtlasError::ArrayNotFound {
                dataset: Some(self.name().to_owned()),
                array: array.to_owned(),
            })
    }

    /// The segment of `array`, which the dataset declares.
    async fn segment_of(&self, array: &str) -> Result<Arc<Segment>> {
        self.member.segment(array).await?.ok_or_else(|| {
            AtlasError::corrupt(format!(
                "dataset {:?} declares array {array:?}, but the container has no segment for it",
                self.name()
            ))
        })
    }

    /// A segment holding this dataset's `array`, found as `need` asks (see
    /// [`Member::segment_holding`]).
    async fn segment_for(&self, array: &str, need: Need) -> Result<Arc<Segment>> {
        self.member
            .segment_holding(array, self.name(), self.ordinal, need)
            .await?
            .ok_or_else(|| {
                AtlasError::corrupt(format!(
                    "dataset {:?} declares array {array:?}, but the container has no segment for it",
                    self.name()
                ))
            })
    }

    /// The segment's record of this dataset's `array`, checked against the footer.
    fn info<'s>(&self, meta: &ArrayMeta<'_>, segment: &'s Segment) -> Result<ArrayRef<'s>> {
        // Written from one task, a segment holds its datasets in ordinal order.
        let hint = usize::try_from(self.ordinal).unwrap_or(usize::MAX);
        let info = segment.array_near(self.name(), hint)?;
        check_dtype(meta.name(), meta.dtype(), &info.dtype(), self.name())?;
        Ok(info)
    }

    /// Type, shape, chunking, dimension names and fill value of `array` (one segment open on first use).
    ///
    /// # Errors
    /// [`AtlasError::DatasetNotFound`], [`AtlasError::ArrayNotFound`],
    /// [`AtlasError::CorruptSegment`] for a damaged segment, [`AtlasError::Io`] when storage fails.
    pub async fn array_layout(&self, array: &str) -> Result<ArrayLayout> {
        self.ensure_live()?;
        let meta = self.declared(array)?;
        if let Some(digest) = self.member.placed_digest(array, self.ordinal).await
            && digest.name == self.name()
        {
            check_dtype(meta.name(), meta.dtype(), &digest.dtype, self.name())?;
            return layout_of_digest(&digest);
        }
        let segment = self.segment_for(array, Need::Layout).await?;
        let info = self.info(&meta, &segment)?;
        layout_of(meta.dtype(), &info)
    }

    /// Statistics of `array` as its segment records them; `None` if it records none.
    ///
    /// # Errors
    /// As [`array_layout`](Self::array_layout).
    pub async fn array_stats(&self, array: &str) -> Result<Option<ArrayStats>> {
        self.ensure_live()?;
        let meta = self.declared(array)?;
        let segment = self.segment_for(array, Need::Stats).await?;
        let info = self.info(&meta, &segment)?;
        Ok(info.stats())
    }

    /// Dataset-level attributes in the order they were set. No request when the
    /// schema declares none; else one open of the `_datasets` segment.
    ///
    /// # Errors
    /// [`AtlasError::DatasetNotFound`] if the dataset was deleted since the handle was taken,
    /// [`AtlasError::CorruptSegment`], [`AtlasError::Io`].
    pub async fn attributes(&self) -> Result<Vec<(String, Attr)>> {
        self.ensure_live()?;
        let schema = self.schema();
        if !schema.has_attributes() {
            return Ok(Vec::new());
        }
        let segment = self.datasets_segment().await?;
        stored_attrs(&segment, self.name(), schema.attributes())
    }

    /// Dataset-level attribute `key`; `None` without any request if the schema does not declare it.
    ///
    /// # Errors
    /// As [`attributes`](Self::attributes).
    pub async fn attribute(&self, key: &str) -> Result<Option<Attr>> {
        self.ensure_live()?;
        let schema = self.schema();
        let Some(dtype) = schema.attribute_dtype(key) else {
            return Ok(None);
        };
        let segment = self.datasets_segment().await?;
        stored_attr(&segment, self.name(), key, dtype).map(Some)
    }

    /// Attributes of `array` in the order they were set. No request when it declares none.
    ///
    /// # Errors
    /// [`AtlasError::DatasetNotFound`], [`AtlasError::ArrayNotFound`],
    /// [`AtlasError::CorruptSegment`], [`AtlasError::Io`].
    pub async fn array_attributes(&self, array: &str) -> Result<Vec<(String, Attr)>> {
        self.ensure_live()?;
        let meta = self.declared(array)?;
        if meta.attributes().next().is_none() {
            return Ok(Vec::new());
        }
        let segment = self.segment_of(array).await?;
        stored_attrs(&segment, self.name(), meta.attributes())
    }

    /// Attribute `key` of `array`; `None` without any request if the schema does not declare it.
    ///
    /// # Errors
    /// As [`array_attributes`](Self::array_attributes).
    pub async fn array_attribute(&self, array: &str, key: &str) -> Result<Option<Attr>> {
        self.ensure_live()?;
        let meta = self.declared(array)?;
        let Some(dtype) = meta.attribute_dtype(key) else {
            return Ok(None);
        };
        let segment = self.segment_of(array).await?;
        stored_attr(&segment, self.name(), key, dtype).map(Some)
    }

    /// Reads `region` of `array` (e.g. [`Region::all()`], `[0..4]`,
    /// `Region::new().index(3).range(2..)`), row-major; an indexed axis is
    /// dropped from the result's shape.
    ///
    /// `T` must be the declared element type (`DTypeMismatch` otherwise; nothing
    /// is reinterpreted). The region must have the array's rank and lie inside
    /// it (`InvalidRegion`). Cost: unwritten elements read as the fill value
    /// and cost no request; written chunks cost one read per block not already
    /// cached (see [`Region`]).
    ///
    /// # Errors
    /// [`AtlasError::DatasetNotFound`] if the dataset was deleted since the handle was taken,
    /// [`AtlasError::ArrayNotFound`], [`AtlasError::DTypeMismatch`], [`AtlasError::InvalidRegion`]
    /// for a region outside the array, [`AtlasError::CorruptSegment`] for damaged bytes,
    /// [`AtlasError::Io`] when storage fails.
    pub async fn read_array<T: Element>(
        &self,
        array: &str,
        region: impl Into<Region>,
    ) -> Result<ndarray::ArrayD<T>> {
        self.ensure_live()?;
        let meta = self.declared(array)?;
        if T::ATLAS_DTYPE != *meta.dtype() {
            return Err(AtlasError::DTypeMismatch {
                array: array.to_owned(),
                stored: meta.dtype().clone(),
                requested: T::ATLAS_DTYPE,
            });
        }
        let segment = self.segment_for(array, Need::Data).await?;
        let (resolved, info) = self.checked_region::<T>(&meta, &segment, &region.into())?;
        let data = segment
            .read_found::<T>(info, &resolved.origin, &resolved.extent)
            .await?;
        data.into_shape_with_order(ndarray::IxDyn(&resolved.shape))
            .map_err(|e| AtlasError::corrupt(format!("{array:?} read back in another shape: {e}")))
    }

    /// Reads `region` of `array` like [`read_array`](Self::read_array), in
    /// whatever element type it holds: the data with its fill value and the
    /// names of the axes it keeps. `DTypeMismatch` for arrays of bool or lists.
    ///
    /// # Errors
    /// As [`read_array`](Self::read_array), without the type check.
    pub async fn read_any(&self, array: &str, region: impl Into<Region>) -> Result<AnyArray> {
        self.ensure_live()?;
        let meta = self.declared(array)?;
        let segment = self.segment_for(array, Need::Data).await?;
        let (resolved, info) = self.checked_region::<u64>(&meta, &segment, &region.into())?;
        let data = segment
            .read_any_found(info, &resolved.origin, &resolved.extent)
            .await?
            .into_shape(&resolved.shape)
            .ok_or_else(|| AtlasError::corrupt(format!("{array:?} read back in another shape")))?;
        let names = info.dimension_names();
        let dimension_names = if names.len() == resolved.kept.len() {
            names
                .into_iter()
                .zip(&resolved.kept)
                .filter(|(_, keep)| **keep)
                .map(|(n, _)| n)
                .collect()
        } else {
            names
        };
        Ok(AnyArray::new(data, info.fill(), dimension_names))
    }

    /// Checks a region against the array's shape and the read budget. `T`
    /// sizes the elements (8 bytes for an untyped read).
    fn checked_region<'s, T>(
        &self,
        meta: &ArrayMeta<'_>,
        segment: &'s Segment,
        region: &Region,
    ) -> Result<(Resolved, ArrayRef<'s>)> {
        let array = meta.name();
        let info = self.info(meta, segment)?;
        let resolved = region.resolve(array, &info.shape())?;
        let elements = resolved
            .extent
            .iter()
            .try_fold(1u64, |acc, &n| acc.checked_mul(n))
            .ok_or_else(|| invalid(array, "the region's element count overflows"))?;
        let bytes = elements.saturating_mul(std::mem::size_of::<T>() as u64);
        let budget = segment
            .len()
            .saturating_mul(READ_EXPANSION)
            .max(READ_FLOOR_BYTES);
        if bytes > budget {
            return Err(invalid(
                array,
                &format!(
                    "a region of {elements} elements ({bytes} bytes) exceeds the {budget}-byte limit for one read from a segment of {} bytes; read it in parts",
                    segment.len()
                ),
            ));
        }
        Ok((resolved, info))
    }

    async fn datasets_segment(&self) -> Result<Arc<Segment>> {
        self.member.segment(DATASETS_SEGMENT).await?.ok_or_else(|| {
            AtlasError::corrupt(format!(
                "dataset {:?} declares attributes, but the container has no {DATASETS_SEGMENT} segment",
                self.name()
            ))
        })
    }
}

fn invalid(array: &str, what: &str) -> AtlasError {
    AtlasError::InvalidRegion {
        array: array.to_owned(),
        what: what.to_owned(),
    }
}

/// `CorruptCollection` unless the segment's element type is `declared`, the
/// footer's type for `array` of `dataset`.
pub(crate) fn check_dtype(
    array: &str,
    declared: &DType,
    stored: &DType,
    dataset: &str,
) -> Result<()> {
    if stored != declared {
        return Err(AtlasError::corrupt(format!(
            "dataset {dataset:?}, array {array:?}: the footer declares {declared}, the segment holds {stored}"
        )));
    }
    Ok(())
}

/// The layout the segment records, with the footer's dtype (already checked equal).
pub(crate) fn layout_of(dtype: &DType, info: &ArrayRef<'_>) -> Result<ArrayLayout> {
    layout(
        info.name(),
        dtype,
        info.shape().iter().map(|&d| u64::from(d)).collect(),
        &info.chunk_shape(),
        info.dimension_names(),
        info.fill(),
    )
}

/// [`layout_of`] from what the dataset index records of an array.
fn layout_of_digest(digest: &ArrayDigest) -> Result<ArrayLayout> {
    layout(
        &digest.name,
        &digest.dtype,
        digest.shape.to_vec(),
        &digest.chunk_shape,
        digest.dimension_names.to_vec(),
        digest.fill.clone(),
    )
}

/// The layout of array `name`, its element count checked for overflow.
fn layout(
    name: &str,
    dtype: &DType,
    shape: Vec<u64>,
    chunk_shape: &[u32],
    dimension_names: Vec<String>,
    fill_value: Option<Value>,
) -> Result<ArrayLayout> {
    let element_count = shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| AtlasError::corrupt(format!("array {name:?}: element count overflows")))?;
    Ok(ArrayLayout {
        dtype: dtype.clone(),
        shape,
        chunk_shape: chunk_shape.iter().map(|&c| u64::from(c)).collect(),
        dimension_names,
        fill_value,
        element_count,
    })
}

/// The value of `key` on array `array_name` of `segment`, checked against the declared type.
pub(crate) fn stored_attr(
    segment: &Segment,
    array_name: &str,
    key: &str,
    declared: &DType,
) -> Result<Attr> {
    let attr = segment.attribute(array_name, key)?.ok_or_else(|| {
        AtlasError::corrupt(format!(
            "segment {:?}: dataset {array_name:?} declares attribute {key:?}, but none is stored",
            segment.name()
        ))
    })?;
    check_attr_type(&attr, declared, segment.name(), array_name, key)?;
    Ok(attr)
}

/// The values of the `declared` keys on array `array_name` of `segment`, in
/// the order given, each checked against its declared type.
fn stored_attrs<'k>(
    segment: &Segment,
    array_name: &str,
    declared: impl Iterator<Item = (&'k str, &'k DType)>,
) -> Result<Vec<(String, Attr)>> {
    declared
        .map(|(key, dtype)| {
            Ok((
                key.to_owned(),
                stored_attr(segment, array_name, key, dtype)?,
            ))
        })
        .collect()
}

/// `CorruptCollection` unless a stored value has the type the schema declares.
pub(crate) fn check_attr_type(
    attr: &Attr,
    declared: &DType,
    segment: &str,
    array_name: &str,
    key: &str,
) -> Result<()> {
    let stored = attr.dtype();
    if stored != *declared {
        return Err(AtlasError::corrupt(format!(
            "segment {segment:?}: attribute {key:?} of {array_name:?} is declared {declared} but stored as {stored}"
        )));
    }
    Ok(())
}
