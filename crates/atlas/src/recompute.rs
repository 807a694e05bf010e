//! Statistics recomputed from an array's values, by the rules the segment
//! writer records them with, so `verify --deep` can compare the two.
//!
//! The rules: an element equal to the fill value is a null (for a NaN fill,
//! any NaN is); min and max are taken over the other elements, floats ordered
//! by `total_cmp`, strings and binary as bytes. An unwritten element is a null
//! too, but with no fill value it reads back as zero and cannot be told from a
//! written zero: [`StatsCheck::Bounds`] is then all that can be checked.

use std::cmp::Ordering;

use crate::{AnyArray, ArrayData, ArrayStats, Timestamp, Value};

/// What the values of an array say about its recorded statistics.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StatsCheck {
    /// A fill value is set: nulls, min and max are determined exactly.
    Exact(ArrayStats),
    /// No fill value: the recorded bounds must lie within these (min, max of
    /// every element read, unwritten zeros included), and an array with no
    /// recorded null must match them exactly.
    Bounds(ArrayStats),
    /// An element type this version does not recompute statistics for.
    Unchecked,
}

/// Recomputes the statistics of `array` from its values.
pub(crate) fn recompute(array: &AnyArray) -> StatsCheck {
    let fill = array.fill();
    let stats = match array.data() {
        ArrayData::Int8(a) => fold(
            a.iter(),
            |v| Value::Int(i64::from(*v)),
            int_fill::<i8>(fill),
        ),
        ArrayData::Int16(a) => fold(
            a.iter(),
            |v| Value::Int(i64::from(*v)),
            int_fill::<i16>(fill),
        ),
        ArrayData::Int32(a) => fold(
            a.iter(),
            |v| Value::Int(i64::from(*v)),
            int_fill::<i32>(fill),
        ),
        ArrayData::Int64(a) => fold(a.iter(), |v| Value::Int(*v), int_fill::<i64>(fill)),
        ArrayData::UInt8(a) => fold(
            a.iter(),
            |v| Value::UInt(u64::from(*v)),
            uint_fill::<u8>(fill),
        ),
        ArrayData::UInt16(a) => fold(
            a.iter(),
            |v| Value::UInt(u64::from(*v)),
            uint_fill::<u16>(fill),
        ),
        ArrayData::UInt32(a) => fold(
            a.iter(),
            |v| Value::UInt(u64::from(*v)),
            uint_fill::<u32>(fill),
        ),
        ArrayData::UInt64(a) => fold(a.iter(), |v| Value::UInt(*v), uint_fill::<u64>(fill)),
        ArrayData::Float32(a) => {
            let f = float_fill(fill).map(|f| f as f32);
            fold_with(
                a.iter(),
                |v| Value::Float(f64::from(*v)),
                |v| f.is_some_and(|f| if f.is_nan() { v.is_nan() } else { *v == f }),
            )
        }
        ArrayData::Float64(a) => {
            let f = float_fill(fill);
            fold_with(
                a.iter(),
                |v| Value::Float(*v),
                |v| f.is_some_and(|f| if f.is_nan() { v.is_nan() } else { *v == f }),
            )
        }
        ArrayData::Timestamp(a) => {
            let f: Option<Timestamp> = fill.and_then(Value::timestamp);
            fold(a.iter(), |v| Value::Timestamp(*v), f)
        }
        ArrayData::String(a) => {
            let f = string_fill(fill);
            fold_with(
                a.iter(),
                |v| Value::Bytes(v.as_bytes().to_vec()),
                |v| f.is_some_and(|f| f == v.as_bytes()),
            )
        }
        ArrayData::Binary(a) => {
            let f = string_fill(fill);
            fold_with(
                a.iter(),
                |v| Value::Bytes(v.clone()),
                |v| f.is_some_and(|f| f == v.as_slice()),
            )
        }
        _ => return StatsCheck::Unchecked,
    };
    if fill.is_some() {
        StatsCheck::Exact(stats)
    } else {
        StatsCheck::Bounds(stats)
    }
}

/// What is wrong with `recorded` given what the values say; `None` if nothing.
pub(crate) fn disagreement(check: &StatsCheck, recorded: &ArrayStats) -> Option<String> {
    let (computed, exact) = match check {
        StatsCheck::Exact(s) => (s, true),
        StatsCheck::Bounds(s) => (s, recorded.null_count == 0),
        StatsCheck::Unchecked => return None,
    };
    if recorded.row_count != computed.row_count {
        return Some(format!(
            "statistics count {} elements, the array holds {}",
            recorded.row_count, computed.row_count
        ));
    }
    if recorded.null_count > recorded.row_count {
        return Some(format!(
            "statistics count {} nulls in {} elements",
            recorded.null_count, recorded.row_count
        ));
    }
    if exact {
        if check_exact_nulls(check) && recorded.null_count != computed.null_count {
            return Some(format!(
                "statistics count {} nulls, the values hold {}",
                recorded.null_count, computed.null_count
            ));
        }
        for (what, r, c) in [
            ("minimum", &recorded.min, &computed.min),
            ("maximum", &recorded.max, &computed.max),
        ] {
            if !same(r.as_ref(), c.as_ref()) {
                return Some(format!("recorded {what} {r:?}, the values give {c:?}"));
            }
        }
        return None;
    }
    // No fill value: the recorded bounds must lie within what was read.
    let within = |r: Option<&Value>| {
        r.is_none_or(|r| {
            computed
                .min
                .as_ref()
                .is_some_and(|lo| r.compare(lo).is_some_and(|o| o != Ordering::Less))
                && computed
                    .max
                    .as_ref()
                    .is_some_and(|hi| r.compare(hi).is_some_and(|o| o != Ordering::Greater))
        })
    };
    if !within(recorded.min.as_ref()) || !within(recorded.max.as_ref()) {
        return Some(format!(
            "recorded bounds {:?}..{:?} lie outside the values read, {:?}..{:?}",
            recorded.min, recorded.max, computed.min, computed.max
        ));
    }
    None
}

