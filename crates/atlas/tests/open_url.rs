//! `Atlas::open_url` and `AtlasWriter::create_url`: one location string, any backend.

use atlas::{Access, Atlas, AtlasError, AtlasWriter, IoErrorKind, StorageOptions, WriterConfig};
use ndarray::arr1;

async fn write_two(location: &str, storage: &StorageOptions) {
    let writer = AtlasWriter::create(location, &WriterConfig::default().storage(storage.clone()))
        .await
        .unwrap();
    for (i, name) in ["a.nc", "b.nc"].into_iter().enumerate() {
        let mut ds = writer.add_dataset(name).unwrap();
        ds.define_array::<f32>("TEMP", &["N"], &[2], None, None)
            .unwrap();
        ds.write_array("TEMP", &[0], arr1(&[i as f32, 1.5]).into_dyn().view())
            .unwrap();
        ds.finish().await.unwrap();
    }
    writer.finish().await.unwrap();
}

#[tokio::test]
async fn a_file_url_round_trips_and_a_missing_directory_is_created_for_writing_only() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("new/collection");
    let url = format!("file://{}", dir.display());
    let storage = StorageOptions::default();

    let err = Atlas::open(
        &url,
        &atlas::OpenOptions::default().storage(storage.clone()),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&err, AtlasError::Io(io) if io.kind() == IoErrorKind::NotFound),
        "{err}"
    );
    assert!(!dir.exists(), "a read must not create the directory");

    write_two(&url, &storage).await;
    // The same collection by bare path and by URL.
    for location in [url.clone(), dir.display().to_string()] {
        let atlas = Atlas::open(
            &location,
            &atlas::OpenOptions::default().storage(storage.clone()),
        )
        .await
        .unwrap();
        assert_eq!(atlas.dataset_names(), ["a.nc", "b.nc"]);
    }
    // A local collection opened by URL deletes like one opened by path.
    let atlas = Atlas::open(
        &url,
        &atlas::OpenOptions::default().storage(storage.clone()),
    )
    .await
    .unwrap();
    atlas.delete_datasets(&["a.nc"]).await.unwrap();
    let reopened = Atlas::open(
        &url,
        &atlas::OpenOptions::default().storage(storage.clone()),
    )
    .await
    .unwrap();
    assert_eq!(reopened.dataset_names(), ["b.nc"]);
}

#[tokio::test]
async fn an_unknown_scheme_and_an_http_write_are_invalid_locations() {
    let storage = StorageOptions::default();
    let err = Atlas::open(
        "ftp://host/x",
        &atlas::OpenOptions::default().storage(storage.clone()),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, AtlasError::InvalidLocation { .. }), "{err}");
    let err = AtlasWriter::create(
        "https://127.0.0.1:1/x",
        &WriterConfig::default().storage(storage.clone()),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, AtlasError::InvalidLocation { .. }), "{err}");
    let loc = atlas::Location::resolve("https://127.0.0.1:1/x", &storage, Access::Read)
        .await
        .unwrap();
    assert_eq!(loc.scheme(), atlas::Scheme::Http);
}
