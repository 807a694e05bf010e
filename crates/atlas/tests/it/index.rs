//! The dataset index beside a container: every question it answers comes out
//! as the footers give it; a query reads the index instead of segment
//! footers, and only the row groups its bounds cannot rule out; an index
//! that describes another container, or is not an index at all, is ignored.

#![cfg(test)]

use crate::query_support;
use crate::read_support;

use std::collections::BTreeSet;

use atlas::{
    ArrayStats, Atlas, AtlasWriter, Attr, CatalogueOptions, INDEX_FILE, IndexOptions, OpenOptions,
    Predicate, Region, SetWriter, Value, WriterConfig, member_id,
};
use opendal::Operator;
use read_support::{FIXTURES, counted_memory, join, load_fixture, memory, reads_of};

async fn open(op: &Operator, prefix: &str, index: bool) -> Atlas {
    Atlas::open(
        (op.clone(), prefix),
        &OpenOptions::default().dataset_index(index),
    )
    .await
    .unwrap()
}

/// The dataset attribute keys of the live datasets.
async fn attribute_keys(atlas: &Atlas) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    for ds in atlas.datasets().await.unwrap() {
        for (key, _) in ds.schema().attributes() {
            keys.insert(key.to_owned());
        }
    }
    keys
}

/// `a` and `b` are the same answer, compared as printed so that a NaN
/// statistic equals itself.
fn same<T: std::fmt::Debug>(a: T, b: T, what: &str) {
    assert_eq!(format!("{a:?}"), format!("{b:?}"), "{what}");
}

/// Every collection-wide question, asked of `with` (index) and `without`.
async fn assert_same_answers(with: &Atlas, without: &Atlas, what: &str) {
    same(
        with.catalogue(&CatalogueOptions::default()).await.unwrap(),
        without
            .catalogue(&CatalogueOptions::default())
            .await
            .unwrap(),
        &format!("{what}: catalogue"),
    );
    for array in without.array_names().await.unwrap() {
        same(
            with.array_stats(&array).await.unwrap(),
            without.array_stats(&array).await.unwrap(),
            &format!("{what}: array_stats({array})"),
        );
        same(
            with.array_stats_by_dataset(&array).await.unwrap(),
            without.array_stats_by_dataset(&array).await.unwrap(),
            &format!("{what}: array_stats_by_dataset({array})"),
        );
        same(
            with.array_shapes_by_dataset(&array).await.unwrap(),
            without.array_shapes_by_dataset(&array).await.unwrap(),
            &format!("{what}: array_shapes_by_dataset({array})"),
        );
        same(
            with.array_blocks_by_dataset(&array).await.unwrap(),
            without.array_blocks_by_dataset(&array).await.unwrap(),
            &format!("{what}: array_blocks_by_dataset({array})"),
        );
    }
    for key in attribute_keys(without).await {
        same(
            with.attributes_by_dataset(None, &key).await.unwrap(),
            without.attributes_by_dataset(None, &key).await.unwrap(),
            &format!("{what}: attributes_by_dataset({key})"),
        );
    }
}

/// The collection at `prefix` has an index that is not used, and answers
/// every question as the footers do.
async fn assert_index_ignored(op: &Operator, prefix: &str, what: &str) {
    let with = open(op, prefix, true).await;
    assert!(!with.lone_member().unwrap().has_index().await, "{what}");
    assert_same_answers(&with, &open(op, prefix, false).await, what).await;
}

#[tokio::test]
async fn the_index_answers_every_question_as_the_footers_do_on_every_fixture() {
    for fixture in FIXTURES {
        let op = memory();
        load_fixture(&op, fixture, "c").await;
        let reports = open(&op, "c", true)
            .await
            .write_index(&IndexOptions::default())
            .await
            .unwrap();
        assert_eq!(reports.len(), 1);
        let with = open(&op, "c", true).await;
        let without = open(&op, "c", false).await;
        assert!(with.lone_member().unwrap().has_index().await, "{fixture}");
        assert!(!without.lone_member().unwrap().has_index().await);
        assert_same_answers(&with, &without, fixture).await;
    }
}

#[tokio::test]
async fn queries_through_the_index_select_what_the_footers_select() {
    let op = memory();
    query_support::argo_profiles(&op, "argo", 600, 3).await;
    let options = IndexOptions::default().rows_per_group(64);
    let report = open(&op, "argo", true)
        .await
        .write_index(&options)
        .await
        .unwrap();
    assert_eq!(report[0].row_groups, 10);
    assert!(report[0].variables_left_out.is_empty(), "{report:?}");
    let with = open(&op, "argo", true).await;
    let without = open(&op, "argo", false).await;
    assert_same_answers(&with, &without, "argo").await;
    for text in [
        "LATITUDE between -10 10",
        "LATITUDE between -30 30 and LONGITUDE between 0 90",
        "JULD >= 2021-01-01 and JULD < 2021-03-01",
        "not LATITUDE > 0 or cycle_number = 7",
        "TEMP.max > 25 and data_mode = 'D'",
        "exists data_mode and TEMP.nulls > 0",
        "platform_number = '6901007'",
    ] {
        let p = Predicate::parse(text).unwrap();
        let expected = without.select(&p).await.unwrap();
        assert_eq!(with.select(&p).await.unwrap(), expected, "{text}");
        let catalogue = CatalogueOptions::default().predicate(p);
        assert_eq!(
            with.catalogue(&catalogue).await.unwrap(),
            without.catalogue(&catalogue).await.unwrap(),
            "{text}"
        );
    }
}

