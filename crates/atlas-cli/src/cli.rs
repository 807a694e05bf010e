//! The command line: global options, commands and their arguments, with an
//! example per command in `--help`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

const COLLECTION_HELP: &str = "\
COLLECTION is a directory holding data.atlas (and maybe deleted.mask), or a set
(set.manifest and members/; every reading command takes one), or a URL:
  path/to/dir, file:///abs/dir      local filesystem
  s3://bucket/prefix                S3 or S3-compatible (--endpoint, --region, AWS_* variables)
  gs://bucket/prefix                Google Cloud Storage (GOOGLE_APPLICATION_CREDENTIALS)
  az://container/prefix             Azure Blob (AZURE_STORAGE_ACCOUNT, AZURE_STORAGE_KEY, ...)
  http(s)://host/path               plain HTTP range reads, read-only

Exit status: 0 success, 1 a problem with the collection or the request, 2 usage,
75 storage unreachable or busy through every retry, or a set commit that lost
every race to other writers (try again later).

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
        after_help = "Example:\n  atlas rm ./argo R6901234_001.nc R6901234_002.nc\n  atlas rm ./argo --from-file bad_profiles.txt\n  atlas rm ./argo --where 'not TEMP.min exists' --dry-run"
    )]
    Rm(RmArgs),
    /// One row per live dataset: attributes and array statistics, from segment footers only.
    #[command(after_help = CATALOGUE_HELP)]
    Catalogue(CatalogueArgs),

    /// The values of chosen arrays over many datasets as one long table (a row per element).
    #[command(after_help = EXPORT_HELP)]
    Export(ExportArgs),

    /// Check everything a reader relies on; exit 1 and list the problems if anything is wrong.
    #[command(
        after_help = "Example:\n  atlas verify ./argo\n  atlas verify ./argo --deep\n\nv8 stores no checksums: a damaged byte that still decodes reads back as another\nvalue. --deep recomputes every array's statistics from its values and compares\nthem with the recorded ones, which catches much of that damage, not all of it\n(attribute values, dimension names, chunk shapes and fill values have no\nsecond copy to compare with). With a checksum sidecar (`atlas checksum`), --deep\nalso compares the CRC32C of every segment, the footer and the mask, and names\neach part whose bytes changed."
    )]
    Verify(VerifyArgs),

    /// Write the checksum sidecar (data.atlas.crc32c): a CRC32C of each segment, the footer and the mask, for `verify --deep`.
    #[command(
        after_help = "Example:\n  atlas checksum ./argo\n  atlas verify ./argo --deep\n\nv8 readers ignore the sidecar. `verify --deep` recomputes every checksum and names\neach part (segment, footer, mask, header) whose bytes changed. A later `atlas rm`\nrewrites the mask: run `atlas checksum` again after it."
    )]
    Checksum(CollectionArg),

    /// Write the dataset index (data.atlas.index) beside each container: queries, catalogues and statistics then read it instead of the segment footers.
    #[command(
        after_help = "Example:\n  atlas index ./argo\n  atlas ls ./argo --where 'LATITUDE between -10 10'\n\nThe index is a Parquet file with one row per dataset (statistics and dataset\nattributes as columns), readable by DuckDB or Polars as it is. Other v8 readers\nignore it. It records which container it describes: after a rewrite it is\nignored (with a warning) until `atlas index` runs again. Deletes need no new index."
    )]
    Index(CollectionArg),

    /// Copy the live datasets into a new collection (drops deleted bytes, can change the codec).
    #[command(
        after_help = "Example:\n  atlas rewrite ./argo ./argo-lz4 --codec lz4\n  atlas rewrite s3://bucket/argo ./local-copy"
    )]
    Rewrite(RewriteArgs),

    /// Build a collection from NetCDF files: one dataset per file, named after it.
    #[command(
        after_help = "SOURCE is a directory (scanned for .nc, .nc4, .cdf, .netcdf), a file, or a glob;\nor a URL (s3://, gs://, az://, http(s)://) of a file, a folder or a glob in its last\ncomponent, read with the same --endpoint, --region and --anonymous as collections\n(an http(s) server cannot be listed: give file URLs). Files at URLs are fetched -j\nat a time, each retried on its own; --skip-errors leaves out one that fails for good.\nNothing at DESTINATION is readable until the last file has landed.\n\nWith --append, the files become a new member of the set at DESTINATION, visible\nonce committed; a dataset name already in the set is replaced by the new copy.\nA commit that keeps losing to other writers exits 75 having committed nothing:\nrun it again. --max-datasets N splits the files into members of at most N.\n\nWith --sort-by (and --max-datasets), the files are first put in the order of the\nkeys (as `atlas compact --sort-by` orders datasets): one pass reads only the key\nvariables of every file, then the members are cut in that order, so each holds a\nnarrow range of the keys. A key no file holds, or one holding several values in\na file, is refused before anything is written.\n\nExample:\n  atlas create ./profiles ./argo\n  atlas create ./today/*.nc ./argo-set --append\n  atlas create ./archive ./argo-set --max-datasets 100000\n  atlas create ./archive ./argo-set --max-datasets 10000 --sort-by hilbert:LATITUDE:LONGITUDE:JULD\n  atlas create ./a ./b/*.nc s3://bucket/argo --decode raw -j 4\n  atlas create ./grids ./grids.atlas --chunks '{\"temperature\": [1, 180, 360]}'"
    )]
    Create(CreateArgs),

    /// Bring a set in step with an archive's index (Argo GDAC format): adds, replacements and removals in one commit.
    #[command(after_help = SYNC_HELP)]
    Sync(SyncArgs),

    /// Rewrite a set's run of small members into fewer big ones, replacing them in one commit.
    #[command(
        after_help = "The longest run of consecutive members that each hold fewer live datasets than
