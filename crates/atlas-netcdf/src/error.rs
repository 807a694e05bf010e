//! What can go wrong: with one file ([`FileError`]) or with a whole ingest ([`IngestError`]).

use std::path::PathBuf;

/// A problem with one NetCDF file. With `skip_errors` the file is left out
/// and the error recorded; otherwise the ingest stops and nothing is written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// The NetCDF reader could not open or decode the file (corrupt,
    /// truncated, a filter it lacks such as SZIP...).
    #[error("cannot read it as NetCDF")]
    Read(#[from] netcdf_reader::Error),
    /// A variable of a type Atlas cannot store (compound, enum, opaque, non-string vlen).
    #[error(
        "variable {variable:?} has type {dtype}, which Atlas cannot store (use --skip-unsupported to leave it out)"
    )]
    Unsupported {
        /// The variable (group path included).
        variable: String,
        /// The NetCDF type, as the reader names it.
        dtype: String,
    },
    /// Two variables (from different groups) map to one array name.
    #[error("variables {first:?} and {second:?} both become array {name:?}")]
    NameCollision {
        /// The array name both map to.
        name: String,
        /// The first variable.
        first: String,
        /// The second variable.
        second: String,
    },
    /// A variable name Atlas refuses (e.g. starting with `_`); never renamed silently.
    #[error("variable {variable:?} cannot be an array name: {reason}")]
    InvalidArrayName {
        /// The variable.
        variable: String,
        /// Why.
        reason: String,
    },
    /// The variable's data does not match its declared shape.
    #[error("variable {variable:?}: {reason}")]
    Shape {
        /// The variable.
        variable: String,
        /// What did not match.
        reason: String,
    },
    /// The Atlas writer refused the dataset (a chunk shape that does not fit, ...).
    #[error("the Atlas writer refused it")]
    Write(#[from] atlas::AtlasError),
    /// The file (at a URL) could not be fetched, through every retry.
    #[error("cannot fetch it")]
    Fetch(#[source] Box<atlas::AtlasError>),
    /// A fetched file could not be put where the NetCDF reader reads it.
    #[error("cannot stage it in a temporary file")]
    Stage(#[source] std::io::Error),
}

/// Why `--decode cf` could not turn a time variable into `timestamp_ns`
/// (the variable is then stored undecoded; see [`crate::mapping::UndecodedArray`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TimeError {
    /// A calendar other than standard, gregorian and proleptic_gregorian.
    #[error(
        "calendar {calendar:?} has no exact timestamp_ns (only standard, gregorian and proleptic_gregorian do)"
    )]
    Calendar {
        /// The calendar as written.
        calendar: String,
    },
    /// `units` are not `"<unit> since <date>"`.
    #[error("time units {units:?} are not \"<unit> since <date>\"")]
    Units {
        /// The units as written.
        units: String,
    },
    /// A unit cftime defines only on calendars without an exact `timestamp_ns`.
    #[error(
        "time unit {unit:?} is only defined on the {calendars} calendar (cftime), which has no exact timestamp_ns"
    )]
    CalendarUnit {
        /// The unit as written.
        unit: String,
        /// The calendars that define it.
        calendars: &'static str,
    },
    /// A unit xarray does not decode at all.
    #[error(
        "time unit {unit:?} is not one xarray decodes (days, hours, minutes, seconds, milliseconds, microseconds, nanoseconds and cftime's aliases d, hr, h, min, sec, s, msec, ms, microsec)"
    )]
    Unit {
        /// The unit as written.
        unit: String,
    },
    /// The text after `since` is not a date CF/udunits or pandas reads.
    #[error("cannot read the reference date {date:?}")]
    ReferenceDate {
        /// The text after `since`.
        date: String,
    },
    /// A reference date in the Julian part of the mixed standard calendar.
    #[error(
        "reference date {date:?} is before 1582-10-15, where the {calendar:?} calendar is Julian"
    )]
    Julian {
        /// The reference date as written.
        date: String,
        /// The calendar.
        calendar: String,
    },
    /// A value whose date falls outside `timestamp_ns`.
    #[error("a date outside what timestamp_ns holds (1677-09-21 to 2262-04-11)")]
    OutOfRange,
}

