//! `atlas-bench soak`: readers and writers on one set for minutes, over the
//! in-process S3 server behind the fault proxy, with a checker along the
//! way and at the end (`cargo xtask soak` runs it).
//!
//! ```text
//! atlas-bench soak [--minutes 10] [--readers 16] [--writers 4] [--seed 1] [--compact-every 60]
//!                  [--store s3|azurite]
//! ```
//!
//! `--store azurite` runs the same behind the same proxy in front of Azurite
//! (`scripts/azurite.sh`, started if it is not running) instead of the
//! in-process S3 server.
//!
//! The proxy answers 5 % of requests 503, drops 1 % of GET connections and
//! holds every GET back 20 ms. Writers own disjoint names: each appends
//! members of one to three datasets and deletes some of its own names;
//! writer 0 also compacts the set once a minute. Readers open the set, list
//! it and read one dataset, again and again. A reader checks its listing
//! against what writers had acknowledged before it opened (an acknowledged
//! append missing, an acknowledged delete listed, a name listed twice);
//! the end checks the whole set and every value. A read error is counted as
//! retryable (`AtlasError::is_retryable`) or as an anomaly. Every failed
//! write is counted by operation and kind (the error's variant, its storage
//! error kind, or why a commit gave up), and every compaction's outcome and
//! duration is listed, so that a write that keeps failing says why.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use atlas::{Atlas, AtlasError, CompactOptions, OpenOptions, Operator, Region, RetryPolicy};
use atlas::{SetWriter, WriterConfig, member_id};

use crate::error::{BenchError, Result};
use crate::http::s3_operator;

/// What `atlas-bench soak` was asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct SoakOptions {
    /// How long the readers and writers run.
    pub minutes: f64,
    /// Reader tasks.
    pub readers: usize,
    /// Writer tasks.
    pub writers: usize,
    /// Seed of the fault proxy and of the writers' choices.
    pub seed: u64,
    /// Seconds from the end of one of writer 0's compactions to the next.
    pub compact_every: f64,
    /// The object store behind the fault proxy.
    pub store: SoakStore,
}

/// Which object store a soak runs against (behind the fault proxy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SoakStore {
    /// The in-process S3 server of `atlas-testkit`.
    S3,
    /// Azurite, the Azure Blob Storage emulator (`scripts/azurite.sh`).
    Azurite,
}

/// Parses the arguments after `soak`.
pub fn parse_options(args: &[String]) -> Result<SoakOptions> {
    let mut o = SoakOptions {
        minutes: 10.0,
        readers: 16,
        writers: 4,
        seed: 1,
        compact_every: 60.0,
        store: SoakStore::S3,
    };
    let mut args = args.iter();
    while let Some(a) = args.next() {
        let v = args
            .next()
            .ok_or_else(|| BenchError::Usage(format!("{a} needs a value")))?;
        let bad = || BenchError::Usage(format!("{a} cannot be {v:?}"));
        match a.as_str() {
            "--minutes" => o.minutes = v.parse().ok().filter(|m: &f64| *m > 0.0).ok_or_else(bad)?,
            "--readers" => o.readers = v.parse().map_err(|_| bad())?,
            "--writers" => o.writers = v.parse().ok().filter(|n| *n > 0).ok_or_else(bad)?,
            "--seed" => o.seed = v.parse().map_err(|_| bad())?,
            "--store" => {
                o.store = match v.as_str() {
                    "s3" => SoakStore::S3,
                    "azurite" => SoakStore::Azurite,
                    _ => return Err(bad()),
                };
            }
            "--compact-every" => {
                o.compact_every = v.parse().ok().filter(|s: &f64| *s > 0.0).ok_or_else(bad)?;
            }
            other => return Err(BenchError::Usage(format!("unknown argument {other:?}"))),
        }
    }
    Ok(o)
}

