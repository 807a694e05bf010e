//! A compaction racing other writers: a delete or an append that lands while
//! the compaction copies its run does not make it give up, and it leaves
//! every change of theirs in place.

#![cfg(test)]

use std::collections::BTreeMap;
use std::time::Duration;

use atlas::{
    Atlas, AtlasError, CompactOptions, OpenOptions, Operator, Region, RetryPolicy, SetWriter,
    WriterConfig, member_id,
};
use atlas_io::CasMemory;

fn store() -> (CasMemory, Operator) {
    let cas = CasMemory::new();
    let ms = Duration::from_millis;
    let op = RetryPolicy::default()
        .backoff(ms(1), ms(2))
        .apply(cas.operator());
    (cas, op)
}

/// Commits member `n` holding `names`, each `TEMP` = `n`.
async fn append(op: &Operator, n: u64, names: &[&str]) {
    let ms = 1_700_000_000_000 + i64::try_from(n).unwrap();
    let config = WriterConfig::default().created_unix_ms(ms);
    let mut set = SetWriter::create((op.clone(), "set"), &config)
        .await
        .unwrap();
    let member = set.add_member(&member_id(ms, n)).await.unwrap();
    #[allow(clippy::cast_precision_loss)]
    let value = n as f32;
    for name in names {
        let mut ds = member.writer().add_dataset(name).unwrap();
        ds.define_array::<f32>("TEMP", &["N"], &[1], None, None)
            .unwrap();
        ds.write_array("TEMP", &[0], ndarray::arr1(&[value]).into_dyn().view())
            .unwrap();
        ds.finish().await.unwrap();
    }
    set.finish_member(member).await.unwrap();
    set.commit().await.unwrap();
}

async fn open(op: &Operator) -> Atlas {
    Atlas::open((op.clone(), "set"), &OpenOptions::default())
        .await
        .unwrap()
}

/// Every live name with its value, as a new reader sees them.
async fn contents(op: &Operator) -> BTreeMap<String, f32> {
    let set = open(op).await;
    let mut out = BTreeMap::new();
    for name in set.dataset_names().await.unwrap() {
        let values = set
            .dataset(&name)
            .await
            .unwrap()
            .read_array::<f32>("TEMP", Region::all())
            .await
            .unwrap();
        let first = values.iter().copied().next().unwrap();
        assert!(
            out.insert(name.to_string(), first).is_none(),
            "{name} twice"
        );
    }
    out
}

