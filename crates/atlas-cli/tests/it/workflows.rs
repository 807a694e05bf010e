//! Commands one after another, as a person uses them: demo then verify,
//! rm then ls, rewrite then verify and compare.

#![cfg(test)]

use crate::common;

use common::*;
use serde_json::{Value as Json, json};

/// `show --json` of every live dataset, keyed by name, without the ordinal (a rewrite renumbers).
fn datasets_by_name(dir: &str) -> Vec<(String, Json)> {
    json_of(&["ls", dir])
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let name = d["name"].as_str().unwrap().to_owned();
            let mut show = json_of(&["show", dir, &name]);
            show.as_object_mut().unwrap().remove("ordinal");
            (name, show)
        })
        .collect()
}

#[test]
fn demo_writes_a_collection_that_verifies() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("argo");
    let text = stdout_of(&["-q", "demo", s(&dir), "--count", "60"]);
    assert!(text.contains("60 live / 60 total / 0 deleted"), "{text}");
    for var in ["PRES", "TEMP", "PSAL", "JULD", "LATITUDE", "LONGITUDE"] {
        assert!(
            text.lines().any(|l| l.trim_start().starts_with(var)),
            "{var}: {text}"
        );
    }

    let verify = stdout_of(&["verify", s(&dir)]);
    assert!(verify.contains("sound"), "{verify}");

    let ls = json_of(&["ls", s(&dir)]);
    let names: Vec<&str> = ls
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 60);
    assert_eq!(names[0], "R6901234_001.nc");
    assert_eq!(names[50], "R3902117_001.nc");

    // An Argo-like profile: levels along N_LEVELS with fill 99999, attributes on the platform.
    let show = json_of(&["show", s(&dir), "R6901234_001.nc"]);
    let temp = show["arrays"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "TEMP")
        .unwrap();
    assert_eq!(temp["dtype"], json!("float32"));
    assert_eq!(temp["dims"], json!(["N_LEVELS"]));
    assert_eq!(temp["fill"], json!(99999.0));
    let levels = temp["shape"][0].as_u64().unwrap();
    assert!((20..=120).contains(&levels), "{levels}");
    let juld = show["arrays"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "JULD")
        .unwrap();
    assert_eq!(juld["dtype"], json!("timestamp_ns"));
    let attrs: Vec<&str> = show["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|kv| kv[0].as_str().unwrap())
        .collect();
    for key in ["platform_number", "cycle_number", "data_centre"] {
        assert!(attrs.contains(&key), "{key}: {attrs:?}");
    }
    let cycles = json_of(&["attrs", s(&dir), "cycle_number"]);
    assert_eq!(
        cycles[0],
        json!({"dataset": "R6901234_001.nc", "type": "int32", "value": 1})
    );

    // Some values are missing: the fill value counts as null.
    let temp_stats = json_of(&["stats", s(&dir), "TEMP"]);
    assert!(
        temp_stats["null_count"].as_u64().unwrap() > 0,
        "{temp_stats}"
    );
    let psal = json_of(&["stats", s(&dir), "PSAL"]);
    let max = psal["max"]["float"].as_f64().unwrap();
    assert!((30.0..40.0).contains(&max), "salinity max {max}");
}

#[test]
fn demo_is_deterministic() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    stdout_of(&["-q", "demo", s(&a), "--count", "25", "--writers", "3"]);
    stdout_of(&["-q", "demo", s(&b), "--count", "25", "--writers", "1"]);
    assert_eq!(json_of(&["ls", s(&a)]), json_of(&["ls", s(&b)]));
    for name in ["R6901234_001.nc", "R6901234_025.nc"] {
        for array in ["PRES", "TEMP", "PSAL", "JULD", "LATITUDE"] {
            assert_eq!(
                json_of(&["cat", s(&a), name, array]),
                json_of(&["cat", s(&b), name, array]),
                "{name} {array}"
            );
        }
    }
}

#[test]
fn demo_prints_what_info_prints() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("argo");
    let demo = json_of(&["demo", s(&dir), "--count", "10"]);
    assert_eq!(demo, json_of(&["info", s(&dir)]));
    assert_eq!(demo["datasets_live"], json!(10));
}

#[test]
fn demo_refuses_a_directory_that_holds_a_collection() {
    let dir = copy_fixture("small");
    let err = fails_with_one_line(&["demo", s(dir.path()), "--count", "3"], 1);
    assert!(err.contains("already holds a collection"), "{err}");
}

#[test]
fn rm_then_ls_and_verify() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("argo");
    stdout_of(&["-q", "demo", s(&dir), "--count", "12"]);
    let out = json_of(&["rm", s(&dir), "R6901234_002.nc", "R6901234_003.nc"]);
    assert_eq!(out["deleted"], json!(2));
    let ls = json_of(&["ls", s(&dir)]);
    let names: Vec<&str> = ls
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 10);
    assert!(!names.contains(&"R6901234_002.nc"));
    assert_eq!(ls[1], json!({"name": "R6901234_004.nc", "ordinal": 3}));
    assert!(stdout_of(&["verify", s(&dir)]).contains("sound"));
    fails_with_one_line(&["show", s(&dir), "R6901234_002.nc"], 1);
}

