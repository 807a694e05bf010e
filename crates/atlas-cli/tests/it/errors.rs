//! Bad input: exit 1 (2 for usage) and exactly one line on stderr, never a
//! panic or a backtrace; a damaged collection makes `verify` report.

#![cfg(test)]

use crate::common;

use common::*;

const READ_COMMANDS: [&[&str]; 6] = [
    &["info"],
    &["ls"],
    &["show", "{}", "jan_2024"],
    &["cat", "{}", "jan_2024", "lat"],
    &["stats", "{}", "lat"],
    &["attrs", "{}", "source"],
];

/// `cmd` with the collection `dir` put in place (after the command name when no `{}`).
fn with_collection(cmd: &[&str], dir: &str) -> Vec<String> {
    let mut args: Vec<String> = cmd.iter().map(|a| a.replace("{}", dir)).collect();
    if !cmd.contains(&"{}") {
        args.insert(1, dir.to_owned());
    }
    args
}

fn run_all_read_commands_expecting(dir: &str, needle: &str) {
    for cmd in READ_COMMANDS {
        let args = with_collection(cmd, dir);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let err = fails_with_one_line(&refs, 1);
        assert!(err.starts_with("error: "), "{err}");
        assert!(err.contains(needle), "atlas {refs:?}: {err}");
    }
}

#[test]
fn a_missing_collection_exits_1_with_one_line_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere");
    run_all_read_commands_expecting(s(&missing), "no Atlas collection");
    assert!(!missing.exists(), "reading must not create the directory");
    let err = fails_with_one_line(&["verify", s(&missing)], 1);
    assert!(err.contains("nowhere"), "{err}");
}

#[test]
fn a_directory_without_data_atlas_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let err = fails_with_one_line(&["info", s(dir.path())], 1);
    assert!(err.contains("no Atlas collection"), "{err}");
    assert!(err.contains("data.atlas"), "{err}");
}

#[test]
fn a_random_file_as_data_atlas_is_not_a_collection() {
    let dir = tempfile::tempdir().unwrap();
    let junk: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(dir.path().join("data.atlas"), junk).unwrap();
    run_all_read_commands_expecting(s(dir.path()), "not an Atlas collection");
    let out = atlas().args(["verify", s(dir.path())]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("PROBLEM"));
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
}

#[test]
fn an_empty_data_atlas_is_not_a_collection() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.atlas"), b"").unwrap();
    let err = fails_with_one_line(&["ls", s(dir.path())], 1);
    assert!(err.contains("not an Atlas collection"), "{err}");
}

#[test]
fn a_truncated_data_atlas_is_an_error_not_a_panic() {
    let bytes = std::fs::read(fixture("small").join("data.atlas")).unwrap();
    for keep in [bytes.len() - 1, bytes.len() / 2, 12] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("data.atlas"), &bytes[..keep]).unwrap();
        for cmd in READ_COMMANDS {
            let args = with_collection(cmd, s(dir.path()));
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            fails_with_one_line(&refs, 1);
        }
        let out = atlas().args(["verify", s(dir.path())]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "truncated to {keep}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("PROBLEM"));
        assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    }
}

/// The small fixture with bytes `range` of data.atlas flipped.
fn damaged_small(range: std::ops::Range<usize>) -> tempfile::TempDir {
    let mut bytes = std::fs::read(fixture("small").join("data.atlas")).unwrap();
    for b in &mut bytes[range] {
        *b ^= 0x5a;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.atlas"), &bytes).unwrap();
    dir
}

#[test]
fn verify_reports_a_block_that_does_not_decompress() {
    // Inside the first compressed block of segment "temperature" (it starts at byte 8).
    let dir = damaged_small(20..60);
    let out = atlas().args(["verify", s(dir.path())]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains("ok       segments"),
        "the segment footers are intact: {stdout}"
    );
    let problems: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("PROBLEM"))
        .collect();
    assert!(!problems.is_empty(), "{stdout}");
    for p in &problems {
        assert!(p.contains("array \"temperature\""), "{p}");
    }
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    // Reading it is an error too, with one line.
    let err = fails_with_one_line(&["cat", s(dir.path()), "jan_2024", "temperature"], 1);
    assert!(err.contains("corrupt"), "{err}");
    // What does not touch the damaged block still reads.
    stdout_of(&["cat", s(dir.path()), "jan_2024", "lat"]);
}

