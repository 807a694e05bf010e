//! `cargo xtask py-fixture DIR`: the collection the Python suite reads besides
//! `testdata/v8`, written by our own writer. It holds what the fixtures lack:
//! every numeric dtype with a fill value and an unwritten tail, a NaN, a
//! timestamp fill (NaT in numpy), a chunked 2-D array, a non-index coordinate
//! named by the `_pyatlas_coords` attribute v8 tooling writes, and datasets with
//! different schemas (for the catalogue's empty cells).

use std::path::Path;

use atlas::{AtlasWriter, Attr, DatasetWriter, Element, Timestamp, WriterConfig};
use ndarray::{Array1, Array2, ArrayD};

type Result<T = (), E = String> = std::result::Result<T, E>;

fn column<T: Clone>(values: &[T]) -> ArrayD<T> {
    Array1::from(values.to_vec()).into_dyn()
}

/// A 1-D array of `values.len() + 1` elements along `dim`: the values, then one unwritten (fill).
fn with_unwritten_tail<T: Element + Clone>(
    ds: &mut DatasetWriter,
    name: &str,
    dim: &str,
    values: &[T],
    fill: T,
) -> atlas::Result<()> {
    ds.define_array::<T>(name, &[dim], &[values.len() as u64 + 1], None, Some(fill))?;
    ds.write_array::<T>(name, &[0], column(values).view())
}

async fn every_dtype(mut ds: DatasetWriter) -> atlas::Result<()> {
    with_unwritten_tail::<i8>(&mut ds, "i8", "n", &[i8::MIN, -1, 7], 127)?;
    with_unwritten_tail::<i16>(&mut ds, "i16", "n", &[i16::MIN, -1, 7], -999)?;
    with_unwritten_tail::<i32>(&mut ds, "i32", "n", &[i32::MIN, -1, 7], -999)?;
    with_unwritten_tail::<i64>(&mut ds, "i64", "n", &[i64::MIN, -1, 9_000_000_000], -999)?;
    with_unwritten_tail::<u8>(&mut ds, "u8", "n", &[0, 1, 200], 255)?;
    with_unwritten_tail::<u16>(&mut ds, "u16", "n", &[0, 1, 60_000], 65_535)?;
    with_unwritten_tail::<u32>(&mut ds, "u32", "n", &[0, 1, 4_000_000_000], 7)?;
    with_unwritten_tail::<u64>(&mut ds, "u64", "n", &[0, 1, u64::MAX - 1], u64::MAX)?;
    with_unwritten_tail::<f32>(&mut ds, "f32", "n", &[-1.5, f32::NAN, 3.25], 99999.0)?;
    with_unwritten_tail::<f64>(&mut ds, "f64", "n", &[-1.5, 0.1, 1e300], -9999.0)?;
    let t0 = 1_704_067_200_000_000_000; // 2024-01-01T00:00:00Z
    with_unwritten_tail::<Timestamp>(
        &mut ds,
        "time",
        "n",
        &[Timestamp(t0), Timestamp(-1), Timestamp(t0 + 1)],
        Timestamp(-9_000_000_000_000_000_000),
    )?;
    ds.set_array_attribute("time", "units", "nanoseconds since 1970-01-01")?;
    ds.define_array::<String>("label", &["k"], &[3], None, None)?;
    ds.write_array::<String>(
        "label",
        &[0],
        column(&["a".to_owned(), "é ü".to_owned(), String::new()]).view(),
    )?;
    ds.define_array::<Vec<u8>>("blob", &["k"], &[3], None, None)?;
    ds.write_array::<Vec<u8>>(
        "blob",
        &[0],
        column(&[vec![0u8, 255], vec![], vec![7]]).view(),
    )?;

    // 6 x 10 grid in 4 x 4 chunks; value = 10 * row + column, last row unwritten.
    ds.define_array::<f64>("grid", &["y", "x"], &[6, 10], Some(&[4, 4]), Some(-1.0))?;
    let grid = Array2::from_shape_fn((5, 10), |(r, c)| (10 * r + c) as f64).into_dyn();
    ds.write_array::<f64>("grid", &[0, 0], grid.view())?;
    ds.set_array_attribute("grid", "units", "m")?;
    ds.set_array_attribute("grid", "valid_range", Attr::Float64List(vec![0.0, 100.0]))?;
    ds.set_array_attribute("grid", "scale_hint", Attr::Float32(0.5))?;

    ds.set_attribute("title", "every dtype")?;
    ds.set_attribute("version", Attr::UInt16(3))?;
    ds.finish().await
}

async fn station(mut ds: DatasetWriter, index: usize) -> atlas::Result<()> {
    let n = 3 + index;
    let temps: Vec<f32> = (0..n).map(|i| 10.0 + (index * 10 + i) as f32).collect();
    ds.define_array::<f32>("TEMP", &["point"], &[n as u64], None, Some(99999.0))?;
    // The last point of every station is unwritten: it reads as the fill value.
    ds.write_array::<f32>("TEMP", &[0], column(&temps[..n - 1]).view())?;
    ds.set_array_attribute("TEMP", "units", "degree_Celsius")?;
    let lats: Vec<f64> = (0..n).map(|i| -10.0 + i as f64).collect();
    ds.define_array::<f64>("lat", &["point"], &[n as u64], None, None)?;
    ds.write_array::<f64>("lat", &[0], column(&lats).view())?;
    ds.set_attribute("_pyatlas_coords", r#"["lat"]"#)?;
    ds.set_attribute("title", format!("station {index}"))?;
    ds.set_attribute("cycle", Attr::Int32(index as i32))?;
    ds.finish().await
}

/// Writes the Python suite's collection to `dir` (which must not hold one).
pub fn write(dir: &Path) -> Result {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime
        .block_on(async {
            let writer = AtlasWriter::create(dir, &WriterConfig::default()).await?;
            every_dtype(writer.add_dataset("every_dtype")?).await?;
            for i in 0..4 {
                station(writer.add_dataset(&format!("station_{i}"))?, i).await?;
            }
            writer.finish().await.map(|_| ())
        })
        .map_err(|e: atlas::AtlasError| format!("{}: {e}", dir.display()))
}
