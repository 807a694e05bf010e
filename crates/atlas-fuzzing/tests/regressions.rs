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

/// A small deterministic generator (SplitMix64) for the mutations below.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[test]
fn a_real_index_and_mutations_of_it_run_clean_through_the_index_target() {
    let seed = atlas_fuzzing::index_seed();
    assert!(seed.len() > 100, "the fixture's index was written");
    run_mutations(target("index"), &seed, 0x1D3A, 200);
}

#[test]
fn a_real_index_with_chunk_places_and_mutations_of_it_read_what_was_written() {
    let seed = atlas_fuzzing::index_places_seed();
    assert!(seed.len() > 10_000, "the fixture's index was written");
    run_mutations(target("index_places"), &seed, 0x9A1C, 40);
}

/// Runs `seed` and mutations of it (an index file) through `target`:
/// `ATLAS_INDEX_MUTATIONS` sets how many (a long run is the fuzz run
/// without cargo-fuzz); `cases` keeps `cargo test` quick.
fn run_mutations(target: Target, seed: &[u8], start: u64, cases: usize) {
    (target.run)(seed);
    let cases: usize = std::env::var("ATLAS_INDEX_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    let mut mix = Mix(start);
    for case in 0..cases {
        let mut bytes = seed.to_vec();
        match case % 4 {
            // Flipped bytes anywhere, footer included.
            0 => {
                for _ in 0..1 + mix.below(8) {
                    let at = mix.below(bytes.len());
                    bytes[at] ^= 1 << mix.below(8);
                }
            }
            // Flipped bytes in the column chunks only: the footer still ties.
            1 => {
                let footer = u32::from_le_bytes(bytes[bytes.len() - 8..][..4].try_into().unwrap());
                let data_end = bytes.len() - 8 - footer as usize;
                assert!(data_end > 4, "the seed has column chunks");
                for _ in 0..1 + mix.below(16) {
                    let at = 4 + mix.below(data_end - 4);
                    bytes[at] = mix.next() as u8;
                }
            }
            // Truncated.
            2 => bytes.truncate(mix.below(bytes.len())),
            // A run of bytes overwritten with one value (a huge length, zeros).
            _ => {
                let at = mix.below(bytes.len());
                let len = (1 + mix.below(64)).min(bytes.len() - at);
                let fill = [0x00, 0xff, 0x7f][mix.below(3)];
                bytes[at..at + len].fill(fill);
            }
        }
        (target.run)(&bytes);
    }
}
