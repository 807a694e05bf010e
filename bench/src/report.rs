//! The tables `atlas-bench` prints (Markdown, so a run pastes into
//! `docs/performance.md`), and the physical floor of each read step.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::Duration;

use atlas::Atlas;
use serde_json::{Value, json};

use crate::Impl;
use crate::error::{BenchError, Result};
use crate::measure::{Cost, Costs, Step, probe_index};
use crate::meter::{Reading, Simulation};
use crate::workload;

/// One write, measured in its own process.
#[derive(Debug, Clone)]
pub struct WriteRow {
    /// Who wrote.
    pub imp: Impl,
    /// What was written.
    pub what: String,
    /// Wall time of the child's write.
    pub secs: f64,
    /// The child's peak RSS.
    pub rss_kib: u64,
    /// Bytes on disk afterwards.
    pub bytes: u64,
}

/// Opening the collection of tiny datasets.
#[derive(Debug, Clone)]
pub struct TinyRow {
    /// Who opened.
    pub imp: Impl,
    /// Median wall time of an open.
    pub median: Duration,
    /// What one open cost in I/O.
    pub io: Reading,
}

/// The least any reader of a v8 container must fetch for each step: requests
/// and bytes, from the layout of this Atlas's collection.
#[derive(Debug, Clone, Default)]
pub struct Floors {
    rows: Vec<(Step, u64, u64)>,
}

/// Bytes of array-format's trailer at the end of a segment (footer size + `ARRF`).
const ARRF_TRAILER: u64 = 12;

/// The size of the array-format footer (trailer included) of the segment at
/// `offset .. offset + len` of `file`.
pub(crate) fn segment_footer(file: &mut std::fs::File, offset: u64, len: u64) -> Result<u64> {
    let end = offset
        .checked_add(len)
        .filter(|e| *e >= offset + ARRF_TRAILER)
        .ok_or_else(|| BenchError::Mismatch("segment shorter than its trailer".into()))?;
    file.seek(SeekFrom::Start(end - ARRF_TRAILER))?;
    let mut t = [0u8; 12];
    file.read_exact(&mut t)?;
    let mut size = [0u8; 8];
    size.copy_from_slice(&t[..8]);
    Ok(u64::from_le_bytes(size)
        .saturating_add(ARRF_TRAILER)
        .min(len))
}

impl Floors {
    /// The floors of the collection of `profiles` profiles at `dir`.
    pub async fn of(dir: &Path, profiles: usize) -> Result<Self> {
        let atlas = Atlas::open(dir, &atlas::OpenOptions::default())
            .await?
            .lone_member()
            .ok_or_else(|| BenchError::Mismatch("the bench collection is a set".into()))?;
        let mut file = std::fs::File::open(dir.join(atlas::CONTAINER_FILE))?;
        let vars = atlas.segments();
        let seg = |name: &str| {
            vars.iter()
                .find(|v| v.name == name)
                .map(|v| (v.offset, v.len))
                .ok_or_else(|| BenchError::Mismatch(format!("no segment {name}")))
        };
        let mut footer = |name: &str| -> Result<u64> {
            let (o, l) = seg(name)?;
            segment_footer(&mut file, o, l)
        };
        let open = atlas.footer_bytes() + atlas_format::TRAILER_LEN;
        let one = workload::levels(probe_index(profiles)) as u64 * 4;
        let rows = vec![
            (Step::Open, 1, open),
            (Step::Catalogue, 0, 0),
            (Step::Stats, 1, footer("TEMP")?),
            (Step::StatsByDataset, 1, footer("PSAL")?),
            (Step::AttrsByDataset, 1, seg(atlas::DATASETS_SEGMENT)?.1),
            (Step::ArrayAttrsByDataset, 1, footer("JULD")?),
            // The segment footer came with the statistics step: the blocks remain.
            (
                Step::Sweep,
                1,
                seg("TEMP")?.1.saturating_sub(footer("TEMP")?),
            ),
            (Step::OneFirst, 2, footer("PRES")? + one),
            (Step::OneWarm, 0, 0),
            (Step::OneCold, 3, open + footer("PSAL")? + one),
            // A reader that knew nothing could read the whole segment at once.
            (Step::Many, 2, open + seg("TEMP")?.1),
        ];
        Ok(Self { rows })
    }