/// Why an ingest as a whole failed. Nothing is committed when this is returned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IngestError {
    /// No NetCDF file among the sources.
    #[error("no NetCDF files (.nc, .nc4, .cdf, .netcdf) in {sources}")]
    NoInputs {
        /// The sources as given.
        sources: String,
    },
    /// A source path that does not exist (and matches nothing as a glob).
    #[error("{}: no such file or directory", path.display())]
    NotFound {
        /// The source.
        path: PathBuf,
    },
    /// A source URL could not be resolved or listed.
    #[error("{url}")]
    Remote {
        /// The URL as given.
        url: String,
        /// What went wrong.
        source: atlas::AtlasError,
    },
    /// A directory could not be listed.
    #[error("cannot read {}", path.display())]
    Io {
        /// The directory or file.
        path: PathBuf,
        /// The system error.
        source: std::io::Error,
    },
    /// Two files with the same name (datasets are named after the file name).
    #[error("dataset name {name:?} comes from several files: {}", paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    DuplicateName {
        /// The file name.
        name: String,
        /// Every file of that name, sorted.
        paths: Vec<PathBuf>,
    },
    /// A file name that `atlas::validate_name` refuses as a dataset name.
    #[error("{}: {reason} (the dataset name is the file name; rename the file)", path.display())]
    InvalidDatasetName {
        /// The file.
        path: PathBuf,
        /// Why the name is refused.
        reason: String,
    },
    /// One file failed and `skip_errors` is off.
    #[error("{}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: FileError,
    },
    /// One dataset handed over in memory ([`crate::feed::Feed`]) failed.
    #[error("dataset {name:?}")]
    Dataset {
        /// The dataset's name.
        name: String,
        /// What went wrong.
        source: FileError,
    },
    /// The collection writer failed (storage, or committing the collection).
    #[error("writing the collection failed")]
    Writer(#[from] atlas::AtlasError),
    /// A decoding or finishing task panicked or was cancelled (a bug; please report it).
    #[error("an ingest task failed: {reason}")]
    Task {
        /// What the runtime reported.
        reason: String,
    },
    /// A sort key's variable that no file's dataset holds.
    #[error("sort key {key:?}: no file holds a variable of that name")]
    UnknownSortKey {
        /// The key variable.
        key: String,
    },
    /// A sort key's variable holding more than one value in a file, which
    /// gives the file no single place in the order.
    #[error("sort key {key:?} holds {values} values in {}, not one", path.display())]
    SortKeyNotScalar {
        /// The key variable.
        key: String,
        /// The first file (in path order) found holding several values of it.
        path: PathBuf,
        /// How many values it holds there.
        values: u64,
    },
    /// `chunks` names a chunk shape that is invalid on its face (e.g. a zero extent).
    #[error("invalid chunk shape for {variable:?}: {reason}")]
    Chunks {
        /// The variable.
        variable: String,
        /// Why.
        reason: String,
    },
}

impl IngestError {
    /// What kind of failure this is: a writer or storage failure is classed
    /// as the library classes it ([`atlas::AtlasError::class`]), a missing
    /// source as not found, an unreadable directory as storage, and the rest
    /// (files the mapping or the writer refuses) as the request.
    pub fn class(&self) -> atlas::ErrorClass {
        match self {
            IngestError::Writer(a)
            | IngestError::Remote { source: a, .. }
            | IngestError::Dataset {
                source: FileError::Write(a),
                ..
            }
            | IngestError::File {
                source: FileError::Write(a),
                ..
            } => a.class(),
            IngestError::File {
                source: FileError::Fetch(a),
                ..
            } => a.class(),
            IngestError::NotFound { .. } => atlas::ErrorClass::NotFound,
            IngestError::Io { .. } => atlas::ErrorClass::Storage,
            _ => atlas::ErrorClass::InvalidRequest,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_file_names_the_file_and_its_cause_once_and_is_classed_as_its_cause() {
        let io = atlas::IoError::new(
            atlas::IoErrorKind::Transient,
            "write",
            "c/data.atlas",
            "timed out",
        );
        let e = IngestError::File {
            path: PathBuf::from("in/a.nc"),
            source: FileError::Write(atlas::AtlasError::Io(io)),
        };
        let mut current: &(dyn std::error::Error + 'static) = &e;
        while let Some(source) = current.source() {
            assert!(
                !current.to_string().contains(&source.to_string()),
                "{current} repeats {source}"
            );
            current = source;
        }
        assert_eq!(
            atlas::ErrorReport::new(&e).to_string(),
            "in/a.nc: the Atlas writer refused it: \
             storage unreachable or busy: write of c/data.atlas failed: timed out"
        );
        assert_eq!(e.class(), atlas::ErrorClass::Retryable);
    }
}