fn model(entries: &[(&str, f32)]) -> BTreeMap<String, f32> {
    entries.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

/// The compaction copies its run, then stops at its first `retired` mark
/// (just before its commit) while another process deletes `a1` (one
/// member's mask) and appends a member; then it goes on.
#[tokio::test]
async fn a_compaction_overtaken_by_a_delete_in_its_run_and_an_append_lands_without_the_deleted_name()
 {
    let (cas, op) = store();
    append(&op, 1, &["a1", "a2"]).await;
    append(&op, 2, &["b1"]).await;
    append(&op, 3, &["c1", "c2"]).await;
    let set = open(&op).await;
    let options = CompactOptions::default().ids(1_800_000_000_000, 9);
    let mut held = cas.hold_next_write("retired");
    let compaction = set.compact(&options);
    let others = async {
        assert!(held.reached().await, "the compaction reaches its commit");
        let other = open(&op).await;
        let deleted = other.delete_datasets(&["a1"]).await.unwrap();
        assert_eq!(deleted.deleted, 1);
        append(&op, 4, &["d1"]).await;
        held.release();
    };
    let (compacted, ()) = tokio::join!(compaction, others);
    let outcome = compacted
        .expect("a compaction overtaken by a delete in its run lands")
        .expect("three small members are worth compacting");
    assert_eq!(outcome.replaced.len(), 3);
    assert_eq!(outcome.datasets, 5, "it copied the run as it read it");
    assert_eq!(outcome.rebases, 1, "one delete folded in");
    assert_eq!(
        contents(&op).await,
        model(&[
            ("a2", 1.0),
            ("b1", 2.0),
            ("c1", 3.0),
            ("c2", 3.0),
            ("d1", 4.0)
        ]),
        "the delete stays, the append stays, nothing else changes"
    );
    let after = open(&op).await;
    assert_eq!(after.members().len(), 2, "the new member, then the append");
}

/// A compaction whose run another compaction replaced meanwhile gives up
/// with a conflict, leaving the set as the winner made it.
#[tokio::test]
async fn a_compaction_whose_run_another_compaction_replaced_is_a_conflict_and_changes_nothing() {
    let (cas, op) = store();
    append(&op, 1, &["a1", "a2"]).await;
    append(&op, 2, &["b1"]).await;
    let set = open(&op).await;
    let mut held = cas.hold_next_write("retired");
    let options = CompactOptions::default().ids(1_800_000_000_000, 9);
    let first = set.compact(&options);
    let second = async {
        assert!(held.reached().await);
        let other = open(&op).await;
        other
            .compact(&CompactOptions::default().ids(1_800_000_000_001, 9))
            .await
            .unwrap()
            .expect("the second compaction lands");
        held.release();
    };
    let (first, ()) = tokio::join!(first, second);
    assert!(
        matches!(first, Err(AtlasError::CommitConflict { .. })),
        "{first:?}"
    );
    assert_eq!(
        contents(&op).await,
        model(&[("a1", 1.0), ("a2", 1.0), ("b1", 2.0)])
    );
    assert_eq!(open(&op).await.members().len(), 1);
}

/// A delete that has written its mask when a compaction of that member
/// commits (the compaction copied the name before the mask hid it) is not
/// lost: the delete is made again in the set as the compaction left it, and
/// reported done.
#[tokio::test]
async fn a_delete_whose_member_a_compaction_replaced_before_its_commit_is_made_again_and_lands() {
    let (cas, op) = store();
    append(&op, 1, &["a1", "a2"]).await;
    append(&op, 2, &["b1"]).await;
    let compactor = open(&op).await;
    let deleter = open(&op).await;
    let mut compaction_held = cas.hold_next_write("retired");
    let options = CompactOptions::default().ids(1_800_000_000_000, 9);
    let compaction = async {
        let outcome = compactor.compact(&options).await;
        outcome.map(|o| o.map(|o| o.replaced.len()))
    };
    let delete = async {
        // The compaction has copied a1; now the delete writes a1's mask and
        // is held at its manifest commit while the compaction commits.
        assert!(compaction_held.reached().await);
        let mut delete_held = cas.hold_next_write("set.manifest");
        let delete = deleter.delete_datasets(&["a1"]);
        let order = async {
            assert!(delete_held.reached().await, "the delete reaches its commit");
            compaction_held.release();
            // The compaction's own manifest write lands while ours waits.
            for _ in 0..200 {
                if open(&op).await.members().len() == 1 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            delete_held.release();
        };
        let (deleted, ()) = tokio::join!(delete, order);
        deleted
    };
    let (compacted, deleted) = tokio::join!(compaction, delete);
    assert_eq!(compacted.unwrap(), Some(2), "the compaction lands first");
    let deleted = deleted.expect("the delete lands in the compacted set");
    assert_eq!(deleted.deleted, 1);
    assert_eq!(
        contents(&op).await,
        model(&[("a2", 1.0), ("b1", 2.0)]),
        "a1 stays deleted"
    );
}

/// The same race, the other way round: the delete's mask already hides `a1`
/// when the compaction reads its run, so the compaction leaves `a1` out and
/// commits before the delete does. Made again, the delete finds `a1` in no
/// member: it is gone, and the delete is reported done, not `DatasetNotFound`
/// (the simulation with reordered requests found this).
#[tokio::test]
async fn a_delete_whose_name_a_compaction_left_out_before_its_commit_is_reported_done() {
    let (cas, op) = store();
    append(&op, 1, &["a1", "a2"]).await;
    append(&op, 2, &["b1"]).await;
    let deleter = open(&op).await;
    let mut delete_held = cas.hold_next_write("set.manifest");
    let delete = deleter.delete_datasets(&["a1"]);
    let compaction = async {
        assert!(delete_held.reached().await, "the delete's mask is written");
        let outcome = open(&op)
            .await
            .compact(&CompactOptions::default().ids(1_800_000_000_000, 9))
            .await
            .unwrap()
            .expect("two small members");
        delete_held.release();
        outcome
    };
    let (deleted, compacted) = tokio::join!(delete, compaction);
    assert_eq!(compacted.datasets, 2, "a1 was hidden when the run was read");
    let deleted = deleted.expect("the delete is done: a1 is gone");
    assert_eq!(deleted.deleted, 1);
    assert_eq!(contents(&op).await, model(&[("a2", 1.0), ("b1", 2.0)]));
}

/// A delete of the last live name of a run writes its mask, then a
/// compaction opens (it sees every dataset of the run deleted, so it drops
/// the run) and stops before its commit while the delete commits its mask
/// count; then the compaction goes on. The delete only deleted more of what
/// the compaction drops: it lands, and the run is gone.
#[tokio::test]
async fn a_compaction_dropping_a_run_whose_mask_a_delete_committed_meanwhile_lands() {
    let (cas, op) = store();
    append(&op, 1, &["a1", "a2"]).await;
    append(&op, 2, &["b1"]).await;
    append(&op, 3, &["c1"]).await;
    for name in ["a1", "b1", "c1"] {
        open(&op).await.delete_datasets(&[name]).await.unwrap();
    }
    let mut delete_commit = cas.hold_next_write("set.manifest");
    let deleting = async { open(&op).await.delete_datasets(&["a2"]).await };
    let compacting = async {
        assert!(
            delete_commit.reached().await,
            "the delete wrote its mask and reached its commit"
        );
        let mut compaction_commit = cas.hold_next_write("retired");
        let set = open(&op).await;
        let options = CompactOptions::default().ids(1_800_000_000_000, 9);
        let compaction = set.compact(&options);
        let go_on = async {
            assert!(
                compaction_commit.reached().await,
                "the compaction reaches its commit"
            );
            delete_commit.release();
            // The delete's commit lands before the compaction's.
            tokio::time::sleep(Duration::from_millis(50)).await;
            compaction_commit.release();
        };
        tokio::join!(compaction, go_on).0
    };
    let (deleted, compacted) = tokio::join!(deleting, compacting);
    assert_eq!(deleted.expect("the delete lands").deleted, 1);
    let outcome = compacted
        .expect("a compaction dropping a run lands over deletes in it")
        .expect("a run of deleted datasets is worth dropping");
    assert_eq!(outcome.datasets, 0);
    assert!(contents(&op).await.is_empty());
    assert!(open(&op).await.members().is_empty(), "the run left the set");
}
