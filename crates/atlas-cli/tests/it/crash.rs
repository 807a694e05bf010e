//! Crash consistency on local disk: a writer or a delete killed (SIGKILL) at
//! any point leaves either nothing that opens or the complete result.

#![cfg(test)]

use crate::common;

use std::time::Duration;

use atlas::{Atlas, AtlasError, IoErrorKind, VerifyOptions};
use common::{KillSchedule, s};

const PROFILES: usize = 200;
const KILLS: u32 = 50;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// How long a whole demo write takes here, to spread the kills over it.
fn full_write_time(root: &std::path::Path) -> Duration {
    let dir = root.join("timing");
    let started = std::time::Instant::now();
    let ok = std::process::Command::new(assert_cmd::cargo::cargo_bin("atlas"))
        .args(["-q", "demo", s(&dir), "--count", &PROFILES.to_string()])
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(ok.success());
    started.elapsed()
}

#[test]
fn a_writer_killed_at_any_point_leaves_nothing_that_opens_or_the_whole_collection() {
    let root = tempfile::tempdir().unwrap();
    let span = full_write_time(root.path());
    let rt = rt();
    let (mut absent, mut complete) = (0, 0);
    let mut schedule = KillSchedule::new(span, KILLS, 2.0);
    while let Some((i, delay)) = schedule.next(absent, complete) {
        let dir = root.path().join(format!("c{i}"));
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("atlas"))
            .args(["-q", "demo", s(&dir), "--count", &PROFILES.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let _ = child.kill();
        let _ = child.wait();
        match rt.block_on(Atlas::open(&dir, &atlas::OpenOptions::default())) {
            Err(AtlasError::Io(io)) if io.kind() == IoErrorKind::NotFound => absent += 1,
            Err(e) => panic!("kill {i}: a half-written collection: {e}"),
            Ok(atlas) => {
                assert_eq!(
                    rt.block_on(atlas.dataset_count()).unwrap(),
                    PROFILES,
                    "kill {i}"
                );
                let member = atlas.lone_member().expect("a lone collection");
                let report = rt.block_on(member.verify(&VerifyOptions::default()));
                assert!(report.is_sound(), "kill {i}: {:?}", report.findings);
                complete += 1;
            }
        }
    }
    let kills = absent + complete;
    let leftovers = (0..kills)
        .filter(|i| {
            std::fs::read_dir(root.path().join(format!("c{i}/.atlas-tmp")))
                .is_ok_and(|mut d| d.next().is_some())
        })
        .count();
    eprintln!(
        "{kills} kills: {absent} absent, {complete} complete, {leftovers} with temp files left"
    );
    // Both outcomes happen, so the kill points did cover the write.
    assert!(
        absent > 0 && complete > 0,
        "absent {absent}, complete {complete}"
    );
}

#[test]
fn a_delete_killed_at_any_point_leaves_the_old_mask_or_the_new_one() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("c");
    let ok = std::process::Command::new(assert_cmd::cargo::cargo_bin("atlas"))
        .args(["-q", "demo", s(&dir), "--count", "50"])
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(ok.success());
    let rt = rt();
    let atlas = rt
        .block_on(Atlas::open(&dir, &atlas::OpenOptions::default()))
        .unwrap();
    let names: Vec<atlas::SmolStr> = rt.block_on(atlas.dataset_names()).unwrap();
    for (i, pair) in names.chunks(2).take(20).enumerate() {
        let before = rt
            .block_on(async {
                Atlas::open(&dir, &atlas::OpenOptions::default())
                    .await?
                    .dataset_count()
                    .await
            })
            .unwrap();
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("atlas"))
            .args(["-q", "rm", s(&dir), &pair[0], &pair[1]])
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(400 * i as u64));
        let _ = child.kill();
        let _ = child.wait();
        let after = rt
            .block_on(Atlas::open(&dir, &atlas::OpenOptions::default()))
            .unwrap();
        let member = after.lone_member().expect("a lone collection");
        assert!(
            member.mask_warnings().is_empty(),
            "kill {i}: {:?}",
            member.mask_warnings()
        );
        let hidden = before - rt.block_on(after.dataset_count()).unwrap();
        assert!(
            hidden == 0 || hidden == 2,
            "kill {i}: a torn delete hid {hidden}"
        );
    }
}
