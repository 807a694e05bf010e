//! Real-world NetCDF conventions, each in a small file made by
//! `scripts/make-netcdf-conventions.py` with the netCDF library, next to what
//! `xarray.open_dataset` made of it (`NAME.xarray.json`): `--decode cf` must
//! give the same names, dtypes, dims and values. Attribute and variable order
//! follow netCDF4-python in both modes.

#![cfg(test)]

use crate::common;

use std::path::PathBuf;

use atlas::{ArrayData, Attr};
use atlas_netcdf::{Decode, IngestOptions, Mapped, TimeError, map_file};
use common::data;
use serde_json::{Value, json};

fn file(name: &str) -> PathBuf {
    data().join("conventions").join(name)
}

fn map(name: &str, decode: Decode) -> Mapped {
    map_file(&file(name), &IngestOptions::default().with_decode(decode)).expect("maps")
}

fn floats<T: Copy + Into<f64>>(a: impl Iterator<Item = T>) -> Vec<Value> {
    a.map(|x| {
        let x: f64 = x.into();
        if x.is_nan() { Value::Null } else { json!(x) }
    })
    .collect()
}

/// An array as the xarray description writes it: numpy dtype and values.
fn describe(values: &ArrayData) -> (String, Vec<Value>) {
    match values {
        ArrayData::Int8(a) => ("int8".into(), a.iter().map(|x| json!(x)).collect()),
        ArrayData::Int16(a) => ("int16".into(), a.iter().map(|x| json!(x)).collect()),
        ArrayData::Int32(a) => ("int32".into(), a.iter().map(|x| json!(x)).collect()),
        ArrayData::Int64(a) => ("int64".into(), a.iter().map(|x| json!(x)).collect()),
        ArrayData::UInt8(a) => ("uint8".into(), a.iter().map(|x| json!(x)).collect()),
        ArrayData::UInt16(a) => ("uint16".into(), a.iter().map(|x| json!(x)).collect()),
        ArrayData::UInt32(a) => ("uint32".into(), a.iter().map(|x| json!(x)).collect()),
        ArrayData::UInt64(a) => ("uint64".into(), a.iter().map(|x| json!(x)).collect()),
        ArrayData::Float32(a) => ("float32".into(), floats(a.iter().copied())),
        ArrayData::Float64(a) => ("float64".into(), floats(a.iter().copied())),
        ArrayData::Timestamp(a) => (
            "datetime64[ns]".into(),
            a.iter()
                .map(|t| {
                    if t.nanos() == i64::MIN {
                        Value::Null
                    } else {
                        json!(t.nanos())
                    }
                })
                .collect(),
        ),
        ArrayData::String(a) => ("object".into(), a.iter().map(|x| json!(x)).collect()),
        other => panic!("unexpected array type {other:?}"),
    }
}

/// Asserts that `--decode cf` of `name` gives, variable by variable, what
/// xarray gave (order aside: xarray lists index coordinates last).
fn assert_matches_xarray(name: &str) -> Mapped {
    let mapped = map(&format!("{name}.nc"), Decode::Cf);
    let text = std::fs::read_to_string(file(&format!("{name}.xarray.json"))).expect("expectation");
    let want: Vec<Value> = serde_json::from_str(&text).expect("json");
    assert_eq!(
        mapped.dataset.arrays.len(),
        want.len(),
        "{name}: array count"
    );
    for w in &want {
        let var = w["name"].as_str().expect("name");
        let array = mapped
            .dataset
            .arrays
            .iter()
            .find(|a| a.name == var)
            .unwrap_or_else(|| panic!("{name}: no array {var:?}"));
        let (dtype, values) = describe(&array.values);
        assert_eq!(json!(dtype), w["dtype"], "{name}/{var}: dtype");
        assert_eq!(json!(array.dims), w["dims"], "{name}/{var}: dims");
        assert_eq!(Value::Array(values), w["values"], "{name}/{var}: values");
    }
    mapped
}

#[test]
fn a_netcdf4_non_coordinate_variable_is_named_as_the_netcdf_library_shows_it() {
    assert_matches_xarray("non_coord");
    let raw = map("non_coord.nc", Decode::Raw);
    let names: Vec<&str> = raw.dataset.arrays.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["z", "w"]);
    let z = raw.dataset.arrays.first().expect("z");
    assert_eq!(z.dims, ["x"]);
    assert_eq!(describe(&z.values).1, [json!(1.5), json!(2.5), json!(3.5)]);
}

