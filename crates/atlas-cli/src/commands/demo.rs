//! `atlas demo`: writes a realistic, deterministic sample collection of
//! Argo-like profiles, then prints what `info` prints.
//!
//! Each dataset is one profile named like `R6901234_001.nc` (platform, cycle):
//! `PRES`, `TEMP`, `PSAL` as f32 along `N_LEVELS` (20–120 levels, fill 99999.0,
//! a few missing values, and in some profiles the deepest salinities never
//! written), `JULD` as a timestamp and `LATITUDE`/`LONGITUDE` as f64 along
//! `N_PROF`, with platform attributes and per-array `units`/`long_name`.
//! Several datasets are written at the same time, each by its own `DatasetWriter`.

use std::time::Instant;

use atlas::{AtlasWriter, Attr, DatasetWriter, Timestamp, WriterConfig};
use futures::StreamExt;
use ndarray::{Array1, ArrayD};

use super::{Ctx, info, open_at};
use crate::cli::DemoArgs;
use crate::exit::{CliError, CliResult, Context as _};
use crate::location::Access;
use crate::{progress, render};

/// Argo's fill value for the physical parameters.
pub const FILL: f32 = 99999.0;
/// Cycles per float before the next float starts.
const CYCLES_PER_PLATFORM: usize = 50;
/// WMO numbers the floats count up from; the first profile is `R6901234_001.nc`.
const WMO_BASES: [u32; 7] = [
    6_901_234, 3_902_117, 5_904_682, 2_902_755, 4_903_190, 1_901_520, 7_900_631,
];
const DATA_CENTRES: [&str; 7] = ["IF", "AO", "BO", "CS", "JA", "KO", "IN"];
/// 2019-01-01T00:00:00Z in nanoseconds.
const EPOCH_2019_NS: i64 = 1_546_300_800_000_000_000;
const DAY_NS: i64 = 86_400_000_000_000;

/// A tiny deterministic generator (64-bit LCG, Knuth's constants; high bits out).
#[derive(Debug, Clone)]
pub struct Lcg(u64);

impl Lcg {
    /// A generator for `seed`, stream `stream`.
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut g = Lcg(seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        g.next_u64();
        g
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// Uniform integer in [lo, hi].
    pub fn int(&mut self, lo: u64, hi: u64) -> u64 {
        lo + (self.next_u64() >> 33) % (hi - lo + 1)
    }
}

/// One float: where and when it started, and who operates it.
struct Platform {
    wmo: u32,
    lat: f64,
    lon: f64,
    launch_ns: i64,
    centre: &'static str,
}

#[allow(
    clippy::indexing_slicing,
    reason = "both indices are reduced into the range of a non-empty constant table"
)]
fn platform(seed: u64, p: usize) -> Platform {
    let mut g = Lcg::new(seed, p as u64);
    Platform {
        wmo: WMO_BASES[p % WMO_BASES.len()] + (p / WMO_BASES.len()) as u32 * 13,
        lat: g.range(-60.0, 60.0),
        lon: g.range(-180.0, 180.0),
        launch_ns: EPOCH_2019_NS + g.int(0, 730) as i64 * DAY_NS,
        centre: DATA_CENTRES[g.int(0, DATA_CENTRES.len() as u64 - 1) as usize],
    }
}

/// One profile, ready to write.
pub struct Profile {
    /// `R<wmo>_<cycle>.nc`.
    pub name: String,
    wmo: u32,
    cycle: u32,
    centre: &'static str,
    juld_ns: i64,
    lat: f64,
    lon: f64,
    pres: Vec<f32>,
    temp: Vec<f32>,
    psal: Vec<f32>,
    /// Salinity levels written; the rest stay unwritten (read back as fill).
    psal_written: usize,
}

