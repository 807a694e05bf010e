//! Sorted compaction: a set rewritten in the order of a key, so that each
//! member holds a narrow range of it and a query skips most members.

#![cfg(test)]

use atlas::{
    Atlas, AtlasError, CompactOptions, OpenOptions, Predicate, Region, SetWriter, SortKey,
    WriterConfig, member_id,
};
use atlas_io::{CasMemory, CountingLayer};
use opendal::Operator;

/// One profile: its name, float, cycle and whether it has a `JULD`.
#[derive(Clone, Copy)]
struct Profile {
    float: u32,
    cycle: u32,
    juld: Option<f64>,
}

impl Profile {
    fn name(&self) -> String {
        format!("f{}_{:02}", self.float, self.cycle)
    }

    /// Floats lie along a diagonal of the globe, far apart.
    fn position(&self) -> (f64, f64) {
        let (f, c) = (f64::from(self.float), f64::from(self.cycle));
        (-70.0 + 20.0 * f + 0.1 * c, -160.0 + 40.0 * f + 0.1 * c)
    }
}

/// Float `float`'s profiles: one a month (30 days) over a year.
fn float(float: u32) -> Vec<Profile> {
    (0..12)
        .map(|cycle| Profile {
            float,
            cycle,
            juld: Some(1000.0 + 30.0 * f64::from(cycle) + f64::from(float)),
        })
        .collect()
}

fn memory() -> Operator {
    CasMemory::new().operator().layer(CountingLayer::new())
}

/// Commits one member holding `profiles` (`TEMP` of two values each).
async fn append(op: &Operator, n: u64, profiles: &[Profile]) {
    let ms = 1_700_000_000_000 + i64::try_from(n).unwrap();
    let config = WriterConfig::default().created_unix_ms(ms);
    let mut set = SetWriter::create((op.clone(), "argo"), &config)
        .await
        .unwrap();
    let id = member_id(ms, n);
    let member = set.add_member(&id).await.unwrap();
    for p in profiles {
        let mut ds = member.writer().add_dataset(&p.name()).unwrap();
        let (lat, lon) = p.position();
        let mut scalars = vec![("LATITUDE", lat), ("LONGITUDE", lon)];
        if let Some(juld) = p.juld {
            scalars.push(("JULD", juld));
        }
        for (name, v) in scalars {
            ds.define_array::<f64>(name, &["N_PROF"], &[1], None, None)
                .unwrap();
            ds.write_array(name, &[0], ndarray::arr1(&[v]).into_dyn().view())
                .unwrap();
        }
        let temp = [f32::from(u8::try_from(p.cycle).unwrap()), 2.0];
        ds.define_array::<f32>("TEMP", &["N_LEVELS"], &[2], None, Some(99999.0))
            .unwrap();
        ds.write_array("TEMP", &[0], ndarray::arr1(&temp).into_dyn().view())
            .unwrap();
        ds.finish().await.unwrap();
    }
    set.finish_member(member).await.unwrap();
    set.commit().await.unwrap();
}

/// Eight floats in float order, two far-apart floats per member: every
/// member spans the whole year and half the globe.
async fn float_ordered(op: &Operator) {
    for m in 0..4u32 {
        let mut profiles = float(m);
        profiles.extend(float(m + 4));
        append(op, u64::from(m) + 1, &profiles).await;
    }
}

async fn open(op: &Operator) -> Atlas {
    Atlas::open((op.clone(), "argo"), &OpenOptions::default())
        .await
        .unwrap()
}

/// Every live dataset's name with its `JULD` and `TEMP`, in name order.
async fn snapshot(set: &Atlas) -> Vec<(String, Option<Vec<f64>>, Vec<f32>)> {
    let mut names = set.dataset_names().await.unwrap();
    names.sort();
    let mut out = Vec::new();
    for name in names {
        let ds = set.dataset(&name).await.unwrap();
        let juld = match ds.read_array::<f64>("JULD", Region::all()).await {
            Ok(a) => Some(a.into_raw_vec_and_offset().0),
            Err(AtlasError::ArrayNotFound { .. }) => None,
            Err(e) => panic!("{name}: {e}"),
        };
        let temp = ds.read_array::<f32>("TEMP", Region::all()).await.unwrap();
        out.push((name.to_string(), juld, temp.into_raw_vec_and_offset().0));
    }
    out
}

fn sorted_by(keys: &str, target: u64) -> CompactOptions {
    CompactOptions::default()
        .target_datasets(target)
        .ids(9, 9)
        .sort_by(SortKey::parse_list(keys).unwrap())
}

/// Each member's `JULD` bounds from the manifest, in commit order.
fn juld_bounds(set: &Atlas) -> Vec<Option<(f64, f64)>> {
    set.members()
        .iter()
        .map(|m| {
            let v = m.variables.iter().find(|v| v.name == "JULD")?;
            match (&v.min, &v.max) {
                (Some(atlas::Value::Float(lo)), Some(atlas::Value::Float(hi))) => Some((*lo, *hi)),
                other => panic!("JULD bounds {other:?}"),
            }
        })
        .collect()
}

