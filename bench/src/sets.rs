//! `atlas-bench sets`: a collection set at scale (the set benchmark).
//!
//! ```text
//! atlas-bench sets [--profiles 1000000] [--member-size 100000]
//!                  [--steps 100000,300000,1000000] [--latency 20ms]
//!                  [--bandwidth 100MB/s] [--work DIR] [--quick] [--sorted [--sort-by KEY]...]
//! ```
//!
//! 1. **Writes.** For each step total T, a child process writes T profiles
//!    of the bench workload (plus a `LATITUDE` and `LONGITUDE` each) as a set
//!    of members of at most `--member-size` datasets: one [`SetWriter`], one
//!    member after another, one commit at the end. Peak RSS, time, bytes,
//!    members and the manifest's size per step.
//! 2. **Reads** of the largest set on the simulated store: the open, a
//!    box-and-window query through [`Atlas::select`] (members skipped by
//!    their summaries), `TEMP` of the matching datasets, and the same query
//!    asked of every member (no pruning), side by side.
//! 3. **Appending** one member to a set of 100: the requests of the commit,
//!    on local disk and on the in-process S3 server.
//!
//! `docs/performance.md` ("Sets at scale") explains each number. `--sorted`
//! runs instead a box-and-month query before and after a sorted compaction
//! (`sorted.rs`) on a set of `--profiles` in float order.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use atlas::{
    Atlas, AtlasWriter, CommitOutcome, DatasetWriter, OpenOptions, Operator, Order, Predicate,
    Region, SetWriter, WriterConfig, member_id,
};
use futures::StreamExt;

use crate::error::{BenchError, Result};
use crate::measure::{Cost, Step, measure};
use crate::meter::{Meter, MeterLayer, Reading, Simulation};
use crate::report::{bytes, cell, ms, segment_footer};
use crate::workload;
use crate::{ChildRun, cpu_secs, dir_bytes, parse_bandwidth, parse_duration, runtime, vm_hwm_kib};

/// The first member id's time (ids are reproducible: this plus the member's index).
const ID_EPOCH_MS: i64 = 1_700_000_000_000;

/// Members of the set the append is measured on (`--quick`: [`QUICK_APPEND_MEMBERS`]).
const APPEND_MEMBERS: usize = 100;

/// Members of that set in a `--quick` run: writing 100 members to the S3
/// server takes about 25 s, too long for the CI smoke run.
const QUICK_APPEND_MEMBERS: usize = 10;

/// Profiles in each of those members.
const APPEND_MEMBER_SIZE: usize = 3;

/// What `atlas-bench sets` was asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct SetsOptions {
    /// The largest total; steps above it are dropped.
    pub profiles: usize,
    /// Datasets per member (the last member of a step holds the rest).
    pub member_size: usize,
    /// The totals written, ascending.
    pub steps: Vec<usize>,
    /// The simulated store of the read side.
    pub sim: Simulation,
    /// Where the sets are written.
    pub work: PathBuf,
    /// Members of the set one member is appended to.
    pub append_members: usize,
    /// Tiny sizes, for the smoke run.
    pub quick: bool,
    /// Run the sorted-compaction bench instead (`sorted.rs`).
    pub sorted: bool,
    /// The sort keys it compacts with, one row each (`--sort-by`, repeated;
    /// the time, and Hilbert curves over position and over position and time,
    /// when none is given).
    pub sort_keys: Vec<String>,
}

/// Parses the arguments after `sets`.
pub fn parse_options(args: &[String]) -> Result<SetsOptions> {
    let mut o = SetsOptions {
        profiles: 1_000_000,
        member_size: 100_000,
        steps: vec![100_000, 300_000, 1_000_000],
        sim: Simulation {
            latency: Duration::from_millis(20),
            bandwidth: Some(100e6),
        },
        work: PathBuf::from("target/bench-work"),
        append_members: APPEND_MEMBERS,
        quick: false,
        sorted: false,
        sort_keys: Vec::new(),
    };
    let (mut profiles, mut member_size, mut steps) = (None, None, None);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| BenchError::Usage(format!("{a} needs a value")))
        };
        let number = |v: &str| {
            v.trim()
                .replace('_', "")
                .parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| BenchError::Usage(format!("{a} needs positive numbers, not {v:?}")))
        };
        match a.as_str() {
            "--quick" => o.quick = true,
            "--sorted" => o.sorted = true,
            "--sort-by" => o.sort_keys.push(value()?),
            "--profiles" => profiles = Some(number(&value()?)?),
            "--member-size" => member_size = Some(number(&value()?)?),
            "--steps" => {
                steps = Some(
                    value()?
                        .split(',')
                        .map(number)
                        .collect::<Result<Vec<_>>>()?,
                )
            }
            "--latency" => o.sim.latency = parse_duration(&value()?)?,
            "--bandwidth" => o.sim.bandwidth = Some(parse_bandwidth(&value()?)?),
            "--work" => o.work = PathBuf::from(value()?),
            other => return Err(BenchError::Usage(format!("unknown argument {other:?}"))),
        }
    }
    if o.quick {
        (o.profiles, o.member_size, o.steps) = (3_000, 1_000, vec![1_000, 3_000]);
        o.append_members = QUICK_APPEND_MEMBERS;
    }
    o.member_size = member_size.unwrap_or(o.member_size);
    let explicit_steps = steps.is_some();
    o.steps = steps.unwrap_or(o.steps);
    o.profiles = profiles.unwrap_or(if explicit_steps {
        o.steps.iter().copied().max().unwrap_or(o.profiles)
    } else {
        o.profiles
    });
    o.steps.retain(|s| *s <= o.profiles);
    o.steps.sort_unstable();
    o.steps.dedup();
    if o.steps.is_empty() {
        o.steps.push(o.profiles);
    }
    Ok(o)
}

