//! Per-lane summary index: what a CPU lane shows in one screen cell, in
//! about log(runs) time whatever the zoom.
//!
//! A lane is the CPU's run intervals ([`schedscope_analysis::CpuRun`]),
//! stored as sorted columns. For a cell `[a, b)` the index answers:
//! - the busy time (non-idle), exactly, from prefix sums of run lengths
//!   with the two edge runs clipped;
//! - the dominant task (most time in the cell), the dominant process (the
//!   colour key, most time summed over its tasks) and whether several tasks
//!   share the cell: exactly by scanning when the cell holds at most
//!   [`EXACT_RUNS`] runs, otherwise from a mipmap of fixed-width buckets
//!   (each level 4x coarser than the one below, as Perfetto's mipmaps): the
//!   cell is covered by the buckets wholly inside it, coarse ones in the
//!   middle and finer ones towards its edges (as a segment tree) down to
//!   edges under 1/[`EDGE_SHARE`] of the cell, and the buckets' dominant
//!   tasks and processes are merged. So a cell only ever names a task or
//!   process that ran in it;
//! - the mean number of tasks waiting (Runnable) for this CPU, exactly,
//!   from the integral of a step function (the Runnable-pressure strip);
//! - the time of runs whose switch-in a lost-event repair placed
//!   ([`Lanes::repaired_ns`], from the runs' spans per CPU), which the
//!   lanes draw dotted.
//!
//! Building costs O(runs + buckets) per lane once after loading; a frame
//! costs O(columns x (log runs + [`EXACT_RUNS`] + buckets per cell)) per
//! lane, the last about 4 + 6 x log4([`EDGE_SHARE`]).

use crate::overlay::{Marks, Spans};
use schedscope_analysis::{ThreadState, Timeline};

/// Cells holding at most this many runs are summarised exactly.
pub const EXACT_RUNS: usize = 32;

/// Edges of a wide cell shorter than this share of it are left out of its
/// dominant task and process (see `CpuLane::merge_buckets`): the cost of a
/// cell stays a few dozen buckets whatever the lane's length.
pub const EDGE_SHARE: u64 = 64;

/// A task id as the lanes see it; 0 = idle.
pub type Tid = i32;

/// What one cell of a CPU lane holds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Cell {
    /// Non-idle time in the cell divided by the cell's length (0..=1).
    pub busy: f64,
    /// The task with the most time in the cell (None when only idle).
    pub task: Option<Tid>,
    /// The process (colour key: tgid, else tid) with the most time in the
    /// cell, summed over its tasks (None when only idle).
    pub process: Option<Tid>,
    /// Whether two or more non-idle tasks ran in the cell.
    pub several: bool,
}

/// What [`CpuLane::census`] counts in a cell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Census {
    /// Distinct non-idle tasks that ran in the cell.
    pub tasks: usize,
    /// The process (colour key) with the most time in the cell, and that
    /// time (ns).
    pub process: Option<(Tid, u64)>,
}

/// One bucket of a mipmap level.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Bucket {
    /// Dominant non-idle task (0 = none).
    tid: Tid,
    /// Its time in the bucket.
    ns: u64,
    /// Dominant process (0 = none).
    key: Tid,
    /// Its time in the bucket (all its tasks).
    key_ns: u64,
    /// Two or more non-idle tasks ran in the bucket.
    several: bool,
}

/// One mipmap level: buckets of `width` ns from the lane's origin.
#[derive(Debug, PartialEq)]
struct Level {
    width: u64,
    buckets: Vec<Bucket>,
}

/// Tasks a [`Tally`] holds without allocating.
const INLINE: usize = 24;

/// Small accumulator of time per task (cells and buckets hold few tasks):
/// the first [`INLINE`] in place, more on the heap, so that summarising a
/// cell allocates nothing in the common case.
#[derive(Default)]
struct Tally {
    inline: [(Tid, f64); INLINE],
    len: usize,
    spill: Vec<(Tid, f64)>,
}

