//! `Atlas::table` and `Atlas::table`: the values of chosen arrays over many
//! datasets as one long Arrow table, checked against per-dataset reads, and
//! the requests a table with a predicate costs.

#![cfg(test)]

use std::collections::BTreeMap;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int32Type, Int64Type, TimestampNanosecondType, UInt32Type,
};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use atlas::{
    AnyArray, ArrayData, Atlas, AtlasWriter, OpenOptions, Predicate, QueryError, Region, SetWriter,
    TableOptions, Timestamp, WriterConfig, member_id,
};
use atlas_io::{CasMemory, CountingLayer, RequestStats};
use futures::TryStreamExt;
use ndarray::{ArrayD, IxDyn};
use opendal::Operator;

const T0: i64 = 1_600_000_000_000_000_000;

/// One profile to write: which arrays it has (all along `N_LEVELS`) and its attributes.
struct Profile {
    name: &'static str,
    temp: Option<Vec<f32>>,
    psal: Option<Vec<f64>>,
    time: Option<Vec<i64>>,
    qc: Option<Vec<&'static str>>,
    lat: Option<f64>,
    platform: Option<&'static str>,
    cycle: i64,
}

fn arr<T: Clone>(values: &[T]) -> ArrayD<T> {
    ArrayD::from_shape_vec(IxDyn(&[values.len()]), values.to_vec()).unwrap()
}

fn len(values: &[impl Sized]) -> u64 {
    values.len() as u64
}

fn cas() -> (Operator, RequestStats) {
    let layer = CountingLayer::new();
    let stats = layer.stats();
    (CasMemory::new().operator().layer(layer), stats)
}

/// Commits one member holding `profiles` to the set at `(op, "set")`.
async fn append(op: &Operator, n: u64, config: WriterConfig, profiles: &[Profile]) {
    let ms = 1_700_000_000_000 + i64::try_from(n).unwrap();
    let mut set = SetWriter::create((op.clone(), "set"), &config.created_unix_ms(ms))
        .await
        .unwrap();
    let member = set.add_member(&member_id(ms, n)).await.unwrap();
    for p in profiles {
        let mut ds = member.writer().add_dataset(p.name).unwrap();
        let dims = &["N_LEVELS"];
        if let Some(v) = &p.temp {
            ds.define_array::<f32>("TEMP", dims, &[len(v)], None, Some(99999.0))
                .unwrap();
            ds.write_array("TEMP", &[0], arr(v).view()).unwrap();
        }
        if let Some(v) = &p.psal {
            ds.define_array::<f64>("PSAL", dims, &[len(v)], None, None)
                .unwrap();
            ds.write_array("PSAL", &[0], arr(v).view()).unwrap();
        }
        if let Some(v) = &p.time {
            let t: Vec<Timestamp> = v.iter().map(|&x| Timestamp::from_nanos(x)).collect();
            ds.define_array::<Timestamp>("TIME", dims, &[len(v)], None, None)
                .unwrap();
            ds.write_array("TIME", &[0], arr(&t).view()).unwrap();
        }
        if let Some(v) = &p.qc {
            let s: Vec<String> = v.iter().map(|x| (*x).to_owned()).collect();
            ds.define_array::<String>("QC", dims, &[len(v)], None, None)
                .unwrap();
            ds.write_array("QC", &[0], arr(&s).view()).unwrap();
        }
        if let Some(lat) = p.lat {
            ds.define_array::<f64>("LATITUDE", &[], &[], None, None)
                .unwrap();
            ds.write_array("LATITUDE", &[], ArrayD::from_elem(IxDyn(&[]), lat).view())
                .unwrap();
        }
        if let Some(platform) = p.platform {
            ds.set_attribute("platform", platform).unwrap();
        }
        ds.set_attribute("cycle", p.cycle).unwrap();
        ds.finish().await.unwrap();
    }
    set.finish_member(member).await.unwrap();
    set.commit().await.unwrap();
}

