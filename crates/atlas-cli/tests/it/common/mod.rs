//! Helpers of the end-to-end tests: the built `atlas` binary, the fixtures and
//! their manifests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value as Json;

/// Fixture names under testdata/v8.
pub const FIXTURES: [&str; 4] = ["small", "deleted", "mixed", "empty"];

/// The `atlas` binary, with no logging configured from outside.
pub fn atlas() -> Command {
    let mut cmd = Command::cargo_bin("atlas").expect("the atlas binary is built");
    cmd.env_remove("RUST_LOG");
    cmd
}

/// testdata/v8/<name>.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/v8")
        .join(name)
}

/// testdata/v8/<name>/manifest.json.
pub fn manifest(name: &str) -> Json {
    let text = std::fs::read_to_string(fixture(name).join("manifest.json")).expect("manifest");
    serde_json::from_str(&text).expect("manifest is JSON")
}

/// The manifest's live datasets.
pub fn live(manifest: &Json) -> Vec<Json> {
    manifest["datasets"]
        .as_array()
        .expect("datasets")
        .iter()
        .filter(|d| d["deleted"] == Json::Bool(false))
        .cloned()
        .collect()
}

/// A copy of the fixture's collection (data.atlas and deleted.mask) in a fresh tempdir.
pub fn copy_fixture(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for file in ["data.atlas", "deleted.mask"] {
        let src = fixture(name).join(file);
        if src.exists() {
            std::fs::copy(&src, dir.path().join(file)).expect("copy");
        }
    }
    dir
}

/// Runs `atlas <args>`, expects success, returns stdout.
pub fn stdout_of(args: &[&str]) -> String {
    let out = atlas().args(args).output().expect("runs");
    assert!(
        out.status.success(),
        "atlas {args:?} failed ({:?}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 stdout")
}

/// Runs `atlas --json <args>`, expects success, returns the parsed stdout.
pub fn json_of(args: &[&str]) -> Json {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let text = stdout_of(&all);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("atlas {all:?}: not JSON ({e}): {text}"))
}

/// Runs `atlas <args>`, expects exit status `code`, and returns stderr, which must be exactly one line.
pub fn fails_with_one_line(args: &[&str], code: i32) -> String {
    let out = atlas().args(args).output().expect("runs");
    assert_eq!(
        out.status.code(),
        Some(code),
        "atlas {args:?}: stdout {} stderr {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8(out.stderr).expect("utf-8 stderr");
    assert_eq!(
        stderr.lines().count(),
        1,
        "atlas {args:?}: stderr is not one line: {stderr:?}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("RUST_BACKTRACE"), "{stderr}");
    stderr
}

/// The path as a &str.
pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// Runs `cmd --json ARGS` (a `std::process::Command` set up for some store)
/// and returns its JSON; panics with stderr if it fails.
pub fn json_by(mut cmd: std::process::Command, args: &[&str]) -> Json {
    let out = cmd.arg("--json").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "atlas {args:?}: {}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The names `atlas ls` lists at `url`.
pub fn live_names_by(atlas: &impl Fn() -> std::process::Command, url: &str) -> Vec<String> {
    json_by(atlas(), &["ls", url])
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Writes 40 demo datasets at `url`, then starts eight `atlas rm` processes
/// together, each deleting its own five; returns how many datasets are left
/// and each process's JSON output. `atlas` makes a command set up for the store.
pub fn eight_racing_rm(atlas: impl Fn() -> std::process::Command, url: &str) -> (usize, Vec<Json>) {
    json_by(atlas(), &["demo", url, "--count", "40"]);
    let names = live_names_by(&atlas, url);
    assert_eq!(names.len(), 40);
    let children: Vec<_> = names
        .chunks(5)
        .map(|five| {
            atlas()
                .args(["--json", "rm", url])
                .args(five)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outputs: Vec<Json> = children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            serde_json::from_slice(&out.stdout).unwrap()
        })
        .collect();
    (live_names_by(&atlas, url).len(), outputs)
}

/// `atlas` set up for the S3 server at `endpoint`, with no AWS settings from outside.
pub fn atlas_on_s3(endpoint: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("atlas"));
    cmd.env_remove("RUST_LOG")
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_ENDPOINT_URL")
        .env("AWS_ACCESS_KEY_ID", atlas_testkit::ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", atlas_testkit::SECRET_KEY)
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .args(["--endpoint", endpoint, "--region", atlas_testkit::REGION]);
    cmd
}

/// `atlas` set up for Azurite through its connection string (started by
/// `scripts/azurite.sh` on first use).
pub fn atlas_on_azurite() -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("atlas"));
    cmd.env_remove("RUST_LOG")
        .env_remove("AZURE_STORAGE_ACCOUNT")
        .env_remove("AZURE_STORAGE_ENDPOINT")
        .env("AZURE_STORAGE_CONNECTION_STRING", atlas_testkit::azurite());
    cmd
}

/// `atlas` set up for fake-gcs-server: its endpoint, unsigned requests
/// (started by `scripts/fake-gcs.sh` on first use).
pub fn atlas_on_fake_gcs() -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("atlas"));
    cmd.env_remove("RUST_LOG")
        .env_remove("GOOGLE_APPLICATION_CREDENTIALS")
        .args(["--endpoint", atlas_testkit::fake_gcs(), "--anonymous"]);
    cmd
}

