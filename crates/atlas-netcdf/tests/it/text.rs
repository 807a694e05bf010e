//! Text as the file holds it: char bytes that are not UTF-8 are kept as
//! Latin-1 (marked `_Encoding = "latin-1"`), and cells masked by a text fill
//! are stored as `""` with `_atlas_missing_text` saying so, unless the file
//! has empty cells of its own in that variable.
//!
//! Inputs: Argo-like profiles from `scripts/make-argo-profiles.py DIR 4`
//! (`tests/data/argo`: NETCDF4 and classic, delayed-mode ones with the byte
//! 0xB1 in `SCIENTIFIC_CALIB_COEFFICIENT`, QC flags blank-filled with fill
//! " "), and `conventions/text_cells.nc` from
//! `scripts/make-netcdf-conventions.py` with what xarray made of it.

#![cfg(test)]

use crate::common;

use std::path::PathBuf;

use atlas::{ArrayData, Attr};
use atlas_netcdf::cf::MISSING_TEXT_ATTR;
use atlas_netcdf::{Array, Decode, IngestOptions, Mapped, map_file};
use common::data;
use serde_json::Value;

fn map(path: PathBuf, decode: Decode) -> Mapped {
    map_file(&path, &IngestOptions::default().with_decode(decode)).expect("maps")
}

fn argo(name: &str) -> PathBuf {
    data().join("argo").join(name)
}

fn cells() -> PathBuf {
    data().join("conventions").join("text_cells.nc")
}

fn array<'a>(mapped: &'a Mapped, name: &str) -> &'a Array {
    mapped
        .dataset
        .arrays
        .iter()
        .find(|a| a.name == name)
        .unwrap_or_else(|| panic!("no array {name}"))
}

fn strings(array: &Array) -> Vec<String> {
    match &array.values {
        ArrayData::String(a) => a.iter().cloned().collect(),
        other => panic!("{}: not strings: {other:?}", array.name),
    }
}

fn attr<'a>(array: &'a Array, key: &str) -> Option<&'a Attr> {
    array.attrs.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// The text's code points as bytes (Latin-1); `None` if one is above U+00FF.
fn latin1(text: &str) -> Option<Vec<u8>> {
    text.chars()
        .map(|c| u8::try_from(u32::from(c)).ok())
        .collect()
}

#[test]
fn a_calibration_byte_that_is_not_utf8_is_kept_as_latin1_and_marked() {
    // 001 is NETCDF4 and 004 classic; both are delayed-mode profiles.
    for file in ["R6900000_001.nc", "R6900000_004.nc"] {
        for decode in [Decode::Cf, Decode::Raw] {
            let mapped = map(argo(file), decode);
            assert_eq!(
                mapped.notes,
                vec![
                    "SCIENTIFIC_CALIB_COEFFICIENT: bytes that are not UTF-8 are stored as Latin-1 text \
                     (_Encoding = \"latin-1\"; atlas-python stores U+FFFD for them)"
                ],
                "{file} {decode:?}"
            );
            let calib = array(&mapped, "SCIENTIFIC_CALIB_COEFFICIENT");
            assert_eq!(
                attr(calib, "_Encoding"),
                Some(&Attr::String("latin-1".into())),
                "{file} {decode:?}"
            );
            let values = strings(calib);
            assert_eq!(values.len(), 3, "{file} {decode:?}");
            let coefficient = values.get(1).expect("second parameter");
            assert_eq!(
                coefficient.trim_end(),
                "r=0.9996 \u{b1}0.0001",
                "{file} {decode:?}"
            );
            let bytes = latin1(coefficient).expect("Latin-1 text");
            assert!(
                bytes.starts_with(b"r=0.9996 \xb10.0001  "),
                "{file} {decode:?}: {bytes:?}"
            );
        }
    }
}

#[test]
fn text_that_is_valid_utf8_is_not_marked() {
    // 002 is a real-time profile: its coefficients are ASCII.
    let mapped = map(argo("R6900000_002.nc"), Decode::Cf);
    let calib = array(&mapped, "SCIENTIFIC_CALIB_COEFFICIENT");
    assert_eq!(attr(calib, "_Encoding"), None);
    let mapped = map(cells(), Decode::Cf);
    let utf8 = array(&mapped, "utf8");
    assert_eq!(attr(utf8, "_Encoding"), None);
    assert_eq!(
        strings(utf8).get(..2),
        Some(&["café".to_owned(), "±".to_owned()][..])
    );
}

#[test]
fn one_row_that_is_not_utf8_makes_the_whole_variable_latin1() {
    // Row 3 ("café" as UTF-8) is valid alone; the variable is Latin-1 because of row 1.
    let mapped = map(cells(), Decode::Cf);
    let calib = array(&mapped, "calib");
    assert_eq!(
        attr(calib, "_Encoding"),
        Some(&Attr::String("latin-1".into()))
    );
    let values = strings(calib);
    assert_eq!(values.get(2).map(String::as_str), Some("caf\u{c3}\u{a9}"));
    assert_eq!(
        latin1(values.get(2).expect("row")),
        Some(b"caf\xc3\xa9".to_vec())
    );
}

