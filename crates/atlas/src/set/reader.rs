//! [`AtlasSet`]: a collection set opened for reading (and deleting), or a
//! lone collection seen as a set of one.
//!
//! Opening reads the manifest and nothing else. Members open on first use,
//! concurrently, each with one tail read as a lone collection would. Every
//! question is answered by the members' *views*: each member with the copies
//! a newer member replaces hidden, as if deleted. A question over the whole
//! set opens every member; a query first skips the members whose manifest
//! summaries rule it out.

use std::collections::HashSet;
use std::sync::{Arc, RwLock};

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field as ArrowField, Schema};
use atlas_format::{MemberEntry, SET_MANIFEST_FILE, SetManifest};
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use tokio::sync::OnceCell;

use super::manifest_store::read_manifest;
use super::prune::may_match;
use crate::error::{AtlasError, Result};
use crate::location::{Access, Address, Location};
use crate::query::{
    CatalogueOptions, Declared, Plan, Predicate, QueryError, TableOptions, TableStream,
    catalogue_with, ruled_out, select_with, table_with,
};
use crate::read::{Atlas, Dataset, DatasetStats, OpenOptions, Order, Region};
use crate::{AnyArray, ArrayStats, Attr};

/// Members opened at once when a question needs all of them.
const OPEN_CONCURRENCY: usize = 32;

/// A collection set opened for reading: many collections read as one.
///
/// Also opens a lone collection, as a set of one member, so code written
/// against `AtlasSet` reads either. Cloning is cheap; clones share members,
/// segments and caches.
#[derive(Clone)]
pub struct AtlasSet {
    inner: Arc<SetInner>,
}

struct SetInner {
    location: Location,
    manifest_path: String,
    /// `None`: a lone collection.
    manifest: RwLock<Option<SetManifest>>,
    /// Commit order, oldest first.
    members: Vec<Member>,
    options: OpenOptions,
    /// Every member open, with replaced copies hidden; computed once.
    views: OnceCell<Vec<Atlas>>,
    /// Deletes through one handle run one at a time.
    pub(super) write_lock: tokio::sync::Mutex<()>,
}

struct Member {
    id: String,
    path: String,
    /// Datasets the manifest says the member's container holds.
    datasets_total: Option<u64>,
    opened: OnceCell<Atlas>,
}

impl std::fmt::Debug for AtlasSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AtlasSet")
            .field("location", &self.inner.location.display())
            .field("members", &self.inner.members.len())
            .field("is_set", &self.is_set())
            .finish_non_exhaustive()
    }
}

