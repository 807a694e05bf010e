//! The order a sorted compaction writes datasets in: one value per dataset
//! per key, read from the dataset index (or the segment footers) as each
//! dataset's statistics of the key variable, never from array data.
//!
//! A key is either a variable holding one value per dataset (`JULD`), or a
//! Hilbert curve over two or three such variables (latitude, longitude and
//! optionally time): each is scaled onto a grid spanning the set's own range
//! of it, and the cell's position along the curve is the key. Keys compare
//! in turn; a dataset without a value of a key sorts after those with one,
//! and the name breaks every tie, so the order is total and reproducible.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use crate::error::{AtlasError, Result};
use crate::read::Dataset;
use crate::{ArrayStats, Value};

use super::view::View;

/// One key a sorted compaction orders datasets by.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SortKey {
    /// A variable holding one value per dataset (e.g. `JULD`).
    Variable(String),
    /// A position along a Hilbert curve over latitude, longitude and
    /// optionally time (variables holding one value per dataset each).
    Hilbert {
        /// The latitude variable.
        latitude: String,
        /// The longitude variable.
        longitude: String,
        /// The time variable, when the curve runs through time as well.
        time: Option<String>,
    },
}

impl SortKey {
    /// The variables the key reads, in the order given.
    pub fn variables(&self) -> Vec<&str> {
        match self {
            SortKey::Variable(v) => vec![v.as_str()],
            SortKey::Hilbert {
                latitude,
                longitude,
                time,
            } => {
                let mut v = vec![latitude.as_str(), longitude.as_str()];
                v.extend(time.as_deref());
                v
            }
        }
    }

    /// Parses a comma-separated list of keys (see [`SortKey::from_str`]).
    ///
    /// # Errors
    /// [`AtlasError::InvalidUse`] naming the key that does not parse.
    pub fn parse_list(text: &str) -> Result<Vec<SortKey>> {
        text.split(',').map(str::parse).collect()
    }
}

impl FromStr for SortKey {
    type Err = AtlasError;

    /// `NAME` (a variable), `hilbert` (over `LATITUDE` and `LONGITUDE`),
    /// `hilbert:LAT:LON` or `hilbert:LAT:LON:TIME`.
    fn from_str(text: &str) -> Result<SortKey> {
        let text = text.trim();
        let bad = |why: &str| AtlasError::invalid_use(format!("sort key {text:?}: {why}"));
        if text.is_empty() {
            return Err(bad("empty"));
        }
        let mut parts = text.split(':');
        let head = parts.next().unwrap_or_default();
        let rest: Vec<&str> = parts.collect();
        if head != "hilbert" {
            if !rest.is_empty() {
                return Err(bad(
                    "a variable name holds no ':' (a curve is hilbert:LAT:LON[:TIME])",
                ));
            }
            return Ok(SortKey::Variable(text.to_owned()));
        }
        if rest.iter().any(|p| p.is_empty()) {
            return Err(bad("an empty variable name"));
        }
        match rest.as_slice() {
            [] => Ok(SortKey::Hilbert {
                latitude: "LATITUDE".into(),
                longitude: "LONGITUDE".into(),
                time: None,
            }),
            [lat, lon] => Ok(SortKey::Hilbert {
                latitude: (*lat).into(),
                longitude: (*lon).into(),
                time: None,
            }),
            [lat, lon, time] => Ok(SortKey::Hilbert {
                latitude: (*lat).into(),
                longitude: (*lon).into(),
                time: Some((*time).into()),
            }),
            _ => Err(bad(
                "a curve takes two or three variables: hilbert:LAT:LON[:TIME]",
            )),
        }
    }
}

impl fmt::Display for SortKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SortKey::Variable(v) => f.write_str(v),
            SortKey::Hilbert {
                latitude,
                longitude,
                time,
            } => {
                write!(f, "hilbert:{latitude}:{longitude}")?;
                match time {
                    Some(t) => write!(f, ":{t}"),
                    None => Ok(()),
                }
            }
        }
    }
}

/// One dataset's value of one key, comparable across datasets.
#[derive(Debug, Clone, PartialEq)]
enum KeyValue {
    /// Numbers and times, as `f64` (ordered by `total_cmp`).
    Number(f64),
    /// Strings and bytes, by their bytes.
    Bytes(Vec<u8>),
}

