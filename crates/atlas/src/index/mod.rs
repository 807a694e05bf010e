//! The dataset index: a Parquet object beside a container (`data.atlas.index`)
//! with one row per dataset, holding what collection-wide questions ask of
//! the segment footers (statistics, dataset attributes) in a few columns,
//! and the bounds of each row group so a predicate skips most of them.
//!
//! v8 has no such thing and other v8 readers ignore the object. The index
//! names the container it was built from (length, footer checksum, creation
//! time, dataset count); a reader that finds another container there (the
//! collection was rewritten) or a file it cannot read warns once and answers
//! from the footers, as it does when there is no index. The layout is in
//! `docs/index.md`.
//!
//! - `meta`: what the index says about itself, and its column names;
//! - `checksum`: the CRC32C it carries of its column chunks and its footer;
//! - `build`: footers to Parquet bytes;
//! - `load`: the Parquet footer on first use, then column chunks on demand.

mod build;
mod checksum;
mod load;
mod meta;

use std::sync::Arc;

use bytes::Bytes;
use smallvec::SmallVec;

pub(crate) use build::{DatasetAttributes, WrittenAttributes};
pub use build::{IndexOptions, IndexReport};
pub(crate) use load::{IndexProbe, LoadedIndex};

/// Bytes of decoded index columns a container's handle keeps between
/// questions unless [`OpenOptions::index_cache_bytes`](crate::OpenOptions::index_cache_bytes)
/// says otherwise: about one variable's statistics over 30 000 datasets.
/// Past it, the columns asked for longest ago are let go and decoded again
/// from the bytes kept if asked for (about a millisecond per variable over
/// 30 000 datasets, no request). Small, because what a question or a loop
/// needs is held whatever the budget; what it keeps beyond that only adds
/// to a read's peak memory (2.7 MiB of a `to_arrow` over 30 000 profiles
/// at 16 MiB).
pub const DEFAULT_INDEX_CACHE_BYTES: usize = 1 << 20;

use crate::error::Result;
use crate::query::Predicate;
use crate::read::fold_stats;
use crate::read::{Live, Member, Source};
use crate::set::View;
use crate::set::prune::{Summaries, may_match};
use crate::{ArrayStats, Attr, Value};
use atlas_format::DType;
use atlas_segment::{ArrayDigest, ChunkPlace};

impl Member {
    /// Builds this container's dataset index from its footers and stores it
    /// beside the container as `data.atlas.index`, replacing any previous
    /// one in one atomic write. Returns what it holds.
    ///
    /// Cost: one read of every segment footer (as `array_stats` of every
    /// variable would make), no array data, and one write.
    ///
    /// # Errors
    /// [`AtlasError::CorruptSegment`](crate::AtlasError::CorruptSegment) or
    /// [`AtlasError::CorruptCollection`](crate::AtlasError::CorruptCollection)
    /// when a footer cannot be read; [`AtlasError::Io`](crate::AtlasError::Io)
    /// when storage fails.
    pub async fn write_index(&self, options: &IndexOptions) -> Result<IndexReport> {
        let (bytes, report) = self.build_index_with(options, None).await?;
        self.put_index(bytes).await?;
        Ok(report)
    }

    /// The index of this container as Parquet bytes, and what it holds,
    /// built without storing it; with the dataset attributes the
    /// container's writer set, when it is the caller (none read back). The
    /// first half of [`Member::write_index`], for a writer that builds it
    /// while the container's upload completes.
    pub(crate) async fn build_index_with(
        &self,
        options: &IndexOptions,
        written: Option<build::WrittenAttributes>,
    ) -> Result<(Vec<u8>, IndexReport)> {
        build::build(self, options, written).await
    }

    /// Stores `bytes`, an index [`Member::build_index_with`] made of this container,
    /// beside it (replacing any index there).
    pub(crate) async fn put_index(&self, bytes: Vec<u8>) -> Result<()> {
        let path = atlas_io::object_path(&self.inner().prefix, atlas_format::INDEX_FILE);
        let op = self.sidecar_operator()?;
        atlas_io::put_atomic(&op, &path, Bytes::from(bytes)).await?;
        Ok(())
    }

