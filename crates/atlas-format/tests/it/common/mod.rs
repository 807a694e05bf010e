//! Helpers shared by the integration tests: fixture loading, a MessagePack
//! walker written against `rmp` (not serde), builders of footers and
//! containers, and drivers that answer an [`OpenDecoder`] from a byte buffer
//! while recording every read it asked for.

#![allow(dead_code)]

use std::ops::Range;
use std::path::PathBuf;

use atlas_format::{
    ArrayDecl, CONTAINER_FILE, Codec, CollectionFooter, DType, DatasetSchema, DecodeLimits,
    DecodeResult, FooterBuilder, FormatError, MASK_FILE, OpenDecoder, OpenedContainer, ReadRequest,
    assemble,
};
use proptest::prelude::*;
use rmp::Marker;
use smol_str::SmolStr;

/// One fixture collection: directory name, container bytes, mask bytes.
pub struct Fixture {
    pub name: String,
    pub container: Vec<u8>,
    pub mask: Option<Vec<u8>>,
}

pub fn fixtures() -> Vec<Fixture> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/v8");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if !path.is_dir() {
            continue;
        }
        out.push(Fixture {
            name: path.file_name().unwrap().to_string_lossy().into_owned(),
            container: std::fs::read(path.join(CONTAINER_FILE)).unwrap(),
            mask: std::fs::read(path.join(MASK_FILE)).ok(),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    assert!(out.len() >= 4, "the fixtures are missing from testdata/v8");
    out
}

/// The compressed footer bytes of a container (trusting its trailer).
pub fn footer_slice(container: &[u8]) -> &[u8] {
    let n = container.len();
    let size = u64::from_le_bytes(container[n - 16..n - 8].try_into().unwrap()) as usize;
    &container[n - 16 - size..n - 16]
}

pub fn zstd(bytes: &[u8]) -> Vec<u8> {
    zstd::bulk::compress(bytes, atlas_format::DEFAULT_ZSTD_LEVEL).unwrap()
}

pub fn unzstd(bytes: &[u8]) -> Vec<u8> {
    atlas_format::decompress_bounded(bytes, 1 << 30).unwrap()
}

// ---------------------------------------------------------------------------
// A MessagePack walker that does not go through serde.

/// Skips one complete MessagePack value at the front of `rd`.
pub fn skip_value(rd: &mut &[u8]) {
    let marker = rmp::decode::read_marker(rd).unwrap();
    let advance = |rd: &mut &[u8], n: usize| *rd = &rd[n..];
    let be = |rd: &mut &[u8], n: usize| -> usize {
        let v = rd[..n].iter().fold(0usize, |a, &b| (a << 8) | b as usize);
        *rd = &rd[n..];
        v
    };
    match marker {
        Marker::FixPos(_) | Marker::FixNeg(_) | Marker::Null | Marker::True | Marker::False => {}
        Marker::U8 | Marker::I8 => advance(rd, 1),
        Marker::U16 | Marker::I16 => advance(rd, 2),
        Marker::U32 | Marker::I32 | Marker::F32 => advance(rd, 4),
        Marker::U64 | Marker::I64 | Marker::F64 => advance(rd, 8),
        Marker::FixStr(n) => advance(rd, n as usize),
        Marker::Str8 | Marker::Bin8 => {
            let n = be(rd, 1);
            advance(rd, n)
        }
        Marker::Str16 | Marker::Bin16 => {
            let n = be(rd, 2);
            advance(rd, n)
        }
        Marker::Str32 | Marker::Bin32 => {
            let n = be(rd, 4);
            advance(rd, n)
        }
        Marker::FixArray(n) => (0..n).for_each(|_| skip_value(rd)),
        Marker::Array16 => (0..be(rd, 2)).for_each(|_| skip_value(rd)),
        Marker::Array32 => (0..be(rd, 4)).for_each(|_| skip_value(rd)),
        Marker::FixMap(n) => (0..2 * n).for_each(|_| skip_value(rd)),
        Marker::Map16 => (0..2 * be(rd, 2)).for_each(|_| skip_value(rd)),
        Marker::Map32 => (0..2 * be(rd, 4)).for_each(|_| skip_value(rd)),
        other => panic!("unexpected marker {other:?} in a footer"),
    }
}

/// The raw bytes of each of the footer's top-level fields, in order.
pub fn footer_fields(msgpack: &[u8]) -> Vec<&[u8]> {
    let mut rd = msgpack;
    let n = rmp::decode::read_array_len(&mut rd).unwrap();
    let mut fields = Vec::new();
    for _ in 0..n {
        let before = rd;
        skip_value(&mut rd);
        fields.push(&before[..before.len() - rd.len()]);
    }
    assert!(rd.is_empty(), "bytes after the footer array");
    fields
}

/// The raw bytes of each element of a MessagePack array.
pub fn array_elements(array: &[u8]) -> Vec<&[u8]> {
    let mut rd = array;
    let n = rmp::decode::read_array_len(&mut rd).unwrap();
    let mut out = Vec::new();
    for _ in 0..n {
        let before = rd;
        skip_value(&mut rd);
        out.push(&before[..before.len() - rd.len()]);
    }
    assert!(rd.is_empty());
    out
}

// ---------------------------------------------------------------------------
// Hand-written MessagePack.

/// Small writer over `rmp::encode`, smallest encodings unless told otherwise.
#[derive(Default)]
pub struct Mp(pub Vec<u8>);

impl Mp {
    pub fn arr(&mut self, n: u32) -> &mut Self {
        rmp::encode::write_array_len(&mut self.0, n).unwrap();
        self
    }
    pub fn map(&mut self, n: u32) -> &mut Self {
        rmp::encode::write_map_len(&mut self.0, n).unwrap();
        self
    }
    pub fn str(&mut self, s: &str) -> &mut Self {
        rmp::encode::write_str(&mut self.0, s).unwrap();
        self
    }
    pub fn uint(&mut self, v: u64) -> &mut Self {
        rmp::encode::write_uint(&mut self.0, v).unwrap();
        self
    }
    pub fn sint(&mut self, v: i64) -> &mut Self {
        rmp::encode::write_sint(&mut self.0, v).unwrap();
        self
    }
    pub fn raw(&mut self, bytes: &[u8]) -> &mut Self {
        self.0.extend_from_slice(bytes);
        self
    }
}

/// Writes fields 0..=6 of a small valid footer (one string "t", one dtype
/// float32, one schema with array t: float32, no segment) into an 8-array,
/// leaving field 7 (datasets) to the caller.
pub fn footer_prefix() -> Mp {
    let mut mp = Mp::default();
    mp.arr(8)
        .uint(8) // version
        .str("Zstd") // codec
        .sint(0) // created_unix_ms
        .arr(1)
        .str("t") // string_pool
        .arr(1)
        .str("float32") // dtype_pool
        .arr(1) // schema_pool
        .arr(3)
        .arr(1)
        .arr(2)
        .uint(0)
        .uint(0)
        .arr(0)
        .arr(0)
        .arr(0); // variables
    mp
}

// ---------------------------------------------------------------------------
// Footers and containers.

pub fn decl(name: &str, dtype: DType, attributes: &[(&str, DType)]) -> ArrayDecl {
    ArrayDecl {
        name: SmolStr::new(name),
        dtype,
        attributes: attributes
            .iter()
            .map(|(k, d)| (SmolStr::new(k), d.clone()))
            .collect(),
    }
}

/// A deterministic pseudo-random generator (splitmix64).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A footer of `datasets` datasets with random-ish names and segments of
/// `seg_lens` bytes, plus the segments themselves (arbitrary bytes).
pub fn built(datasets: usize, seg_lens: &[usize], seed: u64) -> (CollectionFooter, Vec<Vec<u8>>) {
    let mut rng = Rng(seed);
    let mut b = FooterBuilder::new(Codec::Zstd, 1_700_000_000_000);
    let schema = DatasetSchema {
        arrays: vec![
            decl("temperature", DType::Float32, &[("units", DType::String)]),
            decl("time", DType::TimestampNs, &[]),
        ],
        attributes: vec![(SmolStr::new("platform"), DType::UInt32)],
    };
    let other = DatasetSchema {
        arrays: vec![decl("temperature", DType::Float64, &[])],
        attributes: vec![],
    };
    let s0 = b.intern_schema(&schema);
    let s1 = b.intern_schema(&other);
    for i in 0..datasets {
        let name = format!("R{:07}_{:016x}.nc", i, rng.next());
        b.push_dataset(&name, if i % 5 == 0 { s1 } else { s0 })
            .unwrap();
    }
    let names = ["temperature", "time", "_datasets", "salinity", "pressure"];
    let mut segments = Vec::new();
    for (i, &len) in seg_lens.iter().enumerate() {
        b.push_variable(names[i % names.len()], len as u64).unwrap();
        segments.push((0..len).map(|_| rng.next() as u8).collect());
    }
    (b.finish(), segments)
}

pub fn container(footer: &CollectionFooter, segments: &[Vec<u8>]) -> Vec<u8> {
    let refs: Vec<&[u8]> = segments.iter().map(Vec::as_slice).collect();
    assemble(footer, &refs).unwrap()
}

/// Header + the given segment bytes + footer + trailer, with no layout check
/// (for containers that are wrong on purpose).
pub fn raw_container(footer_bytes: &[u8], segments: &[u8]) -> Vec<u8> {
    let mut out = atlas_format::encode_header().to_vec();
    out.extend_from_slice(segments);
    out.extend_from_slice(footer_bytes);
    out.extend_from_slice(
        &atlas_format::Trailer {
            footer_size: footer_bytes.len() as u64,
        }
        .encode(),
    );
    out
}

// ---------------------------------------------------------------------------
// Drivers for the push decoder.

/// Opens `bytes` through a decoder that knows the length, answering every
/// range request in pieces of `piece` bytes; returns the result and every
/// range the decoder asked for.
pub fn open_known(
    bytes: &[u8],
    piece: usize,
    decoder: OpenDecoder,
) -> (Result<OpenedContainer, FormatError>, Vec<Range<u64>>) {
    let mut decoder = decoder;
    let mut reads = Vec::new();
    loop {
        match decoder.try_decode() {
            Err(e) => return (Err(e), reads),
            Ok(DecodeResult::Opened(c)) => return (Ok(c), reads),
            Ok(DecodeResult::NeedsData(ReadRequest::Range(r))) => {
                assert!(reads.len() < 10, "the decoder keeps asking: {reads:?}");
                reads.push(r.clone());
                let data = &bytes[r.start as usize..r.end as usize];
                for chunk in data.chunks(piece.max(1)) {
                    decoder.push(chunk).unwrap();
                }
            }
            Ok(DecodeResult::NeedsData(other)) => panic!("a known length asked for {other:?}"),
        }
    }
}

/// Opens `bytes` through a decoder that does not know the length, answering
/// each suffix request as an object store would (the whole object when it is
/// shorter); returns the result and every suffix length asked for.
pub fn open_suffix(
    bytes: &[u8],
    decoder: OpenDecoder,
) -> (Result<OpenedContainer, FormatError>, Vec<u64>) {
    let mut decoder = decoder;
    let mut reads = Vec::new();
    loop {
        match decoder.try_decode() {
            Err(e) => return (Err(e), reads),
            Ok(DecodeResult::Opened(c)) => return (Ok(c), reads),
            Ok(DecodeResult::NeedsData(ReadRequest::Suffix { len })) => {
                assert!(reads.len() < 10, "the decoder keeps asking: {reads:?}");
                reads.push(len);
                let start = bytes.len().saturating_sub(len as usize);
                decoder.push_suffix(&bytes[start..]).unwrap();
            }
            Ok(DecodeResult::NeedsData(other)) => panic!("an unknown length asked for {other:?}"),
        }
    }
}

pub fn limits() -> DecodeLimits {
    DecodeLimits::default()
}

pub fn is_corrupt<T: std::fmt::Debug>(r: &Result<T, FormatError>) -> bool {
    matches!(r, Err(FormatError::CorruptCollection { .. }))
}

/// One edit of a byte string, for proptests that feed damaged bytes to a decoder.
#[derive(Debug, Clone)]
pub enum Mutation {
    Flip {
        at: prop::sample::Index,
        bit: u8,
    },
    Set {
        at: prop::sample::Index,
        byte: u8,
    },
    Insert {
        at: prop::sample::Index,
        bytes: Vec<u8>,
    },
    Delete {
        at: prop::sample::Index,
        len: usize,
    },
    Truncate {
        at: prop::sample::Index,
    },
    Chop {
        at: prop::sample::Index,
    },
}

/// Flips, overwrites (with bytes MessagePack and zstd treat specially), inserts,
/// deletes, truncations and chops of the front, weighted toward small edits.
pub fn mutation() -> impl Strategy<Value = Mutation> {
    let at = any::<prop::sample::Index>;
    prop_oneof![
        4 => (at(), 0u8..8).prop_map(|(at, bit)| Mutation::Flip { at, bit }),
        3 => (at(), prop_oneof![Just(0u8), Just(0xff), Just(0x7f), Just(0xc1), Just(0xdd), any::<u8>()])
            .prop_map(|(at, byte)| Mutation::Set { at, byte }),
        2 => (at(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        2 => (at(), 1usize..64).prop_map(|(at, len)| Mutation::Delete { at, len }),
        1 => at().prop_map(|at| Mutation::Truncate { at }),
        1 => at().prop_map(|at| Mutation::Chop { at }),
    ]
}

/// `bytes` with `mutations` applied in order (positions scaled to the current length).
pub fn apply(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        let n = bytes.len();
        if n == 0 {
            break;
        }
        match m {
            Mutation::Flip { at, bit } => bytes[at.index(n)] ^= 1 << bit,
            Mutation::Set { at, byte } => bytes[at.index(n)] = *byte,
            Mutation::Insert { at, bytes: ins } => {
                let i = at.index(n + 1);
                bytes.splice(i..i, ins.iter().copied());
            }
            Mutation::Delete { at, len } => {
                let i = at.index(n);
                bytes.drain(i..(i + len).min(n));
            }
            Mutation::Truncate { at } => bytes.truncate(at.index(n)),
            Mutation::Chop { at } => {
                bytes.drain(..at.index(n));
            }
        }
    }
    bytes
}
