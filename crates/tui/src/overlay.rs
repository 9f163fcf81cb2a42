//! Overlay indexes: per-CPU point events with a value (wakeup-to-run
//! latencies at their switch-in, preemptions, PLE exits, IPIs) and interval
//! sets (wasted idle, fragmented gang episodes, throttled periods), each
//! answering a cell query in O(log n). [`EventMarks`] holds the ones read
//! from the events, the cgroup samples and the report rather than the
//! timeline.

use schedscope_analysis::gang::GangReport;
use schedscope_analysis::lhp::is_ple;
use schedscope_analysis::throttle::{ThrottlePeriod, Throttling};
use schedscope_analysis::tlb::IpiClass;
use schedscope_analysis::{ThreadState, Timeline};
use schedscope_trace::{EventData, Sym, Trace};
use std::collections::HashMap;

/// Overlay strips under the CPU lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overlay {
    /// Largest wakeup-to-run latency of the switch-ins in the cell.
    Latency,
    /// Preemptions in the cell.
    Preemptions,
    /// Share of the cell that the CPU idled while some task waited.
    WastedIdle,
    /// Pause-loop exits on the CPU in the cell.
    PleExits,
    /// IPIs sent from the CPU in the cell (`T` when one is a TLB shootdown).
    Ipis,
    /// Share of the cell that the CPU ran a gang member during one of its
    /// gang's fragmented episodes.
    GangFragments,
    /// Throttled time per ns of the cell, from the throttled periods of
    /// the cgroups whose members ran or waited on the CPU during them
    /// (recorded cgroup samples; see [`crate::overlay::Throttled`]).
    Throttled,
}

impl Overlay {
    /// All overlays, in strip order.
    pub const ALL: [Overlay; 7] = [
        Overlay::Latency,
        Overlay::Preemptions,
        Overlay::WastedIdle,
        Overlay::PleExits,
        Overlay::Ipis,
        Overlay::GangFragments,
        Overlay::Throttled,
    ];
}

/// [`EventMarks::ipis`] value of an IPI that is a TLB shootdown.
pub const SHOOTDOWN: u64 = 2;
/// [`EventMarks::ipis`] value of any other IPI.
pub const OTHER_IPI: u64 = 1;

/// Sorted instants with a value; range max from a segment tree.
#[derive(Debug, Default, PartialEq)]
pub struct Marks {
    times: Vec<u64>,
    /// Bottom-up segment tree of maxima: leaves at `n..2n`.
    tree: Vec<u64>,
}

impl Marks {
    /// From (time, value) pairs in any order.
    pub fn new(mut v: Vec<(u64, u64)>) -> Marks {
        v.sort_unstable();
        let n = v.len();
        let mut tree = vec![0; 2 * n];
        for (i, &(_, x)) in v.iter().enumerate() {
            tree[n + i] = x;
        }
        for i in (1..n).rev() {
            tree[i] = tree[2 * i].max(tree[2 * i + 1]);
        }
        Marks {
            times: v.into_iter().map(|x| x.0).collect(),
            tree,
        }
    }

    fn range(&self, a: u64, b: u64) -> (usize, usize) {
        (
            self.times.partition_point(|&t| t < a),
            self.times.partition_point(|&t| t < b),
        )
    }

    /// The (time, value) pairs, sorted (what [`Marks::new`] takes back).
    pub fn pairs(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let n = self.times.len();
        self.times
            .iter()
            .copied()
            .zip(self.tree[n..].iter().copied())
    }

    /// How many marks fall in `[a, b)`.
    pub fn count(&self, a: u64, b: u64) -> usize {
        let (l, r) = self.range(a, b);
        r.saturating_sub(l)
    }

    /// The largest value in `[a, b)` (None when there is no mark).
    pub fn max(&self, a: u64, b: u64) -> Option<u64> {
        let (l, r) = self.range(a, b);
        if l >= r {
            return None;
        }
        let n = self.times.len();
        let (mut l, mut r) = (l + n, r + n);
        let mut m = 0;
        while l < r {
            if l & 1 == 1 {
                m = m.max(self.tree[l]);
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                m = m.max(self.tree[r]);
            }
            l /= 2;
            r /= 2;
        }
        Some(m)
    }
}

