//! `atlas sync`: a set kept in step with an archive's index (Argo GDAC
//! format), day by day, each day one commit.

#![cfg(test)]

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use atlas::{Atlas, Attr, OpenOptions, Region};
use common::{atlas, s, stdout_of};
use serde_json::Value as Json;

/// The Argo-like profiles of atlas-netcdf's test data (made by scripts/make-argo-profiles.py).
fn profile(n: u32) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../atlas-netcdf/tests/data/argo")
        .join(format!("R6900000_{n:03}.nc"))
}

const FLOAT: &str = "coriolis/6900000/profiles";

/// One day of a GDAC-like archive: `<dir>/dac/<file>` per entry and
/// `<dir>/ar_index_global_prof.txt` listing them. Each entry is (file name,
/// profile whose bytes it holds, date_update).
fn gdac_day(dir: &Path, entries: &[(&str, u32, &str)]) -> PathBuf {
    let folder = dir.join("dac").join(FLOAT);
    std::fs::create_dir_all(&folder).unwrap();
    let mut index = String::from(
        "# Title : Profile directory file of the Argo Global Data Assembly Center\n\
         # FTP root number 1 : ftp://ftp.ifremer.fr/ifremer/argo/dac\n\
         file,date,latitude,longitude,ocean,profiler_type,institution,date_update\n",
    );
    for (name, from, date_update) in entries {
        std::fs::copy(profile(*from), folder.join(name)).unwrap();
        index.push_str(&format!(
            "{FLOAT}/{name},20240101120000,12.5,-30.25,A,846,IF,{date_update}\n"
        ));
    }
    let path = dir.join("ar_index_global_prof.txt");
    std::fs::write(&path, index).unwrap();
    path
}

/// Day 1: four real-time and delayed-mode profiles.
fn day1(dir: &Path) -> PathBuf {
    gdac_day(
        dir,
        &[
            ("R6900000_001.nc", 1, "20240101000000"),
            ("R6900000_002.nc", 2, "20240101000000"),
            ("D6900000_003.nc", 3, "20240101000000"),
            ("R6900000_004.nc", 4, "20240101000000"),
        ],
    )
}

/// Day 2: 001 unchanged, 002 became delayed mode (R -> D, other bytes), 003
/// revised (same name, newer date, other bytes), 004 gone, 005 new.
fn day2(dir: &Path) -> PathBuf {
    gdac_day(
        dir,
        &[
            ("R6900000_001.nc", 1, "20240101000000"),
            ("D6900000_002.nc", 4, "20240102000000"),
            ("D6900000_003.nc", 2, "20240102000000"),
            ("R6900000_005.nc", 3, "20240102000000"),
        ],
    )
}

fn sync_json(set: &Path, index: &Path, extra: &[&str]) -> Json {
    let out = atlas()
        .args(["--json", "sync", s(set), "--index", s(index)])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "sync failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn names(list: &Json, key: &str) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|v| v[key].as_str().unwrap().to_owned())
        .collect()
}

/// Everything a user reads of a collection: per live dataset name, its
/// attributes (the sync's own two left out when `strip`) and each array's
/// attributes and values.
type Contents = BTreeMap<String, (Vec<(String, Attr)>, Vec<(String, String)>)>;

async fn contents(path: &Path, strip: bool) -> Contents {
    let atlas = Atlas::open(path, &OpenOptions::default()).await.unwrap();
    let mut out = BTreeMap::new();
    for ds in atlas.datasets().await.unwrap() {
        let mut attrs = ds.attributes().await.unwrap();
        if strip {
            attrs.retain(|(k, _)| {
                k != atlas_netcdf::SOURCE_ATTR && k != atlas_netcdf::DATE_UPDATE_ATTR
            });
        }
        let mut arrays = Vec::new();
        let array_names: Vec<String> = ds.schema().arrays().map(|a| a.name().to_owned()).collect();
        for array in array_names {
            let values = ds.read_any(&array, Region::all()).await.unwrap();
            let array_attrs = ds.array_attributes(&array).await.unwrap();
            arrays.push((array, format!("{values:?} {array_attrs:?}")));
        }
        out.insert(ds.name().to_owned(), (attrs, arrays));
    }
    out
}

fn generation(set: &Path) -> u64 {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        Atlas::open(set, &OpenOptions::default())
            .await
            .unwrap()
            .generation()
            .unwrap()
    })
}

fn member_folders(set: &Path) -> usize {
    std::fs::read_dir(set.join("members")).map_or(0, |d| d.count())
}

