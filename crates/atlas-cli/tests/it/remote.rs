//! Collections behind a URL: `http://` through a tiny range-capable server
//! in the test itself, and `s3://` against the S3 server of `atlas-testkit`
//! running in the test process. Everything stays on 127.0.0.1. Also NetCDF
//! sources at URLs for `atlas create` and `atlas sync`.

#![cfg(test)]

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;

use common::*;
use serde_json::json;

/// Serves the files under `root` over HTTP/1.1 on 127.0.0.1 (GET with `Range`,
/// HEAD); one request per connection. Lives as long as the test process.
fn serve(root: PathBuf) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let root = root.clone();
            std::thread::spawn(move || {
                let _ = answer(stream, &root);
            });
        }
    });
    format!("http://{addr}")
}

fn answer(mut stream: TcpStream, root: &std::path::Path) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request = String::new();
    reader.read_line(&mut request)?;
    let mut range = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("range")
        {
            range = Some(v.trim().to_owned());
        }
    }
    let mut parts = request.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or("/"));
    let file = root.join(path.trim_start_matches('/'));
    let Ok(data) = std::fs::read(&file) else {
        return stream.write_all(
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
    };
    let n = data.len();
    let (status, body, extra) = match range.as_deref().and_then(|r| r.strip_prefix("bytes=")) {
        Some(spec) => {
            let (a, b) = spec.split_once('-').unwrap_or((spec, ""));
            let (start, end) = if a.is_empty() {
                (
                    n.saturating_sub(b.parse().unwrap_or(0)),
                    n.saturating_sub(1),
                )
            } else {
                let end = b
                    .parse()
                    .unwrap_or(n.saturating_sub(1))
                    .min(n.saturating_sub(1));
                (a.parse().unwrap_or(0), end)
            };
            let body = data.get(start..=end).unwrap_or_default().to_vec();
            (
                "206 Partial Content",
                body,
                format!("Content-Range: bytes {start}-{end}/{n}\r\n"),
            )
        }
        None => ("200 OK", data, String::new()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    if method != "HEAD" {
        stream.write_all(&body)?;
    }
    stream.flush()
}

#[test]
fn an_http_location_reads_like_the_local_path() {
    let base = serve(fixture(".."));
    for f in ["small", "deleted", "mixed"] {
        let url = format!("{base}/v8/{f}");
        let local = fixture(f);
        assert_eq!(json_of(&["ls", &url]), json_of(&["ls", s(&local)]), "{f}");
        let first = json_of(&["ls", s(&local)])[0]["name"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(
            json_of(&["show", &url, &first]),
            json_of(&["show", s(&local), &first]),
            "{f}"
        );
        let info = json_of(&["info", &url]);
        assert_eq!(
            info["deleted"],
            json_of(&["info", s(&local)])["deleted"],
            "{f}"
        );
        assert!(stdout_of(&["verify", &url]).contains("sound"), "{f}");
    }
    let cat = json_of(&["cat", &format!("{base}/v8/small"), "mar_2024", "station"]);
    assert_eq!(cat["values"], json!(["st-2-a", "", "station é 2"]));
}

#[test]
fn an_http_location_without_a_collection_is_not_found() {
    let base = serve(fixture(".."));
    let err = fails_with_one_line(&["ls", &format!("{base}/v8/nothing")], 1);
    assert!(err.contains("no Atlas collection"), "{err}");
    let err = fails_with_one_line(&["rm", &format!("{base}/v8/small"), "jan_2024"], 1);
    assert!(err.contains("read-only"), "{err}");
}

/// The endpoint of the S3 server in this test process (`atlas_testkit`,
/// a real S3 protocol server over a temporary directory); child `atlas`
/// processes reach it over its socket.
fn s3_endpoint() -> String {
    s3_server().endpoint().to_owned()
}

fn s3_server() -> &'static atlas_testkit::S3Server {
    static SERVER: std::sync::OnceLock<atlas_testkit::S3Server> = std::sync::OnceLock::new();
    SERVER.get_or_init(atlas_testkit::S3Server::start)
}

#[test]
fn an_s3_compatible_server_takes_demo_rm_verify_and_rewrite() {
    let endpoint = s3_endpoint();
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = atlas()
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("HOME", home.path())
            .env_remove("AWS_PROFILE")
            .env_remove("AWS_ENDPOINT_URL")
            .args(["--json", "--endpoint", &endpoint, "--region", "us-east-1"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "atlas {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    // The server outlives this test: a fresh prefix per run.
    let url = format!(
        "s3://atlas-test/argo-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let url = url.as_str();
    let info = run(&["demo", url, "--count", "40"]);
    assert_eq!(info["datasets_live"], json!(40));
    assert_eq!(run(&["verify", url])["ok"], json!(true));
    let rm = run(&["rm", url, "R6901234_002.nc", "R6901234_010.nc"]);
    assert_eq!(rm["deleted"], json!(2));
    assert_eq!(
        rm["guarantee"],
        json!("conditional"),
        "S3 deletes are conditional: {rm}"
    );
    assert_eq!(run(&["ls", url]).as_array().unwrap().len(), 38);

    let local = tempfile::tempdir().unwrap();
    let copy = local.path().join("copy");
    run(&["rewrite", url, s(&copy)]);
    assert_eq!(json_of(&["ls", s(&copy)]).as_array().unwrap().len(), 38);
    assert_eq!(
        json_of(&["cat", s(&copy), "R6901234_001.nc", "TEMP"]),
        run(&["cat", url, "R6901234_001.nc", "TEMP"])
    );

    let missing = atlas()
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .args(["--endpoint", &endpoint, "--region", "us-east-1"])
        .args(["ls", "s3://atlas-test/nothing"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    let stderr = String::from_utf8(missing.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no Atlas collection"), "{stderr}");
}

/// The Argo-like profiles of atlas-netcdf's test data.
fn profiles() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../atlas-netcdf/tests/data/argo")
}

const FLOAT: &str = "coriolis/6900000/profiles";

/// The real GDAC profiles of atlas-netcdf's test data (`argo-gdac`) laid out
/// at their own paths under `root/dac`; returns their index lines (as the
/// GDAC's index lists them) and names.
fn real_gdac(root: &std::path::Path) -> (String, Vec<String>) {
    let real = profiles().join("../argo-gdac");
    let index = std::fs::read_to_string(real.join("index.txt")).unwrap();
    let (mut lines, mut names) = (String::new(), Vec::new());
    for line in index
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("file,"))
    {
        let file = line.split(',').next().unwrap();
        let name = file.rsplit('/').next().unwrap().to_owned();
        let to = root.join("dac").join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(real.join(&name), &to).unwrap();
        lines.push_str(line);
        lines.push('\n');
        names.push(name);
    }
    (lines, names)
}

/// [`gdac_tree`] with the real GDAC profiles beside the generated ones
/// (each at its own data centre's path, with its real index line); returns
/// every file's name, sorted.
fn gdac_tree_with_real(root: &std::path::Path) -> Vec<String> {
    let mut names = gdac_tree(root);
    let (lines, real) = real_gdac(root);
    let index = root.join("ar_index_global_prof.txt");
    let mut text = std::fs::read_to_string(&index).unwrap();
    text.push_str(&lines);
    std::fs::write(&index, text).unwrap();
    names.extend(real);
    names.sort();
    names
}

/// Lays the four profiles out as a GDAC tree under `root` (`dac/<FLOAT>/`)
/// with its index `ar_index_global_prof.txt`; returns the files' names.
fn gdac_tree(root: &std::path::Path) -> Vec<String> {
    let folder = root.join("dac").join(FLOAT);
    std::fs::create_dir_all(&folder).unwrap();
    let mut index = String::from(
        "# Title : Profile directory file of the Argo GDAC\n\
         file,date,latitude,longitude,ocean,profiler_type,institution,date_update\n",
    );
    let mut names = Vec::new();
    for entry in std::fs::read_dir(profiles()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        std::fs::copy(&path, folder.join(&name)).unwrap();
        index.push_str(&format!("{FLOAT}/{name},,,,A,846,IF,20240101000000\n"));
        names.push(name);
    }
    std::fs::write(root.join("ar_index_global_prof.txt"), index).unwrap();
    names.sort();
    names
}

/// `atlas` against the S3 server of this process.
fn on_s3() -> std::process::Command {
    atlas_on_s3(&s3_endpoint())
}

/// A fresh prefix of the test bucket whose objects are the files under
/// `tree`, copied into the server's directory.
fn upload(tree: &std::path::Path, test: &str) -> String {
    let prefix = format!(
        "{test}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let target = s3_server().dir().join(atlas_testkit::BUCKET).join(&prefix);
    copy_tree(tree, &target);
    format!("s3://{}/{prefix}", atlas_testkit::BUCKET)
}

fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let dest = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_tree(&path, &dest);
        } else {
            std::fs::copy(&path, &dest).unwrap();
        }
    }
}

fn names_of(collection: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = json_of(&["ls", s(collection)])
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn create_reads_s3_prefixes_globs_and_file_urls_as_it_reads_the_same_files_on_disk() {
    let tree = tempfile::tempdir().unwrap();
    let names = gdac_tree(tree.path());
    let url = upload(tree.path(), "create-src");
    let out = tempfile::tempdir().unwrap();

    let local = out.path().join("local");
    stdout_of(&["-q", "create", s(&tree.path().join("dac")), s(&local)]);
    let reference = json_of(&["cat", s(&local), "R6900000_003.nc", "TEMP"]);

    let prefix = out.path().join("prefix");
    let report = json_by(
        on_s3(),
        &["create", &format!("{url}/dac/"), s(&prefix), "-j", "3"],
    );
    assert_eq!(report["datasets"], json!(4), "{report}");
    assert_eq!(names_of(&prefix), names);
    assert_eq!(
        json_of(&["cat", s(&prefix), "R6900000_003.nc", "TEMP"]),
        reference
    );

    let glob = out.path().join("glob");
    json_by(
        on_s3(),
        &[
            "create",
            &format!("{url}/dac/{FLOAT}/R6900000_00?.nc"),
            s(&glob),
        ],
    );
    assert_eq!(names_of(&glob), names);

    let listed = out.path().join("listed");
    let files: Vec<String> = names[..2]
        .iter()
        .map(|n| format!("{url}/dac/{FLOAT}/{n}"))
        .collect();
    let mut args: Vec<&str> = vec!["create"];
    args.extend(files.iter().map(String::as_str));
    args.push(s(&listed));
    json_by(on_s3(), &args);
    assert_eq!(names_of(&listed), names[..2].to_vec());
}

#[test]
fn an_http_file_that_fails_for_good_is_named_and_with_skip_errors_the_rest_lands() {
    let tree = tempfile::tempdir().unwrap();
    gdac_tree(tree.path());
    let base = serve(tree.path().to_owned());
    let good = format!("{base}/dac/{FLOAT}/R6900000_001.nc");
    let missing = format!("{base}/dac/{FLOAT}/R6900000_404.nc");
    let out = tempfile::tempdir().unwrap();
    let dst = out.path().join("c");

    let err = fails_with_one_line(&["-q", "create", &good, &missing, s(&dst)], 1);
    assert!(err.contains(&missing), "the URL is named: {err}");
    assert!(!dst.join("data.atlas").exists());

    let report = json_of(&["create", &good, &missing, s(&dst), "--skip-errors"]);
    assert_eq!(report["datasets"], json!(1), "{report}");
    assert_eq!(report["skipped"][0]["file"], json!(missing));
    assert!(
        report["skipped"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("cannot fetch it"),
        "{report}"
    );
    assert_eq!(names_of(&dst), ["R6900000_001.nc"]);
}

#[test]
fn sync_reads_its_index_and_files_from_http_and_from_s3() {
    let tree = tempfile::tempdir().unwrap();
    let names = gdac_tree_with_real(tree.path());
    assert_eq!(names.len(), 8, "four generated and four real GDAC profiles");
    let out = tempfile::tempdir().unwrap();

    // Over HTTP: the index at a URL, the files in `dac` beside it.
    let base = serve(tree.path().to_owned());
    let from_http = out.path().join("from-http");
    let index = format!("{base}/ar_index_global_prof.txt");
    let report = json_of(&["sync", s(&from_http), "--index", &index]);
    assert_eq!(report["added"].as_array().unwrap().len(), 8, "{report}");
    assert_eq!(names_of(&from_http), names);

    // From S3: a local index, the files under an s3:// root.
    let url = upload(tree.path(), "sync-src");
    let from_s3 = out.path().join("from-s3");
    let index = tree.path().join("ar_index_global_prof.txt");
    let report = json_by(
        on_s3(),
        &[
            "sync",
            s(&from_s3),
            "--index",
            s(&index),
            "--root",
            &format!("{url}/dac"),
        ],
    );
    assert_eq!(report["committed"]["generation"], json!(1), "{report}");
    assert_eq!(names_of(&from_s3), names);
    for name in ["R6900000_002.nc", "D6901929_002.nc", "R13857_001.nc"] {
        assert_eq!(
            json_of(&["cat", s(&from_s3), name, "TEMP"]),
            json_of(&["cat", s(&from_http), name, "TEMP"]),
            "{name}"
        );
    }

    // The set itself on S3: committed there, and a rerun commits nothing.
    let set = format!(
        "s3://{}/{}-set",
        atlas_testkit::BUCKET,
        &url[url.len() - 12..]
    );
    let root = format!("{url}/dac");
    let first = json_by(
        on_s3(),
        &["sync", &set, "--index", s(&index), "--root", &root],
    );
    assert_eq!(first["committed"]["generation"], json!(1), "{first}");
    let again = json_by(
        on_s3(),
        &["sync", &set, "--index", s(&index), "--root", &root],
    );
    assert_eq!(again["committed"], json!(null), "{again}");
    assert_eq!(again["unchanged"], json!(8), "{again}");
}

#[test]
fn files_fetched_through_a_store_that_fails_often_each_retried_on_its_own_all_land_intact() {
    use atlas_testkit::{FaultPlan, FaultProxy};
    let tree = tempfile::tempdir().unwrap();
    let names = gdac_tree_with_real(tree.path());
    let url = upload(tree.path(), "faulty-src");
    let out = tempfile::tempdir().unwrap();
    let local = out.path().join("local");
    stdout_of(&["-q", "create", s(&tree.path().join("dac")), s(&local)]);

    // A fifth of the requests for the profiles answered 500/503, dropped
    // mid-answer or cut short (the listing too), a few slow.
    let plan = FaultPlan::every_kind(11, 200, std::time::Duration::from_millis(30))
        .only_paths_containing("faulty-src");
    let proxy = FaultProxy::start(&s3_endpoint(), plan);
    let dst = out.path().join("faulty");
    let report = json_by(
        atlas_on_s3(proxy.endpoint()),
        &["create", &format!("{url}/dac/"), s(&dst), "-j", "4"],
    );
    assert_eq!(report["datasets"], json!(names.len()), "{report}");
    let counts = proxy.counts();
    assert!(
        counts.errors + counts.resets + counts.short_bodies > 0,
        "the plan spoiled nothing: {counts:?}"
    );
    assert_eq!(names_of(&dst), names);
    for name in &names {
        assert_eq!(
            json_of(&["cat", s(&dst), name, "TEMP"]),
            json_of(&["cat", s(&local), name, "TEMP"]),
            "{name}"
        );
    }
}
