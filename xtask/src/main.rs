//! Project helpers, run as `cargo xtask <command>`:
//!
//! - `bench [iterations] [--quick] [--dev] [--latency 20ms] [--bandwidth 100MB/s] ...`:
//!   the footer-decode benchmark in release, then `atlas-bench` (this Atlas
//!   beside atlas-rust and zarrs on the profile workload, local and simulated
//!   object store; `docs/performance.md`), then its write benchmark
//!   (`atlas-bench write`); `--json FILE` writes the figures of the
//!   side-by-side tables to FILE. `--quick` skips the footer decode and shrinks both
//!   runs (the CI smoke test) and adds `atlas-bench sets --quick`; `--dev`
//!   builds in the dev profile.
//!   `bench --sets [--quick] [--dev] [options]` runs only the set benchmark
//!   (`atlas-bench sets`: a set of 1 000 000 profiles written in steps, then
//!   read on the simulated store).
//! - `bench-footer [iterations] [datasets]`: the footer-decode benchmark in
//!   this process (run it in release; `bench` does).
//! - `fuzz [seconds]`: seeds every fuzz corpus from `testdata/v8` and runs
//!   every target for `seconds` (default 60). Needs `cargo install cargo-fuzz`.
//! - `seed-fuzz`: only the seeding.
//! - `test`: the whole test suite: `cargo test --workspace`, then the Python
//!   package's pytest suite (`scripts/py-test.sh`).
//! - `py-fixture DIR`: writes the collection the Python suite reads (see `py_fixture`).
//! - `s3-server`: runs the Rust tests' S3 server (atlas-testkit) on 127.0.0.1,
//!   prints one JSON line (`endpoint`, `dir`, `bucket`, `access_key`,
//!   `secret_key`, `region`) and serves until stdin closes: the Python
//!   suite's S3 endpoint.
//! - `bench-read DIR ARRAYS`: reads float32 arrays (`TEMP,PSAL`) of every dataset from Rust
//!   (the baseline of the Python package's benchmark).
//! - `public-api [--bless]`: lists the `atlas` facade's public items (every
//!   feature on) from rustdoc JSON and compares the list with the committed
//!   `crates/atlas/public-api.txt`; `--bless` rewrites that file. CI runs the
//!   check, so a change of the surface shows in review as a change of the file.
//! - `soak [--minutes N] [--dev]`: readers and writers on one set over the
//!   S3 server behind the fault proxy for N minutes (10), then a check
//!   (`atlas-bench soak`, in release unless `--dev`; `bench/src/soak.rs`).
//! - `ci`: `.ci/run`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "a developer tool: a panic is a failed command, never lost data"
)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use atlas_format::{
    ArrayDecl, Codec, CollectionFooter, DType, DatasetSchema, DecodeLimits, DeletionMask,
    FooterBuilder, TRAILER_LEN, decompress_bounded, open_bytes,
};
use smol_str::SmolStr;

mod bench_read;
mod py_fixture;

type Result<T = (), E = String> = std::result::Result<T, E>;

/// `s3-server`: serves until stdin closes; the first line of stdout says where.
fn s3_server() -> Result {
    use std::io::{Read, Write};
    let server = atlas_testkit::S3Server::start();
    let line = format!(
        "{{\"endpoint\": {:?}, \"dir\": {:?}, \"bucket\": {:?}, \"access_key\": {:?}, \"secret_key\": {:?}, \"region\": {:?}}}\n",
        server.endpoint(),
        server.dir().display().to_string(),
        atlas_testkit::BUCKET,
        atlas_testkit::ACCESS_KEY,
        atlas_testkit::SECRET_KEY,
        atlas_testkit::REGION,
    );
    let mut out = std::io::stdout().lock();
    out.write_all(line.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| e.to_string())?;
    drop(out);
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    drop(server);
    Ok(())
}