impl Tally {
    fn add(&mut self, tid: Tid, ns: f64) {
        if tid == 0 || ns <= 0.0 {
            return;
        }
        if let Some((_, v)) = self.inline[..self.len]
            .iter_mut()
            .chain(self.spill.iter_mut())
            .find(|(t, _)| *t == tid)
        {
            *v += ns;
        } else if self.len < INLINE {
            self.inline[self.len] = (tid, ns);
            self.len += 1;
        } else {
            self.spill.push((tid, ns));
        }
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// (dominant task, its time, several tasks?)
    fn top(&self) -> Option<(Tid, f64, bool)> {
        let mut best: Option<(Tid, f64)> = None;
        for &(t, v) in self.inline[..self.len].iter().chain(&self.spill) {
            // ties go to the lower tid so that results are deterministic
            if best.is_none_or(|(bt, bv)| v > bv || (v == bv && t < bt)) {
                best = Some((t, v));
            }
        }
        best.map(|(t, v)| (t, v, self.len + self.spill.len() > 1))
    }

    fn clear(&mut self) {
        self.len = 0;
        self.spill.clear();
    }
}

/// A step function of the number of tasks waiting, with its running integral.
#[derive(Debug, Default, PartialEq)]
pub struct Pressure {
    /// Change points, sorted.
    times: Vec<u64>,
    /// Count from `times[i]` to `times[i + 1]`.
    counts: Vec<u32>,
    /// Integral of the count from `times[0]` to `times[i]` (task-ns).
    integral: Vec<u128>,
}

impl Pressure {
    /// From (start, end) waiting intervals.
    pub fn from_intervals(iv: &[(u64, u64)]) -> Pressure {
        let mut edges: Vec<(u64, i32)> = Vec::with_capacity(iv.len() * 2);
        for &(s, e) in iv {
            if e > s {
                edges.push((s, 1));
                edges.push((e, -1));
            }
        }
        edges.sort_unstable();
        let mut p = Pressure::default();
        let mut count: i64 = 0;
        let mut acc: u128 = 0;
        for (t, d) in edges {
            if let Some(&last) = p.times.last() {
                acc += count.max(0) as u128 * u128::from(t - last);
                if t == last {
                    count += i64::from(d);
                    if let Some(c) = p.counts.last_mut() {
                        *c = count.max(0) as u32;
                    }
                    continue;
                }
            }
            count += i64::from(d);
            p.times.push(t);
            p.counts.push(count.max(0) as u32);
            p.integral.push(acc);
        }
        p
    }

    /// The change points and the count from each to the next (what
    /// [`Pressure::from_steps`] takes back).
    pub fn steps(&self) -> (&[u64], &[u32]) {
        (&self.times, &self.counts)
    }

    /// From change points (sorted, distinct) and the count from each to
    /// the next, as [`Pressure::steps`] gives them; None when the times are
    /// not strictly increasing or the lengths differ.
    pub fn from_steps(times: Vec<u64>, counts: Vec<u32>) -> Option<Pressure> {
        if times.len() != counts.len() || times.windows(2).any(|w| w[0] >= w[1]) {
            return None;
        }
        let mut integral = Vec::with_capacity(times.len());
        let mut acc: u128 = 0;
        for (i, &t) in times.iter().enumerate() {
            if i > 0 {
                acc += u128::from(counts[i - 1]) * u128::from(t - times[i - 1]);
            }
            integral.push(acc);
        }
        Some(Pressure {
            times,
            counts,
            integral,
        })
    }

    /// Integral of the count from the first change point to `t`.
    fn at(&self, t: u64) -> u128 {
        let i = self.times.partition_point(|&x| x <= t);
        if i == 0 {
            return 0;
        }
        let i = i - 1;
        self.integral[i] + u128::from(self.counts[i]) * u128::from(t - self.times[i])
    }

    /// Mean count over `[a, b)`.
    pub fn mean(&self, a: u64, b: u64) -> f64 {
        if b <= a {
            return 0.0;
        }
        (self.at(b) - self.at(a)) as f64 / (b - a) as f64
    }

