//! `atlas rewrite`: copy the live datasets of a collection (a set or a lone
//! collection) into a new lone collection.

use atlas::{AtlasWriter, Codec, WriterConfig};
use serde_json::json;

use super::Ctx;
use crate::cli::{CodecArg, RewriteArgs};
use crate::exit::{CliError, CliResult, Context as _};
use crate::location::{Access, Location};
use crate::{output, progress, render};
use atlas::SET_MANIFEST_FILE;

/// Runs `atlas rewrite`.
pub async fn run(ctx: &Ctx, args: &RewriteArgs) -> CliResult {
    let (src_loc, src) = ctx.open(&args.src, Access::Read).await?;
    let source_bytes: u64 = match src.lone_member() {
        Some(member) => member.container_bytes(),
        None => src.members().iter().map(|m| m.bytes).sum(),
    };
    let dst = ctx.locate(&args.dst, Access::Write).await?;
    if let (Some(a), Some(b)) = (&src_loc.local_dir(), &dst.local_dir())
        && a == b
    {
        return Err(CliError::msg(format!(
            "{}: the destination is the source; rewrite into a new location",
            dst.display()
        )));
    }
    refuse_existing(&dst).await?;

    let codec = match args.codec {
        CodecArg::Zstd => Codec::Zstd,
        CodecArg::Lz4 => Codec::Lz4,
        CodecArg::None => Codec::Uncompressed,
    };
    let mut config = WriterConfig::default().codec(codec);
    if let Some(bytes) = args.block_size {
        // An explicit block size holds for every variable, small arrays too.
        config = config.block_target_size(bytes).small_block_target_size(0);
    }
    if let Some(level) = args.zstd_level {
        config = config.zstd_level(level);
    }
    let writer = AtlasWriter::create(&dst, &config).await.at(dst.display())?;

    let live = src.dataset_count().await.at(src_loc.display())?;
    let bar = progress::bar(live as u64, "rewrite", ctx.quiet);
    let summary = atlas::rewrite(&src, writer, |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })
    .await
    .at(dst.display())?;
    bar.finish_and_clear();

    if ctx.json {
        output::json(&json!({
            "source": src_loc.display(),
            "destination": dst.display(),
            "datasets": summary.datasets,
            "container_bytes": summary.container_bytes,
            "source_container_bytes": source_bytes,
            "codec": codec.to_string(),
        }));
    } else if !ctx.quiet {
        output::text(&format!(
            "rewrote {} datasets from {} into {}: {} (was {}), {} blocks\n",
            summary.datasets,
            src_loc.display(),
            dst.display(),
            render::bytes(summary.container_bytes),
            render::bytes(source_bytes),
            codec
        ));
    }
    Ok(())
}

/// A collection is write-once: never write over one, nor over a set.
pub async fn refuse_existing(dst: &Location) -> CliResult {
    let exists = dst
        .operator()
        .exists(&dst.object(atlas::CONTAINER_FILE))
        .await
        .at(dst.display())?;
    if exists {
        return Err(CliError::msg(format!(
            "{}: already holds a collection (data.atlas); collections are write-once, choose a new location",
            dst.display()
        )));
    }
    let set = dst
        .operator()
        .exists(&dst.object(SET_MANIFEST_FILE))
        .await
        .at(dst.display())?;
    if set {
        return Err(CliError::msg(format!(
            "{}: already holds a set ({SET_MANIFEST_FILE}); add to it with `atlas create ... --append`, or choose a new location",
            dst.display()
        )));
    }
    Ok(())
}