    /// Whether a usable index was found beside the container (reads its
    /// footer on first use).
    pub async fn has_index(&self) -> bool {
        self.index().await.is_some()
    }

    /// The index beside the container, read on first use; `None` when there
    /// is none, when the handle was opened without indexes, or when it is
    /// stale or unreadable (warned once). A storage failure is not kept: the
    /// next question tries again.
    pub(crate) async fn index(&self) -> Option<Arc<LoadedIndex>> {
        let inner = self.inner();
        if !inner.use_index {
            return None;
        }
        let found = inner
            .index
            .get_or_try_init(|| async {
                match load::load(self).await {
                    Ok(found) => Ok(found.map(Arc::new)),
                    Err(load::IndexProblem::Io(e)) => Err(e),
                    Err(problem) => {
                        tracing::warn!(
                            container = %inner.container_path,
                            "dataset index not used, answering from the footers: {problem}"
                        );
                        Ok(None)
                    }
                }
            })
            .await;
        match found {
            Ok(found) => found.clone(),
            Err(e) => {
                tracing::warn!(
                    container = %inner.container_path,
                    "dataset index not read, answering from the footers: {e}"
                );
                None
            }
        }
    }

    /// The statistics of `array` for the datasets of `live` declaring it,
    /// from the index when it holds them, one row each laid out by `lay`
    /// and completed by `fill` (see
    /// [`LoadedIndex::stats`](load::LoadedIndex::stats)). `None`: ask the
    /// footers.
    pub(crate) async fn indexed_stats<T>(
        &self,
        live: &Live,
        array: &str,
        lay: impl FnMut(u32, &DType) -> Option<T>,
        fill: impl FnMut(&mut T, Option<ArrayStats>) -> bool,
    ) -> Option<Vec<T>> {
        let index = self.index().await?;
        let variable = index.meta.variable(array)?;
        index
            .stats(self, variable, live, lay, fill)
            .await
            .map_err(|e| self.index_failed(&e))
            .ok()
    }

    /// The statistics of `array` folded over the datasets of `live`, from the
    /// index's footer alone when it keeps them for whole row groups (no
    /// request once the index is loaded). `None`: ask the rows.
    pub(crate) async fn indexed_totals(
        &self,
        live: &Live,
        array: &str,
    ) -> Option<Option<ArrayStats>> {
        let index = self.index().await?;
        index.totals(index.meta.variable(array)?, live)
    }

    /// The shape and first block of `array` for the datasets of `live`
    /// declaring it, from the index when it holds them: (ordinal, declared
    /// type, shape, first block). `None`: ask the footers.
    pub(crate) async fn indexed_layouts(
        &self,
        live: &Live,
        array: &str,
    ) -> Option<Vec<(u32, DType, Vec<u64>, Option<u32>)>> {
        let index = self.index().await?;
        let variable = index.meta.variable(array)?;
        index
            .layouts(self, variable, live)
            .await
            .map_err(|e| self.index_failed(&e))
            .ok()
    }

    /// Dataset attribute `key` of the datasets of `live` declaring it, from
    /// the index when it holds it, one row each laid out by `lay` and
    /// completed by `fill` (see
    /// [`LoadedIndex::attributes`](load::LoadedIndex::attributes)). `None`:
    /// ask the footers.
    pub(crate) async fn indexed_attributes<T>(
        &self,
        live: &Live,
        key: &str,
        lay: impl FnMut(u32) -> Option<T>,
        fill: impl FnMut(&mut T, Attr),
    ) -> Option<Vec<T>> {
        let index = self.index().await?;
        let attribute = index.meta.attribute(key)?;
        index
            .attributes(self, attribute, live, lay, fill)
            .await
            .map_err(|e| self.index_failed(&e))
            .ok()
    }

    fn index_failed(&self, e: &load::IndexProblem) {
        tracing::warn!(
            container = %self.inner().container_path,
            "dataset index read failed, answering from the footers: {e}"
        );
    }
}

/// The cores this process may use, asked once: the answer reads the
/// cgroup's files, too slow to ask on every decode.
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get))
}

