//! The whole path over a real S3 protocol: the in-process S3 server of
//! `atlas-testkit` on 127.0.0.1 (no credentials, no network, no Python).

#![cfg(test)]

use crate::s3_support;

use atlas::{Atlas, AtlasWriter, StorageOptions, WriteGuarantee, WriterConfig};
use ndarray::ArrayD;
use opendal::Operator;
use s3_support::s3;

async fn write_profiles(op: &Operator, count: usize) {
    let writer = AtlasWriter::create((op.clone(), "argo"), &WriterConfig::default())
        .await
        .unwrap();
    for i in 0..count {
        let mut ds = writer.add_dataset(&format!("R690{i:04}_001.nc")).unwrap();
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collection_on_s3_opens_with_one_suffix_read_and_reads_back() {
    let (op, counting) = s3("open");
    write_profiles(&op, 40).await;
    counting.stats().reset();

    let atlas = Atlas::open((op.clone(), "argo"), &atlas::OpenOptions::default())
        .await
        .unwrap();
    let container_reads: Vec<_> = counting
        .stats()
        .read_log()
        .into_iter()
        .filter(|r| r.path.ends_with("data.atlas"))
        .collect();
    assert_eq!(
        container_reads.len(),
        1,
        "open reads the container once: {container_reads:?}"
    );
    assert!(
        container_reads[0].range.is_suffix(),
        "S3 reads the tail with a suffix range: {:?}",
        container_reads[0].range
    );
    assert_eq!(
        counting.stats().snapshot().stats,
        0,
        "no HEAD before the tail read"
    );

    counting.stats().reset();
    assert_eq!(atlas.dataset_count().await.unwrap(), 40);
    assert!(atlas.contains("R6900007_001.nc").await.unwrap());
    assert_eq!(atlas.array_names().await.unwrap(), vec!["TEMP"]);
    assert_eq!(
        counting.stats().snapshot().requests(),
        0,
        "the catalogue costs no request"
    );

    let ds = atlas.dataset("R6900012_001.nc").await.unwrap();
    let temp = ds
        .read_array::<f32>("TEMP", atlas::Region::all())
        .await
        .unwrap();
    let expected: Vec<f32> = (0..(10 + 12 % 7))
        .map(|l| 12.0 + l as f32 / 100.0)
        .collect();
    assert_eq!(temp.iter().copied().collect::<Vec<_>>(), expected);
    assert_eq!(
        ds.attribute("cycle_number").await.unwrap(),
        Some(atlas::Attr::Int32(12))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_deletes_on_s3_are_conditional_and_never_lose_one() {
    let (op, _) = s3("deletes");
    write_profiles(&op, 24).await;

    // Six independent handles, as six processes would have, each deleting its own four.
    let mut tasks = Vec::new();
    for t in 0..6 {
        let op = op.clone();
        tasks.push(tokio::spawn(async move {
            let atlas = Atlas::open((op, "argo"), &atlas::OpenOptions::default())
                .await
                .unwrap();
            let names: Vec<String> = (0..4)
                .map(|k| format!("R690{:04}_001.nc", t * 4 + k))
                .collect();
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            atlas.delete_datasets(&refs).await.unwrap()
        }));
    }
    for task in tasks {
        let outcome = task.await.unwrap();
        assert_eq!(outcome.deleted, 4);
        assert_eq!(outcome.guarantee, WriteGuarantee::Conditional);
    }

    let atlas = Atlas::open((op, "argo"), &atlas::OpenOptions::default())
        .await
        .unwrap();
    assert_eq!(
        atlas.dataset_count().await.unwrap(),
        0,
        "every delete survived: {:?}",
        atlas.dataset_names().await.unwrap()
    );
    assert_eq!(atlas.lone_member().unwrap().deleted_datasets().len(), 24);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_s3_url_with_explicit_options_round_trips() {
    let prefix = format!(
        "open-url-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let url = format!("s3://atlas-test/{prefix}/argo");
    let storage = StorageOptions::new()
        .from_env(false)
        .endpoint(s3_support::endpoint())
        .region("us-east-1")
        .set("access_key_id", "test")
        .set("secret_access_key", "test")
        .set("disable_ec2_metadata", "true");
    let writer = AtlasWriter::create(&url, &WriterConfig::default().storage(storage.clone()))
        .await
        .unwrap();
    for (i, name) in ["a.nc", "b.nc"].into_iter().enumerate() {
        let mut ds = writer.add_dataset(name).unwrap();
        ds.define_array::<f32>("TEMP", &["N"], &[2], None, None)
            .unwrap();
        let data = ArrayD::from_shape_vec(vec![2], vec![i as f32, 1.5]).unwrap();
        ds.write_array("TEMP", &[0], data.view()).unwrap();
        ds.finish().await.unwrap();
    }
    writer.finish().await.unwrap();
    let atlas = Atlas::open(
        &url,
        &atlas::OpenOptions::default().storage(storage.clone()),
    )
    .await
    .unwrap();
    assert_eq!(atlas.dataset_names().await.unwrap(), ["a.nc", "b.nc"]);
    let temp = atlas
        .dataset("b.nc")
        .await
        .unwrap()
        .read_array::<f32>("TEMP", atlas::Region::all())
        .await
        .unwrap();
    assert_eq!(temp.as_slice().unwrap(), &[1.0, 1.5]);
}