/// A set of two members: NaN, timestamps and strings; a profile without
/// `PSAL`, one with none of the table's arrays, one without `platform`.
async fn two_member_set() -> (Operator, RequestStats) {
    let (op, stats) = cas();
    let first = vec![
        Profile {
            name: "p001",
            temp: Some(vec![10.5, f32::NAN, 9.0]),
            psal: Some(vec![35.1, 35.2, f64::NAN]),
            time: Some(vec![T0, T0 + 1, T0 + 2]),
            qc: Some(vec!["1", "4", "1"]),
            lat: Some(-12.5),
            platform: Some("6901"),
            cycle: 1,
        },
        Profile {
            name: "p002",
            temp: Some(vec![8.0, 7.5]),
            psal: None,
            time: Some(vec![T0 + 10, T0 + 11]),
            qc: Some(vec!["", "9"]),
            lat: Some(3.0),
            platform: None,
            cycle: 2,
        },
        Profile {
            name: "p003",
            temp: None,
            psal: None,
            time: None,
            qc: None,
            lat: Some(4.0),
            platform: Some("6901"),
            cycle: 3,
        },
    ];
    let second = vec![Profile {
        name: "p004",
        temp: Some(vec![4.0, 3.5, 3.25, f32::NAN]),
        psal: Some(vec![34.0, 34.5, 34.75, 34.9]),
        time: Some(vec![T0 - 5, T0 - 4, T0 - 3, T0 - 2]),
        qc: Some(vec!["a,b", "\"q\"", "é", "1"]),
        lat: Some(40.0),
        platform: Some("6902"),
        cycle: 10,
    }];
    append(&op, 1, WriterConfig::default(), &first).await;
    append(&op, 2, WriterConfig::default(), &second).await;
    (op, stats)
}

async fn open_set(op: &Operator) -> Atlas {
    Atlas::open((op.clone(), "set"), &OpenOptions::default())
        .await
        .unwrap()
}

async fn batches(set: &Atlas, options: &TableOptions) -> Vec<RecordBatch> {
    set.table(options)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

/// One row as the test compares it: floats by their bits (NaN equals NaN).
#[derive(Debug, Clone, PartialEq)]
struct Row {
    dataset: String,
    level: Option<u32>,
    temp: Option<u32>,
    psal: Option<u64>,
    time: Option<i64>,
    qc: Option<String>,
    platform: Option<String>,
    cycle: Option<i64>,
}

/// The rows of `batches` (columns `dataset`, `N_LEVELS`, `TEMP`, `PSAL`, `TIME`, `QC`, `platform`, `cycle`).
fn rows_of(batches: &[RecordBatch]) -> Vec<Row> {
    let mut rows = Vec::new();
    for b in batches {
        let dataset = b
            .column_by_name("dataset")
            .unwrap()
            .as_dictionary::<Int32Type>();
        let names = dataset.values().as_string::<i32>();
        let level = b
            .column_by_name("N_LEVELS")
            .unwrap()
            .as_primitive::<UInt32Type>();
        let temp = b
            .column_by_name("TEMP")
            .unwrap()
            .as_primitive::<Float32Type>();
        let psal = b
            .column_by_name("PSAL")
            .unwrap()
            .as_primitive::<Float64Type>();
        let time = b
            .column_by_name("TIME")
            .unwrap()
            .as_primitive::<TimestampNanosecondType>();
        let qc = b.column_by_name("QC").unwrap().as_string::<i32>();
        let platform = b.column_by_name("platform").unwrap().as_string::<i32>();
        let cycle = b
            .column_by_name("cycle")
            .unwrap()
            .as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            let opt = |a: &dyn Array| a.is_valid(i);
            rows.push(Row {
                dataset: names.value(dataset.keys().value(i) as usize).to_owned(),
                level: opt(level).then(|| level.value(i)),
                temp: opt(temp).then(|| temp.value(i).to_bits()),
                psal: opt(psal).then(|| psal.value(i).to_bits()),
                time: opt(time).then(|| time.value(i)),
                qc: opt(qc).then(|| qc.value(i).to_owned()),
                platform: opt(platform).then(|| platform.value(i).to_owned()),
                cycle: opt(cycle).then(|| cycle.value(i)),
            });
        }
    }
    rows
}

