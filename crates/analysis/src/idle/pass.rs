//! The single pass over the sorted events.
//!
//! Per CPU: who is current (the timeline's CPU states: each sched_switch
//! and the timeline's inferred switch-ins, replayed at their time; before
//! the CPU's first switch, the first event's common_pid), since when, the open wasted-idle gap, the SCHED
//! softirq in progress and the last nohz kick received. Per task: running
//! where, or waiting on which CPU since when, and whether that wait is a
//! throttle. Globally: `n_thr` (throttled waiters) and `n_busyq` (unthrottled
//! waiters queued on CPUs that are not idle). The global mode is
//! `Imbalance` when `n_busyq > 0`, else `Throttled` when `n_thr > 0`, else
//! none; every idle CPU accrues wasted time into the current mode, so the
//! work per event is O(1) except on mode changes (O(CPUs)).

use super::{
    Attribution, Balance, CgroupMapping, CgroupUsage, CpuIdle, CpuRepair, Gap, GapEndings, Gaps,
    IdleReport, Kick, PctStats, Waiter, WorkStats,
};
use crate::stats::{
    dur_stats, histogram, log2_bucket as gap_bucket, population_stddev, SecondBuckets, SEC,
};
use crate::symbolize::{Location, SymbolTable};
use crate::throttle;
use crate::timeline::{LossEvidence, Timeline};
use schedscope_trace::{EventData, StrId, Sym, Tid, Trace, WakeKind};
use std::collections::{BTreeMap, HashMap, HashSet};

use schedscope_trace::hash::FxMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    None,
    Throttled,
    Imbalance,
}

#[derive(Clone, Copy, Debug)]
struct Wait {
    cpu: u32,
    since: u64,
    throttled: bool,
    preempted: bool,
    slot: usize,
}

#[derive(Clone, Copy, Debug, Default)]
struct TaskSt {
    running_on: Option<u32>,
    wait: Option<Wait>,
    /// Between sched_waking and sched_wakeup: a migration now is wake placement.
    in_wake: bool,
    /// Pulled into this CPU during the current wait.
    pulled_into: Option<u32>,
    /// Seen throttled before (a CPU idled with it queued).
    capped: bool,
    /// Comm of its latest wakeup event (for the recorded cgroup mapping by name).
    comm: StrId,
}

#[derive(Clone, Debug)]
struct OpenGap {
    start: u64,
    thr: u64,
    imb: u64,
    pulled: bool,
    waiting: Vec<(Tid, u32, bool)>,
}

#[derive(Clone, Debug, Default)]
struct CpuSt {
    known: bool,
    cur: Tid,
    /// Start of the current run (of `cur`).
    since: u64,
    /// Start of the not yet accrued part of the current idle time.
    seg_start: u64,
    gap: Option<OpenGap>,
    softirq_since: Option<u64>,
    last_kick: Option<u64>,
    /// Preempted unthrottled waiters queued here (may hold stale entries).
    preempted_q: Vec<Tid>,
    out: CpuIdle,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ending {
    Wakeup,
    Pull,
    RanElsewhere,
    TraceEnd,
    Unthrottle,
}

impl Ending {
    fn as_str(self) -> &'static str {
        match self {
            Ending::Wakeup => "wakeup",
            Ending::Pull => "pull",
            Ending::RanElsewhere => "ran_elsewhere",
            Ending::TraceEnd => "trace_end",
            Ending::Unthrottle => "unthrottle",
        }
    }
}

/// Recorded cgroup throttling. Tasks map to sampled cgroups by their recorded
/// membership ([`schedscope_trace::Task::cgroup`]: the cgroup itself or any
/// sampled ancestor, since a throttled parent throttles its children) when
/// the trace has it, otherwise by comm = last path component (the stopgap
/// for files without membership).
struct Recorded {
    /// How tasks were mapped.
    mapping: CgroupMapping,
    /// Leaf name -> cgroup index.
    by_leaf: HashMap<String, usize>,
    /// Per cgroup: (ts, nr_throttled), sorted by ts.
    samples: Vec<Vec<(u64, u64)>>,
    /// tid -> indexes of the sampled cgroups at or above its recorded cgroup.
    by_tid: FxMap<Tid, Vec<usize>>,
    /// comm string id -> cgroup index (cache).
    by_comm: FxMap<StrId, Option<usize>>,
}

/// Whether the trace records task cgroup membership.
fn has_membership(trace: &Trace) -> bool {
    trace.tasks.iter().any(|t| t.cgroup.is_some())
}

