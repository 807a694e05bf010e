//! What each call costs in requests and bytes, counted by atlas-io's
//! `CountingLayer` standing in for an object store, on the footer path:
//! collections are read as a reader without indexes reads them (the index
//! path's costs are in `index.rs`).

#![cfg(test)]

use crate::read_support;

use atlas::{
    ArrayData, Atlas, AtlasError, Attr, OpenOptions, Order, ReadParallelism, Region, WriteGuarantee,
};
use futures::StreamExt;
use opendal::BytesRange;
use read_support::{
    big_footer_container, counted_memory, counted_memory_without_suffix, load_fixture, reads_of,
    uniform_collection, uniform_name,
};

const PROBE: u64 = 64 * 1024;

/// How these tests open: every answer from the footers, as without an index.
fn footers_only() -> OpenOptions {
    OpenOptions::default().dataset_index(false)
}

/// The requests of a segment footer's first read under `policy`: the
/// prefetch, then the rest of the footer, each split as the policy says.
fn footer_reads(policy: &ReadParallelism, footer: u64) -> u64 {
    let prefetch = atlas_segment::DEFAULT_PREFETCH;
    policy.requests(&(0..prefetch)) + policy.requests(&(0..footer.saturating_sub(prefetch)))
}

/// Small parts, so the test collections' footers split: 64 KiB parts from 128 KiB.
fn small_parts() -> ReadParallelism {
    ReadParallelism::default()
        .min_part_size(64 * 1024)
        .max_part_size(64 * 1024)
}

/// The bounded ranges read of `path` (suffix reads left out), sorted by start.
fn ranges_read(stats: &atlas_io::RequestStats, path: &str) -> Vec<std::ops::Range<u64>> {
    let mut out: Vec<_> = stats
        .read_log()
        .into_iter()
        .filter(|r| r.path == path)
        .filter_map(|r| match r.range {
            BytesRange::Range {
                offset,
                size: Some(size),
            } => Some(offset..offset + size),
            _ => None,
        })
        .collect();
    out.sort_by_key(|r| r.start);
    out
}

#[tokio::test]
async fn opening_a_small_collection_is_one_suffix_read_plus_the_mask_and_manifest_reads() {
    let (op, stats, _) = counted_memory();
    assert!(
        atlas_io::supports_suffix_reads(&op),
        "memory reads suffixes natively"
    );
    load_fixture(&op, "deleted", "c").await;
    stats.reset();
    let atlas = Atlas::open((op, "c"), &footers_only()).await.unwrap();
    let counts = stats.snapshot();
    println!("open of `deleted` (suffix): {counts:?}");
    assert_eq!(reads_of(&stats, "c/data.atlas"), 1);
    assert_eq!(reads_of(&stats, "c/deleted.mask"), 1);
    // The one read handle also asks for `set.manifest` (absent: a NotFound
    // read, counted) in the same round trip as the tail and the mask.
    assert_eq!(reads_of(&stats, "c/set.manifest"), 1);
    assert_eq!(counts.reads, 3);
    assert_eq!(counts.stats, 0);
    let log = stats.read_log();
    let tail = log.iter().find(|r| r.path == "c/data.atlas").unwrap();
    assert_eq!(tail.range, BytesRange::suffix(PROBE));
    assert_eq!(atlas.dataset_count().await.unwrap(), 7);
}

#[tokio::test]
async fn opening_without_suffix_reads_is_a_stat_and_one_ranged_read() {
    let (op, stats, _) = counted_memory_without_suffix();
    assert!(!atlas_io::supports_suffix_reads(&op));
    load_fixture(&op, "small", "").await;
    stats.reset();
    let atlas = Atlas::open((op, ""), &footers_only()).await.unwrap();
    let counts = stats.snapshot();
    println!("open of `small` (stat + range): {counts:?}");
    assert_eq!(counts.stats, 1);
    assert_eq!(reads_of(&stats, "data.atlas"), 1);
    // The absent mask costs its one read attempt.
    assert_eq!(reads_of(&stats, "deleted.mask"), 1);
    let len = atlas.lone_member().unwrap().container_bytes();
    let tail = stats
        .read_log()
        .into_iter()
        .find(|r| r.path == "data.atlas")
        .unwrap();
    assert_eq!(
        tail.range,
        BytesRange::from(0..len),
        "the whole small container in one read"
    );
}

#[tokio::test]
async fn a_footer_over_64_kib_costs_exactly_two_reads() {
    let container = big_footer_container(30_000);
    for suffix in [true, false] {
        let (op, stats, _) = if suffix {
            counted_memory()
        } else {
            counted_memory_without_suffix()
        };
        op.write("data.atlas", container.clone()).await.unwrap();
        stats.reset();
        let atlas = Atlas::open((op, ""), &footers_only()).await.unwrap();
        let footer = atlas.lone_member().unwrap().footer_bytes();
        assert!(
            footer > PROBE,
            "footer of {footer} bytes must exceed the probe"
        );
        let counts = stats.snapshot();
        let container_reads = reads_of(&stats, "data.atlas");
        let bytes = counts.bytes_read;
        println!(
            "open with a {footer}-byte footer (suffix {suffix}): {container_reads} reads, {bytes} bytes, {} stats",
            counts.stats
        );
        // The probe, then the rest of the footer: under 4 MiB, one read.
        assert!(footer < 4 * 1024 * 1024, "{footer}");
        assert_eq!(container_reads, 2);
        assert!(bytes <= PROBE + footer + 16, "{bytes} bytes read");
        assert_eq!(counts.stats, u64::from(!suffix));
        assert_eq!(atlas.dataset_count().await.unwrap(), 30_000);
    }
}

