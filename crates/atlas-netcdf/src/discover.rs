//! Which files an ingest reads: directories scanned for NetCDF suffixes,
//! files taken as given, simple globs (`*`, `?` in the last path component).

use std::path::{Path, PathBuf};

use crate::error::IngestError;

/// File suffixes treated as NetCDF when scanning a directory (case-insensitive).
pub const NETCDF_SUFFIXES: [&str; 4] = ["nc", "nc4", "cdf", "netcdf"];

pub(crate) fn is_netcdf(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| NETCDF_SUFFIXES.iter().any(|s| e.eq_ignore_ascii_case(s)))
}

fn scan(dir: &Path, recursive: bool, out: &mut Vec<PathBuf>) -> Result<(), IngestError> {
    let io = |source| IngestError::Io {
        path: dir.to_owned(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let path = entry.path();
        let meta = std::fs::metadata(&path).map_err(|source| IngestError::Io {
            path: path.clone(),
            source,
        })?;
        if meta.is_dir() {
            if recursive {
                scan(&path, recursive, out)?;
            }
        } else if meta.is_file() && is_netcdf(&path) {
            out.push(path);
        }
    }
    Ok(())
}

/// Whether `name` matches `pattern` (`*` any run, `?` one character).
pub(crate) fn matches(pattern: &[char], name: &[char]) -> bool {
    match (pattern.split_first(), name.split_first()) {
        (None, None) => true,
        (Some(('*', rest)), _) => {
            matches(rest, name) || name.split_first().is_some_and(|(_, n)| matches(pattern, n))
        }
        (Some(('?', rest)), Some((_, n))) => matches(rest, n),
        (Some((p, rest)), Some((c, n))) if p == c => matches(rest, n),
        _ => false,
    }
}

fn glob(source: &Path) -> Result<Option<Vec<PathBuf>>, IngestError> {
    let Some(name) = source.file_name().and_then(|n| n.to_str()) else {
        return Ok(None);
    };
    if !name.contains(['*', '?']) {
        return Ok(None);
    }
    let parent = match source.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    let pattern: Vec<char> = name.chars().collect();
    let mut out = Vec::new();
    let entries = std::fs::read_dir(&parent).map_err(|source| IngestError::Io {
        path: parent.clone(),
        source,
    })?;
    for entry in entries {
        let entry = entry.map_err(|source| IngestError::Io {
            path: parent.clone(),
            source,
        })?;
        let file_name: Vec<char> = entry.file_name().to_string_lossy().chars().collect();
        let path = entry.path();
        if matches(&pattern, &file_name) && path.is_file() {
            out.push(path);
        }
    }
    Ok(Some(out))
}

/// The NetCDF files `sources` name, sorted by path, without repeats.
///
/// A directory contributes the files with a NetCDF suffix under it
/// (descending when `recursive`); a file is taken whatever its suffix; a
/// path whose last component holds `*` or `?` is a glob over its directory.
pub fn discover(sources: &[PathBuf], recursive: bool) -> Result<Vec<PathBuf>, IngestError> {
    let mut files = Vec::new();
    for source in sources {
        if source.is_dir() {
            scan(source, recursive, &mut files)?;
        } else if source.is_file() {
            files.push(source.clone());
        } else if let Some(found) = glob(source)? {
            files.extend(found);
        } else {
            return Err(IngestError::NotFound {
                path: source.clone(),
            });
        }
    }
    files.sort();
    files.dedup();
    if files.is_empty() {
        return Err(IngestError::NoInputs {
            sources: sources
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::matches;

    fn m(p: &str, n: &str) -> bool {
        matches(
            &p.chars().collect::<Vec<_>>(),
            &n.chars().collect::<Vec<_>>(),
        )
    }

    #[test]
    fn glob_patterns_match_as_a_shell_would() {
        assert!(m("*.nc", "a.nc"));
        assert!(m("R69*_0?.nc", "R6901_01.nc"));
        assert!(!m("*.nc", "a.nc4"));
        assert!(!m("?.nc", "ab.nc"));
    }
}
