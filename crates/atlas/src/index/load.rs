//! Reading an index: its footer (one suffix read sent beside the
//! container's open, one more when the Parquet footer is larger than that
//! probe), checked against the container it sits beside on first use; then
//! column chunks of chosen row groups, fetched together and decoded by the
//! `parquet` crate's push decoder, which does no I/O of its own.

use smol_str::SmolStr;
use std::collections::HashMap;
use std::ops::Range;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, TimestampNanosecondType, UInt32Type, UInt64Type};
use arrow_array::{
    Array, ArrayRef, ArrowPrimitiveType, BinaryArray, GenericListArray, PrimitiveArray, StringArray,
};
use atlas_format::{DType, Timestamp};
use atlas_io::{IoError, IoErrorKind, ReadParallelism, object_path, read_ranges, read_suffix};
use bytes::Bytes;
use parquet::DecodeResult;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::arrow::push_decoder::ParquetPushDecoderBuilder;
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};

use super::checksum::{self, ChecksumError};
use super::cores;
use super::meta::{
    CHECKSUMS_SINCE, IndexMeta, IndexedAttribute, IndexedVariable, META_KEY, MetaError, Places,
    RowGroupBounds, StatKind, block_column, bound_columns, chunk_shape_column, chunks_column,
    count_column, nulls_column, shape_column,
};
use crate::read::fold_stats;
use crate::read::{Live, Member, declared_array, declared_by, declared_per_schema};
use crate::{ArrayStats, Attr, Value};
use atlas_segment::{ArrayDigest, ChunkPlace};

/// Bytes read from the end of an index first: its Parquet footer usually fits.
const INDEX_PROBE_LEN: u64 = 64 * 1024;
/// The largest Parquet footer an index may declare; more is a hostile file.
const MAX_FOOTER_LEN: u64 = 256 * 1024 * 1024;
/// Column chunks of one read closer than this are fetched as one range.
const COALESCE_GAP: u64 = 16 * 1024;
/// The Parquet footer's fixed end: metadata length (4) and magic (4).
const PARQUET_TAIL_LEN: u64 = checksum::PARQUET_TAIL_LEN as u64;

/// Why an index is not used; the question is then answered from the footers.
#[derive(Debug, thiserror::Error)]
pub(crate) enum IndexProblem {
    #[error("{0}")]
    Io(#[from] IoError),
    #[error("not a Parquet file: {0}")]
    NotParquet(String),
    #[error("{0}")]
    Meta(#[from] MetaError),
    #[error("it describes another container ({0})")]
    Stale(String),
    #[error("it disagrees with its own Parquet footer: {0}")]
    Inconsistent(String),
    #[error("reading it failed: {0}")]
    Decode(String),
    #[error("{0}")]
    Checksum(#[from] ChecksumError),
}

/// An index found beside a container and matching it, with the column
/// chunks fetched so far.
pub(crate) struct LoadedIndex {
    pub meta: IndexMeta,
    parquet: Arc<ParquetMetaData>,
    /// Its Arrow schema, worked out on the first decode and kept for the
    /// next ones.
    arrow: OnceLock<ArrowReaderMetadata>,
    path: String,
    /// Column chunks fetched, by (leaf column, row group), and those decoded.
    chunks: Mutex<Chunks>,
    /// Most bytes of decoded columns kept between questions.
    decoded_kept: usize,
    /// The CRC32C of every column chunk, row group by row group (`None`
    /// for an index of the first layout, which carries none).
    chunk_crc32c: Option<Vec<u32>>,
}

/// One column chunk of an index as fetched (its range in the file and its
/// checked bytes) and, once its row group was asked for, decoded: a batch
/// of reads fetches many row groups, each decoded when it is used. The
/// fetched bytes stay, so a decoded column let go is decoded again without
/// a request.
struct Chunk {
    range: Range<u64>,
    bytes: Bytes,
    decoded: Option<ArrayRef>,
    /// The question that last asked for it (see [`Chunks::clock`]).
    used: u64,
}

/// The column chunks a handle has fetched, and how much of them it holds
/// decoded.
#[derive(Default)]
struct Chunks {
    cells: HashMap<(usize, usize), Chunk>,
    /// Arrow memory of the decoded columns held.
    decoded: usize,
    /// Counts the questions asked of the chunks.
    clock: u64,
}

impl Chunks {
    /// Lets decoded columns go, those asked for longest ago first, until at
    /// most `kept` bytes are held. Whatever `kept` says, the columns of
    /// question `now` stay, and so does the row group each column was last
    /// asked for: a loop over the datasets asks for it again with the next
    /// dataset, and would otherwise decode a whole row group per read.
    fn trim(&mut self, kept: usize, now: u64) {
        if self.decoded <= kept {
            return;
        }
        let mut newest: HashMap<usize, u64> = HashMap::new();
        for (&(column, _), c) in &self.cells {
            if c.decoded.is_some() {
                let last = newest.entry(column).or_default();
                *last = (*last).max(c.used);
            }
        }
        while self.decoded > kept {
            let oldest = self
                .cells
                .iter_mut()
                .filter(|((column, _), c)| {
                    c.decoded.is_some() && c.used < now && newest.get(column) != Some(&c.used)
                })
                .min_by_key(|(_, c)| c.used)
                .map(|(_, c)| c);
            let Some(chunk) = oldest else {
                break;
            };
            let size = chunk
                .decoded
                .take()
                .map_or(0, |a| a.get_array_memory_size());
            self.decoded = self.decoded.saturating_sub(size);
        }
    }
}

impl std::fmt::Debug for LoadedIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedIndex")
            .field("path", &self.path)
            .field("row_groups", &self.meta.row_groups.len())
            .finish_non_exhaustive()
    }
}

/// Runs `f`; a panic inside the `parquet` crate becomes an [`IndexProblem`].
fn guarded<T>(f: impl FnOnce() -> Result<T, IndexProblem>) -> Result<T, IndexProblem> {
    std::panic::catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".to_owned());
        Err(IndexProblem::Decode(what))
    })
}

/// The last bytes of a container's index (its Parquet footer, usually
/// whole), read beside the container's own tail so that the first
/// collection-wide question does not wait a round trip for them.
#[derive(Debug)]
pub(crate) struct IndexProbe(Result<Option<Bytes>, IoError>);