async fn read(set: &Atlas, name: &str, array: &str) -> Option<AnyArray> {
    let ds = set.dataset(name).await.unwrap();
    ds.array_meta(array)?;
    Some(ds.read_any(array, Region::all()).await.unwrap())
}

/// The rows the table should hold, built from one `read_any` per dataset and array.
async fn expected_rows(set: &Atlas) -> Vec<Row> {
    let mut rows = Vec::new();
    for name in set.dataset_names().await.unwrap() {
        let temp = read(set, &name, "TEMP").await.map(|a| match a.into_data() {
            ArrayData::Float32(v) => v.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        });
        let psal = read(set, &name, "PSAL").await.map(|a| match a.into_data() {
            ArrayData::Float64(v) => v.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        });
        let time = read(set, &name, "TIME").await.map(|a| match a.into_data() {
            ArrayData::Timestamp(v) => v.iter().map(|x| x.nanos()).collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        });
        let qc = read(set, &name, "QC").await.map(|a| match a.into_data() {
            ArrayData::String(v) => v.iter().cloned().collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        });
        let n = [
            temp.as_ref().map(Vec::len),
            psal.as_ref().map(Vec::len),
            time.as_ref().map(Vec::len),
            qc.as_ref().map(Vec::len),
        ]
        .into_iter()
        .flatten()
        .max();
        let Some(n) = n else { continue };
        let ds = set.dataset(&name).await.unwrap();
        let platform = match ds.attribute("platform").await.unwrap() {
            Some(atlas::Attr::String(s)) => Some(s),
            None => None,
            other => panic!("{other:?}"),
        };
        let cycle = match ds.attribute("cycle").await.unwrap() {
            Some(atlas::Attr::Int64(c)) => Some(c),
            other => panic!("{other:?}"),
        };
        for i in 0..n {
            rows.push(Row {
                dataset: name.to_string(),
                level: Some(i as u32),
                temp: temp.as_ref().map(|v| v[i]),
                psal: psal.as_ref().map(|v| v[i]),
                time: time.as_ref().map(|v| v[i]),
                qc: qc.as_ref().map(|v| v[i].clone()),
                platform: platform.clone(),
                cycle,
            });
        }
    }
    rows
}

fn all_four() -> TableOptions {
    TableOptions::new(["TEMP", "PSAL", "TIME", "QC"]).attributes(["platform", "cycle"])
}

#[tokio::test]
async fn table_values_equal_per_dataset_reads_across_members() {
    let (op, _) = two_member_set().await;
    let set = open_set(&op).await;
    let stream = set.table(&all_four()).await.unwrap();
    let schema = stream.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(
        names,
        [
            "dataset", "N_LEVELS", "TEMP", "PSAL", "TIME", "QC", "platform", "cycle"
        ]
    );
    assert_eq!(
        schema.field(0).data_type(),
        &DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
    );
    assert_eq!(
        schema.field_with_name("TIME").unwrap().data_type(),
        &DataType::Timestamp(arrow_schema::TimeUnit::Nanosecond, Some("UTC".into()))
    );
    assert_eq!(stream.rows(), 9);
    assert_eq!(stream.datasets(), 3, "p003 declares none of the arrays");
    let got: Vec<RecordBatch> = stream.try_collect().await.unwrap();
    let rows = rows_of(&got);
    let expected = expected_rows(&set).await;
    assert_eq!(rows, expected);
    // Spot checks that the comparison itself cannot hide.
    assert!(f32::from_bits(rows[1].temp.unwrap()).is_nan());
    assert_eq!(rows[3].dataset, "p002");
    assert_eq!(rows[3].psal, None, "p002 has no PSAL");
    assert_eq!(rows[3].platform, None, "p002 has no platform");
    assert_eq!(rows[5].qc.as_deref(), Some("a,b"));
    assert!(rows.iter().all(|r| r.dataset != "p003"));
}