/// Commits a member of the set at `(op, prefix)` holding one dataset per
/// `(name, cycle)`: a `TEMP` profile whose length and values follow from
/// both, a scalar `LATITUDE` and a `cycle` attribute.
async fn append_member(op: &Operator, prefix: &str, n: u64, datasets: &[(&str, i64)]) -> String {
    let ms = 1_700_000_000_000 + i64::try_from(n).unwrap();
    let config = WriterConfig::default().created_unix_ms(ms);
    let mut set = SetWriter::create((op.clone(), prefix), &config)
        .await
        .unwrap();
    let id = member_id(ms, n);
    let member = set.add_member(&id).await.unwrap();
    for &(name, cycle) in datasets {
        let len = 2 + usize::try_from(cycle).unwrap() % 5;
        let temp: Vec<f32> = (0..len).map(|i| cycle as f32 * 3.0 + i as f32).collect();
        let mut ds = member.writer().add_dataset(name).unwrap();
        ds.define_array::<f32>("TEMP", &["N_LEVELS"], &[len as u64], None, Some(99999.0))
            .unwrap();
        ds.write_array("TEMP", &[0], ndarray::ArrayView1::from(&temp).into_dyn())
            .unwrap();
        ds.define_array::<f64>("LATITUDE", &[], &[], None, None)
            .unwrap();
        ds.write_array(
            "LATITUDE",
            &[],
            ndarray::arr0(cycle as f64 * 7.5 - 40.0).view().into_dyn(),
        )
        .unwrap();
        ds.set_attribute("cycle", cycle).unwrap();
        ds.finish().await.unwrap();
    }
    set.finish_member(member).await.unwrap();
    set.commit().await.unwrap();
    id
}

#[tokio::test]
async fn a_set_with_replaced_and_deleted_names_answers_through_its_indexes_as_through_the_footers()
{
    let op = atlas_io::CasMemory::new().operator();
    let first: Vec<(String, i64)> = (0..12).map(|i| (format!("p{i:02}"), i)).collect();
    let first: Vec<(&str, i64)> = first.iter().map(|(n, c)| (n.as_str(), *c)).collect();
    let old = append_member(&op, "argo", 1, &first).await;
    // The second member replaces p01, p04 and p07 with other values and
    // shapes, and adds p12.
    let new = append_member(
        &op,
        "argo",
        2,
        &[("p01", 21), ("p04", 24), ("p07", 27), ("p12", 12)],
    )
    .await;
    // One replaced name, one name never replaced, and one name only the new
    // member holds are deleted.
    open(&op, "argo", true)
        .await
        .delete_datasets(&["p04", "p09", "p12"])
        .await
        .unwrap();

    let with = open(&op, "argo", true).await;
    let without = open(&op, "argo", false).await;
    for id in [&old, &new] {
        assert!(with.member(id).await.unwrap().has_index().await, "{id}");
        assert!(!without.member(id).await.unwrap().has_index().await, "{id}");
    }
    assert_same_answers(&with, &without, "set").await;
    let names = with.dataset_names().await.unwrap();
    assert_eq!(names.len(), 10);
    assert!(
        !names
            .iter()
            .any(|n| ["p04", "p09", "p12"].contains(&n.as_str()))
    );
    for text in [
        "LATITUDE > 0",
        "TEMP.max > 60",
        "cycle >= 20 or LATITUDE < -30",
    ] {
        let p = Predicate::parse(text).unwrap();
        let selected = with.select(&p).await.unwrap();
        assert_eq!(selected, without.select(&p).await.unwrap(), "{text}");
        assert!(!selected.is_empty(), "{text}");
    }
    // The replaced names answer with the newer copy's values.
    let cycles = with.attributes_by_dataset(None, "cycle").await.unwrap();
    assert!(
        cycles.contains(&("p01".into(), Attr::Int64(21))),
        "{cycles:?}"
    );
    let p01 = with.dataset("p01").await.unwrap();
    let temp = p01.read_array::<f32>("TEMP", Region::all()).await.unwrap();
    assert_eq!(temp.as_slice(), Some(&[63.0, 64.0, 65.0][..]));
}

#[tokio::test]
async fn deletes_made_after_indexing_are_respected() {
    let op = memory();
    query_support::argo_profiles(&op, "argo", 200, 5).await;
    open(&op, "argo", true)
        .await
        .write_index(&IndexOptions::default())
        .await
        .unwrap();
    let names = open(&op, "argo", true).await.dataset_names().await.unwrap();
    let gone: Vec<&str> = names.iter().step_by(3).map(|n| n.as_str()).collect();
    open(&op, "argo", true)
        .await
        .delete_datasets(&gone)
        .await
        .unwrap();
    let with = open(&op, "argo", true).await;
    assert!(with.lone_member().unwrap().has_index().await);
    let without = open(&op, "argo", false).await;
    assert_same_answers(&with, &without, "after deletes").await;
    let p = Predicate::parse("LATITUDE > 0").unwrap();
    let selected = with.select(&p).await.unwrap();
    assert_eq!(selected, without.select(&p).await.unwrap());
    assert!(selected.iter().all(|n| !gone.contains(&n.as_str())));
}

