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

/// Each step's median round of `rounds` (each a run of the same steps in the
/// same order): the round whose wall time is the median for that step, its
/// I/O with it. An even count takes the lower middle. Steps missing from a
/// round are left out.
pub fn median_costs(rounds: &[Costs]) -> Costs {
    let Some(first) = rounds.first() else {
        return Costs::new();
    };
    first
        .iter()
        .map(|(step, _)| {
            let mut seen: Vec<Cost> = rounds
                .iter()
                .filter_map(|r| r.iter().find(|(s, _)| s == step).map(|(_, c)| *c))
                .collect();
            seen.sort_by_key(|c| c.wall);
            let mid = seen.len().saturating_sub(1) / 2;
            (*step, seen.get(mid).copied().unwrap_or_default())
        })
        .collect()
}

/// The dataset the single-dataset steps read: the middle one.
pub fn probe_index(datasets: usize) -> usize {
    datasets / 2
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(ms: u64, requests: u64) -> Cost {
        Cost {
            wall: Duration::from_millis(ms),
            io: Reading {
                reads: requests,
                ..Reading::default()
            },
        }
    }

    #[test]
    fn each_step_reports_its_median_round_with_that_rounds_io() {
        let rounds = vec![
            vec![(Step::Open, cost(9, 1)), (Step::Sweep, cost(40, 5))],
            vec![(Step::Open, cost(3, 2)), (Step::Sweep, cost(90, 6))],
            vec![(Step::Open, cost(5, 3)), (Step::Sweep, cost(50, 7))],
        ];
        let median = median_costs(&rounds);
        assert_eq!(
            median,
            vec![(Step::Open, cost(5, 3)), (Step::Sweep, cost(50, 7))]
        );
        assert_eq!(median_costs(&rounds[..2])[0], (Step::Open, cost(3, 2)));
        assert!(median_costs(&[]).is_empty());
    }
}
