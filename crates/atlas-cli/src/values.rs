//! Reading an array whose element type is known only at run time: one
//! dispatch on the dtype, then values as text cells (as JSON: `atlas_manifest::data_json`).

use atlas::{ArrayData, AtlasError, Dataset, Timestamp, Value, for_each_array_data};

use crate::render;

/// An array of any element type atlas reads (its data as `read_any` gives it).
#[derive(Debug)]
pub struct Values(pub ArrayData);

/// Reads `shape` elements of `array` from `start`, in whatever element type it holds.
pub async fn read(
    view: &Dataset,
    array: &str,
    start: &[u64],
    shape: &[u64],
) -> Result<Values, AtlasError> {
    Ok(Values(
        view.read_any(array, atlas::Region::block(start, shape))
            .await?
            .into_data(),
    ))
}

/// One element as text.
trait Cell {
    fn text(&self) -> String;
    fn is_fill(&self, fill: &Value) -> bool;
}

macro_rules! int_cell {
    ($($t:ty),*) => {$(
        impl Cell for $t {
            fn text(&self) -> String { self.to_string() }
            fn is_fill(&self, fill: &Value) -> bool {
                match fill {
                    Value::Int(f) => i128::from(*self) == i128::from(*f),
                    Value::UInt(f) => i128::from(*self) == i128::from(*f),
                    _ => false,
                }
            }
        }
    )*};
}
int_cell!(i8, i16, i32, i64, u8, u16, u32, u64);

impl Cell for f32 {
    fn text(&self) -> String {
        render::float(*self)
    }
    fn is_fill(&self, fill: &Value) -> bool {
        // As array-format compares: the fill narrowed to the element type, bit for bit.
        matches!(fill, Value::Float(f) if (*f as f32).to_bits() == self.to_bits())
    }
}

impl Cell for f64 {
    fn text(&self) -> String {
        render::float(*self)
    }
    fn is_fill(&self, fill: &Value) -> bool {
        matches!(fill, Value::Float(f) if f.to_bits() == self.to_bits())
    }
}

impl Cell for String {
    fn text(&self) -> String {
        format!("{self:?}")
    }
    fn is_fill(&self, fill: &Value) -> bool {
        matches!(fill, Value::String(f) if f == self)
    }
}

impl Cell for Vec<u8> {
    fn text(&self) -> String {
        render::hex(self)
    }
    fn is_fill(&self, _fill: &Value) -> bool {
        false
    }
}

impl Cell for Timestamp {
    fn text(&self) -> String {
        self.to_string()
    }
    fn is_fill(&self, fill: &Value) -> bool {
        fill.timestamp() == Some(*self)
    }
}

impl Values {
    /// The array's shape.
    pub fn shape(&self) -> Vec<u64> {
        self.0.shape().iter().map(|&d| d as u64).collect()
    }

    /// The elements in row-major order as text; an element equal to the fill value is `_`
    /// (as `ncdump` prints it).
    pub fn cells(&self, fill: Option<&Value>) -> Vec<String> {
        for_each_array_data!(&self.0, a => a
            .iter()
            .map(|v| match fill {
                Some(f) if v.is_fill(f) => "_".to_owned(),
                _ => v.text(),
            })
            .collect(), _ => Vec::new())
    }
}

/// Lays out row-major `cells` of `shape` for reading: one value per line for
/// 1-D, aligned rows for 2-D, and for more dimensions a `[i, j, :, :]` header
/// before each 2-D slice.
pub fn layout_text(cells: &[String], shape: &[u64]) -> String {
    let mut out = String::new();
    match shape {
        [] | [_] => {
            for c in cells {
                out.push_str(c);
                out.push('\n');
            }
        }
        [outer @ .., rows, cols] => {
            let cols = *cols as usize;
            let rows = *rows as usize;
            let slice = rows * cols;
            if slice == 0 {
                return out;
            }
            let width = cells.iter().map(|c| c.chars().count()).max().unwrap_or(0);
            for (s, block) in cells.chunks(slice).enumerate() {
                if !outer.is_empty() {
                    if s > 0 {
                        out.push('\n');
                    }
                    let mut index = Vec::with_capacity(shape.len());
                    let mut rem = s;
                    for &d in outer.iter().rev() {
                        index.push((rem % d as usize).to_string());
                        rem /= d as usize;
                    }
                    index.reverse();
                    index.push(":".into());
                    index.push(":".into());
                    out.push_str(&format!("[{}]\n", index.join(", ")));
                }
                for row in block.chunks(cols) {
                    let line = row
                        .iter()
                        .map(|c| format!("{c:>width$}"))
                        .collect::<Vec<_>>()
                        .join("  ");
                    out.push_str(&line);
                    out.push('\n');
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::ArrayD;

    #[test]
    fn values_are_row_major_with_non_finite_floats_as_strings() {
        let v = Values(ArrayData::Float32(
            ArrayD::from_shape_vec(vec![2, 2], vec![0.1, f32::NAN, f32::INFINITY, -2.0]).unwrap(),
        ));
        assert_eq!(
            atlas_manifest::data_json(&v.0),
            serde_json::json!([0.1, "NaN", "inf", -2.0])
        );
        let t = Values(ArrayData::Timestamp(
            ArrayD::from_shape_vec(vec![1], vec![Timestamp(7)]).unwrap(),
        ));
        assert_eq!(atlas_manifest::data_json(&t.0), serde_json::json!([7]));
        let b = Values(ArrayData::Binary(
            ArrayD::from_shape_vec(vec![1], vec![vec![222, 173]]).unwrap(),
        ));
        assert_eq!(
            atlas_manifest::data_json(&b.0),
            serde_json::json!([[222, 173]])
        );
    }

    #[test]
    fn two_dimensions_print_as_aligned_rows() {
        let cells: Vec<String> = ["1", "22", "3", "4"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(layout_text(&cells, &[2, 2]), " 1  22\n 3   4\n");
    }

    #[test]
    fn three_dimensions_print_one_slice_after_another() {
        let cells: Vec<String> = (0..8).map(|i| i.to_string()).collect();
        assert_eq!(
            layout_text(&cells, &[2, 2, 2]),
            "[0, :, :]\n0  1\n2  3\n\n[1, :, :]\n4  5\n6  7\n"
        );
    }

    #[test]
    fn the_fill_value_prints_as_an_underscore() {
        let v = Values(ArrayData::Float32(
            ArrayD::from_shape_vec(vec![3], vec![1.0, -999.0, 2.5]).unwrap(),
        ));
        assert_eq!(v.cells(Some(&Value::Float(-999.0))), ["1.0", "_", "2.5"]);
    }
}