impl Recorded {
    fn new(trace: &Trace) -> Option<Recorded> {
        let (paths, sampled) = throttle::sampled(trace);
        let mut by_leaf = HashMap::new();
        for (i, p) in paths.iter().enumerate() {
            if let Some(leaf) = throttle::leaf(p) {
                by_leaf.entry(leaf.to_string()).or_insert(i);
            }
        }
        let mut samples: Vec<Vec<(u64, u64)>> = sampled
            .iter()
            .map(|v| v.iter().map(|s| (s.ts.0, s.nr_throttled)).collect())
            .collect();
        for v in &mut samples {
            v.sort_unstable();
        }
        if !samples.iter().any(|v| v.len() >= 2) {
            return None;
        }
        let mut by_tid: FxMap<Tid, Vec<usize>> = FxMap::default();
        if has_membership(trace) {
            // Utid order: the latest incarnation of a tid wins.
            for t in trace.tasks.iter() {
                let Some(cg) = t.cgroup.as_deref() else {
                    continue;
                };
                let v: Vec<usize> = paths
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| throttle::within(cg, p))
                    .map(|(i, _)| i)
                    .collect();
                if v.is_empty() {
                    by_tid.remove(&t.tid);
                } else {
                    by_tid.insert(t.tid, v);
                }
            }
            return (!by_tid.is_empty()).then_some(Recorded {
                mapping: CgroupMapping::Membership,
                by_leaf: HashMap::new(),
                samples,
                by_tid,
                by_comm: FxMap::default(),
            });
        }
        let mapped = trace
            .tasks
            .iter()
            .any(|t| by_leaf.contains_key(t.comm.as_str()));
        mapped.then_some(Recorded {
            mapping: CgroupMapping::Name,
            by_leaf,
            samples,
            by_tid,
            by_comm: FxMap::default(),
        })
    }

    /// Whether cgroup `i`'s nr_throttled grew in the sample interval
    /// containing `ts`.
    fn grew(&self, i: usize, ts: u64) -> bool {
        let Some(v) = self.samples.get(i) else {
            return false;
        };
        let k = v.partition_point(|s| s.0 <= ts);
        match (k.checked_sub(1).and_then(|j| v.get(j)), v.get(k)) {
            (Some(a), Some(b)) => b.1 > a.1,
            _ => false,
        }
    }

    /// Whether the cgroup of task `tid` (comm `comm`) was throttled in the
    /// sample interval containing `ts`.
    fn throttled(&mut self, trace: &Trace, tid: Tid, comm: StrId, ts: u64) -> bool {
        if self.mapping == CgroupMapping::Membership {
            return self
                .by_tid
                .get(&tid)
                .is_some_and(|v| v.iter().any(|&i| self.grew(i, ts)));
        }
        let by_leaf = &self.by_leaf;
        let cg = *self
            .by_comm
            .entry(comm)
            .or_insert_with(|| by_leaf.get(trace.strings.get(comm)).copied());
        cg.is_some_and(|i| self.grew(i, ts))
    }
}

struct Pass<'t> {
    trace: &'t Trace,
    start: u64,
    cpus: Vec<CpuSt>,
    tasks: FxMap<Tid, TaskSt>,
    waiting: Vec<Tid>,
    nonthr_on: Vec<u32>,
    n_thr: u64,
    n_busyq: u64,
    /// Tasks seen throttled at least once.
    n_capped: u64,
    mode: Mode,
    has_wakeup: bool,
    idle_b: SecondBuckets,
    busy_b: SecondBuckets,
    hist: Vec<(u64, u64)>,
    gap_count: u64,
    gap_total: u64,
    longest: Vec<Gap>,
    /// Every gap, when asked for ([`super::analyze_with_gaps`]).
    all_gaps: Option<Vec<Gap>>,
    endings: GapEndings,
    pull_waits: Vec<u64>,
    pulls_by_path: BTreeMap<String, u64>,
    kicks: BTreeMap<(u32, u32), u64>,
    /// csd functions that are `nohz_csd_func` (symbolized once, up front).
    nohz_funcs: HashSet<u64>,
    recorded: Option<Recorded>,
    /// CPU time per task (by tid).
    run_ns: FxMap<Tid, u64>,
    anomalies: u64,
    /// Per-CPU evidence of lost events: repairs apply only where it is.
    loss: LossEvidence,
    /// Per CPU: times of the sched_switch events to idle, in order (lets a
    /// look-ahead skip to when a busy CPU next idles).
    idle_entries: Vec<Vec<u64>>,
    /// Per CPU: what was repaired or reported (see [`CpuRepair`]).
    repairs: Vec<CpuRepair>,
    /// Index in `trace.events` of the event being processed.
    idx: usize,
    /// The timeline's inferred switch-ins ([`Timeline::inferred`]) as
    /// (time, CPU, tid, replayed), sorted by time then CPU.
    inferred: Vec<(u64, u32, Tid, bool)>,
    /// The first of `inferred` not yet replayed (all before it are).
    next_inferred: usize,
}

const LONGEST: usize = 20;

/// Inference: a task that was throttled before and now waits preempted on a
/// CPU that runs something else without a single switch for this long (and
/// neither runs nor moves meanwhile) is throttled again. A runnable queued
/// task of comparable weight gets the CPU within a slice or two (EEVDF's base
/// slice is 0.75-3 ms, the tick 1-10 ms), while a CFS-bandwidth throttle
/// lasts until the next period (default 100 ms).
const HOLD_NS: u64 = 20_000_000;

/// Per-second buckets are kept for spans of at most this many seconds per
/// event, plus [`DAY_SECONDS`].
const MAX_SECONDS_PER_EVENT: usize = 4;

/// See [`MAX_SECONDS_PER_EVENT`].
const DAY_SECONDS: usize = 86_400;

/// Bound on the events one look-ahead reads.
const LOOKAHEAD_EVENTS: usize = 200_000;

