//! The single pass over the trace, read through the timeline's replay
//! cursor ([`crate::cursor`]).
//!
//! The cursor keeps who is current on each CPU and since when (the
//! timeline's CPU states: each sched_switch and the timeline's repaired
//! switch-ins, merged at their time) and where each task runs; this pass
//! keeps only what idle needs besides. Per CPU: the not yet accrued idle
//! time, the open wasted-idle gap, the SCHED softirq in progress and the
//! last nohz kick received (`CpuSt`). Per task: on which CPU since when it
//! waits, and whether that wait is a throttle (`waits`). Globally: `n_thr`
//! (throttled waiters) and `n_busyq` (unthrottled waiters queued on CPUs
//! that are not idle). The global mode is `Imbalance` when `n_busyq > 0`,
//! else `Throttled` when `n_thr > 0`, else none; every idle CPU accrues
//! wasted time into the current mode (`gaps`), so the work per event is
//! O(1) except on mode changes (O(CPUs)).
//!
//! The other files: `gaps` (mode, accrual, gaps), `waits` (task waits and
//! wakeups), `inference` (the throttle inference and its look-aheads),
//! `balance` (balancing proxies and pulls), `recorded` (cgroup samples).

use super::gaps::{Ending, Mode, OpenGap};
use super::recorded::{cgroup_usage, Recorded};
use super::waits::TaskSt;
use super::{
    Attribution, Balance, CgroupMapping, CpuIdle, CpuRepair, Gap, GapEndings, Gaps, IdleReport,
    Kick, PctStats, WorkStats,
};
use crate::cursor::{CpuState, Cursor, Step, Switch};
use crate::stats::{dur_stats, histogram, population_stddev, SecondBuckets, SEC};
use crate::timeline::{LossEvidence, Timeline, NAMES_CURRENT};
use schedscope_trace::hash::FxMap;
use schedscope_trace::{EventData, EventKind, KindSet, Tid, Trace};
use std::collections::{BTreeMap, HashSet};

/// What idle keeps per CPU (who is current there is the cursor's).
#[derive(Clone, Debug, Default)]
pub(super) struct CpuSt {
    /// Start of the not yet accrued part of the current idle time.
    pub(super) seg_start: u64,
    pub(super) gap: Option<OpenGap>,
    pub(super) softirq_since: Option<u64>,
    pub(super) last_kick: Option<u64>,
    /// Preempted unthrottled waiters queued here (may hold stale entries).
    pub(super) preempted_q: Vec<Tid>,
    pub(super) out: CpuIdle,
}

/// The pass's state (its methods are spread over the module's files).
pub(super) struct Pass<'t> {
    pub(super) trace: &'t Trace,
    /// Who is current where (the timeline's replay cursor).
    pub(super) cursor: Cursor<'t>,
    pub(super) start: u64,
    /// The trace's last event time, and its per-second buckets.
    end: u64,
    nb: usize,
    pub(super) cpus: Vec<CpuSt>,
    pub(super) tasks: FxMap<Tid, TaskSt>,
    /// Waiting tasks (each one's [`super::waits::Wait`] holds its slot).
    pub(super) waiting: Vec<Tid>,
    /// Per CPU: unthrottled waiters queued there.
    pub(super) nonthr_on: Vec<u32>,
    pub(super) n_thr: u64,
    pub(super) n_busyq: u64,
    /// Tasks seen throttled at least once.
    pub(super) n_capped: u64,
    pub(super) mode: Mode,
    pub(super) has_wakeup: bool,
    idle_b: SecondBuckets,
    busy_b: SecondBuckets,
    pub(super) hist: Vec<(u64, u64)>,
    pub(super) gap_count: u64,
    pub(super) gap_total: u64,
    pub(super) longest: Vec<Gap>,
    /// Every gap, when asked for ([`super::analyze_with_gaps`]).
    pub(super) all_gaps: Option<Vec<Gap>>,
    pub(super) endings: GapEndings,
    pub(super) pull_waits: Vec<u64>,
    pub(super) pulls_by_path: BTreeMap<String, u64>,
    pub(super) kicks: BTreeMap<(u32, u32), u64>,
    /// csd functions that are `nohz_csd_func` (symbolized once, up front).
    pub(super) nohz_funcs: HashSet<u64>,
    pub(super) recorded: Option<Recorded>,
    /// CPU time per task (by tid).
    run_ns: FxMap<Tid, u64>,
    /// Contradictions idle met (the cursor counts its own).
    pub(super) anomalies: u64,
    /// Per-CPU evidence of lost events: repairs apply only where it is.
    pub(super) loss: &'t LossEvidence,
    /// Per CPU: times of the sched_switch events to idle, in order (lets a
    /// look-ahead skip to when a busy CPU next idles).
    pub(super) idle_entries: Vec<Vec<u64>>,
    /// Per CPU: what was repaired or reported (see [`CpuRepair`]).
    pub(super) repairs: Vec<CpuRepair>,
}

