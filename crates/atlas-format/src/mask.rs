//! The deletion mask: a sidecar listing the ordinals of hidden datasets.
//!
//! ```text
//! | ATLM | version u32 LE = 1 | count u32 LE | count × ordinal u32 LE, strictly increasing |
//! ```

use std::collections::BTreeSet;

use crate::constants::{MASK_HEADER_LEN, MASK_MAGIC, MASK_VERSION};
use crate::error::{FormatError, Result};

/// The set of deleted ordinals of one container.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeletionMask {
    ordinals: BTreeSet<u32>,
}

/// Something tolerated while decoding a mask, returned to the caller to report.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MaskWarning {
    /// An ordinal at or past the container's dataset count; dropped.
    OrdinalOutOfRange {
        /// The dropped ordinal.
        ordinal: u32,
        /// Datasets in the container.
        dataset_count: u32,
    },
    /// The body ends before `count` ordinals; the whole ones that arrived are kept.
    Truncated {
        /// Ordinals the header announced.
        declared: u32,
        /// Whole ordinals present.
        present: u32,
    },
    /// Ordinals were not strictly increasing; duplicates were merged.
    NotStrictlyIncreasing,
    /// Bytes follow the announced ordinals; ignored.
    TrailingBytes {
        /// How many.
        count: usize,
    },
}

impl std::fmt::Display for MaskWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MaskWarning::OrdinalOutOfRange {
                ordinal,
                dataset_count,
            } => write!(
                f,
                "deletion mask names ordinal {ordinal}, but the container holds {dataset_count} datasets; ignored"
            ),
            MaskWarning::Truncated { declared, present } => write!(
                f,
                "deletion mask is truncated: {present} of {declared} ordinals present; kept those"
            ),
            MaskWarning::NotStrictlyIncreasing => {
                f.write_str("deletion mask ordinals are not strictly increasing; merged")
            }
            MaskWarning::TrailingBytes { count } => {
                write!(f, "deletion mask has {count} trailing bytes; ignored")
            }
        }
    }
}

impl DeletionMask {
    /// An empty mask: nothing deleted.
    pub fn new() -> Self {
        Self::default()
    }

    /// A mask from ordinals in any order.
    pub fn from_ordinals(ordinals: impl IntoIterator<Item = u32>) -> Self {
        Self {
            ordinals: ordinals.into_iter().collect(),
        }
    }

    /// Whether `ordinal` is deleted.
    pub fn contains(&self, ordinal: u32) -> bool {
        self.ordinals.contains(&ordinal)
    }

    /// Marks `ordinal` deleted; returns whether it was live before.
    pub fn insert(&mut self, ordinal: u32) -> bool {
        self.ordinals.insert(ordinal)
    }

    /// Number of deleted ordinals.
    pub fn len(&self) -> usize {
        self.ordinals.len()
    }

    /// Whether nothing is deleted.
    pub fn is_empty(&self) -> bool {
        self.ordinals.is_empty()
    }

    /// Deleted ordinals, increasing.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.ordinals.iter().copied()
    }

    /// Adds every ordinal of `other`.
    pub fn merge(&mut self, other: &DeletionMask) {
        self.ordinals.extend(other.iter());
    }

    /// The mask file's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let count = u32::try_from(self.ordinals.len()).unwrap_or(u32::MAX);
        let mut out = Vec::with_capacity(
            MASK_HEADER_LEN.saturating_add(self.ordinals.len().saturating_mul(4)),
        );
        out.extend_from_slice(&MASK_MAGIC);
        out.extend_from_slice(&MASK_VERSION.to_le_bytes());
        out.extend_from_slice(&count.to_le_bytes());
        for ordinal in self.ordinals.iter().take(count as usize) {
            out.extend_from_slice(&ordinal.to_le_bytes());
        }
        out
    }

    /// Decodes a mask file for a container of `dataset_count` datasets.
    ///
    /// Only a wrong magic or version is an error: out-of-range ordinals are
    /// dropped and a truncated body keeps what survived, each with a warning.
    pub fn decode(bytes: &[u8], dataset_count: u32) -> Result<(Self, Vec<MaskWarning>)> {
        let corrupt = |what: String| FormatError::CorruptMask { what };
        let header = bytes.get(..MASK_HEADER_LEN).ok_or_else(|| {
            corrupt(format!(
                "{} bytes, shorter than the 12-byte header",
                bytes.len()
            ))
        })?;
        let (magic, rest) = header.split_at(4);
        let (version, count) = rest.split_at(4);
        if magic != MASK_MAGIC {
            return Err(corrupt(format!(
                "expected magic ATLM, found {}",
                crate::frame::identify(bytes)
            )));
        }
        let version = u32::from_le_bytes(version.try_into().map_err(|_| corrupt("header".into()))?);
        if version != MASK_VERSION {
            return Err(corrupt(format!(
                "unsupported mask version {version}, expected {MASK_VERSION}"
            )));
        }
        let declared = u32::from_le_bytes(count.try_into().map_err(|_| corrupt("header".into()))?);
        let body = bytes.get(MASK_HEADER_LEN..).unwrap_or_default();
        let mut warnings = Vec::new();
        let mut mask = Self::new();
        let mut previous: Option<u32> = None;
        let mut out_of_order = false;
        let mut present: u32 = 0;
        for raw in body.chunks_exact(4).take(declared as usize) {
            let Ok(raw) = <[u8; 4]>::try_from(raw) else {
                continue;
            };
            present = present.saturating_add(1);
            let ordinal = u32::from_le_bytes(raw);
            if previous.is_some_and(|p| p >= ordinal) {
                out_of_order = true;
            }
            previous = Some(ordinal);
            if ordinal >= dataset_count {
                warnings.push(MaskWarning::OrdinalOutOfRange {
                    ordinal,
                    dataset_count,
                });
            } else {
                mask.insert(ordinal);
            }
        }
        if present < declared {
            warnings.push(MaskWarning::Truncated { declared, present });
        } else {
            let extra = body
                .len()
                .saturating_sub((declared as usize).saturating_mul(4));
            if extra > 0 {
                warnings.push(MaskWarning::TrailingBytes { count: extra });
            }
        }
        if out_of_order {
            warnings.push(MaskWarning::NotStrictlyIncreasing);
        }
        Ok((mask, warnings))
    }
}