fn main() -> ExitCode {
    if let Some(rustdoc) = std::env::var_os(WRAPPED_RUSTDOC) {
        return rustdoc_with_json(rustdoc);
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str);
    let result = match arg(0) {
        Some("bench") => bench(&args[1..]),
        Some("bench-footer") => bench_footer(
            parse_or(arg(1), 15, "iterations"),
            parse_or(arg(2), 100_000, "datasets"),
        ),
        Some("fuzz") => fuzz(parse_or(arg(1), 60, "seconds")),
        Some("seed-fuzz") => seed_fuzz().map(|_| ()),
        Some("test") => test(),
        Some("py-fixture") => match arg(1) {
            Some(dir) => py_fixture::write(Path::new(dir)),
            None => Err("usage: cargo xtask py-fixture DIR".to_owned()),
        },
        Some("bench-read") => match (arg(1), arg(2)) {
            (Some(dir), Some(arrays)) => bench_read::run(Path::new(dir), arrays),
            _ => Err("usage: cargo xtask bench-read DIR ARRAYS".to_owned()),
        },
        Some("public-api") => public_api(arg(1) == Some("--bless")),
        Some("s3-server") => s3_server(),
        Some("soak") => soak(&args[1..]),
        Some("ci") => run(Command::new("bash").arg(root().join(".ci/run"))),
        _ => {
            eprintln!(
                "usage: cargo xtask <bench [iterations] [--quick] [--dev] [atlas-bench options] | bench --sets [--quick] [--dev] [sets options] | bench-footer [iterations] [datasets] | \
                 fuzz [seconds] | seed-fuzz | test | py-fixture DIR | bench-read DIR ARRAYS | public-api [--bless] | s3-server | soak [--minutes N] [--dev] | ci>"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

fn parse_or<T: std::str::FromStr>(arg: Option<&str>, default: T, what: &str) -> T {
    match arg.map(str::parse) {
        None => default,
        Some(Ok(v)) => v,
        Some(Err(_)) => {
            eprintln!("xtask: {what} must be a number");
            std::process::exit(2);
        }
    }
}

/// The workspace root (xtask sits one level below it).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

fn run(cmd: &mut Command) -> Result {
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed: {status}"))
    }
}

// ---------------------------------------------------------------------------
// bench

/// Every test: the Rust workspace, then the Python package. The emulators
/// the tests start (Azurite, fake-gcs-server) are stopped afterwards, passed
/// or failed, unless they were running before.
fn test() -> Result {
    let emulators = ["scripts/azurite.sh", "scripts/fake-gcs.sh"];
    let started_here: Vec<&str> = emulators
        .into_iter()
        .filter(|script| !emulator(script, "status"))
        .collect();
    let result = run(cargo().args(["test", "--workspace"])).and_then(|()| {
        run(Command::new("bash")
            .arg(root().join("scripts/py-test.sh"))
            .current_dir(root()))
    });
    for script in started_here {
        emulator(script, "stop");
    }
    result
}

/// Runs `bash SCRIPT VERB` quietly; whether it exited 0.
fn emulator(script: &str, verb: &str) -> bool {
    Command::new("bash")
        .arg(root().join(script))
        .arg(verb)
        .current_dir(root())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The write benchmark of `bench --quick`: every case, from two writers, small.
const QUICK_WRITE: [&str; 9] = [
    "--quick",
    "--writers",
    "2",
    "--profiles",
    "500",
    "--grids",
    "4",
    "--tiny",
    "2000",
];

/// `bench --sets [--dev] [options]`: only `atlas-bench sets` (the set
/// benchmark; `bench/src/sets.rs` lists its options), in release
/// unless `--dev` is given.
fn bench_sets(rest: &[&str], profile: &[&str]) -> Result {
    let work = root().join("target/bench-work");
    run(cargo()
        .arg("run")
        .args(profile)
        .args(["--quiet", "-p", "atlas-bench", "--", "sets", "--work"])
        .arg(&work)
        .args(rest))
}

/// `soak [--minutes N] [--dev] [atlas-bench soak options]`: `atlas-bench
/// soak` (16 readers, 4 writers on one set over the S3 server behind the
/// fault proxy, checked along the way and at the end), in release unless
/// `--dev`. Fails when the check finds a dataset lost, duplicated or brought
/// back, or a read error that is not retryable.
fn soak(args: &[String]) -> Result {
    let mut rest: Vec<&str> = args.iter().map(String::as_str).collect();
    let dev = rest.contains(&"--dev");
    rest.retain(|a| *a != "--dev");
    let profile: &[&str] = if dev { &[] } else { &["--release"] };
    run(cargo()
        .arg("run")
        .args(profile)
        .args(["--quiet", "-p", "atlas-bench", "--", "soak"])
        .args(rest))
}

/// `bench [iterations] [--dev] [atlas-bench options]`: the footer-decode
/// benchmark (skipped with `--quick`), then `atlas-bench` (the profile
/// workload through this Atlas, atlas-rust and zarrs; `bench/src/main.rs`
/// lists its options), then `atlas-bench write` (write throughput and peak
/// RSS per case; with `--quick`, a few seconds of it from two writers, so the
/// smoke run writes grids and concurrent datasets too, then `atlas-bench sets
/// --quick`). `--sets` runs only the set benchmark. Everything runs in
/// release unless `--dev` is given (the CI smoke run: the test build already
/// compiled every dependency in dev).
fn bench(args: &[String]) -> Result {
    let mut rest: Vec<&str> = args.iter().map(String::as_str).collect();
    let iterations = match rest.first() {
        Some(n) if n.parse::<usize>().is_ok() => Some(rest.remove(0)),
        _ => None,
    };
    let dev = rest.contains(&"--dev");
    rest.retain(|a| *a != "--dev");
    let quick = rest.contains(&"--quick");
    let profile: &[&str] = if dev { &[] } else { &["--release"] };
    if rest.contains(&"--sets") {
        rest.retain(|a| *a != "--sets");
        return bench_sets(&rest, profile);
    }

    if !quick {
        let mut footer = cargo();
        footer
            .arg("run")
            .args(profile)
            .args(["--quiet", "-p", "xtask", "--", "bench-footer"]);
        if let Some(n) = iterations {
            footer.arg(n);
        }
        run(&mut footer)?;
        println!();
    }

    let work = root().join("target/bench-work");
    // atlas-bench runs from the workspace root: a relative `--json FILE` is
    // taken from where xtask was started.
    let rest: Vec<String> = rest
        .iter()
        .scan(false, |after_json, a| {
            let arg = if std::mem::replace(after_json, *a == "--json") {
                std::path::absolute(a).map_or_else(|_| a.to_string(), |p| p.display().to_string())
            } else {
                a.to_string()
            };
            Some(arg)
        })
        .collect();
    run(cargo()
        .arg("run")
        .args(profile)
        .args(["--quiet", "-p", "atlas-bench", "--", "--work"])
        .arg(&work)
        .args(&rest))?;

    println!();
    let mut write = cargo();
    write
        .arg("run")
        .args(profile)
        .args(["--quiet", "-p", "atlas-bench", "--", "write", "--work"])
        .arg(&work);
    if quick {
        write.args(QUICK_WRITE);
    }
    run(&mut write)?;
    if quick {
        // Two small sets written and read, and the append on local disk and
        // S3: 6.6 s in the dev profile on the shared 2-core machine.
        println!();
        bench_sets(&["--quick"], profile)?;
    }
    Ok(())
}

/// A footer shaped like a large Argo-style collection: `datasets` profiles
/// named like `R6901234_123.nc`, one schema of eight arrays with unit and
/// long-name attributes and two dataset attributes, and one segment per
/// array plus `_datasets`, at about 330 bytes per array per dataset.
fn realistic_footer(datasets: usize) -> Result<CollectionFooter> {
    let mut b = FooterBuilder::new(Codec::Zstd, 1_717_000_000_000);
    let described = |name: &str, dtype: DType, units: Option<&str>| ArrayDecl {
        name: SmolStr::new(name),
        dtype,
        attributes: units
            .map(|_| {
                vec![
                    (SmolStr::new("units"), DType::String),
                    (SmolStr::new("long_name"), DType::String),
                ]
            })
            .unwrap_or_default(),
    };
    let schema = DatasetSchema {
        arrays: vec![
            described("PRES", DType::Float32, Some("decibar")),
            described("TEMP", DType::Float32, Some("degree_Celsius")),
            described("PSAL", DType::Float32, Some("psu")),
            described("PRES_QC", DType::UInt8, None),
            described("TEMP_QC", DType::UInt8, None),
            described("PSAL_QC", DType::UInt8, None),
            described("JULD", DType::TimestampNs, Some("ns")),
            described("POSITION", DType::Float64, Some("degree")),
        ],
        attributes: vec![
            (SmolStr::new("platform_number"), DType::String),
            (SmolStr::new("cycle_number"), DType::Int32),
        ],
    };
    let index = b.intern_schema(&schema);
    let mut float = 6_901_234u32;
    let mut cycle = 0u32;
    for _ in 0..datasets {
        b.push_dataset(&format!("R{float}_{cycle:03}.nc"), index)
            .map_err(|e| e.to_string())?;
        cycle += 1;
        if cycle == 150 {
            cycle = 0;
            float += 7;
        }
    }
    let n = datasets as u64;
    for (name, per_dataset) in [
        ("PRES", 1_400u64),
        ("TEMP", 1_650),
        ("PSAL", 1_610),
        ("PRES_QC", 420),
        ("TEMP_QC", 425),
        ("PSAL_QC", 430),
        ("JULD", 340),
        ("POSITION", 350),
        ("_datasets", 300),
    ] {
        b.push_variable(name, per_dataset * n.max(1))
            .map_err(|e| e.to_string())?;
    }
    Ok(b.finish())
}

fn bench_footer(iterations: usize, datasets: usize) -> Result {
    if cfg!(debug_assertions) {
        eprintln!(
            "bench-footer: this is a debug build; numbers mean little (use `cargo xtask bench`)"
        );
    }
    let footer = realistic_footer(datasets)?;
    let encoded = footer.encode().map_err(|e| e.to_string())?;
    let msgpack = footer.to_msgpack().map_err(|e| e.to_string())?;
    let limits = DecodeLimits::default();
    println!(
        "footer: {datasets} datasets, {} schema(s), {} segments",
        footer.schema_pool.len(),
        footer.variables.len()
    );
    println!(
        "  encoded (zstd) {} bytes ({:.1} per dataset), decompressed (MessagePack) {} bytes",
        encoded.len(),
        encoded.len() as f64 / datasets.max(1) as f64,
        msgpack.len()
    );

    // Warm up, and check the decode is right before timing it.
    let decoded = CollectionFooter::decode(&encoded, &limits).map_err(|e| e.to_string())?;
    if decoded != footer {
        return Err("the decoded footer differs from the encoded one".into());
    }

    let mut total = Vec::with_capacity(iterations);
    let mut zstd = Vec::with_capacity(iterations);
    let mut serde = Vec::with_capacity(iterations);
    let mut validate = Vec::with_capacity(iterations);
    for _ in 0..iterations.max(1) {
        let start = Instant::now();
        let f = CollectionFooter::decode(&encoded, &limits).map_err(|e| e.to_string())?;
        total.push(start.elapsed());
        drop(std::hint::black_box(f));

        // The same three steps, one at a time.
        let start = Instant::now();
        let raw = decompress_bounded(&encoded, limits.max_decompressed_bytes)
            .map_err(|e| e.to_string())?;
        zstd.push(start.elapsed());
        let start = Instant::now();
        let f = CollectionFooter::from_msgpack(&raw).map_err(|e| e.to_string())?;
        serde.push(start.elapsed());
        let start = Instant::now();
        f.validate().map_err(|e| e.to_string())?;
        validate.push(start.elapsed());
        drop(std::hint::black_box(f));
    }
    println!(
        "CollectionFooter::decode x{}: {}",
        total.len(),
        summary(&mut total)
    );
    println!("  of which zstd:                 {}", summary(&mut zstd));
    println!("  of which MessagePack + serde:  {}", summary(&mut serde));
    println!(
        "  of which validation:           {}",
        summary(&mut validate)
    );
    Ok(())
}

fn summary(times: &mut [Duration]) -> String {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let median = match times.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => times[n / 2],
        n => (times[n / 2 - 1] + times[n / 2]) / 2,
    };
    format!(
        "median {:.2} ms, min {:.2} ms, max {:.2} ms",
        ms(median),
        ms(times.first().copied().unwrap_or_default()),
        ms(times.last().copied().unwrap_or_default())
    )
}

// ---------------------------------------------------------------------------
// fuzz

/// Copies the fixtures into `fuzz/corpus/<target>/`: containers for `open`,
/// compressed footers and their MessagePack for `footer`, masks (behind the
/// 4-byte dataset count the target reads first) for `mask`. Returns the
/// number of files written.
fn seed_fuzz() -> Result<usize> {
    // Our writer's output seeds the corpora too: every dtype, fills, a 2-D
    // chunked array (the Python suite's collection), written fresh.
    let written_dir = root().join("target/fuzz-seed/writer");
    let _ = std::fs::remove_dir_all(&written_dir);
    py_fixture::write(&written_dir)?;
    let corpus = root().join("fuzz/corpus");
    let index_dir = corpus.join("index");
    std::fs::create_dir_all(&index_dir).map_err(|e| format!("{}: {e}", index_dir.display()))?;
    std::fs::write(index_dir.join("mixed.index"), atlas_fuzzing::index_seed())
        .map_err(|e| format!("{}: {e}", index_dir.display()))?;
    let places_dir = corpus.join("index_places");
    std::fs::create_dir_all(&places_dir).map_err(|e| format!("{}: {e}", places_dir.display()))?;
    std::fs::write(
        places_dir.join("placed.index"),
        atlas_fuzzing::index_places_seed(),
    )
    .map_err(|e| format!("{}: {e}", places_dir.display()))?;
    let ours = 2 + seed_from(&root().join("target/fuzz-seed"), &corpus)?;
    Ok(ours + seed_from(&root().join("testdata/v8"), &corpus)?)
}

/// Seeds the corpora from every collection directory under `fixtures`.
fn seed_from(fixtures: &Path, corpus: &Path) -> Result<usize> {
    let mut written = 0;
    let mut write = |target: &str, name: String, bytes: &[u8]| -> Result {
        let dir = corpus.join(target);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = dir.join(name);
        std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        written += 1;
        Ok(())
    };
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixtures)
        .map_err(|e| format!("{}: {e}", fixtures.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let container =
            std::fs::read(dir.join("data.atlas")).map_err(|e| format!("{}: {e}", dir.display()))?;
        write("open", format!("{name}.atlas"), &container)?;
        let opened =
            open_bytes(&container, DecodeLimits::default()).map_err(|e| format!("{name}: {e}"))?;
        let end = container.len() - TRAILER_LEN as usize;
        let footer = &container[end - opened.footer_len as usize..end];
        write("footer", format!("{name}.zst"), footer)?;
        let msgpack = decompress_bounded(footer, 1 << 30).map_err(|e| e.to_string())?;
        write("footer", format!("{name}.msgpack"), &msgpack)?;
        let count = opened.footer.datasets.len() as u32;
        let mask = std::fs::read(dir.join("deleted.mask")).ok();
        write(
            "collection",
            format!("{name}.input"),
            &atlas_fuzzing::collection_input(&container, mask.as_deref()),
        )?;
        if let Some(mask) = mask {
            let mut seed = count.to_le_bytes().to_vec();
            seed.extend_from_slice(&mask);
            write("mask", format!("{name}.mask"), &seed)?;
        }
        // Every segment of the fixture seeds the segment target.
        for v in &opened.footer.variables {
            let (Ok(start), Ok(len)) = (usize::try_from(v.seg_offset), usize::try_from(v.seg_len))
            else {
                continue;
            };
            if let Some(bytes) = container.get(start..start.saturating_add(len)) {
                let var = opened.footer.string(v.name).unwrap_or("segment");
                write("segment", format!("{name}-{var}.arrf"), bytes)?;
            }
        }
        // Every fixture gets a mask target seed too: its count and a small mask.
        let mut seed = count.to_le_bytes().to_vec();
        seed.extend_from_slice(&DeletionMask::from_ordinals([0, count / 2, count]).encode());
        write("mask", format!("{name}-synthetic.mask"), &seed)?;
    }
    Ok(written)
}

fn fuzz(seconds: u64) -> Result {
    let have_cargo_fuzz = cargo()
        .args(["fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !have_cargo_fuzz {
        return Err("cargo-fuzz is not installed: run `cargo install cargo-fuzz` first".into());
    }
    let seeds = seed_fuzz()?;
    println!("seeded fuzz/corpus with {seeds} files from testdata/v8 and our writer");
    let dict = root().join("fuzz/atlas.dict");
    let mut report = Vec::new();
    let mut failed = Vec::new();
    for target in atlas_fuzzing::TARGETS.map(|t| t.name) {
        println!("== fuzz {target} for {seconds} s");
        let mut cmd = cargo();
        // The sanitizer flags cargo-fuzz passes are nightly-only; RUSTC_BOOTSTRAP
        // lets the pinned stable toolchain accept them.
        cmd.current_dir(root().join("fuzz"))
            .env("RUSTC_BOOTSTRAP", "1")
            .args(["fuzz", "run", target, "--"])
            .arg(format!("-max_total_time={seconds}"))
            .arg("-print_final_stats=1")
            .stdout(Stdio::inherit())
            .stderr(Stdio::piped());
        if dict.exists() {
            cmd.arg(format!("-dict={}", dict.display()));
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot run cargo fuzz: {e}"))?;
        let mut executions = None;
        if let Some(stderr) = child.stderr.take() {
            for line in BufReader::new(stderr).lines().map_while(|l| l.ok()) {
                if let Some(n) = line.strip_prefix("stat::number_of_executed_units:") {
                    executions = n.trim().parse::<u64>().ok();
                }
                // Keep what matters: not libFuzzer's progress ('#…') or coverage lines.
                if !line.starts_with('#') && !line.trim_start().starts_with("NEW_FUNC") {
                    eprintln!("{line}");
                }
            }
        }
        let status = child.wait().map_err(|e| e.to_string())?;
        if !status.success() {
            failed.push(target);
        }
        report.push((target, executions, status.success()));
    }
    println!("\n== fuzz summary ({seconds} s per target)");
    for (target, executions, ok) in &report {
        let runs = executions.map_or_else(|| "?".into(), |n| n.to_string());
        let verdict = if *ok {
            "no crash"
        } else {
            "FAILED (see fuzz/artifacts)"
        };
        println!("  {target:<8} {runs:>12} executions  {verdict}");
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("fuzz targets failed: {failed:?}"))
    }
}

/// Where the committed listing of the facade's public surface lives.
const PUBLIC_API_LISTING: &str = "crates/atlas/public-api.txt";

/// Set by [`public_api`] for the `cargo rustdoc` it runs, to the real
/// rustdoc: cargo then calls this binary as its rustdoc (`RUSTDOC`), and
/// [`rustdoc_with_json`] runs that rustdoc.
const WRAPPED_RUSTDOC: &str = "ATLAS_XTASK_WRAPPED_RUSTDOC";

/// This process as cargo's rustdoc: runs the real one with its arguments and
/// `RUSTC_BOOTSTRAP=1`, which rustdoc's JSON output needs (it is unstable).
/// Set on rustdoc alone, build scripts do not see it: several (proc-macro2,
/// anyhow, thiserror) rerun when it changes, which would rebuild everything
/// above them and keep `public-api` from sharing clippy's dependency builds.
fn rustdoc_with_json(rustdoc: std::ffi::OsString) -> ExitCode {
    match Command::new(&rustdoc)
        .args(std::env::args_os().skip(1))
        .env("RUSTC_BOOTSTRAP", "1")
        .env_remove(WRAPPED_RUSTDOC)
        .status()
    {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        Ok(status) => ExitCode::from(
            status
                .code()
                .and_then(|c| u8::try_from(c).ok())
                .unwrap_or(1),
        ),
        Err(e) => {
            eprintln!("xtask: cannot run {}: {e}", rustdoc.to_string_lossy());
            ExitCode::FAILURE
        }
    }
}

/// Builds the facade's rustdoc JSON and compares its public items with
/// [`PUBLIC_API_LISTING`], or rewrites the listing with `bless`.
///
/// rustdoc's JSON output is unstable: this binary stands in as cargo's
/// rustdoc and enables it for rustdoc alone ([`rustdoc_with_json`]), so the
/// dependencies' check builds are the ones clippy left in `target/` (a cold
/// CI run saves about two minutes of a separate target directory).
/// `public-api` is pinned to the JSON format version the pinned toolchain
/// writes.
fn public_api(bless: bool) -> Result {
    let xtask = std::env::current_exe().map_err(|e| format!("locating xtask: {e}"))?;
    let rustdoc = std::env::var_os("RUSTDOC").unwrap_or_else(|| "rustdoc".into());
    run(cargo()
        .env("RUSTDOC", &xtask)
        .env(WRAPPED_RUSTDOC, &rustdoc)
        .args([
            "rustdoc",
            "--quiet",
            "--locked",
            "-p",
            "atlas",
            "--lib",
            "--all-features",
        ])
        .args(["--", "-Z", "unstable-options", "--output-format", "json"]))?;
    // Relative to the workspace root, where cargo ran, if relative at all.
    let target =
        root().join(std::env::var_os("CARGO_TARGET_DIR").unwrap_or_else(|| "target".into()));
    let api = public_api::Builder::from_rustdoc_json(target.join("doc/atlas.json"))
        .omit_blanket_impls(true)
        .omit_auto_trait_impls(true)
        .omit_auto_derived_impls(true)
        .build()
        .map_err(|e| format!("reading the rustdoc JSON: {e}"))?;
    let listing: String = api.items().map(|item| format!("{item}\n")).collect();
    let path = root().join(PUBLIC_API_LISTING);
    if bless {
        std::fs::write(&path, &listing).map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!(
            "public-api: wrote {} items to {PUBLIC_API_LISTING}",
            api.items().count()
        );
        return Ok(());
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed == listing {
        eprintln!("public-api: {} items, as committed", api.items().count());
        return Ok(());
    }
    let old: std::collections::BTreeSet<&str> = committed.lines().collect();
    let new: std::collections::BTreeSet<&str> = listing.lines().collect();
    for gone in old.difference(&new) {
        eprintln!("- {gone}");
    }
    for added in new.difference(&old) {
        eprintln!("+ {added}");
    }
    Err(format!(
        "the public API differs from {PUBLIC_API_LISTING} (above); if the change is meant, run `cargo xtask public-api --bless` and commit the file"
    ))
}

/// Numbers and lists the docs state that the tree can check.
#[cfg(test)]
mod doc_facts {
    use super::root;

    fn read(path: &str) -> String {
        std::fs::read_to_string(root().join(path)).unwrap()
    }

    fn members() -> Vec<String> {
        let manifest = read("Cargo.toml");
        let line = manifest.lines().find(|l| l.starts_with("members")).unwrap();
        line.split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn the_readme_lists_every_workspace_member() {
        let readme = read("README.md");
        for member in members() {
            let shown = if member.contains('/') {
                format!("`{member}`")
            } else {
                format!("`{member}/`")
            };
            assert!(
                readme.contains(&shown),
                "README's workspace table lacks {shown}"
            );
        }
    }

    #[test]
    fn the_readme_names_every_fuzz_target() {
        let readme = read("README.md");
        let row = readme.lines().find(|l| l.starts_with("| `fuzz/`")).unwrap();
        let targets = std::fs::read_dir(root().join("fuzz/fuzz_targets")).unwrap();
        let mut count = 0;
        for entry in targets {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            let target = name.trim_end_matches(".rs");
            assert!(
                row.contains(&format!("`{target}`")),
                "README's fuzz row lacks {target}"
            );
            count += 1;
        }
        assert!(count >= 5, "{count} fuzz targets");
    }

    #[test]
    fn the_architecture_counts_the_crates_there_are() {
        let words = [
            "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
        ];
        let doc = read("docs/architecture.md");
        let sentence = doc.lines().find(|l| l.starts_with("Atlas is ")).unwrap();
        let next = doc
            .lines()
            .skip_while(|l| !l.starts_with("Atlas is "))
            .nth(1)
            .unwrap();
        let count = |text: &str, after: &str| {
            let word = text
                .split(after)
                .nth(1)
                .and_then(|t| t.split_whitespace().next());
            words
                .iter()
                .position(|w| Some(*w) == word)
                .map(|i| i + 1)
                .unwrap()
        };
        let stacked = count(sentence, "Atlas is ");
        let serving = count(&format!("{sentence} {next}"), "and ");
        assert_eq!(stacked + serving, members().len(), "{sentence} {next}");
    }
}
