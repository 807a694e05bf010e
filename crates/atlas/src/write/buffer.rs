//! A dataset's arrays, held locally until the dataset finishes.
//!
//! array-format has no way to remove an array, so nothing reaches a
//! variable's writer before [`DatasetWriter::finish`](crate::DatasetWriter::finish):
//! an abandoned dataset must leave no trace. Until then each array keeps the
//! chunks its writes touched, decoded, in a map keyed by chunk coordinate. A
//! chunk is created from the fill value the first time a write touches it
//! (exactly what array-format does when it patches a partly covered chunk),
//! and chunks no write touched are never created, so they stay unwritten in
//! the segment and read back as fill.

use std::any::Any;
use std::collections::BTreeMap;
use std::ops::Range;

use atlas_format::DType;
use atlas_segment::{Element, SegmentError, SegmentWriter, Value};
use ndarray::{ArrayViewD, ArrayViewMutD, IxDyn, Slice, SliceInfoElem};

use crate::error::{AtlasError, Result};

/// The geometry of one array as array-format will store it.
#[derive(Debug, Clone)]
pub(crate) struct Geometry {
    /// Axis lengths (each fits `u32`).
    pub shape: Vec<u64>,
    /// The chunk extents array-format stores: the user's, a zero extent of an
    /// empty axis stored as 1; the whole shape (at least 1) when unchunked.
    pub chunk_shape: Vec<u64>,
    /// The chunk shape exactly as the caller gave it, passed on to array-format.
    pub declared_chunk_shape: Option<Vec<u64>>,
    /// Dimension names, one per axis (empty: array-format's `dim0`, `dim1`, …).
    pub dimension_names: Vec<String>,
}

impl Geometry {
    /// Validates a definition; every refusal names the array.
    pub(crate) fn new(
        array: &str,
        dimension_names: &[&str],
        shape: &[u64],
        chunk_shape: Option<&[u64]>,
    ) -> Result<Self> {
        let bad = |what: String| AtlasError::InvalidRegion {
            array: array.to_owned(),
            what,
        };
        let rank = shape.len();
        if !dimension_names.is_empty() && dimension_names.len() != rank {
            return Err(bad(format!(
                "{} dimension names for a rank-{rank} array (give one per axis, or none)",
                dimension_names.len()
            )));
        }
        let max = u64::from(u32::MAX);
        if let Some((axis, len)) = shape.iter().enumerate().find(|(_, l)| **l > max) {
            return Err(bad(format!(
                "axis {axis} has length {len}; array-format stores at most {max} per axis"
            )));
        }
        let elements = shape.iter().try_fold(1u64, |acc, &l| acc.checked_mul(l));
        if elements.is_none() {
            return Err(bad("the element count overflows u64".into()));
        }
        let chunks = match chunk_shape {
            None => shape.iter().map(|&l| l.max(1)).collect::<Vec<_>>(),
            Some(cs) => {
                if cs.len() != rank {
                    return Err(bad(format!(
                        "chunk shape has {} axes, the shape has {rank}",
                        cs.len()
                    )));
                }
                let mut out = Vec::with_capacity(rank);
                for (axis, (&c, &l)) in cs.iter().zip(shape).enumerate() {
                    if c > max {
                        return Err(bad(format!(
                            "chunk extent {c} on axis {axis} exceeds {max}"
                        )));
                    }
                    if c == 0 && l != 0 {
                        return Err(bad(format!(
                            "chunk extent 0 on axis {axis}, whose length is {l}"
                        )));
                    }
                    out.push(c.max(1));
                }
                out
            }
        };
        let geometry = Self {
            shape: shape.to_vec(),
            chunk_shape: chunks,
            declared_chunk_shape: chunk_shape.map(<[u64]>::to_vec),
            dimension_names: dimension_names.iter().map(|s| (*s).to_owned()).collect(),
        };
        // The largest chunk must be addressable in memory.
        let chunk_elements = geometry
            .chunk_shape
            .iter()
            .zip(&geometry.shape)
            .try_fold(1usize, |acc, (&c, &l)| {
                acc.checked_mul(usize::try_from(c.min(l.max(1))).ok()?)
            });
        if chunk_elements.is_none_or(|n| n > isize::MAX as usize) {
            return Err(bad(
                "one chunk holds more elements than memory can address".into()
            ));
        }
        Ok(geometry)
    }

    fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The global element range of chunk `coord` along each axis (edge chunks clipped).
    fn chunk_ranges(&self, coord: &[u64]) -> Vec<Range<u64>> {
        coord
            .iter()
            .zip(self.chunk_shape.iter().zip(&self.shape))
            .map(|(&c, (&cs, &len))| {
                let start = c.saturating_mul(cs);
                start..start.saturating_add(cs).min(len)
            })
            .collect()
    }
}

