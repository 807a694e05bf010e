//! `Feed`: stored forms handed over in memory build what `ingest` builds
//! from the files, and bad data is refused with typed errors before anything
//! is committed.

#![cfg(test)]

use crate::common;

use atlas::{ArrayData, AtlasWriter, WriterConfig};
use atlas_netcdf::{
    Feed, FileError, IngestError, IngestOptions, StoredData, StoredFile, StoredGroup, StoredVar,
    read_stored, shaped,
};
use common::{dump, good_files, ingest_into};

async fn feed_into(
    dir: &std::path::Path,
    items: &[(String, StoredFile)],
    options: IngestOptions,
) -> Result<atlas_netcdf::FeedReport, IngestError> {
    let writer = AtlasWriter::create(dir, &WriterConfig::default())
        .await
        .expect("writer");
    let mut feed = Feed::new(writer, options);
    for (name, stored) in items {
        feed.add(name, stored).await?;
    }
    feed.finish().await
}

fn named_stored_forms() -> Vec<(String, StoredFile)> {
    good_files()
        .iter()
        .map(|f| {
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            (name, read_stored(f).expect("read"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feed_of_the_files_stored_forms_builds_what_ingest_builds() {
    let tmp = tempfile::tempdir().unwrap();
    for options in [
        IngestOptions::default(),
        IngestOptions::default().with_decode(atlas_netcdf::Decode::Raw),
    ] {
        let ingested = tmp.path().join(format!("ingest-{:?}", options.decode));
        ingest_into(&[common::data().join("good")], &ingested, &options)
            .await
            .unwrap();
        let fed = tmp.path().join(format!("feed-{:?}", options.decode));
        let report = feed_into(&fed, &named_stored_forms(), options.with_jobs(2))
            .await
            .unwrap();
        let names: Vec<String> = named_stored_forms().into_iter().map(|(n, _)| n).collect();
        assert_eq!(report.written, names);
        assert_eq!(dump(&fed).await, dump(&ingested).await);
    }
}

fn one_var(data: StoredData, shape: Vec<u64>) -> StoredFile {
    StoredFile {
        groups: vec![StoredGroup {
            vars: vec![StoredVar {
                name: "T".into(),
                dims: shape.iter().map(|_| "n".to_owned()).collect(),
                shape,
                attrs: Vec::new(),
                data,
            }],
            ..StoredGroup::default()
        }],
    }
}

#[tokio::test]
async fn values_that_do_not_fill_their_shape_are_a_dataset_error_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let good = one_var(
        StoredData::Num(ArrayData::Float64(shaped(vec![1.0, 2.0], &[2]))),
        vec![2],
    );
    let bad = one_var(
        StoredData::Num(ArrayData::Float64(shaped(vec![1.0], &[2]))),
        vec![2],
    );
    let items = vec![("a".to_owned(), good), ("b".to_owned(), bad)];
    let err = feed_into(tmp.path(), &items, IngestOptions::default())
        .await
        .unwrap_err();
    match err {
        IngestError::Dataset {
            name,
            source: FileError::Shape { variable, .. },
        } => assert_eq!((name.as_str(), variable.as_str()), ("b", "T")),
        other => panic!("expected a shape error for b, got {other:?}"),
    }
    assert!(!tmp.path().join("data.atlas").exists());
}

#[tokio::test]
async fn an_unsupported_variable_fails_its_dataset_unless_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let odd = one_var(StoredData::Unsupported("complex128".into()), vec![2]);
    let items = vec![("a".to_owned(), odd)];
    let err = feed_into(&tmp.path().join("x"), &items, IngestOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            IngestError::Dataset {
                source: FileError::Unsupported { .. },
                ..
            }
        ),
        "{err:?}"
    );
    let report = feed_into(
        &tmp.path().join("y"),
        &items,
        IngestOptions::default().with_skip_unsupported(true),
    )
    .await
    .unwrap();
    assert_eq!(report.skipped_variables.len(), 1);
    assert_eq!(report.skipped_variables[0].dtype, "complex128");
}

#[tokio::test]
async fn a_dataset_name_the_writer_refuses_is_a_dataset_error() {
    let tmp = tempfile::tempdir().unwrap();
    let file = one_var(
        StoredData::Num(ArrayData::Int8(shaped(vec![1], &[1]))),
        vec![1],
    );
    let items = vec![("a".to_owned(), file.clone()), ("a".to_owned(), file)];
    let err = feed_into(tmp.path(), &items, IngestOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            IngestError::Dataset {
                source: FileError::Write(atlas::AtlasError::DatasetAlreadyExists { .. }),
                ..
            }
        ),
        "{err:?}"
    );
}
