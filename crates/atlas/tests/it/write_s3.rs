//! The write path over a real S3 protocol (the in-process server of
//! `atlas-testkit`): a container larger than one part goes up as one
//! multipart upload, and a failed upload leaves no object.

#![cfg(test)]

use crate::s3_support;

use atlas::{Atlas, AtlasError, AtlasWriter, Codec, WriterConfig};
use ndarray::ArrayD;
use opendal::Operator;
use s3_support::s3;

/// `count` grids of 512x512 f32 (1 MiB each), uncompressed so the container is ~count MiB.
async fn write_grids(op: &Operator, count: usize) -> atlas::Result<atlas::WriteSummary> {
    let w = AtlasWriter::create(
        (op.clone(), "grids"),
        &WriterConfig::default().codec(Codec::Uncompressed),
    )
    .await?;
    for i in 0..count {
        let mut d = w.add_dataset(&format!("g{i:03}"))?;
        d.define_array::<f32>("v", &["y", "x"], &[512, 512], Some(&[256, 256]), None)?;
        let values: Vec<f32> = (0..512 * 512).map(|k| (i * 1_000_000 + k) as f32).collect();
        d.write_array(
            "v",
            &[0, 0],
            ArrayD::from_shape_vec(vec![512, 512], values)
                .unwrap()
                .view(),
        )?;
        d.set_attribute("i", i as i64)?;
        d.finish().await?;
    }
    w.finish().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_larger_than_a_part_goes_up_as_one_multipart_upload_and_reads_back() {
    let (op, counting) = s3("multipart");
    let summary = write_grids(&op, 24).await.unwrap();
    assert!(
        summary.container_bytes > 24 << 20,
        "{}",
        summary.container_bytes
    );
    let counts = counting.stats().snapshot();
    assert_eq!(
        counts.writes, 2,
        "one upload for the container, one for its index"
    );
    let index = summary.index.as_ref().map(|i| i.bytes).unwrap();
    assert_eq!(counts.bytes_written, summary.container_bytes + index);

    let atlas = Atlas::open((op, "grids"), &atlas::OpenOptions::default())
        .await
        .unwrap();
    assert_eq!(
        atlas.lone_member().unwrap().container_bytes(),
        summary.container_bytes
    );
    assert_eq!(atlas.dataset_count().await.unwrap(), 24);
    let v = atlas
        .dataset("g017")
        .await
        .unwrap()
        .read_array::<f32>("v", atlas::Region::block(&[511, 510], &[1, 2]))
        .await
        .unwrap();
    let at = |k: usize| (17 * 1_000_000 + k) as f32;
    assert_eq!(
        v.iter().copied().collect::<Vec<_>>(),
        vec![at(511 * 512 + 510), at(511 * 512 + 511)]
    );
    assert_eq!(
        atlas
            .dataset("g003")
            .await
            .unwrap()
            .attribute("i")
            .await
            .unwrap(),
        Some(atlas::Attr::Int64(3))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multipart_upload_failing_half_way_is_aborted_and_leaves_no_object() {
    let (op, counting) = s3("abort");
    counting.faults().fail_writes_after(20 << 20);
    let err = write_grids(&op, 24).await.unwrap_err();
    assert!(matches!(err, AtlasError::Io(_)), "{err}");
    assert!(!op.exists("grids/data.atlas").await.unwrap());
    let err = Atlas::open((op, "grids"), &atlas::OpenOptions::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AtlasError::Io(io) if io.kind() == atlas::IoErrorKind::NotFound),
        "{err}"
    );
}
