//! Replays, through the same functions the fuzzer runs:
//! - every input a fuzz run ever caught (`fuzz/regressions/<target>/`),
//! - and the seeds the corpora start from, built from the conformance
//!   fixtures (`testdata/v8`), so a target that breaks on a valid collection
//!   fails here before anyone fuzzes.
//!
//! A panic in a target is a failure of this test.

#![cfg(test)]

use std::path::{Path, PathBuf};

use atlas_format::{DecodeLimits, open_bytes};
use atlas_fuzzing::{TARGETS, Target, collection_input};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn target(name: &str) -> Target {
    *TARGETS.iter().find(|t| t.name == name).unwrap()
}

#[test]
fn every_caught_input_runs_clean_through_its_target() {
    let mut replayed = 0;
    for target in TARGETS {
        for file in files_in(&root().join("fuzz/regressions").join(target.name)) {
            let bytes = std::fs::read(&file).unwrap();
            eprintln!("{}: {}", target.name, file.display());
            (target.run)(&bytes);
            replayed += 1;
        }
    }
    // The corpus is committed: an empty replay means the path is wrong.
    assert!(replayed > 0, "no regression inputs under fuzz/regressions");
}

#[test]
fn every_fixture_runs_clean_through_every_target_that_takes_its_parts() {
    let fixtures = root().join("testdata/v8");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&fixtures)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty());
    for dir in dirs {
        let container = std::fs::read(dir.join("data.atlas")).unwrap();
        let mask = std::fs::read(dir.join("deleted.mask")).ok();
        (target("open").run)(&container);
        (target("collection").run)(&collection_input(&container, mask.as_deref()));
        let opened = open_bytes(&container, DecodeLimits::default()).unwrap();
        for v in &opened.footer.variables {
            let range = v.range().unwrap();
            let segment = &container[range.start as usize..range.end as usize];
            (target("segment").run)(segment);
        }
        if let Some(mask) = mask {
            let count = opened.footer.datasets.len() as u32;
            let mut seed = count.to_le_bytes().to_vec();
            seed.extend_from_slice(&mask);
            (target("mask").run)(&seed);
        }
    }
}