#[tokio::test]
async fn row_counts_per_dataset_equal_the_element_counts() {
    let (op, _) = two_member_set().await;
    let set = open_set(&op).await;
    let rows = rows_of(&batches(&set, &all_four()).await);
    let mut per_dataset: BTreeMap<String, u64> = BTreeMap::new();
    for r in &rows {
        *per_dataset.entry(r.dataset.clone()).or_default() += 1;
    }
    let mut expected = BTreeMap::new();
    for ds in set.datasets().await.unwrap() {
        if ds.array_meta("TEMP").is_some() {
            let layout = ds.array_layout("TEMP").await.unwrap();
            expected.insert(ds.name().to_owned(), layout.element_count);
        }
    }
    assert_eq!(per_dataset, expected);
    assert_eq!(
        per_dataset.into_iter().collect::<Vec<_>>(),
        [("p001".into(), 3), ("p002".into(), 2), ("p004".into(), 4)]
    );
}

#[tokio::test]
async fn batches_hold_at_most_rows_per_batch_and_only_the_last_is_short() {
    let (op, _) = two_member_set().await;
    let set = open_set(&op).await;
    let whole = rows_of(&batches(&set, &all_four()).await);
    for size in [1, 2, 4, 100] {
        let cut = batches(&set, &all_four().rows_per_batch(size)).await;
        let sizes: Vec<usize> = cut.iter().map(RecordBatch::num_rows).collect();
        let (last, full) = sizes.split_last().unwrap();
        assert!(full.iter().all(|&n| n == size), "{size}: {sizes:?}");
        assert!(*last >= 1 && *last <= size, "{size}: {sizes:?}");
        assert_eq!(sizes.iter().sum::<usize>(), 9);
        assert_eq!(rows_of(&cut), whole, "cut at {size}");
    }
}

#[tokio::test]
async fn value_and_index_columns_hold_no_room_beyond_their_rows() {
    // The 9 rows of this set, in batches far larger than the table and in
    // batches of 4: no buffer is sized for rows that never come, and none
    // grew by doubling past its rows.
    let (op, _) = two_member_set().await;
    let set = open_set(&op).await;
    for options in [all_four(), all_four().rows_per_batch(4)] {
        for batch in batches(&set, &options).await {
            for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
                let Some(width) = column.data_type().primitive_width() else {
                    continue;
                };
                let data = column.to_data();
                let values = &data.buffers()[0];
                let needed = (batch.num_rows() * width).next_multiple_of(64);
                assert!(
                    values.capacity() <= needed,
                    "{}: {} bytes held for {} rows",
                    field.name(),
                    values.capacity(),
                    batch.num_rows()
                );
            }
        }
    }
}

#[tokio::test]
async fn arrays_that_do_not_share_dimensions_are_a_typed_error_naming_the_dataset() {
    let (op, _) = cas();
    let writer = AtlasWriter::create((op.clone(), "c"), &WriterConfig::default())
        .await
        .unwrap();
    let mut ds = writer.add_dataset("ok").unwrap();
    ds.define_array::<f32>("A", &["x"], &[2], None, None)
        .unwrap();
    ds.define_array::<f32>("B", &["x"], &[2], None, None)
        .unwrap();
    ds.finish().await.unwrap();
    let mut ds = writer.add_dataset("bad").unwrap();
    ds.define_array::<f32>("A", &["x"], &[3], None, None)
        .unwrap();
    ds.define_array::<f32>("B", &["x"], &[4], None, None)
        .unwrap();
    ds.finish().await.unwrap();
    writer.finish().await.unwrap();
    let atlas = Atlas::open((op, "c"), &OpenOptions::default())
        .await
        .unwrap();
    let err = atlas
        .table(&TableOptions::new(["A", "B"]))
        .await
        .unwrap_err();
    match err {
        QueryError::DimensionsDiffer {
            dataset, arrays, ..
        } => {
            assert_eq!(dataset, "bad");
            assert_eq!(arrays, ["A", "B"]);
        }
        other => panic!("{other:?}"),
    }
    // Each alone is fine.
    let a: Vec<RecordBatch> = atlas
        .table(&TableOptions::new(["A"]))
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(a.iter().map(RecordBatch::num_rows).sum::<usize>(), 5);
}

