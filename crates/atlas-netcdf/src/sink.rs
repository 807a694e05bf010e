//! The one place this crate calls the Atlas writer: a [`Dataset`] goes into a
//! [`atlas::DatasetWriter`] (arrays defined, written whole, attributes set).

use atlas::ndarray::ArrayD;
use atlas::{DatasetWriter, Element, for_each_array_data};

use crate::error::FileError;
use crate::model::{Array, Dataset};

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

fn write(writer: &mut DatasetWriter, array: &Array) -> Result<(), FileError> {
    for_each_array_data!(&array.values, data => put(writer, array, data), _ => {
        Err(FileError::Unsupported {
            variable: array.name.clone(),
            dtype: array.values.dtype().to_string(),
        })
    })?;
    for (key, value) in &array.attrs {
        writer.set_array_attribute(&array.name, key, value.clone())?;
    }
    Ok(())
}

/// Defines `array` with the element type of `data` and writes `data` whole.
fn put<T: Element>(
    writer: &mut DatasetWriter,
    array: &Array,
    data: &ArrayD<T>,
) -> Result<(), FileError> {
    let dims: Vec<&str> = array.dims.iter().map(String::as_str).collect();
    let shape = data
        .shape()
        .iter()
        .map(|&l| u64::try_from(l))
        .collect::<Result<Vec<u64>, _>>()
        .map_err(|_| FileError::Shape {
            variable: array.name.clone(),
            reason: "an axis does not fit 64 bits".into(),
        })?;
    writer.define_array_with_fill::<T>(
        &array.name,
        &dims,
        &shape,
        array.chunk_shape.as_deref(),
        array.fill.clone(),
    )?;
    if data.is_empty() {
        return Ok(());
    }
    let origin = vec![0u64; shape.len()];
    writer.write_array(&array.name, &origin, data.as_standard_layout().view())?;
    Ok(())
}
