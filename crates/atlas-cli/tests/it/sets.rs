//! Collection sets through the command line: `create --append` and
//! `--max-datasets`, every reading command on a set, name replacement,
//! deletes, eight processes appending at once (local disk, the in-process S3
//! server, Azurite, fake-gcs-server), a writer killed mid-member, and
//! `verify` / `cleanup` of uncommitted members.

#![cfg(test)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use atlas_testkit::S3Server;
use common::{
    atlas, atlas_on_azurite, atlas_on_fake_gcs, atlas_on_s3, fails_with_one_line, json_by, json_of,
    s, stdout_of, write_nc,
};
use serde_json::Value as Json;

/// Runs `atlas ARGS`, and SIGKILLs it `delay_ms` after the set at `set` has
/// `members` member folders; whether it was still running (killed, not done).
fn kill_when_members(args: &[&str], set: &Path, members: usize, delay_ms: u64) -> bool {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("atlas"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let members_dir = set.join("members");
    let started = std::time::Instant::now();
    while std::fs::read_dir(&members_dir).unwrap().count() < members {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "atlas {args:?}: no member folder appeared"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(delay_ms));
    child.kill().unwrap();
    !child.wait().unwrap().success()
}

/// `atlas --json create FILES.. SET --append`, expected to succeed.
fn append(set: &Path, files: &[PathBuf]) -> Json {
    let mut args = vec!["create".to_owned()];
    args.extend(files.iter().map(|f| s(f).to_owned()));
    args.extend([s(set).to_owned(), "--append".to_owned()]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    json_of(&refs)
}

fn names(ls: &Json) -> Vec<String> {
    ls.as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap().to_owned())
        .collect()
}

fn member_ids(info: &Json) -> Vec<String> {
    info["set"]["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn two_appends_read_as_their_union_and_a_name_added_again_reads_its_new_copy() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        tmp.path().join("in1/a.nc"),
        tmp.path().join("in1/b.nc"),
        tmp.path().join("in2/c.nc"),
    );
    let b_again = tmp.path().join("in2/b.nc");
    write_nc(&a, &[1.0, 2.0, 3.0], 1);
    write_nc(&b, &[10.0, 11.0], 2);
    write_nc(&b_again, &[20.0, 21.0, 22.0], 3);
    write_nc(&c, &[5.0], 4);
    let set = tmp.path().join("set");

    let first = append(&set, &[a.clone(), b.clone()]);
    assert_eq!(first["datasets"], 2);
    assert_eq!(first["commit"]["generation"], 1);
    assert_eq!(first["commit"]["attempts"], 1);
    assert_eq!(first["members"].as_array().unwrap().len(), 1);
    let second = append(&set, &[b_again.clone(), c.clone()]);
    assert_eq!(second["commit"]["generation"], 2);

    let set = s(&set);
    assert_eq!(names(&json_of(&["ls", set])), ["a.nc", "b.nc", "c.nc"]);
    let info = json_of(&["info", set]);
    assert_eq!(info["set"]["generation"], 2);
    assert_eq!(member_ids(&info).len(), 2);
    assert_eq!(info["datasets_live"], 3);
    assert_eq!(info["datasets_total"], 4);
    assert_eq!(info["datasets_replaced"], 1);
    let members = json_of(&["ls", set, "--members"]);
    assert_eq!(members.as_array().unwrap().len(), 2);
    assert_eq!(members[0]["id"], info["set"]["members"][0]["id"]);

    // Statistics over the live copies only: the replaced b.nc (10, 11) is not counted.
    let stats = json_of(&["stats", set, "TEMP"]);
    assert_eq!(stats["row_count"], 7, "{stats}");
    assert_eq!(stats["max"], serde_json::json!({"float": 22.0}), "{stats}");
    let by_dataset = json_of(&["stats", set, "TEMP", "--by-dataset"]);
    let rows: Vec<&str> = by_dataset
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["dataset"].as_str().unwrap())
        .collect();
    assert_eq!(rows, ["a.nc", "b.nc", "c.nc"]);

    let cat = json_of(&["cat", set, "b.nc", "TEMP"]);
    assert_eq!(cat["values"], serde_json::json!([20.0, 21.0, 22.0]));
    let show = stdout_of(&["show", set, "b.nc"]);
    assert!(show.contains("N = 3"), "{show}");
    let cycles = json_of(&["attrs", set, "cycle"]);
    assert_eq!(cycles.as_array().unwrap().len(), 3, "{cycles}");

    // The old b.nc (max 11, cycle 2) would match; only its live copy (max 22,
    // cycle 3) is asked, both through member pruning and without it (negations
    // never rule a member out).
    assert_eq!(
        names(&json_of(&["ls", set, "--where", "TEMP.max < 15"])),
        ["a.nc", "c.nc"]
    );
    assert_eq!(
        names(&json_of(&["ls", set, "--where", "cycle = 2"])),
        Vec::<String>::new()
    );
    assert_eq!(
        names(&json_of(&["ls", set, "--where", "not TEMP.max >= 15"])),
        ["a.nc", "c.nc"]
    );
    assert_eq!(
        names(&json_of(&["ls", set, "--where", "not cycle = 3"])),
        ["a.nc", "c.nc"]
    );
    assert_eq!(
        names(&json_of(&["ls", set, "--where", "not cycle < 2"])),
        ["b.nc", "c.nc"]
    );
    let catalogue = json_of(&["catalogue", set]);
    let rows = catalogue.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[1]["name"], "b.nc");
    assert_eq!(
        rows[1]["member"].as_str(),
        Some(member_ids(&info)[1].as_str())
    );
    atlas().args(["verify", set]).assert().success();

    // Deleting b.nc hides it; the copy in the first member does not come back.
    let rm = json_of(&["rm", set, "b.nc"]);
    assert_eq!(rm["deleted"], 1);
    assert_eq!(names(&json_of(&["ls", set])), ["a.nc", "c.nc"]);
    let err = common::fails_with_one_line(&["cat", set, "b.nc", "TEMP"], 1);
    assert!(err.contains("\"b.nc\" not found"), "{err}");
    let info = json_of(&["info", set]);
    assert_eq!(info["datasets_live"], 2);
    assert_eq!(info["set"]["generation"], 3, "the delete is a commit");
    atlas().args(["verify", set]).assert().success();
}