/// Where profile `i` was taken: each float starts somewhere between 60° S
/// and 60° N and drifts a little each cycle, so a float's profiles (which are
/// consecutive in the workload) lie close together. A pure function of `i`.
pub fn position(i: usize) -> (f64, f64) {
    let platform = i / 150;
    let cycle = (i % 150) as f64;
    let mut rng = workload::Rng::new(workload::SEED, (2 << 40) | platform as u64);
    let mut unit = || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let (lat0, lon0, heading) = (
        -60.0 + 120.0 * unit(),
        -180.0 + 360.0 * unit(),
        std::f64::consts::TAU * unit(),
    );
    let drift = 0.02 * cycle;
    let lon = lon0 + drift * heading.cos();
    let lon = if lon >= 180.0 {
        lon - 360.0
    } else if lon < -180.0 {
        lon + 360.0
    } else {
        lon
    };
    (lat0 + drift * heading.sin(), lon)
}

/// Adds profile `i` of the workload to `w` with its position, as two
/// one-element `f64` arrays `LATITUDE` and `LONGITUDE` (not yet finished).
fn add_profile(w: &AtlasWriter, i: usize) -> Result<DatasetWriter> {
    let mut d = crate::ours::write_profile(w, workload::profile(i))?;
    let (lat, lon) = position(i);
    for (name, v, units) in [
        ("LATITUDE", lat, "degree_north"),
        ("LONGITUDE", lon, "degree_east"),
    ] {
        d.define_array::<f64>(name, &["N_PROF"], &[1], None, None)?;
        d.write_array(name, &[0], ndarray::arr1(&[v]).into_dyn().view())?;
        d.set_array_attribute(name, "units", units)?;
    }
    Ok(d)
}

/// Profiles `range` as members of at most `member_size` datasets added to
/// `set` (ids `member_id(ID_EPOCH_MS + k, k)` from `first_id` on), each
/// finished before the next starts.
async fn add_members(
    set: &mut SetWriter,
    range: std::ops::Range<usize>,
    member_size: usize,
    first_id: usize,
) -> Result<usize> {
    let mut k = first_id;
    let mut start = range.start;
    while start < range.end {
        let end = start.saturating_add(member_size.max(1)).min(range.end);
        let id = member_id(ID_EPOCH_MS + k as i64, k as u64);
        let member = set.add_member(&id).await?;
        for i in start..end {
            add_profile(member.writer(), i)?.finish().await?;
        }
        set.finish_member(member).await?;
        start = end;
        k += 1;
    }
    Ok(k - first_id)
}

/// What the child of one write step reports besides [`ChildRun`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetFacts {
    /// Members committed.
    pub members: usize,
    /// Size of `set.manifest`.
    pub manifest_bytes: u64,
    /// Requests the one commit made.
    pub commit_requests: u32,
}

impl SetFacts {
    fn line(&self) -> String {
        format!(
            "{} {} {}",
            self.members, self.manifest_bytes, self.commit_requests
        )
    }

    fn parse(line: &str) -> Option<Self> {
        let mut p = line.split_whitespace();
        let facts = Self {
            members: p.next()?.parse().ok()?,
            manifest_bytes: p.next()?.parse().ok()?,
            commit_requests: p.next()?.parse().ok()?,
        };
        p.next().is_none().then_some(facts)
    }
}

