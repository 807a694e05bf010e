//! A simulation of the set protocol: seeded runs of appends, deletes,
//! compactions and readers over an in-memory object store with conditional
//! writes (`CasMemory`), with write faults injected before steps (a write
//! refused before it takes effect, a write whose answer is lost after it took
//! effect, the writer killed after some of its writes), checked against a model after every step:
//!
//! - every acknowledged step is visible to a new reader, exactly: no dataset
//!   lost, duplicated or brought back, every value the model's;
//! - every reader opened earlier still reads the generation it opened, values
//!   unchanged (the members a compaction replaced stay until cleanup);
//! - two writers committing at once both land;
//! - a writer killed between two requests leaves the set as before its
//!   change or as after it (a delete across members too: all or nothing).
//!
//! - two changes racing (two writers, with a reader reading meanwhile) both
//!   land, and the reader sees the set as before, as after either or as
//!   after both.
//!
//! The store reorders requests (`CasMemory::reorder`, seeded from the run's
//! input): each request waits a drawn number of scheduler turns before it
//! takes effect, and a write again before it is answered, so concurrent
//! writers' and readers' requests interleave in orders the store alone
//! never produces.
//!
//! A run is a list of steps and a reordering seed that proptest generates
//! and shrinks on failure; the steps run one after another (the concurrent
//! ones inside a step, on one thread), so a failing case replays from the
//! printed input.

#![cfg(test)]

use crate::s3_support;

use std::collections::BTreeMap;
use std::time::Duration;

use atlas::{Atlas, CompactOptions, OpenOptions, Region, RetryPolicy, SetWriter, WriterConfig};
use atlas_io::CasMemory;
use opendal::Operator;
use proptest::prelude::*;

/// Dataset names a run draws from: few, so that names are replaced and
/// deleted again and again.
const NAMES: u8 = 8;

/// Where a fault is armed: the object whose next write fails or loses its answer.
#[derive(Debug, Clone, Copy)]
enum Target {
    Manifest,
    Mask,
    Container,
}

impl Target {
    fn path_end(self) -> &'static str {
        match self {
            Target::Manifest => "set.manifest",
            Target::Mask => "deleted.mask",
            Target::Container => "data.atlas",
        }
    }
}

#[derive(Debug, Clone)]
enum Step {
    /// Commit a member holding these names (value: the step's number).
    Append(Vec<u8>),
    /// Two writers commit members at once (disjoint names).
    AppendTwice(Vec<u8>, Vec<u8>),
    /// One commit adds the first names and hides the second (those not added).
    AppendHiding(Vec<u8>, Vec<u8>),
    /// Delete these names (those live; nothing when none is).
    Delete(Vec<u8>),
    Compact,
    /// Open a reader and ask it a first question; it is checked after every later step.
    OpenReader,
    /// The change, with its process killed after this many writes and deletes
    /// took effect (0: before its first request).
    Killed(Box<Step>, u32),
    /// Two changes at once, by two writers, while a reader reads (the
    /// second's names are made disjoint from the first's).
    Race(Box<Step>, Box<Step>),
    /// Arm a fault for the next write to `Target`'s objects.
    FailBefore(Target),
    LoseAnswer(Target),
}

fn names() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(0..NAMES, 1..4)
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        Just(Target::Manifest),
        Just(Target::Mask),
        Just(Target::Container)
    ]
}

/// A change one writer makes: what a kill can cut short.
fn change() -> impl Strategy<Value = Step> {
    prop_oneof![
        names().prop_map(Step::Append),
        (names(), names()).prop_map(|(a, b)| Step::AppendHiding(a, b)),
        names().prop_map(Step::Delete),
        Just(Step::Compact),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => (change(), 0..12u32).prop_map(|(c, n)| Step::Killed(Box::new(c), n)),
        4 => names().prop_map(Step::Append),
        1 => (names(), names()).prop_map(|(a, b)| Step::AppendTwice(a, b)),
        2 => (names(), names()).prop_map(|(a, b)| Step::AppendHiding(a, b)),
        2 => names().prop_map(Step::Delete),
        1 => Just(Step::Compact),
        1 => Just(Step::OpenReader),
        2 => (change(), change()).prop_map(|(a, b)| Step::Race(Box::new(a), Box::new(b))),
        1 => target().prop_map(Step::FailBefore),
        1 => target().prop_map(Step::LoseAnswer),
    ]
}

