//! Every read command on the conformance fixtures, in text and in JSON,
//! compared with what the other implementation's manifest says it wrote.

#![cfg(test)]

use crate::common;

use std::cmp::Ordering;

use common::*;
use serde_json::{Value as Json, json};

#[test]
fn ls_json_lists_the_live_datasets_of_every_fixture_with_their_ordinals() {
    for f in FIXTURES {
        let m = manifest(f);
        let expected: Vec<Json> = live(&m)
            .iter()
            .map(|d| json!({"name": d["name"], "ordinal": d["ordinal"]}))
            .collect();
        let got = json_of(&["ls", s(&fixture(f))]);
        assert_eq!(got, Json::Array(expected), "fixture {f}");
    }
}

#[test]
fn ls_prints_one_live_name_per_line_in_ordinal_order() {
    let got = stdout_of(&["ls", s(&fixture("deleted"))]);
    assert_eq!(got, "d00\nd01\nd03\nd04\nd06\nd07\nd08\n");
    assert_eq!(stdout_of(&["ls", s(&fixture("empty"))]), "");
}

#[test]
fn ls_long_shows_ordinal_array_count_and_schema_index() {
    let got = stdout_of(&["ls", "--long", s(&fixture("mixed"))]);
    let lines: Vec<Vec<&str>> = got
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines[0], ["ordinal", "arrays", "schema", "name"]);
    assert_eq!(lines[1], ["0", "1", "0", "a"]);
    assert_eq!(lines[2], ["1", "1", "1", "b"]);
    assert_eq!(lines[3], ["2", "1", "2", "c"]);
    let long = json_of(&["ls", "--long", s(&fixture("small"))]);
    assert_eq!(
        long[0],
        json!({"name": "jan_2024", "ordinal": 0, "arrays": 5, "schema": 0})
    );
}

/// The manifest's dataset entry as `show --json` prints it: without `deleted` and `values`.
fn show_shape(d: &Json) -> Json {
    let mut d = d.clone();
    let obj = d.as_object_mut().unwrap();
    obj.remove("deleted");
    for a in obj["arrays"].as_array_mut().unwrap() {
        a.as_object_mut().unwrap().remove("values");
    }
    d
}

#[test]
fn show_json_equals_the_manifest_entry_without_values_and_deleted() {
    for f in FIXTURES {
        let m = manifest(f);
        for d in live(&m) {
            let name = d["name"].as_str().unwrap();
            let got = json_of(&["show", s(&fixture(f)), name]);
            assert_eq!(got, show_shape(&d), "fixture {f} dataset {name}");
        }
    }
}

#[test]
fn show_prints_dimensions_variables_and_attributes_like_ncdump() {
    let got = stdout_of(&["show", s(&fixture("small")), "jan_2024"]);
    for needle in [
        "dataset jan_2024 {",
        "dimensions:",
        "    lat = 4 ;",
        "    lon = 8 ;",
        "variables:",
        "    float32 temperature(lat, lon) ;",
        "        temperature:_FillValue = -999.0 ;",
        "        temperature:_ChunkSizes = 2, 4 ;",
        "        string temperature:units = \"celsius\" ;",
        "        list<float64> temperature:valid_range = -5.0, 40.0 ;",
        "        // count 32, nulls 0, min 0.0, max 76.75",
        "    timestamp_ns time(time) ;",
        "        // count 5, nulls 2, min 0, max 2",
        "// global attributes:",
        "        int64 :month = 1 ;",
        "        string :source = \"buoy\" ;",
        "        binary :checksum = 0xdead00 ;",
        "        list<string> :tags = \"argo\", \"m0\" ;",
    ] {
        assert!(got.contains(needle), "missing {needle:?} in:\n{got}");
    }
    assert!(got.ends_with("}\n"), "{got}");
}

#[test]
fn cat_json_values_equal_the_manifest_values_for_every_array() {
    for f in FIXTURES {
        let m = manifest(f);
        for d in live(&m) {
            let name = d["name"].as_str().unwrap();
            for a in d["arrays"].as_array().unwrap() {
                let array = a["name"].as_str().unwrap();
                let got = json_of(&["cat", s(&fixture(f)), name, array]);
                assert_eq!(
                    got,
                    json!({"dtype": a["dtype"], "shape": a["shape"], "values": a["values"]}),
                    "fixture {f} dataset {name} array {array}"
                );
            }
        }
    }
}