#[test]
fn rewrite_keeps_every_live_dataset_and_verifies() {
    for f in FIXTURES {
        let tmp = tempfile::tempdir().unwrap();
        let dst = tmp.path().join("copy");
        let src = fixture(f);
        stdout_of(&["-q", "rewrite", s(&src), s(&dst)]);
        assert!(stdout_of(&["verify", s(&dst)]).contains("sound"), "{f}");

        let src_names: Vec<Json> = json_of(&["ls", s(&src)])
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].clone())
            .collect();
        let dst_ls = json_of(&["ls", s(&dst)]);
        let dst_names: Vec<Json> = dst_ls
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].clone())
            .collect();
        assert_eq!(src_names, dst_names, "{f}");
        let ordinals: Vec<Json> = dst_ls
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["ordinal"].clone())
            .collect();
        let dense: Vec<Json> = (0..ordinals.len()).map(|i| json!(i)).collect();
        assert_eq!(
            ordinals, dense,
            "{f}: a rewrite numbers the live datasets afresh"
        );

        assert_eq!(datasets_by_name(s(&src)), datasets_by_name(s(&dst)), "{f}");
        let info = json_of(&["info", s(&dst)]);
        assert_eq!(info["deleted"], json!([]), "{f}");
    }
}

#[test]
fn rewrite_can_change_the_codec_and_keeps_the_values() {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("lz4");
    let src = fixture("small");
    let out = json_of(&[
        "rewrite",
        s(&src),
        s(&dst),
        "--codec",
        "lz4",
        "--block-size",
        "4096",
    ]);
    assert_eq!(out["datasets"], json!(3));
    assert_eq!(json_of(&["info", s(&dst)])["codec"], json!("Lz4"));
    assert_eq!(
        json_of(&["cat", s(&src), "feb_2024", "temperature"]),
        json_of(&["cat", s(&dst), "feb_2024", "temperature"])
    );
}

#[test]
fn rm_then_rewrite_drops_the_hidden_datasets() {
    let dir = copy_fixture("deleted");
    stdout_of(&["-q", "rm", s(dir.path()), "d00"]);
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("compact");
    stdout_of(&["-q", "rewrite", s(dir.path()), s(&dst), "--codec", "none"]);
    let info = json_of(&["info", s(&dst)]);
    assert_eq!(info["codec"], json!("Uncompressed"));
    assert_eq!(info["datasets_total"], json!(6));
    assert_eq!(info["datasets_live"], json!(6));
    assert_eq!(info["deleted"], json!([]));
    let names: Vec<Json> = json_of(&["ls", s(&dst)])
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].clone())
        .collect();
    assert_eq!(names, ["d01", "d03", "d04", "d06", "d07", "d08"]);
}

#[test]
fn rewrite_refuses_an_existing_destination() {
    let dst = copy_fixture("mixed");
    let err = fails_with_one_line(&["rewrite", s(&fixture("small")), s(dst.path())], 1);
    assert!(err.contains("already holds a collection"), "{err}");
}

#[test]
fn a_collection_can_be_named_by_a_file_url_or_by_its_data_atlas() {
    let dir = fixture("small");
    let expected = json_of(&["ls", s(&dir)]);
    let canonical = dir.canonicalize().unwrap();
    let url = format!("file://{}", s(&canonical));
    assert_eq!(json_of(&["ls", &url]), expected);
    assert_eq!(json_of(&["ls", s(&dir.join("data.atlas"))]), expected);
}

#[test]
fn verify_lists_what_an_interrupted_write_left_and_cleanup_removes_it() {
    let dir = copy_fixture("small");
    let tmp = dir.path().join(".atlas-tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::write(tmp.join("put-1-2-3"), vec![0u8; 100]).unwrap();

    let text = stdout_of(&["verify", s(dir.path())]);
    assert!(
        text.contains("leftover .atlas-tmp/put-1-2-3 (100 bytes)"),
        "{text}"
    );
    assert!(text.contains("sound"), "a leftover is a warning: {text}");

    // Too young for the default age, and a dry run removes nothing anyway.
    let text = stdout_of(&["cleanup", s(dir.path()), "--dry-run", "--older-than", "0"]);
    assert!(text.contains("would remove .atlas-tmp/put-1-2-3"), "{text}");
    stdout_of(&["cleanup", s(dir.path())]);
    assert!(tmp.join("put-1-2-3").exists(), "younger than an hour: kept");

    let out = json_of(&["cleanup", s(dir.path()), "--older-than", "0"]);
    assert_eq!(out["bytes"], serde_json::json!(100));
    assert!(!tmp.join("put-1-2-3").exists());
    assert!(!stdout_of(&["verify", s(dir.path())]).contains("leftover"));
}

#[test]
fn verify_deep_recomputes_statistics_and_says_what_it_cannot_see() {
    let text = stdout_of(&["verify", "--deep", s(&fixture("small"))]);
    assert!(text.contains("ok       statistics: recomputed"), "{text}");
    assert!(text.contains("no checksums"), "{text}");
    let plain = stdout_of(&["verify", s(&fixture("small"))]);
    assert!(!plain.contains("statistics: recomputed"), "{plain}");
    assert!(plain.contains("--deep"), "{plain}");
}
