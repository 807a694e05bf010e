//! Wire facts of what the writer produces, checked on the raw bytes (not
//! through our decoder where avoidable), and ordinals under concurrency.

#![cfg(test)]

use crate::write_support;

use std::sync::Arc;
use std::time::Duration;

use atlas::{AtlasWriter, Codec, WriterConfig};
use ndarray::{Array, IxDyn};
use write_support::{Written, writer_in};

fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b.try_into().unwrap())
}

fn le_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b.try_into().unwrap())
}

/// A small collection with two variables, dataset attributes, and two codecs' worth of data.
async fn sample(dir: &std::path::Path, codec: Codec) -> Written {
    sample_with(
        dir,
        WriterConfig::default().codec(codec).block_target_size(1024),
    )
    .await
}

/// [`sample`] with the whole configuration given.
async fn sample_with(dir: &std::path::Path, config: WriterConfig) -> Written {
    let w = writer_in(dir, config).await;
    for i in 0..5u32 {
        let mut d = w.add_dataset(&format!("ds{i}")).unwrap();
        let n = 100 + i as usize * 37;
        d.define_array::<f32>("temp", &["n"], &[n as u64], Some(&[64]), Some(-1.0))
            .unwrap();
        let v: Vec<f32> = (0..n).map(|k| k as f32 * 0.5).collect();
        d.write_array(
            "temp",
            &[0],
            Array::from_shape_vec(IxDyn(&[n]), v).unwrap().view(),
        )
        .unwrap();
        d.define_array::<i64>("id", &[], &[], None, None).unwrap();
        d.write_array("id", &[], ndarray::arr0(i as i64).into_dyn().view())
            .unwrap();
        d.set_attribute("index", i as i64).unwrap();
        d.finish().await.unwrap();
    }
    w.finish().await.unwrap();
    Written::from_dir(dir)
}

#[tokio::test]
async fn the_container_has_magic_and_version_at_both_ends_and_a_trailer_that_finds_the_footer() {
    for codec in [Codec::Zstd, Codec::Lz4, Codec::Uncompressed] {
        let dir = tempfile::tempdir().unwrap();
        let out = sample(dir.path(), codec).await;
        let b = &out.bytes;
        let len = b.len();
        assert_eq!(&b[0..4], b"ATLS");
        assert_eq!(le_u32(&b[4..8]), 8);
        assert_eq!(&b[len - 4..], b"ATLS");
        assert_eq!(le_u32(&b[len - 8..len - 4]), 8);
        let footer_size = le_u64(&b[len - 16..len - 8]) as usize;
        let footer = &b[len - 16 - footer_size..len - 16];
        // One zstd frame (magic 28 b5 2f fd) of compact MessagePack: an 8-element array.
        assert_eq!(&footer[..4], &[0x28, 0xb5, 0x2f, 0xfd]);
        let msgpack = zstd::decode_all(footer).unwrap();
        assert_eq!(msgpack[0], 0x98, "fixarray of 8 fields");
        assert_eq!(msgpack[1], 0x08, "version 8");
    }
}

#[tokio::test]
async fn segments_lie_back_to_back_from_byte_8_to_the_footer_and_each_is_an_array_format_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = sample(dir.path(), Codec::Zstd).await;
    let f = &out.opened.footer;
    assert_eq!(out.segment_names(), vec!["temp", "id", "_datasets"]);
    let mut expected = 8u64;
    for v in &f.variables {
        assert_eq!(v.seg_offset, expected);
        assert!(v.seg_len > 0);
        let seg = &out.bytes[v.seg_offset as usize..(v.seg_offset + v.seg_len) as usize];
        assert_eq!(
            &seg[seg.len() - 4..],
            b"ARRF",
            "an array-format trailer ends each segment"
        );
        expected += v.seg_len;
    }
    assert_eq!(expected, out.opened.footer_offset());
    f.validate_layout(out.opened.footer_offset()).unwrap();
    // Every segment holds one array per dataset, named after it.
    for name in ["temp", "id", "_datasets"] {
        let seg = out.segment(name).await;
        let arrays: Vec<&str> = seg.arrays().map(|a| a.name()).collect();
        assert_eq!(arrays, vec!["ds0", "ds1", "ds2", "ds3", "ds4"], "{name}");
    }
}

#[tokio::test]
async fn the_footer_re_encodes_to_the_bytes_in_the_file() {
    for codec in [Codec::Zstd, Codec::Lz4, Codec::Uncompressed] {
        let dir = tempfile::tempdir().unwrap();
        let out = sample(dir.path(), codec).await;
        let start = out.opened.footer_offset() as usize;
        let stored = &out.bytes[start..start + out.opened.footer_len as usize];
        assert_eq!(out.opened.footer.encode().unwrap(), stored);
        assert_eq!(out.opened.footer.codec, codec);
    }
}

#[tokio::test]
async fn the_summary_reports_the_container_and_its_segments() {
    let dir = tempfile::tempdir().unwrap();
    let w = writer_in(dir.path(), WriterConfig::default()).await;
    let mut d = w.add_dataset("a").unwrap();
    d.define_array::<u8>("x", &["n"], &[3], None, None).unwrap();
    d.set_attribute("k", "v").unwrap();
    d.finish().await.unwrap();
    let summary = w.finish().await.unwrap();
    let out = Written::from_dir(dir.path());
    assert_eq!(summary.datasets, 1);
    assert_eq!(summary.container_bytes, out.bytes.len() as u64);
    let lens: Vec<(String, u64)> = out
        .opened
        .footer
        .variables
        .iter()
        .map(|v| {
            (
                out.opened.footer.string(v.name).unwrap().to_string(),
                v.seg_len,
            )
        })
        .collect();
    assert_eq!(summary.segments, lens);
}