    /// The floor of `step`: requests and bytes.
    pub fn get(&self, step: Step) -> Option<(u64, u64)> {
        self.rows
            .iter()
            .find(|(s, _, _)| *s == step)
            .map(|(_, r, b)| (*r, *b))
    }
}

/// `n` bytes, in B, kB or MB.
pub(crate) fn bytes(n: u64) -> String {
    if n >= 1_000_000 {
        format!("{:.2} MB", n as f64 / 1e6)
    } else if n >= 1_000 {
        format!("{:.1} kB", n as f64 / 1e3)
    } else {
        format!("{n} B")
    }
}

/// `d` in milliseconds, to three significant digits.
pub(crate) fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else if ms >= 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.2} ms")
    }
}

/// One table cell: time · requests · bytes · round trips.
pub(crate) fn cell(c: &Cost) -> String {
    format!(
        "{} · {} req · {} · {} rt",
        ms(c.wall),
        c.io.read_requests(),
        bytes(c.io.bytes_read),
        c.io.waves
    )
}

/// Parts of one read a reader keeps in flight, for the floor's aggregate
/// bandwidth: the concurrency of this Atlas's default split reads (16).
pub(crate) const FLOOR_CONCURRENCY: u64 = atlas_io::read::DEFAULT_MAX_CONCURRENCY as u64;

/// The least time `requests` dependent requests for `bytes` take on `sim`
/// when each request's bytes arrive over [`FLOOR_CONCURRENCY`] connections
/// at once: one latency per request, plus the bytes at the aggregate
/// bandwidth (per-request bandwidth × [`FLOOR_CONCURRENCY`]).
fn floor_time(sim: Simulation, requests: u64, bytes: u64) -> Duration {
    let rounds = u32::try_from(requests).unwrap_or(u32::MAX);
    sim.latency.saturating_mul(rounds) + sim.transfer(bytes.div_ceil(FLOOR_CONCURRENCY))
}

/// [`floor_time`] with every request one stream (the floor before split reads).
fn floor_time_single(sim: Simulation, requests: u64, bytes: u64) -> Duration {
    let rounds = u32::try_from(requests).unwrap_or(u32::MAX);
    sim.latency.saturating_mul(rounds) + sim.transfer(bytes)
}

/// A step's floor: requests, bytes, and on a simulated store the times.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FloorCell {
    /// Dependent requests.
    pub requests: u64,
    /// Bytes.
    pub bytes: u64,
    /// [`floor_time`], on a simulated store.
    pub time: Option<Duration>,
    /// [`floor_time_single`], on a simulated store.
    pub time_single: Option<Duration>,
}

/// One row of a read table: a step, each implementation's cost, the floor.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadRow {
    /// The step.
    pub step: Step,
    /// Each implementation's cost, in column order (`None`: it has no such step).
    pub cells: Vec<(Impl, Option<Cost>)>,
    /// The floor of the step.
    pub floor: Option<FloorCell>,
}

/// The rows of one store's read table: the one source of its figures, for
/// the printed table and the JSON alike.
pub fn read_rows(sim: Simulation, columns: &[(Impl, Costs)], floors: &Floors) -> Vec<ReadRow> {
    let find = |costs: &Costs, step: Step| costs.iter().find(|(s, _)| *s == step).map(|(_, c)| *c);
    Step::ALL
        .iter()
        .map(|&step| ReadRow {
            step,
            cells: columns
                .iter()
                .map(|(imp, costs)| (*imp, find(costs, step)))
                .collect(),
            floor: floors.get(step).map(|(requests, bytes)| FloorCell {
                requests,
                bytes,
                time: sim.is_active().then(|| floor_time(sim, requests, bytes)),
                time_single: sim
                    .is_active()
                    .then(|| floor_time_single(sim, requests, bytes)),
            }),
        })
        .collect()
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}×", a / b)
    } else {
        "—".into()
    }
}

