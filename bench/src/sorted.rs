//! `atlas-bench sets --sorted`: what a sorted compaction buys a box-and-month
//! query.
//!
//! A set of `--profiles` profiles is written in float order (each float's
//! 150 cycles together, ten days apart, so every member holds floats from
//! all over the globe over the whole four years), members of at most
//! `--member-size`. A box around one float and one month (30 days) in the
//! middle of the time range is then asked on the simulated store, before and
//! after `compact --sort-by` with each key: the time (`JULD`), a Hilbert curve
//! over latitude and longitude, and one over latitude, longitude and time.
//! Each compaction starts from the float-ordered set again and is timed on
//! local disk (no simulated store).

use std::path::Path;
use std::time::Instant;

use atlas::{
    Atlas, AtlasWriter, CompactOptions, DatasetWriter, OpenOptions, Predicate, SetWriter, SortKey,
    WriterConfig, member_id,
};

use crate::error::{BenchError, Result};
use crate::measure::{Cost, measure};
use crate::meter::{Meter, MeterLayer};
use crate::report::{bytes, ms};
use crate::sets::{SetsOptions, position};
use crate::{runtime, workload};

/// Cycles per float (as the workload numbers them).
const CYCLES: usize = 150;

/// Days between a float's cycles.
const CYCLE_DAYS: f64 = 10.0;

/// First time of the set (days since 1950).
const T0: f64 = 25_000.0;

/// The time of profile `i`: its cycle, ten days apart, plus a day offset per
/// float (floats start on different days).
fn juld(i: usize) -> f64 {
    T0 + CYCLE_DAYS * (i % CYCLES) as f64 + ((i / CYCLES) % 10) as f64
}

/// Adds profile `i` (the workload's arrays, this bench's time and position).
fn add_profile(w: &AtlasWriter, i: usize) -> Result<DatasetWriter> {
    let mut p = workload::profile(i);
    p.juld = juld(i);
    let mut d = crate::ours::write_profile(w, p)?;
    let (lat, lon) = position(i);
    for (name, v) in [("LATITUDE", lat), ("LONGITUDE", lon)] {
        d.define_array::<f64>(name, &["N_PROF"], &[1], None, None)?;
        d.write_array(name, &[0], ndarray::arr1(&[v]).into_dyn().view())?;
    }
    Ok(d)
}

/// Writes `total` profiles in float order as members of `member_size`.
async fn write_set(dir: &Path, total: usize, member_size: usize) -> Result<()> {
    let mut set = SetWriter::create(dir, &WriterConfig::default()).await?;
    let mut start = 0;
    let mut k = 0u64;
    while start < total {
        let end = (start + member_size.max(1)).min(total);
        let member = set
            .add_member(&member_id(1_700_000_000_000 + k as i64, k))
            .await?;
        for i in start..end {
            add_profile(member.writer(), i)?.finish().await?;
        }
        set.finish_member(member).await?;
        start = end;
        k += 1;
    }
    set.commit().await?;
    Ok(())
}

