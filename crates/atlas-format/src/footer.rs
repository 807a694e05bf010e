//! The collection footer: what the container holds, where each segment is,
//! and which schema each dataset has. MessagePack (positional) inside one
//! zstd frame.

use std::io::Read;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;
use smol_str::SmolStr;

use crate::constants::{FORMAT_VERSION, HEADER_LEN};
use crate::dtype::DType;
use crate::error::{FormatError, Result};

/// How the writer compressed blocks. Informational: each block names its own codec.
/// Exhaustive on purpose: the v8 format text fixes this set, so a new codec
/// would be a new format version, not a minor release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum Codec {
    /// Zstandard blocks (the default).
    #[default]
    Zstd,
    /// LZ4 blocks.
    Lz4,
    /// Blocks stored as they are.
    Uncompressed,
}

impl std::fmt::Display for Codec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Codec::Zstd => "Zstd",
            Codec::Lz4 => "Lz4",
            Codec::Uncompressed => "Uncompressed",
        })
    }
}

/// A `(pool index, pool index)` pair: a name in the string pool and a type in the dtype pool.
pub type NameType = (u32, u32);

/// One distinct dataset declaration: array names and types, attribute keys and types.
///
/// Holds no shape, chunking, dimension names or fill value, so datasets that differ
/// only in length share one schema. Every field is a pool index, hence `Hash + Eq`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct InternedSchema {
    /// `(array name, element dtype)` in definition order.
    pub arrays: SmallVec<[NameType; 8]>,
    /// `(attribute key, value dtype)` of dataset-level attributes.
    pub attrs: SmallVec<[NameType; 4]>,
    /// `(array position, keys)` for arrays that carry attributes, by position.
    pub array_attrs: SmallVec<[(u32, SmallVec<[NameType; 4]>); 4]>,
}

/// Where one variable's segment lies in the container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct VariableEntry {
    /// Index of the variable (array) name in the string pool.
    pub name: u32,
    /// Absolute offset of the segment's first byte.
    pub seg_offset: u64,
    /// Length of the segment in bytes (never zero).
    pub seg_len: u64,
}

impl VariableEntry {
    /// The segment's byte range, or `None` if it overflows.
    pub fn range(&self) -> Option<std::ops::Range<u64>> {
        Some(self.seg_offset..self.seg_offset.checked_add(self.seg_len)?)
    }
}

/// The decoded footer of a container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectionFooter {
    /// Format version, 8; checked again after decoding.
    pub version: u32,
    /// Codec the writer used (informational).
    pub codec: Codec,
    /// Creation time in milliseconds since the Unix epoch.
    pub created_unix_ms: i64,
    /// Array names and attribute keys, each once.
    pub string_pool: Vec<SmolStr>,
    /// Element and attribute types, each once.
    pub dtype_pool: Vec<DType>,
    /// Distinct dataset declarations.
    pub schema_pool: Vec<InternedSchema>,
    /// One segment per array name, in container order.
    pub variables: Vec<VariableEntry>,
    /// Dataset name to schema index; the position is the ordinal.
    #[serde(with = "dataset_sequence")]
    pub datasets: IndexMap<SmolStr, u32>,
}

/// Limits that keep a hostile footer from exhausting memory: `default()` or [`DecodeLimits::new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct DecodeLimits {
    /// Largest compressed footer (the trailer's `footer_size`) accepted.
    pub max_footer_bytes: u64,
    /// Largest decompressed footer accepted.
    pub max_decompressed_bytes: u64,
}

impl DecodeLimits {
    /// Limits of `max_footer_bytes` compressed and `max_decompressed_bytes` decompressed.
    pub const fn new(max_footer_bytes: u64, max_decompressed_bytes: u64) -> Self {
        Self {
            max_footer_bytes,
            max_decompressed_bytes,
        }
    }
}

impl Default for DecodeLimits {
    /// 256 MiB compressed, 1 GiB decompressed: about 30 million datasets of one schema.
    fn default() -> Self {
        Self {
            max_footer_bytes: 256 << 20,
            max_decompressed_bytes: 1 << 30,
        }
    }
}

/// Deepest list nesting accepted in a decoded dtype.
const MAX_DTYPE_DEPTH: usize = 16;

impl CollectionFooter {
    /// An empty footer of the current version.
    pub fn new(codec: Codec, created_unix_ms: i64) -> Self {
        Self {
            version: FORMAT_VERSION,
            codec,
            created_unix_ms,
            string_pool: Vec::new(),
            dtype_pool: Vec::new(),
            schema_pool: Vec::new(),
            variables: Vec::new(),
            datasets: IndexMap::new(),
        }
    }

    /// Compact MessagePack of the footer, before compression.
    pub fn to_msgpack(&self) -> Result<Vec<u8>> {
        rmp_serde::to_vec(self)
            .map_err(|e| FormatError::corrupt(format!("footer cannot be encoded: {e}")))
    }