/// Live name to its value.
type Model = BTreeMap<String, f32>;

struct Sim {
    /// Where armed faults go; `None` on a real protocol, whose faults come
    /// from its fault proxy instead.
    cas: Option<CasMemory>,
    op: Operator,
    model: Model,
    readers: Vec<(Atlas, Model)>,
    commits: u64,
    /// Race steps run, and reads during them that saw one change but not the other.
    races: u64,
    reads_between: u64,
}

fn name(i: u8) -> String {
    format!("n{i}")
}

impl Sim {
    fn new() -> Sim {
        Sim::reordered(None)
    }

    /// Over `CasMemory`, reordering requests by `seed` when given (up to 3
    /// scheduler turns a request; `ATLAS_SIM_REORDER` sets another most, 0
    /// none).
    fn reordered(seed: Option<u64>) -> Sim {
        let cas = CasMemory::new();
        if let Some(seed) = seed {
            cas.reorder(seed, env_cases("ATLAS_SIM_REORDER", 3));
        }
        let ms = Duration::from_millis;
        let op = RetryPolicy::default()
            .backoff(ms(1), ms(2))
            .apply(cas.operator());
        Sim::over(op, Some(cas))
    }

    fn over(op: Operator, cas: Option<CasMemory>) -> Sim {
        Sim {
            cas,
            op,
            model: Model::new(),
            readers: Vec::new(),
            commits: 0,
            races: 0,
            reads_between: 0,
        }
    }

    /// Commits one member holding `names`, each valued `value`.
    async fn append(op: Operator, nonce: u64, names: &[u8], value: f32) {
        Sim::append_hiding(op, nonce, names, &[], value)
            .await
            .expect("a commit lands, whatever faults its retries meet");
    }

    /// Commits one member holding `names`, each valued `value`, that hides `hide`.
    async fn append_hiding(
        op: Operator,
        nonce: u64,
        names: &[u8],
        hide: &[u8],
        value: f32,
    ) -> atlas::Result<()> {
        let ms = 1_700_000_000_000 + i64::try_from(nonce).unwrap_or(0);
        let config = WriterConfig::default().created_unix_ms(ms);
        let mut set = SetWriter::create((op, "set"), &config).await?;
        let id = atlas::member_id(ms, nonce);
        let member = set.add_member(&id).await?;
        let mut unique = names.to_vec();
        unique.sort_unstable();
        unique.dedup();
        for &n in &unique {
            let mut ds = member.writer().add_dataset(&name(n))?;
            ds.define_array::<f32>("TEMP", &["N"], &[1], None, None)?;
            ds.write_array("TEMP", &[0], ndarray::arr1(&[value]).into_dyn().view())?;
            ds.finish().await?;
        }
        let hidden: Vec<String> = hide.iter().map(|&n| name(n)).collect();
        let hidden: Vec<&str> = hidden.iter().map(String::as_str).collect();
        set.hide(&member, &hidden).await?;
        set.finish_member(member).await?;
        set.commit().await.map(|_| ())
    }

    /// Runs one single-writer change (an append, a delete, a compaction):
    /// what it returned, and the model as it is if the change landed.
    async fn attempt(&mut self, number: u64, step: &Step) -> (atlas::Result<()>, Model) {
        let nonce = self.next_nonce(step);
        self.attempt_with(number, step, nonce).await
    }

    /// The member nonce a change commits with (a new one per append).
    fn next_nonce(&mut self, step: &Step) -> u64 {
        if matches!(step, Step::Append(_) | Step::AppendHiding(..)) {
            self.commits += 1;
        }
        self.commits
    }

