//! [`Atlas`]: the one read handle. It opens whatever a location holds, a
//! collection set or a lone collection (a set of one member), and answers
//! every question the same way for both.
//!
//! Opening asks for the set's manifest and the lone container's tail (and
//! mask) at once, one round trip; whichever exists answers. A set's members
//! open on first use, concurrently, each with one tail read. Every question
//! is answered by the members' views ([`View`]): each member with the copies
//! a newer member replaces hidden, as if deleted. A question over the whole
//! set opens every member; a query first skips the members whose manifest
//! summaries rule it out.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field as ArrowField, Schema};
use atlas_format::{MemberEntry, SET_MANIFEST_FILE, SetManifest};
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use smol_str::SmolStr;
use tokio::sync::OnceCell;

use super::manifest_store::read_manifest;
use super::prune::may_match;
use super::view::View;
use crate::error::{AtlasError, Result};
use crate::location::{Access, Address, Location};
use crate::query::{
    CatalogueOptions, Declared, Plan, Predicate, QueryError, TableOptions, TableStream,
    catalogue_with, ruled_out, select_with, table_with,
};
use crate::read::fold_stats;
use crate::read::{
    Dataset, DatasetBlock, DatasetShape, DatasetStats, Member, OpenOptions, Order, Region,
};
use crate::{AnyArray, ArrayStats, Attr};

/// Members opened at once when a question needs all of them.
const OPEN_CONCURRENCY: usize = 32;

/// An opened collection: a set of many containers read as one, or a lone
/// collection (a set of one member). The one handle to read, query and
/// delete from; [`Member`] is one container of it.
///
/// Cheap to clone (one `Arc`), `Send + Sync + 'static`; clones share the
/// members, their opened segments and the block cache. Asking about names,
/// counts and schemas costs no request once the members a question needs are
/// open (a lone collection's one is open from the start); array data,
/// statistics and attributes come from the members' per-variable segments,
/// each opened once on first use.
#[derive(Clone)]
pub struct Atlas {
    inner: Arc<Inner>,
}

struct Inner {
    location: Location,
    manifest_path: String,
    /// `None`: a lone collection.
    manifest: RwLock<Option<SetManifest>>,
    /// Commit order, oldest first.
    members: Vec<Slot>,
    options: OpenOptions,
    /// Every member open, with replaced copies hidden; computed once.
    views: OnceCell<Vec<View>>,
    /// Deletes through one handle run one at a time.
    pub(super) write_lock: tokio::sync::Mutex<()>,
}

/// One member of the manifest (or the lone container), opened on first use.
struct Slot {
    id: String,
    path: String,
    /// Datasets the manifest says the member's container holds.
    datasets_total: Option<u64>,
    opened: OnceCell<Member>,
}

impl std::fmt::Debug for Atlas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Atlas")
            .field("location", &self.inner.location.display())
            .field("members", &self.inner.members.len())
            .field("is_set", &self.is_set())
            .finish_non_exhaustive()
    }
}

