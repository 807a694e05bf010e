//! [`Member::verify`]: read everything a reader relies on and list what is wrong.
//!
//! What is checked, in order:
//! 1. the container's trailer and footer (already validated by the open);
//! 2. every data segment opens (its footer validated and read in place);
//! 3. for each live dataset and each array it declares: the segment holds the
//!    array with the footer's dtype, the whole array reads (every block of it
//!    decompresses), and the dataset's and the array's attributes read back;
//! 4. the deletion mask parses (what it had wrong is a warning, not a failure);
//! 5. what interrupted writes left beside the collection (temp files and,
//!    opened from an S3 URL or given [`VerifyOptions::multipart_uploads`],
//!    S3's incomplete multipart uploads) is listed, as warnings: it costs
//!    space, not soundness.
//!
//! With [`VerifyOptions::deep`], each array's statistics are also recomputed
//! from its values and compared with the recorded ones, and, when the
//! collection has a checksum sidecar (`data.atlas.crc32c`, written by
//! [`Member::write_checksums`]), the CRC32C of every part of the container and
//! of the mask is recomputed and compared with it.
//!
//! What it cannot see without a sidecar: the v8 container stores no
//! checksums, so a damaged byte that still decodes (inside a block's payload,
//! a statistic, an attribute value, a fill value) reads back as a different
//! value without any error; the deep check catches it only where values and
//! statistics then disagree.

use std::sync::Arc;

use atlas_format::{DATASETS_SEGMENT, DType};
use atlas_io::{Leftover, MultipartUploads};
use futures::StreamExt;

use crate::error::AtlasError;
use crate::read::Source;
use crate::recompute;
use crate::set::integrity::ChecksumMismatch;
use crate::{AnyArray, Dataset, Member, Region};

/// Datasets checked at once by default.
const DEFAULT_CONCURRENCY: usize = 8;

/// Called with the number of datasets checked so far (for a progress bar).
pub type ProgressFn = Arc<dyn Fn(u64) + Send + Sync>;

/// How [`Member::verify`] runs.
#[derive(Clone)]
#[non_exhaustive]
pub struct VerifyOptions {
    concurrency: usize,
    progress: Option<ProgressFn>,
    deep: bool,
    uploads: Option<MultipartUploads>,
}

impl std::fmt::Debug for VerifyOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifyOptions")
            .field("concurrency", &self.concurrency)
            .field("progress", &self.progress.is_some())
            .field("deep", &self.deep)
            .field("uploads", &self.uploads)
            .finish()
    }
}

impl Default for VerifyOptions {
    /// Eight datasets at once, no progress callback, not deep, no multipart uploads listed.
    fn default() -> Self {
        Self {
            concurrency: DEFAULT_CONCURRENCY,
            progress: None,
            deep: false,
            uploads: None,
        }
    }
}

impl VerifyOptions {
    /// The defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Datasets checked at once (at least 1).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// Also recompute every array's statistics (count, nulls, min, max) from
    /// its values and compare them with the recorded ones: catches damage
    /// that still decodes, in the values or in the statistics. Costs no
    /// extra request (the values are read anyway), only CPU. When the
    /// collection has a checksum sidecar, also compare the CRC32C of every
    /// part of it with the sidecar's: one more read of the whole container.
    pub fn deep(mut self, yes: bool) -> Self {
        self.deep = yes;
        self
    }

    /// Also list the incomplete multipart uploads under the collection (an S3
    /// location's, from [`Location::multipart_uploads`](crate::Location::multipart_uploads)):
    /// one more request per 1000 uploads. A collection opened from an `s3://`
    /// URL lists its own without this; one opened from an operator the caller
    /// built has no other way to list them.
    pub fn multipart_uploads(mut self, uploads: MultipartUploads) -> Self {
        self.uploads = Some(uploads);
        self
    }

    /// A callback told how many datasets have been checked, after each one.
    pub fn on_progress(mut self, f: impl Fn(u64) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(f));
        self
    }
}