impl IndexProbe {
    /// Reads the index tail beside the container at `prefix` in `op`:
    /// `None` inside when there is no index.
    pub(crate) async fn read(op: &opendal::Operator, prefix: &str) -> IndexProbe {
        let path = object_path(prefix, atlas_format::INDEX_FILE);
        IndexProbe(match read_suffix(op, &path, INDEX_PROBE_LEN).await {
            Ok(tail) => Ok(Some(tail)),
            Err(e) if e.kind() == IoErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        })
    }
}

/// Reads and checks the index beside `member`: `None` when there is none.
/// Takes the tail read at the open when there is one (a failed probe is
/// read again).
pub(crate) async fn load(member: &Member) -> Result<Option<LoadedIndex>, IndexProblem> {
    let inner = member.inner();
    let path = object_path(&inner.prefix, atlas_format::INDEX_FILE);
    let probed = inner
        .index_probe
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    let probe = match probed {
        Some(probe @ IndexProbe(Ok(_))) => probe,
        _ => IndexProbe::read(&inner.op, &inner.prefix).await,
    };
    let tail = match probe.0 {
        Ok(Some(tail)) => tail,
        Ok(None) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let footer_len = parquet_footer_len(&tail)?;
    let needed = footer_len.saturating_add(PARQUET_TAIL_LEN);
    let tail = if needed <= tail.len() as u64 {
        tail
    } else if (tail.len() as u64) < INDEX_PROBE_LEN {
        return Err(IndexProblem::NotParquet(format!(
            "its footer of {footer_len} bytes is longer than the {} bytes there are",
            tail.len()
        )));
    } else {
        read_suffix(&inner.op, &path, needed).await?
    };
    let start = (tail.len() as u64).checked_sub(needed).ok_or_else(|| {
        IndexProblem::NotParquet("the second read returned less than asked".to_owned())
    })?;
    let metadata_bytes = tail.slice(start as usize..tail.len().saturating_sub(8));
    let parquet = guarded(|| {
        ParquetMetaDataReader::decode_metadata(&metadata_bytes)
            .map_err(|e| IndexProblem::NotParquet(e.to_string()))
    })?;
    let text = key_value(&parquet, META_KEY).ok_or(MetaError::Missing)?;
    let meta = IndexMeta::decode(text)?;
    let chunk_crc32c = if meta.version >= CHECKSUMS_SINCE {
        let entry = |key: &'static str| {
            key_value(&parquet, key).ok_or(IndexProblem::Checksum(ChecksumError::Missing(key)))
        };
        checksum::check_footer(&metadata_bytes, entry(checksum::FOOTER_KEY)?)?;
        let leaves = parquet.file_metadata().schema_descr().num_columns();
        if parquet
            .row_groups()
            .iter()
            .any(|g| g.num_columns() != leaves)
        {
            return Err(IndexProblem::Inconsistent(
                "a row group has another number of columns than the schema".to_owned(),
            ));
        }
        let count = leaves.saturating_mul(parquet.num_row_groups());
        Some(checksum::decode_chunks(
            entry(checksum::CHUNKS_KEY)?,
            count,
        )?)
    } else {
        None
    };
    let identity = member.identity();
    if meta.container != identity {
        return Err(IndexProblem::Stale(format!(
            "it was built for a container of {} bytes, footer CRC32C {:08x}, {} datasets; \
             this one has {} bytes, {:08x}, {}",
            meta.container.bytes,
            meta.container.footer_crc32c,
            meta.container.datasets,
            identity.bytes,
            identity.footer_crc32c,
            identity.datasets
        )));
    }
    check_row_groups(&meta, &parquet)?;
    Ok(Some(LoadedIndex {
        meta,
        parquet: Arc::new(parquet),
        arrow: OnceLock::new(),
        path,
        chunks: Mutex::default(),
        decoded_kept: member.inner().index_cache_bytes,
        chunk_crc32c,
    }))
}

/// The value of key-value entry `key` of an index's Parquet footer.
fn key_value<'a>(parquet: &'a ParquetMetaData, key: &str) -> Option<&'a str> {
    parquet
        .file_metadata()
        .key_value_metadata()?
        .iter()
        .find(|kv| kv.key == key)?
        .value
        .as_deref()
}

/// The metadata length a Parquet file's last 8 bytes declare.
fn parquet_footer_len(tail: &[u8]) -> Result<u64, IndexProblem> {
    let Some([a, b, c, d, magic @ ..]) = tail.last_chunk::<8>() else {
        return Err(IndexProblem::NotParquet(format!(
            "{} bytes are too few",
            tail.len()
        )));
    };
    if magic != b"PAR1" {
        return Err(IndexProblem::NotParquet(
            "no PAR1 magic at its end".to_owned(),
        ));
    }
    let len = u64::from(u32::from_le_bytes([*a, *b, *c, *d]));
    if len > MAX_FOOTER_LEN {
        return Err(IndexProblem::NotParquet(format!(
            "it declares a footer of {len} bytes"
        )));
    }
    Ok(len)
}

/// The row groups the metadata names must be the file's, contiguous from
/// ordinal 0 and covering every dataset.
fn check_row_groups(meta: &IndexMeta, parquet: &ParquetMetaData) -> Result<(), IndexProblem> {
    let groups = parquet.row_groups();
    if groups.len() != meta.row_groups.len() {
        return Err(IndexProblem::Inconsistent(format!(
            "{} row groups in the file, {} described",
            groups.len(),
            meta.row_groups.len()
        )));
    }
    let mut next = 0u64;
    for (described, group) in meta.row_groups.iter().zip(groups) {
        let rows = u64::try_from(group.num_rows()).unwrap_or(u64::MAX);
        if described.first != next || described.rows != rows {
            return Err(IndexProblem::Inconsistent(format!(
                "a row group of {rows} rows is described as {} from {}",
                described.rows, described.first
            )));
        }
        next = next.saturating_add(rows);
    }
    if next != meta.container.datasets {
        return Err(IndexProblem::Inconsistent(format!(
            "{next} rows for {} datasets",
            meta.container.datasets
        )));
    }
    Ok(())
}

/// Fetched column chunks of one row group waiting to be decoded.
struct Decoding {
    group: usize,
    leaves: Vec<usize>,
    held: Vec<(Range<u64>, Bytes)>,
}

