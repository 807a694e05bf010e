//! `Atlas` is the one read handle: a lone collection is a set of one member,
//! so a set whose only member holds a conformance fixture answers every
//! question as the fixture opened on its own does.

#![cfg(test)]

use crate::read_support;

use std::path::Path;

use atlas::{Atlas, CatalogueOptions, OpenOptions, Predicate, RecordBatch, Region, SetWriter};
use read_support::{FIXTURES, fixture_dir};

/// A predicate that is valid for `fixture` and selects some of its datasets,
/// if the fixture has one (`empty` declares no name to ask about).
fn predicate_for(fixture: &str) -> Option<&'static str> {
    match fixture {
        "small" => Some("month >= 2 and source = 'buoy'"),
        "deleted" => Some("idx between 1 7"),
        "mixed" => Some("exists value"),
        _ => None,
    }
}

/// Copies the fixture's files (container and mask) into `dir`.
fn copy_fixture(name: &str, dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for file in ["data.atlas", "deleted.mask"] {
        let from = fixture_dir(name).join(file);
        if from.exists() {
            std::fs::copy(&from, dir.join(file)).unwrap();
        }
    }
}

/// The catalogue without the set's `member` column, which a lone collection lacks.
fn without_member(batch: RecordBatch) -> RecordBatch {
    let mut batch = batch;
    let at = batch
        .schema()
        .index_of("member")
        .expect("a set's catalogue has a member column");
    batch.remove_column(at);
    batch
}

/// Debug text: values compare as printed, so a NaN equals itself.
fn text<T: std::fmt::Debug>(value: &T) -> String {
    format!("{value:?}")
}

async fn names(atlas: &Atlas) -> Vec<atlas::SmolStr> {
    atlas.dataset_names().await.unwrap()
}

#[tokio::test]
async fn a_set_of_one_member_answers_as_its_lone_collection() {
    for fixture in FIXTURES {
        let tmp = tempfile::tempdir().unwrap();
        let lone_dir = tmp.path().join("lone");
        copy_fixture(fixture, &lone_dir);
        let set_dir = tmp.path().join("set");
        let id = atlas::member_id(1_700_000_000_000, 1);
        copy_fixture(fixture, &set_dir.join("members").join(&id));
        let mut writer = SetWriter::create(&set_dir, &atlas::WriterConfig::default())
            .await
            .unwrap();
        writer.adopt_member(&id).await.unwrap();
        writer.commit().await.unwrap();

        let lone = Atlas::open(&lone_dir, &OpenOptions::default())
            .await
            .unwrap();
        let set = Atlas::open(&set_dir, &OpenOptions::default())
            .await
            .unwrap();
        assert!(!lone.is_set(), "{fixture}");
        assert!(set.is_set(), "{fixture}");

        // Names and counts.
        let lone_names = names(&lone).await;
        assert_eq!(names(&set).await, lone_names, "{fixture}: names");
        assert_eq!(
            set.dataset_count().await.unwrap(),
            lone.dataset_count().await.unwrap(),
            "{fixture}: count"
        );
        assert_eq!(
            set.array_names().await.unwrap(),
            lone.array_names().await.unwrap(),
            "{fixture}: array names"
        );

        // Every array of every dataset, read whole.
        for name in &lone_names {
            let (a, b) = (
                lone.dataset(name).await.unwrap(),
                set.dataset(name).await.unwrap(),
            );
            assert_eq!(a.ordinal(), b.ordinal(), "{fixture}/{name}");
            let arrays: Vec<String> = a.schema().arrays().map(|m| m.name().to_owned()).collect();
            let set_arrays: Vec<String> =
                b.schema().arrays().map(|m| m.name().to_owned()).collect();
            assert_eq!(set_arrays, arrays, "{fixture}/{name}: arrays");
            for array in &arrays {
                let from_lone = a.read_any(array, Region::all()).await.unwrap();
                let from_set = b.read_any(array, Region::all()).await.unwrap();
                assert_eq!(
                    text(&from_set),
                    text(&from_lone),
                    "{fixture}/{name}/{array}: values"
                );
            }
        }

        // The statistics of every array.
        for array in lone.array_names().await.unwrap() {
            assert_eq!(
                text(&set.array_stats(&array).await.unwrap()),
                text(&lone.array_stats(&array).await.unwrap()),
                "{fixture}/{array}: stats"
            );
        }

        // The catalogue, but for the set's member column.
        let lone_catalogue = lone.catalogue(&CatalogueOptions::default()).await.unwrap();
        let set_catalogue = set.catalogue(&CatalogueOptions::default()).await.unwrap();
        assert_eq!(
            text(&without_member(set_catalogue)),
            text(&lone_catalogue),
            "{fixture}: catalogue"
        );

        // A query the fixture can answer.
        if let Some(expr) = predicate_for(fixture) {
            let predicate = Predicate::parse(expr).unwrap();
            let selected = lone.select(&predicate).await.unwrap();
            assert!(!selected.is_empty(), "{fixture}: {expr} selects some");
            assert_eq!(
                set.select(&predicate).await.unwrap(),
                selected,
                "{fixture}: select {expr}"
            );
        }

        // A delete through each handle hides the same dataset.
        if let Some(first) = lone_names.first() {
            let lone_outcome = lone.delete_datasets(&[first.as_str()]).await.unwrap();
            let set_outcome = set.delete_datasets(&[first.as_str()]).await.unwrap();
            assert_eq!(set_outcome.deleted, lone_outcome.deleted, "{fixture}");
            assert_eq!(lone_outcome.deleted, 1, "{fixture}");
            let after = names(&lone).await;
            assert!(!after.contains(first), "{fixture}");
            assert_eq!(names(&set).await, after, "{fixture}: names after delete");
            // And as a fresh open of each sees it.
            let (lone, set) = (
                Atlas::open(&lone_dir, &OpenOptions::default())
                    .await
                    .unwrap(),
                Atlas::open(&set_dir, &OpenOptions::default())
                    .await
                    .unwrap(),
            );
            assert_eq!(names(&lone).await, after, "{fixture}: reopened lone");
            assert_eq!(names(&set).await, after, "{fixture}: reopened set");
        }
    }
}
