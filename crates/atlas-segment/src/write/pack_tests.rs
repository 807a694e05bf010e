//! The segment writer against array-format's own: the same arrays, chunks,
//! fill values and attributes must give the same bytes.

use std::sync::Arc;

use array_format::{ArrayWriter, NoCompression, WriterConfig, ZstdCodec};
use atlas_format::Codec;
use ndarray::{ArrayD, IxDyn, SliceInfoElem};
use object_store::memory::InMemory;
use object_store::{ObjectStore, ObjectStoreExt};
use proptest::prelude::*;

use crate::types::element::Element;
use crate::types::value::{Timestamp, Value, fill_to_stored};
use crate::{Attr, SegmentError, SegmentWriter, WriteOptions};

/// One array of a test segment.
#[derive(Debug, Clone)]
struct Spec {
    kind: u8,
    shape: Vec<u64>,
    chunk: Option<Vec<u64>>,
    /// Index into the values a fill is taken from, or none.
    fill: Option<u8>,
    seed: u64,
    attrs: Vec<(u8, u8)>,
    /// Write the chunks last to first.
    reversed: bool,
}

fn spec() -> impl Strategy<Value = Spec> {
    let dims = prop::collection::vec((0u64..7, 1u64..4), 0..3);
    (
        0u8..13,
        dims,
        any::<bool>(),
        prop::option::of(0u8..5),
        any::<u64>(),
        prop::collection::vec((0u8..5, 0u8..13), 0..4),
        any::<bool>(),
    )
        .prop_map(|(kind, dims, chunked, fill, seed, attrs, reversed)| Spec {
            kind,
            shape: dims.iter().map(|d| d.0).collect(),
            chunk: chunked.then(|| dims.iter().map(|d| d.1).collect()),
            fill,
            seed,
            attrs,
            reversed,
        })
}

/// A small pool of values, so fills and repeats occur.
trait Pool: Element {
    fn pool(i: u64) -> Self;
}

macro_rules! int_pool {
    ($($ty:ty),*) => {$(
        impl Pool for $ty {
            fn pool(i: u64) -> Self {
                [0 as $ty, 1 as $ty, 7 as $ty, <$ty>::MAX, <$ty>::MIN, 100 as $ty][(i % 6) as usize]
            }
        }
    )*};
}
int_pool!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! float_pool {
    ($($ty:ty),*) => {$(
        impl Pool for $ty {
            fn pool(i: u64) -> Self {
                [0.0, -0.0, 1.5, <$ty>::NAN, -<$ty>::NAN, <$ty>::INFINITY, -2.25][(i % 7) as usize]
            }
        }
    )*};
}
float_pool!(f32, f64);

impl Pool for Timestamp {
    fn pool(i: u64) -> Self {
        Timestamp([0, -1, 1_700_000_000_000_000_000, i64::MIN, 42][(i % 5) as usize])
    }
}

impl Pool for String {
    fn pool(i: u64) -> Self {
        ["", "a", "ab", "b", "zz\u{e9}"][(i % 5) as usize].to_owned()
    }
}

impl Pool for Vec<u8> {
    fn pool(i: u64) -> Self {
        [vec![], vec![0], vec![0, 1], vec![255]][(i % 4) as usize].clone()
    }
}

fn attr(i: u8) -> Attr {
    match i {
        0 => Attr::String("degree_Celsius".into()),
        1 => Attr::Float64(0.5),
        2 => Attr::Int32List(vec![1, 2, 3]),
        3 => Attr::StringList(vec!["a".into(), "units".into(), "degree_Celsius".into()]),
        4 => Attr::Binary(vec![1, 2]),
        5 => Attr::Float32(f32::NAN),
        6 => Attr::String("a".into()),
        7 => Attr::Int64(-1),
        8 => Attr::BoolList(vec![true, false]),
        9 => Attr::BinaryList(vec![vec![], vec![7, 8]]),
        10 => Attr::UInt16(7),
        11 => Attr::Float64List(vec![-0.0, f64::INFINITY]),
        _ => Attr::UInt64List(vec![u64::MAX]),
    }
}

const KEYS: [&str; 5] = ["units", "long_name", "scale", "tags", "valid_min"];

