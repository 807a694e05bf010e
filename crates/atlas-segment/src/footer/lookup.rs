//! One array's footer entry, read without reading the whole segment footer.
//!
//! A segment footer is an rkyv archive: the root sits at its very end and
//! holds, for each table (blocks, strings, values, arrays), a relative
//! pointer and a length. Array entries have a fixed size, so entry `p` sits
//! at a computable position; its variable-size parts (name, shape, chunk
//! table, ...) were written in front of the entry table, one array after the
//! other, so for arrays of similar make-up their place is predictable too.
//!
//! This module turns the last bytes of a footer into a [`Plan`] of three
//! small ranges (entry `p`, a window around its variable-size parts, the block
//! table), and the bytes of those ranges into a footer of its own holding just
//! that array and every block ([`assemble`]). Nothing read here is trusted:
//! every position is checked against the archive before use, the pieces are
//! validated by rkyv, the entry must carry the expected name, and it must
//! decode the same whatever the bytes the plan did not fetch (the gaps are
//! filled once with `0x00` and once with `0xFF`; an entry that reaches into a
//! gap decodes differently or not at all). Any doubt is a [`Miss`], and the
//! caller reads the whole footer instead.

use std::mem::{offset_of, size_of};
use std::ops::Range;

use rkyv::rancor;
use rkyv::util::AlignedVec;

use crate::footer::schema::{
    ARCHIVE_ALIGN, ArchivedArrayMeta, ArchivedBlockMeta, ArchivedDiskValue, ArchivedFooter,
    ArrayMeta, BlockMeta, FOOTER_VERSION, Footer,
};
use crate::footer::tail::ARRF_TRAILER_LEN;

/// Bytes of an archived `Vec` header: an `i64` relative pointer, then a `u64`
/// length (rkyv with 64-bit pointers, as array-format archives).
const VEC_HEADER: usize = 16;
const _: () = assert!(size_of::<rkyv::vec::ArchivedVec<u32>>() == VEC_HEADER);
/// Alignment the archive is laid out for.
const ALIGN: u64 = ARCHIVE_ALIGN as u64;
/// Least slack read on either side of the estimated place of an entry's parts.
const WINDOW_SLACK: u64 = 8 * 1024;
/// A plan whose ranges span more than this is not worth it: read the footer.
const SPAN_LIMIT: u64 = 256 * 1024 * 1024;
/// A block table larger than this is read with the whole footer instead.
const BLOCK_TABLE_LIMIT: u64 = 4 * 1024 * 1024;

/// Why the lookup gave up; the caller then reads the whole footer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Miss {
    /// A position or length in the root does not fit the archive.
    #[error("footer root: {0}")]
    Root(&'static str),
    /// The footer has no entry at the position asked for.
    #[error("no array entry at position {0}")]
    Position(u64),
    /// The ranges would be too large to be worth it.
    #[error("the ranges to read are too large")]
    TooLarge,
    /// rkyv refused a piece.
    #[error("piece does not validate: {0}")]
    Invalid(String),
    /// The entry at the position belongs to another array.
    #[error("entry names another array")]
    OtherName,
    /// The entry reaches into bytes that were not read.
    #[error("entry reaches past the bytes read")]
    Incomplete,
}

/// The tables of a footer, as its root records them (positions relative to
/// the start of the archive, i.e. of the footer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Root {
    /// First byte and entry count of the block table.
    pub blocks: (u64, u64),
    /// Where the value table ends: the arrays' variable-size parts follow.
    pub values_end: u64,
    /// First byte and entry count of the array table.
    pub arrays: (u64, u64),
}

/// Bytes at the end of the archive that [`parse_root`] needs.
pub(crate) const ROOT_BYTES: u64 = size_of::<ArchivedFooter>() as u64;

