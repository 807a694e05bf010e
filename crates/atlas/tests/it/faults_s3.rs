//! Storage that fails: the S3 server of `atlas-testkit` behind its fault
//! proxy, which answers a share of requests 500/503, drops connections after
//! the response head, cuts bodies short and delays first bytes.
//!
//! With retries on, a 100 MiB multipart write, open, every read, deletes and
//! a rewrite give what they give without faults; with retries off, each
//! fails with `IoErrorKind::Transient` and leaves nothing half done.

#![cfg(test)]

use crate::s3_support;

use std::time::Duration;

use atlas::{
    Atlas, AtlasError, AtlasWriter, Codec, IoErrorKind, Region, RetryPolicy, WriterConfig,
};
use atlas_testkit::{FaultPlan, FaultProxy, S3Server};
use ndarray::ArrayD;
use opendal::Operator;
use s3_support::{s3_at, unique};

const SIDE: usize = 512;

fn value(grid: usize, k: usize) -> f32 {
    (grid * 1_000_000 + k) as f32
}

/// `count` grids of 512x512 f32 (1 MiB each), uncompressed: a container of ~count MiB.
async fn write_grids(op: &Operator, count: usize) -> atlas::Result<atlas::WriteSummary> {
    let config = WriterConfig::default().codec(Codec::Uncompressed);
    let w = AtlasWriter::create((op.clone(), "grids"), &config).await?;
    for i in 0..count {
        let mut d = w.add_dataset(&format!("g{i:03}"))?;
        d.define_array::<f32>("v", &["y", "x"], &[SIDE as u64; 2], Some(&[256, 256]), None)?;
        let values: Vec<f32> = (0..SIDE * SIDE).map(|k| value(i, k)).collect();
        let data = ArrayD::from_shape_vec(vec![SIDE, SIDE], values).unwrap();
        d.write_array("v", &[0, 0], data.view())?;
        d.finish().await?;
    }
    w.finish().await
}

/// Reads every grid whole and checks every value.
async fn read_every_grid(atlas: &Atlas) -> atlas::Result<usize> {
    let mut checked = 0;
    for view in atlas.datasets().await? {
        let grid: usize = view.name()[1..].parse().unwrap();
        let v = view.read_array::<f32>("v", Region::all()).await?;
        assert!(
            v.iter().enumerate().all(|(k, &x)| x == value(grid, k)),
            "{} reads back its values",
            view.name()
        );
        checked += 1;
    }
    Ok(checked)
}

/// Quick retries: the faults are injected, not a real outage. The default
/// timeouts stay: completing a 100 MiB upload takes the server seconds, and
/// a completion retried after a timeout finds its upload gone (403).
fn retries() -> RetryPolicy {
    RetryPolicy::default()
        .max_retries(6)
        .backoff(Duration::from_millis(10), Duration::from_millis(200))
}