/// One defined array of a dataset, type-erased so a dataset can hold many element types.
pub(crate) trait ArrayBuffer: Send + Sync {
    /// The element type.
    fn dtype(&self) -> DType;
    /// The typed buffer, for `write_array::<T>`.
    fn as_any_mut(&mut self) -> &mut dyn Any;
    /// Raw bytes of element data held (an estimate for variable-length types).
    fn buffered_bytes(&self) -> u64;
    /// Encoded bytes of each touched chunk, in push order (what array-format allocates).
    fn chunk_bytes(&self) -> Vec<u64>;
    /// Refuses what array-format would silently corrupt (a variable-length
    /// chunk past `u32` offsets); run before anything is pushed.
    fn check_encodable(&self, array: &str) -> Result<()>;
    /// Defines the array as `name` in `writer` and writes every touched chunk.
    fn push(&self, writer: &mut SegmentWriter, name: &str) -> Result<(), SegmentError>;
}

/// The typed buffer of one array.
pub(crate) struct TypedBuffer<T: Element> {
    geometry: Geometry,
    fill: Option<Value>,
    fill_element: T,
    /// Touched chunks by coordinate (sorted, so pushes are deterministic), row-major values.
    chunks: BTreeMap<Vec<u64>, Vec<T>>,
    bytes: u64,
}

impl<T: Element> TypedBuffer<T> {
    pub(crate) fn new(geometry: Geometry, fill: Option<Value>) -> Self {
        let fill_element = T::fill_element(fill.as_ref());
        Self {
            geometry,
            fill,
            fill_element,
            chunks: BTreeMap::new(),
            bytes: 0,
        }
    }

    /// Scatters `data` (origin `start`) into the chunks it covers.
    pub(crate) fn write(
        &mut self,
        array: &str,
        start: &[u64],
        data: ArrayViewD<'_, T>,
    ) -> Result<()> {
        let bad = |what: String| AtlasError::InvalidRegion {
            array: array.to_owned(),
            what,
        };
        let rank = self.geometry.rank();
        if start.len() != rank {
            return Err(bad(format!(
                "start has {} coordinates, the array has rank {rank}",
                start.len()
            )));
        }
        if data.ndim() != rank {
            return Err(bad(format!(
                "data has rank {}, the array has rank {rank}",
                data.ndim()
            )));
        }
        let mut end = Vec::with_capacity(rank);
        for axis in 0..rank {
            let (Some(&s), Some(&n), Some(&len)) = (
                start.get(axis),
                data.shape().get(axis),
                self.geometry.shape.get(axis),
            ) else {
                return Err(bad("rank mismatch".into()));
            };
            let e = s
                .checked_add(n as u64)
                .filter(|&e| e <= len)
                .ok_or_else(|| {
                    bad(format!(
                        "region {s}..{} on axis {axis} exceeds its length {len}",
                        s.saturating_add(n as u64)
                    ))
                })?;
            end.push(e);
        }
        if data.is_empty() {
            return Ok(());
        }
        let grid: Vec<Range<u64>> = start
            .iter()
            .zip(&end)
            .zip(&self.geometry.chunk_shape)
            .map(|((&s, &e), &cs)| s / cs..e.div_ceil(cs))
            .collect();
        for coord in grid_coords(&grid) {
            let chunk = self.geometry.chunk_ranges(&coord);
            let overlap: Vec<Range<u64>> = start
                .iter()
                .zip(&end)
                .zip(&chunk)
                .map(|((&s, &e), c)| s.max(c.start)..e.min(c.end))
                .collect();
            if overlap.iter().any(|r| r.is_empty()) {
                continue;
            }
            let chunk_shape: Vec<usize> =
                chunk.iter().map(|r| (r.end - r.start) as usize).collect();
            let src = data.slice(within(&overlap, start.iter().copied()).as_slice());
            let covers_chunk = overlap == chunk;
            let values = match self.chunks.entry(coord) {
                std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::btree_map::Entry::Vacant(v) => {
                    let len: usize = chunk_shape.iter().product();
                    self.bytes = self
                        .bytes
                        .saturating_add((len * std::mem::size_of::<T>()) as u64);
                    if covers_chunk {
                        // A new chunk written whole: no fill to lay down first.
                        v.insert(src.iter().cloned().collect());
                        continue;
                    }
                    v.insert(vec![self.fill_element.clone(); len])
                }
            };
            let mut dst = ArrayViewMutD::from_shape(IxDyn(&chunk_shape), values.as_mut_slice())
                .map_err(|e| bad(format!("chunk buffer: {e}")))?;
            let mut dst = dst.slice_mut(within(&overlap, chunk.iter().map(|c| c.start)).as_slice());
            dst.assign(&src);
        }
        Ok(())
    }
}

/// `region` (global element ranges) as slices of a block whose origin is
/// `origin`, one per axis; `region` starts at or after `origin` on every axis.
fn within(region: &[Range<u64>], origin: impl Iterator<Item = u64>) -> Vec<SliceInfoElem> {
    region
        .iter()
        .zip(origin)
        .map(|(r, o)| Slice::from(((r.start - o) as usize)..((r.end - o) as usize)).into())
        .collect()
}

