//! One array read from many datasets at once: a bounded number of reads in
//! flight, results as a `futures::Stream`.
//!
//! Every dataset's read goes through the same opened segment of the variable
//! (opened once, on first use) and the same block cache, so reading `TEMP`
//! from ten thousand datasets costs one segment open plus one request per
//! block not already cached, whatever the concurrency. Concurrency only
//! overlaps those block requests (and their decompression) with each other.

use std::collections::HashMap;

use futures::stream::{self, BoxStream, StreamExt};

use super::dataset::Dataset;
use super::member::Member;
use super::region::Region;
use crate::AnyArray;
use crate::error::Result;

/// In which order [`Atlas::read_many`](crate::Atlas::read_many) yields its results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Order {
    /// The datasets' order as given.
    #[default]
    AsGiven,
    /// Each result as soon as it is ready (the fastest overall).
    AsCompleted,
}

/// [`Atlas::read_many`](crate::Atlas::read_many) over handles of any members:
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
        let mut sweeps: HashMap<usize, (Member, usize)> = HashMap::new();
        for ds in &datasets {
            let (_, n) = sweeps
                .entry(ds.member().key())
                .or_insert_with(|| (ds.member().clone(), 0));
            *n = n.saturating_add(1);
        }
        let array_ref = &array;
        futures::future::join_all(
            sweeps
                .values()
                .map(|(member, n)| async move { member.prepare_sweep(array_ref, *n).await }),
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
