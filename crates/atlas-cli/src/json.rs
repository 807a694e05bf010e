//! The `--json` shapes. Statistics, attributes and datasets are rendered by
//! `atlas_manifest`, the manifest's encodings; this module only adapts them to
//! what each command prints.

use atlas::{ArrayStats, AtlasError, Attr, Dataset, Stat};
use serde_json::Value as Json;

/// A min or max: `{"float": x}`, `{"int": n}`, ... or `null`.
pub fn stat_value(v: Option<&Stat>) -> Json {
    v.map_or(Json::Null, atlas_manifest::stat_json)
}

/// `{"min", "max", "null_count", "row_count"}`, or `null` without statistics.
pub fn stats(s: Option<&ArrayStats>) -> Json {
    atlas_manifest::stats_json(s)
}

/// `{"type": ..., "value": ...}`.
pub fn attr(a: &Attr) -> Json {
    atlas_manifest::attr_json(a)
}

/// One dataset in the manifest's per-dataset shape, without `values` (and without
/// `deleted`: only live datasets are shown).
pub async fn dataset(view: &Dataset) -> Result<Json, AtlasError> {
    atlas_manifest::dataset_json(view, false).await
}

/// A set member as `info --json` and `ls --members --json` show it.
pub fn member(m: &atlas::MemberEntry) -> serde_json::Value {
    serde_json::json!({
        "id": m.id,
        "path": m.path,
        "datasets_live": m.datasets_live,
        "datasets_total": m.datasets_total,
        "bytes": m.bytes,
        "created_unix_ms": m.created_unix_ms,
    })
}
