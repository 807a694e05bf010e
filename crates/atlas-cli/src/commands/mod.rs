//! One module per command; [`run`] dispatches.

pub mod attrs;
pub mod cat;
pub mod catalogue;
pub mod checksum;
pub mod cleanup;
pub mod compact;
pub mod create;
pub mod demo;
pub mod export;
pub mod info;
pub mod ls;
pub mod members;
pub mod rewrite;
pub mod rm;
pub mod show;
pub mod stats;
pub mod verify;

use std::time::Duration;

use atlas::{Atlas, AtlasSet, RetryPolicy};

use crate::cli::{Cli, Command, Global};
use crate::exit::{CliResult, Context as _};
use crate::location::{Access, Location, StoreOptions};
use atlas::OpenOptions;

/// What every command needs besides its own arguments.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// `--json`.
    pub json: bool,
    /// `-q`.
    pub quiet: bool,
    /// Backend options for every location.
    pub store: StoreOptions,
}

impl Ctx {
    fn new(global: &Global) -> Self {
        Self {
            json: global.json,
            quiet: global.quiet,
            store: StoreOptions {
                endpoint: global.endpoint.clone(),
                region: global.region.clone(),
                anonymous: global.anonymous,
                retry: RetryPolicy::default().max_retries(global.retries).timeouts(
                    Duration::from_secs(global.timeout),
                    Duration::from_secs(global.timeout),
                ),
            },
        }
    }

    /// Resolves a location.
    pub async fn locate(&self, spec: &str, access: Access) -> CliResult<Location> {
        crate::location::resolve(spec, &self.store, access).await
    }

    /// Resolves and opens a set, or a lone collection as a set of one.
    pub async fn open(&self, spec: &str, access: Access) -> CliResult<(Location, AtlasSet)> {
        let loc = self.locate(spec, access).await?;
        let set = open_at(&loc).await?;
        Ok((loc, set))
    }

    /// Resolves and opens a lone collection (not a set): for `rewrite`.
    pub async fn open_collection(
        &self,
        spec: &str,
        access: Access,
    ) -> CliResult<(Location, Atlas)> {
        let loc = self.locate(spec, access).await?;
        let atlas = open_collection_at(&loc).await?;
        Ok((loc, atlas))
    }
}

/// Opens the set at a resolved location, or the lone collection there as a
/// set of one: one read of `set.manifest`, then (no manifest) the
/// collection's open.
pub async fn open_at(loc: &Location) -> CliResult<AtlasSet> {
    tracing::debug!(collection = %loc.display(), "opening");
    let started = std::time::Instant::now();
    let set = AtlasSet::open(loc, &OpenOptions::default())
        .await
        .at(loc.display())?;
    tracing::debug!(
        collection = %loc.display(),
        set = set.is_set(),
        members = set.members().len(),
        elapsed = ?started.elapsed(),
        "opened"
    );
    Ok(set)
}

/// The one collection of a lone collection opened as a set (`None` for a
/// set); costs nothing more, it is open already.
pub async fn lone(set: &AtlasSet, loc: &Location) -> CliResult<Option<Atlas>> {
    if set.is_set() {
        return Ok(None);
    }
    Ok(set
        .collections()
        .await
        .at(loc.display())?
        .into_iter()
        .next())
}

/// Opens the lone collection at a resolved location.
pub async fn open_collection_at(loc: &Location) -> CliResult<Atlas> {
    tracing::debug!(collection = %loc.display(), "opening");
    let started = std::time::Instant::now();
    let atlas = Atlas::open(loc, &OpenOptions::default())
        .await
        .at(loc.display())?;
    tracing::debug!(
        collection = %loc.display(),
        datasets = atlas.dataset_count_total(),
        live = atlas.dataset_count(),
        variables = atlas.segments().len(),
        elapsed = ?started.elapsed(),
        "opened"
    );
    Ok(atlas)
}

/// Runs the command the user asked for.
pub async fn run(cli: Cli) -> CliResult {
    let ctx = Ctx::new(&cli.global);
    match cli.command {
        Command::Info(a) => info::run(&ctx, &a).await,
        Command::Ls(a) => ls::run(&ctx, &a).await,
        Command::Show(a) => show::run(&ctx, &a).await,
        Command::Cat(a) => cat::run(&ctx, &a).await,
        Command::Stats(a) => stats::run(&ctx, &a).await,
        Command::Attrs(a) => attrs::run(&ctx, &a).await,
        Command::Rm(a) => rm::run(&ctx, &a).await,
        Command::Catalogue(a) => catalogue::run(&ctx, &a).await,
        Command::Export(a) => export::run(&ctx, &a).await,
        Command::Verify(a) => verify::run(&ctx, &a).await,
        Command::Checksum(a) => checksum::run(&ctx, &a).await,
        Command::Rewrite(a) => rewrite::run(&ctx, &a).await,
        Command::Create(a) => create::run(&ctx, &a).await,
        Command::Demo(a) => demo::run(&ctx, &a).await,
        Command::Cleanup(a) => cleanup::run(&ctx, &a).await,
        Command::Compact(a) => compact::run(&ctx, &a).await,
    }
}