/// Deterministic pseudo-random numbers (no RNG dependency needed).
fn lcg(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *seed >> 33
}

/// 64 datasets added in order, then each finished on its own task after a
/// random delay; some on several variables, some abandoned.
async fn build_concurrently(dir: &std::path::Path, seed: u64) -> Written {
    let w = Arc::new(
        AtlasWriter::create(dir, &WriterConfig::default().block_target_size(4096))
            .await
            .unwrap(),
    );
    let mut seed = seed;
    let mut tasks = Vec::new();
    for i in 0..64u64 {
        let mut d = w.add_dataset(&format!("ds{i:02}")).unwrap();
        let delay = lcg(&mut seed) % 20;
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(delay)).await;
            let n = 10 + (i as usize * 7) % 50;
            d.define_array::<f64>("a", &["n"], &[n as u64], Some(&[8]), None)
                .unwrap();
            let v: Vec<f64> = (0..n).map(|k| (i * 1000 + k as u64) as f64).collect();
            d.write_array(
                "a",
                &[0],
                Array::from_shape_vec(IxDyn(&[n]), v).unwrap().view(),
            )
            .unwrap();
            if i % 3 == 0 {
                d.define_array::<i32>("b", &["m"], &[2], None, None)
                    .unwrap();
                d.write_array(
                    "b",
                    &[0],
                    Array::from_shape_vec(IxDyn(&[2]), vec![i as i32, -1])
                        .unwrap()
                        .view(),
                )
                .unwrap();
            }
            if i % 5 == 0 {
                d.set_attribute("i", i as i64).unwrap();
            }
            if i % 11 == 7 {
                d.abort();
            } else {
                tokio::task::yield_now().await;
                d.finish().await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let w = Arc::into_inner(w).expect("every task is done");
    w.finish().await.unwrap();
    Written::from_dir(dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ordinals_follow_add_dataset_order_however_64_concurrent_tasks_finish() {
    let expected: Vec<String> = (0..64u64)
        .filter(|i| i % 11 != 7)
        .map(|i| format!("ds{i:02}"))
        .collect();
    let mut footers = Vec::new();
    for seed in [1, 2] {
        let dir = tempfile::tempdir().unwrap();
        let out = build_concurrently(dir.path(), seed).await;
        assert_eq!(
            out.dataset_names(),
            expected,
            "ordinals are add_dataset order, gaps closed"
        );
        // Same data under every name, whichever task got there first.
        for name in ["ds00", "ds33", "ds63"] {
            let i: u64 = name[2..].parse().unwrap();
            let got = out.read::<f64>("a", name).await;
            assert_eq!(got[[0]], (i * 1000) as f64);
        }
        let mut footer = out.opened.footer.clone();
        footer.created_unix_ms = 0;
        // Segment order is deterministic; lengths may differ with block packing.
        for v in &mut footer.variables {
            v.seg_len = 0;
            v.seg_offset = 0;
        }
        footers.push(footer);
    }
    assert_eq!(
        footers[0], footers[1],
        "the same input gives the same footer"
    );
    assert_eq!(
        footers[0].variables.len(),
        3,
        "a, b and _datasets: {:?}",
        footers[0].string_pool
    );
}

#[tokio::test]
async fn building_the_same_input_twice_sequentially_gives_identical_bytes_but_the_clock() {
    let mut outs = Vec::new();
    for _ in 0..2 {
        let dir = tempfile::tempdir().unwrap();
        outs.push(sample(dir.path(), Codec::Zstd).await);
    }
    let (a, b) = (&outs[0], &outs[1]);
    let seg_end = a.opened.footer_offset() as usize;
    assert_eq!(a.bytes[..seg_end], b.bytes[..seg_end]);
    let mut fa = a.opened.footer.clone();
    fa.created_unix_ms = b.opened.footer.created_unix_ms;
    assert_eq!(fa, b.opened.footer);
}

#[tokio::test]
async fn with_a_fixed_creation_time_the_same_input_gives_the_same_container_bytes() {
    let created = 1_700_000_000_123;
    let mut outs = Vec::new();
    for _ in 0..2 {
        let dir = tempfile::tempdir().unwrap();
        let config = WriterConfig::default()
            .block_target_size(1024)
            .created_unix_ms(created);
        outs.push(sample_with(dir.path(), config).await);
        let atlas = atlas::Atlas::open(dir.path(), &atlas::OpenOptions::default())
            .await
            .unwrap();
        assert_eq!(
            atlas.lone_member().unwrap().created_unix_ms(),
            created,
            "the time given is recorded"
        );
    }
    assert_eq!(outs[0].opened.footer.created_unix_ms, created);
    assert!(
        outs[0].bytes == outs[1].bytes,
        "two writes of the same input at the same given time differ"
    );
}

#[test]
fn the_writers_are_send_and_sync_as_the_contract_says() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>(_: &T) {}
    send_sync::<AtlasWriter>();
    send_sync::<atlas::DatasetWriter>();
    // The futures of `finish` can move between threads (tokio::spawn).
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    rt.block_on(async {
        let w = writer_in(dir.path(), WriterConfig::default()).await;
        let d = w.add_dataset("d").unwrap();
        let f = d.finish();
        send(&f);
        f.await.unwrap();
        let f = w.finish();
        send(&f);
        f.await.unwrap();
    });
}
