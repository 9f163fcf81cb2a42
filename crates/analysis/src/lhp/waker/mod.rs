//! Waker-preempted time: how long sleepers waited past their wakeup
//! because their waker was Runnable but off CPU (bare metal or guest).
//!
//! The computation is in steps, one file each: `buckets` finds each wakee
//! thread's wakeups and buckets them by waker; `steps` is a waker's
//! Runnable-time index; `rows` answers a waker's buckets from its index;
//! this module runs them and turns the rows into the pair and process
//! tables.

mod buckets;
mod rows;
mod steps;

use crate::timeline::Timeline;
use buckets::{bucket_chunk, count_by_waker, Chunk, ChunkScratch, TidIndex, WakeeTotals};
use rayon::prelude::*;
use rows::{waker_rows, PairRow};
use schedscope_trace::{Tid, Trace};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::ops::Range;
use steps::runnable_steps;

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

/// Intervals per chunk of wakee threads (scratch stays in cache, and
/// enough chunks to share among threads).
const CHUNK_INTERVALS: usize = 1 << 12;

/// Wakeups bucketed at once, at most (16 bytes each: 128 MiB): past it
/// the wakers are taken in groups, each group's wakeups found by another
/// read of the wakees' intervals, so that a trace of 100 M+ events does
/// not hold all its wakeups besides its timeline.
const BUCKET_ITEMS: usize = 1 << 23;

/// Compute the bare-metal waker-preempted table.
///
/// Three streaming steps, no per-wakeup hashing or sorting, little new
/// memory (fresh pages cost more than reading the timeline again):
/// 1. chunks of wakee threads (in parallel) find their wakeups and bucket
///    them by waker;
/// 2. each waker (in parallel) rebuilds its Runnable-time steps in scratch
///    and answers its buckets, one cursor per (waker, wakee) run;
/// 3. the rows become the pair and process tables.
///
/// Steps 1 and 2 run once per group of wakers (wakeups of at most 128 MiB
/// bucketed at once).
pub fn waker_preempted(trace: &Trace, tl: &Timeline) -> WakerPreemptedReport {
    waker_preempted_chunked(trace, tl, CHUNK_INTERVALS, BUCKET_ITEMS)
}

/// [`waker_preempted`] with chunks of about `chunk_intervals` intervals,
/// wakers grouped so that a group's bucketed wakeups are at most
/// `bucket_items` (or a single waker's).
fn waker_preempted_chunked(
    trace: &Trace,
    tl: &Timeline,
    chunk_intervals: usize,
    bucket_items: usize,
) -> WakerPreemptedReport {
    let n = tl.threads.len();
    let (index, dup) = TidIndex::of(tl);
    let ranges = wakee_ranges(tl, chunk_intervals);
    let groups = waker_groups(tl, &index, &ranges, bucket_items);
    let mut rows = Vec::new();
    let mut wakee_ns = vec![0u64; n];
    // (each group's chunks have every wakee's totals: keep the first's)
    let mut totals: Vec<(usize, Vec<WakeeTotals>)> = Vec::new();
    for (g, wakers) in groups.iter().enumerate() {
        let only = (groups.len() > 1).then(|| index.only(wakers.clone()));
        let chunks: Vec<Chunk> = ranges
            .par_iter()
            .map_init(ChunkScratch::default, |buf, r| {
                let ix = only.as_ref().unwrap_or(&index);
                bucket_chunk(r.start, &tl.threads[r.clone()], n, ix, buf)
            })
            .collect();
        drop(only);
        let (part_off, parts) = buckets_by_waker(&chunks, n);
        let (mut r, ns) = answer_wakers(tl, &chunks, &part_off, &parts, dup);
        rows.append(&mut r);
        add_into(&mut wakee_ns, &ns);
        if g == 0 {
            totals = chunks.into_iter().map(|c| (c.first, c.totals)).collect();
        }
    }
    drop(index);
    if dup {
        merge_by_tid(tl, &mut rows);
    }
    let pairs = pair_table(trace, tl, rows, dup);
    let (wakeups, processes) = process_table(trace, tl, &totals, &wakee_ns);
    WakerPreemptedReport {
        total_ns: pairs.iter().map(|p| p.waker_preempted_ns).sum(),
        wakeups,
        pairs,
        processes,
    }
}

/// The wakers (thread index ranges) whose wakeups are bucketed together:
/// one group of all when every wakeup fits `bucket_items` (a wakeup is a
/// pair of intervals, so there are at most half as many as intervals),
/// else ranges whose wakeups, counted by a first read, fit (a range of
/// one waker may not).
fn waker_groups(
    tl: &Timeline,
    index: &TidIndex,
    ranges: &[Range<usize>],
    bucket_items: usize,
) -> Vec<Range<u32>> {
    let n = tl.threads.len();
    let intervals: usize = tl.threads.iter().map(|t| t.intervals.len()).sum();
    if intervals / 2 <= bucket_items {
        let all = 0..n as u32;
        return vec![all];
    }
    let per_waker = ranges
        .par_iter()
        .fold(
            || (ChunkScratch::default(), vec![0u32; n]),
            |(mut buf, mut counts), r| {
                count_by_waker(
                    r.start,
                    &tl.threads[r.clone()],
                    index,
                    &mut buf,
                    &mut counts,
                );
                (buf, counts)
            },
        )
        .map(|(_, counts)| counts)
        .reduce(
            || vec![0u32; n],
            |mut a, b| {
                add_into(&mut a, &b);
                a
            },
        );
    let mut groups = Vec::new();
    let (mut start, mut acc) = (0u32, 0usize);
    for (a, &c) in per_waker.iter().enumerate() {
        let c = c as usize;
        if acc > 0 && acc + c > bucket_items {
            groups.push(start..a as u32);
            (start, acc) = (a as u32, 0);
        }
        acc += c;
    }
    groups.push(start..n as u32);
    groups
}