#[test]
fn verify_reports_a_damaged_segment_footer_and_exits_1() {
    // Across the end of segment "temperature": its array-format footer; the container's stays intact.
    let dir = damaged_small(40..400);
    let out = atlas().args(["verify", s(dir.path())]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("PROBLEM"), "{stdout}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("verify found"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    let json = atlas()
        .args(["--json", "verify", s(dir.path())])
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["ok"], serde_json::json!(false));
    assert!(!report["problems"].as_array().unwrap().is_empty());
}

#[test]
fn a_foreign_deletion_mask_is_reported() {
    let dir = copy_fixture("small");
    std::fs::write(dir.path().join("deleted.mask"), b"NOPE\x01\x00\x00\x00").unwrap();
    let err = fails_with_one_line(&["ls", s(dir.path())], 1);
    assert!(err.contains("mask"), "{err}");
    let out = atlas().args(["verify", s(dir.path())]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("mask"));
}

#[test]
fn an_unknown_dataset_exits_1_naming_it() {
    let dir = fixture("small");
    for args in [
        vec!["show", s(&dir), "apr_2024"],
        vec!["cat", s(&dir), "apr_2024", "lat"],
    ] {
        let err = fails_with_one_line(&args, 1);
        assert!(err.contains("\"apr_2024\" not found"), "{err}");
    }
}

#[test]
fn a_deleted_dataset_is_unknown() {
    let err = fails_with_one_line(&["show", s(&fixture("deleted")), "d02"], 1);
    assert!(err.contains("d02"), "{err}");
}

#[test]
fn an_unknown_array_exits_1_naming_it() {
    let dir = fixture("small");
    for args in [
        vec!["cat", s(&dir), "jan_2024", "salinity"],
        vec!["stats", s(&dir), "salinity"],
        vec!["--json", "stats", s(&dir), "salinity", "--by-dataset"],
    ] {
        let err = fails_with_one_line(&args, 1);
        assert!(err.contains("\"salinity\""), "{err}");
    }
}

#[test]
fn a_region_outside_the_array_exits_1() {
    let dir = fixture("small");
    for extra in [
        vec!["--start", "5,0"],
        vec!["--start", "1"],
        vec!["--start", "3,0", "--shape", "2,1"],
    ] {
        let mut args = vec!["cat", s(&dir), "jan_2024", "temperature"];
        args.extend(extra);
        let err = fails_with_one_line(&args, 1);
        assert!(err.contains("temperature"), "{err}");
    }
}

#[test]
fn usage_errors_exit_2() {
    let out = atlas().output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    for args in [
        vec!["frobnicate"],
        vec!["show", "x"],
        vec!["cat", "x", "y"],
        vec!["rm", "x"],
        vec!["rewrite", "x", "y", "--codec", "brotli"],
        vec!["cat", "x", "d", "a", "--start", "one"],
    ] {
        let out = atlas().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "atlas {args:?}");
    }
}

#[test]
fn an_unknown_scheme_exits_1() {
    let err = fails_with_one_line(&["ls", "ftp://host/x"], 1);
    assert!(err.contains("unknown scheme"), "{err}");
}

#[test]
fn writing_to_an_http_location_is_refused() {
    let err = fails_with_one_line(&["rm", "http://127.0.0.1:9/c", "x"], 1);
    assert!(err.contains("read-only"), "{err}");
}