impl LoadedIndex {
    /// Arrow memory of the decoded columns held between questions.
    pub(crate) fn decoded_bytes(&self) -> usize {
        self.chunks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .decoded
    }

    /// The leaf column of top-level column `name` (a list's one leaf).
    fn leaf(&self, name: &str) -> Result<usize, IndexProblem> {
        self.parquet
            .file_metadata()
            .schema_descr()
            .columns()
            .iter()
            .position(|c| c.path().parts().first().map(String::as_str) == Some(name))
            .ok_or_else(|| IndexProblem::Inconsistent(format!("it has no column {name:?}")))
    }

    /// Columns `names` of row groups `groups`: per group, one array per
    /// name. Chunks not fetched before are fetched in one batch of
    /// concurrent reads and kept.
    async fn columns(
        &self,
        member: &Member,
        names: &[String],
        groups: &[usize],
    ) -> Result<Vec<Vec<ArrayRef>>, IndexProblem> {
        let leaves = self.leaves(names)?;
        self.fetch_missing(member, &leaves, groups).await?;
        self.kept(&leaves, groups)?
            .ok_or_else(|| IndexProblem::Decode("a row group was not fetched".to_owned()))
    }

    /// Fetches columns `leaves` of those of row groups `groups` not
    /// fetched before, in one batch of concurrent reads.
    async fn fetch_missing(
        &self,
        member: &Member,
        leaves: &[usize],
        groups: &[usize],
    ) -> Result<(), IndexProblem> {
        let missing: Vec<usize> = {
            let chunks = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
            groups
                .iter()
                .copied()
                .filter(|&g| leaves.iter().any(|&l| !chunks.cells.contains_key(&(l, g))))
                .collect()
        };
        if missing.is_empty() {
            return Ok(());
        }
        self.fetch(member, leaves, &missing).await
    }

    /// The leaf columns of top-level columns `names`.
    fn leaves(&self, names: &[String]) -> Result<Vec<usize>, IndexProblem> {
        names.iter().map(|n| self.leaf(n)).collect()
    }

    /// Columns `leaves` of row groups `groups` from the chunks fetched
    /// before, decoded now if they were not: per group one array per leaf.
    /// `None` unless every one of them was fetched; no I/O.
    fn kept(
        &self,
        leaves: &[usize],
        groups: &[usize],
    ) -> Result<Option<Vec<Vec<ArrayRef>>>, IndexProblem> {
        // The lock is held while decoding, so that concurrent readers of one
        // row group wait for its one decode instead of decoding it each.
        let mut chunks = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
        chunks.clock = chunks.clock.saturating_add(1);
        let now = chunks.clock;
        let work: Vec<Decoding> = groups
            .iter()
            .filter_map(|&g| {
                let (leaves, held): (Vec<usize>, Vec<(Range<u64>, Bytes)>) = leaves
                    .iter()
                    .filter_map(|&l| match chunks.cells.get(&(l, g)) {
                        Some(c) if c.decoded.is_none() => {
                            Some((l, (c.range.clone(), c.bytes.clone())))
                        }
                        _ => None,
                    })
                    .unzip();
                (!leaves.is_empty()).then_some(Decoding {
                    group: g,
                    leaves,
                    held,
                })
            })
            .collect();
        let decoded = self.decode_all(&work)?;
        let mut added = 0usize;
        for (done, arrays) in work.iter().zip(decoded) {
            for (&l, array) in done.leaves.iter().zip(arrays) {
                if let Some(chunk) = chunks.cells.get_mut(&(l, done.group)) {
                    added = added.saturating_add(array.get_array_memory_size());
                    chunk.decoded = Some(array);
                }
            }
        }
        chunks.decoded = chunks.decoded.saturating_add(added);
        let mut out = Vec::with_capacity(groups.len());
        let mut complete = true;
        for &g in groups {
            let row: Option<Vec<ArrayRef>> = leaves
                .iter()
                .map(|&l| {
                    let chunk = chunks.cells.get_mut(&(l, g))?;
                    chunk.used = now;
                    chunk.decoded.clone()
                })
                .collect();
            match row {
                Some(row) => out.push(row),
                None => complete = false,
            }
        }
        chunks.trim(self.decoded_kept, now);
        Ok(complete.then_some(out))
    }

    /// Decodes each of `work`'s row groups (per group, one array per leaf).
    /// With more than one core and more than one group, the later half is
    /// decoded on a second thread meanwhile; should that thread not start,
    /// it is decoded here after the first.
    fn decode_all(&self, work: &[Decoding]) -> Result<Vec<Vec<ArrayRef>>, IndexProblem> {
        let decode_part = |part: &[Decoding]| -> Result<Vec<Vec<ArrayRef>>, IndexProblem> {
            part.iter()
                .map(|d| {
                    let mut groups = guarded(|| self.decode(&d.leaves, &[d.group], &d.held))?;
                    groups
                        .pop()
                        .ok_or_else(|| IndexProblem::Decode("a row group did not decode".into()))
                })
                .collect()
        };
        if work.len() < 2 || cores() < 2 {
            return decode_part(work);
        }
        let (first, later) = work.split_at(work.len() / 2);
        std::thread::scope(|scope| {
            let beside = std::thread::Builder::new()
                .name("atlas-index-decode".into())
                .spawn_scoped(scope, || decode_part(later));
            let mut out = decode_part(first)?;
            let later = match beside {
                Ok(thread) => thread
                    .join()
                    .map_err(|_| IndexProblem::Decode("decoding the index stopped".into()))??,
                Err(_) => decode_part(later)?,
            };
            out.extend(later);
            Ok(out)
        })
    }