#[tokio::test]
async fn a_table_without_arrays_or_with_an_unknown_one_is_refused() {
    let (op, _) = two_member_set().await;
    let set = open_set(&op).await;
    assert!(matches!(
        set.table(&TableOptions::default()).await.unwrap_err(),
        QueryError::NoArrays
    ));
    assert!(matches!(
        set.table(&TableOptions::new(["NOPE"])).await.unwrap_err(),
        QueryError::UnknownName { name } if name == "NOPE"
    ));
}

#[tokio::test]
async fn index_columns_follow_each_dimension_in_row_major_order() {
    let (op, _) = cas();
    let writer = AtlasWriter::create((op.clone(), "g"), &WriterConfig::default())
        .await
        .unwrap();
    let mut ds = writer.add_dataset("grid").unwrap();
    ds.define_array::<i32>("V", &["y", "x"], &[2, 3], None, None)
        .unwrap();
    let v = ArrayD::from_shape_vec(IxDyn(&[2, 3]), vec![0, 1, 2, 10, 11, 12]).unwrap();
    ds.write_array("V", &[0, 0], v.view()).unwrap();
    ds.finish().await.unwrap();
    writer.finish().await.unwrap();
    let atlas = Atlas::open((op, "g"), &OpenOptions::default())
        .await
        .unwrap();
    let got: Vec<RecordBatch> = atlas
        .table(&TableOptions::new(["V"]))
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let b = &got[0];
    let col = |n: &str| -> Vec<u32> {
        b.column_by_name(n)
            .unwrap()
            .as_primitive::<UInt32Type>()
            .values()
            .to_vec()
    };
    assert_eq!(col("y"), [0, 0, 0, 1, 1, 1]);
    assert_eq!(col("x"), [0, 1, 2, 0, 1, 2]);
    let values = b.column_by_name("V").unwrap().as_primitive::<Int32Type>();
    assert_eq!(values.values().to_vec(), [0, 1, 2, 10, 11, 12]);
}

/// `n` profiles `{prefix}{i:03}` with 256 noisy TEMP values and `cycle = base + i`, in 4 KiB blocks.
fn noisy(prefix: &'static str, base: i64, n: usize) -> Vec<Profile> {
    (0..n)
        .map(|i| Profile {
            name: Box::leak(format!("{prefix}{i:03}").into_boxed_str()),
            temp: Some(
                (0..256u32)
                    .map(|k| (k.wrapping_mul(2_654_435_761) % 1000) as f32 + i as f32)
                    .collect(),
            ),
            psal: None,
            time: None,
            qc: None,
            lat: None,
            platform: None,
            cycle: base + i as i64,
        })
        .collect()
}