/// `n` datasets with a scalar `X = i` and an attribute `k = i`, in order,
/// written with their index (the writer's default).
async fn ordered(op: &Operator, prefix: &str, n: usize) {
    ordered_from(op, prefix, n, 0.0).await;
}

/// [`ordered`], with `X = i + offset`.
async fn ordered_from(op: &Operator, prefix: &str, n: usize, offset: f64) {
    let writer = AtlasWriter::create((op.clone(), prefix), &WriterConfig::default())
        .await
        .unwrap();
    for i in 0..n {
        let mut ds = writer.add_dataset(&format!("d{i:05}")).unwrap();
        ds.define_array::<f64>("X", &["n"], &[1], None, None)
            .unwrap();
        ds.write_array(
            "X",
            &[0],
            ndarray::arr1(&[i as f64 + offset]).into_dyn().view(),
        )
        .unwrap();
        ds.set_attribute("k", i as i64).unwrap();
        ds.finish().await.unwrap();
    }
    writer.finish().await.unwrap();
}

/// 1000 [`ordered`] datasets on a counted store, indexed in row groups of
/// 100, and a handle on them.
async fn ordered_in_groups_of_100() -> (Operator, atlas_io::RequestStats, Atlas) {
    let (op, stats, _) = counted_memory();
    ordered(&op, "c", 1000).await;
    open(&op, "c", true)
        .await
        .write_index(&IndexOptions::default().rows_per_group(100))
        .await
        .unwrap();
    let atlas = open(&op, "c", true).await;
    (op, stats, atlas)
}

#[tokio::test]
async fn a_query_reads_the_index_and_no_segment_footer() {
    let (op, stats, atlas) = ordered_in_groups_of_100().await;
    stats.reset();
    let p = Predicate::parse("X between 150 249.5 and k >= 0").unwrap();
    let names = atlas.select(&p).await.unwrap();
    assert_eq!(names.len(), 100);
    assert_eq!(names.first().map(|n| n.as_str()), Some("d00150"));
    assert_eq!(
        reads_of(&stats, &join("c", "data.atlas")),
        0,
        "no segment footer is read"
    );
    let index = join("c", INDEX_FILE);
    let log = stats.read_log();
    let index_reads: Vec<_> = log.iter().filter(|r| r.path == index).collect();
    // The footer came with the open. Then, at once, the chunks of X (count,
    // nulls, value) and those of k in the two row groups the bounds leave:
    // chunks lying side by side are fetched as one range, and these two
    // small row groups are neighbours, so one read for X's and one for k's.
    assert_eq!(index_reads.len(), 2, "{index_reads:?}");
    let chunks: u64 = index_reads.iter().map(|r| r.range.size().unwrap()).sum();
    let index_len = op.stat(&index).await.unwrap().content_length();
    assert!(
        chunks < index_len / 4,
        "{chunks} of the index's {index_len} bytes: the other eight row groups are not read"
    );
    assert_eq!(log.len(), index_reads.len(), "nothing else is read");
}

#[tokio::test]
async fn the_open_reads_the_index_footer_beside_the_container_and_only_with_indexes_on() {
    let (op, stats, _) = counted_memory();
    ordered(&op, "c", 300).await;
    let index = join("c", INDEX_FILE);
    for (use_it, index_reads) in [(true, 1), (false, 0)] {
        stats.reset();
        let atlas = open(&op, "c", use_it).await;
        assert_eq!(
            reads_of(&stats, &index),
            index_reads,
            "{:?}",
            stats.read_log()
        );
        // The first question then reads column chunks, not the footer again.
        stats.reset();
        assert_eq!(atlas.array_stats_by_dataset("X").await.unwrap().len(), 300);
        assert_eq!(
            reads_of(&stats, &index),
            index_reads,
            "{:?}",
            stats.read_log()
        );
    }
}

#[tokio::test]
async fn a_variable_folded_over_whole_row_groups_comes_from_the_index_footer_without_a_request() {
    let (op, stats, atlas) = ordered_in_groups_of_100().await;
    let expected = |min: f64, max: f64, rows: u64| ArrayStats {
        min: Some(Value::Float(min)),
        max: Some(Value::Float(max)),
        null_count: 0,
        row_count: rows,
    };
    stats.reset();
    assert_eq!(
        atlas.array_stats("X").await.unwrap(),
        Some(expected(0.0, 999.0, 1000))
    );
    assert_eq!(
        stats.read_log(),
        vec![],
        "the footer read with the open holds the fold"
    );
    // A whole row group deleted: the other groups' totals still answer.
    let first_group: Vec<String> = (0..100).map(|i| format!("d{i:05}")).collect();
    let first_group: Vec<&str> = first_group.iter().map(String::as_str).collect();
    atlas.delete_datasets(&first_group).await.unwrap();
    let atlas = open(&op, "c", true).await;
    stats.reset();
    assert_eq!(
        atlas.array_stats("X").await.unwrap(),
        Some(expected(100.0, 999.0, 900))
    );
    assert_eq!(reads_of(&stats, &join("c", INDEX_FILE)), 0);
    // One dataset of a group deleted: that group's total no longer holds,
    // so the rows are read, and the answer is still the footers'.
    atlas.delete_datasets(&["d00999"]).await.unwrap();
    let atlas = open(&op, "c", true).await;
    stats.reset();
    let folded = atlas.array_stats("X").await.unwrap();
    assert_eq!(folded, Some(expected(100.0, 998.0, 899)));
    assert_eq!(reads_of(&stats, &join("c", INDEX_FILE)), 1);
    assert_eq!(
        folded,
        open(&op, "c", false).await.array_stats("X").await.unwrap()
    );
}