/// Sorted disjoint intervals with prefix sums of their lengths.
#[derive(Debug, Default, PartialEq)]
pub struct Spans {
    starts: Vec<u64>,
    ends: Vec<u64>,
    prefix: Vec<u64>,
}

impl Spans {
    /// From intervals in any order (overlaps are merged).
    pub fn new(mut v: Vec<(u64, u64)>) -> Spans {
        v.sort_unstable();
        let mut s = Spans {
            prefix: vec![0],
            ..Spans::default()
        };
        for (a, b) in v {
            if b <= a {
                continue;
            }
            match s.ends.last_mut() {
                Some(e) if a <= *e => *e = (*e).max(b),
                _ => {
                    s.starts.push(a);
                    s.ends.push(b);
                }
            }
        }
        let mut acc = 0;
        for (a, b) in s.starts.iter().zip(&s.ends) {
            acc += b - a;
            s.prefix.push(acc);
        }
        s
    }

    /// The intervals.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.starts.iter().copied().zip(self.ends.iter().copied())
    }

    /// Covered time before `t`.
    fn before(&self, t: u64) -> u64 {
        let i = self.starts.partition_point(|&s| s < t);
        if i == 0 {
            return 0;
        }
        // spans 0..i-1 are whole; span i-1 may extend past t
        self.prefix[i] - self.ends[i - 1].saturating_sub(t)
    }

    /// Covered time in `[a, b)`.
    pub fn covered(&self, a: u64, b: u64) -> u64 {
        if b <= a {
            return 0;
        }
        self.before(b) - self.before(a)
    }

    /// Intersection with another sorted set of intervals `(start, end)`.
    pub fn intersect(&self, other: impl Iterator<Item = (u64, u64)>) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut i = 0;
        for (a, b) in other {
            while i < self.ends.len() && self.ends[i] <= a {
                i += 1;
            }
            let mut j = i;
            while j < self.starts.len() && self.starts[j] < b {
                let (s, e) = (self.starts[j].max(a), self.ends[j].min(b));
                if e > s {
                    out.push((s, e));
                }
                j += 1;
            }
        }
        out
    }
}

/// Window of [`Bursts::densest`]: the jump targets of the lhp and tlb
/// tabs show the 1 ms with the most events.
pub const BURST_NS: u64 = 1_000_000;

/// Per process, the sorted times of its PLE exits and of the TLB
/// shootdowns its threads sent: the jump targets of the lhp and tlb rows.
#[derive(Debug, Default)]
pub struct Bursts {
    /// PLE exits by the tgid of the vCPU thread that exited.
    pub ple: HashMap<i32, Vec<u64>>,
    /// Shootdown IPIs (or csds) sent, by the sender's tgid.
    pub shootdowns: HashMap<i32, Vec<u64>>,
}

impl Bursts {
    /// The [`BURST_NS`] window starting at an event of `times` (sorted)
    /// with the most events: `(first, last, count)`, the earliest on ties.
    pub fn densest(times: &[u64]) -> Option<(u64, u64, usize)> {
        Bursts::densest_in(times, BURST_NS)
    }

    /// [`Bursts::densest`] with a window of `window` ns.
    pub fn densest_in(times: &[u64], window: u64) -> Option<(u64, u64, usize)> {
        let mut best: Option<(u64, u64, usize)> = None;
        let mut j = 0;
        for (i, &t) in times.iter().enumerate() {
            j = j.max(i);
            while j + 1 < times.len() && times[j + 1] < t.saturating_add(window) {
                j += 1;
            }
            let n = j - i + 1;
            if best.is_none_or(|b| n > b.2) {
                best = Some((t, times[j], n));
            }
        }
        best
    }
}