#[test]
fn max_datasets_two_over_five_files_commits_three_members_in_one_generation() {
    let tmp = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = (0..5)
        .map(|i| {
            let p = tmp.path().join(format!("in/p{i}.nc"));
            write_nc(&p, &[i as f32], i);
            p
        })
        .collect();
    let set = tmp.path().join("set");
    let report = json_of(&[
        "create",
        s(&tmp.path().join("in")),
        s(&set),
        "--max-datasets",
        "2",
    ]);
    let sizes: Vec<u64> = report["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["datasets"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes, [2, 2, 1]);
    assert_eq!(report["commit"]["generation"], 1);
    assert_eq!(report["datasets"], 5);
    let info = json_of(&["info", s(&set)]);
    assert_eq!(info["set"]["generation"], 1);
    assert_eq!(member_ids(&info).len(), 3);
    assert_eq!(
        names(&json_of(&["ls", s(&set)])),
        files
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
    );
    // Not a lone collection: create without --append refuses it.
    let err = common::fails_with_one_line(&["create", s(&files[0]), s(&set)], 1);
    assert!(err.contains("already holds a set"), "{err}");
}

/// The catalogue rows of a set without the `member` column, by name.
fn rows_without_member(set: &Path) -> Vec<Json> {
    let mut rows: Vec<Json> = json_of(&["catalogue", s(set)])
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let mut row = row.clone();
            row.as_object_mut().unwrap().remove("member");
            row
        })
        .collect();
    rows.sort_by_key(|r| r["name"].as_str().unwrap().to_owned());
    rows
}

#[test]
fn members_written_in_parallel_with_j_2_hold_what_j_1_writes_in_the_same_order() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..9 {
        let temps: Vec<f32> = (0..=i).map(|k| (i * 10 + k) as f32).collect();
        write_nc(&tmp.path().join(format!("in/p{i}.nc")), &temps, i);
    }
    let input = tmp.path().join("in");
    let mut sets = Vec::new();
    for jobs in ["1", "2"] {
        let set = tmp.path().join(format!("set{jobs}"));
        let report = json_of(&[
            "create",
            s(&input),
            s(&set),
            "--max-datasets",
            "2",
            "-j",
            jobs,
        ]);
        let sizes: Vec<u64> = report["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["datasets"].as_u64().unwrap())
            .collect();
        assert_eq!(sizes, [2, 2, 2, 2, 1], "-j {jobs}");
        assert_eq!(report["commit"]["generation"], 1);
        sets.push(set);
    }
    let (one, two) = (&sets[0], &sets[1]);
    let expected: Vec<String> = (0..9).map(|i| format!("p{i}.nc")).collect();
    // Members in chunk order: the set's names in file order.
    assert_eq!(names(&json_of(&["ls", s(one)])), expected);
    assert_eq!(names(&json_of(&["ls", s(two)])), expected);
    assert_eq!(rows_without_member(one), rows_without_member(two));
    for name in &expected {
        assert_eq!(
            stdout_of(&["cat", s(one), name, "TEMP"]),
            stdout_of(&["cat", s(two), name, "TEMP"]),
            "{name}"
        );
    }
    atlas().args(["verify", s(two)]).assert().success();
}

