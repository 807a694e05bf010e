//! Claims about `SegmentStore`: array-format reading segments of one container object.

use std::sync::Arc;

use crate::footer::tail::{DEFAULT_PREFETCH, TailError};
use crate::read::segment_store::{SegmentStore, StoreError, segment_path};
use crate::test_support::{array_file_bytes, counted_memory, embed, values};
use array_format::{ArrayFile, BlockCache, ReadConfig};
use bytes::Bytes;
use futures::StreamExt;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutPayload};

/// A container with `body` at offset 1000, and a store over it with segment 0 registered.
async fn store_with(body: &[u8]) -> (SegmentStore, atlas_io::CountingLayer) {
    let (op, layer) = counted_memory();
    let (container, offset) = embed(body, 1000, 777);
    op.write("data.atlas", container).await.unwrap();
    let store = SegmentStore::new(op, "data.atlas");
    store
        .register(&segment_path(0), offset, body.len() as u64)
        .unwrap();
    layer.stats().reset();
    (store, layer)
}

/// array-format's open of segment 0 of `store`, with its default config.
async fn open_first_segment(store: Arc<SegmentStore>) -> ArrayFile {
    ArrayFile::open(store, segment_path(0), ReadConfig::default())
        .await
        .unwrap()
}

fn body(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 199) as u8).collect()
}

#[tokio::test]
async fn a_segment_head_costs_no_request() {
    let (store, layer) = store_with(&body(5000)).await;
    let meta = store.head(&segment_path(0)).await.unwrap();
    assert_eq!(meta.size, 5000);
    assert_eq!(layer.stats().snapshot().requests(), 0);
    assert_eq!(store.requests(), 0);
}

#[tokio::test]
async fn a_range_maps_to_the_containers_absolute_range() {
    let (store, layer) = store_with(&body(5000)).await;
    let got = store.get_range(&segment_path(0), 10..20).await.unwrap();
    assert_eq!(&got[..], &body(5000)[10..20]);
    let log = layer.stats().read_log();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].range, opendal::BytesRange::new(1010, Some(10)));
    assert_eq!(store.requests(), 1);
}

#[tokio::test]
async fn a_range_past_the_segment_end_is_clamped() {
    let (store, _layer) = store_with(&body(5000)).await;
    let got = store.get_range(&segment_path(0), 4990..9000).await.unwrap();
    assert_eq!(&got[..], &body(5000)[4990..]);
    // Suffix and offset ranges resolve against the segment, not the container.
    let r = store
        .get_opts(
            &segment_path(0),
            GetOptions::new().with_range(Some(GetRange::Suffix(7))),
        )
        .await
        .unwrap();
    assert_eq!(r.range, 4993..5000);
    assert_eq!(&r.bytes().await.unwrap()[..], &body(5000)[4993..]);
}

#[tokio::test]
async fn a_start_past_the_segment_is_an_error() {
    let (store, layer) = store_with(&body(5000)).await;
    for range in [5000..5001, 6000..7000] {
        let err = store.get_range(&segment_path(0), range).await.unwrap_err();
        assert!(matches!(err, object_store::Error::Generic { .. }), "{err}");
        assert!(err.to_string().contains("past the end"), "{err}");
    }
    assert_eq!(layer.stats().snapshot().reads, 0);
}

#[tokio::test]
async fn another_path_is_not_found() {
    let (store, _layer) = store_with(&body(100)).await;
    for p in [
        segment_path(1),
        Path::from("data.atlas"),
        Path::from("seg/0/x"),
    ] {
        let err = store.head(&p).await.unwrap_err();
        assert!(matches!(err, object_store::Error::NotFound { .. }), "{err}");
        let err = store.get_range(&p, 0..1).await.unwrap_err();
        assert!(matches!(err, object_store::Error::NotFound { .. }), "{err}");
    }
}

#[tokio::test]
async fn writes_to_a_segment_are_not_supported() {
    let (store, _layer) = store_with(&body(100)).await;
    let p = segment_path(0);
    let not_supported =
        |e: object_store::Error| matches!(e, object_store::Error::NotSupported { .. });
    assert!(not_supported(
        store
            .put(&p, PutPayload::from_static(b"x"))
            .await
            .unwrap_err()
    ));
    assert!(not_supported(store.put_multipart(&p).await.unwrap_err()));
    assert!(not_supported(store.delete(&p).await.unwrap_err()));
    assert!(not_supported(
        store.copy(&p, &segment_path(9)).await.unwrap_err()
    ));
    assert!(not_supported(
        store.list_with_delimiter(None).await.unwrap_err()
    ));
    let listed: Vec<_> = store.list(None).collect().await;
    assert!(matches!(
        listed.as_slice(),
        [Err(object_store::Error::NotSupported { .. })]
    ));
}