    /// Reads columns `leaves` of row groups `groups` and keeps them,
    /// checked against their checksums, to be decoded when first used.
    async fn fetch(
        &self,
        member: &Member,
        leaves: &[usize],
        groups: &[usize],
    ) -> Result<(), IndexProblem> {
        let mut ranges: Vec<Range<u64>> = Vec::new();
        for &g in groups {
            let group = self
                .parquet
                .row_groups()
                .get(g)
                .ok_or_else(|| IndexProblem::Inconsistent(format!("no row group {g}")))?;
            for &l in leaves {
                let column = group.columns().get(l).ok_or_else(|| {
                    IndexProblem::Inconsistent(format!("row group {g} has no column {l}"))
                })?;
                let (start, len) = column.byte_range();
                ranges.push(start..start.saturating_add(len));
            }
        }
        let chunks = ranges.clone();
        let ranges = coalesce(ranges);
        let op = &member.inner().op;
        let policy = ReadParallelism::for_operator(op);
        let fetched = read_ranges(op, &self.path, &ranges, &policy).await?;
        let held: Vec<(Range<u64>, Bytes)> = ranges.into_iter().zip(fetched).collect();
        if let Some(crcs) = &self.chunk_crc32c {
            let leaf_count = self.parquet.file_metadata().schema_descr().num_columns();
            let cells = groups
                .iter()
                .flat_map(|&g| leaves.iter().map(move |&l| (g, l)));
            for ((g, l), range) in cells.zip(&chunks) {
                let expected = g
                    .checked_mul(leaf_count)
                    .and_then(|at| at.checked_add(l))
                    .and_then(|at| crcs.get(at))
                    .ok_or_else(|| {
                        IndexProblem::Inconsistent(format!(
                            "no checksum of column {l} of row group {g}"
                        ))
                    })?;
                checksum::check_chunk(&slice_of(&held, range)?, *expected, g, l)?;
            }
        }
        let cells = groups
            .iter()
            .flat_map(|&g| leaves.iter().map(move |&l| (l, g)));
        let fetched = cells
            .zip(chunks)
            .map(|(cell, range)| Ok((cell, slice_of(&held, &range)?, range)))
            .collect::<Result<Vec<_>, IndexProblem>>()?;
        let mut kept = self.chunks.lock().unwrap_or_else(|e| e.into_inner());
        for (cell, bytes, range) in fetched {
            kept.cells.entry(cell).or_insert(Chunk {
                range,
                bytes,
                decoded: None,
                used: 0,
            });
        }
        Ok(())
    }