#[test]
fn a_failing_file_among_members_written_in_parallel_leaves_no_member_folder() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..6 {
        write_nc(&tmp.path().join(format!("in/p{i}.nc")), &[i as f32], i);
    }
    std::fs::write(tmp.path().join("in/p3_bad.nc"), b"CDF\x01 not really").unwrap();
    let set = tmp.path().join("set");
    common::fails_with_one_line(
        &[
            "-q",
            "create",
            s(&tmp.path().join("in")),
            s(&set),
            "--max-datasets",
            "1",
            "-j",
            "2",
        ],
        1,
    );
    assert!(!set.join("set.manifest").exists());
    let left: Vec<_> = std::fs::read_dir(set.join("members"))
        .map(|d| d.collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_failing_file_commits_no_member_and_leaves_no_member_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let good = tmp.path().join("in/good.nc");
    write_nc(&good, &[1.0], 1);
    let bad = tmp.path().join("in/z_bad.nc");
    std::fs::write(&bad, b"CDF\x01 not really").unwrap();
    let set = tmp.path().join("set");
    common::fails_with_one_line(
        &[
            "-q",
            "create",
            s(&good),
            s(&bad),
            s(&set),
            "--max-datasets",
            "1",
        ],
        1,
    );
    assert!(!set.join("set.manifest").exists());
    let left: Vec<_> = std::fs::read_dir(set.join("members"))
        .map(|d| d.collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn append_refuses_a_lone_collection_and_reading_commands_still_read_one_as_before() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("in/a.nc");
    write_nc(&file, &[1.0], 1);
    let lone = tmp.path().join("lone");
    json_of(&["create", s(&file), s(&lone)]);
    let err = common::fails_with_one_line(&["create", s(&file), s(&lone), "--append"], 1);
    assert!(err.contains("not a set"), "{err}");
    let info = json_of(&["info", s(&lone)]);
    assert!(info.get("set").is_none(), "{info}");
    assert_eq!(info["datasets_live"], 1);
    let err = common::fails_with_one_line(&["ls", s(&lone), "--members"], 1);
    assert!(err.contains("not a set"), "{err}");
}

/// An uncommitted member: a collection written straight into `members/<id>/`.
fn plant_uncommitted_member(set: &Path, id: &str) -> PathBuf {
    let file = set.parent().unwrap().join(format!("planted/{id}.nc"));
    write_nc(&file, &[1.0], 1);
    let dir = set.join("members").join(id);
    json_of(&["create", s(&file), s(&dir)]);
    dir
}

#[test]
fn cleanup_leaves_a_fresh_uncommitted_member_alone_by_default_and_verify_lists_it() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("in/a.nc");
    write_nc(&file, &[1.0], 1);
    let set = tmp.path().join("set");
    append(&set, &[file]);
    let dir = plant_uncommitted_member(&set, "1700000000000-00000000000000ff");

    let verify = json_of(&["verify", s(&set)]);
    assert_eq!(verify["ok"], true, "{verify}");
    let warnings = verify["warnings"].to_string();
    assert!(
        warnings.contains("uncommitted member members/1700000000000-00000000000000ff"),
        "{warnings}"
    );

    let kept = json_of(&["cleanup", s(&set)]);
    assert_eq!(kept["members_removed"], serde_json::json!([]), "{kept}");
    assert_eq!(kept["members_kept_young"], 1, "{kept}");
    assert!(dir.join("data.atlas").exists());

    let dry = json_of(&["cleanup", s(&set), "--older-than", "0s", "--dry-run"]);
    assert_eq!(dry["members_removed"].as_array().unwrap().len(), 1, "{dry}");
    assert!(dir.exists());

    // The committed member is never a candidate.
    json_of(&["cleanup", s(&set), "--older-than", "0s"]);
    assert!(!dir.exists());
    assert_eq!(names(&json_of(&["ls", s(&set)])), ["a.nc"]);
    let verify = json_of(&["verify", s(&set)]);
    assert!(
        !verify["warnings"].to_string().contains("uncommitted"),
        "{verify}"
    );
}

