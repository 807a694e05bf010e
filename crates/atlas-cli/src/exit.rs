//! Errors as the user sees them: one line on stderr and an exit code.
//!
//! Exit codes: 0 success; 1 a problem with the collection or the request
//! (not found, corrupt, wrong dtype, unknown dataset, a failed `verify`...);
//! 2 a usage error (clap reports those itself, before anything runs);
//! 75 (`EX_TEMPFAIL`) storage that stayed unreachable or busy through every
//! retry, or a commit to a set that lost every race to other writers: trying
//! again later may work, nothing is known to be damaged.

use std::process::ExitCode;

use atlas::AtlasError;
use atlas_io::error::IoErrorKind;

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
    /// A storage backend failed outside the library (building an operator, a probe).
    Storage {
        /// What the command was working on.
        context: String,
        /// The backend's error.
        error: opendal::Error,
    },
    /// A query (`--where`, `catalogue`) was refused; a parse error also shows
    /// the expression with a caret (see [`CliError::detail`]).
    Query {
        /// What the command was working on.
        context: String,
        /// The library's error.
        error: atlas::QueryError,
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

    /// The process exit code for this error: [`EX_TEMPFAIL`] for a transient
    /// storage failure, else 1 (2 is clap's).
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(if self.is_transient() { EX_TEMPFAIL } else { 1 })
    }

    /// Whether the failure is storage that stayed unreachable or busy, or a
    /// set commit that lost every race (retrying can succeed).
    pub fn is_transient(&self) -> bool {
        match self {
            CliError::Atlas {
                error: AtlasError::CommitConflict { .. },
                ..
            } => true,
            CliError::Atlas {
                error: AtlasError::Io(io),
                ..
            } => io.kind() == IoErrorKind::Transient,
            // A query that failed reading the collection is as transient as the read.
            CliError::Query {
                error: atlas::QueryError::Atlas(AtlasError::Io(io)),
                ..
            } => io.kind() == IoErrorKind::Transient,
            CliError::Storage { error, .. } => error.is_temporary() || error.is_persistent(),
            _ => false,
        }
    }

    /// The one line printed on stderr (without the `error: ` prefix).
    pub fn line(&self) -> String {
        let text = match self {
            CliError::Atlas { context, error } => describe_atlas(context, error),
            CliError::Storage { context, error } => describe_storage(context, error),
            CliError::Query { context, error } => match error {
                atlas::QueryError::Parse(p) => format!("{context}: {}", p.message),
                atlas::QueryError::Atlas(e) => describe_atlas(context, e),
                other => format!("{context}: {other}"),
            },
            CliError::Message(m) => m.clone(),
        };
        one_line(&text)
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

impl<T> Context<T> for Result<T, opendal::Error> {
    fn at(self, context: &str) -> CliResult<T> {
        self.map_err(|error| CliError::Storage {
            context: context.to_owned(),
            error,
        })
    }
}

fn describe_atlas(context: &str, error: &AtlasError) -> String {
    let AtlasError::Io(io) = error else {
        return format!("{context}: {error}");
    };
    let message = backend_message(io, context);
    match io.kind() {
        IoErrorKind::NotFound => format!(
            "no Atlas collection at {context}: {} not found",
            if io.path().is_empty() {
                atlas::CONTAINER_FILE
            } else {
                io.path()
            }
        ),
        IoErrorKind::PermissionDenied => {
            format!("{context}: permission denied ({message}); check the credentials")
        }
        IoErrorKind::Transient => {
            format!("{context}: storage unreachable or busy: {message}")
        }
        _ => {
            let kind =
                backend(io).map_or_else(|| io.kind().to_string(), |e| format!("{:?}", e.kind()));
            format!(
                "{context}: {} {:?} failed ({kind}): {message}",
                io.operation(),
                io.path()
            )
        }
    }
}

/// The OpenDAL error behind a transport error, if there is one.
fn backend(io: &atlas_io::IoError) -> Option<&opendal::Error> {
    std::error::Error::source(io).and_then(|s| s.downcast_ref::<opendal::Error>())
}

/// The backend's own message and its cause, without OpenDAL's context dump
/// (request headers and such; `--log-level debug` shows the whole error).
fn backend_message(io: &atlas_io::IoError, context: &str) -> String {
    let Some(e) = backend(io) else {
        return io.message().to_owned();
    };
    let mut parts = vec![e.message().to_owned()];
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        // A wrapped OpenDAL error (the retry layer's "temporary failure") by
        // its message alone, without its context dump.
        let text = c
            .downcast_ref::<opendal::Error>()
            .map_or_else(|| c.to_string(), |e| e.message().to_owned());
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cause = c.source();
    }
    parts.retain(|p| !p.trim().is_empty());
    let mut message = if parts.is_empty() {
        "the backend gave no reason".to_owned()
    } else {
        parts.join(": ")
    };
    if message.contains("credential") {
        message.push_str(credential_hint(context));
    }
    message
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

fn describe_storage(context: &str, error: &opendal::Error) -> String {
    use opendal::ErrorKind as K;
    match error.kind() {
        K::NotFound => format!("no Atlas collection at {context}: {error}"),
        K::PermissionDenied => {
            format!("{context}: permission denied; check the credentials: {error}")
        }
        K::ConfigInvalid => format!("{context}: invalid storage configuration: {error}"),
        _ => format!("{context}: {error}"),
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
    fn a_query_that_failed_on_unreachable_storage_exits_75() {
        let io = atlas_io::IoError::new(IoErrorKind::Transient, "read", "data.atlas", "timed out");
        let e = CliError::Query {
            context: "--where".into(),
            error: atlas::QueryError::Atlas(AtlasError::Io(io)),
        };
        assert!(e.is_transient());
        assert_eq!(e.exit_code(), ExitCode::from(EX_TEMPFAIL));
    }
}