/// Profile `i` of the collection for `seed`: the same inputs give the same profile.
pub fn profile(seed: u64, i: usize) -> Profile {
    let p = i / CYCLES_PER_PLATFORM;
    let cycle = (i % CYCLES_PER_PLATFORM + 1) as u32;
    let float = platform(seed, p);
    // The float drifts: replay its track up to this cycle.
    let mut track = Lcg::new(seed ^ 0xD81F, p as u64);
    let (mut lat, mut lon) = (float.lat, float.lon);
    for _ in 1..cycle {
        lat = (lat + track.range(-0.15, 0.15)).clamp(-70.0, 70.0);
        lon += track.range(-0.25, 0.25);
    }
    let lon = (lon + 180.0).rem_euclid(360.0) - 180.0;

    let mut g = Lcg::new(seed ^ 0x5EED, i as u64);
    let levels = g.int(20, 120) as usize;
    let max_pres = g.range(1000.0, 2000.0);
    let surface = (28.0 - 0.38 * lat.abs() + g.range(-1.0, 1.0)).max(-1.5);
    let deep = 2.0 + g.range(-0.5, 0.5);
    let fresh = g.range(-0.6, 0.4);
    let mut pres = Vec::with_capacity(levels);
    let mut temp = Vec::with_capacity(levels);
    let mut psal = Vec::with_capacity(levels);
    for k in 0..levels {
        let x = k as f64 / (levels - 1) as f64;
        let mut p = 5.0 + (max_pres - 5.0) * x.powf(1.6) + g.range(0.0, 0.9);
        if let Some(&prev) = pres.last() {
            // Strictly deeper than the level above.
            p = p.max(f64::from(prev) + 1.0);
        }
        let t = deep + (surface - deep) * (-p / 450.0).exp() + g.range(-0.05, 0.05);
        let s = 34.7 + fresh * (-p / 300.0).exp() + g.range(-0.01, 0.01);
        pres.push(round(p, 1));
        temp.push(if g.unit() < 0.02 { FILL } else { round(t, 3) });
        psal.push(if g.unit() < 0.03 { FILL } else { round(s, 3) });
    }
    // One profile in twenty lost the deepest salinities: those levels are never written.
    let psal_written = if g.unit() < 0.05 {
        levels - levels.min(10)
    } else {
        levels
    };
    Profile {
        name: format!("R{}_{:03}.nc", float.wmo, cycle),
        wmo: float.wmo,
        cycle,
        centre: float.centre,
        juld_ns: float.launch_ns
            + i64::from(cycle) * 10 * DAY_NS
            + g.int(0, 86_399) as i64 * 1_000_000_000,
        lat: round64(lat, 4),
        lon: round64(lon, 4),
        pres,
        temp,
        psal,
        psal_written,
    }
}

fn round(v: f64, digits: i32) -> f32 {
    round64(v, digits) as f32
}

fn round64(v: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (v * scale).round() / scale
}

fn column<T: Clone>(values: &[T]) -> ArrayD<T> {
    Array1::from(values.to_vec()).into_dyn()
}

/// Declares, fills and annotates one profile's dataset.
async fn write_profile(mut ds: DatasetWriter, p: Profile) -> atlas::Result<()> {
    let n = p.pres.len() as u64;
    let levels: &[&str] = &["N_LEVELS"];
    let prof: &[&str] = &["N_PROF"];
    for (name, values, written, units, long_name, standard) in [
        (
            "PRES",
            &p.pres,
            p.pres.len(),
            "decibar",
            "Sea water pressure, equals 0 at sea-level",
            "sea_water_pressure",
        ),
        (
            "TEMP",
            &p.temp,
            p.temp.len(),
            "degree_Celsius",
            "Sea temperature in-situ ITS-90 scale",
            "sea_water_temperature",
        ),
        (
            "PSAL",
            &p.psal,
            p.psal_written,
            "psu",
            "Practical salinity",
            "sea_water_salinity",
        ),
    ] {
        ds.define_array::<f32>(name, levels, &[n], None, Some(FILL))?;
        let head = Array1::from_iter(values.iter().take(written).copied()).into_dyn();
        ds.write_array::<f32>(name, &[0], head.view())?;
        ds.set_array_attribute(name, "units", units)?;
        ds.set_array_attribute(name, "long_name", long_name)?;
        ds.set_array_attribute(name, "standard_name", standard)?;
    }

    ds.define_array::<Timestamp>("JULD", prof, &[1], None, None)?;
    ds.write_array::<Timestamp>("JULD", &[0], column(&[Timestamp(p.juld_ns)]).view())?;
    ds.set_array_attribute("JULD", "units", "nanoseconds since 1970-01-01T00:00:00Z")?;
    ds.set_array_attribute("JULD", "long_name", "Julian day (UTC) of the station")?;

    for (name, value, units, long_name) in [
        (
            "LATITUDE",
            p.lat,
            "degree_north",
            "Latitude of the station, best estimate",
        ),
        (
            "LONGITUDE",
            p.lon,
            "degree_east",
            "Longitude of the station, best estimate",
        ),
    ] {
        ds.define_array::<f64>(name, prof, &[1], None, Some(f64::from(FILL)))?;
        ds.write_array::<f64>(name, &[0], column(&[value]).view())?;
        ds.set_array_attribute(name, "units", units)?;
        ds.set_array_attribute(name, "long_name", long_name)?;
    }

    ds.set_attribute("platform_number", p.wmo.to_string())?;
    ds.set_attribute("cycle_number", Attr::Int32(p.cycle as i32))?;
    ds.set_attribute("data_centre", p.centre)?;
    ds.set_attribute("project_name", "Atlas demo (synthetic Argo)")?;
    ds.set_attribute("data_mode", "R")?;
    ds.set_attribute("direction", "A")?;
    ds.finish().await
}

