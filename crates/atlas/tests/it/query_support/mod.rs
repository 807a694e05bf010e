//! A brute-force model of what each dataset holds (every element, not
//! statistics) and an evaluator of [`Predicate`] over it, written from the
//! operator definitions independently of the library's statistics path; and a
//! generator of Argo-like profile collections.

#![allow(dead_code)]

use std::cmp::Ordering;
use std::collections::BTreeMap;

use atlas::{AtlasWriter, Predicate, Timestamp, WriterConfig};
use atlas::{CmpOp, Field, StatField, Value};
use opendal::Operator;

/// A stored element or attribute value.
#[derive(Debug, Clone, PartialEq)]
pub enum V {
    I(i128),
    F(f64),
    S(Vec<u8>),
}

/// One dataset: its attributes and, per array, every non-null element and the element count.
#[derive(Debug, Clone, Default)]
pub struct Row {
    pub name: String,
    pub attrs: BTreeMap<String, V>,
    pub arrays: BTreeMap<String, (Vec<V>, u64)>,
}

fn cmp(d: &V, lit: &Value) -> Ordering {
    match (d, lit) {
        (V::I(a), Value::Int(b)) => a.cmp(&i128::from(*b)),
        (V::I(a), Value::Timestamp(b)) => a.cmp(&i128::from(b.nanos())),
        (V::I(a), Value::Bool(b)) => a.cmp(&i128::from(*b)),
        (V::I(a), Value::Float(b)) => (*a as f64).total_cmp(b),
        (V::F(a), Value::Int(b)) => a.total_cmp(&(*b as f64)),
        (V::F(a), Value::Float(b)) => a.total_cmp(b),
        (V::S(a), Value::String(b)) => a.as_slice().cmp(b.as_bytes()),
        other => panic!("the model compares no {other:?}"),
    }
}

fn holds(d: &V, op: CmpOp, lit: &Value) -> bool {
    let o = cmp(d, lit);
    match op {
        CmpOp::Eq => o == Ordering::Equal,
        CmpOp::Ne => o != Ordering::Equal,
        CmpOp::Lt => o == Ordering::Less,
        CmpOp::Le => o != Ordering::Greater,
        CmpOp::Gt => o == Ordering::Greater,
        CmpOp::Ge => o != Ordering::Less,
        _ => unreachable!(),
    }
}

fn within(d: &V, lo: &Value, hi: &Value) -> bool {
    cmp(d, lo) != Ordering::Less && cmp(d, hi) != Ordering::Greater
}

/// The values a field takes in `row`, element by element.
fn values(row: &Row, field: &Field) -> Option<Vec<V>> {
    match field {
        Field::Attribute(k) => row.attrs.get(k).map(|v| vec![v.clone()]),
        Field::Array(a) => row.arrays.get(a).map(|(v, _)| v.clone()),
        Field::Stat(a, stat) => {
            let (vals, count) = row.arrays.get(a)?;
            let nulls = count - vals.len() as u64;
            let by = |want: Ordering| {
                vals.iter()
                    .cloned()
                    .reduce(|x, y| if ord_v(&y, &x) == want { y } else { x })
            };
            Some(match stat {
                StatField::Min => by(Ordering::Less).into_iter().collect(),
                StatField::Max => by(Ordering::Greater).into_iter().collect(),
                StatField::Nulls => vec![V::I(i128::from(nulls))],
                StatField::Count => vec![V::I(i128::from(*count))],
                _ => unreachable!(),
            })
        }
        _ => panic!("resolve names before the model: {field:?}"),
    }
}

fn ord_v(a: &V, b: &V) -> Ordering {
    match (a, b) {
        (V::I(a), V::I(b)) => a.cmp(b),
        (V::F(a), V::F(b)) => a.total_cmp(b),
        (V::S(a), V::S(b)) => a.cmp(b),
        _ => panic!("mixed kinds"),
    }
}

/// Whether `row` satisfies `p` by the operator definitions (arrays: every
/// non-null element, at least one; `overlaps`: the elements' range meets the window).
pub fn brute(p: &Predicate, row: &Row) -> bool {
    match p {
        Predicate::Compare {
            field,
            op: CmpOp::Ne,
            value,
        } => !brute(
            &Predicate::Compare {
                field: field.clone(),
                op: CmpOp::Eq,
                value: value.clone(),
            },
            row,
        ),
        Predicate::Compare { field, op, value } => values(row, field)
            .is_some_and(|v| !v.is_empty() && v.iter().all(|d| holds(d, *op, value))),
        Predicate::Between { field, lo, hi } => {
            values(row, field).is_some_and(|v| !v.is_empty() && v.iter().all(|d| within(d, lo, hi)))
        }
        Predicate::Overlaps { field, lo, hi } => values(row, field).is_some_and(|v| {
            v.iter().any(|d| cmp(d, hi) != Ordering::Greater)
                && v.iter().any(|d| cmp(d, lo) != Ordering::Less)
        }),
        Predicate::Exists(field) => match field {
            Field::Attribute(k) => row.attrs.contains_key(k),
            Field::Array(a) | Field::Stat(a, StatField::Nulls | StatField::Count) => {
                row.arrays.contains_key(a)
            }
            Field::Stat(a, _) => row.arrays.get(a).is_some_and(|(v, _)| !v.is_empty()),
            _ => unreachable!(),
        },
        Predicate::And(parts) => parts.iter().all(|q| brute(q, row)),
        Predicate::Or(parts) => parts.iter().any(|q| brute(q, row)),
        Predicate::Not(q) => !brute(q, row),
        _ => unreachable!(),
    }
}

