//! A segment built without array-format's writer: the same bytes, a fraction
//! of the work.
//!
//! array-format's `ArrayWriter` keeps each array's chunks in a map keyed by
//! coordinate vectors, encodes every chunk into a vector of its own before
//! copying it into a block, computes statistics from those bytes, and at the
//! end turns everything into its footer types, serialises them and parses the
//! result back into the reader it returns. Writing profiles, that was most of
//! a commit and a third of the pushes. [`Pack`] writes the same file: chunks
//! are encoded straight into the open block with their statistics computed
//! from the typed values ([`Element::pack`](crate::types::element::sealed::Sealed::pack)),
//! each array's chunk table and statistics grow in place, and the footer is
//! archived once through the footer schema ([`crate::footer::schema`]), which have
//! array-format's layout. A test checks the output byte for byte against
//! array-format's writer.
//!
//! What array-format's writer allows and this does not: a write must cover
//! exactly one chunk (the segment writer's callers buffer whole chunks), and
//! a chunk is written once.

use std::hash::BuildHasher;
use std::io::{Read, Seek, SeekFrom, Write};
use std::sync::Arc;

use array_format::address::{BlockId, ChunkAddress};
use array_format::layout::ChunkEntry;
use array_format::{ArrayStats, AttributeValue, CompressionCodec, DType, FillValue, StatValue};
use bytes::Bytes;
use hashbrown::HashTable;
use indexmap::IndexSet;
use ndarray::ArrayViewD;
use object_store::ObjectStore;
use object_store::buffered::BufWriter;
use rkyv::util::AlignedVec;
use smol_str::SmolStr;
use tokio::io::AsyncWriteExt;

use atlas_io::IoErrorKind;

use crate::footer::digest::{ArrayDigest, BlockPlace, ChunkPlace, SharedDims};
use crate::footer::schema;
use crate::footer::tail::{ARRF_MAGIC, ARRF_TRAILER_LEN};
use crate::types::element::Element;
use crate::types::value::{dtype_from_stored, fill_from_stored, stats_from_stored};
use crate::write::sink::kind_behind;

/// Bytes read at a time from the spilled blocks into the output (as
/// array-format does: larger pieces held more memory while they upload).
const COPY_CHUNK: usize = 1024 * 1024;
/// Parts of a multipart upload in flight at once. The container sink and
/// the spool store take parts one at a time, in order, so more only holds
/// memory: with object_store's default of 8, a 69 MB segment held 28 MB of
/// parts at once at the end of a write.
const PARTS_IN_FLIGHT: usize = 2;
/// The output buffer: a segment below it is uploaded in one `put`, as
/// array-format's writer does.
const OUTPUT_BUFFER: usize = 8 * 1024 * 1024;

/// Why a pack step was refused.
#[derive(Debug)]
pub enum PackError {
    /// No array of that name was defined.
    Unknown,
    /// The name is taken.
    Exists,
    /// Wrong element type: the array's, and the one written.
    DType(DType, DType),
    /// A shape, chunk shape or region the array cannot take.
    Region(String),
    /// Compressing a block, spilling it or writing the output failed: the
    /// kind of the storage error behind it (`Other` when none is), and what.
    Io(IoErrorKind, String),
}

/// One chunk's statistics, as array-format computes them per chunk.
#[derive(Debug, Default)]
pub struct ChunkStats {
    /// Least non-fill value.
    pub min: Option<StatValue>,
    /// Greatest non-fill value.
    pub max: Option<StatValue>,
    /// Elements equal to the fill value.
    pub nulls: u64,
    /// Elements in the chunk.
    pub rows: u64,
}

/// `a <= b` in array-format's statistics order (floats by `total_cmp`).
fn stat_le(a: &StatValue, b: &StatValue) -> bool {
    match (a, b) {
        (StatValue::Int(a), StatValue::Int(b)) => a <= b,
        (StatValue::UInt(a), StatValue::UInt(b)) => a <= b,
        (StatValue::Float(a), StatValue::Float(b)) => a.total_cmp(b).is_le(),
        (StatValue::Bytes(a), StatValue::Bytes(b)) => a <= b,
        (StatValue::TimestampNs(a), StatValue::TimestampNs(b)) => a <= b,
        _ => false,
    }
}