/// Run the pass over `trace` (events sorted by time) and its timeline `tl`
/// (built from it), also returning every gap when `keep_gaps`.
pub(super) fn run_with(trace: &Trace, tl: &Timeline, keep_gaps: bool) -> (IdleReport, Vec<Gap>) {
    let start = trace.start().0;
    let end = trace.end().0;
    let nb = ((end - start) / SEC) as usize;
    // Per-second buckets only for a span the events can fill: a damaged
    // timestamp once made a 102-event text trace span 636 million s (10 GB
    // of buckets, 17 s of filling them). Beyond that the per-second
    // statistics are left out (None), as for a trace shorter than a second.
    let nb = if nb > MAX_SECONDS_PER_EVENT * trace.events.len() + DAY_SECONDS {
        0
    } else {
        nb
    };
    let max_cpu = trace
        .events
        .iter()
        .map(|e| e.cpu.0 + 1)
        .max()
        .unwrap_or(0)
        .max(trace.nr_cpus);
    let n = max_cpu as usize;
    // The times each CPU switched to idle: the starts of its idle runs
    // (exact on a CPU without loss evidence, the only ones whose entries
    // the look-aheads read; on a lossy CPU the repair may have turned an
    // idle run into an inferred one).
    let mut idle_entries: Vec<Vec<u64>> = vec![Vec::new(); n];
    for (runs, entries) in tl.cpus.iter().zip(idle_entries.iter_mut()) {
        entries.extend(runs.iter().filter(|r| r.tid.is_idle()).map(|r| r.ts.0));
    }
    let loss = tl.loss.clone();
    let mut inferred: Vec<(u64, u32, Tid, bool)> = tl
        .inferred
        .iter()
        .map(|i| (i.ts.0, i.cpu.0, i.tid, false))
        .collect();
    inferred.extend(lead_in_switch_ins(trace, tl, n));
    inferred.sort_by_key(|&(ts, cpu, _, _)| (ts, cpu));
    let mut p = Pass {
        trace,
        start,
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
        nohz_funcs: nohz_funcs(trace),
        recorded: Recorded::new(trace),
        run_ns: FxMap::default(),
        anomalies: 0,
        loss,
        idle_entries,
        repairs: (0..n)
            .map(|c| CpuRepair {
                cpu: c as u32,
                ..CpuRepair::default()
            })
            .collect(),
        idx: 0,
        inferred,
        next_inferred: 0,
    };
    for (i, ev) in trace.events.iter().enumerate() {
        p.idx = i;
        p.replay_inferred_before(ev.ts.0);
        p.event(ev);
    }
    p.replay_inferred_before(u64::MAX);
    let mut gaps = Vec::new();
    let report = p.finish(end, nb, &mut gaps);
    (report, gaps)
}

/// The timeline's repair before each CPU's first recorded switch, where
/// the timeline has no run (it starts a CPU's runs at its first switch)
/// but this pass knows the CPU idle from its first event (common_pid 0):
/// when that first switch switches out a task P that the timeline shows
/// Runnable until then (a switch-out no recorded switch explains, so the
/// CPU is lossy), P's switch-in was not traced and it ran from the later
/// of "the CPU's first event" and "P runnable since", the timeline's rule.
/// Entries as in [`Pass::inferred`].
fn lead_in_switch_ins(trace: &Trace, tl: &Timeline, n: usize) -> Vec<(u64, u32, Tid, bool)> {
    // Per CPU: the first event the pass reads (time, current task), and
    // whether its first switch was seen.
    let mut first: Vec<Option<(u64, Tid)>> = vec![None; n];
    let mut switched = vec![false; n];
    let mut pending = n;
    let mut out = Vec::new();
    for e in &trace.events {
        let c = e.cpu.0 as usize;
        if pending == 0 {
            break;
        }
        if c >= n || switched[c] || !names_current(&e.data) {
            continue;
        }
        let f = *first[c].get_or_insert((e.ts.0, e.tid));
        let EventData::Switch { prev_tid, .. } = e.data else {
            continue;
        };
        switched[c] = true;
        pending -= 1;
        if !f.1.is_idle() || prev_tid.is_idle() || !tl.loss.lossy(c as u32) {
            continue;
        }
        let Some(t) = tl.thread(prev_tid) else {
            continue;
        };
        let k = t.intervals.partition_point(|iv| iv.ts < e.ts);
        let Some(iv) = k.checked_sub(1).map(|k| &t.intervals[k]) else {
            continue;
        };
        if iv.state == crate::ThreadState::Runnable && iv.end == Some(e.ts) {
            out.push((iv.ts.0.max(f.0), c as u32, prev_tid, false));
        }
    }
    out
}

/// Whether an event of this kind is one the pass reads, and so one whose
/// sample tid it trusts as the CPU's current task. Others are skipped: some
/// fire inside a context switch, after sched_switch but before the switch
/// itself (tlb:tlb_flush on a task switch reports the previous task), and
/// would make the pass learn the wrong task; skipping them also makes the
/// report the same whether or not the load kept them.
/// (The timeline's evidence kinds, `crate::timeline::names_current`, plus
/// sched_switch and the balancing proxies this pass reads.)
fn names_current(data: &EventData) -> bool {
    crate::timeline::names_current(data)
        || matches!(
            data,
            EventData::Switch { .. }
                | EventData::Softirq { .. }
                | EventData::CsdQueue { .. }
                | EventData::WakeIdleNoIpi { .. }
        )
}

impl<'t> Pass<'t> {
    fn idle(&self, c: u32) -> bool {
        self.cpus
            .get(c as usize)
            .is_some_and(|s| s.known && s.cur.is_idle())
    }

    fn valid(&self, c: u32) -> bool {
        (c as usize) < self.cpus.len()
    }

    fn compute_mode(&self) -> Mode {
        if self.n_busyq > 0 {
            Mode::Imbalance
        } else if self.n_thr > 0 {
            Mode::Throttled
        } else {
            Mode::None
        }
    }

    // ---- waiters ----

    fn add_wait(&mut self, tid: Tid, cpu: u32, since: u64, preempted: bool, throttled: bool) {
        let slot = self.waiting.len();
        self.waiting.push(tid);
        if throttled {
            self.n_thr += 1;
        } else {
            self.nonthr_on[cpu as usize] += 1;
            if !self.idle(cpu) {
                self.n_busyq += 1;
            }
            if preempted {
                self.cpus[cpu as usize].preempted_q.push(tid);
            }
        }
        let t = self.tasks.entry(tid).or_default();
        t.wait = Some(Wait {
            cpu,
            since,
            throttled,
            preempted,
            slot,
        });
    }

    fn remove_wait(&mut self, tid: Tid) -> Option<Wait> {
        let w = self.tasks.get_mut(&tid)?.wait.take()?;
        self.waiting.swap_remove(w.slot);
        if let Some(&moved) = self.waiting.get(w.slot) {
            if let Some(Wait { slot, .. }) =
                self.tasks.get_mut(&moved).and_then(|t| t.wait.as_mut())
            {
                *slot = w.slot;
            }
        }
        if w.throttled {
            self.n_thr -= 1;
        } else {
            self.nonthr_on[w.cpu as usize] -= 1;
            if !self.idle(w.cpu) {
                self.n_busyq -= 1;
            }
        }
        Some(w)
    }

