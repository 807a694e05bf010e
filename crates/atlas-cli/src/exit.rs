//! Errors as the user sees them: one line on stderr and an exit code.
//!
//! Exit codes: 0 success; 1 a problem with the collection or the request
//! (not found, corrupt, wrong dtype, unknown dataset, a failed `verify`...);
//! 2 a usage error (clap reports those itself, before anything runs);
//! 75 (`EX_TEMPFAIL`) storage that stayed unreachable or busy through every
//! retry, or a commit to a set that lost every race to other writers: trying
//! again later may work, nothing is known to be damaged.
//!
//! The code is read off the library's classification ([`atlas::ErrorClass`]),
//! never decided here; the line is the library's chain of causes, each once
//! ([`atlas::ErrorReport`]), with what to do about it.

use std::process::ExitCode;

use atlas::{AtlasError, ErrorClass, ErrorReport};
use atlas_io::IoError;
use atlas_io::error::IoErrorKind;
use atlas_netcdf::{IngestError, SyncError};

/// Exit code of a transient storage failure (sysexits.h): "try again later".
pub const EX_TEMPFAIL: u8 = 75;

/// Everything a command can fail with.
#[derive(Debug)]
pub enum CliError {
    /// The library refused; `context` names what we were doing (usually the collection).
    Atlas {
        /// What the command was working on, e.g. the collection location.
        context: String,
        /// The library's error.
        error: AtlasError,
    },
    /// A query (`--where`, `catalogue`) was refused; a parse error also shows
    /// the expression with a caret (see [`CliError::detail`]).
    Query {
        /// What the command was working on.
        context: String,
        /// The library's error.
        error: atlas::QueryError,
    },
    /// An ingest (`create`) failed; nothing was written.
    Ingest {
        /// The destination.
        context: String,
        /// The ingest's error (boxed: it is large, and every command's result carries it).
        error: Box<IngestError>,
    },
    /// A sync failed; nothing was committed.
    Sync {
        /// The set.
        context: String,
        /// The sync's error (boxed, as an ingest's).
        error: Box<SyncError>,
    },
    /// A problem the command itself found (bad region syntax, read-only location...).
    Message(String),
}

/// Result alias of the commands.
pub type CliResult<T = ()> = Result<T, CliError>;

impl CliError {
    /// A problem described by the command itself.
    pub fn msg(text: impl Into<String>) -> Self {
        CliError::Message(text.into())
    }

    /// The library's class of the failure; a problem the command found
    /// itself is the request's.
    pub fn class(&self) -> ErrorClass {
        match self {
            CliError::Atlas { error, .. } => error.class(),
            CliError::Query { error, .. } => error.class(),
            CliError::Ingest { error, .. } => error.class(),
            CliError::Sync { error, .. } => error.class(),
            CliError::Message(_) => ErrorClass::InvalidRequest,
        }
    }

    /// The process exit code for this error: [`EX_TEMPFAIL`] when the library
    /// classes it retryable, else 1 (2 is clap's).
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(match self.class() {
            ErrorClass::Retryable => EX_TEMPFAIL,
            _ => 1,
        })
    }

    /// The library's error, if there is one.
    fn source_error(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CliError::Atlas { error, .. } => Some(error),
            CliError::Query { error, .. } => Some(error),
            CliError::Ingest { error, .. } => Some(error.as_ref()),
            CliError::Sync { error, .. } => Some(error.as_ref()),
            CliError::Message(_) => None,
        }
    }

    /// The one line printed on stderr (without the `error: ` prefix): what
    /// failed, where, and for a retryable failure what to do.
    pub fn line(&self) -> String {
        let text = match self {
            CliError::Query {
                context,
                error: atlas::QueryError::Parse(p),
            } => format!("{context}: {}", p.message),
            CliError::Atlas { context, error } => describe(context, error, self.class()),
            CliError::Query { context, error } => describe(context, error, self.class()),
            CliError::Ingest { context, error } => format!(
                "nothing written: {}",
                describe(context, error.as_ref(), self.class())
            )
            .replace("nothing written: : ", "nothing written: "),
            CliError::Sync { context, error } => format!(
                "nothing committed: {}",
                describe(context, error.as_ref(), self.class())
            ),
            CliError::Message(m) => m.clone(),
        };
        one_line(&text)
    }

    /// The whole chain of causes, each once and on a line of its own (the
    /// storage backend's error included), for `--log-level debug`.
    pub fn chain(&self) -> String {
        match self.source_error() {
            Some(e) => format!("{:#}", ErrorReport::new(e)),
            None => self.line(),
        }
    }

    /// Lines printed after [`line`](Self::line): the expression with a caret
    /// under the offending token, for a `--where` that does not parse.
    pub fn detail(&self) -> Option<String> {
        match self {
            CliError::Query {
                error: atlas::QueryError::Parse(p),
                ..
            } => Some(format!("  {}\n  {}^", p.expr, " ".repeat(p.column()))),
            _ => None,
        }
    }
}