impl Atlas {
    /// Opens the collection at `address`: a path, a URL (`s3://`, `gs://`,
    /// `az://`, `http(s)://`, `file://`), a [`Location`], or an operator with
    /// the collection's prefix (`(op, "argo")`). A set or a lone collection.
    ///
    /// Costs one round trip: the read of `set.manifest`, and for a lone
    /// collection the read of `data.atlas`'s tail (two when its footer
    /// exceeds 64 KiB), of `deleted.mask` and of the dataset index's tail
    /// (unless [`OpenOptions::dataset_index`] is off), all sent at once. A set's
    /// members open later, on first use. Opening a local directory creates
    /// nothing on disk.
    ///
    /// # Errors
    /// [`AtlasError::InvalidLocation`] for an address no backend accepts;
    /// [`AtlasError::Io`] when storage fails (`NotFound` when neither a set
    /// nor a collection is there); [`AtlasError::SetManifest`] for a manifest
    /// that is damaged or of a set version this library does not read;
    /// [`AtlasError::NotAnAtlasCollection`], [`AtlasError::UnsupportedVersion`],
    /// [`AtlasError::CorruptCollection`] or [`AtlasError::CorruptMask`] for a
    /// lone container that is not a readable v8 collection.
    pub async fn open(address: impl Into<Address>, options: &OpenOptions) -> Result<Atlas> {
        let location = address
            .into()
            .resolve(&options.storage, Access::Read)
            .await?;
        let manifest_path = location.object(SET_MANIFEST_FILE);
        let (manifest, lone) = futures::join!(
            read_manifest(location.operator(), &manifest_path, &options.limits),
            Member::open_location(location.clone(), options)
        );
        let manifest = manifest?;
        let members = match &manifest {
            Some(manifest) => manifest
                .members
                .iter()
                .map(|entry| Slot {
                    id: entry.id.clone(),
                    path: entry.path.clone(),
                    datasets_total: Some(entry.datasets_total),
                    opened: OnceCell::new(),
                })
                .collect(),
            None => vec![Slot {
                id: String::new(),
                path: String::new(),
                datasets_total: None,
                opened: OnceCell::new_with(Some(lone?)),
            }],
        };
        tracing::debug!(
            collection = %location.display(),
            set = manifest.is_some(),
            members = members.len(),
            "opened"
        );
        Ok(Atlas {
            inner: Arc::new(Inner {
                location,
                manifest_path,
                manifest: RwLock::new(manifest),
                members,
                options: options.clone(),
                views: OnceCell::new(),
                write_lock: tokio::sync::Mutex::new(()),
            }),
        })
    }

    /// Whether a manifest was found (false: a lone collection, a set of one).
    pub fn is_set(&self) -> bool {
        self.manifest().is_some()
    }