/// The box-and-month query: a box of 4° by 8° around the middle float's
/// middle cycle, and the 30 days from that cycle's time on.
struct Query {
    text: String,
    expected: Vec<String>,
    /// Per variable: the bounds asked for.
    bounds: [(&'static str, f64, f64); 3],
}

impl Query {
    /// Members whose manifest summaries overlap every bound of the query
    /// (a member without bounds of a variable is kept).
    fn candidates(&self, members: &[atlas::MemberEntry]) -> usize {
        let float = |v: &Option<atlas::Value>| match v {
            Some(atlas::Value::Float(x)) => Some(*x),
            _ => None,
        };
        members
            .iter()
            .filter(|m| {
                self.bounds.iter().all(|(name, lo, hi)| {
                    let Some(v) = m.variables.iter().find(|v| v.name == *name) else {
                        return false;
                    };
                    match (float(&v.min), float(&v.max)) {
                        (Some(min), Some(max)) => min <= *hi && *lo <= max,
                        _ => true,
                    }
                })
            })
            .count()
    }
}

fn choose_query(total: usize) -> Query {
    let floats = total.div_ceil(CYCLES).max(1);
    let centre = (floats / 2) * CYCLES + CYCLES / 2;
    let centre = centre.min(total.saturating_sub(1));
    let (lat, lon) = position(centre);
    let (lat0, lat1, lon0, lon1) = (lat - 2.0, lat + 2.0, lon - 4.0, lon + 4.0);
    let (t0, t1) = (juld(centre), juld(centre) + 30.0);
    let mut expected: Vec<String> = (0..total)
        .filter(|&i| {
            let (a, o) = position(i);
            let t = juld(i);
            lat0 <= a && a <= lat1 && lon0 <= o && o <= lon1 && t0 <= t && t <= t1
        })
        .map(|i| workload::profile(i).name)
        .collect();
    expected.sort();
    Query {
        text: format!(
            "LATITUDE between {lat0} {lat1} and LONGITUDE between {lon0} {lon1} and JULD between {t0} {t1}"
        ),
        expected,
        bounds: [
            ("LATITUDE", lat0, lat1),
            ("LONGITUDE", lon0, lon1),
            ("JULD", t0, t1),
        ],
    }
}

/// One query's cost on the simulated store.
struct Asked {
    members: usize,
    /// Members the summaries keep.
    candidates: usize,
    opened: usize,
    cost: Cost,
}

async fn ask(dir: &Path, o: &SetsOptions, query: &Query) -> Result<Asked> {
    let meter = Meter::new(o.sim);
    let op = atlas::Operator::new(opendal::services::Fs::default().root(&dir.to_string_lossy()))?
        .layer(MeterLayer::new(meter.clone()));
    let predicate = Predicate::parse(&query.text)
        .map_err(|e| BenchError::Usage(format!("the bench's query does not parse: {e}")))?;
    let (set, opened_cost) = measure(&meter, async {
        Ok(Atlas::open((op.clone(), ""), &OpenOptions::default()).await?)
    })
    .await?;
    let (mut names, mut cost) =
        measure(&meter, async { Ok(set.select(&predicate).await?) }).await?;
    let timeline = meter.timeline();
    if !timeline.is_empty() {
        eprintln!("trace select: requests (ms) {timeline}");
    }
    names.sort();
    if names != query.expected {
        return Err(BenchError::Mismatch(format!(
            "the query selected {} datasets, the generator says {}",
            names.len(),
            query.expected.len()
        )));
    }
    // The open is part of what a reader pays.
    cost.wall += opened_cost.wall;
    cost.io.reads += opened_cost.io.reads;
    cost.io.stats += opened_cost.io.stats;
    cost.io.bytes_read += opened_cost.io.bytes_read;
    Ok(Asked {
        members: set.members().len(),
        candidates: query.candidates(&set.members()),
        opened: set.members_opened(),
        cost,
    })
}

/// Copies the float-ordered set at `from` to `to` (a fresh folder).
fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    if to.exists() {
        std::fs::remove_dir_all(to)?;
    }
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// Runs the sorted-compaction bench.
pub fn run(o: &SetsOptions) -> Result {
    std::fs::create_dir_all(&o.work)?;
    let work = o.work.canonicalize()?.join("sets-sorted");
    if work.exists() {
        std::fs::remove_dir_all(&work)?;
    }
    std::fs::create_dir_all(&work)?;
    let total = o.profiles;
    let rt = runtime()?;
    let base = work.join("float-order");
    eprintln!("writing {total} profiles in float order");
    let start = Instant::now();
    rt.block_on(write_set(&base, total, o.member_size))?;
    let write_secs = start.elapsed().as_secs_f64();
    let query = choose_query(total);
    eprintln!(
        "  {write_secs:.1} s; query {} ({} matches)",
        query.text,
        query.expected.len()
    );

    let mut rows = vec![(
        "float order (as ingested)".to_owned(),
        None,
        rt.block_on(ask(&base, o, &query))?,
    )];
    let keys: Vec<&str> = if o.sort_keys.is_empty() {
        vec![
            "JULD",
            "hilbert:LATITUDE:LONGITUDE",
            "hilbert:LATITUDE:LONGITUDE:JULD",
        ]
    } else {
        o.sort_keys.iter().map(String::as_str).collect()
    };
    for key in keys {
        let dir = work.join("sorted");
        copy_dir(&base, &dir)?;
        eprintln!("compact --sort-by {key}");
        let keys = SortKey::parse_list(key)?;
        let start = Instant::now();
        let outcome = rt.block_on(async {
            let set = Atlas::open(&dir, &OpenOptions::default()).await?;
            set.compact(
                &CompactOptions::default()
                    .target_datasets(o.member_size as u64)
                    .ids(1_800_000_000_000, 0)
                    .sort_by(keys),
            )
            .await
        })?;
        let secs = start.elapsed().as_secs_f64();
        let outcome = outcome
            .ok_or_else(|| BenchError::Mismatch("the sorted compaction did nothing".into()))?;
        // Nobody reads the old generation here: its members go now.
        for id in &outcome.replaced {
            std::fs::remove_dir_all(dir.join(atlas::member_path(id)))?;
        }
        eprintln!("  {secs:.1} s");
        let asked = rt.block_on(ask(&dir, o, &query))?;
        // Each row as it lands too: a later failure leaves the earlier ones.
        eprintln!(
            "  {} members, {} kept, {} opened, {} requests, {}, {}",
            asked.members,
            asked.candidates,
            asked.opened,
            asked.cost.io.reads + asked.cost.io.stats,
            bytes(asked.cost.io.bytes_read),
            ms(asked.cost.wall)
        );
        rows.push((format!("--sort-by {key}"), Some(secs), asked));
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::remove_dir_all(&work)?;

    println!(
        "\n## A box-and-month query before and after a sorted compaction\n\n\
         {total} profiles written in float order (members of at most {} profiles, each \
         float's 150 cycles ten days apart); the query `{}` selects {} profiles. Open + \
         select on a simulated store ({} latency{}); the compaction on local disk.\n\n\
         \"kept\": members whose summaries overlap the query; \"opened\": those plus the \
         newer members whose name ranges overlap theirs (opened to resolve names).\n\n\
         | set order | compaction | members | kept | opened | requests | bytes | query time |\n\
         |---|---|---|---|---|---|---|---|",
        o.member_size,
        query.text,
        query.expected.len(),
        ms(o.sim.latency),
        o.sim
            .bandwidth
            .map(|b| format!(", {:.0} MB/s", b / 1e6))
            .unwrap_or_default(),
    );
    for (label, secs, a) in rows {
        println!(
            "| {label} | {} | {} | {} | {} | {} | {} | {} |",
            secs.map(|s| format!("{s:.1} s"))
                .unwrap_or_else(|| "–".into()),
            a.members,
            a.candidates,
            a.opened,
            a.cost.io.reads + a.cost.io.stats,
            bytes(a.cost.io.bytes_read),
            ms(a.cost.wall),
        );
    }
    Ok(())
}
