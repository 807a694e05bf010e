//! Deleting datasets: all or nothing, visible at once everywhere, persisted,
//! merged with what the mask on storage already holds.

#![cfg(test)]

use crate::read_support;

use atlas::{Atlas, AtlasError, WriteGuarantee};
use read_support::{counted_memory, fixture_dir, load_fixture, memory};

#[tokio::test]
async fn an_unknown_name_deletes_nothing() {
    let (op, stats, _) = counted_memory();
    load_fixture(&op, "small", "").await;
    let atlas = Atlas::open((op.clone(), ""), &atlas::OpenOptions::default())
        .await
        .unwrap();
    stats.reset();
    let err = atlas
        .delete_datasets(&["jan_2024", "nope"])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AtlasError::DatasetNotFound { name } if name == "nope"),
        "{err}"
    );
    assert_eq!(stats.snapshot().requests(), 0, "refused before any request");
    assert_eq!(atlas.dataset_count().await.unwrap(), 3);
    assert!(!op.exists("deleted.mask").await.unwrap());
}

#[tokio::test]
async fn names_listed_before_a_delete_are_not_listed_after_it() {
    let op = memory();
    load_fixture(&op, "small", "").await;
    let atlas = Atlas::open((op.clone(), ""), &atlas::OpenOptions::default())
        .await
        .unwrap();
    let before = atlas.dataset_names().await.unwrap();
    assert_eq!(before, ["jan_2024", "feb_2024", "mar_2024"]);
    // The handle keeps the listing; a delete through it must replace it.
    atlas.delete_datasets(&["jan_2024"]).await.unwrap();
    assert_eq!(
        atlas.dataset_names().await.unwrap(),
        ["feb_2024", "mar_2024"]
    );
    atlas.delete_datasets(&["mar_2024"]).await.unwrap();
    assert_eq!(atlas.dataset_names().await.unwrap(), ["feb_2024"]);
}

#[tokio::test]
async fn a_deletion_applies_at_once_everywhere() {
    let op = memory();
    load_fixture(&op, "small", "").await;
    let atlas = Atlas::open((op.clone(), ""), &atlas::OpenOptions::default())
        .await
        .unwrap();
    // Open a segment first: the deletion must apply to it too.
    assert_eq!(
        atlas
            .array_stats_by_dataset("temperature")
            .await
            .unwrap()
            .len(),
        3
    );
    let outcome = atlas.delete_datasets(&["feb_2024"]).await.unwrap();
    assert_eq!(outcome.deleted, 1);
    assert_eq!(
        outcome.guarantee,
        WriteGuarantee::Conditional,
        "memory creates the mask if-not-exists"
    );

    assert_eq!(
        atlas.dataset_names().await.unwrap(),
        ["jan_2024", "mar_2024"]
    );
    assert_eq!(atlas.dataset_count().await.unwrap(), 2);
    let member = atlas.lone_member().unwrap();
    assert_eq!(member.dataset_count_total(), 3);
    assert_eq!(member.deleted_datasets(), ["feb_2024"]);
    assert!(!atlas.contains("feb_2024").await.unwrap());
    assert!(matches!(
        atlas.dataset("feb_2024").await,
        Err(AtlasError::DatasetNotFound { .. })
    ));
    assert_eq!(atlas.datasets().await.unwrap().len(), 2);
    let rows = atlas.array_stats_by_dataset("temperature").await.unwrap();
    assert_eq!(
        rows.iter().map(|r| r.dataset.as_str()).collect::<Vec<_>>(),
        ["jan_2024", "mar_2024"]
    );
    let folded = atlas.array_stats("temperature").await.unwrap().unwrap();
    assert_eq!(folded.row_count, 64);
    let months = atlas.attributes_by_dataset(None, "month").await.unwrap();
    assert_eq!(months.len(), 2);
    let doc = atlas_manifest::collection_json(&member, false)
        .await
        .unwrap();
    assert_eq!(doc["datasets"].as_array().unwrap().len(), 2);

    // Deleting it again is fine and changes nothing.
    let again = atlas.delete_datasets(&["feb_2024"]).await.unwrap();
    assert_eq!(again.deleted, 0);

    // A new handle reads the mask back.
    let reopened = Atlas::open((op, ""), &atlas::OpenOptions::default())
        .await
        .unwrap();
    assert_eq!(
        reopened.lone_member().unwrap().deleted_datasets(),
        ["feb_2024"]
    );
}

#[tokio::test]
async fn a_view_taken_before_the_deletion_stops_reading() {
    let op = memory();
    load_fixture(&op, "small", "").await;
    let atlas = Atlas::open((op, ""), &atlas::OpenOptions::default())
        .await
        .unwrap();
    let view = atlas.dataset("mar_2024").await.unwrap();
    atlas.delete_datasets(&["mar_2024"]).await.unwrap();
    let err = view
        .read_array::<f64>("lat", atlas::Region::all())
        .await
        .unwrap_err();
    assert!(matches!(err, AtlasError::DatasetNotFound { .. }), "{err}");
}