#[test]
fn a_writer_killed_during_append_leaves_the_set_as_it_was_and_cleanup_removes_its_member() {
    let tmp = tempfile::tempdir().unwrap();
    let first = tmp.path().join("in/first.nc");
    write_nc(&first, &[1.0, 2.0], 1);
    let set = tmp.path().join("set");
    append(&set, &[first]);
    let before = json_of(&["info", s(&set)]);

    // Enough input that the member is still being written when it is killed.
    let values: Vec<f32> = (0..200_000).map(|i| (i % 977) as f32 * 0.25).collect();
    for i in 0..30 {
        write_nc(&tmp.path().join(format!("big/b{i:02}.nc")), &values, i);
    }
    let killed = kill_when_members(
        &[
            "-q",
            "create",
            s(&tmp.path().join("big")),
            s(&set),
            "--append",
        ],
        &set,
        2,
        50,
    );
    assert!(
        killed,
        "the writer finished before the kill: make the input bigger"
    );
    let members_dir = set.join("members");

    let after = json_of(&["info", s(&set)]);
    assert_eq!(after["set"], before["set"]);
    assert_eq!(names(&json_of(&["ls", s(&set)])), ["first.nc"]);
    let verify = json_of(&["verify", s(&set)]);
    assert_eq!(verify["ok"], true, "{verify}");
    assert!(
        verify["warnings"]
            .to_string()
            .contains("uncommitted member members/"),
        "{verify}"
    );
    let removed = json_of(&["cleanup", s(&set), "--older-than", "0s"]);
    assert_eq!(
        removed["members_removed"].as_array().unwrap().len(),
        1,
        "{removed}"
    );
    assert_eq!(std::fs::read_dir(&members_dir).unwrap().count(), 1);
    assert_eq!(json_of(&["info", s(&set)])["set"], before["set"]);
}

/// What eight processes appending one file each to `url` at once did.
struct Race {
    /// Process index and member id of each that exited 0.
    committed: Vec<(usize, String)>,
    /// Process index, exit code and stderr of each that failed.
    failed: Vec<(usize, Option<i32>, String)>,
    /// Member ids in the manifest afterwards.
    in_manifest: Vec<String>,
    /// Dataset names the set lists afterwards.
    listed: Vec<String>,
    /// Commit attempts of the processes that exited 0, summed.
    attempts: u64,
    /// Of those, how many saw the store overwrite a conditional write.
    overwritten: usize,
}

