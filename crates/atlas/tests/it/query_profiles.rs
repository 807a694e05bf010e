//! `Atlas::select` on a generated Argo-like collection: random boxes and time
//! windows against a brute-force evaluation over every element, and the
//! requests a query costs.

#![cfg(test)]

use crate::query_support;

use std::collections::BTreeSet;
use std::sync::OnceLock;

use atlas::{Atlas, Predicate};
use atlas::{Field, Value};
use atlas_io::{CountingLayer, RequestStats};
use opendal::Operator;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use query_support::{DAY, Row, T0, argo_profiles, brute, contains_some};

/// Profiles in the shared collection (the benchmark uses 30 000).
const PROFILES: usize = 1500;

struct Shared {
    op: Operator,
    rows: Vec<Row>,
}

/// The shared collection seen through a counting layer of its own (tests run in parallel).
fn counted(shared: &Shared) -> (Operator, RequestStats) {
    let layer = CountingLayer::new();
    let stats = layer.stats();
    (shared.op.clone().layer(layer), stats)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The collection, generated once per test binary.
fn shared() -> &'static Shared {
    static SHARED: OnceLock<Shared> = OnceLock::new();
    SHARED.get_or_init(|| {
        let op = Operator::new(opendal::services::Memory::default()).unwrap();
        let rows = runtime().block_on(argo_profiles(&op, "argo", PROFILES, 7));
        Shared { op, rows }
    })
}

/// Footer + trailer bytes of segment `seg` of the shared collection (read uncounted).
fn footer_bytes(shared: &Shared, seg: &atlas::SegmentInfo) -> u64 {
    let end = seg.offset + seg.len;
    let trailer = runtime()
        .block_on(async {
            shared
                .op
                .read_with("argo/data.atlas")
                .range(end - 12..end)
                .await
        })
        .unwrap()
        .to_vec();
    u64::from_le_bytes(trailer[..8].try_into().unwrap()) + 12
}

/// The datasets the model accepts (bare names resolved as the collection does).
fn brute_names(p: &Predicate, rows: &[Row]) -> Vec<String> {
    let p = resolve_for_model(p);
    rows.iter()
        .filter(|r| brute(&p, r))
        .map(|r| r.name.clone())
        .collect()
}

/// A box, a window and maybe a platform, as a user would ask.
fn query() -> impl Strategy<Value = (f64, f64, f64, f64, i64, i64, Option<u64>, bool)> {
    (
        -90.0..90.0f64,
        0.0..60.0f64,
        -180.0..180.0f64,
        0.0..120.0f64,
        0..5 * 365i64,
        0..400i64,
        proptest::option::of(0..60u64),
        any::<bool>(),
    )
        .prop_map(|(lat, dlat, lon, dlon, day, days, platform, all)| {
            (
                lat,
                lat + dlat,
                lon,
                lon + dlon,
                day,
                day + days,
                platform,
                all,
            )
        })
}

#[test]
fn box_and_window_selections_equal_the_brute_force() {
    let shared = shared();
    let rt = runtime();
    let atlas = rt
        .block_on(Atlas::open(
            (shared.op.clone(), "argo"),
            &atlas::OpenOptions::default(),
        ))
        .unwrap();
    let mut runner = TestRunner::new(Config::with_cases(64));
    runner
        .run(
            &query(),
            |(lat0, lat1, lon0, lon1, d0, d1, platform, all)| {
                let (t0, t1) = (
                    Value::Timestamp(atlas::Timestamp(T0 + d0 * DAY)),
                    Value::Timestamp(atlas::Timestamp(T0 + d1 * DAY)),
                );
                let time = if all {
                    Field::array("JULD").between(t0, t1)
                } else {
                    Field::array("JULD").overlaps(t0, t1)
                };
                let mut p = Field::name("LATITUDE")
                    .between(lat0, lat1)
                    .and(Field::name("LONGITUDE").between(lon0, lon1))
                    .and(time);
                if let Some(k) = platform {
                    let platform =
                        Field::attr("platform_number").equals(format!("{}", 6_901_000 + k));
                    p = p.or(platform.and(Field::name("data_mode").equals("D").negated()));
                }
                let selected = rt.block_on(atlas.select(&p)).unwrap();
                prop_assert_eq!(&selected, &brute_names(&p, &shared.rows));
                Ok(())
            },
        )
        .unwrap();
}