    fn set_throttled(&mut self, tid: Tid, throttled: bool) {
        let Some(w) = self.tasks.get(&tid).and_then(|t| t.wait) else {
            return;
        };
        if w.throttled == throttled {
            return;
        }
        self.remove_wait(tid);
        self.add_wait(tid, w.cpu, w.since, w.preempted, throttled);
    }

    fn move_wait(&mut self, tid: Tid, cpu: u32) {
        let Some(w) = self.tasks.get(&tid).and_then(|t| t.wait) else {
            return;
        };
        if w.cpu == cpu {
            return;
        }
        self.remove_wait(tid);
        self.add_wait(tid, cpu, w.since, w.preempted, w.throttled);
    }

    // ---- CPU state ----

    /// Accrue the idle CPU `c`'s time since its last accrual into the current mode.
    fn accrue(&mut self, c: usize, ts: u64) {
        let mode = self.mode;
        let s = &mut self.cpus[c];
        let dur = ts.saturating_sub(s.seg_start);
        s.seg_start = ts;
        if dur == 0 {
            return;
        }
        match mode {
            Mode::None => {}
            Mode::Throttled => {
                s.out.throttled_ns += dur;
                s.out.wasted_idle_ns += dur;
                if let Some(g) = s.gap.as_mut() {
                    g.thr += dur;
                }
            }
            Mode::Imbalance => {
                s.out.imbalance_ns += dur;
                s.out.wasted_idle_ns += dur;
                if let Some(g) = s.gap.as_mut() {
                    g.imb += dur;
                }
            }
        }
    }

    fn open_gap(&mut self, c: usize, ts: u64) {
        let mut waiting = Vec::new();
        for &tid in self.waiting.iter().take(64) {
            if let Some(w) = self.tasks.get(&tid).and_then(|t| t.wait) {
                if w.throttled || !self.idle(w.cpu) {
                    waiting.push((tid, w.cpu, w.throttled));
                    if waiting.len() == 4 {
                        break;
                    }
                }
            }
        }
        self.cpus[c].gap = Some(OpenGap {
            start: ts,
            thr: 0,
            imb: 0,
            pulled: false,
            waiting,
        });
    }

    fn close_gap(&mut self, c: usize, ts: u64, ending: Ending) {
        let Some(g) = self.cpus[c].gap.take() else {
            return;
        };
        let dur = ts.saturating_sub(g.start);
        if dur == 0 {
            return;
        }
        let ending = if g.pulled && ending != Ending::TraceEnd {
            Ending::Pull
        } else {
            ending
        };
        self.gap_count += 1;
        self.gap_total += dur;
        let b = gap_bucket(dur);
        if self.hist.len() <= b {
            self.hist.resize(b + 1, (0, 0));
        }
        self.hist[b].0 += 1;
        self.hist[b].1 += dur;
        match ending {
            Ending::Wakeup => self.endings.wakeup += 1,
            Ending::Pull => self.endings.pull += 1,
            Ending::RanElsewhere => self.endings.ran_elsewhere += 1,
            Ending::TraceEnd => self.endings.trace_end += 1,
            Ending::Unthrottle => self.endings.unthrottle += 1,
        }
        let keep_all = self.all_gaps.is_some();
        let min_kept = if self.longest.len() >= LONGEST && !keep_all {
            self.longest.iter().map(|g| g.dur_ns).min().unwrap_or(0)
        } else {
            0
        };
        if dur > min_kept || self.longest.len() < LONGEST {
            let gap = Gap {
                cpu: c as u32,
                start_ns: g.start,
                dur_ns: dur,
                throttled_ns: g.thr,
                imbalance_ns: g.imb,
                ending: ending.as_str().to_string(),
                waiting: g
                    .waiting
                    .iter()
                    .map(|&(tid, cpu, throttled)| Waiter {
                        tid: tid.0,
                        comm: String::new(),
                        cpu,
                        throttled,
                    })
                    .collect(),
            };
            if let Some(all) = &mut self.all_gaps {
                all.push(gap.clone());
            }
            self.longest.push(gap);
            if self.longest.len() > 2 * LONGEST {
                self.trim_longest();
            }
        }
    }

    fn trim_longest(&mut self) {
        self.longest.sort_by(|a, b| {
            b.dur_ns
                .cmp(&a.dur_ns)
                .then(a.start_ns.cmp(&b.start_ns))
                .then(a.cpu.cmp(&b.cpu))
        });
        self.longest.truncate(LONGEST);
    }

    /// After the counters changed at `ts`: if the mode changed, accrue every
    /// idle CPU under the old mode and open or close its gap.
    fn sync(&mut self, ts: u64) {
        let new = self.compute_mode();
        if new == self.mode {
            return;
        }
        let old = self.mode;
        for c in 0..self.cpus.len() {
            if !self.idle(c as u32) {
                continue;
            }
            self.accrue(c, ts);
            if old == Mode::None {
                self.open_gap(c, ts);
            } else if new == Mode::None {
                self.close_gap(c, ts, Ending::RanElsewhere);
            }
        }
        self.mode = new;
    }