/// Adds the location (or other context) to a library error.
pub trait Context<T> {
    /// Wraps the error with `context`.
    fn at(self, context: &str) -> CliResult<T>;
}

impl<T> Context<T> for Result<T, AtlasError> {
    fn at(self, context: &str) -> CliResult<T> {
        self.map_err(|error| CliError::Atlas {
            context: context.to_owned(),
            error,
        })
    }
}

impl<T> Context<T> for Result<T, atlas::QueryError> {
    fn at(self, context: &str) -> CliResult<T> {
        self.map_err(|error| CliError::Query {
            context: context.to_owned(),
            error,
        })
    }
}

impl<T> Context<T> for Result<T, IngestError> {
    fn at(self, context: &str) -> CliResult<T> {
        self.map_err(|error| CliError::Ingest {
            context: context.to_owned(),
            error: Box::new(error),
        })
    }
}

impl<T> Context<T> for Result<T, SyncError> {
    fn at(self, context: &str) -> CliResult<T> {
        self.map_err(|error| CliError::Sync {
            context: context.to_owned(),
            error: Box::new(error),
        })
    }
}

impl<T> Context<T> for Result<T, opendal::Error> {
    /// A probe the command made itself (does the container exist?): classed
    /// like the library's own storage errors.
    fn at(self, context: &str) -> CliResult<T> {
        self.map_err(|error| CliError::Atlas {
            context: context.to_owned(),
            error: AtlasError::Io(IoError::from_opendal(error, "stat", "")),
        })
    }
}

/// The storage error in `error`'s chain, if the failure was one.
fn storage_error<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a IoError> {
    ErrorReport::new(error).chain().find_map(|e| {
        e.downcast_ref::<IoError>()
            .or_else(|| match e.downcast_ref::<AtlasError>() {
                Some(AtlasError::Io(io)) => Some(io),
                _ => None,
            })
    })
}

/// One line from the chain of `error` (each cause once, the backend's dump
/// left to `--log-level debug`), with what to do about it.
fn describe(context: &str, error: &(dyn std::error::Error + 'static), class: ErrorClass) -> String {
    let text = ErrorReport::new(error).to_string();
    let io = storage_error(error);
    match (class, io) {
        // The collection itself is missing (not a member of a set, not a dataset).
        (ErrorClass::NotFound, Some(io))
            if matches!(error.downcast_ref::<AtlasError>(), Some(AtlasError::Io(_))) =>
        {
            let path = if io.path().is_empty() {
                atlas::CONTAINER_FILE
            } else {
                io.path()
            };
            if path.trim_end_matches('/') == context.trim_end_matches('/') {
                format!("no Atlas collection at {context}: nothing is there")
            } else {
                format!("no Atlas collection at {context}: {path} not found")
            }
        }
        (ErrorClass::Retryable, _) => format!("{context}: {text}; retry later"),
        (_, Some(io)) if io.kind() == IoErrorKind::PermissionDenied => format!(
            "{context}: {text}; check the credentials{}",
            credential_hint(context)
        ),
        (_, Some(io)) if io.message().contains("credential") => {
            format!("{context}: {text}{}", credential_hint(context))
        }
        _ => format!("{context}: {text}"),
    }
}

/// Where the backend of `location` looks for credentials.
fn credential_hint(location: &str) -> &'static str {
    match atlas::Scheme::split(location).map(|(scheme, _)| scheme) {
        Ok(atlas::Scheme::S3) => {
            "; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), or pass --anonymous"
        }
        Ok(atlas::Scheme::Gcs) => "; set GOOGLE_APPLICATION_CREDENTIALS, or pass --anonymous",
        Ok(atlas::Scheme::Azure) => {
            "; set AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN, or pass --anonymous"
        }
        _ => "",
    }
}

