//! # atlas-fuzzing
//!
//! One function per fuzz target, each taking arbitrary bytes and exercising
//! one decoder (or the whole reader) the way storage could feed it. Errors
//! are fine; a panic, an abort or an out-of-memory is a finding. The targets
//! in `fuzz/` are one-line wrappers around these, and this crate's test
//! replays `fuzz/regressions/<target>/` and the conformance fixtures through
//! them, so every input the fuzzer ever caught stays fixed under `cargo test`.

// The expects and panics in the targets are oracles on what a decoder
// returned (an opened footer validates, a decoded mask round-trips): a panic
// there is how libFuzzer records a finding. The harness's own handling of
// the input (splitting, slicing) never panics and is linted as usual.
#![allow(
    clippy::expect_used,
    clippy::panic,
    reason = "a fuzz target's oracle: a failed property of a decoder's output is a finding"
)]

mod collection;
mod format;
mod index;
mod segment;

pub use collection::{collection, collection_input};
pub use format::{footer, mask, open, set_manifest};
pub use index::{index, index_places, index_places_seed, index_seed};
pub use segment::segment;

/// A fuzz target: its name (the directory of its corpus) and its body.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// The name `cargo fuzz run` takes.
    pub name: &'static str,
    /// What the target does with one input.
    pub run: fn(&[u8]),
}

/// Every target, in the order `cargo xtask fuzz` runs them.
pub const TARGETS: [Target; 8] = [
    Target {
        name: "open",
        run: open,
    },
    Target {
        name: "footer",
        run: footer,
    },
    Target {
        name: "mask",
        run: mask,
    },
    Target {
        name: "segment",
        run: segment,
    },
    Target {
        name: "set_manifest",
        run: set_manifest,
    },
    Target {
        name: "collection",
        run: collection,
    },
    Target {
        name: "index",
        run: index,
    },
    Target {
        name: "index_places",
        run: index_places,
    },
];

/// Runs `body` on a fresh single-threaded runtime (the async targets).
fn block_on<F: std::future::Future<Output = ()>>(body: F) {
    if let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    {
        rt.block_on(body);
    }
}

/// Reads larger than this many elements are skipped: the targets look for
/// crashes, not for what a huge declared array costs to fill.
const MAX_ELEMENTS: u64 = 1 << 20;

/// Whether `shape` has at most [`MAX_ELEMENTS`] elements.
fn small(shape: impl IntoIterator<Item = u64>) -> bool {
    shape
        .into_iter()
        .try_fold(1u64, |acc, d| acc.checked_mul(d))
        .is_some_and(|n| n <= MAX_ELEMENTS)
}
