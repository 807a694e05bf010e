//! [`AtlasWriter`]: builds one collection and commits it in a single streaming pass.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use atlas_format::{
    CONTAINER_FILE, CollectionFooter, DATASETS_SEGMENT, FooterBuilder, MASK_FILE, OpenedContainer,
    Trailer, encode_header, validate_name,
};
use atlas_io::{IoError, object_path};
use atlas_segment::{ContainerSink, SegmentDigest, WrittenSegment};
use bytes::Bytes;
use futures::StreamExt;
use indexmap::IndexSet;
use opendal::Operator;
use smol_str::SmolStr;

use super::config::WriterConfig;
use super::dataset::DatasetWriter;
use super::state::{Phase, SchemaKey, Shared, SlotStatus, State};
use super::variables::Variables;
use crate::error::{AtlasError, Result};
use crate::index::WrittenAttributes;
use crate::location::{Access, Address};
use crate::{IndexOptions, IndexReport, Member, OpenOptions};

/// Part size of the container upload on object stores (multipart).
const UPLOAD_CHUNK: usize = 8 << 20;
/// Parts of the container upload in flight at once on object stores.
const UPLOAD_CONCURRENCY: usize = 4;

/// What [`AtlasWriter::finish`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct WriteSummary {
    /// Datasets in the collection (finished ones; abandoned ones are not counted).
    pub datasets: usize,
    /// Bytes of `data.atlas`.
    pub container_bytes: u64,
    /// Each segment's variable name and length, in container order.
    pub segments: Vec<(String, u64)>,
    /// The dataset index written beside the container
    /// ([`WriterConfig::dataset_index`]); `None` when it was not asked for or
    /// could not be written (the collection is complete without it; the
    /// failure is logged as a warning and `atlas index` can write it later).
    pub index: Option<IndexReport>,
}