/// Reads the root from `root` (the last [`ROOT_BYTES`] of an archive of `archive_len` bytes).
pub(crate) fn parse_root(root: &[u8], archive_len: u64) -> Result<Root, Miss> {
    let root_pos = archive_len
        .checked_sub(ROOT_BYTES)
        .ok_or(Miss::Root("archive shorter than its root"))?;
    if root.len() as u64 != ROOT_BYTES {
        return Err(Miss::Root("root bytes missing"));
    }
    let version = read_u32(root, offset_of!(ArchivedFooter, version))?;
    if version != FOOTER_VERSION {
        return Err(Miss::Root("unknown footer version"));
    }
    let table = |field: usize, entry: usize| -> Result<(u64, u64), Miss> {
        let rel = read_i64(root, field)?;
        let count = read_u64(root, field.saturating_add(VEC_HEADER / 2))?;
        let at = root_pos
            .checked_add(field as u64)
            .and_then(|p| i64::try_from(p).ok())
            .and_then(|p| p.checked_add(rel))
            .and_then(|p| u64::try_from(p).ok())
            .ok_or(Miss::Root("table pointer outside the archive"))?;
        let end = count
            .checked_mul(entry as u64)
            .and_then(|b| b.checked_add(at))
            .ok_or(Miss::Root("table length overflows"))?;
        if end > root_pos {
            return Err(Miss::Root("table runs into the root"));
        }
        Ok((at, count))
    };
    let blocks = table(
        offset_of!(ArchivedFooter, blocks),
        size_of::<ArchivedBlockMeta>(),
    )?;
    let values = table(
        offset_of!(ArchivedFooter, values),
        size_of::<ArchivedDiskValue>(),
    )?;
    let arrays = table(
        offset_of!(ArchivedFooter, arrays),
        size_of::<ArchivedArrayMeta>(),
    )?;
    let values_end = values
        .1
        .saturating_mul(size_of::<ArchivedDiskValue>() as u64)
        .saturating_add(values.0);
    if values_end > arrays.0 {
        return Err(Miss::Root("value table overlaps the array table"));
    }
    Ok(Root {
        blocks,
        values_end,
        arrays,
    })
}

/// The ranges of the archive to read for the array at `position`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The array's fixed-size entry.
    pub entry: Range<u64>,
    /// A window around the estimated place of its variable-size parts.
    pub parts: Range<u64>,
    /// The whole block table.
    pub blocks: Range<u64>,
}

impl Plan {
    /// The plan's ranges, with those that touch or overlap merged (fewer requests).
    pub fn ranges(&self) -> Vec<Range<u64>> {
        let mut all = vec![self.entry.clone(), self.parts.clone(), self.blocks.clone()];
        all.retain(|r| r.start < r.end);
        all.sort_by_key(|r| r.start);
        let mut merged: Vec<Range<u64>> = Vec::with_capacity(all.len());
        for r in all {
            match merged.last_mut() {
                Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => merged.push(r),
            }
        }
        merged
    }
}

/// Plans the reads for the entry at `position` of a footer with root `root`.
pub(crate) fn plan(root: &Root, position: u64) -> Result<Plan, Miss> {
    let (arrays_at, count) = root.arrays;
    if position >= count {
        return Err(Miss::Position(position));
    }
    let entry_len = size_of::<ArchivedArrayMeta>() as u64;
    let entry_start = position
        .checked_mul(entry_len)
        .and_then(|o| o.checked_add(arrays_at))
        .ok_or(Miss::Position(position))?;
    let entry = entry_start..entry_start.saturating_add(entry_len);
    // The parts of arrays 0..count fill values_end..arrays_at in order.
    let region = root.values_end..arrays_at;
    let region_len = region.end.saturating_sub(region.start);
    let per_array = region_len / count.max(1);
    let estimate = region.start.saturating_add(
        u64::try_from(u128::from(region_len) * u128::from(position) / u128::from(count.max(1)))
            .unwrap_or(u64::MAX),
    );
    let slack = per_array.saturating_mul(2).max(WINDOW_SLACK);
    let parts = estimate.saturating_sub(slack).max(region.start)
        ..estimate
            .saturating_add(per_array)
            .saturating_add(slack)
            .min(region.end);
    let block_bytes = root
        .blocks
        .1
        .saturating_mul(size_of::<ArchivedBlockMeta>() as u64);
    if block_bytes > BLOCK_TABLE_LIMIT {
        return Err(Miss::TooLarge);
    }
    let blocks = root.blocks.0..root.blocks.0.saturating_add(block_bytes);
    Ok(Plan {
        entry,
        parts,
        blocks,
    })
}

