//! Text output: aligned tables, sizes, times, and one value, statistic or
//! attribute as a person reads it.

use std::fmt::Write as _;

use atlas::Value;
use atlas::time::civil_from_seconds;
use atlas::{Attr, DType};

/// A text table: a header row, then rows; columns padded to their widest cell.
#[derive(Debug, Default)]
pub struct Table {
    headers: Vec<String>,
    right: Vec<bool>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers. A header starting with `>` is
    /// right-aligned (numbers); the `>` is not printed.
    pub fn new(headers: &[&str]) -> Self {
        Self {
            headers: headers
                .iter()
                .map(|h| h.trim_start_matches('>').to_owned())
                .collect(),
            right: headers.iter().map(|h| h.starts_with('>')).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row (missing cells are blank).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table, each line indented by `indent` spaces, ending in a newline.
    pub fn render(&self, indent: usize) -> String {
        let cols = self.headers.len();
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        let mut line = |cells: &[String]| {
            let mut text = " ".repeat(indent);
            for (i, (width, &right)) in widths.iter().zip(&self.right).enumerate() {
                let cell = cells.get(i).map_or("", String::as_str);
                let pad = width.saturating_sub(cell.chars().count());
                if i > 0 {
                    text.push_str("  ");
                }
                if right {
                    text.push_str(&" ".repeat(pad));
                    text.push_str(cell);
                } else {
                    text.push_str(cell);
                    if i + 1 < cols {
                        text.push_str(&" ".repeat(pad));
                    }
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        };
        line(&self.headers);
        for row in &self.rows {
            line(row);
        }
        out
    }
}

/// `8629` → `8.4 KiB`.
pub fn bytes(n: u64) -> String {
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = "KiB";
    for larger in ["MiB", "GiB", "TiB", "PiB"] {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = larger;
    }
    format!("{value:.1} {unit}")
}

/// Milliseconds since the epoch → `2024-01-31 12:00:00.250 UTC`.
pub fn unix_ms(ms: i64) -> String {
    let (y, mo, d, h, mi, s) = civil_from_seconds(ms.div_euclid(1000));
    let frac = ms.rem_euclid(1000);
    let mut out = format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}");
    if frac != 0 {
        let _ = write!(out, ".{frac:03}");
    }
    out.push_str(" UTC");
    out
}

/// A float as Rust's shortest round-trip form (`0.25`, `1.0`, `NaN`, `inf`).
pub fn float<F: std::fmt::Debug>(v: F) -> String {
    format!("{v:?}")
}

/// Text bytes as a quoted string, anything else as hex (`0xdead00`).
pub fn bytes_value(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) => format!("{s:?}"),
        Err(_) => hex(b),
    }
}

/// `0x` then the bytes in hex; `0x` alone for none.
pub fn hex(b: &[u8]) -> String {
    let mut out = String::from("0x");
    for byte in b {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// A min or max of an array of `dtype` as text; `-` when absent. A float32
/// array's bound prints as the float32 it is (`2000.8`, not `2000.800048828125`).
pub fn stat(v: Option<&Value>, dtype: Option<&DType>) -> String {
    match v {
        None => "-".to_owned(),
        Some(Value::Int(i)) => i.to_string(),
        Some(Value::UInt(u)) => u.to_string(),
        Some(Value::Float(f)) if dtype == Some(&DType::Float32) => float(*f as f32),
        Some(Value::Float(f)) => float(*f),
        Some(Value::Bytes(b)) => bytes_value(b),
        Some(Value::Timestamp(t)) => t.to_string(),
        Some(other) => other.to_string(),
    }
}

fn join<T>(items: &[T], f: impl Fn(&T) -> String) -> String {
    items.iter().map(f).collect::<Vec<_>>().join(", ")
}

/// An attribute value as text: strings quoted, binary as hex, lists comma-separated.
pub fn attr(a: &Attr) -> String {
    match a {
        Attr::Bool(v) => v.to_string(),
        Attr::Int8(v) => v.to_string(),
        Attr::Int16(v) => v.to_string(),
        Attr::Int32(v) => v.to_string(),
        Attr::Int64(v) => v.to_string(),
        Attr::UInt8(v) => v.to_string(),
        Attr::UInt16(v) => v.to_string(),
        Attr::UInt32(v) => v.to_string(),
        Attr::UInt64(v) => v.to_string(),
        Attr::Float32(v) => float(*v),
        Attr::Float64(v) => float(*v),
        Attr::String(v) => format!("{v:?}"),
        Attr::Binary(v) => hex(v),
        Attr::BoolList(v) => join(v, ToString::to_string),
        Attr::Int8List(v) => join(v, ToString::to_string),
        Attr::Int16List(v) => join(v, ToString::to_string),
        Attr::Int32List(v) => join(v, ToString::to_string),
        Attr::Int64List(v) => join(v, ToString::to_string),
        Attr::UInt8List(v) => join(v, ToString::to_string),
        Attr::UInt16List(v) => join(v, ToString::to_string),
        Attr::UInt32List(v) => join(v, ToString::to_string),
        Attr::UInt64List(v) => join(v, ToString::to_string),
        Attr::Float32List(v) => join(v, |x| float(*x)),
        Attr::Float64List(v) => join(v, |x| float(*x)),
        Attr::StringList(v) => join(v, |s| format!("{s:?}")),
        Attr::BinaryList(v) => join(v, |b| hex(b)),
        other => format!("({})", other.dtype().display_name()),
    }
}

/// The type name of an attribute value (`int64`, `list<string>`).
pub fn attr_type(a: &Attr) -> String {
    a.dtype().display_name()
}

/// `1 thing`, `2 things`.
pub fn count(n: usize, singular: &str, plural: &str) -> String {
    format!("{n} {}", if n == 1 { singular } else { plural })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_utc_and_exact() {
        assert_eq!(unix_ms(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(unix_ms(1_704_067_200_250), "2024-01-01 00:00:00.250 UTC");
        assert_eq!(unix_ms(-1), "1969-12-31 23:59:59.999 UTC");
        assert_eq!(
            stat(
                Some(&Value::Timestamp(atlas::Timestamp(
                    1_709_424_000_000_000_000
                ))),
                None
            ),
            "2024-03-03T00:00:00Z"
        );
    }

    #[test]
    fn a_float32_bound_prints_as_a_float32() {
        let v = Value::Float(f64::from(2000.8f32));
        assert_eq!(stat(Some(&v), Some(&DType::Float32)), "2000.8");
        assert_eq!(stat(Some(&v), Some(&DType::Float64)), "2000.800048828125");
        assert_eq!(stat(None, None), "-");
    }

    #[test]
    fn sizes_read_as_binary_units() {
        assert_eq!(bytes(54), "54 B");
        assert_eq!(bytes(8629), "8.4 KiB");
        assert_eq!(bytes(3 * 1024 * 1024), "3.0 MiB");
    }

    #[test]
    fn a_table_pads_columns_and_right_aligns_numbers() {
        let mut t = Table::new(&["name", ">n"]);
        t.row(vec!["a".into(), "10".into()]);
        t.row(vec!["long".into(), "2".into()]);
        assert_eq!(t.render(0), "name   n\na     10\nlong   2\n");
    }

    #[test]
    fn attributes_read_naturally() {
        assert_eq!(attr(&Attr::String("buoy".into())), "\"buoy\"");
        assert_eq!(attr(&Attr::Binary(vec![0xde, 0xad, 0])), "0xdead00");
        assert_eq!(attr(&Attr::Float64List(vec![-5.0, 40.0])), "-5.0, 40.0");
        assert_eq!(attr_type(&Attr::StringList(vec![])), "list<string>");
    }
}