    /// Count at instant `t`.
    pub fn count_at(&self, t: u64) -> u32 {
        let i = self.times.partition_point(|&x| x <= t);
        if i == 0 {
            0
        } else {
            self.counts[i - 1]
        }
    }
}

/// The summary index of one CPU lane.
#[derive(Debug, PartialEq)]
pub struct CpuLane {
    /// CPU number.
    pub cpu: u32,
    starts: Vec<u64>,
    ends: Vec<u64>,
    tids: Vec<Tid>,
    /// The process (colour key) of each run's task; 0 for idle.
    keys: Vec<Tid>,
    /// `busy_prefix[i]` = non-idle time of runs `0..i`.
    busy_prefix: Vec<u64>,
    /// `idle_prefix[i]` = idle time of runs `0..i`.
    idle_prefix: Vec<u64>,
    origin: u64,
    levels: Vec<Level>,
    /// Tasks waiting (Runnable) for this CPU.
    pub pressure: Pressure,
}

impl CpuLane {
    /// Index the runs `(start, end, tid)` of one CPU (time-ordered; an
    /// end past the next start is clipped to it so the columns stay
    /// sorted); `process` gives the process (colour key) of a task.
    pub fn new(
        cpu: u32,
        runs: &[(u64, u64, Tid)],
        waiting: &[(u64, u64)],
        process: impl Fn(Tid) -> Tid,
    ) -> CpuLane {
        CpuLane::with_pressure(cpu, runs, Pressure::from_intervals(waiting), process)
    }

    /// [`CpuLane::new`] with the waiting step function already built.
    pub fn with_pressure(
        cpu: u32,
        runs: &[(u64, u64, Tid)],
        pressure: Pressure,
        process: impl Fn(Tid) -> Tid,
    ) -> CpuLane {
        let keys = runs
            .iter()
            .map(|&(_, _, tid)| match (tid, process(tid)) {
                (0, _) => 0,
                (t, 0) => t,
                (_, k) => k,
            })
            .collect();
        CpuLane::from_runs(cpu, runs, keys, pressure)
    }

    /// A lane from its runs and each run's process (colour key, as
    /// [`CpuLane::keys`] gives them back; `keys` is cut or padded with 0
    /// to the number of runs).
    pub fn from_runs(
        cpu: u32,
        runs: &[(u64, u64, Tid)],
        mut keys: Vec<Tid>,
        pressure: Pressure,
    ) -> CpuLane {
        let n = runs.len();
        keys.resize(n, 0);
        let mut starts = Vec::with_capacity(n);
        let mut ends = Vec::with_capacity(n);
        let mut tids = Vec::with_capacity(n);
        let mut busy_prefix = Vec::with_capacity(n + 1);
        busy_prefix.push(0);
        let mut idle_prefix = Vec::with_capacity(n + 1);
        idle_prefix.push(0);
        let (mut acc, mut idle) = (0u64, 0u64);
        for (i, &(s, e, tid)) in runs.iter().enumerate() {
            let s = s.max(ends.last().copied().unwrap_or(0));
            let next = runs.get(i + 1).map_or(u64::MAX, |r| r.0.max(s));
            let e = e.clamp(s, next);
            starts.push(s);
            ends.push(e);
            tids.push(tid);
            if tid != 0 {
                acc += e - s;
            } else {
                idle += e - s;
            }
            busy_prefix.push(acc);
            idle_prefix.push(idle);
        }
        let mut lane = CpuLane {
            cpu,
            origin: starts.first().copied().unwrap_or(0),
            starts,
            ends,
            tids,
            keys,
            busy_prefix,
            idle_prefix,
            levels: Vec::new(),
            pressure,
        };
        lane.build_levels();
        lane
    }