fn eight_appending(atlas: impl Fn() -> Command, url: &str) -> Race {
    let inputs = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = (0..8)
        .map(|i| {
            let p = inputs.path().join(format!("p{i}.nc"));
            write_nc(&p, &[i as f32; 16], i);
            p
        })
        .collect();
    let children: Vec<_> = files
        .iter()
        .map(|f| {
            atlas()
                .args(["--json", "create", s(f), url, "--append"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut race = Race {
        committed: Vec::new(),
        failed: Vec::new(),
        in_manifest: Vec::new(),
        listed: Vec::new(),
        attempts: 0,
        overwritten: 0,
    };
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!stderr.contains("panic"), "process {i}: {stderr}");
        if out.status.success() {
            let report: Json = serde_json::from_slice(&out.stdout).unwrap();
            let id = report["members"][0]["id"].as_str().unwrap().to_owned();
            race.attempts += report["commit"]["attempts"].as_u64().unwrap();
            race.overwritten += usize::from(report["commit"]["lost_conditional_write"] == true);
            race.committed.push((i, id));
        } else {
            race.failed.push((i, out.status.code(), stderr));
        }
    }
    race.in_manifest = member_ids(&json_by(atlas(), &["info", url]));
    race.listed = names(&json_by(atlas(), &["ls", url]));
    race
}

/// Every process that exited 0 has its member committed; every other one
/// exited 75 saying "retry" and its dataset is not in the set.
fn assert_no_member_lost(race: &Race, store: &str) {
    for (i, id) in &race.committed {
        assert!(
            race.in_manifest.contains(id),
            "{store}: process {i} exited 0 but its member {id} is not in the manifest"
        );
        assert!(
            race.listed.contains(&format!("p{i}.nc")),
            "{store}: p{i}.nc"
        );
    }
    for (i, code, stderr) in &race.failed {
        assert_eq!(*code, Some(75), "{store}: process {i}: {stderr}");
        assert!(stderr.contains("retry"), "{store}: process {i}: {stderr}");
        assert!(
            !race.listed.contains(&format!("p{i}.nc")),
            "{store}: p{i}.nc"
        );
    }
    assert_eq!(race.in_manifest.len(), race.committed.len(), "{store}");
    eprintln!(
        "{store}: 8 processes appending at once: {} committed in {} attempts, {} asked to retry",
        race.committed.len(),
        race.attempts,
        race.failed.len()
    );
}

#[test]
fn eight_processes_appending_at_once_on_local_disk_lose_no_member() {
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    let race = eight_appending(
        || {
            let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("atlas"));
            cmd.env_remove("RUST_LOG");
            cmd
        },
        s(&set),
    );
    assert_no_member_lost(&race, "local disk");
    assert_eq!(race.committed.len(), 8, "a lock serializes local commits");
}

fn unique(scheme: &str, bucket: &str, test: &str) -> String {
    format!(
        "{scheme}://{bucket}/{test}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

#[test]
fn eight_processes_appending_at_once_on_s3_lose_no_member() {
    let server = S3Server::start();
    let endpoint = server.endpoint().to_owned();
    let race = eight_appending(
        || atlas_on_s3(&endpoint),
        &unique("s3", atlas_testkit::BUCKET, "append8"),
    );
    assert_no_member_lost(&race, "S3 (in-process server)");
}

#[test]
fn eight_processes_appending_at_once_on_azurite_lose_no_member() {
    let race = eight_appending(atlas_on_azurite, &unique("az", "atlas-test", "append8"));
    assert_no_member_lost(&race, "Azurite");
}

/// fake-gcs-server ignores generation preconditions, so commits can
/// overwrite each other there: what it loses is printed as a figure, not
/// asserted; only that no process panicked (checked while collecting).
#[test]
fn eight_processes_appending_at_once_on_fake_gcs_report_what_it_loses() {
    let race = eight_appending(atlas_on_fake_gcs, &unique("gs", "atlas-test", "append8"));
    let lost: Vec<&String> = race
        .committed
        .iter()
        .map(|(_, id)| id)
        .filter(|id| !race.in_manifest.contains(id))
        .collect();
    eprintln!(
        "fake-gcs-server, 8 `atlas create --append` at once: {} exited 0, {} asked to retry, \
         {} in the manifest, {} committed members lost (exited 0, not in the manifest); \
         {} attempts, {} processes saw a conditional write overwritten",
        race.committed.len(),
        race.failed.len(),
        race.in_manifest.len(),
        lost.len(),
        race.attempts,
        race.overwritten
    );
}

#[test]
fn compact_rewrites_small_members_into_one_and_every_read_stays_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    for i in 0..3 {
        let p = tmp.path().join(format!("in{i}/p{i}.nc"));
        write_nc(&p, &[i as f32, 10.0 + i as f32], i);
        append(&set, &[p]);
    }
    let before_ls = names(&json_of(&["ls", s(&set)]));
    let before_cat = json_of(&["cat", s(&set), "p1.nc", "TEMP"]);
    let before_ids = member_ids(&json_of(&["info", s(&set)]));
    assert_eq!(before_ids.len(), 3);

    let report = json_of(&["compact", s(&set), "--target-datasets", "10"]);
    assert_eq!(report["compacted"], true);
    assert_eq!(report["datasets"], 3);
    assert_eq!(report["generation"], 4);

    let info = json_of(&["info", s(&set)]);
    assert_eq!(member_ids(&info).len(), 1);
    assert_eq!(names(&json_of(&["ls", s(&set)])), before_ls);
    assert_eq!(json_of(&["cat", s(&set), "p1.nc", "TEMP"]), before_cat);
    // The replaced members stay for readers of the older generation, marked
    // retired; cleanup keeps them within the retention, then removes them.
    for id in &before_ids {
        assert!(
            set.join("members").join(id).join("retired").exists(),
            "{id} retired"
        );
        assert!(
            set.join("members").join(id).join("data.atlas").exists(),
            "{id} kept"
        );
    }
    let kept = json_of(&["cleanup", s(&set), "--older-than", "0"]);
    assert_eq!(kept["members_kept_young"], 3, "{kept}");
    for id in &before_ids {
        assert!(
            set.join("members").join(id).exists(),
            "{id} kept by cleanup"
        );
    }
    let removed = json_of(&["cleanup", s(&set), "--older-than", "0", "--retention", "0s"]);
    let paths: Vec<&str> = removed["members_removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths.len(), 3, "{removed}");
    for id in &before_ids {
        assert!(
            !set.join("members").join(id).exists(),
            "{id} removed after the retention"
        );
    }
    assert_eq!(names(&json_of(&["ls", s(&set)])), before_ls);
    // Nothing left to compact.
    assert_eq!(json_of(&["compact", s(&set)])["compacted"], false);
}

#[test]
fn compact_sort_by_writes_members_in_key_order_and_an_unusable_key_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    // One TEMP value per file, committed out of order: 5, 1, 3.
    for (i, t) in [5.0f32, 1.0, 3.0].into_iter().enumerate() {
        let p = tmp.path().join(format!("in{i}/p{i}.nc"));
        write_nc(&p, &[t], i as i32);
        append(&set, &[p]);
    }
    let before = json_of(&["cat", s(&set), "p0.nc", "TEMP"]);

    let report = json_of(&[
        "compact",
        s(&set),
        "--sort-by",
        "TEMP",
        "--target-datasets",
        "1",
    ]);
    assert_eq!(report["compacted"], true);
    assert_eq!(report["datasets"], 3);
    assert_eq!(report["replaced"].as_array().unwrap().len(), 3);
    assert_eq!(report["written"].as_array().unwrap().len(), 3);
    // Members are listed in commit order: now the order of TEMP.
    assert_eq!(
        names(&json_of(&["ls", s(&set)])),
        ["p1.nc", "p2.nc", "p0.nc"]
    );
    assert_eq!(json_of(&["cat", s(&set), "p0.nc", "TEMP"]), before);

    let unknown = fails_with_one_line(&["compact", s(&set), "--sort-by", "JULD"], 1);
    assert!(unknown.contains("JULD"), "{unknown}");
    // A malformed key is a usage error (clap's exit 2), naming it.
    let curve = atlas()
        .args(["compact", s(&set), "--sort-by", "hilbert:A"])
        .output()
        .unwrap();
    assert_eq!(curve.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&curve.stderr).contains("\"hilbert:A\""));
}

/// Nine one-value files in "float order": `f{float}_{cycle}.nc`, whose
/// `TEMP` (a time) is `cycle * 3 + float`, so that path order interleaves
/// times: three floats of three cycles.
fn float_ordered_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for float in 0..3 {
        for cycle in 0..3 {
            let p = dir.join(format!("f{float}/f{float}_{cycle}.nc"));
            write_nc(&p, &[(cycle * 3 + float) as f32], cycle);
            files.push(p);
        }
    }
    files
}