fn is_transient(e: &AtlasError) -> bool {
    matches!(e, AtlasError::Io(io) if io.kind() == IoErrorKind::Transient)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_retries_a_100_mib_write_reads_deletes_and_a_rewrite_come_through_faults_intact() {
    let server = S3Server::start();
    // 6 % of requests of each kind: 500/503 on any request, and on GETs
    // dropped connections, short bodies and 300 ms first bytes.
    let proxy = FaultProxy::start(
        server.endpoint(),
        FaultPlan::every_kind(13, 60, Duration::from_millis(300)),
    );
    let root = format!("/{}/", unique("faults"));
    let (faulty, _) = s3_at(proxy.endpoint(), &root);
    let faulty = retries().apply(faulty);
    let (clean, _) = s3_at(server.endpoint(), &root);

    let summary = write_grids(&faulty, 100).await.unwrap();
    assert!(summary.container_bytes > 100 << 20);
    let written = proxy.counts();
    assert!(written.errors > 0, "writes met faults: {written:?}");

    let atlas = Atlas::open((faulty.clone(), "grids"), &atlas::OpenOptions::default())
        .await
        .unwrap();
    assert_eq!(
        atlas.lone_member().unwrap().container_bytes(),
        summary.container_bytes
    );
    assert_eq!(read_every_grid(&atlas).await.unwrap(), 100);
    atlas
        .delete_datasets(&["g007", "g050", "g099"])
        .await
        .unwrap();

    let (copy_root, dst) = (format!("{root}copy/"), "copy");
    let (copy_op, _) = s3_at(proxy.endpoint(), &copy_root);
    let copy_op = retries().apply(copy_op);
    let reopened = Atlas::open((faulty.clone(), "grids"), &atlas::OpenOptions::default())
        .await
        .unwrap();
    let writer = AtlasWriter::create((copy_op, dst), &WriterConfig::default())
        .await
        .unwrap();
    atlas::rewrite(&reopened, writer, |_, _| {}).await.unwrap();

    let counts = proxy.counts();
    eprintln!("fault proxy: {counts:?}");
    assert!(
        counts.errors > 0 && counts.resets > 0 && counts.short_bodies > 0 && counts.slow > 0,
        "every kind of fault was injected: {counts:?}"
    );

    // What the faulty path left is what a clean path sees.
    let original = Atlas::open((clean.clone(), "grids"), &atlas::OpenOptions::default())
        .await
        .unwrap();
    assert_eq!(original.dataset_count().await.unwrap(), 97);
    assert_eq!(read_every_grid(&original).await.unwrap(), 97);
    let (clean_copy, _) = s3_at(server.endpoint(), &copy_root);
    let copy = Atlas::open((clean_copy, dst), &atlas::OpenOptions::default())
        .await
        .unwrap();
    assert_eq!(
        copy.dataset_names().await.unwrap(),
        original.dataset_names().await.unwrap()
    );
    assert_eq!(read_every_grid(&copy).await.unwrap(), 97);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_retries_each_operation_fails_transient_and_leaves_nothing_half_done() {
    let server = S3Server::start();
    let proxy = FaultProxy::start(server.endpoint(), FaultPlan::none());
    let root = format!("/{}/", unique("no-retries"));
    let (clean, _) = s3_at(server.endpoint(), &root);
    write_grids(&clean, 4).await.unwrap();
    let (faulty, _) = s3_at(proxy.endpoint(), &root);
    let faulty = RetryPolicy::no_retries().apply(faulty);

    // Open: every request answered 503, then every body dropped.
    proxy.set_plan(FaultPlan::none().with_errors(1000));
    let err = Atlas::open((faulty.clone(), "grids"), &atlas::OpenOptions::default())
        .await
        .unwrap_err();
    assert!(is_transient(&err), "open on 503: {err}");
    proxy.set_plan(FaultPlan::none().with_resets(1000));
    let err = Atlas::open((faulty.clone(), "grids"), &atlas::OpenOptions::default())
        .await
        .unwrap_err();
    assert!(is_transient(&err), "open on dropped bodies: {err}");

    // Reads and deletes on a handle opened while the proxy was quiet.
    proxy.set_plan(FaultPlan::none());
    let atlas = Atlas::open((faulty.clone(), "grids"), &atlas::OpenOptions::default())
        .await
        .unwrap();
    proxy.set_plan(FaultPlan::none().with_short_bodies(1000));
    let err = read_every_grid(&atlas).await.unwrap_err();
    assert!(is_transient(&err), "a read cut short: {err}");
    proxy.set_plan(FaultPlan::none().with_errors(1000));
    let err = atlas.delete_datasets(&["g001"]).await.unwrap_err();
    assert!(is_transient(&err), "delete on 503: {err}");
    assert_eq!(
        Atlas::open((clean.clone(), "grids"), &atlas::OpenOptions::default())
            .await
            .unwrap()
            .dataset_count()
            .await
            .unwrap(),
        4,
        "the failed delete hid nothing"
    );

    // A multipart write that meets a 503 half-way: nothing to open after.
    proxy.set_plan(FaultPlan::none().with_errors(150));
    let (dst, _) = s3_at(proxy.endpoint(), &format!("{root}w/"));
    let err = write_grids(&RetryPolicy::no_retries().apply(dst), 24)
        .await
        .unwrap_err();
    assert!(is_transient(&err), "a write on 503: {err}");
    let (dst_clean, _) = s3_at(server.endpoint(), &format!("{root}w/"));
    assert!(!dst_clean.exists("grids/data.atlas").await.unwrap());
    let err = Atlas::open((dst_clean, "grids"), &atlas::OpenOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AtlasError::Io(io) if io.kind() == IoErrorKind::NotFound),
        "{err}"
    );
}