/// `child-set DIR N MEMBER_SIZE`: writes the set, checks it, then prints
/// `RESULT` + [`ChildRun`] and `SET` + [`SetFacts`].
pub fn child(args: &[String]) -> Result {
    let [dir, n, member_size] = args else {
        return Err(BenchError::Usage("child-set DIR N MEMBER_SIZE".into()));
    };
    let number = |v: &str| {
        v.parse::<usize>()
            .map_err(|_| BenchError::Usage(format!("{v:?} is not a number")))
    };
    let (dir, n, member_size) = (Path::new(dir), number(n)?, number(member_size)?);
    let rt = runtime()?;
    let start = Instant::now();
    let (commit, outcome) = rt.block_on(async {
        let mut set = SetWriter::create(dir, &WriterConfig::default()).await?;
        add_members(&mut set, 0..n, member_size, 0).await?;
        let commit = Instant::now();
        let outcome = set.commit().await?;
        Ok::<_, BenchError>((commit.elapsed(), outcome))
    })?;
    let run = ChildRun {
        secs: start.elapsed().as_secs_f64(),
        rss_kib: vm_hwm_kib(),
        cpu_secs: cpu_secs(),
        commit,
    };
    // After the peak was read: the check must not count in it.
    let set = rt.block_on(Atlas::open(dir, &OpenOptions::default()))?;
    let members = set.members();
    let live: u64 = members.iter().map(|m| m.datasets_live).sum();
    if live != n as u64 || members.len() != n.div_ceil(member_size.max(1)) {
        return Err(BenchError::Mismatch(format!(
            "the set holds {live} datasets in {} members, not {n}",
            members.len()
        )));
    }
    let facts = SetFacts {
        members: members.len(),
        manifest_bytes: std::fs::metadata(dir.join(atlas::SET_MANIFEST_FILE))?.len(),
        commit_requests: outcome.requests,
    };
    println!("RESULT {}", run.line());
    println!("SET {}", facts.line());
    Ok(())
}

/// One write step, measured in its child.
#[derive(Debug, Clone)]
struct WriteStep {
    total: usize,
    run: ChildRun,
    facts: SetFacts,
    on_disk: u64,
}

fn write_step(dir: &Path, total: usize, member_size: usize) -> Result<WriteStep> {
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    let args = [
        "child-set".to_owned(),
        dir.to_string_lossy().into_owned(),
        total.to_string(),
        member_size.to_string(),
    ];
    let (run, stdout) = crate::spawn_child(&args, "set write")?;
    let facts = stdout
        .lines()
        .find_map(|l| l.strip_prefix("SET "))
        .and_then(SetFacts::parse)
        .ok_or_else(|| BenchError::Child("no SET line from the set write".into()))?;
    Ok(WriteStep {
        total,
        run,
        facts,
        on_disk: dir_bytes(dir),
    })
}

/// The box-and-window query of the read side, and the profiles it matches.
#[derive(Debug, Clone, PartialEq)]
pub struct BoxQuery {
    /// `LATITUDE` bounds.
    pub lat: (f64, f64),
    /// `LONGITUDE` bounds.
    pub lon: (f64, f64),
    /// `JULD` bounds (days, as the workload stores them).
    pub juld: (f64, f64),
    /// Indices of the matching profiles, ascending.
    pub expected: Vec<usize>,
}

impl BoxQuery {
    /// A window of half a member across the boundary between the two middle
    /// members (one member when there is one), and the smallest box around
    /// the float at that boundary (half-sides growing by 0.5° of latitude and
    /// 1° of longitude) that holds a few hundred of the window's profiles
    /// (at most one in a hundred of them).
    pub fn choose(total: usize, member_size: usize) -> Self {
        let total = total.max(1);
        let members = total.div_ceil(member_size.max(1));
        let boundary = if members > 1 {
            (members / 2) * member_size
        } else {
            total / 2
        };
        let half = (member_size / 4).max(1);
        let (first, last) = (
            boundary.saturating_sub(half),
            boundary.saturating_add(half).min(total) - 1,
        );
        let target = ((last + 1 - first) / 100).clamp(1, 300);
        let (clat, clon) = position(boundary.min(total - 1));
        let positions: Vec<(usize, (f64, f64))> =
            (first..=last).map(|i| (i, position(i))).collect();
        let mut h = 0.0;
        loop {
            h += 0.5;
            let (lat, lon) = ((clat - h, clat + h), (clon - 2.0 * h, clon + 2.0 * h));
            let expected: Vec<usize> = positions
                .iter()
                .filter(|(_, (a, o))| lat.0 <= *a && *a <= lat.1 && lon.0 <= *o && *o <= lon.1)
                .map(|(i, _)| *i)
                .collect();
            if expected.len() >= target || h >= 90.0 {
                let juld = |i: usize| workload::profile(i).juld;
                return Self {
                    lat,
                    lon,
                    juld: (juld(first), juld(last)),
                    expected,
                };
            }
        }
    }

    /// The query in the expression language.
    pub fn text(&self) -> String {
        format!(
            "LATITUDE between {} {} and LONGITUDE between {} {} and JULD between {} {}",
            self.lat.0, self.lat.1, self.lon.0, self.lon.1, self.juld.0, self.juld.1
        )
    }
}