/// Builds one collection. Cheap to share (`Send + Sync`): call
/// [`add_dataset`](Self::add_dataset) from any task, then [`finish`](Self::finish) once.
///
/// Nothing is written to storage before `finish`; see `docs/write-path.md`.
pub struct AtlasWriter {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for AtlasWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AtlasWriter")
            .field("container", &self.shared.container_path)
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

async fn exists(op: &Operator, path: &str) -> Result<bool> {
    match op.stat(path).await {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == opendal::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(IoError::from_opendal(e, "stat", path).into()),
    }
}

fn now_unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl AtlasWriter {
    /// Starts a collection at `address`: a path (a missing directory is
    /// created), a URL (`s3://`, `gs://`, `az://`, `file://`), a [`Location`](crate::Location),
    /// or an operator with the collection's prefix (`(op, "argo")`).
    ///
    /// Sends one stat per object it refuses to overwrite and nothing else;
    /// nothing at the address opens as a collection until
    /// [`finish`](Self::finish). On local disk the container is written
    /// through a temp file and renamed into place.
    ///
    /// # Errors
    /// [`AtlasError::InvalidLocation`] for an address no backend accepts or
    /// that is read-only (http); [`AtlasError::InvalidUse`] for invalid
    /// options or an address that already holds a container or a deletion
    /// mask (a container is written once, and a stale mask would hide the new
    /// datasets); [`AtlasError::Io`] when storage fails.
    pub async fn create(address: impl Into<Address>, config: &WriterConfig) -> Result<AtlasWriter> {
        atlas_io::install_http_transport();
        config.validate()?;
        let location = address
            .into()
            .resolve(&config.storage, Access::Write)
            .await?;
        let (op, prefix, local_dir, _) = location.clone().into_parts();
        let container_path = object_path(&prefix, CONTAINER_FILE);
        let mask_path = object_path(&prefix, MASK_FILE);
        for path in [&container_path, &mask_path] {
            if exists(&op, path).await? {
                return Err(AtlasError::invalid_use(format!(
                    "{path:?} already exists: a collection is written once, into an empty prefix"
                )));
            }
        }
        Ok(AtlasWriter {
            shared: Arc::new(Shared {
                config: config.clone(),
                location,
                op,
                local_dir,
                container_path,
                state: Mutex::new(State {
                    phase: Phase::Open,
                    poisoned: None,
                    names: HashSet::new(),
                    slots: Vec::new(),
                    schemas: IndexSet::new(),
                    attributes: WrittenAttributes::default(),
                }),
                variables: Variables::default(),
            }),
        })
    }

    /// The configuration this writer uses.
    pub fn config(&self) -> &WriterConfig {
        &self.shared.config
    }

    /// Adds a dataset; its ordinal is its position among the `add_dataset` calls
    /// whose writers finish (abandoned ones leave no gap).
    ///
    /// Errors: [`AtlasError::InvalidName`], [`AtlasError::DatasetAlreadyExists`]
    /// (also for the name of an abandoned dataset: names are never reused), or
    /// [`AtlasError::InvalidUse`] once the writer is finished.
    ///
    /// # Errors
    /// [`AtlasError::InvalidName`], [`AtlasError::DatasetAlreadyExists`] (also for the name of an
    /// abandoned dataset: names are never reused), or [`AtlasError::InvalidUse`] once the writer is
    /// finished.
    pub fn add_dataset(&self, name: &str) -> Result<DatasetWriter> {
        validate_name(name)?;
        let mut st = self.shared.state();
        st.check_accepting()?;
        let name = SmolStr::new(name);
        if !st.names.insert(name.clone()) {
            return Err(AtlasError::DatasetAlreadyExists {
                name: name.to_string(),
            });
        }
        let slot = st.slots.len();
        st.slots.push((name.clone(), SlotStatus::Open));
        drop(st);
        Ok(DatasetWriter::new(name, slot, self.shared.clone()))
    }

    /// Commits the collection: streams header, segments, footer and trailer to
    /// `data.atlas` and closes it. The only point at which anything becomes visible.
    ///
    /// # Errors
    /// [`AtlasError::InvalidUse`] while a [`DatasetWriter`] is still open
    /// (finish, abort or drop each first); [`AtlasError::Io`] when storage
    /// fails; [`AtlasError::ContainerWrite`] when the container writer was
    /// left unusable by an earlier failure. On any error the upload is aborted
    /// and nothing that opens is left at the address.
    ///
    /// # Cancel safety
    /// Dropping the future before it completes aborts the upload (multipart
    /// uploads are aborted, a local temp file is removed): nothing that opens
    /// is left, and the writer is gone. The commit is the last write of the
    /// container, so there is no state in which part of it is visible.
    pub async fn finish(self) -> Result<WriteSummary> {
        let result = match commit(&self.shared).await {
            Ok((mut summary, index)) => {
                if let Some(index) = index {
                    summary.index = index.store(&self.shared).await;
                }
                Ok(summary)
            }
            Err(e) => Err(e),
        };
        if let Some(dir) = &self.shared.local_dir {
            atlas_io::remove_empty_atomic_write_dir(dir);
        }
        self.shared.state().phase = if result.is_ok() {
            Phase::Committed
        } else {
            Phase::Failed
        };
        result
    }
}

impl Drop for AtlasWriter {
    fn drop(&mut self) {
        let mut st = self.shared.state();
        st.phase = match st.phase {
            Phase::Open => Phase::Dropped,
            // A commit cancelled half-way: its upload is aborted by `AbortOnDrop`.
            Phase::Committing => Phase::Failed,
            other => other,
        };
        drop(st);
        // The segment writers (and their block temp files) are not needed any more.
        self.shared.variables.clear();
    }
}

/// The dataset index of a container being committed, built from what its
/// commit wrote (nothing is read back: neither its footer nor a segment
/// footer) on a blocking thread while the container's upload completes,
/// and stored once the container is. Dropped unstored (the commit failed
/// or was cancelled), nothing is stored: the build is cancelled if it has
/// not begun, its result dropped if it has.
struct IndexBuild {
    member: Member,
    building: tokio::task::JoinHandle<Result<(Vec<u8>, IndexReport)>>,
}

impl IndexBuild {
    /// Starts building the index of the container `written` describes.
    fn start(shared: &Shared, written: ForIndex) -> Result<IndexBuild> {
        let options = OpenOptions::default().dataset_index(false);
        let member = Member::from_commit(
            shared.location.clone(),
            written.container,
            written.footer_crc32c,
            &options,
        )?;
        for (name, digest) in written.digests {
            member.prime_digest(&name, digest)?;
        }
        let (handle, builder) = (tokio::runtime::Handle::current(), member.clone());
        let attributes = written.attributes;
        let building = tokio::task::spawn_blocking(move || {
            handle.block_on(builder.build_index_with(&IndexOptions::default(), Some(attributes)))
        });
        Ok(IndexBuild { member, building })
    }