--target-datasets is rewritten into members of at most that many, which take the
run's place in one commit; the replaced members are removed after it. Every live
dataset keeps its name, values and attributes; deleted and replaced copies are
dropped. A delete in the run meanwhile makes the commit fail (exit 75): run it again.

With --sort-by, every member is rewritten instead, the datasets in the order of
the keys, so that each new member holds a narrow range of them and a query on
them skips most members. A key is a variable holding one value per dataset
(JULD), or a Hilbert curve over latitude and longitude (hilbert, or
hilbert:LAT:LON) and optionally time (hilbert:LAT:LON:TIME); several keys,
comma-separated, sort in turn. Datasets without a key's value go last, by name.

Example:
  atlas compact ./argo-set
  atlas compact s3://bucket/argo --target-datasets 50000
  atlas compact ./argo-set --sort-by JULD
  atlas compact ./argo-set --sort-by hilbert:LATITUDE:LONGITUDE:JULD"
    )]
    Compact(CompactArgs),

    /// Write a realistic sample collection of Argo-like profiles, then describe it.
    #[command(after_help = "Example:\n  atlas demo ./argo\n  atlas demo ./small-argo --count 50")]
    Demo(DemoArgs),

    /// Remove what interrupted writes left: temp files in the collection's directory, S3 multipart uploads never completed, a set's uncommitted members.
    #[command(
        after_help = "Only what is older than --older-than (default 60 minutes) is removed: a younger\ntemp file, upload or member may belong to a write in progress. A member folder\n(members/<id>/) that the set's manifest does not name was left by a writer that\ncrashed or lost its commit; it goes once its newest object is older than\n--older-than. A member a compaction replaced is marked retired and kept for\nreaders of older generations; it goes once the mark is older than --retention\n(default 7 days). Azure and GCS discard unfinished uploads themselves after about\nseven days.\n\nExample:\n  atlas cleanup ./argo --dry-run\n  atlas cleanup ./argo --older-than 0\n  atlas cleanup ./argo-set --older-than 2h\n  atlas cleanup ./argo-set --retention 1d\n  atlas cleanup s3://bucket/argo"
    )]
    Cleanup(CleanupArgs),
}

