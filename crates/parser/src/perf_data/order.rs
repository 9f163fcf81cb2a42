//! Putting the decoded events in time order.
//!
//! perf writes each CPU's ring buffer in turn, so the record stream is a
//! sequence of runs that are each sorted by time (one per CPU and flush),
//! and only runs of different CPUs flushed close together overlap in time.
//! The chunk decoders note where their runs start; [`merge_runs`] then
//! merges all runs into the final vector in one parallel pass: the time
//! axis is cut at a few splitter times, each part is merged on its own
//! (straight into its place in the output), and within a part only the
//! runs that overlap the current time are compared. Every event is moved
//! once, and the chunk-local ids are renumbered on the way.
//!
//! The merge is stable: events with equal times keep file order (the order
//! of the runs, then the order within a run), exactly as a stable sort by
//! time would leave them.

use rayon::prelude::*;
use schedscope_trace::{Event, Ts};
use std::mem::MaybeUninit;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A sorted run of decoded events and the chunk it came from (whose
/// chunk-local ids the renumbering closure maps).
pub(crate) struct Run<'e> {
    /// The events, non-decreasing in time.
    pub events: &'e [Event],
    /// Index of the chunk the events were decoded from.
    pub chunk: usize,
}

/// More runs than this per event (a stream that is not made of long sorted
/// runs) and the merge gives way to a plain stable sort.
const MIN_EVENTS_PER_RUN: usize = 64;