#[test]
fn blank_filled_qc_cells_are_stored_empty_and_marked_missing() {
    for file in ["R6900000_001.nc", "R6900000_002.nc"] {
        let mapped = map(argo(file), Decode::Cf);
        let psal = array(&mapped, "PSAL");
        let qc = array(&mapped, "PSAL_QC");
        assert_eq!(
            attr(qc, MISSING_TEXT_ATTR),
            Some(&Attr::String(String::new())),
            "{file}"
        );
        let ArrayData::Float32(values) = &psal.values else {
            panic!("PSAL is not float32")
        };
        let flags = strings(qc);
        assert_eq!(flags.len(), values.len());
        for (flag, value) in flags.iter().zip(values.iter()) {
            assert_eq!(
                flag.is_empty(),
                value.is_nan(),
                "{file}: {flag:?} for {value}"
            );
        }
        assert_eq!(flags.last().map(String::as_str), Some(""), "{file}");
    }
}

#[test]
fn raw_mode_keeps_the_blanks_and_sets_no_marker() {
    let mapped = map(argo("R6900000_001.nc"), Decode::Raw);
    let qc = array(&mapped, "PSAL_QC");
    assert_eq!(attr(qc, MISSING_TEXT_ATTR), None);
    // Raw mode joins every char array along its last axis: one string per profile.
    let flags = strings(qc);
    assert!(flags.last().is_some_and(|f| f.ends_with("1 ")), "{flags:?}");
}

#[test]
fn a_variable_with_empty_and_blank_filled_cells_gets_no_marker_and_a_note() {
    let mapped = map(cells(), Decode::Cf);
    for (name, marked) in [
        ("blank_qc", true),
        ("blank_names", true),
        ("mixed_qc", false),
        ("mixed_names", false),
        ("calib", false),
        ("utf8", false),
    ] {
        let a = array(&mapped, name);
        assert_eq!(attr(a, MISSING_TEXT_ATTR).is_some(), marked, "{name}");
    }
    for (name, masked) in [("mixed_qc", 2), ("mixed_names", 1)] {
        let start = format!(
            "{name}: masked cells ({masked}, equal to the fill) and cells empty in the file (1)"
        );
        assert!(
            mapped.notes.iter().any(|n| n.starts_with(&start)),
            "{name}: {:?}",
            mapped.notes
        );
    }
    // The two above and calib's Latin-1.
    assert_eq!(mapped.notes.len(), 3, "{:?}", mapped.notes);
}

/// Every text variable of `text_cells.nc` against what xarray made of the
/// file: its text where xarray has bytes, and `""` where it has NaN, with the
/// marker exactly where every `""` is a NaN of xarray's.
#[test]
fn text_cells_match_xarray_with_nan_as_empty_text() {
    let mapped = map(cells(), Decode::Cf);
    let json = std::fs::read_to_string(data().join("conventions/text_cells.xarray.json"))
        .expect("expectation");
    let want: Vec<Value> = serde_json::from_str(&json).expect("json");
    let mut compared = 0;
    for w in &want {
        let name = w["name"].as_str().expect("name");
        let a = array(&mapped, name);
        let ArrayData::String(values) = &a.values else {
            continue;
        };
        let cells = w["values"].as_array().expect("values");
        let expected: Vec<String> = cells
            .iter()
            .map(|c| c.as_str().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(
            values.iter().cloned().collect::<Vec<_>>(),
            expected,
            "{name}"
        );
        let nan = cells.iter().any(Value::is_null);
        let empty = cells.iter().any(|c| c.as_str() == Some(""));
        assert_eq!(
            attr(a, MISSING_TEXT_ATTR).is_some(),
            nan && !empty,
            "{name}"
        );
        compared += 1;
    }
    assert_eq!(compared, 6);
}

/// `latin1_attrs.nc`: a NETCDF4 file whose text attributes hold the byte
/// 0xB1, which netcdf-reader refuses to decode.
#[test]
fn a_text_attribute_that_is_not_utf8_reads_as_latin1_in_netcdf4_files() {
    let mapped = map(data().join("conventions/latin1_attrs.nc"), Decode::Cf);
    let comment = mapped.dataset.attrs.iter().find(|(k, _)| k == "comment");
    assert_eq!(
        comment.map(|(_, v)| v),
        Some(&Attr::String("calibrated \u{b1}0.01 (Latin-1)".into()))
    );
    let calib = array(&mapped, "calib");
    assert_eq!(
        attr(calib, "comment"),
        Some(&Attr::String("\u{b1} is 0xB1".into()))
    );
    assert_eq!(
        attr(calib, "long_name"),
        Some(&Attr::String("plain UTF-8 \u{b1}".into()))
    );
}

#[test]
fn a_classic_text_attribute_that_is_not_utf8_keeps_the_readers_replacement() {
    // netcdf-reader decodes classic attributes itself, with U+FFFD, as netCDF4-python does.
    let mapped = map(cells(), Decode::Cf);
    let calib = array(&mapped, "calib");
    assert_eq!(
        attr(calib, "comment"),
        Some(&Attr::String("\u{fffd} is 0xB1".into()))
    );
}

#[test]
fn a_netcdf4_file_refused_for_another_reason_stays_refused() {
    let err = map_file(
        &data().join("bad/corrupt.nc"),
        &IngestOptions::default().with_decode(Decode::Cf),
    )
    .unwrap_err();
    assert!(matches!(err, atlas_netcdf::FileError::Read(_)), "{err:?}");
}
