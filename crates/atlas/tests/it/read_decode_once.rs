//! A sweep over every dataset, one read after another or through
//! `read_many`, decodes each block of the array's segment once.

#![cfg(test)]

use atlas::{ArrayData, Atlas, AtlasWriter, OpenOptions, Order, Region, WriterConfig};
use futures::StreamExt;
use ndarray::{Array, IxDyn};

fn temp(i: usize) -> Vec<f32> {
    (0..5 + (i * 13) % 40)
        .map(|l| (i * 1000 + l) as f32)
        .collect()
}

/// `n` datasets of one `TEMP` array each, packed into blocks of about 4 KiB.
async fn write(dir: &std::path::Path, n: usize) {
    let config = WriterConfig::default().small_block_target_size(4096);
    let w = AtlasWriter::create(dir, &config).await.unwrap();
    for i in 0..n {
        let mut d = w.add_dataset(&format!("p{i:05}")).unwrap();
        let values = temp(i);
        let len = values.len();
        d.define_array::<f32>("TEMP", &["N_LEVELS"], &[len as u64], None, None)
            .unwrap();
        d.write_array(
            "TEMP",
            &[0],
            Array::from_shape_vec(IxDyn(&[len]), values).unwrap().view(),
        )
        .unwrap();
        d.finish().await.unwrap();
    }
    w.finish().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_decodes_each_block_once_in_order_and_through_read_many() {
    let n = 2000;
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), n).await;

    let atlas = Atlas::open(dir.path(), &OpenOptions::default())
        .await
        .unwrap();
    for (i, d) in atlas.datasets().await.unwrap().into_iter().enumerate() {
        let got = d.read_array::<f32>("TEMP", Region::all()).await.unwrap();
        assert_eq!(got.iter().copied().collect::<Vec<_>>(), temp(i));
    }
    let blocks = atlas.blocks_decoded();
    // About 48 KiB of values per 4 KiB block... the arrays share blocks.
    assert!(
        blocks > 10 && blocks < (n / 20) as u64,
        "{blocks} blocks for {n} datasets"
    );

    for concurrency in [1, 8, 32] {
        let fresh = Atlas::open(dir.path(), &OpenOptions::default())
            .await
            .unwrap();
        let results: Vec<_> = fresh
            .read_many(
                fresh.datasets().await.unwrap(),
                "TEMP",
                Region::all(),
                concurrency,
                Order::AsCompleted,
            )
            .collect()
            .await;
        assert_eq!(results.len(), n);
        for (name, result) in results {
            let i: usize = name[1..].parse().unwrap();
            let ArrayData::Float32(got) = result.unwrap().into_data() else {
                panic!("{name}: not f32")
            };
            assert_eq!(got.iter().copied().collect::<Vec<_>>(), temp(i), "{name}");
        }
        assert_eq!(
            fresh.blocks_decoded(),
            blocks,
            "{concurrency} reads at once"
        );
    }
}