    /// The manifest as opened (updated by this handle's deletes); `None` for a lone collection.
    pub fn manifest(&self) -> Option<SetManifest> {
        self.inner
            .manifest
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The set's generation this handle reads (`None` for a lone
    /// collection). Commits after the open do not change what it reads: the
    /// members of this generation stay readable (a compaction only marks the
    /// ones it replaces retired, and `cleanup` removes them after the
    /// retention); [`refresh`](Self::refresh) moves to the newest generation.
    /// This handle's own deletes apply at once.
    pub fn generation(&self) -> Option<u64> {
        self.inner
            .manifest
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .map(|m| m.generation)
    }

    /// A handle on the same collection at its newest generation, opened with
    /// this handle's options (the same requests as [`Atlas::open`]).
    ///
    /// # Errors
    /// What [`Atlas::open`] returns.
    pub async fn refresh(&self) -> Result<Atlas> {
        Atlas::open(self.location(), &self.inner.options).await
    }

    /// The committed members, oldest commit first, as the manifest describes
    /// them (no request); empty for a lone collection.
    pub fn members(&self) -> Vec<MemberEntry> {
        self.manifest().map(|m| m.members).unwrap_or_default()
    }

    /// Where the collection is.
    pub fn location(&self) -> &Location {
        &self.inner.location
    }

    /// Members opened so far (a lone collection's one is open from the start).
    pub fn members_opened(&self) -> usize {
        self.opened().count()
    }

    /// The members opened so far, oldest commit first.
    fn opened(&self) -> impl Iterator<Item = &Member> {
        self.inner.members.iter().filter_map(|m| m.opened.get())
    }

    /// Segments opened so far, over every open member: each is opened once,
    /// on first use, and kept.
    pub fn segments_opened(&self) -> usize {
        self.opened().map(Member::segments_opened).sum()
    }

    /// Blocks decoded so far for reads of fixed-width arrays, over every
    /// open member (see [`Member::blocks_decoded`]).
    pub fn blocks_decoded(&self) -> u64 {
        self.opened().map(Member::blocks_decoded).sum()
    }

    /// Arrow memory of the decoded dataset-index columns kept, over every
    /// open member (see [`Member::index_bytes_kept`]).
    pub fn index_bytes_kept(&self) -> usize {
        self.opened().map(Member::index_bytes_kept).sum()
    }

    /// Arrays held in views made from the dataset index's chunk places,
    /// over every open member (see [`Member::arrays_in_views`]).
    pub fn arrays_in_views(&self) -> usize {
        self.opened().map(Member::arrays_in_views).sum()
    }

    /// The container of a lone collection (open from the start, no
    /// request); `None` for a set, whose members [`member`](Self::member)
    /// opens.
    pub fn lone_member(&self) -> Option<Member> {
        if self.is_set() {
            return None;
        }
        self.opened().next().cloned()
    }

    pub(super) fn manifest_path(&self) -> &str {
        &self.inner.manifest_path
    }

    pub(super) fn options(&self) -> &OpenOptions {
        &self.inner.options
    }

    pub(super) fn write_lock(&self) -> &tokio::sync::Mutex<()> {
        &self.inner.write_lock
    }

    pub(super) fn set_manifest(&self, manifest: SetManifest) {
        *self
            .inner
            .manifest
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(manifest);
    }

    /// Member `index` (commit order), opened on first use; errors name the member.
    async fn open_member(&self, index: usize) -> Result<Member> {
        let member = self
            .inner
            .members
            .get(index)
            .ok_or_else(|| AtlasError::invalid_use(format!("no member at {index}")))?;
        member
            .opened
            .get_or_try_init(|| async {
                let location = self.inner.location.child(&member.path, Access::Read)?;
                let opened = Member::open_location(location, &self.inner.options).await?;
                if let Some(expected) = member.datasets_total
                    && u64::try_from(opened.dataset_count_total()).ok() != Some(expected)
                {
                    return Err(AtlasError::corrupt(format!(
                        "the manifest says the member holds {expected} datasets, its container {}",
                        opened.dataset_count_total()
                    )));
                }
                Ok(opened)
            })
            .await
            .cloned()
            .map_err(|e| e.in_member(&member.id, &self.member_display(member)))
    }

    fn member_display(&self, member: &Slot) -> String {
        atlas_io::object_path(self.inner.location.display(), &member.path)
    }

    /// The member with id `id`, opened on first use. It answers for its own
    /// container: copies that newer members replace are not hidden.
    ///
    /// # Errors
    /// [`AtlasError::InvalidUse`] for an id the manifest does not name;
    /// [`AtlasError::Member`] when the member cannot be opened.
    pub async fn member(&self, id: &str) -> Result<Member> {
        let index = self
            .inner
            .members
            .iter()
            .position(|m| m.id == id)
            .filter(|_| self.is_set())
            .ok_or_else(|| AtlasError::invalid_use(format!("the set has no member {id:?}")))?;
        self.open_member(index).await
    }

    /// Every member's view, oldest commit first: each member with the copies
    /// a newer member replaces hidden. Opens the members not yet open.
    pub(super) async fn views(&self) -> Result<Vec<View>> {
        self.inner
            .views
            .get_or_try_init(|| async {
                let opened: Vec<Member> = stream::iter(0..self.inner.members.len())
                    .map(|i| self.open_member(i))
                    .buffered(OPEN_CONCURRENCY)
                    .try_collect()
                    .await?;
                Ok::<_, AtlasError>(resolve(&opened))
            })
            .await
            .cloned()
    }

    /// Every member, opened (concurrently, those not yet open), oldest commit
    /// first; for a lone collection its one container.
    ///
    /// # Errors
    /// [`AtlasError::Member`] when a member cannot be opened.
    pub async fn open_members(&self) -> Result<Vec<Member>> {
        Ok(self
            .views()
            .await?
            .iter()
            .map(|v| v.member().clone())
            .collect())
    }

    /// Live datasets over all members.
    ///
    /// # Errors
    /// [`AtlasError::Member`] when a member cannot be opened.
    pub async fn dataset_count(&self) -> Result<usize> {
        Ok(self.views().await?.iter().map(View::dataset_count).sum())
    }

    /// Names of the live datasets: members oldest commit first, each in
    /// ordinal order; a replaced name is listed once, where its live copy is.
    /// Names are the footers' own [`SmolStr`]s, so a short name (up to 23
    /// bytes, as Argo's are) is listed without an allocation.
    ///
    /// # Errors
    /// [`AtlasError::Member`] when a member cannot be opened.
    pub async fn dataset_names(&self) -> Result<Vec<SmolStr>> {
        let mut names = Vec::new();
        for view in self.views().await?.iter() {
            view.push_names(&mut names);
        }
        Ok(names)
    }

    /// Handles of the live datasets, in [`dataset_names`](Self::dataset_names) order.
    ///
    /// # Errors
    /// [`AtlasError::Member`] when a member cannot be opened.
    pub async fn datasets(&self) -> Result<Vec<Dataset>> {
        let mut datasets = Vec::new();
        for view in self.views().await?.iter() {
            view.push_datasets(&mut datasets);
        }
        Ok(datasets)
    }

    /// Handles of the live datasets grouped by the member holding them, with
    /// its id (empty for a lone collection), oldest commit first; the order
    /// of [`datasets`](Self::datasets) within each group.
    ///
    /// # Errors
    /// [`AtlasError::Member`] when a member cannot be opened.
    pub async fn datasets_by_member(&self) -> Result<Vec<(String, Vec<Dataset>)>> {
        let views = self.views().await?;
        Ok(self
            .inner
            .members
            .iter()
            .zip(views.iter())
            .map(|(slot, view)| (slot.id.clone(), view.datasets()))
            .collect())
    }

    /// Whether a live dataset has this name.
    ///
    /// # Errors
    /// [`AtlasError::Member`] when a member cannot be opened.
    pub async fn contains(&self, name: &str) -> Result<bool> {
        Ok(self.live_copy(name).await?.is_some())
    }

    /// The live copy of dataset `name`: the one in the most recently committed
    /// member that holds the name (a deleted one there hides older copies).
    ///
    /// Opens, newest first, only the members whose name range (in the
    /// manifest) can hold the name, and stops at the first that does.
    ///
    /// # Errors
    /// [`AtlasError::DatasetNotFound`]; [`AtlasError::Member`] when a member
    /// cannot be opened.
    pub async fn dataset(&self, name: &str) -> Result<Dataset> {
        self.live_copy(name)
            .await?
            .ok_or_else(|| AtlasError::DatasetNotFound {
                name: name.to_owned(),
            })
    }

    /// The live copy of `name`, if any.
    async fn live_copy(&self, name: &str) -> Result<Option<Dataset>> {
        if let Some(views) = self.inner.views.get() {
            return views
                .iter()
                .rev()
                .find(|v| v.contains(name))
                .map(|v| v.dataset(name))
                .transpose();
        }
        let Some(manifest) = self.manifest() else {
            // A lone collection: its one member is open, and hides nothing.
            return match self.lone_member() {
                Some(member) if member.contains(name) => member.dataset(name).map(Some),
                _ => Ok(None),
            };
        };
        for (index, entry) in manifest.members.iter().enumerate().rev() {
            if !entry.names.as_ref().is_some_and(|r| r.contains(name)) {
                continue;
            }
            let member = self.open_member(index).await?;
            if member.footer().datasets.contains_key(name) {
                // The newest holder decides: live, or deleted for good.
                return member
                    .contains(name)
                    .then(|| member.dataset(name))
                    .transpose();
            }
        }
        Ok(None)
    }

    /// Distinct array names over all members, in order of first appearance.
    ///
    /// # Errors
    /// [`AtlasError::Member`] when a member cannot be opened.
    pub async fn array_names(&self) -> Result<Vec<String>> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for view in self.views().await? {
            for name in view.member().array_names() {
                if seen.insert(name.to_owned()) {
                    out.push(name.to_owned());
                }
            }
        }
        Ok(out)
    }