#[tokio::test]
async fn row_groups_ruled_out_cost_nothing_and_the_rest_is_read_once() {
    let (_, stats, atlas) = ordered_in_groups_of_100().await;
    let p = Predicate::parse("X > 2000").unwrap();
    stats.reset();
    assert!(atlas.select(&p).await.unwrap().is_empty());
    let index = join("c", INDEX_FILE);
    assert_eq!(
        reads_of(&stats, &index),
        0,
        "the footer, read with the open, rules out every row group"
    );
    stats.reset();
    let p = Predicate::parse("X < 50").unwrap();
    assert_eq!(atlas.select(&p).await.unwrap().len(), 50);
    assert_eq!(atlas.select(&p).await.unwrap().len(), 50);
    assert_eq!(
        reads_of(&stats, &index),
        1,
        "one group's three columns, side by side: one read, once"
    );
}

#[tokio::test]
async fn an_index_of_another_container_is_not_used() {
    let op = memory();
    ordered(&op, "a", 30).await;
    ordered(&op, "b", 31).await;
    let foreign = op.read(&join("a", INDEX_FILE)).await.unwrap();
    op.write(&join("b", INDEX_FILE), foreign.to_vec())
        .await
        .unwrap();
    assert_index_ignored(&op, "b", "foreign index").await;
}

#[tokio::test]
async fn a_rewritten_container_leaves_its_old_index_unused() {
    let op = memory();
    ordered(&op, "a", 40).await;
    let old = op.read(&join("a", INDEX_FILE)).await.unwrap();
    // Another container of the same size and dataset count at the same place.
    op.delete(&join("a", "data.atlas")).await.unwrap();
    ordered_from(&op, "a", 40, 0.5).await;
    op.write(&join("a", INDEX_FILE), old.to_vec())
        .await
        .unwrap();
    assert_index_ignored(&op, "a", "stale index").await;
}

#[tokio::test]
async fn an_unreadable_index_falls_back_to_the_footers() {
    let op = memory();
    ordered(&op, "a", 50).await;
    let good = op.read(&join("a", INDEX_FILE)).await.unwrap().to_vec();
    let huge_footer = {
        let mut bytes = good.clone();
        let n = bytes.len();
        bytes[n - 8..n - 4].copy_from_slice(&u32::MAX.to_le_bytes());
        bytes
    };
    let flipped = {
        let mut bytes = good.clone();
        let n = bytes.len();
        for b in &mut bytes[n / 2..n - 8] {
            *b ^= 0x5a;
        }
        bytes
    };
    for (what, bytes) in [
        ("empty", Vec::new()),
        ("truncated", good[..good.len() / 2].to_vec()),
        ("not parquet", b"hello, this is not an index".to_vec()),
        ("huge footer", huge_footer),
        ("flipped footer", flipped),
    ] {
        op.write(&join("a", INDEX_FILE), bytes).await.unwrap();
        assert_index_ignored(&op, "a", what).await;
    }
}

/// Flips the bytes of the second half of top-level column `column`'s chunk
/// in the first row group of the index at `path`.
async fn damage_column(op: &Operator, path: &str, column: &str) {
    let mut bytes = op.read(path).await.unwrap().to_vec();
    let metadata = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&bytes::Bytes::from(bytes.clone()))
        .unwrap();
    let leaf = metadata
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .position(|c| c.path().parts().first().map(String::as_str) == Some(column))
        .unwrap();
    let (start, len) = metadata.row_group(0).column(leaf).byte_range();
    for b in &mut bytes[(start + len / 2) as usize..(start + len - 1) as usize] {
        *b ^= 0xff;
    }
    op.write(path, bytes).await.unwrap();
}

#[tokio::test]
async fn a_changed_byte_anywhere_in_the_index_footer_fails_its_checksum_and_the_index_is_not_used()
{
    let op = memory();
    ordered(&op, "a", 50).await;
    let path = join("a", INDEX_FILE);
    let mut bytes = op.read(&path).await.unwrap().to_vec();
    // The writer's name: a byte that leaves the footer a valid Parquet
    // footer whose every entry still decodes.
    let name = b"parquet-rs";
    let at = bytes.windows(name.len()).rposition(|w| w == name).unwrap();
    bytes[at] = b'P';
    op.write(&path, bytes).await.unwrap();
    assert_index_ignored(&op, "a", "an index whose footer was changed").await;
}

