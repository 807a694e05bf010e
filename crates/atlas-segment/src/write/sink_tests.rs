//! Claims about `SinkStore`: array-format segments appended to one container writer.

use std::sync::Arc;

use crate::footer::tail::DEFAULT_PREFETCH;
use crate::read::segment_store::{SegmentStore, segment_path};
use crate::test_support::{counted_memory, values, writer_with};
use crate::write::sink::{SinkError, SinkStore, WrittenSegment};
use array_format::{ArrayFile, ReadConfig};
use bytes::Bytes;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

#[tokio::test]
async fn the_sink_concatenates_segments_in_order_and_reports_their_lengths() {
    let (op, layer) = counted_memory();
    let writer = op.writer("data.atlas").await.unwrap();
    let sink = SinkStore::new(writer, "data.atlas");

    let header = sink
        .write_raw(Bytes::from_static(b"ATLAS-HEADER"))
        .await
        .unwrap();
    assert_eq!(header, 0);

    // A small segment goes through one `put`; a big one (> 8 MiB, stored
    // uncompressed) through `put_multipart` + parts + `complete`.
    let small = values(1000, 1.0);
    let big = values(2_500_000, 7.0);
    writer_with("small", &small, true)
        .finish(
            Arc::new(sink.clone()) as Arc<dyn ObjectStore>,
            segment_path(0),
        )
        .await
        .unwrap();
    let between = sink.write_raw(Bytes::from_static(b"--")).await.unwrap();
    writer_with("big", &big, false)
        .finish(
            Arc::new(sink.clone()) as Arc<dyn ObjectStore>,
            segment_path(1),
        )
        .await
        .unwrap();
    let trailer = sink.write_raw(Bytes::from_static(b"END")).await.unwrap();

    let s0 = sink.segment(&segment_path(0)).unwrap();
    let s1 = sink.segment(&segment_path(1)).unwrap();
    assert_eq!(s0.offset, 12);
    assert_eq!(between, s0.offset + s0.len);
    assert_eq!(s1.offset, between + 2);
    assert!(s1.len > 8 * 1024 * 1024, "the big segment used multipart");
    assert_eq!(trailer, s1.offset + s1.len);
    assert_eq!(
        sink.segments(),
        vec![("seg/0".to_string(), s0), ("seg/1".to_string(), s1)]
    );
    // head of a completed segment answers its length.
    assert_eq!(sink.head(&segment_path(1)).await.unwrap().size, s1.len);

    let meta = sink.close().await.unwrap();
    assert_eq!(meta.content_length(), trailer + 3);
    assert_eq!(layer.stats().snapshot().writes, 1, "one container object");

    // Read each segment back through SegmentStore at the reported offsets.
    let store = Arc::new(SegmentStore::new(op.clone(), "data.atlas"));
    for (i, seg) in [(0u64, s0), (1, s1)] {
        store
            .register_prefetched(&segment_path(i), seg.offset, seg.len, DEFAULT_PREFETCH)
            .await
            .unwrap();
    }
    let f0 = ArrayFile::open(
        store.clone() as Arc<dyn ObjectStore>,
        segment_path(0),
        ReadConfig::default(),
    )
    .await
    .unwrap();
    let f1 = ArrayFile::open(
        store.clone() as Arc<dyn ObjectStore>,
        segment_path(1),
        ReadConfig::default(),
    )
    .await
    .unwrap();
    let r0 = f0.read_array::<f32>("small", vec![], vec![]).await.unwrap();
    let r1 = f1.read_array::<f32>("big", vec![], vec![]).await.unwrap();
    assert_eq!(r0.iter().copied().collect::<Vec<_>>(), small);
    assert_eq!(r1.iter().copied().collect::<Vec<_>>(), big);
    let raw = op.read("data.atlas").await.unwrap().to_bytes();
    assert_eq!(&raw[..12], b"ATLAS-HEADER");
    assert_eq!(&raw[raw.len() - 3..], b"END");
}

#[tokio::test]
async fn parts_land_in_the_order_put_part_was_called() {
    let (op, layer) = counted_memory();
    let sink = SinkStore::new(op.writer("c").await.unwrap(), "c");
    layer
        .faults()
        .set_latency(std::time::Duration::from_millis(1));

    let mut upload = sink.put_multipart(&segment_path(0)).await.unwrap();
    let parts: Vec<_> = [b"aaa", b"bbb", b"ccc", b"ddd"]
        .into_iter()
        .map(|p| upload.put_part(PutPayload::from_static(p)))
        .collect();
    // Run them as tasks started last-first: order must still follow put_part calls.
    let mut handles = Vec::new();
    for part in parts.into_iter().rev() {
        handles.push(tokio::spawn(part));
        tokio::task::yield_now().await;
    }
    for h in handles {
        h.await.unwrap().unwrap();
    }
    upload.complete().await.unwrap();
    assert_eq!(
        sink.segment(&segment_path(0)),
        Some(WrittenSegment { offset: 0, len: 12 })
    );
    sink.close().await.unwrap();
    assert_eq!(&op.read("c").await.unwrap().to_bytes()[..], b"aaabbbcccddd");
}