    /// Statistics of `array` folded over every live dataset: counts add, min
    /// of mins, max of maxes. In each member, datasets whose declared type for
    /// `array` differs from the first live declaring dataset's cannot be
    /// compared and stay out of the fold. `None` when no live dataset records
    /// statistics for it.
    ///
    /// One read of each segment footer holding `array` (none if the segment
    /// is open or its footer in hand), one pass over it, no array data.
    ///
    /// # Errors
    /// [`AtlasError::ArrayNotFound`] when no dataset declares `array`;
    /// [`AtlasError::CorruptSegment`] when a segment's footer is damaged,
    /// [`AtlasError::Io`] when storage fails; [`AtlasError::Member`] when a
    /// member cannot be opened.
    pub async fn array_stats(&self, array: &str) -> Result<Option<ArrayStats>> {
        let views = self.views_declaring(array).await?;
        let parts =
            futures::future::try_join_all(views.iter().map(|v| v.array_stats(array))).await?;
        Ok(fold_stats(parts.into_iter().flatten()))
    }

    /// Each live dataset's statistics of `array`, members oldest commit first,
    /// each in ordinal order (datasets of any declared type; one without
    /// recorded statistics is left out). Ordinals are within each member.
    ///
    /// # Errors
    /// As [`array_stats`](Self::array_stats).
    pub async fn array_stats_by_dataset(&self, array: &str) -> Result<Vec<DatasetStats>> {
        let views = self.views_declaring(array).await?;
        rows_of_each(&views, |v| v.array_stats_by_dataset(array)).await
    }