/// `views` with the datasets of every index row group whose bounds rule
/// `predicate` out hidden as well, so a question reads only the rest. Views
/// of containers without an index come back unchanged.
pub(crate) async fn narrow(views: &[View], predicate: &Predicate) -> Vec<View> {
    let indexes =
        futures::future::join_all(views.iter().map(|v| async { v.member().index().await })).await;
    views
        .iter()
        .zip(indexes)
        .map(|(view, index)| {
            let Some(index) = index else {
                return view.clone();
            };
            let ruled_out = index.meta.row_groups.iter().filter(|g| {
                !may_match(
                    Summaries {
                        variables: &g.variables,
                        attributes: &g.attributes,
                    },
                    predicate,
                )
            });
            let hide: Vec<u32> = ruled_out
                .flat_map(|g| g.first..g.first.saturating_add(g.rows))
                .filter_map(|o| u32::try_from(o).ok())
                .collect();
            if hide.is_empty() {
                view.clone()
            } else {
                view.hiding(hide)
            }
        })
        .collect()
}

impl crate::Atlas {
    /// Writes the dataset index of every container: the lone one, or each
    /// member of a set (see [`Member::write_index`]). Returns one report per
    /// container, in member order.
    ///
    /// # Errors
    /// As [`Member::write_index`];
    /// [`AtlasError::Member`](crate::AtlasError::Member) when a member
    /// cannot be opened.
    pub async fn write_index(&self, options: &IndexOptions) -> Result<Vec<IndexReport>> {
        let mut reports = Vec::new();
        for member in self.open_members().await? {
            reports.push(member.write_index(options).await?);
        }
        Ok(reports)
    }
}

/// What `verify` learns of the index beside `member`: `None` when there is
/// none; `Some(Err(why))` when it is there but not used (stale, unreadable);
/// else every way it disagrees with the footers (empty: none).
pub(crate) async fn check(member: &Member) -> Option<std::result::Result<Vec<String>, String>> {
    let index = match load::load(member).await {
        Ok(None) => return None,
        Ok(Some(index)) => index,
        Err(why) => return Some(Err(why.to_string())),
    };
    let all = Live::all(member.dataset_count_total());
    let mut disagreements = Vec::new();
    for variable in &index.meta.variables {
        // One pass over the segment's footer for both comparisons; the
        // footer's own damage is reported by the segment checks.
        let facts = member.footer_facts(&all, &variable.name).await.ok();
        let footers: Option<Vec<(u32, &ArrayDigest)>> = facts.as_ref().map(|(segment, rows)| {
            rows.iter()
                .filter_map(|(o, _, at)| Some((*o, segment.as_ref()?.arrays().get(*at)?)))
                .collect()
        });
        let from_index = index
            .stats(
                member,
                variable,
                &all,
                |o, _| Some((o, None)),
                |row, s| {
                    row.1 = s;
                    true
                },
            )
            .await;
        match (from_index, &footers) {
            (Ok(indexed), Some(footers)) => {
                let indexed: Vec<(u32, ArrayStats)> = indexed
                    .into_iter()
                    .filter_map(|(o, s)| Some((o, s?)))
                    .collect();
                let footers: Vec<(u32, ArrayStats)> = footers
                    .iter()
                    .filter_map(|(o, d)| Some((*o, d.stats.clone()?)))
                    .collect();
                if let Some(what) = first_difference(&indexed, &footers) {
                    disagreements.push(format!("statistics of {:?}: {what}", variable.name));
                }
            }
            (Err(load::IndexProblem::Io(e)), _) => return Some(Err(e.to_string())),
            (Err(e), _) => disagreements.push(format!("{:?}: {e}", variable.name)),
            (_, None) => {}
        }
        let from_index = index.layouts(member, variable, &all).await;
        match (from_index, &footers) {
            (Ok(indexed), Some(footers)) => {
                let indexed: Vec<(u32, Layout)> = indexed
                    .into_iter()
                    .map(|(o, _, shape, block)| (o, (shape, block)))
                    .collect();
                let footers: Vec<(u32, Layout)> = footers
                    .iter()
                    .map(|(o, d)| (*o, (d.shape.to_vec(), d.first_block)))
                    .collect();
                if let Some(what) = first_difference(&indexed, &footers) {
                    disagreements.push(format!("shape or block of {:?}: {what}", variable.name));
                }
            }
            (Err(load::IndexProblem::Io(e)), _) => return Some(Err(e.to_string())),
            (Err(e), _) => disagreements.push(format!("{:?}: {e}", variable.name)),
            (_, None) => {}
        }
        if variable.totals
            && let Some(footers) = &footers
            && let Some(what) = totals_difference(&index.meta, &variable.name, footers)
        {
            disagreements.push(format!("totals of {:?}: {what}", variable.name));
        }
        if let (Some(_), Some(footers)) = (&variable.places, &footers) {
            match placed_differences(member, &index, variable, footers).await {
                Ok(Some(what)) => {
                    disagreements.push(format!("chunk places of {:?}: {what}", variable.name));
                }
                Ok(None) => {}
                Err(load::IndexProblem::Io(e)) => return Some(Err(e.to_string())),
                Err(e) => disagreements.push(format!("{:?}: {e}", variable.name)),
            }
        }
    }
    let datasets = &member.footer().datasets;
    for attribute in &index.meta.attributes {
        let from_index = index
            .attributes(
                member,
                attribute,
                &all,
                |o| Some((o, Attr::Bool(false))),
                |row, a| row.1 = a,
            )
            .await;
        let from_footers = member
            .attributes_by_dataset_from(&all, None, &attribute.key, Source::Footers)
            .await;
        match (from_index, from_footers) {
            (Ok(indexed), Ok(footers)) => {
                let footers: Vec<(u32, Attr)> = footers
                    .into_iter()
                    .filter_map(|(name, a)| {
                        Some((
                            u32::try_from(datasets.get_index_of(name.as_str())?).ok()?,
                            a,
                        ))
                    })
                    .collect();
                if let Some(what) = first_difference(&indexed, &footers) {
                    disagreements.push(format!("attribute {:?}: {what}", attribute.key));
                }
            }
            (Err(load::IndexProblem::Io(e)), _) => return Some(Err(e.to_string())),
            (Err(e), _) => disagreements.push(format!("attribute {:?}: {e}", attribute.key)),
            (_, Err(_)) => {}
        }
    }
    Some(Ok(disagreements))
}