/// The costs of the read side.
#[derive(Debug, Clone, Default)]
struct ReadSide {
    members: usize,
    open: Cost,
    pruned: Cost,
    opened_pruned: usize,
    with_matches: usize,
    temp: Cost,
    /// Every member opened, then asked one after another.
    unpruned: Cost,
    /// Every member opened, then asked all at once.
    unpruned_concurrent: Cost,
    opened_unpruned: usize,
    matches: usize,
    /// A fresh handle laying out the ragged view of the six variables: the
    /// open, then, for all six at once, each one's shape in every dataset
    /// and the layout of the first dataset declaring it (what atlasds's
    /// ragged view asks first).
    ragged: Cost,
    /// Floors: the open, and the pruned query (requests, bytes).
    floor_open: (u64, u64),
    floor_query: (u64, u64),
    floor_every: (u64, u64),
}

fn metered(dir: &Path, meter: &Meter) -> Result<Operator> {
    Ok(
        Operator::new(opendal::services::Fs::default().root(&dir.to_string_lossy()))?
            .layer(MeterLayer::new(meter.clone())),
    )
}

/// The floor of opening member `path` of the set at `dir` and reading the
/// footers of `variables`: one GET for the container's tail, one per footer.
async fn member_floor(dir: &Path, path: &str, variables: &[&str]) -> Result<(u64, u64)> {
    let dir = dir.join(path);
    let atlas = atlas::Atlas::open(&dir, &OpenOptions::default())
        .await?
        .lone_member()
        .ok_or_else(|| BenchError::Mismatch(format!("member {path} is a set")))?;
    let mut file = std::fs::File::open(dir.join(atlas::CONTAINER_FILE))?;
    let mut total = atlas.footer_bytes() + atlas_format::TRAILER_LEN;
    for v in variables {
        let seg = atlas
            .segments()
            .into_iter()
            .find(|s| s.name == *v)
            .ok_or_else(|| BenchError::Mismatch(format!("no segment {v} in {path}")))?;
        total += segment_footer(&mut file, seg.offset, seg.len)?;
    }
    Ok((1 + variables.len() as u64, total))
}