#[tokio::test]
async fn a_delete_merges_with_the_mask_on_storage() {
    let op = memory();
    load_fixture(&op, "deleted", "").await;
    let first = Atlas::open((op.clone(), ""), &atlas::OpenOptions::default())
        .await
        .unwrap();
    let second = Atlas::open((op.clone(), ""), &atlas::OpenOptions::default())
        .await
        .unwrap();
    assert_eq!(
        first.lone_member().unwrap().deleted_datasets(),
        ["d02", "d05", "d09"]
    );
    first.delete_datasets(&["d00", "d01"]).await.unwrap();
    // The second handle has not seen those; its delete keeps them.
    let outcome = second.delete_datasets(&["d08"]).await.unwrap();
    assert_eq!(outcome.deleted, 1);
    assert_eq!(
        second.lone_member().unwrap().deleted_datasets(),
        ["d00", "d01", "d02", "d05", "d08", "d09"],
        "the merged mask becomes this handle's view too"
    );
    let third = Atlas::open((op, ""), &atlas::OpenOptions::default())
        .await
        .unwrap();
    assert_eq!(
        third.lone_member().unwrap().deleted_datasets(),
        ["d00", "d01", "d02", "d05", "d08", "d09"]
    );
    assert_eq!(third.dataset_count().await.unwrap(), 4);
}

#[tokio::test]
async fn a_foreign_mask_on_storage_stops_a_delete() {
    let op = memory();
    load_fixture(&op, "small", "").await;
    let atlas = Atlas::open((op.clone(), ""), &atlas::OpenOptions::default())
        .await
        .unwrap();
    op.write("deleted.mask", b"this is not a mask".to_vec())
        .await
        .unwrap();
    let err = atlas.delete_datasets(&["jan_2024"]).await.unwrap_err();
    assert!(matches!(err, AtlasError::CorruptMask { .. }), "{err}");
    assert_eq!(atlas.dataset_count().await.unwrap(), 3, "nothing hidden");
    assert_eq!(
        op.read("deleted.mask").await.unwrap().to_vec(),
        b"this is not a mask"
    );
}

#[tokio::test]
async fn a_local_collection_deletes_through_an_atomic_locked_write() {
    let dir = tempfile::tempdir().unwrap();
    for file in ["data.atlas", "deleted.mask"] {
        std::fs::copy(fixture_dir("deleted").join(file), dir.path().join(file)).unwrap();
    }
    let atlas = Atlas::open(dir.path(), &atlas::OpenOptions::default())
        .await
        .unwrap();
    let outcome = atlas.delete_datasets(&["d00", "d03"]).await.unwrap();
    assert_eq!(outcome.deleted, 2);
    assert_eq!(outcome.guarantee, WriteGuarantee::Locked);
    assert!(dir.path().join("deleted.mask.lock").exists());
    let reopened = Atlas::open(dir.path(), &atlas::OpenOptions::default())
        .await
        .unwrap();
    assert_eq!(
        reopened.lone_member().unwrap().deleted_datasets(),
        ["d00", "d02", "d03", "d05", "d09"]
    );
    let mask = std::fs::read(dir.path().join("deleted.mask")).unwrap();
    assert_eq!(&mask[..4], b"ATLM");
}

#[tokio::test]
async fn an_empty_batch_costs_nothing() {
    let (op, stats, _) = counted_memory();
    load_fixture(&op, "small", "").await;
    let atlas = Atlas::open((op, ""), &atlas::OpenOptions::default())
        .await
        .unwrap();
    stats.reset();
    let outcome = atlas.delete_datasets(&[]).await.unwrap();
    assert_eq!(outcome.deleted, 0);
    assert_eq!(stats.snapshot().requests(), 0);
}

#[tokio::test]
async fn concurrent_deletes_through_one_handle_lose_nothing() {
    let op = memory();
    load_fixture(&op, "deleted", "").await;
    let atlas = std::sync::Arc::new(
        Atlas::open((op.clone(), ""), &atlas::OpenOptions::default())
            .await
            .unwrap(),
    );
    let tasks: Vec<_> = ["d00", "d01", "d03", "d04"]
        .into_iter()
        .map(|name| {
            let atlas = atlas.clone();
            tokio::spawn(async move { atlas.delete_datasets(&[name]).await.unwrap() })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap().deleted, 1);
    }
    let reopened = Atlas::open((op, ""), &atlas::OpenOptions::default())
        .await
        .unwrap();
    assert_eq!(
        reopened.lone_member().unwrap().deleted_datasets(),
        ["d00", "d01", "d02", "d03", "d04", "d05", "d09"]
    );
}
