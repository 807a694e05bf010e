//! The tables `atlas-bench` prints (Markdown, so a run pastes into
//! `docs/performance.md`), and the physical floor of each read step.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::Duration;

use atlas::Atlas;

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
        let atlas = Atlas::open(dir, &atlas::OpenOptions::default()).await?;
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

/// The least time `requests` dependent requests for `bytes` take on `sim`.
fn floor_time(sim: Simulation, requests: u64, bytes: u64) -> Duration {
    let rounds = u32::try_from(requests).unwrap_or(u32::MAX);
    sim.latency.saturating_mul(rounds) + sim.transfer(bytes)
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}×", a / b)
    } else {
        "—".into()
    }
}

/// The read table of one store.
pub fn print_reads(store: &str, sim: Simulation, columns: &[(Impl, Costs)], floors: &Floors) {
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
        "Each cell: wall time · requests (GET + HEAD) · bytes read · round trips on the critical path.\n"
    );
    let mut head = "| step |".to_string();
    let mut rule = "|---|".to_string();
    for (imp, _) in columns {
        head += &format!(" {} |", imp.label());
        rule += "---|";
    }
    let others: Vec<Impl> = columns
        .iter()
        .map(|(i, _)| *i)
        .filter(|i| *i != Impl::Ours)
        .collect();
    for other in &others {
        head += &format!(" ours / {} (time, bytes) |", other.label());
        rule += "---|";
    }
    head += " floor (req, bytes) |";
    rule += "---|";
    println!("{head}\n{rule}");
    let find = |imp: Impl, step: Step| {
        columns
            .iter()
            .find(|(i, _)| *i == imp)
            .and_then(|(_, costs)| costs.iter().find(|(s, _)| *s == step))
            .map(|(_, c)| *c)
    };
    for step in Step::ALL {
        let mut line = format!("| {} |", step.label());
        for (imp, _) in columns {
            line += &match find(*imp, step) {
                Some(c) => format!(" {} |", cell(&c)),
                None => " — |".into(),
            };
        }
        for other in &others {
            line += &match (find(Impl::Ours, step), find(*other, step)) {
                (Some(a), Some(b)) => format!(
                    " {}, {} |",
                    ratio(a.wall.as_secs_f64(), b.wall.as_secs_f64()),
                    ratio(a.io.bytes_read as f64, b.io.bytes_read as f64)
                ),
                _ => " — |".into(),
            };
        }
        line += &match floors.get(step) {
            Some((r, b)) if sim.is_active() => {
                format!(" {r}, {} ≈ {} |", bytes(b), ms(floor_time(sim, r, b)))
            }
            Some((r, b)) => format!(" {r}, {} |", bytes(b)),
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
