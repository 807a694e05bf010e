//! Local directories: a bare path or `file://`.

use std::path::{Path, PathBuf};

use atlas_format::CONTAINER_FILE;
use atlas_io::{IoError, IoErrorKind};
use opendal::Operator;

use super::{Access, invalid};
use crate::error::{AtlasError, Result};

/// The operator of a local collection directory, and the directory (canonical).
pub(super) fn operator(path: &Path, access: Access, location: &str) -> Result<(Operator, PathBuf)> {
    let dir = local_dir_of(path, access, location)?;
    let op = match access {
        // Opening creates nothing on disk.
        Access::Read => {
            let builder = opendal::services::Fs::default().root(&dir.to_string_lossy());
            Operator::new(builder).map_err(|e| IoError::from_opendal(e, "open", location))?
        }
        // Every write goes through a temp file and a rename: a writer
        // killed half-way leaves no container that opens.
        Access::Write => atlas_io::fs_operator(&dir)?,
    };
    Ok((op, dir))
}

/// The directory of a local collection. A path naming `data.atlas` itself means its directory.
fn local_dir_of(path: &Path, access: Access, location: &str) -> Result<PathBuf> {
    if path.as_os_str().is_empty() {
        return Err(invalid(location, "empty collection path"));
    }
    let mut dir = path.to_path_buf();
    if dir.file_name().is_some_and(|n| n == CONTAINER_FILE) && !dir.is_dir() {
        dir = dir
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    }
    let io = |e: std::io::Error, operation: &'static str| {
        let kind = match e.kind() {
            std::io::ErrorKind::NotFound => IoErrorKind::NotFound,
            std::io::ErrorKind::PermissionDenied => IoErrorKind::PermissionDenied,
            _ => IoErrorKind::Other,
        };
        AtlasError::Io(IoError::new(kind, operation, location, e.to_string()))
    };
    match std::fs::metadata(&dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(invalid(
                location,
                "not a collection directory (a collection is a directory holding data.atlas)",
            ));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && access == Access::Write => {
            std::fs::create_dir_all(&dir).map_err(|e| io(e, "create_dir"))?;
        }
        Err(e) => return Err(io(e, "open")),
    }
    // Canonical, so the operator's root never depends on the working directory.
    dir.canonicalize().map_err(|e| io(e, "open"))
}