    /// Number of runs.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// Whether the lane has no runs.
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    fn build_levels(&mut self) {
        let n = self.starts.len();
        let (Some(&first), Some(&last)) = (self.starts.first(), self.ends.last()) else {
            return;
        };
        let span = last.saturating_sub(first).max(1);
        // about 8 runs per level-0 bucket: cells narrower than that are
        // summarised exactly
        let width0 = (span / (n as u64 / 8).max(1)).max(1);
        let nb = (span / width0 + 1) as usize;
        let mut buckets = vec![Bucket::default(); nb];
        let mut tally = Tally::default();
        let mut ktally = Tally::default();
        let mut cur = 0usize;
        for i in 0..n {
            let (s, e, tid, key) = (self.starts[i], self.ends[i], self.tids[i], self.keys[i]);
            let mut t = s;
            while t < e {
                let b = ((t - first) / width0) as usize;
                if b >= nb {
                    break;
                }
                if b != cur {
                    flush(&mut buckets[cur], &tally, &ktally);
                    tally.clear();
                    ktally.clear();
                    cur = b;
                }
                let bend = first + (b as u64 + 1) * width0;
                let piece_end = e.min(bend);
                tally.add(tid, (piece_end - t) as f64);
                ktally.add(key, (piece_end - t) as f64);
                t = piece_end;
            }
        }
        if let Some(b) = buckets.get_mut(cur) {
            flush(b, &tally, &ktally);
        }
        let mut levels = vec![Level {
            width: width0,
            buckets,
        }];
        while let Some(prev) = levels.last() {
            if prev.buckets.len() <= 1 {
                break;
            }
            let mut next = Vec::with_capacity(prev.buckets.len() / 4 + 1);
            for chunk in prev.buckets.chunks(4) {
                tally.clear();
                ktally.clear();
                let mut several = false;
                for b in chunk {
                    several |= b.several;
                    tally.add(b.tid, b.ns as f64);
                    ktally.add(b.key, b.key_ns as f64);
                }
                let mut out = Bucket::default();
                flush(&mut out, &tally, &ktally);
                out.several |= several;
                next.push(out);
            }
            let width = prev.width.saturating_mul(4);
            levels.push(Level {
                width,
                buckets: next,
            });
        }
        self.levels = levels;

        fn flush(b: &mut Bucket, tally: &Tally, ktally: &Tally) {
            if let (Some((t, v, several)), Some((k, kv, _))) = (tally.top(), ktally.top()) {
                *b = Bucket {
                    tid: t,
                    ns: v as u64,
                    key: k,
                    key_ns: kv as u64,
                    several,
                };
            }
        }
    }

    /// Index of the first run that ends after `a`.
    fn first_after(&self, a: u64) -> usize {
        self.ends.partition_point(|&e| e <= a)
    }

    /// Non-idle time in `[a, b)`, exact.
    pub fn busy_ns(&self, a: u64, b: u64) -> u64 {
        self.clipped_sum(&self.busy_prefix, |tid| tid != 0, a, b)
    }

    /// Idle time (tid 0 running) in `[a, b)`, exact.
    pub fn idle_ns(&self, a: u64, b: u64) -> u64 {
        self.clipped_sum(&self.idle_prefix, |tid| tid == 0, a, b)
    }

    /// Time in `[a, b)` of the runs that `counted` selects, from their
    /// `prefix` sums with the two edge runs clipped.
    fn clipped_sum(&self, prefix: &[u64], counted: impl Fn(Tid) -> bool, a: u64, b: u64) -> u64 {
        if b <= a {
            return 0;
        }
        let i0 = self.first_after(a);
        let i1 = self.starts.partition_point(|&s| s < b);
        if i1 <= i0 {
            return 0;
        }
        let mut total = prefix[i1] - prefix[i0];
        if counted(self.tids[i0]) {
            total -= a
                .saturating_sub(self.starts[i0])
                .min(self.ends[i0] - self.starts[i0]);
        }
        let l = i1 - 1;
        if counted(self.tids[l]) {
            // the part of the last run past b, not already clipped at a
            let from = self.starts[l].max(a).min(self.ends[l]);
            total -= self.ends[l].saturating_sub(b).min(self.ends[l] - from);
        }
        total
    }