/// The first row group whose totals of `variable` differ from the fold of
/// its datasets' statistics as the footers record them (`footers`: every
/// dataset declaring it, in ordinal order).
fn totals_difference(
    meta: &meta::IndexMeta,
    variable: &str,
    footers: &[(u32, &ArrayDigest)],
) -> Option<String> {
    for (g, group) in meta.row_groups.iter().enumerate() {
        let rows = group.first..group.first.saturating_add(group.rows);
        let folded = fold_stats(
            footers
                .iter()
                .filter(|(o, _)| rows.contains(&u64::from(*o)))
                .filter_map(|(_, d)| d.stats.as_ref()),
        );
        let stated = group
            .totals
            .iter()
            .find(|t| t.name == variable)
            .map(meta::VariableTotals::stats);
        if stated != folded {
            return Some(format!(
                "row group {g} states {stated:?}, its datasets' footers fold to {folded:?}"
            ));
        }
    }
    None
}

/// A dataset's shape and first block of one array.
type Layout = (Vec<u64>, Option<u32>);

/// What a read of one array takes from its chunk places, a float fill by
/// its bits (so a NaN fill equals itself).
type Placed = (
    DType,
    Vec<String>,
    Option<std::result::Result<Value, u64>>,
    SmallVec<[u64; 4]>,
    SmallVec<[u32; 4]>,
    SmallVec<[ChunkPlace; 1]>,
);

fn placed_of(a: &ArrayDigest) -> Placed {
    let fill = a.fill.clone().map(|v| match v {
        Value::Float(x) => Err(x.to_bits()),
        other => Ok(other),
    });
    (
        a.dtype.clone(),
        a.dimension_names.to_vec(),
        fill,
        a.shape.clone(),
        a.chunk_shape.clone(),
        a.chunks.clone(),
    )
}