/// An array being written: its definition, its chunk table, its running
/// statistics and its attributes.
struct Pending {
    name: String,
    dtype: DType,
    shape: Vec<u32>,
    dimension_names: Vec<String>,
    chunk_shape: Vec<u32>,
    fill: Option<FillValue>,
    chunks: Vec<ChunkEntry>,
    /// Whether `chunks` is still in coordinate order (it is when written in order).
    sorted: bool,
    min: Option<StatValue>,
    max: Option<StatValue>,
    /// Written elements that are not the fill value.
    non_null: u64,
    /// `(key, value)`, each an index into the writer's [`Seen`] pools.
    attributes: Vec<(u32, u32)>,
}

impl Pending {
    fn merge(&mut self, stats: ChunkStats) {
        self.non_null += stats.rows.saturating_sub(stats.nulls);
        self.min = match (self.min.take(), stats.min) {
            (None, x) | (x, None) => x,
            (Some(a), Some(b)) => Some(if stat_le(&a, &b) { a } else { b }),
        };
        self.max = match (self.max.take(), stats.max) {
            (None, x) | (x, None) => x,
            (Some(a), Some(b)) => Some(if stat_le(&a, &b) { b } else { a }),
        };
    }

    /// The chunk coordinate of a write at `origin` of `extent`, if it covers
    /// exactly one chunk (clipped at the array's edge).
    fn one_chunk(&self, origin: &[u64], extent: &[usize]) -> Result<Vec<u32>, PackError> {
        let ndim = self.shape.len();
        if origin.len() != ndim || extent.len() != ndim {
            return Err(PackError::Region(format!(
                "the array has {ndim} dimensions, the write {} and {}",
                origin.len(),
                extent.len()
            )));
        }
        let mut coord = Vec::with_capacity(ndim);
        let axes = self
            .shape
            .iter()
            .zip(&self.chunk_shape)
            .zip(origin.iter().zip(extent));
        for (axis, ((&len, &step), (&start, &count))) in axes.enumerate() {
            let (len, step, count) = (u64::from(len), u64::from(step), count as u64);
            let clipped = len.saturating_sub(start).min(step);
            if step == 0 || start % step != 0 || start >= len || count != clipped {
                return Err(PackError::Region(format!(
                    "a segment write covers one whole chunk; axis {axis}: {count} elements \
                     from {start}, chunks of {step} over {len}"
                )));
            }
            coord.push(
                u32::try_from(start / step).map_err(|_| {
                    PackError::Region(format!("chunk index past u32 on axis {axis}"))
                })?,
            );
        }
        Ok(coord)
    }
}

/// The data region: the open block in memory, finished blocks compressed
/// into an anonymous temporary file.
struct Blocks {
    codec: Arc<dyn CompressionCodec>,
    target: usize,
    open: Vec<u8>,
    spill: Option<std::fs::File>,
    /// Compressed bytes of the blocks in `table` (all spilled but the last,
    /// once the writer finishes).
    data_len: u64,
    table: Vec<schema::BlockMeta>,
    /// Set when a block could not be spilled: the temp file no longer
    /// matches the table, so nothing more is written.
    broken: Option<String>,
}

impl Blocks {
    fn check(&self) -> Result<(), PackError> {
        match &self.broken {
            None => Ok(()),
            Some(why) => Err(PackError::Io(
                IoErrorKind::Other,
                format!("an earlier block failed: {why}"),
            )),
        }
    }

