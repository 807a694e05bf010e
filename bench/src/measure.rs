//! What one step of a scenario cost, and the names of the steps.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::meter::{Meter, Reading};

/// The read steps every implementation runs, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Step {
    /// Open the collection (or, for Zarr, every array's metadata).
    Open,
    /// Every dataset's name and schema.
    Catalogue,
    /// `array_stats("TEMP")` over all datasets.
    Stats,
    /// `array_stats_by_dataset("PSAL")`.
    StatsByDataset,
    /// `attributes_by_dataset(None, "platform_number")`.
    AttrsByDataset,
    /// `attributes_by_dataset(Some("JULD"), "units")`: an array attribute of
    /// every dataset (the `JULD` segment is not open yet).
    ArrayAttrsByDataset,
    /// `TEMP` of every dataset, one after another.
    Sweep,
    /// `PRES` of one dataset, first read on the open handle.
    OneFirst,
    /// The same read again (warm).
    OneWarm,
    /// A fresh handle: open, then `PSAL` of one dataset.
    OneCold,
    /// A fresh handle: open, then `TEMP` of every dataset, 8 reads at a time
    /// (`read_many`).
    Many,
}

impl Step {
    /// Every step, in run order.
    pub const ALL: [Step; 11] = [
        Step::Open,
        Step::Catalogue,
        Step::Stats,
        Step::StatsByDataset,
        Step::AttrsByDataset,
        Step::ArrayAttrsByDataset,
        Step::Sweep,
        Step::OneFirst,
        Step::OneWarm,
        Step::OneCold,
        Step::Many,
    ];

    /// Concurrent reads of the [`Many`](Step::Many) step.
    pub const MANY_CONCURRENCY: usize = 8;

    /// A stable identifier, for the JSON report.
    pub fn key(self) -> &'static str {
        match self {
            Step::Open => "open",
            Step::Catalogue => "catalogue",
            Step::Stats => "array_stats",
            Step::StatsByDataset => "array_stats_by_dataset",
            Step::AttrsByDataset => "attributes_by_dataset",
            Step::ArrayAttrsByDataset => "array_attributes_by_dataset",
            Step::Sweep => "sweep",
            Step::OneFirst => "one_first",
            Step::OneWarm => "one_warm",
            Step::OneCold => "one_cold",
            Step::Many => "read_many",
        }
    }

    /// The row label.
    pub fn label(self) -> &'static str {
        match self {
            Step::Open => "open",
            Step::Catalogue => "catalogue (names + schemas)",
            Step::Stats => "array_stats(TEMP)",
            Step::StatsByDataset => "array_stats_by_dataset(PSAL)",
            Step::AttrsByDataset => "attributes_by_dataset(platform_number)",
            Step::ArrayAttrsByDataset => "attributes_by_dataset(JULD, units)",
            Step::Sweep => "TEMP of every dataset",
            Step::OneFirst => "PRES of one dataset (handle open)",
            Step::OneWarm => "same read again (warm)",
            Step::OneCold => "fresh handle: open + PSAL of one",
            Step::Many => "fresh handle: open + TEMP of every dataset, 8 at once",
        }
    }
}

/// Wall time and metered I/O of one step.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cost {
    /// Wall time.
    pub wall: Duration,
    /// What the meter saw.
    pub io: Reading,
}

/// Runs `f` with `meter` zeroed first; returns its output and cost.
pub async fn measure<T>(meter: &Meter, f: impl Future<Output = Result<T>>) -> Result<(T, Cost)> {
    meter.reset();
    let start = Instant::now();
    let out = f.await?;
    let wall = start.elapsed();
    Ok((
        out,
        Cost {
            wall,
            io: meter.reading(),
        },
    ))
}

/// The steps one implementation ran, in order.
pub type Costs = Vec<(Step, Cost)>;

/// The dataset the single-dataset steps read: the middle one.
pub fn probe_index(datasets: usize) -> usize {
    datasets / 2
}
