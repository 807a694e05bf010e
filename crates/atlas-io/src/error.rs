//! The transport error: what the backend said, on which path, during which operation.
//!
//! Callers branch on [`IoErrorKind`] (retry a [`IoErrorKind::Transient`] error,
//! re-read after [`IoErrorKind::ConditionNotMet`], treat
//! [`IoErrorKind::NotFound`] as "absent"); the rest is for people reading logs.

use std::fmt;

/// What kind of failure the backend reported, reduced to the cases callers act on.
///
/// OpenDAL's own kinds are finer; [`IoError::from_opendal`] documents the mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IoErrorKind {
    /// The object does not exist.
    NotFound,
    /// The credentials do not allow this operation on this path.
    PermissionDenied,
    /// A conditional write lost: the object changed (if-match) or already
    /// exists (if-not-exists) since it was read.
    ConditionNotMet,
    /// The backend cannot do this operation at all.
    Unsupported,
    /// Worth retrying: timeouts, rate limits, and errors the backend marks temporary.
    Transient,
    /// The backend answered with something its protocol does not allow (a
    /// listing that does not parse): retrying the same request will not help.
    InvalidResponse,
    /// Anything else, including short reads (see [`IoError::short_read`]).
    Other,
}

impl fmt::Display for IoErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            IoErrorKind::NotFound => "not found",
            IoErrorKind::PermissionDenied => "permission denied",
            IoErrorKind::ConditionNotMet => "condition not met",
            IoErrorKind::Unsupported => "unsupported",
            IoErrorKind::Transient => "transient",
            IoErrorKind::InvalidResponse => "invalid response",
            IoErrorKind::Other => "other",
        };
        f.write_str(s)
    }
}

/// The byte counts of a short read: the backend returned fewer bytes than asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShortRead {
    /// Bytes the range asked for.
    pub expected: u64,
    /// Bytes the backend returned.
    pub actual: u64,
}

/// A failed storage operation: the backend's kind, the path, the operation and the message.
///
/// Built from an [`opendal::Error`] with [`IoError::from_opendal`] (or `From`,
/// which leaves path and operation to whatever OpenDAL recorded), or for a
/// short read with [`IoError::new_short_read`]. Boxed inside, so results
/// carrying it stay one pointer wide.
#[derive(Debug)]
pub struct IoError {
    inner: Box<Inner>,
}

#[derive(Debug)]
struct Inner {
    kind: IoErrorKind,
    path: String,
    operation: &'static str,
    message: String,
    short_read: Option<ShortRead>,
    source: Option<opendal::Error>,
}

impl fmt::Display for IoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = &self.inner;
        write!(
            f,
            "{} {:?} failed ({}): {}",
            i.operation, i.path, i.kind, i.message
        )
    }
}