/// `atlas compact`.
#[derive(Debug, Args)]
pub struct CompactArgs {
    /// The set (a directory or a URL; see `atlas --help`).
    pub collection: String,
    /// Members with fewer live datasets are small; new members hold at most this many.
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    pub target_datasets: u64,
    /// Rewrite every member, datasets ordered by these keys (comma-separated:
    /// a variable, or hilbert[:LAT:LON[:TIME]]).
    #[arg(long, value_name = "KEY[,KEY...]", value_delimiter = ',', value_parser = parse_sort_key)]
    pub sort_by: Option<Vec<atlas::SortKey>>,
}

/// One key of `--sort-by`.
fn parse_sort_key(text: &str) -> Result<atlas::SortKey, String> {
    text.parse().map_err(|e: atlas::AtlasError| e.to_string())
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
    /// Leave what was written or started less than this long ago (a write may
    /// be in progress): minutes, or a number with s, m, h or d (`0s`, `2h`).
    #[arg(long, value_name = "DURATION", default_value = "60", value_parser = crate::commands::members::parse_duration)]
    pub older_than: std::time::Duration,
    /// Keep a member a compaction replaced this long after the compaction:
    /// a reader opened before it may still read it (default 7 days).
    #[arg(long, value_name = "DURATION", default_value = "7d", value_parser = crate::commands::members::parse_duration)]
    pub retention: std::time::Duration,
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
    /// Only the datasets this expression selects (see `atlas catalogue --help`).
    #[arg(long = "where", value_name = "EXPR")]
    pub where_: Option<String>,
    /// List a set's members (id, live and total datasets, size, creation) instead of datasets.
    #[arg(long, conflicts_with_all = ["long", "where_"])]
    pub members: bool,
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
    #[arg(required_unless_present_any = ["from_file", "where_"])]
    pub datasets: Vec<String>,
    /// Also the names in this file, one per line (blank lines and `#` comments ignored; `-` is stdin).
    #[arg(long, value_name = "FILE")]
    pub from_file: Option<PathBuf>,
    /// Also the datasets this expression selects (see `atlas catalogue --help`).
    #[arg(long = "where", value_name = "EXPR")]
    pub where_: Option<String>,
    /// Print what would be hidden and write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

const CATALOGUE_HELP: &str = "\
Columns: name, ordinal, schema; each dataset attribute; per array ARRAY.count,
ARRAY.nulls, ARRAY.min, ARRAY.max. Cost: one segment-footer read per variable
involved, no array data.

--where EXPR (also on `ls` and `rm`):
  NAME op VALUE            op: = != < <= > >=
  NAME between LO HI       every non-null element of an array within [LO, HI]
  NAME overlaps LO HI      an array's [min, max] meets [LO, HI] (may contain)
  NAME.min|.max|.nulls|.count op VALUE    one statistic
  exists NAME, NAME exists, not, and, or, ( )
  A bare NAME is a dataset attribute if one is declared, else an array; @KEY is
  always the attribute. On an array, <, <=, >, >=, = hold when every non-null
  element does; `!=` is `not =`. Values: 12, -3.5, \"text\", 'text', true,
  2020-01-01, 2020-01-01T06:00:00Z.

Examples:
  atlas catalogue ./argo --attrs platform_number,cycle_number --arrays LATITUDE,JULD
  atlas catalogue ./argo --where 'LATITUDE between -10 10 and JULD >= 2020-01-01' --format csv
  atlas catalogue ./argo --format parquet -o argo.parquet
  atlas ls ./argo --where 'platform_number = \"6901234\"'";

/// How `atlas catalogue` prints the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CatalogueFormat {
    /// An aligned text table.
    Table,
    /// Comma-separated values with a header line.
    Csv,
    /// One JSON object per line.
    Ndjson,
    /// Apache Parquet (needs -o).
    Parquet,
}