    /// Decodes what `held` holds: per group, one array per leaf.
    fn decode(
        &self,
        leaves: &[usize],
        groups: &[usize],
        held: &[(Range<u64>, Bytes)],
    ) -> Result<Vec<Vec<ArrayRef>>, IndexProblem> {
        let fail = |e: parquet::errors::ParquetError| IndexProblem::Decode(e.to_string());
        let batch_rows = self
            .meta
            .row_groups
            .iter()
            .map(|g| usize::try_from(g.rows).unwrap_or(usize::MAX))
            .max()
            .unwrap_or(1)
            .max(1);
        let schema = self.parquet.file_metadata().schema_descr();
        let arrow = match self.arrow.get() {
            Some(arrow) => arrow.clone(),
            None => {
                let arrow = ArrowReaderMetadata::try_new(
                    Arc::clone(&self.parquet),
                    ArrowReaderOptions::default(),
                )
                .map_err(fail)?;
                self.arrow.get_or_init(|| arrow).clone()
            }
        };
        let mut decoder = ParquetPushDecoderBuilder::new_with_metadata(arrow)
            .with_projection(ProjectionMask::leaves(schema, leaves.iter().copied()))
            .with_row_groups(groups.to_vec())
            .with_batch_size(batch_rows)
            .build()
            .map_err(fail)?;
        let mut out = Vec::with_capacity(groups.len());
        loop {
            match decoder.try_next_reader().map_err(fail)? {
                DecodeResult::NeedsData(ranges) => {
                    let data = ranges
                        .iter()
                        .map(|r| slice_of(held, r))
                        .collect::<Result<Vec<_>, _>>()?;
                    decoder.push_ranges(ranges, data).map_err(fail)?;
                }
                DecodeResult::Data(reader) => {
                    let mut batches = reader
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|e| IndexProblem::Decode(e.to_string()))?;
                    let batch = match batches.len() {
                        1 => batches.pop(),
                        _ => None,
                    }
                    .ok_or_else(|| {
                        IndexProblem::Decode("a row group did not decode as one batch".into())
                    })?;
                    if batch.num_columns() != leaves.len() {
                        return Err(IndexProblem::Decode(format!(
                            "{} columns decoded, {} asked",
                            batch.num_columns(),
                            leaves.len()
                        )));
                    }
                    // Projected columns come in file order, as `leaves` are once sorted.
                    let mut by_leaf: Vec<(usize, ArrayRef)> = {
                        let mut sorted: Vec<usize> = leaves.to_vec();
                        sorted.sort_unstable();
                        sorted
                            .into_iter()
                            .zip(batch.columns().iter().cloned())
                            .collect()
                    };
                    by_leaf.sort_by_key(|(l, _)| leaves.iter().position(|x| x == l));
                    out.push(by_leaf.into_iter().map(|(_, a)| a).collect());
                }
                DecodeResult::Finished => break,
            }
        }
        if out.len() != groups.len() {
            return Err(IndexProblem::Decode(format!(
                "{} row groups decoded, {} asked",
                out.len(),
                groups.len()
            )));
        }
        Ok(out)
    }

    /// The row groups holding the datasets `live` covers.
    pub(crate) fn groups_of(&self, live: &Live) -> Vec<usize> {
        self.meta.groups_holding(live.ordinals())
    }

    /// The statistics of `variable` folded over the datasets of `live`, from
    /// the row groups' totals alone (no request), when `live` holds each row
    /// group whole or not at all and the index keeps totals of the variable.
    /// `None`: ask the rows.
    pub(crate) fn totals(
        &self,
        variable: &IndexedVariable,
        live: &Live,
    ) -> Option<Option<ArrayStats>> {
        if !variable.totals {
            return None;
        }
        let mut totals = Vec::new();
        let mut covered = 0usize;
        for group in &self.meta.row_groups {
            let first = u32::try_from(group.first).ok()?;
            let rows = u32::try_from(group.rows).ok()?;
            let live_rows = (first..first.checked_add(rows)?)
                .filter(|&o| live.contains(o))
                .count();
            if live_rows == 0 {
                continue;
            }
            if live_rows != rows as usize {
                return None;
            }
            covered = covered.saturating_add(live_rows);
            totals.extend(group.totals.iter().find(|t| t.name == variable.name));
        }
        (covered == live.count()).then(|| fold_stats(totals.iter().map(|t| t.stats())))
    }

    /// One row per dataset of `live` declaring `variable`, in ordinal order:
    /// laid out by `lay` from its ordinal and declared type while the
    /// statistics columns are fetched (`None` leaves the dataset out), then
    /// completed by `fill` with its statistics (`None` where none are
    /// recorded; `false` drops the row). The caller's rows are built here, so
    /// nothing is copied twice.
    pub(crate) async fn stats<T>(
        &self,
        member: &Member,
        variable: &IndexedVariable,
        live: &Live,
        mut lay: impl FnMut(u32, &DType) -> Option<T>,
        mut fill: impl FnMut(&mut T, Option<ArrayStats>) -> bool,
    ) -> Result<Vec<T>, IndexProblem> {
        let mut names = vec![count_column(&variable.name), nulls_column(&variable.name)];
        names.extend(bound_columns(variable));
        let groups = self.groups_of(live);
        let footer = member.footer();
        let declared = declared_array(footer, &variable.name);
        let (columns, mut laid) = self
            .columns_laying_out(member, &names, &groups, live, |ordinal| {
                lay(ordinal, declared_by(footer, &declared, ordinal)?)
            })
            .await?;
        let mut per_group = Vec::with_capacity(columns.len());
        for (&g, arrays) in groups.iter().zip(&columns) {
            let [count, nulls, bounds @ ..] = arrays.as_slice() else {
                return Err(IndexProblem::Decode("missing statistics columns".into()));
            };
            let count = count
                .as_primitive_opt::<UInt64Type>()
                .ok_or_else(wrong_type)?;
            let nulls = nulls
                .as_primitive_opt::<UInt64Type>()
                .ok_or_else(wrong_type)?;
            let rows = self.rows_of(g)?;
            if count.len() != rows || nulls.len() != rows {
                return Err(wrong_type());
            }
            let bounds = bounds
                .iter()
                .map(|c| StatColumn::new(variable.kind, c, rows))
                .collect::<Result<Vec<_>, _>>()?;
            per_group.push((count, nulls, bounds));
        }
        let mut keep = Vec::with_capacity(laid.rows.len());
        for (out, &(group, at)) in laid.rows.iter_mut().zip(&laid.cells) {
            let (count, nulls, bounds) = per_group.get(group).ok_or_else(wrong_type)?;
            let stats = if count.is_null(at) {
                None
            } else {
                let min = bounds.first().and_then(|c| c.at(at));
                let max = match bounds.get(1) {
                    Some(c) => c.at(at),
                    None => min.clone(),
                };
                if nulls.is_null(at) {
                    return Err(IndexProblem::Decode(format!(
                        "row {} has a count of {:?} but no null count",
                        self.ordinal_at(&groups, group, at),
                        variable.name
                    )));
                }
                Some(ArrayStats {
                    min,
                    max,
                    null_count: nulls.value(at),
                    row_count: count.value(at),
                })
            };
            keep.push(fill(out, stats));
        }
        Ok(laid.keep(&keep))
    }

    /// The shape and first block of `variable` of each dataset of `live`
    /// declaring it, in ordinal order, as (ordinal, declared type, shape,
    /// first block).
    #[allow(clippy::type_complexity)]
    pub(crate) async fn layouts(
        &self,
        member: &Member,
        variable: &IndexedVariable,
        live: &Live,
    ) -> Result<Vec<(u32, DType, Vec<u64>, Option<u32>)>, IndexProblem> {
        let names = [shape_column(&variable.name), block_column(&variable.name)];
        let groups = self.groups_of(live);
        let columns = self.columns(member, &names, &groups).await?;
        let footer = member.footer();
        let declared = declared_array(footer, &variable.name);
        let mut out = Vec::new();
        for (&g, arrays) in groups.iter().zip(&columns) {
            let first = self.first_of(g)?;
            let [shapes, blocks] = arrays.as_slice() else {
                return Err(IndexProblem::Decode("missing layout columns".into()));
            };
            let shapes = ListRows::<UInt64Type>::new(shapes)?;
            let blocks = blocks
                .as_primitive_opt::<UInt32Type>()
                .ok_or_else(wrong_type)?;
            if blocks.len() != shapes.len() {
                return Err(wrong_type());
            }
            for (row, ordinal) in live_rows(first, shapes.len(), live) {
                let Some(dtype) = declared_by(footer, &declared, ordinal) else {
                    continue;
                };
                let Some(shape) = shapes.row(row)? else {
                    return Err(IndexProblem::Decode(format!(
                        "dataset {ordinal} declares {:?} but has no shape",
                        variable.name
                    )));
                };
                let block = (!blocks.is_null(row)).then(|| blocks.value(row));
                out.push((ordinal, dtype.clone(), shape.to_vec(), block));
            }
        }
        Ok(out)
    }

    /// Where the arrays of `variable` lie in the datasets of each row group
    /// of `groups` that declare it (deleted ones too), from the groups'
    /// chunk columns (fetched in one batch): what
    /// [`ContainerSegments::open_placed`](atlas_segment::ContainerSegments::open_placed)
    /// makes a view of the segment from, per group. `None` when the index
    /// records no places for the variable.
    pub(crate) async fn placed_arrays(
        &self,
        member: &Member,
        variable: &IndexedVariable,
        groups: &[usize],
        ordinals: Option<Range<u32>>,
    ) -> Result<Option<Vec<Vec<ArrayDigest>>>, IndexProblem> {
        let Some(places) = &variable.places else {
            return Ok(None);
        };
        let columns = self
            .columns(member, &place_columns(variable), groups)
            .await?;
        let mut out = Vec::with_capacity(groups.len());
        for (&group, arrays) in groups.iter().zip(&columns) {
            out.push(self.placed_group(
                member,
                variable,
                places,
                group,
                arrays,
                ordinals.clone(),
            )?);
        }
        Ok(Some(out))
    }

    /// Fetches and keeps the chunk-place columns of `variable` for row
    /// groups `groups` (one batch of reads), so the views made from them
    /// later cost no request; each group is decoded when a view first
    /// needs it.
    pub(crate) async fn fetch_places(
        &self,
        member: &Member,
        variable: &IndexedVariable,
        groups: &[usize],
    ) -> Result<(), IndexProblem> {
        let leaves = self.leaves(&place_columns(variable))?;
        self.fetch_missing(member, &leaves, groups).await
    }

    /// [`LoadedIndex::placed_arrays`] of one row group (the datasets of
    /// `ordinals` in it), from chunk columns fetched before and without I/O:
    /// `Ok(None)` when they are not in hand or the index records no places
    /// for the variable.
    pub(crate) fn placed_kept(
        &self,
        member: &Member,
        variable: &IndexedVariable,
        group: usize,
        ordinals: Range<u32>,
    ) -> Result<Option<Vec<ArrayDigest>>, IndexProblem> {
        let Some(places) = &variable.places else {
            return Ok(None);
        };
        let leaves = self.leaves(&place_columns(variable))?;
        let Some(columns) = self.kept(&leaves, &[group])?.and_then(|mut c| c.pop()) else {
            return Ok(None);
        };
        self.placed_group(member, variable, places, group, &columns, Some(ordinals))
            .map(Some)
    }

    /// [`LoadedIndex::placed_arrays`] of one row group, from its decoded
    /// chunk columns: every dataset declaring the variable, or with
    /// `ordinals` those of them in that range.
    fn placed_group(
        &self,
        member: &Member,
        variable: &IndexedVariable,
        places: &Places,
        group: usize,
        columns: &[ArrayRef],
        ordinals: Option<Range<u32>>,
    ) -> Result<Vec<ArrayDigest>, IndexProblem> {
        let [shapes, chunk_shapes, chunks] = columns else {
            return Err(IndexProblem::Decode("missing chunk columns".into()));
        };
        let shapes = ListRows::<UInt64Type>::new(shapes)?;
        let chunk_shapes = ListRows::<UInt32Type>::new(chunk_shapes)?;
        let chunks = ListRows::<UInt32Type>::new(chunks)?;
        if chunk_shapes.len() != shapes.len() || chunks.len() != shapes.len() {
            return Err(wrong_type());
        }
        let first = self.first_of(group)?;
        let rows = match ordinals {
            None => 0..shapes.len(),
            Some(wanted) => {
                let row = |o: u32| (o.saturating_sub(first) as usize).min(shapes.len());
                row(wanted.start)..row(wanted.end)
            }
        };
        let footer = member.footer();
        let declared = declared_array(footer, &variable.name);
        let dims: Arc<[String]> = places.dimension_names.as_slice().into();
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let Some(ordinal) = u32::try_from(row).ok().and_then(|r| first.checked_add(r)) else {
                break;
            };
            if declared_by(footer, &declared, ordinal).is_none() {
                continue;
            }
            let Some((name, _)) = footer.datasets.get_index(ordinal as usize) else {
                return Err(IndexProblem::Inconsistent(format!("no dataset {ordinal}")));
            };
            let (Some(shape), Some(chunk_shape), Some(flat)) =
                (shapes.row(row)?, chunk_shapes.row(row)?, chunks.row(row)?)
            else {
                return Err(IndexProblem::Decode(format!(
                    "dataset {ordinal} declares {:?} but has no chunk places",
                    variable.name
                )));
            };
            let per_chunk = shape.len().saturating_add(3);
            if flat.len() % per_chunk != 0 {
                return Err(IndexProblem::Decode(format!(
                    "dataset {ordinal}: {} chunk numbers of {:?} are not whole chunks",
                    flat.len(),
                    variable.name
                )));
            }
            let placed = flat
                .chunks_exact(per_chunk)
                .filter_map(|c| {
                    let (coord, [block, offset, size]) = c.split_last_chunk::<3>()?;
                    Some(ChunkPlace {
                        coord: coord.iter().copied().collect(),
                        block: *block,
                        offset: *offset,
                        size: *size,
                    })
                })
                .collect();
            out.push(ArrayDigest::placed(
                SmolStr::new(name),
                places.dtype.clone(),
                shape.into(),
                chunk_shape.into(),
                Arc::clone(&dims),
                places.fill.clone(),
                placed,
            ));
        }
        Ok(out)
    }

    /// Attribute `attribute` of each dataset of `live` declaring it, in
    /// ordinal order: one row each laid out by `lay` from the dataset's
    /// ordinal while the column is fetched (`None` leaves the dataset out),
    /// then completed by `fill` with its value.
    pub(crate) async fn attributes<T>(
        &self,
        member: &Member,
        attribute: &IndexedAttribute,
        live: &Live,
        mut lay: impl FnMut(u32) -> Option<T>,
        mut fill: impl FnMut(&mut T, Attr),
    ) -> Result<Vec<T>, IndexProblem> {
        let groups = self.groups_of(live);
        let footer = member.footer();
        let declares = declared_per_schema(footer, |s| s.attribute_dtype(&attribute.key));
        let (columns, mut laid) = self
            .columns_laying_out(
                member,
                std::slice::from_ref(&attribute.column),
                &groups,
                live,
                |ordinal| {
                    declared_by(footer, &declares, ordinal)?;
                    lay(ordinal)
                },
            )
            .await?;
        let mut per_group = Vec::with_capacity(columns.len());
        for (&g, arrays) in groups.iter().zip(&columns) {
            let column = arrays.first().ok_or_else(wrong_type)?;
            if column.len() != self.rows_of(g)? {
                return Err(wrong_type());
            }
            per_group.push(column);
        }
        for (out, &(group, at)) in laid.rows.iter_mut().zip(&laid.cells) {
            let column = per_group.get(group).ok_or_else(wrong_type)?;
            let attr = attr_at(&attribute.dtype, column, at)?.ok_or_else(|| {
                IndexProblem::Decode(format!(
                    "dataset {} declares {:?} but its cell is empty",
                    self.ordinal_at(&groups, group, at),
                    attribute.key
                ))
            })?;
            fill(out, attr);
        }
        Ok(laid.rows)
    }

    /// [`columns`](Self::columns), and meanwhile, while those of them not
    /// fetched before are on their way, the rows of a question laid out:
    /// one per dataset of `live` in `groups`, made by `lay` from its ordinal
    /// (`None` leaves it out). Nothing the rows start with needs the index's
    /// bytes (names, declared types), so that work costs no time of its own
    /// on a store with latency.
    async fn columns_laying_out<T>(
        &self,
        member: &Member,
        names: &[String],
        groups: &[usize],
        live: &Live,
        lay: impl FnMut(u32) -> Option<T>,
    ) -> Result<(Vec<Vec<ArrayRef>>, Laid<T>), IndexProblem> {
        // `join` polls the fetch first, so its reads are sent before the
        // rows are laid out.
        let (columns, laid) = futures::join!(self.columns(member, names, groups), async {
            self.lay_out(groups, live, lay)
        });
        Ok((columns?, laid?))
    }

    /// The rows `lay` makes for the datasets of `live` in `groups`, in
    /// ordinal order, with the cell each one's values are in.
    fn lay_out<T>(
        &self,
        groups: &[usize],
        live: &Live,
        mut lay: impl FnMut(u32) -> Option<T>,
    ) -> Result<Laid<T>, IndexProblem> {
        let mut laid = Laid {
            rows: Vec::with_capacity(live.count()),
            cells: Vec::with_capacity(live.count()),
        };
        for (at_group, &g) in groups.iter().enumerate() {
            for (at, ordinal) in live_rows(self.first_of(g)?, self.rows_of(g)?, live) {
                if let Some(row) = lay(ordinal) {
                    laid.rows.push(row);
                    laid.cells.push((at_group, at));
                }
            }
        }
        Ok(laid)
    }

    /// The ordinal of row `at` of the `group`th of `groups`, for messages.
    fn ordinal_at(&self, groups: &[usize], group: usize, at: usize) -> String {
        groups
            .get(group)
            .and_then(|&g| self.row_group(g).ok())
            .and_then(|g| g.first.checked_add(u64::try_from(at).ok()?))
            .map_or_else(|| "?".to_owned(), |o| o.to_string())
    }

    /// How many rows row group `group` holds.
    fn rows_of(&self, group: usize) -> Result<usize, IndexProblem> {
        let rows = self.row_group(group)?.rows;
        usize::try_from(rows).map_err(|_| bad_row_group(group))
    }

    /// The ordinal of row group `group`'s first row.
    fn first_of(&self, group: usize) -> Result<u32, IndexProblem> {
        let first = self.row_group(group)?.first;
        u32::try_from(first).map_err(|_| bad_row_group(group))
    }

    /// What the index's own metadata says of row group `group`.
    fn row_group(&self, group: usize) -> Result<&RowGroupBounds, IndexProblem> {
        self.meta
            .row_groups
            .get(group)
            .ok_or_else(|| bad_row_group(group))
    }
}