/// Where the chunk places the index records for `variable` first differ
/// from what its segment footer (`footers`: every dataset declaring it, in
/// ordinal order) says.
async fn placed_differences(
    member: &Member,
    index: &load::LoadedIndex,
    variable: &meta::IndexedVariable,
    footers: &[(u32, &ArrayDigest)],
) -> std::result::Result<Option<String>, load::IndexProblem> {
    let datasets = &member.footer().datasets;
    let mut indexed = Vec::new();
    let groups: Vec<usize> = (0..index.meta.row_groups.len()).collect();
    for a in index
        .placed_arrays(member, variable, &groups, None)
        .await?
        .unwrap_or_default()
        .into_iter()
        .flatten()
    {
        let ordinal = datasets
            .get_index_of(a.name.as_str())
            .and_then(|o| u32::try_from(o).ok())
            .unwrap_or(u32::MAX);
        indexed.push((ordinal, placed_of(&a)));
    }
    let footers: Vec<(u32, Placed)> = footers.iter().map(|(o, d)| (*o, placed_of(d))).collect();
    Ok(first_difference(&indexed, &footers))
}

/// Where two per-ordinal lists first differ, described.
fn first_difference<T: PartialEq + std::fmt::Debug>(
    indexed: &[(u32, T)],
    footers: &[(u32, T)],
) -> Option<String> {
    if let Some((a, b)) = indexed.iter().zip(footers).find(|(a, b)| a != b) {
        return Some(format!(
            "dataset {} has {:?} in the index, {:?} in the footer",
            b.0, a.1, b.1
        ));
    }
    (indexed.len() != footers.len()).then(|| {
        format!(
            "{} datasets in the index, {} in the footers",
            indexed.len(),
            footers.len()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::meta::{
        ContainerIdentity, INDEX_VERSION, IndexMeta, RowGroupBounds, VariableTotals,
    };
    use super::*;

    /// A dataset's digest of `X` with statistics `lo`..`hi` over one element.
    fn digest(lo: f64, hi: f64) -> ArrayDigest {
        let mut d = ArrayDigest::placed(
            "d".into(),
            DType::Float64,
            SmallVec::new(),
            SmallVec::new(),
            Arc::from(Vec::<String>::new()),
            None,
            SmallVec::new(),
        );
        d.stats = Some(ArrayStats {
            min: Some(Value::Float(lo)),
            max: Some(Value::Float(hi)),
            null_count: 0,
            row_count: 1,
        });
        d
    }

    /// `X` folded over two datasets.
    fn fold(lo: f64, hi: f64) -> VariableTotals {
        VariableTotals {
            name: "X".into(),
            row_count: 2,
            null_count: 0,
            min: Some(Value::Float(lo)),
            max: Some(Value::Float(hi)),
        }
    }

    /// An index of row groups of two datasets each, with `totals`.
    fn meta(totals: Vec<Vec<VariableTotals>>) -> IndexMeta {
        IndexMeta {
            version: INDEX_VERSION,
            container: ContainerIdentity {
                bytes: 0,
                footer_crc32c: 0,
                created_unix_ms: 0,
                datasets: 2 * totals.len() as u64,
            },
            variables: Vec::new(),
            attributes: Vec::new(),
            row_groups: totals
                .into_iter()
                .enumerate()
                .map(|(g, totals)| RowGroupBounds {
                    first: 2 * g as u64,
                    rows: 2,
                    variables: Vec::new(),
                    attributes: Vec::new(),
                    totals,
                })
                .collect(),
        }
    }

    #[test]
    fn verify_names_the_row_group_whose_totals_differ_from_its_footers() {
        let digests: Vec<ArrayDigest> = (0..4).map(|i| digest(i as f64, i as f64 + 0.5)).collect();
        let footers: Vec<(u32, &ArrayDigest)> = (0u32..).zip(&digests).collect();
        let sound = meta(vec![vec![fold(0.0, 1.5)], vec![fold(2.0, 3.5)]]);
        assert_eq!(totals_difference(&sound, "X", &footers), None);
        for wrong in [
            meta(vec![vec![fold(0.0, 1.5)], vec![fold(2.0, 9.0)]]),
            meta(vec![vec![fold(0.0, 1.5)], vec![]]),
        ] {
            let what = totals_difference(&wrong, "X", &footers);
            assert!(
                what.as_deref()
                    .is_some_and(|w| w.starts_with("row group 1 ")),
                "{what:?}"
            );
        }
    }
}