async fn read_side(
    dir: &Path,
    sim: Simulation,
    query: &BoxQuery,
    member_size: usize,
    index: bool,
) -> Result<ReadSide> {
    let options = OpenOptions::default().dataset_index(index);
    let meter = Meter::new(sim);
    let predicate = Predicate::parse(&query.text())
        .map_err(|e| BenchError::Usage(format!("the bench's query does not parse: {e}")))?;
    let expected: Vec<String> = query
        .expected
        .iter()
        .map(|i| workload::profile(*i).name)
        .collect();
    let mut out = ReadSide::default();

    let op = metered(dir, &meter)?;
    let (set, c) = measure(&meter, async {
        Ok(Atlas::open((op.clone(), ""), &options).await?)
    })
    .await?;
    out.open = c;
    let members = set.members();
    out.members = members.len();

    let (names, c) = measure(&meter, async { Ok(set.select(&predicate).await?) }).await?;
    out.pruned = c;
    out.opened_pruned = set.members_opened();
    if names != expected {
        return Err(BenchError::Mismatch(format!(
            "the query selected {} datasets, the generator says {}",
            names.len(),
            expected.len()
        )));
    }
    out.matches = names.len();

    // TEMP of the matches: handles from the members that hold them, already
    // opened by the query (the generator knows which member holds which).
    let mut holders: Vec<usize> = query.expected.iter().map(|i| i / member_size).collect();
    holders.dedup();
    out.with_matches = holders.len();
    let (read, c) = measure(&meter, async {
        let mut handles = Vec::new();
        for k in &holders {
            let entry = members
                .get(*k)
                .ok_or_else(|| BenchError::Mismatch(format!("no member {k}")))?;
            let atlas = set.member(&entry.id).await?;
            for i in query.expected.iter().filter(|i| *i / member_size == *k) {
                handles.push(atlas.dataset(&workload::profile(*i).name)?);
            }
        }
        let mut stream = set.read_many(
            handles,
            "TEMP",
            Region::all(),
            Step::MANY_CONCURRENCY,
            Order::AsGiven,
        );
        let mut read = Vec::new();
        while let Some((name, array)) = stream.next().await {
            read.push((name, array?));
        }
        Ok(read)
    })
    .await?;
    out.temp = c;
    for ((name, array), i) in read.iter().zip(&query.expected) {
        let p = workload::profile(*i);
        let same = match array.data() {
            atlas::ArrayData::Float32(a) => a.iter().eq(p.arrays[1].iter()),
            _ => false,
        };
        if *name != p.name || !same {
            return Err(BenchError::Mismatch(format!("TEMP of {name} differs")));
        }
    }
    if read.len() != expected.len() {
        return Err(BenchError::Mismatch(format!(
            "read TEMP of {} datasets, not {}",
            read.len(),
            expected.len()
        )));
    }

    // The same query without pruning: every member opened as a collection of
    // its own (the bench's members replace no names), then asked one after
    // another, then all at once.
    for concurrent in [false, true] {
        let paths: Vec<String> = members.iter().map(|m| m.path.clone()).collect();
        let (names, c) = measure(&meter, async {
            let open = |path: String| {
                let (op, options) = (op.clone(), options.clone());
                async move { Atlas::open((op, path.as_str()), &options).await }
            };
            let views: Vec<Atlas> =
                futures::future::try_join_all(paths.iter().cloned().map(open)).await?;
            let answers = if concurrent {
                futures::future::try_join_all(views.iter().map(|v| v.select(&predicate))).await?
            } else {
                let mut answers = Vec::new();
                for view in &views {
                    answers.push(view.select(&predicate).await?);
                }
                answers
            };
            Ok(answers.concat())
        })
        .await?;
        if concurrent {
            out.unpruned_concurrent = c;
        } else {
            out.unpruned = c;
        }
        out.opened_unpruned = paths.len();
        if names != expected {
            return Err(BenchError::Mismatch(format!(
                "without pruning the query selected {} datasets, with it {}",
                names.len(),
                expected.len()
            )));
        }
    }

    // The ragged view's layout of the six variables, on a fresh handle.
    let (shapes, c) = measure(&meter, async {
        let fresh = Atlas::open((op.clone(), ""), &options).await?;
        let fresh = &fresh;
        // The variables at once, as atlasds's `shapes` asks them.
        let counts = futures::future::try_join_all(RAGGED_VARIABLES.iter().map(|v| async move {
            let rows = fresh.array_shapes_by_dataset(v).await?;
            if let Some(row) = rows.first() {
                fresh.dataset(&row.dataset).await?.array_layout(v).await?;
            }
            Ok::<_, BenchError>(rows.len())
        }))
        .await?;
        Ok(counts.into_iter().sum::<usize>())
    })
    .await?;
    if shapes != RAGGED_VARIABLES.len() * total_of(&members) {
        return Err(BenchError::Mismatch(format!(
            "{shapes} shapes for {} variables of {} datasets",
            RAGGED_VARIABLES.len(),
            total_of(&members)
        )));
    }
    out.ragged = c;

    // Floors, from the layout on disk.
    let manifest = std::fs::metadata(dir.join(atlas::SET_MANIFEST_FILE))?.len();
    out.floor_open = (1, manifest);
    let variables = ["LATITUDE", "LONGITUDE", "JULD"];
    for (k, entry) in members.iter().enumerate() {
        let (r, b) = member_floor(dir, &entry.path, &variables).await?;
        out.floor_every = (out.floor_every.0 + r, out.floor_every.1 + b);
        if holders.contains(&k) {
            out.floor_query = (out.floor_query.0 + r, out.floor_query.1 + b);
        }
    }
    Ok(out)
}

/// The variables of the ragged view the bench lays out.
const RAGGED_VARIABLES: [&str; 6] = ["PRES", "TEMP", "PSAL", "JULD", "LATITUDE", "LONGITUDE"];

/// Datasets in the set, as its manifest counts them.
fn total_of(members: &[atlas::MemberEntry]) -> usize {
    members
        .iter()
        .map(|m| usize::try_from(m.datasets_live).unwrap_or(usize::MAX))
        .sum()
}

/// Requests of one commit adding a member to a set of `members` members.
#[derive(Debug, Clone, Copy)]
struct AppendCost {
    io: Reading,
    outcome: CommitOutcome,
    wall: Duration,
}

/// Writes a set of `members` small members through `op`, then measures the
/// commit of one more.
async fn append_cost(op: &Operator, meter: &Meter, members: usize) -> Result<AppendCost> {
    let config = WriterConfig::default();
    let mut set = SetWriter::create((op.clone(), ""), &config).await?;
    let n = members * APPEND_MEMBER_SIZE;
    add_members(&mut set, 0..n, APPEND_MEMBER_SIZE, 0).await?;
    set.commit().await?;
    let mut set = SetWriter::create((op.clone(), ""), &config).await?;
    add_members(
        &mut set,
        n..n + APPEND_MEMBER_SIZE,
        APPEND_MEMBER_SIZE,
        members,
    )
    .await?;
    meter.reset();
    let start = Instant::now();
    let outcome = set.commit().await?;
    let (wall, io) = (start.elapsed(), meter.reading());
    let after = Atlas::open((op.clone(), ""), &OpenOptions::default())
        .await?
        .members()
        .len();
    if after != members + 1 {
        return Err(BenchError::Mismatch(format!(
            "the set of {members} members has {after} after the append"
        )));
    }
    Ok(AppendCost { io, outcome, wall })
}

