//! Waker-preempted time: how long sleepers waited past their wakeup
//! because their waker was Runnable but off CPU (bare metal or guest).

use crate::timeline::{StateInterval, ThreadState, ThreadTimeline, Timeline};
use rayon::prelude::*;
use schedscope_trace::hash::FxMap;
use schedscope_trace::{Tid, Trace, Ts};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::BTreeMap;

/// Waiting caused by a preempted waker, for one (waker, wakee) pair.
#[derive(Clone, Debug, Serialize)]
pub struct WakerPair {
    /// The waker.
    pub waker: Tid,
    /// Its comm.
    pub waker_comm: String,
    /// The woken task.
    pub wakee: Tid,
    /// Its comm.
    pub wakee_comm: String,
    /// Wakeups.
    pub wakeups: u64,
    /// Time the wakee slept while the waker was Runnable (ns).
    pub waker_preempted_ns: u64,
    /// Longest single such wait (ns).
    pub max_ns: u64,
}

/// Waiting caused by a preempted waker, per wakee process.
#[derive(Clone, Debug, Serialize)]
pub struct WakerProcess {
    /// The wakee's process (None: unknown).
    pub tgid: Option<Tid>,
    /// Its name.
    pub name: String,
    /// Wakeups of its threads.
    pub wakeups: u64,
    /// Total sleep of its threads before those wakeups (ns).
    pub sleep_ns: u64,
    /// Part of that during which the waker was Runnable (ns).
    pub waker_preempted_ns: u64,
}

/// The bare-metal part.
#[derive(Clone, Debug, Default, Serialize)]
pub struct WakerPreemptedReport {
    /// Sum over all wakeups (ns).
    pub total_ns: u64,
    /// Wakeups examined (sleep start known, waker a task).
    pub wakeups: u64,
    /// Per pair, largest first (all pairs with nonzero time).
    pub pairs: Vec<WakerPair>,
    /// Per wakee process, largest first.
    pub processes: Vec<WakerProcess>,
}

/// One step of a thread's Runnable-time index: for `t > ts` (up to the next
/// step), the thread's Runnable time in [start of trace, t) is
/// `base + min(t, cap) - ts`.
///
/// Steps are the thread's Runnable intervals (`cap` = their end) plus, after
/// a Runnable interval that ends later than the next interval starts (never
/// in a contiguous timeline), that next interval as a zero-length marker
/// (`cap` = `ts`), so that the answer equals the prefix sum over *all*
/// intervals (full length of every earlier Runnable interval, the one
/// containing `t` clipped at `t`) while a thread keeps one step per
/// Runnable interval, a fraction of its intervals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Step {
    ts: u64,
    cap: u64,
    base: u64,
}

/// The number of steps that start before `t` (their partition point),
/// galloping from `hint` (an earlier answer, for any `t`) in whichever
/// direction `t` lies: queries that move forward a little cost a few
/// probes, not a binary search over the thread.
fn seek(steps: &[Step], t: u64, hint: usize) -> usize {
    let n = steps.len();
    let h = hint.min(n);
    let (lo, hi) = if h > 0 && steps[h - 1].ts >= t {
        // The answer is below h: gallop back.
        let mut hi = h - 1;
        let mut step = 1;
        loop {
            if hi < step {
                break (0, hi);
            }
            let probe = hi - step;
            if steps[probe].ts < t {
                break (probe + 1, hi);
            }
            hi = probe;
            step *= 2;
        }
    } else {
        // Every step before h starts before t: gallop forward.
        let mut lo = h;
        let mut step = 1;
        loop {
            let probe = lo + step - 1;
            if probe >= n {
                break (lo, n);
            }
            if steps[probe].ts >= t {
                break (lo, probe);
            }
            lo = probe + 1;
            step *= 2;
        }
    };
    lo + steps[lo..hi].partition_point(|s| s.ts < t)
}

/// Runnable time in [start of trace, t), given `p` = [`seek`]'s answer for `t`.
fn runnable_before(steps: &[Step], p: usize, t: u64) -> u64 {
    match p.checked_sub(1).map(|i| &steps[i]) {
        // ts < t (partition point) and ts <= cap: no underflow.
        // (Sums wrap like the u64 additions they stand for: no panic on
        // absurd timestamps.)
        Some(s) => s.base.wrapping_add(t.min(s.cap) - s.ts),
        None => 0,
    }
}

