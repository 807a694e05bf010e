//! A segment's end, read without array-format's open: the tail and its
//! trailer (`tail`), the footer archive validated before anyone walks it
//! ([`validate`]), and what is read off it in place: the validated archive
//! kept open (`archive`), attributes (`attributes`), each array's digest
//! ([`digest`]) and the entry of one array (`lookup`). The archived footer
//! types themselves, laid out as array-format lays them out, are `schema`.

pub(crate) mod archive;
pub(crate) mod attributes;
pub mod digest;
pub(crate) mod lookup;
pub(crate) mod schema;
pub(crate) mod tail;
pub mod validate;