/// Runs the three parts and prints their tables.
pub fn run(o: &SetsOptions) -> Result {
    if o.sorted {
        return crate::sorted::run(o);
    }
    std::fs::create_dir_all(&o.work)?;
    let work = o.work.canonicalize()?.join("sets");
    std::fs::create_dir_all(&work)?;
    println!(
        "# atlas-bench sets: steps {:?} profiles, members of at most {}; {} cores{}",
        o.steps,
        o.member_size,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        if o.quick { " (--quick)" } else { "" }
    );

    // 1. Writes, largest last; every step but the largest is removed after.
    let mut steps = Vec::new();
    let largest = o.steps.iter().copied().max().unwrap_or(o.profiles);
    for &total in &o.steps {
        let dir = work.join(format!("set-{total}"));
        eprintln!("writing a set of {total} profiles");
        let step = write_step(&dir, total, o.member_size)?;
        eprintln!(
            "  {:.1} s, {:.0} MB peak RSS",
            step.run.secs,
            step.run.rss_kib as f64 / 1024.0
        );
        steps.push(step);
        if total != largest {
            std::fs::remove_dir_all(&dir)?;
        }
    }
    print_writes(&steps, o.member_size);

    // 2. Reads of the largest set.
    let dir = work.join(format!("set-{largest}"));
    let query = BoxQuery::choose(largest, o.member_size);
    eprintln!("reading ({} matches expected)", query.expected.len());
    let rt = runtime()?;
    let mut indexed = None;
    for index in [true, false] {
        let reads = rt.block_on(read_side(&dir, o.sim, &query, o.member_size, index))?;
        print_reads(&reads, &query, largest, o.sim, index);
        indexed.get_or_insert(reads);
    }
    eprintln!("the same query on one Parquet file (arrow-rs)");
    let (peer, peer_size) = rt.block_on(crate::parquet_peer::measure_query(
        &work, largest, o.sim, &query,
    ))?;
    if let Some(ours) = &indexed {
        print_parquet_peer(ours, &peer, peer_size);
    }

    // 3. One member added to a set of 100.
    let members = o.append_members;
    eprintln!("appending to a set of {members} members");
    let local = work.join("append");
    if local.exists() {
        std::fs::remove_dir_all(&local)?;
    }
    std::fs::create_dir_all(&local)?;
    let meter = Meter::default();
    let start = Instant::now();
    let fs = rt.block_on(append_cost(&metered(&local, &meter)?, &meter, members))?;
    eprintln!("  local disk: {:.1} s", start.elapsed().as_secs_f64());
    let start = Instant::now();
    let server = atlas_testkit::S3Server::start();
    let meter = Meter::default();
    let s3 = rt.block_on(append_cost(
        &crate::http::s3_operator(server.endpoint(), "/append/")?
            .layer(MeterLayer::new(meter.clone())),
        &meter,
        members,
    ))?;
    eprintln!("  S3: {:.1} s", start.elapsed().as_secs_f64());
    print_append(
        members,
        &[("local disk", fs), ("S3 (in-process s3s server)", s3)],
    );
    std::fs::remove_dir_all(&local)?;
    Ok(())
}

fn print_writes(steps: &[WriteStep], member_size: usize) {
    println!(
        "\n## Writing a set (each step in its own process; RSS = peak resident set, VmHWM)\n\n\
         One SetWriter, members of at most {member_size} profiles, one commit at the end.\n\n\
         | profiles | members | wall | commit | CPU | datasets/s | peak RSS | on disk | manifest | commit requests |\n\
         |---|---|---|---|---|---|---|---|---|---|"
    );
    for s in steps {
        let per_sec = if s.run.secs > 0.0 {
            s.total as f64 / s.run.secs
        } else {
            0.0
        };
        println!(
            "| {} | {} | {:.1} s | {} | {:.1} s | {per_sec:.0} | {:.0} MB | {} | {} | {} |",
            s.total,
            s.facts.members,
            s.run.secs,
            ms(s.run.commit),
            s.run.cpu_secs,
            s.run.rss_kib as f64 / 1024.0,
            bytes(s.on_disk),
            bytes(s.facts.manifest_bytes),
            s.facts.commit_requests,
        );
    }
    if let (Some(first), Some(last)) = (steps.first(), steps.last())
        && first.run.rss_kib > 0
        && steps.len() > 1
    {
        println!(
            "\nPeak RSS of {} profiles / of {}: {:.2}× (for {:.0}× the profiles).",
            last.total,
            first.total,
            last.run.rss_kib as f64 / first.run.rss_kib as f64,
            last.total as f64 / first.total as f64
        );
    }
}

