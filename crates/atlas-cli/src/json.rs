//! The `--json` shapes the library has no encoding for. Statistics,
//! attributes and datasets are rendered by `atlas_manifest` (the manifest's
//! encodings), which the commands call directly.

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