/// Builds, from the bytes of `plan`'s ranges (`pieces`: each merged range
/// with its bytes), a whole footer (trailer included) holding the array
/// called `name` without its attributes, and every block of the original.
pub(crate) fn assemble(
    plan: &Plan,
    pieces: &[(Range<u64>, &[u8])],
    name: &str,
) -> Result<Vec<u8>, Miss> {
    let blocks = blocks(plan, pieces)?;
    let mut array = entry(plan, pieces, 0x00)?;
    if array.name != name {
        return Err(Miss::OtherName);
    }
    if entry(plan, pieces, 0xFF)? != array {
        return Err(Miss::Incomplete);
    }
    // Attributes index string and value tables this lookup did not read.
    array.attributes.clear();
    let footer = Footer {
        version: FOOTER_VERSION,
        blocks,
        strings: Vec::new(),
        values: Vec::new(),
        arrays: vec![array],
    };
    let archive =
        rkyv::to_bytes::<rancor::Error>(&footer).map_err(|e| Miss::Invalid(e.to_string()))?;
    let mut out = Vec::with_capacity(archive.len().saturating_add(ARRF_TRAILER_LEN as usize));
    out.extend_from_slice(&archive);
    out.extend_from_slice(&(archive.len() as u64).to_le_bytes());
    out.extend_from_slice(&crate::footer::tail::ARRF_MAGIC);
    Ok(out)
}

/// A buffer holding archive bytes `lo..hi` (`lo` aligned), `fill` where no
/// piece covers them.
fn sparse(lo: u64, hi: u64, pieces: &[(Range<u64>, &[u8])], fill: u8) -> Result<AlignedVec, Miss> {
    let len = usize::try_from(hi.saturating_sub(lo)).map_err(|_| Miss::TooLarge)?;
    let mut buf = AlignedVec::with_capacity(len);
    buf.resize(len, fill);
    for (range, bytes) in pieces {
        let from = range.start.max(lo);
        let to = range.end.min(hi);
        if from >= to {
            continue;
        }
        let src = bytes
            .get(to_usize(from - range.start)?..to_usize(to - range.start)?)
            .ok_or(Miss::Incomplete)?;
        let dst = buf
            .get_mut(to_usize(from - lo)?..to_usize(to - lo)?)
            .ok_or(Miss::Incomplete)?;
        dst.copy_from_slice(src);
    }
    Ok(buf)
}

fn to_usize(v: u64) -> Result<usize, Miss> {
    usize::try_from(v).map_err(|_| Miss::TooLarge)
}

fn covered(range: &Range<u64>, pieces: &[(Range<u64>, &[u8])]) -> bool {
    range.start >= range.end
        || pieces.iter().any(|(r, b)| {
            r.start <= range.start && range.end <= r.end && b.len() as u64 == r.end - r.start
        })
}

fn blocks(plan: &Plan, pieces: &[(Range<u64>, &[u8])]) -> Result<Vec<BlockMeta>, Miss> {
    if !covered(&plan.blocks, pieces) {
        return Err(Miss::Incomplete);
    }
    let lo = plan.blocks.start - plan.blocks.start % ALIGN;
    let buf = sparse(lo, plan.blocks.end, pieces, 0)?;
    let size = size_of::<ArchivedBlockMeta>() as u64;
    let count = (plan.blocks.end - plan.blocks.start) / size;
    let mut out = Vec::with_capacity(to_usize(count)?);
    for i in 0..count {
        let pos = to_usize(plan.blocks.start - lo + i * size)?;
        let archived = rkyv::api::high::access_pos::<ArchivedBlockMeta, rancor::Error>(&buf, pos)
            .map_err(|e| Miss::Invalid(e.to_string()))?;
        out.push(
            rkyv::deserialize::<BlockMeta, rancor::Error>(archived)
                .map_err(|e| Miss::Invalid(e.to_string()))?,
        );
    }
    Ok(out)
}