/// A question's rows as laid out before the index columns are at hand, and
/// where each row's cells are: (position among the question's row groups,
/// row in that group).
struct Laid<T> {
    rows: Vec<T>,
    cells: Vec<(usize, usize)>,
}

impl<T> Laid<T> {
    /// The rows whose flag in `keep` (one per row, in order) is set.
    fn keep(self, keep: &[bool]) -> Vec<T> {
        let mut rows = self.rows;
        let mut flags = keep.iter();
        rows.retain(|_| flags.next().copied().unwrap_or(false));
        rows
    }
}

/// The columns of `variable` that say where its arrays' chunks lie.
fn place_columns(variable: &IndexedVariable) -> [String; 3] {
    [
        shape_column(&variable.name),
        chunk_shape_column(&variable.name),
        chunks_column(&variable.name),
    ]
}

/// A list column's rows as slices of its one values buffer: no allocation
/// per row (a list's `value(row)` makes an array per call).
struct ListRows<'a, T: ArrowPrimitiveType> {
    list: &'a GenericListArray<i32>,
    values: &'a [T::Native],
}

impl<'a, T: ArrowPrimitiveType> ListRows<'a, T> {
    fn new(column: &'a ArrayRef) -> Result<Self, IndexProblem> {
        let list = column.as_list_opt::<i32>().ok_or_else(wrong_type)?;
        let values = list
            .values()
            .as_primitive_opt::<T>()
            .ok_or_else(wrong_type)?
            .values();
        Ok(ListRows {
            list,
            values: values.as_ref(),
        })
    }