/// The read table of one store.
pub fn print_reads(store: &str, sim: Simulation, rows: &[ReadRow]) {
    let how = if sim.is_active() {
        format!(
            ", {} ms per request{}",
            sim.latency.as_secs_f64() * 1e3,
            sim.bandwidth
                .map(|b| format!(", {:.0} MB/s", b / 1e6))
                .unwrap_or_default()
        )
    } else {
        String::new()
    };
    println!("\n## Reads: {store}{how}\n");
    println!(
        "Each cell: wall time (the median round of `--rounds`) · requests (GET + HEAD) · bytes read · round trips on the critical path.\n"
    );
    let columns: Vec<Impl> = rows
        .first()
        .map(|r| r.cells.iter().map(|(i, _)| *i).collect())
        .unwrap_or_default();
    let mut head = "| step |".to_string();
    let mut rule = "|---|".to_string();
    for imp in &columns {
        head += &format!(" {} |", imp.label());
        rule += "---|";
    }
    let others: Vec<Impl> = columns
        .iter()
        .copied()
        .filter(|i| *i != Impl::Ours)
        .collect();
    for other in &others {
        head += &format!(" ours / {} (time, bytes) |", other.label());
        rule += "---|";
    }
    head += " floor (req, bytes) |";
    rule += "---|";
    println!("{head}\n{rule}");
    for row in rows {
        let find = |imp: Impl| {
            row.cells
                .iter()
                .find(|(i, _)| *i == imp)
                .and_then(|(_, c)| *c)
        };
        let mut line = format!("| {} |", row.step.label());
        for (_, cost) in &row.cells {
            line += &match cost {
                Some(c) => format!(" {} |", cell(c)),
                None => " — |".into(),
            };
        }
        for other in &others {
            line += &match (find(Impl::Ours), find(*other)) {
                (Some(a), Some(b)) => format!(
                    " {}, {} |",
                    ratio(a.wall.as_secs_f64(), b.wall.as_secs_f64()),
                    ratio(a.io.bytes_read as f64, b.io.bytes_read as f64)
                ),
                _ => " — |".into(),
            };
        }
        line += &match row.floor {
            Some(FloorCell {
                requests,
                bytes: b,
                time: Some(t),
                ..
            }) => format!(" {requests}, {} ≈ {} |", bytes(b), ms(t)),
            Some(f) => format!(" {}, {} |", f.requests, bytes(f.bytes)),
            None => " — |".into(),
        };
        println!("{line}");
    }
}

/// The write table.
pub fn print_writes(writes: &[WriteRow], tiny: &[WriteRow]) {
    println!("\n## Writes (each in its own process; RSS = peak resident set, VmHWM)\n");
    println!(
        "| write | implementation | wall time | peak RSS | bytes on disk | ours / atlas-rust (time, RSS) |"
    );
    println!("|---|---|---|---|---|---|");
    for w in writes.iter().chain(tiny) {
        let peer = writes
            .iter()
            .chain(tiny)
            .find(|p| p.imp == Impl::Peer && p.what == w.what);
        let vs = match (w.imp, peer) {
            (Impl::Ours, Some(p)) => format!(
                "{}, {}",
                ratio(w.secs, p.secs),
                ratio(w.rss_kib as f64, p.rss_kib as f64)
            ),
            _ => String::new(),
        };
        println!(
            "| {} | {} | {:.2} s | {:.0} MB | {} | {vs} |",
            w.what,
            w.imp.label(),
            w.secs,
            w.rss_kib as f64 / 1024.0,
            bytes(w.bytes),
        );
    }
}

/// The tiny-dataset table of one store.
pub fn print_tiny(store: &str, n: usize, opens: usize, rows: &[TinyRow], writes: &[WriteRow]) {
    println!("\n## {n} one-element datasets: {store}\n");
    println!("| implementation | write | open (median of {opens}) | one open's I/O |");
    println!("|---|---|---|---|");
    for r in rows {
        let write = writes
            .iter()
            .find(|w| w.imp == r.imp)
            .map(|w| format!("{:.2} s", w.secs))
            .unwrap_or_default();
        println!(
            "| {} | {write} | {} | {} req · {} · {} rt |",
            r.imp.label(),
            ms(r.median),
            r.io.read_requests(),
            bytes(r.io.bytes_read),
            r.io.waves
        );
    }
}