#[test]
fn cat_prints_a_2d_array_as_rows_with_the_fill_value_as_an_underscore() {
    let got = stdout_of(&["cat", s(&fixture("small")), "feb_2024", "temperature"]);
    let rows: Vec<Vec<&str>> = got
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 4, "{got}");
    assert_eq!(
        rows[0],
        [
            "10.0", "10.25", "10.5", "10.75", "11.0", "11.25", "11.5", "11.75"
        ]
    );
    assert_eq!(rows[3], ["_"; 8]);
}

#[test]
fn cat_region_reads_the_requested_window() {
    let dir = fixture("small");
    let got = json_of(&[
        "cat",
        s(&dir),
        "jan_2024",
        "temperature",
        "--start",
        "1,2",
        "--shape",
        "2,3",
    ]);
    assert_eq!(
        got,
        json!({"dtype": "float32", "shape": [2, 3], "values": [25.5, 25.75, 26.0, 50.5, 50.75, 51.0]})
    );
    let rest = json_of(&["cat", s(&dir), "jan_2024", "lat", "--start", "2"]);
    assert_eq!(rest["values"], json!([15.0, 45.0]));
}

#[test]
fn cat_prints_strings_quoted_and_timestamps_as_utc() {
    let dir = fixture("small");
    let strings = stdout_of(&["cat", s(&dir), "jan_2024", "station"]);
    assert_eq!(strings, "\"st-0-a\"\n\"\"\n\"station é 0\"\n");
    let times = stdout_of(&["cat", s(&dir), "feb_2024", "time"]);
    assert_eq!(
        times,
        "2024-02-01T00:00:00Z\n2024-01-01T00:00:00.000000002Z\n"
    );
}

#[test]
fn info_json_counts_match_the_manifest() {
    for f in FIXTURES {
        let m = manifest(f);
        let got = json_of(&["info", s(&fixture(f))]);
        assert_eq!(got["format_version"], m["format_version"], "{f}");
        assert_eq!(got["codec"], m["codec"], "{f}");
        assert_eq!(got["container_bytes"], m["container_bytes"], "{f}");
        assert_eq!(got["datasets_total"], m["dataset_count_total"], "{f}");
        assert_eq!(got["datasets_live"], json!(live(&m).len()), "{f}");
        assert_eq!(got["deleted"], m["deleted"], "{f}");
        assert_eq!(got["interned_schemas"], m["interned_schemas"], "{f}");
        assert!(got["created_unix_ms"].is_i64(), "{f}");
        assert!(got["footer_bytes"].as_u64().unwrap() > 0, "{f}");
        let vars = got["variables"].as_array().unwrap();
        let lens: u64 = vars.iter().map(|v| v["len"].as_u64().unwrap()).sum();
        // Header, segments back to back, footer, trailer.
        assert_eq!(
            8 + lens + got["footer_bytes"].as_u64().unwrap() + 16,
            got["container_bytes"].as_u64().unwrap(),
            "{f}"
        );
    }
}

/// A manifest min/max as a comparable key.
fn cmp_stat(a: &Json, b: &Json) -> Ordering {
    let (ka, va) = a.as_object().unwrap().iter().next().unwrap();
    let (kb, vb) = b.as_object().unwrap().iter().next().unwrap();
    assert_eq!(ka, kb, "one array name, one kind of statistic");
    match ka.as_str() {
        "float" => va.as_f64().unwrap().total_cmp(&vb.as_f64().unwrap()),
        "int" | "timestamp_ns" => va.as_i64().unwrap().cmp(&vb.as_i64().unwrap()),
        "uint" => va.as_u64().unwrap().cmp(&vb.as_u64().unwrap()),
        "bytes" => {
            let bytes = |v: &Json| -> Vec<u64> {
                v.as_array()
                    .unwrap()
                    .iter()
                    .map(|b| b.as_u64().unwrap())
                    .collect()
            };
            bytes(va).cmp(&bytes(vb))
        }
        other => panic!("unknown statistic {other}"),
    }
}

/// The per-dataset stats of `array` in the manifest, for the live datasets that declare it.
fn manifest_rows(m: &Json, array: &str) -> Vec<(String, Json)> {
    live(m)
        .iter()
        .filter_map(|d| {
            d["arrays"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["name"] == array)
                .map(|a| (d["name"].as_str().unwrap().to_owned(), a["stats"].clone()))
        })
        .collect()
}