#[tokio::test]
async fn a_damaged_index_column_falls_back_to_the_footers_and_verify_names_it() {
    let op = memory();
    ordered(&op, "a", 50).await;
    damage_column(&op, &join("a", INDEX_FILE), "X").await;

    let a = open(&op, "a", true).await;
    let member = a.lone_member().unwrap();
    assert!(member.has_index().await, "its footer is intact");
    let p = Predicate::parse("X between 10 19").unwrap();
    assert_eq!(
        a.select(&p).await.unwrap().len(),
        10,
        "answered from the footers"
    );
    let report = member.verify(&atlas::VerifyOptions::default()).await;
    assert!(
        report.findings.iter().any(
            |f| matches!(f, atlas::Finding::IndexDisagrees { what } if what.contains("\"X\""))
        ),
        "{:?}",
        report.findings
    );
    assert!(!report.is_sound());
}

#[tokio::test]
async fn verify_compares_a_sound_index_with_the_footers_and_warns_of_a_stale_one() {
    let op = memory();
    ordered(&op, "a", 30).await;
    ordered(&op, "b", 30).await;
    let a = open(&op, "a", true).await;
    a.write_index(&IndexOptions::default()).await.unwrap();
    let report = a
        .lone_member()
        .unwrap()
        .verify(&atlas::VerifyOptions::default())
        .await;
    assert!(report.is_sound(), "{:?}", report.findings);
    assert!(report.checked.index);
    let foreign = op.read(&join("a", INDEX_FILE)).await.unwrap();
    op.write(&join("b", INDEX_FILE), foreign.to_vec())
        .await
        .unwrap();
    let report = open(&op, "b", true)
        .await
        .lone_member()
        .unwrap()
        .verify(&atlas::VerifyOptions::default())
        .await;
    assert!(report.is_sound(), "a stale index is a warning only");
    assert!(!report.checked.index);
    assert!(
        report
            .warnings()
            .any(|f| matches!(f, atlas::Finding::IndexNotUsed { .. }))
    );
}

#[tokio::test]
async fn shapes_blocks_statistics_and_attributes_of_every_dataset_come_from_the_index_alone() {
    let (op, stats, _) = counted_memory();
    ordered(&op, "c", 300).await;
    let atlas = open(&op, "c", true).await;
    stats.reset();
    assert_eq!(atlas.array_shapes_by_dataset("X").await.unwrap().len(), 300);
    assert_eq!(atlas.array_blocks_by_dataset("X").await.unwrap().len(), 300);
    assert_eq!(atlas.array_stats_by_dataset("X").await.unwrap().len(), 300);
    assert!(atlas.array_stats("X").await.unwrap().is_some());
    assert_eq!(
        atlas.attributes_by_dataset(None, "k").await.unwrap().len(),
        300
    );
    assert_eq!(
        reads_of(&stats, &join("c", "data.atlas")),
        0,
        "no segment footer is read"
    );
    // The index footer came with the open; then one read per question that
    // needs chunks not read yet: X's shape and block (blocks then cost
    // nothing), X's count, nulls and value (so does the fold), and k.
    assert_eq!(reads_of(&stats, &join("c", INDEX_FILE)), 1 + 1 + 1);
}

/// A collection of several kinds: floats with NaN and fills, integers,
/// text, timestamps; datasets declaring different variables and attributes
/// (one a list, which no column holds, one declared with two types).
async fn varied(op: &Operator, prefix: &str, parallelism: usize) {
    let config = WriterConfig::default().commit_parallelism(parallelism);
    let writer = AtlasWriter::create((op.clone(), prefix), &config)
        .await
        .unwrap();
    for i in 0..300usize {
        if i.is_multiple_of(11) {
            // A dataset given up before its finish: the ones after it take
            // ordinals one lower than their writer slots.
            let mut gone = writer.add_dataset(&format!("gone{i:04}")).unwrap();
            gone.set_attribute("platform", "never written").unwrap();
            drop(gone);
        }
        let mut ds = writer.add_dataset(&format!("p{i:04}")).unwrap();
        let n = 1 + (i % 7) as u64;
        let temp: Vec<f32> = (0..n)
            .map(|j| {
                if (i + j as usize).is_multiple_of(5) {
                    f32::NAN
                } else {
                    i as f32 + j as f32
                }
            })
            .collect();
        ds.define_array::<f32>("TEMP", &["N_LEVELS"], &[n], None, Some(99999.0))
            .unwrap();
        ds.write_array("TEMP", &[0], ndarray::Array1::from(temp).into_dyn().view())
            .unwrap();
        if !i.is_multiple_of(3) {
            ds.define_array::<i32>("QC", &["N_LEVELS"], &[2], None, None)
                .unwrap();
            ds.write_array(
                "QC",
                &[0],
                ndarray::arr1(&[i as i32, -(i as i32)]).into_dyn().view(),
            )
            .unwrap();
        }
        if i.is_multiple_of(4) {
            ds.define_array::<String>("NAME", &[], &[1], None, None)
                .unwrap();
            ds.write_array(
                "NAME",
                &[0],
                ndarray::arr1(&[format!("float {i}")]).into_dyn().view(),
            )
            .unwrap();
        }
        ds.define_array::<atlas::Timestamp>("JULD", &["N_PROF"], &[1], None, None)
            .unwrap();
        ds.write_array(
            "JULD",
            &[0],
            ndarray::arr1(&[atlas::Timestamp(i as i64 * 86_400_000_000_000)])
                .into_dyn()
                .view(),
        )
        .unwrap();
        ds.set_attribute("platform", format!("69{:05}", i / 10))
            .unwrap();
        if i.is_multiple_of(2) {
            ds.set_attribute("cycle", i as i32).unwrap();
        }
        if i.is_multiple_of(50) {
            ds.set_attribute("levels", atlas::Attr::Float64List(vec![1.0, 2.0]))
                .unwrap();
        }
        if !i.is_multiple_of(2) && i.is_multiple_of(7) {
            // `cycle` declared as text here: the index leaves it out.
            ds.set_attribute("cycle", "late").unwrap();
        }
        ds.finish().await.unwrap();
    }
    writer.finish().await.unwrap();
}