/// Everything one side-by-side run printed, kept for `--json FILE`: the
/// same rows the tables are printed from.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Profiles written and read.
    pub profiles: usize,
    /// Tiny datasets written.
    pub tiny: usize,
    /// Cores the run saw.
    pub cores: usize,
    /// Whether this was a `--quick` run.
    pub quick: bool,
    /// Rounds of read steps per implementation; each step is its median round.
    pub rounds: usize,
    /// The cross-read checks: what, datasets read, whether values were equal.
    pub cross_read: Vec<(String, usize, bool)>,
    /// The writes, profiles then tiny datasets.
    pub writes: Vec<WriteRow>,
    /// Per store, its read table and tiny-collection opens.
    pub stores: Vec<StoreReport>,
}

/// The reads of one store.
#[derive(Debug, Clone)]
pub struct StoreReport {
    /// "local disk" or "simulated object store".
    pub store: String,
    /// The simulation (inactive on local disk).
    pub sim: Simulation,
    /// How our reads were split on this store ("auto", "on", "off").
    pub split: String,
    /// The smallest part of a split read, in bytes.
    pub min_part_size: u64,
    /// The read table's rows.
    pub reads: Vec<ReadRow>,
    /// Opens of the tiny collection.
    pub tiny: Vec<TinyRow>,
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn cost_json(c: &Cost) -> Value {
    json!({
        "ms": millis(c.wall),
        "requests": c.io.read_requests(),
        "bytes": c.io.bytes_read,
        "round_trips": c.io.waves,
    })
}

impl Report {
    /// The report as JSON: every figure of the printed tables.
    pub fn to_json(&self) -> Value {
        let writes: Vec<Value> = self
            .writes
            .iter()
            .map(|w| {
                json!({
                    "what": w.what,
                    "implementation": w.imp.arg(),
                    "seconds": w.secs,
                    "peak_rss_kib": w.rss_kib,
                    "bytes": w.bytes,
                })
            })
            .collect();
        let stores: Vec<Value> = self
            .stores
            .iter()
            .map(|s| {
                let reads: Vec<Value> = s
                    .reads
                    .iter()
                    .map(|r| {
                        let results: serde_json::Map<String, Value> = r
                            .cells
                            .iter()
                            .filter_map(|(imp, c)| c.map(|c| (imp.arg().to_owned(), cost_json(&c))))
                            .collect();
                        json!({
                            "step": r.step.key(),
                            "label": r.step.label(),
                            "results": results,
                            "floor": r.floor.map(|f| json!({
                                "requests": f.requests,
                                "bytes": f.bytes,
                                "ms": f.time.map(millis),
                                "ms_single_stream": f.time_single.map(millis),
                            })),
                        })
                    })
                    .collect();
                let tiny: Vec<Value> = s
                    .tiny
                    .iter()
                    .map(|t| {
                        json!({
                            "implementation": t.imp.arg(),
                            "median_open_ms": millis(t.median),
                            "requests": t.io.read_requests(),
                            "bytes": t.io.bytes_read,
                            "round_trips": t.io.waves,
                        })
                    })
                    .collect();
                json!({
                    "store": s.store,
                    "latency_ms": millis(s.sim.latency),
                    "bandwidth_bytes_per_s": s.sim.bandwidth,
                    "split_reads": s.split,
                    "min_part_size": s.min_part_size,
                    "reads": reads,
                    "tiny_opens": tiny,
                })
            })
            .collect();
        json!({
            "format": "atlas-bench report 1",
            "profiles": self.profiles,
            "tiny": self.tiny,
            "cores": self.cores,
            "quick": self.quick,
            "rounds": self.rounds,
            "floor_concurrency": FLOOR_CONCURRENCY,
            "cross_read": self.cross_read.iter().map(|(what, datasets, equal)| json!({
                "what": what, "datasets": datasets, "values_equal": equal,
            })).collect::<Vec<_>>(),
            "writes": writes,
            "stores": stores,
        })
    }