    /// Appends one chunk encoded by `encode` to the open block; its address
    /// and what `encode` returned. The block is compressed once it reaches
    /// the target size, as array-format does.
    fn allocate<R>(
        &mut self,
        encode: impl FnOnce(&mut Vec<u8>) -> Result<R, PackError>,
    ) -> Result<(ChunkAddress, R), PackError> {
        self.check()?;
        let start = self.open.len();
        let r = encode(&mut self.open).inspect_err(|_| self.open.truncate(start))?;
        let size = self.open.len() - start;
        let (Ok(offset), Ok(size), Ok(block_id)) = (
            u32::try_from(start),
            u32::try_from(size),
            u32::try_from(self.table.len()),
        ) else {
            self.open.truncate(start);
            return Err(PackError::Region(
                "a chunk or block past 4 GiB, or more than 2^32 blocks".to_owned(),
            ));
        };
        if self.open.len() >= self.target {
            self.flush()?;
        }
        let address = ChunkAddress {
            block_id: BlockId(block_id),
            offset,
            size,
        };
        Ok((address, r))
    }

    /// Compresses the open block and enters it in the table, placed after
    /// the blocks before it; returns its bytes (none if the block is empty).
    fn seal(&mut self) -> Result<Option<Vec<u8>>, PackError> {
        if self.open.is_empty() {
            return Ok(None);
        }
        let compressed = self
            .codec
            .compress(&self.open)
            .map_err(|e| PackError::Io(IoErrorKind::Other, format!("compressing a block: {e}")))?;
        let id = u32::try_from(self.table.len())
            .map_err(|_| PackError::Region("more than 2^32 blocks".to_owned()))?;
        self.table.push(schema::BlockMeta {
            id: BlockId(id),
            file_offset: self.data_len,
            compressed_size: compressed.len() as u64,
            uncompressed_size: self.open.len() as u64,
            codec: self.codec.id(),
        });
        self.data_len += compressed.len() as u64;
        self.open.clear();
        Ok(Some(compressed))
    }

    /// Seals the open block into the temporary file.
    fn flush(&mut self) -> Result<(), PackError> {
        let Some(compressed) = self.seal()? else {
            return Ok(());
        };
        let spilled = match &mut self.spill {
            Some(f) => f.write_all(&compressed),
            slot @ None => tempfile::tempfile().and_then(|f| slot.insert(f).write_all(&compressed)),
        };
        spilled.map_err(|e| {
            let why = format!("block temp file: {e}");
            self.broken = Some(why.clone());
            PackError::Io(IoErrorKind::Other, why)
        })
    }
}

/// Attribute keys and values as they were set, each stored once. The footer
/// pools them in another order (array-format's: as the arrays meet them),
/// so these indices are renumbered when it is built.
#[derive(Default)]
struct Seen {
    keys: IndexSet<String>,
    values: IndexSet<AttributeValue>,
}

/// Renumbers indices of one [`Seen`] pool in the order they are first asked for.
struct Renumber(Vec<u32>, u32);

impl Renumber {
    fn new(len: usize) -> Self {
        Self(vec![u32::MAX; len], 0)
    }

    /// The new index of `old`, and whether it was given just now.
    fn get(&mut self, old: u32) -> Result<(u32, bool), PackError> {
        let slot = self
            .0
            .get_mut(old as usize)
            .ok_or_else(|| PackError::Region(format!("attribute index {old} unknown")))?;
        if *slot != u32::MAX {
            return Ok((*slot, false));
        }
        *slot = self.1;
        self.1 += 1;
        Ok((*slot, true))
    }
}

/// The arrays of a file in definition order, and an index of their names.
/// The index holds positions only, so a lookup touches one compact table and
/// the one name it compares (a map holding the names and arrays themselves
/// was a tenth of a profile write, mostly cache misses).
#[derive(Default)]
struct Arrays {
    list: Vec<Pending>,
    index: HashTable<u32>,
    hasher: foldhash::fast::FixedState,
}

impl Arrays {
    /// The position of `name`; the newest array is tried first, since writers
    /// define an array and then write it.
    fn position(&self, name: &str) -> Option<usize> {
        if let Some(last) = self.list.last()
            && last.name == name
        {
            return Some(self.list.len() - 1);
        }
        let list = &self.list;
        let same = |&i: &u32| list.get(i as usize).is_some_and(|a| a.name == name);
        self.index
            .find(self.hasher.hash_one(name), same)
            .map(|&i| i as usize)
    }