/// Per-second buckets are kept for spans of at most this many seconds per
/// event, plus [`DAY_SECONDS`].
const MAX_SECONDS_PER_EVENT: usize = 4;

/// See [`MAX_SECONDS_PER_EVENT`].
const DAY_SECONDS: usize = 86_400;

/// Run the pass over `trace` (events sorted by time) and its timeline `tl`
/// (built from it), also returning every gap when `keep_gaps`.
pub(super) fn run_with<'t>(
    trace: &'t Trace,
    tl: &'t Timeline,
    keep_gaps: bool,
) -> (IdleReport, Vec<Gap>) {
    let cursor = tl.cursor(trace, READS);
    let nohz = super::balance::nohz_funcs(trace, trace.events.iter());
    let mut p = Pass::new(trace, tl, keep_gaps, cursor, trace.events.len(), nohz);
    p.run();
    p.end()
}

impl<'t> Pass<'t> {
    /// The pass over `trace` and its timeline `tl`, reading through
    /// `cursor` (over the trace's events, or fed a stream of them);
    /// `kept`: how many events the trace holds (the load kept); `nohz`:
    /// [`super::balance::nohz_funcs`].
    pub(super) fn new(
        trace: &'t Trace,
        tl: &'t Timeline,
        keep_gaps: bool,
        cursor: Cursor<'t>,
        kept: usize,
        nohz: HashSet<u64>,
    ) -> Pass<'t> {
        let start = trace.start().0;
        let end = trace.end().0;
        let nb = ((end - start) / SEC) as usize;
        // Per-second buckets only for a span the events can fill: a damaged
        // timestamp once made a 102-event text trace span 636 million s (10 GB
        // of buckets, 17 s of filling them). Beyond that the per-second
        // statistics are left out (None), as for a trace shorter than a second.
        let nb = if nb > MAX_SECONDS_PER_EVENT * kept + DAY_SECONDS {
            0
        } else {
            nb
        };
        let n = cursor.n_cpus();
        // The times each CPU switched to idle: the starts of its idle runs
        // (exact on a CPU without loss evidence, the only ones whose entries
        // the look-aheads read; on a lossy CPU the repair may have turned an
        // idle run into an inferred one).
        let mut idle_entries: Vec<Vec<u64>> = vec![Vec::new(); n];
        for (runs, entries) in tl.cpus.iter().zip(idle_entries.iter_mut()) {
            entries.extend(runs.iter().filter(|r| r.tid.is_idle()).map(|r| r.ts.0));
        }
        Pass {
            trace,
            cursor,
            start,
            end,
            nb,
            cpus: (0..n)
                .map(|c| CpuSt {
                    out: CpuIdle {
                        cpu: c as u32,
                        ..CpuIdle::default()
                    },
                    ..CpuSt::default()
                })
                .collect(),
            tasks: FxMap::default(),
            waiting: Vec::new(),
            nonthr_on: vec![0; n],
            n_thr: 0,
            n_busyq: 0,
            n_capped: 0,
            mode: Mode::None,
            has_wakeup: trace.count("sched:sched_wakeup") > 0
                || trace.count("sched:sched_wakeup_new") > 0,
            idle_b: SecondBuckets::new(start, nb),
            busy_b: SecondBuckets::new(start, nb),
            hist: Vec::new(),
            gap_count: 0,
            gap_total: 0,
            longest: Vec::new(),
            all_gaps: keep_gaps.then(Vec::new),
            endings: GapEndings::default(),
            pull_waits: Vec::new(),
            pulls_by_path: BTreeMap::new(),
            kicks: BTreeMap::new(),
            nohz_funcs: nohz,
            recorded: Recorded::new(trace),
            run_ns: FxMap::default(),
            anomalies: 0,
            loss: &tl.loss,
            idle_entries,
            repairs: (0..n)
                .map(|c| CpuRepair {
                    cpu: c as u32,
                    ..CpuRepair::default()
                })
                .collect(),
        }
    }

    /// Every step the cursor has (of a fed cursor: until it waits for
    /// more events).
    pub(super) fn run(&mut self) {
        while let Some(step) = self.cursor.next() {
            let ts = self.step(step);
            self.sync(ts);
        }
    }

    /// The report, and every gap when asked for (after the last step).
    pub(super) fn end(self) -> (IdleReport, Vec<Gap>) {
        let (end, nb) = (self.end, self.nb);
        let mut gaps = Vec::new();
        let report = self.finish(end, nb, &mut gaps);
        (report, gaps)
    }
}

