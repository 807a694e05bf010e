//! Helpers for the write tests: read what the writer produced with the format
//! layer and array-format directly, independently of the facade's reader.
#![allow(dead_code, missing_docs)]

pub mod manifest;

use std::path::Path;
use std::sync::Arc;

use array_format::{ArrayElement, ArrayFile, AttributeValue, ReadConfig};
use atlas::{AtlasWriter, WriterConfig};
use atlas_format::{DecodeLimits, OpenedContainer, open_bytes};
use object_store::ObjectStoreExt;
use object_store::memory::InMemory;

/// A finished container, decoded by atlas-format, with its segments opened by array-format.
pub struct Written {
    pub bytes: Vec<u8>,
    pub opened: OpenedContainer,
}

impl Written {
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        let opened = open_bytes(&bytes, DecodeLimits::default()).expect("container opens");
        Self { bytes, opened }
    }

    pub fn from_dir(dir: &Path) -> Self {
        Self::from_bytes(std::fs::read(dir.join("data.atlas")).expect("data.atlas exists"))
    }

    /// Dataset names in ordinal order.
    pub fn dataset_names(&self) -> Vec<String> {
        self.opened
            .footer
            .datasets
            .keys()
            .map(|k| k.to_string())
            .collect()
    }

    /// Segment names in container order.
    pub fn segment_names(&self) -> Vec<String> {
        let f = &self.opened.footer;
        f.variables
            .iter()
            .map(|v| f.string(v.name).unwrap_or("?").to_string())
            .collect()
    }

    /// The raw bytes of segment `variable`.
    pub fn segment_bytes(&self, variable: &str) -> &[u8] {
        let v = self
            .opened
            .footer
            .variable(variable)
            .unwrap_or_else(|| panic!("no segment {variable:?}"));
        &self.bytes[v.seg_offset as usize..(v.seg_offset + v.seg_len) as usize]
    }

    /// Segment `variable` opened by array-format from its bytes alone.
    pub async fn segment(&self, variable: &str) -> ArrayFile {
        let store = Arc::new(InMemory::new());
        let path = object_store::path::Path::from("segment");
        store
            .put(&path, self.segment_bytes(variable).to_vec().into())
            .await
            .expect("put");
        ArrayFile::open(store, path, ReadConfig::default())
            .await
            .expect("segment opens as an array-format file")
    }

    /// The whole of dataset `dataset`'s copy of `variable`.
    pub async fn read<T: ArrayElement>(
        &self,
        variable: &str,
        dataset: &str,
    ) -> ndarray::ArcArray<T, ndarray::IxDyn> {
        self.segment(variable)
            .await
            .read_array::<T>(dataset, vec![], vec![])
            .await
            .expect("array reads")
    }

    /// The attributes of array `dataset` in segment `variable`, sorted by key.
    pub async fn attributes(&self, variable: &str, dataset: &str) -> Vec<(String, AttributeValue)> {
        let seg = self.segment(variable).await;
        let mut out: Vec<(String, AttributeValue)> = seg
            .attributes(dataset)
            .map(|it| it.map(|(k, v)| (k.to_string(), v.clone())).collect())
            .unwrap_or_default();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// The owned schema of dataset `name`.
    pub fn schema(&self, name: &str) -> atlas_format::DatasetSchema {
        let f = &self.opened.footer;
        let index = *f.datasets.get(name).expect("dataset in footer");
        f.schema_view(index).expect("schema").to_owned_schema()
    }
}

/// A writer into a fresh temp directory.
pub async fn writer_in(dir: &Path, config: WriterConfig) -> AtlasWriter {
    AtlasWriter::create_path(dir, config)
        .await
        .expect("writer created")
}

/// True if nothing at `dir` opens as a collection.
pub fn nothing_opens(dir: &Path) -> bool {
    match std::fs::read(dir.join("data.atlas")) {
        Err(_) => true,
        Ok(bytes) => open_bytes(&bytes, DecodeLimits::default()).is_err(),
    }
}

/// Any files left under `dir` (recursively), as relative paths.
pub fn files_under(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        if let Ok(entries) = std::fs::read_dir(dir) {
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(base, &p, out);
                } else if let Ok(rel) = p.strip_prefix(base) {
                    out.push(rel.to_string_lossy().into_owned());
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}