#[test]
fn masked_integers_promote_to_the_float_type_xarray_picks_with_nan_where_masked() {
    assert_matches_xarray("masked_ints");
}

#[test]
fn a_text_missing_value_on_an_integer_variable_promotes_it_without_masking() {
    let mapped = map("masked_ints.nc", Decode::Cf);
    for (var, dtype) in [
        ("missing_text_on_i4", "float64"),
        ("missing_chars_on_i2", "float32"),
    ] {
        let array = mapped
            .dataset
            .arrays
            .iter()
            .find(|a| a.name == var)
            .expect(var);
        let (got, values) = describe(&array.values);
        assert_eq!(got, dtype, "{var}");
        assert_eq!(values, [json!(1.0), json!(-99.0), json!(3.0), json!(4.0)]);
        assert!(
            !array.attrs.iter().any(|(k, _)| k == "missing_value"),
            "{var}: missing_value is consumed as xarray consumes it"
        );
    }
}

#[test]
fn arm_style_time_units_decode_as_xarray_decodes_them() {
    let mapped = assert_matches_xarray("arm_time");
    assert!(mapped.notes.is_empty(), "{:?}", mapped.notes);
}

/// Attribute names of the dataset (`""`) or of one array, in stored order.
fn attr_names(mapped: &Mapped, array: &str) -> Vec<String> {
    let attrs = if array.is_empty() {
        &mapped.dataset.attrs
    } else {
        &mapped
            .dataset
            .arrays
            .iter()
            .find(|a| a.name == array)
            .unwrap_or_else(|| panic!("no array {array:?}"))
            .attrs
    };
    attrs.iter().map(|(k, _)| k.clone()).collect()
}

#[test]
fn netcdf4_attributes_come_in_creation_order_as_netcdf4_lists_them_in_both_modes() {
    assert_matches_xarray("attr_order");
    // `ncattrs()` of netCDF4-python 1.7.5 (netCDF-C 4.10.1, HDF5 2.2.0) when
    // the generator wrote the file. The object headers hold them in another
    // order (what we gave before reading creation order): the globals as
    // title, institution, references, history (`references` took the space
    // of the deleted `source`; the rewritten `history` was recreated), and
    // `temp_qc` as long_name, flag_values, flag_meanings (the rewritten
    // `long_name` was recreated in space before the flags). `many` has more
    // attributes than fit in its header (dense storage, read by its
    // creation-order index).
    let want: [(&str, &[&str]); 4] = [
        ("", &["title", "institution", "history", "references"]),
        ("temp", &["units", "long_name", "standard_name"]),
        ("temp_qc", &["flag_values", "flag_meanings", "long_name"]),
        (
            "many",
            &[
                "a00", "a10", "a03", "a08", "a06", "a11", "a04", "a09", "a02", "a07", "a01",
            ],
        ),
    ];
    for decode in [Decode::Raw, Decode::Cf] {
        let mapped = map("attr_order.nc", decode);
        for (array, names) in want {
            let mut names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
            if array.is_empty() && decode == Decode::Cf {
                names.push(atlas_netcdf::cf::COORDS_ATTR.to_owned());
            }
            assert_eq!(attr_names(&mapped, array), names, "{decode:?} {array:?}");
        }
    }
}