    /// A busy (or unknown) CPU becomes idle at `ts`.
    fn cpu_goes_idle(&mut self, c: usize, ts: u64) {
        self.n_busyq -= self.nonthr_on[c] as u64;
        self.cpus[c].known = true;
        self.cpus[c].cur = Tid::IDLE;
        self.cpus[c].seg_start = ts;
        // A CPU that idles while a preempted task is queued on it: that task
        // is not runnable in the scheduler's eyes, i.e. throttled.
        let q = std::mem::take(&mut self.cpus[c].preempted_q);
        for tid in q {
            let still = self
                .tasks
                .get(&tid)
                .and_then(|t| t.wait)
                .is_some_and(|w| w.cpu == c as u32 && w.preempted && !w.throttled);
            if still {
                self.set_throttled(tid, true);
                self.mark_capped(tid);
            }
        }
        // Nor does a runnable CPU idle with a woken task queued on it. When
        // the task is switched in next (without having run or been woken in
        // between), the wakeup raced with this CPU's pick, and it stays
        // this CPU's incoming work. Otherwise, on a CPU whose trace shows
        // loss ([`LossEvidence`]; this VM's CPU 1 does not trace its
        // switches out of idle), its events were lost: the wait is an
        // artifact and is dropped, so that it cannot count as stuck work
        // until the trace ends. On a fully traced CPU the wait is real (a
        // task woken into a throttled cgroup on kernels before per-task
        // throttling): it is kept, throttled when the recorded samples say
        // so (the wakeup's look-ahead, [`Pass::woken_held_off`], has
        // already marked the ones the inference proves), else counted as
        // an anomaly and shown in [`CpuRepair::woken_left_queued`].
        if self.nonthr_on[c] > 0 {
            let queued: Vec<Tid> = self
                .waiting
                .iter()
                .copied()
                .filter(|tid| {
                    self.tasks
                        .get(tid)
                        .and_then(|t| t.wait)
                        .is_some_and(|w| w.cpu == c as u32 && !w.throttled && !w.preempted)
                })
                .collect();
            let lossy = self.loss.lossy(c as u32);
            for tid in queued {
                if self.switched_in_next(tid) {
                    continue;
                }
                self.anomalies += 1;
                if lossy {
                    self.remove_wait(tid);
                    if let Some(t) = self.tasks.get_mut(&tid) {
                        t.in_wake = false;
                    }
                    self.repairs[c].waits_dropped += 1;
                } else {
                    self.repairs[c].woken_left_queued += 1;
                    let trace = self.trace;
                    let comm = self.tasks.get(&tid).map_or(StrId(0), |t| t.comm);
                    let thr = self
                        .recorded
                        .as_mut()
                        .is_some_and(|r| r.throttled(trace, tid, comm, ts));
                    if thr {
                        self.set_throttled(tid, true);
                    }
                }
            }
        }
        // A task already seen throttled, waiting preempted on a busy CPU while
        // this one goes idle without pulling it (newidle balancing would have):
        // throttled again.
        if self.n_capped > 0 {
            let stuck: Vec<Tid> = self
                .waiting
                .iter()
                .copied()
                .filter(|tid| {
                    self.tasks.get(tid).is_some_and(|t| {
                        t.capped && t.wait.is_some_and(|w| w.preempted && !w.throttled)
                    })
                })
                .collect();
            for tid in stuck {
                self.set_throttled(tid, true);
            }
        }
        if self.mode != Mode::None {
            self.open_gap(c, ts);
        }
    }

    /// An idle CPU starts running `next` at `ts`; its gap ends with `ending`.
    fn cpu_goes_busy(&mut self, c: usize, ts: u64, next: Tid, ending: Ending) {
        self.accrue(c, ts);
        self.close_gap(c, ts, ending);
        self.cpus[c].cur = next;
        self.n_busyq += self.nonthr_on[c] as u64;
    }

    /// Close the current run of CPU `c` at `ts` into the idle/busy totals.
    fn close_run(&mut self, c: usize, ts: u64) {
        let s = &mut self.cpus[c];
        if !s.known {
            return;
        }
        let (a, b) = (s.since, ts.max(s.since));
        if s.cur.is_idle() {
            s.out.idle_ns += b - a;
            self.idle_b.add(a, b);
        } else {
            self.busy_b.add(a, b);
            *self.run_ns.entry(s.cur).or_default() += b - a;
        }
        s.since = ts;
    }

    /// First event on CPU `c`: its common_pid is current, and was since the trace start.
    fn learn_cpu(&mut self, c: usize, cur: Tid, ts: u64) {
        self.cpus[c].since = self.start;
        if cur.is_idle() {
            self.cpu_goes_idle(c, ts);
        } else {
            self.cpus[c].known = true;
            self.cpus[c].cur = cur;
            self.tasks.entry(cur).or_default().running_on = Some(c as u32);
        }
    }

    fn is_nohz_kick(&self, func: Sym) -> bool {
        self.nohz_funcs.contains(&func.0)
    }