fn print_reads(r: &ReadSide, q: &BoxQuery, total: usize, sim: Simulation, index: bool) {
    // Requests in a floor's round trips depend on the round trip before:
    // the tails, then the footers they locate.
    let floor = |(req, b): (u64, u64), rt: u64| format!("{req} req · {} · {rt} rt", bytes(b));
    println!(
        "\n## Reading the set of {total} profiles ({} members, {}): simulated store, {} ms per request{}\n\n\
         Query: `{}` ({} matches, in {} member(s)).\n\n\
         Each cell: wall time · requests (GET + HEAD) · bytes read · round trips on the critical path.\n\n\
         | step | cost | members opened | floor |\n|---|---|---|---|",
        r.members,
        if index {
            "through each member's dataset index"
        } else {
            "footers only, indexes not read"
        },
        sim.latency.as_secs_f64() * 1e3,
        sim.bandwidth
            .map(|b| format!(", {:.0} MB/s", b / 1e6))
            .unwrap_or_default(),
        q.text(),
        r.matches,
        r.with_matches,
    );
    println!(
        "| open the set | {} | 0 | {} |",
        cell(&r.open),
        floor(r.floor_open, 1)
    );
    println!(
        "| query, members pruned by their summaries (`Atlas::select`) | {} | {} of {} ({} skipped) | {} |",
        cell(&r.pruned),
        r.opened_pruned,
        r.members,
        r.members - r.opened_pruned.min(r.members),
        floor(r.floor_query, 2)
    );
    println!(
        "| TEMP of the {} matches (`read_many`, 8 at once) | {} | — | — |",
        r.matches,
        cell(&r.temp)
    );
    for (how, c) in [
        ("one after another", &r.unpruned),
        ("all at once", &r.unpruned_concurrent),
    ] {
        println!(
            "| same query, every member opened (`collections()`), then `select` on each, {how} | {} | {} of {} | {} |",
            cell(c),
            r.opened_unpruned,
            r.members,
            floor(r.floor_every, 2)
        );
    }
    println!(
        "| fresh handle: ragged layout of the six variables (open, each one's shapes, first dataset's layout) | {} | — | — |",
        cell(&r.ragged)
    );
    println!(
        "\nfloor: open — one GET of `set.manifest`; query — for each member holding a match, one GET \
         of its container's tail and one of each queried segment's footer (LATITUDE, LONGITUDE, JULD), \
         in that member's layout, the tails in one round trip and the footers in a second; every \
         member — the same for all {} members.",
        r.members
    );
}

/// The box query through the dataset indexes beside the same query on one
/// Parquet file of the same profiles.
fn print_parquet_peer(ours: &ReadSide, peer: &Cost, peer_size: u64) {
    let ratio = |a: f64, b: f64| {
        if b > 0.0 {
            format!("{:.2}×", a / b)
        } else {
            "—".into()
        }
    };
    println!(
        "\n### The same query, side by side with one Parquet file (arrow-rs)\n\n\
         The Parquet peer: the profiles' name, JULD, LATITUDE, LONGITUDE, platform_number and \
         cycle_number as one file ({}) written by arrow-rs in row groups of {} with page \
         statistics and the page index, queried by the `parquet` crate's async reader: row groups \
         and pages pruned by their statistics, the predicate pushed down as a row filter, only \
         `name` decoded for the matches. Ours: open the set, then `select` (members pruned by the \
         manifest, rows by each member's index).\n\n\
         | reader | cost (open + query) | ours / peer (time, bytes) |\n|---|---|---|",
        bytes(peer_size),
        crate::parquet_peer::ROWS_PER_GROUP,
    );
    let ours_wall = ours.open.wall + ours.pruned.wall;
    let ours_bytes = ours.open.io.bytes_read + ours.pruned.io.bytes_read;
    println!(
        "| ours, through the dataset indexes | {} + {} | {}, {} |",
        cell(&ours.open),
        cell(&ours.pruned),
        ratio(ours_wall.as_secs_f64(), peer.wall.as_secs_f64()),
        ratio(ours_bytes as f64, peer.io.bytes_read as f64),
    );
    println!("| Parquet, arrow-rs async reader | {} | |", cell(peer));
}

