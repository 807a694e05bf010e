//! `atlas-bench reads DIR [--latency 20ms] [--bandwidth 100MB/s] [--rounds N]`:
//! our read steps alone, on a collection already written (e.g.
//! `WORK/ours-profiles-1` of a full run), each step's median round printed
//! as wall time, requests, bytes and round trips. For profiling one change
//! to the read path without writing the collections again; with
//! `ATLAS_BENCH_TRACE` set, every request of every step is printed too.

use std::path::PathBuf;

use crate::error::{BenchError, Result};
use crate::measure::median_costs;
use crate::meter::{Meter, Simulation};
use crate::{Split, ours, parse_bandwidth, parse_duration};

/// Runs the read steps as `args` say and prints them.
pub fn run(args: &[String]) -> Result {
    let usage = || BenchError::Usage("reads DIR [--latency D] [--bandwidth B] [--rounds N]".into());
    let mut args = args.iter();
    let dir = PathBuf::from(args.next().ok_or_else(usage)?);
    let mut sim = Simulation::default();
    let mut rounds = 3usize;
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(usage)?;
        match flag.as_str() {
            "--latency" => sim.latency = parse_duration(value)?,
            "--bandwidth" => sim.bandwidth = Some(parse_bandwidth(value)?),
            "--rounds" => rounds = value.parse().map_err(|_| usage())?,
            _ => return Err(usage()),
        }
    }
    let options = Split::Auto.options(sim, atlas::ReadParallelism::default().min_part_size);
    let rt = crate::runtime()?;
    let mut runs = Vec::new();
    for _ in 0..rounds.max(1) {
        let meter = Meter::new(sim);
        let (op, counting) = ours::operator(&dir, &meter)?;
        runs.push(rt.block_on(ours::read_steps(&op, &meter, &counting, &options))?);
    }
    for (step, cost) in median_costs(&runs) {
        println!(
            "{:<58} {:>9.2} ms · {:>3} req · {:>10} B · {} rt",
            step.label(),
            cost.wall.as_secs_f64() * 1e3,
            cost.io.read_requests(),
            cost.io.bytes_read,
            cost.io.waves
        );
    }
    Ok(())
}