/// Per member (in commit order), the `TEMP` values of its datasets.
fn temps_by_member(set: &Path) -> Vec<Vec<f64>> {
    let catalogue = json_of(&["catalogue", s(set)]);
    let mut members: Vec<(String, Vec<f64>)> = Vec::new();
    for row in catalogue.as_array().unwrap() {
        let member = row["member"].as_str().unwrap().to_owned();
        let name = row["name"].as_str().unwrap();
        let value: Json = json_of(&["cat", s(set), name, "TEMP"]);
        let temp = value["values"][0]
            .as_f64()
            .unwrap_or_else(|| panic!("{value}"));
        match members.iter_mut().find(|(m, _)| *m == member) {
            Some((_, temps)) => temps.push(temp),
            None => members.push((member, vec![temp])),
        }
    }
    members.into_iter().map(|(_, t)| t).collect()
}

#[test]
fn a_sorted_create_writes_members_with_disjoint_time_ranges_and_the_same_datasets() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in");
    float_ordered_files(&input);
    let (plain, sorted) = (tmp.path().join("plain"), tmp.path().join("sorted"));
    json_of(&["create", s(&input), s(&plain), "--max-datasets", "3"]);
    let report = json_of(&[
        "create",
        s(&input),
        s(&sorted),
        "--max-datasets",
        "3",
        "--sort-by",
        "TEMP",
        "-j",
        "2",
    ]);
    assert_eq!(report["commit"]["generation"], 1);
    assert_eq!(report["datasets"], 9);

    // In path order each member spans the whole time range ...
    let mut spans = temps_by_member(&plain);
    let width = |t: &Vec<f64>| {
        t.iter().copied().fold(f64::MIN, f64::max) - t.iter().copied().fold(f64::MAX, f64::min)
    };
    assert!(
        spans.iter().all(|t| t.len() == 3 && width(t) == 6.0),
        "{spans:?}"
    );
    // ... sorted, each holds three consecutive times, members in time order.
    spans = temps_by_member(&sorted);
    for t in &mut spans {
        t.sort_by(f64::total_cmp);
    }
    assert_eq!(
        spans,
        [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]].map(Vec::from)
    );
    // The same datasets with the same values and attributes (ordinals are
    // positions in a member: they differ).
    let rows = |set: &Path| {
        let mut rows = rows_without_member(set);
        for row in &mut rows {
            row.as_object_mut().unwrap().remove("ordinal");
        }
        rows
    };
    assert_eq!(rows(&plain), rows(&sorted));
    atlas().args(["verify", s(&sorted)]).assert().success();
}