/// One thing `verify` found wrong (or, for [`Finding::MaskWarning`], tolerated).
#[derive(Debug)]
#[non_exhaustive]
pub enum Finding {
    /// A data segment does not open: its footer is damaged or unreadable.
    Segment {
        /// The variable.
        segment: String,
        /// Offset of the segment in the container.
        offset: u64,
        /// Length of the segment.
        len: u64,
        /// Why it does not open.
        error: AtlasError,
    },
    /// A live dataset's attributes do not read back.
    DatasetAttributes {
        /// The dataset.
        dataset: String,
        /// Why.
        error: AtlasError,
    },
    /// An array of a live dataset is missing, damaged, or does not read whole.
    Array {
        /// The dataset.
        dataset: String,
        /// The array.
        array: String,
        /// Why.
        error: AtlasError,
    },
    /// The segment holds the array with another element type than the footer declares.
    DTypeDisagrees {
        /// The dataset.
        dataset: String,
        /// The array.
        array: String,
        /// The footer's dtype.
        declared: DType,
        /// The segment's dtype.
        stored: DType,
    },
    /// An array's attributes do not read back.
    ArrayAttributes {
        /// The dataset.
        dataset: String,
        /// The array.
        array: String,
        /// Why.
        error: AtlasError,
    },
    /// `verify --deep`: the statistics recorded for an array disagree with
    /// its values (one of the two is damaged).
    StatisticsDisagree {
        /// The dataset.
        dataset: String,
        /// The array.
        array: String,
        /// How they disagree.
        what: String,
    },
    /// `verify --deep`: a part of the collection whose CRC32C is not the one
    /// its checksum sidecar records (its bytes changed since `atlas checksum`).
    ChecksumMismatch {
        /// Which part, and both checksums.
        mismatch: ChecksumMismatch,
    },
    /// `verify --deep`: the checksum sidecar exists but could not be read or
    /// decoded, or the parts it covers could not be read.
    Checksums {
        /// Why.
        error: AtlasError,
    },
    /// The deletion mask had something wrong that the reader tolerates
    /// (an ordinal out of range, a truncated body): a warning.
    MaskWarning {
        /// What was wrong.
        message: String,
    },
    /// Something an interrupted write left beside the collection (a temp
    /// file, an S3 multipart upload): a warning; `atlas cleanup` removes it.
    Leftover {
        /// What and where.
        leftover: Leftover,
    },
    /// The leftovers could not be listed (e.g. the credentials may not list
    /// multipart uploads): a warning.
    LeftoversUnlisted {
        /// Why.
        error: AtlasError,
    },
    /// The dataset index beside the container is not used (it describes
    /// another container, or is not a readable index): a warning, since
    /// readers answer from the footers; `atlas index` writes a new one.
    IndexNotUsed {
        /// Why.
        why: String,
    },
    /// The dataset index disagrees with the segment footers it was built
    /// from: readers would give answers the footers do not.
    IndexDisagrees {
        /// Where, and both values.
        what: String,
    },
}

impl Finding {
    /// Whether this finding makes the collection unsound (all but the warnings:
    /// mask warnings and leftovers).
    pub fn is_problem(&self) -> bool {
        !matches!(
            self,
            Finding::MaskWarning { .. }
                | Finding::Leftover { .. }
                | Finding::LeftoversUnlisted { .. }
                | Finding::IndexNotUsed { .. }
        )
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Finding::Segment {
                segment,
                offset,
                len,
                error,
            } => write!(
                f,
                "segment {segment:?} ({len} bytes at {offset}): {}",
                crate::ErrorReport::new(error)
            ),
            Finding::DatasetAttributes { dataset, error } => {
                write!(
                    f,
                    "dataset {dataset:?}: attributes: {}",
                    crate::ErrorReport::new(error)
                )
            }
            Finding::Array {
                dataset,
                array,
                error,
            } => write!(
                f,
                "dataset {dataset:?} array {array:?}: {}",
                crate::ErrorReport::new(error)
            ),
            Finding::DTypeDisagrees {
                dataset,
                array,
                declared,
                stored,
            } => write!(
                f,
                "dataset {dataset:?} array {array:?}: the footer declares {declared}, the segment holds {stored}"
            ),
            Finding::ArrayAttributes {
                dataset,
                array,
                error,
            } => write!(
                f,
                "dataset {dataset:?} array {array:?}: attributes: {}",
                crate::ErrorReport::new(error)
            ),
            Finding::StatisticsDisagree {
                dataset,
                array,
                what,
            } => write!(f, "dataset {dataset:?} array {array:?}: {what}"),
            Finding::ChecksumMismatch { mismatch } => write!(f, "checksums: {mismatch}"),
            Finding::Checksums { error } => {
                write!(f, "checksum sidecar: {}", crate::ErrorReport::new(error))
            }
            Finding::MaskWarning { message } => write!(f, "deletion mask: {message}"),
            Finding::IndexNotUsed { why } => {
                write!(
                    f,
                    "dataset index: not used, answers come from the footers: {why}"
                )
            }
            Finding::IndexDisagrees { what } => {
                write!(f, "dataset index: disagrees with the footers: {what}")
            }
            Finding::Leftover { leftover } => write!(
                f,
                "leftover {leftover} from an interrupted write; `atlas cleanup` removes it"
            ),
            Finding::LeftoversUnlisted { error } => {
                write!(
                    f,
                    "leftovers of interrupted writes not listed: {}",
                    crate::ErrorReport::new(error)
                )
            }
        }
    }
}