#[test]
fn times_without_a_timestamp_ns_form_are_stored_as_raw_stores_them_and_reported() {
    let mapped = map("undecodable_time.nc", Decode::Cf);
    let raw = map("undecodable_time.nc", Decode::Raw);
    let text = std::fs::read_to_string(file("undecodable_time.xarray.json")).expect("expectation");
    let xarray: Vec<Value> = serde_json::from_str(&text).expect("json");
    let seen = |var: &str| {
        xarray
            .iter()
            .find(|w| w["name"] == var)
            .unwrap_or_else(|| panic!("xarray has {var}"))
    };
    let reasons: Vec<(&str, TimeError)> = mapped
        .undecoded
        .iter()
        .map(|u| (u.array.as_str(), u.reason.clone()))
        .collect();
    assert_eq!(
        reasons,
        [
            ("time", TimeError::OutOfRange),
            (
                "t360",
                TimeError::Calendar {
                    calendar: "360_day".into()
                }
            ),
        ]
    );
    for var in ["time", "t360"] {
        // xarray decodes these into cftime objects, which atlas-python cannot store.
        assert_eq!(seen(var)["dtype"], "object", "{var}");
        let ours = mapped.dataset.arrays.iter().find(|a| a.name == var);
        let stored = raw.dataset.arrays.iter().find(|a| a.name == var);
        assert_eq!(ours, stored, "{var}: stored as --decode raw stores it");
    }
    let time = mapped.dataset.arrays.iter().find(|a| a.name == "time");
    let time = time.expect("time");
    assert_eq!(
        describe(&time.values),
        ("int32".into(), vec![json!(0), json!(1), json!(200_000)])
    );
    let attr = |key: &str| time.attrs.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    assert_eq!(
        attr("units"),
        Some(&Attr::String("days since 1961-01-01".into()))
    );
    assert_eq!(attr("calendar"), Some(&Attr::String("standard".into())));
    // The rest of the file is decoded as xarray decodes it.
    for var in ["decodes", "x"] {
        let array = mapped.dataset.arrays.iter().find(|a| a.name == var);
        let (dtype, values) = describe(&array.expect(var).values);
        assert_eq!(json!(dtype), seen(var)["dtype"], "{var}");
        assert_eq!(Value::Array(values), seen(var)["values"], "{var}");
    }
    // `time` is still the dimension coordinate.
    let coords = mapped
        .dataset
        .attrs
        .iter()
        .find(|(k, _)| k == "_pyatlas_coords");
    assert_eq!(
        coords.map(|(_, v)| v),
        Some(&Attr::String("[\"time\"]".into()))
    );
}

/// The `_pyatlas_coords` list of a mapped file.
fn coords(mapped: &Mapped) -> Vec<String> {
    let attr = mapped
        .dataset
        .attrs
        .iter()
        .find(|(k, _)| k == "_pyatlas_coords")
        .map(|(_, v)| v);
    let Some(Attr::String(text)) = attr else {
        panic!("no _pyatlas_coords: {attr:?}");
    };
    serde_json::from_str(text).expect("a JSON list")
}

#[test]
fn a_char_variable_named_after_its_first_dimension_is_a_coordinate_as_xarray_lists_it() {
    let mapped = map("char_coord.nc", Decode::Cf);
    // xarray's `ds.coords` for this file, in its order: ['time', 'station', 'lat'].
    assert_eq!(coords(&mapped), ["time", "station", "lat"]);
    let names: Vec<&str> = mapped
        .dataset
        .arrays
        .iter()
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(names, ["time", "station", "lat", "temp"]);
    let text = std::fs::read_to_string(file("char_coord.xarray.json")).expect("expectation");
    let want: Vec<Value> = serde_json::from_str(&text).expect("json");
    for w in &want {
        let var = w["name"].as_str().expect("name");
        let array = mapped.dataset.arrays.iter().find(|a| a.name == var);
        let array = array.unwrap_or_else(|| panic!("no array {var:?}"));
        assert_eq!(json!(array.dims), w["dims"], "{var}: dims");
        let (dtype, values) = describe(&array.values);
        assert_eq!(Value::Array(values), w["values"], "{var}: values");
        if var == "station" {
            // xarray keeps the joined chars as bytes (|S4); atlas-python stores strings.
            assert_eq!((dtype.as_str(), &w["dtype"]), ("object", &json!("|S4")));
        } else {
            assert_eq!(json!(dtype), w["dtype"], "{var}: dtype");
        }
    }
}

#[test]
fn netcdf4_variables_come_in_creation_order_as_netcdf4_lists_them_in_both_modes() {
    assert_matches_xarray("var_order");
    // `ds.variables` of netCDF4-python 1.7.5 when the generator wrote the
    // file: creation order, not name order, with `alpha` renamed `omega` in
    // place. Twelve links do not fit in the group's header (dense storage).
    let want = [
        "zeta", "omega", "mid", "beta", "kappa", "delta", "omicron", "chi", "eta", "gamma", "psi",
        "iota",
    ];
    for decode in [Decode::Raw, Decode::Cf] {
        let mapped = map("var_order.nc", decode);
        let names: Vec<&str> = mapped
            .dataset
            .arrays
            .iter()
            .map(|a| a.name.as_str())
            .collect();
        assert_eq!(names, want, "{decode:?}");
    }
}

#[test]
fn a_variable_named_after_another_dimension_is_a_coordinate_as_xarray_makes_it() {
    // `z(x)` while a dimension `z` exists: xarray's `ds.coords` is ['z'].
    let mapped = map("non_coord.nc", Decode::Cf);
    assert_eq!(coords(&mapped), ["z"]);
}