/// `atlas` with the AWS environment under the test's control: no instance
/// metadata lookups, no shared config, nothing from the developer's shell.
fn isolated_aws(home: &std::path::Path) -> assert_cmd::Command {
    let mut cmd = atlas();
    for var in [
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_ENDPOINT_URL",
        "AWS_ENDPOINT_URL_S3",
        "AWS_CONFIG_FILE",
        "AWS_SHARED_CREDENTIALS_FILE",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("AWS_EC2_METADATA_DISABLED", "true")
        .env("HOME", home);
    cmd
}

fn one_line_failure(mut cmd: assert_cmd::Command, code: i32) -> String {
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr:?}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

#[test]
fn an_unreachable_endpoint_is_one_line_and_exit_75() {
    let home = tempfile::tempdir().unwrap();
    // Port 9 (discard) on loopback: nothing listens, the connection is refused at once.
    let mut cmd = isolated_aws(home.path());
    cmd.env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .args(["--endpoint", "http://127.0.0.1:9", "--region", "us-east-1"])
        .args(["--retries", "1", "ls", "s3://bucket/c"]);
    // Refused connections are temporary: exit 75, "try again later".
    let err = one_line_failure(cmd, 75);
    assert!(err.contains("s3://bucket/c"), "{err}");
    assert!(err.contains("Connection refused"), "{err}");
    let err = fails_with_one_line(&["--retries", "1", "ls", "http://127.0.0.1:9/c"], 75);
    assert!(err.contains("http://127.0.0.1:9/c"), "{err}");
}

#[test]
fn a_missing_credential_is_one_line() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = isolated_aws(home.path());
    cmd.args(["--endpoint", "http://127.0.0.1:9", "info", "s3://bucket/c"]);
    // A missing credential is not cured by waiting: exit 1, not 75.
    let err = one_line_failure(cmd, 1);
    assert!(err.contains("s3://bucket/c"), "{err}");
}

#[test]
fn an_azure_location_without_an_account_is_one_line() {
    let mut cmd = atlas();
    for var in [
        "AZURE_STORAGE_ACCOUNT",
        "AZURE_STORAGE_ACCOUNT_NAME",
        "AZURE_STORAGE_CONNECTION_STRING",
        "AZURE_STORAGE_ENDPOINT",
    ] {
        cmd.env_remove(var);
    }
    cmd.args(["ls", "az://container/c"]);
    let err = one_line_failure(cmd, 1);
    assert!(err.contains("AZURE_STORAGE_ACCOUNT"), "{err}");
}

#[test]
fn help_shows_an_example_for_every_command() {
    let top = String::from_utf8(atlas().arg("--help").output().unwrap().stdout).unwrap();
    assert!(top.contains("Examples:"), "{top}");
    for cmd in [
        "info", "ls", "show", "cat", "stats", "attrs", "rm", "verify", "checksum", "rewrite",
        "demo",
    ] {
        let out = atlas().args([cmd, "--help"]).output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains(&format!("atlas {cmd} ")), "{cmd}: {text}");
    }
}

#[test]
fn version_prints_the_version() {
    let out = atlas().arg("--version").output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim(),
        format!("atlas {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn log_level_sends_diagnostics_to_stderr_and_nothing_is_logged_by_default() {
    let dir = fixture("small");
    let quiet = atlas().args(["ls", s(&dir)]).output().unwrap();
    assert!(
        quiet.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&quiet.stderr)
    );
    let noisy = atlas()
        .args(["--log-level", "trace", "stats", s(&dir), "temperature"])
        .output()
        .unwrap();
    assert!(noisy.status.success());
    assert!(!noisy.stderr.is_empty(), "trace logging prints something");
    let from_env = atlas()
        .env("RUST_LOG", "trace")
        .args(["stats", s(&dir), "temperature"])
        .output()
        .unwrap();
    assert!(
        !from_env.stderr.is_empty(),
        "RUST_LOG applies without --log-level"
    );
    assert_eq!(noisy.stdout, from_env.stdout, "logs never reach stdout");
    let bad = atlas()
        .args(["--log-level", "loud=[", "ls", s(&dir)])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn quiet_rm_prints_nothing() {
    let dir = copy_fixture("small");
    let out = atlas()
        .args(["-q", "rm", s(dir.path()), "feb_2024"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(out.stdout.is_empty() && out.stderr.is_empty());
}

#[test]
fn storage_that_stays_unreachable_exits_75_so_scripts_can_try_again() {
    // Nothing listens on port 1: every attempt is refused, a temporary failure.
    let err = fails_with_one_line(&["--retries", "1", "info", "http://127.0.0.1:1/c"], 75);
    assert!(err.contains("unreachable or busy"), "{err}");
    // A damaged collection is not "try again": exit 1.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.atlas"), b"garbage, not a container").unwrap();
    fails_with_one_line(&["info", s(dir.path())], 1);
}
