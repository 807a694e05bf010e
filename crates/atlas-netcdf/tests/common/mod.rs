//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use atlas::{Atlas, AtlasWriter, WriterConfig};
use atlas_netcdf::{IngestError, IngestOptions, IngestReport, discover, ingest};
use serde_json::Value;

/// `tests/data` of this crate (made by `scripts/make-netcdf-inputs.py`).
pub fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// Ingests the NetCDF files under `sources` into a new collection at `dest`.
pub async fn ingest_into(
    sources: &[PathBuf],
    dest: &Path,
    options: &IngestOptions,
) -> Result<IngestReport, IngestError> {
    let files = discover(sources, true)?;
    let writer = AtlasWriter::create(dest, &WriterConfig::default())
        .await
        .expect("writer");
    ingest(&files, writer, options).await
}

/// The whole collection at `dir` as JSON (values included), without the
/// fields that describe the container bytes rather than the content.
pub async fn dump(dir: &Path) -> Value {
    let atlas = Atlas::open(dir, &atlas::OpenOptions::default())
        .await
        .expect("open collection");
    let mut doc = atlas_manifest::collection_json(&atlas, true)
        .await
        .expect("dump");
    if let Some(map) = doc.as_object_mut() {
        map.remove("container_bytes");
    }
    doc
}

/// Copies `files` into a fresh directory (to build mixed inputs).
pub fn copy_into(dir: &Path, files: &[PathBuf]) {
    for f in files {
        std::fs::copy(f, dir.join(f.file_name().expect("name"))).expect("copy");
    }
}

/// The good inputs, sorted.
pub fn good_files() -> Vec<PathBuf> {
    discover(&[data().join("good")], true).expect("good inputs")
}
