//! What the emulator tests (`azure.rs`, `gcs.rs`) share: one runtime, the profiles they write and
//! check, and the round trip every service must pass.
#![allow(dead_code)]

use std::sync::OnceLock;

use atlas::{Atlas, AtlasWriter, VerifyOptions, WriteGuarantee, WriterConfig};
use atlas_io::CountingLayer;
use ndarray::ArrayD;
use opendal::Operator;

/// One runtime for every emulator test: the concurrent deleters run as its
/// tasks.
pub fn rt() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    })
}

/// A root no other test or run uses: [`s3_support::unique`](crate::s3_support::unique)'s prefix.
pub fn unique(test: &str) -> String {
    format!("/{}/", crate::s3_support::unique(test))
}

pub fn name(i: usize) -> String {
    format!("R690{i:04}_001.nc")
}

pub async fn write_profiles(op: &Operator, count: usize) {
    let writer = AtlasWriter::create((op.clone(), "argo"), &WriterConfig::default())
        .await
        .unwrap();
    for i in 0..count {
        let mut ds = writer.add_dataset(&name(i)).unwrap();
        let levels = 10 + (i % 7) as u64;
        ds.define_array::<f32>("TEMP", &["N_LEVELS"], &[levels], None, Some(99999.0))
            .unwrap();
        let values: Vec<f32> = (0..levels).map(|l| i as f32 + l as f32 / 100.0).collect();
        let data = ArrayD::from_shape_vec(vec![levels as usize], values).unwrap();
        ds.write_array("TEMP", &[0], data.view()).unwrap();
        ds.set_attribute("cycle_number", i as i32).unwrap();
        ds.finish().await.unwrap();
    }
    writer.finish().await.unwrap();
}

/// Every live profile reads back the values `write_profiles` gave it.
pub async fn check_every_profile(atlas: &Atlas) -> usize {
    let mut n = 0;
    for view in atlas.datasets().await.unwrap() {
        let i: usize = view.name()[4..8].parse().unwrap();
        let temp = view
            .read_array::<f32>("TEMP", atlas::Region::all())
            .await
            .unwrap();
        let expected: Vec<f32> = (0..10 + i % 7)
            .map(|l| i as f32 + l as f32 / 100.0)
            .collect();
        assert_eq!(temp.iter().copied().collect::<Vec<_>>(), expected, "{i}");
        assert_eq!(
            view.attribute("cycle_number").await.unwrap(),
            Some(atlas::Attr::Int32(i as i32))
        );
        n += 1;
    }
    n
}

/// Create 40 profiles, open (4 requests: the container's tail, the absent
/// mask, the index's tail and the absent set manifest), read everything back, delete two, reopen and verify, then rewrite
/// into a second root and read the copy: the whole path on one service.
pub async fn round_trip(service: &str, store: impl Fn(&str) -> (Operator, CountingLayer)) {
    let root = unique("roundtrip");
    let (op, counting) = store(&root);
    write_profiles(&op, 40).await;

    counting.stats().reset();
    let atlas = Atlas::open((op.clone(), "argo"), &atlas::OpenOptions::default())
        .await
        .unwrap();
    let open = counting.stats().snapshot();
    eprintln!("open on {service}: {} requests ({open:?})", open.requests());
    // The tail of the container, the (absent) mask, the tail of the index
    // and the (absent) `set.manifest` that the one read handle also asks
    // for, in the same round trip.
    assert_eq!(open.requests(), 4, "{open:?}");
    assert_eq!(check_every_profile(&atlas).await, 40);

    let outcome = atlas.delete_datasets(&[&name(3), &name(30)]).await.unwrap();
    assert_eq!(outcome.deleted, 2);
    assert_eq!(outcome.guarantee, WriteGuarantee::Conditional);
    let reopened = Atlas::open((op.clone(), "argo"), &atlas::OpenOptions::default())
        .await
        .unwrap();
    assert_eq!(reopened.dataset_count().await.unwrap(), 38);
    assert!(
        reopened
            .lone_member()
            .unwrap()
            .verify(&VerifyOptions::default())
            .await
            .is_sound(),
        "verify finds the collection sound"
    );

    let (copy_op, _) = store(&format!("{root}copy/"));
    let writer = AtlasWriter::create((copy_op.clone(), "argo"), &WriterConfig::default())
        .await
        .unwrap();
    atlas::rewrite(&reopened, writer, |_, _| {}).await.unwrap();
    let copy = Atlas::open((copy_op, "argo"), &atlas::OpenOptions::default())
        .await
        .unwrap();
    assert_eq!(
        copy.dataset_names().await.unwrap(),
        reopened.dataset_names().await.unwrap()
    );
    assert_eq!(check_every_profile(&copy).await, 38);
}