    /// The footer bytes as stored: one zstd frame of compact MessagePack.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let msgpack = self.to_msgpack()?;
        zstd::bulk::compress(&msgpack, crate::DEFAULT_ZSTD_LEVEL)
            .map_err(|e| FormatError::corrupt(format!("footer cannot be compressed: {e}")))
    }

    /// Decodes stored footer bytes and validates the result on its own terms
    /// (see [`CollectionFooter::validate`]); the layout check needs the footer's
    /// position and is [`CollectionFooter::validate_layout`].
    pub fn decode(bytes: &[u8], limits: &DecodeLimits) -> Result<Self> {
        let msgpack = decompress_bounded(bytes, limits.max_decompressed_bytes)?;
        let footer = Self::from_msgpack(&msgpack)?;
        footer.validate()?;
        Ok(footer)
    }

    /// Decodes compact MessagePack (no validation).
    pub fn from_msgpack(bytes: &[u8]) -> Result<Self> {
        crate::msgpack_guard::check(bytes)?;
        let mut de = rmp_serde::Deserializer::from_read_ref(bytes);
        de.set_max_depth(MAX_DTYPE_DEPTH.saturating_mul(2).saturating_add(8));
        let footer = Self::deserialize(&mut de)
            .map_err(|e| FormatError::corrupt(format!("footer MessagePack: {e}")))?;
        Ok(footer)
    }

    /// Checks everything that can be checked without knowing where the footer sits:
    /// the version, that every pool index resolves, that no name repeats where it
    /// must be unique, and that no segment is empty.
    pub fn validate(&self) -> Result<()> {
        if self.version != FORMAT_VERSION {
            return Err(FormatError::UnsupportedVersion {
                found: self.version,
                expected: FORMAT_VERSION,
            });
        }
        for (i, dtype) in self.dtype_pool.iter().enumerate() {
            if dtype.depth() > MAX_DTYPE_DEPTH {
                return Err(FormatError::corrupt(format!("dtype {i} nests too deeply")));
            }
        }
        for (i, schema) in self.schema_pool.iter().enumerate() {
            self.validate_schema(i, schema)?;
        }
        let schemas = self.schema_pool.len();
        for (name, &schema) in &self.datasets {
            if usize::try_from(schema).map_or(true, |s| s >= schemas) {
                return Err(FormatError::corrupt(format!(
                    "dataset {name:?} names schema {schema}, but the pool holds {schemas}"
                )));
            }
        }
        let mut seen = std::collections::HashSet::with_capacity(self.variables.len());
        for (i, var) in self.variables.iter().enumerate() {
            let name = self.string(var.name).ok_or_else(|| {
                FormatError::corrupt(format!(
                    "variable {i} names string {}, out of the pool",
                    var.name
                ))
            })?;
            if var.seg_len == 0 {
                return Err(FormatError::corrupt(format!("segment {name:?} is empty")));
            }
            if !seen.insert(name) {
                return Err(FormatError::corrupt(format!(
                    "segment {name:?} appears twice"
                )));
            }
        }
        Ok(())
    }

    fn validate_schema(&self, index: usize, schema: &InternedSchema) -> Result<()> {
        let bad = |what: String| FormatError::corrupt(format!("schema {index}: {what}"));
        let check_pairs = |pairs: &[NameType], kind: &str| -> Result<()> {
            let mut names = std::collections::HashSet::with_capacity(pairs.len());
            for &(name, dtype) in pairs {
                let resolved = self
                    .string(name)
                    .ok_or_else(|| bad(format!("{kind} name {name} is out of the string pool")))?;
                if self.dtype(dtype).is_none() {
                    return Err(bad(format!(
                        "{kind} {resolved:?} has dtype {dtype}, out of the pool"
                    )));
                }
                // By content, not index: a pool holding one string twice must not
                // let a schema declare the same name twice.
                if !names.insert(resolved) {
                    return Err(bad(format!("{kind} {resolved:?} is declared twice")));
                }
            }
            Ok(())
        };
        check_pairs(&schema.arrays, "array")?;
        check_pairs(&schema.attrs, "attribute")?;
        let mut previous: Option<u32> = None;
        for (position, keys) in &schema.array_attrs {
            if usize::try_from(*position).map_or(true, |p| p >= schema.arrays.len()) {
                return Err(bad(format!(
                    "attributes for array position {position}, but it declares {} arrays",
                    schema.arrays.len()
                )));
            }
            if previous.is_some_and(|p| p >= *position) {
                return Err(bad("array attributes are not sorted by position".into()));
            }
            previous = Some(*position);
            check_pairs(keys, "array attribute")?;
        }
        Ok(())
    }

    /// Checks that segments lie back to back from the header up to `footer_start`.
    pub fn validate_layout(&self, footer_start: u64) -> Result<()> {
        let end = self.segments_end()?;
        if end != footer_start {
            return Err(FormatError::corrupt(format!(
                "segments end at byte {end}, but the footer starts at byte {footer_start}"
            )));
        }
        Ok(())
    }

    /// Where the last segment ends (the header's end when there is none),
    /// checking on the way that every segment starts where the previous ended.
    pub fn segments_end(&self) -> Result<u64> {
        let mut expected = HEADER_LEN;
        for var in &self.variables {
            if var.seg_offset != expected {
                let name = self.string(var.name).unwrap_or("?");
                return Err(FormatError::corrupt(format!(
                    "segment {name:?} starts at byte {}, expected {expected}",
                    var.seg_offset
                )));
            }
            expected = var
                .range()
                .ok_or_else(|| FormatError::corrupt("a segment range overflows u64"))?
                .end;
        }
        Ok(expected)
    }

    /// A string of the pool by index.
    pub fn string(&self, index: u32) -> Option<&str> {
        self.string_pool
            .get(usize::try_from(index).ok()?)
            .map(SmolStr::as_str)
    }

    /// A dtype of the pool by index.
    pub fn dtype(&self, index: u32) -> Option<&DType> {
        self.dtype_pool.get(usize::try_from(index).ok()?)
    }

    /// A schema of the pool by index.
    pub fn schema(&self, index: u32) -> Option<&InternedSchema> {
        self.schema_pool.get(usize::try_from(index).ok()?)
    }

    /// The segment of variable `name`, if the container has one.
    pub fn variable(&self, name: &str) -> Option<&VariableEntry> {
        self.variables
            .iter()
            .find(|v| self.string(v.name) == Some(name))
    }
}