/// What was checked: the counts behind a clean report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Checked {
    /// Segments in the container, `_datasets` included.
    pub variables: usize,
    /// Data segments (all but `_datasets`).
    pub data_segments: usize,
    /// Data segments that opened.
    pub segments_opened: usize,
    /// Live datasets checked.
    pub datasets: usize,
    /// Arrays checked across those datasets.
    pub arrays: usize,
    /// Elements read back.
    pub elements: u64,
    /// Datasets the mask hides.
    pub hidden: usize,
    /// `verify --deep` with a checksum sidecar: the parts whose checksums
    /// were compared (header, footer, segments, mask); `None` without one.
    pub checksum_parts: Option<usize>,
    /// Whether a dataset index was found, used and compared with the footers.
    pub index: bool,
}

/// The outcome of [`Member::verify`].
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct VerifyReport {
    /// Everything found, problems and warnings, in the order checked.
    pub findings: Vec<Finding>,
    /// What was checked.
    pub checked: Checked,
}

impl VerifyReport {
    /// No problem found (mask warnings allowed).
    pub fn is_sound(&self) -> bool {
        self.problems().next().is_none()
    }

    /// The findings that make the collection unsound.
    pub fn problems(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.is_problem())
    }

    /// The tolerated findings.
    pub fn warnings(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| !f.is_problem())
    }
}

impl Member {
    /// Reads every segment footer, every array of every live dataset (so every
    /// block of them decompresses) and every attribute, and reports what is
    /// wrong. Never fails: what it cannot read is a [`Finding`].
    ///
    /// Cost: one open per segment, then every block of every live array once
    /// (the whole container's data, in ranged reads); then one listing of the
    /// atomic-write directory (a stat per temp file in it) and, on S3 (opened
    /// from its URL, or given [`VerifyOptions::multipart_uploads`]), one
    /// ListMultipartUploads request per 1000 uploads.
    pub async fn verify(&self, options: &VerifyOptions) -> VerifyReport {
        let mut report = VerifyReport::default();
        let variables = self.segments();
        report.checked.variables = variables.len();
        let live = self.live();
        for v in variables.iter().filter(|v| v.name != DATASETS_SEGMENT) {
            report.checked.data_segments += 1;
            // One statistics pass opens the segment (validates its footer, read in place).
            match self
                .array_stats_by_dataset_from(&live, &v.name, Source::Footers)
                .await
            {
                Ok(_) => report.checked.segments_opened += 1,
                Err(error) => report.findings.push(Finding::Segment {
                    segment: v.name.clone(),
                    offset: v.offset,
                    len: v.len,
                    error,
                }),
            }
        }

        let mut checks = futures::stream::iter(self.datasets())
            .map(|view| async move { check_dataset(&view, options.deep).await })
            .buffered(options.concurrency);
        while let Some(c) = checks.next().await {
            report.checked.datasets += 1;
            report.checked.arrays += c.arrays;
            report.checked.elements = report.checked.elements.saturating_add(c.elements);
            report.findings.extend(c.findings);
            if let Some(progress) = &options.progress {
                progress(report.checked.datasets as u64);
            }
        }

        if options.deep {
            match self.check_sidecar().await {
                Ok(None) => {}
                Ok(Some((parts, mismatches))) => {
                    report.checked.checksum_parts = Some(parts);
                    report.findings.extend(
                        mismatches
                            .into_iter()
                            .map(|mismatch| Finding::ChecksumMismatch { mismatch }),
                    );
                }
                Err(error) => report.findings.push(Finding::Checksums { error }),
            }
        }

        match crate::index::check(self).await {
            None => {}
            Some(Err(why)) => report.findings.push(Finding::IndexNotUsed { why }),
            Some(Ok(disagreements)) => {
                report.checked.index = true;
                report.findings.extend(
                    disagreements
                        .into_iter()
                        .map(|what| Finding::IndexDisagrees { what }),
                );
            }
        }

        report.checked.hidden = self
            .dataset_count_total()
            .saturating_sub(self.dataset_count());
        report.findings.extend(
            self.mask_warnings()
                .into_iter()
                .map(|message| Finding::MaskWarning { message }),
        );
        report.findings.extend(
            leftover_findings(
                &self.inner().op,
                &self.inner().prefix,
                options.uploads.as_ref().or(self.inner().uploads.as_ref()),
            )
            .await,
        );
        report
    }
}

