//! `SetWriter::commit_at_generation`: a commit that goes through only while
//! the set is where its writer planned from (what a sync with an archive
//! relies on so that two syncs planned from one state do not both apply).

#![cfg(test)]

use atlas::{Atlas, AtlasError, OpenOptions, SetWriter, WriterConfig, member_id};
use atlas_io::CasMemory;

/// Writes member `n` holding one empty dataset `name` to the set at `at`,
/// committed at `generation`.
async fn commit_at(
    at: impl Into<atlas::Address>,
    n: u64,
    name: &str,
    generation: u64,
) -> atlas::Result<atlas::CommitOutcome> {
    let ms = 1_700_000_000_000 + i64::try_from(n).unwrap();
    let config = WriterConfig::default().created_unix_ms(ms);
    let mut set = SetWriter::create(at, &config).await?;
    let member = set.add_member(&member_id(ms, n)).await?;
    member.writer().add_dataset(name)?.finish().await?;
    set.finish_member(member).await?;
    set.commit_at_generation(generation).await
}

/// Whether member `n`'s folder is in the local set at `set`.
fn written(set: &std::path::Path, n: u64) -> bool {
    let ms = 1_700_000_000_000 + i64::try_from(n).unwrap();
    set.join("members").join(member_id(ms, n)).exists()
}

#[tokio::test]
async fn a_commit_planned_from_an_older_generation_is_refused_and_its_member_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("set");
    std::fs::create_dir_all(&dir).unwrap();
    let at = || dir.as_path();
    let first = commit_at(at(), 1, "a", 0).await.unwrap();
    assert_eq!(first.generation, 1);
    // Planned from the empty set too, but the set has moved on.
    let late = commit_at(at(), 2, "b", 0).await.unwrap_err();
    assert!(
        matches!(late, AtlasError::CommitConflict { generation: 1, .. }),
        "{late:?}"
    );
    assert!(written(&dir, 1));
    assert!(!written(&dir, 2), "the refused member is removed");
    let set = Atlas::open(at(), &OpenOptions::default()).await.unwrap();
    assert_eq!(set.dataset_names().await.unwrap(), ["a"]);
    // Planned again from where the set is, it goes through.
    assert_eq!(commit_at(at(), 3, "b", 1).await.unwrap().generation, 2);
}

#[tokio::test]
async fn a_conditional_commit_whose_answer_was_lost_is_recognised_not_refused() {
    let cas = CasMemory::new();
    let ms = std::time::Duration::from_millis;
    let op = atlas::RetryPolicy::default()
        .backoff(ms(1), ms(4))
        .apply(cas.operator());
    commit_at((op.clone(), "set"), 1, "a", 0).await.unwrap();
    cas.lose_next_answer("set/set.manifest");
    // Its own write moved the set to generation 2: seen as done, not as a conflict.
    let outcome = commit_at((op.clone(), "set"), 2, "b", 1).await.unwrap();
    assert_eq!(outcome.generation, 2);
    let set = Atlas::open((op.clone(), "set"), &OpenOptions::default())
        .await
        .unwrap();
    assert_eq!(set.generation(), Some(2));
    assert_eq!(set.dataset_names().await.unwrap(), ["a", "b"]);
}