impl KeyValue {
    fn of(value: &Value) -> Option<KeyValue> {
        Some(match value {
            Value::Int(n) => KeyValue::Number(*n as f64),
            Value::UInt(n) => KeyValue::Number(*n as f64),
            Value::Float(x) if x.is_nan() => return None,
            Value::Float(x) => KeyValue::Number(*x),
            Value::Timestamp(t) => KeyValue::Number(t.0 as f64),
            Value::String(s) => KeyValue::Bytes(s.as_bytes().to_vec()),
            Value::Bytes(b) => KeyValue::Bytes(b.clone()),
            Value::Bool(b) => KeyValue::Number(f64::from(u8::from(*b))),
            _ => return None,
        })
    }

    fn number(&self) -> Option<f64> {
        match self {
            KeyValue::Number(x) => Some(*x),
            KeyValue::Bytes(_) => None,
        }
    }

    fn compare(&self, other: &KeyValue) -> Ordering {
        match (self, other) {
            (KeyValue::Number(a), KeyValue::Number(b)) => a.total_cmp(b),
            (KeyValue::Bytes(a), KeyValue::Bytes(b)) => a.cmp(b),
            (KeyValue::Number(_), KeyValue::Bytes(_)) => Ordering::Less,
            (KeyValue::Bytes(_), KeyValue::Number(_)) => Ordering::Greater,
        }
    }
}

/// The one value `stats` (of variable `key` in `dataset`) records, if any.
///
/// # Errors
/// [`AtlasError::SortKeyNotScalar`] when the variable holds more than one
/// element in the dataset.
fn single_value(key: &str, dataset: &str, stats: &ArrayStats) -> Result<Option<KeyValue>> {
    if stats.row_count > 1 {
        return Err(AtlasError::SortKeyNotScalar {
            key: key.to_owned(),
            dataset: dataset.to_owned(),
            values: stats.row_count,
        });
    }
    if stats.row_count == 0 || stats.null_count >= stats.row_count {
        return Ok(None);
    }
    Ok(stats.min.as_ref().and_then(KeyValue::of))
}

/// Each live dataset of `view` (in ordinal order) with its value of
/// `variable` (`None`: not declared, no statistics, fill or NaN).
async fn column(view: &View, variable: &str) -> Result<HashMap<u32, KeyValue>> {
    if !view.declares_array(variable) {
        return Ok(HashMap::new());
    }
    let mut out = HashMap::new();
    for row in view.array_stats_by_dataset(variable).await? {
        if let Some(v) = single_value(variable, &row.dataset, &row.stats)? {
            out.insert(row.ordinal, v);
        }
    }
    Ok(out)
}

/// The live datasets of `views`, ordered by `keys` (see the module docs).
///
/// # Errors
/// [`AtlasError::ArrayNotFound`] for a key variable no live dataset declares;
/// [`AtlasError::SortKeyNotScalar`] for one holding more than one value in a
/// dataset; what reading the statistics returns.
pub(crate) async fn sorted_datasets(views: &[View], keys: &[SortKey]) -> Result<Vec<Dataset>> {
    // Every variable once, in order of first use.
    let mut variables: Vec<&str> = Vec::new();
    for key in keys {
        for v in key.variables() {
            if !variables.contains(&v) {
                variables.push(v);
            }
        }
    }
    for v in &variables {
        if !views.iter().any(|view| view.declares_array(v)) {
            return Err(AtlasError::ArrayNotFound {
                dataset: None,
                array: (*v).to_owned(),
            });
        }
    }
    // Per dataset: its handle and the value of each variable.
    let mut rows: Vec<(Dataset, Vec<Option<KeyValue>>)> = Vec::new();
    for view in views {
        let mut columns = Vec::with_capacity(variables.len());
        for v in &variables {
            columns.push(column(view, v).await?);
        }
        for (ordinal, dataset) in view.live().ordinals().zip(view.datasets()) {
            let values = columns.iter().map(|c| c.get(&ordinal).cloned()).collect();
            rows.push((dataset, values));
        }
    }
    let (datasets, values): (Vec<Dataset>, Vec<Vec<Option<KeyValue>>>) = rows.into_iter().unzip();
    let names: Vec<&str> = datasets.iter().map(Dataset::name).collect();
    let order = order(keys, &variables, &names, &values);
    let mut slots: Vec<Option<Dataset>> = datasets.into_iter().map(Some).collect();
    Ok(order
        .into_iter()
        .filter_map(|i| slots.get_mut(i).and_then(Option::take))
        .collect())
}