    fn len(&self) -> usize {
        self.list.len()
    }

    /// Row `row`'s elements; `None` for a null row.
    fn row(&self, row: usize) -> Result<Option<&'a [T::Native]>, IndexProblem> {
        if self.list.is_null(row) {
            return Ok(None);
        }
        let offsets = self.list.value_offsets();
        let bound = |i: usize| {
            offsets
                .get(i)
                .and_then(|&o| usize::try_from(o).ok())
                .ok_or_else(wrong_type)
        };
        let (start, end) = (bound(row)?, bound(row.saturating_add(1))?);
        self.values.get(start..end).map(Some).ok_or_else(wrong_type)
    }
}

/// The rows of a row group whose first dataset is `first` that `live`
/// covers, with their ordinals.
fn live_rows(first: u32, rows: usize, live: &Live) -> impl Iterator<Item = (usize, u32)> + '_ {
    (0..rows)
        .map_while(move |row| Some((row, first.checked_add(u32::try_from(row).ok()?)?)))
        .filter(move |&(_, ordinal)| live.contains(ordinal))
}

/// Ranges sorted and joined where at most [`COALESCE_GAP`] bytes lie between
/// them: the chunks a question needs of one row group sit side by side
/// (a variable's count, nulls, bounds, shape and block columns; neighbouring
/// variables), so one request fetches them together.
fn coalesce(mut ranges: Vec<Range<u64>>) -> Vec<Range<u64>> {
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match out.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(COALESCE_GAP) => {
                last.end = last.end.max(r.end);
            }
            _ => out.push(r),
        }
    }
    out
}

/// A row group the index's metadata does not have, or cannot hold.
fn bad_row_group(group: usize) -> IndexProblem {
    IndexProblem::Inconsistent(format!("no row group {group}"))
}

fn wrong_type() -> IndexProblem {
    IndexProblem::Decode("a column holds another type than its layout says".into())
}

/// The bytes of `range`, from the one fetched chunk that holds it.
fn slice_of(held: &[(Range<u64>, Bytes)], range: &Range<u64>) -> Result<Bytes, IndexProblem> {
    held.iter()
        .find(|(r, _)| r.start <= range.start && range.end <= r.end)
        .and_then(|(r, bytes)| {
            let start = usize::try_from(range.start.checked_sub(r.start)?).ok()?;
            let end = usize::try_from(range.end.checked_sub(r.start)?).ok()?;
            (end <= bytes.len() && start <= end).then(|| bytes.slice(start..end))
        })
        .ok_or_else(|| {
            IndexProblem::Decode(format!(
                "bytes {}..{} lie outside the column chunks read",
                range.start, range.end
            ))
        })
}