#[tokio::test]
async fn a_short_read_from_the_backend_is_an_error() {
    let (store, layer) = store_with(&body(5000)).await;
    layer.faults().truncate_reads_by(1);
    let err = store.get_range(&segment_path(0), 0..100).await.unwrap_err();
    assert!(err.to_string().contains("short read"), "{err}");
}

#[tokio::test]
async fn one_store_serves_several_segments_under_distinct_paths() {
    let (op, _layer) = counted_memory();
    op.write("c", Bytes::from_static(b"aaaabbbbbbcc"))
        .await
        .unwrap();
    let store = SegmentStore::new(op, "c");
    store.register(&segment_path(0), 0, 4).unwrap();
    store.register(&segment_path(1), 4, 6).unwrap();
    store.register(&segment_path(2), 10, 2).unwrap();
    assert_eq!(
        &store
            .get(&segment_path(1))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap()[..],
        b"bbbbbb"
    );
    assert_eq!(
        &store
            .get(&segment_path(2))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap()[..],
        b"cc"
    );
    assert!(matches!(
        store.register(&segment_path(1), 0, 1),
        Err(StoreError::AlreadyRegistered { .. })
    ));
    assert!(matches!(
        store.register(&segment_path(7), u64::MAX, 2),
        Err(StoreError::OutOfRange { .. })
    ));
}

#[tokio::test]
async fn the_trailer_and_footer_of_a_segment_are_served_from_one_prefetch() {
    let data = values(2000, 1.0);
    let file = array_file_bytes("temperature", &data).await;
    let (op, layer) = counted_memory();
    let (container, offset) = embed(&file, 4096, 1234);
    op.write("data.atlas", container).await.unwrap();
    layer.stats().reset();

    let store = Arc::new(SegmentStore::new(op, "data.atlas"));
    store
        .register_prefetched(
            &segment_path(0),
            offset,
            file.len() as u64,
            DEFAULT_PREFETCH,
        )
        .await
        .unwrap();
    let counts = layer.stats().snapshot();
    assert_eq!((counts.reads, counts.stats), (1, 0), "one read of the tail");
    let tail_start = offset + (file.len() as u64).saturating_sub(DEFAULT_PREFETCH);
    let end = offset + file.len() as u64;
    assert_eq!(
        layer.stats().read_log()[0].range,
        opendal::BytesRange::new(tail_start, Some(end - tail_start))
    );
    layer.stats().reset();

    let af = open_first_segment(store.clone()).await;
    assert_eq!(
        layer.stats().snapshot().requests(),
        0,
        "head, trailer and footer come from the prefetch"
    );

    let out = af
        .read_array::<f32>("temperature", vec![], vec![])
        .await
        .unwrap();
    assert_eq!(out.iter().copied().collect::<Vec<_>>(), data);
    // The file is smaller than the prefetch, so even the data block is in memory.
    assert!(file.len() as u64 <= DEFAULT_PREFETCH);
    assert_eq!(layer.stats().snapshot().requests(), 0);
}

#[tokio::test]
async fn without_a_prefetch_array_format_still_reads_the_segment() {
    let data = values(50_000, 3.0);
    let file = array_file_bytes("v", &data).await;
    let (store, layer) = store_with(&file).await;
    let af = open_first_segment(Arc::new(store)).await;
    assert_eq!(layer.stats().snapshot().reads, 2, "trailer, then footer");
    let out = af.read_array::<f32>("v", vec![], vec![]).await.unwrap();
    assert_eq!(out.iter().copied().collect::<Vec<_>>(), data);
}

#[tokio::test]
async fn a_footer_bigger_than_the_prefetch_costs_exactly_one_more_read() {
    let data = values(100, 0.0);
    let file = array_file_bytes("x", &data).await;
    let (store, layer) = store_with(&file).await;
    let store = Arc::new(store);

    store.prefetch_tail(&segment_path(0), 16).await.unwrap();

    let log = layer.stats().read_log();
    assert_eq!(
        log.len(),
        2,
        "the 16-byte tail, then the rest of the footer"
    );
    assert_eq!(log[0].range.size(), Some(16));
    layer.stats().reset();
    let af = open_first_segment(store.clone()).await;
    assert_eq!(layer.stats().snapshot().requests(), 0);
    let out = af.read_array::<f32>("x", vec![], vec![]).await.unwrap();
    assert_eq!(out.iter().copied().collect::<Vec<_>>(), data);
}