    /// Stores the index beside the committed container; `None` (with a
    /// warning) when building or storing it failed.
    async fn store(mut self, shared: &Shared) -> Option<IndexReport> {
        let outcome = async {
            let (bytes, report) = (&mut self.building).await.map_err(|e| {
                AtlasError::corrupt(format!("building the dataset index stopped: {e}"))
            })??;
            self.member.put_index(bytes).await?;
            Ok::<_, AtlasError>(report)
        }
        .await;
        match outcome {
            Ok(report) => Some(report),
            Err(e) => {
                tracing::warn!(
                    container = %shared.container_path,
                    "the collection is written, but its dataset index is not: {e}"
                );
                None
            }
        }
    }
}

impl Drop for IndexBuild {
    fn drop(&mut self) {
        self.building.abort();
    }
}

/// The plan of a commit, taken under the state lock.
struct Plan {
    /// Finished datasets in ordinal order with their local schema ids.
    datasets: Vec<(SmolStr, u32)>,
    schemas: Vec<SchemaKey>,
    /// Their dataset attributes, for the dataset index.
    attributes: WrittenAttributes,
}

fn take_plan(shared: &Shared) -> Result<Plan> {
    let mut st = shared.state();
    st.check_accepting()?;
    let busy: Vec<&str> = st
        .slots
        .iter()
        .filter(|(_, s)| matches!(s, SlotStatus::Open | SlotStatus::Finishing))
        .map(|(n, _)| n.as_str())
        .collect();
    if !busy.is_empty() {
        let shown: Vec<&str> = busy.iter().take(5).copied().collect();
        return Err(AtlasError::invalid_use(format!(
            "{} dataset writer(s) still open ({}{}): finish, abort or drop them before \
             AtlasWriter::finish",
            busy.len(),
            shown.join(", "),
            if busy.len() > shown.len() {
                ", …"
            } else {
                ""
            }
        )));
    }
    st.phase = Phase::Committing;
    // Finished datasets take ordinals in slot order.
    let mut datasets = Vec::new();
    let mut ordinal_of_slot: Vec<Option<u32>> = Vec::with_capacity(st.slots.len());
    for (name, s) in &st.slots {
        let ordinal = match s {
            SlotStatus::Done(id) => {
                datasets.push((name.clone(), *id));
                u32::try_from(datasets.len().saturating_sub(1)).ok()
            }
            _ => None,
        };
        ordinal_of_slot.push(ordinal);
    }
    let schemas = std::mem::take(&mut st.schemas).into_iter().collect();
    let attributes = std::mem::take(&mut st.attributes)
        .by_ordinal(|slot| ordinal_of_slot.get(slot as usize).copied().flatten());
    st.slots = Vec::new();
    Ok(Plan {
        datasets,
        schemas,
        attributes,
    })
}

/// Aborts the container upload if the commit is dropped half-way (a cancelled future).
struct AbortOnDrop(Option<ContainerSink>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(sink) = self.0.take()
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            handle.spawn(async move {
                let _ = sink.abort().await;
            });
        }
    }
}

/// What a commit wrote that the dataset index needs, so that it reads
/// nothing back: the container as committed, each segment's digest and the
/// dataset attributes.
struct ForIndex {
    /// The container as committed: its footer, lengths and footer checksum.
    container: OpenedContainer,
    footer_crc32c: u32,
    digests: Vec<(String, SegmentDigest)>,
    attributes: WrittenAttributes,
}

/// The commit's summary, and the dataset index being built when the writer
/// writes one.
type Committed = (WriteSummary, Option<IndexBuild>);

