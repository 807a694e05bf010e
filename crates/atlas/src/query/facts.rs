//! What a query needs to know, fetched once: attribute columns and per-dataset
//! statistics, one segment-footer read per variable, all at once.

use smol_str::SmolStr;
use std::collections::{BTreeSet, HashMap};

use futures::future::try_join_all;

use super::error::QueryError;
use super::eval::Declared;
use crate::ArrayStats;
use crate::Attr;
use crate::set::View;

/// Attribute values and array statistics of the live datasets, by dataset name.
#[derive(Debug, Default)]
pub(crate) struct Facts {
    /// Attribute key, then dataset name.
    pub attrs: HashMap<String, HashMap<SmolStr, Attr>>,
    /// Array name, then dataset name.
    pub arrays: HashMap<String, HashMap<SmolStr, ArrayStats>>,
}

impl Facts {
    /// Reads the attribute columns `attrs` (all from `_datasets`) and the
    /// statistics of `arrays` (one segment each) of every view concurrently,
    /// each view asked only for what its datasets declare. The views' live
    /// dataset names must be distinct (a set's resolved members are).
    pub async fn gather(
        views: &[View],
        attrs: &BTreeSet<String>,
        arrays: &BTreeSet<String>,
    ) -> Result<Facts, QueryError> {
        let per_view = try_join_all(
            views
                .iter()
                .map(|atlas| Self::gather_one(atlas, attrs, arrays)),
        )
        .await?;
        let mut facts = Facts::default();
        for one in per_view {
            for (key, rows) in one.attrs {
                facts.attrs.entry(key).or_default().extend(rows);
            }
            for (array, rows) in one.arrays {
                facts.arrays.entry(array).or_default().extend(rows);
            }
        }
        Ok(facts)
    }

    async fn gather_one(
        atlas: &View,
        attrs: &BTreeSet<String>,
        arrays: &BTreeSet<String>,
    ) -> Result<Facts, QueryError> {
        let declared = Declared::of(std::slice::from_ref(atlas));
        let attr_reads = try_join_all(attrs.iter().filter(|key| declared.has_attribute(key)).map(
            |key| async move {
                let rows = atlas.attributes_by_dataset(None, key).await?;
                Ok::<_, QueryError>((key.clone(), rows.into_iter().collect()))
            },
        ));
        let stat_reads = try_join_all(arrays.iter().filter(|a| declared.has_array(a)).map(
            |array| async move {
                let rows = atlas.array_stats_by_dataset(array).await?;
                let by_name = rows.into_iter().map(|r| (r.dataset, r.stats)).collect();
                Ok::<_, QueryError>((array.clone(), by_name))
            },
        ));
        let (attrs, arrays) = futures::try_join!(attr_reads, stat_reads)?;
        Ok(Facts {
            attrs: attrs.into_iter().collect(),
            arrays: arrays.into_iter().collect(),
        })
    }
}
