//! The command line: global options, commands and their arguments, with an
//! example per command in `--help`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

const COLLECTION_HELP: &str = "\
COLLECTION is a directory holding data.atlas (and maybe deleted.mask), or a URL:
  path/to/dir, file:///abs/dir      local filesystem
  s3://bucket/prefix                S3 or S3-compatible (--endpoint, --region, AWS_* variables)
  gs://bucket/prefix                Google Cloud Storage (GOOGLE_APPLICATION_CREDENTIALS)
  az://container/prefix             Azure Blob (AZURE_STORAGE_ACCOUNT, AZURE_STORAGE_KEY, ...)
  http(s)://host/path               plain HTTP range reads, read-only

Exit status: 0 success, 1 a problem with the collection or the request, 2 usage,
75 storage unreachable or busy through every retry (try again later).

Examples:
  atlas demo ./argo                       write a sample collection of 2000 profiles
  atlas info ./argo                       what is in it
  atlas show ./argo R6901234_001.nc       one dataset, ncdump -h style
  atlas cat ./argo R6901234_001.nc TEMP   its values
  atlas --json ls s3://bucket/argo        machine-readable output";

/// Inspect, read, verify, delete and rewrite Atlas collections.
#[derive(Debug, Parser)]
#[command(name = "atlas", version, about, after_help = COLLECTION_HELP)]
pub struct Cli {
    /// Options every command takes.
    #[command(flatten)]
    pub global: Global,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command takes.
#[derive(Debug, Args)]
pub struct Global {
    /// Print machine-readable JSON on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// No progress bars and no chatter; results and errors only.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Diagnostics on stderr: off, error, warn, info, debug, trace, or a
    /// RUST_LOG-style filter. RUST_LOG applies when this is not given.
    #[arg(long, global = true, value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// Object-store endpoint (an S3-compatible server, a GCS emulator, Azurite...).
    #[arg(long, global = true, value_name = "URL")]
    pub endpoint: Option<String>,
    /// S3 region (default: AWS_REGION, AWS_DEFAULT_REGION, or asked of the bucket).
    #[arg(long, global = true)]
    pub region: Option<String>,
    /// Send unsigned requests (a public bucket).
    #[arg(long, global = true)]
    pub anonymous: bool,
    /// Retries of a request that failed temporarily (503, reset, timeout),
    /// with jittered exponential backoff; 0 turns retries off.
    #[arg(long, global = true, value_name = "N", default_value_t = 4)]
    pub retries: usize,
    /// Seconds one storage operation (or one chunk of a transfer) may take
    /// before it counts as a temporary failure.
    #[arg(long, global = true, value_name = "SECS", default_value_t = 60)]
    pub timeout: u64,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Format, codec, size, dataset counts, variables with their segments and statistics.
    #[command(after_help = "Example:\n  atlas info ./argo\n  atlas --json info s3://bucket/argo")]
    Info(CollectionArg),

    /// Live dataset names in ordinal order.
    #[command(after_help = "Example:\n  atlas ls ./argo --long\n  atlas --json ls ./argo")]
    Ls(LsArgs),

    /// One dataset in `ncdump -h` style: dimensions, variables, attributes, statistics.
    #[command(after_help = "Example:\n  atlas show ./argo R6901234_001.nc")]
    Show(ShowArgs),

    /// The values of one array (all of it, or a region).
    #[command(
        after_help = "Example:\n  atlas cat ./argo R6901234_001.nc TEMP\n  atlas cat ./grids jan_2024 temperature --start 1,2 --shape 2,4\n\nIn text, an element equal to the fill value prints as `_` (as ncdump does)."
    )]
    Cat(CatArgs),

    /// Statistics of one array over the collection, or per dataset.
    #[command(
        after_help = "Example:\n  atlas stats ./argo TEMP\n  atlas stats ./argo TEMP --by-dataset"
    )]
    Stats(StatsArgs),

    /// One attribute across every live dataset, as a table.
    #[command(
        after_help = "Example:\n  atlas attrs ./argo platform_number\n  atlas attrs ./argo units --array TEMP"
    )]
    Attrs(AttrsArgs),

    /// Hide datasets: one write of deleted.mask, all or nothing.
    #[command(
        after_help = "Example:\n  atlas rm ./argo R6901234_001.nc R6901234_002.nc\n  atlas rm ./argo --from-file bad_profiles.txt"
    )]
    Rm(RmArgs),

    /// Check everything a reader relies on; exit 1 and list the problems if anything is wrong.
    #[command(
        after_help = "Example:\n  atlas verify ./argo\n  atlas verify ./argo --deep\n\nv8 stores no checksums: a damaged byte that still decodes reads back as another\nvalue. --deep recomputes every array's statistics from its values and compares\nthem with the recorded ones, which catches much of that damage, not all of it\n(attribute values, dimension names, chunk shapes and fill values have no\nsecond copy to compare with)."
    )]
    Verify(VerifyArgs),

    /// Copy the live datasets into a new collection (drops deleted bytes, can change the codec).
    #[command(
        after_help = "Example:\n  atlas rewrite ./argo ./argo-lz4 --codec lz4\n  atlas rewrite s3://bucket/argo ./local-copy"
    )]
    Rewrite(RewriteArgs),

    /// Write a realistic sample collection of Argo-like profiles, then describe it.
    #[command(after_help = "Example:\n  atlas demo ./argo\n  atlas demo ./small-argo --count 50")]
    Demo(DemoArgs),

    /// Remove temp files that interrupted writes left in the collection's directory.
    #[command(
        after_help = "Example:\n  atlas cleanup ./argo --dry-run\n  atlas cleanup ./argo --older-than 0"
    )]
    Cleanup(CleanupArgs),
}

