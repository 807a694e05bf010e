//! Tests of the reads that decode each block once (`blocks`).

use std::sync::Arc;

use array_format::{ArrayWriter, FillValue, Lz4Codec, WriterConfig, ZstdCodec};
use bytes::Bytes;
use futures::StreamExt;
use object_store::ObjectStoreExt;

use crate::read::container_segments::{ContainerSegments, SegmentOptions, SegmentRange};

/// Values of array `i`: 5..40 of them.
fn values(i: usize) -> Vec<f32> {
    (0..5 + (i * 7) % 36)
        .map(|k| (i * 100 + k) as f32)
        .collect()
}

/// A segment of `n` arrays `d0000..` (values above, one chunk each) in
/// blocks of about 4 KiB, and how many blocks it has.
async fn segment(n: usize, lz4: bool) -> (Bytes, usize) {
    let mut w = if lz4 {
        ArrayWriter::new(WriterConfig {
            block_target_size: 4096,
            ..WriterConfig::new(Lz4Codec)
        })
    } else {
        ArrayWriter::new(WriterConfig {
            block_target_size: 4096,
            ..WriterConfig::new(ZstdCodec::default())
        })
    };
    for i in 0..n {
        let name = format!("d{i:04}");
        let data = values(i);
        w.define_array::<f32>(
            &name,
            vec!["x".into()],
            vec![data.len()],
            None,
            Some(FillValue::Float(99999.0)),
        )
        .unwrap();
        let data = ndarray::Array::from_vec(data).into_dyn();
        w.write_array(&name, vec![0], data.view()).unwrap();
    }
    let store = Arc::new(object_store::memory::InMemory::new());
    let path = object_store::path::Path::from("seg");
    w.finish(store.clone(), path.clone()).await.unwrap();
    let bytes = store.get(&path).await.unwrap().bytes().await.unwrap();
    let blocks = crate::footer::validate::validate_footer(&bytes, bytes.len() as u64)
        .unwrap()
        .checked
        .chunks
        .block_count();
    (bytes, blocks)
}

async fn segments_over(bytes: Bytes) -> (ContainerSegments, SegmentRange) {
    let (op, _) = crate::test_support::counted_memory();
    let len = bytes.len() as u64;
    op.write("c", bytes).await.unwrap();
    let segments = ContainerSegments::new(op, "c", 1, SegmentOptions::default(), Bytes::new(), 0);
    let range = SegmentRange {
        name: "v".into(),
        offset: 0,
        len,
        arrays_hint: 0,
    };
    (segments, range)
}

