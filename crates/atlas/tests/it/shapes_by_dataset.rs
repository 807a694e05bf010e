//! `Atlas::array_shapes_by_dataset`: every dataset's shape of one array,
//! read off the segment footer without opening the segment (a reader without
//! indexes; the index path is in `index.rs`).

#![cfg(test)]

use crate::read_support;

use atlas::{Atlas, AtlasError, DType, OpenOptions, ReadParallelism, Region};
use read_support::counted_memory;

/// Dataset `i` holds `v` of `len(i)` floats; every third one also holds `w` (2 × len).
fn len(i: usize) -> usize {
    1 + (i * 7) % 23
}

fn name(i: usize) -> String {
    format!("profile_{i:05}")
}

async fn ragged(op: &opendal::Operator, n: usize) {
    let writer = atlas::AtlasWriter::create((op.clone(), ""), &atlas::WriterConfig::default())
        .await
        .unwrap();
    for i in 0..n {
        let mut ds = writer.add_dataset(&name(i)).unwrap();
        let values: Vec<f32> = (0..len(i)).map(|k| (i * 100 + k) as f32).collect();
        ds.define_array::<f32>("v", &["obs"], &[len(i) as u64], None, None)
            .unwrap();
        let data = ndarray::ArrayD::from_shape_vec(vec![len(i)], values).unwrap();
        ds.write_array("v", &[0], data.view()).unwrap();
        if i % 3 == 0 {
            ds.define_array::<i32>("w", &["a", "b"], &[2, len(i) as u64], None, None)
                .unwrap();
        }
        ds.finish().await.unwrap();
    }
    writer.finish().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shapes_by_dataset_equal_each_datasets_layout_and_cost_one_footer_read() {
    let n = 3000;
    let (op, stats, _) = counted_memory();
    ragged(&op, n).await;
    let atlas = Atlas::open(
        (op.clone(), ""),
        &OpenOptions::default().dataset_index(false),
    )
    .await
    .unwrap();
    atlas.delete_datasets(&[&name(4), &name(9)]).await.unwrap();
    let atlas = Atlas::open(
        (op.clone(), ""),
        &OpenOptions::default().dataset_index(false),
    )
    .await
    .unwrap();
    stats.reset();

    let v = atlas.array_shapes_by_dataset("v").await.unwrap();
    let cost = stats.snapshot();
    assert_eq!(atlas.segments_opened(), 0, "array-format opened nothing");
    let policy = ReadParallelism::default();
    assert!(
        cost.reads >= 1 && cost.reads <= 1 + policy.requests(&(0..cost.bytes_read)),
        "the footer once: {cost:?}"
    );
    let live: Vec<usize> = (0..n).filter(|i| ![4, 9].contains(i)).collect();
    assert_eq!(v.len(), live.len(), "deleted datasets are left out");
    for (row, &i) in v.iter().zip(&live) {
        assert_eq!(row.dataset, name(i));
        assert_eq!(row.shape, vec![len(i) as u64]);
        assert_eq!(row.dtype, DType::Float32);
    }
    assert_eq!(v[4].ordinal, 5, "ordinals are the collection's");

    // Only the datasets declaring `w`, with their 2-D shapes.
    let w = atlas.array_shapes_by_dataset("w").await.unwrap();
    let declaring: Vec<usize> = live.iter().copied().filter(|i| i % 3 == 0).collect();
    assert_eq!(
        w.iter().map(|r| r.dataset.clone()).collect::<Vec<_>>(),
        declaring.iter().map(|&i| name(i)).collect::<Vec<_>>()
    );
    for (row, &i) in w.iter().zip(&declaring) {
        assert_eq!(row.shape, vec![2, len(i) as u64]);
        assert_eq!(row.dtype, DType::Int32);
    }

    // The same shapes as each dataset's layout, read one by one.
    for row in v.iter().step_by(97) {
        let layout = atlas
            .dataset(&row.dataset)
            .await
            .unwrap()
            .array_layout("v")
            .await
            .unwrap();
        assert_eq!(layout.shape, row.shape);
    }
    // And as the values read.
    let read = atlas
        .dataset(&name(22))
        .await
        .unwrap()
        .read_array::<f32>("v", Region::all())
        .await
        .unwrap();
    assert_eq!(read.len() as u64, v[20].shape[0]);
}

#[tokio::test]
async fn shapes_by_dataset_of_an_unknown_array_is_array_not_found() {
    let (op, _, _) = counted_memory();
    ragged(&op, 5).await;
    let atlas = Atlas::open((op, ""), &OpenOptions::default().dataset_index(false))
        .await
        .unwrap();
    let err = atlas.array_shapes_by_dataset("nope").await.unwrap_err();
    assert!(
        matches!(&err, AtlasError::ArrayNotFound { array, .. } if array == "nope"),
        "{err:?}"
    );
}