/// Whether some element of `row`'s `array` lies in `[lo, hi]` (what "may contain" must never miss).
pub fn contains_some(row: &Row, array: &str, lo: &Value, hi: &Value) -> bool {
    row.arrays
        .get(array)
        .is_some_and(|(v, _)| v.iter().any(|d| within(d, lo, hi)))
}

/// A reproducible stream of numbers (SplitMix64).
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// 2020-01-01T00:00:00Z in nanoseconds.
pub const T0: i64 = 1_577_836_800_000_000_000;
/// One day in nanoseconds.
pub const DAY: i64 = 86_400_000_000_000;
/// Fill of LATITUDE/LONGITUDE/TEMP.
pub const FILL: f64 = 99999.0;

/// Writes `n` Argo-like profiles under `prefix` of `op` and returns the model:
/// LATITUDE, LONGITUDE (f64, one element; 2% unknown = fill), JULD (timestamp,
/// within 2020-2024), TEMP (f32, 5-40 levels, some fill), and attributes
/// `platform_number` (one of 50), `cycle_number` (i32), `data_mode` ("R"/"D", not on every profile).
pub async fn argo_profiles(op: &Operator, prefix: &str, n: usize, seed: u64) -> Vec<Row> {
    let writer = AtlasWriter::create((op.clone(), prefix), &WriterConfig::default())
        .await
        .unwrap();
    let mut rng = Rng(seed);
    let mut rows = Vec::with_capacity(n);
    for i in 0..n {
        let name = format!("R{:07}_{:03}.nc", 6_900_000 + i / 100, i % 100);
        let mut ds = writer.add_dataset(&name).unwrap();
        let mut row = Row {
            name: name.clone(),
            ..Row::default()
        };
        for (array, lo, hi) in [("LATITUDE", -80.0, 80.0), ("LONGITUDE", -180.0, 180.0)] {
            let unknown = rng.below(50) == 0;
            let v = if unknown { FILL } else { rng.uniform(lo, hi) };
            ds.define_array::<f64>(array, &["N_PROF"], &[1], None, Some(FILL))
                .unwrap();
            ds.write_array(array, &[0], ndarray::arr1(&[v]).into_dyn().view())
                .unwrap();
            let vals = if unknown { vec![] } else { vec![V::F(v)] };
            row.arrays.insert(array.to_owned(), (vals, 1));
        }
        let t = T0 + (rng.uniform(0.0, 5.0 * 365.0) * DAY as f64) as i64;
        ds.define_array::<Timestamp>("JULD", &["N_PROF"], &[1], None, None)
            .unwrap();
        ds.write_array(
            "JULD",
            &[0],
            ndarray::arr1(&[Timestamp(t)]).into_dyn().view(),
        )
        .unwrap();
        row.arrays
            .insert("JULD".to_owned(), (vec![V::I(i128::from(t))], 1));
        let levels = 5 + rng.below(36) as usize;
        let surface = rng.uniform(-2.0, 30.0) as f32;
        let temps: Vec<f32> = (0..levels)
            .map(|l| {
                if rng.below(20) == 0 {
                    FILL as f32
                } else {
                    surface - l as f32 * rng.uniform(0.0, 0.5) as f32
                }
            })
            .collect();
        ds.define_array::<f32>(
            "TEMP",
            &["N_LEVELS"],
            &[levels as u64],
            None,
            Some(FILL as f32),
        )
        .unwrap();
        ds.write_array(
            "TEMP",
            &[0],
            ndarray::Array1::from(temps.clone()).into_dyn().view(),
        )
        .unwrap();
        let vals = temps
            .iter()
            .filter(|&&x| x != FILL as f32)
            .map(|&x| V::F(f64::from(x)))
            .collect();
        row.arrays.insert("TEMP".to_owned(), (vals, levels as u64));
        let platform = format!("{}", 6_901_000 + rng.below(50));
        ds.set_attribute("platform_number", platform.as_str())
            .unwrap();
        row.attrs
            .insert("platform_number".to_owned(), V::S(platform.into_bytes()));
        let cycle = (i % 100) as i32;
        ds.set_attribute("cycle_number", cycle).unwrap();
        row.attrs
            .insert("cycle_number".to_owned(), V::I(i128::from(cycle)));
        if rng.below(4) != 0 {
            let mode = if rng.below(2) == 0 { "R" } else { "D" };
            ds.set_attribute("data_mode", mode).unwrap();
            row.attrs
                .insert("data_mode".to_owned(), V::S(mode.as_bytes().to_vec()));
        }
        ds.finish().await.unwrap();
        rows.push(row);
    }
    writer.finish().await.unwrap();
    rows
}
