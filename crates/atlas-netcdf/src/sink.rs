//! The one place this crate calls the Atlas writer: a [`Dataset`] goes into a
//! [`atlas::DatasetWriter`] (arrays defined, written whole, attributes set).

use atlas::{DatasetWriter, Element, Timestamp};
use ndarray::{ArrayViewD, IxDyn};

use crate::error::FileError;
use crate::model::{Array, Dataset, Fill, Values};

/// Writes every array and attribute of `dataset` into `writer` (not finished).
pub fn fill_writer(writer: &mut DatasetWriter, dataset: &Dataset) -> Result<(), FileError> {
    for array in &dataset.arrays {
        write(writer, array)?;
    }
    for (key, value) in &dataset.attrs {
        writer.set_attribute(key, value.clone())?;
    }
    Ok(())
}

fn shape_usize(array: &Array) -> Result<Vec<usize>, FileError> {
    array
        .shape
        .iter()
        .map(|&l| usize::try_from(l))
        .collect::<Result<_, _>>()
        .map_err(|_| FileError::Shape {
            variable: array.name.clone(),
            reason: "an axis does not fit this platform".into(),
        })
}

fn put<T: Element + Clone>(
    writer: &mut DatasetWriter,
    array: &Array,
    data: &[T],
    fill: Option<T>,
) -> Result<(), FileError> {
    let dims: Vec<&str> = array.dims.iter().map(String::as_str).collect();
    writer.define_array::<T>(
        &array.name,
        &dims,
        &array.shape,
        array.chunk_shape.as_deref(),
        fill,
    )?;
    if data.is_empty() {
        return Ok(());
    }
    let shape = shape_usize(array)?;
    let view = ArrayViewD::from_shape(IxDyn(&shape), data).map_err(|e| FileError::Shape {
        variable: array.name.clone(),
        reason: format!("{} values for shape {:?}: {e}", data.len(), array.shape),
    })?;
    let origin = vec![0u64; shape.len()];
    writer.write_array(&array.name, &origin, view)?;
    Ok(())
}

fn int_fill<T: TryFrom<i64> + TryFrom<u64>>(fill: &Option<Fill>) -> Option<T> {
    match fill {
        Some(Fill::Int(v)) => T::try_from(*v).ok(),
        Some(Fill::UInt(v)) => T::try_from(*v).ok(),
        _ => None,
    }
}

fn float_fill(fill: &Option<Fill>) -> Option<f64> {
    match fill {
        Some(Fill::Float(v)) => Some(*v),
        Some(Fill::Int(v)) => Some(*v as f64),
        Some(Fill::UInt(v)) => Some(*v as f64),
        _ => None,
    }
}

fn write(writer: &mut DatasetWriter, a: &Array) -> Result<(), FileError> {
    let f = &a.fill;
    match &a.values {
        Values::Int8(v) => put(writer, a, v, int_fill(f)),
        Values::Int16(v) => put(writer, a, v, int_fill(f)),
        Values::Int32(v) => put(writer, a, v, int_fill(f)),
        Values::Int64(v) => put(writer, a, v, int_fill(f)),
        Values::UInt8(v) => put(writer, a, v, int_fill(f)),
        Values::UInt16(v) => put(writer, a, v, int_fill(f)),
        Values::UInt32(v) => put(writer, a, v, int_fill(f)),
        Values::UInt64(v) => put(writer, a, v, int_fill(f)),
        Values::Float32(v) => put(writer, a, v, float_fill(f).map(|x| x as f32)),
        Values::Float64(v) => put(writer, a, v, float_fill(f)),
        Values::TimestampNs(v) => {
            let stamps: Vec<Timestamp> = v.iter().map(|&n| Timestamp(n)).collect();
            let fill = match f {
                Some(Fill::TimestampNs(n)) | Some(Fill::Int(n)) => Some(Timestamp(*n)),
                _ => None,
            };
            put(writer, a, &stamps, fill)
        }
        Values::String(v) => {
            let fill = match f {
                Some(Fill::String(s)) => Some(s.clone()),
                _ => None,
            };
            put(writer, a, v, fill)
        }
    }?;
    for (key, value) in &a.attrs {
        writer.set_array_attribute(&a.name, key, value.clone())?;
    }
    Ok(())
}
