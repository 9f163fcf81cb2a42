//! Answering a waker's buckets: per (waker, wakee) pair, the waker's
//! Runnable time within each of the wakee's waits, from the waker's step
//! index, one galloping cursor per wakee run.

use super::buckets::Chunk;
use super::steps::{runnable_before, seek, Step};

/// Per (waker, wakee) thread-index pair: wakeups, waker-preempted ns, max.
#[derive(Clone, Copy)]
pub(super) struct PairRow {
    pub(super) waker: u32,
    pub(super) wakee: u32,
    pub(super) wakeups: u64,
    pub(super) ns: u64,
    pub(super) max: u64,
}

/// The (waker, wakee) rows of `waker` from its wakeups `items[k..end]` in
/// chunk `c`: one galloping cursor per wakee run answers both ends of
/// every wait.
pub(super) fn waker_rows(
    waker: u32,
    steps: &[Step],
    c: &Chunk,
    (mut k, end): (usize, usize),
    mut emit: impl FnMut(PairRow),
) {
    while k < end {
        let wakee = c.items[k].wakee;
        let mut row = PairRow {
            waker,
            wakee,
            wakeups: 0,
            ns: 0,
            max: 0,
        };
        let mut hint = 0;
        while k < end && c.items[k].wakee == wakee {
            let (wake, sleep) = (c.items[k].wake, c.sleep(k));
            hint = seek(steps, sleep, hint);
            let at_sleep = runnable_before(steps, hint, sleep);
            hint = seek(steps, wake, hint);
            let ns = runnable_before(steps, hint, wake).saturating_sub(at_sleep);
            row.wakeups += 1;
            row.ns += ns;
            row.max = row.max.max(ns);
            k += 1;
        }
        emit(row);
    }
}