#[tokio::test]
async fn a_footer_past_the_probe_is_read_in_parts_that_tile_it() {
    // On the ranged path (no suffix reads): the probe and the rest of the
    // footer are both split. (A suffix read cannot be: the object's length
    // is not known yet.)
    let container = big_footer_container(30_000);
    let (op, stats, _) = counted_memory_without_suffix();
    op.write("data.atlas", container.clone()).await.unwrap();
    stats.reset();
    let policy = ReadParallelism::default()
        .min_part_size(16 * 1024)
        .max_part_size(16 * 1024);
    let options = footers_only().read_parallelism(policy);
    let atlas = Atlas::open((op, ""), &options).await.unwrap();
    let len = container.len() as u64;
    let ranges = ranges_read(&stats, "data.atlas");
    let first = ranges.first().unwrap().start;
    assert_eq!(ranges.last().unwrap().end, len, "nothing past the end");
    for pair in ranges.windows(2) {
        assert_eq!(pair[0].end, pair[1].start, "no gap, no overlap: {pair:?}");
    }
    let probe = policy.requests(&(len - PROBE..len));
    let rest = policy.requests(&(first..len - PROBE));
    assert_eq!((probe, ranges.len() as u64), (4, probe + rest));
    assert!(rest > 1, "the rest of the footer was split too: {ranges:?}");
    assert!(
        len - first <= PROBE.max(atlas.lone_member().unwrap().footer_bytes() + 16),
        "nothing in front of the footer"
    );
    let counts = stats.snapshot();
    // Plus the (absent) mask and the (absent) `set.manifest` the one read
    // handle asks for in the same round trip.
    assert_eq!(
        (counts.stats, counts.reads),
        (1, probe + rest + 2),
        "and the mask and the manifest"
    );
    assert_eq!(atlas.dataset_count().await.unwrap(), 30_000);
    // Catalogue calls after a split open cost nothing either.
    stats.reset();
    let _ = (
        atlas.dataset_names().await.unwrap(),
        atlas.lone_member().unwrap().segments(),
        atlas.array_names().await.unwrap(),
    );
    assert_eq!(stats.snapshot().requests(), 0);
}