#[tokio::test]
async fn two_segments_never_answer_each_others_reads() {
    let a = values(300, 1.0);
    let b = values(300, 1000.0);
    let fa = array_file_bytes("v", &a).await;
    let fb = array_file_bytes("v", &b).await;
    let mut container = fa.to_vec();
    container.extend_from_slice(&fb);
    let (op, _layer) = counted_memory();
    op.write("data.atlas", container).await.unwrap();
    let store = Arc::new(SegmentStore::new(op, "data.atlas"));
    store
        .register(&segment_path(0), 0, fa.len() as u64)
        .unwrap();
    store
        .register(&segment_path(1), fa.len() as u64, fb.len() as u64)
        .unwrap();

    // One shared block cache keyed by path: distinct paths keep them apart.
    let cache = Arc::new(BlockCache::new(1 << 20, 1 << 20));
    let open = |p: Path| {
        let store = store.clone() as Arc<dyn ObjectStore>;
        let cache = cache.clone();
        async move {
            ArrayFile::open(
                store,
                p,
                ReadConfig {
                    cache: Some(cache),
                    ..ReadConfig::default()
                },
            )
            .await
            .unwrap()
        }
    };
    let file_a = open(segment_path(0)).await;
    let file_b = open(segment_path(1)).await;
    let ra = file_a.read_array::<f32>("v", vec![], vec![]).await.unwrap();
    let rb = file_b.read_array::<f32>("v", vec![], vec![]).await.unwrap();
    assert_eq!(ra.iter().copied().collect::<Vec<_>>(), a);
    assert_eq!(rb.iter().copied().collect::<Vec<_>>(), b);
}

type Expect = fn(&StoreError) -> bool;

fn with_trailer(mut file: Vec<u8>, footer_size: u64, magic: &[u8; 4]) -> Vec<u8> {
    let n = file.len();
    file[n - 12..n - 4].copy_from_slice(&footer_size.to_le_bytes());
    file[n - 4..].copy_from_slice(magic);
    file
}

#[tokio::test]
async fn a_corrupt_segment_trailer_is_rejected_before_array_format_sees_it() {
    let file = array_file_bytes("x", &values(10, 0.0)).await.to_vec();
    let len = file.len() as u64;
    let cases: [(Vec<u8>, Expect); 3] = [
        (
            with_trailer(file.clone(), 10, b"ARRX"),
            |e| matches!(e, StoreError::Trailer { source: TailError::NotAnArrayFile { found }, .. } if found == b"ARRX"),
        ),
        (with_trailer(file.clone(), len, b"ARRF"), |e| {
            matches!(
                e,
                StoreError::Trailer {
                    source: TailError::FooterOutOfBounds { .. },
                    ..
                }
            )
        }),
        (with_trailer(file.clone(), u64::MAX - 4, b"ARRF"), |e| {
            matches!(
                e,
                StoreError::Trailer {
                    source: TailError::FooterOutOfBounds { .. },
                    ..
                }
            )
        }),
    ];
    for (bad, expected) in cases {
        // Prefetching validates it with a typed error...
        let (store, _layer) = store_with(&bad).await;
        let err = store
            .prefetch_tail(&segment_path(0), DEFAULT_PREFETCH)
            .await
            .unwrap_err();
        assert!(expected(&err), "{err:?}");
        // ...and so does a tail supplied by the caller...
        let (store2, _layer) = store_with(&bad).await;
        let tail = Bytes::copy_from_slice(&bad[bad.len() - 64..]);
        let err = store2
            .register_with_tail(&segment_path(1), 1000, len, tail)
            .unwrap_err();
        assert!(expected(&err), "{err:?}");
        // ...and without any prefetch array-format gets an error, not a panic.
        let (store3, _layer) = store_with(&bad).await;
        let err = ArrayFile::open(
            Arc::new(store3) as Arc<dyn ObjectStore>,
            segment_path(0),
            ReadConfig::default(),
        )
        .await
        .unwrap_err();
        let msg = crate::test_support::chain(&err);
        assert!(
            msg.contains("ARRF") || msg.contains("footer"),
            "unexpected error: {msg}"
        );
    }
}

#[tokio::test]
async fn a_segment_shorter_than_a_trailer_is_rejected() {
    let (store, _layer) = store_with(b"ARRF").await;
    assert!(matches!(
        store.prefetch_tail(&segment_path(0), 1024).await,
        Err(StoreError::Trailer {
            source: TailError::TooShort { len: 4 },
            ..
        })
    ));
}

