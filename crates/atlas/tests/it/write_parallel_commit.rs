//! The commit that finishes segments at once (`WriterConfig::commit_parallelism`)
//! writes the same container as the one that finishes them one by one.

#![cfg(test)]

use atlas::{Atlas, AtlasWriter, OpenOptions, Region, Timestamp, WriterConfig};
use ndarray::{Array, IxDyn};

const CREATED: i64 = 1_764_000_000_000;

/// Writes `n` profiles (three f32 variables, a timestamp, a string array, a
/// dataset attribute and an array attribute) from one task into `dir` and
/// returns the container's bytes.
async fn write(dir: &std::path::Path, n: usize, parallelism: usize) -> Vec<u8> {
    let config = WriterConfig::default()
        .created_unix_ms(CREATED)
        .small_block_target_size(4096)
        .commit_parallelism(parallelism);
    let w = AtlasWriter::create(dir, &config).await.unwrap();
    for i in 0..n {
        let mut d = w.add_dataset(&format!("p{i:05}")).unwrap();
        let levels = 5 + (i * 13) % 40;
        for (k, var) in ["PRES", "TEMP", "PSAL"].into_iter().enumerate() {
            let values: Vec<f32> = (0..levels)
                .map(|l| (i * 1000 + l * 10 + k) as f32)
                .collect();
            d.define_array::<f32>(var, &["N_LEVELS"], &[levels as u64], None, None)
                .unwrap();
            d.write_array(
                var,
                &[0],
                Array::from_shape_vec(IxDyn(&[levels]), values)
                    .unwrap()
                    .view(),
            )
            .unwrap();
            d.set_array_attribute(var, "units", "x").unwrap();
        }
        d.define_array::<Timestamp>("JULD", &["t"], &[1], None, None)
            .unwrap();
        d.write_array(
            "JULD",
            &[0],
            Array::from_shape_vec(IxDyn(&[1]), vec![Timestamp(i as i64 * 1_000_000)])
                .unwrap()
                .view(),
        )
        .unwrap();
        d.define_array::<String>("STATION", &["s"], &[2], None, None)
            .unwrap();
        d.write_array(
            "STATION",
            &[0],
            Array::from_shape_vec(IxDyn(&[2]), vec![format!("s{i}"), "x".repeat(i % 7)])
                .unwrap()
                .view(),
        )
        .unwrap();
        d.set_attribute("platform_number", format!("{}", 6900000 + i))
            .unwrap();
        d.finish().await.unwrap();
    }
    w.finish().await.unwrap();
    std::fs::read(dir.join("data.atlas")).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parallel_commit_writes_the_same_bytes_as_a_sequential_one() {
    let n = 3000;
    let (one, four, many) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let sequential = write(one.path(), n, 1).await;
    let parallel = write(four.path(), n, 4).await;
    let wide = write(many.path(), n, 64).await;
    assert!(sequential.len() > 1 << 20, "{} bytes", sequential.len());
    assert!(sequential == parallel, "parallelism 4 wrote other bytes");
    assert!(sequential == wide, "parallelism 64 wrote other bytes");

    let atlas = Atlas::open(four.path(), &OpenOptions::default())
        .await
        .unwrap();
    assert_eq!(atlas.dataset_count().await.unwrap(), n);
    for i in [0, 1, n / 2, n - 1] {
        let d = atlas.dataset(&format!("p{i:05}")).await.unwrap();
        let levels = 5 + (i * 13) % 40;
        let temp = d.read_array::<f32>("TEMP", Region::all()).await.unwrap();
        let want: Vec<f32> = (0..levels)
            .map(|l| (i * 1000 + l * 10 + 1) as f32)
            .collect();
        assert_eq!(temp.iter().copied().collect::<Vec<_>>(), want);
        let station = d
            .read_array::<String>("STATION", Region::all())
            .await
            .unwrap();
        assert_eq!(station.iter().next().cloned(), Some(format!("s{i}")));
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_parallel_commit_works_on_a_single_threaded_runtime() {
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let sequential = write(one.path(), 200, 1).await;
    let parallel = write(two.path(), 200, 2).await;
    assert!(sequential == parallel, "parallelism 2 wrote other bytes");
    let atlas = Atlas::open(two.path(), &OpenOptions::default())
        .await
        .unwrap();
    let psal = atlas
        .dataset("p00007")
        .await
        .unwrap()
        .read_array::<f32>("PSAL", Region::all())
        .await
        .unwrap();
    let want: Vec<f32> = (0..5 + (7 * 13) % 40)
        .map(|l| (7000 + l * 10 + 2) as f32)
        .collect();
    assert_eq!(psal.iter().copied().collect::<Vec<_>>(), want);
}