    /// Each live dataset declaring `array`, members oldest commit first, each
    /// in ordinal order, with the first data block of the array's segment its
    /// values lie in: the grouping a reader of many datasets follows so that
    /// one task reads whole blocks (dask partitions, `read_many` batches).
    /// Read off the segment footers, no data block.
    ///
    /// # Errors
    /// As [`array_stats`](Self::array_stats).
    pub async fn array_blocks_by_dataset(&self, array: &str) -> Result<Vec<DatasetBlock>> {
        let views = self.views_declaring(array).await?;
        rows_of_each(&views, |v| v.array_blocks_by_dataset(array)).await
    }

    /// Each live dataset declaring `array`, members oldest commit first, each
    /// in ordinal order, with its shape and element type as the segment
    /// records them: what a view laying many datasets end to end (a ragged or
    /// padded table) needs before it reads a value. Read off the segment
    /// footers, no data block.
    ///
    /// # Errors
    /// As [`array_stats`](Self::array_stats), which also fails when a
    /// dataset's array is damaged or its segment's type differs from the one
    /// its dataset declares.
    pub async fn array_shapes_by_dataset(&self, array: &str) -> Result<Vec<DatasetShape>> {
        let views = self.views_declaring(array).await?;
        rows_of_each(&views, |v| v.array_shapes_by_dataset(array)).await
    }

    /// Attribute `key` of every live dataset that declares it, members oldest
    /// commit first, each in ordinal (write) order: dataset-level when `array`
    /// is `None`, else on that array.
    ///
    /// No request when no live dataset declares it; otherwise one read of
    /// each segment footer involved (none if in hand), decoding only this
    /// attribute's values.
    ///
    /// # Errors
    /// As [`array_stats`](Self::array_stats).
    pub async fn attributes_by_dataset(
        &self,
        array: Option<&str>,
        key: &str,
    ) -> Result<Vec<(SmolStr, Attr)>> {
        let views = match array {
            Some(array) => self.views_declaring(array).await?,
            None => self.views().await?,
        };
        rows_of_each(&views, |v| v.attributes_by_dataset(array, key)).await
    }

    /// The views whose datasets declare `array`; `ArrayNotFound` when none does.
    async fn views_declaring(&self, array: &str) -> Result<Vec<View>> {
        let views: Vec<View> = self
            .views()
            .await?
            .into_iter()
            .filter(|v| v.declares_array(array))
            .collect();
        if views.is_empty() {
            return Err(AtlasError::ArrayNotFound {
                dataset: None,
                array: array.to_owned(),
            });
        }
        Ok(views)
    }