fn entry(plan: &Plan, pieces: &[(Range<u64>, &[u8])], fill: u8) -> Result<ArrayMeta, Miss> {
    if !covered(&plan.entry, pieces) {
        return Err(Miss::Incomplete);
    }
    let lo = plan.parts.start.min(plan.entry.start);
    let lo = lo - lo % ALIGN;
    let hi = plan.entry.end.max(plan.parts.end);
    if hi.saturating_sub(lo) > SPAN_LIMIT {
        return Err(Miss::TooLarge);
    }
    let buf = sparse(lo, hi, pieces, fill)?;
    let pos = to_usize(plan.entry.start - lo)?;
    let archived = rkyv::api::high::access_pos::<ArchivedArrayMeta, rancor::Error>(&buf, pos)
        .map_err(|e| Miss::Invalid(e.to_string()))?;
    rkyv::deserialize::<ArrayMeta, rancor::Error>(archived)
        .map_err(|e| Miss::Invalid(e.to_string()))
}

fn read_u32(bytes: &[u8], at: usize) -> Result<u32, Miss> {
    bytes
        .get(at..at.saturating_add(4))
        .and_then(|b| b.try_into().ok())
        .map(u32::from_le_bytes)
        .ok_or(Miss::Root("root bytes missing"))
}

fn read_u64(bytes: &[u8], at: usize) -> Result<u64, Miss> {
    bytes
        .get(at..at.saturating_add(8))
        .and_then(|b| b.try_into().ok())
        .map(u64::from_le_bytes)
        .ok_or(Miss::Root("root bytes missing"))
}