    fn get_mut(&mut self, name: &str) -> Result<&mut Pending, PackError> {
        let i = self.position(name).ok_or(PackError::Unknown)?;
        self.list.get_mut(i).ok_or(PackError::Unknown)
    }

    /// Adds `array` unless its name is taken.
    fn add(&mut self, array: Pending) -> Result<(), PackError> {
        let Self {
            list,
            index,
            hasher,
        } = self;
        let at = u32::try_from(list.len())
            .map_err(|_| PackError::Region("more than 2^32 arrays".to_owned()))?;
        let same = |&i: &u32| list.get(i as usize).is_some_and(|a| a.name == array.name);
        let rehash = |&i: &u32| list.get(i as usize).map_or(0, |a| hasher.hash_one(&a.name));
        match index.entry(hasher.hash_one(&array.name), same, rehash) {
            hashbrown::hash_table::Entry::Occupied(_) => return Err(PackError::Exists),
            hashbrown::hash_table::Entry::Vacant(slot) => {
                slot.insert(at);
            }
        }
        list.push(array);
        Ok(())
    }
}

/// What a file ends with once its arrays are written.
struct Ending {
    /// The last block, compressed (written after the spilled ones); none if empty.
    last: Option<Vec<u8>>,
    /// The footer, archived.
    archived: AlignedVec,
    /// What a reader of the footer would digest, without reading it back.
    packed: Packed,
}

/// What a finished file holds, as a reader of its footer would digest it.
pub(crate) struct Packed {
    /// Each array, in file order.
    pub arrays: Vec<ArrayDigest>,
    /// The data blocks, by id.
    pub blocks: Vec<BlockPlace>,
    /// Where the data region ends.
    pub data_end: u64,
}

/// One array-format file under construction. See the [module docs](self).
pub(crate) struct Pack {
    blocks: Blocks,
    arrays: Arrays,
    seen: Seen,
    /// Whether [`Pack::finish`] returns the digest of every array.
    digests: bool,
}

impl Pack {
    /// An empty file whose blocks `codec` compresses once they reach
    /// `target` bytes; with `digests`, finishing it returns the digest of
    /// every array too.
    pub(crate) fn new(codec: Arc<dyn CompressionCodec>, target: usize, digests: bool) -> Self {
        Self {
            blocks: Blocks {
                codec,
                target,
                open: Vec::new(),
                spill: None,
                data_len: 0,
                table: Vec::new(),
                broken: None,
            },
            arrays: Arrays::default(),
            seen: Seen::default(),
            digests,
        }
    }

    /// Defines array `name`, with array-format's rules: no chunk shape is one
    /// chunk, a zero extent is stored as 1 on an empty axis and refused on
    /// another, dimension names of the wrong count become `dim0`, `dim1`, …
    pub(crate) fn define(
        &mut self,
        name: &str,
        dtype: DType,
        dimension_names: Vec<String>,
        shape: &[u64],
        chunk_shape: Option<&[u64]>,
        fill: Option<FillValue>,
    ) -> Result<(), PackError> {
        let narrow = |v: u64, what: &str| {
            u32::try_from(v).map_err(|_| PackError::Region(format!("{what} {v} exceeds u32")))
        };
        let shape = shape
            .iter()
            .map(|&s| narrow(s, "length"))
            .collect::<Result<Vec<_>, _>>()?;
        let ndim = shape.len();
        let chunk_shape = match chunk_shape {
            None => shape.iter().map(|&s| s.max(1)).collect(),
            Some(cs) if cs.len() != ndim => {
                return Err(PackError::Region(format!(
                    "chunk shape has {} axes, the shape {ndim}",
                    cs.len()
                )));
            }
            Some(cs) => {
                let mut out = Vec::with_capacity(ndim);
                for (axis, (&c, &s)) in cs.iter().zip(&shape).enumerate() {
                    if c == 0 && s != 0 {
                        return Err(PackError::Region(format!(
                            "chunk extent 0 on axis {axis} of length {s}"
                        )));
                    }
                    out.push(narrow(c, "chunk extent")?.max(1));
                }
                out
            }
        };
        let dimension_names = if dimension_names.len() == ndim {
            dimension_names
        } else {
            (0..ndim).map(|i| format!("dim{i}")).collect()
        };
        self.arrays.add(Pending {
            name: name.to_owned(),
            dtype,
            shape,
            dimension_names,
            chunk_shape,
            fill,
            chunks: Vec::new(),
            sorted: true,
            min: None,
            max: None,
            non_null: 0,
            attributes: Vec::new(),
        })
    }

