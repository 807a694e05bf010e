//! `atlas::blocking`: the API without async, for callers with no runtime.

use atlas::blocking::{Atlas, AtlasWriter};
use atlas::{AtlasError, StorageOptions, WriterConfig};
use ndarray::arr1;

fn write(location: &str, names: &[&str]) {
    let writer = AtlasWriter::create_url(
        location,
        &StorageOptions::default(),
        WriterConfig::default(),
    )
    .unwrap();
    for (i, name) in names.iter().enumerate() {
        let mut ds = writer.add_dataset(name).unwrap();
        ds.define_array::<i32>("N", &["x"], &[3], None, Some(-1))
            .unwrap();
        ds.write_array("N", &[0], arr1(&[i as i32, 7, -1]).into_dyn().view())
            .unwrap();
        ds.set_attribute("cycle", i as i32).unwrap();
        ds.finish().unwrap();
    }
    // Abandoned: leaves no trace.
    writer.add_dataset("gone.nc").unwrap().abort();
    writer.finish().unwrap();
}

#[test]
fn a_collection_written_and_read_without_a_runtime_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap();
    write(location, &["a.nc", "b.nc", "c.nc"]);

    let atlas = Atlas::open_url(location, &StorageOptions::default()).unwrap();
    assert_eq!(atlas.list_datasets(), ["a.nc", "b.nc", "c.nc"]);
    let b = atlas.dataset("b.nc").unwrap();
    assert_eq!(
        b.read_array::<i32>("N", atlas::Region::all())
            .unwrap()
            .as_slice()
            .unwrap(),
        &[1, 7, -1]
    );
    assert_eq!(b.array_stats("N").unwrap().unwrap().null_count, 1);
    let cycles = atlas.attributes_by_dataset(None, "cycle").unwrap();
    assert_eq!(cycles.len(), 3);

    atlas.delete_datasets(&["a.nc"]).unwrap();
    assert_eq!(atlas.dataset_count(), 2);
    let err = atlas.dataset("a.nc").unwrap_err();
    assert!(matches!(err, AtlasError::DatasetNotFound { .. }), "{err}");
    assert!(atlas.verify(&Default::default()).unwrap().is_sound());
}

#[test]
fn handles_are_shared_across_threads() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().to_str().unwrap();
    let names: Vec<String> = (0..16).map(|i| format!("d{i:02}.nc")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    write(location, &refs);
    let atlas = Atlas::open_path(dir.path()).unwrap();
    let firsts: Vec<i32> = std::thread::scope(|s| {
        let handles: Vec<_> = atlas
            .datasets()
            .into_iter()
            .map(|d| {
                s.spawn(move || {
                    d.read_array::<i32>("N", atlas::Region::new().index(0))
                        .unwrap()[[]]
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(firsts, (0..16).collect::<Vec<i32>>());
}

#[tokio::test]
async fn a_blocking_call_inside_an_async_runtime_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let err = Atlas::open_path(dir.path()).unwrap_err();
    assert!(matches!(err, AtlasError::InvalidUse { .. }), "{err}");
}