/// Byte ranges read, by path (a read to the end as ending at `u64::MAX`).
fn ranges(stats: &RequestStats) -> Vec<(String, u64, u64)> {
    stats
        .read_log()
        .into_iter()
        .map(|r| {
            let start = r.range.offset();
            (
                r.path,
                start,
                r.range.size().map_or(u64::MAX, |n| start + n),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_predicate_reads_only_the_selected_datasets_blocks() {
    let (op, stats) = cas();
    let config = WriterConfig::default()
        .block_target_size(4096)
        .small_block_target_size(4096);
    append(&op, 1, config.clone(), &noisy("a", 0, 200)).await;
    append(&op, 2, config, &noisy("b", 1000, 200)).await;
    let p = Predicate::parse("cycle = 20 or cycle = 150").unwrap();
    // A small tail prefetch, so that opening a segment does not read its data too.
    let options = OpenOptions::default().segment_prefetch_bytes(4096);
    let open_set = |op: &Operator| {
        let op = op.clone();
        let options = options.clone();
        async move { Atlas::open((op, "set"), &options).await.unwrap() }
    };

    // The reference: select, then one read per chosen dataset, on a fresh handle.
    let set = open_set(&op).await;
    stats.reset();
    let names = set.select(&p).await.unwrap();
    assert_eq!(names, ["a020", "a150"]);
    for name in &names {
        set.dataset(name)
            .await
            .unwrap()
            .read_any("TEMP", Region::all())
            .await
            .unwrap();
    }
    let reference = ranges(&stats);

    let set = open_set(&op).await;
    stats.reset();
    let table = set
        .table(&TableOptions::new(["TEMP"]).predicate(p))
        .await
        .unwrap();
    assert_eq!(table.rows(), 512);
    let got: Vec<RecordBatch> = table.try_collect().await.unwrap();
    let read = ranges(&stats);
    assert_eq!(got.iter().map(RecordBatch::num_rows).sum::<usize>(), 512);
    assert!(
        read.iter()
            .all(|(path, _, _)| !path.contains(&member_id(1_700_000_000_002, 2))),
        "the second member is ruled out by its summary: {read:?}"
    );
    let covered = |(path, start, end): &(String, u64, u64)| {
        reference
            .iter()
            .any(|(p, s, e)| p == path && s <= start && end <= e)
    };
    for r in &read {
        assert!(
            covered(r),
            "{r:?} is not read by per-dataset reads of the selection: {reference:?}"
        );
    }
    assert_eq!(read.len(), reference.len(), "{read:?} vs {reference:?}");
    // Without the predicate the same table reads blocks those reads never touch.
    let set = open_set(&op).await;
    stats.reset();
    let _: Vec<RecordBatch> = set
        .table(&TableOptions::new(["TEMP"]))
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let all = ranges(&stats);
    assert!(all.iter().any(|r| !covered(r)), "{all:?}");
}

#[tokio::test]
async fn a_timestamp_equal_to_its_fill_value_is_null_as_numpy_reads_it_as_nat() {
    let (op, _) = cas();
    let writer = AtlasWriter::create((op.clone(), "t"), &WriterConfig::default())
        .await
        .unwrap();
    let mut ds = writer.add_dataset("one").unwrap();
    let fill = Timestamp::from_nanos(T0);
    ds.define_array::<Timestamp>("TIME", &["N"], &[3], None, Some(fill))
        .unwrap();
    let t = arr(&[fill, Timestamp::from_nanos(T0 + 1), fill]);
    ds.write_array("TIME", &[0], t.view()).unwrap();
    ds.finish().await.unwrap();
    writer.finish().await.unwrap();
    let atlas = Atlas::open((op, "t"), &OpenOptions::default())
        .await
        .unwrap();
    let got: Vec<RecordBatch> = atlas
        .table(&TableOptions::new(["TIME"]))
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let time = got[0]
        .column_by_name("TIME")
        .unwrap()
        .as_primitive::<TimestampNanosecondType>();
    let cells: Vec<Option<i64>> = time.iter().collect();
    assert_eq!(cells, [None, Some(T0 + 1), None]);
}

#[tokio::test]
async fn a_table_of_named_datasets_holds_their_rows_only_in_collection_order() {
    let (op, _) = two_member_set().await;
    let set = open_set(&op).await;
    let all = expected_rows(&set).await;
    let names = set.dataset_names().await.unwrap();
    assert!(names.len() >= 3, "{names:?}");
    // Asked for out of order, with a name no dataset has: collection order, the rest ignored.
    let wanted = vec![
        names[names.len() - 1].to_string(),
        names[0].to_string(),
        "no_such_dataset".to_owned(),
    ];
    let got = rows_of(&batches(&set, &all_four().datasets(wanted.clone())).await);
    let expected: Vec<Row> = all
        .into_iter()
        .filter(|r| wanted.contains(&r.dataset))
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(got, expected);
}