/// A bounds column of one row group, its Arrow type checked once against
/// the variable's statistic kind.
enum StatColumn<'a> {
    Int(&'a PrimitiveArray<Int64Type>),
    UInt(&'a PrimitiveArray<UInt64Type>),
    Float(&'a PrimitiveArray<Float64Type>),
    Timestamp(&'a PrimitiveArray<TimestampNanosecondType>),
    Text(&'a StringArray),
    Bytes(&'a BinaryArray),
}

impl<'a> StatColumn<'a> {
    /// `column` read as statistics of kind `kind`; it must hold `rows` rows.
    fn new(kind: StatKind, column: &'a ArrayRef, rows: usize) -> Result<Self, IndexProblem> {
        if column.len() != rows {
            return Err(wrong_type());
        }
        Ok(match kind {
            StatKind::Int => Self::Int(column.as_primitive_opt().ok_or_else(wrong_type)?),
            StatKind::UInt => Self::UInt(column.as_primitive_opt().ok_or_else(wrong_type)?),
            StatKind::Float => Self::Float(column.as_primitive_opt().ok_or_else(wrong_type)?),
            StatKind::Timestamp => {
                Self::Timestamp(column.as_primitive_opt().ok_or_else(wrong_type)?)
            }
            StatKind::Text => Self::Text(column.as_string_opt().ok_or_else(wrong_type)?),
            StatKind::Bytes => Self::Bytes(column.as_binary_opt().ok_or_else(wrong_type)?),
        })
    }

    /// The statistic at `row`, a row [`StatColumn::new`] checked is there
    /// (`None` where the cell is empty).
    fn at(&self, row: usize) -> Option<Value> {
        let valid = |column: &dyn Array| row < column.len() && !column.is_null(row);
        Some(match self {
            Self::Int(c) if valid(*c) => Value::Int(c.value(row)),
            Self::UInt(c) if valid(*c) => Value::UInt(c.value(row)),
            Self::Float(c) if valid(*c) => Value::Float(c.value(row)),
            Self::Timestamp(c) if valid(*c) => Value::Timestamp(Timestamp(c.value(row))),
            Self::Text(c) if valid(*c) => Value::Bytes(c.value(row).as_bytes().to_vec()),
            Self::Bytes(c) if valid(*c) => Value::Bytes(c.value(row).to_vec()),
            _ => return None,
        })
    }
}

/// An attribute of type `dtype` at `row` (`None` where the cell is empty).
fn attr_at(dtype: &DType, column: &ArrayRef, row: usize) -> Result<Option<Attr>, IndexProblem> {
    use arrow_array::types::{
        Float32Type, Int8Type, Int16Type, Int32Type, UInt8Type, UInt16Type, UInt32Type,
    };
    if row >= column.len() {
        return Err(wrong_type());
    }
    if column.is_null(row) {
        return Ok(None);
    }
    macro_rules! primitive {
        ($t:ty, $variant:ident) => {
            Attr::$variant(
                column
                    .as_primitive_opt::<$t>()
                    .ok_or_else(wrong_type)?
                    .value(row),
            )
        };
    }
    Ok(Some(match dtype {
        DType::Bool => Attr::Bool(column.as_boolean_opt().ok_or_else(wrong_type)?.value(row)),
        DType::Int8 => primitive!(Int8Type, Int8),
        DType::Int16 => primitive!(Int16Type, Int16),
        DType::Int32 => primitive!(Int32Type, Int32),
        DType::Int64 => primitive!(Int64Type, Int64),
        DType::UInt8 => primitive!(UInt8Type, UInt8),
        DType::UInt16 => primitive!(UInt16Type, UInt16),
        DType::UInt32 => primitive!(UInt32Type, UInt32),
        DType::UInt64 => primitive!(UInt64Type, UInt64),
        DType::Float32 => primitive!(Float32Type, Float32),
        DType::Float64 => primitive!(Float64Type, Float64),
        DType::String => Attr::String(
            column
                .as_string_opt::<i32>()
                .ok_or_else(wrong_type)?
                .value(row)
                .to_owned(),
        ),
        DType::Binary => Attr::Binary(
            column
                .as_binary_opt::<i32>()
                .ok_or_else(wrong_type)?
                .value(row)
                .to_vec(),
        ),
        _ => return Err(wrong_type()),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::UInt32Array;

    fn decoded(used: u64) -> Chunk {
        let values: ArrayRef = Arc::new(UInt32Array::from(vec![7u32; 256]));
        Chunk {
            range: 0..1,
            bytes: Bytes::new(),
            decoded: Some(values),
            used,
        }
    }

    #[test]
    fn with_no_budget_the_row_group_each_column_was_last_asked_for_stays_decoded() {
        // Two columns (two variables' chunk places) asked for in turn, as a
        // loop reading both arrays of every dataset asks: row group 0 of
        // each, then row group 1 of each.
        let mut chunks = Chunks::default();
        for ((column, group), used) in [((0, 0), 1), ((1, 0), 2), ((0, 1), 3), ((1, 1), 4)] {
            let chunk = decoded(used);
            chunks.decoded += chunk
                .decoded
                .as_ref()
                .map_or(0, |a| a.get_array_memory_size());
            chunks.cells.insert((column, group), chunk);
        }
        let one = chunks.decoded / 4;
        chunks.trim(0, 5);
        let held: Vec<(usize, usize)> = {
            let mut held: Vec<_> = chunks
                .cells
                .iter()
                .filter(|(_, c)| c.decoded.is_some())
                .map(|(k, _)| *k)
                .collect();
            held.sort_unstable();
            held
        };
        assert_eq!(held, [(0, 1), (1, 1)]);
        assert_eq!(chunks.decoded, 2 * one);
        // Within a budget, older row groups stay too.
        let mut roomy = Chunks::default();
        for (key, used) in [((0, 0), 1), ((0, 1), 2)] {
            let chunk = decoded(used);
            roomy.decoded += chunk
                .decoded
                .as_ref()
                .map_or(0, |a| a.get_array_memory_size());
            roomy.cells.insert(key, chunk);
        }
        roomy.trim(usize::MAX, 3);
        assert!(roomy.cells.values().all(|c| c.decoded.is_some()));
    }
}