/// Every chunk's origin and extent, in row-major order.
fn chunks(shape: &[u64], chunk: &[u64]) -> Vec<(Vec<u64>, Vec<usize>)> {
    let mut out = vec![(Vec::new(), Vec::new())];
    for (&len, &step) in shape.iter().zip(chunk) {
        let mut next = Vec::new();
        for (origin, extent) in &out {
            let mut start = 0;
            while start < len {
                let mut o = origin.clone();
                o.push(start);
                let mut e = extent.clone();
                e.push(step.min(len - start) as usize);
                next.push((o, e));
                start += step;
            }
        }
        out = next;
    }
    out
}

/// Defines and writes `spec` as array `name` in both writers.
fn write_both<T: Pool>(
    name: &str,
    spec: &Spec,
    ours: &mut SegmentWriter,
    theirs: &mut ArrayWriter,
) -> Result<(), SegmentError> {
    let n: u64 = spec.shape.iter().product();
    let values: Vec<T> = (0..n)
        .map(|i| T::pool(spec.seed.wrapping_add(i * 7919)))
        .collect();
    let dims: Vec<usize> = spec.shape.iter().map(|&d| d as usize).collect();
    let data = ArrayD::from_shape_vec(IxDyn(&dims), values).unwrap();
    let fill = spec
        .fill
        .map(|i| T::to_fill_value(T::pool(u64::from(i))))
        .filter(T::accepts_fill);
    let names: Vec<String> = (0..dims.len()).map(|i| format!("d{i}")).collect();
    ours.define_array::<T>(
        name,
        names.clone(),
        &spec.shape,
        spec.chunk.as_deref(),
        fill.as_ref(),
    )?;
    theirs
        .define_array::<T::Stored>(
            name,
            names,
            dims.clone(),
            spec.chunk
                .as_ref()
                .map(|c| c.iter().map(|&x| x as usize).collect()),
            fill.as_ref().and_then(fill_to_stored),
        )
        .unwrap();
    let grid = spec.chunk.clone().unwrap_or_else(|| spec.shape.clone());
    let mut all = chunks(&spec.shape, &grid);
    if spec.reversed {
        all.reverse();
    }
    for (origin, extent) in all {
        let slice: Vec<SliceInfoElem> = origin
            .iter()
            .zip(&extent)
            .map(|(&o, &e)| (o as usize..o as usize + e).into())
            .collect();
        let view = data.slice(slice.as_slice());
        ours.write_array(name, &origin, view.view())?;
        let start: Vec<usize> = origin.iter().map(|&o| o as usize).collect();
        T::with_stored(view.view(), |stored| {
            theirs.write_array(name, start, stored)
        })
        .unwrap();
    }
    for &(key, value) in &spec.attrs {
        let key = KEYS[usize::from(key) % KEYS.len()];
        ours.set_attribute(name, key, &attr(value))?;
        theirs
            .set_attribute(name, key, attr(value).to_stored())
            .unwrap();
    }
    Ok(())
}

fn write_spec(
    name: &str,
    spec: &Spec,
    ours: &mut SegmentWriter,
    theirs: &mut ArrayWriter,
) -> Result<(), SegmentError> {
    match spec.kind {
        0 => write_both::<i8>(name, spec, ours, theirs),
        1 => write_both::<i16>(name, spec, ours, theirs),
        2 => write_both::<i32>(name, spec, ours, theirs),
        3 => write_both::<i64>(name, spec, ours, theirs),
        4 => write_both::<u8>(name, spec, ours, theirs),
        5 => write_both::<u16>(name, spec, ours, theirs),
        6 => write_both::<u32>(name, spec, ours, theirs),
        7 => write_both::<u64>(name, spec, ours, theirs),
        8 => write_both::<f32>(name, spec, ours, theirs),
        9 => write_both::<f64>(name, spec, ours, theirs),
        10 => write_both::<Timestamp>(name, spec, ours, theirs),
        11 => write_both::<String>(name, spec, ours, theirs),
        _ => write_both::<Vec<u8>>(name, spec, ours, theirs),
    }
}

fn options(block: usize) -> WriteOptions {
    WriteOptions::default()
        .codec(Codec::Zstd)
        .zstd_level(atlas_format::DEFAULT_ZSTD_LEVEL)
        .parallel_zstd(false)
        .block_target_size(block)
}