/// What the writers acknowledged, and what the run counted.
#[derive(Debug, Default)]
struct Shared {
    /// Live names whose append was acknowledged, with their value.
    acked: BTreeMap<String, f32>,
    /// Names whose delete was acknowledged.
    deleted: BTreeSet<String>,
    /// Names of a change that failed: landed or not, either is right.
    in_doubt: BTreeSet<String>,
    /// Names a delete is under way for.
    deleting: BTreeSet<String>,
    appends: u64,
    deletes: u64,
    compactions: u64,
    write_errors_retryable: u64,
    write_errors_other: u64,
    /// Failed writes by operation and kind (see [`error_kind`]).
    write_failures: BTreeMap<(&'static str, String), u64>,
    /// Each compaction: when it started (s), how long it took (s), what came of it.
    compaction_log: Vec<(f64, f64, String)>,
    reads: u64,
    read_errors_retryable: u64,
    read_errors_other: u64,
    latencies_ms: Vec<f64>,
    lost: u64,
    duplicated: u64,
    resurrected: u64,
    anomalies: Vec<String>,
}

type State = Arc<Mutex<Shared>>;

fn lock(s: &State) -> std::sync::MutexGuard<'_, Shared> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// A small deterministic random number generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Runs the soak and prints its report; fails when anything was lost,
/// duplicated or brought back, or a read error was not retryable.
pub fn run(o: &SoakOptions) -> Result {
    let rt = crate::runtime()?;
    rt.block_on(soak(o))
}

async fn soak(o: &SoakOptions) -> Result {
    let plan = atlas_testkit::FaultPlan::none()
        .with_errors(50)
        .with_error_status(503)
        .with_resets(10)
        .with_slow(1000, Duration::from_millis(20));
    let mut plan = plan;
    plan.seed = o.seed;
    let (_server, proxy, op) = match o.store {
        SoakStore::S3 => {
            let server = atlas_testkit::S3Server::start();
            let proxy = atlas_testkit::FaultProxy::start(server.endpoint(), plan);
            let op = s3_operator(proxy.endpoint(), "/soak/")?;
            (Some(server), proxy, op)
        }
        SoakStore::Azurite => {
            let (proxy, op) = azurite_behind(plan, o.seed)?;
            (None, proxy, op)
        }
    };
    let op = RetryPolicy::default().apply(op);
    let state: State = Arc::default();
    let start = Instant::now();
    let until = start + Duration::from_secs_f64(o.minutes * 60.0);

    // A first commit, so that readers have a set to open.
    append(&op, &state, 0, 0, &mut Rng(o.seed | 1)).await;
    let mut tasks = Vec::new();
    for w in 0..o.writers {
        let (op, state) = (op.clone(), state.clone());
        let seed = o.seed.wrapping_mul(31).wrapping_add(w as u64 + 7) | 1;
        let plan = WriterPlan {
            w,
            start,
            until,
            compact_every: Duration::from_secs_f64(o.compact_every),
        };
        tasks.push(tokio::spawn(async move {
            writer(op, state, plan, Rng(seed)).await
        }));
    }
    for r in 0..o.readers {
        let (op, state) = (op.clone(), state.clone());
        let seed = o.seed.wrapping_mul(17).wrapping_add(r as u64 + 1000) | 1;
        tasks.push(tokio::spawn(async move {
            reader(op, state, until, Rng(seed)).await
        }));
    }
    let mut last_report = Instant::now();
    for task in tasks {
        while !task.is_finished() {
            tokio::time::sleep(Duration::from_millis(500)).await;
            if last_report.elapsed() > Duration::from_secs(60) {
                last_report = Instant::now();
                let s = lock(&state);
                eprintln!(
                    "soak {:>4.0} s: appends {} deletes {} compactions {} reads {} read errors {}/{} lost {} dup {} resurrected {}",
                    start.elapsed().as_secs_f64(),
                    s.appends,
                    s.deletes,
                    s.compactions,
                    s.reads,
                    s.read_errors_retryable,
                    s.read_errors_other,
                    s.lost,
                    s.duplicated,
                    s.resurrected
                );
            }
        }
        task.await
            .map_err(|e| BenchError::Child(format!("a soak task failed: {e}")))?;
    }
    proxy.set_enabled(false);
    let checked = final_check(&op, &state).await;
    let s = lock(&state);
    let mut lat = s.latencies_ms.clone();
    lat.sort_by(f64::total_cmp);
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    let counts = proxy.counts();
    println!(
        "soak ({:?}): {:.1} min, {} readers, {} writers; proxy: {} requests, {} answered 503, {} reset",
        o.store,
        start.elapsed().as_secs_f64() / 60.0,
        o.readers,
        o.writers,
        counts.requests,
        counts.errors,
        counts.resets
    );
    println!(
        "writes: {} appends, {} deletes, {} compactions acknowledged; failed writes: {} retryable, {} not",
        s.appends, s.deletes, s.compactions, s.write_errors_retryable, s.write_errors_other
    );
    println!(
        "reads: {} (open, list, one dataset); errors: {} retryable, {} not; latency p50 {:.0} ms, p99 {:.0} ms",
        s.reads,
        s.read_errors_retryable,
        s.read_errors_other,
        pct(0.5),
        pct(0.99)
    );
    println!(
        "checks: lost {}, duplicated {}, resurrected {}; end check: {}",
        s.lost,
        s.duplicated,
        s.resurrected,
        match &checked {
            Ok(n) => format!("{n} datasets, every acknowledged one, values as written"),
            Err(e) => e.clone(),
        }
    );
    for ((op, kind), n) in &s.write_failures {
        println!("failed {op}: {n} x {kind}");
    }
    for (at, took, what) in &s.compaction_log {
        println!("compaction at {at:.0} s, {took:.1} s: {what}");
    }
    for a in s.anomalies.iter().take(20) {
        println!("anomaly: {a}");
    }
    if s.lost + s.duplicated + s.resurrected + s.read_errors_other > 0 || checked.is_err() {
        return Err(BenchError::Mismatch(format!(
            "soak found {} anomalies",
            s.anomalies.len().max(1)
        )));
    }
    Ok(())
}

/// The fault proxy in front of Azurite (started by `scripts/azurite.sh` if
/// it is not running), and an operator through the proxy on a fresh root of
/// its container (Azure's shared-key signature does not cover the host, so
/// the proxy can stand in for the emulator's address).
fn azurite_behind(
    plan: atlas_testkit::FaultPlan,
    seed: u64,
) -> Result<(atlas_testkit::FaultProxy, Operator)> {
    atlas_io::install_http_transport();
    let conn = atlas_testkit::azurite();
    let endpoint = conn
        .split(';')
        .find_map(|kv| kv.strip_prefix("BlobEndpoint="))
        .ok_or_else(|| BenchError::Usage(format!("no BlobEndpoint in {conn:?}")))?;
    // http://127.0.0.1:PORT/ACCOUNT: the proxy takes the host part.
    let after_scheme = endpoint.trim_start_matches("http://");
    let (host, account) = after_scheme.split_once('/').unwrap_or((after_scheme, ""));
    let proxy = atlas_testkit::FaultProxy::start(&format!("http://{host}"), plan);
    let through = conn.replace(endpoint, &format!("{}/{account}", proxy.endpoint()));
    let builder = opendal::services::Azblob::from_connection_string(&through)?
        .container("atlas-test")
        .root(&format!("/soak-{seed}-{}/", std::process::id()));
    Ok((proxy, Operator::new(builder)?))
}

/// Appends one member of one to three new names of writer `w`.
async fn append(op: &Operator, state: &State, w: usize, n: u64, rng: &mut Rng) {
    let count = 1 + rng.below(3);
    let names: Vec<String> = (0..count).map(|i| format!("w{w}-{n}-{i}")).collect();
    #[allow(clippy::cast_precision_loss)]
    let value = (w as f32) * 1e6 + n as f32;
    let result = async {
        let ms = 1_700_000_000_000 + i64::try_from(n).unwrap_or(0);
        let config = WriterConfig::default().created_unix_ms(ms);
        let mut set = SetWriter::create((op.clone(), "set"), &config).await?;
        let member = set
            .add_member(&member_id(ms, ((w as u64) << 48) | n))
            .await?;
        for name in &names {
            let mut ds = member.writer().add_dataset(name)?;
            ds.define_array::<f32>("TEMP", &["N"], &[1], None, None)?;
            ds.write_array("TEMP", &[0], ndarray::arr1(&[value]).into_dyn().view())?;
            ds.finish().await?;
        }
        set.finish_member(member).await?;
        set.commit().await
    }
    .await;
    let mut s = lock(state);
    match result {
        Ok(_) => {
            s.appends += 1;
            for name in names {
                s.acked.insert(name, value);
            }
        }
        Err(e) => {
            count_write_error(&mut s, "append", &e);
            s.in_doubt.extend(names);
        }
    }
}

fn count_write_error(s: &mut Shared, op: &'static str, e: &AtlasError) {
    *s.write_failures.entry((op, error_kind(e))).or_default() += 1;
    if e.is_retryable() {
        s.write_errors_retryable += 1;
    } else {
        s.write_errors_other += 1;
        s.anomalies.push(format!("write: {e}"));
    }
}

/// What a writer's loop is given besides its store and state.
struct WriterPlan {
    w: usize,
    start: Instant,
    until: Instant,
    compact_every: Duration,
}

async fn writer(op: Operator, state: State, plan: WriterPlan, mut rng: Rng) {
    let WriterPlan {
        w,
        start,
        until,
        compact_every,
    } = plan;
    let mut n = 1u64;
    let mut next_compaction = Instant::now() + compact_every;
    while Instant::now() < until {
        n += 1;
        if w == 0 && Instant::now() >= next_compaction {
            // The next one a whole interval after this one ends, not piled up.
            let began = Instant::now();
            let options = CompactOptions::default()
                .target_datasets(1000)
                .ids(1_800_000_000_000 + i64::try_from(n).unwrap_or(0), n);
            let result = async {
                let set = Atlas::open((op.clone(), "set"), &OpenOptions::default()).await?;
                set.compact(&options).await
            }
            .await;
            next_compaction = Instant::now() + compact_every;
            let at = began.duration_since(start).as_secs_f64();
            let took = began.elapsed().as_secs_f64();
            let mut s = lock(&state);
            let what = match result {
                Ok(Some(done)) => {
                    s.compactions += 1;
                    format!(
                        "{} members into {}, {} datasets, {} rebases over deletes, last commit in {} rounds",
                        done.replaced.len(),
                        done.written.len(),
                        done.datasets,
                        done.rebases,
                        done.commit.attempts
                    )
                }
                Ok(None) => {
                    s.compactions += 1;
                    "nothing to compact".to_owned()
                }
                Err(e) => {
                    count_write_error(&mut s, "compaction", &e);
                    format!("failed: {}", error_kind(&e))
                }
            };
            s.compaction_log.push((at, took, what));
            continue;
        }
        if rng.below(4) == 0 {
            // Delete one or two of this writer's own acknowledged names.
            let victims: Vec<String> = {
                let mut s = lock(&state);
                let prefix = format!("w{w}-");
                let own: Vec<String> = s
                    .acked
                    .keys()
                    .filter(|k| k.starts_with(&prefix) && !s.deleting.contains(*k))
                    .cloned()
                    .collect();
                let mut v = Vec::new();
                for _ in 0..1 + rng.below(2) {
                    if let Some(k) = own.get(rng.below(own.len() as u64) as usize)
                        && !v.contains(k)
                    {
                        v.push(k.clone());
                    }
                }
                s.deleting.extend(v.iter().cloned());
                v
            };
            if victims.is_empty() {
                continue;
            }
            let refs: Vec<&str> = victims.iter().map(String::as_str).collect();
            let result = async {
                let set = Atlas::open((op.clone(), "set"), &OpenOptions::default()).await?;
                set.delete_datasets(&refs).await
            }
            .await;
            let mut s = lock(&state);
            for v in &victims {
                s.deleting.remove(v);
            }
            match result {
                Ok(_) => {
                    s.deletes += 1;
                    for v in victims {
                        s.acked.remove(&v);
                        s.deleted.insert(v);
                    }
                }
                Err(e) => {
                    count_write_error(&mut s, "delete", &e);
                    for v in victims {
                        s.acked.remove(&v);
                        s.in_doubt.insert(v);
                    }
                }
            }
            continue;
        }
        append(&op, &state, w, n, &mut rng).await;
    }
}

async fn reader(op: Operator, state: State, until: Instant, mut rng: Rng) {
    while Instant::now() < until {
        // What must be seen: acknowledged before the open, no delete under way.
        let (must, gone) = {
            let s = lock(&state);
            let must: BTreeMap<String, f32> = s
                .acked
                .iter()
                .filter(|(k, _)| !s.deleting.contains(*k))
                .map(|(k, v)| (k.clone(), *v))
                .collect();
            (must, s.deleted.clone())
        };
        let started = Instant::now();
        let result = async {
            let set = Atlas::open((op.clone(), "set"), &OpenOptions::default()).await?;
            let names = set.dataset_names().await?;
            let pick = names.get(rng.below(names.len() as u64) as usize).cloned();
            let value = match &pick {
                Some(name) => Some(
                    set.dataset(name)
                        .await?
                        .read_array::<f32>("TEMP", Region::all())
                        .await?
                        .iter()
                        .copied()
                        .next(),
                ),
                None => None,
            };
            Ok::<_, AtlasError>((names, pick, value))
        }
        .await;
        let elapsed = started.elapsed().as_secs_f64() * 1e3;
        let mut s = lock(&state);
        s.reads += 1;
        match result {
            Ok((names, pick, value)) => {
                s.latencies_ms.push(elapsed);
                let listed: BTreeSet<String> = names.iter().map(ToString::to_string).collect();
                if listed.len() != names.len() {
                    s.duplicated += 1;
                    s.anomalies.push("a name listed twice".into());
                }
                for (k, v) in &must {
                    // Deleted since the open began: either is right.
                    if !listed.contains(k) && s.acked.contains_key(k) && !s.deleting.contains(k) {
                        s.lost += 1;
                        s.anomalies
                            .push(format!("{k} (acknowledged {v}) not listed"));
                    }
                }
                for k in listed.iter().filter(|k| gone.contains(*k)) {
                    s.resurrected += 1;
                    s.anomalies
                        .push(format!("{k} listed after its delete was acknowledged"));
                }
                if let (Some(name), Some(Some(v))) = (pick, value)
                    && let Some(want) = s.acked.get(name.as_str()).copied()
                    && want != v
                {
                    s.anomalies.push(format!("{name} read {v}, written {want}"));
                    s.lost += 1;
                }
            }
            Err(e) if e.is_retryable() => s.read_errors_retryable += 1,
            Err(e) => {
                s.read_errors_other += 1;
                s.anomalies.push(format!("read: {e}"));
            }
        }
    }
}

/// What kind of failure `e` is, in a few words: the error's variant under
/// any set-member wrapper, with the storage error's kind, or why a commit
/// gave up (its reason up to the first digit or colon, so that counts group).
fn error_kind(e: &AtlasError) -> String {
    match e {
        AtlasError::Member { source, .. } => error_kind(source),
        AtlasError::Io(io) => format!("Io({}, {})", io.kind(), io.operation()),
        AtlasError::CommitConflict { what, .. } => {
            let reason: String = what
                .chars()
                .take_while(|c| !c.is_ascii_digit() && *c != ':')
                .collect();
            let reason = reason.trim();
            if reason.is_empty() {
                // "13 attempts, each overtaken by another writer"
                format!(
                    "CommitConflict({})",
                    what.trim_start_matches(|c: char| c.is_ascii_digit()).trim()
                )
            } else {
                format!("CommitConflict({reason})")
            }
        }
        other => {
            let debug = format!("{other:?}");
            let variant: String = debug
                .chars()
                .take_while(char::is_ascii_alphanumeric)
                .collect();
            format!("{variant} ({:?})", other.class())
        }
    }
}

/// The end: with the faults off, the set holds every acknowledged name with
/// its value, no deleted name, and nothing else but names in doubt.
async fn final_check(op: &Operator, state: &State) -> std::result::Result<usize, String> {
    let (acked, deleted, in_doubt) = {
        let s = lock(state);
        (s.acked.clone(), s.deleted.clone(), s.in_doubt.clone())
    };
    let set = Atlas::open((op.clone(), "set"), &OpenOptions::default())
        .await
        .map_err(|e| format!("the set does not open: {e}"))?;
    let names = set
        .dataset_names()
        .await
        .map_err(|e| format!("the set does not list: {e}"))?;
    let listed: BTreeSet<String> = names.iter().map(ToString::to_string).collect();
    let mut problems = Vec::new();
    if listed.len() != names.len() {
        problems.push("a name listed twice".to_owned());
    }
    for (k, v) in &acked {
        if !listed.contains(k) {
            problems.push(format!("{k} lost"));
            continue;
        }
        match set.dataset(k).await {
            Ok(ds) => match ds.read_array::<f32>("TEMP", Region::all()).await {
                Ok(a) if a.iter().next() == Some(v) => {}
                Ok(a) => problems.push(format!("{k} reads {a:?}, written {v}")),
                Err(e) => problems.push(format!("{k} does not read: {e}")),
            },
            Err(e) => problems.push(format!("{k} does not open: {e}")),
        }
    }
    for k in &listed {
        if deleted.contains(k) {
            problems.push(format!("{k} resurrected"));
        } else if !acked.contains_key(k) && !in_doubt.contains(k) {
            problems.push(format!("{k} never written"));
        }
    }
    if problems.is_empty() {
        Ok(listed.len())
    } else {
        Err(format!(
            "{} problems: {}",
            problems.len(),
            problems
                .iter()
                .take(10)
                .cloned()
                .collect::<Vec<_>>()
                .join("; ")
        ))
    }
}