/// `atlas catalogue`.
#[derive(Debug, Args)]
pub struct CatalogueArgs {
    /// The collection.
    pub collection: String,
    /// Dataset attributes to include (default: all); comma-separated or repeated.
    #[arg(long, value_name = "KEY,..", value_delimiter = ',', num_args = 1..)]
    pub attrs: Option<Vec<String>>,
    /// Arrays whose statistics to include (default: all); comma-separated or repeated.
    #[arg(long, value_name = "NAME,..", value_delimiter = ',', num_args = 1..)]
    pub arrays: Option<Vec<String>>,
    /// Only the datasets this expression selects.
    #[arg(long = "where", value_name = "EXPR")]
    pub where_: Option<String>,
    /// Output format (`--json` prints the table as a JSON array).
    #[arg(long, value_enum, default_value = "table")]
    pub format: CatalogueFormat,
    /// Write to this file instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

const EXPORT_HELP: &str = "\
Columns: dataset (the dataset's name); one index column per dimension of the
arrays, named after it; one column per array in its stored type (timestamps in
UTC, strings as text, NaN and fill values as stored; empty/null where a dataset
lacks the array); one column per --attrs key. The arrays must share their
dimensions within each dataset. Datasets come in `atlas ls` order; one holding
none of the arrays has no rows. Rows are written as they are read (Parquet: one
row group per batch), so the table never sits in memory whole. --where takes
the expressions of `atlas catalogue --help`, and only the datasets it selects
are read.

Examples:
  atlas export ./argo --arrays TEMP,PSAL,PRES --format parquet -o argo.parquet
  atlas export ./argo --arrays TEMP --attrs platform_number --where 'LATITUDE between -10 10' --format csv
  duckdb -c \"SELECT dataset, avg(TEMP) FROM 'argo.parquet' GROUP BY dataset\"";

/// How `atlas export` writes the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormatArg {
    /// Comma-separated values with a header line.
    Csv,
    /// One JSON object per line.
    Ndjson,
    /// Apache Parquet (needs -o).
    Parquet,
}

/// `atlas export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The collection or set.
    pub collection: String,
    /// The arrays, one column each; comma-separated or repeated.
    #[arg(long, value_name = "NAME,..", value_delimiter = ',', num_args = 1.., required = true)]
    pub arrays: Vec<String>,
    /// Dataset attributes to add as columns; comma-separated or repeated.
    #[arg(long, value_name = "KEY,..", value_delimiter = ',', num_args = 1..)]
    pub attrs: Option<Vec<String>>,
    /// Only the datasets this expression selects.
    #[arg(long = "where", value_name = "EXPR")]
    pub where_: Option<String>,
    /// Output format.
    #[arg(long, value_enum)]
    pub format: ExportFormatArg,
    /// Write to this file instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Rows per batch (and per Parquet row group); default 65536.
    #[arg(long, value_name = "N")]
    pub rows_per_batch: Option<usize>,
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

/// How `atlas create` maps NetCDF variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DecodeArg {
    /// xarray's default CF decoding, as atlas-python's `atlas create` stores it.
    Cf,
    /// The file exactly as stored.
    Raw,
}