#[tokio::test]
async fn a_writer_indexes_what_it_wrote_without_reading_a_segment_footer_back() {
    for parallelism in [1, 4] {
        let (op, stats, _) = counted_memory();
        stats.reset();
        varied(&op, "c", parallelism).await;
        // The writer reads nothing back: not its container's footer, not a
        // segment footer, not the (missing) mask.
        let reads: Vec<String> = stats.read_log().into_iter().map(|r| r.path).collect();
        assert!(reads.is_empty(), "{reads:?}");
        let from_writer = op.read(&join("c", INDEX_FILE)).await.unwrap().to_vec();

        // The same index, built from the footers, is byte for byte the same.
        open(&op, "c", false)
            .await
            .write_index(&IndexOptions::default())
            .await
            .unwrap();
        let from_footers = op.read(&join("c", INDEX_FILE)).await.unwrap().to_vec();
        assert!(
            from_writer == from_footers,
            "commit parallelism {parallelism}: the writer's index differs from the footers'"
        );
        let with = open(&op, "c", true).await;
        assert!(with.lone_member().unwrap().has_index().await);
        assert_same_answers(&with, &open(&op, "c", false).await, "varied").await;
    }
}

/// `n` datasets, each with `X` (float32, three elements, the last left as
/// its fill -1) and `S` (one string), indexed as the writer indexes: footers
/// large enough that reading one array of a fresh handle is a lookup.
async fn placed(op: &Operator, prefix: &str, n: usize) {
    let writer = AtlasWriter::create((op.clone(), prefix), &WriterConfig::default())
        .await
        .unwrap();
    for i in 0..n {
        let mut ds = writer.add_dataset(&format!("d{i:05}")).unwrap();
        ds.define_array::<f32>("X", &["n"], &[3], None, Some(-1.0))
            .unwrap();
        let x = ndarray::arr1(&[i as f32, 0.5]).into_dyn();
        ds.write_array("X", &[0], x.view()).unwrap();
        ds.define_array::<String>("S", &["m"], &[1], None, None)
            .unwrap();
        let s = ndarray::arr1(&[format!("s{i}")]).into_dyn();
        ds.write_array("S", &[0], s.view()).unwrap();
        ds.finish().await.unwrap();
    }
    writer.finish().await.unwrap();
}

