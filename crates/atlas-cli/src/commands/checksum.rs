//! `atlas checksum`: writes the checksum sidecar (`data.atlas.crc32c`) beside
//! a collection, the CRC32C of each segment, of the footer part and of the
//! deletion mask, so that `atlas verify --deep` can name the part a damaged
//! byte is in. v8 readers ignore the sidecar.

use atlas::{CHECKSUM_SIDECAR_FILE, Member, MemberChecksums};
use serde_json::json;

use super::Ctx;
use crate::cli::CollectionArg;
use crate::exit::{CliResult, Context as _};
use crate::location::Access;
use crate::{output, render};

/// Runs `atlas checksum`.
pub async fn run(ctx: &Ctx, args: &CollectionArg) -> CliResult {
    // A set's members have their checksums in its manifest: a lone collection only.
    let (loc, atlas) = ctx.open_lone(&args.collection, Access::Write).await?;
    let written = atlas.write_checksums().await.at(loc.display())?;
    let parts = parts(&atlas, &written);
    let covered: u64 = parts.iter().filter_map(|(_, bytes, _)| *bytes).sum();
    if ctx.json {
        output::json(&json!({
            "collection": loc.display(),
            "sidecar": CHECKSUM_SIDECAR_FILE,
            "algorithm": "crc32c",
            "parts": parts
                .iter()
                .map(|(part, bytes, crc)| json!({
                    "part": part,
                    "bytes": bytes,
                    "crc32c": format!("{crc:#010x}"),
                }))
                .collect::<Vec<_>>(),
            "bytes": covered,
        }));
    } else if !ctx.quiet {
        let mut table = render::Table::new(&["part", ">bytes", "crc32c"]);
        for (part, bytes, crc) in &parts {
            table.row(vec![
                part.clone(),
                bytes.map_or_else(|| "-".to_owned(), |b| b.to_string()),
                format!("{crc:#010x}"),
            ]);
        }
        let mut out = table.render(0);
        out.push_str(&format!(
            "{}: wrote {CHECKSUM_SIDECAR_FILE}: {} covering {} (the 8-byte header is checked by value)\n",
            loc.display(),
            render::count(parts.len(), "checksum", "checksums"),
            render::bytes(covered),
        ));
        output::text(&out);
    }
    Ok(())
}

/// Each checksummed part: its name, its size where known, its CRC32C.
fn parts(atlas: &Member, written: &MemberChecksums) -> Vec<(String, Option<u64>, u32)> {
    let segments = atlas.segments();
    let end_of_segments = segments
        .iter()
        .map(|s| s.offset.saturating_add(s.len))
        .max()
        .unwrap_or(8);
    let mut out: Vec<(String, Option<u64>, u32)> = written
        .segments
        .iter()
        .map(|c| {
            let len = segments.iter().find(|s| s.name == c.name).map(|s| s.len);
            (format!("segment {}", c.name), len, c.checksum)
        })
        .collect();
    out.push((
        "footer".to_owned(),
        Some(atlas.container_bytes().saturating_sub(end_of_segments)),
        written.footer,
    ));
    if let Some(mask) = written.mask {
        out.push(("mask".to_owned(), None, mask));
    }
    out
}