fn print_append(members: usize, rows: &[(&str, AppendCost)]) {
    println!(
        "\n## Adding one member to a set of {members} members: the commit alone\n\n\
         | store | GET | HEAD | PUT | other (list, delete, rename, dir) | bytes read | bytes written | wall | commit's own count (attempts) | guarantee |\n\
         |---|---|---|---|---|---|---|---|---|---|"
    );
    for (store, c) in rows {
        println!(
            "| {store} | {} | {} | {} | {} | {} | {} | {} | {} ({}) | {:?} |",
            c.io.reads,
            c.io.stats,
            c.io.writes,
            c.io.others,
            bytes(c.io.bytes_read),
            bytes(c.io.bytes_written),
            ms(c.wall),
            c.outcome.requests,
            c.outcome.attempts,
            c.outcome.guarantee,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn quick_uses_tiny_sizes_and_explicit_values_win() {
        let o = parse_options(&args(&["--quick"])).ok();
        assert_eq!(
            o.map(|o| (o.profiles, o.member_size, o.steps)),
            Some((3_000, 1_000, vec![1_000, 3_000]))
        );
        assert_eq!(
            parse_options(&args(&["--quick"]))
                .ok()
                .map(|o| o.append_members),
            Some(QUICK_APPEND_MEMBERS)
        );
        let o = parse_options(&args(&["--quick", "--member-size", "500"])).ok();
        assert_eq!(o.map(|o| o.member_size), Some(500));
        let o = parse_options(&args(&[])).ok();
        assert_eq!(
            o.map(|o| (o.profiles, o.member_size, o.steps)),
            Some((1_000_000, 100_000, vec![100_000, 300_000, 1_000_000]))
        );
    }

    #[test]
    fn steps_above_the_profile_count_are_dropped_and_steps_alone_set_it() {
        let o = parse_options(&args(&["--profiles", "300000"])).ok();
        assert_eq!(o.map(|o| o.steps), Some(vec![100_000, 300_000]));
        let o = parse_options(&args(&["--steps", "20,10,20"])).ok();
        assert_eq!(o.map(|o| (o.profiles, o.steps)), Some((20, vec![10, 20])));
        let o = parse_options(&args(&["--profiles", "50", "--steps", "100"])).ok();
        assert_eq!(o.map(|o| o.steps), Some(vec![50]));
    }

    #[test]
    fn zero_or_unreadable_sizes_and_unknown_flags_are_usage_errors() {
        for bad in [
            &["--member-size", "0"][..],
            &["--steps", "1000,x"],
            &["--profiles", "-3"],
            &["--steps"],
            &["--latency", "soon"],
            &["--members", "4"],
        ] {
            assert!(
                matches!(parse_options(&args(bad)), Err(BenchError::Usage(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_set_facts_line_parses_back_and_a_short_or_long_one_does_not() {
        let f = SetFacts {
            members: 10,
            manifest_bytes: 12_345,
            commit_requests: 3,
        };
        assert_eq!(SetFacts::parse(&f.line()), Some(f));
        assert_eq!(SetFacts::parse("10 12345"), None);
        assert_eq!(SetFacts::parse("10 12345 3 4"), None);
    }

    #[test]
    fn a_floats_profiles_stay_close_and_positions_stay_on_the_globe() {
        let (a, b) = (position(300), position(449));
        assert!((a.0 - b.0).abs() <= 3.0 && (a.0 - b.0).abs() > 0.0);
        assert_ne!(position(449), position(450));
        assert!(
            (0..5_000)
                .map(position)
                .all(|(lat, lon)| (-63.0..=63.0).contains(&lat) && (-180.0..180.0).contains(&lon))
        );
    }

    #[test]
    fn the_query_window_straddles_the_middle_boundary_and_its_matches_lie_in_the_box() {
        let q = BoxQuery::choose(3_000, 1_000);
        assert!(!q.expected.is_empty());
        assert!(q.expected.iter().all(|i| (750..1_250).contains(i)));
        for i in &q.expected {
            let (lat, lon) = position(*i);
            assert!(q.lat.0 <= lat && lat <= q.lat.1 && q.lon.0 <= lon && lon <= q.lon.1);
        }
        // The text parses, with the bounds it was built from.
        assert!(Predicate::parse(&q.text()).is_ok(), "{}", q.text());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_small_set_reads_back_the_query_with_and_without_pruning() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("set");
        let mut set = SetWriter::create(&dir, &WriterConfig::default())
            .await
            .expect("set writer");
        assert_eq!(add_members(&mut set, 0..600, 200, 0).await.ok(), Some(3));
        set.commit().await.expect("commit");
        let q = BoxQuery::choose(600, 200);
        let r = read_side(&dir, Simulation::default(), &q, 200, false)
            .await
            .expect("read side");
        assert_eq!((r.members, r.matches), (3, q.expected.len()));
        // The window lies in members 0 and 1 (150..250). The open reads the
        // manifest, and in the same round trip tries a lone container's tail
        // and mask at the root (absent): three requests, no member.
        assert_eq!(r.open.io.read_requests(), 3);
        assert_eq!(r.opened_unpruned, 3);
        assert!(r.with_matches <= 2);
        assert!(r.floor_query.0 < r.floor_every.0);
    }
}
