//! One segment writer per variable, each behind its own lock.
//!
//! A `SegmentWriter` takes `&mut self` for everything, so each variable's
//! writer sits in its own mutex. A dataset pushes
//! each of its arrays into that array's variable while holding only that
//! variable's lock, so datasets whose arrays live in different variables, or
//! that reach a shared variable at different moments, compress in parallel.
//!
//! A push is cheap (copies, statistics) unless it fills the variable's open
//! block, whose compression then runs inside the push. Each variable tracks
//! how full its open block is, so the dataset writer can push what is cheap
//! right away on the calling task and leave only pushes that would compress a
//! block (or wait for a busy variable) to a blocking thread.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use atlas_segment::SegmentWriter;
use smol_str::SmolStr;

use super::config::WriterConfig;
use crate::error::Result;

/// What one variable's lock protects.
#[derive(Default)]
pub(crate) struct VarState {
    writer: Option<SegmentWriter>,
    /// Bytes in the writer's open (not yet compressed) block, as the segment
    /// writer fills it: one allocation per chunk pushed, flushed once it reaches the
    /// block target size.
    open_block: u64,
    /// The writer's block size, fixed when it is created (0 before).
    target: u64,
}

impl VarState {
    /// The block size pushing `chunks` works against: the writer's, or the
    /// one a writer created for them would get.
    fn target(&self, config: &WriterConfig, chunks: &[u64]) -> u64 {
        match self.writer {
            Some(_) => self.target,
            None => config.block_target_for(chunks) as u64,
        }
    }
}

/// One variable: a segment under construction.
pub(crate) struct Variable {
    name: SmolStr,
    state: Mutex<VarState>,
}

/// Something to push into one variable's writer.
pub(crate) trait PushJob {
    /// Encoded bytes of each chunk the push allocates, in order.
    fn chunk_bytes(&self) -> Vec<u64>;
    /// Does the push.
    fn run(&self, writer: &mut SegmentWriter) -> Result<()>;
}

impl Variable {
    fn lock(&self) -> MutexGuard<'_, VarState> {
        // The segment writer does not panic, so a poisoned lock only means a
        // panic elsewhere; the writer's
        // state is then unknown and the collection is poisoned by the caller.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn try_lock(&self) -> Option<MutexGuard<'_, VarState>> {
        match self.state.try_lock() {
            Ok(g) => Some(g),
            Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// Takes the finished writer out (at commit).
    pub(crate) fn take(&self) -> Option<SegmentWriter> {
        self.lock().writer.take()
    }
}

/// Whether allocating `chunks` into a block holding `open` bytes would fill
/// it (and so compress it inside the push); the open block's size after.
fn simulate(mut open: u64, chunks: &[u64], target: u64) -> (bool, u64) {
    let mut flushes = false;
    for &c in chunks {
        open = open.saturating_add(c);
        if open >= target {
            flushes = true;
            open = 0;
        }
    }
    (flushes, open)
}

/// Runs `job` on the locked variable, creating its writer (and block temp
/// file) on first use.
fn run_locked<J: PushJob>(
    name: &str,
    state: &mut VarState,
    config: &WriterConfig,
    job: &J,
    chunks: &[u64],
) -> Result<()> {
    let target = state.target(config, chunks);
    let writer = match &mut state.writer {
        Some(w) => w,
        slot @ None => {
            let size = usize::try_from(target).unwrap_or(usize::MAX);
            slot.insert(SegmentWriter::new(name, &config.segment_options(size))?)
        }
    };
    job.run(writer)?;
    state.target = target;
    state.open_block = simulate(state.open_block, chunks, target).1;
    Ok(())
}

/// Pushes, without waiting for any lock, every job whose variable is free and
/// whose push compresses no block; returns the jobs left for [`push_blocking`].
pub(crate) fn push_ready<J: PushJob>(
    config: &WriterConfig,
    jobs: Vec<(Arc<Variable>, J)>,
) -> Result<Vec<(Arc<Variable>, J)>> {
    let mut left = Vec::new();
    for (var, job) in jobs {
        let chunks = job.chunk_bytes();
        let Some(mut state) = var.try_lock() else {
            left.push((var, job));
            continue;
        };
        if simulate(state.open_block, &chunks, state.target(config, &chunks)).0 {
            drop(state);
            left.push((var, job));
            continue;
        }
        run_locked(&var.name, &mut state, config, &job, &chunks)?;
    }
    Ok(left)
}

/// Pushes every job, taking whichever variable is free first and blocking
/// only when every remaining one is busy. Stops at the first error.
pub(crate) fn push_blocking<J: PushJob>(
    config: &WriterConfig,
    mut jobs: Vec<(Arc<Variable>, J)>,
) -> Result<()> {
    while !jobs.is_empty() {
        let mut progressed = false;
        let mut i = 0;
        while let Some((var, job)) = jobs.get(i) {
            let done = match var.try_lock() {
                Some(mut state) => {
                    run_locked(&var.name, &mut state, config, job, &job.chunk_bytes())?;
                    true
                }
                None => false,
            };
            if done {
                jobs.remove(i);
                progressed = true;
            } else {
                i += 1;
            }
        }
        if !progressed {
            let (var, job) = jobs.remove(0);
            let mut state = var.lock();
            run_locked(&var.name, &mut state, config, &job, &job.chunk_bytes())?;
        }
    }
    Ok(())
}

/// Every variable of the collection, by name.
#[derive(Default)]
pub(crate) struct Variables {
    map: Mutex<HashMap<SmolStr, Arc<Variable>>>,
}

impl Variables {
    fn map(&self) -> MutexGuard<'_, HashMap<SmolStr, Arc<Variable>>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The variables called `names`, created empty on first use (one lock for all).
    pub(crate) fn get_or_create<'a>(
        &self,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Vec<Arc<Variable>> {
        let mut map = self.map();
        names
            .into_iter()
            .map(|name| match map.get(name) {
                Some(v) => v.clone(),
                None => map
                    .entry(SmolStr::new(name))
                    .or_insert_with(|| {
                        Arc::new(Variable {
                            name: SmolStr::new(name),
                            state: Mutex::new(VarState::default()),
                        })
                    })
                    .clone(),
            })
            .collect()
    }

    /// The variable called `name`, if some dataset created it.
    pub(crate) fn get(&self, name: &str) -> Option<Arc<Variable>> {
        self.map().get(name).cloned()
    }

    /// Drops every writer (and its temp file).
    pub(crate) fn clear(&self) {
        self.map().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::simulate;

    #[test]
    fn a_push_that_fills_the_open_block_is_seen_as_flushing() {
        assert_eq!(simulate(0, &[10, 10], 64), (false, 20));
        assert_eq!(simulate(50, &[10, 10], 64), (true, 0));
        assert_eq!(simulate(60, &[4], 64), (true, 0));
        assert_eq!(simulate(0, &[], 64), (false, 0));
    }
}