#[test]
fn a_sorted_create_with_skip_errors_leaves_out_an_unreadable_file_and_sorts_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in");
    float_ordered_files(&input);
    std::fs::write(input.join("f0/bad.nc"), b"CDF\x01 not really").unwrap();
    let set = tmp.path().join("set");
    let args = [
        "--json",
        "create",
        s(&input),
        s(&set),
        "--max-datasets",
        "3",
        "--sort-by",
        "TEMP",
        "--skip-errors",
    ];
    let out = atlas().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("1 unreadable, placed last"), "{stderr}");
    let report: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["datasets"], 9);
    let skipped = report["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{report}");
    assert!(skipped[0]["file"].as_str().unwrap().ends_with("bad.nc"));
    let mut spans = temps_by_member(&set);
    for t in &mut spans {
        t.sort_by(f64::total_cmp);
    }
    assert_eq!(
        spans,
        [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]].map(Vec::from)
    );
}

#[test]
fn a_sorted_create_refuses_an_unknown_or_many_valued_key_before_writing_anything() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in");
    float_ordered_files(&input);
    let set = tmp.path().join("set");
    let create = |key: &str| {
        let args = [
            "create",
            s(&input),
            s(&set),
            "--max-datasets",
            "3",
            "--sort-by",
            key,
        ];
        fails_with_one_line(&args, 1)
    };
    let unknown = create("JULD");
    assert!(unknown.contains("\"JULD\""), "{unknown}");
    assert!(!set.exists(), "nothing is written");

    write_nc(&input.join("f9/f9_0.nc"), &[1.0, 2.0], 0);
    let many = create("TEMP");
    assert!(
        many.contains("\"TEMP\"") && many.contains("f9_0.nc"),
        "{many}"
    );
    assert!(!set.exists(), "nothing is written");

    // --sort-by cuts members: it needs --max-datasets (a usage error).
    let alone = atlas()
        .args(["create", s(&input), s(&set), "--sort-by", "TEMP"])
        .output()
        .unwrap();
    assert_eq!(alone.status.code(), Some(2));
}

#[test]
fn a_compaction_killed_half_way_leaves_the_set_as_before_or_after_never_between() {
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    let values: Vec<f32> = (0..200_000).map(|i| (i % 977) as f32 * 0.25).collect();
    for m in 0..2 {
        let files: Vec<PathBuf> = (0..10)
            .map(|i| {
                let p = tmp.path().join(format!("in{m}/p{m}_{i:02}.nc"));
                write_nc(&p, &values, i);
                p
            })
            .collect();
        append(&set, &files);
    }
    let before_ids = member_ids(&json_of(&["info", s(&set)]));
    let before_ls = names(&json_of(&["ls", s(&set)]));
    let before_stats = json_of(&["stats", s(&set), "TEMP"]);

    let killed = kill_when_members(
        &["-q", "compact", s(&set), "--target-datasets", "100"],
        &set,
        3,
        30,
    );
    let members_dir = set.join("members");

    let ids = member_ids(&json_of(&["info", s(&set)]));
    assert!(
        ids == before_ids || (ids.len() == 1 && !before_ids.contains(&ids[0])),
        "before {before_ids:?}, now {ids:?}"
    );
    assert_eq!(names(&json_of(&["ls", s(&set)])), before_ls);
    assert_eq!(json_of(&["stats", s(&set), "TEMP"]), before_stats);
    let verify = json_of(&["verify", s(&set)]);
    assert_eq!(verify["ok"], true, "{verify}");

    // Whatever the kill left uncommitted goes; the set still reads the same.
    json_of(&["cleanup", s(&set), "--older-than", "0s"]);
    assert_eq!(
        std::fs::read_dir(&members_dir).unwrap().count(),
        ids.len(),
        "only committed members remain (killed: {killed})"
    );
    assert_eq!(names(&json_of(&["ls", s(&set)])), before_ls);
}

/// `atlas --json verify ARGS` whatever its exit status, with the status.
fn verify_json(args: &[&str]) -> (Option<i32>, Json) {
    let out = atlas()
        .arg("--json")
        .arg("verify")
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let json = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "verify {args:?}: not JSON ({e}): {text} / {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), json)
}