/// A thread's Runnable-time steps (see [`Step`]) from its intervals, into
/// `buf` (reused across threads, grown as needed): returns how many.
/// Branch-free per interval: states alternate unpredictably.
fn runnable_steps(ivs: &[StateInterval], end: Ts, buf: &mut Vec<Step>) -> usize {
    if buf.len() < ivs.len() {
        buf.resize(ivs.len(), Step::default());
    }
    let (mut m, mut acc) = (0usize, 0u64);
    // End of the previous interval when it was Runnable, else 0.
    let mut overhang = 0u64;
    for iv in ivs {
        let ts = iv.ts.0;
        let runnable = iv.state == ThreadState::Runnable;
        let cap = if runnable {
            iv.end_or(end).0.max(ts)
        } else {
            ts
        };
        // Written always, kept when it is a step (m <= this index < len).
        buf[m] = Step { ts, cap, base: acc };
        m += usize::from(runnable | (overhang > ts));
        acc = acc.wrapping_add(cap - ts);
        overhang = if runnable { cap } else { 0 };
    }
    m
}

/// One wakeup in its waker's bucket, in 16 bytes (fresh memory costs more
/// than the work on it): the wake time, the sleep before it as a gap
/// ([`LONG_GAP`]: look the start up in [`Chunk::long`]) and the wakee's
/// thread index.
#[derive(Clone, Copy, Debug, Default)]
struct Woken {
    wake: u64,
    gap: u32,
    wakee: u32,
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
enum TidIndex {
    /// idx + 1 by tid, 0 = none; the last entry is a 0 that every tid out
    /// of range maps to, so lookups need no branch.
    Dense(Vec<u32>),
    Sparse(FxMap<Tid, u32>),
}

impl TidIndex {
    /// The index, and whether some tid has several threads.
    fn of(tl: &Timeline) -> (TidIndex, bool) {
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

/// A wakee thread's wakeups by a task (not idle, not itself).
#[derive(Clone, Copy, Default)]
struct WakeeTotals {
    wakeups: u64,
    sleep_ns: u64,
}

/// The wakeups of a contiguous range of wakee threads, bucketed by waker
/// (each wakee's wakeups as one run in time order, wakees ascending).
struct Chunk {
    /// First wakee thread index of the range.
    first: usize,
    /// The non-empty buckets: (waker, start, end) into `items`, by waker.
    buckets: Vec<(u32, u32, u32)>,
    items: Vec<Woken>,
    /// Sleep starts of the items with a [`LONG_GAP`], by item position.
    long: Vec<(u32, u64)>,
    /// Per wakee of the range.
    totals: Vec<WakeeTotals>,
}

impl Chunk {
    /// The sleep start of `items[pos]`.
    fn sleep(&self, pos: usize) -> u64 {
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
    for w in ivs.windows(2) {
        let (sleep, wake) = (&w[0], &w[1]);
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

/// Scratch of [`bucket_chunk`], reused across chunks.
#[derive(Default)]
struct ChunkScratch {
    found: Vec<Found>,
    /// Per waker: count, then next free position.
    next: Vec<u32>,
}

/// Bucket the wakeups of wakee threads `first..first + threads.len()` by
/// waker (a counting sort: stable, so each wakee's wakeups stay one
/// time-ordered run). The only memory a chunk keeps is its exact-size
/// bucketed list and the list of its non-empty buckets.
fn bucket_chunk(
    first: usize,
    threads: &[ThreadTimeline],
    nthreads: usize,
    index: &TidIndex,
    scratch: &mut ChunkScratch,
) -> Chunk {
    let ChunkScratch { found, next } = scratch;
    let mut totals = Vec::with_capacity(threads.len());
    let mut len = 0;
    for (k, t) in threads.iter().enumerate() {
        let (m, tot) = find_wakes(t, (first + k) as u32, index, found, len);
        totals.push(tot);
        len = m;
    }
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

/// Per (waker, wakee) thread-index pair: wakeups, waker-preempted ns, max.
#[derive(Clone, Copy)]
struct PairRow {
    waker: u32,
    wakee: u32,
    wakeups: u64,
    ns: u64,
    max: u64,
}

/// The (waker, wakee) rows of `waker` from its wakeups `items[k..end]` in
/// chunk `c`: one galloping cursor per wakee run answers both ends of
/// every wait.
fn waker_rows(
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

/// Intervals per chunk of wakee threads (scratch stays in cache, and
/// enough chunks to share among threads).
const CHUNK_INTERVALS: usize = 1 << 12;

/// Compute the bare-metal waker-preempted table.
///
/// Three streaming steps, no per-wakeup hashing or sorting, little new
/// memory (fresh pages cost more than reading the timeline again):
/// 1. chunks of wakee threads (in parallel) find their wakeups and bucket
///    them by waker;
/// 2. each waker (in parallel) rebuilds its Runnable-time steps in scratch
///    and answers its buckets, one cursor per (waker, wakee) run;
/// 3. the rows become the pair and process tables.
pub fn waker_preempted(trace: &Trace, tl: &Timeline) -> WakerPreemptedReport {
    waker_preempted_chunked(trace, tl, CHUNK_INTERVALS)
}

/// [`waker_preempted`] with chunks of about `chunk_intervals` intervals.
fn waker_preempted_chunked(
    trace: &Trace,
    tl: &Timeline,
    chunk_intervals: usize,
) -> WakerPreemptedReport {
    let end = tl.end;
    let n = tl.threads.len();
    let (index, dup) = TidIndex::of(tl);
    // Contiguous ranges of threads with about chunk_intervals intervals each.
    let mut ranges = Vec::new();
    let (mut start, mut acc) = (0usize, 0usize);
    for (i, t) in tl.threads.iter().enumerate() {
        acc += t.intervals.len();
        if acc >= chunk_intervals {
            ranges.push(start..i + 1);
            (start, acc) = (i + 1, 0);
        }
    }
    if start < n {
        ranges.push(start..n);
    }
    let chunks: Vec<Chunk> = ranges
        .into_par_iter()
        .map_init(ChunkScratch::default, |buf, r| {
            bucket_chunk(r.start, &tl.threads[r.clone()], n, &index, buf)
        })
        .collect();
    drop(index);
    // Per waker, its buckets in chunk order (a transpose of the chunks'
    // bucket lists, so that each waker reads one list): (chunk, start, end).
    let mut part_off = vec![0u32; n + 1];
    for c in &chunks {
        for &(a, _, _) in &c.buckets {
            part_off[a as usize + 1] += 1;
        }
    }
    for a in 0..n {
        part_off[a + 1] += part_off[a];
    }
    let mut parts = vec![(0u32, 0u32, 0u32); part_off[n] as usize];
    let mut fill = part_off.clone();
    for (ci, c) in chunks.iter().enumerate() {
        for &(a, s, e) in &c.buckets {
            let f = &mut fill[a as usize];
            parts[*f as usize] = (ci as u32, s, e);
            *f += 1;
        }
    }
    drop(fill);
    // Rows with time (all rows when tids repeat: they are merged by tid below).
    let keep = |r: &PairRow| r.ns > 0 || dup;
    let (mut rows, wakee_ns) = (0..n)
        .into_par_iter()
        .filter(|&a| part_off[a] < part_off[a + 1])
        .fold(
            || (Vec::new(), Vec::new(), vec![0u64; n]),
            |(mut rows, mut steps, mut wakee_ns), a| {
                let m = runnable_steps(&tl.threads[a].intervals, end, &mut steps);
                let mine = &parts[part_off[a] as usize..part_off[a + 1] as usize];
                for &(ci, s, e) in mine {
                    let c = &chunks[ci as usize];
                    waker_rows(a as u32, &steps[..m], c, (s as usize, e as usize), |r| {
                        wakee_ns[r.wakee as usize] += r.ns;
                        if keep(&r) {
                            rows.push(r);
                        }
                    });
                }
                (rows, steps, wakee_ns)
            },
        )
        .map(|(rows, _, ns)| (rows, ns))
        .reduce(
            || (Vec::new(), vec![0u64; n]),
            |(mut ra, mut na), (mut rb, nb)| {
                if ra.is_empty() {
                    ra = rb;
                } else {
                    ra.append(&mut rb);
                }
                for (x, y) in na.iter_mut().zip(&nb) {
                    *x += y;
                }
                (ra, na)
            },
        );
    let tid = |i: u32| tl.threads[i as usize].tid;
    if dup {
        // Several threads share a tid: pairs are per (waker tid, wakee tid).
        rows.sort_unstable_by_key(|r| (tid(r.waker), tid(r.wakee)));
        rows.dedup_by(|r, kept| {
            let same = tid(r.waker) == tid(kept.waker) && tid(r.wakee) == tid(kept.wakee);
            if same {
                kept.wakeups += r.wakeups;
                kept.ns += r.ns;
                kept.max = kept.max.max(r.max);
            }
            same
        });
        rows.retain(|r| r.ns > 0);
    }
    let comm_of_tid = |tid: Tid| {
        tl.thread(tid)
            .map(|t| t.comm.clone())
            .unwrap_or_else(|| trace.tasks.comm(tid).to_string())
    };
    let comm = |i: u32| {
        if dup {
            comm_of_tid(tid(i))
        } else {
            tl.threads[i as usize].comm.clone()
        }
    };
    // Largest first, then by waker and wakee tid: one integer key per row
    // (i32 order kept by flipping the sign bit), sorted before the strings
    // exist. Keys are unique, so an unstable sort is deterministic.
    let flipped: Vec<u32> = tl
        .threads
        .iter()
        .map(|t| t.tid.0 as u32 ^ 0x8000_0000)
        .collect();
    let order_key = |r: &PairRow| {
        let t = |i: u32| u128::from(flipped[i as usize]);
        (u128::from(!r.ns) << 64) | (t(r.waker) << 32) | t(r.wakee)
    };
    rows.sort_unstable_by_key(order_key);
    let pairs: Vec<WakerPair> = rows
        .iter()
        .map(|r| WakerPair {
            waker: tid(r.waker),
            waker_comm: comm(r.waker),
            wakee: tid(r.wakee),
            wakee_comm: comm(r.wakee),
            wakeups: r.wakeups,
            waker_preempted_ns: r.ns,
            max_ns: r.max,
        })
        .collect();
    // wakee tgid -> (wakeups, sleep, ns)
    let mut procs: BTreeMap<Option<Tid>, (u64, u64, u64)> = BTreeMap::new();
    for c in &chunks {
        for (k, w) in c.totals.iter().enumerate() {
            if w.wakeups > 0 {
                let b = c.first + k;
                let q = procs.entry(tl.threads[b].tgid).or_default();
                q.0 += w.wakeups;
                q.1 += w.sleep_ns;
                q.2 += wakee_ns[b];
            }
        }
    }
    let wakeups = chunks
        .iter()
        .flat_map(|c| &c.totals)
        .map(|w| w.wakeups)
        .sum();
    let mut processes: Vec<WakerProcess> = procs
        .into_iter()
        .map(|(tgid, (wakeups, sleep_ns, ns))| WakerProcess {
            tgid,
            name: match tgid {
                Some(g) => {
                    let c = trace.tasks.comm(g);
                    if c.is_empty() {
                        comm_of_tid(g)
                    } else {
                        c.to_string()
                    }
                }
                None => "(no tgid)".to_string(),
            },
            wakeups,
            sleep_ns,
            waker_preempted_ns: ns,
        })
        .collect();
    processes.sort_by_key(|p| (Reverse(p.waker_preempted_ns), p.tgid));
    WakerPreemptedReport {
        total_ns: pairs.iter().map(|p| p.waker_preempted_ns).sum(),
        wakeups,
        pairs,
        processes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(ts: u64, end: Option<u64>, state: ThreadState) -> StateInterval {
        StateInterval {
            ts: Ts(ts),
            end: end.map(Ts),
            state,
            cpu: None,
            preempted: false,
            waker: None,
        }
    }

    /// Runnable time before `t` the long way: prefix sums over every
    /// interval, the one holding `t` (last to start before it) clipped at `t`.
    fn prefix_oracle(ivs: &[StateInterval], t: u64, end: Ts) -> u64 {
        let i = ivs.partition_point(|iv| iv.ts.0 < t);
        let len = |iv: &StateInterval| {
            if iv.state == ThreadState::Runnable {
                iv.end_or(end).0.saturating_sub(iv.ts.0)
            } else {
                0
            }
        };
        let mut s: u64 = ivs[..i.saturating_sub(1)].iter().map(len).sum();
        if let Some(iv) = i.checked_sub(1).map(|k| &ivs[k]) {
            if iv.state == ThreadState::Runnable {
                s += t.min(iv.end_or(end).0).saturating_sub(iv.ts.0);
            }
        }
        s
    }

    /// A small deterministic generator (xorshift), so tests need no crate.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    const STATES: [ThreadState; 5] = [
        ThreadState::Running,
        ThreadState::Runnable,
        ThreadState::Sleeping,
        ThreadState::Blocked,
        ThreadState::Other,
    ];

    #[test]
    fn runnable_steps_clip_partial_intervals() {
        let ivs = vec![
            iv(10, Some(20), ThreadState::Running),
            iv(20, Some(50), ThreadState::Runnable),
            iv(50, Some(60), ThreadState::Running),
            iv(60, None, ThreadState::Runnable),
        ];
        let mut steps = Vec::new();
        let m = runnable_steps(&ivs, Ts(100), &mut steps);
        steps.truncate(m);
        // Only the Runnable intervals are steps in a contiguous timeline.
        assert_eq!(steps.len(), 2);
        let at = |t: u64| runnable_before(&steps, seek(&steps, t, 0), t);
        assert_eq!(at(5), 0);
        assert_eq!(at(20), 0);
        assert_eq!(at(30), 10);
        assert_eq!(at(55), 30);
        assert_eq!(at(80), 50);
        // The open interval ends with the trace.
        assert_eq!(at(200), 70);
    }

    #[test]
    fn runnable_steps_equal_prefix_sums_over_all_intervals() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for case in 0..400 {
            // Mostly contiguous intervals; some cases with gaps, overlaps
            // (an end past the next start), zero-length and reversed ones.
            let messy = case % 4 == 3;
            let n = 1 + rng.below(40) as usize;
            let mut ivs = Vec::with_capacity(n);
            let mut ts = rng.below(50);
            for k in 0..n {
                let len = rng.below(30);
                let end = if k + 1 == n && rng.below(2) == 0 {
                    None
                } else if messy {
                    Some((ts + len).saturating_sub(rng.below(40)) + rng.below(40))
                } else {
                    Some(ts + len)
                };
                ivs.push(iv(ts, end, STATES[rng.below(5) as usize]));
                ts = if messy {
                    ts + rng.below(2) * len
                } else {
                    ts + len
                };
            }
            let end = Ts(ts + rng.below(20));
            let mut steps = Vec::new();
            let m = runnable_steps(&ivs, end, &mut steps);
            steps.truncate(m);
            let last = end.0 + 40;
            for t in 0..=last {
                let want = prefix_oracle(&ivs, t, end);
                for hint in [0, 1, steps.len() / 2, steps.len(), steps.len() + 3] {
                    let p = seek(&steps, t, hint);
                    assert_eq!(p, steps.partition_point(|s| s.ts < t), "case {case} t={t}");
                    assert_eq!(
                        runnable_before(&steps, p, t),
                        want,
                        "case {case} t={t} hint={hint}: {ivs:?}"
                    );
                }
            }
        }
    }

    /// Random contiguous timelines: waker_preempted against the definition
    /// evaluated directly (overlap of each waker's Runnable intervals with
    /// each wait), per pair, per process and in total; one tid appears
    /// twice (a reused tid) to cover the per-tid merge.
    #[test]
    fn waker_preempted_equals_direct_overlap() {
        use std::collections::BTreeMap;
        let mut rng = Rng(0x1234_5678_9abc_def1);
        let (mut long_waits, mut with_time) = (0, 0);
        for case in 0..40 {
            let nthreads = 2 + rng.below(5) as usize;
            // Some cases with tids past pid_max (the hash-map index), some
            // with sleeps longer than a u32 of ns (the long-gap side table).
            let base = if case % 4 == 2 { 1 << 23 } else { 100 };
            let scale = if case % 4 == 1 { 1u64 << 29 } else { 1 };
            let tid_of = |i: usize| {
                Tid(if i == nthreads - 1 && case % 3 == 0 {
                    base
                } else {
                    base + i as i32
                })
            };
            let mut threads = Vec::new();
            for i in 0..nthreads {
                let mut ivs = Vec::new();
                let mut ts = rng.below(100);
                let mut prev = ThreadState::Running;
                for _ in 0..rng.below(120) {
                    let len = rng.below(25) * scale;
                    // Mostly wakeups after sleeps, so that pairs repeat.
                    let state = if matches!(prev, ThreadState::Sleeping | ThreadState::Blocked)
                        && rng.below(4) != 0
                    {
                        ThreadState::Runnable
                    } else {
                        STATES[rng.below(5) as usize]
                    };
                    prev = state;
                    let waker = match rng.below(6) {
                        0 => None,
                        1 => Some(Tid::IDLE),
                        2 => Some(Tid(if rng.below(2) == 0 { 999 } else { -7 })), // no timeline
                        _ => Some(tid_of(rng.below(nthreads as u64) as usize)),
                    };
                    ivs.push(StateInterval {
                        end: Some(Ts(ts + len)),
                        preempted: rng.below(4) == 0,
                        waker,
                        ..iv(ts, None, state)
                    });
                    ts += len;
                }
                if let Some(l) = ivs.last_mut() {
                    if rng.below(2) == 0 {
                        l.end = None;
                    }
                }
                threads.push(ThreadTimeline {
                    tid: tid_of(i),
                    tgid: Some(Tid(10 + (i % 3) as i32)),
                    comm: format!("t{i}"),
                    intervals: ivs.into(),
                });
            }
            let mut tl = Timeline::default();
            tl.end = Ts(3000 * scale);
            tl.threads = threads;
            let trace = Trace::new("test", schedscope_trace::TraceFormat::FtraceText);
            let got = waker_preempted(&trace, &tl);
            // Any chunking of the wakee threads gives the same report.
            for chunk in [1, 50, 120] {
                let other = waker_preempted_chunked(&trace, &tl, chunk);
                assert_eq!(
                    serde_json::to_string(&other).ok(),
                    serde_json::to_string(&got).ok(),
                    "case {case} chunk {chunk}"
                );
            }

            // The definition: a waker resolves to the last thread with its tid.
            let find = |tid: Tid| tl.threads.iter().rposition(|t| t.tid == tid);
            let overlap = |w: usize, a: u64, b: u64| -> u64 {
                tl.threads[w]
                    .intervals
                    .iter()
                    .filter(|iv| iv.state == ThreadState::Runnable)
                    .map(|iv| b.min(iv.end_or(tl.end).0).saturating_sub(a.max(iv.ts.0)))
                    .sum()
            };
            let mut pairs: BTreeMap<(Tid, Tid), (u64, u64, u64)> = BTreeMap::new();
            let mut procs: BTreeMap<Option<Tid>, (u64, u64, u64)> = BTreeMap::new();
            let mut wakeups = 0;
            for t in &tl.threads {
                for w in t.intervals.windows(2) {
                    let (s, r) = (&w[0], &w[1]);
                    if !matches!(s.state, ThreadState::Sleeping | ThreadState::Blocked)
                        || r.state != ThreadState::Runnable
                        || r.preempted
                    {
                        continue;
                    }
                    let Some(waker) = r.waker.filter(|x| !x.is_idle() && *x != t.tid) else {
                        continue;
                    };
                    let ns = find(waker).map_or(0, |wi| overlap(wi, s.ts.0, r.ts.0));
                    wakeups += 1;
                    long_waits += usize::from(r.ts.0 - s.ts.0 >= 1 << 32);
                    let p = pairs.entry((waker, t.tid)).or_default();
                    p.0 += 1;
                    p.1 += ns;
                    p.2 = p.2.max(ns);
                    let q = procs.entry(t.tgid).or_default();
                    q.0 += 1;
                    q.1 += r.ts.0 - s.ts.0;
                    q.2 += ns;
                }
            }
            pairs.retain(|_, v| v.1 > 0);
            with_time += usize::from(!pairs.is_empty());
            assert_eq!(got.wakeups, wakeups, "case {case}");
            assert_eq!(
                got.total_ns,
                pairs.values().map(|v| v.1).sum::<u64>(),
                "case {case}"
            );
            let got_pairs: BTreeMap<(Tid, Tid), (u64, u64, u64)> = got
                .pairs
                .iter()
                .map(|p| {
                    (
                        (p.waker, p.wakee),
                        (p.wakeups, p.waker_preempted_ns, p.max_ns),
                    )
                })
                .collect();
            assert_eq!(
                got_pairs.len(),
                got.pairs.len(),
                "case {case}: duplicate pairs"
            );
            assert_eq!(got_pairs, pairs, "case {case}");
            let got_procs: BTreeMap<Option<Tid>, (u64, u64, u64)> = got
                .processes
                .iter()
                .map(|p| (p.tgid, (p.wakeups, p.sleep_ns, p.waker_preempted_ns)))
                .collect();
            assert_eq!(got_procs, procs, "case {case}");
            // Largest first, ties by tids.
            assert!(got.pairs.windows(2).all(|w| {
                (Reverse(w[0].waker_preempted_ns), w[0].waker, w[0].wakee)
                    < (Reverse(w[1].waker_preempted_ns), w[1].waker, w[1].wakee)
            }));
        }
        // The generator reached the cases it is meant to cover.
        assert!(long_waits > 0 && with_time > 30, "{long_waits} {with_time}");
    }
}
