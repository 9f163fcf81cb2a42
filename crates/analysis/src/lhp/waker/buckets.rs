//! Finding wakeups and bucketing them by waker: each chunk of wakee
//! threads reads its threads' intervals once, keeps the wakeups whose
//! waker has a timeline, and sorts them by waker (a stable counting sort),
//! in 16 bytes per wakeup.

use crate::timeline::{ThreadState, ThreadTimeline, Timeline};
use schedscope_trace::hash::FxMap;
use schedscope_trace::Tid;

/// One wakeup in its waker's bucket, in 16 bytes (fresh memory costs more
/// than the work on it): the wake time, the sleep before it as a gap
/// ([`LONG_GAP`]: look the start up in [`Chunk::long`]) and the wakee's
/// thread index.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Woken {
    pub(super) wake: u64,
    pub(super) gap: u32,
    pub(super) wakee: u32,
}

/// A gap that does not fit (4.3 s or longer, or negative).
const LONG_GAP: u32 = u32::MAX;

/// One wakeup found in a wakee's intervals, before bucketing.
#[derive(Clone, Copy, Default)]
struct Found {
    wake: u64,
    sleep: u64,
    waker: u32,
    wakee: u32,
}

/// No thread index (a waker without a timeline).
const NO_THREAD: u32 = u32::MAX;

/// tid -> thread index of a timeline: a dense table when the tids are
/// small (they are kernel pids, below pid_max <= 2^22), else a hash map.
/// A tid with several threads maps to the last.
pub(super) enum TidIndex {
    /// idx + 1 by tid, 0 = none; the last entry is a 0 that every tid out
    /// of range maps to, so lookups need no branch.
    Dense(Vec<u32>),
    Sparse(FxMap<Tid, u32>),
}

impl TidIndex {
    /// The index, and whether some tid has several threads.
    pub(super) fn of(tl: &Timeline) -> (TidIndex, bool) {
        const DENSE_LIMIT: i32 = 1 << 22;
        let max = tl.threads.iter().map(|t| t.tid.0).max().unwrap_or(0);
        let min = tl.threads.iter().map(|t| t.tid.0).min().unwrap_or(0);
        let mut dup = false;
        if min >= 0 && max < DENSE_LIMIT {
            // Zeroed memory: only the pages of tids seen are touched.
            let mut v = vec![0u32; max as usize + 2];
            for (i, t) in tl.threads.iter().enumerate() {
                let slot = &mut v[t.tid.0 as usize];
                dup |= *slot != 0;
                *slot = i as u32 + 1;
            }
            (TidIndex::Dense(v), dup)
        } else {
            let mut m = FxMap::default();
            for (i, t) in tl.threads.iter().enumerate() {
                dup |= m.insert(t.tid, i as u32).is_some();
            }
            (TidIndex::Sparse(m), dup)
        }
    }
}

impl TidIndex {
    /// The same index, knowing only the threads `wakers` (others map to
    /// no thread): bucketing with it keeps only their wakeups.
    pub(super) fn only(&self, wakers: std::ops::Range<u32>) -> TidIndex {
        match self {
            TidIndex::Dense(v) => TidIndex::Dense(
                v.iter()
                    .map(|&x| match x.checked_sub(1) {
                        Some(i) if wakers.contains(&i) => x,
                        _ => 0,
                    })
                    .collect(),
            ),
            TidIndex::Sparse(m) => TidIndex::Sparse(
                m.iter()
                    .filter(|(_, i)| wakers.contains(i))
                    .map(|(&t, &i)| (t, i))
                    .collect(),
            ),
        }
    }
}

/// A wakee thread's wakeups by a task (not idle, not itself).
#[derive(Clone, Copy, Default)]
pub(super) struct WakeeTotals {
    pub(super) wakeups: u64,
    pub(super) sleep_ns: u64,
}

/// The wakeups of a contiguous range of wakee threads, bucketed by waker
/// (each wakee's wakeups as one run in time order, wakees ascending).
pub(super) struct Chunk {
    /// First wakee thread index of the range.
    pub(super) first: usize,
    /// The non-empty buckets: (waker, start, end) into `items`, by waker.
    pub(super) buckets: Vec<(u32, u32, u32)>,
    pub(super) items: Vec<Woken>,
    /// Sleep starts of the items with a [`LONG_GAP`], by item position.
    pub(super) long: Vec<(u32, u64)>,
    /// Per wakee of the range.
    pub(super) totals: Vec<WakeeTotals>,
}

impl Chunk {
    /// The sleep start of `items[pos]`.
    pub(super) fn sleep(&self, pos: usize) -> u64 {
        let w = &self.items[pos];
        if w.gap != LONG_GAP {
            return w.wake - u64::from(w.gap);
        }
        match self.long.binary_search_by_key(&(pos as u32), |l| l.0) {
            Ok(i) => self.long[i].1,
            // Every LONG_GAP item has its entry (bucket_chunk).
            Err(_) => w.wake,
        }
    }
}

