//! Opening a collection: the transport half of `atlas-format`'s push decoder.
//!
//! [`OpenDecoder`] says which bytes it needs; this module fetches them and
//! pushes them back until the footer is decoded:
//!
//! - where the service reads suffixes ([`supports_suffix_reads`]), the first
//!   request is `bytes=-65536`: one read, no stat;
//! - otherwise one stat learns the length, then a ranged read of the last
//!   `min(len, 64 KiB)` bytes;
//! - a footer that does not fit in that probe costs exactly one more read
//!   (split into parts fetched concurrently as the [`ReadParallelism`] says).
//!
//! [`open_collection`] reads `deleted.mask` concurrently with all of that, so
//! an open costs one read of the container (two for a footer over 64 KiB)
//! plus one read of the mask, and the mask's latency hides behind the tail's.

use atlas_format::{
    DecodeLimits, DecodeResult, FormatError, OpenDecoder, OpenedContainer, ReadRequest,
};
use bytes::Bytes;
use opendal::Operator;

use crate::error::{IoError, IoErrorKind};
use crate::read::{
    ReadParallelism, concat, read_optional, read_split, read_suffix_once, stat_len,
    supports_suffix_reads,
};

/// Why a container could not be opened: the transport failed, or the bytes are not a valid container.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// A read or stat failed; the kind says whether retrying can help.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The bytes were read but are not (a supported version of) an Atlas container.
    #[error(transparent)]
    Format(#[from] FormatError),
}

/// A decoded container plus the raw bytes read to decode it.
#[derive(Debug, Clone)]
pub struct OpenedTail {
    /// The validated footer and where things are.
    pub container: OpenedContainer,
    /// The last `tail.len()` bytes of the container as read (probe, and footer
    /// when it needed a second read). Segments that end inside it can be served
    /// from memory.
    pub tail: Bytes,
    /// Requests sent: stats plus reads.
    pub requests: u32,
}

/// An opened container and the deletion mask read beside it.
#[derive(Debug, Clone)]
pub struct OpenedCollection {
    /// The container, see [`OpenedTail`].
    pub tail: OpenedTail,
    /// The mask file's bytes, `None` if there is none (nothing deleted).
    pub mask: Option<Bytes>,
}

/// Opens the container at `path`: one suffix read (or stat + range read), and
/// one more read when the footer exceeds the 64 KiB probe.
///
/// A missing object is an [`IoError`] of kind [`IoErrorKind::NotFound`].
/// Big reads are split as [`ReadParallelism::for_operator`] says.
pub async fn open_container(
    op: &Operator,
    path: &str,
    limits: DecodeLimits,
) -> Result<OpenedTail, OpenError> {
    open_container_with(op, path, limits, &ReadParallelism::for_operator(op)).await
}

/// [`open_container`], with a footer read past the probe split as `policy` says.
pub async fn open_container_with(
    op: &Operator,
    path: &str,
    limits: DecodeLimits,
    policy: &ReadParallelism,
) -> Result<OpenedTail, OpenError> {
    if supports_suffix_reads(op) {
        match drive(op, path, limits, None, policy).await {
            // A service may claim suffix reads and still refuse one: fall back.
            Err(OpenError::Io(e)) if e.kind() == IoErrorKind::Unsupported => {
                tracing::debug!(path, "suffix read refused; falling back to stat + range");
            }
            other => return other,
        }
    }
    let len = stat_len(op, path).await?;
    let mut opened = drive(op, path, limits, Some(len), policy).await?;
    opened.requests = opened.requests.saturating_add(1);
    Ok(opened)
}

/// [`open_container`] on `container_path` and a whole read of `mask_path`, concurrently.
///
/// The mask read is one GET; an absent mask is `None`. A container error wins
/// over a mask error.
pub async fn open_collection(
    op: &Operator,
    container_path: &str,
    mask_path: &str,
    limits: DecodeLimits,
) -> Result<OpenedCollection, OpenError> {
    let policy = ReadParallelism::for_operator(op);
    open_collection_with(op, container_path, mask_path, limits, &policy).await
}

/// [`open_collection`], with big reads split as `policy` says.
pub async fn open_collection_with(
    op: &Operator,
    container_path: &str,
    mask_path: &str,
    limits: DecodeLimits,
    policy: &ReadParallelism,
) -> Result<OpenedCollection, OpenError> {
    let (tail, mask) = futures::join!(
        open_container_with(op, container_path, limits, policy),
        read_optional(op, mask_path)
    );
    let tail = tail?;
    let mask = mask?.map(|snapshot| snapshot.bytes);
    Ok(OpenedCollection { tail, mask })
}

