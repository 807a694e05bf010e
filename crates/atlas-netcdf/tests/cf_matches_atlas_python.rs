//! `--decode cf` builds the collection atlas-python's `atlas create` builds
//! from the same files: read back through our reader, names, ordinals,
//! arrays, dtypes, dims, shapes, chunk shapes, fills, values (NaN/NaT
//! included), statistics and attributes with their types are identical.
//!
//! Needs the project's Python environment (`scripts/pyenv.sh`, which installs
//! atlas-python 0.17.2, xarray and netCDF4); fails, naming the script, without it.
//!
//! One documented difference is left out of the comparison: variables and
//! attributes of NetCDF sub-groups (here `profile/...` of `nc4.nc4`), which
//! `xarray.open_dataset` does not open and we map under `group.name`.

#![cfg(test)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use atlas_netcdf::IngestOptions;
use common::{data, dump, ingest_into};
use serde_json::Value;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The venv's `atlas` command (atlas-python), creating the venv if needed.
fn atlas_python() -> PathBuf {
    let script = workspace_root().join("scripts/pyenv.sh");
    let out = Command::new(&script).output().unwrap_or_else(|e| {
        panic!(
            "this test needs Python: running {} failed: {e}",
            script.display()
        )
    });
    assert!(
        out.status.success(),
        "this test needs Python: {} failed (python3 with venv and PyPI access needed):\n{}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let python = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    python.with_file_name("atlas")
}

/// Drops what comes from NetCDF sub-groups (names `group.…`).
fn without_groups(mut doc: Value, groups: &[&str]) -> Value {
    let from_group = |name: &str| groups.iter().any(|g| name.starts_with(&format!("{g}.")));
    for ds in doc["datasets"].as_array_mut().unwrap() {
        ds["arrays"]
            .as_array_mut()
            .unwrap()
            .retain(|a| !from_group(a["name"].as_str().unwrap()));
        ds["attributes"]
            .as_array_mut()
            .unwrap()
            .retain(|kv| !from_group(kv[0].as_str().unwrap()));
    }
    doc
}

/// Runs atlas-python's `atlas create` and ours on `inputs` and asserts the
/// two collections are identical (arrays of the NetCDF sub-groups `groups`,
/// which xarray does not open, left out of ours).
async fn assert_same_as_atlas_python(inputs: &Path, groups: &[&str]) {
    let atlas_py = atlas_python();
    let tmp = tempfile::tempdir().unwrap();
    let theirs = tmp.path().join("atlas-python");
    let status = Command::new(&atlas_py)
        .arg("create")
        .arg(inputs)
        .arg(&theirs)
        .arg("-q")
        .status()
        .expect("run atlas-python");
    assert!(status.success(), "atlas-python's create failed");

    let ours = tmp.path().join("ours");
    let report = ingest_into(&[inputs.to_path_buf()], &ours, &IngestOptions::default())
        .await
        .unwrap();
    assert!(report.skipped_files.is_empty() && report.skipped_variables.is_empty());

    let theirs = dump(&theirs).await;
    let ours = without_groups(dump(&ours).await, groups);
    let (t, o) = (&theirs["datasets"], &ours["datasets"]);
    assert_eq!(t.as_array().unwrap().len(), o.as_array().unwrap().len());
    for (t, o) in t.as_array().unwrap().iter().zip(o.as_array().unwrap()) {
        let name = &t["name"];
        assert_eq!(t["name"], o["name"]);
        assert_eq!(t["ordinal"], o["ordinal"], "{name}");
        assert_eq!(
            t["attributes"], o["attributes"],
            "{name}: dataset attributes"
        );
        let names = |d: &Value| -> Vec<Value> {
            d["arrays"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a["name"].clone())
                .collect()
        };
        assert_eq!(names(t), names(o), "{name}: arrays");
        for (ta, oa) in t["arrays"]
            .as_array()
            .unwrap()
            .iter()
            .zip(o["arrays"].as_array().unwrap())
        {
            assert_eq!(ta, oa, "{name}: array {}", ta["name"]);
        }
    }
    assert_eq!(theirs, ours);
}

#[tokio::test]
async fn cf_mode_builds_what_atlas_python_builds_from_the_same_files() {
    assert_same_as_atlas_python(&data().join("good"), &["profile"]).await;
}

/// A char variable named after its first dimension (`station(station,
/// strlen)`) and a variable named after another dimension (`z(x)`): both are
/// coordinates in atlas-python's collection, listed in `_pyatlas_coords`.
#[tokio::test]
async fn variables_named_after_a_dimension_are_coordinates_as_atlas_python_stores_them() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["char_coord.nc", "non_coord.nc"] {
        std::fs::copy(data().join("conventions").join(name), tmp.path().join(name)).unwrap();
    }
    assert_same_as_atlas_python(tmp.path(), &[]).await;
}