/// Append the wakeups of thread `t` (index `wakee`) to `buf` from `at`
/// (a Sleeping/Blocked interval followed by a Runnable one, not preempted,
/// whose waker is a task other than `t`), wakers as thread indices; `buf`
/// is grown as needed. Returns the new end (only wakers with a timeline are
/// kept) and the totals over all of them. Branch-free per interval: the
/// states alternate unpredictably.
fn find_wakes(
    t: &ThreadTimeline,
    wakee: u32,
    index: &TidIndex,
    buf: &mut Vec<Found>,
    at: usize,
) -> (usize, WakeeTotals) {
    let ivs = &t.intervals;
    if buf.len() < at + ivs.len() {
        buf.resize(at + ivs.len(), Found::default());
    }
    let mut m = at;
    let mut tot = WakeeTotals::default();
    let me = t.tid.0;
    for (sleep, wake) in ivs.pairs() {
        // None and idle (tid 0) alike are no waker.
        let waker = wake.waker.map_or(0, |x| x.0);
        let is_wake = (wake.state == ThreadState::Runnable)
            & !wake.preempted
            & matches!(sleep.state, ThreadState::Sleeping | ThreadState::Blocked)
            & (waker != 0)
            & (waker != me);
        let wi = match index {
            TidIndex::Dense(v) => {
                let i = (waker as u32 as usize).min(v.len() - 1);
                v[i].wrapping_sub(1)
            }
            TidIndex::Sparse(map) if is_wake => map.get(&Tid(waker)).copied().unwrap_or(NO_THREAD),
            TidIndex::Sparse(_) => NO_THREAD,
        };
        tot.wakeups += u64::from(is_wake);
        tot.sleep_ns += wake.ts.0.saturating_sub(sleep.ts.0) * u64::from(is_wake);
        // Written always, kept when it is a wakeup (m <= this index < len).
        buf[m] = Found {
            wake: wake.ts.0,
            sleep: sleep.ts.0,
            waker: wi,
            wakee,
        };
        m += usize::from(is_wake & (wi != NO_THREAD));
    }
    (m, tot)
}

/// Find the wakeups of wakee threads `first..first + threads.len()` into
/// `found` (grown as needed): how many there are, and each wakee's
/// totals.
fn find_chunk(
    first: usize,
    threads: &[ThreadTimeline],
    index: &TidIndex,
    found: &mut Vec<Found>,
) -> (usize, Vec<WakeeTotals>) {
    let mut totals = Vec::with_capacity(threads.len());
    let mut len = 0;
    for (k, t) in threads.iter().enumerate() {
        let (m, tot) = find_wakes(t, (first + k) as u32, index, found, len);
        totals.push(tot);
        len = m;
    }
    (len, totals)
}

/// Add the wakeups of wakee threads `first..first + threads.len()` (those
/// [`bucket_chunk`] keeps) to `counts`, by waker thread index.
pub(super) fn count_by_waker(
    first: usize,
    threads: &[ThreadTimeline],
    index: &TidIndex,
    scratch: &mut ChunkScratch,
    counts: &mut [u32],
) {
    let (len, _) = find_chunk(first, threads, index, &mut scratch.found);
    for f in &scratch.found[..len] {
        counts[f.waker as usize] += 1;
    }
}

/// Scratch of [`bucket_chunk`], reused across chunks.
#[derive(Default)]
pub(super) struct ChunkScratch {
    found: Vec<Found>,
    /// Per waker: count, then next free position.
    next: Vec<u32>,
}

/// Bucket the wakeups of wakee threads `first..first + threads.len()` by
/// waker (a counting sort: stable, so each wakee's wakeups stay one
/// time-ordered run). The only memory a chunk keeps is its exact-size
/// bucketed list and the list of its non-empty buckets.
pub(super) fn bucket_chunk(
    first: usize,
    threads: &[ThreadTimeline],
    nthreads: usize,
    index: &TidIndex,
    scratch: &mut ChunkScratch,
) -> Chunk {
    let ChunkScratch { found, next } = scratch;
    let (len, totals) = find_chunk(first, threads, index, found);
    let found = &found[..len];
    next.clear();
    next.resize(nthreads, 0);
    for f in found {
        next[f.waker as usize] += 1;
    }
    let mut buckets = Vec::new();
    let mut start = 0u32;
    for (a, slot) in next.iter_mut().enumerate() {
        let count = *slot;
        if count > 0 {
            buckets.push((a as u32, start, start + count));
        }
        *slot = start;
        start += count;
    }
    let mut items = vec![Woken::default(); len];
    let mut long = Vec::new();
    for f in found {
        let slot = &mut next[f.waker as usize];
        let gap = f
            .wake
            .checked_sub(f.sleep)
            .and_then(|g| u32::try_from(g).ok())
            .filter(|&g| g != LONG_GAP)
            .unwrap_or_else(|| {
                long.push((*slot, f.sleep));
                LONG_GAP
            });
        items[*slot as usize] = Woken {
            wake: f.wake,
            gap,
            wakee: f.wakee,
        };
        *slot += 1;
    }
    long.sort_unstable_by_key(|l| l.0);
    Chunk {
        first,
        buckets,
        items,
        long,
        totals,
    }
}
