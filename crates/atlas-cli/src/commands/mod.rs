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
pub mod index;
pub mod info;
pub mod ls;
pub mod members;
pub mod rewrite;
pub mod rm;
pub mod show;
pub mod stats;
pub mod sync;
pub mod verify;

use std::time::Duration;

use atlas::{Atlas, Member, RetryPolicy};

use crate::cli::{Cli, Command, Global};
use crate::exit::{CliError, CliResult, Context as _};
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

    /// Resolves and opens a collection: a set, or a lone collection.
    pub async fn open(&self, spec: &str, access: Access) -> CliResult<(Location, Atlas)> {
        let loc = self.locate(spec, access).await?;
        let atlas = open_at(&loc).await?;
        Ok((loc, atlas))
    }

    /// Resolves and opens a lone collection's container (not a set): for
    /// `checksum`, whose sidecar belongs to one container.
    pub async fn open_lone(&self, spec: &str, access: Access) -> CliResult<(Location, Member)> {
        let (loc, atlas) = self.open(spec, access).await?;
        let member = atlas.lone_member().ok_or_else(|| {
            CliError::msg(format!(
                "{}: a collection set records its members' checksums in its manifest; \
                 this command takes a lone collection",
                loc.display()
            ))
        })?;
        Ok((loc, member))
    }
}

/// Opens the collection at a resolved location: a set, or a lone collection
/// (one round trip either way).
pub async fn open_at(loc: &Location) -> CliResult<Atlas> {
    tracing::debug!(collection = %loc.display(), "opening");
    let started = std::time::Instant::now();
    let atlas = Atlas::open(loc, &OpenOptions::default())
        .await
        .at(loc.display())?;
    tracing::debug!(
        collection = %loc.display(),
        set = atlas.is_set(),
        members = atlas.members().len(),
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
        Command::Index(a) => index::run(&ctx, &a).await,
        Command::Rewrite(a) => rewrite::run(&ctx, &a).await,
        Command::Create(a) => create::run(&ctx, &a).await,
        Command::Sync(a) => sync::run(&ctx, &a).await,
        Command::Demo(a) => demo::run(&ctx, &a).await,
        Command::Cleanup(a) => cleanup::run(&ctx, &a).await,
        Command::Compact(a) => compact::run(&ctx, &a).await,
    }
}