    fn pull_path(&self, e: u32, dest: u32, ev_tid: Tid) -> &'static str {
        if self.trace.tasks.comm(ev_tid).starts_with("migration/") {
            return "active";
        }
        let s = &self.cpus[e as usize];
        if s.softirq_since.is_some() {
            let kicked = s.known && s.cur.is_idle() && s.last_kick.is_some_and(|k| k >= s.since);
            if kicked {
                "nohz_kick"
            } else if e == dest {
                "idle_balance"
            } else {
                "nohz_balance"
            }
        } else if e == dest {
            "newidle"
        } else {
            "other"
        }
    }

    // ---- events ----

    fn event(&mut self, ev: &schedscope_trace::Event) {
        let ts = ev.ts.0;
        let c = ev.cpu.0 as usize;
        if c >= self.cpus.len() {
            self.anomalies += 1;
            return;
        }
        if !names_current(&ev.data) {
            return;
        }
        if !self.cpus[c].known {
            self.learn_cpu(c, ev.tid, ts);
            self.sync(ts);
        } else if self.cpus[c].cur.is_idle()
            && !ev.tid.is_idle()
            && crate::timeline::names_current(&ev.data)
        {
            // The timeline's repair may start the task this event names
            // right here (its wakeup was not traced either).
            if let Some(tid) = self.take_inferred(c, ts, Some(ev.tid)) {
                self.anomalies += 1;
                self.switch(c, ts, Tid::IDLE, false, StrId(0), tid);
                self.sync(ts);
            }
        }
        match ev.data {
            EventData::Switch {
                prev_tid,
                prev_state,
                prev_comm,
                next_tid,
                ..
            } => self.switch(
                c,
                ts,
                prev_tid,
                prev_state.is_runnable(),
                prev_comm,
                next_tid,
            ),
            EventData::Wakeup {
                kind,
                tid,
                comm,
                target_cpu,
                ..
            } => self.wakeup(ts, kind, tid, comm, target_cpu.0),
            EventData::Migrate { tid, dest_cpu, .. } => self.migrate(ev, ts, tid, dest_cpu.0),
            EventData::Exit { tid, .. } => {
                self.remove_wait(tid);
            }
            EventData::Softirq { vec: 7, phase, .. } => {
                let s = &mut self.cpus[c];
                match phase {
                    0 => {
                        s.out.sched_softirqs += 1;
                        s.softirq_since = Some(ts);
                    }
                    1 => {
                        if let Some(a) = s.softirq_since.take() {
                            s.out.sched_softirq_ns += ts.saturating_sub(a);
                        }
                    }
                    _ => {}
                }
            }
            EventData::CsdQueue { cpu, func, .. }
                if self.valid(cpu.0) && self.is_nohz_kick(func) =>
            {
                self.cpus[cpu.0 as usize].out.nohz_kicks_received += 1;
                self.cpus[cpu.0 as usize].last_kick = Some(ts);
                *self.kicks.entry((c as u32, cpu.0)).or_default() += 1;
            }
            EventData::WakeIdleNoIpi { cpu } if self.valid(cpu.0) => {
                self.cpus[cpu.0 as usize].out.wake_idle_without_ipi += 1;
            }
            _ => {}
        }
        self.sync(ts);
    }

    /// Replay the timeline's inferred switch-ins made before `ts` (after
    /// every event at their own time: an inferred switch-in starts at an
    /// event's time, the wakeup or the switch to idle that allowed it).
    fn replay_inferred_before(&mut self, ts: u64) {
        while let Some(&(t_in, cpu, tid, done)) = self.inferred.get(self.next_inferred) {
            if t_in >= ts {
                break;
            }
            self.next_inferred += 1;
            let c = cpu as usize;
            if done || c >= self.cpus.len() {
                continue;
            }
            // Also in the timeline's anomalies: a switch the trace lacks.
            self.anomalies += 1;
            let cur = self.cpus[c].cur;
            self.switch(c, t_in, cur, false, StrId(0), tid);
            self.sync(t_in);
        }
    }

    /// A task the timeline infers was switched in on CPU `c` at `ts` (of
    /// the current event; `tid` when given), not replayed yet: marked
    /// replayed and returned.
    fn take_inferred(&mut self, c: usize, ts: u64, tid: Option<Tid>) -> Option<Tid> {
        let from = self.next_inferred;
        let k = self.inferred[from..]
            .iter()
            .take_while(|e| e.0 <= ts)
            .position(|e| e.0 == ts && e.1 as usize == c && !e.3 && tid.is_none_or(|t| t == e.2))?;
        let e = &mut self.inferred[from + k];
        e.3 = true;
        Some(e.2)
    }

    fn switch(
        &mut self,
        c: usize,
        ts: u64,
        prev: Tid,
        prev_runnable: bool,
        prev_comm: StrId,
        next: Tid,
    ) {
        let next = if next.is_idle() && self.loss.lossy(c as u32) {
            // A recorded switch to idle at the time the repair ran a task
            // from: the CPU never idled then.
            match self.take_inferred(c, ts, None) {
                Some(t) => {
                    self.anomalies += 1;
                    t
                }
                None => next,
            }
        } else {
            next
        };
        let cur = self.cpus[c].cur;
        if cur != prev {
            // Lost events: whoever we thought ran here left at an unknown time.
            self.anomalies += 1;
            if !cur.is_idle() {
                if let Some(t) = self.tasks.get_mut(&cur) {
                    if t.running_on == Some(c as u32) {
                        t.running_on = None;
                    }
                }
            }
        }
        self.close_run(c, ts);
        if !prev.is_idle() {
            let t = self.tasks.entry(prev).or_default();
            t.running_on = None;
            t.in_wake = false;
            t.pulled_into = None;
            if self.remove_wait(prev).is_some() {
                self.anomalies += 1;
            }
            if prev_runnable {
                let trace = self.trace;
                let thr = match self.recorded.as_mut() {
                    Some(r) => r.throttled(trace, prev, prev_comm, ts),
                    None => {
                        let thr = self.held_off(c as u32, prev, ts);
                        if thr {
                            self.mark_capped(prev);
                        }
                        thr
                    }
                };
                self.add_wait(prev, c as u32, ts, true, thr);
            }
        }
        let mut ending = Ending::Wakeup;
        if !next.is_idle() {
            let w = self.remove_wait(next);
            let t = self.tasks.entry(next).or_default();
            if t.running_on.is_some_and(|r| r != c as u32) {
                self.anomalies += 1;
            }
            t.running_on = Some(c as u32);
            t.in_wake = false;
            let pulled = t.pulled_into.take() == Some(c as u32);
            if pulled {
                ending = Ending::Pull;
            } else if w.is_some_and(|w| w.throttled) {
                ending = Ending::Unthrottle;
            }
        }
        let was_idle = self.idle(c as u32);
        match (was_idle, next.is_idle()) {
            (false, true) => self.cpu_goes_idle(c, ts),
            (true, false) => self.cpu_goes_busy(c, ts, next, ending),
            _ => self.cpus[c].cur = next,
        }
        self.cpus[c].since = ts;
    }

    /// The events after the current one that a look-ahead may read (at
    /// most [`LOOKAHEAD_EVENTS`]).
    fn ahead(&self) -> &'t [schedscope_trace::Event] {
        let events = &self.trace.events;
        let from = (self.idx + 1).min(events.len());
        let to = events.len().min(from.saturating_add(LOOKAHEAD_EVENTS));
        &events[from..to]
    }

    fn mark_capped(&mut self, tid: Tid) {
        let t = self.tasks.entry(tid).or_default();
        if !t.capped {
            t.capped = true;
            self.n_capped += 1;
        }
    }

    /// Inference for `tid`, switched out runnable on CPU `cpu` at `ts` (the
    /// current event): whether the rest of the trace shows that the
    /// scheduler did not see it runnable, i.e. it was throttled from now on.
    /// Looking ahead to the first of:
    /// * it runs (anywhere), moves (sched_migrate_task) or exits: runnable;
    /// * the next switch on `cpu`: to idle means `cpu` idled with `tid`
    ///   queued, so throttled; to another task, not proven;
    /// * [`HOLD_NS`] without any of these, for a task seen throttled
    ///   before: throttled (see [`HOLD_NS`]).
    fn held_off(&self, cpu: u32, tid: Tid, ts: u64) -> bool {
        let capped = self.tasks.get(&tid).is_some_and(|t| t.capped);
        for ev in self.ahead() {
            if ev.ts.0 > ts.saturating_add(HOLD_NS) {
                return capped;
            }
            match ev.data {
                EventData::Switch { next_tid, .. } if next_tid == tid => return false,
                EventData::Switch { next_tid, .. } if ev.cpu.0 == cpu => return next_tid.is_idle(),
                EventData::Migrate { tid: t, .. } | EventData::Exit { tid: t, .. } if t == tid => {
                    return false
                }
                _ => {}
            }
        }
        false
    }

    /// Whether the next thing the rest of the trace shows of `tid` (from
    /// the event after the current one, within [`LOOKAHEAD_EVENTS`]) is its
    /// switch-in, rather than it running (an event of its own, a switch
    /// out), being woken, moving or exiting.
    fn switched_in_next(&self, tid: Tid) -> bool {
        for ev in self.ahead() {
            if !names_current(&ev.data) {
                continue;
            }
            match ev.data {
                EventData::Switch { next_tid, .. } if next_tid == tid => return true,
                EventData::Switch { prev_tid, .. } if prev_tid == tid => return false,
                EventData::Wakeup { tid: t, .. }
                | EventData::Migrate { tid: t, .. }
                | EventData::Exit { tid: t, .. }
                    if t == tid =>
                {
                    return false
                }
                _ if ev.tid == tid => return false,
                _ => {}
            }
        }
        false
    }

    fn wakeup(&mut self, ts: u64, kind: WakeKind, tid: Tid, comm: StrId, target: u32) {
        if tid.is_idle() || !self.valid(target) {
            return;
        }
        let t = self.tasks.entry(tid).or_default();
        if t.running_on.is_some() {
            return;
        }
        t.comm = comm;
        let waiting = t.wait.is_some();
        // The enqueue (sched_wakeup; sched_waking when the trace has no
        // sched_wakeup) of a fresh wake on a fully traced CPU: see whether
        // the scheduler held the task off.
        let enqueued = match kind {
            WakeKind::Waking => !self.has_wakeup && !waiting,
            WakeKind::Wakeup | WakeKind::WakeupNew => true,
        };
        match kind {
            WakeKind::Waking => {
                if !waiting {
                    t.in_wake = true;
                    t.pulled_into = None;
                    self.add_wait(tid, target, ts, false, false);
                }
            }
            WakeKind::Wakeup | WakeKind::WakeupNew => {
                t.in_wake = false;
                if !waiting {
                    t.pulled_into = None;
                }
                if waiting {
                    self.move_wait(tid, target);
                } else {
                    self.add_wait(tid, target, ts, false, false);
                }
            }
        }
        if !enqueued {
            return;
        }
        let Some(w) = self.tasks.get(&tid).and_then(|t| t.wait) else {
            return;
        };
        if w.preempted || w.throttled || self.loss.lossy(w.cpu) {
            return;
        }
        if self.woken_held_off(w.cpu, tid, ts) {
            self.set_throttled(tid, true);
            self.mark_capped(tid);
            self.repairs[w.cpu as usize].woken_throttled += 1;
        }
    }

    /// Inference for `tid`, woken onto CPU `cpu` at `ts` (the current
    /// event, its enqueue), on a CPU that shows no loss: whether the rest of
    /// the trace shows that the scheduler did not see it runnable, i.e. it
    /// was woken into a throttled cgroup (kernels before per-task CFS
    /// bandwidth throttling keep such a task queued on its throttled
    /// cfs_rq until the period refills). Looking ahead to the first of:
    /// * it runs (anywhere), is switched out, moves or exits: runnable;
    /// * `cpu` idle (at the wakeup, or since it went idle with the task
    ///   queued) for [`HOLD_NS`] without picking it: throttled. A
    ///   scheduler does not idle a CPU with a runnable task queued on it;
    ///   when the trace shows it briefly, the wakeup raced with the CPU's
    ///   pick (cross-CPU timestamps, remote wake lists) and the task is
    ///   switched in at once, whereas a throttle lasts until the refill;
    /// * a switch on `cpu` to another task: still queued, the watch goes
    ///   on while `cpu` is busy, for at most [`HOLD_NS`] without a switch
    ///   there to idle (not proven then; this also bounds the look-ahead
    ///   on a busy healthy trace to the events of a few tens of ms).
    fn woken_held_off(&self, cpu: u32, tid: Tid, ts: u64) -> bool {
        // Whether `cpu` is idle (with the task queued), and since when
        // (while busy: since when the watch waits for it to idle).
        let (mut idle, mut since) = (self.idle(cpu), ts);
        if !idle {
            // Busy: nothing to prove unless it idles within the hold.
            let entries = self.idle_entries.get(cpu as usize).map_or(&[][..], |v| v);
            let k = entries.partition_point(|&t| t < ts);
            if entries
                .get(k)
                .is_none_or(|&t| t > ts.saturating_add(HOLD_NS))
            {
                return false;
            }
        }
        for ev in self.ahead() {
            if ev.ts.0 > since.saturating_add(HOLD_NS) {
                return idle;
            }
            match ev.data {
                EventData::Switch {
                    prev_tid, next_tid, ..
                } if prev_tid == tid || next_tid == tid => return false,
                EventData::Switch { next_tid, .. }
                    if ev.cpu.0 == cpu && next_tid.is_idle() != idle =>
                {
                    idle = next_tid.is_idle();
                    since = ev.ts.0;
                }
                EventData::Migrate { tid: t, .. } | EventData::Exit { tid: t, .. } if t == tid => {
                    return false
                }
                _ => {}
            }
        }
        idle && self.trace.end().0 > since.saturating_add(HOLD_NS)
    }

    fn migrate(&mut self, ev: &schedscope_trace::Event, ts: u64, tid: Tid, dest: u32) {
        if !self.valid(dest) {
            self.anomalies += 1;
            return;
        }
        let Some(t) = self.tasks.get_mut(&tid) else {
            return;
        };
        let Some(w) = t.wait else {
            return;
        };
        if t.in_wake {
            if !self.has_wakeup {
                t.in_wake = false;
            }
            self.move_wait(tid, dest);
            return;
        }
        if w.cpu == dest {
            return;
        }
        let pull = self.idle(dest);
        if w.throttled {
            // It moved, so the scheduler saw it runnable: not throttled after all.
            self.set_throttled(tid, false);
        }
        self.move_wait(tid, dest);
        if pull {
            let d = dest as usize;
            let path = self.pull_path(ev.cpu.0, dest, ev.tid);
            *self.pulls_by_path.entry(path.to_string()).or_default() += 1;
            let idle_since = self.cpus[d].since;
            self.pull_waits.push(ts - w.since.max(idle_since).min(ts));
            self.cpus[d].out.pulls += 1;
            if let Some(g) = self.cpus[d].gap.as_mut() {
                g.pulled = true;
            }
            if let Some(t) = self.tasks.get_mut(&tid) {
                t.pulled_into = Some(dest);
            }
        }
    }

    // ---- results ----

    fn finish(mut self, end: u64, nb: usize, all_gaps: &mut Vec<Gap>) -> IdleReport {
        for c in 0..self.cpus.len() {
            self.close_run(c, end);
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
            anomalies: self.anomalies,
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

/// The csd_queue_cpu `func` values that name `nohz_csd_func`: names in text
/// traces, addresses in perf.data resolved through the trace's kallsyms (or
/// the live kernel's when the trace was recorded on it), see
/// [`crate::symbolize`].
fn nohz_funcs(trace: &Trace) -> HashSet<u64> {
    // (the decoders give CsdQueue payloads to csd:csd_queue_cpu events
    // only: without that event name, spare the pass over the events)
    if trace.name_id("csd:csd_queue_cpu").is_none() {
        return HashSet::new();
    }
    let funcs: HashSet<Sym> = trace
        .events
        .iter()
        .filter_map(|e| match e.data {
            EventData::CsdQueue { func, .. } => Some(func),
            _ => None,
        })
        .collect();
    if funcs.is_empty() {
        return HashSet::new();
    }
    let table = SymbolTable::build(trace, funcs.iter().map(|&f| Location::kernel(f)));
    funcs
        .into_iter()
        .filter(|&f| table.name(Location::kernel(f)) == "nohz_csd_func")
        .map(|f| f.0)
        .collect()
}

/// Per-cgroup CPU time vs quota from the recorded samples.
fn cgroup_usage(trace: &Trace, run_ns: &FxMap<Tid, u64>, duration: u64) -> Vec<CgroupUsage> {
    let membership = has_membership(trace);
    let mut by_path: BTreeMap<&str, Vec<&schedscope_trace::CgroupSample>> = BTreeMap::new();
    for s in &trace.cgroup_samples {
        by_path.entry(s.path.as_str()).or_default().push(s);
    }
    by_path
        .into_iter()
        .filter_map(|(path, mut v)| {
            v.sort_by_key(|s| s.ts);
            let (first, last) = (*v.first()?, *v.last()?);
            let dt = last.ts.0.saturating_sub(first.ts.0);
            let leaf = path.rsplit('/').find(|p| !p.is_empty()).unwrap_or(path);
            let mut mapped: Vec<Tid> = trace
                .tasks
                .iter()
                .filter(|t| {
                    if membership {
                        t.cgroup
                            .as_deref()
                            .is_some_and(|cg| throttle::within(cg, path))
                    } else {
                        t.comm == leaf
                    }
                })
                .map(|t| t.tid)
                .collect();
            mapped.sort_unstable();
            mapped.dedup();
            let trace_cpu_ns = mapped.iter().filter_map(|t| run_ns.get(t)).sum::<u64>();
            Some(CgroupUsage {
                path: path.to_string(),
                quota_us: last.quota_us,
                period_us: last.period_us,
                quota_cpus: (last.quota_us > 0 && last.period_us > 0)
                    .then(|| last.quota_us as f64 / last.period_us as f64),
                usage_cpus: match (first.usage_ns, last.usage_ns) {
                    (Some(a), Some(b)) if dt > 0 => Some(b.saturating_sub(a) as f64 / dt as f64),
                    _ => None,
                },
                nr_periods: last.nr_periods.saturating_sub(first.nr_periods),
                nr_throttled: last.nr_throttled.saturating_sub(first.nr_throttled),
                throttled_ns: last.throttled_ns.saturating_sub(first.throttled_ns),
                samples: v.len() as u64,
                tasks: mapped.len() as u64,
                trace_cpu_ns,
                trace_cpus: (duration > 0).then(|| trace_cpu_ns as f64 / duration as f64),
            })
        })
        .collect()
}
