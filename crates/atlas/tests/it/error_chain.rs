//! Each error type describes its own layer and leaves its cause to
//! `source()`, so a chain printed with its sources shows every cause once;
//! and the one classification says what a failure is, whatever wraps it.

use std::error::Error;

use atlas::{AtlasError, ErrorClass, ErrorReport, FooterProblem, QueryError, SegmentError};
use atlas_format::FormatError;
use atlas_io::IoError;
use atlas_io::error::IoErrorKind;

/// Asserts that no error of `e`'s chain repeats its source's text, down to
/// the storage backend's own error (whose display is OpenDAL's).
fn assert_each_cause_once(e: &(dyn Error + 'static)) {
    let mut current = e;
    while let Some(source) = current.source() {
        let (outer, inner) = (current.to_string(), source.to_string());
        assert!(
            !outer.contains(&inner),
            "{outer:?} repeats its source {inner:?}"
        );
        if source.is::<opendal::Error>() {
            break;
        }
        current = source;
    }
    let full = format!("{:#}", ErrorReport::new(e));
    for line in full.lines() {
        let text = line.trim_start().trim_start_matches("caused by: ");
        assert_eq!(full.matches(text).count(), 1, "{text:?} twice in {full}");
    }
}

fn busy() -> IoError {
    let backend = opendal::Error::new(opendal::ErrorKind::Unexpected, "SlowDown")
        .with_context("response", "Parts { status: 503 }")
        .set_temporary();
    IoError::from_opendal(backend, "read", "members/m1/data.atlas")
}

fn corrupt_segment() -> AtlasError {
    AtlasError::from(SegmentError::Footer {
        segment: "TEMP".into(),
        problem: FooterProblem::TailTooShort,
    })
}

fn in_member(e: AtlasError) -> AtlasError {
    AtlasError::Member {
        id: "m1".into(),
        path: "s3://b/set/members/m1".into(),
        source: Box::new(e),
    }
}

#[test]
fn a_chain_of_each_layer_shows_each_cause_once() {
    let set_manifest = AtlasError::SetManifest {
        path: "set/set.manifest".into(),
        source: FormatError::CorruptSetManifest {
            what: "checksum mismatch".into(),
        },
    };
    let sidecar = AtlasError::from(FormatError::CorruptChecksumSidecar {
        what: "truncated".into(),
    });
    let errors: Vec<Box<dyn Error + 'static>> = vec![
        Box::new(FormatError::corrupt("footer length past the end")),
        Box::new(busy()),
        Box::new(AtlasError::Io(busy())),
        Box::new(corrupt_segment()),
        Box::new(in_member(corrupt_segment())),
        Box::new(in_member(AtlasError::Io(busy()))),
        Box::new(set_manifest),
        Box::new(sidecar),
        Box::new(QueryError::Atlas(in_member(AtlasError::Io(busy())))),
        Box::new(QueryError::Write(std::io::Error::other("disk full"))),
    ];
    for e in &errors {
        assert_each_cause_once(e.as_ref());
    }
}

#[test]
fn the_one_line_report_names_each_layer_and_stops_before_the_backend_dump() {
    let e = in_member(AtlasError::Io(busy()));
    assert_eq!(
        ErrorReport::new(&e).to_string(),
        "set member \"m1\": storage busy: 503 from read of members/m1/data.atlas"
    );
    let full = format!("{:#}", ErrorReport::new(&e));
    assert!(
        full.contains("SlowDown"),
        "the backend's error in the full chain: {full}"
    );
}

#[test]
fn a_corrupt_segment_reports_the_screening_finding_once() {
    let text = ErrorReport::new(&corrupt_segment()).to_string();
    assert_eq!(
        text,
        "corrupt Atlas collection: segment \"TEMP\" has an unusable footer: \
         segment tail shorter than the array-format trailer"
    );
}

#[test]
fn a_failure_inside_a_set_member_is_classed_as_its_cause() {
    assert_eq!(
        in_member(AtlasError::Io(busy())).class(),
        ErrorClass::Retryable
    );
    assert!(in_member(AtlasError::Io(busy())).is_retryable());
    assert_eq!(in_member(corrupt_segment()).class(), ErrorClass::Corrupt);
    let missing = IoError::new(IoErrorKind::NotFound, "read", "members/m1/data.atlas", "");
    assert_eq!(
        in_member(AtlasError::Io(missing)).class(),
        ErrorClass::NotFound
    );
    assert_eq!(
        QueryError::Atlas(in_member(AtlasError::Io(busy()))).class(),
        ErrorClass::Retryable
    );
}

#[test]
fn a_lost_commit_race_is_retryable_and_a_permission_is_not() {
    let lost = AtlasError::CommitConflict {
        path: "set/set.manifest".into(),
        generation: 3,
        what: "13 attempts".into(),
    };
    assert_eq!(lost.class(), ErrorClass::Retryable);
    let denied = IoError::new(IoErrorKind::PermissionDenied, "read", "c/data.atlas", "");
    assert_eq!(AtlasError::Io(denied).class(), ErrorClass::Storage);
    assert_eq!(
        AtlasError::DatasetNotFound { name: "x".into() }.class(),
        ErrorClass::NotFound
    );
    assert_eq!(
        AtlasError::from(FormatError::NotAnAtlasCollection {
            found: "Parquet".into()
        })
        .class(),
        ErrorClass::NotACollection
    );
}
