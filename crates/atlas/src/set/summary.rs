//! TEMPORARY (replaced by the summary branch): counts only.
use atlas_format::{ChecksumAlgorithm, MemberChecksums, MemberEntry};

use crate::error::Result;
use crate::read::Atlas;

pub(crate) async fn member_entry(atlas: &Atlas, id: &str, path: &str) -> Result<MemberEntry> {
    Ok(MemberEntry {
        id: id.to_owned(),
        path: path.to_owned(),
        datasets_total: atlas.dataset_count_total() as u64,
        datasets_live: atlas.dataset_count() as u64,
        bytes: atlas.container_bytes(),
        created_unix_ms: atlas.created_unix_ms(),
        variables: Vec::new(),
        attributes: Vec::new(),
        checksums: MemberChecksums {
            algorithm: ChecksumAlgorithm::Crc32c,
            footer: 0,
            segments: Vec::new(),
            mask: None,
        },
    })
}
