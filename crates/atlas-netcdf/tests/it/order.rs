//! The key pass of a sorted ingest (`order_files`): files in the order of
//! their key values as the ingest maps them, and keys it cannot use refused
//! by name, before anything is written.

#![cfg(test)]

use crate::common;

use std::path::{Path, PathBuf};

use atlas::{ArrayData, SortKey};
use atlas_netcdf::{IngestError, IngestOptions, discover, map_file, order_files};
use common::data;

/// The Argo-like profiles (one profile each), in path order.
fn profiles() -> Vec<PathBuf> {
    discover(&[data().join("argo")], true).unwrap()
}

/// The file's one value of `key` as the CF mapping stores it.
fn value(path: &Path, key: &str) -> f64 {
    let mapped = map_file(path, &IngestOptions::default()).unwrap();
    let array = mapped
        .dataset
        .arrays
        .iter()
        .find(|a| a.name == key)
        .unwrap();
    match &array.values {
        ArrayData::Timestamp(t) => t.iter().next().unwrap().0 as f64,
        ArrayData::Float64(x) => *x.iter().next().unwrap(),
        ArrayData::Float32(x) => f64::from(*x.iter().next().unwrap()),
        other => panic!("{key} is {other:?}"),
    }
}

#[tokio::test]
async fn files_come_in_the_order_of_their_mapped_key_values_whatever_their_paths() {
    let files = profiles();
    let mut expected = files.clone();
    expected.sort_by(|a, b| value(a, "LONGITUDE").total_cmp(&value(b, "LONGITUDE")));
    assert_ne!(expected, files, "the test needs keys out of path order");
    let keys = SortKey::parse_list("LONGITUDE").unwrap();
    for jobs in [1, 3] {
        let mut given = files.clone();
        given.reverse();
        let ordered = order_files(&given, &keys, &IngestOptions::default().with_jobs(jobs))
            .await
            .unwrap();
        assert_eq!(ordered.files, expected, "-j {jobs}");
        assert_eq!(ordered.unread, 0);
        assert!(ordered.bytes_read > 0);
    }
    // A curve over the position: every file once.
    let keys = SortKey::parse_list("hilbert:LATITUDE:LONGITUDE:JULD").unwrap();
    let mut curve = order_files(&files, &keys, &IngestOptions::default())
        .await
        .unwrap()
        .files;
    curve.sort();
    assert_eq!(curve, files);
}

#[tokio::test]
async fn a_key_no_file_holds_or_one_with_many_values_in_a_file_is_named() {
    let files = profiles();
    let unknown = order_files(
        &files,
        &SortKey::parse_list("JULD,NOT_THERE").unwrap(),
        &IngestOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&unknown, IngestError::UnknownSortKey { key } if key == "NOT_THERE"),
        "{unknown:?}"
    );
    // PRES holds one value per level.
    let many = order_files(
        &files,
        &SortKey::parse_list("PRES").unwrap(),
        &IngestOptions::default(),
    )
    .await
    .unwrap_err();
    match &many {
        IngestError::SortKeyNotScalar { key, path, values } => {
            assert_eq!(key, "PRES");
            assert_eq!(path, &files[0]);
            assert!(*values > 1);
        }
        other => panic!("{other:?}"),
    }
}
