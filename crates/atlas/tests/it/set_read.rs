//! Collection sets: name resolution across members, deletes, what opening
//! costs, and what a bad manifest or member gives.

#![cfg(test)]

use crate::s3_support;

use atlas::{
    Address, Atlas, AtlasError, CatalogueOptions, CompactOptions, DeleteOptions, FormatError,
    OpenOptions, Predicate, Region, SetWriter, WriterConfig, member_id,
};
use atlas_io::{CasMemory, CountingLayer, RequestStats};
use opendal::Operator;

/// One dataset to write: its name, its `TEMP` values and its `cycle` attribute.
struct Profile<'a> {
    name: &'a str,
    temp: &'a [f32],
    cycle: i64,
}

fn p<'a>(name: &'a str, temp: &'a [f32], cycle: i64) -> Profile<'a> {
    Profile { name, temp, cycle }
}

fn config(ms: i64) -> WriterConfig {
    WriterConfig::default().created_unix_ms(ms)
}

/// A memory service with conditional writes, counted.
fn cas() -> (Operator, RequestStats) {
    let layer = CountingLayer::new();
    let stats = layer.stats();
    (CasMemory::new().operator().layer(layer), stats)
}

/// Commits one member holding `profiles` to the set at `(op, prefix)`.
async fn append(op: &Operator, prefix: &str, n: u64, profiles: &[Profile<'_>]) -> String {
    append_at((op.clone(), prefix).into(), n, profiles).await
}

/// Commits one member holding `profiles` to the set at `at`.
async fn append_at(at: Address, n: u64, profiles: &[Profile<'_>]) -> String {
    let ms = 1_700_000_000_000 + i64::try_from(n).unwrap();
    let mut set = SetWriter::create(at, &config(ms)).await.unwrap();
    let id = member_id(ms, n);
    let member = set.add_member(&id).await.unwrap();
    for profile in profiles {
        let mut ds = member.writer().add_dataset(profile.name).unwrap();
        let len = u64::try_from(profile.temp.len()).unwrap();
        ds.define_array::<f32>("TEMP", &["N_LEVELS"], &[len], None, Some(99999.0))
            .unwrap();
        ds.write_array(
            "TEMP",
            &[0],
            ndarray::ArrayView1::from(profile.temp).into_dyn(),
        )
        .unwrap();
        ds.set_attribute("cycle", profile.cycle).unwrap();
        ds.finish().await.unwrap();
    }
    set.finish_member(member).await.unwrap();
    set.commit().await.unwrap();
    id
}

async fn open(op: &Operator, prefix: &str) -> Atlas {
    Atlas::open((op.clone(), prefix), &OpenOptions::default())
        .await
        .unwrap()
}

async fn open_err(op: &Operator, prefix: &str) -> AtlasError {
    Atlas::open((op.clone(), prefix), &OpenOptions::default())
        .await
        .unwrap_err()
}

async fn temp(set: &Atlas, name: &str) -> Vec<f32> {
    set.dataset(name)
        .await
        .unwrap()
        .read_array::<f32>("TEMP", Region::all())
        .await
        .unwrap()
        .into_raw_vec_and_offset()
        .0
}

#[tokio::test]
async fn a_name_added_again_in_a_later_member_reads_the_new_copy_everywhere() {
    let (op, _) = cas();
    append(&op, "argo", 1, &[p("a", &[1.0, 2.0], 1), p("b", &[3.0], 1)]).await;
    append(
        &op,
        "argo",
        2,
        &[p("b", &[30.0, 31.0], 2), p("c", &[5.0], 2)],
    )
    .await;
    let set = open(&op, "argo").await;

    assert_eq!(set.dataset_names().await.unwrap(), ["a", "b", "c"]);
    assert_eq!(set.dataset_count().await.unwrap(), 3);
    assert_eq!(temp(&set, "b").await, [30.0, 31.0]);
    let rows = set.array_stats_by_dataset("TEMP").await.unwrap();
    let b = rows.iter().find(|r| r.dataset == "b").unwrap();
    assert_eq!(b.stats.row_count, 2, "the new copy's statistics");
    assert_eq!(rows.len(), 3, "the old copy is not listed");
    let folded = set.array_stats("TEMP").await.unwrap().unwrap();
    assert_eq!(folded.row_count, 5, "a(2) + new b(2) + c(1)");
    let cycles = set.attributes_by_dataset(None, "cycle").await.unwrap();
    assert_eq!(cycles.len(), 3);

    let hot = Predicate::parse("TEMP.max > 20").unwrap();
    assert_eq!(set.select(&hot).await.unwrap(), ["b"]);
    let cold = Predicate::parse("TEMP.max < 4").unwrap();
    assert_eq!(
        set.select(&cold).await.unwrap(),
        ["a"],
        "the old b (3.0) is replaced"
    );

    let table = set.catalogue(&CatalogueOptions::default()).await.unwrap();
    assert_eq!(table.num_rows(), 3);
    let members = table
        .column_by_name("member")
        .unwrap()
        .as_any()
        .downcast_ref::<arrow_array::StringArray>()
        .unwrap();
    let ids = set.members();
    assert_eq!(
        members.value(1),
        ids[1].id,
        "b's row names the newer member"
    );
}

#[tokio::test]
async fn deleting_a_replaced_name_hides_it_and_does_not_resurrect_the_older_copy() {
    let (op, _) = cas();
    append(&op, "argo", 1, &[p("a", &[1.0], 1), p("b", &[3.0], 1)]).await;
    append(&op, "argo", 2, &[p("b", &[30.0], 2)]).await;
    let set = open(&op, "argo").await;
    let outcome = set.delete_datasets(&["b"]).await.unwrap();
    assert_eq!(outcome.deleted, 1);
    assert_eq!(set.dataset_names().await.unwrap(), ["a"]);
    assert!(matches!(
        set.dataset("b").await,
        Err(AtlasError::DatasetNotFound { .. })
    ));

    // Reopened: the manifest records the member's live count and mask checksum.
    let reopened = open(&op, "argo").await;
    assert_eq!(reopened.dataset_names().await.unwrap(), ["a"]);
    let members = reopened.members();
    assert_eq!(members[1].datasets_live, 0);
    assert!(members[1].checksums.mask.is_some());
    assert_eq!(
        members[0].datasets_live, 2,
        "the older copy's member is untouched"
    );
    assert_eq!(reopened.manifest().unwrap().generation, 3);
    // Deleting it again is accepted and changes nothing, as in a lone
    // collection: the newest copy decides, and it is deleted already.
    let again = reopened.delete_datasets(&["b"]).await.unwrap();
    assert_eq!(again.deleted, 0);
    assert_eq!(reopened.dataset_names().await.unwrap(), ["a"]);
    assert!(matches!(
        reopened.delete_datasets(&["nobody"]).await,
        Err(AtlasError::DatasetNotFound { .. })
    ));
}

#[tokio::test]
async fn opening_a_set_reads_the_manifest_and_no_member() {
    let (op, stats) = cas();
    for n in 1..=3 {
        let name = format!("p{n}");
        append(&op, "argo", n, &[p(&name, &[1.0], 1)]).await;
    }
    stats.reset();
    let set = open(&op, "argo").await;
    // The one read handle asks, in the same round trip, for the manifest and
    // for a lone collection's container tail, mask and index tail at the
    // root: the three NotFound reads count as requests. No member is read.
    assert_eq!(stats.snapshot().requests(), 4, "{:?}", stats.read_log());
    let mut paths: Vec<String> = stats.read_log().into_iter().map(|r| r.path).collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            "argo/data.atlas",
            "argo/data.atlas.index",
            "argo/deleted.mask",
            "argo/set.manifest"
        ]
    );
    assert_eq!(set.members().len(), 3);
    assert_eq!(set.members_opened(), 0);
    assert_eq!(stats.snapshot().requests(), 4, "members() costs nothing");
    stats.reset();
    assert_eq!(temp(&set, "p2").await, [1.0]);
    assert_eq!(
        set.members_opened(),
        1,
        "a lookup opens only the member whose name range holds the name"
    );
}