    /// Summary of the cell `[a, b)`.
    pub fn cell(&self, a: u64, b: u64) -> Cell {
        if b <= a || self.starts.is_empty() {
            return Cell::default();
        }
        let busy = self.busy_ns(a, b) as f64 / (b - a) as f64;
        let i0 = self.first_after(a);
        let i1 = self.starts.partition_point(|&s| s < b);
        let mut tally = Tally::default();
        let mut ktally = Tally::default();
        let mut several = false;
        if i1.saturating_sub(i0) <= EXACT_RUNS {
            self.scan(i0, i1, a, b, &mut tally, &mut ktally);
        } else {
            several = self.merge_buckets(a, b, &mut tally, &mut ktally);
        }
        let top = tally.top();
        Cell {
            busy,
            task: top.map(|t| t.0),
            process: ktally.top().map(|t| t.0),
            several: several || top.is_some_and(|t| t.2),
        }
    }

    /// Add the time of runs `i0..i1` inside `[a, b)` to the tallies.
    fn scan(&self, i0: usize, i1: usize, a: u64, b: u64, tally: &mut Tally, ktally: &mut Tally) {
        for i in i0..i1 {
            let ov = self.ends[i].min(b).saturating_sub(self.starts[i].max(a)) as f64;
            tally.add(self.tids[i], ov);
            ktally.add(self.keys[i], ov);
        }
    }

    /// Cover `[a, b)` with mipmap buckets that lie wholly inside it, as a
    /// segment tree does: the coarsest level's buckets first, each leftover
    /// edge (shorter than a bucket) with the next finer level's, down to
    /// edges shorter than 1/[`EDGE_SHARE`] of the cell, which are left out
    /// (or down to level 0, whose leftovers, a few runs, are scanned). A
    /// bucket adds its dominant task's and process's time, so every task
    /// or process a cell names ran in it; what the left-out edges hold
    /// (under 2/[`EDGE_SHARE`] of the cell) is scanned only when nothing
    /// else ran in the cell. Returns whether a bucket saw several tasks.
    /// At most about 4 + 6 x log4([`EDGE_SHARE`]) buckets per cell.
    fn merge_buckets(&self, a: u64, b: u64, tally: &mut Tally, ktally: &mut Tally) -> bool {
        let Some(top) = self.levels.iter().rposition(|l| l.width <= b - a) else {
            self.scan_range(a, b, tally, ktally);
            return false;
        };
        let o = self.origin;
        let (lo, hi) = (a.max(o), b);
        if lo >= hi {
            return false;
        }
        let min = (b - a) / EDGE_SHARE;
        let mut several = false;
        // the coarsest level with a whole bucket inside [lo, hi)
        let mut li = top;
        let (ca, cb) = loop {
            let w = self.levels[li].width;
            let (jlo, jhi) = ((lo - o).div_ceil(w), (hi - o) / w);
            if jlo < jhi {
                several |= self.add_buckets(li, jlo, jhi, tally, ktally);
                break (o + jlo * w, o + jhi * w);
            }
            match li.checked_sub(1) {
                Some(finer) => li = finer,
                None => {
                    self.scan_range(lo, hi, tally, ktally);
                    return several;
                }
            }
        };
        // then the left edge [lo, ca) and the right edge [cb, hi), each with
        // finer and finer buckets towards the cell's boundary
        let mut left_out = [(0, 0); 2];
        for (side, (mut x, mut y)) in [(lo, ca), (cb, hi)].into_iter().enumerate() {
            let mut l = li;
            while y > x {
                if y - x < min {
                    left_out[side] = (x, y);
                    break;
                }
                let Some(finer) = l.checked_sub(1) else {
                    self.scan_range(x, y, tally, ktally);
                    break;
                };
                l = finer;
                let w = self.levels[l].width;
                let (jlo, jhi) = ((x - o).div_ceil(w), (y - o) / w);
                if jlo < jhi {
                    several |= self.add_buckets(l, jlo, jhi, tally, ktally);
                    // the edge left is on the cell's side of these buckets
                    if side == 0 {
                        y = o + jlo * w;
                    } else {
                        x = o + jhi * w;
                    }
                }
            }
        }
        if tally.is_empty() {
            for (x, y) in left_out {
                self.scan_range(x, y, tally, ktally);
            }
        }
        several
    }

