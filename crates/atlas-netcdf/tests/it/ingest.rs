//! `ingest`: reproducible ordinals, thread-count independence, and what
//! happens to corrupt files, duplicate names, unsupported types and empty inputs.

#![cfg(test)]

use crate::common;

use std::collections::BTreeMap;

use atlas::{Atlas, Region};
use atlas_netcdf::{
    Decode, FileError, IngestError, IngestOptions, SkipReason, TimeError, discover,
};
use common::{copy_into, data, dump, good_files, ingest_into};

#[tokio::test]
async fn creating_twice_from_the_same_inputs_gives_the_same_collection() {
    for decode in [Decode::Cf, Decode::Raw] {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        let options = IngestOptions::default().with_decode(decode);
        ingest_into(&[data().join("good")], &a, &options)
            .await
            .unwrap();
        ingest_into(&[data().join("good")], &b, &options)
            .await
            .unwrap();
        let (da, db) = (dump(&a).await, dump(&b).await);
        assert_eq!(da, db, "{decode:?}");
        let names: Vec<&str> = da["datasets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "cf_extras.nc",
                "classic.nc",
                "nc4.nc4",
                "nc4classic.nc",
                "offset64.nc"
            ]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_thread_and_four_threads_build_the_same_collection() {
    let tmp = tempfile::tempdir().unwrap();
    // Enough files that four threads really overlap: each good file four times over.
    let inputs = tmp.path().join("in");
    for i in 0..4 {
        let sub = inputs.join(format!("set{i}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in good_files() {
            let name = format!("{i}_{}", f.file_name().unwrap().to_string_lossy());
            std::fs::copy(&f, sub.join(name)).unwrap();
        }
    }
    let (one, four) = (tmp.path().join("one"), tmp.path().join("four"));
    let r1 = ingest_into(
        std::slice::from_ref(&inputs),
        &one,
        &IngestOptions::default().with_jobs(1),
    )
    .await
    .unwrap();
    let r4 = ingest_into(&[inputs], &four, &IngestOptions::default().with_jobs(4))
        .await
        .unwrap();
    assert_eq!(r1.written, r4.written);
    assert_eq!(r1.written.len(), 20);
    assert_eq!(dump(&one).await, dump(&four).await);
}

#[tokio::test]
async fn a_corrupt_file_stops_the_ingest_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = tmp.path().join("in");
    std::fs::create_dir(&inputs).unwrap();
    copy_into(&inputs, &good_files());
    copy_into(&inputs, &[data().join("bad/corrupt.nc")]);
    let dest = tmp.path().join("out");
    let err = ingest_into(&[inputs], &dest, &IngestOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, IngestError::File { path, source: FileError::Read(_) } if path.ends_with("corrupt.nc")),
        "{err:?}"
    );
    assert!(!dest.join(atlas::CONTAINER_FILE).exists());
}

#[tokio::test]
async fn skip_errors_leaves_out_a_corrupt_file_and_keeps_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = tmp.path().join("in");
    std::fs::create_dir(&inputs).unwrap();
    copy_into(&inputs, &good_files());
    copy_into(&inputs, &[data().join("bad/corrupt.nc")]);
    let dest = tmp.path().join("out");
    let report = ingest_into(
        &[inputs],
        &dest,
        &IngestOptions::default().with_skip_errors(true),
    )
    .await
    .unwrap();
    assert_eq!(report.written.len(), 5);
    assert_eq!(report.skipped_files.len(), 1);
    let skipped = &report.skipped_files[0];
    assert!(skipped.path.ends_with("corrupt.nc"));
    assert!(matches!(
        skipped.reason,
        SkipReason::Failed(FileError::Read(_))
    ));
    let atlas = Atlas::open(&dest, &atlas::OpenOptions::default())
        .await
        .unwrap();
    assert_eq!(
        atlas.dataset_names().await.unwrap(),
        [
            "cf_extras.nc",
            "classic.nc",
            "nc4.nc4",
            "nc4classic.nc",
            "offset64.nc"
        ]
    );
}

#[tokio::test]
async fn two_files_of_one_name_are_both_reported_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("out");
    let err = ingest_into(&[data().join("bad/dup")], &dest, &IngestOptions::default())
        .await
        .unwrap_err();
    match err {
        IngestError::DuplicateName { name, paths } => {
            assert_eq!(name, "same.nc");
            assert_eq!(paths.len(), 2);
            assert!(paths[0].ends_with("a/same.nc") && paths[1].ends_with("b/same.nc"));
        }
        other => panic!("expected DuplicateName, got {other:?}"),
    }
    assert!(!dest.join(atlas::CONTAINER_FILE).exists());
}

#[tokio::test]
async fn skip_errors_skips_every_file_of_a_duplicated_name() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("out");
    let sources = [data().join("bad/dup"), data().join("good/classic.nc")];
    let report = ingest_into(
        &sources,
        &dest,
        &IngestOptions::default().with_skip_errors(true),
    )
    .await
    .unwrap();
    assert_eq!(report.written.len(), 1);
    assert_eq!(report.skipped_files.len(), 2);
    for s in &report.skipped_files {
        assert!(
            matches!(&s.reason, SkipReason::DuplicateName { name, others } if name == "same.nc" && others.len() == 1)
        );
    }
}

