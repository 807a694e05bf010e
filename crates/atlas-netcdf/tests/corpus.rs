//! Every file of the public real-world corpus (the `test/*.nc` files of the
//! netcdf4-python source distribution, fetched by
//! `scripts/fetch-netcdf-corpus.sh` into `target/netcdf-corpus/files` and
//! pinned by name and sha256 in `tests/corpus.sha256`) goes through
//! `--decode cf` without a panic, and exactly the pinned files are refused.
//! Skipped, saying so, when the corpus has not been fetched.

#![cfg(test)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use atlas::{ArrayData, FillValue};
use atlas_netcdf::{Decode, IngestOptions, TimeError, map_file};

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The corpus directory: `ATLAS_NETCDF_CORPUS` or `<workspace>/target/netcdf-corpus/files`.
fn corpus_dir() -> PathBuf {
    std::env::var_os("ATLAS_NETCDF_CORPUS").map_or_else(
        || manifest().join("../../target/netcdf-corpus/files"),
        PathBuf::from,
    )
}

/// The corpus directory, fetched first by the project's own script when the
/// pinned files are not there (one 0.8 MB download, then cached).
fn fetched_corpus() -> PathBuf {
    let dir = corpus_dir();
    let names = pinned_names();
    if !dir.join(names.first().expect("a pinned file")).is_file()
        && std::env::var_os("ATLAS_NETCDF_CORPUS").is_none()
    {
        let script = manifest().join("../../scripts/fetch-netcdf-corpus.sh");
        let status = std::process::Command::new("bash")
            .arg(&script)
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

/// The pinned file names, in the order of `tests/corpus.sha256`.
fn pinned_names() -> Vec<String> {
    let text = std::fs::read_to_string(manifest().join("tests/corpus.sha256")).expect("pins");
    text.lines()
        .filter_map(|l| l.split_whitespace().nth(1).map(str::to_owned))
        .collect()
}

/// The files `--decode cf` refuses: none. CRM032_test1.nc, whose `time`
/// holds NetCDF's default int fill (-2147483647 days since 1961-01-01, far
/// outside `timestamp_ns`) and which xarray 2026.9 refuses ("unable to decode
/// time units"), goes in with that variable undecoded (see
/// `the_time_xarray_cannot_decode_is_stored_undecoded`).
const REFUSED: &[&str] = &[];

#[test]
fn every_corpus_file_maps_without_panic_and_only_the_pinned_ones_are_refused() {
    let dir = fetched_corpus();
    let names = pinned_names();
    let options = IngestOptions::default().with_decode(Decode::Cf);
    let mut refused = Vec::new();
    for name in &names {
        let path = dir.join(name);
        let outcome = catch_unwind(AssertUnwindSafe(|| map_file(&path, &options)));
        match outcome {
            Err(_) => panic!("{name}: mapping panicked"),
            Ok(Ok(mapped)) => eprintln!(
                "accepted {name}: {} arrays, {} skipped, notes {:?}",
                mapped.dataset.arrays.len(),
                mapped.skipped.len(),
                mapped.notes
            ),
            Ok(Err(err)) => {
                eprintln!("refused  {name}: {err}");
                refused.push(name.as_str());
            }
        }
    }
    eprintln!(
        "corpus: {} of {} files accepted",
        names.len() - refused.len(),
        names.len()
    );
    assert_eq!(refused, REFUSED);
}

#[test]
fn the_time_xarray_cannot_decode_is_stored_undecoded() {
    let path = fetched_corpus().join("CRM032_test1.nc");
    let mapped = map_file(&path, &IngestOptions::default()).expect("accepted");
    let undecoded: Vec<(&str, &TimeError)> = mapped
        .undecoded
        .iter()
        .map(|u| (u.array.as_str(), &u.reason))
        .collect();
    assert_eq!(undecoded, [("time", &TimeError::OutOfRange)]);
    let time = mapped.dataset.arrays.iter().find(|a| a.name == "time");
    let time = time.expect("time");
    // NetCDF's default int fill, which --decode raw makes the fill.
    assert_eq!(time.fill, Some(FillValue::Int(-2_147_483_647)));
    assert!(matches!(&time.values, ArrayData::Int32(v) if v.iter().eq([&-2_147_483_647])));
}