/// Array names declared by the live datasets of a manifest, each once, in first-seen order.
fn array_names(m: &Json) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for d in live(m) {
        for a in d["arrays"].as_array().unwrap() {
            let n = a["name"].as_str().unwrap().to_owned();
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    names
}

fn fold(rows: &[(String, Json)]) -> Json {
    let pick = |key: &str, want: Ordering| {
        rows.iter()
            .map(|(_, s)| &s[key])
            .filter(|v| !v.is_null())
            .fold(None::<&Json>, |best, v| match best {
                Some(b) if cmp_stat(v, b) != want => Some(b),
                _ => Some(v),
            })
            .cloned()
            .unwrap_or(Json::Null)
    };
    let sum = |key: &str| {
        rows.iter()
            .map(|(_, s)| s[key].as_u64().unwrap())
            .sum::<u64>()
    };
    json!({
        "min": pick("min", Ordering::Less),
        "max": pick("max", Ordering::Greater),
        "null_count": sum("null_count"),
        "row_count": sum("row_count"),
    })
}

#[test]
fn stats_by_dataset_json_equals_the_manifest_per_dataset_stats() {
    for f in FIXTURES {
        let m = manifest(f);
        for array in array_names(&m) {
            let expected: Vec<Json> = manifest_rows(&m, &array)
                .into_iter()
                .map(|(dataset, st)| {
                    json!({
                        "dataset": dataset,
                        "min": st["min"],
                        "max": st["max"],
                        "null_count": st["null_count"],
                        "row_count": st["row_count"],
                    })
                })
                .collect();
            let got = json_of(&["stats", s(&fixture(f)), &array, "--by-dataset"]);
            assert_eq!(got, Json::Array(expected), "fixture {f} array {array}");
        }
    }
}

#[test]
fn stats_json_is_the_fold_of_the_live_datasets_stats() {
    for f in ["small", "deleted"] {
        let m = manifest(f);
        for array in array_names(&m) {
            let got = json_of(&["stats", s(&fixture(f)), &array]);
            assert_eq!(
                got,
                fold(&manifest_rows(&m, &array)),
                "fixture {f} array {array}"
            );
        }
    }
}

#[test]
fn info_json_gives_each_variable_its_collection_wide_stats() {
    let m = manifest("deleted");
    let got = json_of(&["info", s(&fixture("deleted"))]);
    let v = got["variables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "v")
        .expect("variable v");
    assert_eq!(v["stats"], fold(&manifest_rows(&m, "v")));
    assert_eq!(v["stats"]["row_count"], json!(42), "7 live datasets of 6");
}

#[test]
fn stats_prints_count_nulls_min_and_max() {
    let got = stdout_of(&["stats", s(&fixture("small")), "temperature"]);
    let fields: Vec<Vec<&str>> = got
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(fields.contains(&vec!["count", "96"]), "{got}");
    assert!(fields.contains(&vec!["nulls", "48"]), "{got}");
    assert!(fields.contains(&vec!["min", "0.0"]), "{got}");
    assert!(fields.contains(&vec!["max", "76.75"]), "{got}");
    let rows = stdout_of(&["stats", s(&fixture("deleted")), "v", "--by-dataset"]);
    let lines: Vec<&str> = rows.lines().collect();
    assert_eq!(lines.len(), 8, "header and seven live datasets: {rows}");
    assert_eq!(
        lines[1].split_whitespace().collect::<Vec<_>>(),
        ["d00", "6", "1", "1", "5"]
    );
}

#[test]
fn info_names_the_codec_the_counts_and_every_variable() {
    let got = stdout_of(&["info", s(&fixture("deleted"))]);
    for needle in [
        "Atlas v8",
        "Lz4",
        "7 live / 10 total / 3 deleted",
        "d02, d05, d09",
        "1 interned",
        "variables (",
    ] {
        assert!(got.contains(needle), "missing {needle:?} in:\n{got}");
    }
    let v = got
        .lines()
        .find(|l| l.trim_start().starts_with("v "))
        .expect("a line for variable v");
    let cells: Vec<&str> = v.split_whitespace().collect();
    assert_eq!(&cells[cells.len() - 4..], ["42", "1", "1", "805"], "{v}");
}

#[test]
fn attrs_json_lists_one_value_per_live_dataset() {
    let got = json_of(&["attrs", s(&fixture("deleted")), "idx"]);
    let m = manifest("deleted");
    let expected: Vec<Json> = live(&m)
        .iter()
        .map(|d| {
            let value = &d["attributes"][0][1];
            json!({"dataset": d["name"], "type": value["type"], "value": value["value"]})
        })
        .collect();
    assert_eq!(got, Json::Array(expected));
}

#[test]
fn attrs_array_reads_a_per_array_attribute() {
    let got = json_of(&[
        "attrs",
        s(&fixture("small")),
        "units",
        "--array",
        "temperature",
    ]);
    assert_eq!(
        got,
        json!([
            {"dataset": "jan_2024", "type": "string", "value": "celsius"},
            {"dataset": "feb_2024", "type": "string", "value": "celsius"},
            {"dataset": "mar_2024", "type": "string", "value": "celsius"},
        ])
    );
}

#[test]
fn attrs_prints_a_table_of_dataset_type_and_value() {
    let got = stdout_of(&["attrs", s(&fixture("small")), "platform"]);
    let rows: Vec<Vec<&str>> = got
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0], ["dataset", "type", "platform"]);
    assert_eq!(rows[1], ["jan_2024", "uint16", "6901"]);
    assert_eq!(rows[3], ["mar_2024", "uint16", "6903"]);
}