/// Overlay indexes read from the decoded events and the report.
#[derive(Debug, Default)]
pub struct EventMarks {
    /// Per CPU: pause-loop exits (`kvm_exit` with the PLE reason, as the
    /// lhp section counts them), value 1, at the exit.
    pub ple: Vec<Marks>,
    /// Per CPU: IPIs sent from it (`ipi_send_cpu`, `ipi_send_cpumask`,
    /// `ipi_raise`, `csd_queue_cpu`), value [`SHOOTDOWN`] when the target
    /// runs `flush_tlb_func` (the tlb section's class), else [`OTHER_IPI`];
    /// plus `tlb_flush` remote shootdowns received, when they were decoded.
    pub ipis: Vec<Marks>,
    /// Per CPU: time it ran a member of a gang during one of that gang's
    /// fragmented episodes (the longest ones the gang section keeps).
    pub gang: Vec<Spans>,
    /// Per-process event times for the tabs' jumps.
    pub bursts: Bursts,
    /// Throttled periods of the recorded cgroups, per CPU and per task.
    pub throttled: Throttled,
}

/// The throttled periods ([`Throttling`]) placed on the lanes: a period of
/// a cgroup shows on every CPU where one of its member tasks ran or waited
/// (runnable, queued there) during it, and on the task lanes of its
/// members.
#[derive(Debug, Default)]
pub struct Throttled {
    /// The periods and their cgroups.
    pub info: Throttling,
    /// Per CPU: the periods shown on it (indexes into `info.periods`,
    /// sorted by start).
    pub by_cpu: Vec<Vec<usize>>,
    /// Length of the longest period (bounds the search for the periods
    /// that overlap a cell).
    longest: u64,
    /// Per member task: the time its cgroups' periods cover.
    pub task_spans: HashMap<i32, Spans>,
}

impl Throttled {
    /// Place `info`'s periods on the CPUs where their cgroups' members ran
    /// or waited during them (from the members' timeline intervals).
    pub fn new(info: Throttling, tl: &Timeline) -> Throttled {
        let ncpu = tl.cpus.len();
        let mut t = Throttled {
            by_cpu: vec![Vec::new(); ncpu],
            ..Throttled::default()
        };
        if !info.periods.is_empty() {
            // per cgroup, its periods (sorted by start, and disjoint: they
            // are consecutive sample intervals)
            let mut of_cg: Vec<Vec<usize>> = vec![Vec::new(); info.cgroups.len()];
            for (i, p) in info.periods.iter().enumerate() {
                if let Some(v) = of_cg.get_mut(p.cgroup) {
                    v.push(i);
                }
            }
            let mut cgs_of: HashMap<i32, Vec<usize>> = HashMap::new();
            for (g, cg) in info.cgroups.iter().enumerate() {
                for m in &cg.members {
                    cgs_of.entry(m.0).or_default().push(g);
                }
            }
            // a member's running and waiting intervals name its CPUs
            for th in &tl.threads {
                let Some(gs) = cgs_of.get(&th.tid.0) else {
                    continue;
                };
                for iv in th.intervals.iter() {
                    let on_cpu = matches!(iv.state, ThreadState::Running | ThreadState::Runnable);
                    let Some(c) = iv.cpu.map(|c| c.0 as usize).filter(|&c| on_cpu && c < ncpu)
                    else {
                        continue;
                    };
                    let (a, b) = (iv.ts.0, iv.end_or(tl.end).0);
                    for &g in gs {
                        let ps = &of_cg[g];
                        let k = ps.partition_point(|&i| info.periods[i].end_ns <= a);
                        for &i in ps[k..]
                            .iter()
                            .take_while(|&&i| info.periods[i].start_ns < b)
                        {
                            t.by_cpu[c].push(i);
                        }
                    }
                }
            }
            for shown in &mut t.by_cpu {
                shown.sort_unstable_by_key(|&i| (info.periods[i].start_ns, i));
                shown.dedup();
            }
            t.longest = info
                .periods
                .iter()
                .map(|p| p.end_ns - p.start_ns)
                .max()
                .unwrap_or(0);
            t.task_spans = cgs_of
                .iter()
                .map(|(&tid, gs)| {
                    let v = gs
                        .iter()
                        .flat_map(|&g| of_cg[g].iter().map(|&i| span(&info.periods[i])))
                        .collect();
                    (tid, Spans::new(v))
                })
                .collect();
        }
        t.info = info;
        t
    }