    /// [`attempt`](Self::attempt) with the nonce given, so that two can run at once.
    async fn attempt_with(
        &self,
        number: u64,
        step: &Step,
        nonce: u64,
    ) -> (atlas::Result<()>, Model) {
        #[allow(clippy::cast_precision_loss)]
        let value = number as f32;
        let mut after = self.model.clone();
        let result = match step {
            Step::Append(add) | Step::AppendHiding(add, _) => {
                let hide: Vec<u8> = match step {
                    Step::AppendHiding(_, hide) => {
                        let mut hide: Vec<u8> =
                            hide.iter().copied().filter(|n| !add.contains(n)).collect();
                        hide.sort_unstable();
                        hide.dedup();
                        hide
                    }
                    _ => Vec::new(),
                };
                for &n in add {
                    after.insert(name(n), value);
                }
                for &n in &hide {
                    after.remove(&name(n));
                }
                Sim::append_hiding(self.op.clone(), nonce, add, &hide, value).await
            }
            Step::Delete(names) => {
                let live: Vec<String> = names
                    .iter()
                    .map(|&n| name(n))
                    .filter(|n| self.model.contains_key(n))
                    .collect();
                for n in &live {
                    after.remove(n);
                }
                if live.is_empty() {
                    Ok(())
                } else {
                    let refs: Vec<&str> = live.iter().map(String::as_str).collect();
                    match self.open_existing().await {
                        Ok(Some(set)) => set.delete_datasets(&refs).await.map(|_| ()),
                        Ok(None) => Ok(()),
                        Err(e) => Err(e),
                    }
                }
            }
            Step::Compact if self.commits > 0 => {
                let options = CompactOptions::default()
                    .target_datasets(u64::from(NAMES) * 4)
                    // A racing second compaction's ids differ by their time.
                    .ids(1_800_000_000_000 + i64::from(nonce >= 1 << 32), number);
                match self.open_existing().await {
                    Ok(Some(set)) => set.compact(&options).await.map(|_| ()),
                    Ok(None) => Ok(()),
                    Err(e) => Err(e),
                }
            }
            _ => Ok(()),
        };
        (result, after)
    }

    async fn run(&mut self, number: u64, step: &Step) {
        #[allow(clippy::cast_precision_loss)]
        let value = number as f32;
        match step {
            Step::Append(_) | Step::AppendHiding(..) | Step::Delete(_) | Step::Compact => {
                let (result, after) = self.attempt(number, step).await;
                result.expect("a change lands, whatever faults its retries meet");
                self.model = after;
            }
            Step::Killed(change, changes) => {
                let Some(cas) = self.cas.clone() else {
                    return;
                };
                let before = self.model.clone();
                cas.kill_after_changes(*changes);
                let (result, after) = self.attempt(number, change).await;
                cas.revive();
                // The next process sees the set as before or as after, never between.
                let seen = self.observe().await;
                if result.is_ok() {
                    assert_eq!(seen, after, "{change:?} reported landed");
                } else {
                    assert!(
                        seen == before || seen == after,
                        "{change:?} killed after {changes} changes: neither before nor after: {seen:?}"
                    );
                }
                self.model = seen;
            }
            Step::AppendTwice(a, b) => {
                let b: Vec<u8> = b.iter().copied().filter(|n| !a.contains(n)).collect();
                let (first, second) = (self.commits + 1, self.commits + 2);
                self.commits += 2;
                let later = value + 0.5;
                if b.is_empty() {
                    Sim::append(self.op.clone(), first, a, value).await;
                } else {
                    tokio::join!(
                        Sim::append(self.op.clone(), first, a, value),
                        Sim::append(self.op.clone(), second, &b, later),
                    );
                }
                for &n in a {
                    self.model.insert(name(n), value);
                }
                for &n in &b {
                    self.model.insert(name(n), later);
                }
            }
            Step::Race(a, b) => self.race(number, a, b).await,
            Step::OpenReader => {
                let Some(reader) = self.open_existing().await.expect("the set opens") else {
                    return;
                };
                // Its first question reads the members' masks: its snapshot.
                assert_eq!(names_of(&reader).await, keys(&self.model));
                self.readers.push((reader, self.model.clone()));
            }
            Step::FailBefore(t) => {
                if let Some(cas) = &self.cas {
                    cas.fail_next_write(t.path_end());
                }
            }
            Step::LoseAnswer(t) => {
                if let Some(cas) = &self.cas {
                    cas.lose_next_answer(t.path_end());
                }
            }
        }
    }