#[test]
fn day_two_applied_by_sync_equals_create_of_day_two_files_and_a_rerun_commits_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let index1 = day1(&tmp.path().join("day1"));
    let index2 = day2(&tmp.path().join("day2"));
    let set = tmp.path().join("set");

    let first = sync_json(&set, &index1, &[]);
    assert_eq!(
        names(&first["added"], "name"),
        [
            "D6900000_003.nc",
            "R6900000_001.nc",
            "R6900000_002.nc",
            "R6900000_004.nc"
        ]
    );
    assert_eq!(first["committed"]["generation"], 1);

    // A handle opened before the sync keeps reading day 1 after it.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let before = rt
        .block_on(Atlas::open(&set, &OpenOptions::default()))
        .unwrap();
    let second = sync_json(&set, &index2, &["-j", "2"]);
    let mut seen: Vec<String> = rt
        .block_on(before.dataset_names())
        .unwrap()
        .into_iter()
        .map(|n| n.to_string())
        .collect();
    seen.sort();
    assert_eq!(seen, names(&first["added"], "name"));
    assert_eq!(names(&second["added"], "name"), ["R6900000_005.nc"]);
    let replaced: Vec<(String, String, String)> = second["replaced"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["old"].as_str().unwrap().to_owned(),
                r["name"].as_str().unwrap().to_owned(),
                r["kind"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        replaced,
        [
            (
                "R6900000_002.nc".to_owned(),
                "D6900000_002.nc".to_owned(),
                "delayed_mode".to_owned()
            ),
            (
                "D6900000_003.nc".to_owned(),
                "D6900000_003.nc".to_owned(),
                "revised".to_owned()
            ),
        ]
    );
    assert_eq!(names(&second["removed"], "name"), ["R6900000_004.nc"]);
    assert_eq!(second["unchanged"], 1);
    assert_eq!(second["committed"]["generation"], 2);
    assert_eq!(member_folders(&set), 2, "one member per sync");

    // The set now reads as `atlas create` of day 2's files.
    let reference = tmp.path().join("reference");
    let out = atlas()
        .args([
            "-q",
            "create",
            s(&tmp.path().join("day2/dac")),
            s(&reference),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    let synced = rt.block_on(contents(&set, true));
    let created = rt.block_on(contents(&reference, false));
    assert_eq!(
        synced.keys().collect::<Vec<_>>(),
        created.keys().collect::<Vec<_>>()
    );
    assert_eq!(synced.len(), 4);
    assert!(
        synced
            .values()
            .all(|(attrs, arrays)| !attrs.is_empty() && !arrays.is_empty())
    );
    assert_eq!(synced, created);

    // Each dataset records its file and date_update.
    let recorded = rt.block_on(async {
        let atlas = Atlas::open(&set, &OpenOptions::default()).await.unwrap();
        let ds = atlas.dataset("D6900000_003.nc").await.unwrap();
        (
            ds.attribute(atlas_netcdf::SOURCE_ATTR).await.unwrap(),
            ds.attribute(atlas_netcdf::DATE_UPDATE_ATTR).await.unwrap(),
        )
    });
    assert_eq!(
        recorded,
        (
            Some(Attr::String(format!("{FLOAT}/D6900000_003.nc"))),
            Some(Attr::String("20240102000000".into()))
        )
    );

    // A rerun finds nothing to do and commits nothing.
    let rerun = sync_json(&set, &index2, &[]);
    assert_eq!(rerun["committed"], Json::Null);
    assert_eq!(rerun["unchanged"], 4);
    for key in ["added", "replaced", "removed", "skipped"] {
        assert_eq!(rerun[key], serde_json::json!([]), "{key}");
    }
    assert_eq!(generation(&set), 2);
    assert_eq!(member_folders(&set), 2);
}

/// Adds real GDAC profiles (atlas-netcdf's `argo-gdac` test data) to the
/// day at `dir` whose index is `index`: each named in `which` is laid out at
/// its own path under `dir/dac` and listed with its real index line, the
/// `date_update` replaced where `which` gives one.
fn add_real(dir: &Path, index: &Path, which: &[(&str, Option<&str>)]) {
    let real = profile(1).parent().unwrap().join("../argo-gdac");
    let lines = std::fs::read_to_string(real.join("index.txt")).unwrap();
    let mut text = std::fs::read_to_string(index).unwrap();
    for (name, date_update) in which {
        let line = lines
            .lines()
            .find(|l| l.split(',').next().unwrap().ends_with(&format!("/{name}")))
            .unwrap();
        let file = line.split(',').next().unwrap();
        let to = dir.join("dac").join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(real.join(name), &to).unwrap();
        let mut fields: Vec<&str> = line.split(',').collect();
        if let Some(d) = date_update {
            *fields.last_mut().unwrap() = d;
        }
        text.push_str(&fields.join(","));
        text.push('\n');
    }
    std::fs::write(index, text).unwrap();
}

#[test]
fn real_gdac_profiles_beside_made_ones_sync_day_by_day_and_read_as_create_of_day_two() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir1, dir2) = (tmp.path().join("day1"), tmp.path().join("day2"));
    let index1 = day1(&dir1);
    let all = [
        ("R13857_001.nc", None),
        ("D6901929_002.nc", None),
        ("D2901746_099.nc", None),
        ("D4901079_001.nc", None),
    ];
    add_real(&dir1, &index1, &all);
    // Day 2: one real profile revised, one gone, two unchanged.
    let index2 = day2(&dir2);
    add_real(
        &dir2,
        &index2,
        &[
            ("R13857_001.nc", None),
            ("D6901929_002.nc", Some("20240102000000")),
            ("D4901079_001.nc", None),
        ],
    );
    let set = tmp.path().join("set");
    let first = sync_json(&set, &index1, &[]);
    assert_eq!(first["added"].as_array().unwrap().len(), 8, "{first}");
    let second = sync_json(&set, &index2, &["-j", "2"]);
    let replaced: Vec<(String, String)> = second["replaced"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_owned(),
                r["kind"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        replaced.contains(&("D6901929_002.nc".to_owned(), "revised".to_owned())),
        "{second}"
    );
    let mut removed = names(&second["removed"], "name");
    removed.sort();
    assert_eq!(removed, ["D2901746_099.nc", "R6900000_004.nc"]);
    assert_eq!(second["unchanged"], 3, "{second}");

    let reference = tmp.path().join("reference");
    stdout_of(&["-q", "create", s(&dir2.join("dac")), s(&reference)]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let synced = rt.block_on(contents(&set, true));
    assert_eq!(synced.len(), 7);
    assert_eq!(synced, rt.block_on(contents(&reference, false)));
}

#[test]
fn a_malformed_index_line_is_named_and_nothing_is_committed() {
    let tmp = tempfile::tempdir().unwrap();
    let index1 = day1(&tmp.path().join("day1"));
    let set = tmp.path().join("set");
    sync_json(&set, &index1, &[]);
    let good = format!("{FLOAT}/R6900000_001.nc,,,,A,846,IF,20240101000000");
    let header = "file,date,latitude,longitude,ocean,profiler_type,institution,date_update";
    let cases = [
        (
            format!("# c\nfile,date,latitude\n{good}\n"),
            "line 2: expected the header",
        ),
        (
            format!("{header}\n{good}\n{FLOAT}/R6900000_009.nc,,,,A,846,IF\n"),
            "line 3: 7 fields, expected 8",
        ),
        (
            format!("{header}\n{good}\n{FLOAT}/R6900000_009.nc,,north,,A,846,IF,20240101000000\n"),
            "line 3: field latitude \"north\" is not a finite number",
        ),
        (
            format!("{header}\n{good}\n{FLOAT}/R6900000_009.nc,,,,A,846,IF,2024-01-02\n"),
            "line 3: field date_update \"2024-01-02\" is not a date",
        ),
        (
            format!("{header}\n{good}\n../../etc/R6900000_009.nc,,,,A,846,IF,20240101000000\n"),
            "line 3: file \"../../etc/R6900000_009.nc\" is not a plain path inside the archive root",
        ),
        (
            format!("{header}\n{good}\n{good}\n"),
            "line 3: file \"coriolis/6900000/profiles/R6900000_001.nc\" is already listed on line 2",
        ),
    ];
    let path = tmp.path().join("bad.txt");
    for (text, expected) in cases {
        std::fs::write(&path, &text).unwrap();
        let stderr = common::fails_with_one_line(
            &[
                "sync",
                s(&set),
                "--index",
                s(&path),
                "--root",
                s(&tmp.path().join("day1/dac")),
            ],
            1,
        );
        assert!(stderr.contains("nothing committed"), "{stderr}");
        assert!(stderr.contains(expected), "{expected:?} not in {stderr}");
        assert_eq!(generation(&set), 1, "{text}");
        assert_eq!(member_folders(&set), 1, "{text}");
    }
}

#[test]
fn dry_run_prints_the_plan_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let index1 = day1(&tmp.path().join("day1"));
    let index2 = day2(&tmp.path().join("day2"));
    let set = tmp.path().join("set");
    sync_json(&set, &index1, &[]);
    let out = atlas()
        .args(["sync", s(&set), "--index", s(&index2), "--dry-run"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("add      R6900000_005.nc"), "{text}");
    assert!(
        text.contains("replace  R6900000_002.nc -> D6900000_002.nc  (delayed mode"),
        "{text}"
    );
    assert!(
        text.contains("replace  D6900000_003.nc  (20240101000000 -> 20240102000000)"),
        "{text}"
    );
    assert!(text.contains("remove   R6900000_004.nc"), "{text}");
    assert!(
        text.contains("1 added, 2 replaced, 1 removed, 0 skipped, 1 unchanged; nothing written"),
        "{text}"
    );
    assert_eq!(generation(&set), 1);
    assert_eq!(member_folders(&set), 1);
}

#[test]
fn a_failing_file_commits_nothing_and_with_skip_errors_the_rest_lands_and_a_rerun_retries_it() {
    let tmp = tempfile::tempdir().unwrap();
    let index1 = day1(&tmp.path().join("day1"));
    let day2_dir = tmp.path().join("day2");
    let index2 = day2(&day2_dir);
    let broken = day2_dir.join("dac").join(FLOAT).join("D6900000_002.nc");
    let good_bytes = std::fs::read(&broken).unwrap();
    std::fs::write(&broken, b"not a netcdf file").unwrap();
    let set = tmp.path().join("set");
    sync_json(&set, &index1, &[]);

    let stderr = common::fails_with_one_line(&["sync", s(&set), "--index", s(&index2)], 1);
    assert!(stderr.contains("D6900000_002.nc"), "{stderr}");
    assert_eq!(generation(&set), 1);
    assert_eq!(member_folders(&set), 1, "the uncommitted member is removed");

    let partial = sync_json(&set, &index2, &["--skip-errors"]);
    assert_eq!(names(&partial["skipped"], "name"), ["D6900000_002.nc"]);
    assert!(
        partial["skipped"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("cannot read it as NetCDF")
    );
    // The delayed-mode file failed: its real-time file stays.
    assert_eq!(names(&partial["replaced"], "name"), ["D6900000_003.nc"]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let live = rt.block_on(contents(&set, true));
    assert!(live.contains_key("R6900000_002.nc"));
    assert!(!live.contains_key("R6900000_004.nc"));

    // Repaired, the next sync picks it up.
    std::fs::write(&broken, good_bytes).unwrap();
    let rerun = sync_json(&set, &index2, &[]);
    assert_eq!(names(&rerun["replaced"], "old"), ["R6900000_002.nc"]);
    assert_eq!(rerun["unchanged"], 3);
    let live = rt.block_on(contents(&set, true));
    assert!(!live.contains_key("R6900000_002.nc"));
    assert!(live.contains_key("D6900000_002.nc"));
}

#[test]
fn two_syncs_planned_from_one_state_do_not_both_apply() {
    let tmp = tempfile::tempdir().unwrap();
    let index1 = day1(&tmp.path().join("day1"));
    let index2 = day2(&tmp.path().join("day2"));
    let set = tmp.path().join("set");
    sync_json(&set, &index1, &[]);
    let index = atlas_netcdf::parse_index(&std::fs::read(&index2).unwrap()).unwrap();
    let root = atlas_netcdf::SourceRoot::Local(tmp.path().join("day2/dac"));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let error = rt.block_on(async {
        let location = atlas::Location::resolve(
            s(&set),
            &atlas::StorageOptions::default(),
            atlas::Access::Write,
        )
        .await
        .unwrap();
        let options = atlas_netcdf::SyncOptions::default();
        let a = atlas_netcdf::plan_sync(&location, &index, &options.open)
            .await
            .unwrap();
        let b = atlas_netcdf::plan_sync(&location, &index, &options.open)
            .await
            .unwrap();
        atlas_netcdf::apply_sync(
            a,
            &location,
            &root,
            &options,
            |k| format!("0000000000001-a{k}"),
            |_, _| {},
        )
        .await
        .unwrap();
        atlas_netcdf::apply_sync(
            b,
            &location,
            &root,
            &options,
            |k| format!("0000000000001-b{k}"),
            |_, _| {},
        )
        .await
        .unwrap_err()
    });
    assert!(
        matches!(
            error,
            atlas_netcdf::SyncError::Writer(atlas::AtlasError::CommitConflict { .. })
        ),
        "{error:?}"
    );
    assert_eq!(generation(&set), 2);
    assert_eq!(member_folders(&set), 2, "the loser's member is removed");
}

fn live_names(set: &Path) -> Vec<String> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut names: Vec<String> = rt.block_on(async {
        Atlas::open(set, &OpenOptions::default())
            .await
            .unwrap()
            .dataset_names()
            .await
            .unwrap()
            .into_iter()
            .map(|n| n.to_string())
            .collect()
    });
    names.sort();
    names
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let dest = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &dest);
        } else {
            std::fs::copy(&path, &dest).unwrap();
        }
    }
}