/// [`placed`], its index rewritten with `rows` datasets a row group.
async fn placed_in_groups(op: &Operator, prefix: &str, n: usize, rows: usize) {
    placed(op, prefix, n).await;
    open(op, prefix, true)
        .await
        .write_index(&IndexOptions::default().rows_per_group(rows))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_cold_read_takes_the_chunk_places_from_the_index_and_reads_no_segment_footer() {
    let (op, stats, _) = counted_memory();
    placed(&op, "c", 3000).await;
    let container = join("c", "data.atlas");
    for (index, container_reads) in [(true, 1), (false, 3)] {
        let atlas = open(&op, "c", index).await;
        stats.reset();
        let d = atlas.dataset("d01234").await.unwrap();
        if index {
            // Its layout comes from the same places: no container read.
            let layout = d.array_layout("X").await.unwrap();
            assert_eq!(layout.shape, [3]);
            assert_eq!(layout.fill_value, Some(atlas::Value::Float(-1.0)));
            assert_eq!(reads_of(&stats, &container), 0, "{:?}", stats.read_log());
        }
        let x = d
            .read_array::<f32>("X", atlas::Region::all())
            .await
            .unwrap();
        assert_eq!(x.as_slice().unwrap(), &[1234.0, 0.5, -1.0]);
        // With the index: the block alone. Without: the footer's tail, the
        // lookup's ranges, the block.
        assert_eq!(
            reads_of(&stats, &container),
            container_reads,
            "index {index}: {:?}",
            stats.read_log()
        );
        if index {
            assert_eq!(
                reads_of(&stats, &join("c", INDEX_FILE)),
                1,
                "the row group's chunk columns (the footer came with the open)"
            );
        }
        // A string array is read by array-format through the same view.
        let s = d.read_any("S", atlas::Region::all()).await.unwrap();
        let strings = match s.data() {
            atlas::ArrayData::String(a) => a.iter().cloned().collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        assert_eq!(strings, ["s1234"]);
    }
}

#[tokio::test]
async fn every_dataset_reads_the_same_through_the_index_places_as_through_the_footer() {
    let (op, stats, _) = counted_memory();
    placed_in_groups(&op, "c", 3000, 1000).await;
    let with = open(&op, "c", true).await;
    stats.reset();
    let index = join("c", INDEX_FILE);
    let mut index_reads_once_looping = 0;
    for (i, d) in with.datasets().await.unwrap().iter().enumerate() {
        let x = d
            .read_array::<f32>("X", atlas::Region::all())
            .await
            .unwrap();
        assert_eq!(
            x.as_slice().unwrap(),
            &[i as f32, 0.5, -1.0],
            "{}",
            d.name()
        );
        if i == 1 {
            index_reads_once_looping = reads_of(&stats, &index);
        }
    }
    // The second read showed a loop: every row group's chunk columns were
    // fetched then, and each next row group's view is made from them.
    assert_eq!(
        reads_of(&stats, &index),
        index_reads_once_looping,
        "{:?}",
        stats.read_log()
    );
    let footer_reads = stats
        .read_log()
        .iter()
        .filter(|r| r.path == join("c", "data.atlas"))
        .count();
    // Three row groups of places, their blocks read ahead: no footer, and
    // nothing like one read per dataset.
    assert!(footer_reads < 30, "{footer_reads} reads of the container");
    // The loop kept the views of the last few stretches, not one per
    // dataset read.
    let held = with.arrays_in_views();
    assert!(
        held > 0 && held <= atlas::PLACED_ARRAYS_KEPT,
        "{held} arrays held in views after reading 3000"
    );
    let without = open(&op, "c", false).await;
    for d in without.datasets().await.unwrap().iter().step_by(97) {
        let a = d
            .read_array::<f32>("X", atlas::Region::all())
            .await
            .unwrap();
        let b = with
            .dataset(d.name())
            .await
            .unwrap()
            .read_array::<f32>("X", atlas::Region::all())
            .await
            .unwrap();
        assert_eq!(a, b);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loop_over_the_datasets_finds_the_next_stretchs_view_made_before_it_gets_there() {
    let (op, stats, _) = counted_memory();
    placed(&op, "c", 3000).await;
    let atlas = open(&op, "c", true).await;
    let datasets = atlas.datasets().await.unwrap();
    // The second read shows a loop: the first stretch's view is made from
    // the chunk columns fetched then, and the next one starts being made.
    for d in &datasets[..2] {
        d.read_array::<f32>("X", atlas::Region::all())
            .await
            .unwrap();
    }
    // The loop's own views: the first read's view of its one array, and
    // the first stretch's (512 datasets). Not sampled here: on a busy
    // machine the view ahead can be made before this line runs.
    let held_by_the_loop = 1 + 512;
    let reads = stats.read_log().len();
    let mut held = held_by_the_loop;
    for _ in 0..500 {
        held = atlas.arrays_in_views();
        if held > held_by_the_loop {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(
        held > held_by_the_loop,
        "no view beyond the loop's own {held_by_the_loop} arrays was made ahead"
    );
    // A view made ahead costs no request: it is made from the chunk
    // columns the second read fetched. The one read that may still land
    // now is that read's send of the data region's front (from byte
    // `HEADER_LEN`), a task of its own that a busy machine starts late.
    let late: Vec<_> = stats.read_log().split_off(reads);
    assert!(
        late.iter()
            .all(|r| r.path == join("c", "data.atlas")
                && r.range.offset() == atlas_format::HEADER_LEN),
        "a view made ahead costs no request, but these were made: {late:?}"
    );
    // Reading on through it gives every value, each stretch's view made
    // once: no more index reads, and no more views than the loop needs.
    let index_reads = reads_of(&stats, &join("c", INDEX_FILE));
    for (i, d) in datasets.iter().enumerate().skip(2) {
        let x = d
            .read_array::<f32>("X", atlas::Region::all())
            .await
            .unwrap();
        assert_eq!(x.as_slice().unwrap(), &[i as f32, 0.5, -1.0]);
    }
    assert_eq!(reads_of(&stats, &join("c", INDEX_FILE)), index_reads);
    assert!(atlas.arrays_in_views() <= atlas::PLACED_ARRAYS_KEPT);
}

#[tokio::test]
async fn read_many_over_every_dataset_takes_the_places_from_the_index_instead_of_the_footer() {
    use futures::StreamExt;
    let (op, stats, _) = counted_memory();
    placed(&op, "c", 3000).await;
    let container = join("c", "data.atlas");
    let mut bytes = Vec::new();
    for index in [true, false] {
        let atlas = open(&op, "c", index).await;
        let datasets = atlas.datasets().await.unwrap();
        stats.reset();
        let mut stream = atlas.read_many(
            datasets,
            "X",
            atlas::Region::all(),
            8,
            atlas::Order::AsGiven,
        );
        let mut i = 0usize;
        while let Some((name, array)) = stream.next().await {
            let array = array.unwrap();
            let x = match array.data() {
                atlas::ArrayData::Float32(a) => a.iter().copied().collect::<Vec<_>>(),
                other => panic!("{other:?}"),
            };
            assert_eq!(x, [i as f32, 0.5, -1.0], "{name}");
            i += 1;
        }
        assert_eq!(i, 3000);
        let read: u64 = stats
            .read_log()
            .iter()
            .filter(|r| r.path == container)
            .filter_map(|r| r.range.size())
            .sum();
        bytes.push(read);
    }
    let (with, without) = (bytes[0], bytes[1]);
    assert!(
        with.saturating_add(500_000) < without,
        "through the index {with} bytes of the container, through the footer {without}"
    );
}

#[tokio::test]
async fn a_table_through_the_index_reads_no_byte_of_the_container_twice() {
    use futures::TryStreamExt;
    let (op, stats, _) = counted_memory();
    placed(&op, "c", 3000).await;
    let container = join("c", "data.atlas");
    let atlas = open(&op, "c", true).await;
    stats.reset();
    let batches: Vec<atlas::RecordBatch> = atlas
        .table(&atlas::TableOptions::new(["X"]))
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let rows: usize = batches.iter().map(atlas::RecordBatch::num_rows).sum();
    assert_eq!(rows, 3 * 3000);
    // The table prepares its sweep and so does the read under it: the
    // front of the data region is still fetched once.
    let mut ranges: Vec<(u64, u64)> = stats
        .read_log()
        .iter()
        .filter(|r| r.path == container)
        .map(|r| {
            let start = r.range.offset();
            (start, start + r.range.size().unwrap())
        })
        .collect();
    assert!(!ranges.is_empty());
    ranges.sort_unstable();
    for pair in ranges.windows(2) {
        assert!(pair[0].1 <= pair[1].0, "read twice: {ranges:?}");
    }
}

#[tokio::test]
async fn damaged_chunk_places_fall_back_to_the_footer_and_verify_names_them() {
    let op = memory();
    placed(&op, "a", 3000).await;
    damage_column(&op, &join("a", INDEX_FILE), "X.chunks").await;

    let a = open(&op, "a", true).await;
    let d = a.dataset("d00007").await.unwrap();
    let x = d
        .read_array::<f32>("X", atlas::Region::all())
        .await
        .unwrap();
    assert_eq!(
        x.as_slice().unwrap(),
        &[7.0, 0.5, -1.0],
        "read through the footer"
    );
    let report = a
        .lone_member()
        .unwrap()
        .verify(&atlas::VerifyOptions::default())
        .await;
    assert!(
        report.findings.iter().any(
            |f| matches!(f, atlas::Finding::IndexDisagrees { what } if what.contains("\"X\""))
        ),
        "{:?}",
        report.findings
    );
}

#[tokio::test]
async fn concurrent_cold_reads_of_the_same_datasets_through_the_index_all_succeed() {
    let (op, _, _) = counted_memory();
    placed(&op, "c", 3000).await;
    let atlas = open(&op, "c", true).await;
    let names = ["d00100", "d00101", "d00100", "d00101", "d02999"];
    let reads = names.iter().cycle().take(20).map(|name| {
        let atlas = &atlas;
        async move {
            let d = atlas.dataset(name).await.unwrap();
            let x = d
                .read_array::<f32>("X", atlas::Region::all())
                .await
                .unwrap();
            (name.to_string(), x.into_raw_vec_and_offset().0)
        }
    });
    for (name, x) in futures::future::join_all(reads).await {
        let i: f32 = name.trim_start_matches('d').parse().unwrap();
        assert_eq!(x.first().copied(), Some(i), "{name}");
    }
}

#[tokio::test]
async fn decoded_index_columns_stay_within_their_budget_and_come_back_without_a_request() {
    let (op, stats, _) = counted_memory();
    placed_in_groups(&op, "c", 3000, 250).await;
    let full = open(&op, "c", true).await;
    let lean = Atlas::open(
        (op.clone(), "c"),
        &OpenOptions::default().index_cache_bytes(0),
    )
    .await
    .unwrap();
    // A loop over every dataset decodes the chunk places of all twelve row
    // groups, one stretch at a time.
    for atlas in [&full, &lean] {
        for (i, d) in atlas.datasets().await.unwrap().iter().enumerate() {
            let x = d
                .read_array::<f32>("X", atlas::Region::all())
                .await
                .unwrap();
            assert_eq!(x.as_slice().unwrap(), &[i as f32, 0.5, -1.0]);
        }
    }
    let (kept_full, kept_lean) = (full.index_bytes_kept(), lean.index_bytes_kept());
    assert!(kept_lean > 0, "the last question's columns are held");
    assert!(
        kept_lean.saturating_mul(4) <= kept_full,
        "with no budget {kept_lean} bytes stay, with the default {kept_full}"
    );
    // The chunk places of dataset 7's row group were let go while the loop
    // went on, and the statistics are asked twice: what is decoded again
    // comes from the bytes kept, without a request.
    let index = join("c", INDEX_FILE);
    let first = lean.array_stats_by_dataset("X").await.unwrap();
    let fetched = reads_of(&stats, &index);
    let one = lean.datasets().await.unwrap().into_iter().nth(7).unwrap();
    one.read_array::<f32>("X", atlas::Region::all())
        .await
        .unwrap();
    let again = lean.array_stats_by_dataset("X").await.unwrap();
    assert_eq!(
        reads_of(&stats, &index),
        fetched,
        "no index byte is read twice"
    );
    same(&again, &first, "statistics decoded again");
    same(
        &again,
        &full.array_stats_by_dataset("X").await.unwrap(),
        "statistics under the default budget",
    );
}