    /// Two changes at once while a reader reads twice: both land (two
    /// compactions may conflict: one lands), and each read is the set as
    /// before, after either change or after both.
    async fn race(&mut self, number: u64, a: &Step, b: &Step) {
        let b = disjoint(b, &touched(a));
        let before = self.model.clone();
        let nonce_a = self.next_nonce(a);
        let nonce_b = self.next_nonce(&b);
        let (first, second, seen) = tokio::join!(
            self.attempt_with(number, a, nonce_a),
            // Its nonce kept apart from the first's, also for compactions.
            self.attempt_with(number, &b, nonce_b.wrapping_add(1 << 32)),
            async {
                let mut seen = Vec::new();
                for _ in 0..2 {
                    seen.push(self.observe().await);
                }
                seen
            },
        );
        let both_compact = matches!((a, &b), (Step::Compact, Step::Compact));
        for (result, step) in [(&first.0, a), (&second.0, &b)] {
            match result {
                Ok(()) => {}
                Err(atlas::AtlasError::CommitConflict { .. }) if both_compact => {}
                Err(e) => panic!("{step:?} racing {a:?} / {b:?} failed: {e}"),
            }
        }
        let only_a = first.1.clone();
        let only_b = second.1.clone();
        let after = merged(&before, &only_a, &only_b);
        self.races += 1;
        for (i, s) in seen.iter().enumerate() {
            if *s != before && *s != after {
                self.reads_between += 1;
            }
            assert!(
                [&before, &only_a, &only_b, &after].contains(&s),
                "read {i} during {a:?} racing {b:?}: neither before, nor after one, nor after both: {s:?}"
            );
        }
        self.model = after;
    }

    /// The set, or `None` where no commit landed yet.
    async fn open_existing(&self) -> atlas::Result<Option<Atlas>> {
        match Atlas::open((self.op.clone(), "set"), &OpenOptions::default()).await {
            Ok(set) => Ok(Some(set)),
            Err(atlas::AtlasError::Io(io)) if io.kind() == atlas::IoErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// What a new reader sees: nothing where no commit landed yet.
    async fn observe(&self) -> Model {
        match self.open_existing().await.expect("the set opens") {
            Some(set) => read_all(&set).await,
            None => Model::new(),
        }
    }

    /// A new reader sees the model; every earlier reader still sees its own.
    async fn check(&self, after: &Step) {
        assert_eq!(
            self.observe().await,
            self.model,
            "a new reader after {after:?}"
        );
        for (i, (reader, seen)) in self.readers.iter().enumerate() {
            assert_eq!(
                &read_all(reader).await,
                seen,
                "reader {i} after {after:?}: the generation it opened"
            );
        }
    }
}

/// The names a change adds, hides or deletes.
fn touched(step: &Step) -> Vec<u8> {
    match step {
        Step::Append(a) | Step::Delete(a) => a.clone(),
        Step::AppendHiding(a, h) => a.iter().chain(h).copied().collect(),
        _ => Vec::new(),
    }
}

/// `step` without the names in `taken`: a change that commutes with the one
/// that touched them (an empty name list becomes a compaction).
fn disjoint(step: &Step, taken: &[u8]) -> Step {
    let keep = |names: &[u8]| -> Vec<u8> {
        names
            .iter()
            .copied()
            .filter(|n| !taken.contains(n))
            .collect()
    };
    match step {
        Step::Append(a) if !keep(a).is_empty() => Step::Append(keep(a)),
        Step::Delete(a) if !keep(a).is_empty() => Step::Delete(keep(a)),
        Step::AppendHiding(a, h) if !keep(a).is_empty() => Step::AppendHiding(keep(a), keep(h)),
        _ => Step::Compact,
    }
}

/// `before` with the changes of both `a` and `b` (each made from `before`,
/// on disjoint names).
fn merged(before: &Model, a: &Model, b: &Model) -> Model {
    let mut out = a.clone();
    for k in before.keys().chain(b.keys()) {
        match (before.get(k), b.get(k)) {
            (x, y) if x == y => {}
            (_, Some(v)) => {
                out.insert(k.clone(), *v);
            }
            (_, None) => {
                out.remove(k);
            }
        }
    }
    out
}

fn keys(model: &Model) -> Vec<String> {
    model.keys().cloned().collect()
}

async fn names_of(set: &Atlas) -> Vec<String> {
    let mut names: Vec<String> = set
        .dataset_names()
        .await
        .expect("names")
        .iter()
        .map(ToString::to_string)
        .collect();
    names.sort();
    names
}

/// Every live dataset's name and `TEMP` value, failing on a name listed twice.
async fn read_all(set: &Atlas) -> Model {
    let mut out = Model::new();
    for name in set.dataset_names().await.expect("names") {
        let value = set
            .dataset(&name)
            .await
            .expect("a listed dataset opens")
            .read_array::<f32>("TEMP", Region::all())
            .await
            .expect("a listed dataset reads");
        let first = value.iter().copied().next().expect("one value");
        assert!(
            out.insert(name.to_string(), first).is_none(),
            "{name} listed twice"
        );
    }
    out
}

/// A delete of names in three members, its process killed after each number
/// of its writes in turn until one run completes: every time, a new reader
/// sees all three names or none of them, and a delete retried after the kill lands.
#[tokio::test]
async fn a_deleter_killed_between_any_two_requests_leaves_the_set_as_before_or_after() {
    let mut completed = false;
    let mut saw_before = false;
    for kill_after in 0..64u32 {
        let mut sim = Sim::new();
        for (number, names) in [(1, vec![0, 1]), (2, vec![2, 3]), (3, vec![4])] {
            sim.run(number, &Step::Append(names)).await;
        }
        let before = sim.model.clone();
        let delete = Step::Delete(vec![0, 2, 4]);
        let cas = sim.cas.clone().expect("an in-memory store");
        cas.kill_after_changes(kill_after);
        let (result, after) = sim.attempt(10, &delete).await;
        cas.revive();
        assert_eq!(after.len(), 2, "the delete removes three of five names");
        let seen = sim.observe().await;
        if result.is_ok() {
            assert_eq!(seen, after, "a delete that reported success is seen whole");
            completed = true;
            break;
        }
        assert!(
            seen == before || seen == after,
            "killed after {kill_after} writes: a new reader sees part of the delete: {seen:?}"
        );
        saw_before |= seen == before;
        // The retry, in a new process, lands whole.
        sim.model = seen;
        let (retry, after) = sim.attempt(11, &delete).await;
        retry.expect("the retried delete lands");
        assert_eq!(
            sim.observe().await,
            after,
            "killed after {kill_after} writes, then retried"
        );
    }
    assert!(completed, "some number of writes lets the delete complete");
    assert!(saw_before, "some kill left the set as before the delete");
}

/// Runs per `cargo test`: 400 by default (about 15 s in a debug build on two
/// quiet cores before racing steps came in; 60 to 85 s with them on two cores
/// busy with other builds); `ATLAS_SIM_CASES` sets another number (the long
/// runs of the docs).
fn cases() -> u32 {
    env_cases("ATLAS_SIM_CASES", 400)
}

fn env_cases(var: &str, default: u32) -> u32 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn every_acknowledged_step_is_seen_and_every_reader_keeps_its_generation(
        steps in proptest::collection::vec(step(), 1..24),
        reorder in any::<u64>(),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let mut sim = Sim::reordered(Some(reorder));
            for (number, step) in (1u64..).zip(&steps) {
                sim.run(number, step).await;
                sim.check(step).await;
            }
            if let Some(cas) = &sim.cas {
                eprintln!(
                    "sim: {} steps, {} races, {} reads between two racing changes, {} requests delayed",
                    steps.len(),
                    sim.races,
                    sim.reads_between,
                    cas.delayed_requests()
                );
            }
        });
    }
}