/// Whether the null count itself can be checked (a fill value is set).
fn check_exact_nulls(check: &StatsCheck) -> bool {
    matches!(check, StatsCheck::Exact(_))
}

fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.compare(b) == Some(Ordering::Equal),
        _ => false,
    }
}

fn fold<'a, T: PartialEq + 'a>(
    values: impl Iterator<Item = &'a T>,
    stat: impl Fn(&T) -> Value,
    fill: Option<T>,
) -> ArrayStats {
    fold_with(values, stat, |v| fill.as_ref() == Some(v))
}

fn fold_with<'a, T: 'a>(
    values: impl Iterator<Item = &'a T>,
    stat: impl Fn(&T) -> Value,
    is_null: impl Fn(&T) -> bool,
) -> ArrayStats {
    let mut out = ArrayStats {
        min: None,
        max: None,
        null_count: 0,
        row_count: 0,
    };
    for v in values {
        out.row_count += 1;
        if is_null(v) {
            out.null_count += 1;
            continue;
        }
        let s = stat(v);
        if out
            .min
            .as_ref()
            .is_none_or(|m| s.compare(m) == Some(Ordering::Less))
        {
            out.min = Some(s.clone());
        }
        if out
            .max
            .as_ref()
            .is_none_or(|m| s.compare(m) == Some(Ordering::Greater))
        {
            out.max = Some(s);
        }
    }
    out
}

/// The fill of a signed integer array, narrowed as the writer narrows it (wrapping).
fn int_fill<T: FromWide>(fill: Option<&Value>) -> Option<T> {
    match fill {
        Some(Value::Int(v)) => Some(T::from_i64(*v)),
        Some(Value::UInt(v)) => Some(T::from_u64(*v)),
        _ => None,
    }
}

/// The fill of an unsigned integer array, narrowed as the writer narrows it.
fn uint_fill<T: FromWide>(fill: Option<&Value>) -> Option<T> {
    match fill {
        Some(Value::UInt(v)) => Some(T::from_u64(*v)),
        Some(Value::Int(v)) => Some(T::from_i64(*v)),
        _ => None,
    }
}

fn float_fill(fill: Option<&Value>) -> Option<f64> {
    match fill {
        Some(Value::Float(v)) => Some(*v),
        _ => None,
    }
}

fn string_fill(fill: Option<&Value>) -> Option<&[u8]> {
    match fill {
        Some(Value::String(s)) => Some(s.as_bytes()),
        _ => None,
    }
}

/// Wrapping narrowing from the widened fill types (`as` casts, on purpose:
/// the writer stores the fill of a narrow array this way).
trait FromWide: Sized {
    fn from_i64(v: i64) -> Self;
    fn from_u64(v: u64) -> Self;
}

macro_rules! from_wide {
    ($($t:ty),*) => {$(
        impl FromWide for $t {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_possible_wrap)]
            fn from_i64(v: i64) -> Self { v as $t }
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_possible_wrap)]
            fn from_u64(v: u64) -> Self { v as $t }
        }
    )*};
}

from_wide!(i8, i16, i32, i64, u8, u16, u32, u64);

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::ArrayD;

    fn any(data: ArrayData, fill: Option<Value>) -> AnyArray {
        AnyArray::new(data, fill, Vec::new())
    }

    #[test]
    fn a_fill_value_makes_nulls_min_and_max_exact() {
        let a = any(
            ArrayData::Float32(
                ArrayD::from_shape_vec(vec![4], vec![3.0, f32::NAN, -1.0, 9.5]).unwrap(),
            ),
            Some(Value::Float(f64::NAN)),
        );
        let StatsCheck::Exact(s) = recompute(&a) else {
            panic!("a fill value is set")
        };
        assert_eq!((s.null_count, s.row_count), (1, 4));
        assert_eq!(s.min, Some(Value::Float(-1.0)));
        assert_eq!(s.max, Some(Value::Float(9.5)));
        assert_eq!(disagreement(&StatsCheck::Exact(s.clone()), &s), None);
        let mut wrong = s.clone();
        wrong.max = Some(Value::Float(9.25));
        assert!(disagreement(&StatsCheck::Exact(s), &wrong).is_some());
    }

    #[test]
    fn without_a_fill_recorded_bounds_must_lie_within_the_values() {
        // Two unwritten elements read as zero; the writer recorded them as nulls.
        let a = any(
            ArrayData::Int32(ArrayD::from_shape_vec(vec![4], vec![5, 7, 0, 0]).unwrap()),
            None,
        );
        let check = recompute(&a);
        let recorded = ArrayStats {
            min: Some(Value::Int(5)),
            max: Some(Value::Int(7)),
            null_count: 2,
            row_count: 4,
        };
        assert_eq!(disagreement(&check, &recorded), None);
        let outside = ArrayStats {
            max: Some(Value::Int(70)),
            ..recorded
        };
        assert!(disagreement(&check, &outside).is_some());
    }
}