/// A segment of `data` bytes of data region, then a `footer`-byte footer and
/// its trailer; registered with the footer in hand, as an opened segment is.
async fn store_with_data_region(
    data: usize,
    footer: usize,
) -> (SegmentStore, atlas_io::CountingLayer, Vec<u8>) {
    let mut seg = body(data + footer);
    seg.extend_from_slice(&(footer as u64).to_le_bytes());
    seg.extend_from_slice(b"ARRF");
    let (op, layer) = counted_memory();
    let (container, offset) = embed(&seg, 1000, 777);
    op.write("data.atlas", container).await.unwrap();
    let store = SegmentStore::new(op, "data.atlas");
    let tail = Bytes::copy_from_slice(&seg[data..]);
    store
        .register_with_tail(&segment_path(0), offset, seg.len() as u64, tail)
        .unwrap();
    layer.stats().reset();
    (store, layer, seg)
}

#[tokio::test]
async fn walking_the_data_region_in_order_reads_ahead_in_a_few_requests_and_never_into_the_footer()
{
    let (data, block) = (20 * 1024 * 1024, 400 * 1024);
    let (store, layer, seg) = store_with_data_region(data, 3000).await;
    walk(&store, &seg, data, block).await;
    let log = layer.stats().read_log();
    // The first block alone; then windows of 4, 8 and 16 MiB (the last cut
    // at the footer), each sent as the block asked for (the first window
    // only) and the rest in parts of 1 to 2 MiB.
    let policy = atlas_io::ReadParallelism::default();
    let (b, mib) = (block as u64, 1024 * 1024);
    let cut = |r: std::ops::Range<u64>| policy.requests(&r);
    let parts = 1
        + 1
        + cut(2 * b..b + 4 * mib)
        + cut(b + 4 * mib..b + 12 * mib)
        + cut(b + 12 * mib..data as u64);
    assert_eq!(parts, 1 + 1 + 3 + 8 + 7);
    assert_eq!(log.len() as u64, parts, "{log:?}");
    assert_eq!(store.requests(), parts);
    assert_tiles(&log, 1000, data as u64, 2 * policy.min_part_size);
}

/// The reads of `log` (container offsets, the segment at `offset`) cover
/// `0..data` of the segment exactly once, in order, with no gap and no
/// overlap, none larger than `max_part` and none past `data`.
fn assert_tiles(log: &[atlas_io::ReadRecord], offset: u64, data: u64, max_part: u64) {
    let mut ranges: Vec<(u64, u64)> = log
        .iter()
        .map(|r| (r.range.offset() - offset, r.range.size().unwrap()))
        .collect();
    ranges.sort_unstable();
    let mut at = 0;
    for (start, size) in ranges {
        assert_eq!(start, at, "no gap, no overlap at {at}: {log:?}");
        assert!(size <= max_part, "a read of {size} bytes");
        at += size;
    }
    assert_eq!(at, data, "every data byte once, no footer byte");
}

#[tokio::test]
async fn read_ahead_windows_stay_whole_when_reads_are_not_split() {
    let (data, block) = (20 * 1024 * 1024, 400 * 1024);
    let (store, layer, seg) = store_with_data_region(data, 3000).await;
    let store = store.with_read_parallelism(atlas_io::ReadParallelism::single());
    walk(&store, &seg, data, block).await;
    let log = layer.stats().read_log();
    // The first block alone, then windows of 4, 8 and 16 MiB, one GET each.
    assert_eq!(log.len(), 4, "{log:?}");
    assert_eq!(store.requests(), 4);
}

#[tokio::test]
async fn reads_that_do_not_continue_the_last_one_fetch_exactly_their_range() {
    let (store, layer, seg) = store_with_data_region(2 * 1024 * 1024, 3000).await;
    for (a, b) in [
        (500_000, 600_000),
        (100_000, 200_000),
        (1_000_000, 1_100_000),
    ] {
        let got = store.get_range(&segment_path(0), a..b).await.unwrap();
        assert_eq!(&got[..], &seg[a as usize..b as usize]);
    }
    let sizes: Vec<_> = layer
        .stats()
        .read_log()
        .iter()
        .map(|r| r.range.size())
        .collect();
    assert_eq!(sizes, vec![Some(100_000); 3]);
}