    /// Add buckets `jlo..jhi` of level `li` to the tallies; whether one
    /// saw several tasks.
    fn add_buckets(
        &self,
        li: usize,
        jlo: u64,
        jhi: u64,
        tally: &mut Tally,
        ktally: &mut Tally,
    ) -> bool {
        let buckets = &self.levels[li].buckets;
        let n = buckets.len() as u64;
        let mut several = false;
        for bk in &buckets[jlo.min(n) as usize..jhi.min(n) as usize] {
            if bk.tid != 0 {
                several |= bk.several;
                tally.add(bk.tid, bk.ns as f64);
                ktally.add(bk.key, bk.key_ns as f64);
            }
        }
        several
    }

    /// Add the time in `[x, y)` of every run to the tallies.
    fn scan_range(&self, x: u64, y: u64, tally: &mut Tally, ktally: &mut Tally) {
        let i0 = self.first_after(x);
        let i1 = self.starts.partition_point(|&s| s < y);
        self.scan(i0, i1, x, y, tally, ktally);
    }

    /// Exact census of the cell `[a, b)`: distinct tasks and the process
    /// with the most time (for the detail line; O(runs in the cell), so
    /// for one cell per frame, not for every cell).
    pub fn census(&self, a: u64, b: u64) -> Census {
        let mut tids: Vec<Tid> = Vec::new();
        let mut per: std::collections::HashMap<Tid, u64> = std::collections::HashMap::new();
        let i0 = self.first_after(a);
        let i1 = self.starts.partition_point(|&s| s < b).max(i0);
        for i in i0..i1 {
            if self.tids[i] == 0 {
                continue;
            }
            let ov = self.ends[i].min(b).saturating_sub(self.starts[i].max(a));
            if ov == 0 {
                continue;
            }
            tids.push(self.tids[i]);
            *per.entry(self.keys[i]).or_default() += ov;
        }
        tids.sort_unstable();
        tids.dedup();
        // ties go to the lower process id, as in the cells
        let process = per
            .into_iter()
            .max_by_key(|&(k, ns)| (ns, std::cmp::Reverse(k)));
        Census {
            tasks: tids.len(),
            process,
        }
    }

    /// Who ran at instant `t` (0 = idle, None = no run covers `t`).
    pub fn task_at(&self, t: u64) -> Option<Tid> {
        let i = self.first_after(t);
        (i < self.starts.len() && self.starts[i] <= t).then(|| self.tids[i])
    }

    /// The run covering `t`: (start, end, tid).
    pub fn run_at(&self, t: u64) -> Option<(u64, u64, Tid)> {
        let i = self.first_after(t);
        (i < self.starts.len() && self.starts[i] <= t)
            .then(|| (self.starts[i], self.ends[i], self.tids[i]))
    }

    /// The process (colour key) of each run's task, in run order (0 for
    /// idle).
    pub fn keys(&self) -> &[Tid] {
        &self.keys
    }

    /// Every run: (start, end, tid), in time order.
    pub fn runs(&self) -> impl Iterator<Item = (u64, u64, Tid)> + '_ {
        (0..self.starts.len()).map(|i| (self.starts[i], self.ends[i], self.tids[i]))
    }

    /// Runs overlapping `[a, b)`: (start, end, tid).
    pub fn runs_in(&self, a: u64, b: u64) -> impl Iterator<Item = (u64, u64, Tid)> + '_ {
        let i0 = self.first_after(a);
        let i1 = self.starts.partition_point(|&s| s < b).max(i0);
        (i0..i1).map(|i| (self.starts[i], self.ends[i], self.tids[i]))
    }
}

/// The lanes of a whole timeline with their overlays.
#[derive(Debug, Default, PartialEq)]
pub struct Lanes {
    /// One per CPU, by CPU number.
    pub cpus: Vec<CpuLane>,
    /// Time during which at least one task was Runnable anywhere.
    pub any_waiting: Spans,
    /// Per CPU: wakeup-to-run latency (ns) at each switch-in after a wakeup.
    pub wakeups: Vec<Marks>,
    /// Per CPU: preemptions (switch-outs still runnable), value 1.
    pub preemptions: Vec<Marks>,
    /// Per CPU: wasted idle, idle while some task waited anywhere.
    pub wasted: Vec<Spans>,
    /// Per CPU: the runs whose switch-in no sched_switch recorded, placed
    /// by a lost-event repair ([`Timeline::repair_at`]); empty on a CPU
    /// without loss evidence.
    pub repaired: Vec<Spans>,
}