/// What [`Member::verify`] reports of the leftovers under `prefix` of `op`
/// (temp files, and the multipart uploads of `uploads`): one warning each, or
/// one warning saying they could not be listed. For a location holding no
/// collection that opens, where `verify` cannot run.
pub async fn leftover_findings(
    op: &opendal::Operator,
    prefix: &str,
    uploads: Option<&MultipartUploads>,
) -> Vec<Finding> {
    match atlas_io::list_leftovers(op, prefix, uploads).await {
        Ok(leftovers) => leftovers
            .into_iter()
            .map(|leftover| Finding::Leftover { leftover })
            .collect(),
        Err(e) => vec![Finding::LeftoversUnlisted {
            error: AtlasError::Io(e),
        }],
    }
}

/// What checking one dataset found.
#[derive(Default)]
struct DatasetCheck {
    findings: Vec<Finding>,
    arrays: usize,
    elements: u64,
}

async fn check_dataset(view: &Dataset, deep: bool) -> DatasetCheck {
    let mut c = DatasetCheck::default();
    let dataset = view.name().to_owned();
    let schema = view.schema();
    if schema.has_attributes()
        && let Err(error) = view.attributes().await
    {
        c.findings.push(Finding::DatasetAttributes {
            dataset: dataset.clone(),
            error,
        });
    }
    for meta in schema.arrays() {
        let array = meta.name().to_owned();
        c.arrays += 1;
        let layout = match view.array_layout(&array).await {
            Ok(l) => l,
            Err(error) => {
                c.findings.push(Finding::Array {
                    dataset: dataset.clone(),
                    array,
                    error,
                });
                continue;
            }
        };
        if layout.dtype != *meta.dtype() {
            c.findings.push(Finding::DTypeDisagrees {
                dataset: dataset.clone(),
                array,
                declared: meta.dtype().clone(),
                stored: layout.dtype,
            });
            continue;
        }
        match view.read_any(&array, Region::all()).await {
            Ok(whole) => {
                c.elements = c.elements.saturating_add(whole.data().len() as u64);
                if deep && let Some(what) = statistics_problem(view, &array, &whole).await {
                    c.findings.push(Finding::StatisticsDisagree {
                        dataset: dataset.clone(),
                        array: array.clone(),
                        what,
                    });
                }
            }
            Err(error) => c.findings.push(Finding::Array {
                dataset: dataset.clone(),
                array: array.clone(),
                error,
            }),
        }
        if meta.attributes().next().is_some()
            && let Err(error) = view.array_attributes(&array).await
        {
            c.findings.push(Finding::ArrayAttributes {
                dataset: dataset.clone(),
                array,
                error,
            });
        }
    }
    c
}

/// What is wrong with the recorded statistics of `array` given its values.
async fn statistics_problem(view: &Dataset, array: &str, whole: &AnyArray) -> Option<String> {
    match view.array_stats(array).await {
        Err(e) => Some(format!(
            "statistics do not read: {}",
            crate::ErrorReport::new(&e)
        )),
        // A segment from a writer that records none: nothing to compare.
        Ok(None) => None,
        Ok(Some(recorded)) => recompute::disagreement(&recompute::recompute(whole), &recorded),
    }
}
