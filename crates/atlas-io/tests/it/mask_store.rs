//! Claims about mask transport: atomic puts and conditional read-modify-write.

#![cfg(test)]

use std::time::Duration;

use atlas_io::{
    ATOMIC_WRITE_DIR, CasMemory, CountingLayer, IoErrorKind, UpdateError, WriteGuarantee,
    fs_operator, put_atomic, update_checked, update_conditionally,
};
use bytes::Bytes;
use opendal::Operator;

fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[tokio::test]
async fn an_atomic_put_is_never_visible_half_written() {
    let dir = tempfile::tempdir().unwrap();
    let layer = CountingLayer::new();
    let op = fs_operator(dir.path()).unwrap().layer(layer.clone());
    put_atomic(&op, "coll/deleted.mask", Bytes::from_static(b"old mask"))
        .await
        .unwrap();

    layer.faults().fail_writes_after(10);
    let err = put_atomic(&op, "coll/deleted.mask", Bytes::from(vec![7u8; 4096]))
        .await
        .unwrap_err();
    assert!(err.message().contains("injected write failure"), "{err}");

    let on_disk = std::fs::read(dir.path().join("coll/deleted.mask")).unwrap();
    assert_eq!(on_disk, b"old mask");
    assert!(files_under(&dir.path().join(ATOMIC_WRITE_DIR)).is_empty());

    layer.faults().clear();
    put_atomic(&op, "coll/deleted.mask", Bytes::from_static(b"new mask"))
        .await
        .unwrap();
    assert_eq!(
        std::fs::read(dir.path().join("coll/deleted.mask")).unwrap(),
        b"new mask"
    );
}

#[tokio::test]
async fn an_atomic_put_on_a_plain_fs_operator_is_atomic_too() {
    let dir = tempfile::tempdir().unwrap();
    let layer = CountingLayer::new();
    let plain = Operator::new(opendal::services::Fs::default().root(&dir.path().to_string_lossy()))
        .unwrap()
        .layer(layer.clone());
    put_atomic(&plain, "m", Bytes::from_static(b"old"))
        .await
        .unwrap();

    // What put_atomic avoids: a plain fs write truncates the target in place,
    // so a failure mid-way destroys the old content (here: leaves it empty).
    layer.faults().fail_writes_after(2);
    let err = plain.write("m", vec![9u8; 100]).await.unwrap_err();
    assert_eq!(err.kind(), opendal::ErrorKind::Unexpected, "{err}");
    let torn = std::fs::read(dir.path().join("m")).unwrap();
    assert_ne!(torn, b"old");
    assert!(torn.len() < 100);

    std::fs::write(dir.path().join("m"), b"old").unwrap();
    assert!(
        put_atomic(&plain, "m", Bytes::from(vec![9u8; 100]))
            .await
            .is_err()
    );
    assert_eq!(std::fs::read(dir.path().join("m")).unwrap(), b"old");
    assert!(files_under(&dir.path().join(ATOMIC_WRITE_DIR)).is_empty());
}

#[tokio::test]
async fn a_conditional_update_costs_one_get_and_one_put_without_a_race() {
    let layer = CountingLayer::new();
    let op = CasMemory::new().operator().layer(layer.clone());

    let out = update_conditionally(&op, "deleted.mask", 3, |cur| {
        assert!(cur.is_none());
        Ok::<_, ()>(Some(Bytes::from_static(b"v1")))
    })
    .await
    .unwrap();
    assert_eq!(out.guarantee, WriteGuarantee::Conditional);
    assert_eq!((out.attempts, out.requests, out.written), (1, 2, true));

    layer.stats().reset();
    let out = update_conditionally(&op, "deleted.mask", 3, |cur| {
        assert_eq!(cur, Some(&b"v1"[..]));
        Ok::<_, ()>(Some(Bytes::from_static(b"v2")))
    })
    .await
    .unwrap();
    assert_eq!(out.guarantee, WriteGuarantee::Conditional);
    assert_eq!((out.attempts, out.requests), (1, 2));
    let counts = layer.stats().snapshot();
    assert_eq!((counts.reads, counts.writes, counts.stats), (1, 1, 0));
    assert_eq!(
        &op.read("deleted.mask").await.unwrap().to_bytes()[..],
        b"v2"
    );
}