#[tokio::test]
async fn a_second_upload_while_one_is_active_is_refused() {
    let (op, _layer) = counted_memory();
    let sink = SinkStore::new(op.writer("c").await.unwrap(), "c");
    let mut first = sink.put_multipart(&segment_path(0)).await.unwrap();

    let err = sink
        .put(&segment_path(1), PutPayload::from_static(b"x"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("still active"), "{err}");
    let err = sink.put_multipart(&segment_path(1)).await.unwrap_err();
    assert!(err.to_string().contains("still active"), "{err}");
    assert!(matches!(
        sink.write_raw(Bytes::from_static(b"raw")).await,
        Err(SinkError::UploadActive { .. })
    ));
    assert!(matches!(
        sink.close().await,
        Err(SinkError::UploadActive { .. })
    ));

    first
        .put_part(PutPayload::from_static(b"one"))
        .await
        .unwrap();
    first.complete().await.unwrap();
    sink.put(&segment_path(1), PutPayload::from_static(b"two"))
        .await
        .unwrap();
    // The same path twice would make two segments indistinguishable.
    let err = sink
        .put(&segment_path(1), PutPayload::from_static(b"again"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, object_store::Error::AlreadyExists { .. }),
        "{err}"
    );
    sink.close().await.unwrap();
    assert_eq!(&op.read("c").await.unwrap().to_bytes()[..], b"onetwo");
}

#[tokio::test]
async fn a_failing_backend_write_surfaces_as_an_error() {
    let (op, layer) = counted_memory();
    layer.faults().fail_writes_after(100_000);
    let sink = SinkStore::new(op.writer("data.atlas").await.unwrap(), "data.atlas");

    let err = writer_with("big", &values(2_500_000, 0.0), false)
        .finish(
            Arc::new(sink.clone()) as Arc<dyn ObjectStore>,
            segment_path(0),
        )
        .await
        .unwrap_err();
    assert!(
        crate::test_support::chain(&err).contains("injected write failure"),
        "{err}"
    );

    assert_eq!(sink.segment(&segment_path(0)), None);
    // The container holds a partial segment now: it cannot be completed.
    let err = sink.close().await.unwrap_err();
    assert!(
        matches!(err, crate::write::sink::SinkError::Poisoned { .. }),
        "{err}"
    );
    assert!(
        sink.put(&segment_path(1), PutPayload::from_static(b"x"))
            .await
            .is_err()
    );
    sink.abort().await.unwrap();
    assert!(!op.exists("data.atlas").await.unwrap());
}

#[tokio::test]
async fn an_aborted_upload_marks_the_segment_failed() {
    let (op, _layer) = counted_memory();
    let sink = SinkStore::new(op.writer("c").await.unwrap(), "c");
    let mut up = sink.put_multipart(&segment_path(0)).await.unwrap();
    up.put_part(PutPayload::from_static(b"partial"))
        .await
        .unwrap();
    up.abort().await.unwrap();
    assert_eq!(sink.segment(&segment_path(0)), None);
    let err = sink.close().await.unwrap_err();
    assert!(matches!(err, SinkError::Poisoned { .. }), "{err}");

    // An upload aborted before any part leaves the container usable.
    let sink = SinkStore::new(op.writer("d").await.unwrap(), "d");
    let mut up = sink.put_multipart(&segment_path(0)).await.unwrap();
    up.abort().await.unwrap();
    sink.put(&segment_path(1), PutPayload::from_static(b"ok"))
        .await
        .unwrap();
    sink.close().await.unwrap();
    assert_eq!(&op.read("d").await.unwrap().to_bytes()[..], b"ok");
}

#[tokio::test]
async fn the_sink_cannot_be_read_or_listed() {
    let (op, _layer) = counted_memory();
    let sink = SinkStore::new(op.writer("c").await.unwrap(), "c");
    sink.put(&segment_path(0), PutPayload::from_static(b"abc"))
        .await
        .unwrap();
    assert!(matches!(
        sink.get_range(&segment_path(0), 0..1).await.unwrap_err(),
        object_store::Error::NotSupported { .. }
    ));
    assert!(matches!(
        sink.head(&segment_path(5)).await.unwrap_err(),
        object_store::Error::NotFound { .. }
    ));
    assert!(matches!(
        sink.delete(&segment_path(0)).await,
        Err(object_store::Error::NotSupported { .. })
    ));
    assert!(matches!(
        sink.list_with_delimiter(None).await,
        Err(object_store::Error::NotSupported { .. })
    ));
}

#[test]
fn the_sink_and_segment_futures_can_be_spawned() {
    fn assert_send<T: Send>(_: &T) {}
    let op = opendal::Operator::new(opendal::services::Memory::default()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let sink = SinkStore::new(rt.block_on(op.writer("c")).unwrap(), "c");
    assert_send(&sink.write_raw(Bytes::new()));
    assert_send(&sink.close());
    assert_send(&sink.abort());
    assert_send(&sink.position());
    let store = SegmentStore::new(op.clone(), "c");
    let p = segment_path(0);
    assert_send(&store.prefetch_tail(&p, 1));
    assert_send(&store.register_prefetched(&p, 0, 1, 1));
    assert_send(&atlas_io::put_atomic(&op, "m", Bytes::new()));
    assert_send(&atlas_io::read_ranges(
        &op,
        "c",
        &[],
        &atlas_io::ReadParallelism::default(),
    ));
    assert_send(&atlas_io::update_conditionally(&op, "m", 0, |_| {
        Ok::<_, ()>(None)
    }));
}

#[test]
fn a_busy_store_met_inside_a_segment_write_stays_a_transient_failure() {
    use crate::write::sink::kind_behind;
    use atlas_io::{IoError, IoErrorKind};
    let busy = IoError::new(IoErrorKind::Transient, "write", "data.atlas", "503");
    // What array-format's buffered writer hands back: the store's error in
    // a std::io::Error, the sink's own error inside the store's.
    let store = object_store::Error::Generic {
        store: "SinkStore",
        source: Box::new(SinkError::Io(busy)),
    };
    let wrapped = std::io::Error::other(store);
    assert_eq!(kind_behind(&wrapped), IoErrorKind::Transient);
    let refused = object_store::Error::Generic {
        store: "SinkStore",
        source: Box::new(SinkError::Closed),
    };
    assert_eq!(kind_behind(&refused), IoErrorKind::Other);
}
