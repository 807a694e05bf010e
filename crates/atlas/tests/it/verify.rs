//! `Member::verify`: a sound collection reports what it checked; damage is a typed finding.

#![cfg(test)]

use std::path::PathBuf;

use atlas::{Atlas, Finding, VerifyOptions};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/v8")
        .join(name)
}

/// A copy of fixture `small` with `range` of its container XOR 0x5a.
fn damaged_small(range: std::ops::Range<usize>) -> tempfile::TempDir {
    let mut bytes = std::fs::read(fixture("small").join("data.atlas")).unwrap();
    for b in &mut bytes[range] {
        *b ^= 0x5a;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.atlas"), &bytes).unwrap();
    dir
}

#[tokio::test]
async fn every_fixture_is_sound_and_every_live_array_is_read() {
    for name in ["small", "deleted", "mixed", "empty"] {
        let member = Atlas::open(fixture(name), &atlas::OpenOptions::default())
            .await
            .unwrap()
            .lone_member()
            .unwrap();
        let progress = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let seen = progress.clone();
        let options = VerifyOptions::new()
            .concurrency(3)
            .on_progress(move |n| seen.store(n, std::sync::atomic::Ordering::SeqCst));
        let report = member.verify(&options).await;
        assert!(report.is_sound(), "{name}: {:?}", report.findings);
        let declared: usize = member
            .datasets()
            .iter()
            .map(|d| d.schema().arrays().count())
            .sum();
        assert_eq!(report.checked.datasets, member.dataset_count(), "{name}");
        assert_eq!(report.checked.arrays, declared, "{name}");
        assert_eq!(
            report.checked.hidden,
            member.dataset_count_total() - member.dataset_count()
        );
        assert_eq!(
            progress.load(std::sync::atomic::Ordering::SeqCst),
            member.dataset_count() as u64,
            "{name}: the progress callback saw every dataset"
        );
    }
}

#[tokio::test]
async fn a_block_that_does_not_decompress_is_an_array_finding() {
    // Inside the first compressed block of segment "temperature" (it starts at byte 8).
    let dir = damaged_small(20..60);
    let member = Atlas::open(dir.path(), &atlas::OpenOptions::default())
        .await
        .unwrap()
        .lone_member()
        .unwrap();
    let report = member.verify(&VerifyOptions::default()).await;
    assert!(!report.is_sound());
    assert_eq!(
        report.checked.segments_opened, report.checked.data_segments,
        "segment footers are intact"
    );
    for finding in report.problems() {
        assert!(
            matches!(finding, Finding::Array { array, .. } if array == "temperature"),
            "{finding}"
        );
    }
}

#[tokio::test]
async fn a_damaged_segment_footer_is_a_segment_finding() {
    // Across the end of segment "temperature": its array-format footer.
    let dir = damaged_small(40..400);
    let member = Atlas::open(dir.path(), &atlas::OpenOptions::default())
        .await
        .unwrap()
        .lone_member()
        .unwrap();
    let report = member.verify(&VerifyOptions::default()).await;
    assert!(
        report
            .problems()
            .any(|f| matches!(f, Finding::Segment { segment, .. } if segment == "temperature")),
        "{:?}",
        report.findings
    );
    assert!(report.checked.segments_opened < report.checked.data_segments);
}

#[tokio::test]
async fn a_mask_with_an_ordinal_out_of_range_is_a_warning_not_a_problem() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture("small").join("data.atlas"),
        dir.path().join("data.atlas"),
    )
    .unwrap();
    let member = Atlas::open(dir.path(), &atlas::OpenOptions::default())
        .await
        .unwrap()
        .lone_member()
        .unwrap();
    let total = member.dataset_count_total() as u32;
    drop(member);
    let mut mask = atlas_format::DeletionMask::default();
    mask.insert(total + 5);
    std::fs::write(dir.path().join("deleted.mask"), mask.encode()).unwrap();
    let member = Atlas::open(dir.path(), &atlas::OpenOptions::default())
        .await
        .unwrap()
        .lone_member()
        .unwrap();
    let report = member.verify(&VerifyOptions::default()).await;
    assert!(report.is_sound(), "{:?}", report.findings);
    assert!(
        report
            .warnings()
            .any(|f| matches!(f, Finding::MaskWarning { .. })),
        "{:?}",
        report.findings
    );
}

#[tokio::test]
async fn deep_verify_finds_every_fixture_s_statistics_agree_with_its_values() {
    for name in ["small", "deleted", "mixed", "empty"] {
        let member = Atlas::open(fixture(name), &atlas::OpenOptions::default())
            .await
            .unwrap()
            .lone_member()
            .unwrap();
        let report = member.verify(&VerifyOptions::new().deep(true)).await;
        assert!(report.is_sound(), "{name}: {:?}", report.findings);
    }
}

#[tokio::test]
async fn deep_verify_sees_damage_that_still_decodes_and_plain_verify_does_not() {
    // Fixture "small" stores its blocks uncompressed or with a codec whose
    // payload bytes decode whatever they hold: find a flip that plain verify
    // accepts and the deep check refuses.
    let original = std::fs::read(fixture("small").join("data.atlas")).unwrap();
    let clean = Atlas::open(fixture("small"), &atlas::OpenOptions::default())
        .await
        .unwrap()
        .lone_member()
        .unwrap();
    let segments_end: u64 = 8 + clean.segments().iter().map(|v| v.len).sum::<u64>();
    let (mut silent, mut caught) = (0, 0);
    for pos in 8..segments_end as usize {
        let mut bytes = original.clone();
        bytes[pos] ^= 0x40;
        let op = opendal::Operator::new(opendal::services::Memory::default()).unwrap();
        op.write("data.atlas", bytes).await.unwrap();
        let Ok(atlas) = Atlas::open((op, ""), &atlas::OpenOptions::default()).await else {
            continue;
        };
        let member = atlas.lone_member().unwrap();
        if !member.verify(&VerifyOptions::default()).await.is_sound() {
            continue;
        }
        silent += 1;
        let deep = member.verify(&VerifyOptions::new().deep(true)).await;
        if deep
            .problems()
            .any(|f| matches!(f, Finding::StatisticsDisagree { .. }))
        {
            caught += 1;
            break;
        }
    }
    assert!(silent > 0, "some flips pass plain verify");
    assert!(
        caught > 0,
        "the deep check catches some of the {silent} silent flips"
    );
}

#[tokio::test]
async fn a_temp_file_an_interrupted_write_left_is_a_leftover_warning_not_a_problem() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture("small").join("data.atlas"),
        dir.path().join("data.atlas"),
    )
    .unwrap();
    std::fs::create_dir(dir.path().join(".atlas-tmp")).unwrap();
    std::fs::write(dir.path().join(".atlas-tmp/put-1"), [0u8; 42]).unwrap();
    let member = Atlas::open(dir.path(), &atlas::OpenOptions::default())
        .await
        .unwrap()
        .lone_member()
        .unwrap();
    let report = member.verify(&VerifyOptions::default()).await;
    assert!(report.is_sound(), "{:?}", report.findings);
    let leftovers: Vec<_> = report
        .warnings()
        .filter_map(|f| match f {
            Finding::Leftover { leftover } => Some(leftover),
            _ => None,
        })
        .collect();
    assert_eq!(leftovers.len(), 1, "{:?}", report.findings);
    assert_eq!(leftovers[0].path, ".atlas-tmp/put-1");
    assert_eq!(
        leftovers[0].kind,
        atlas::LeftoverKind::TempFile { bytes: 42 }
    );
}