/// Merge `runs` (in file order, each sorted by time) into one vector sorted
/// by time, stable, applying `fix(chunk, &mut event)` to every event.
///
/// `reclaim`: the address range of the memory holding the runs, which the
/// caller will not read again; the merge gives its huge pages back to the
/// kernel as soon as every part that reads them is merged, so that the
/// peak memory stays below both vectors (and the output's page faults can
/// reuse them).
pub(crate) fn merge_runs<F>(runs: &[Run<'_>], reclaim: Option<Range<usize>>, fix: &F) -> Vec<Event>
where
    F: Fn(usize, &mut Event) + Sync,
{
    let total: usize = runs.iter().map(|r| r.events.len()).sum();
    let mut out: Vec<Event> = schedscope_trace::mem::vec_with_huge_pages(total);
    if runs.len() > 64 && runs.len() > total / MIN_EVENTS_PER_RUN {
        // Not perf's flushed-rings shape (adversarial or synthetic input):
        // a stable sort is the safer bound.
        for r in runs {
            out.extend(r.events.iter().map(|e| {
                let mut e = *e;
                fix(r.chunk, &mut e);
                e
            }));
        }
        out.par_sort_by_key(|e| e.ts);
        return out;
    }
    let splitters = splitters(runs, total);
    // bounds[r][j]: events of run r before splitter j (ts < splitters[j]).
    let bounds: Vec<Vec<usize>> = runs
        .par_iter()
        .map(|r| {
            splitters
                .iter()
                .map(|&t| r.events.partition_point(|e| e.ts < t))
                .collect()
        })
        .collect();
    let nparts = splitters.len() + 1;
    let range = |r: usize, p: usize| -> (usize, usize) {
        let lo = if p == 0 { 0 } else { bounds[r][p - 1] };
        let hi = if p + 1 == nparts {
            runs[r].events.len()
        } else {
            bounds[r][p]
        };
        (lo, hi)
    };
    let sizes: Vec<usize> = (0..nparts)
        .map(|p| {
            (0..runs.len())
                .map(|r| {
                    let (lo, hi) = range(r, p);
                    hi - lo
                })
                .sum()
        })
        .collect();
    let cursors: Vec<Vec<Cursor>> = (0..nparts)
        .map(|p| {
            (0..runs.len())
                .filter_map(|r| {
                    let (lo, hi) = range(r, p);
                    (hi > lo).then_some(Cursor {
                        run: r,
                        pos: lo,
                        end: hi,
                    })
                })
                .collect()
        })
        .collect();
    let pages = reclaim.map(|r| Pages::new(r, runs, &cursors));
    let spare = &mut out.spare_capacity_mut()[..total];
    let written: usize = super::split_slots(spare, sizes.iter().copied())
        .into_par_iter()
        .zip(cursors.into_par_iter())
        .enumerate()
        .map(|(p, (dst, cursors))| {
            let n = merge_part(runs, cursors, dst, fix);
            if let Some(pages) = &pages {
                pages.done(p);
            }
            n
        })
        .sum();
    assert_eq!(written, total, "every slot of the merged vector is written");
    // SAFETY: the parts cover `out`'s first `total` slots (split_slots cut
    // them by the part sizes) and each merge_part wrote every slot of its
    // part (the sum of what they wrote is `total`, checked above).
    unsafe { out.set_len(total) };
    out
}

/// The huge pages of the runs' memory and how many parts still read each.
struct Pages {
    /// Address of page 0.
    first: usize,
    /// Per page: parts that read it and are not merged yet.
    readers: Vec<AtomicUsize>,
    /// Per part: the pages it reads.
    of_part: Vec<Vec<usize>>,
}

impl Pages {
    fn new(mem: Range<usize>, runs: &[Run<'_>], parts: &[Vec<Cursor>]) -> Pages {
        let first = mem.start.next_multiple_of(HUGE);
        let n = (mem.end / HUGE * HUGE).saturating_sub(first) / HUGE;
        let readers: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
        let size = std::mem::size_of::<Event>();
        let of_part: Vec<Vec<usize>> = parts
            .iter()
            .map(|cursors| {
                let mut v: Vec<usize> = Vec::new();
                for c in cursors {
                    let base = runs[c.run].events.as_ptr() as usize;
                    let (a, b) = (base + c.pos * size, base + c.end * size);
                    // pages wholly or partly under [a, b), within `mem`
                    let lo = a.saturating_sub(first) / HUGE;
                    let hi = (b.saturating_sub(first)).div_ceil(HUGE).min(n);
                    v.extend(lo..hi);
                }
                v.sort_unstable();
                v.dedup();
                v
            })
            .collect();
        for v in &of_part {
            for &pg in v {
                readers[pg].fetch_add(1, Ordering::Relaxed);
            }
        }
        Pages {
            first,
            readers,
            of_part,
        }
    }

    /// Part `p` is merged: release the pages no other part still reads.
    fn done(&self, p: usize) {
        for &pg in self.of_part.get(p).into_iter().flatten() {
            if self.readers[pg].fetch_sub(1, Ordering::AcqRel) == 1 {
                release_huge_page(self.first + pg * HUGE);
            }
        }
    }
}

/// Give back the huge page at `addr` of the runs' memory.
fn release_huge_page(addr: usize) {
    // SAFETY: `addr` is a whole 2 MiB page inside the memory that the
    // caller of merge_runs handed over (`reclaim`: never read again once
    // merged), and every part that reads from it has finished; the page
    // then reads as zeros, which nothing looks at before the memory is
    // freed.
    unsafe { schedscope_trace::mem::release_huge_pages(addr, HUGE) };
}

/// Splitter times for about one part per 64 Ki events (at most 8 per
/// thread), taken from a sample of the runs; strictly increasing.
fn splitters(runs: &[Run<'_>], total: usize) -> Vec<Ts> {
    let parts = (total / (64 << 10)).clamp(1, 8 * rayon::current_num_threads());
    if parts < 2 {
        return Vec::new();
    }
    let step = (total / (parts * 16)).max(1);
    let mut sample: Vec<Ts> = Vec::with_capacity(parts * 16 + 1);
    let mut next = 0usize;
    let mut seen = 0usize;
    for r in runs {
        let n = r.events.len();
        while next < seen + n {
            sample.push(r.events[next - seen].ts);
            next += step;
        }
        seen += n;
    }
    sample.sort_unstable();
    let mut out: Vec<Ts> = (1..parts)
        .filter_map(|i| sample.get(i * sample.len() / parts).copied())
        .collect();
    out.dedup();
    out
}

/// Where a run stands within one part.
#[derive(Clone, Copy)]
struct Cursor {
    run: usize,
    pos: usize,
    end: usize,
}

/// Merge the part of each run that `cursors` give (in run order) into
/// `dst`; returns the number of events written (all of them).
fn merge_part<F>(
    runs: &[Run<'_>],
    cursors: Vec<Cursor>,
    dst: &mut [MaybeUninit<Event>],
    fix: &F,
) -> usize
where
    F: Fn(usize, &mut Event) + Sync,
{
    let key = |c: &Cursor| (runs[c.run].events[c.pos].ts, c.run);
    // Runs join the merge in the order of their first event.
    let mut pending = cursors;
    pending.sort_by_key(key);
    let mut pending = pending.into_iter().peekable();
    let mut active: Vec<Cursor> = Vec::new();
    let mut w = 0usize;
    let mut emit = |run: usize, e: &Event, w: &mut usize| {
        let mut e = *e;
        fix(runs[run].chunk, &mut e);
        dst[*w].write(e);
        *w += 1;
    };
    loop {
        // The active run with the smallest (time, run).
        let Some(bi) = (0..active.len()).min_by_key(|&i| key(&active[i])) else {
            match pending.next() {
                Some(c) => active.push(c),
                None => break,
            }
            continue;
        };
        let bkey = key(&active[bi]);
        let limit = pending.peek().map(key);
        if limit.is_some_and(|l| l < bkey) {
            active.extend(pending.next());
            continue;
        }
        if active.len() == 1 {
            // Alone: everything before the next run's first event goes at once.
            let c = &mut active[0];
            let evs = &runs[c.run].events[c.pos..c.end];
            let n = match limit {
                None => evs.len(),
                Some((lt, lrun)) => {
                    evs.partition_point(|e| e.ts < lt || (e.ts == lt && c.run < lrun))
                }
            };
            for e in &evs[..n] {
                emit(c.run, e, &mut w);
            }
            c.pos += n;
        } else if active.len() == 2 {
            // Two runs (one per CPU, the common case): a plain merge until
            // one ends or the next run's first event is due.
            let (i, j) = if active[0].run < active[1].run {
                (0, 1)
            } else {
                (1, 0)
            };
            let (mut a, mut b) = (active[i], active[j]);
            let (ea, eb) = (runs[a.run].events, runs[b.run].events);
            let (lt, lrun) = limit.unwrap_or((Ts(u64::MAX), usize::MAX));
            while a.pos < a.end && b.pos < b.end {
                let (x, y) = (&ea[a.pos], &eb[b.pos]);
                // ties go to the earlier run (`a`)
                let (c, e) = if x.ts <= y.ts {
                    (&mut a, x)
                } else {
                    (&mut b, y)
                };
                if (lt, lrun) < (e.ts, c.run) {
                    break;
                }
                emit(c.run, e, &mut w);
                c.pos += 1;
            }
            active[i] = a;
            active[j] = b;
        } else {
            let c = &mut active[bi];
            emit(c.run, &runs[c.run].events[c.pos], &mut w);
            c.pos += 1;
        }
        active.retain(|c| c.pos < c.end);
    }
    w
}

/// Transparent huge page size.
const HUGE: usize = schedscope_trace::mem::HUGE_PAGE;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf_data::tests::ev;
    use schedscope_trace::Cpu;

    /// Cut `v` into runs where the time decreases, merge them, compare
    /// with a stable sort of the whole vector (the oracle).
    fn check(v: &[Event]) {
        let mut starts = vec![0];
        starts.extend((1..v.len()).filter(|&i| v[i].ts < v[i - 1].ts));
        starts.push(v.len());
        let runs: Vec<Run<'_>> = starts
            .windows(2)
            .enumerate()
            .map(|(i, w)| Run {
                events: &v[w[0]..w[1]],
                chunk: i % 3,
            })
            .collect();
        // the fix-up marks each event with its chunk, to see it applied once
        let got = merge_runs(&runs, None, &|c, e| {
            e.cpu = Cpu(e.cpu.0 * 10 + c as u32 + 1)
        });
        let mut want: Vec<Event> = Vec::new();
        for r in &runs {
            for e in r.events {
                let mut e = *e;
                e.cpu = Cpu(e.cpu.0 * 10 + r.chunk as u32 + 1);
                want.push(e);
            }
        }
        want.sort_by_key(|e| e.ts);
        assert_eq!(got, want);
    }

    /// A small LCG: deterministic pseudo-random numbers for the tests.
    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *seed >> 33
    }

    #[test]
    fn merge_equals_stable_sort_on_interleaved_cpu_runs() {
        // The shape perf writes: rounds of per-CPU runs that overlap in
        // time, with many equal timestamps, big enough for several parts.
        let mut seed = 7;
        let mut v = Vec::new();
        let mut tag = 0;
        let mut t0 = 0u64;
        for _round in 0..40 {
            for _cpu in 0..3 {
                let mut t = t0 + lcg(&mut seed) % 50;
                for _ in 0..(lcg(&mut seed) % 5000) {
                    t += lcg(&mut seed) % 4; // ties when 0
                    v.push(ev(t, tag));
                    tag += 1;
                }
            }
            t0 += 4000;
        }
        // a few late events, older than everything before them
        for k in 0..20 {
            v.insert(v.len() / 2 + k * 7, ev(lcg(&mut seed) % 1000, -(k as i32)));
        }
        assert!(v.len() > 200_000, "enough for several parts");
        check(&v);
    }

    /// Released pages of the source never feed wrong events into the
    /// output: a source of many huge pages merged with reclaim gives what
    /// a stable sort of a copy made beforehand gives.
    #[test]
    fn merge_with_reclaim_equals_stable_sort() {
        let n = 400_000usize; // ~22 MB: about ten huge pages
        let mut src: Vec<Event> = schedscope_trace::mem::vec_with_huge_pages(n);
        let mut seed = 11;
        let mut t0 = 0u64;
        while src.len() < n {
            for _cpu in 0..2 {
                let mut t = t0 + lcg(&mut seed) % 100;
                for _ in 0..(lcg(&mut seed) % 20_000).min((n - src.len()) as u64) {
                    t += lcg(&mut seed) % 3;
                    let tag = src.len() as i32;
                    src.push(ev(t, tag));
                }
            }
            t0 += 20_000;
        }
        let mut want = src.clone();
        want.sort_by_key(|e| e.ts);
        let mut starts = vec![0];
        starts.extend((1..src.len()).filter(|&i| src[i].ts < src[i - 1].ts));
        starts.push(src.len());
        let mem = src.as_ptr() as usize..src.as_ptr() as usize + n * std::mem::size_of::<Event>();
        let runs: Vec<Run<'_>> = starts
            .windows(2)
            .map(|w| Run {
                events: &src[w[0]..w[1]],
                chunk: 0,
            })
            .collect();
        assert!(runs.len() > 10, "{}", runs.len());
        let got = merge_runs(&runs, Some(mem), &|_, _| {});
        drop(runs);
        assert_eq!(got, want);
    }

    #[test]
    fn merge_handles_edge_shapes() {
        check(&[]);
        check(&[ev(5, 0)]);
        check(
            &(0..100_000)
                .map(|i| ev(i / 3, i as i32))
                .collect::<Vec<_>>(),
        );
        // all equal times in many runs: file order must survive
        let v: Vec<Event> = (0..200_000).map(|i| ev(7, i)).collect();
        check(&v);
        // descending: one run per event, the stable-sort fallback
        check(
            &(0..10_000)
                .rev()
                .map(|i| ev(i, i as i32))
                .collect::<Vec<_>>(),
        );
        // many short overlapping runs (many active at once)
        let mut seed = 3;
        let v: Vec<Event> = (0..150_000)
            .map(|i| ev((i % 97) * 100 + lcg(&mut seed) % 3000, i as i32))
            .collect();
        check(&v);
        // many long runs overlapping in time (many active at once)
        let v: Vec<Event> = (0..50u64)
            .flat_map(|r| (0..4000u64).map(move |i| ev(i * 3 + r % 5, (r * 4000 + i) as i32)))
            .collect();
        check(&v);
    }
}