#[tokio::test]
async fn a_lost_race_is_retried_after_a_fresh_read() {
    let op = CasMemory::new().operator();
    op.write("m", "base").await.unwrap();
    let rival = op.clone();
    let mut calls = 0;
    let mut seen = Vec::new();
    let out = update_conditionally(&op, "m", 3, |cur| {
        calls += 1;
        seen.push(cur.map(|b| b.to_vec()));
        if calls == 1 {
            // A concurrent writer slips in between our read and our write.
            let rival = rival.clone();
            std::thread::spawn(move || {
                tokio::runtime::Runtime::new()
                    .unwrap()
                    .block_on(rival.write("m", "rival"))
                    .unwrap();
            })
            .join()
            .unwrap();
        }
        let mut next = cur.unwrap_or_default().to_vec();
        next.extend_from_slice(b"+mine");
        Ok::<_, ()>(Some(Bytes::from(next)))
    })
    .await
    .unwrap();
    assert_eq!(out.attempts, 2);
    assert_eq!(out.requests, 4);
    assert_eq!(seen, vec![Some(b"base".to_vec()), Some(b"rival".to_vec())]);
    assert_eq!(&op.read("m").await.unwrap().to_bytes()[..], b"rival+mine");
}

#[tokio::test]
async fn losing_every_race_gives_up_with_contended() {
    let op = CasMemory::new().operator();
    op.write("m", "base").await.unwrap();
    let rival = op.clone();
    let err = update_conditionally(&op, "m", 1, |_| {
        let rival = rival.clone();
        std::thread::spawn(move || {
            tokio::runtime::Runtime::new()
                .unwrap()
                .block_on(rival.write("m", "again"))
                .unwrap();
        })
        .join()
        .unwrap();
        Ok::<_, ()>(Some(Bytes::from_static(b"mine")))
    })
    .await
    .unwrap_err();
    match err {
        UpdateError::Contended { attempts, last } => {
            assert_eq!(attempts, 2);
            assert_eq!(last.kind(), IoErrorKind::ConditionNotMet);
        }
        other => panic!("expected Contended, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conditional_update_never_loses_a_concurrent_change() {
    let layer = CountingLayer::new();
    let op = CasMemory::new().operator().layer(layer.clone());
    // Latency on every read and write makes the updaters overlap for real.
    layer.faults().set_latency(Duration::from_millis(2));

    let writers = 16;
    let mut tasks = Vec::new();
    for id in 0..writers {
        let op = op.clone();
        tasks.push(tokio::spawn(async move {
            update_conditionally(&op, "list", 200, |cur| {
                let mut s = String::from_utf8(cur.unwrap_or_default().to_vec()).unwrap();
                s.push_str(&format!("{id}\n"));
                Ok::<_, ()>(Some(Bytes::from(s)))
            })
            .await
            .unwrap()
        }));
    }
    let mut attempts = 0;
    for t in tasks {
        let out = t.await.unwrap();
        assert_eq!(out.guarantee, WriteGuarantee::Conditional);
        attempts += out.attempts;
    }
    let text = String::from_utf8(op.read("list").await.unwrap().to_vec()).unwrap();
    let mut ids: Vec<u32> = text.lines().map(|l| l.parse().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(
        ids,
        (0..writers).collect::<Vec<_>>(),
        "every append survived"
    );
    assert!(
        attempts > writers,
        "races happened and were retried ({attempts} attempts)"
    );
}

#[tokio::test]
async fn on_memory_only_creating_the_object_is_conditional() {
    let op = Operator::new(opendal::services::Memory::default()).unwrap();
    let first = update_conditionally(&op, "m", 0, |_| Ok::<_, ()>(Some(Bytes::from_static(b"a"))))
        .await
        .unwrap();
    assert_eq!(
        first.guarantee,
        WriteGuarantee::Conditional,
        "if_not_exists"
    );
    let second = update_conditionally(&op, "m", 0, |_| Ok::<_, ()>(Some(Bytes::from_static(b"b"))))
        .await
        .unwrap();
    assert_eq!(
        second.guarantee,
        WriteGuarantee::LastWriterWins,
        "no etag on memory"
    );
    assert_eq!(&op.read("m").await.unwrap().to_bytes()[..], b"b");
}

#[tokio::test]
async fn on_fs_every_update_is_locked_and_atomic() {
    let dir = tempfile::tempdir().unwrap();
    let op = fs_operator(dir.path()).unwrap();
    for (i, want) in [&b"a"[..], b"ab"].into_iter().enumerate() {
        let out = update_conditionally(&op, "deleted.mask", 0, |cur| {
            let mut v = cur.unwrap_or_default().to_vec();
            v.push(want[i]);
            Ok::<_, ()>(Some(Bytes::from(v)))
        })
        .await
        .unwrap();
        assert_eq!(out.guarantee, WriteGuarantee::Locked);
        assert_eq!(out.requests, 3, "read + temp write + rename");
    }
    assert_eq!(
        std::fs::read(dir.path().join("deleted.mask")).unwrap(),
        b"ab"
    );
}

#[tokio::test]
async fn nothing_to_write_writes_nothing() {
    let layer = CountingLayer::new();
    let op = CasMemory::new().operator().layer(layer.clone());
    let out = update_conditionally(&op, "m", 3, |_| Ok::<_, ()>(None))
        .await
        .unwrap();
    assert!(!out.written);
    assert_eq!(out.requests, 1);
    assert_eq!(layer.stats().snapshot().writes, 0);
    let err = update_conditionally(&op, "m", 3, |_| Err::<Option<Bytes>, _>("refused"))
        .await
        .unwrap_err();
    assert!(matches!(err, UpdateError::Compute("refused")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_local_updates_take_turns_and_none_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let writers: Vec<_> = (0u8..16)
        .map(|i| {
            // One operator per writer, as separate handles (or processes) have.
            let op = fs_operator(dir.path()).unwrap();
            tokio::spawn(async move {
                update_conditionally(&op, "deleted.mask", 0, |cur| {
                    let mut v = cur.unwrap_or_default().to_vec();
                    v.push(b'a' + i);
                    Ok::<_, ()>(Some(Bytes::from(v)))
                })
                .await
                .unwrap()
            })
        })
        .collect();
    for w in writers {
        assert_eq!(w.await.unwrap().guarantee, WriteGuarantee::Locked);
    }
    let mut stored = std::fs::read(dir.path().join("deleted.mask")).unwrap();
    stored.sort_unstable();
    assert_eq!(stored, (0u8..16).map(|i| b'a' + i).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_checked_update_reads_back_once_and_redoes_a_write_the_backend_lost() {
    let layer = CountingLayer::new();
    let op = CasMemory::new().operator().layer(layer.clone());
    let out = update_checked(
        &op,
        "deleted.mask",
        3,
        |_| Ok::<_, ()>(Some(Bytes::from_static(b"v1"))),
        |stored| stored == b"v1",
    )
    .await
    .unwrap();
    assert_eq!(
        (out.attempts, out.requests),
        (1, 3),
        "GET, PUT, read-back GET"
    );
    assert!(!out.lost_conditional_write);

    // A backend that accepts the write and then shows other content: the first
    // read-back fails, the change is merged and written again.
    let mut checks = 0;
    let out = update_checked(
        &op,
        "deleted.mask",
        3,
        |cur| {
            let mut v = cur.unwrap_or_default().to_vec();
            v.push(b'+');
            Ok::<_, ()>(Some(Bytes::from(v)))
        },
        |_| {
            checks += 1;
            checks > 1
        },
    )
    .await
    .unwrap();
    assert!(out.lost_conditional_write);
    assert_eq!(out.attempts, 2);
    assert_eq!(out.guarantee, WriteGuarantee::Conditional);
}