    /// Reads `region` of `array` from each of `datasets` (handles from this
    /// collection, of any members), at most `concurrency` reads at a time,
    /// and yields `(dataset name, result)` in `order`.
    ///
    /// A dataset that does not declare `array`, whose read fails, or that is
    /// not a dataset of this collection yields its error and the stream goes
    /// on. Cost: one open of the array's segment per member (none if already
    /// open); then, when a member's datasets read at least half of its
    /// segment's arrays, that segment's data region in one read, otherwise
    /// the blocks not yet in the shared block cache, with reads that continue
    /// the previous one served by a growing read-ahead window (4 MiB doubling
    /// to 32 MiB), so a sweep costs a few requests rather than one per block.
    pub fn read_many(
        &self,
        datasets: impl IntoIterator<Item = Dataset>,
        array: &str,
        region: Region,
        concurrency: usize,
        order: Order,
    ) -> BoxStream<'static, (String, Result<AnyArray>)> {
        let members: HashSet<usize> = self.opened().map(Member::key).collect();
        let (ours, foreign): (Vec<Dataset>, Vec<Dataset>) = datasets
            .into_iter()
            .partition(|ds| members.contains(&ds.member().key()));
        let foreign = stream::iter(foreign).map(|ds| {
            let error = AtlasError::invalid_use(format!(
                "dataset {:?} belongs to another collection than this handle's",
                ds.name()
            ));
            (ds.name().to_owned(), Err(error))
        });
        crate::read::read_many(ours, array, region, concurrency, order)
            .chain(foreign)
            .boxed()
    }

    /// Names of the live datasets `predicate` accepts, in
    /// [`dataset_names`](Self::dataset_names) order.
    ///
    /// Members whose manifest summaries rule the predicate out are skipped
    /// without a request. The others are opened, and so are the members
    /// committed after one of them whose name range (in the manifest)
    /// overlaps its range, since only those can replace its names; then, as
    /// for one collection, one segment-footer read per variable named, per
    /// member that may match.
    ///
    /// When the summaries rule out every member, the answer is empty and no
    /// name in the predicate is checked (nothing was opened to check it).
    ///
    /// # Errors
    /// [`QueryError::UnknownName`], [`QueryError::AmbiguousName`],
    /// [`QueryError::TypeMismatch`] or [`QueryError::NoStatistics`] for a
    /// predicate the collection cannot decide; [`QueryError::Atlas`] when
    /// reading a segment footer fails.
    pub async fn select(&self, predicate: &Predicate) -> Result<Vec<String>, QueryError> {
        let views = self.candidate_views(Some(predicate)).await?;
        if views.is_empty() {
            // Every member ruled out by its summaries: nothing was opened to check names against.
            return Ok(Vec::new());
        }
        let plan = Plan::new(&views, &Declared::of(&views), predicate)?;
        select_with(&views, &plan).await
    }

    /// One row per live dataset (in [`dataset_names`](Self::dataset_names)
    /// order, or those [`CatalogueOptions::predicate`] accepts): `name`
    /// (utf8), for a set `member` (utf8, the member id; a lone collection has
    /// no such column), `ordinal` (within the member) and `schema` (uint32), one column per dataset
    /// attribute typed as declared (lists as list arrays, null where a
    /// dataset lacks it; utf8 JSON when schemas declare the key with
    /// different types), and per array `ARRAY.count`, `ARRAY.nulls` (uint64)
    /// and `ARRAY.min`, `ARRAY.max` typed as the array's elements
    /// (timestamps in UTC; absent for list types; utf8 when schemas disagree
    /// on the type). A predicate skips members as [`select`](Self::select)
    /// does.
    ///
    /// Reads one segment footer per variable involved and member, concurrently,
    /// and no array data.
    ///
    /// # Errors
    /// [`QueryError::UnknownName`] for an attribute or array not declared,
    /// errors of the predicate (see [`select`](Self::select)),
    /// [`QueryError::Arrow`] when the table cannot be built,
    /// [`QueryError::Atlas`] when reading a segment footer fails.
    pub async fn catalogue(&self, options: &CatalogueOptions) -> Result<RecordBatch, QueryError> {
        let views = self.candidate_views(options.predicate.as_ref()).await?;
        let (batch, rows) = if views.is_empty() && options.predicate.is_some() {
            // Every member ruled out: an empty table of the fixed columns.
            let nothing = CatalogueOptions::default()
                .attributes(Vec::<String>::new())
                .arrays(Vec::<String>::new());
            catalogue_with(&[], &nothing).await?
        } else {
            catalogue_with(&views, options).await?
        };
        if !self.is_set() {
            return Ok(batch);
        }
        let id_of: HashMap<usize, &str> = self
            .inner
            .members
            .iter()
            .filter_map(|m| m.opened.get().map(|o| (o.key(), m.id.as_str())))
            .collect();
        let ids: Vec<&str> = rows
            .iter()
            .map(|ds| id_of.get(&ds.member().key()).copied().unwrap_or(""))
            .collect();
        with_member_column(&batch, &ids).map_err(QueryError::Arrow)
    }

    /// The values of [`TableOptions::arrays`] of every live dataset (or those
    /// the predicate accepts) as one long table, one row per element:
    ///
    /// - `dataset`: the dataset's name (utf8, dictionary-encoded);
    /// - one index column per dimension of the arrays, named after it (uint32,
    ///   or uint64 when an axis is longer than `u32` counts; null for a dataset
    ///   whose arrays lack that dimension; `NAME_index` if an array or
    ///   attribute is called `NAME` too);
    /// - one column per array in its stored type (timestamps as UTC
    ///   timestamps, strings utf8; values as stored, NaN and fill values
    ///   included, except that a timestamp equal to its array's fill value is
    ///   null, as numpy reads it as NaT), null for a dataset that lacks the array;
    /// - one column per [`TableOptions::attributes`] key, typed as the
    ///   catalogue types it (`@KEY` if an array is called `KEY` too).
    ///
    /// Datasets come in [`dataset_names`](Self::dataset_names) order, each in
    /// row-major element order; one declaring none of the arrays has no rows.
    /// A predicate skips members as [`select`](Self::select) does; when it
    /// rules out every member the table is empty: `dataset`, the arrays typed
    /// as the manifest summarises them and the attributes typed null, no
    /// index column. Cost before this returns, per array and member: one
    /// batch of the dataset index's chunk columns (without an index, the
    /// segment footer), and what the predicate and attributes need; then the
    /// blocks of the chosen datasets as the stream is polled, as
    /// [`read_many`](Self::read_many) reads them.
    ///
    /// # Errors
    /// [`QueryError::NoArrays`], [`QueryError::UnknownName`] for an array or
    /// attribute nobody declares, [`QueryError::MixedArrayTypes`],
    /// [`QueryError::UnsupportedArrayType`] (bool and list arrays),
    /// [`QueryError::DimensionsDiffer`] for a dataset whose arrays do not
    /// share their dimensions, the predicate's errors (see
    /// [`select`](Self::select)), [`QueryError::Atlas`] when a read fails.
    pub async fn table(&self, options: &TableOptions) -> Result<TableStream, QueryError> {
        let views = self.candidate_views(options.predicate_ref()).await?;
        if views.is_empty() && options.predicate_ref().is_some() {
            return ruled_out(options, &self.members());
        }
        table_with(views, options).await
    }

    /// The views of the members `predicate` may match (every member without
    /// one), with the names newer members hold hidden.
    async fn candidate_views(&self, predicate: Option<&Predicate>) -> Result<Vec<View>> {
        let Some(predicate) = predicate else {
            return self.views().await;
        };
        let manifest = self.manifest();
        let entries = manifest.as_ref().map(|m| m.members.as_slice());
        let keep: Vec<bool> = match entries {
            Some(entries) => entries
                .iter()
                .map(|e| may_match(e.into(), predicate))
                .collect(),
            None => vec![true; self.inner.members.len()],
        };
        if !keep.contains(&true) {
            return Ok(Vec::new());
        }
        if let Some(all) = self.inner.views.get() {
            return Ok(all
                .iter()
                .zip(&keep)
                .filter(|&(_, &k)| k)
                .map(|(v, _)| v.clone())
                .collect());
        }
        // Besides the candidates, the members committed after one of them
        // whose name range overlaps its range: only those can replace its names.
        let needed: Vec<usize> = match entries {
            None => (0..keep.len()).collect(),
            Some(entries) => (0..entries.len())
                .filter(|&i| {
                    keep.get(i).copied().unwrap_or(true)
                        || entries.get(i).is_some_and(|newer| {
                            entries
                                .iter()
                                .zip(&keep)
                                .take(i)
                                .any(|(older, &k)| k && ranges_overlap(older, newer))
                        })
                })
                .collect(),
        };
        let opened: Vec<Member> = stream::iter(needed.iter().copied())
            .map(|i| self.open_member(i))
            .buffered(OPEN_CONCURRENCY)
            .try_collect()
            .await?;
        tracing::debug!(
            members = keep.len(),
            candidates = keep.iter().filter(|&&k| k).count(),
            opened = opened.len(),
            "set query: members skipped by their summaries and name ranges"
        );
        Ok(resolve(&opened)
            .into_iter()
            .zip(needed)
            .filter_map(|(v, i)| keep.get(i).copied().unwrap_or(true).then_some(v))
            .collect())
    }

    pub(super) fn member_ids(&self, index: usize) -> Option<(&str, &str)> {
        self.inner
            .members
            .get(index)
            .map(|m| (m.id.as_str(), m.path.as_str()))
    }
}