    /// Writes [`to_json`](Self::to_json) to `path`, pretty-printed.
    pub fn write_json(&self, path: &Path) -> Result {
        let text = serde_json::to_string_pretty(&self.to_json())?;
        std::fs::write(path, text + "\n")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meter::Reading;

    fn cost(ms: u64, requests: u64, bytes: u64, waves: u64) -> Cost {
        Cost {
            wall: Duration::from_millis(ms),
            io: Reading {
                reads: requests,
                bytes_read: bytes,
                waves,
                ..Reading::default()
            },
        }
    }

    #[test]
    fn the_json_report_holds_every_figure_of_the_tables_from_the_same_rows() {
        let sim = Simulation {
            latency: Duration::from_millis(20),
            bandwidth: Some(100e6),
        };
        let columns = vec![
            (
                Impl::Ours,
                vec![
                    (Step::Open, cost(28, 2, 65_536, 1)),
                    (Step::Stats, cost(60, 6, 9_840_000, 2)),
                ],
            ),
            (Impl::Zarr, vec![(Step::Open, cost(25, 8, 10_300, 1))]),
        ];
        let floors = Floors {
            rows: vec![(Step::Open, 1, 17_200), (Step::Stats, 1, 9_840_000)],
        };
        let rows = read_rows(sim, &columns, &floors);
        assert_eq!(rows.len(), Step::ALL.len(), "one row per step, as printed");
        let report = Report {
            profiles: 30,
            tiny: 10,
            cores: 2,
            quick: true,
            rounds: 3,
            cross_read: vec![("ours reads ours".into(), 30, true)],
            writes: vec![WriteRow {
                imp: Impl::Ours,
                what: "write 30 profiles, 1 task(s)".into(),
                secs: 1.5,
                rss_kib: 2048,
                bytes: 4096,
            }],
            stores: vec![StoreReport {
                store: "simulated object store".into(),
                sim,
                split: "on".into(),
                min_part_size: 1 << 20,
                reads: rows,
                tiny: vec![TinyRow {
                    imp: Impl::Ours,
                    median: Duration::from_millis(40),
                    io: cost(0, 2, 65_536, 1).io,
                }],
            }],
        };
        let v = report.to_json();
        assert_eq!(v["profiles"], 30);
        assert_eq!(v["rounds"], 3);
        assert_eq!(v["writes"][0]["implementation"], "ours");
        assert_eq!(v["writes"][0]["seconds"], 1.5);
        assert_eq!(v["writes"][0]["peak_rss_kib"], 2048);
        assert_eq!(v["writes"][0]["bytes"], 4096);
        let store = &v["stores"][0];
        assert_eq!(store["latency_ms"], 20.0);
        assert_eq!(store["bandwidth_bytes_per_s"], 100e6);
        let reads = store["reads"].as_array().unwrap();
        assert_eq!(reads.len(), Step::ALL.len());
        let stats = reads.iter().find(|r| r["step"] == "array_stats").unwrap();
        assert_eq!(stats["label"], "array_stats(TEMP)");
        assert_eq!(
            stats["results"]["ours"],
            json!({"ms": 60.0, "requests": 6, "bytes": 9_840_000, "round_trips": 2})
        );
        assert!(
            stats["results"].get("zarr").is_none(),
            "zarrs has no such cell"
        );
        assert_eq!(stats["floor"]["requests"], 1);
        assert_eq!(stats["floor"]["bytes"], 9_840_000);
        // 20 ms + 9.84 MB over 16 × 100 MB/s; 20 ms + 98.4 ms as one stream.
        let ms = stats["floor"]["ms"].as_f64().unwrap();
        assert!((ms - 26.15).abs() < 0.01, "{ms}");
        let single = stats["floor"]["ms_single_stream"].as_f64().unwrap();
        assert!((single - 118.4).abs() < 0.01, "{single}");
        let open = reads.iter().find(|r| r["step"] == "open").unwrap();
        assert_eq!(open["results"]["zarr"]["requests"], 8);
        let sweep = reads.iter().find(|r| r["step"] == "sweep").unwrap();
        assert_eq!(sweep["floor"], Value::Null);
        assert_eq!(store["tiny_opens"][0]["median_open_ms"], 40.0);
        assert_eq!(store["tiny_opens"][0]["round_trips"], 1);
        assert_eq!(v["cross_read"][0]["values_equal"], true);
    }
}
