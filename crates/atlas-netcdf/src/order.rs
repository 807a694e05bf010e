//! The key pass of a sorted ingest (`atlas create --max-datasets N
//! --sort-by KEY`): before the first member is cut, each file's values of
//! the keys' variables are read, and the files are put in key order, so each
//! member holds a narrow range of the keys and the manifest's member
//! summaries let a query skip most members.
//!
//! Only the key variables are read from each file (the groups' and
//! variables' attributes are read too, the other variables' data is not),
//! and mapped as the ingest maps them, so a key holds the value the dataset
//! will hold. The order is [`atlas::sort_order`]'s: the order a sorted
//! compaction of the same datasets writes. What stays in memory is one name
//! and a few values per file; a file at a URL is fetched twice (once here,
//! once by the ingest).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use atlas::{Element, SortKey, Value, for_each_array_data};
use futures::StreamExt;

use crate::error::{FileError, IngestError};
use crate::ingest::{IngestOptions, input_files, map_stored};
use crate::reader;
use crate::remote::{Remotes, on_local_copy};

/// The files in key order, and what the key pass read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OrderedFiles {
    /// The files (sorted and deduplicated first), in the order of the keys.
    pub files: Vec<PathBuf>,
    /// Bytes of the files read (or fetched) to find their keys.
    pub bytes_read: u64,
    /// Files whose keys could not be read and were placed last (only with
    /// `skip_errors`: the ingest then meets and skips them itself).
    pub unread: usize,
}

/// One file's values of the key variables (by variable name), and which
/// of those variables its dataset declares.
struct Held {
    values: HashMap<String, Value>,
    declared: Vec<String>,
}

/// Puts `files` in the order of `keys`, reading each file's key variables
/// `options.jobs` files at a time (files at URLs through `options.storage`).
///
/// # Errors
/// [`IngestError::UnknownSortKey`] when no file's dataset holds a key
/// variable; [`IngestError::SortKeyNotScalar`] naming the first file (in
/// path order) whose dataset holds more than one value of one;
/// [`IngestError::File`] for a file that cannot be read (without
/// `skip_errors`); [`IngestError::NoInputs`] for no files. Nothing is written
/// in any case: this runs before the writer is made.
pub async fn order_files(
    files: &[PathBuf],
    keys: &[SortKey],
    options: &IngestOptions,
) -> Result<OrderedFiles, IngestError> {
    let files = input_files(files)?;
    let mut variables: Vec<String> = Vec::new();
    for key in keys {
        for v in key.variables() {
            if !variables.iter().any(|known| known == v) {
                variables.push(v.to_owned());
            }
        }
    }
    let variables = Arc::new(variables);
    let shared = Arc::new(options.clone());
    let remotes = Arc::new(Remotes::new(options.storage.clone()));
    let mut read = futures::stream::iter(files.iter().cloned().map(|path| {
        let (variables, options, remotes) = (
            Arc::clone(&variables),
            Arc::clone(&shared),
            Arc::clone(&remotes),
        );
        async move {
            let (held, bytes) = key_values(path.clone(), variables, options, remotes).await?;
            Ok::<_, tokio::task::JoinError>((path, held, bytes))
        }
    }))
    .buffered(options.jobs.max(1));

    let mut rows: Vec<(String, HashMap<String, Value>)> = Vec::with_capacity(files.len());
    let mut declared: Vec<bool> = vec![false; variables.len()];
    let (mut bytes_read, mut unread) = (0u64, Vec::new());
    let mut positions = Vec::with_capacity(files.len());
    while let Some(joined) = read.next().await {
        let (path, held, bytes) = joined.map_err(|e| IngestError::Task {
            reason: e.to_string(),
        })?;
        bytes_read = bytes_read.saturating_add(bytes);
        let held = match held {
            Ok(held) => held,
            Err(KeyFault::NotScalar { key, values }) => {
                return Err(IngestError::SortKeyNotScalar { key, path, values });
            }
            Err(KeyFault::File(source)) if !options.skip_errors => {
                return Err(IngestError::File { path, source });
            }
            Err(KeyFault::File(error)) => {
                tracing::warn!(path = %path.display(), %error, "cannot read its sort keys; placed last");
                unread.push(path);
                continue;
            }
        };
        for (known, seen) in variables.iter().zip(declared.iter_mut()) {
            *seen |= held.declared.contains(known);
        }
        rows.push((dataset_name(&path), held.values));
        positions.push(path);
    }
    if let Some(missing) = variables
        .iter()
        .zip(&declared)
        .find_map(|(v, seen)| (!seen).then(|| v.clone()))
    {
        return Err(IngestError::UnknownSortKey { key: missing });
    }
    let order = atlas::sort_order(keys, &rows);
    let mut slots: Vec<Option<PathBuf>> = positions.into_iter().map(Some).collect();
    let unread_count = unread.len();
    let mut ordered: Vec<PathBuf> = order
        .into_iter()
        .filter_map(|i| slots.get_mut(i).and_then(Option::take))
        .collect();
    ordered.extend(unread);
    Ok(OrderedFiles {
        files: ordered,
        bytes_read,
        unread: unread_count,
    })
}

/// Why one file gives no key values.
enum KeyFault {
    /// It could not be read or mapped.
    File(FileError),
    /// A key variable holds more than one value in it.
    NotScalar { key: String, values: u64 },
}

/// The dataset name the ingest gives `path` (its file name).
fn dataset_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Reads `variables` of the file at `path` (fetched first when it is a
/// URL) on a blocking thread and maps them; returns the values and the
/// bytes read. Errors only when the blocking task panicked.
async fn key_values(
    path: PathBuf,
    variables: Arc<Vec<String>>,
    options: Arc<IngestOptions>,
    remotes: Arc<Remotes>,
) -> Result<(Result<Held, KeyFault>, u64), tokio::task::JoinError> {
    let (result, bytes) =
        on_local_copy(path, remotes, move |p| held_in(p, &variables, &options)).await?;
    Ok((result.map_err(KeyFault::File).and_then(|held| held), bytes))
}

/// The values of `variables` the local file at `path` holds, as the
/// ingest maps them; a fill value or NaN is no value.
fn held_in(path: &Path, variables: &[String], options: &IngestOptions) -> Result<Held, KeyFault> {
    let only: Vec<&str> = variables.iter().map(String::as_str).collect();
    let stored = reader::read_variables(path, Some(&only)).map_err(KeyFault::File)?;
    let mapped = map_stored(&stored, options).map_err(KeyFault::File)?;
    let mut held = Held {
        values: HashMap::new(),
        declared: Vec::new(),
    };
    for array in &mapped.dataset.arrays {
        if !variables.contains(&array.name) {
            continue;
        }
        held.declared.push(array.name.clone());
        let count = for_each_array_data!(&array.values, a => a.len(), _ => 0);
        if count > 1 {
            return Err(KeyFault::NotScalar {
                key: array.name.clone(),
                values: count as u64,
            });
        }
        let value = for_each_array_data!(
            &array.values,
            a => a.first().cloned().map(Element::to_fill_value),
            _ => None
        );
        if let Some(value) = value.filter(|v| Some(v) != array.fill.as_ref()) {
            held.values.insert(array.name.clone(), value);
        }
    }
    Ok(held)
}