/// Runs the decoder to the end with `len` known (ranged reads) or unknown (suffix reads).
async fn drive(
    op: &Operator,
    path: &str,
    limits: DecodeLimits,
    len: Option<u64>,
    policy: &ReadParallelism,
) -> Result<OpenedTail, OpenError> {
    let mut decoder = OpenDecoder::new(len).with_limits(limits);
    let mut tail = Bytes::new();
    let mut requests: u32 = 0;
    loop {
        match decoder.try_decode()? {
            DecodeResult::Opened(container) => {
                return Ok(OpenedTail {
                    container,
                    tail,
                    requests,
                });
            }
            DecodeResult::NeedsData(ReadRequest::Range(range)) => {
                let pieces = policy.requests(&range);
                let bytes = read_split(op, path, range, policy).await?;
                requests = requests.saturating_add(u32::try_from(pieces).unwrap_or(u32::MAX));
                decoder.push(&bytes)?;
                // Requests walk backwards from the end: each one sits in front of the last.
                tail = concat(vec![bytes, tail]);
            }
            DecodeResult::NeedsData(ReadRequest::Suffix { len: n }) => {
                let bytes = read_suffix_once(op, path, n).await?;
                requests = requests.saturating_add(1);
                decoder.push_suffix(&bytes)?;
                // A suffix response holds everything from its start to the end.
                tail = bytes;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use atlas_format::{Codec, DatasetSchema, FooterBuilder, assemble};

    use super::*;
    use crate::counting::CountingLayer;

    fn container(datasets: usize) -> Vec<u8> {
        let mut footer = FooterBuilder::new(Codec::Zstd, 0);
        let schema = footer.intern_schema(&DatasetSchema::default());
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        for i in 0..datasets {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            footer.push_dataset(&format!("{i}-{x:x}"), schema).unwrap();
        }
        let segment = b"opaque".to_vec();
        footer.push_variable("v", segment.len() as u64).unwrap();
        assemble(&footer.finish(), &[&segment]).unwrap()
    }

    async fn counted(bytes: Vec<u8>, suffix: bool) -> (Operator, crate::counting::RequestStats) {
        let layer = if suffix {
            CountingLayer::new()
        } else {
            CountingLayer::new().without_suffix_reads()
        };
        let stats = layer.stats();
        let op = Operator::new(opendal::services::Memory::default())
            .unwrap()
            .layer(layer);
        op.write("c/data.atlas", bytes).await.unwrap();
        stats.reset();
        (op, stats)
    }

    #[tokio::test]
    async fn a_small_container_opens_with_one_read_and_hands_back_its_bytes() {
        let bytes = container(3);
        for suffix in [true, false] {
            let (op, stats) = counted(bytes.clone(), suffix).await;
            let opened = open_container(&op, "c/data.atlas", DecodeLimits::default())
                .await
                .unwrap();
            assert_eq!(opened.container.footer.datasets.len(), 3);
            assert_eq!(
                opened.tail.as_ref(),
                &bytes[..],
                "the whole container arrived"
            );
            assert!(opened.container.header_checked);
            let counts = stats.snapshot();
            assert_eq!(counts.reads, 1);
            assert_eq!(counts.stats, u64::from(!suffix));
            assert_eq!(opened.requests, 1 + u32::from(!suffix));
        }
    }

    #[tokio::test]
    async fn a_large_footer_costs_one_more_read() {
        let bytes = container(20_000);
        for suffix in [true, false] {
            let (op, stats) = counted(bytes.clone(), suffix).await;
            let opened = open_container(&op, "c/data.atlas", DecodeLimits::default())
                .await
                .unwrap();
            assert!(opened.container.footer_len > atlas_format::TAIL_PROBE_LEN);
            assert_eq!(stats.snapshot().reads, 2);
            let need = opened.container.footer_len + atlas_format::TRAILER_LEN;
            assert!(opened.tail.len() as u64 >= need);
            assert!(bytes.ends_with(&opened.tail));
        }
    }

    #[tokio::test]
    async fn the_mask_is_read_beside_the_container() {
        let (op, stats) = counted(container(3), true).await;
        op.write("c/deleted.mask", b"ATLM".to_vec()).await.unwrap();
        stats.reset();
        let opened = open_collection(
            &op,
            "c/data.atlas",
            "c/deleted.mask",
            DecodeLimits::default(),
        )
        .await
        .unwrap();
        assert_eq!(opened.mask.as_deref(), Some(&b"ATLM"[..]));
        assert_eq!(stats.snapshot().reads, 2);
        let absent = open_collection(&op, "c/data.atlas", "c/none.mask", DecodeLimits::default())
            .await
            .unwrap();
        assert!(absent.mask.is_none());
    }

    #[tokio::test]
    async fn a_missing_container_is_not_found_and_garbage_is_a_format_error() {
        let op = Operator::new(opendal::services::Memory::default()).unwrap();
        let err = open_container(&op, "nothing", DecodeLimits::default())
            .await
            .unwrap_err();
        assert!(
            matches!(&err, OpenError::Io(e) if e.kind() == IoErrorKind::NotFound),
            "{err}"
        );
        op.write("junk", b"hello, world".to_vec()).await.unwrap();
        let err = open_container(&op, "junk", DecodeLimits::default())
            .await
            .unwrap_err();
        assert!(matches!(
            err,
            OpenError::Format(FormatError::NotAnAtlasCollection { .. })
        ));
    }
}
