//! A segment footer held validated: its bytes and the archive read in place
//! over them, kept together for as long as the segment is open.
//!
//! rkyv validates an archive once and then hands out a borrowed view of it;
//! keeping that view beside the bytes it borrows needs a self-referential
//! pair, which `self_cell` provides without unsafe code of ours. An open
//! segment then answers names, shapes, types, statistics and attributes
//! straight from the archive, and array-format's decoded copy of the whole
//! footer (one `ArrayInfo` per array, an index by name, every attribute
//! column) is made only if a read needs array-format itself.
//!
//! [`NameIndex`] finds an array by name in the archive: one hash per array,
//! sorted, with no copy of the names; building it is also where two arrays
//! of one name are refused (array-format would refuse the whole footer).

use bytes::Bytes;
use foldhash::fast::FixedState;
use rkyv::util::AlignedVec;
use std::hash::BuildHasher;

use crate::footer::schema::{ARCHIVE_ALIGN, ArchivedArrayMeta, ArchivedFooter, FOOTER_VERSION};
use crate::footer::validate::FooterProblem;

type FooterRef<'a> = &'a ArchivedFooter;

self_cell::self_cell!(
    struct Held {
        owner: Bytes,
        #[covariant]
        dependent: FooterRef,
    }
);

/// A validated segment footer (without its trailer), read in place.
pub(crate) struct FooterArchive {
    held: Held,
}

impl std::fmt::Debug for FooterArchive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FooterArchive")
            .field("bytes", &self.held.borrow_owner().len())
            .field("arrays", &self.footer().arrays.len())
            .finish()
    }
}

impl FooterArchive {
    /// Validates the archive in `bytes`: rkyv's check of every offset and
    /// length, then the version the schema matches. A footer read in pieces
    /// arrives aligned (see `tail`) and is kept where it lies; one inside a
    /// single read is copied once into aligned memory.
    pub(crate) fn new(bytes: Bytes) -> Result<Self, FooterProblem> {
        let bytes = if bytes.as_ptr().align_offset(ARCHIVE_ALIGN) == 0 {
            bytes
        } else {
            let mut aligned = AlignedVec::<ARCHIVE_ALIGN>::with_capacity(bytes.len());
            aligned.extend_from_slice(&bytes);
            Bytes::from_owner(aligned)
        };
        let held = Held::try_new(bytes, |bytes| {
            rkyv::access::<ArchivedFooter, rkyv::rancor::Error>(bytes).map_err(|e| {
                FooterProblem::DoesNotValidate {
                    message: e.to_string(),
                }
            })
        })?;
        let version = held.borrow_dependent().version.to_native();
        if version != FOOTER_VERSION {
            return Err(FooterProblem::Version {
                found: version,
                expected: FOOTER_VERSION,
            });
        }
        Ok(Self { held })
    }

    /// The archive.
    pub(crate) fn footer(&self) -> &ArchivedFooter {
        self.held.borrow_dependent()
    }

    /// Bytes of the archive.
    pub(crate) fn len(&self) -> u64 {
        self.held.borrow_owner().len() as u64
    }
}

/// Every array of a footer by the hash of its name, sorted: a lookup is a
/// binary search and a name comparison per equal hash.
#[derive(Debug, Default)]
pub(crate) struct NameIndex {
    /// (hash of the name, footer position), sorted.
    entries: Vec<(u64, u32)>,
}

impl NameIndex {
    /// The index of `arrays`; `DuplicateArray` naming the first name held twice.
    pub(crate) fn new(arrays: &[ArchivedArrayMeta]) -> Result<Self, FooterProblem> {
        Self::of_names(arrays.len(), |p| name_at(arrays, p))
    }

    /// The index of `len` arrays whose names `name_at` gives by position.
    pub(crate) fn of_names<'a>(
        len: usize,
        name_at: impl Fn(usize) -> Option<&'a str>,
    ) -> Result<Self, FooterProblem> {
        let mut entries = Vec::with_capacity(len);
        for position in 0..len {
            let Ok(at) = u32::try_from(position) else {
                break;
            };
            entries.push((hash(name_at(position).unwrap_or_default()), at));
        }
        entries.sort_unstable();
        // Names of equal hash are compared with each other; runs longer
        // than one are rare.
        for run in entries.chunk_by(|a, b| a.0 == b.0) {
            for (i, (_, p)) in run.iter().enumerate() {
                let name = name_at(*p as usize);
                if run
                    .iter()
                    .skip(i + 1)
                    .any(|(_, q)| name_at(*q as usize) == name)
                {
                    return Err(FooterProblem::DuplicateArray {
                        name: name.unwrap_or_default().to_owned(),
                    });
                }
            }
        }
        Ok(Self { entries })
    }

    /// Position of the array called `name`, whose names `name_at` gives
    /// by position (as when this index was built).
    pub(crate) fn find<'a>(
        &self,
        name: &str,
        name_at: impl Fn(usize) -> Option<&'a str>,
    ) -> Option<usize> {
        let h = hash(name);
        let first = self.entries.partition_point(|e| e.0 < h);
        self.entries
            .get(first..)?
            .iter()
            .take_while(|e| e.0 == h)
            .map(|e| e.1 as usize)
            .find(|&p| name_at(p) == Some(name))
    }
}

fn hash(name: &str) -> u64 {
    FixedState::default().hash_one(name)
}

fn name_at(arrays: &[ArchivedArrayMeta], position: usize) -> Option<&str> {
    arrays.get(position).map(|a| a.name.as_str())
}
