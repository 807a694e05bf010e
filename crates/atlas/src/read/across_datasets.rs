//! Questions about one array name (or one attribute key) across every live
//! dataset: one read of the segment's footer (none if it is in hand) and one
//! pass over it, without array-format's open and never a lookup per dataset.

use atlas_format::{CollectionFooter, DATASETS_SEGMENT, DType, SchemaView};
use smol_str::SmolStr;
use std::sync::Arc;

use atlas_segment::{ArrayDigest, ArrayStats, Attr, SegmentDigest};

use super::dataset::{check_attr_type, check_dtype};
use super::member::{Live, Member};
use super::stats::{DatasetBlock, DatasetShape, DatasetStats};
use crate::error::{AtlasError, Result};
use crate::read::fold_stats;

/// Where a question across datasets may be answered from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// The dataset index when it holds the answer, else the segment footers.
    Any,
    /// The segment footers alone (what an index is built from).
    Footers,
}

/// Per schema (by pool index), the type it declares for what is asked about, if any.
pub(crate) fn declared_per_schema<'f>(
    footer: &'f CollectionFooter,
    pick: impl Fn(SchemaView<'f>) -> Option<&'f DType>,
) -> Vec<Option<&'f DType>> {
    (0..footer.schema_pool.len())
        .map(|i| {
            u32::try_from(i)
                .ok()
                .and_then(|i| footer.schema_view(i))
                .and_then(&pick)
        })
        .collect()
}

/// Per schema (by pool index), the type it declares array `name` with, if any.
pub(crate) fn declared_array<'f>(
    footer: &'f CollectionFooter,
    name: &str,
) -> Vec<Option<&'f DType>> {
    declared_per_schema(footer, |s| s.array(name).map(|m| m.dtype()))
}

/// What dataset `ordinal`'s schema declares, per `declared` (by schema, as
/// [`declared_per_schema`] makes it); `None` as well for no such dataset.
pub(crate) fn declared_by<'f>(
    footer: &CollectionFooter,
    declared: &[Option<&'f DType>],
    ordinal: u32,
) -> Option<&'f DType> {
    let (_, &schema) = footer.datasets.get_index(ordinal as usize)?;
    declared.get(schema as usize).copied().flatten()
}

/// Finds a segment's arrays among the live datasets declaring something,
/// name by name in segment order. A segment holds its datasets in ordinal
/// order when one task wrote it, so each name is first compared with the
/// dataset after the last one found, and looked up by hash only when that
/// guess misses: one string comparison per array instead of a hash lookup
/// (a cache miss each in a collection of tens of thousands of datasets).
struct LiveFinder<'a, 'f> {
    atlas: &'a Member,
    /// The datasets the question covers.
    live: &'a Live,
    /// Per schema, the type it declares for what is asked about, if any.
    declared: &'a [Option<&'f DType>],
    /// The ordinal guessed for the next name.
    next: usize,
}

impl<'f> LiveFinder<'_, 'f> {
    /// The ordinal and declared type of dataset `name`, if it is live and
    /// its schema declares something.
    fn find(&mut self, name: &str) -> Option<(u32, &'f DType)> {
        let datasets = &self.atlas.footer().datasets;
        let (index, &schema) = match datasets.get_index(self.next) {
            Some((guess, schema)) if guess.as_str() == name => (self.next, schema),
            _ => datasets
                .get_full(name)
                .map(|(index, _, schema)| (index, schema))?,
        };
        self.next = index.saturating_add(1);
        let ordinal = u32::try_from(index).ok()?;
        let dtype = self.declared.get(schema as usize).copied().flatten()?;
        self.live.contains(ordinal).then_some((ordinal, dtype))
    }
}