impl Lanes {
    /// Index a timeline.
    pub fn build(tl: &Timeline) -> Lanes {
        let end = tl.end.0;
        let ncpu = tl.cpus.len();
        let mut waiting: Vec<Vec<(u64, u64)>> = vec![Vec::new(); ncpu];
        let mut wakeups: Vec<Vec<(u64, u64)>> = vec![Vec::new(); ncpu];
        let mut preemptions: Vec<Vec<(u64, u64)>> = vec![Vec::new(); ncpu];
        let mut all_waiting: Vec<(u64, u64)> = Vec::new();
        for th in &tl.threads {
            let ivs = &th.intervals;
            for (i, iv) in ivs.iter().enumerate() {
                if iv.state != ThreadState::Runnable {
                    continue;
                }
                let (s, e) = (iv.ts.0, iv.end_or(tl.end).0.max(iv.ts.0));
                let cpu = |c: Option<schedscope_trace::Cpu>| {
                    c.map(|c| c.0 as usize).filter(|&c| c < ncpu)
                };
                if iv.preempted {
                    if let Some(c) = cpu(iv.cpu) {
                        preemptions[c].push((s, 1));
                    }
                } else if let (Some(e), Some(next)) = (iv.end, ivs.get(i + 1)) {
                    if next.state == ThreadState::Running {
                        if let Some(c) = cpu(next.cpu) {
                            wakeups[c].push((e.0, e.0.saturating_sub(s)));
                        }
                    }
                }
                if e == s {
                    continue;
                }
                all_waiting.push((s, e));
                if let Some(c) = cpu(iv.cpu) {
                    waiting[c].push((s, e));
                }
            }
        }
        let any_waiting = Spans::new(all_waiting);
        // the process each task's colour follows (tgid, else the tid; the
        // last incarnation of a reused tid wins, as for the lane labels)
        let process: std::collections::HashMap<Tid, Tid> = tl
            .threads
            .iter()
            .map(|th| (th.tid.0, th.tgid.map_or(th.tid.0, |p| p.0)))
            .collect();
        let cpus: Vec<CpuLane> = tl
            .cpus
            .iter()
            .enumerate()
            .map(|(c, runs)| {
                let runs: Vec<(u64, u64, Tid)> = runs
                    .iter()
                    .map(|r| (r.ts.0, r.end.map_or(end, |e| e.0).max(r.ts.0), r.tid.0))
                    .collect();
                CpuLane::new(c as u32, &runs, &waiting[c], |t| {
                    process.get(&t).copied().unwrap_or(t)
                })
            })
            .collect();
        let wasted = cpus
            .iter()
            .map(|lane| {
                let idle = lane
                    .runs_in(0, u64::MAX)
                    .filter(|r| r.2 == 0)
                    .map(|r| (r.0, r.1));
                Spans::new(any_waiting.intersect(idle))
            })
            .collect();
        let repaired = tl
            .cpus
            .iter()
            .enumerate()
            .map(|(c, runs)| {
                let cpu = schedscope_trace::Cpu(c as u32);
                Spans::new(
                    runs.iter()
                        .filter(|r| !r.tid.is_idle() && tl.repair_at(cpu, r.tid, r.ts).is_some())
                        .map(|r| (r.ts.0, r.end.map_or(end, |e| e.0).max(r.ts.0)))
                        .collect(),
                )
            })
            .collect();
        Lanes {
            cpus,
            any_waiting,
            wakeups: wakeups.into_iter().map(Marks::new).collect(),
            preemptions: preemptions.into_iter().map(Marks::new).collect(),
            wasted,
            repaired,
        }
    }

    /// Time in `[a, b)` that CPU `c` ran tasks switched in by a repair.
    pub fn repaired_ns(&self, c: usize, a: u64, b: u64) -> u64 {
        self.repaired.get(c).map_or(0, |s| s.covered(a, b))
    }
}

#[cfg(test)]
mod tests;
