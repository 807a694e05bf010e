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
    reason: String,
    short_read: Option<ShortRead>,
    tries: u32,
    status: Option<u16>,
    source: Option<opendal::Error>,
}

impl fmt::Display for IoError {
    /// What failed and where, in one short line: `storage busy: 503 from read
    /// of members/x/data.atlas after 5 tries`. The backend's own error (with
    /// its request context) is the [`source`](std::error::Error::source).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = &self.inner;
        let op = if i.operation.is_empty() {
            "request"
        } else {
            i.operation
        };
        // "read of members/x/data.atlas", or the operation alone when the
        // path is unknown (an error converted without one).
        let what = if i.path.is_empty() {
            op.to_owned()
        } else {
            format!("{op} of {}", i.path)
        };
        match i.kind {
            IoErrorKind::Transient => match i.status {
                Some(status) => write!(f, "storage busy: {status} from {what}")?,
                None => write!(f, "storage unreachable or busy: {what} failed")?,
            },
            IoErrorKind::NotFound if i.path.is_empty() => write!(f, "{op}: not found")?,
            IoErrorKind::NotFound => write!(f, "{} not found", i.path)?,
            IoErrorKind::PermissionDenied => write!(f, "permission denied: {what}")?,
            kind => {
                write!(f, "{what} failed ({kind}")?;
                if let Some(status) = i.status {
                    write!(f, ", status {status}")?;
                }
                f.write_str(")")?;
            }
        }
        if i.tries > 1 {
            write!(f, " after {} tries", i.tries)?;
        }
        // Our own errors have no source to carry their reason; a backend's
        // gets its root cause, short (its display is the request dump), unless
        // a busy status already says it all or the object is simply missing.
        if i.source.is_none() {
            if !i.message.is_empty() {
                write!(f, ": {}", i.message)?;
            }
        } else if !i.reason.is_empty()
            && i.kind != IoErrorKind::NotFound
            && !(i.kind == IoErrorKind::Transient && i.status.is_some())
        {
            write!(f, ": {}", i.reason)?;
        }
        Ok(())
    }
}

impl std::error::Error for IoError {
    /// The backend's error as the service reported it (for a retried one,
    /// the last try's, not the retry layer's wrapper around it). Its display
    /// is OpenDAL's: the request context, and the causes OpenDAL recorded.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner
            .source
            .as_ref()
            .map(|e| crate::retry::innermost(e) as &(dyn std::error::Error + 'static))
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
            reason: String::new(),
            short_read: None,
            tries: 1,
            status: None,
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
            message: backend_message(&err),
            reason: innermost_reason(&err),
            short_read: None,
            tries: crate::retry::tries_of(&err),
            status: http_status(&err),
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
            reason: String::new(),
            short_read: Some(ShortRead { expected, actual }),
            tries: 1,
            status: None,
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

    /// The backend's message without its request context (or ours, for
    /// errors we raise), e.g. an S3 error body or a missing-credential note.
    pub fn message(&self) -> &str {
        &self.inner.message
    }

    /// The innermost cause the backend recorded, e.g. `Connection refused
    /// (os error 111)` or an S3 error body; empty for errors we raise.
    pub fn reason(&self) -> &str {
        &self.inner.reason
    }

    /// How many times the request was sent: 1, or the retry policy's budget
    /// for a [`IoErrorKind::Transient`] error that outlived every retry.
    pub fn tries(&self) -> u32 {
        self.inner.tries
    }

    /// The HTTP status the backend answered with, when it was an HTTP answer.
    pub fn http_status(&self) -> Option<u16> {
        self.inner.status
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

/// The opendal errors of `err`'s chain, outermost first.
fn opendal_chain(err: &opendal::Error) -> impl Iterator<Item = &opendal::Error> {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(err);
    std::iter::from_fn(move || {
        while let Some(e) = next {
            next = e.source();
            if let Some(o) = e.downcast_ref::<opendal::Error>() {
                return Some(o);
            }
            if let Some(t) = e.downcast_ref::<crate::retry::Temporary>() {
                next = None;
                return Some(t.error());
            }
        }
        None
    })
}

/// The texts of `err`'s chain without OpenDAL's context dumps (request
/// headers and such), each once: OpenDAL errors by their message, others (the
/// HTTP client's, the OS's) by their display; the retry marker is skipped.
fn backend_parts(err: &opendal::Error) -> Vec<String> {
    let mut parts: Vec<String> = Vec::new();
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = next {
        next = e.source();
        let text = if let Some(t) = e.downcast_ref::<crate::retry::Temporary>() {
            next = Some(t.error());
            continue;
        } else if let Some(o) = e.downcast_ref::<opendal::Error>() {
            if o.message() == "temporary failure" {
                continue;
            }
            o.message().trim().to_owned()
        } else {
            e.to_string().trim().to_owned()
        };
        if !text.is_empty() && !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
    }
    parts
}

/// [`backend_parts`] joined into one message.
fn backend_message(err: &opendal::Error) -> String {
    backend_parts(err).join(": ")
}

/// The last of [`backend_parts`]: the root cause.
fn innermost_reason(err: &opendal::Error) -> String {
    backend_parts(err).pop().unwrap_or_default()
}

/// The HTTP status recorded in `err`'s chain (OpenDAL keeps the response
/// head only as text in its context, as `status: 503`).
fn http_status(err: &opendal::Error) -> Option<u16> {
    opendal_chain(err).find_map(|e| {
        let text = e.to_string();
        let at = text.find("status: ")?;
        let digits = text.get(at + "status: ".len()..)?.get(..3)?;
        digits
            .parse::<u16>()
            .ok()
            .filter(|s| (100..600).contains(s))
    })
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

    #[test]
    fn a_busy_backend_is_one_short_line_naming_status_path_and_tries() {
        let inner = opendal::Error::new(opendal::ErrorKind::Unexpected, "<Error>SlowDown</Error>")
            .with_context("service_operation", "Get")
            .with_context("response", "Parts { status: 503, version: HTTP/1.1 }")
            .set_temporary();
        let marked = crate::retry::tests_support::marked(inner, 5).set_persistent();
        let e = IoError::from_opendal(marked, "read", "members/x/data.atlas");
        assert_eq!(e.kind(), IoErrorKind::Transient);
        assert_eq!(e.tries(), 5);
        assert_eq!(e.http_status(), Some(503));
        assert_eq!(
            e.to_string(),
            "storage busy: 503 from read of members/x/data.atlas after 5 tries"
        );
        assert_eq!(e.message(), "<Error>SlowDown</Error>");
        // The service's own error stays reachable, not the retry marker.
        let source = std::error::Error::source(&e).map(ToString::to_string);
        assert!(
            source.as_deref().is_some_and(
                |s| s.contains("service_operation") && !s.contains("temporary failure")
            ),
            "{source:?}"
        );
    }

    #[test]
    fn a_missing_object_names_the_path_and_not_the_backend_dump() {
        let err = opendal::Error::new(opendal::ErrorKind::NotFound, "no such key")
            .with_context("response", "Parts { status: 404 }");
        let e = IoError::from_opendal(err, "stat", "c/data.atlas");
        assert_eq!(e.to_string(), "c/data.atlas not found");
    }
}
