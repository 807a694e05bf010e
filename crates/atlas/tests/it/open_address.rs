//! `Atlas::open` and `AtlasWriter::create` on an address: a path, a URL, an operator.

#![cfg(test)]

use atlas::{
    Access, Address, Atlas, AtlasError, AtlasWriter, IoErrorKind, Location, OpenOptions, Operator,
    StorageOptions, WriterConfig,
};
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
        assert_eq!(atlas.dataset_names().await.unwrap(), ["a.nc", "b.nc"]);
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
    assert_eq!(reopened.dataset_names().await.unwrap(), ["b.nc"]);
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

#[tokio::test]
async fn a_path_a_url_a_location_and_an_operator_open_the_same_collection() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("c");
    write_two(dir.to_str().unwrap(), &StorageOptions::default()).await;
    let storage = StorageOptions::default();
    let location = Location::resolve(dir.to_str().unwrap(), &storage, Access::Read)
        .await
        .unwrap();
    let parent = opendal::services::Fs::default().root(tmp.path().to_str().unwrap());
    let op = Operator::new(parent).unwrap();
    let addresses: Vec<Address> = vec![
        dir.as_path().into(),
        dir.clone().into(),
        format!("file://{}", dir.display()).into(),
        dir.to_str().unwrap().into(),
        location.clone().into(),
        (op.clone(), "c").into(),
        (op, "/c/").into(),
    ];
    for address in addresses {
        let shown = format!("{address:?}");
        let atlas = Atlas::open(address, &OpenOptions::default()).await.unwrap();
        assert_eq!(
            atlas.dataset_names().await.unwrap(),
            ["a.nc", "b.nc"],
            "{shown}"
        );
    }
    assert_eq!(location.scheme(), atlas::Scheme::Local);
    assert_eq!(location.object("data.atlas"), "data.atlas");
}

#[tokio::test]
async fn an_operator_address_keeps_its_prefix_for_writes_too() {
    let op = Operator::new(opendal::services::Memory::default()).unwrap();
    let writer = AtlasWriter::create((op.clone(), "a/b"), &WriterConfig::default())
        .await
        .unwrap();
    let mut ds = writer.add_dataset("x").unwrap();
    ds.define_array::<f32>("T", &["n"], &[1], None, None)
        .unwrap();
    ds.write_array("T", &[0], arr1(&[1.0f32]).into_dyn().view())
        .unwrap();
    ds.finish().await.unwrap();
    writer.finish().await.unwrap();
    assert!(op.exists("a/b/data.atlas").await.unwrap());
    let location = Location::from_operator(op.clone(), "/a/b/");
    assert_eq!(location.prefix(), "a/b");
    assert_eq!(location.object("deleted.mask"), "a/b/deleted.mask");
    assert_eq!(location.scheme(), atlas::Scheme::Other);
    let atlas = Atlas::open(location, &OpenOptions::default())
        .await
        .unwrap();
    assert_eq!(atlas.dataset_names().await.unwrap(), ["x"]);
    // Nothing sits at the operator's root.
    let err = Atlas::open(op, &OpenOptions::default()).await.unwrap_err();
    assert!(
        matches!(&err, AtlasError::Io(io) if io.kind() == IoErrorKind::NotFound),
        "{err}"
    );
}

#[tokio::test]
async fn a_local_write_leaves_only_the_container_and_its_index_and_nothing_when_it_fails() {
    let tmp = tempfile::tempdir().unwrap();
    write_two(tmp.path().to_str().unwrap(), &StorageOptions::default()).await;
    let names = |dir: &std::path::Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(names(tmp.path()), ["data.atlas", "data.atlas.index"]);
    // A write that fails at commit (a dataset still open) leaves nothing either.
    let other = tmp.path().join("other");
    let writer = AtlasWriter::create(&other, &WriterConfig::default())
        .await
        .unwrap();
    let open = writer.add_dataset("still-open").unwrap();
    let err = writer.finish().await.unwrap_err();
    assert!(matches!(err, AtlasError::InvalidUse { .. }), "{err}");
    drop(open);
    assert_eq!(names(&other), Vec::<String>::new());
}