/// Runs `atlas demo`.
pub async fn run(ctx: &Ctx, args: &DemoArgs) -> CliResult {
    let loc = ctx.locate(&args.dir, Access::Write).await?;
    super::rewrite::refuse_existing(&loc).await?;
    let started = Instant::now();
    let writer = AtlasWriter::create(&loc, &WriterConfig::default())
        .await
        .at(loc.display())?;

    let bar = progress::bar(args.count as u64, "demo", ctx.quiet);
    let seed = args.seed;
    let writer_ref = &writer;
    let mut writes = futures::stream::iter(0..args.count)
        .map(|i| {
            // Datasets are added in profile order, so ordinals follow it.
            let p = profile(seed, i);
            let ds = writer_ref.add_dataset(&p.name);
            async move { write_profile(ds?, p).await }
        })
        .buffer_unordered(usize::from(args.writers));
    let mut first_error = None;
    while let Some(result) = writes.next().await {
        if let Err(e) = result {
            first_error.get_or_insert(e);
        }
        bar.inc(1);
    }
    drop(writes);
    bar.finish_and_clear();
    if let Some(e) = first_error {
        return Err(e).at(loc.display());
    }
    let summary = writer.finish().await.at(loc.display())?;
    if !ctx.quiet && !ctx.json {
        eprintln!(
            "wrote {} profiles to {} in {:.2?} ({})",
            summary.datasets,
            loc.display(),
            started.elapsed(),
            render::bytes(summary.container_bytes)
        );
    }

    let atlas = open_at(&loc).await?;
    let member = atlas
        .lone_member()
        .ok_or_else(|| CliError::msg(format!("{}: not a lone collection", loc.display())))?;
    if member.dataset_count() != args.count {
        return Err(CliError::msg(format!(
            "{}: wrote {} profiles but the collection holds {}",
            loc.display(),
            args.count,
            member.dataset_count()
        )));
    }
    info::print(ctx, &loc, &atlas, &member).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_profile_is_r6901234_001() {
        assert_eq!(profile(6_901_234, 0).name, "R6901234_001.nc");
        assert_eq!(profile(6_901_234, 49).name, "R6901234_050.nc");
        assert_eq!(profile(6_901_234, 50).name, "R3902117_001.nc");
    }

    #[test]
    fn the_same_seed_gives_the_same_profile() {
        let (a, b) = (profile(7, 123), profile(7, 123));
        assert_eq!(a.name, b.name);
        assert_eq!(a.temp, b.temp);
        assert_eq!(a.juld_ns, b.juld_ns);
        assert_ne!(profile(8, 123).temp, a.temp);
    }

    #[test]
    fn profiles_have_20_to_120_levels_and_increasing_pressure() {
        for i in 0..300 {
            let p = profile(1, i);
            assert!((20..=120).contains(&p.pres.len()), "{}", p.pres.len());
            assert!(p.pres.windows(2).all(|w| w[0] < w[1]), "{}", p.name);
            assert_eq!(p.temp.len(), p.pres.len());
            assert!(p.psal_written <= p.psal.len());
        }
    }

    #[test]
    fn some_values_are_missing() {
        let missing: usize = (0..200)
            .map(|i| profile(1, i).temp.iter().filter(|&&t| t == FILL).count())
            .sum();
        assert!(missing > 0);
    }

    #[test]
    fn names_are_unique_across_many_floats() {
        let names: std::collections::HashSet<_> =
            (0..20_000).step_by(7).map(|i| profile(1, i).name).collect();
        assert_eq!(names.len(), (0..20_000).step_by(7).count());
    }
}