impl Member {
    /// A [`LiveFinder`] for the datasets declaring something (per `declared`).
    fn live_finder<'a, 'f>(
        &'a self,
        live: &'a Live,
        declared: &'a [Option<&'f DType>],
    ) -> LiveFinder<'a, 'f> {
        LiveFinder {
            atlas: self,
            live,
            declared,
            next: 0,
        }
    }

    /// The declared types of the live datasets whose schema declares something
    /// (per `declared`), in ordinal order.
    fn live_declaring<'f>(&'f self, live: &Live, declared: &[Option<&'f DType>]) -> Vec<&'f DType> {
        let footer = self.footer();
        live.ordinals()
            .filter_map(|o| declared_by(footer, declared, o))
            .collect()
    }

    /// `ArrayNotFound` unless some dataset declares `array` or the container has a segment for it.
    fn known_array(&self, array: &str, declared: &[Option<&DType>]) -> Result<()> {
        let declared_anywhere = declared.iter().any(Option::is_some);
        if array == DATASETS_SEGMENT || !(declared_anywhere || self.has_variable(array)) {
            return Err(AtlasError::ArrayNotFound {
                dataset: None,
                array: array.to_owned(),
            });
        }
        Ok(())
    }

    /// Statistics of `array` folded over every live dataset: counts add, min of
    /// mins, max of maxes. Datasets whose declared type for `array` differs from
    /// the first live declaring dataset's cannot be compared and stay out of the
    /// fold. `None` when no live dataset records statistics for it.
    ///
    /// The segment's footer once (none if the segment is open or its footer
    /// in hand), one pass over it, no array-format open.
    ///
    /// # Errors
    /// [`AtlasError::CorruptSegment`] when the segment's footer is damaged, [`AtlasError::Io`] when
    /// storage fails.
    pub(crate) async fn array_stats(&self, live: &Live, array: &str) -> Result<Option<ArrayStats>> {
        let declared = declared_array(self.footer(), array);
        self.known_array(array, &declared)?;
        if let Some(folded) = self.indexed_totals(live, array).await {
            return Ok(folded);
        }
        let rows = self
            .stats_rows(
                live,
                array,
                Source::Any,
                |_, dtype| Some((dtype.clone(), None)),
                |row, stats| {
                    row.1 = stats;
                    true
                },
            )
            .await?;
        let Some((reference, _)) = rows.first() else {
            return Ok(None);
        };
        Ok(fold_stats(rows.iter().filter_map(|(dtype, stats)| {
            stats.as_ref().filter(|_| dtype == reference)
        })))
    }

    /// Each live dataset's statistics of `array`, in ordinal order (datasets of
    /// any declared type; one without recorded statistics is left out).
    ///
    /// # Errors
    /// As [`array_stats`](Self::array_stats).
    pub(crate) async fn array_stats_by_dataset(
        &self,
        live: &Live,
        array: &str,
    ) -> Result<Vec<DatasetStats>> {
        self.array_stats_by_dataset_from(live, array, Source::Any)
            .await
    }

    /// [`array_stats_by_dataset`](Self::array_stats_by_dataset), read from `source`.
    pub(crate) async fn array_stats_by_dataset_from(
        &self,
        live: &Live,
        array: &str,
        source: Source,
    ) -> Result<Vec<DatasetStats>> {
        let datasets = &self.footer().datasets;
        self.stats_rows(
            live,
            array,
            source,
            |ordinal, _| {
                let (name, _) = datasets.get_index(ordinal as usize)?;
                Some(DatasetStats {
                    dataset: name.clone(),
                    ordinal,
                    // In place until `fill` has the dataset's own.
                    stats: ArrayStats {
                        min: None,
                        max: None,
                        null_count: 0,
                        row_count: 0,
                    },
                })
            },
            |row, stats| match stats {
                Some(stats) => {
                    row.stats = stats;
                    true
                }
                None => false,
            },
        )
        .await
    }

    /// Per live dataset declaring `array`, in ordinal order, from the index
    /// when it holds it: ordinal, name, type, shape and first block. `None`:
    /// ask the footers.
    #[allow(clippy::type_complexity)]
    async fn layout_rows(
        &self,
        live: &Live,
        array: &str,
    ) -> Result<Option<Vec<(u32, SmolStr, DType, Vec<u64>, Option<u32>)>>> {
        let datasets = &self.footer().datasets;
        let declared = declared_array(self.footer(), array);
        self.known_array(array, &declared)?;
        Ok(self.indexed_layouts(live, array).await.map(|rows| {
            rows.into_iter()
                .filter_map(|(ordinal, dtype, shape, block)| {
                    let (name, _) = datasets.get_index(ordinal as usize)?;
                    Some((ordinal, name.clone(), dtype, shape, block))
                })
                .collect()
        }))
    }

    /// One row per live dataset declaring `array`, in ordinal order, laid
    /// out by `lay` from its ordinal and declared type (`None` leaves the
    /// dataset out) and completed by `fill` with its recorded statistics
    /// (`false` drops the row); from the index when `source` allows and the
    /// index holds them, else from the segment's footer. In two steps so
    /// that, through the index, the rows are laid out while its bytes are on
    /// their way.
    async fn stats_rows<T>(
        &self,
        live: &Live,
        array: &str,
        source: Source,
        mut lay: impl FnMut(u32, &DType) -> Option<T>,
        mut fill: impl FnMut(&mut T, Option<ArrayStats>) -> bool,
    ) -> Result<Vec<T>> {
        if source == Source::Any {
            let declared = declared_array(self.footer(), array);
            self.known_array(array, &declared)?;
            if let Some(rows) = self.indexed_stats(live, array, &mut lay, &mut fill).await {
                return Ok(rows);
            }
        }
        self.digest_rows(live, array, |_, info, ordinal, declared| {
            check_dtype(array, declared, &info.dtype, &info.name)?;
            Ok(lay(ordinal, declared)
                .and_then(|mut row| fill(&mut row, info.stats.clone()).then_some(row)))
        })
        .await
    }

    /// Each live dataset declaring `array`, in ordinal order, with the first
    /// data block of the array's segment its values lie in: the grouping a
    /// reader of many datasets follows so that one task reads whole blocks
    /// (dask partitions, `read_many` batches).
    ///
    /// Read off the segment's footer like
    /// [`array_stats_by_dataset`](Self::array_stats_by_dataset): the footer
    /// once (none if the segment is open), no data block.
    ///
    /// # Errors
    /// As [`array_stats`](Self::array_stats).
    pub(crate) async fn array_blocks_by_dataset(
        &self,
        live: &Live,
        array: &str,
    ) -> Result<Vec<DatasetBlock>> {
        if let Some(rows) = self.layout_rows(live, array).await? {
            return Ok(rows
                .into_iter()
                .map(|(ordinal, name, _, _, first_block)| DatasetBlock {
                    dataset: name,
                    ordinal,
                    first_block,
                })
                .collect());
        }
        self.digest_rows(live, array, |_, info, ordinal, _| {
            Ok(Some(DatasetBlock {
                dataset: info.name.clone(),
                ordinal,
                first_block: info.first_block,
            }))
        })
        .await
    }

    /// Each live dataset declaring `array`, in ordinal order, with its shape
    /// and element type as the segment records them: what a view laying many
    /// datasets end to end (a ragged or padded table) needs before it reads
    /// a value.
    ///
    /// Read off the segment's footer like
    /// [`array_stats_by_dataset`](Self::array_stats_by_dataset): the footer
    /// once (none if the segment is open), no data block, no array-format
    /// open.
    ///
    /// # Errors
    /// As [`array_stats`](Self::array_stats), which also fails when validation
    /// found a dataset's array damaged or its segment's type differs from the
    /// one its dataset declares.
    pub(crate) async fn array_shapes_by_dataset(
        &self,
        live: &Live,
        array: &str,
    ) -> Result<Vec<DatasetShape>> {
        if let Some(rows) = self.layout_rows(live, array).await? {
            return Ok(rows
                .into_iter()
                .map(|(ordinal, name, dtype, shape, _)| DatasetShape {
                    dataset: name,
                    ordinal,
                    dtype,
                    shape,
                })
                .collect());
        }
        self.digest_rows(live, array, |_, info, ordinal, declared| {
            check_dtype(array, declared, &info.dtype, &info.name)?;
            Ok(Some(DatasetShape {
                dataset: info.name.clone(),
                ordinal,
                dtype: info.dtype.clone(),
                shape: info.shape.to_vec(),
            }))
        })
        .await
    }

    /// Every fact of `array` the dataset index records, per live dataset
    /// declaring it, in ordinal order, read off the segment's footer in one
    /// pass: the segment's digest, and per dataset its ordinal, declared
    /// type and position in the digest (statistics, shape, where its chunks
    /// lie), so that nothing of the digest is copied.
    pub(crate) async fn footer_facts(
        &self,
        live: &Live,
        array: &str,
    ) -> Result<(Option<Arc<SegmentDigest>>, Vec<(u32, DType, usize)>)> {
        let rows = self
            .digest_rows(live, array, |at, info, ordinal, declared| {
                check_dtype(array, declared, &info.dtype, &info.name)?;
                Ok(Some((ordinal, declared.clone(), at)))
            })
            .await?;
        Ok((self.digest(array).await?, rows))
    }

    /// One row per live dataset declaring `array`, in ordinal order, made by
    /// `row` from what the segment's footer digest holds for it (with the
    /// dataset's ordinal and declared type; `None` leaves the dataset out of
    /// the answer); checks that validation passed each one and that the
    /// segment holds every such dataset.
    async fn digest_rows<T>(
        &self,
        live: &Live,
        array: &str,
        mut row: impl FnMut(usize, &ArrayDigest, u32, &DType) -> Result<Option<T>>,
    ) -> Result<Vec<T>> {
        let footer = self.footer();
        let declared = declared_array(footer, array);
        self.known_array(array, &declared)?;
        let wanted = self.live_declaring(live, &declared).len();
        if wanted == 0 {
            return Ok(Vec::new());
        }
        let digest = self.digest(array).await?.ok_or_else(|| {
            AtlasError::corrupt(format!(
                "datasets declare array {array:?}, but the container has no segment for it"
            ))
        })?;
        let mut rows = Vec::with_capacity(wanted);
        let mut seen = 0usize;
        let mut finder = self.live_finder(live, &declared);
        for (at, info) in digest.arrays().iter().enumerate() {
            let Some((ordinal, dtype)) = finder.find(&info.name) else {
                continue;
            };
            seen = seen.saturating_add(1);
            digest.check(&info.name)?;
            if let Some(row) = row(at, info, ordinal, dtype)? {
                rows.push((ordinal, row));
            }
        }
        if seen != wanted {
            return Err(AtlasError::corrupt(format!(
                "{wanted} live datasets declare array {array:?}, its segment holds {seen} of them"
            )));
        }
        // Already in order when one task wrote the segment: then no sort.
        if !rows.is_sorted_by_key(|(ordinal, _)| *ordinal) {
            rows.sort_by_key(|(ordinal, _)| *ordinal);
        }
        Ok(rows.into_iter().map(|(_, row)| row).collect())
    }

    /// Attribute `key` of every live dataset that declares it, in ordinal (write)
    /// order: dataset-level when `array` is `None`, else on that array.
    ///
    /// No request when no live dataset declares it; otherwise one read of the
    /// segment's footer (none if the segment is open or its footer in hand)
    /// and one pass over it, decoding only this attribute's values, without
    /// array-format's open.
    ///
    /// # Errors
    /// [`AtlasError::ArrayNotFound`] for an array the collection does not have,
    /// [`AtlasError::CorruptSegment`], [`AtlasError::Io`].
    pub(crate) async fn attributes_by_dataset(
        &self,
        live: &Live,
        array: Option<&str>,
        key: &str,
    ) -> Result<Vec<(SmolStr, Attr)>> {
        self.attributes_by_dataset_from(live, array, key, Source::Any)
            .await
    }

    /// [`attributes_by_dataset`](Self::attributes_by_dataset), read from
    /// `source` (the index holds dataset-level attributes only).
    pub(crate) async fn attributes_by_dataset_from(
        &self,
        live: &Live,
        array: Option<&str>,
        key: &str,
        source: Source,
    ) -> Result<Vec<(SmolStr, Attr)>> {
        let footer = self.footer();
        let (segment_name, declared) = match array {
            None => (
                DATASETS_SEGMENT,
                declared_per_schema(footer, |s| s.attribute_dtype(key)),
            ),
            Some(array) => {
                let arrays = declared_array(footer, array);
                self.known_array(array, &arrays)?;
                (
                    array,
                    declared_per_schema(footer, |s| {
                        s.array(array).and_then(|m| m.attribute_dtype(key))
                    }),
                )
            }
        };
        let wanted = self.live_declaring(live, &declared);
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        if array.is_none()
            && source == Source::Any
            && let Some(rows) = self
                .indexed_attributes(
                    live,
                    key,
                    |ordinal| {
                        let (name, _) = footer.datasets.get_index(ordinal as usize)?;
                        // The value is in place until `fill` has the dataset's own.
                        Some((name.clone(), Attr::Bool(false)))
                    },
                    |row, attr| row.1 = attr,
                )
                .await
            && rows.len() == wanted.len()
        {
            return Ok(rows);
        }
        let (digest, cells) = self
            .attribute_cells(segment_name, key)
            .await?
            .ok_or_else(|| {
                AtlasError::corrupt(format!(
                    "datasets declare attribute {key:?}, but the container has no {segment_name:?} segment"
                ))
            })?;
        let cells = cells.ok_or_else(|| {
            AtlasError::corrupt(format!(
                "datasets declare attribute {key:?}, but segment {segment_name:?} stores it nowhere"
            ))
        })?;
        let mut rows: Vec<(u32, SmolStr, Attr)> = Vec::with_capacity(wanted.len());
        let mut finder = self.live_finder(live, &declared);
        for (info, cell) in digest.arrays().iter().zip(cells) {
            let Some((ordinal, dtype)) = finder.find(&info.name) else {
                continue;
            };
            let attr = cell.ok_or_else(|| {
                AtlasError::corrupt(format!(
                    "segment {segment_name:?}: dataset {:?} declares attribute {key:?}, but none is stored",
                    info.name
                ))
            })?;
            check_attr_type(&attr, dtype, segment_name, &info.name, key)?;
            rows.push((ordinal, info.name.clone(), attr));
        }
        if rows.len() != wanted.len() {
            return Err(AtlasError::corrupt(format!(
                "{} live datasets declare attribute {key:?}, segment {segment_name:?} holds {} of them",
                wanted.len(),
                rows.len()
            )));
        }
        rows.sort_by_key(|(ordinal, _, _)| *ordinal);
        Ok(rows
            .into_iter()
            .map(|(_, name, attr)| (name, attr))
            .collect())
    }
}