/// The rows `ask` returns for each view, asked concurrently, in view order.
async fn rows_of_each<'a, T, F>(views: &'a [View], ask: impl Fn(&'a View) -> F) -> Result<Vec<T>>
where
    F: std::future::Future<Output = Result<Vec<T>>> + 'a,
{
    let mut parts = futures::future::try_join_all(views.iter().map(ask)).await?;
    if parts.len() == 1 {
        // One view (a lone collection): its rows as they are, not copied.
        return Ok(parts.pop().unwrap_or_default());
    }
    Ok(parts.into_iter().flatten().collect())
}

/// Whether two members' name ranges can share a name (a member without a
/// range holds no dataset).
fn ranges_overlap(a: &MemberEntry, b: &MemberEntry) -> bool {
    match (&a.names, &b.names) {
        (Some(a), Some(b)) => a.overlaps(b),
        _ => false,
    }
}

/// The views of `opened` (commit order): walking newest first, each member
/// hides the names a newer member holds, deleted or not (a deleted name stays
/// deleted; an older copy never comes back).
fn resolve(opened: &[Member]) -> Vec<View> {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut views: Vec<View> = Vec::with_capacity(opened.len());
    for (older, member) in opened.iter().enumerate().rev() {
        let names = &member.footer().datasets;
        let replaced: Vec<u32> = if seen.is_empty() {
            Vec::new()
        } else {
            names
                .keys()
                .enumerate()
                .filter(|(_, name)| seen.contains(name.as_str()))
                .filter_map(|(i, _)| u32::try_from(i).ok())
                .collect()
        };
        views.push(View::new(member.clone(), replaced));
        if older > 0 {
            // Only older members can be replaced: the oldest's names need no hashing.
            seen.extend(names.keys().map(|n| n.as_str()));
        }
    }
    views.reverse();
    views
}

/// `batch` with a utf8 `member` column inserted after `name` (or first).
fn with_member_column(
    batch: &RecordBatch,
    ids: &[&str],
) -> std::result::Result<RecordBatch, arrow_schema::ArrowError> {
    let schema = batch.schema();
    let at = schema.index_of("name").map_or(0, |i| i.saturating_add(1));
    let mut fields: Vec<ArrowField> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
    let at = at.min(fields.len());
    fields.insert(at, ArrowField::new("member", DataType::Utf8, false));
    columns.insert(at, Arc::new(StringArray::from(ids.to_vec())));
    let schema = Schema::new(fields).with_metadata(schema.metadata().clone());
    RecordBatch::try_new(Arc::new(schema), columns)
}