    /// Writes one whole chunk of `name` whose first element is at `origin`.
    /// An empty region writes nothing.
    pub(crate) fn write<T: Element>(
        &mut self,
        name: &str,
        origin: &[u64],
        data: ArrayViewD<'_, T>,
    ) -> Result<(), PackError> {
        let Self { blocks, arrays, .. } = self;
        let array = arrays.get_mut(name)?;
        let dtype = <T::Stored as array_format::ArrayElement>::DTYPE;
        if array.dtype != dtype {
            return Err(PackError::DType(array.dtype.clone(), dtype));
        }
        if data.is_empty() {
            return Ok(());
        }
        let coord = array.one_chunk(origin, data.shape())?;
        let in_order = array.chunks.last().is_none_or(|last| last.coord < coord);
        if !in_order && array.chunks.iter().any(|c| c.coord == coord) {
            return Err(PackError::Region(format!("chunk {coord:?} written twice")));
        }
        let fill = array.fill.as_ref();
        let (address, stats) = match data.as_slice() {
            Some(values) => blocks.allocate(|out| T::pack(values, fill, out))?,
            None => {
                let values: Vec<T> = data.iter().cloned().collect();
                blocks.allocate(|out| T::pack(&values, fill, out))?
            }
        };
        array.merge(stats);
        array.sorted &= in_order;
        array.chunks.push(ChunkEntry { coord, address });
        Ok(())
    }

    /// Sets attribute `key` of `name`, replacing an earlier value.
    pub(crate) fn set_attribute(
        &mut self,
        name: &str,
        key: &str,
        value: AttributeValue,
    ) -> Result<(), PackError> {
        let k = match self.seen.keys.get_index_of(key) {
            Some(i) => index_u32(i)?,
            None => intern(&mut self.seen.keys, key.to_owned())?,
        };
        let v = index_u32(self.seen.values.insert_full(value).0)?;
        let attributes = &mut self.arrays.get_mut(name)?.attributes;
        match attributes.iter_mut().find(|(old, _)| *old == k) {
            Some((_, old)) => *old = v,
            None => attributes.push((k, v)),
        }
        Ok(())
    }