    /// How throttled the cell `[a, b)` of CPU `c` was: over the periods
    /// shown on the CPU, each one's throttled time per ns of its interval
    /// (the kernel says how long, not when within the interval) times its
    /// overlap with the cell, divided by the cell's length; capped at 1
    /// (a cgroup's throttled time adds up over the CPUs it was throttled
    /// on).
    pub fn density(&self, c: usize, a: u64, b: u64) -> f64 {
        let Some(v) = self.by_cpu.get(c) else {
            return 0.0;
        };
        let periods = &self.info.periods;
        let from = a.saturating_sub(self.longest);
        let i0 = v.partition_point(|&i| periods[i].start_ns < from);
        let i1 = v.partition_point(|&i| periods[i].start_ns < b);
        let mut sum = 0.0;
        for &i in &v[i0..i1.max(i0)] {
            let p = &periods[i];
            let overlap = p.end_ns.min(b).saturating_sub(p.start_ns.max(a));
            let len = (p.end_ns - p.start_ns).max(1);
            sum += overlap as f64 * p.throttled_ns as f64 / len as f64;
        }
        (sum / (b - a).max(1) as f64).min(1.0)
    }

    /// The periods shown on CPU `c` that contain `ts`.
    pub fn at_cpu(&self, c: usize, ts: u64) -> Vec<&ThrottlePeriod> {
        let Some(v) = self.by_cpu.get(c) else {
            return Vec::new();
        };
        let k = v.partition_point(|&i| self.info.periods[i].start_ns <= ts);
        v[..k]
            .iter()
            .map(|&i| &self.info.periods[i])
            .filter(|p| p.end_ns > ts)
            .collect()
    }

    /// The periods of task `tid`'s cgroups that contain `ts`.
    pub fn at_task(&self, tid: i32, ts: u64) -> Vec<&ThrottlePeriod> {
        self.info
            .periods
            .iter()
            .filter(|p| p.start_ns <= ts && p.end_ns > ts)
            .filter(|p| {
                self.info
                    .cgroups
                    .get(p.cgroup)
                    .is_some_and(|c| c.members.iter().any(|m| m.0 == tid))
            })
            .collect()
    }
}

fn span(p: &ThrottlePeriod) -> (u64, u64) {
    (p.start_ns, p.end_ns)
}

/// The tlb section's class of the function an IPI or csd asks for.
fn ipi_value(trace: &Trace, names: &mut HashMap<Sym, u64>, f: Sym) -> u64 {
    *names.entry(f).or_insert_with(|| {
        let name = trace.sym_name(f);
        if IpiClass::of_function(Some(&name)) == IpiClass::TlbShootdown {
            SHOOTDOWN
        } else {
            OTHER_IPI
        }
    })
}

impl EventMarks {
    /// PLE exits and IPIs of `trace`, one index per CPU of `ncpu`.
    pub fn from_trace(trace: &Trace, ncpu: usize) -> EventMarks {
        let mut ple: Vec<Vec<(u64, u64)>> = vec![Vec::new(); ncpu];
        let mut ipis: Vec<Vec<(u64, u64)>> = vec![Vec::new(); ncpu];
        let mut names: HashMap<Sym, u64> = HashMap::new();
        let mut bursts = Bursts::default();
        let tgid = |ev: &schedscope_trace::Event| trace.tasks.tgid(ev.tid).unwrap_or(ev.tid).0;
        for ev in &trace.events {
            let c = ev.cpu.0 as usize;
            if c >= ncpu {
                continue;
            }
            let t = ev.ts.0;
            match ev.data {
                EventData::KvmExit {
                    exit_reason, isa, ..
                } if is_ple(isa, exit_reason) => {
                    ple[c].push((t, 1));
                    bursts.ple.entry(tgid(ev)).or_default().push(t);
                }
                EventData::IpiSendCpu { callback: f, .. }
                | EventData::IpiSendCpumask { callback: f, .. }
                | EventData::CsdQueue { func: f, .. } => {
                    let v = ipi_value(trace, &mut names, f);
                    ipis[c].push((t, v));
                    if v == SHOOTDOWN {
                        bursts.shootdowns.entry(tgid(ev)).or_default().push(t);
                    }
                }
                EventData::IpiRaise { .. } => ipis[c].push((t, OTHER_IPI)),
                // 1 = TLB_REMOTE_SHOOTDOWN (the receiving side)
                EventData::TlbFlush { reason: 1, .. } => ipis[c].push((t, SHOOTDOWN)),
                _ => {}
            }
        }
        EventMarks {
            ple: ple.into_iter().map(Marks::new).collect(),
            ipis: ipis.into_iter().map(Marks::new).collect(),
            gang: Vec::new(),
            bursts,
            throttled: Throttled::default(),
        }
    }