#[tokio::test]
async fn an_unsupported_type_fails_its_file_unless_it_is_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let source = [data().join("bad/compound.nc")];
    let err = ingest_into(&source, &tmp.path().join("a"), &IngestOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, IngestError::File { source: FileError::Unsupported { variable, dtype }, .. } if variable == "pairs" && dtype == "compound"),
        "{err:?}"
    );

    let dest = tmp.path().join("b");
    let report = ingest_into(
        &source,
        &dest,
        &IngestOptions::default().with_skip_unsupported(true),
    )
    .await
    .unwrap();
    assert_eq!(report.skipped_variables.len(), 1);
    assert_eq!(report.skipped_variables[0].variable, "pairs");
    let atlas = Atlas::open(&dest, &atlas::OpenOptions::default())
        .await
        .unwrap();
    let view = atlas.dataset("compound.nc").await.unwrap();
    assert!(view.array_meta("ok").is_some());
    assert!(view.array_meta("pairs").is_none());
}

#[tokio::test]
async fn an_empty_directory_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    std::fs::write(empty.join("notes.txt"), "not NetCDF").unwrap();
    let err = discover(&[empty], true).unwrap_err();
    assert!(matches!(err, IngestError::NoInputs { .. }), "{err:?}");
}

#[tokio::test]
async fn a_calendar_timestamp_ns_cannot_hold_leaves_that_variable_undecoded_and_names_it() {
    let tmp = tempfile::tempdir().unwrap();
    let source = [data().join("bad/noleap.nc")];
    let report = ingest_into(&source, &tmp.path().join("cf"), &IngestOptions::default())
        .await
        .unwrap();
    assert_eq!(report.written.len(), 1);
    let undecoded: Vec<(&str, &str, &TimeError)> = report
        .undecoded
        .iter()
        .map(|u| (u.dataset.as_str(), u.variable.as_str(), &u.reason))
        .collect();
    assert_eq!(
        undecoded,
        [(
            "noleap.nc",
            "time",
            &TimeError::Calendar {
                calendar: "noleap".into()
            }
        )]
    );
    // The variable holds what --decode raw stores.
    let raw = IngestOptions::default().with_decode(Decode::Raw);
    ingest_into(&source, &tmp.path().join("raw"), &raw)
        .await
        .unwrap();
    let array = |doc: &serde_json::Value| {
        doc["datasets"][0]["arrays"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == "time")
            .cloned()
            .expect("time")
    };
    let cf = dump(&tmp.path().join("cf")).await;
    let raw = dump(&tmp.path().join("raw")).await;
    assert_eq!(array(&cf), array(&raw));
}

#[tokio::test]
async fn a_file_name_atlas_refuses_is_reported_not_renamed() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = tmp.path().join("in");
    std::fs::create_dir(&inputs).unwrap();
    std::fs::copy(data().join("good/classic.nc"), inputs.join("_hidden.nc")).unwrap();
    let err = ingest_into(
        &[inputs],
        &tmp.path().join("out"),
        &IngestOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, IngestError::InvalidDatasetName { .. }),
        "{err:?}"
    );
}

#[tokio::test]
async fn chunks_set_the_stored_chunk_shape_of_the_named_variable() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("out");
    let chunks = BTreeMap::from([("temp".to_owned(), vec![2u64])]);
    ingest_into(
        &[data().join("good/classic.nc")],
        &dest,
        &IngestOptions::default().with_chunks(chunks),
    )
    .await
    .unwrap();
    let atlas = Atlas::open(&dest, &atlas::OpenOptions::default())
        .await
        .unwrap();
    let view = atlas.dataset("classic.nc").await.unwrap();
    assert_eq!(view.array_layout("temp").await.unwrap().chunk_shape, [2]);
    assert_eq!(view.array_layout("time").await.unwrap().chunk_shape, [4]);
}

#[tokio::test]
async fn a_bool_variable_atlas_python_cannot_store_becomes_uint8_with_a_note() {
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("out");
    let report = ingest_into(&[data().join("cf_only")], &dest, &IngestOptions::default())
        .await
        .unwrap();
    assert_eq!(report.notes.len(), 1);
    assert!(report.notes[0].contains("is_valid") && report.notes[0].contains("uint8"));
    let atlas = Atlas::open(&dest, &atlas::OpenOptions::default())
        .await
        .unwrap();
    let view = atlas.dataset("bool.nc").await.unwrap();
    let values = view
        .read_array::<u8>("is_valid", Region::all())
        .await
        .unwrap();
    assert_eq!(values.iter().copied().collect::<Vec<_>>(), [1, 0, 1]);
    assert!(
        view.array_attribute("is_valid", "dtype")
            .await
            .unwrap()
            .is_none()
    );
}