#[test]
fn overlaps_never_misses_a_profile_holding_a_value_in_the_window() {
    let shared = shared();
    let rt = runtime();
    let atlas = rt
        .block_on(Atlas::open(
            (shared.op.clone(), "argo"),
            &atlas::OpenOptions::default(),
        ))
        .unwrap();
    let mut runner = TestRunner::new(Config::with_cases(64));
    runner
        .run(&(-5.0..35.0f64, 0.0..3.0f64), |(lo, width)| {
            let (lo, hi) = (Value::Float(lo), Value::Float(lo + width));
            let p = Field::name("TEMP").overlaps(lo.clone(), hi.clone());
            let selected: BTreeSet<String> =
                rt.block_on(atlas.select(&p)).unwrap().into_iter().collect();
            // Exactly the profiles whose element range meets the window...
            let brute: BTreeSet<String> = brute_names(&p, &shared.rows).into_iter().collect();
            prop_assert_eq!(&selected, &brute);
            // ...which includes every profile with an element inside it.
            for row in &shared.rows {
                if contains_some(row, "TEMP", &lo, &hi) {
                    prop_assert!(selected.contains(&row.name), "{} missed", row.name);
                }
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn statistics_and_attribute_comparisons_equal_the_brute_force() {
    let shared = shared();
    let rt = runtime();
    let atlas = rt
        .block_on(Atlas::open(
            (shared.op.clone(), "argo"),
            &atlas::OpenOptions::default(),
        ))
        .unwrap();
    for text in [
        "TEMP.nulls = 0",
        "TEMP.nulls >= 2 and TEMP.count < 20",
        "TEMP.max <= 10 or TEMP.min > 25",
        "TEMP >= 0",
        "LATITUDE != 12.5",
        "not exists data_mode",
        "data_mode = 'R' and cycle_number between 10 20",
        "@platform_number >= \"6901040\"",
        "LATITUDE.min < -70 or LATITUDE.max > 70",
        "not LATITUDE exists or LONGITUDE.nulls = 1",
        "JULD between 2021-03-01 2021-03-31T23:59:59.999999999",
    ] {
        let p = atlas::Predicate::parse(text).unwrap();
        let selected = rt.block_on(atlas.select(&p)).unwrap();
        assert_eq!(selected, brute_names(&p, &shared.rows), "{text}");
        assert!(
            !selected.is_empty() || text.starts_with("not exists"),
            "{text} selects nothing"
        );
    }
}

/// The model takes resolved fields: the generated collection's attribute keys are lowercase.
fn resolve_for_model(p: &Predicate) -> Predicate {
    match p {
        Predicate::Compare { field, op, value } => Predicate::Compare {
            field: resolve_field(field),
            op: *op,
            value: value.clone(),
        },
        Predicate::Between { field, lo, hi } => Predicate::Between {
            field: resolve_field(field),
            lo: lo.clone(),
            hi: hi.clone(),
        },
        Predicate::Overlaps { field, lo, hi } => Predicate::Overlaps {
            field: resolve_field(field),
            lo: lo.clone(),
            hi: hi.clone(),
        },
        Predicate::Exists(field) => Predicate::Exists(resolve_field(field)),
        Predicate::And(parts) => Predicate::And(parts.iter().map(resolve_for_model).collect()),
        Predicate::Or(parts) => Predicate::Or(parts.iter().map(resolve_for_model).collect()),
        Predicate::Not(q) => resolve_for_model(q).negated(),
        _ => unreachable!(),
    }
}

fn resolve_field(f: &Field) -> Field {
    match f {
        Field::Name(n) if n.chars().all(|c| c.is_ascii_lowercase() || c == '_') => Field::attr(n),
        Field::Name(n) => Field::array(n),
        other => other.clone(),
    }
}

/// Opened as a reader without indexes sees it (every answer from the footers).
fn footers_only() -> atlas::OpenOptions {
    atlas::OpenOptions::default().dataset_index(false)
}

#[test]
fn without_the_index_a_query_reads_one_footer_per_variable_and_no_array_block() {
    let shared = shared();
    let rt = runtime();
    let (op, stats) = counted(shared);
    let atlas = rt
        .block_on(Atlas::open((op, "argo"), &footers_only()))
        .unwrap();
    let segments = atlas.lone_member().unwrap().segments();
    stats.reset();
    let p = atlas::Predicate::parse(
        "LATITUDE between -10 10 and LONGITUDE between -60 0 and JULD overlaps 2021-01-01 2021-06-30 and platform_number != '6901007'",
    )
    .unwrap();
    let cold = rt.block_on(atlas.select(&p)).unwrap();
    let counts = stats.snapshot();
    let log = stats.read_log();
    // LATITUDE, LONGITUDE, JULD and _datasets: their footers (the prefetch,
    // then the rest of a footer larger than it), nothing else.
    assert!(counts.reads <= 8, "{counts:?}");
    assert_eq!(counts.requests(), counts.reads, "{counts:?}");
    for read in &log {
        let start = read.range.offset();
        let end = start + read.range.size().unwrap();
        let tail_of = segments
            .iter()
            .find(|s| s.offset <= start && end <= s.offset + s.len)
            .unwrap_or_else(|| panic!("read {:?} is in no segment", read.range));
        let footer_start = tail_of.offset + tail_of.len - footer_bytes(shared, tail_of);
        assert!(
            start >= footer_start,
            "read {:?} reaches before the footer of {}",
            read.range,
            tail_of.name
        );
        assert!(
            ["LATITUDE", "LONGITUDE", "JULD", "_datasets"].contains(&tail_of.name.as_str()),
            "{}",
            tail_of.name
        );
    }
    stats.reset();
    let warm = rt.block_on(atlas.select(&p)).unwrap();
    assert_eq!(warm, cold);
    assert_eq!(stats.snapshot().requests(), 0);
}

#[test]
fn without_the_index_a_catalogue_reads_one_footer_per_variable_and_no_array_block() {
    let shared = shared();
    let rt = runtime();
    let (op, stats) = counted(shared);
    let atlas = rt
        .block_on(Atlas::open((op, "argo"), &footers_only()))
        .unwrap();
    stats.reset();
    let batch = rt
        .block_on(atlas.catalogue(&atlas::CatalogueOptions::default()))
        .unwrap();
    assert_eq!(batch.num_rows(), PROFILES);
    // Four arrays and _datasets: each footer, in two reads when it is larger
    // than the prefetch, and not a byte more.
    let opened: Vec<_> = atlas
        .lone_member()
        .unwrap()
        .segments()
        .into_iter()
        .filter(|v| {
            [
                "LATITUDE",
                "LONGITUDE",
                "JULD",
                "PRES",
                "TEMP",
                "PSAL",
                "_datasets",
            ]
            .contains(&v.name.as_str())
        })
        .collect();
    let counts = stats.snapshot();
    assert!(counts.reads <= 10, "{counts:?}");
    let footers: u64 = stats
        .read_log()
        .iter()
        .map(|r| {
            let start = r.range.offset();
            let seg = opened
                .iter()
                .find(|s| s.offset <= start && start < s.offset + s.len)
                .unwrap();
            assert!(start >= seg.offset + seg.len - footer_bytes(shared, seg));
            r.range.size().unwrap()
        })
        .sum();
    assert_eq!(footers, counts.bytes_read);
}
