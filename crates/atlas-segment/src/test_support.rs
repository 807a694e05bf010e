//! Helpers shared by the store and sink tests: array-format files and operators.

#![allow(dead_code)]

use std::sync::Arc;

use array_format::{ArrayWriter, Lz4Codec, NoCompression, WriterConfig};
use atlas_io::CountingLayer;
use bytes::Bytes;
use ndarray::Array;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use opendal::Operator;

/// A memory operator wrapped in a fresh counting layer.
pub fn counted_memory() -> (Operator, CountingLayer) {
    let layer = CountingLayer::new();
    let op = Operator::new(opendal::services::Memory::default())
        .expect("memory operator")
        .layer(layer.clone());
    (op, layer)
}

/// `n` f32 values that depend on `seed`, so files differ.
pub fn values(n: usize, seed: f32) -> Vec<f32> {
    (0..n).map(|i| seed + i as f32 * 0.5).collect()
}

/// An array-format writer holding one 1-D f32 array called `name`.
pub fn writer_with(name: &str, data: &[f32], compress: bool) -> ArrayWriter {
    let mut w = if compress {
        ArrayWriter::new(WriterConfig::new(Lz4Codec))
    } else {
        ArrayWriter::new(WriterConfig::new(NoCompression))
    };
    w.define_array::<f32>(name, vec!["i".into()], vec![data.len()], None, None)
        .expect("define");
    let arr = Array::from_vec(data.to_vec()).into_dyn();
    w.write_array(name, vec![0], arr.view()).expect("write");
    w
}

/// The bytes of a finished array-format file with one array `name` = `data`.
pub async fn array_file_bytes(name: &str, data: &[f32]) -> Bytes {
    let store = Arc::new(InMemory::new());
    let path = Path::from("file.af");
    writer_with(name, data, true)
        .finish(store.clone() as Arc<dyn ObjectStore>, path.clone())
        .await
        .expect("finish");
    store
        .get(&path)
        .await
        .expect("get")
        .bytes()
        .await
        .expect("bytes")
}

/// `prefix` junk bytes, then `file`, then `suffix` junk bytes; returns (bytes, offset).
pub fn embed(file: &[u8], prefix: usize, suffix: usize) -> (Bytes, u64) {
    let mut v = vec![0xAB; prefix];
    v.extend_from_slice(file);
    v.extend(std::iter::repeat_n(0xCD, suffix));
    (Bytes::from(v), prefix as u64)
}

/// Every error of `e`'s chain, outermost first, joined with `: `: what a
/// test that looks for a cause's words searches (each error shows its own
/// layer only).
pub(crate) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    std::iter::successors(Some(e), |e| e.source())
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
}
