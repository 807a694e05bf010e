//! Fixed numbers of format v8: magics, versions, sizes and reserved names.

/// Magic bytes at both ends of a container.
pub const CONTAINER_MAGIC: [u8; 4] = *b"ATLS";
/// The container version this crate reads and writes.
pub const FORMAT_VERSION: u32 = 8;
/// The zstd level Atlas compresses with: always for footers and set
/// manifests, and for data blocks unless a writer is configured otherwise.
pub const DEFAULT_ZSTD_LEVEL: i32 = 3;
/// Magic bytes at the start of a deletion mask.
pub const MASK_MAGIC: [u8; 4] = *b"ATLM";
/// The deletion mask version this crate reads and writes.
pub const MASK_VERSION: u32 = 1;
/// Bytes before the first segment: magic + version.
pub const HEADER_LEN: u64 = 8;
/// Bytes after the footer: footer size (u64) + version (u32) + magic.
pub const TRAILER_LEN: u64 = 16;
/// How many bytes from the end of a container the first read asks for.
pub const TAIL_PROBE_LEN: u64 = 64 * 1024;
/// Bytes of the mask header before its ordinals: magic + version + count.
pub const MASK_HEADER_LEN: usize = 12;
/// Object name of the container under a collection prefix.
pub const CONTAINER_FILE: &str = "data.atlas";
/// Object name of the deletion mask under a collection prefix.
pub const MASK_FILE: &str = "deleted.mask";
/// Segment that holds dataset-level attributes, one rank-0 array per dataset.
pub const DATASETS_SEGMENT: &str = "_datasets";
/// Magic bytes at the start of a set manifest (not a prefix of `ATLS`, so no
/// tool mistakes a manifest for a container).
pub const SET_MANIFEST_MAGIC: [u8; 8] = *b"ATLASSET";
/// The set manifest version this crate reads and writes.
pub const SET_MANIFEST_VERSION: u32 = 1;
/// Bytes of the set manifest header: magic + version + body length.
pub const SET_MANIFEST_HEADER_LEN: usize = 20;
/// Bytes after the set manifest body: its CRC32C.
pub const SET_MANIFEST_CHECKSUM_LEN: usize = 4;
/// Object name of the manifest at the root of a set prefix.
pub const SET_MANIFEST_FILE: &str = "set.manifest";
/// Magic bytes at the start of a checksum sidecar.
pub const CHECKSUM_SIDECAR_MAGIC: [u8; 8] = *b"ATLASCRC";
/// The checksum sidecar version this crate reads and writes.
pub const CHECKSUM_SIDECAR_VERSION: u32 = 1;
/// Object name of the checksum sidecar beside a lone collection's container:
/// no v8 reader looks for it, and it does not end in `.atlas`, so no tool
/// globbing for containers picks it up.
pub const CHECKSUM_SIDECAR_FILE: &str = "data.atlas.crc32c";
/// Object name of the dataset index beside a container: a Parquet file with
/// one row per dataset (see `docs/index.md`). No v8 reader looks for it.
pub const INDEX_FILE: &str = "data.atlas.index";
/// Folder under a set prefix that holds one sub-folder per member collection.
pub const SET_MEMBERS_DIR: &str = "members";