/// Collapses any line breaks so an error is always exactly one line.
pub fn one_line(text: &str) -> String {
    text.split(['\n', '\r'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_is_always_one_line() {
        assert_eq!(one_line("a\nb\r\n  c\n"), "a b c");
    }

    #[test]
    fn a_missing_dataset_names_the_collection_and_the_dataset() {
        let e = CliError::Atlas {
            context: "dir".into(),
            error: AtlasError::DatasetNotFound { name: "x".into() },
        };
        assert_eq!(e.line(), "dir: dataset \"x\" not found");
    }

    #[test]
    fn a_commit_that_lost_every_race_exits_75_naming_the_set_and_saying_retry() {
        let e = CliError::Atlas {
            context: "s3://b/argo".into(),
            error: AtlasError::CommitConflict {
                path: "argo/set.manifest".into(),
                generation: 7,
                what: "13 attempts".into(),
            },
        };
        assert_eq!(e.exit_code(), ExitCode::from(EX_TEMPFAIL));
        let line = e.line();
        assert!(line.starts_with("s3://b/argo: "), "{line}");
        assert!(line.contains("retry"), "{line}");
    }

    #[test]
    fn a_busy_set_member_exits_75_naming_the_member_and_the_object_once() {
        let io = atlas_io::IoError::new(
            IoErrorKind::Transient,
            "read",
            "members/m1/data.atlas",
            "timed out",
        );
        let e = CliError::Atlas {
            context: "s3://b/set".into(),
            error: AtlasError::Member {
                id: "m1".into(),
                path: "s3://b/set/members/m1".into(),
                source: Box::new(AtlasError::Io(io)),
            },
        };
        assert_eq!(e.exit_code(), ExitCode::from(EX_TEMPFAIL));
        assert_eq!(
            e.line(),
            "s3://b/set: set member \"m1\": storage unreachable or busy: \
             read of members/m1/data.atlas failed: timed out; retry later"
        );
        assert_eq!(e.chain().matches("timed out").count(), 1, "{}", e.chain());
    }

    #[test]
    fn a_missing_collection_and_a_corrupt_one_exit_1() {
        let missing = CliError::Atlas {
            context: "dir".into(),
            error: AtlasError::Io(atlas_io::IoError::new(
                IoErrorKind::NotFound,
                "read",
                "dir/data.atlas",
                "",
            )),
        };
        assert_eq!(missing.exit_code(), ExitCode::from(1));
        assert_eq!(
            missing.line(),
            "no Atlas collection at dir: dir/data.atlas not found"
        );
        let nothing = CliError::Atlas {
            context: "dir/".into(),
            error: AtlasError::Io(atlas_io::IoError::new(
                IoErrorKind::NotFound,
                "read",
                "dir",
                "",
            )),
        };
        assert_eq!(
            nothing.line(),
            "no Atlas collection at dir/: nothing is there",
            "the path is said once"
        );
        let corrupt = CliError::Atlas {
            context: "dir".into(),
            error: AtlasError::corrupt("footer past the end"),
        };
        assert_eq!(corrupt.exit_code(), ExitCode::from(1));
    }

    #[test]
    fn a_query_that_failed_on_unreachable_storage_exits_75() {
        let io = atlas_io::IoError::new(IoErrorKind::Transient, "read", "data.atlas", "timed out");
        let e = CliError::Query {
            context: "--where".into(),
            error: atlas::QueryError::Atlas(AtlasError::Io(io)),
        };
        assert_eq!(e.class(), ErrorClass::Retryable);
        assert_eq!(e.exit_code(), ExitCode::from(EX_TEMPFAIL));
    }
}