/// The order `keys` put datasets in, before any is written: each row is a
/// dataset's name and the values it holds of the keys' variables, by
/// variable name (leave out a value it does not hold, such as a fill; a NaN
/// counts as none).
/// Returns the rows' positions in key order, exactly the order a sorted
/// compaction ([`crate::CompactOptions::sort_by`]) writes the same datasets
/// in: curves span the rows' own range, a dataset without a key's value
/// comes after those with one, and the name breaks every tie.
pub fn sort_order(keys: &[SortKey], rows: &[(String, HashMap<String, Value>)]) -> Vec<usize> {
    let mut variables: Vec<&str> = Vec::new();
    for key in keys {
        for v in key.variables() {
            if !variables.contains(&v) {
                variables.push(v);
            }
        }
    }
    let names: Vec<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
    let values: Vec<Vec<Option<KeyValue>>> = rows
        .iter()
        .map(|(_, held)| {
            variables
                .iter()
                .map(|v| held.get(*v).and_then(KeyValue::of))
                .collect()
        })
        .collect();
    order(keys, &variables, &names, &values)
}

/// The positions of rows (`names[i]` holding `values[i]`, one per variable
/// of `variables`) in the order of `keys`.
fn order(
    keys: &[SortKey],
    variables: &[&str],
    names: &[&str],
    values: &[Vec<Option<KeyValue>>],
) -> Vec<usize> {
    let position = |name: &str| variables.iter().position(|v| *v == name);
    let curves: Vec<Option<Curve>> = keys
        .iter()
        .map(|k| match k {
            SortKey::Variable(_) => None,
            SortKey::Hilbert { .. } => {
                let axes: Vec<usize> = k.variables().into_iter().filter_map(position).collect();
                Some(Curve::spanning(&axes, values.iter().map(Vec::as_slice)))
            }
        })
        .collect();
    // The keys' values per row, curves placed on their grids.
    let mut keyed: Vec<(Vec<Option<KeyValue>>, usize)> = values
        .iter()
        .enumerate()
        .map(|(i, values)| {
            let key_values = keys
                .iter()
                .zip(&curves)
                .map(|(key, curve)| match (key, curve) {
                    (_, Some(curve)) => curve.index(values).map(|h| KeyValue::Number(h as f64)),
                    (SortKey::Variable(v), None) => {
                        position(v).and_then(|i| values.get(i).cloned().flatten())
                    }
                    (_, None) => None,
                })
                .collect();
            (key_values, i)
        })
        .collect();
    let name = |i: usize| names.get(i).copied().unwrap_or_default();
    keyed.sort_by(|(a, ia), (b, ib)| {
        for (x, y) in a.iter().zip(b) {
            let o = match (x, y) {
                (Some(x), Some(y)) => x.compare(y),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        name(*ia).cmp(name(*ib))
    });
    keyed.into_iter().map(|(_, i)| i).collect()
}

/// A Hilbert curve over some variables' values, each scaled onto a grid of
/// `2^bits` cells spanning the lowest to the highest value the set holds.
struct Curve {
    /// Per axis: the index into a dataset's variable values, the low end and
    /// the width of the range.
    axes: Vec<(usize, f64, f64)>,
    bits: u32,
}

impl Curve {
    fn spanning<'a>(axes: &[usize], rows: impl Iterator<Item = &'a [Option<KeyValue>]>) -> Curve {
        let mut ranges: Vec<(f64, f64)> = vec![(f64::INFINITY, f64::NEG_INFINITY); axes.len()];
        for values in rows {
            for (&axis, range) in axes.iter().zip(ranges.iter_mut()) {
                if let Some(x) = values.get(axis).and_then(|v| v.as_ref()?.number()) {
                    range.0 = range.0.min(x);
                    range.1 = range.1.max(x);
                }
            }
        }
        // At most 52 bits in all: the index is exact as an f64.
        let bits = match axes.len() {
            0 => 1,
            n => (52 / n as u32).min(31),
        };
        Curve {
            axes: axes
                .iter()
                .zip(ranges)
                .map(|(&a, (lo, hi))| (a, lo, (hi - lo).max(0.0)))
                .collect(),
            bits,
        }
    }

    /// The position along the curve of a dataset with `values`; `None` when
    /// one of the axes has no numeric value.
    fn index(&self, values: &[Option<KeyValue>]) -> Option<u64> {
        let cells = ((1u64 << self.bits) - 1) as f64;
        let mut coords = Vec::with_capacity(self.axes.len());
        for &(axis, lo, width) in &self.axes {
            let x = values.get(axis)?.as_ref()?.number()?;
            let t = if width > 0.0 { (x - lo) / width } else { 0.0 };
            coords.push((t.clamp(0.0, 1.0) * cells).round() as u32);
        }
        Some(hilbert_index(&mut coords, self.bits))
    }
}

/// The distance along an n-dimensional Hilbert curve of the cell `coords`
/// (each below `2^bits`), by Skilling's transform ("Programming the Hilbert
/// curve", 2004): `coords` become the transposed index, whose bits are then
/// interleaved, the first axis most significant. `coords` is consumed.
pub(crate) fn hilbert_index(coords: &mut [u32], bits: u32) -> u64 {
    if bits == 0 || coords.is_empty() {
        return 0;
    }
    let top = 1u32 << (bits - 1);
    // Inverse undo of the excess work.
    let mut q = top;
    while q > 1 {
        let p = q - 1;
        if let Some((first, rest)) = coords.split_first_mut() {
            if *first & q != 0 {
                *first ^= p;
            }
            for c in rest {
                if *c & q != 0 {
                    *first ^= p;
                } else {
                    let t = (*first ^ *c) & p;
                    *first ^= t;
                    *c ^= t;
                }
            }
        }
        q >>= 1;
    }
    // Gray encode.
    let mut previous = 0u32;
    for (i, c) in coords.iter_mut().enumerate() {
        if i > 0 {
            *c ^= previous;
        }
        previous = *c;
    }
    let mut t = 0u32;
    let mut q = top;
    while q > 1 {
        if previous & q != 0 {
            t ^= q - 1;
        }
        q >>= 1;
    }
    for c in coords.iter_mut() {
        *c ^= t;
    }
    let mut h = 0u64;
    for b in (0..bits).rev() {
        for c in coords.iter() {
            h = (h << 1) | u64::from((c >> b) & 1);
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_positions_on_the_curve_are_neighbouring_cells() {
        for dims in [2usize, 3] {
            let bits = 3u32;
            let side = 1u32 << bits;
            let cells = side.pow(dims as u32);
            let mut by_index = vec![None; cells as usize];
            for n in 0..cells {
                let cell: Vec<u32> = (0..dims as u32).map(|d| (n / side.pow(d)) % side).collect();
                let h = hilbert_index(&mut cell.clone(), bits);
                assert!(by_index[h as usize].is_none(), "index {h} given twice");
                by_index[h as usize] = Some(cell);
            }
            let cells: Vec<Vec<u32>> = by_index.into_iter().map(Option::unwrap).collect();
            for pair in cells.windows(2) {
                let steps: u32 = pair[0]
                    .iter()
                    .zip(&pair[1])
                    .map(|(a, b)| a.abs_diff(*b))
                    .sum();
                assert_eq!(steps, 1, "{:?} -> {:?} is not one step", pair[0], pair[1]);
            }
        }
    }

    #[test]
    fn sort_order_puts_rows_by_key_then_name_and_rows_without_a_value_last_by_name() {
        let row = |name: &str, v: Option<f64>| {
            let held = v
                .map(|x| HashMap::from([("T".to_owned(), Value::Float(x))]))
                .unwrap_or_default();
            (name.to_owned(), held)
        };
        let rows = vec![
            row("c", Some(2.0)),
            row("b", None),
            row("a", Some(1.0)),
            row("d", Some(f64::NAN)),
            row("e", Some(1.0)),
        ];
        let keys = [SortKey::Variable("T".into())];
        assert_eq!(sort_order(&keys, &rows), vec![2, 4, 0, 1, 3]);
    }

    #[test]
    fn keys_parse_from_their_written_form_and_a_malformed_curve_is_refused() {
        let keys = SortKey::parse_list("JULD,hilbert,hilbert:LAT:LON:TIME").unwrap();
        assert_eq!(
            keys,
            vec![
                SortKey::Variable("JULD".into()),
                SortKey::Hilbert {
                    latitude: "LATITUDE".into(),
                    longitude: "LONGITUDE".into(),
                    time: None
                },
                SortKey::Hilbert {
                    latitude: "LAT".into(),
                    longitude: "LON".into(),
                    time: Some("TIME".into())
                },
            ]
        );
        for k in &keys {
            assert_eq!(&k.to_string().parse::<SortKey>().unwrap(), k);
        }
        for bad in ["", "hilbert:LAT", "hilbert:A:B:C:D", "hilbert::LON", "A:B"] {
            assert!(
                matches!(bad.parse::<SortKey>(), Err(AtlasError::InvalidUse { .. })),
                "{bad:?} parsed"
            );
        }
    }
}
