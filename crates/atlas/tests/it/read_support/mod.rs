//! Shared helpers of the read-path tests: operators over fixtures, a counting
//! layer, and builders of synthetic collections (segments written with
//! atlas-segment's `SegmentWriter`, `FooterBuilder`, `assemble`), independent
//! of the facade's writer.

#![allow(dead_code)]

use std::path::PathBuf;

use atlas::{Attr, Codec, DType};
use atlas_format::{ArrayDecl, DatasetSchema, FooterBuilder, assemble};
use atlas_io::{CountingLayer, RequestStats};
use atlas_segment::{SegmentWriter, WriteOptions};
use opendal::Operator;
use smol_str::SmolStr;

/// The fixture names under `testdata/v8`.
pub const FIXTURES: [&str; 4] = ["small", "deleted", "mixed", "empty"];

/// `testdata/v8/<name>` of the workspace.
pub fn fixture_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/v8")
        .join(name)
}

/// The fixture's manifest.
pub fn manifest(name: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(fixture_dir(name).join("manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A fresh in-memory operator.
pub fn memory() -> Operator {
    Operator::new(opendal::services::Memory::default()).unwrap()
}

/// An in-memory operator behind a counting layer (suffix reads as the service has them).
pub fn counted_memory() -> (Operator, RequestStats, atlas_io::Faults) {
    counted(CountingLayer::new())
}

/// An in-memory operator whose counting layer refuses suffix reads.
pub fn counted_memory_without_suffix() -> (Operator, RequestStats, atlas_io::Faults) {
    counted(CountingLayer::new().without_suffix_reads())
}

fn counted(layer: CountingLayer) -> (Operator, RequestStats, atlas_io::Faults) {
    let stats = layer.stats();
    let faults = layer.faults();
    (memory().layer(layer), stats, faults)
}

/// Copies the fixture's files under `prefix` of `op`.
pub async fn load_fixture(op: &Operator, name: &str, prefix: &str) {
    for file in ["data.atlas", "deleted.mask"] {
        let path = fixture_dir(name).join(file);
        if let Ok(bytes) = std::fs::read(&path) {
            op.write(&join(prefix, file), bytes).await.unwrap();
        }
    }
}

/// `prefix/file`.
pub fn join(prefix: &str, file: &str) -> String {
    atlas_io::object_path(prefix, file)
}

/// The bytes of a finished segment.
pub async fn finish_segment(writer: SegmentWriter) -> Vec<u8> {
    writer.finish_to_bytes().await.unwrap().to_vec()
}

/// A writer for one segment, zstd blocks.
pub fn segment_writer() -> SegmentWriter {
    SegmentWriter::new("test", &WriteOptions::default()).unwrap()
}

/// Name of dataset `i` of a uniform collection.
pub fn uniform_name(i: usize) -> String {
    format!("ds{i:05}")
}

/// A collection of `n` datasets of one schema: array `v` (f32, shape [4],
/// values `i*10 .. i*10+3`, attribute `units = "K"`) and dataset attribute
/// `idx` (int64 `i`). Built with array-format and `FooterBuilder` directly.
pub async fn uniform_collection(n: usize) -> Vec<u8> {
    let mut footer = FooterBuilder::new(Codec::Zstd, 1_700_000_000_000);
    let schema = footer.intern_schema(&DatasetSchema {
        arrays: vec![ArrayDecl {
            name: SmolStr::new("v"),
            dtype: DType::Float32,
            attributes: vec![(SmolStr::new("units"), DType::String)],
        }],
        attributes: vec![(SmolStr::new("idx"), DType::Int64)],
    });
    let mut v = segment_writer();
    let mut d = segment_writer();
    for i in 0..n {
        let name = uniform_name(i);
        footer.push_dataset(&name, schema).unwrap();
        v.define_array::<f32>(&name, vec!["x".into()], &[4], None, None)
            .unwrap();
        let base = (i * 10) as f32;
        let data =
            ndarray::Array::from_vec(vec![base, base + 1.0, base + 2.0, base + 3.0]).into_dyn();
        v.write_array(&name, &[0], data.view()).unwrap();
        v.set_attribute(&name, "units", &Attr::String("K".into()))
            .unwrap();
        d.define_array::<u8>(&name, vec![], &[], None, None)
            .unwrap();
        d.set_attribute(&name, "idx", &Attr::Int64(i as i64))
            .unwrap();
    }
    let v = finish_segment(v).await;
    let d = finish_segment(d).await;
    footer.push_variable("v", v.len() as u64).unwrap();
    footer.push_variable("_datasets", d.len() as u64).unwrap();
    assemble(&footer.finish(), &[&v, &d]).unwrap()
}

/// A container whose footer names `n` datasets with incompressible names, and
/// one dummy segment: for open-only tests (the segment is never read).
pub fn big_footer_container(n: usize) -> Vec<u8> {
    let mut footer = FooterBuilder::new(Codec::Zstd, 0);
    let schema = footer.intern_schema(&DatasetSchema {
        arrays: vec![ArrayDecl {
            name: SmolStr::new("v"),
            dtype: DType::Float64,
            attributes: vec![],
        }],
        attributes: vec![],
    });
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        footer
            .push_dataset(&format!("{i}-{x:016x}"), schema)
            .unwrap();
    }
    let segment = b"not read by an open".to_vec();
    footer.push_variable("v", segment.len() as u64).unwrap();
    assemble(&footer.finish(), &[&segment]).unwrap()
}

/// Reads of `path` in the log.
pub fn reads_of(stats: &RequestStats, path: &str) -> usize {
    stats.read_log().iter().filter(|r| r.path == path).count()
}