    /// The last block's compressed bytes (written after the spilled ones),
    /// the footer, archived, and the digest of each array.
    fn footer(&mut self) -> Result<Ending, PackError> {
        self.blocks.check()?;
        let last = self.blocks.seal()?;
        // The open block's buffer (a block's worth, resident) is not needed again.
        self.blocks.open = Vec::new();
        let arrays = std::mem::take(&mut self.arrays.list);
        let Seen { keys, values } = std::mem::take(&mut self.seen);
        // Pools in array-format's order: keys and values as the arrays meet
        // them (each array's keys sorted), then the strings of the values.
        let mut strings: IndexSet<String> = IndexSet::with_capacity(keys.len());
        let (mut key_ids, mut value_ids) = (Renumber::new(keys.len()), Renumber::new(values.len()));
        let mut value_order = Vec::with_capacity(values.len());
        let mut metas = Vec::with_capacity(arrays.len());
        for mut array in arrays {
            let name = array.name;
            if !array.sorted {
                array.chunks.sort_by(|a, b| a.coord.cmp(&b.coord));
            }
            let rows: u64 = array.shape.iter().map(|&s| u64::from(s)).product();
            let stats = ArrayStats {
                name: name.clone(),
                min: array.min,
                max: array.max,
                null_count: rows.saturating_sub(array.non_null),
                row_count: rows,
            };
            let key_of = |k: u32| keys.get_index(k as usize).map(String::as_str);
            array
                .attributes
                .sort_by(|a, b| key_of(a.0).cmp(&key_of(b.0)));
            let mut attributes = Vec::with_capacity(array.attributes.len());
            for (k, v) in array.attributes {
                let (k, new) = key_ids
                    .get(k)
                    .map(|(new_k, new)| (new_k, new.then_some(k)))?;
                if let Some(old) = new {
                    let key = key_of(old).unwrap_or_default();
                    if index_u32(strings.insert_full(key.to_owned()).0)? != k {
                        return Err(PackError::Region(format!(
                            "attribute key {key:?} pooled twice"
                        )));
                    }
                }
                let (new_v, first) = value_ids.get(v)?;
                if first {
                    value_order.push(v);
                }
                attributes.push((k, new_v));
            }
            metas.push(schema::ArrayMeta {
                name,
                dtype: array.dtype,
                shape: array.shape,
                dimension_names: array.dimension_names,
                chunk_shape: array.chunk_shape,
                chunks: array.chunks,
                fill_value: array.fill,
                attributes,
                stats: Some(stats),
            });
        }
        let values = value_order
            .into_iter()
            .map(|v| match values.get_index(v as usize) {
                Some(value) => disk_value(value, &mut strings),
                None => Err(PackError::Region(format!("attribute value {v} unknown"))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let blocks = std::mem::take(&mut self.blocks.table);
        let places = blocks
            .iter()
            .map(|b| BlockPlace {
                offset: b.file_offset,
                stored: b.compressed_size,
                decoded: b.uncompressed_size,
                codec: match &b.codec {
                    array_format::block::CodecId::None => None,
                    array_format::block::CodecId::Named(name) => Some(name.clone()),
                },
            })
            .collect();
        let footer = schema::Footer {
            version: schema::FOOTER_VERSION,
            blocks,
            strings: strings.into_iter().collect(),
            values,
            arrays: metas,
        };
        // The digests are read off the footer beside its archiving (on a
        // core that is otherwise idle when one large segment finishes).
        // Should no thread start, they are made here after the archiving.
        let (archived, digests) = std::thread::scope(|scope| {
            let beside = self.digests.then(|| {
                std::thread::Builder::new()
                    .name("atlas-digests".into())
                    .spawn_scoped(scope, || digests_of(&footer.arrays))
            });
            let archived = rkyv::to_bytes::<rkyv::rancor::Error>(&footer);
            let digests = match beside.map(|spawned| spawned.map(|d| d.join())) {
                None => Ok(Vec::new()),
                Some(Ok(Ok(digests))) => Ok(digests),
                Some(Ok(Err(_))) => Err(PackError::Region("digesting the footer stopped".into())),
                Some(Err(_)) => Ok(digests_of(&footer.arrays)),
            };
            (archived, digests)
        });
        let archived = archived
            .map_err(|e| PackError::Io(IoErrorKind::Other, format!("archiving the footer: {e}")))?;
        let digests = digests?;
        release(footer);
        Ok(Ending {
            last,
            archived,
            packed: Packed {
                arrays: digests,
                blocks: places,
                data_end: self.blocks.data_len,
            },
        })
    }

    /// Writes the file to `path` of `store` (one `put` under 8 MiB, a
    /// multipart upload above, as array-format's writer does). The pieces
    /// go to the upload as they are, without a copy into its buffer.
    /// Returns the digest of each array, in file order, and the blocks.
    pub(crate) async fn finish(
        mut self,
        store: Arc<dyn ObjectStore>,
        path: object_store::path::Path,
    ) -> Result<Packed, PackError> {
        let Ending {
            last,
            archived,
            packed,
        } = self.footer()?;
        let io = |what: &str, e: &(dyn std::error::Error + 'static)| {
            PackError::Io(kind_behind(e), format!("{what}: {e}"))
        };
        let mut trailer = Vec::with_capacity(ARRF_TRAILER_LEN as usize);
        trailer.extend_from_slice(&(archived.len() as u64).to_le_bytes());
        trailer.extend_from_slice(&ARRF_MAGIC);
        let mut out = BufWriter::with_capacity(store, path, OUTPUT_BUFFER)
            .with_max_concurrency(PARTS_IN_FLIGHT);
        if let Some(mut spill) = self.blocks.spill.take() {
            spill
                .seek(SeekFrom::Start(0))
                .map_err(|e| io("block temp file", &e))?;
            // Every block but the last, which goes out from memory.
            let last_len = last.as_ref().map_or(0, Vec::len) as u64;
            let mut left = self.blocks.data_len.saturating_sub(last_len);
            while left > 0 {
                let n = usize::try_from(left).map_or(COPY_CHUNK, |l| l.min(COPY_CHUNK));
                let mut piece = vec![0u8; n];
                spill
                    .read_exact(&mut piece)
                    .map_err(|e| io("block temp file", &e))?;
                out.put(Bytes::from(piece))
                    .await
                    .map_err(|e| io("segment", &e))?;
                left -= n as u64;
            }
        }
        let pieces = [
            last.map(Bytes::from),
            Some(Bytes::from_owner(archived)),
            Some(Bytes::from(trailer)),
        ];
        for piece in pieces.into_iter().flatten() {
            out.put(piece).await.map_err(|e| io("segment", &e))?;
        }
        out.shutdown().await.map_err(|e| io("segment", &e))?;
        Ok(packed)
    }
}

/// What a reader of `arrays`, a footer's, would digest of each.
fn digests_of(arrays: &[schema::ArrayMeta]) -> Vec<ArrayDigest> {
    let mut dims = SharedDims::default();
    arrays
        .iter()
        .map(|array| ArrayDigest {
            name: SmolStr::new(&array.name),
            dtype: dtype_from_stored(&array.dtype),
            stats: array.stats.as_ref().map(stats_from_stored),
            first_block: array.chunks.iter().map(|c| c.address.block_id.0).min(),
            shape: array.shape.iter().map(|&n| u64::from(n)).collect(),
            chunk_shape: array.chunk_shape.as_slice().into(),
            dimension_names: dims.of(array.dimension_names.iter().map(String::as_str)),
            fill: array.fill_value.as_ref().map(fill_from_stored),
            chunks: array
                .chunks
                .iter()
                .map(|c| ChunkPlace {
                    coord: c.coord.as_slice().into(),
                    block: c.address.block_id.0,
                    offset: c.address.offset,
                    size: c.address.size,
                })
                .collect(),
        })
        .collect()
}

/// Frees `footer` on a thread of its own: a footer of 30 000 arrays is
/// hundreds of thousands of small allocations, a tenth of a profile write's
/// time when freed in line, and nothing after this needs them gone.
fn release(footer: schema::Footer) {
    // Should no thread start, the closure, and the footer with it, drop here.
    let _ = std::thread::Builder::new()
        .name("atlas-footer-drop".into())
        .spawn(move || drop(footer));
}

fn index_u32(i: usize) -> Result<u32, PackError> {
    u32::try_from(i).map_err(|_| PackError::Region("more than 2^32 pooled values".to_owned()))
}

fn intern(strings: &mut IndexSet<String>, s: String) -> Result<u32, PackError> {
    index_u32(strings.insert_full(s).0)
}

fn intern_str(strings: &mut IndexSet<String>, s: &str) -> Result<u32, PackError> {
    match strings.get_index_of(s) {
        Some(i) => index_u32(i),
        None => intern(strings, s.to_owned()),
    }
}

/// `value` as the footer stores it, its strings interned into `strings`.
fn disk_value(
    value: &AttributeValue,
    strings: &mut IndexSet<String>,
) -> Result<schema::DiskValue, PackError> {
    use AttributeValue as A;
    use schema::DiskValue as D;
    Ok(match value {
        A::Bool(v) => D::Bool(*v),
        A::Int8(v) => D::Int8(*v),
        A::Int16(v) => D::Int16(*v),
        A::Int32(v) => D::Int32(*v),
        A::Int64(v) => D::Int64(*v),
        A::UInt8(v) => D::UInt8(*v),
        A::UInt16(v) => D::UInt16(*v),
        A::UInt32(v) => D::UInt32(*v),
        A::UInt64(v) => D::UInt64(*v),
        A::Float32(v) => D::Float32(*v),
        A::Float64(v) => D::Float64(*v),
        A::String(v) => D::String(intern_str(strings, v)?),
        A::Binary(v) => D::Binary(v.clone()),
        A::BoolList(v) => D::BoolList(v.clone()),
        A::Int8List(v) => D::Int8List(v.clone()),
        A::Int16List(v) => D::Int16List(v.clone()),
        A::Int32List(v) => D::Int32List(v.clone()),
        A::Int64List(v) => D::Int64List(v.clone()),
        A::UInt8List(v) => D::UInt8List(v.clone()),
        A::UInt16List(v) => D::UInt16List(v.clone()),
        A::UInt32List(v) => D::UInt32List(v.clone()),
        A::UInt64List(v) => D::UInt64List(v.clone()),
        A::Float32List(v) => D::Float32List(v.clone()),
        A::Float64List(v) => D::Float64List(v.clone()),
        A::StringList(v) => D::StringList(
            v.iter()
                .map(|s| intern_str(strings, s))
                .collect::<Result<_, _>>()?,
        ),
        A::BinaryList(v) => D::BinaryList(v.clone()),
    })
}

// ── Encoding and statistics of one chunk, per element type ──────────

/// Statistics of `values` under the order `lt`, skipping `is_fill`.
pub(crate) fn chunk_stats<T: Copy>(
    values: &[T],
    is_fill: impl Fn(T) -> bool,
    lt: impl Fn(T, T) -> bool,
    stat: impl Fn(T) -> StatValue,
) -> ChunkStats {
    let mut range: Option<(T, T)> = None;
    let mut nulls = 0u64;
    for &v in values {
        if is_fill(v) {
            nulls += 1;
            continue;
        }
        range = Some(match range {
            None => (v, v),
            Some((lo, hi)) => (
                if lt(v, lo) { v } else { lo },
                if lt(hi, v) { v } else { hi },
            ),
        });
    }
    ChunkStats {
        min: range.map(|(lo, _)| stat(lo)),
        max: range.map(|(_, hi)| stat(hi)),
        nulls,
        rows: values.len() as u64,
    }
}

/// Encodes variable-length values as array-format does (`n + 1` little-endian
/// `u32` offsets, then the bytes) and computes their statistics.
pub(crate) fn pack_variable<'a>(
    values: impl ExactSizeIterator<Item = &'a [u8]> + Clone,
    fill: Option<&[u8]>,
    out: &mut Vec<u8>,
) -> Result<ChunkStats, PackError> {
    let n = values.len();
    let payload: usize = values.clone().map(<[u8]>::len).sum();
    out.reserve(4 * (n + 1) + payload);
    let mut offset = 0u32;
    out.extend_from_slice(&offset.to_le_bytes());
    for v in values.clone() {
        offset = u32::try_from(v.len())
            .ok()
            .and_then(|l| offset.checked_add(l))
            .ok_or_else(|| {
                PackError::Region(format!(
                    "a chunk holds more than {} bytes of strings or binary",
                    u32::MAX
                ))
            })?;
        out.extend_from_slice(&offset.to_le_bytes());
    }
    let mut stats = ChunkStats {
        rows: n as u64,
        ..ChunkStats::default()
    };
    let (mut lo, mut hi): (Option<&[u8]>, Option<&[u8]>) = (None, None);
    for v in values {
        out.extend_from_slice(v);
        if fill == Some(v) {
            stats.nulls += 1;
            continue;
        }
        if lo.is_none_or(|m| v < m) {
            lo = Some(v);
        }
        if hi.is_none_or(|m| v > m) {
            hi = Some(v);
        }
    }
    stats.min = lo.map(|v| StatValue::Bytes(v.to_vec()));
    stats.max = hi.map(|v| StatValue::Bytes(v.to_vec()));
    Ok(stats)
}
