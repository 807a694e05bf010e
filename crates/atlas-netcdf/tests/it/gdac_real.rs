//! Real profile files of the Argo GDAC (`tests/data/argo-gdac`, four data
//! centres, pinned by `sha256` there): they map with the CF mapping, and
//! each holds the position and date its line of the GDAC's index gives.

#![cfg(test)]

use crate::common;

use std::path::{Path, PathBuf};

use atlas::ArrayData;
use atlas_netcdf::{IngestOptions, map_file, parse_index};
use common::data;

fn real() -> PathBuf {
    data().join("argo-gdac")
}

/// The file's first value of `variable` as the CF mapping stores it.
fn first(path: &Path, variable: &str) -> f64 {
    let mapped = map_file(path, &IngestOptions::default()).unwrap();
    let array = mapped
        .dataset
        .arrays
        .iter()
        .find(|a| a.name == variable)
        .unwrap_or_else(|| panic!("{} has no {variable}", path.display()));
    match &array.values {
        ArrayData::Float64(x) => *x.iter().next().unwrap(),
        ArrayData::Timestamp(t) => t.iter().next().unwrap().0 as f64,
        other => panic!("{variable} is {other:?}"),
    }
}

#[test]
fn the_real_gdac_profiles_are_the_pinned_bytes() {
    let pins = std::fs::read_to_string(real().join("sha256")).unwrap();
    let mut checked = 0;
    for line in pins.lines() {
        let (sum, name) = line.split_once("  ").unwrap();
        let bytes = std::fs::read(real().join(name)).unwrap();
        let out = std::process::Command::new("sha256sum")
            .arg(real().join(name))
            .output()
            .unwrap();
        let got = String::from_utf8(out.stdout).unwrap();
        assert!(got.starts_with(sum), "{name}: {got}");
        assert!(bytes.starts_with(b"CDF"), "{name} is a classic NetCDF file");
        checked += 1;
    }
    assert_eq!(checked, 4);
}

#[test]
fn each_real_gdac_profile_maps_and_holds_the_position_and_date_of_its_index_line() {
    let index = parse_index(&std::fs::read(real().join("index.txt")).unwrap()).unwrap();
    assert_eq!(index.entries.len(), 4);
    for entry in &index.entries {
        let path = real().join(&entry.name);
        let lat = first(&path, "LATITUDE");
        let lon = first(&path, "LONGITUDE");
        assert!(
            (lat - entry.latitude.unwrap()).abs() < 1e-3,
            "{}: {lat}",
            entry.name
        );
        assert!(
            (lon - entry.longitude.unwrap()).abs() < 1e-3,
            "{}: {lon}",
            entry.name
        );
        // JULD decoded to nanoseconds since 1970: the index's date to the minute.
        let juld = first(&path, "JULD") / 1e9;
        let date = entry.date.as_deref().unwrap();
        let days = days_from_civil(
            date[0..4].parse().unwrap(),
            date[4..6].parse().unwrap(),
            date[6..8].parse().unwrap(),
        );
        let seconds = days as f64 * 86400.0
            + date[8..10].parse::<f64>().unwrap() * 3600.0
            + date[10..12].parse::<f64>().unwrap() * 60.0
            + date[12..14].parse::<f64>().unwrap();
        assert!(
            (juld - seconds).abs() < 60.0,
            "{}: JULD {juld} vs {seconds}",
            entry.name
        );
    }
}

/// Days from 1970-01-01 to the civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}