proptest! {
    // 6 runs per `cargo test` (about 10 s); `ATLAS_SIM_S3_CASES` sets another number.
    #![proptest_config(ProptestConfig {
        cases: env_cases("ATLAS_SIM_S3_CASES", 6),
        ..ProptestConfig::default()
    })]

    /// The same runs on a real S3 protocol (the in-process server) behind the
    /// fault proxy: 3 % of requests answered 500/503, and on GETs dropped
    /// connections, short bodies and slow first bytes.
    #[test]
    fn on_s3_behind_faults_every_step_is_seen_and_every_reader_keeps_its_generation(
        steps in proptest::collection::vec(step(), 1..12)
    ) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let server = s3_support::server();
            let proxy = atlas_testkit::FaultProxy::start(
                server.endpoint(),
                atlas_testkit::FaultPlan::every_kind(7, 30, Duration::from_millis(20)),
            );
            let root = format!("/{}/", s3_support::unique("sim"));
            let (op, _) = s3_support::s3_at(proxy.endpoint(), &root);
            let ms = Duration::from_millis;
            let op = RetryPolicy::default().max_retries(8).backoff(ms(5), ms(50)).apply(op);
            let mut sim = Sim::over(op, None);
            for (number, step) in (1u64..).zip(&steps) {
                sim.run(number, step).await;
                sim.check(step).await;
            }
            eprintln!("{} steps; fault proxy: {:?}", steps.len(), proxy.counts());
        });
    }
}