#[tokio::test]
async fn every_catalogue_call_after_open_costs_nothing() {
    let (op, stats, _) = counted_memory();
    load_fixture(&op, "small", "").await;
    let atlas = Atlas::open((op, ""), &footers_only()).await.unwrap();
    stats.reset();
    let member = atlas.lone_member().unwrap();
    let _ = (
        member.format_version(),
        member.codec(),
        member.created_unix_ms(),
        member.container_bytes(),
        member.footer_bytes(),
        member.dataset_count(),
        member.dataset_count_total(),
        member.deleted_datasets(),
        member.interned_schemas(),
        member.dataset_names(),
        member.array_names(),
        member.segments(),
        member.mask_warnings(),
        member.contains("jan_2024"),
    );
    let _ = (
        atlas.dataset_count().await.unwrap(),
        atlas.dataset_names().await.unwrap(),
        atlas.array_names().await.unwrap(),
        atlas.contains("jan_2024").await.unwrap(),
    );
    for view in atlas.datasets().await.unwrap() {
        let _ = (view.name(), view.ordinal(), view.to_owned_schema());
        for meta in view.schema().arrays() {
            let _ = (meta.name(), meta.dtype(), meta.attributes().count());
            let _ = view.array_meta(meta.name());
        }
    }
    let jan = atlas.dataset("jan_2024").await.unwrap();
    // Keys the schema does not declare are settled without a request.
    assert_eq!(jan.attribute("not_declared").await.unwrap(), None);
    assert_eq!(
        jan.array_attribute("lat", "not_declared").await.unwrap(),
        None
    );
    assert!(jan.array_attributes("station").await.unwrap().is_empty());
    assert!(
        atlas
            .attributes_by_dataset(None, "not_declared")
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(stats.snapshot().requests(), 0, "{:?}", stats.snapshot());
}

#[tokio::test]
async fn a_dataset_without_attributes_costs_nothing_to_ask() {
    let (op, stats, _) = counted_memory();
    load_fixture(&op, "mixed", "").await;
    let atlas = Atlas::open((op, ""), &footers_only()).await.unwrap();
    stats.reset();
    for view in atlas.datasets().await.unwrap() {
        assert!(view.attributes().await.unwrap().is_empty());
        assert!(view.array_attributes("value").await.unwrap().is_empty());
    }
    assert_eq!(stats.snapshot().requests(), 0);
}

#[tokio::test]
async fn segments_inside_the_open_probe_cost_no_request() {
    let (op, stats, _) = counted_memory();
    load_fixture(&op, "small", "").await;
    let atlas = Atlas::open((op, ""), &footers_only()).await.unwrap();
    stats.reset();
    let doc = atlas_manifest::collection_json(&atlas.lone_member().unwrap(), true)
        .await
        .unwrap();
    assert_eq!(doc["datasets"].as_array().unwrap().len(), 3);
    assert_eq!(
        stats.snapshot().requests(),
        0,
        "the whole 8 KiB container arrived with the open"
    );
}

/// Footer + trailer bytes of the segment at `offset..offset + len` of the container in `op`.
async fn segment_footer_bytes(op: &opendal::Operator, path: &str, offset: u64, len: u64) -> u64 {
    let end = offset + len;
    let trailer = op
        .read_with(path)
        .range(end - 12..end)
        .await
        .unwrap()
        .to_vec();
    u64::from_le_bytes(trailer[..8].try_into().unwrap()) + 12
}

#[tokio::test]
async fn the_first_use_of_a_segment_reads_its_footer_and_nothing_else() {
    let (op, stats, _) = counted_memory();
    op.write("data.atlas", uniform_collection(2_000).await)
        .await
        .unwrap();
    let atlas = Atlas::open((op.clone(), ""), &footers_only())
        .await
        .unwrap();
    let segment = atlas
        .lone_member()
        .unwrap()
        .segments()
        .into_iter()
        .find(|v| v.name == "v")
        .unwrap();
    assert!(
        segment.offset + segment.len + PROBE < atlas.lone_member().unwrap().container_bytes(),
        "segment v must lie outside the open's probe for this test"
    );
    let footer = segment_footer_bytes(&op, "data.atlas", segment.offset, segment.len).await;
    assert!(
        footer > atlas_segment::DEFAULT_PREFETCH,
        "a footer of {footer} bytes larger than the prefetch"
    );
    stats.reset();
    let view = atlas.dataset(&uniform_name(7)).await.unwrap();
    let layout = view.array_layout("v").await.unwrap();
    assert_eq!(layout.shape, vec![4]);
    let first = stats.snapshot();
    println!(
        "first use of segment v ({} bytes, footer {footer}): {first:?}",
        segment.len
    );
    assert_eq!(
        first.reads,
        footer_reads(&ReadParallelism::default(), footer),
        "the prefetch, then the rest of the footer"
    );
    assert_eq!(
        first.reads, 2,
        "a footer under 4 MiB: one read after the prefetch"
    );
    assert_eq!(first.bytes_read, footer, "the footer and trailer, no data");
    let data = view
        .read_array::<f32>("v", atlas::Region::all())
        .await
        .unwrap();
    assert_eq!(
        data.iter().copied().collect::<Vec<_>>(),
        vec![70.0, 71.0, 72.0, 73.0]
    );
    let _ = view.array_stats("v").await.unwrap();
    let _ = view.array_attributes("v").await.unwrap();
    let after = stats.snapshot();
    println!("after a data read too: {after:?}");
    assert_eq!(
        after.reads, 3,
        "one block read beyond the footer: {after:?}"
    );
    let again = atlas.dataset(&uniform_name(8)).await.unwrap();
    let _ = again
        .read_array::<f32>("v", atlas::Region::all())
        .await
        .unwrap();
    assert_eq!(stats.snapshot().reads, after.reads, "the block is cached");
}

#[tokio::test]
async fn the_first_use_of_a_segment_reads_its_footer_in_parts_and_nothing_else() {
    let (op, stats, _) = counted_memory();
    op.write("data.atlas", uniform_collection(2_000).await)
        .await
        .unwrap();
    let options = footers_only().read_parallelism(small_parts());
    let atlas = Atlas::open((op.clone(), ""), &options).await.unwrap();
    let segment = atlas
        .lone_member()
        .unwrap()
        .segments()
        .into_iter()
        .find(|v| v.name == "v")
        .unwrap();
    let footer = segment_footer_bytes(&op, "data.atlas", segment.offset, segment.len).await;
    stats.reset();
    let view = atlas.dataset(&uniform_name(7)).await.unwrap();
    assert_eq!(view.array_layout("v").await.unwrap().shape, vec![4]);
    let first = stats.snapshot();
    println!("first use of segment v (footer {footer}, 64 KiB parts): {first:?}");
    let expected = footer_reads(&small_parts(), footer);
    assert!(expected > 2, "the footer is split: {expected}");
    assert_eq!(first.reads, expected);
    assert_eq!(first.bytes_read, footer, "the footer and trailer, no data");
    let ranges = ranges_read(&stats, "data.atlas");
    let end = segment.offset + segment.len;
    assert_eq!(ranges.first().map(|r| r.start), Some(end - footer));
    assert_eq!(
        ranges.last().map(|r| r.end),
        Some(end),
        "nothing past the segment"
    );
    for pair in ranges.windows(2) {
        assert_eq!(pair[0].end, pair[1].start, "no gap, no overlap: {pair:?}");
    }
    // Statistics and attributes of the segment then cost nothing.
    let _ = view.array_stats("v").await.unwrap();
    let _ = view.array_attributes("v").await.unwrap();
    assert_eq!(stats.snapshot().reads, expected);
}

#[tokio::test]
async fn one_array_of_a_segment_with_a_large_footer_costs_a_few_small_reads() {
    let n = 10_000;
    let UniformV {
        atlas,
        stats,
        footer,
        ..
    } = uniform_with_footer_of_v(n).await;
    assert!(footer > 1024 * 1024, "footer of {footer} bytes");
    stats.reset();
    for i in [0, 4321, n - 1] {
        let view = atlas.dataset(&uniform_name(i)).await.unwrap();
        let before = stats.snapshot();
        let data = view
            .read_array::<f32>("v", atlas::Region::all())
            .await
            .unwrap();
        let base = (i * 10) as f32;
        assert_eq!(
            data.iter().copied().collect::<Vec<_>>(),
            vec![base, base + 1.0, base + 2.0, base + 3.0]
        );
        let cost = stats.snapshot();
        let (reads, bytes) = (
            cost.reads - before.reads,
            cost.bytes_read - before.bytes_read,
        );
        println!("cold read of dataset {i} (footer {footer} bytes): {reads} reads, {bytes} bytes");
        assert!(
            reads <= 5,
            "the tail, entry, its parts, the block table, the block: {reads}"
        );
        assert!(
            bytes < 256 * 1024,
            "{bytes} bytes, far below the footer's {footer}"
        );
        // Again: nothing.
        let layout = view.array_layout("v").await.unwrap();
        assert_eq!(layout.shape, vec![4]);
        let _ = view
            .read_array::<f32>("v", atlas::Region::all())
            .await
            .unwrap();
        assert_eq!(
            stats.snapshot().reads,
            cost.reads,
            "the lookup and its block are kept"
        );
    }
    assert_eq!(atlas.segments_opened(), 0, "no segment was opened whole");
    // A fold still reads the footer once, at the floor.
    stats.reset();
    let folded = atlas.array_stats("v").await.unwrap().unwrap();
    assert_eq!(folded.row_count, 4 * n as u64);
    let fold = stats.snapshot();
    assert_eq!(
        fold.reads,
        footer_reads(&ReadParallelism::default(), footer)
    );
    assert_eq!(fold.bytes_read, footer);
}

#[tokio::test]
async fn statistics_layouts_and_attributes_across_10_000_datasets_open_one_segment() {
    let n = 10_000;
    let UniformV {
        atlas,
        stats,
        footer: footer_v,
        op,
        ..
    } = uniform_with_footer_of_v(n).await;
    let d = atlas
        .lone_member()
        .unwrap()
        .segments()
        .into_iter()
        .find(|v| v.name == "_datasets")
        .unwrap();
    let footer_d = segment_footer_bytes(&op, "data.atlas", d.offset, d.len).await;
    stats.reset();

    let folded = atlas.array_stats("v").await.unwrap().unwrap();
    assert_eq!(folded.row_count, 4 * n as u64);
    assert_eq!(
        folded.max,
        Some(atlas::Value::Float((n as f64 - 1.0) * 10.0 + 3.0))
    );
    let rows = atlas.array_stats_by_dataset("v").await.unwrap();
    assert_eq!(rows.len(), n);
    let units = atlas
        .attributes_by_dataset(Some("v"), "units")
        .await
        .unwrap();
    assert_eq!(units.len(), n);
    for view in atlas.datasets().await.unwrap() {
        assert_eq!(view.array_layout("v").await.unwrap().element_count, 4);
        assert!(view.array_stats("v").await.unwrap().is_some());
        assert_eq!(
            view.array_attribute("v", "units").await.unwrap(),
            Some(Attr::String("K".into()))
        );
    }
    let after_v = stats.snapshot();
    println!(
        "10 000 datasets, footer of v {footer_v} bytes: stats + by-dataset + layouts + array attributes = {after_v:?}"
    );
    assert_eq!(atlas.segments_opened(), 1);
    assert_eq!(
        after_v.reads,
        footer_reads(&ReadParallelism::default(), footer_v),
        "one segment open: prefetch, then the rest of its footer"
    );
    assert_eq!(
        after_v.bytes_read, footer_v,
        "the footer's bytes and nothing else"
    );

    let idx = atlas.attributes_by_dataset(None, "idx").await.unwrap();
    assert_eq!(idx.len(), n);
    assert_eq!(idx[1234], (uniform_name(1234).into(), Attr::Int64(1234)));
    for view in atlas.datasets().await.unwrap().into_iter().take(100) {
        assert!(view.attribute("idx").await.unwrap().is_some());
    }
    let after_d = stats.snapshot();
    println!("then dataset attributes of all of them: {after_d:?}");
    assert_eq!(atlas.segments_opened(), 2);
    assert_eq!(
        after_d.reads - after_v.reads,
        footer_reads(&ReadParallelism::default(), footer_d),
        "the _datasets segment: its footer"
    );
    assert_eq!(after_d.bytes_read - after_v.bytes_read, footer_d);
}

#[tokio::test]
async fn deleting_1000_datasets_is_one_get_one_put_and_one_read_back() {
    let (op, stats, _) = counted_memory();
    op.write("data.atlas", uniform_collection(2_000).await)
        .await
        .unwrap();
    let atlas = Atlas::open((op, ""), &footers_only()).await.unwrap();
    let names: Vec<String> = (0..2_000).step_by(2).map(uniform_name).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    stats.reset();
    let outcome = atlas.delete_datasets(&refs).await.unwrap();
    let counts = stats.snapshot();
    println!("delete of 1 000 names: {counts:?}, {outcome:?}");
    assert_eq!(outcome.deleted, 1_000);
    // The mask did not exist: created with if-not-exists, then read back once
    // to check the backend kept it (conditional writes are checked, not trusted).
    assert_eq!(outcome.guarantee, WriteGuarantee::Conditional);
    assert_eq!(counts.reads, 2);
    assert_eq!(counts.writes, 1);
    assert_eq!(counts.requests(), 3);
    assert_eq!(counts.bytes_written, 12 + 4 * 1_000);
    assert_eq!(
        counts.bytes_read,
        12 + 4 * 1_000,
        "only the read-back found a mask"
    );
    assert_eq!(atlas.dataset_count().await.unwrap(), 1_000);
}

#[tokio::test]
async fn options_bound_the_segment_prefetch_and_cache() {
    let (op, stats, _) = counted_memory();
    op.write("data.atlas", uniform_collection(200).await)
        .await
        .unwrap();
    let options = footers_only()
        .block_cache_bytes(0)
        .segment_prefetch_bytes(4096);
    let atlas = Atlas::open((op, ""), &options).await.unwrap();
    stats.reset();
    let view = atlas.dataset(&uniform_name(3)).await.unwrap();
    let data = view
        .read_array::<f32>("v", atlas::Region::block(&[1], &[2]))
        .await
        .unwrap();
    assert_eq!(data.iter().copied().collect::<Vec<_>>(), vec![31.0, 32.0]);
    assert!(stats.snapshot().reads >= 1);
}

#[tokio::test]
async fn unwritten_elements_read_as_fill_without_a_request() {
    use atlas_format::{ArrayDecl, DatasetSchema, FooterBuilder, assemble};
    let mut footer = FooterBuilder::new(atlas::Codec::Zstd, 0);
    let schema = footer.intern_schema(&DatasetSchema {
        arrays: vec![ArrayDecl {
            name: "v".into(),
            dtype: atlas::DType::Float64,
            attributes: vec![],
        }],
        attributes: vec![],
    });
    let mut writer = read_support::segment_writer();
    for i in 0..2_000 {
        let name = uniform_name(i);
        footer.push_dataset(&name, schema).unwrap();
        writer
            .define_array::<f64>(
                &name,
                vec!["t".into()],
                &[1_000],
                Some(&[100]),
                Some(&atlas::Value::Float(f64::NAN)),
            )
            .unwrap();
        let head = ndarray::Array::from_vec((0..100).map(f64::from).collect()).into_dyn();
        writer.write_array(&name, &[0], head.view()).unwrap();
    }
    let segment = read_support::finish_segment(writer).await;
    footer.push_variable("v", segment.len() as u64).unwrap();
    let container = assemble(&footer.finish(), &[&segment]).unwrap();

    let (op, stats, _) = counted_memory();
    op.write("data.atlas", container).await.unwrap();
    let atlas = Atlas::open((op, ""), &footers_only().segment_prefetch_bytes(4096))
        .await
        .unwrap();
    let view = atlas.dataset(&uniform_name(42)).await.unwrap();
    view.array_layout("v").await.unwrap();
    stats.reset();
    let hole = view
        .read_array::<f64>("v", atlas::Region::block(&[500], &[300]))
        .await
        .unwrap();
    assert_eq!(hole.len(), 300);
    assert!(hole.iter().all(|x| x.is_nan()));
    assert_eq!(stats.snapshot().requests(), 0, "no written chunk overlaps");
    let head = view
        .read_array::<f64>("v", atlas::Region::block(&[90], &[20]))
        .await
        .unwrap();
    assert_eq!(head[[0]], 90.0);
    assert!(head[[10]].is_nan());
    assert_eq!(stats.snapshot().reads, 1, "one block for the written chunk");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_one_array_of_many_datasets_shares_one_segment_open_and_its_blocks() {
    let (op, stats, _) = counted_memory();
    op.write("data.atlas", uniform_collection(500).await)
        .await
        .unwrap();
    let atlas = Atlas::open((op.clone(), ""), &footers_only())
        .await
        .unwrap();

    // One at a time, for the request count to compare with.
    stats.reset();
    let mut sequential = Vec::new();
    for d in atlas.datasets().await.unwrap() {
        sequential.push(d.read_array::<f32>("v", Region::all()).await.unwrap());
    }
    let one_at_a_time = stats.snapshot().reads;

    let fresh = Atlas::open((op, ""), &footers_only()).await.unwrap();
    stats.reset();
    let results: Vec<(String, atlas::Result<atlas::AnyArray>)> = fresh
        .read_many(
            fresh.datasets().await.unwrap(),
            "v",
            Region::all(),
            16,
            Order::AsGiven,
        )
        .collect()
        .await;
    assert_eq!(
        stats.snapshot().reads,
        one_at_a_time,
        "concurrency overlaps requests, it does not add any"
    );
    assert_eq!(results.len(), 500);
    for (i, (name, result)) in results.into_iter().enumerate() {
        assert_eq!(name, uniform_name(i), "in ordinal order");
        let ArrayData::Float32(values) = result.unwrap().into_data() else {
            panic!("v is float32")
        };
        assert_eq!(values, sequential[i]);
    }

    // As completed: the same set, each once; an unknown array is an error per dataset.
    let mut names: Vec<String> = fresh
        .read_many(
            fresh.datasets().await.unwrap().into_iter().take(50),
            "v",
            Region::all(),
            8,
            Order::AsCompleted,
        )
        .map(|(name, r)| {
            assert!(r.is_ok());
            name
        })
        .collect()
        .await;
    names.sort();
    assert_eq!(names, (0..50).map(uniform_name).collect::<Vec<_>>());
    let errors: Vec<_> = fresh
        .read_many(
            fresh.datasets().await.unwrap().into_iter().take(3),
            "nope",
            Region::all(),
            2,
            Order::AsGiven,
        )
        .collect()
        .await;
    assert!(
        errors
            .iter()
            .all(|(_, r)| matches!(r, Err(AtlasError::ArrayNotFound { .. })))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dataset_handle_moves_into_a_spawned_task() {
    let (op, _, _) = counted_memory();
    op.write("data.atlas", uniform_collection(4).await)
        .await
        .unwrap();
    let atlas = Atlas::open((op, ""), &footers_only()).await.unwrap();
    let handles: Vec<_> = atlas
        .datasets()
        .await
        .unwrap()
        .into_iter()
        .map(|d| {
            tokio::spawn(async move { d.read_array::<f32>("v", Region::new().range(0..1)).await })
        })
        .collect();
    drop(atlas);
    for (i, h) in handles.into_iter().enumerate() {
        assert_eq!(h.await.unwrap().unwrap()[[0]], (i * 10) as f32);
    }
}

/// `n` datasets with one f32 array `v` of 64 noisy values, written with
/// 4 KiB blocks: the `v` segment's data spans about `n / 16` blocks.
async fn many_small_blocks(op: &opendal::Operator, n: usize) {
    let config = atlas::WriterConfig::default()
        .block_target_size(4096)
        .small_block_target_size(4096);
    let writer = atlas::AtlasWriter::create((op.clone(), ""), &config)
        .await
        .unwrap();
    for i in 0..n {
        let mut ds = writer.add_dataset(&uniform_name(i)).unwrap();
        ds.define_array::<f32>("v", &["x"], &[64], None, None)
            .unwrap();
        let values: Vec<f32> = (0..64u32)
            .map(|k| (i as f32).mul_add(0.37, (k.wrapping_mul(2_654_435_761) % 1000) as f32))
            .collect();
        let data = ndarray::ArrayD::from_shape_vec(vec![64], values).unwrap();
        ds.write_array("v", &[0], data.view()).unwrap();
        ds.finish().await.unwrap();
    }
    writer.finish().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweeping_a_variable_over_many_blocks_costs_a_few_reads_not_one_per_block() {
    let n = 4000;
    let (op, stats, _) = counted_memory();
    many_small_blocks(&op, n).await;

    // One dataset at a time: the first block alone, then read ahead.
    let atlas = Atlas::open((op.clone(), ""), &footers_only())
        .await
        .unwrap();
    atlas.array_stats("v").await.unwrap();
    stats.reset();
    let mut sequential = Vec::new();
    for d in atlas.datasets().await.unwrap() {
        sequential.push(d.read_array::<f32>("v", Region::all()).await.unwrap());
    }
    let walk = stats.snapshot();
    assert!(walk.reads <= 3, "{walk:?}");

    // read_many over every dataset: the data in one read.
    let fresh = Atlas::open((op, ""), &footers_only()).await.unwrap();
    fresh.array_stats("v").await.unwrap();
    stats.reset();
    let results: Vec<_> = fresh
        .read_many(
            fresh.datasets().await.unwrap(),
            "v",
            Region::all(),
            8,
            Order::AsGiven,
        )
        .collect()
        .await;
    let sweep = stats.snapshot();
    assert_eq!(sweep.reads, 1, "{sweep:?}");
    assert_eq!(
        sweep.bytes_read, walk.bytes_read,
        "the same data region, once"
    );
    assert_eq!(results.len(), n);
    for ((name, result), (i, expected)) in results.into_iter().zip(sequential.iter().enumerate()) {
        assert_eq!(name, uniform_name(i));
        let ArrayData::Float32(values) = result.unwrap().into_data() else {
            panic!("v is float32")
        };
        assert_eq!(&values, expected);
    }
}

#[tokio::test]
async fn statistics_and_attributes_come_from_the_footer_alone_and_the_open_after_them_reads_nothing_again()
 {
    let n = 10_000;
    let UniformV {
        atlas,
        stats,
        footer,
        ..
    } = uniform_with_footer_of_v(n).await;
    stats.reset();

    let folded = atlas.array_stats("v").await.unwrap().unwrap();
    assert_eq!(folded.row_count, 4 * n as u64);
    let rows = atlas.array_stats_by_dataset("v").await.unwrap();
    assert_eq!(rows.len(), n);
    assert_eq!(rows[4321].stats.min, Some(atlas::Value::Float(43_210.0)));
    let fold = stats.snapshot();
    assert_eq!(
        (fold.reads, fold.bytes_read),
        (footer_reads(&ReadParallelism::default(), footer), footer),
        "the footer, once"
    );
    assert_eq!(atlas.segments_opened(), 0, "array-format opened nothing");

    // Attributes come off the footer in hand too: no read, no open.
    let units = atlas
        .attributes_by_dataset(Some("v"), "units")
        .await
        .unwrap();
    assert_eq!(units.len(), n);
    assert_eq!(
        units[4321],
        (uniform_name(4321).into(), atlas::Attr::String("K".into()))
    );
    assert_eq!(atlas.segments_opened(), 0, "array-format opened nothing");
    assert_eq!(
        stats.snapshot().reads,
        fold.reads,
        "no read for the attributes"
    );
    // A read then opens the segment from the footer in hand and costs its block alone.
    let data = atlas
        .dataset(&uniform_name(77))
        .await
        .unwrap()
        .read_array::<f32>("v", Region::all())
        .await
        .unwrap();
    assert_eq!(
        data.iter().copied().collect::<Vec<_>>(),
        vec![770.0, 771.0, 772.0, 773.0]
    );
    assert_eq!(stats.snapshot().reads, fold.reads + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocks_by_dataset_come_from_the_footer_alone_and_group_neighbours() {
    // Enough datasets for the segment to outgrow the tail prefetch: its
    // footer is then read alone, without the data in front of it.
    let n = 2000;
    let (op, stats, _) = counted_memory();
    many_small_blocks(&op, n).await;
    let atlas = Atlas::open((op.clone(), ""), &footers_only())
        .await
        .unwrap();
    let v = atlas
        .lone_member()
        .unwrap()
        .segments()
        .into_iter()
        .find(|s| s.name == "v")
        .unwrap();
    let footer = segment_footer_bytes(&op, "data.atlas", v.offset, v.len).await;
    stats.reset();

    let rows = atlas.array_blocks_by_dataset("v").await.unwrap();
    let cost = stats.snapshot();
    assert_eq!(
        (cost.reads, cost.bytes_read),
        (footer_reads(&ReadParallelism::default(), footer), footer),
        "the footer, once, and no block"
    );
    assert_eq!(atlas.segments_opened(), 0, "array-format opened nothing");
    assert_eq!(rows.len(), n);
    let blocks: Vec<u32> = rows.iter().map(|r| r.first_block.unwrap()).collect();
    assert_eq!(rows[17].dataset, uniform_name(17));
    assert_eq!(blocks[0], 0);
    // 64 floats (256 B) per dataset in 4 KiB blocks: neighbours share a
    // block, and each next block starts where the last one ends.
    assert!(
        blocks.windows(2).all(|w| w[1] == w[0] || w[1] == w[0] + 1),
        "{blocks:?}"
    );
    let distinct = usize::try_from(*blocks.last().unwrap()).unwrap() + 1;
    assert!(
        (n / 32..=n / 8).contains(&distinct),
        "{distinct} blocks for {n} datasets"
    );

    // Once the segment is open the same answer comes from it, for nothing.
    let fresh = Atlas::open((op, ""), &footers_only()).await.unwrap();
    fresh
        .dataset(&uniform_name(0))
        .await
        .unwrap()
        .read_array::<f32>("v", Region::all())
        .await
        .unwrap();
    assert_eq!(fresh.segments_opened(), 1);
    stats.reset();
    assert_eq!(fresh.array_blocks_by_dataset("v").await.unwrap(), rows);
    assert_eq!(stats.snapshot().reads, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dataset_attributes_come_off_the_footer_each_with_its_own_value() {
    let n = 5_000;
    let UniformV { atlas, stats, .. } = uniform_with_footer_of_v(n).await;
    stats.reset();
    let idx = atlas.attributes_by_dataset(None, "idx").await.unwrap();
    let expected: Vec<_> = (0..n)
        .map(|i| (uniform_name(i).into(), atlas::Attr::Int64(i as i64)))
        .collect();
    assert_eq!(idx, expected);
    assert_eq!(atlas.segments_opened(), 0, "array-format opened nothing");
    let first = stats.snapshot();
    assert!(first.reads >= 1, "{first:?}");
    // Asked again, or for another key of the same segment: the footer is in hand.
    assert_eq!(
        atlas.attributes_by_dataset(None, "idx").await.unwrap(),
        expected
    );
    assert!(
        atlas
            .attributes_by_dataset(None, "no-such-key")
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(stats.snapshot().reads, first.reads);
}

/// `uniform_collection(n)` opened over a counting memory store.
struct UniformV {
    atlas: Atlas,
    stats: atlas_io::RequestStats,
    faults: atlas_io::Faults,
    op: opendal::Operator,
    /// The `v` segment.
    v: atlas::SegmentInfo,
    /// Bytes of the `v` segment's footer with its trailer.
    footer: u64,
}

async fn uniform_with_footer_of_v(n: usize) -> UniformV {
    let (op, stats, faults) = counted_memory();
    op.write("data.atlas", uniform_collection(n).await)
        .await
        .unwrap();
    let atlas = Atlas::open((op.clone(), ""), &footers_only())
        .await
        .unwrap();
    let v = atlas
        .lone_member()
        .unwrap()
        .segments()
        .into_iter()
        .find(|v| v.name == "v")
        .unwrap();
    let footer = segment_footer_bytes(&op, "data.atlas", v.offset, v.len).await;
    UniformV {
        atlas,
        stats,
        faults,
        op,
        v,
        footer,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_many_reads_the_data_front_together_with_the_rest_of_the_footer() {
    let n = 10_000;
    let UniformV {
        atlas,
        stats,
        faults,
        v,
        footer,
        ..
    } = uniform_with_footer_of_v(n).await;
    assert!(footer > atlas_segment::DEFAULT_PREFETCH, "{footer}");
    let data = v.len - footer;
    stats.reset();
    faults.set_latency(std::time::Duration::from_millis(30));
    let results: Vec<_> = atlas
        .read_many(
            atlas.datasets().await.unwrap(),
            "v",
            Region::all(),
            8,
            Order::AsGiven,
        )
        .collect()
        .await;
    let cost = stats.snapshot();
    // The tail, then the footer's rest and the data region at once.
    assert_eq!(
        cost.reads,
        footer_reads(&ReadParallelism::default(), footer) + 1,
        "{cost:?}"
    );
    assert_eq!(
        cost.bytes_read,
        footer + data,
        "the footer and the data, once"
    );
    let rest = ReadParallelism::default().requests(&(0..footer - atlas_segment::DEFAULT_PREFETCH));
    assert_eq!(
        stats.max_reads_in_flight(),
        rest + 1,
        "the footer's rest (in {rest} parts) and the data front in flight together"
    );
    let ranges = ranges_read(&stats, "data.atlas");
    assert_eq!(ranges.first(), Some(&(v.offset..v.offset + data)));
    assert_eq!(results.len(), n);
    for (i, (name, result)) in results.into_iter().enumerate().step_by(997) {
        assert_eq!(name, uniform_name(i));
        let ArrayData::Float32(values) = result.unwrap().into_data() else {
            panic!("v is float32")
        };
        assert_eq!(values[0], (i * 10) as f32);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_the_first_dataset_starts_a_walk_but_asking_its_layout_does_not() {
    let n = 4000;
    let (op, stats, _) = counted_memory();
    many_small_blocks(&op, n).await;
    let opened = || async {
        let atlas = Atlas::open((op.clone(), ""), &footers_only())
            .await
            .unwrap();
        // The footer in hand: the segment then opens whole.
        atlas.array_stats("v").await.unwrap();
        stats.reset();
        atlas
    };
    let atlas = opened().await;
    let first = atlas.dataset(&uniform_name(0)).await.unwrap();
    first.array_layout("v").await.unwrap();
    assert_eq!(atlas.segments_opened(), 1);
    assert_eq!(stats.snapshot().reads, 0, "the layout reads no data");

    let atlas = opened().await;
    let v = atlas
        .lone_member()
        .unwrap()
        .segments()
        .into_iter()
        .find(|v| v.name == "v")
        .unwrap();
    let footer = segment_footer_bytes(&op, "data.atlas", v.offset, v.len).await;
    stats.reset();
    let first = atlas.dataset(&uniform_name(0)).await.unwrap();
    first.read_array::<f32>("v", Region::all()).await.unwrap();
    let cost = stats.snapshot();
    // The data region (under the 8 MiB first window, so all of it) in
    // one read: not split below 4 MiB.
    assert_eq!(
        (cost.reads, cost.bytes_read),
        (1, v.len - footer),
        "{cost:?}"
    );
    // The walk goes on without another read.
    for d in atlas.datasets().await.unwrap() {
        d.read_array::<f32>("v", Region::all()).await.unwrap();
    }
    assert_eq!(stats.snapshot().reads, 1);
}

#[tokio::test]
async fn a_loop_over_datasets_stops_looking_arrays_up_and_reads_the_footer_once() {
    let n = 10_000;
    let UniformV { atlas, stats, .. } = uniform_with_footer_of_v(n).await;
    stats.reset();
    let mut lookups = 0;
    for i in 0..40 {
        let view = atlas.dataset(&uniform_name(i * 97)).await.unwrap();
        view.read_array::<f32>("v", atlas::Region::all())
            .await
            .unwrap();
        if atlas.segments_opened() == 0 {
            lookups += 1;
        }
    }
    // A handful of arrays are each found by a lookup; the loop then opens
    // the segment whole, and the rest cost at most their blocks.
    assert_eq!(lookups, 8, "eight lookups, then one open of the segment");
    assert_eq!(atlas.segments_opened(), 1);
    assert!(
        stats.snapshot().reads < 8 * 5 + 3 + 40,
        "{:?}",
        stats.snapshot()
    );
}