impl AtlasSet {
    /// Opens the set at `address` (any address [`Atlas::open`] takes): one
    /// read of its `set.manifest`. Where there is no manifest, the prefix is
    /// opened as a lone collection (a set of one), which costs what
    /// [`Atlas::open`] costs after that first read.
    ///
    /// # Errors
    /// [`AtlasError::SetManifest`] for a manifest that is damaged or of a set
    /// version this library does not read; what [`Atlas::open`] returns for
    /// a lone collection; [`AtlasError::InvalidLocation`], [`AtlasError::Io`].
    pub async fn open(address: impl Into<Address>, options: &OpenOptions) -> Result<AtlasSet> {
        let location = address
            .into()
            .resolve(&options.storage, Access::Read)
            .await?;
        let manifest_path = location.object(SET_MANIFEST_FILE);
        let manifest = read_manifest(location.operator(), &manifest_path, &options.limits).await?;
        let members = match &manifest {
            Some(manifest) => manifest
                .members
                .iter()
                .map(|entry| Member {
                    id: entry.id.clone(),
                    path: entry.path.clone(),
                    datasets_total: Some(entry.datasets_total),
                    opened: OnceCell::new(),
                })
                .collect(),
            None => {
                let atlas = Atlas::open_location(location.clone(), options).await?;
                vec![Member {
                    id: String::new(),
                    path: String::new(),
                    datasets_total: None,
                    opened: OnceCell::new_with(Some(atlas)),
                }]
            }
        };
        Ok(AtlasSet {
            inner: Arc::new(SetInner {
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

    /// The committed members, oldest commit first, as the manifest describes
    /// them (no request); empty for a lone collection.
    pub fn members(&self) -> Vec<MemberEntry> {
        self.manifest().map(|m| m.members).unwrap_or_default()
    }

    /// Where the set is.
    pub fn location(&self) -> &Location {
        &self.inner.location
    }

    /// Members opened so far (a lone collection's one is open from the start).
    pub fn members_opened(&self) -> usize {
        self.inner
            .members
            .iter()
            .filter(|m| m.opened.initialized())
            .count()
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
    async fn open_member(&self, index: usize) -> Result<Atlas> {
        let member = self
            .inner
            .members
            .get(index)
            .ok_or_else(|| AtlasError::invalid_use(format!("no member at {index}")))?;
        member
            .opened
            .get_or_try_init(|| async {
                let location = self.inner.location.child(&member.path, Access::Read)?;
                let atlas = Atlas::open_location(location, &self.inner.options).await?;
                if let Some(expected) = member.datasets_total
                    && u64::try_from(atlas.dataset_count_total()).ok() != Some(expected)
                {
                    return Err(AtlasError::corrupt(format!(
                        "the manifest says the member holds {expected} datasets, its container {}",
                        atlas.dataset_count_total()
                    )));
                }
                Ok(atlas)
            })
            .await
            .cloned()
            .map_err(|e| e.in_member(&member.id, &self.member_display(member)))
    }

    fn member_display(&self, member: &Member) -> String {
        atlas_io::object_path(self.inner.location.display(), &member.path)
    }

    /// The member with id `id`, opened on first use, as a collection of its
    /// own (copies that newer members replace are not hidden).
    ///
    /// # Errors
    /// [`AtlasError::InvalidUse`] for an id the manifest does not name;
    /// [`AtlasError::Member`] when the member cannot be opened.
    pub async fn member(&self, id: &str) -> Result<Atlas> {
        let index = self
            .inner
            .members
            .iter()
            .position(|m| m.id == id)
            .filter(|_| self.is_set())
            .ok_or_else(|| AtlasError::invalid_use(format!("the set has no member {id:?}")))?;
        self.open_member(index).await
    }

    /// Opens members `from..` (commit order) concurrently and returns their
    /// views, each with the names a newer member holds hidden.
    async fn views_from(&self, from: usize) -> Result<Vec<Atlas>> {
        let opened: Vec<Atlas> = stream::iter(from..self.inner.members.len())
            .map(|i| self.open_member(i))
            .buffered(OPEN_CONCURRENCY)
            .try_collect()
            .await?;
        Ok(resolve(&opened))
    }

    /// Every member's view, oldest commit first: each member with the copies
    /// a newer member replaces hidden. Opens the members not yet open.
    ///
    /// These are the set: any [`Atlas`] question asked of each view and
    /// combined answers it for the whole set.
    ///
    /// # Errors
    /// [`AtlasError::Member`] when a member cannot be opened.
    pub async fn collections(&self) -> Result<Vec<Atlas>> {
        self.inner
            .views
            .get_or_try_init(|| self.views_from(0))
            .await
            .cloned()
    }

    /// Live datasets over all members.
    ///
    /// # Errors
    /// As [`collections`](Self::collections).
    pub async fn dataset_count(&self) -> Result<usize> {
        Ok(self
            .collections()
            .await?
            .iter()
            .map(Atlas::dataset_count)
            .sum())
    }

    /// Names of the live datasets: members oldest commit first, each in
    /// ordinal order; a replaced name is listed once, where its live copy is.
    ///
    /// # Errors
    /// As [`collections`](Self::collections).
    pub async fn dataset_names(&self) -> Result<Vec<String>> {
        Ok(self
            .collections()
            .await?
            .iter()
            .flat_map(|v| v.dataset_names().into_iter().map(str::to_owned))
            .collect())
    }

    /// Handles of the live datasets, in [`dataset_names`](Self::dataset_names) order.
    ///
    /// # Errors
    /// As [`collections`](Self::collections).
    pub async fn datasets(&self) -> Result<Vec<Dataset>> {
        Ok(self
            .collections()
            .await?
            .iter()
            .flat_map(Atlas::datasets)
            .collect())
    }

    /// Whether a live dataset has this name.
    ///
    /// # Errors
    /// As [`collections`](Self::collections).
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
    /// [`AtlasError::DatasetNotFound`]; as [`collections`](Self::collections).
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
            // A lone collection: its one member is open.
            let views = self.collections().await?;
            return views
                .iter()
                .find(|v| v.contains(name))
                .map(|v| v.dataset(name))
                .transpose();
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
    /// As [`collections`](Self::collections).
    pub async fn array_names(&self) -> Result<Vec<String>> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for view in self.collections().await? {
            for name in view.array_names() {
                if seen.insert(name.to_owned()) {
                    out.push(name.to_owned());
                }
            }
        }
        Ok(out)
    }

    /// Statistics of `array` over every live dataset of the set (see
    /// [`Atlas::array_stats`]); one segment-footer read per member holding it.
    ///
    /// # Errors
    /// As [`Atlas::array_stats`], in a member.
    pub async fn array_stats(&self, array: &str) -> Result<Option<ArrayStats>> {
        let views = self.views_declaring(array).await?;
        let parts =
            futures::future::try_join_all(views.iter().map(|v| v.array_stats(array))).await?;
        let mut folded: Option<ArrayStats> = None;
        for stats in parts.into_iter().flatten() {
            match folded.as_mut() {
                Some(acc) => acc.merge(&stats),
                None => folded = Some(stats),
            }
        }
        Ok(folded)
    }

    /// Each live dataset's statistics of `array`, members oldest commit first
    /// (ordinals are within each member).
    ///
    /// # Errors
    /// As [`Atlas::array_stats_by_dataset`], in a member.
    pub async fn array_stats_by_dataset(&self, array: &str) -> Result<Vec<DatasetStats>> {
        let views = self.views_declaring(array).await?;
        let parts =
            futures::future::try_join_all(views.iter().map(|v| v.array_stats_by_dataset(array)))
                .await?;
        Ok(parts.into_iter().flatten().collect())
    }

    /// Attribute `key` of every live dataset that declares it (dataset-level
    /// when `array` is `None`), members oldest commit first.
    ///
    /// # Errors
    /// As [`Atlas::attributes_by_dataset`], in a member.
    pub async fn attributes_by_dataset(
        &self,
        array: Option<&str>,
        key: &str,
    ) -> Result<Vec<(String, Attr)>> {
        let views = match array {
            Some(array) => self.views_declaring(array).await?,
            None => self.collections().await?,
        };
        let parts = futures::future::try_join_all(
            views.iter().map(|v| v.attributes_by_dataset(array, key)),
        )
        .await?;
        Ok(parts.into_iter().flatten().collect())
    }

    /// The views whose datasets declare `array`; `ArrayNotFound` when none does.
    async fn views_declaring(&self, array: &str) -> Result<Vec<Atlas>> {
        let views: Vec<Atlas> = self
            .collections()
            .await?
            .into_iter()
            .filter(|v| Declared::of(std::slice::from_ref(v)).has_array(array))
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
    /// set, of any members), as [`Atlas::read_many`] does for one collection.
    pub fn read_many(
        &self,
        datasets: impl IntoIterator<Item = Dataset>,
        array: &str,
        region: Region,
        concurrency: usize,
        order: Order,
    ) -> BoxStream<'static, (String, Result<AnyArray>)> {
        crate::read::read_many(
            datasets.into_iter().collect(),
            array,
            region,
            concurrency,
            order,
        )
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
    /// As [`Atlas::select`].
    pub async fn select(&self, predicate: &Predicate) -> Result<Vec<String>, QueryError> {
        let views = self.candidate_views(Some(predicate)).await?;
        if views.is_empty() {
            // Every member ruled out by its summaries: nothing was opened to check names against.
            return Ok(Vec::new());
        }
        let plan = Plan::new(&views, &Declared::of(&views), predicate)?;
        select_with(&views, &plan).await
    }

    /// The catalogue of the set (see [`Atlas::catalogue`]), with a `member`
    /// column (utf8, the member id; empty for a lone collection) after `name`.
    /// A predicate skips members as [`select`](Self::select) does.
    ///
    /// # Errors
    /// As [`Atlas::catalogue`].
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
        let ids: Vec<&str> = rows
            .iter()
            .map(|ds| self.member_id_of(ds.atlas()))
            .collect();
        with_member_column(&batch, &ids).map_err(QueryError::Arrow)
    }

    /// The long table of the set (see [`Atlas::table`]), datasets in
    /// [`dataset_names`](Self::dataset_names) order. A predicate skips members
    /// as [`select`](Self::select) does; when it rules out every member the
    /// table is empty: `dataset`, the arrays typed as the manifest summarises
    /// them and the attributes typed null, no index column.
    ///
    /// # Errors
    /// As [`Atlas::table`].
    pub async fn table(&self, options: &TableOptions) -> Result<TableStream, QueryError> {
        let views = self.candidate_views(options.predicate_ref()).await?;
        if views.is_empty() && options.predicate_ref().is_some() {
            return ruled_out(options, &self.members());
        }
        table_with(views, options).await
    }

    /// The id of the member `atlas` is a view of ("" if none).
    fn member_id_of(&self, atlas: &Atlas) -> &str {
        self.inner
            .members
            .iter()
            .find(|m| m.opened.get().is_some_and(|o| o.same_collection(atlas)))
            .map_or("", |m| m.id.as_str())
    }

    /// The views of the members `predicate` may match (every member without
    /// one), with the names newer members hold hidden.
    async fn candidate_views(&self, predicate: Option<&Predicate>) -> Result<Vec<Atlas>> {
        let Some(predicate) = predicate else {
            return self.collections().await;
        };
        let manifest = self.manifest();
        let entries = manifest.as_ref().map(|m| m.members.as_slice());
        let keep: Vec<bool> = match entries {
            Some(entries) => entries.iter().map(|e| may_match(e, predicate)).collect(),
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
        let opened: Vec<Atlas> = stream::iter(needed.iter().copied())
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
fn resolve(opened: &[Atlas]) -> Vec<Atlas> {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut views: Vec<Atlas> = Vec::with_capacity(opened.len());
    for atlas in opened.iter().rev() {
        let names = &atlas.footer().datasets;
        let shadowed: HashSet<u32> = names
            .keys()
            .enumerate()
            .filter(|(_, name)| seen.contains(name.as_str()))
            .filter_map(|(i, _)| u32::try_from(i).ok())
            .collect();
        views.push(atlas.with_shadowed(shadowed));
        seen.extend(names.keys().map(|n| n.as_str()));
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