/// `atlas create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// NetCDF directories, files or globs, local or at URLs.
    #[arg(required = true, num_args = 1..)]
    pub sources: Vec<String>,
    /// Where to write the collection (must not hold one yet); with --append, the set to add to.
    pub destination: String,
    /// Add the files as one new member of the set at DESTINATION (the set is
    /// created if absent) and commit it; other writers may append at the same time.
    #[arg(long)]
    pub append: bool,
    /// Write a set whose members hold at most N datasets each (files in sorted
    /// order), committed together at the end: all or nothing. Bounds the
    /// writer's memory however many files there are.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_datasets: Option<u64>,
    /// Cut the members in the order of these keys (comma-separated: a
    /// variable, or hilbert[:LAT:LON[:TIME]]), read from every file first.
    #[arg(long, value_name = "KEY[,KEY...]", value_delimiter = ',', value_parser = parse_sort_key, requires = "max_datasets")]
    pub sort_by: Option<Vec<atlas::SortKey>>,
    /// Mapping: `cf` (what atlas-python builds) or `raw` (as stored).
    #[arg(long, value_enum, default_value = "cf")]
    pub decode: DecodeArg,
    /// Descend into sub-directories (the default).
    #[arg(long, overrides_with = "no_recursive")]
    pub recursive: bool,
    /// Scan only the top of each directory.
    #[arg(long)]
    pub no_recursive: bool,
    /// Block compression.
    #[arg(long, value_enum, default_value = "zstd")]
    pub codec: CodecArg,
    /// Target size of a block before compression (bytes, or with K/M/G, KiB/MiB/GiB).
    #[arg(long, value_name = "SIZE")]
    pub block_size: Option<String>,
    /// Stored chunk shape per variable, e.g. '{"TEMP": [100]}' (default: whole arrays).
    #[arg(long, value_name = "JSON")]
    pub chunks: Option<String>,
    /// Files opened and decoded at once (with --max-datasets and several
    /// members: members written at once, each decoding one file at a time).
    #[arg(short = 'j', long = "jobs", value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: u16,
    /// Leave out files that fail (each listed with its reason) instead of writing nothing.
    #[arg(long)]
    pub skip_errors: bool,
    /// Leave out variables of types Atlas cannot store (listed) instead of failing their file.
    #[arg(long)]
    pub skip_unsupported: bool,
    /// Write a JSON document of what was left out or changed, and why, to
    /// FILE: skipped files and arrays, time variables stored undecoded, notes.
    /// Also written when the ingest fails, naming the failure.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
}

const SYNC_HELP: &str = "\
INDEX lists the archive's files in the Argo GDAC format (ar_index_global_prof.txt,
plain or gzip): `#` comments, the header
file,date,latitude,longitude,ocean,profiler_type,institution,date_update, then one
line per file. Each file is read from ROOT/<file> (default: the folder `dac` beside
the index, as on the GDAC). A malformed index is refused naming its line, before
anything is written.

The set (created if absent) is compared with the index: files it does not hold are
added, files with a newer date_update replaced, datasets whose file left the index
removed, and a real-time file R… whose delayed-mode file D… arrived is replaced by
it. All of it is one new member and one commit: a reader sees the set before or
after, never between. Each dataset records its file and date_update (attributes
_atlas_source and _atlas_date_update), so a second sync with nothing changed
commits nothing. If another writer commits in between, the sync exits 75 having
committed nothing: run it again.

Example:
  atlas sync ./argo-set --index gdac/ar_index_global_prof.txt
  atlas sync ./argo-set --index today.txt.gz --root gdac/dac --dry-run
  atlas --json sync ./argo-set --index today.txt -j 4 --skip-errors";

/// `atlas sync`.
#[derive(Debug, Args)]
pub struct SyncArgs {
    /// The set to keep in step (created by the first sync).
    pub set: String,
    /// The archive's index, in the Argo GDAC format (plain or gzip; a path or a URL).
    #[arg(long, value_name = "INDEX")]
    pub index: String,
    /// The folder, local or at a URL, the index's paths are relative to (default: `dac` beside the index).
    #[arg(long, value_name = "ROOT")]
    pub root: Option<String>,
    /// Print what would change and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Mapping: `cf` (what atlas-python builds) or `raw` (as stored).
    #[arg(long, value_enum, default_value = "cf")]
    pub decode: DecodeArg,
    /// Files opened and decoded at once.
    #[arg(short = 'j', long = "jobs", value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: u16,
    /// Leave out files that fail (each listed with its reason; the next sync tries them again).
    #[arg(long)]
    pub skip_errors: bool,
    /// Leave out variables of types Atlas cannot store instead of failing their file.
    #[arg(long)]
    pub skip_unsupported: bool,
    /// Write the new files into members of at most N datasets each, all
    /// committed together (bounds memory on a first sync of a whole archive).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_datasets: Option<u64>,
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