#[tokio::test]
async fn sorting_by_juld_gives_members_disjoint_ordered_juld_ranges_and_keeps_every_dataset() {
    let op = memory();
    float_ordered(&op).await;
    // A profile without JULD, a replaced copy and a deleted profile.
    let mut undated = float(9);
    undated.truncate(1);
    undated[0].juld = None;
    let mut replaced = float(1);
    replaced.truncate(1);
    replaced[0].juld = Some(5000.0);
    undated.extend(replaced);
    append(&op, 5, &undated).await;
    let set = open(&op).await;
    set.delete_datasets(&["f2_03"]).await.unwrap();
    let before = snapshot(&open(&op).await).await;
    assert_eq!(before.len(), 8 * 12 + 1 - 1);

    let outcome = set
        .compact(&sorted_by("JULD", 24))
        .await
        .unwrap()
        .expect("a sorted compaction rewrites the set");
    assert_eq!(outcome.replaced.len(), 5, "every member");
    assert_eq!(outcome.datasets, 96);
    assert_eq!(outcome.written.len(), 4);

    let after = open(&op).await;
    assert_eq!(snapshot(&after).await, before, "same names and values");
    let bounds = juld_bounds(&after);
    assert_eq!(bounds.len(), 4);
    for pair in bounds.windows(2) {
        let (Some(a), Some(b)) = (pair[0], pair[1]) else {
            panic!("a member without JULD bounds: {bounds:?}");
        };
        assert!(a.1 < b.0, "members overlap in JULD: {bounds:?}");
    }
    // The dataset without JULD goes last, after the latest JULD (5000).
    let last = after.members().pop().unwrap();
    let last = after.member(&last.id).await.unwrap();
    let names = last.dataset_names();
    assert_eq!(
        names.iter().rev().take(2).copied().collect::<Vec<_>>(),
        ["f9_00", "f1_00"]
    );
}

#[tokio::test]
async fn a_box_and_month_query_opens_fewer_members_after_a_sort() {
    let op = memory();
    float_ordered(&op).await;
    // Around float 5 in its eleventh month (the last quarter of the year).
    let query = Predicate::parse(
        "LATITUDE between 25 35 and LONGITUDE between 30 50 and JULD between 1305 1334",
    )
    .unwrap();
    let before = open(&op).await;
    let expected = before.select(&query).await.unwrap();
    assert_eq!(expected, ["f5_10"]);
    let opened_before = before.members_opened();
    assert!(opened_before >= 3, "float order: {opened_before} opened");

    before
        .compact(&sorted_by("JULD", 24))
        .await
        .unwrap()
        .unwrap();
    let by_time = open(&op).await;
    assert_eq!(by_time.select(&query).await.unwrap(), expected);
    assert_eq!(by_time.members_opened(), 1, "the last quarter's member");

    by_time
        .compact(&sorted_by("hilbert", 24).ids(10, 10))
        .await
        .unwrap()
        .unwrap();
    let by_space = open(&op).await;
    assert_eq!(by_space.select(&query).await.unwrap(), expected);
    assert!(
        by_space.members_opened() < opened_before,
        "curve order: {} opened, float order {opened_before}",
        by_space.members_opened()
    );
    assert_eq!(snapshot(&by_space).await, snapshot(&by_time).await);
}

#[tokio::test]
async fn an_unknown_key_or_one_with_many_values_is_a_typed_error_naming_it_and_nothing_changes() {
    let op = memory();
    float_ordered(&op).await;
    let set = open(&op).await;
    let generation = set.generation();

    let unknown = set.compact(&sorted_by("NOPE", 24)).await.unwrap_err();
    assert!(
        matches!(&unknown, AtlasError::ArrayNotFound { array, dataset: None } if array == "NOPE"),
        "{unknown:?}"
    );
    let curve = set
        .compact(&sorted_by("hilbert:LATITUDE:LON", 24))
        .await
        .unwrap_err();
    assert!(
        matches!(&curve, AtlasError::ArrayNotFound { array, .. } if array == "LON"),
        "{curve:?}"
    );
    let many = set.compact(&sorted_by("JULD,TEMP", 24)).await.unwrap_err();
    assert!(
        matches!(&many, AtlasError::SortKeyNotScalar { key, values: 2, .. } if key == "TEMP"),
        "{many:?}"
    );
    assert!(many.to_string().contains("TEMP"), "{many}");

    let after = open(&op).await;
    assert_eq!(after.generation(), generation, "nothing committed");
    assert_eq!(after.members().len(), 4);
}

#[tokio::test]
async fn a_reader_opened_before_a_sorted_compaction_still_reads_every_dataset() {
    let op = memory();
    float_ordered(&op).await;
    let reader = open(&op).await;
    let before = snapshot(&reader).await;
    let old: Vec<String> = reader.members().into_iter().map(|m| m.id).collect();

    let writer = open(&op).await;
    let outcome = writer
        .compact(&sorted_by("hilbert:LATITUDE:LONGITUDE:JULD", 24))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome.replaced, old);

    // The old generation's members stay, marked retired, and read as before.
    assert_eq!(snapshot(&reader).await, before);
    for id in &old {
        assert!(
            op.exists(&format!("argo/members/{id}/retired"))
                .await
                .unwrap()
        );
    }
    let fresh = reader.refresh().await.unwrap();
    assert_eq!(snapshot(&fresh).await, before);
    assert_eq!(fresh.members().len(), 4);
}
