//! [`View`]: one member as its set sees it. A set hides, on top of each
//! member's deletion mask, the copies of names that a newer member holds
//! (replaced, or deleted there for good); this overlay lives here, not in the
//! member, so a [`Member`] always answers for its own container alone.

use std::sync::{Arc, Mutex};

use smol_str::SmolStr;

use crate::error::{AtlasError, Result};
use crate::read::{
    DatasetBlock, DatasetShape, DatasetStats, Live, Member, declared_array, declared_by,
};
use crate::{ArrayStats, Attr, Dataset};

/// A member with the ordinals newer members replace hidden. Cheap to clone;
/// clones share the cached name list.
#[derive(Clone)]
pub(crate) struct View {
    member: Member,
    /// Ordinals replaced by a newer member, ascending.
    hidden: Arc<[u32]>,
    /// The covered names, kept while the mask is unchanged: listing 30 000
    /// names again from the footer costs ten times copying a kept list.
    names: Arc<Mutex<Option<Names>>>,
}

/// The covered names as of a mask holding `stamp` ordinals. The mask only
/// grows while a handle is open (a delete adds, nothing removes), so its
/// length tells whether the list is still current.
struct Names {
    stamp: usize,
    // A Vec behind the Arc: the list built is kept without a second copy.
    names: Arc<Vec<SmolStr>>,
}

impl View {
    /// `member` with `hidden` (any order) left out of every answer.
    pub(crate) fn new(member: Member, mut hidden: Vec<u32>) -> View {
        hidden.sort_unstable();
        hidden.dedup();
        View {
            member,
            hidden: hidden.into(),
            names: Arc::default(),
        }
    }

    /// This view with `more` ordinals left out as well.
    pub(crate) fn hiding(&self, more: Vec<u32>) -> View {
        let mut hidden = more;
        hidden.extend_from_slice(&self.hidden);
        View::new(self.member.clone(), hidden)
    }

    /// The member behind the view.
    pub(crate) fn member(&self) -> &Member {
        &self.member
    }

    /// The datasets this view covers, as one snapshot of the member's mask.
    pub(crate) fn live(&self) -> Live {
        let mut live = self.member.live();
        live.hide(self.hidden.iter().copied());
        live
    }

    /// Whether `ordinal` is neither deleted nor replaced.
    pub(crate) fn is_live(&self, ordinal: u32) -> bool {
        self.member.is_live(ordinal) && self.hidden.binary_search(&ordinal).is_err()
    }

    /// Datasets covered.
    pub(crate) fn dataset_count(&self) -> usize {
        self.live().count()
    }

    /// Appends the names of the datasets covered, in ordinal order, to `out`.
    pub(crate) fn push_names(&self, out: &mut Vec<SmolStr>) {
        out.extend_from_slice(&self.names());
    }

    /// The covered names, from the kept list while the mask is unchanged.
    fn names(&self) -> Arc<Vec<SmolStr>> {
        // The stamp is read before the list is built, so a delete racing
        // with the build leaves a stale stamp and the next call rebuilds.
        let stamp = self.member.mask().mask.len();
        let mut kept = self.names.lock().unwrap_or_else(|e| e.into_inner());
        match kept.as_ref() {
            Some(k) if k.stamp == stamp => Arc::clone(&k.names),
            _ => {
                let mut names = Vec::new();
                self.member.push_names(&self.live(), &mut names);
                let names = Arc::new(names);
                *kept = Some(Names {
                    stamp,
                    names: Arc::clone(&names),
                });
                names
            }
        }
    }

    /// Appends handles of the datasets covered, in ordinal order, to `out`.
    pub(crate) fn push_datasets(&self, out: &mut Vec<Dataset>) {
        self.member.push_datasets(&self.live(), out);
    }

    /// Handles of the datasets covered, in ordinal order.
    pub(crate) fn datasets(&self) -> Vec<Dataset> {
        let mut out = Vec::new();
        self.push_datasets(&mut out);
        out
    }

    /// The distinct schemas (pool indexes) of the datasets covered, in order
    /// of first use: read off the footer, no dataset handle made.
    pub(crate) fn live_schemas(&self) -> Vec<u32> {
        let footer = self.member.footer();
        let mut seen = vec![false; footer.schema_pool.len()];
        let mut schemas = Vec::new();
        for ordinal in self.live().ordinals() {
            if let Some((_, &schema)) = footer.datasets.get_index(ordinal as usize)
                && let Some(slot) = seen.get_mut(schema as usize)
                && !std::mem::replace(slot, true)
            {
                schemas.push(schema);
            }
        }
        schemas
    }

    /// Whether a dataset this view covers declares `array`: stops at the first.
    pub(crate) fn declares_array(&self, array: &str) -> bool {
        let footer = self.member.footer();
        let declaring = declared_array(footer, array);
        if declaring.iter().all(Option::is_none) {
            return false;
        }
        self.live()
            .ordinals()
            .any(|o| declared_by(footer, &declaring, o).is_some())
    }

    /// The ordinal of `name` if this view covers it.
    fn ordinal_of(&self, name: &str) -> Option<u32> {
        self.member
            .footer()
            .datasets
            .get_index_of(name)
            .and_then(|i| u32::try_from(i).ok())
            .filter(|&o| self.is_live(o))
    }

    /// Whether this view covers a dataset called `name`.
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.ordinal_of(name).is_some()
    }

    /// The dataset called `name`.
    ///
    /// # Errors
    /// [`AtlasError::DatasetNotFound`] unless this view covers it.
    pub(crate) fn dataset(&self, name: &str) -> Result<Dataset> {
        match self.ordinal_of(name) {
            Some(_) => self.member.dataset(name),
            None => Err(AtlasError::DatasetNotFound {
                name: name.to_owned(),
            }),
        }
    }

    /// See [`Atlas::array_stats`](crate::Atlas::array_stats).
    pub(crate) async fn array_stats(&self, array: &str) -> Result<Option<ArrayStats>> {
        self.member.array_stats(&self.live(), array).await
    }

    /// See [`Atlas::array_stats_by_dataset`](crate::Atlas::array_stats_by_dataset).
    pub(crate) async fn array_stats_by_dataset(&self, array: &str) -> Result<Vec<DatasetStats>> {
        self.member
            .array_stats_by_dataset(&self.live(), array)
            .await
    }

    /// See [`Atlas::array_blocks_by_dataset`](crate::Atlas::array_blocks_by_dataset).
    pub(crate) async fn array_blocks_by_dataset(&self, array: &str) -> Result<Vec<DatasetBlock>> {
        self.member
            .array_blocks_by_dataset(&self.live(), array)
            .await
    }

    /// See [`Atlas::array_shapes_by_dataset`](crate::Atlas::array_shapes_by_dataset).
    pub(crate) async fn array_shapes_by_dataset(&self, array: &str) -> Result<Vec<DatasetShape>> {
        self.member
            .array_shapes_by_dataset(&self.live(), array)
            .await
    }

    /// See [`Atlas::attributes_by_dataset`](crate::Atlas::attributes_by_dataset).
    pub(crate) async fn attributes_by_dataset(
        &self,
        array: Option<&str>,
        key: &str,
    ) -> Result<Vec<(SmolStr, Attr)>> {
        self.member
            .attributes_by_dataset(&self.live(), array, key)
            .await
    }
}