/// The event kinds the pass reads, and so the ones whose sample tid the
/// cursor trusts as the CPU's current task. Others are skipped: some fire
/// inside a context switch, after sched_switch but before the switch
/// itself (tlb:tlb_flush on a task switch reports the previous task), and
/// would make the cursor learn the wrong task; skipping them also makes the
/// report the same whether or not the load kept them. (The timeline's
/// evidence kinds, `crate::timeline::NAMES_CURRENT`, plus sched_switch and
/// the balancing proxies this pass reads.)
pub(super) const READS: KindSet = NAMES_CURRENT.union(KindSet::of(&[
    EventKind::Switch,
    EventKind::Softirq,
    EventKind::CsdQueue,
    EventKind::WakeIdleNoIpi,
]));

impl Pass<'_> {
    /// Whether CPU `c` is known and idle (the cursor's state).
    pub(super) fn idle(&self, c: u32) -> bool {
        self.cursor.is_idle(c)
    }

    pub(super) fn valid(&self, c: u32) -> bool {
        (c as usize) < self.cpus.len()
    }

    /// One step of the cursor (already applied to its state); returns its
    /// time.
    fn step(&mut self, step: Step) -> u64 {
        match step {
            Step::Learn { ts, cpu, tid } => {
                // Its first event: the CPU was unknown (so counted busy).
                if tid.is_idle() {
                    let c = cpu as usize;
                    self.n_busyq -= self.nonthr_on[c] as u64;
                    self.went_idle(c, ts);
                }
                ts
            }
            Step::Switch(s) => {
                self.switch(&s);
                s.ts
            }
            Step::Event(ev) => {
                let (ts, c) = (ev.ts.0, ev.cpu.0 as usize);
                match ev.data {
                    EventData::Wakeup {
                        kind,
                        tid,
                        comm,
                        target_cpu,
                        ..
                    } => self.wakeup(ts, kind, tid, comm, target_cpu.0),
                    EventData::Migrate { tid, dest_cpu, .. } => {
                        self.migrate(&ev, ts, tid, dest_cpu.0)
                    }
                    EventData::Exit { tid, .. } => {
                        self.remove_wait(tid);
                    }
                    ref data => self.proxy(c, ts, data),
                }
                ts
            }
        }
    }

    /// A switch on a CPU, recorded or repaired (the cursor holds the CPU in
    /// its new state already).
    fn switch(&mut self, s: &Switch) {
        let (c, ts) = (s.cpu as usize, s.ts);
        self.close_run(c, s.before, ts);
        let was_idle = s.before.is_idle();
        let now_idle = s.next.is_idle();
        // The wait counters follow the CPU's new state first, so that the
        // wait updates below count it in that state.
        match (was_idle, now_idle) {
            (false, true) => self.n_busyq -= self.nonthr_on[c] as u64,
            (true, false) => self.n_busyq += self.nonthr_on[c] as u64,
            _ => {}
        }
        if !s.prev.is_idle() {
            let t = self.tasks.entry(s.prev).or_default();
            t.in_wake = false;
            t.pulled_into = None;
            if self.remove_wait(s.prev).is_some() {
                self.anomalies += 1;
            }
            if s.prev_runnable {
                let trace = self.trace;
                let thr = match self.recorded.as_mut() {
                    Some(r) => r.throttled(trace, s.prev, s.prev_comm, ts),
                    None => {
                        let thr = self.held_off(s.cpu, s.prev, ts);
                        if thr {
                            self.mark_capped(s.prev);
                        }
                        thr
                    }
                };
                self.add_wait(s.prev, s.cpu, ts, true, thr);
            }
        }
        let mut ending = Ending::Wakeup;
        if !s.next.is_idle() {
            let w = self.remove_wait(s.next);
            let t = self.tasks.entry(s.next).or_default();
            t.in_wake = false;
            if t.pulled_into.take() == Some(s.cpu) {
                ending = Ending::Pull;
            } else if w.is_some_and(|w| w.throttled) {
                ending = Ending::Unthrottle;
            }
        }
        match (was_idle, now_idle) {
            (false, true) => self.went_idle(c, ts),
            (true, false) => {
                self.accrue(c, ts);
                self.close_gap(c, ts, ending);
            }
            _ => {}
        }
    }

    /// Close the run `st` of CPU `c` at `ts` into the idle/busy totals.
    fn close_run(&mut self, c: usize, st: CpuState, ts: u64) {
        if !st.known {
            return;
        }
        let (a, b) = (st.since, ts.max(st.since));
        if st.cur.is_idle() {
            self.cpus[c].out.idle_ns += b - a;
            self.idle_b.add(a, b);
        } else {
            self.busy_b.add(a, b);
            *self.run_ns.entry(st.cur).or_default() += b - a;
        }
    }

    // ---- results ----

    fn finish(mut self, end: u64, nb: usize, all_gaps: &mut Vec<Gap>) -> IdleReport {
        for c in 0..self.cpus.len() {
            self.close_run(c, self.cursor.cpu(c as u32), end);
            if self.idle(c as u32) {
                self.accrue(c, end);
                self.close_gap(c, end, Ending::TraceEnd);
            }
        }
        self.trim_longest();
        let trace = self.trace;
        *all_gaps = self.all_gaps.take().unwrap_or_default();
        for g in self.longest.iter_mut().chain(all_gaps.iter_mut()) {
            for w in &mut g.waiting {
                w.comm = trace.tasks.comm(Tid(w.tid)).to_string();
            }
        }
        let n_cpus = self.cpus.len() as f64;
        let idle_pct: Vec<f64> = self
            .idle_b
            .values()
            .iter()
            .map(|&ns| ns as f64 / (n_cpus * SEC as f64) * 100.0)
            .collect();
        let work: Vec<f64> = self.busy_b.values().iter().map(|&ns| ns as f64).collect();
        let pct = population_stddev(&idle_pct);
        let per_second_idle_pct = PctStats {
            avg: pct.map(|p| p.0),
            stddev: pct.map(|p| p.1),
            min: idle_pct.iter().copied().reduce(f64::min),
            max: idle_pct.iter().copied().reduce(f64::max),
        };
        let w = population_stddev(&work);
        let work_per_second_ns = WorkStats {
            avg: w.map(|p| p.0),
            stddev: w.map(|p| p.1),
        };
        let cpus: Vec<CpuIdle> = self.cpus.iter().map(|s| s.out.clone()).collect();
        let sum = |f: fn(&CpuIdle) -> u64| cpus.iter().map(f).sum::<u64>();
        let balance = Balance {
            sched_softirqs: sum(|c| c.sched_softirqs),
            sched_softirq_ns: sum(|c| c.sched_softirq_ns),
            nohz_kicks: sum(|c| c.nohz_kicks_received),
            kicks: self
                .kicks
                .iter()
                .map(|(&(from, to), &count)| Kick { from, to, count })
                .collect(),
            wake_idle_without_ipi: sum(|c| c.wake_idle_without_ipi),
            pulls_into_idle: sum(|c| c.pulls),
            pulls_by_path: std::mem::take(&mut self.pulls_by_path),
            wait_before_pull_ns: dur_stats(&mut self.pull_waits),
            gap_endings: self.endings.clone(),
        };
        let attribution = if self.recorded.is_some() {
            Attribution::Recorded
        } else {
            Attribution::Inferred
        };
        let cgroup_mapping = self
            .recorded
            .as_ref()
            .map_or(CgroupMapping::None, |r| r.mapping);
        IdleReport {
            idle_ns: sum(|c| c.idle_ns),
            wasted_idle_ns: sum(|c| c.wasted_idle_ns),
            throttled_ns: sum(|c| c.throttled_ns),
            imbalance_ns: sum(|c| c.imbalance_ns),
            cpus,
            attribution,
            cgroup_mapping,
            per_second_idle_pct,
            work_per_second_ns,
            seconds: nb as u64,
            duration_ns: end - self.start,
            balance,
            gaps: Gaps {
                count: self.gap_count,
                total_ns: self.gap_total,
                histogram: histogram(&self.hist),
                longest: std::mem::take(&mut self.longest),
            },
            cgroups: cgroup_usage(trace, &self.run_ns, end - self.start),
            missing_events: Vec::new(),
            anomalies: self.anomalies + self.cursor.anomalies(),
            repairs: self
                .repairs
                .iter()
                .map(|r| {
                    let l = self.loss.cpu(r.cpu);
                    CpuRepair {
                        unswitched_switch_outs: l.unswitched_outs,
                        idle_exits_missing: l.idle_exits_missing,
                        lossy: l.unswitched_outs > 0,
                        ..r.clone()
                    }
                })
                .collect(),
            ..IdleReport::default()
        }
    }
}