/// Decompresses one zstd frame, refusing to produce more than `max` bytes.
///
/// The frame's declared content size is checked before anything is allocated;
/// a frame that declares none is cut off while streaming.
pub fn decompress_bounded(bytes: &[u8], max: u64) -> Result<Vec<u8>> {
    decompress_limited(bytes, max, "the footer").map_err(FormatError::corrupt)
}

/// [`decompress_bounded`] for any object: messages name `subject` and are
/// returned bare, for the caller to wrap in its own error variant.
pub(crate) fn decompress_limited(
    bytes: &[u8],
    max: u64,
    subject: &str,
) -> std::result::Result<Vec<u8>, String> {
    let declared = match zstd::zstd_safe::get_frame_content_size(bytes) {
        Ok(size) => size,
        Err(_) => return Err(format!("{subject} is not a zstd frame")),
    };
    if let Some(size) = declared.filter(|&size| size > max) {
        return Err(format!(
            "{subject} declares {size} decompressed bytes, over the limit of {max}"
        ));
    }
    // Start from what was actually read (or declared, already bounded), never from a claim alone.
    let initial = declared
        .unwrap_or(0)
        .max(bytes.len() as u64)
        .min(max)
        .min(64 << 20);
    let mut out = Vec::with_capacity(usize::try_from(initial).unwrap_or(0));
    let decoder = zstd::stream::read::Decoder::with_buffer(bytes)
        .map_err(|e| format!("{subject}'s zstd frame: {e}"))?;
    decoder
        .single_frame()
        .take(max.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| format!("{subject}'s zstd frame: {e}"))?;
    if out.len() as u64 > max {
        return Err(format!(
            "{subject} decompresses past the limit of {max} bytes"
        ));
    }
    Ok(out)
}

/// The dataset map travels as a sequence of `(name, schema)` pairs, never as a map:
/// a map would silently merge a repeated name and shift every later ordinal.
mod dataset_sequence {
    use std::fmt;

    use indexmap::IndexMap;
    use indexmap::map::Entry;
    use serde::de::{Error, SeqAccess, Visitor};
    use serde::ser::SerializeSeq;
    use serde::{Deserializer, Serializer};
    use smol_str::SmolStr;

    pub fn serialize<S: Serializer>(map: &IndexMap<SmolStr, u32>, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(map.len()))?;
        for (name, schema) in map {
            seq.serialize_element(&(name, schema))?;
        }
        seq.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<IndexMap<SmolStr, u32>, D::Error> {
        d.deserialize_seq(PairsVisitor)
    }

    struct PairsVisitor;

    impl<'de> Visitor<'de> for PairsVisitor {
        type Value = IndexMap<SmolStr, u32>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a sequence of (dataset name, schema index) pairs")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            // The hint comes from the bytes: cap it, the map grows as pairs arrive.
            let capacity = seq.size_hint().unwrap_or(0).min(1 << 16);
            let mut map = IndexMap::with_capacity(capacity);
            while let Some((name, schema)) = seq.next_element::<(SmolStr, u32)>()? {
                // One hash per dataset: the entry both detects a repeat and inserts.
                match map.entry(name) {
                    Entry::Occupied(repeat) => {
                        return Err(A::Error::custom(format_args!(
                            "dataset name {:?} appears twice",
                            repeat.key()
                        )));
                    }
                    Entry::Vacant(slot) => {
                        slot.insert(schema);
                    }
                }
            }
            Ok(map)
        }
    }
}