impl std::error::Error for IoError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner
            .source
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl IoError {
    /// An error of `kind` with a message of our own (no backend error behind it).
    pub fn new(
        kind: IoErrorKind,
        operation: &'static str,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self::from_inner(Inner {
            kind,
            path: path.into(),
            operation,
            message: message.into(),
            short_read: None,
            source: None,
        })
    }

    /// Wraps an OpenDAL error, naming the operation and path we were doing.
    ///
    /// Mapping: a temporary error (retried or not) or `RateLimited` is [`IoErrorKind::Transient`];
    /// `NotFound`, `PermissionDenied` and `Unsupported` keep their names;
    /// `ConditionNotMatch` and `AlreadyExists` (what an if-not-exists write
    /// reports on some services) are [`IoErrorKind::ConditionNotMet`];
    /// everything else is [`IoErrorKind::Other`].
    pub fn from_opendal(err: opendal::Error, operation: &'static str, path: &str) -> Self {
        Self::from_inner(Inner {
            kind: kind_of(&err),
            path: path.to_string(),
            operation,
            message: err.to_string().trim_end().to_string(),
            short_read: None,
            source: Some(err),
        })
    }

    /// A short read: the backend returned `actual` bytes for a range of `expected`.
    ///
    /// Its kind is [`IoErrorKind::Other`]; [`IoError::short_read`] gives the counts.
    pub fn new_short_read(
        operation: &'static str,
        path: &str,
        range: std::ops::Range<u64>,
        actual: u64,
    ) -> Self {
        let expected = range.end.saturating_sub(range.start);
        Self::from_inner(Inner {
            kind: IoErrorKind::Other,
            path: path.to_string(),
            operation,
            message: format!(
                "short read: asked for {expected} bytes at {}..{}, backend returned {actual}",
                range.start, range.end
            ),
            short_read: Some(ShortRead { expected, actual }),
            source: None,
        })
    }

    fn from_inner(inner: Inner) -> Self {
        Self {
            inner: Box::new(inner),
        }
    }

    /// The kind callers branch on.
    pub fn kind(&self) -> IoErrorKind {
        self.inner.kind
    }

    /// The path the operation was on (empty if unknown).
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// The operation, e.g. `"read"`, `"stat"`, `"write"`.
    pub fn operation(&self) -> &'static str {
        self.inner.operation
    }

    /// The backend's message (or ours, for errors we raise).
    pub fn message(&self) -> &str {
        &self.inner.message
    }

    /// The byte counts, if this error is a short read.
    pub fn short_read(&self) -> Option<ShortRead> {
        self.inner.short_read
    }

    /// True if retrying the same request may succeed.
    pub fn is_transient(&self) -> bool {
        self.inner.kind == IoErrorKind::Transient
    }
}

impl From<opendal::Error> for IoError {
    /// Keeps the kind and message; path and operation stay empty because OpenDAL
    /// records them only inside its message. Prefer [`IoError::from_opendal`].
    fn from(err: opendal::Error) -> Self {
        Self::from_opendal(err, "", "")
    }
}

fn kind_of(err: &opendal::Error) -> IoErrorKind {
    use opendal::ErrorKind as K;
    if crate::retry::was_temporary(err) {
        return IoErrorKind::Transient;
    }
    match err.kind() {
        K::NotFound => IoErrorKind::NotFound,
        K::PermissionDenied => IoErrorKind::PermissionDenied,
        K::ConditionNotMatch | K::AlreadyExists => IoErrorKind::ConditionNotMet,
        K::Unsupported => IoErrorKind::Unsupported,
        K::RateLimited => IoErrorKind::Transient,
        _ => IoErrorKind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opendal_kinds_map_to_what_callers_act_on() {
        let cases = [
            (opendal::ErrorKind::NotFound, IoErrorKind::NotFound),
            (
                opendal::ErrorKind::PermissionDenied,
                IoErrorKind::PermissionDenied,
            ),
            (
                opendal::ErrorKind::ConditionNotMatch,
                IoErrorKind::ConditionNotMet,
            ),
            (
                opendal::ErrorKind::AlreadyExists,
                IoErrorKind::ConditionNotMet,
            ),
            (opendal::ErrorKind::Unsupported, IoErrorKind::Unsupported),
            (opendal::ErrorKind::RateLimited, IoErrorKind::Transient),
            (opendal::ErrorKind::Unexpected, IoErrorKind::Other),
        ];
        for (from, to) in cases {
            let e = IoError::from_opendal(opendal::Error::new(from, "x"), "read", "p");
            assert_eq!(e.kind(), to, "{from:?}");
        }
    }

    #[test]
    fn a_temporary_error_is_transient_whatever_its_kind() {
        let err = opendal::Error::new(opendal::ErrorKind::Unexpected, "timeout").set_temporary();
        let e = IoError::from_opendal(err, "read", "data.atlas");
        assert!(e.is_transient());
        assert_eq!(e.path(), "data.atlas");
        assert_eq!(e.operation(), "read");
    }

    #[test]
    fn a_short_read_says_how_short() {
        let e = IoError::new_short_read("read", "data.atlas", 10..20, 4);
        assert_eq!(e.kind(), IoErrorKind::Other);
        assert_eq!(
            e.short_read(),
            Some(ShortRead {
                expected: 10,
                actual: 4
            })
        );
        assert!(e.to_string().contains("short read"), "{e}");
    }
}