/// Every coordinate of a grid region, row-major.
pub(super) fn grid_coords(ranges: &[Range<u64>]) -> impl Iterator<Item = Vec<u64>> + '_ {
    let total: u64 = ranges
        .iter()
        .map(|r| r.end.saturating_sub(r.start))
        .product();
    (0..total).map(move |mut i| {
        let mut coord = vec![0u64; ranges.len()];
        for (c, r) in coord.iter_mut().zip(ranges).rev() {
            let n = r.end - r.start;
            *c = r.start + i % n;
            i /= n;
        }
        coord
    })
}

impl<T: Element> ArrayBuffer for TypedBuffer<T> {
    fn dtype(&self) -> DType {
        T::ATLAS_DTYPE
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn buffered_bytes(&self) -> u64 {
        self.bytes
    }

    fn chunk_bytes(&self) -> Vec<u64> {
        let variable_length = matches!(T::ATLAS_DTYPE, DType::String | DType::Binary);
        self.chunks
            .values()
            .map(|values| {
                if variable_length {
                    // u32 offsets (one more than values), then the payload.
                    let payload: u64 = values.iter().map(|v| v.payload_len() as u64).sum();
                    4 * (values.len() as u64 + 1) + payload
                } else {
                    (values.len() * std::mem::size_of::<T>()) as u64
                }
            })
            .collect()
    }

    fn check_encodable(&self, array: &str) -> Result<()> {
        for (coord, values) in &self.chunks {
            let payload = values
                .iter()
                .try_fold(0u64, |acc, v| acc.checked_add(v.payload_len() as u64));
            if payload.is_none_or(|p| p > u64::from(u32::MAX)) {
                return Err(AtlasError::InvalidRegion {
                    array: array.to_owned(),
                    what: format!(
                        "chunk {coord:?} holds more than {} bytes of strings or binary, \
                         which array-format cannot address; use smaller chunks",
                        u32::MAX
                    ),
                });
            }
        }
        Ok(())
    }

    fn push(&self, writer: &mut SegmentWriter, name: &str) -> Result<(), SegmentError> {
        let g = &self.geometry;
        writer.define_array::<T>(
            name,
            g.dimension_names.clone(),
            &g.shape,
            g.declared_chunk_shape.as_deref(),
            self.fill.as_ref(),
        )?;
        for (coord, values) in &self.chunks {
            let ranges = g.chunk_ranges(coord);
            let origin: Vec<u64> = ranges.iter().map(|r| r.start).collect();
            let shape: Vec<usize> = ranges.iter().map(|r| (r.end - r.start) as usize).collect();
            let view = ArrayViewD::from_shape(IxDyn(&shape), values.as_slice()).map_err(|e| {
                SegmentError::InvalidRegion {
                    array: name.to_owned(),
                    what: format!("chunk buffer: {e}"),
                }
            })?;
            writer.write_array(name, &origin, view)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array;

    #[test]
    fn an_unaligned_write_touches_only_the_chunks_it_covers() {
        let g = Geometry::new("x", &[], &[10], Some(&[4])).unwrap();
        let mut b = TypedBuffer::<i32>::new(g, Some(Value::Int(-1)));
        let data = Array::from_vec(vec![7, 8, 9]).into_dyn();
        b.write("x", &[3], data.view()).unwrap();
        let chunks: Vec<_> = b
            .chunks
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(
            chunks,
            vec![
                (vec![0], vec![-1, -1, -1, 7]),
                (vec![1], vec![8, 9, -1, -1])
            ]
        );
    }

    #[test]
    fn a_rank_zero_array_has_one_chunk() {
        let g = Geometry::new("s", &[], &[], None).unwrap();
        let mut b = TypedBuffer::<f64>::new(g, None);
        let data = ndarray::arr0(2.5).into_dyn();
        b.write("s", &[], data.view()).unwrap();
        assert_eq!(b.chunks.get(&Vec::new()), Some(&vec![2.5]));
    }

    #[test]
    fn out_of_bounds_and_rank_mismatches_are_refused() {
        let g = Geometry::new("x", &[], &[4, 4], Some(&[2, 2])).unwrap();
        let mut b = TypedBuffer::<u8>::new(g, None);
        let data = Array::from_elem(IxDyn(&[2, 2]), 1u8);
        let refused = |r: Result<()>| matches!(r, Err(AtlasError::InvalidRegion { .. }));
        assert!(refused(b.write("x", &[3, 0], data.view())));
        assert!(refused(b.write("x", &[0], data.view())));
        let flat = Array::from_elem(IxDyn(&[2]), 1u8);
        assert!(refused(b.write("x", &[0, 0], flat.view())));
        assert!(b.chunks.is_empty());
    }
}
