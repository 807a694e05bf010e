//! One array read from many datasets at once: a bounded number of reads in
//! flight, results as a `futures::Stream`.
//!
//! Every dataset's read goes through the same opened segment of the variable
//! (opened once, on first use) and the same block cache, so reading `TEMP`
//! from ten thousand datasets costs one segment open plus one request per
//! block not already cached, whatever the concurrency. Concurrency only
//! overlaps those block requests (and their decompression) with each other.

use futures::stream::{self, BoxStream, StreamExt};

use super::collection::Atlas;
use super::dataset::Dataset;
use super::region::Region;
use crate::AnyArray;
use crate::error::Result;

/// In which order [`Atlas::read_many`] yields its results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Order {
    /// The datasets' order as given (ordinal order for [`Atlas::datasets`]).
    #[default]
    AsGiven,
    /// Each result as soon as it is ready (the fastest overall).
    AsCompleted,
}

impl Atlas {
    /// Reads `region` of `array` from each of `datasets`, at most `concurrency`
    /// reads at a time, and yields `(dataset name, result)` in `order`.
    ///
    /// A dataset that does not declare `array`, or whose read fails, yields its
    /// error and the stream goes on. Cost: one open of the array's segment
    /// (none if already open); then, when the datasets read at least half of
    /// the segment's arrays, the segment's data region in one read, otherwise
    /// the blocks not yet in the shared block cache, with reads that continue
    /// the previous one served by a growing read-ahead window (4 MiB doubling
    /// to 32 MiB), so a sweep costs a few requests rather than one per block.
    pub fn read_many(
        &self,
        datasets: impl IntoIterator<Item = Dataset>,
        array: &str,
        region: Region,
        concurrency: usize,
        order: Order,
    ) -> BoxStream<'static, (String, Result<AnyArray>)> {
        read_many(
            datasets.into_iter().collect(),
            array,
            region,
            concurrency,
            order,
        )
    }
}

/// [`Atlas::read_many`] over handles of any collections (a set's members):
/// each collection's segment is prepared once for its share of the datasets.
pub(crate) fn read_many(
    datasets: Vec<Dataset>,
    array: &str,
    region: Region,
    concurrency: usize,
    order: Order,
) -> BoxStream<'static, (String, Result<AnyArray>)> {
    let array = array.to_owned();
    let concurrency = concurrency.max(1);
    // Many datasets: open the whole segment once up front rather than
    // look each array up on its own, and fetch its data in one go when
    // most of it will be read. A failure here shows again (and is
    // reported) in each dataset's read.
    stream::once(async move {
        let mut sweeps: Vec<(Atlas, usize)> = Vec::new();
        for ds in &datasets {
            match sweeps
                .iter_mut()
                .find(|(a, _)| a.same_collection(ds.atlas()))
            {
                Some((_, n)) => *n = n.saturating_add(1),
                None => sweeps.push((ds.atlas().clone(), 1)),
            }
        }
        let array_ref = &array;
        futures::future::join_all(
            sweeps
                .iter()
                .map(|(atlas, n)| async move { atlas.prepare_sweep(array_ref, *n).await }),
        )
        .await;
        (array, datasets, region)
    })
    .flat_map(move |(array, datasets, region)| {
        let reads = stream::iter(datasets).map(move |dataset| {
            let array = array.clone();
            let region = region.clone();
            async move {
                let result = dataset.read_any(&array, region).await;
                (dataset.name().to_owned(), result)
            }
        });
        match order {
            Order::AsCompleted => reads.buffer_unordered(concurrency).boxed(),
            _ => reads.buffered(concurrency).boxed(),
        }
    })
    .boxed()
}