/// Walks `0..data` of segment 0 in `block`-byte reads, checking every byte.
async fn walk(store: &SegmentStore, seg: &[u8], data: usize, block: usize) {
    let mut at = 0;
    while at < data {
        let end = (at + block).min(data);
        let got = store
            .get_range(&segment_path(0), at as u64..end as u64)
            .await
            .unwrap();
        assert_eq!(&got[..], &seg[at..end], "bytes {at}..{end}");
        at = end;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_walk_from_the_start_of_a_segment_opened_whole_sends_its_first_window_at_once() {
    let (data, block) = (7 * 1024 * 1024 + 12_345, 500 * 1024);
    let (store, layer, seg) = store_with_data_region(data, 3000).await;
    store.ramp_from_start(&segment_path(0));
    layer
        .faults()
        .set_latency(std::time::Duration::from_millis(20));
    walk(&store, &seg, data, block).await;
    let log = layer.stats().read_log();
    // The first block, then the rest of the 8 MiB window (here the whole
    // data region) in parts of 1 to 2 MiB, all sent together: one round trip.
    let policy = atlas_io::ReadParallelism::default();
    let rest = policy.requests(&(block as u64..data as u64));
    assert_eq!(log.len() as u64, 1 + rest, "{log:?}");
    assert_eq!(
        layer.stats().max_reads_in_flight(),
        1 + rest,
        "every piece in flight at once"
    );
    assert_tiles(&log, 1000, data as u64, 2 * policy.min_part_size);
}

#[tokio::test]
async fn a_first_read_at_the_start_of_a_segment_not_opened_whole_is_exact() {
    let (store, layer, seg) = store_with_data_region(7 * 1024 * 1024, 3000).await;
    let got = store.get_range(&segment_path(0), 0..1000).await.unwrap();
    assert_eq!(&got[..], &seg[..1000]);
    let sizes: Vec<_> = layer
        .stats()
        .read_log()
        .iter()
        .map(|r| r.range.size())
        .collect();
    assert_eq!(sizes, vec![Some(1000)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_ahead_piece_that_fails_costs_the_read_a_direct_fetch_not_its_bytes() {
    let (data, block) = (7 * 1024 * 1024, 500 * 1024);
    let (store, layer, seg) = store_with_data_region(data, 3000).await;
    store.ramp_from_start(&segment_path(0));
    // The third request is the second piece of the first window.
    layer.faults().fail_nth_read(3);
    walk(&store, &seg, data, block).await;
    let log = layer.stats().read_log();
    // The block over the failed piece was fetched alone (the window's other
    // pieces were dropped with it) and the walk went on reading ahead from
    // there: every byte arrived right (`walk` checks them).
    let policy = atlas_io::ReadParallelism::default();
    let first_window = 1 + policy.requests(&(block as u64..data as u64));
    assert!(log.len() as u64 > first_window, "{log:?}");
    let read: u64 = log.iter().filter_map(|r| r.range.size()).sum();
    assert!(read >= data as u64, "{read} bytes read");
}

#[tokio::test]
async fn a_read_whose_piece_and_direct_fetch_both_fail_fails_with_the_cause() {
    let (data, block) = (7 * 1024 * 1024, 500 * 1024);
    let (store, layer, _seg) = store_with_data_region(data, 3000).await;
    store.ramp_from_start(&segment_path(0));
    layer.faults().fail_reads_matching("data.atlas");
    let err = store
        .get_range(&segment_path(0), 0..block as u64)
        .await
        .unwrap_err();
    assert!(
        crate::test_support::chain(&err).contains("injected failure of reads matching"),
        "{err}"
    );
}

#[test]
fn a_range_across_several_buffers_of_a_piece_is_sliced_without_a_gap_or_a_copy() {
    use crate::read::segment_store::slice_buffers;
    let whole: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
    let buffers: Vec<Bytes> = [0..3000, 3000..3001, 3001..7000, 7000..10_000]
        .into_iter()
        .map(|r| Bytes::copy_from_slice(&whole[r]))
        .collect();
    for (from, to) in [
        (0, 10_000),
        (2999, 3002),
        (3000, 3001),
        (5, 5),
        (6999, 9000),
    ] {
        let mut out = Vec::new();
        assert_eq!(slice_buffers(&buffers, from..to, &mut out), Some(to - from));
        let joined: Vec<u8> = out.iter().flat_map(|b| b.iter().copied()).collect();
        assert_eq!(joined, whole[from..to], "{from}..{to}");
        // Slices share the buffers' memory.
        for part in &out {
            assert!(buffers.iter().any(|b| {
                let (b0, p0) = (b.as_ptr() as usize, part.as_ptr() as usize);
                p0 >= b0 && p0 + part.len() <= b0 + b.len()
            }));
        }
    }
    let mut out = Vec::new();
    assert_eq!(slice_buffers(&buffers, 9000..10_001, &mut out), None);
    #[allow(clippy::reversed_empty_ranges)]
    let inverted = 10..5;
    assert_eq!(slice_buffers(&buffers, inverted, &mut Vec::new()), None);
}