#[tokio::test]
async fn a_sweep_over_every_array_decodes_each_block_exactly_once() {
    for lz4 in [false, true] {
        let n = 400;
        let (bytes, blocks) = segment(n, lz4).await;
        assert!(
            blocks > 3 && blocks < n / 10,
            "{blocks} blocks for {n} arrays"
        );
        let (segments, range) = segments_over(bytes).await;
        let seg = segments.get(0, &range).await.unwrap();
        for i in 0..n {
            let got = seg
                .read::<f32>(&format!("d{i:04}"), &[], &[])
                .await
                .unwrap();
            assert_eq!(
                got.iter().copied().collect::<Vec<_>>(),
                values(i),
                "d{i:04}"
            );
        }
        assert_eq!(segments.blocks_decoded(), blocks as u64, "lz4: {lz4}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_reads_of_one_block_share_one_decode() {
    let n = 400;
    let (bytes, blocks) = segment(n, false).await;
    let (segments, range) = segments_over(bytes).await;
    let seg = segments.get(0, &range).await.unwrap();
    let seg = &seg;
    let results: Vec<(usize, Vec<f32>)> = futures::stream::iter(0..n)
        .map(|i| async move {
            let got = seg
                .read::<f32>(&format!("d{i:04}"), &[], &[])
                .await
                .unwrap();
            (i, got.iter().copied().collect())
        })
        .buffer_unordered(16)
        .collect()
        .await;
    assert_eq!(results.len(), n);
    for (i, got) in results {
        assert_eq!(got, values(i), "d{i:04}");
    }
    assert_eq!(segments.blocks_decoded(), blocks as u64);
}

#[tokio::test]
async fn a_region_read_takes_its_slice_of_the_decoded_block() {
    let (bytes, _) = segment(50, false).await;
    let (segments, range) = segments_over(bytes).await;
    let seg = segments.get(0, &range).await.unwrap();
    let got = seg.read::<f32>("d0007", &[2], &[3]).await.unwrap();
    assert_eq!(got.iter().copied().collect::<Vec<_>>(), values(7)[2..5]);
    // The same block again: no second decode.
    let decoded = segments.blocks_decoded();
    let whole = seg.read::<f32>("d0007", &[], &[]).await.unwrap();
    assert_eq!(whole.iter().copied().collect::<Vec<_>>(), values(7));
    assert_eq!(segments.blocks_decoded(), decoded);
}

#[tokio::test]
async fn a_chunked_array_with_unwritten_chunks_reads_the_fill_in_between() {
    let mut w = ArrayWriter::new(WriterConfig {
        block_target_size: 64,
        ..WriterConfig::new(ZstdCodec::default())
    });
    w.define_array::<f32>(
        "g",
        vec!["y".into(), "x".into()],
        vec![5, 6],
        Some(vec![2, 4]),
        Some(FillValue::Float(-1.0)),
    )
    .unwrap();
    let patch = ndarray::Array::from_shape_vec((3, 3), (0..9).map(|v| v as f32).collect())
        .unwrap()
        .into_dyn();
    w.write_array("g", vec![2, 3], patch.view()).unwrap();
    let store = Arc::new(object_store::memory::InMemory::new());
    let path = object_store::path::Path::from("seg");
    let file = w.finish(store.clone(), path.clone()).await.unwrap();
    let bytes = store.get(&path).await.unwrap().bytes().await.unwrap();
    let (segments, range) = segments_over(bytes).await;
    let seg = segments.get(0, &range).await.unwrap();
    for (origin, extent) in [
        (vec![], vec![]),
        (vec![1, 2], vec![3, 4]),
        (vec![4, 5], vec![1, 1]),
    ] {
        let ours = seg.read::<f32>("g", &origin, &extent).await.unwrap();
        let o: Vec<usize> = origin.iter().map(|&v| v as usize).collect();
        let e: Vec<usize> = extent.iter().map(|&v| v as usize).collect();
        let theirs = file.read_array::<f32>("g", o, e).await.unwrap();
        assert_eq!(ours, theirs.to_owned(), "{origin:?} {extent:?}");
    }
    assert!(
        segments.blocks_decoded() > 0,
        "read by this crate, not array-format"
    );
}

#[tokio::test]
async fn fixed_width_reads_layouts_and_attributes_never_open_the_segment_in_array_format() {
    let mut w = ArrayWriter::new(WriterConfig::new(ZstdCodec::default()));
    for i in 0..20 {
        let name = format!("d{i:04}");
        let data = values(i);
        w.define_array::<f32>(&name, vec!["x".into()], vec![data.len()], None, None)
            .unwrap();
        let data = ndarray::Array::from_vec(data).into_dyn();
        w.write_array(&name, vec![0], data.view()).unwrap();
        w.set_attribute(
            &name,
            "units",
            array_format::AttributeValue::String(format!("u{i}").into()),
        )
        .unwrap();
    }
    w.define_array::<String>("names", vec![], vec![2], None, None)
        .unwrap();
    let strings = ndarray::Array::from_vec(vec!["a".to_owned(), "bc".to_owned()]).into_dyn();
    w.write_array("names", vec![0], strings.view()).unwrap();
    let store = Arc::new(object_store::memory::InMemory::new());
    let path = object_store::path::Path::from("seg");
    w.finish(store.clone(), path.clone()).await.unwrap();
    let bytes = store.get(&path).await.unwrap().bytes().await.unwrap();

    let (segments, range) = segments_over(bytes).await;
    let seg = segments.get(0, &range).await.unwrap();
    for i in 0..20 {
        let name = format!("d{i:04}");
        let got = seg.read::<f32>(&name, &[], &[]).await.unwrap();
        assert_eq!(got.iter().copied().collect::<Vec<_>>(), values(i));
        let info = seg.array(&name).unwrap();
        assert_eq!(info.shape(), vec![values(i).len() as u32]);
        assert_eq!(info.dimension_names(), vec!["x".to_owned()]);
        assert_eq!(
            seg.attribute(&name, "units").unwrap(),
            Some(crate::Attr::String(format!("u{i}")))
        );
    }
    let column = seg.attribute_cells("units").unwrap().unwrap();
    assert_eq!(column.len(), 21);
    assert_eq!(column.last(), Some(&None));
    assert!(!seg.array_format_opened());

    // A string array is array-format's to read: the open happens then, once.
    let got = seg.read::<String>("names", &[], &[]).await.unwrap();
    assert_eq!(got.iter().cloned().collect::<Vec<_>>(), ["a", "bc"]);
    assert!(seg.array_format_opened());
}