/// `a[i] += b[i]` for every `i` of both.
fn add_into<T: std::ops::AddAssign + Copy>(a: &mut [T], b: &[T]) {
    for (x, &y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

/// Contiguous ranges of threads with about `chunk_intervals` intervals
/// each (the wakee chunks).
fn wakee_ranges(tl: &Timeline, chunk_intervals: usize) -> Vec<Range<usize>> {
    let n = tl.threads.len();
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
    ranges
}

/// Per waker, its buckets in chunk order (a transpose of the chunks'
/// bucket lists, so that each waker reads one list): waker `a`'s are
/// `parts[part_off[a]..part_off[a + 1]]`, each (chunk, start, end).
fn buckets_by_waker(chunks: &[Chunk], n: usize) -> (Vec<u32>, Vec<(u32, u32, u32)>) {
    let mut part_off = vec![0u32; n + 1];
    for c in chunks {
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
    (part_off, parts)
}

/// Each waker (in parallel) rebuilds its Runnable-time steps in scratch
/// and answers its buckets. Returns the pair rows with time (all rows when
/// tids repeat: they are merged by tid later) and each wakee thread's
/// waker-preempted ns.
fn answer_wakers(
    tl: &Timeline,
    chunks: &[Chunk],
    part_off: &[u32],
    parts: &[(u32, u32, u32)],
    dup: bool,
) -> (Vec<PairRow>, Vec<u64>) {
    let (n, end) = (tl.threads.len(), tl.end);
    let keep = |r: &PairRow| r.ns > 0 || dup;
    (0..n)
        .into_par_iter()
        .filter(|&a| part_off[a] < part_off[a + 1])
        .fold(
            || (Vec::new(), Vec::new(), vec![0u64; n]),
            |(mut rows, mut steps, mut wakee_ns), a| {
                let m = runnable_steps(tl.threads[a].intervals.iter(), end, &mut steps);
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
                add_into(&mut na, &nb);
                (ra, na)
            },
        )
}

/// Several threads share a tid: pairs are per (waker tid, wakee tid).
fn merge_by_tid(tl: &Timeline, rows: &mut Vec<PairRow>) {
    let tid = |i: u32| tl.threads[i as usize].tid;
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

/// The comm of `tid`: its (last) thread's, else the task table's.
fn comm_of_tid(trace: &Trace, tl: &Timeline, tid: Tid) -> String {
    tl.thread(tid)
        .map(|t| t.comm.clone())
        .unwrap_or_else(|| trace.tasks.comm(tid).to_string())
}

/// The pair table: largest first, then by waker and wakee tid, named.
fn pair_table(trace: &Trace, tl: &Timeline, mut rows: Vec<PairRow>, dup: bool) -> Vec<WakerPair> {
    let tid = |i: u32| tl.threads[i as usize].tid;
    let comm = |i: u32| {
        if dup {
            comm_of_tid(trace, tl, tid(i))
        } else {
            tl.threads[i as usize].comm.clone()
        }
    };
    // One integer key per row (i32 order kept by flipping the sign bit),
    // sorted before the strings exist. Keys are unique, so an unstable
    // sort is deterministic.
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
    rows.iter()
        .map(|r| WakerPair {
            waker: tid(r.waker),
            waker_comm: comm(r.waker),
            wakee: tid(r.wakee),
            wakee_comm: comm(r.wakee),
            wakeups: r.wakeups,
            waker_preempted_ns: r.ns,
            max_ns: r.max,
        })
        .collect()
}

/// All wakeups examined, and the per wakee process table (largest
/// first): wakeups, sleep and waker-preempted time of its threads.
fn process_table(
    trace: &Trace,
    tl: &Timeline,
    totals: &[(usize, Vec<WakeeTotals>)],
    wakee_ns: &[u64],
) -> (u64, Vec<WakerProcess>) {
    // wakee tgid -> (wakeups, sleep, ns)
    let mut procs: BTreeMap<Option<Tid>, (u64, u64, u64)> = BTreeMap::new();
    for (first, c) in totals {
        for (k, w) in c.iter().enumerate() {
            if w.wakeups > 0 {
                let b = first + k;
                let q = procs.entry(tl.threads[b].tgid).or_default();
                q.0 += w.wakeups;
                q.1 += w.sleep_ns;
                q.2 += wakee_ns[b];
            }
        }
    }
    let wakeups = totals.iter().flat_map(|(_, c)| c).map(|w| w.wakeups).sum();
    let mut processes: Vec<WakerProcess> = procs
        .into_iter()
        .map(|(tgid, (wakeups, sleep_ns, ns))| WakerProcess {
            tgid,
            name: match tgid {
                Some(g) => {
                    let c = trace.tasks.comm(g);
                    if c.is_empty() {
                        comm_of_tid(trace, tl, g)
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
    (wakeups, processes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::{StateInterval, ThreadState, ThreadTimeline};
    use schedscope_trace::Ts;

    pub(super) use crate::timeline::test_trace::iv;

    /// A small deterministic generator (xorshift), so tests need no crate.
    /// A small deterministic generator (xorshift), so tests need no crate.
    pub(super) struct Rng(pub(super) u64);
    impl Rng {
        pub(super) fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    pub(super) const STATES: [ThreadState; 5] = [
        ThreadState::Running,
        ThreadState::Runnable,
        ThreadState::Sleeping,
        ThreadState::Blocked,
        ThreadState::Other,
    ];

    /// A random contiguous timeline for case `case`: 2 to 6 threads, mostly
    /// wakeups after sleeps (so that pairs repeat), wakers that are idle,
    /// unknown or without a timeline; some cases with tids past pid_max
    /// (the hash-map index), some with sleeps longer than a u32 of ns (the
    /// long-gap side table), some with one tid twice (a reused tid).
    fn random_timeline(rng: &mut Rng, case: u64) -> Timeline {
        let nthreads = 2 + rng.below(5) as usize;
        let base = if case % 4 == 2 { 1 << 23 } else { 100 };
        let scale = if case % 4 == 1 { 1u64 << 29 } else { 1 };
        let tid_of = |i: usize| {
            Tid(if i == nthreads - 1 && case.is_multiple_of(3) {
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
        tl
    }

    /// (wakeups, sleep or waker-preempted ns, max ns) by pair or process.
    type Sums<K> = BTreeMap<K, (u64, u64, u64)>;

    /// What [`direct`] finds.
    struct Direct {
        /// Pairs with time: (wakeups, ns, max).
        pairs: Sums<(Tid, Tid)>,
        /// Wakee processes: (wakeups, sleep, ns).
        procs: Sums<Option<Tid>>,
        wakeups: u64,
        /// Waits longer than a u32 of ns.
        long_waits: usize,
    }

    /// The definition evaluated directly: every wakeup (a Runnable
    /// interval, not preempted, after a sleep, woken by another task), the
    /// overlap of its waker's Runnable intervals with the wait (a waker
    /// resolves to the last thread with its tid).
    fn direct(tl: &Timeline) -> Direct {
        let find = |tid: Tid| tl.threads.iter().rposition(|t| t.tid == tid);
        let overlap = |w: usize, a: u64, b: u64| -> u64 {
            tl.threads[w]
                .intervals
                .iter()
                .filter(|iv| iv.state == ThreadState::Runnable)
                .map(|iv| b.min(iv.end_or(tl.end).0).saturating_sub(a.max(iv.ts.0)))
                .sum()
        };
        let (mut pairs, mut procs) = (Sums::new(), Sums::new());
        let (mut wakeups, mut long_waits) = (0, 0);
        for t in &tl.threads {
            for (s, r) in t.intervals.pairs() {
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
        Direct {
            pairs,
            procs,
            wakeups,
            long_waits,
        }
    }

    /// Random contiguous timelines: waker_preempted against the definition
    /// evaluated directly (overlap of each waker's Runnable intervals with
    /// each wait), per pair, per process and in total; one tid appears
    /// twice (a reused tid) to cover the per-tid merge.
    #[test]
    fn waker_preempted_equals_direct_overlap() {
        let mut rng = Rng(0x1234_5678_9abc_def1);
        let (mut long_waits, mut with_time) = (0, 0);
        for case in 0..40 {
            let tl = random_timeline(&mut rng, case);
            let trace = Trace::new("test", schedscope_trace::TraceFormat::FtraceText);
            let got = waker_preempted(&trace, &tl);
            // Any chunking of the wakee threads, and any grouping of the
            // wakers, gives the same report.
            for chunk in [1, 50, 120] {
                for budget in [usize::MAX, 0, 1, 7, 40] {
                    let other = waker_preempted_chunked(&trace, &tl, chunk, budget);
                    assert_eq!(
                        serde_json::to_string(&other).ok(),
                        serde_json::to_string(&got).ok(),
                        "case {case} chunk {chunk} budget {budget}"
                    );
                }
            }
            let Direct {
                pairs,
                procs,
                wakeups,
                long_waits: long,
            } = direct(&tl);
            long_waits += long;
            with_time += usize::from(!pairs.is_empty());
            assert_eq!(got.wakeups, wakeups, "case {case}");
            assert_eq!(
                got.total_ns,
                pairs.values().map(|v| v.1).sum::<u64>(),
                "case {case}"
            );
            let got_pairs: Sums<(Tid, Tid)> = got
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
            let got_procs: Sums<Option<Tid>> = got
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