fn read_i64(bytes: &[u8], at: usize) -> Result<i64, Miss> {
    read_u64(bytes, at).map(|v| v as i64)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use array_format::{ArrayWriter, AttributeValue, FillValue, WriterConfig, ZstdCodec};
    use object_store::ObjectStoreExt;

    use super::*;

    /// A segment of `n` arrays `d0000..`, each of 5..40 f32 values in one or two
    /// chunks, with an attribute, plus the same footer deserialized through the schema.
    async fn segment(n: usize) -> (Vec<u8>, Footer) {
        let mut w = ArrayWriter::new(WriterConfig {
            block_target_size: 4096,
            ..WriterConfig::new(ZstdCodec::default())
        });
        for i in 0..n {
            let name = format!("d{i:04}");
            let len = 5 + (i * 7) % 36;
            w.define_array::<f32>(
                &name,
                vec!["x".into()],
                vec![len],
                Some(vec![20]),
                Some(FillValue::Float(99999.0)),
            )
            .unwrap();
            let data = ndarray::Array::from_vec((0..len).map(|k| (i * 100 + k) as f32).collect())
                .into_dyn();
            w.write_array(&name, vec![0], data.view()).unwrap();
            w.set_attribute(&name, "units", AttributeValue::String("K".into()))
                .unwrap();
        }
        let store = Arc::new(object_store::memory::InMemory::new());
        let path = object_store::path::Path::from("seg");
        w.finish(store.clone(), path.clone()).await.unwrap();
        let bytes = store
            .get(&path)
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap()
            .to_vec();
        let footer = full_footer(&bytes);
        (bytes, footer)
    }

    /// The archive bytes (footer without trailer) of a whole file.
    fn archive(file: &[u8]) -> &[u8] {
        let t = file.len() - 12;
        let size = u64::from_le_bytes(file[t..t + 8].try_into().unwrap()) as usize;
        &file[t - size..t]
    }

    fn full_footer(file: &[u8]) -> Footer {
        let mut aligned: AlignedVec = AlignedVec::new();
        aligned.extend_from_slice(archive(file));
        let archived = rkyv::access::<ArchivedFooter, rancor::Error>(&aligned).unwrap();
        rkyv::deserialize::<Footer, rancor::Error>(archived).unwrap()
    }

    /// Runs the whole lookup for `position` against `archive`, reading the
    /// plan's ranges through `read`.
    fn lookup(
        archive: &[u8],
        position: u64,
        name: &str,
        read: impl Fn(Range<u64>) -> Vec<u8>,
    ) -> Result<Vec<u8>, Miss> {
        let len = archive.len() as u64;
        let root = parse_root(&archive[archive.len() - ROOT_BYTES as usize..], len)?;
        let plan = plan(&root, position)?;
        let fetched: Vec<(Range<u64>, Vec<u8>)> = plan
            .ranges()
            .into_iter()
            .map(|r| (r.clone(), read(r)))
            .collect();
        let pieces: Vec<(Range<u64>, &[u8])> = fetched
            .iter()
            .map(|(r, b)| (r.clone(), b.as_slice()))
            .collect();
        assemble(&plan, &pieces, name)
    }

    #[tokio::test]
    async fn every_entry_of_a_footer_is_found_with_three_small_ranges() {
        let (file, full) = segment(300).await;
        let arch = archive(&file);
        for p in 0..300u64 {
            let name = format!("d{p:04}");
            let root =
                parse_root(&arch[arch.len() - ROOT_BYTES as usize..], arch.len() as u64).unwrap();
            let plan = plan(&root, p).unwrap();
            let bytes: u64 = plan.ranges().iter().map(|r| r.end - r.start).sum();
            assert!(plan.ranges().len() <= 3);
            assert!(bytes < 64 * 1024, "{bytes} bytes for one entry");
            let mini = lookup(arch, p, &name, |r| {
                arch[r.start as usize..r.end as usize].to_vec()
            })
            .unwrap();
            let got = full_footer(&mini);
            let mut want = full.arrays.iter().find(|a| a.name == name).unwrap().clone();
            want.attributes.clear();
            assert_eq!(got.arrays, vec![want]);
            assert_eq!(got.blocks, full.blocks);
            // The mini footer is a footer validation accepts.
            let data_end = (file.len() - arch.len() - 12) as u64;
            let validated = crate::footer::validate::validate_footer(
                &bytes::Bytes::from(mini.clone()),
                data_end + mini.len() as u64,
            )
            .unwrap();
            assert!(validated.checked.problems.is_empty());
        }
    }

    #[tokio::test]
    async fn an_entry_of_another_name_is_a_miss() {
        let (file, _) = segment(50).await;
        let arch = archive(&file);
        let got = lookup(arch, 10, "d0011", |r| {
            arch[r.start as usize..r.end as usize].to_vec()
        });
        assert_eq!(got, Err(Miss::OtherName));
        assert_eq!(
            lookup(arch, 50, "d0050", |r| arch
                [r.start as usize..r.end as usize]
                .to_vec()),
            Err(Miss::Position(50))
        );
    }

    #[tokio::test]
    async fn parts_outside_the_window_are_a_miss_not_a_wrong_answer() {
        let (file, _) = segment(200).await;
        let arch = archive(&file);
        let root =
            parse_root(&arch[arch.len() - ROOT_BYTES as usize..], arch.len() as u64).unwrap();
        for p in [0u64, 77, 199] {
            let mut plan = plan(&root, p).unwrap();
            // A window shifted away from the entry's parts.
            plan.parts = root.values_end..root.values_end + 64;
            if p == 0 {
                plan.parts = root.arrays.0 - 64..root.arrays.0;
            }
            let fetched: Vec<(Range<u64>, Vec<u8>)> = plan
                .ranges()
                .into_iter()
                .map(|r| (r.clone(), arch[r.start as usize..r.end as usize].to_vec()))
                .collect();
            let pieces: Vec<(Range<u64>, &[u8])> = fetched
                .iter()
                .map(|(r, b)| (r.clone(), b.as_slice()))
                .collect();
            let got = assemble(&plan, &pieces, &format!("d{p:04}"));
            assert!(
                matches!(got, Err(Miss::Incomplete | Miss::Invalid(_))),
                "{got:?}"
            );
        }
    }

    #[tokio::test]
    async fn flipped_bytes_in_the_pieces_never_panic() {
        let (file, _) = segment(40).await;
        let arch = archive(&file).to_vec();
        let len = arch.len();
        for i in (0..len).step_by(3) {
            let mut damaged = arch.clone();
            damaged[i] ^= 0xFF;
            // Whatever comes back, the call returns.
            let _ = lookup(&damaged, 20, "d0020", |r| {
                damaged[r.start as usize..r.end as usize].to_vec()
            });
        }
    }

    #[tokio::test]
    async fn a_lookup_at_the_wrong_position_falls_back_to_the_whole_footer() {
        use crate::read::container_segments::{ContainerSegments, SegmentOptions, SegmentRange};
        let n = 4000;
        let (file, _) = segment(n).await;
        let (op, layer) = crate::test_support::counted_memory();
        op.write("c", file.clone()).await.unwrap();
        let segments = ContainerSegments::new(
            op,
            "c",
            1,
            SegmentOptions::default(),
            bytes::Bytes::new(),
            0,
        );
        let range = SegmentRange {
            name: "v".into(),
            offset: 0,
            len: file.len() as u64,
            arrays_hint: n as u64,
        };
        let expect = |i: usize| -> Vec<f32> {
            (0..5 + (i * 7) % 36)
                .map(|k| (i * 100 + k) as f32)
                .collect()
        };
        let one = segments
            .get_array(0, &range, "d0123", || 123)
            .await
            .unwrap();
        assert_eq!(
            (segments.opened(), one.array_count()),
            (0, 1),
            "found by lookup"
        );
        let got = one.read::<f32>("d0123", &[], &[]).await.unwrap();
        assert_eq!(got.iter().copied().collect::<Vec<_>>(), expect(123));
        let looked_up = layer.stats().snapshot();
        assert!(
            looked_up.bytes_read < (file.len() / 4) as u64,
            "{looked_up:?}"
        );
        // The position says 5, the entry there is d0005: the whole footer is read.
        let whole = segments.get_array(0, &range, "d0124", || 5).await.unwrap();
        assert_eq!((segments.opened(), whole.array_count()), (1, n));
        let got = whole.read::<f32>("d0124", &[], &[]).await.unwrap();
        assert_eq!(got.iter().copied().collect::<Vec<_>>(), expect(124));
    }

    #[test]
    fn a_root_pointing_outside_the_archive_is_a_miss() {
        let mut root = vec![0u8; ROOT_BYTES as usize];
        root[..4].copy_from_slice(&FOOTER_VERSION.to_le_bytes());
        let arrays = offset_of!(ArchivedFooter, arrays);
        root[arrays..arrays + 8].copy_from_slice(&(-1_000_000i64).to_le_bytes());
        root[arrays + 8..arrays + 16].copy_from_slice(&1u64.to_le_bytes());
        assert!(matches!(parse_root(&root, 4096), Err(Miss::Root(_))));
        let mut huge = root.clone();
        huge[arrays..arrays + 8].copy_from_slice(&(-64i64).to_le_bytes());
        huge[arrays + 8..arrays + 16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(parse_root(&huge, 4096), Err(Miss::Root(_))));
        root[..4].copy_from_slice(&5u32.to_le_bytes());
        assert_eq!(
            parse_root(&root, 4096),
            Err(Miss::Root("unknown footer version"))
        );
    }
}
