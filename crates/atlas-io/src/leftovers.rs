//! What interrupted writes leave behind, listed and removed: temp files of
//! atomic writes on local disk (`.atlas-tmp/` under the collection) and, on
//! S3, multipart uploads never completed nor aborted (see [`crate::uploads`]).
//!
//! A writer killed before its rename (local disk) or before completing its
//! upload (S3) leaves these; the collection is unaffected (the container or
//! mask was never replaced), but the space stays used, and on S3 billed,
//! until someone removes it. Nothing else ever reads them. Other backends
//! leave nothing to list: Azure's uncommitted blocks and GCS's resumable
//! sessions are discarded by the service after about a week.

use std::time::{Duration, SystemTime};

use futures::TryStreamExt;
use opendal::Operator;

use crate::error::IoError;
use crate::mask_store::ATOMIC_WRITE_DIR;
use crate::path::object_path;
use crate::uploads::{MultipartUploads, Upload};

/// What kind of leftover, and what removing it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeftoverKind {
    /// A temp file of an atomic write: removing it is a delete.
    TempFile {
        /// Its size in bytes.
        bytes: u64,
    },
    /// An S3 multipart upload never completed: removing it is an abort,
    /// which drops its parts.
    Upload {
        /// S3's id of the upload.
        upload_id: String,
    },
}

/// One thing an interrupted write left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Leftover {
    /// Its path (for an upload: the object it would have created), relative
    /// to the operator's root.
    pub path: String,
    /// What it is.
    pub kind: LeftoverKind,
    /// When it was last written (a temp file) or started (an upload), where
    /// the backend says; its age counts from here.
    pub since: Option<SystemTime>,
}

impl Leftover {
    /// Its size in bytes where known (temp files; an upload's parts are not listed).
    pub fn bytes(&self) -> Option<u64> {
        match &self.kind {
            LeftoverKind::TempFile { bytes } => Some(*bytes),
            LeftoverKind::Upload { .. } => None,
        }
    }

    /// Whether it is at least `older_than` old at `now` (one without a time never is).
    pub fn is_older_than(&self, older_than: Duration, now: SystemTime) -> bool {
        self.since
            .is_some_and(|t| now.duration_since(t).is_ok_and(|age| age >= older_than))
    }
}

impl std::fmt::Display for Leftover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            LeftoverKind::TempFile { bytes } => write!(f, "{} ({bytes} bytes)", self.path),
            LeftoverKind::Upload { upload_id } => {
                write!(f, "{} (multipart upload {upload_id})", self.path)
            }
        }
    }
}

/// The leftovers under `prefix`: temp files in its atomic-write directory,
/// and the incomplete multipart uploads of objects under it when `uploads`
/// is given (an S3 location's). Ordered by kind (temp files first), then path.
///
/// Cost: one listing of the atomic-write directory and a stat per file in it;
/// with `uploads`, one ListMultipartUploads request per 1000 uploads.
pub async fn list_leftovers(
    op: &Operator,
    prefix: &str,
    uploads: Option<&MultipartUploads>,
) -> Result<Vec<Leftover>, IoError> {
    let mut found = list_temp_files(op, prefix).await?;
    if let Some(uploads) = uploads {
        let under = object_path(prefix, "");
        found.extend(uploads.list(&under).await?.into_iter().map(|u| Leftover {
            path: u.path,
            kind: LeftoverKind::Upload {
                upload_id: u.upload_id,
            },
            since: u.initiated,
        }));
    }
    Ok(found)
}

/// Removes the leftovers at least `older_than` old at `now` (younger ones may
/// belong to a write in progress): deletes temp files, aborts uploads.
/// Returns those removed.
pub async fn remove_leftovers(
    op: &Operator,
    prefix: &str,
    uploads: Option<&MultipartUploads>,
    older_than: Duration,
    now: SystemTime,
) -> Result<Vec<Leftover>, IoError> {
    let mut removed = Vec::new();
    for leftover in list_leftovers(op, prefix, uploads).await? {
        if !leftover.is_older_than(older_than, now) {
            continue;
        }
        match (&leftover.kind, uploads) {
            (LeftoverKind::TempFile { .. }, _) => op
                .delete(&leftover.path)
                .await
                .map_err(|e| IoError::from_opendal(e, "delete", &leftover.path))?,
            (LeftoverKind::Upload { upload_id }, Some(uploads)) => {
                uploads
                    .abort(&Upload {
                        path: leftover.path.clone(),
                        upload_id: upload_id.clone(),
                        initiated: leftover.since,
                    })
                    .await?
            }
            // Listed only through `uploads`.
            (LeftoverKind::Upload { .. }, None) => continue,
        }
        removed.push(leftover);
    }
    Ok(removed)
}

/// Every entry under `dir`, recursively; `None` where there is nothing to
/// list: no such directory, or a backend that cannot list (plain HTTP, where
/// nothing is ever written).
///
/// # Errors
/// Any other failure to start the listing.
pub async fn list_recursive(op: &Operator, dir: &str) -> Result<Option<opendal::Lister>, IoError> {
    match op.lister_with(dir).recursive(true).await {
        Ok(l) => Ok(Some(l)),
        Err(e)
            if matches!(
                e.kind(),
                opendal::ErrorKind::NotFound | opendal::ErrorKind::Unsupported
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(IoError::from_opendal(e, "list", dir)),
    }
}

/// The temp files under `prefix`'s atomic-write directory (none where there is none).
async fn list_temp_files(op: &Operator, prefix: &str) -> Result<Vec<Leftover>, IoError> {
    let dir = object_path(prefix, &format!("{ATOMIC_WRITE_DIR}/"));
    let Some(mut lister) = list_recursive(op, &dir).await? else {
        return Ok(Vec::new());
    };
    let mut found = Vec::new();
    while let Some(entry) = lister
        .try_next()
        .await
        .map_err(|e| IoError::from_opendal(e, "list", &dir))?
    {
        if entry.metadata().is_dir() {
            continue;
        }
        let meta = match op.stat(entry.path()).await {
            Ok(m) => m,
            // Renamed away by a writer that finished meanwhile.
            Err(e) if e.kind() == opendal::ErrorKind::NotFound => continue,
            Err(e) => return Err(IoError::from_opendal(e, "stat", entry.path())),
        };
        found.push(Leftover {
            path: entry.path().to_owned(),
            kind: LeftoverKind::TempFile {
                bytes: meta.content_length(),
            },
            since: meta.last_modified().map(SystemTime::from),
        });
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}