#[tokio::test]
async fn adding_a_member_costs_one_manifest_read_one_conditional_write_and_one_read_back() {
    let (op, stats) = cas();
    for n in 1..=5 {
        let name = format!("p{n}");
        append(&op, "argo", n, &[p(&name, &[1.0], 1)]).await;
    }
    let mut set = SetWriter::create((op.clone(), "argo"), &config(1))
        .await
        .unwrap();
    let member = set.add_member("new").await.unwrap();
    let ds = member.writer().add_dataset("x").unwrap();
    ds.finish().await.unwrap();
    set.finish_member(member).await.unwrap();
    stats.reset();
    let outcome = set.commit().await.unwrap();
    assert_eq!(outcome.attempts, 1);
    assert_eq!(outcome.requests, 3);
    assert_eq!(outcome.guarantee, atlas::WriteGuarantee::Conditional);
    assert_eq!(outcome.generation, 6);
    assert_eq!(stats.snapshot().requests(), 3, "{:?}", stats.read_log());
}

#[tokio::test]
async fn concurrent_appends_all_land() {
    let (op, _) = cas();
    let mut tasks = Vec::new();
    for n in 0..8u64 {
        let op = op.clone();
        tasks.push(tokio::spawn(async move {
            let name = format!("p{n}");
            append(&op, "argo", n, &[p(&name, &[1.0], 1)]).await
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let set = open(&op, "argo").await;
    assert_eq!(set.members().len(), 8);
    assert_eq!(set.manifest().unwrap().generation, 8);
    assert_eq!(set.dataset_count().await.unwrap(), 8);
}

#[tokio::test]
async fn concurrent_appends_to_a_local_set_all_land() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("set");
    let mut tasks = Vec::new();
    for n in 0..8u64 {
        let dir = dir.clone();
        tasks.push(tokio::spawn(async move {
            let ms = 1_700_000_000_000 + i64::try_from(n).unwrap();
            let mut set = SetWriter::create(&dir, &config(ms)).await.unwrap();
            let member = set.add_member(&member_id(ms, n)).await.unwrap();
            let ds = member.writer().add_dataset(&format!("p{n}")).unwrap();
            ds.finish().await.unwrap();
            set.finish_member(member).await.unwrap();
            set.commit().await.unwrap()
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap().guarantee, atlas::WriteGuarantee::Locked);
    }
    let set = Atlas::open(&dir, &OpenOptions::default()).await.unwrap();
    assert_eq!(set.members().len(), 8);
    assert_eq!(set.dataset_count().await.unwrap(), 8);
}

#[tokio::test]
async fn a_lone_collection_is_a_set_of_one() {
    let tmp = tempfile::tempdir().unwrap();
    let writer = atlas::AtlasWriter::create(tmp.path(), &config(5))
        .await
        .unwrap();
    let ds = writer.add_dataset("only").unwrap();
    ds.finish().await.unwrap();
    writer.finish().await.unwrap();
    let set = Atlas::open(tmp.path(), &OpenOptions::default())
        .await
        .unwrap();
    assert!(!set.is_set());
    assert!(set.members().is_empty());
    assert_eq!(set.dataset_names().await.unwrap(), ["only"]);
    set.delete_datasets(&["only"]).await.unwrap();
    let alone = atlas::Atlas::open(tmp.path(), &OpenOptions::default())
        .await
        .unwrap();
    assert_eq!(
        alone.dataset_count().await.unwrap(),
        0,
        "the delete went to the collection's mask"
    );
}

#[tokio::test]
async fn a_set_of_one_member_reads_exactly_as_the_member_alone() {
    let (op, _) = cas();
    let id = append(
        &op,
        "argo",
        1,
        &[p("a", &[1.0, 99999.0], 1), p("b", &[3.0, 4.0, 5.0], 2)],
    )
    .await;
    let set = open(&op, "argo").await;
    let alone = atlas::Atlas::open(
        (op.clone(), format!("argo/{}", atlas::member_path(&id))),
        &OpenOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(
        set.dataset_names().await.unwrap(),
        alone.dataset_names().await.unwrap()
    );
    assert_eq!(
        set.array_stats("TEMP").await.unwrap(),
        alone.array_stats("TEMP").await.unwrap()
    );
    let q = Predicate::parse("cycle >= 2").unwrap();
    assert_eq!(
        set.select(&q).await.unwrap(),
        alone.select(&q).await.unwrap()
    );
    let options = CatalogueOptions::default();
    let with_member = set.catalogue(&options).await.unwrap();
    let plain = alone.catalogue(&options).await.unwrap();
    let without = with_member.project(
        &(0..with_member.num_columns())
            .filter(|&i| with_member.schema().field(i).name() != "member")
            .collect::<Vec<_>>(),
    );
    assert_eq!(without.unwrap(), plain);
}

#[tokio::test]
async fn a_set_is_not_opened_as_a_lone_collection() {
    let (op, _) = cas();
    append(&op, "argo", 1, &[p("a", &[1.0], 1)]).await;
    // The one read handle opens the set as a set, never its root as a container.
    let set = atlas::Atlas::open((op.clone(), "argo"), &OpenOptions::default())
        .await
        .unwrap();
    assert!(set.is_set());
    assert!(set.lone_member().is_none());
    assert_eq!(set.members().len(), 1);
    assert_eq!(set.dataset_names().await.unwrap(), ["a"]);
}

#[tokio::test]
async fn a_damaged_manifest_is_an_error_naming_it() {
    let (op, _) = cas();
    append(&op, "argo", 1, &[p("a", &[1.0], 1)]).await;
    let mut bytes = op.read("argo/set.manifest").await.unwrap().to_vec();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    op.write("argo/set.manifest", bytes.clone()).await.unwrap();
    let err = open_err(&op, "argo").await;
    assert!(
        matches!(&err, AtlasError::SetManifest { path, source: FormatError::CorruptSetManifest { .. } } if path == "argo/set.manifest"),
        "{err}"
    );
    assert!(err.is_corruption());

    op.write("argo/set.manifest", bytes[..10].to_vec())
        .await
        .unwrap();
    let err = open_err(&op, "argo").await;
    assert!(
        matches!(
            &err,
            AtlasError::SetManifest {
                source: FormatError::CorruptSetManifest { .. },
                ..
            }
        ),
        "truncated: {err}"
    );
}

#[tokio::test]
async fn a_manifest_of_an_unknown_version_is_refused() {
    let (op, _) = cas();
    append(&op, "argo", 1, &[p("a", &[1.0], 1)]).await;
    let mut bytes = op.read("argo/set.manifest").await.unwrap().to_vec();
    bytes[8] = 2;
    op.write("argo/set.manifest", bytes).await.unwrap();
    let err = open_err(&op, "argo").await;
    assert!(
        matches!(
            &err,
            AtlasError::SetManifest {
                source: FormatError::UnsupportedVersion { found: 2, .. },
                ..
            }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn a_missing_or_foreign_member_is_an_error_naming_the_member() {
    let (op, _) = cas();
    let gone = append(&op, "argo", 1, &[p("a", &[1.0], 1)]).await;
    let foreign = append(&op, "argo", 2, &[p("b", &[1.0], 1)]).await;
    op.delete(&format!("argo/members/{gone}/data.atlas"))
        .await
        .unwrap();
    let set = open(&op, "argo").await;
    let err = set.dataset_names().await.unwrap_err();
    match &err {
        AtlasError::Member { id, source, .. } => {
            assert_eq!(id, &gone);
            assert!(
                matches!(source.as_ref(), AtlasError::Io(io) if io.kind() == atlas::IoErrorKind::NotFound),
                "{err}"
            );
        }
        other => panic!("{other}"),
    }

    op.write(
        &format!("argo/members/{gone}/data.atlas"),
        b"{\"not\": 1}".to_vec(),
    )
    .await
    .unwrap();
    let set = open(&op, "argo").await;
    let err = set.member(&gone).await.unwrap_err();
    assert!(
        matches!(&err, AtlasError::Member { source, .. } if matches!(source.as_ref(), AtlasError::NotAnAtlasCollection { .. })),
        "{err}"
    );
    assert!(set.member(&foreign).await.is_ok(), "the other member opens");
}

/// Every live dataset's name, `TEMP` values and `cycle`, in name order.
async fn snapshot(set: &Atlas) -> Vec<(String, Vec<f32>, Option<atlas::Attr>)> {
    let mut out = Vec::new();
    let mut names = set.dataset_names().await.unwrap();
    names.sort();
    for name in names {
        let ds = set.dataset(&name).await.unwrap();
        let cycle = ds.attribute("cycle").await.unwrap();
        out.push((name.to_string(), temp(set, &name).await, cycle));
    }
    out
}

#[tokio::test]
async fn compact_keeps_every_live_datasets_values_attributes_and_names() {
    let (op, _) = cas();
    append(&op, "argo", 1, &[p("a", &[1.0, 2.0], 1), p("b", &[3.0], 1)]).await;
    append(&op, "argo", 2, &[p("b", &[30.0], 2), p("c", &[4.0], 2)]).await;
    append(
        &op,
        "argo",
        3,
        &[p("d", &[5.0, 99999.0], 3), p("e", &[6.0], 3)],
    )
    .await;
    let set = open(&op, "argo").await;
    set.delete_datasets(&["e"]).await.unwrap();
    let before = snapshot(&set).await;
    let old_ids: Vec<String> = set.members().into_iter().map(|m| m.id).collect();
    // A reader of this generation, which has read everything once.
    let reader = open(&op, "argo").await;
    assert_eq!(snapshot(&reader).await, before);
    let generation = reader.generation();

    let outcome = set
        .compact(
            &atlas::CompactOptions::default()
                .target_datasets(10)
                .ids(9, 9),
        )
        .await
        .unwrap()
        .expect("three small members make a run");
    assert_eq!(outcome.replaced, old_ids);
    assert_eq!(outcome.written.len(), 1);
    assert_eq!(outcome.datasets, 4, "a, b (new), c, d");

    let after_set = open(&op, "argo").await;
    assert_eq!(after_set.members().len(), 1);
    assert_eq!(snapshot(&after_set).await, before);
    assert_eq!(after_set.members()[0].datasets_live, 4);
    assert_eq!(after_set.generation(), generation.map(|g| g + 1));

    // The replaced members stay, marked retired, so the older reader keeps
    // its generation, values unchanged; refreshed, it reads the new one.
    assert_eq!(snapshot(&reader).await, before);
    assert_eq!(reader.generation(), generation);
    let refreshed = reader.refresh().await.unwrap();
    assert_eq!(refreshed.generation(), after_set.generation());
    assert_eq!(refreshed.members().len(), 1);
    for id in &old_ids {
        for object in ["data.atlas", "retired"] {
            assert!(
                op.exists(&format!("argo/members/{id}/{object}"))
                    .await
                    .unwrap(),
                "replaced member {id} keeps {object}"
            );
        }
    }
}

#[tokio::test]
async fn compacting_newer_members_never_brings_back_a_deleted_name() {
    let (op, _) = cas();
    let big: Vec<String> = (0..5).map(|i| format!("x{i}")).collect();
    let big_profiles: Vec<Profile<'_>> = big.iter().map(|n| p(n, &[1.0], 0)).collect();
    // An old big member holding `x0`, then two small members; `x0` is added
    // again and deleted in the newest, which hides the old copy.
    append(&op, "argo", 1, &big_profiles).await;
    append(&op, "argo", 2, &[p("s1", &[2.0], 1)]).await;
    append(&op, "argo", 3, &[p("x0", &[3.0], 2)]).await;
    let set = open(&op, "argo").await;
    set.delete_datasets(&["x0"]).await.unwrap();
    let before = snapshot(&set).await;
    assert!(!before.iter().any(|(n, _, _)| n == "x0"));

    set.compact(
        &atlas::CompactOptions::default()
            .target_datasets(3)
            .ids(9, 9),
    )
    .await
    .unwrap()
    .expect("a run");
    let after = open(&op, "argo").await;
    assert_eq!(snapshot(&after).await, before, "x0 stays deleted");
}

#[tokio::test]
async fn a_query_outside_a_members_summary_opens_nothing_of_that_member() {
    let (op, stats) = cas();
    // Disjoint TEMP ranges: cold (0..10), warm (10..20), hot (20..30).
    append(
        &op,
        "argo",
        1,
        &[p("c1", &[1.0, 2.0], 1), p("c2", &[9.0], 1)],
    )
    .await;
    append(&op, "argo", 2, &[p("w1", &[11.0], 2), p("w2", &[19.0], 2)]).await;
    append(
        &op,
        "argo",
        3,
        &[p("h1", &[21.0, 25.0], 3), p("h2", &[29.0], 3)],
    )
    .await;
    let ids: Vec<String> = open(&op, "argo")
        .await
        .members()
        .into_iter()
        .map(|m| m.id)
        .collect();

    let set = open(&op, "argo").await;
    stats.reset();
    let hot = Predicate::parse("TEMP.min >= 20").unwrap();
    assert_eq!(set.select(&hot).await.unwrap(), ["h1", "h2"]);
    assert_eq!(set.members_opened(), 1, "only the hot member");
    let log = stats.read_log();
    for id in &ids[..2] {
        assert!(
            !log.iter().any(|r| r.path.contains(id.as_str())),
            "member {id} was read: {log:?}"
        );
    }

    // Nothing matches: no member is opened, no request is made.
    let set = open(&op, "argo").await;
    stats.reset();
    let none = Predicate::parse("TEMP.max > 1000 or cycle < 0").unwrap();
    assert!(set.select(&none).await.unwrap().is_empty());
    assert_eq!(stats.snapshot().requests(), 0);
    assert_eq!(set.members_opened(), 0);

    // The cold member matches. The newer members' name ranges (w…, h…) cannot
    // hold a cold name, so nothing of them is read either.
    let set = open(&op, "argo").await;
    stats.reset();
    let cold = Predicate::parse("TEMP.max < 5").unwrap();
    assert_eq!(set.select(&cold).await.unwrap(), ["c1"]);
    assert_eq!(set.members_opened(), 1);
    let log = stats.read_log();
    for id in &ids[1..] {
        assert!(
            !log.iter().any(|r| r.path.contains(id.as_str())),
            "member {id} was read: {log:?}"
        );
    }
}

#[tokio::test]
async fn a_newer_member_whose_names_overlap_a_match_is_opened_to_resolve_them() {
    let (op, _) = cas();
    // The newer member replaces `m2` with a hot copy: its range overlaps.
    append(&op, "argo", 1, &[p("m1", &[1.0], 1), p("m2", &[2.0], 1)]).await;
    append(&op, "argo", 2, &[p("m2", &[50.0], 2)]).await;
    let set = open(&op, "argo").await;
    let cold = Predicate::parse("TEMP.max < 5").unwrap();
    assert_eq!(
        set.select(&cold).await.unwrap(),
        ["m1"],
        "m2's live copy is hot"
    );
    assert_eq!(set.members_opened(), 2);
    assert_eq!(temp(&set, "m2").await, [50.0]);
}

#[tokio::test]
async fn a_member_written_but_never_committed_is_found_and_removed_and_the_set_keeps_its_data() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("set");
    let ms = 1_700_000_000_000;
    let mut set = SetWriter::create(&dir, &config(ms)).await.unwrap();
    let member = set.add_member(&member_id(ms, 1)).await.unwrap();
    member
        .writer()
        .add_dataset("kept")
        .unwrap()
        .finish()
        .await
        .unwrap();
    set.finish_member(member).await.unwrap();
    set.commit().await.unwrap();
    // A second writer writes its member and dies before its commit.
    let mut lost = SetWriter::create(&dir, &config(ms + 1)).await.unwrap();
    let member = lost.add_member(&member_id(ms + 1, 2)).await.unwrap();
    member
        .writer()
        .add_dataset("lost")
        .unwrap()
        .finish()
        .await
        .unwrap();
    lost.finish_member(member).await.unwrap();
    drop(lost);

    let loc = atlas::Location::resolve_path(&dir, atlas::Access::Write).unwrap();
    let found = atlas::uncommitted_members(&loc).await.unwrap();
    let paths: Vec<&str> = found.iter().map(|m| m.path.as_str()).collect();
    assert_eq!(paths, [atlas::member_path(&member_id(ms + 1, 2))]);
    assert!(found[0].objects >= 1 && found[0].bytes > 0);
    let now = std::time::SystemTime::now();
    assert!(!found[0].is_older_than(std::time::Duration::from_secs(3600), now));

    atlas::remove_uncommitted_member(&loc, &found[0])
        .await
        .unwrap();
    assert!(atlas::uncommitted_members(&loc).await.unwrap().is_empty());
    assert!(!dir.join(&found[0].path).exists());
    let set = Atlas::open(&dir, &OpenOptions::default()).await.unwrap();
    assert_eq!(set.dataset_names().await.unwrap(), ["kept"]);
}

/// A reader that asked its first question keeps reading its generation, values
/// unchanged, across an append, a delete and a compaction another handle
/// commits after; refreshed, it reads the newest generation.
async fn a_reader_keeps_its_generation(at: impl Fn() -> Address) {
    append_at(at(), 1, &[p("a", &[1.0], 1), p("b", &[2.0, 2.5], 1)]).await;
    append_at(at(), 2, &[p("c", &[3.0], 2)]).await;
    let reader = Atlas::open(at(), &OpenOptions::default()).await.unwrap();
    let before = snapshot(&reader).await;
    let generation = reader.generation();
    assert_eq!(generation, Some(2));

    append_at(at(), 3, &[p("a", &[10.0], 3), p("d", &[4.0], 3)]).await;
    let writer = Atlas::open(at(), &OpenOptions::default()).await.unwrap();
    writer.delete_datasets(&["b"]).await.unwrap();
    let compacted = writer
        .compact(&CompactOptions::default().target_datasets(10).ids(9, 9))
        .await
        .unwrap()
        .expect("three small members make a run");
    assert_eq!(compacted.replaced.len(), 3);

    assert_eq!(snapshot(&reader).await, before, "the generation it opened");
    assert_eq!(reader.generation(), generation);
    let newest = reader.refresh().await.unwrap();
    assert_eq!(newest.generation(), Some(5), "append, delete, compaction");
    let names: Vec<String> = snapshot(&newest).await.into_iter().map(|r| r.0).collect();
    assert_eq!(names, ["a", "c", "d"]);
    assert_eq!(temp(&newest, "a").await, [10.0]);
}

#[tokio::test]
async fn a_reader_keeps_its_generation_in_memory() {
    let (op, _) = cas();
    a_reader_keeps_its_generation(|| (op.clone(), "argo").into()).await;
}

#[tokio::test]
async fn a_reader_keeps_its_generation_on_local_disk() {
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("argo");
    std::fs::create_dir_all(&set).unwrap();
    a_reader_keeps_its_generation(|| set.as_path().into()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_keeps_its_generation_on_s3() {
    let (op, _) = s3_support::s3("snapshot");
    a_reader_keeps_its_generation(|| (op.clone(), "argo").into()).await;
}

/// A retrying operator over `cas`, with short backoffs.
fn retrying(cas: &CasMemory) -> Operator {
    let ms = std::time::Duration::from_millis;
    atlas::RetryPolicy::default()
        .backoff(ms(1), ms(4))
        .apply(cas.operator())
}

#[tokio::test]
async fn a_commit_whose_answer_was_lost_is_not_a_conflict_nor_committed_twice() {
    let cas = CasMemory::new();
    let op = retrying(&cas);
    let first = append(&op, "argo", 1, &[p("a", &[1.0], 1)]).await;
    cas.lose_next_answer("argo/set.manifest");
    let second = append(&op, "argo", 2, &[p("b", &[2.0], 2)]).await;
    let set = open(&op, "argo").await;
    assert_eq!(set.generation(), Some(2), "one commit each");
    let ids: Vec<String> = set.members().into_iter().map(|m| m.id).collect();
    assert_eq!(ids, [first, second]);
    assert_eq!(set.dataset_names().await.unwrap(), ["a", "b"]);
}

#[tokio::test]
async fn a_delete_and_a_compaction_whose_answers_were_lost_are_done_once() {
    let cas = CasMemory::new();
    let op = retrying(&cas);
    for n in 1..=3 {
        let name = format!("p{n}");
        append(&op, "argo", n, &[p(&name, &[n as f32], 1)]).await;
    }
    let set = open(&op, "argo").await;
    cas.lose_next_answer("deleted.mask");
    cas.lose_next_answer("argo/set.manifest");
    let deleted = set.delete_datasets(&["p2"]).await.unwrap();
    assert_eq!(deleted.deleted, 1);
    let set = open(&op, "argo").await;
    assert_eq!(set.generation(), Some(4), "three appends and one delete");
    assert_eq!(set.dataset_names().await.unwrap(), ["p1", "p3"]);

    cas.lose_next_answer("argo/set.manifest");
    let compacted = set
        .compact(&CompactOptions::default().target_datasets(10).ids(9, 9))
        .await
        .unwrap()
        .expect("three small members make a run");
    let after = open(&op, "argo").await;
    assert_eq!(after.generation(), Some(5), "one compaction commit");
    let ids: Vec<String> = after.members().into_iter().map(|m| m.id).collect();
    assert_eq!(ids, compacted.written);
    assert_eq!(snapshot(&after).await, snapshot(&set).await);
}

#[tokio::test]
async fn a_member_whose_container_upload_lost_its_answer_still_commits() {
    let cas = CasMemory::new();
    let op = retrying(&cas);
    cas.lose_next_answer("data.atlas");
    let id = append(&op, "argo", 1, &[p("a", &[1.0], 1)]).await;
    let set = open(&op, "argo").await;
    assert_eq!(set.members()[0].id, id);
    assert_eq!(temp(&set, "a").await, [1.0]);
}

#[tokio::test]
async fn compacting_a_run_whose_datasets_are_all_deleted_drops_the_run() {
    let (op, _) = cas();
    append(&op, "argo", 1, &[p("a", &[1.0], 1)]).await;
    append(&op, "argo", 2, &[p("b", &[2.0], 2)]).await;
    let set = open(&op, "argo").await;
    // Names in two members: one commit of a third member hiding both.
    set.delete_datasets(&["a", "b"]).await.unwrap();
    let set = set.refresh().await.unwrap();
    assert_eq!(set.members().len(), 3);
    let outcome = set
        .compact(&CompactOptions::default().target_datasets(10).ids(9, 9))
        .await
        .unwrap()
        .expect("three members with nothing live make a run");
    assert_eq!(outcome.replaced.len(), 3);
    assert!(outcome.written.is_empty());
    let after = open(&op, "argo").await;
    assert!(after.members().is_empty());
    assert!(after.dataset_names().await.unwrap().is_empty());
    assert_eq!(
        after.generation(),
        Some(4),
        "two appends, a delete, the compaction"
    );
}

#[tokio::test]
async fn datasets_added_and_names_hidden_in_one_commit_are_seen_together_or_not_at_all() {
    let (op, _) = cas();
    append(&op, "argo", 1, &[p("R1_001", &[1.0], 1), p("b", &[2.0], 1)]).await;
    let before = vec!["R1_001".to_owned(), "b".to_owned()];
    let after = vec!["D1_001".to_owned(), "b".to_owned()];

    // A reader polls while one commit replaces R1_001 by D1_001 (another
    // name for the same profile, as Argo's real-time and delayed-mode files).
    let done = std::sync::atomic::AtomicBool::new(false);
    let poll = async {
        let mut seen = Vec::new();
        while !done.load(std::sync::atomic::Ordering::Relaxed) {
            seen.push(sorted_names(&open(&op, "argo").await).await);
            tokio::task::yield_now().await;
        }
        seen
    };
    let commit = async {
        let ms = 1_700_000_000_002;
        let mut set = SetWriter::create((op.clone(), "argo"), &config(ms))
            .await
            .unwrap();
        let member = set.add_member(&member_id(ms, 2)).await.unwrap();
        let mut ds = member.writer().add_dataset("D1_001").unwrap();
        ds.define_array::<f32>("TEMP", &["N_LEVELS"], &[1], None, None)
            .unwrap();
        ds.write_array("TEMP", &[0], ndarray::arr1(&[1.5f32]).into_dyn().view())
            .unwrap();
        ds.finish().await.unwrap();
        assert!(matches!(
            set.hide(&member, &["D1_001"]).await.unwrap_err(),
            AtlasError::DatasetAlreadyExists { .. }
        ));
        set.hide(&member, &["R1_001", "never_there"]).await.unwrap();
        set.finish_member(member).await.unwrap();
        let outcome = set.commit().await.unwrap();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        outcome
    };
    let (seen, outcome) = tokio::join!(poll, commit);
    assert_eq!(outcome.generation, 2, "one commit");
    assert!(seen.iter().all(|s| *s == before || *s == after), "{seen:?}");

    let set = open(&op, "argo").await;
    assert_eq!(snapshot(&set).await.len(), 2);
    assert_eq!(temp(&set, "D1_001").await, [1.5]);
    assert!(!set.contains("R1_001").await.unwrap());
    assert!(!set.contains("never_there").await.unwrap());
    // A compaction keeps the name hidden.
    set.compact(&CompactOptions::default().target_datasets(10).ids(9, 9))
        .await
        .unwrap()
        .expect("two small members make a run");
    assert_eq!(sorted_names(&open(&op, "argo").await).await, after);
}

/// The live names, sorted.
async fn sorted_names(set: &Atlas) -> Vec<String> {
    let mut names: Vec<String> = set
        .dataset_names()
        .await
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_delete_across_members_is_one_commit_whose_lost_answer_is_not_applied_twice() {
    let cas = CasMemory::new();
    let op = retrying(&cas);
    append(&op, "argo", 1, &[p("a", &[1.0], 1), p("c", &[3.0], 1)]).await;
    append(&op, "argo", 2, &[p("b", &[2.0], 2)]).await;
    let earlier = open(&op, "argo").await;
    assert_eq!(earlier.dataset_names().await.unwrap().len(), 3);

    let set = open(&op, "argo").await;
    cas.lose_next_answer("set.manifest");
    let outcome = set
        .delete_datasets_with(&["a", "b", "a"], &DeleteOptions::default().ids(5, 5))
        .await
        .unwrap();
    assert_eq!(outcome.deleted, 2);
    // The deleting handle sees its own delete at once.
    assert_eq!(set.dataset_names().await.unwrap(), ["c"]);

    let after = open(&op, "argo").await;
    assert_eq!(after.dataset_names().await.unwrap(), ["c"]);
    assert_eq!(
        after.generation(),
        Some(3),
        "two appends and one commit for the delete, not two"
    );
    let members = after.members();
    assert_eq!(members.len(), 3, "one new member hides both names");
    assert_eq!(members[2].id, member_id(5, 5));
    assert_eq!(
        (members[0].datasets_live, members[1].datasets_live),
        (2, 1),
        "the older members' masks are not written"
    );
    // A reader opened before keeps its generation: all of it, none of the delete.
    assert_eq!(earlier.dataset_names().await.unwrap().len(), 3);
    assert_eq!(temp(&earlier, "b").await, [2.0]);
}