#[test]
fn verify_deep_on_a_set_names_the_member_and_segment_of_every_flipped_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    for m in 0..2 {
        let p = tmp.path().join(format!("in{m}/p{m}.nc"));
        write_nc(&p, &[1.0 + m as f32, 2.0, 3.0], m);
        append(&set, &[p]);
    }
    let (code, clean) = verify_json(&["--deep", s(&set)]);
    assert_eq!(code, Some(0), "{clean}");

    let info = json_of(&["info", s(&set)]);
    let victim = member_ids(&info)[1].clone();
    let container = set.join("members").join(&victim).join("data.atlas");
    let original = std::fs::read(&container).unwrap();
    // The member's own layout: which segment holds which byte.
    let segments = json_of(&["info", s(container.parent().unwrap())]);
    let temp = segments["variables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|seg| seg["name"] == "TEMP")
        .cloned()
        .unwrap_or_else(|| panic!("no TEMP segment in {segments}"));
    let offset = temp["offset"].as_u64().unwrap() as usize;
    let len = temp["len"].as_u64().unwrap() as usize;
    // Every 7th byte of the TEMP segment, one at a time.
    for at in (offset..offset + len).step_by(7) {
        let mut bytes = original.clone();
        bytes[at] ^= 0x10;
        std::fs::write(&container, &bytes).unwrap();
        let (code, report) = verify_json(&["--deep", s(&set)]);
        assert_ne!(code, Some(0), "byte {at}: {report}");
        let problems = report["problems"].to_string();
        assert!(
            problems.contains(&format!("member {victim}")) && problems.contains("segment TEMP"),
            "byte {at}: {problems}"
        );
    }
    std::fs::write(&container, &original).unwrap();
}

#[test]
fn verify_reports_a_damaged_manifest_and_a_missing_member_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let set = tmp.path().join("set");
    for m in 0..2 {
        let p = tmp.path().join(format!("in{m}/p{m}.nc"));
        write_nc(&p, &[1.0], m);
        append(&set, &[p]);
    }
    let ids = member_ids(&json_of(&["info", s(&set)]));
    std::fs::remove_dir_all(set.join("members").join(&ids[0])).unwrap();
    let (code, report) = verify_json(&[s(&set)]);
    assert_eq!(code, Some(1), "{report}");
    let problems = report["problems"].to_string();
    assert!(
        problems.contains(&format!("member {}", ids[0])),
        "{problems}"
    );
    assert!(problems.contains("not found"), "{problems}");

    let manifest = set.join("set.manifest");
    let mut bytes = std::fs::read(&manifest).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    std::fs::write(&manifest, &bytes).unwrap();
    let (code, report) = verify_json(&[s(&set)]);
    assert_eq!(code, Some(1), "{report}");
    let problems = report["problems"].to_string();
    assert!(problems.contains("set.manifest"), "{problems}");
    assert!(problems.contains("checksum"), "{problems}");
}

#[test]
fn a_chunk_whose_every_file_fails_under_skip_errors_commits_no_member() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("in");
    for i in 0..3 {
        write_nc(&input.join(format!("a_{i}.nc")), &[i as f32], i);
        std::fs::write(input.join(format!("b_{i}.nc")), b"CDF\x01 not really").unwrap();
    }
    write_nc(&input.join("c_0.nc"), &[9.0], 0);
    let set = tmp.path().join("set");
    let report = json_of(&[
        "create",
        s(&input),
        s(&set),
        "--max-datasets",
        "3",
        "--skip-errors",
    ]);
    assert_eq!(report["datasets"], 4);
    assert_eq!(report["skipped"].as_array().unwrap().len(), 3, "{report}");
    assert_eq!(
        temps_by_member(&set),
        [vec![0.0, 1.0, 2.0], vec![9.0]],
        "the chunk of the three unreadable files has no member"
    );
    let folders = std::fs::read_dir(set.join("members")).unwrap().count();
    assert_eq!(folders, 2, "and left no folder behind");
    atlas().args(["verify", s(&set)]).assert().success();

    // Every file skipped: nothing is committed, and no set appears.
    let bad_only = tmp.path().join("bad");
    std::fs::create_dir_all(&bad_only).unwrap();
    std::fs::copy(input.join("b_0.nc"), bad_only.join("b_0.nc")).unwrap();
    let empty = tmp.path().join("empty");
    let report = json_of(&[
        "create",
        s(&bad_only),
        s(&empty),
        "--max-datasets",
        "3",
        "--skip-errors",
    ]);
    assert_eq!(report["datasets"], 0, "{report}");
    assert!(
        !empty.join("set.manifest").exists(),
        "no manifest is committed for nothing"
    );
}