/// Both writers' bytes for `specs` (arrays `a0`, `a1`, …), zstd blocks or
/// uncompressed ones.
fn both(specs: &[Spec], block: usize, zstd: bool) -> (Vec<u8>, Vec<u8>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (mut ours, mut theirs) = if zstd {
        let theirs = ArrayWriter::new(WriterConfig {
            codec: ZstdCodec {
                level: atlas_format::DEFAULT_ZSTD_LEVEL,
            },
            block_target_size: block,
        });
        (SegmentWriter::new("seg", &options(block)).unwrap(), theirs)
    } else {
        let theirs = ArrayWriter::new(WriterConfig {
            codec: NoCompression,
            block_target_size: block,
        });
        let plain = options(block).codec(Codec::Uncompressed);
        (SegmentWriter::new("seg", &plain).unwrap(), theirs)
    };
    for (i, spec) in specs.iter().enumerate() {
        write_spec(&format!("a{i}"), spec, &mut ours, &mut theirs).unwrap();
    }
    if !specs.is_empty() {
        // An array defined before the last one, found through the name index.
        ours.set_attribute("a0", "late", &attr(1)).unwrap();
        theirs
            .set_attribute("a0", "late", attr(1).to_stored())
            .unwrap();
    }
    rt.block_on(async {
        let ours = ours.finish_to_bytes().await.unwrap().to_vec();
        let store = Arc::new(InMemory::new());
        let path = object_store::path::Path::from("f");
        theirs
            .finish(store.clone() as Arc<dyn ObjectStore>, path.clone())
            .await
            .unwrap();
        let theirs = store.get(&path).await.unwrap().bytes().await.unwrap();
        (ours, theirs.to_vec())
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn segments_are_byte_identical_to_array_formats_writer(
        specs in prop::collection::vec(spec(), 0..6),
        block in prop::sample::select(vec![1usize, 16, 64, 1 << 20]),
    ) {
        let (ours, theirs) = both(&specs, block, true);
        prop_assert_eq!(ours, theirs);
    }
}

/// Attribute `key` of every array in the segment `bytes`, as array-format's
/// open decodes it.
fn array_formats_column(bytes: &[u8], key: &str) -> Option<Vec<Option<Attr>>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = Arc::new(InMemory::new());
        let path = object_store::path::Path::from("f");
        store
            .put(&path, bytes::Bytes::copy_from_slice(bytes).into())
            .await
            .unwrap();
        let file = array_format::ArrayFile::open(store, path, array_format::ReadConfig::default())
            .await
            .unwrap();
        file.attribute_column(key).map(|cells| {
            cells
                .iter()
                .map(|c| c.as_ref().map(Attr::from_stored))
                .collect()
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    #[test]
    fn attributes_read_off_the_footer_equal_array_formats_columns(
        specs in prop::collection::vec(spec(), 0..6),
    ) {
        let (ours, _) = both(&specs, 64, true);
        let len = ours.len() as u64;
        let validated = crate::footer::validate::validate_footer(&bytes::Bytes::from(ours.clone()), len).unwrap();
        for key in KEYS.iter().chain(&["late", "absent", "degree_Celsius"]) {
            let off_footer = crate::footer::attributes::attribute_cells(&validated.archive, key).unwrap();
            // Debug output, so that NaN values compare equal.
            prop_assert_eq!(
                format!("{off_footer:?}"),
                format!("{:?}", array_formats_column(&ours, key)),
                "key {}", key
            );
        }
    }
}

#[test]
fn a_large_segment_spills_blocks_and_stays_identical() {
    // 40 arrays of 50 000 f64 in 64 KiB uncompressed blocks: 16 MB in
    // hundreds of spilled blocks, uploaded in several parts.
    let specs: Vec<Spec> = (0..40)
        .map(|i| Spec {
            kind: 9,
            shape: vec![50_000],
            chunk: Some(vec![8_000]),
            fill: Some(3),
            seed: i,
            attrs: vec![(0, 0), (1, 1)],
            reversed: false,
        })
        .collect();
    let (ours, theirs) = both(&specs, 64 * 1024, false);
    assert!(ours.len() > 16_000_000, "{}", ours.len());
    assert_eq!(ours, theirs);
}

#[test]
fn writes_that_are_not_one_whole_chunk_are_refused() {
    let mut w = SegmentWriter::new("seg", &options(1024)).unwrap();
    w.define_array::<i32>("x", vec![], &[10], Some(&[4]), None)
        .unwrap();
    let three = ndarray::Array::from_vec(vec![1i32, 2, 3]).into_dyn();
    let four = ndarray::Array::from_vec(vec![1i32, 2, 3, 4]).into_dyn();
    let two = ndarray::Array::from_vec(vec![1i32, 2]).into_dyn();
    // Part of a chunk, a chunk off its corner, past the end.
    for (origin, data) in [(0, &three), (1, &four), (12, &two)] {
        let err = w.write_array("x", &[origin], data.view()).unwrap_err();
        assert!(
            matches!(err, SegmentError::InvalidRegion { .. }),
            "{origin}: {err:?}"
        );
    }
    // The clipped last chunk is whole.
    w.write_array("x", &[8], two.view()).unwrap();
    let err = w.write_array("x", &[8], two.view()).unwrap_err();
    assert!(
        matches!(err, SegmentError::InvalidRegion { ref what, .. } if what.contains("twice")),
        "{err:?}"
    );
}

#[test]
fn misuse_of_the_segment_writer_gets_typed_errors() {
    let mut w = SegmentWriter::new("seg", &options(1024)).unwrap();
    w.define_array::<f32>("x", vec![], &[2], None, None)
        .unwrap();
    let err = w
        .define_array::<f32>("x", vec![], &[2], None, None)
        .unwrap_err();
    assert!(
        matches!(err, SegmentError::InvalidRegion { ref what, .. } if what.contains("already"))
    );
    let ints = ndarray::Array::from_vec(vec![1i32, 2]).into_dyn();
    let err = w.write_array("x", &[0], ints.view()).unwrap_err();
    assert!(matches!(err, SegmentError::DTypeMismatch { .. }), "{err:?}");
    let err = w.write_array("y", &[0], ints.view()).unwrap_err();
    assert!(
        matches!(err, SegmentError::InvalidRegion { ref what, .. } if what.contains("not defined"))
    );
    let err = w
        .set_attribute("y", "units", &Attr::String("K".into()))
        .unwrap_err();
    assert!(matches!(err, SegmentError::InvalidRegion { .. }), "{err:?}");
    let err = w
        .define_array::<f32>("z", vec![], &[4, 4], Some(&[2]), None)
        .unwrap_err();
    assert!(matches!(err, SegmentError::InvalidRegion { .. }), "{err:?}");
    let err = w
        .define_array::<f32>("z", vec![], &[1 << 40], None, None)
        .unwrap_err();
    assert!(matches!(err, SegmentError::InvalidRegion { .. }), "{err:?}");
}

#[test]
fn a_fill_value_of_nan_counts_nans_as_nulls() {
    let mut w = SegmentWriter::new("seg", &options(1024)).unwrap();
    w.define_array::<f32>("x", vec![], &[4], None, Some(&Value::Float(f64::NAN)))
        .unwrap();
    let data = ndarray::Array::from_vec(vec![f32::NAN, 2.0, -1.0, f32::NAN]).into_dyn();
    w.write_array("x", &[0], data.view()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let stats = rt.block_on(async {
        let bytes = w.finish_to_bytes().await.unwrap();
        let segment = crate::open_bytes("seg", bytes).await.unwrap();
        segment.array("x").unwrap().stats().unwrap()
    });
    assert_eq!(stats.null_count, 2);
    assert_eq!(stats.row_count, 4);
    assert_eq!(stats.min, Some(crate::Value::Float(-1.0)));
    assert_eq!(stats.max, Some(crate::Value::Float(2.0)));
}

/// The bytes and the digest `finish` returns of `specs`, finished straight
/// into a container sink or spooled first, by a writer keeping its arrays'
/// digests or not.
fn finished(
    specs: &[Spec],
    block: usize,
    spooled: bool,
    digests: bool,
) -> (bytes::Bytes, crate::SegmentDigest) {
    let mut ours = SegmentWriter::new("seg", &options(block).digests(digests)).unwrap();
    let mut theirs = ArrayWriter::new(WriterConfig {
        codec: NoCompression,
        block_target_size: block,
    });
    for (i, spec) in specs.iter().enumerate() {
        write_spec(&format!("a{i}"), spec, &mut ours, &mut theirs).unwrap();
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let op = opendal::Operator::new(opendal::services::Memory::default()).unwrap();
        let sink = crate::ContainerSink::new(op.writer("c").await.unwrap(), "c");
        let (_, digest) = if spooled {
            ours.finish_spooled().await.unwrap().append_to(&sink).await
        } else {
            ours.finish(&sink).await
        }
        .unwrap();
        sink.close().await.unwrap();
        (op.read("c").await.unwrap().to_bytes(), digest)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    #[test]
    fn the_digest_a_finished_segment_returns_is_what_its_footer_reads_back_as(
        specs in prop::collection::vec(spec(), 0..6),
        block in prop::sample::select(vec![1usize, 16, 1 << 20]),
        spooled in any::<bool>(),
    ) {
        let (bytes, digest) = finished(&specs, block, spooled, true);
        // A writer keeping no digests writes the same bytes and returns
        // the blocks alone.
        let (same, blocks_only) = finished(&specs, block, spooled, false);
        prop_assert_eq!(&bytes, &same);
        prop_assert!(blocks_only.arrays().is_empty());
        prop_assert_eq!(blocks_only.blocks(), digest.blocks());
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let segment = rt.block_on(crate::open_bytes("seg", bytes)).unwrap();
        let read_back = crate::SegmentDigest::of_segment(&segment);
        // Compared as printed, so that a NaN statistic equals itself.
        prop_assert_eq!(format!("{:?}", digest.arrays()), format!("{:?}", read_back.arrays()));
        prop_assert_eq!(digest.blocks(), read_back.blocks());
        prop_assert_eq!(digest.data_end(), read_back.data_end());
    }

    #[test]
    fn a_view_made_from_a_segments_places_reads_what_the_segment_reads(
        specs in prop::collection::vec(spec(), 1..6),
        block in prop::sample::select(vec![1usize, 16, 1 << 20]),
    ) {
        let (bytes, digest) = finished(&specs, block, false, true);
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            let (segments, range) = one_segment(&bytes).await;
            let placed: Vec<crate::ArrayDigest> = digest
                .arrays()
                .iter()
                .map(|a| {
                    crate::ArrayDigest::placed(
                        a.name.clone(),
                        a.dtype.clone(),
                        a.shape.clone(),
                        a.chunk_shape.clone(),
                        a.dimension_names.clone(),
                        a.fill.clone(),
                        a.chunks.clone(),
                    )
                })
                .collect();
            let view = segments
                .open_placed(0, &range, 7, digest.data_end(), digest.blocks(), placed.clone())
                .unwrap();
            let whole = segments.get(0, &range).await.unwrap();
            for a in digest.arrays() {
                let info = whole.array(&a.name).unwrap();
                let origin = vec![0u64; info.shape().len()];
                let extent: Vec<u64> = info.shape().iter().map(|&n| u64::from(n)).collect();
                let want = whole.read_any(&a.name, &origin, &extent).await;
                let got = view.read_any(&a.name, &origin, &extent).await;
                assert_eq!(format!("{want:?}"), format!("{got:?}"), "{}", a.name);
            }
            // A block said to lie past the data region is refused, not read.
            let mut blocks = digest.blocks().to_vec();
            if let Some(b) = blocks.first_mut() {
                b.offset = digest.data_end();
                let refused = segments.open_placed(0, &range, 8, digest.data_end(), &blocks, placed);
                assert!(
                    matches!(refused, Err(crate::SegmentError::Footer { .. })),
                    "{refused:?}"
                );
            }
        });
    }
}

/// `bytes` as the one segment of an in-memory container, the container's
/// segments, and that segment's range.
async fn one_segment(bytes: &bytes::Bytes) -> (crate::ContainerSegments, crate::SegmentRange) {
    let op = opendal::Operator::new(opendal::services::Memory::default()).unwrap();
    op.write("c", bytes.clone()).await.unwrap();
    let range = crate::SegmentRange {
        name: "seg".into(),
        offset: 0,
        len: bytes.len() as u64,
        arrays_hint: 0,
    };
    let segments = crate::ContainerSegments::new(
        op,
        "c",
        1,
        crate::SegmentOptions::default(),
        bytes::Bytes::new(),
        0,
    );
    (segments, range)
}

/// Runs `test` on two float arrays `a` and `b` written to one segment of
/// an in-memory container: the segment's digest, the container's segments
/// and the segment's range.
fn on_two_float_arrays(
    test: impl AsyncFnOnce(crate::SegmentDigest, crate::ContainerSegments, crate::SegmentRange),
) {
    let mut w = SegmentWriter::new("seg", &options(1024)).unwrap();
    for name in ["a", "b"] {
        w.define_array::<f32>(name, vec!["n".into()], &[3], None, None)
            .unwrap();
        let data = ndarray::Array::from_vec(vec![1.0f32, 2.0, 3.0]).into_dyn();
        w.write_array(name, &[0], data.view()).unwrap();
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let bytes = w.finish_to_bytes().await.unwrap();
        let digest = crate::SegmentDigest::of_segment(
            &crate::open_bytes("seg", bytes.clone()).await.unwrap(),
        );
        let (segments, range) = one_segment(&bytes).await;
        test(digest, segments, range).await;
    });
}

#[test]
fn a_chunk_place_past_its_block_flags_that_array_and_the_others_still_read() {
    on_two_float_arrays(async |digest, segments, range| {
        let mut placed = digest.arrays().to_vec();
        let block_len = digest.blocks()[placed[0].chunks[0].block as usize].decoded;
        placed[0].chunks[0].offset = u32::try_from(block_len).unwrap();
        let view = segments
            .open_placed(0, &range, 1, digest.data_end(), digest.blocks(), placed)
            .unwrap();
        let err = view.read_any("a", &[], &[]).await.unwrap_err();
        assert!(
            matches!(
                err,
                SegmentError::Array {
                    problem: crate::ArrayProblem::ChunkPastBlock { .. },
                    ..
                }
            ),
            "{err:?}"
        );
        let b = view.read::<f32>("b", &[], &[]).await.unwrap();
        assert_eq!(b.as_slice().unwrap(), &[1.0, 2.0, 3.0]);
        // Fixed-width arrays are read from their places alone: the view
        // carries no footer, so it has no attributes and array-format never opens it.
        assert_eq!(view.attribute_cells("units").unwrap(), None);
        assert!(!view.array_format_opened());
    });
}

#[test]
fn array_near_finds_the_array_whatever_the_hint_and_learns_a_views_shift() {
    on_two_float_arrays(async |digest, segments, range| {
        // A view of the second dataset alone: its one array sits one before its ordinal.
        let placed = vec![digest.arrays()[1].clone()];
        let view = segments
            .open_placed(0, &range, 1, digest.data_end(), digest.blocks(), placed)
            .unwrap();
        for hint in [1, 1, 0, 7, usize::MAX, 1] {
            let found = view.array_near("b", hint).unwrap();
            assert_eq!((found.name(), found.position()), ("b", 0), "hint {hint}");
        }
        let err = view.array_near("a", 0).unwrap_err();
        assert!(matches!(err, SegmentError::Corrupt { .. }), "{err:?}");
    });
}

#[test]
fn digests_share_the_axis_names_of_consecutive_arrays_that_name_them_alike() {
    let array = |shape: Vec<u64>| Spec {
        kind: 9,
        shape,
        chunk: None,
        fill: None,
        seed: 1,
        attrs: Vec::new(),
        reversed: false,
    };
    // Axes named d0, d0, then d0 d1, then d0 again.
    let specs = [
        array(vec![3]),
        array(vec![4]),
        array(vec![2, 2]),
        array(vec![5]),
    ];
    let (bytes, written) = finished(&specs, 1 << 20, false, true);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let (segments, range) = one_segment(&bytes).await;
        // Read off the footer alone, then from the segment once it is open.
        let from_footer = segments.digest(0, &range).await.unwrap();
        let opened = segments.get(0, &range).await.unwrap();
        let from_segment = crate::SegmentDigest::of_segment(&opened);
        for (what, digest) in [
            ("writer", &written),
            ("footer", &*from_footer),
            ("segment", &from_segment),
        ] {
            let dims: Vec<&std::sync::Arc<[String]>> =
                digest.arrays().iter().map(|a| &a.dimension_names).collect();
            assert!(std::sync::Arc::ptr_eq(dims[0], dims[1]), "{what}");
            assert!(!std::sync::Arc::ptr_eq(dims[1], dims[2]), "{what}");
            assert_eq!(**dims[2], ["d0".to_owned(), "d1".to_owned()], "{what}");
            assert_eq!(dims[3], dims[0], "{what}");
        }
    });
}