/// Writes a NetCDF classic (CDF-1) file: one dimension `N`, a float variable
/// `TEMP(N)` holding `temp`, and an int global attribute `cycle`.
pub fn write_nc(path: &Path, temp: &[f32], cycle: i32) {
    fn name(out: &mut Vec<u8>, n: &str) {
        out.extend((n.len() as u32).to_be_bytes());
        out.extend(n.as_bytes());
        while !out.len().is_multiple_of(4) {
            out.push(0);
        }
    }
    const NC_DIMENSION: u32 = 0x0A;
    const NC_VARIABLE: u32 = 0x0B;
    const NC_ATTRIBUTE: u32 = 0x0C;
    const NC_INT: u32 = 4;
    const NC_FLOAT: u32 = 5;
    let mut h = b"CDF\x01".to_vec();
    h.extend(0u32.to_be_bytes()); // numrecs
    h.extend(NC_DIMENSION.to_be_bytes());
    h.extend(1u32.to_be_bytes());
    name(&mut h, "N");
    h.extend((temp.len() as u32).to_be_bytes());
    h.extend(NC_ATTRIBUTE.to_be_bytes());
    h.extend(1u32.to_be_bytes());
    name(&mut h, "cycle");
    h.extend(NC_INT.to_be_bytes());
    h.extend(1u32.to_be_bytes());
    h.extend(cycle.to_be_bytes());
    h.extend(NC_VARIABLE.to_be_bytes());
    h.extend(1u32.to_be_bytes());
    name(&mut h, "TEMP");
    h.extend(1u32.to_be_bytes()); // one dimension
    h.extend(0u32.to_be_bytes()); // dimension id 0
    h.extend([0u8; 8]); // no variable attributes
    h.extend(NC_FLOAT.to_be_bytes());
    h.extend((temp.len() as u32 * 4).to_be_bytes()); // vsize
    let begin = h.len() as u32 + 4;
    h.extend(begin.to_be_bytes());
    for v in temp {
        h.extend(v.to_be_bytes());
    }
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, h).unwrap();
}

/// When to kill each of a run of writers, so that the kills cover a write
/// that took `span` when timed alone: `planned` kills spread evenly from the
/// start to `stretch` times `span`. The other tests load the machine
/// unevenly, so a write may take much more or less than the one timed:
/// while the kills have not yet left both a collection that is absent and
/// one that is complete, up to 8 more follow, at once (for an absent one)
/// or ever later, up to 30 times `span` (for a complete one).
pub struct KillSchedule {
    span: std::time::Duration,
    planned: u32,
    stretch: f64,
    later: std::time::Duration,
    made: u32,
}

impl KillSchedule {
    pub fn new(span: std::time::Duration, planned: u32, stretch: f64) -> Self {
        Self {
            span,
            planned,
            stretch,
            later: span.mul_f64(stretch),
            made: 0,
        }
    }

    /// The next kill's number and how long after its writer's start it
    /// comes, given the outcomes so far; `None` when the run is done.
    pub fn next(&mut self, absent: u32, complete: u32) -> Option<(u32, std::time::Duration)> {
        let delay = if self.made < self.planned {
            self.span
                .mul_f64(self.stretch * f64::from(self.made) / f64::from(self.planned))
        } else if self.made >= self.planned + 8 || (absent > 0 && complete > 0) {
            return None;
        } else if absent == 0 {
            std::time::Duration::ZERO
        } else {
            self.later = self.later.mul_f64(2.0).min(self.span.mul_f64(30.0));
            self.later
        };
        self.made += 1;
        Some((self.made - 1, delay))
    }
}

#[test]
fn a_kill_schedule_goes_on_later_and_later_while_no_kill_left_a_complete_write() {
    use std::time::Duration;
    let span = Duration::from_millis(100);
    let mut schedule = KillSchedule::new(span, 2, 1.5);
    let planned: Vec<_> = (0..2).filter_map(|_| schedule.next(0, 0)).collect();
    assert_eq!(planned, [(0, Duration::ZERO), (1, span.mul_f64(0.75))]);
    // Every kill so far left nothing: each next one comes later, up to 30
    // times the span, and at most 8 more come.
    let extra: Vec<_> = std::iter::from_fn(|| schedule.next(2, 0)).collect();
    let delays: Vec<u64> = extra.iter().map(|(_, d)| d.as_millis() as u64).collect();
    assert_eq!(delays, [300, 600, 1200, 2400, 3000, 3000, 3000, 3000]);
    assert_eq!(extra.last().map(|(i, _)| *i), Some(9));
    // Once both outcomes are seen the run ends; an absent one missing is
    // sought with a kill at once.
    let mut schedule = KillSchedule::new(span, 1, 1.5);
    assert_eq!(schedule.next(0, 0), Some((0, Duration::ZERO)));
    assert_eq!(schedule.next(0, 1), Some((1, Duration::ZERO)));
    assert_eq!(schedule.next(1, 1), None);
}
