//! Statistics as array-format stores them per array, and their fold over a collection.

use std::cmp::Ordering;

use array_format::StatValue;

/// Minimum, maximum, nulls and rows of one array (or of one array name folded
/// over the live datasets). `min`/`max` are `None` for a dtype with no order or
/// when every element is a null (equal to the fill value).
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayStats {
    /// Smallest non-null element (strings and binary as raw bytes).
    pub min: Option<StatValue>,
    /// Largest non-null element.
    pub max: Option<StatValue>,
    /// Elements equal to the fill value, unwritten ones included.
    pub null_count: u64,
    /// Elements in total (the shape's product).
    pub row_count: u64,
}

/// One dataset's statistics of one array, as [`crate::Atlas::array_stats_by_dataset`] lists them.
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetStats {
    /// The dataset's name.
    pub dataset: String,
    /// The dataset's ordinal.
    pub ordinal: u32,
    /// Its statistics of the array.
    pub stats: ArrayStats,
}

impl From<&array_format::ArrayStats> for ArrayStats {
    fn from(s: &array_format::ArrayStats) -> Self {
        Self {
            min: s.min.clone(),
            max: s.max.clone(),
            null_count: s.null_count,
            row_count: s.row_count,
        }
    }
}

impl ArrayStats {
    /// Adds `other` into `self`: counts add, min of mins, max of maxes.
    pub(crate) fn merge(&mut self, other: &ArrayStats) {
        self.null_count = self.null_count.saturating_add(other.null_count);
        self.row_count = self.row_count.saturating_add(other.row_count);
        self.min = pick(self.min.take(), other.min.clone(), Ordering::Less);
        self.max = pick(self.max.take(), other.max.clone(), Ordering::Greater);
    }
}

/// The one of `a`, `b` that compares `want` against the other; a value beats
/// `None`, and two values of different kinds (which a fold never mixes) keep `a`.
fn pick(a: Option<StatValue>, b: Option<StatValue>, want: Ordering) -> Option<StatValue> {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some(a), Some(b)) => match compare(&b, &a) {
            Some(o) if o == want => Some(b),
            _ => Some(a),
        },
    }
}

/// Orders two statistics of one kind as array-format does: floats by `total_cmp`
/// (a NaN sorts above every number), bytes lexicographically.
fn compare(a: &StatValue, b: &StatValue) -> Option<Ordering> {
    match (a, b) {
        (StatValue::Int(a), StatValue::Int(b)) => Some(a.cmp(b)),
        (StatValue::UInt(a), StatValue::UInt(b)) => Some(a.cmp(b)),
        (StatValue::Float(a), StatValue::Float(b)) => Some(a.total_cmp(b)),
        (StatValue::Bytes(a), StatValue::Bytes(b)) => Some(a.cmp(b)),
        (StatValue::TimestampNs(a), StatValue::TimestampNs(b)) => Some(a.cmp(b)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(min: Option<StatValue>, max: Option<StatValue>, nulls: u64, rows: u64) -> ArrayStats {
        ArrayStats {
            min,
            max,
            null_count: nulls,
            row_count: rows,
        }
    }

    #[test]
    fn merging_adds_counts_and_keeps_the_extremes() {
        let mut a = s(Some(StatValue::Int(3)), Some(StatValue::Int(9)), 1, 10);
        a.merge(&s(Some(StatValue::Int(-2)), Some(StatValue::Int(5)), 2, 4));
        assert_eq!(
            a,
            s(Some(StatValue::Int(-2)), Some(StatValue::Int(9)), 3, 14)
        );
        a.merge(&s(None, None, 4, 4));
        assert_eq!(
            a,
            s(Some(StatValue::Int(-2)), Some(StatValue::Int(9)), 7, 18)
        );
    }

    #[test]
    fn an_all_null_start_takes_the_first_values_seen() {
        let mut a = s(None, None, 5, 5);
        a.merge(&s(
            Some(StatValue::Bytes(b"b".to_vec())),
            Some(StatValue::Bytes(b"c".to_vec())),
            0,
            2,
        ));
        a.merge(&s(
            Some(StatValue::Bytes(b"a".to_vec())),
            Some(StatValue::Bytes(b"bb".to_vec())),
            0,
            2,
        ));
        assert_eq!(a.min, Some(StatValue::Bytes(b"a".to_vec())));
        assert_eq!(a.max, Some(StatValue::Bytes(b"c".to_vec())));
    }

    #[test]
    fn floats_order_like_array_format() {
        let mut a = s(
            Some(StatValue::Float(1.0)),
            Some(StatValue::Float(2.0)),
            0,
            2,
        );
        a.merge(&s(
            Some(StatValue::Float(-0.5)),
            Some(StatValue::Float(f64::NAN)),
            0,
            2,
        ));
        assert_eq!(a.min, Some(StatValue::Float(-0.5)));
        assert!(matches!(a.max, Some(StatValue::Float(x)) if x.is_nan()));
    }
}
