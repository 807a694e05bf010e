//! Members written by one writer and committed by another (`adopt_member`),
//! and members rewritten from scratch under a fixed id (`rewrite_member`):
//! what a distributed ingest's tasks and its client use.

#![cfg(test)]

use std::path::Path;

use atlas::{
    Atlas, AtlasError, IoErrorKind, OpenOptions, Region, SetWriter, WriterConfig, member_id,
    member_path,
};

const MS: i64 = 1_700_000_000_000;

fn config() -> WriterConfig {
    WriterConfig::default().created_unix_ms(MS)
}

/// Writes member `id` of the set at `dir` holding `names` (each a `TEMP` of
/// one value, its index), without committing it, as a task on a worker would.
async fn write_uncommitted(dir: &Path, id: &str, names: &[&str]) {
    let mut set = SetWriter::create(dir, &config()).await.unwrap();
    let member = set.rewrite_member(id).await.unwrap();
    for (i, name) in names.iter().enumerate() {
        let mut ds = member.writer().add_dataset(name).unwrap();
        ds.define_array::<f32>("TEMP", &["N"], &[1], None, None)
            .unwrap();
        let value = [i as f32];
        ds.write_array(
            "TEMP",
            &[0],
            ndarray::ArrayView1::from(&value[..]).into_dyn(),
        )
        .unwrap();
        ds.finish().await.unwrap();
    }
    member.into_writer().finish().await.unwrap();
    drop(set);
}

fn member_dirs(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join("members"))
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn adopting_an_id_nothing_was_written_under_is_a_member_error_of_kind_not_found() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("set");
    let id = member_id(MS, 1);
    let mut set = SetWriter::create(&dir, &config()).await.unwrap();
    match set.adopt_member(&id).await.unwrap_err() {
        AtlasError::Member {
            id: named,
            path,
            source,
        } => {
            assert_eq!(named, id);
            assert_eq!(path, member_path(&id));
            assert!(
                matches!(*source, AtlasError::Io(ref io) if io.kind() == IoErrorKind::NotFound),
                "{source:?}"
            );
        }
        other => panic!("expected a member error, got {other:?}"),
    }
    // Nothing was taken in: there is nothing to commit.
    assert!(matches!(
        set.commit().await.unwrap_err(),
        AtlasError::InvalidUse { .. }
    ));
}

#[tokio::test]
async fn members_written_by_other_writers_and_adopted_commit_in_adoption_order_and_read_back() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("set");
    let (a, b) = (member_id(MS, 0x100), member_id(MS, 0x101));
    // Written in the other order, as parallel tasks may finish.
    write_uncommitted(&dir, &b, &["p3", "p4"]).await;
    write_uncommitted(&dir, &a, &["p1", "p2"]).await;

    let mut set = SetWriter::create(&dir, &config()).await.unwrap();
    assert_eq!(set.adopt_member(&a).await.unwrap().datasets_total, 2);
    set.adopt_member(&b).await.unwrap();
    assert!(matches!(
        set.adopt_member(&a).await.unwrap_err(),
        AtlasError::InvalidUse { .. }
    ));
    let outcome = set.commit().await.unwrap();
    assert_eq!(outcome.generation, 1);

    let read = Atlas::open(&dir, &OpenOptions::default()).await.unwrap();
    let ids: Vec<String> = read.members().into_iter().map(|m| m.id).collect();
    assert_eq!(ids, [a.clone(), b.clone()]);
    assert_eq!(
        read.dataset_names().await.unwrap(),
        ["p1", "p2", "p3", "p4"]
    );
    let temp = read
        .dataset("p4")
        .await
        .unwrap()
        .read_array::<f32>("TEMP", Region::all())
        .await
        .unwrap();
    assert_eq!(temp.iter().copied().collect::<Vec<_>>(), [1.0]);
}

#[tokio::test]
async fn a_retried_member_rewrites_the_earlier_attempt_and_one_copy_is_committed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("set");
    let id = member_id(MS, 0x200);
    // A first attempt that finished its container (its worker died before
    // reporting), then one that only began.
    write_uncommitted(&dir, &id, &["p1", "p2"]).await;
    {
        let mut set = SetWriter::create(&dir, &config()).await.unwrap();
        let member = set.rewrite_member(&id).await.unwrap();
        let mut ds = member.writer().add_dataset("p1").unwrap();
        ds.define_array::<f32>("TEMP", &["N"], &[1], None, None)
            .unwrap();
        drop(ds);
        drop(member);
    }
    // The retry that succeeds.
    write_uncommitted(&dir, &id, &["p1", "p2"]).await;

    let mut set = SetWriter::create(&dir, &config()).await.unwrap();
    set.adopt_member(&id).await.unwrap();
    set.commit().await.unwrap();
    assert_eq!(member_dirs(&dir), std::slice::from_ref(&id));
    let read = Atlas::open(&dir, &OpenOptions::default()).await.unwrap();
    assert_eq!(read.members().len(), 1);
    assert_eq!(read.dataset_names().await.unwrap(), ["p1", "p2"]);
}

#[tokio::test]
async fn a_committed_member_is_neither_rewritten_nor_removed_nor_committed_again_by_a_second_commit_of_its_id()
 {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("set");
    let id = member_id(MS, 0x300);
    write_uncommitted(&dir, &id, &["p1"]).await;
    let mut set = SetWriter::create(&dir, &config()).await.unwrap();
    set.adopt_member(&id).await.unwrap();
    set.commit().await.unwrap();

    let mut again = SetWriter::create(&dir, &config()).await.unwrap();
    assert!(matches!(
        again.rewrite_member(&id).await.unwrap_err(),
        AtlasError::InvalidUse { .. }
    ));
    // A client that commits the same member twice (its first answer was
    // lost): the second commit finds it committed and writes nothing.
    let mut twice = SetWriter::create(&dir, &config()).await.unwrap();
    twice.adopt_member(&id).await.unwrap();
    let outcome = twice.commit().await.unwrap();
    assert_eq!(outcome.generation, 1, "the commit that holds it");
    assert_eq!(member_dirs(&dir), [id]);
    let read = Atlas::open(&dir, &OpenOptions::default()).await.unwrap();
    assert_eq!(read.manifest().unwrap().generation, 1);
    assert_eq!(read.dataset_names().await.unwrap(), ["p1"]);
}

#[tokio::test]
async fn aborting_removes_adopted_members_too() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("set");
    let id = member_id(MS, 0x400);
    write_uncommitted(&dir, &id, &["p1"]).await;
    let mut set = SetWriter::create(&dir, &config()).await.unwrap();
    set.adopt_member(&id).await.unwrap();
    set.abort().await.unwrap();
    assert!(member_dirs(&dir).is_empty());
}