async fn commit(shared: &Shared) -> Result<Committed> {
    let plan = take_plan(shared)?;

    // Footer pools, in ordinal order, so equal input gives an equal footer.
    let created = shared.config.created_unix_ms.unwrap_or_else(now_unix_ms);
    let mut builder = FooterBuilder::new(shared.config.codec, created);
    let mut pool_ids: HashMap<u32, u32> = HashMap::new();
    let mut order: IndexSet<SmolStr> = IndexSet::new();
    let mut dataset_attrs = false;
    for (name, local) in &plan.datasets {
        let pool = match pool_ids.get(local) {
            Some(&p) => p,
            None => {
                let key = plan
                    .schemas
                    .get(*local as usize)
                    .ok_or_else(|| AtlasError::corrupt("a dataset names an unknown schema"))?;
                // A schema's first use is the first time the writer sees its arrays.
                for (array, _, _) in &key.arrays {
                    order.insert(array.clone());
                }
                dataset_attrs |= !key.attrs.is_empty();
                pre_intern(&mut builder, key);
                let p = builder.intern_schema(&key.to_schema());
                pool_ids.insert(*local, p);
                p
            }
        };
        builder.push_dataset(name, pool)?;
    }
    if dataset_attrs {
        order.insert(SmolStr::new(DATASETS_SEGMENT));
    }

    let path = shared.container_path.as_str();
    let cap = shared.op.info().capability();
    let mut request = shared.op.writer_with(path);
    if cap.write_with_if_not_exists {
        request = request.if_not_exists(true);
    }
    if cap.write_can_multi && cap.write_multi_min_size.is_some() {
        request = request.chunk(UPLOAD_CHUNK).concurrent(UPLOAD_CONCURRENCY);
    }
    let writer = request
        .await
        .map_err(|e| IoError::from_opendal(e, "write", path))?;
    let sink = ContainerSink::new(writer, path);
    let mut guard = AbortOnDrop(Some(sink.clone()));

    let attributes = plan.attributes;
    let result = match stream(shared, &sink, builder, &order).await {
        // The index is built while the upload completes (a local file's
        // sync, a multipart upload's completion): CPU beside the wait.
        Ok(streamed) => {
            let (closing, index) = index_beside_close(shared, streamed, attributes);
            match sink.close().await.map_err(AtlasError::from) {
                Ok(_) => Ok((closing.summary, index)),
                // A retried upload met an object where there was none: its
                // earlier attempt completed and the answer was lost, if what is
                // stored ends with our footer at our length.
                Err(AtlasError::Io(io))
                    if io.kind() == atlas_io::IoErrorKind::ConditionNotMet
                        && cap.write_with_if_not_exists
                        && stored_is(
                            &shared.op,
                            path,
                            closing.summary.container_bytes,
                            &closing.tail,
                        )
                        .await =>
                {
                    tracing::debug!(
                        path,
                        "a retried container write found its own earlier write"
                    );
                    Ok((closing.summary, index))
                }
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    };
    guard.0 = None;
    match result {
        Ok((mut summary, index)) => {
            summary.datasets = plan.datasets.len();
            Ok((summary, index))
        }
        Err(e) => {
            discard(&shared.op, &sink, path, cap.write_with_if_not_exists).await;
            Err(e)
        }
    }
}

/// What closing the upload of a streamed container needs of it: its
/// summary, and the bytes it ends with (by which a retried upload knows
/// its own object).
struct Closing {
    summary: WriteSummary,
    tail: Vec<u8>,
}

/// Splits `streamed` into what its close needs and, when the writer writes
/// a dataset index, the index's build, started.
fn index_beside_close(
    shared: &Shared,
    streamed: Streamed,
    attributes: WrittenAttributes,
) -> (Closing, Option<IndexBuild>) {
    let Streamed {
        summary,
        footer,
        footer_len,
        tail,
        digests,
    } = streamed;
    let index = if shared.config.dataset_index {
        let written = ForIndex {
            footer_crc32c: atlas_format::crc32c(&tail),
            container: OpenedContainer {
                footer,
                container_len: summary.container_bytes,
                footer_len,
                header_checked: true,
            },
            digests,
            attributes,
        };
        // The collection does not depend on its index: a build that
        // cannot start is a warning, as one that fails later is.
        IndexBuild::start(shared, written)
            .inspect_err(|e| {
                tracing::warn!(
                    container = %shared.container_path,
                    "the dataset index of this collection cannot be built: {e}"
                );
            })
            .ok()
    } else {
        None
    };
    (Closing { summary, tail }, index)
}

/// Whether the object at `path` is `len` bytes long and ends with `tail`
/// (the footer and trailer this writer wrote); false when that cannot be read.
async fn stored_is(op: &Operator, path: &str, len: u64, tail: &[u8]) -> bool {
    let Some(start) = len.checked_sub(tail.len() as u64) else {
        return false;
    };
    match op.stat(path).await {
        Ok(meta) if meta.content_length() == len => {}
        _ => return false,
    }
    op.read_with(path)
        .range(start..len)
        .await
        .is_ok_and(|stored| stored.to_bytes() == tail)
}

/// Leaves nothing that opens after a failed commit: aborts the upload, and
/// where the backend cannot abort (fs without an atomic write dir writes in
/// place) deletes the partial object, which `if_not_exists` made ours.
async fn discard(op: &Operator, sink: &ContainerSink, path: &str, ours: bool) {
    match sink.abort().await {
        Ok(()) => {}
        Err(abort) if ours => {
            tracing::warn!(error = %abort, "aborting the container upload failed; deleting it");
            if let Err(e) = op.delete(path).await {
                tracing::warn!(error = %e, path, "deleting the partial container failed");
            }
        }
        Err(abort) => {
            tracing::warn!(error = %abort, path, "aborting the container upload failed");
        }
    }
}

/// Interns a schema's strings and dtypes in the order the v8 fixtures show:
/// array names and element types, then dataset attribute keys and types,
/// then array attribute keys and types by array position.
fn pre_intern(builder: &mut FooterBuilder, key: &SchemaKey) {
    for (name, dtype, _) in &key.arrays {
        builder.intern_string(name);
        builder.intern_dtype(dtype);
    }
    for (k, dtype) in &key.attrs {
        builder.intern_string(k);
        builder.intern_dtype(dtype);
    }
    for (_, _, attrs) in &key.arrays {
        for (k, dtype) in attrs {
            builder.intern_string(k);
            builder.intern_dtype(dtype);
        }
    }
}

/// Records segment `name`, which landed at `written`, in the footer, and
/// keeps its digest.
fn place(
    builder: &mut FooterBuilder,
    segments: &mut Vec<(String, u64)>,
    digests: &mut Vec<(String, SegmentDigest)>,
    name: String,
    (written, digest): (WrittenSegment, SegmentDigest),
) -> Result<()> {
    let entry = builder.push_variable(&name, written.len)?;
    if entry.seg_offset != written.offset {
        return Err(AtlasError::corrupt(format!(
            "segment {name:?} landed at byte {}, the footer expects {}",
            written.offset, entry.seg_offset
        )));
    }
    segments.push((name.clone(), written.len));
    digests.push((name, digest));
    Ok(())
}

/// What [`stream`] put in the container.
struct Streamed {
    summary: WriteSummary,
    /// The footer as written, and its stored (compressed) length.
    footer: CollectionFooter,
    footer_len: u64,
    /// The bytes the container ends with (footer and trailer), by which a
    /// retried upload knows its own object.
    tail: Vec<u8>,
    /// Each segment's digest.
    digests: Vec<(String, SegmentDigest)>,
}

/// Streams the container into `sink`.
async fn stream(
    shared: &Shared,
    sink: &ContainerSink,
    mut builder: FooterBuilder,
    order: &IndexSet<SmolStr>,
) -> Result<Streamed> {
    sink.write_raw(Bytes::copy_from_slice(&encode_header()))
        .await?;
    let mut writers = Vec::with_capacity(order.len());
    for name in order {
        let writer = shared
            .variables
            .get(name)
            .and_then(|v| v.take())
            .ok_or_else(|| {
                AtlasError::corrupt(format!("variable {name:?} has no segment writer"))
            })?;
        writers.push((name.to_string(), writer));
    }
    let parallelism = shared.config.commit_parallelism_or_default();
    let mut segments = Vec::with_capacity(writers.len());
    let mut digests = Vec::with_capacity(writers.len());
    if parallelism <= 1 || writers.len() <= 1 {
        for (name, writer) in writers {
            let written = writer.finish(sink).await?;
            place(&mut builder, &mut segments, &mut digests, name, written)?;
        }
    } else {
        // Up to `parallelism` segments finish at once, each on a blocking
        // thread of its own (the footer's serialisation is synchronous CPU
        // work), into temporary storage; they are appended in order as the
        // one in front is ready.
        let handle = tokio::runtime::Handle::current();
        let mut finished = futures::stream::iter(writers)
            .map(|(name, writer)| {
                let handle = handle.clone();
                async move {
                    let spooled = tokio::task::spawn_blocking(move || {
                        handle.block_on(writer.finish_spooled())
                    })
                    .await
                    .map_err(|e| {
                        AtlasError::corrupt(format!("finishing segment {name:?} stopped: {e}"))
                    })??;
                    Ok::<_, AtlasError>((name, spooled))
                }
            })
            .buffered(parallelism);
        while let Some(next) = finished.next().await {
            let (name, spooled) = next?;
            let written = spooled.append_to(sink).await?;
            place(&mut builder, &mut segments, &mut digests, name, written)?;
        }
    }
    let footer_start = builder.next_offset();
    let footer = builder.finish();
    let encoded = footer.encode()?;
    let footer_len = encoded.len() as u64;
    let footer_bytes = Bytes::from(encoded);
    let at = sink.write_raw(footer_bytes.clone()).await?;
    if at != footer_start {
        return Err(AtlasError::corrupt(format!(
            "footer landed at byte {at}, expected {footer_start}"
        )));
    }
    let trailer = Trailer {
        footer_size: footer_len,
    }
    .encode();
    let end = sink.write_raw(Bytes::copy_from_slice(&trailer)).await? + trailer.len() as u64;
    let mut tail = footer_bytes.to_vec();
    tail.extend_from_slice(&trailer);
    Ok(Streamed {
        summary: WriteSummary {
            datasets: 0,
            container_bytes: end,
            segments,
            index: None,
        },
        footer,
        footer_len,
        tail,
        digests,
    })
}