#[test]
fn a_sync_killed_at_any_point_leaves_day_one_or_day_two_and_the_rerun_gives_day_two() {
    let tmp = tempfile::tempdir().unwrap();
    // Forty profiles on day 1; on day 2 every one changes: ten become
    // delayed mode, ten are revised, ten leave, and ten new ones arrive.
    let day1_entries: Vec<(String, u32, &str)> = (0..40)
        .map(|i| (format!("R6900000_{i:03}.nc"), 1 + i % 4, "20240101000000"))
        .collect();
    let mut day2_entries: Vec<(String, u32, &str)> = Vec::new();
    for (i, (name, from, _)) in day1_entries.iter().enumerate() {
        match i / 10 {
            0 => day2_entries.push((name.replacen('R', "D", 1), 1 + from % 4, "20240102000000")),
            1 => day2_entries.push((name.clone(), 1 + from % 4, "20240102000000")),
            2 => {}
            _ => day2_entries.push((name.clone(), *from, "20240101000000")),
        }
    }
    for i in 0..10 {
        day2_entries.push((format!("R6900001_{i:03}.nc"), 1 + i % 4, "20240102000000"));
    }
    let index1 = gdac_day_owned(&tmp.path().join("day1"), &day1_entries);
    let index2 = gdac_day_owned(&tmp.path().join("day2"), &day2_entries);
    let day1_set = tmp.path().join("day1-set");
    sync_json(&day1_set, &index1, &[]);
    let day1_names = live_names(&day1_set);
    let mut day2_names: Vec<String> = day2_entries.iter().map(|(n, _, _)| n.clone()).collect();
    day2_names.sort();

    // Kill points spread over the sync, fixed so that a failure reproduces.
    let mut outcomes = Vec::new();
    for (i, delay_ms) in [0u64, 15, 40, 80, 150, 250, 400, 700]
        .into_iter()
        .enumerate()
    {
        let set = tmp.path().join(format!("set-{i}"));
        copy_dir(&day1_set, &set);
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("atlas"))
            .args(["-q", "sync", s(&set), "--index", s(&index2), "-j", "2"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill(); // SIGKILL
        let status = child.wait().unwrap();
        let seen = live_names(&set);
        assert!(
            seen == day1_names || seen == day2_names,
            "killed after {delay_ms} ms ({status:?}): a mix of the two days: {seen:?}"
        );
        outcomes.push(seen == day2_names);
        let rerun = sync_json(&set, &index2, &[]);
        assert_eq!(
            live_names(&set),
            day2_names,
            "rerun after a kill at {delay_ms} ms"
        );
        let again = sync_json(&set, &index2, &[]);
        assert_eq!(again["committed"], Json::Null, "{rerun}");
    }
    println!("killed before the commit / after it: {outcomes:?}");
}

/// [`gdac_day`] with owned names.
fn gdac_day_owned(dir: &Path, entries: &[(String, u32, &str)]) -> PathBuf {
    let borrowed: Vec<(&str, u32, &str)> = entries
        .iter()
        .map(|(n, f, d)| (n.as_str(), *f, *d))
        .collect();
    gdac_day(dir, &borrowed)
}

#[test]
fn max_datasets_splits_a_sync_into_members_committed_together() {
    let tmp = tempfile::tempdir().unwrap();
    let index1 = day1(&tmp.path().join("day1"));
    let index2 = day2(&tmp.path().join("day2"));
    let set = tmp.path().join("set");
    let first = sync_json(&set, &index1, &["--max-datasets", "3"]);
    assert_eq!(first["committed"]["members"].as_array().unwrap().len(), 2);
    assert_eq!(first["committed"]["generation"], 1, "one commit for both");
    assert_eq!(member_folders(&set), 2);
    let second = sync_json(&set, &index2, &["--max-datasets", "1"]);
    // Three files written (one add, two replacements), one member each.
    assert_eq!(second["committed"]["members"].as_array().unwrap().len(), 3);
    assert_eq!(second["committed"]["generation"], 2);
    let mut expected: Vec<String> = [
        "D6900000_002.nc",
        "D6900000_003.nc",
        "R6900000_001.nc",
        "R6900000_005.nc",
    ]
    .map(String::from)
    .to_vec();
    expected.sort();
    assert_eq!(live_names(&set), expected);
}
