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

use crate::common;

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

/// The convention files whose attribute and variable order in the HDF5
/// headers differs from netCDF's creation order: atlas-python (netCDF4 under
/// xarray) lists them by creation order, and so must we.
#[tokio::test]
async fn cf_mode_keeps_the_netcdf4_creation_order_atlas_python_keeps() {
    let tmp = tempfile::tempdir().unwrap();
    let inputs = tmp.path().join("inputs");
    std::fs::create_dir(&inputs).unwrap();
    common::copy_into(
        &inputs,
        &["attr_order.nc", "var_order.nc"].map(|f| data().join("conventions").join(f)),
    );
    assert_same_as_atlas_python(&inputs, &[]).await;
}

/// Every place a value differs between two dumps, as short paths: a dataset's
/// `attributes`, or `arrays[NAME].FIELD` (an array missing on one side is
/// `arrays[NAME]`). Arrays are matched by name, so one extra array does not
/// shift the others.
fn differences(theirs: &Value, ours: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if theirs["attributes"] != ours["attributes"] {
        out.push("attributes".to_owned());
    }
    let by_name = |d: &Value| -> Vec<(String, Value)> {
        d["arrays"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| (a["name"].as_str().unwrap().to_owned(), a.clone()))
            .collect()
    };
    let (t, o) = (by_name(theirs), by_name(ours));
    let names_t: Vec<&String> = t.iter().map(|(n, _)| n).collect();
    let names_o: Vec<&String> = o.iter().map(|(n, _)| n).collect();
    if names_t.iter().collect::<std::collections::BTreeSet<_>>()
        == names_o.iter().collect::<std::collections::BTreeSet<_>>()
        && names_t != names_o
    {
        out.push("arrays (order)".to_owned());
    }
    for (name, ta) in &t {
        match o.iter().find(|(n, _)| n == name) {
            None => out.push(format!("arrays[{name}] (only atlas-python)")),
            Some((_, oa)) => {
                for (field, tv) in ta.as_object().unwrap() {
                    if oa.get(field) != Some(tv) {
                        out.push(format!("arrays[{name}].{field}"));
                    }
                }
            }
        }
    }
    for (name, _) in &o {
        if !t.iter().any(|(n, _)| n == name) {
            out.push(format!("arrays[{name}] (only ours)"));
        }
    }
    out
}

/// Files of the public corpus atlas-python's `create --skip-errors` skips.
const ATLAS_PYTHON_SKIPS: &[&str] = &[
    // xarray cannot decode `days since 1961-01-01` values past 2262 into
    // nanoseconds; ours stores that variable undecoded (issue 21).
    "CRM032_test1.nc",
];

/// Where our collection differs from atlas-python's on a corpus file it
/// stores, each with its reason (`file`, difference path, why).
const JUSTIFIED: &[(&str, &str, &str)] = &[
    (
        "example_arm_sonde.cdf",
        "arrays[time_offset].stats",
        ARM_OFFSET,
    ),
    (
        "example_arm_sonde.cdf",
        "arrays[time_offset].values",
        ARM_OFFSET,
    ),
    (
        "example_cfradial_cr_raster.nc",
        "arrays[time_offset].stats",
        ARM_OFFSET,
    ),
    (
        "example_cfradial_cr_raster.nc",
        "arrays[time_offset].values",
        ARM_OFFSET,
    ),
];

/// ARM's `seconds since 2011-05-20 08:28:00 0:00`: CF/udunits read the
/// trailing `0:00` as the UTC offset, so the axis starts at 08:28, where the
/// file's `base_time` and `time` start too. pandas (hence xarray and
/// atlas-python) reads `08:28:00 0:00` as midnight and moves every value
/// 8 h 28 min earlier. Ours keeps the instant and says so in a note.
const ARM_OFFSET: &str = "xarray misreads ARM's `hh:mm:ss 0:00` reference";

#[tokio::test]
async fn every_corpus_file_atlas_python_stores_is_stored_the_same_way() {
    let atlas_py = atlas_python();
    let corpus = common::corpus_dir();
    let tmp = tempfile::tempdir().unwrap();
    let theirs = tmp.path().join("atlas-python");
    let out = Command::new(&atlas_py)
        .args(["create", "--skip-errors", "--json"])
        .arg(&corpus)
        .arg(&theirs)
        .output()
        .expect("run atlas-python");
    assert!(out.status.success(), "atlas-python's create failed");
    let report: Value = serde_json::from_slice(&out.stdout).expect("atlas-python's --json");
    let skipped: Vec<String> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let file = Path::new(s["file"].as_str().unwrap());
            file.file_name().unwrap().to_string_lossy().into_owned()
        })
        .collect();

    let ours = tmp.path().join("ours");
    let options = IngestOptions::default().with_skip_errors(true);
    let ours_report = ingest_into(&[corpus], &ours, &options).await.unwrap();
    for file in &ours_report.skipped_files {
        eprintln!("ours skips {}: {}", file.path.display(), file.reason);
    }
    let (theirs, ours) = (dump(&theirs).await, dump(&ours).await);
    let datasets = |doc: &Value| -> Vec<(String, Value)> {
        doc["datasets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| (d["name"].as_str().unwrap().to_owned(), d.clone()))
            .collect()
    };
    let ours = datasets(&ours);
    let mut found = Vec::new();
    let mut accepted = 0;
    for (name, t) in datasets(&theirs) {
        accepted += 1;
        let Some((_, o)) = ours.iter().find(|(n, _)| *n == name) else {
            found.push((name, "(dataset only in atlas-python's)".to_owned()));
            continue;
        };
        for path in differences(&t, o) {
            found.push((name.clone(), path));
        }
    }
    eprintln!(
        "corpus: atlas-python stores {accepted} files, ours {}",
        ours.len()
    );
    for name in &skipped {
        let ours_has = ours.iter().any(|(n, _)| n == name);
        eprintln!("atlas-python skips {name}; ours stores it: {ours_has}");
        assert!(ours_has, "{name}: skipped by atlas-python, and by ours");
    }
    for (file, path) in &found {
        eprintln!("difference {file}: {path}");
    }
    assert_eq!(skipped, ATLAS_PYTHON_SKIPS);
    let justified: Vec<(String, String)> = JUSTIFIED
        .iter()
        .map(|(f, p, _)| ((*f).to_owned(), (*p).to_owned()))
        .collect();
    assert_eq!(found, justified, "differences from atlas-python");
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
