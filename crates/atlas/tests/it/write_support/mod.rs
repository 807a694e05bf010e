//! Helpers for the write tests: read what the writer produced with the format
//! layer and atlas-segment directly, independently of the facade's reader.
#![allow(dead_code, missing_docs)]

pub mod manifest;

use std::path::Path;
use std::sync::Arc;

use atlas::{AtlasWriter, Attr, Element, WriterConfig};
use atlas_format::{DecodeLimits, OpenedContainer, open_bytes};
use atlas_segment::Segment;

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

    /// Segment `variable` opened from its bytes alone.
    pub async fn segment(&self, variable: &str) -> Arc<Segment> {
        let bytes = bytes::Bytes::copy_from_slice(self.segment_bytes(variable));
        atlas_segment::open_bytes(variable, bytes)
            .await
            .expect("segment opens as an array-format file")
    }

    /// The whole of dataset `dataset`'s copy of `variable`.
    pub async fn read<T: Element>(&self, variable: &str, dataset: &str) -> ndarray::ArrayD<T> {
        self.segment(variable)
            .await
            .read::<T>(dataset, &[], &[])
            .await
            .expect("array reads")
    }

    /// The attributes of array `dataset` in segment `variable`, sorted by key.
    pub async fn attributes(&self, variable: &str, dataset: &str) -> Vec<(String, Attr)> {
        let mut out = self
            .segment(variable)
            .await
            .attributes(dataset)
            .expect("attributes read");
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
    AtlasWriter::create(dir, &config)
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