    /// Per CPU, the runs of gang members inside their gang's fragmented
    /// episodes.
    pub fn gang_spans(tl: &Timeline, gangs: Option<&GangReport>) -> Vec<Spans> {
        let ncpu = tl.cpus.len();
        let Some(g) = gangs else {
            return (0..ncpu).map(|_| Spans::default()).collect();
        };
        let episodes: Vec<Spans> = g
            .gangs
            .iter()
            .map(|gang| {
                Spans::new(
                    gang.episodes
                        .iter()
                        .map(|e| (e.start_ns, e.start_ns.saturating_add(e.duration_ns)))
                        .collect(),
                )
            })
            .collect();
        let mut of_tid: HashMap<i32, Vec<usize>> = HashMap::new();
        for (i, gang) in g.gangs.iter().enumerate() {
            for m in &gang.members {
                of_tid.entry(m.0).or_default().push(i);
            }
        }
        tl.cpus
            .iter()
            .map(|runs| {
                let mut v = Vec::new();
                for r in runs {
                    let Some(gs) = of_tid.get(&r.tid.0) else {
                        continue;
                    };
                    let run = (r.ts.0, r.end.unwrap_or(tl.end).0);
                    for &i in gs {
                        v.extend(episodes[i].intersect(std::iter::once(run)));
                    }
                }
                Spans::new(v)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_count_and_max_match_a_scan() {
        let v: Vec<(u64, u64)> = (0..1000u64)
            .map(|i| ((i * 7919) % 10_000, (i * 31) % 977))
            .collect();
        let m = Marks::new(v.clone());
        for (a, b) in [
            (0, 10_000),
            (100, 200),
            (5000, 5001),
            (9000, 20_000),
            (3, 3),
        ] {
            let inside: Vec<u64> = v
                .iter()
                .filter(|x| x.0 >= a && x.0 < b)
                .map(|x| x.1)
                .collect();
            assert_eq!(m.count(a, b), inside.len());
            assert_eq!(m.max(a, b), inside.iter().copied().max());
        }
    }

    #[test]
    fn densest_burst_is_the_fullest_window() {
        let ms = BURST_NS;
        // 2 events in [0, 1 ms), then 3 within 0.9 ms from 5 ms
        let t = [
            0,
            ms / 2,
            5 * ms,
            5 * ms + ms / 3,
            5 * ms + 9 * ms / 10,
            7 * ms,
        ];
        assert_eq!(Bursts::densest(&t), Some((5 * ms, 5 * ms + 9 * ms / 10, 3)));
        assert_eq!(Bursts::densest(&[42]), Some((42, 42, 1)));
        assert_eq!(Bursts::densest(&[]), None);
    }

    #[test]
    fn spans_merge_cover_and_intersect() {
        let s = Spans::new(vec![(10, 20), (15, 30), (40, 50)]);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(10, 30), (40, 50)]);
        assert_eq!(s.covered(0, 100), 30);
        assert_eq!(s.covered(25, 45), 5 + 5);
        assert_eq!(s.covered(12, 14), 2);
        assert_eq!(
            s.intersect([(0, 12), (28, 42), (45, 60)].into_iter()),
            vec![(10, 12), (28, 30), (40, 42), (45, 50)]
        );
    }
}
