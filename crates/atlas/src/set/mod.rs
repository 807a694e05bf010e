//! Collection sets: many v8 collections under one prefix, read, queried and
//! updated as one (`docs/sets.md`).
//!
//! - [`Atlas`] (`reader`): opening (one manifest read), members opened
//!   lazily, name resolution (the newest commit's copy is live), and every
//!   read question combined over the members;
//! - `prune`: which members a predicate can match, from the manifest alone;
//! - `manifest_store`: reading the manifest and committing a new one by a
//!   checked conditional write;
//! - `writer`: writing new members and committing them;
//! - `uncommitted`: member folders no commit names, found and removed.

mod compact;
mod delete;
pub(crate) mod integrity;
mod manifest_store;
pub(crate) mod prune;
mod reader;
mod sort;
pub(crate) mod summary;
mod uncommitted;
mod view;
mod writer;

pub use compact::{CompactOptions, CompactOutcome};
pub use delete::DeleteOptions;
pub use manifest_store::CommitOutcome;
pub use reader::Atlas;
pub use sort::{SortKey, sort_order};
pub use uncommitted::{
    DEFAULT_RETENTION, UncommittedMember, remove_uncommitted_member, uncommitted_members,
};
pub(crate) use view::View;
pub use writer::{MemberWriter, SetWriter, member_id, member_path};
