//! Every file of the public real-world corpus (NetCDF test files shipped by
//! packages on PyPI: netcdf4-python, xarray, cfdm and Py-ART's ARM files,
//! fetched by `scripts/fetch-netcdf-corpus.sh` into
//! `target/netcdf-corpus/files` and pinned by name and sha256 in
//! `tests/corpus.sha256`) goes through `--decode cf` without a panic, and
//! exactly the pinned files are refused.

#![cfg(test)]

use crate::common;

use std::panic::{AssertUnwindSafe, catch_unwind};

use atlas::{ArrayData, Value};
use atlas_netcdf::{Decode, IngestOptions, TimeError, map_file};
use common::{corpus_dir, corpus_names};

/// The files `--decode cf` refuses: none. CRM032_test1.nc, whose `time`
/// holds NetCDF's default int fill (-2147483647 days since 1961-01-01, far
/// outside `timestamp_ns`) and which xarray 2026.9 refuses ("unable to decode
/// time units"), goes in with that variable undecoded (see
/// `the_time_xarray_cannot_decode_is_stored_undecoded`).
const REFUSED: &[&str] = &[];

#[test]
fn every_corpus_file_maps_without_panic_and_only_the_pinned_ones_are_refused() {
    let dir = corpus_dir();
    let names = corpus_names();
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
    let path = corpus_dir().join("CRM032_test1.nc");
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
    assert_eq!(time.fill, Some(Value::Int(-2_147_483_647)));
    assert!(matches!(&time.values, ArrayData::Int32(v) if v.iter().eq([&-2_147_483_647])));
}