#[test]
fn rm_hides_the_named_datasets_and_ls_no_longer_lists_them() {
    let dir = copy_fixture("small");
    let out = json_of(&["rm", s(dir.path()), "jan_2024", "mar_2024"]);
    assert_eq!(out["deleted"], json!(2));
    // A local collection: the mask's read-modify-write holds a lock file.
    assert_eq!(out["guarantee"], json!("locked"));
    assert_eq!(
        json_of(&["ls", s(dir.path())]),
        json!([{"name": "feb_2024", "ordinal": 1}])
    );
    let info = json_of(&["info", s(dir.path())]);
    assert_eq!(info["deleted"], json!(["jan_2024", "mar_2024"]));
}

#[test]
fn rm_adds_to_an_existing_mask() {
    let dir = copy_fixture("deleted");
    let text = stdout_of(&["rm", s(dir.path()), "d00"]);
    assert!(text.contains("hid 1 dataset"), "{text}");
    assert!(text.contains("locked write"), "{text}");
    let names: Vec<Json> = json_of(&["ls", s(dir.path())])
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].clone())
        .collect();
    assert_eq!(names, ["d01", "d03", "d04", "d06", "d07", "d08"]);
}

#[test]
fn rm_of_an_unknown_name_deletes_nothing() {
    let dir = copy_fixture("small");
    let err = fails_with_one_line(&["rm", s(dir.path()), "feb_2024", "nope"], 1);
    assert!(err.contains("nope"), "{err}");
    assert_eq!(json_of(&["ls", s(dir.path())]).as_array().unwrap().len(), 3);
    assert!(!dir.path().join("deleted.mask").exists());
}

#[test]
fn rm_from_file_reads_names_one_per_line() {
    let dir = copy_fixture("deleted");
    let list = dir.path().join("names.txt");
    std::fs::write(&list, "# bad floats\nd01\n\nd03\n").unwrap();
    let out = json_of(&["rm", s(dir.path()), "d04", "--from-file", s(&list)]);
    assert_eq!(out["deleted"], json!(3));
    let live = json_of(&["ls", s(dir.path())]);
    assert_eq!(live.as_array().unwrap().len(), 4);
}

#[test]
fn verify_passes_on_every_fixture() {
    for f in FIXTURES {
        let text = stdout_of(&["verify", s(&fixture(f))]);
        assert!(text.contains("sound"), "fixture {f}: {text}");
        assert!(!text.contains("PROBLEM"), "fixture {f}: {text}");
    }
}

#[test]
fn verify_json_reports_ok_and_what_was_checked() {
    let got = json_of(&["verify", s(&fixture("small"))]);
    assert_eq!(got["ok"], json!(true));
    assert_eq!(got["problems"], json!([]));
    assert_eq!(got["checked"]["datasets"], json!(3));
    assert_eq!(got["checked"]["arrays"], json!(15));
    // 32 + 4 + 3 + 2 + 5 elements per dataset.
    assert_eq!(got["checked"]["elements"], json!(3 * 46));
}