/// A command that takes only the collection.
#[derive(Debug, Args)]
pub struct CollectionArg {
    /// The collection (a directory or a URL; see `atlas --help`).
    pub collection: String,
}

/// `atlas verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The collection (a directory or a URL; see `atlas --help`).
    pub collection: String,
    /// Also recompute every array's statistics from its values and compare.
    #[arg(long)]
    pub deep: bool,
}

/// `atlas cleanup`.
#[derive(Debug, Args)]
pub struct CleanupArgs {
    /// The collection (a directory or a URL; see `atlas --help`).
    pub collection: String,
    /// Leave files written less than this many minutes ago (a write may be in progress).
    #[arg(long, value_name = "MINUTES", default_value_t = 60)]
    pub older_than: u64,
    /// List what would be removed, remove nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `atlas ls`.
#[derive(Debug, Args)]
pub struct LsArgs {
    /// The collection.
    pub collection: String,
    /// Also the ordinal, the number of arrays and the schema index.
    #[arg(short, long)]
    pub long: bool,
}

/// `atlas show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The collection.
    pub collection: String,
    /// The dataset.
    pub dataset: String,
}

/// `atlas cat`.
#[derive(Debug, Args)]
pub struct CatArgs {
    /// The collection.
    pub collection: String,
    /// The dataset.
    pub dataset: String,
    /// The array.
    pub array: String,
    /// First element of the region, one index per dimension (default: the origin).
    #[arg(long, value_name = "I,J,..", value_delimiter = ',')]
    pub start: Option<Vec<u64>>,
    /// Size of the region, one length per dimension (default: up to the end).
    #[arg(long, value_name = "M,N,..", value_delimiter = ',')]
    pub shape: Option<Vec<u64>>,
}

/// `atlas stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// The collection.
    pub collection: String,
    /// The array name.
    pub array: String,
    /// One row per live dataset instead of the collection-wide fold.
    #[arg(long)]
    pub by_dataset: bool,
}

/// `atlas attrs`.
#[derive(Debug, Args)]
pub struct AttrsArgs {
    /// The collection.
    pub collection: String,
    /// The attribute key.
    pub key: String,
    /// Read the key on this array instead of the dataset-level attributes.
    #[arg(long, value_name = "NAME")]
    pub array: Option<String>,
}

/// `atlas rm`.
#[derive(Debug, Args)]
pub struct RmArgs {
    /// The collection.
    pub collection: String,
    /// The datasets to hide.
    #[arg(required_unless_present = "from_file")]
    pub datasets: Vec<String>,
    /// Also the names in this file, one per line (blank lines and `#` comments ignored; `-` is stdin).
    #[arg(long, value_name = "FILE")]
    pub from_file: Option<PathBuf>,
}

/// Block compression of a rewritten collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CodecArg {
    /// Zstandard.
    Zstd,
    /// LZ4.
    Lz4,
    /// No compression.
    None,
}

/// `atlas rewrite`.
#[derive(Debug, Args)]
pub struct RewriteArgs {
    /// The collection to read.
    pub src: String,
    /// Where to write the new collection (must not hold one yet).
    pub dst: String,
    /// Block compression.
    #[arg(long, value_enum, default_value = "zstd")]
    pub codec: CodecArg,
    /// Target size of a compressed block, in bytes.
    #[arg(long, value_name = "BYTES")]
    pub block_size: Option<usize>,
    /// zstd level.
    #[arg(long, value_name = "N")]
    pub zstd_level: Option<i32>,
}

/// `atlas demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where to write the collection (must not hold one yet).
    pub dir: String,
    /// Number of profiles.
    #[arg(long, default_value_t = 2000)]
    pub count: usize,
    /// Seed of the generator: the same seed writes the same data.
    #[arg(long, default_value_t = 6901234)]
    pub seed: u64,
    /// How many datasets are written at the same time.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..))]
    pub writers: u16,
}
