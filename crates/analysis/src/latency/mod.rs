//! Scheduling latency and run time per task, as `perf sched latency -p`
//! and `perf sched timehist -s` compute them.
//!
//! One pass over the events, independent of the [`crate::Timeline`] (so
//! `report --latency` alone never pays for the timeline). It is a third
//! sched_switch state machine on purpose: its numbers must be `perf sched
//! latency`'s, whose rules differ from the thread-state timeline's (a
//! preempted `R+` switch-out starts no wait, a wakeup of a task that is not
//! sleeping is ignored, lost events are not repaired but counted as
//! context-switch bugs), so it cannot read the timeline. The semantics are
//! those of Debian's perf 6.1 (`tools/perf/builtin-sched.c`, `latency_*`),
//! which is the oracle our tests compare against:
//!
//! * A task waits for a CPU from a **sched_wakeup / sched_wakeup_new** of a
//!   task that was sleeping (sched_waking is not a latency event for perf;
//!   it is used only when the trace has no sched_wakeup at all), or from a
//!   switch-out with prev_state exactly `R` (a yield). A preempted switch-out
//!   (`R+`) does **not** start a wait: perf 6.1 maps the raw prev_state to a
//!   letter by indexing `"RSDTtZXxKWP"`, and the preemption bit (0x100 on
//!   current kernels) never maps to `R`. Newer perf versions count it; the
//!   `delay_*` fields follow the perf that is installed here, and the
//!   waits after preemption are reported apart (`preemptions`,
//!   `preempt_delay_max_ns`, `preempt_delay_total_ns`).
//! * A wait ends at the next switch-in; that switch-in counts as one of the
//!   task's `switches`, and its delay feeds the average and the maximum
//!   (ties keep the first). A switch-in of a task never seen before counts as
//!   a switch with zero delay. A wakeup of a task that is not sleeping (still
//!   running, or already waiting) is ignored, as is a wakeup that is earlier
//!   than the task's last switch-out.
//! * Each wait is labelled with what started it ([`WaitStart`]: a
//!   wakeup, wakeup_new or waking event, a prev_state `R` switch-out, or
//!   the task's first sight at a switch-in); `delay_max_start` names the
//!   largest wait's, `waits_by_start` counts the switches per kind.
//! * Migrations do not change latency (perf only looks at them with
//!   `--cpu`).
//! * **Run time** is `perf sched timehist`'s: at every switch-out the time
//!   since the previous sched_switch on that CPU is charged to the outgoing
//!   task (nothing for the first switch on a CPU, nothing after the last).
//!   perf sched latency's own "Runtime" column comes from
//!   sched_stat_runtime, which is usually not recorded.
//! * `context_switch_bugs` counts switch-outs of a task that the previous
//!   switch on that CPU did not switch in (perf's "context switch bugs").

mod bounds;

use crate::stats::two_percentiles_unsorted;
use crate::timeline::TidIndex;
use crate::{AnalysisError, Context};
use schedscope_trace::{Cpu, EventData, PrevState, StrId, Tid, Trace, Ts, WakeKind};
use serde::Serialize;

/// The `latency` section.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LatencyReport {
    /// One row per task that was switched in after a wait or ran, sorted by
    /// maximum delay (largest first), then by tid.
    pub tasks: Vec<TaskLatency>,
    /// Sum of `switches` over all tasks.
    pub total_switches: u64,
    /// Sum of `runtime_ns` over all tasks (the idle task excluded).
    pub total_runtime_ns: u64,
    /// Sum of `wakeups` over all tasks.
    pub total_wakeups: u64,
    /// Switch-outs of a task the CPU was not known to run (lost or reordered events).
    pub context_switch_bugs: u64,
    /// Which wakeup tracepoint started waits (`sched:sched_wakeup`, or
    /// `sched:sched_waking` when the trace has no sched_wakeup).
    pub wakeup_event: String,
    /// How many of the `switches` ended a wait of each start kind.
    pub waits_by_start: WaitStarts,
    /// On a trace that shows lost events (and when the report built the
    /// thread-state timeline): the least the largest true wait for a CPU
    /// can be, given the loss (see `bounds`). Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_delay_ns_min: Option<u64>,
    /// Likewise, the most it can be.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_delay_ns_max: Option<u64>,
}

impl LatencyReport {
    /// The largest `delay_max_ns` of the tasks.
    pub fn max_delay_ns(&self) -> u64 {
        self.tasks.iter().map(|t| t.delay_max_ns).max().unwrap_or(0)
    }

    /// Fill in `max_delay_ns_min` / `max_delay_ns_max` from the timeline of
    /// `trace` (nothing on a trace without loss evidence).
    pub fn add_loss_bounds(&mut self, trace: &Trace, tl: &crate::Timeline) {
        if let Some((lo, hi)) = bounds::max_delay(self, trace, tl) {
            self.max_delay_ns_min = Some(lo);
            self.max_delay_ns_max = Some(hi);
        }
    }
}

/// What started a wait for a CPU (see the module docs). Preempted (`R+`)
/// switch-outs start none: their waits are the `preempt_*` fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitStart {
    /// A `sched:sched_wakeup` of a sleeping task.
    Wakeup,
    /// A `sched:sched_wakeup_new` (a new task).
    WakeupNew,
    /// A `sched:sched_waking` (only when the trace has no sched_wakeup).
    Waking,
    /// A switch-out with prev_state exactly `R`: runnable and not marked
    /// preempted (sched_yield, or schedule() called while still runnable;
    /// on kernels that print no preemption mark, also a preemption).
    RunnableSwitchOut,
    /// The task's first event is its switch-in: one wait of zero delay, as
    /// perf counts it.
    FirstSeen,
}

/// Waits ended by a switch-in, per [`WaitStart`] kind (their sum is
/// `total_switches`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WaitStarts {
    /// Started by `sched:sched_wakeup`.
    pub wakeup: u64,
    /// Started by `sched:sched_wakeup_new`.
    pub wakeup_new: u64,
    /// Started by `sched:sched_waking`.
    pub waking: u64,
    /// Started by a prev_state `R` switch-out.
    pub runnable_switch_out: u64,
    /// A task first seen at its switch-in (zero delay).
    pub first_seen: u64,
}

impl WaitStarts {
    fn add_all(&mut self, o: &WaitStarts) {
        self.wakeup += o.wakeup;
        self.wakeup_new += o.wakeup_new;
        self.waking += o.waking;
        self.runnable_switch_out += o.runnable_switch_out;
        self.first_seen += o.first_seen;
    }

    fn add(&mut self, k: WaitStart) {
        *match k {
            WaitStart::Wakeup => &mut self.wakeup,
            WaitStart::WakeupNew => &mut self.wakeup_new,
            WaitStart::Waking => &mut self.waking,
            WaitStart::RunnableSwitchOut => &mut self.runnable_switch_out,
            WaitStart::FirstSeen => &mut self.first_seen,
        } += 1;
    }
}

/// Latency and run time of one task (one row of `perf sched latency -p`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TaskLatency {
    /// Kernel tid.
    pub tid: i32,
    /// Thread-group id, when known.
    pub tgid: Option<i32>,
    /// Command name.
    pub comm: String,
    /// Switch-ins that ended a wait (perf's "Switches").
    pub switches: u64,
    /// CPU time, charged at switch-out (as `perf sched timehist -s`).
    pub runtime_ns: u64,
    /// Wakeups that made the task wait for a CPU.
    pub wakeups: u64,
    /// Largest wait for a CPU.
    pub delay_max_ns: u64,
    /// Mean wait (integer ns, truncated as perf does).
    pub delay_avg_ns: u64,
    /// When the largest wait ended (the switch-in).
    pub delay_max_at_ns: u64,
    /// When the largest wait began (the wakeup or yield).
    pub delay_max_start_ns: u64,
    /// What started the largest wait (the first of equal ones); `None`
    /// when the task has no switch.
    pub delay_max_start: Option<WaitStart>,
    /// Sum of all waits.
    pub delay_total_ns: u64,
    /// Preempted switch-outs (`R+`) followed by a switch-in. perf 6.1 does
    /// not count these waits (see the module docs); newer perf does. Here
    /// they are reported apart so that both readings are available.
    pub preemptions: u64,
    /// Largest wait from a preempted switch-out to the next switch-in.
    pub preempt_delay_max_ns: u64,
    /// Sum of those waits.
    pub preempt_delay_total_ns: u64,
    /// Median wait for a CPU (nearest rank over the `switches` waits, the
    /// ones behind `delay_avg_ns`; 0 without any).
    pub delay_p50_ns: u64,
    /// 99th percentile of those waits (nearest rank; 0 without any).
    pub delay_p99_ns: u64,
    /// Every one of those waits, in no particular order (partitioned
    /// around the two percentiles, not sorted: sort before taking ranks);
    /// not in the JSON: for percentiles over groups of tasks, as
    /// `schedscope diff` computes.
    #[serde(skip)]
    pub delays_ns: Vec<u64>,
}

/// One wait for a CPU, handed to the consumer of [`compute_with`] when the
/// switch-in that ends it is seen (in trace order), with everything the
/// latency pass knows about it. The waits whose `start` is `Some` are
/// exactly the ones behind a task's `switches`, `delay_*` and percentiles
/// (per tid: their count is `switches`, their largest delay
/// `delay_max_ns`, their sum `delay_total_ns`); those with `start: None`
/// are the waits after a preempted switch-out behind `preemptions` and
/// `preempt_delay_*`. A switch-in that ends both (a preempted task that was
/// also woken: impossible on a sound trace) hands the preempted one first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wait {
    /// The task that waited.
    pub tid: Tid,
    /// Its comm as the switch-in names it (`next_comm`; the task table's
    /// comm is usually better, as [`TaskLatency::comm`] uses).
    pub comm: StrId,
    /// When it became runnable: the wakeup, the `R` or `R+` switch-out, or
    /// (first sight) the switch-in itself.
    pub since: Ts,
    /// The switch-in that ended the wait.
    pub switched_in: Ts,
    /// `switched_in - since` (0 if the switch-in is earlier, which only a
    /// preempted wait on a disordered trace can be).
    pub delay_ns: u64,
    /// What started it; `None` for a wait after a preempted (`R+`)
    /// switch-out, which perf 6.1 does not count (see the module docs).
    pub start: Option<WaitStart>,
    /// The CPU the wakeup targeted (`target_cpu`); `None` unless a wakeup
    /// started the wait.
    pub wake_cpu: Option<Cpu>,
    /// The CPU of the switch-in.
    pub cpu: Cpu,
    /// The task that ran the wakeup (the waking event's current task);
    /// `None` unless a wakeup started the wait.
    pub waker: Option<Tid>,
}

/// A wait in progress: a task runnable since `since`, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pending {
    since: Ts,
    start: WaitStart,
    wake_cpu: Option<Cpu>,
    waker: Option<Tid>,
}

impl Pending {
    /// A wait that no wakeup started.
    fn at(since: Ts, start: WaitStart) -> Pending {
        Pending {
            since,
            start,
            wake_cpu: None,
            waker: None,
        }
    }
}

/// perf's per-task atom state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Not runnable (perf THREAD_SLEEPING).
    Sleeping,
    /// Waiting for a CPU (THREAD_WAIT_CPU).
    WaitCpu(Pending),
    /// On a CPU (THREAD_SCHED_IN) or inconsistent (THREAD_IGNORE).
    Done,
}

/// Per-task accumulator.
#[derive(Clone, Copy, Debug)]
struct Acc {
    tid: Tid,
    comm: StrId,
    wait: Phase,
    sched_out: Ts,
    switches: u64,
    wakeups: u64,
    runtime: u64,
    total: u64,
    max: u64,
    max_start: Ts,
    max_at: Ts,
    max_kind: Option<WaitStart>,
    /// Preempted (`R+`) switch-out not yet followed by a switch-in.
    preempted_at: Option<Ts>,
    preemptions: u64,
    preempt_total: u64,
    preempt_max: u64,
    /// Last switch-in (traces without a CPU column: run time per task).
    ran_since: Option<Ts>,
}

/// The tasks a pass keeps accounts for: those whose tid is `k` modulo
/// `of` (a power of two; `of` = 1: all). Every pass follows every CPU's
/// switches, so run time and context-switch bugs need no other pass; the
/// per-task rules read only the task's own events, so the parts' tasks
/// together are exactly the whole pass's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Part {
    k: u32,
    of: u32,
}

impl Part {
    const WHOLE: Part = Part { k: 0, of: 1 };

    #[inline(always)]
    fn owns(self, tid: Tid) -> bool {
        tid.0 as u32 & (self.of - 1) == self.k
    }
}

/// The accumulation state of one pass; `F` receives every [`Wait`].
struct Pass<F> {
    part: Part,
    index: TidIndex,
    acc: Vec<Acc>,
    /// Each task's counted waits (index as `acc`), for the percentiles.
    delays: Vec<Vec<u64>>,
    cpu_last: Vec<Option<Ts>>,
    cpu_curr: Vec<Option<Tid>>,
    bugs: u64,
    starts: WaitStarts,
    /// The trace has no CPU column ([`Trace::cpu_unknown`]): run time is
    /// measured per task from its switch-in, and no CPU is checked.
    cpu_unknown: bool,
    on_wait: F,
}

impl<F: FnMut(&Wait)> Pass<F> {
    #[inline(always)]
    fn slot(&mut self, tid: Tid, comm: StrId, init: Phase, ts: Ts) -> usize {
        if let Some(i) = self.index.get(tid) {
            if comm != StrId(0) {
                self.acc[i].comm = comm;
            }
            return i;
        }
        let i = self.acc.len();
        self.index.insert(tid, i);
        self.delays.push(Vec::new());
        self.acc.push(Acc {
            tid,
            comm,
            wait: init,
            sched_out: ts,
            switches: 0,
            wakeups: 0,
            runtime: 0,
            total: 0,
            max: 0,
            max_start: Ts(0),
            max_at: Ts(0),
            max_kind: None,
            preempted_at: None,
            preemptions: 0,
            preempt_total: 0,
            preempt_max: 0,
            ran_since: None,
        });
        i
    }

    fn cpu(&mut self, cpu: Cpu) -> usize {
        let c = cpu.0 as usize;
        if c >= self.cpu_last.len() {
            self.cpu_last.resize(c + 1, None);
            self.cpu_curr.resize(c + 1, None);
        }
        c
    }

    #[allow(clippy::too_many_arguments)]
    fn switch(
        &mut self,
        ts: Ts,
        cpu: Cpu,
        prev: Tid,
        prev_state: PrevState,
        prev_comm: StrId,
        next: Tid,
        next_comm: StrId,
    ) {
        let last = if self.cpu_unknown {
            None
        } else {
            let c = self.cpu(cpu);
            if self.cpu_curr[c].is_some_and(|cur| cur != prev) {
                self.bugs += 1;
            }
            self.cpu_curr[c] = Some(next);
            self.cpu_last[c].replace(ts)
        };
        if !prev.is_idle() && self.part.owns(prev) {
            // perf 6.1: only a raw prev_state of 0 reads as 'R'.
            let yielded = prev_state.bits == 0 && !prev_state.preempted;
            let wait = if yielded {
                Phase::WaitCpu(Pending::at(ts, WaitStart::RunnableSwitchOut))
            } else {
                Phase::Sleeping
            };
            let i = self.slot(prev, prev_comm, wait, ts);
            let a = &mut self.acc[i];
            a.wait = wait;
            a.sched_out = ts;
            a.preempted_at = (prev_state.bits == 0 && prev_state.preempted).then_some(ts);
            let since = a.ran_since.take();
            if let Some(t0) = last.or(since) {
                a.runtime += ts.0.saturating_sub(t0.0);
            }
        }
        if !next.is_idle() && self.part.owns(next) {
            let cpu_unknown = self.cpu_unknown;
            let i = self.slot(
                next,
                next_comm,
                Phase::WaitCpu(Pending::at(ts, WaitStart::FirstSeen)),
                ts,
            );
            let a = &mut self.acc[i];
            if cpu_unknown {
                a.ran_since = Some(ts);
            }
            if let Some(p) = a.preempted_at.take() {
                let d = ts.0.saturating_sub(p.0);
                a.preemptions += 1;
                a.preempt_total += d;
                a.preempt_max = a.preempt_max.max(d);
                (self.on_wait)(&Wait {
                    tid: next,
                    comm: next_comm,
                    since: p,
                    switched_in: ts,
                    delay_ns: d,
                    start: None,
                    wake_cpu: None,
                    cpu,
                    waker: None,
                });
            }
            let a = &mut self.acc[i];
            if let Phase::WaitCpu(w) = a.wait {
                a.wait = Phase::Done;
                if ts >= w.since {
                    let d = ts.0 - w.since.0;
                    a.switches += 1;
                    a.total += d;
                    if d > a.max || a.max_kind.is_none() {
                        a.max_kind = Some(w.start);
                    }
                    if d > a.max {
                        a.max = d;
                        a.max_start = w.since;
                        a.max_at = ts;
                    }
                    self.delays[i].push(d);
                    self.starts.add(w.start);
                    (self.on_wait)(&Wait {
                        tid: next,
                        comm: next_comm,
                        since: w.since,
                        switched_in: ts,
                        delay_ns: d,
                        start: Some(w.start),
                        wake_cpu: w.wake_cpu,
                        cpu,
                        waker: w.waker,
                    });
                }
            }
        }
    }

    fn wakeup(&mut self, ts: Ts, tid: Tid, comm: StrId, w: Pending) {
        if tid.is_idle() || !self.part.owns(tid) {
            return;
        }
        let i = self.slot(tid, comm, Phase::Sleeping, ts);
        let a = &mut self.acc[i];
        if a.wait != Phase::Sleeping || a.sched_out > ts {
            return;
        }
        a.wait = Phase::WaitCpu(w);
        a.wakeups += 1;
    }
}

/// Compute the latency section (see the module docs for the exact semantics).
pub fn analyze(ctx: &Context) -> Result<LatencyReport, AnalysisError> {
    compute(ctx.trace)
}

/// Compute the latency section from the trace alone.
pub fn compute(trace: &Trace) -> Result<LatencyReport, AnalysisError> {
    compute_with(trace, |_| {})
}

/// [`compute`], handing every wait for a CPU to `on_wait` as the pass
/// meets it (in trace order, see [`Wait`]): one pass gives both the
/// report and the waits, with exactly the report's semantics, for
/// consumers that list waits one by one (a `sched_latency` table).
pub fn compute_with(
    trace: &Trace,
    on_wait: impl FnMut(&Wait),
) -> Result<LatencyReport, AnalysisError> {
    let use_waking = check(trace)?;
    let p = pass(trace, use_waking, Part::WHOLE, on_wait);
    Ok(finish(trace, use_waking, vec![p]))
}

/// [`compute`] in `parts` passes run in parallel (rounded down to a
/// power of two, at most 64), each keeping the accounts of its share of
/// the tasks (see `Part`): the same report, sooner when cores are idle
/// (`report --latency` alone); every pass reads all the events, so beside
/// other work one pass ([`compute`]) costs less.
pub fn compute_in_parts(trace: &Trace, parts: usize) -> Result<LatencyReport, AnalysisError> {
    use rayon::prelude::*;
    let use_waking = check(trace)?;
    let of = 1u32 << parts.clamp(1, 64).ilog2();
    let passes: Vec<Pass<_>> = (0..of)
        .into_par_iter()
        .map(|k| pass(trace, use_waking, Part { k, of }, |_: &Wait| {}))
        .collect();
    Ok(finish(trace, use_waking, passes))
}

/// The trace's latency input is there (else the section's error);
/// `Ok(true)` when waits start at sched_waking (no sched_wakeup at all).
fn check(trace: &Trace) -> Result<bool, AnalysisError> {
    if trace.count("sched:sched_switch") == 0 {
        // sched_switch alone gives the waits after prev_state=R switch-outs;
        // the wakeups start the rest.
        let improves: &[&str] = if trace.count("sched:sched_wakeup") > 0 {
            &[]
        } else {
            &["sched:sched_wakeup"]
        };
        return Err(AnalysisError::missing_improves(
            "latency",
            &["sched:sched_switch"],
            improves,
        ));
    }
    let has_wakeup =
        trace.count("sched:sched_wakeup") > 0 || trace.count("sched:sched_wakeup_new") > 0;
    Ok(!has_wakeup && trace.count("sched:sched_waking") > 0)
}

/// One pass over the events, keeping the accounts of `part`'s tasks.
fn pass<F: FnMut(&Wait)>(trace: &Trace, use_waking: bool, part: Part, on_wait: F) -> Pass<F> {
    let nr_cpus = trace.nr_cpus as usize;
    let mut p = Pass {
        part,
        index: TidIndex::default(),
        acc: Vec::new(),
        delays: Vec::new(),
        cpu_last: vec![None; nr_cpus],
        cpu_curr: vec![None; nr_cpus],
        bugs: 0,
        starts: WaitStarts::default(),
        cpu_unknown: trace.cpu_unknown,
        on_wait,
    };
    for ev in &trace.events {
        match ev.data {
            EventData::Switch {
                prev_tid,
                prev_state,
                prev_comm,
                next_tid,
                next_comm,
                ..
            } => p.switch(
                ev.ts, ev.cpu, prev_tid, prev_state, prev_comm, next_tid, next_comm,
            ),
            EventData::Wakeup {
                kind,
                tid,
                comm,
                target_cpu,
                ..
            } => {
                let start = match kind {
                    WakeKind::Waking => use_waking.then_some(WaitStart::Waking),
                    WakeKind::Wakeup => Some(WaitStart::Wakeup),
                    WakeKind::WakeupNew => Some(WaitStart::WakeupNew),
                };
                if let Some(start) = start {
                    let w = Pending {
                        since: ev.ts,
                        start,
                        wake_cpu: Some(target_cpu),
                        waker: Some(ev.tid),
                    };
                    p.wakeup(ev.ts, tid, comm, w);
                }
            }
            _ => {}
        }
    }
    p
}

/// The report from the passes' accounts (their tasks are disjoint).
fn finish<F>(trace: &Trace, use_waking: bool, passes: Vec<Pass<F>>) -> LatencyReport {
    let mut bugs = 0;
    let mut starts = WaitStarts::default();
    let mut accounts = Vec::new();
    for p in passes {
        // (every pass follows every CPU: each counted them all)
        bugs = p.bugs;
        starts.add_all(&p.starts);
        accounts.extend(p.acc.into_iter().zip(p.delays));
    }
    let mut tasks: Vec<TaskLatency> = accounts
        .into_iter()
        .filter(|(a, _)| a.switches > 0 || a.runtime > 0)
        .map(|(a, mut delays_ns)| {
            let (delay_p50_ns, delay_p99_ns) =
                two_percentiles_unsorted(&mut delays_ns, 50.0, 99.0).unwrap_or((0, 0));
            let task = trace.tasks.by_tid(a.tid);
            let comm = match task {
                Some(t) if !t.comm.is_empty() => t.comm.clone(),
                _ => trace.strings.get(a.comm).to_string(),
            };
            TaskLatency {
                tid: a.tid.0,
                tgid: task.and_then(|t| t.tgid).map(|t| t.0),
                comm,
                switches: a.switches,
                runtime_ns: a.runtime,
                wakeups: a.wakeups,
                delay_max_ns: a.max,
                delay_avg_ns: a.total.checked_div(a.switches).unwrap_or(0),
                delay_max_at_ns: a.max_at.0,
                delay_max_start_ns: a.max_start.0,
                delay_max_start: a.max_kind,
                delay_total_ns: a.total,
                preemptions: a.preemptions,
                preempt_delay_max_ns: a.preempt_max,
                preempt_delay_total_ns: a.preempt_total,
                delay_p50_ns,
                delay_p99_ns,
                delays_ns,
            }
        })
        .collect();
    tasks.sort_by(|a, b| b.delay_max_ns.cmp(&a.delay_max_ns).then(a.tid.cmp(&b.tid)));
    LatencyReport {
        total_switches: tasks.iter().map(|t| t.switches).sum(),
        total_runtime_ns: tasks.iter().map(|t| t.runtime_ns).sum(),
        total_wakeups: tasks.iter().map(|t| t.wakeups).sum(),
        context_switch_bugs: bugs,
        waits_by_start: starts,
        wakeup_event: if use_waking {
            "sched:sched_waking"
        } else {
            "sched:sched_wakeup"
        }
        .to_string(),
        tasks,
        max_delay_ns_min: None,
        max_delay_ns_max: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::test_trace::T;
    use schedscope_trace::WakeKind::{Wakeup, WakeupNew, Waking};

    fn row(r: &LatencyReport, tid: i32) -> &TaskLatency {
        r.tasks.iter().find(|t| t.tid == tid).unwrap()
    }

    fn run(t: &mut T) -> LatencyReport {
        t.0.finish();
        compute(&t.0).unwrap()
    }

    #[test]
    fn delay_percentiles_by_hand() {
        // 5 is first seen at 100 (a wait of 0), then sleeps and waits
        // 30, 10, 50, 20 after its wakeups: waits {0, 10, 20, 30, 50}.
        // Nearest rank over n = 5: p50 = rank ceil(2.5) = 3rd = 20,
        // p99 = rank ceil(4.95) = 5th = 50.
        let mut t = T::new();
        t.switch(100, 0, 0, "R", 5);
        let mut at = 100;
        for d in [30, 10, 50, 20] {
            t.switch(at + 10, 0, 5, "S", 0)
                .wake(at + 100, 1, 7, Wakeup, 5, 0)
                .switch(at + 100 + d, 0, 0, "R", 5);
            at += 1000;
        }
        let r = run(&mut t);
        let row = row(&r, 5);
        assert_eq!(row.switches, 5);
        let mut d = row.delays_ns.clone();
        d.sort_unstable();
        assert_eq!(d, vec![0, 10, 20, 30, 50]);
        assert_eq!(row.delay_p50_ns, 20);
        assert_eq!(row.delay_p99_ns, 50);
        assert_eq!(row.delay_max_ns, 50);
        // In the JSON, next to the other delay fields; the samples are not.
        let j = serde_json::to_value(row).unwrap();
        assert_eq!(j["delay_p50_ns"], 20);
        assert_eq!(j["delay_p99_ns"], 50);
        assert!(j.get("delays_ns").is_none());
    }

    #[test]
    fn every_wait_is_handed_over_with_its_start_cpus_and_waker() {
        // 5: first seen at 100 (0); sleeps at 200, woken by 7 on CPU 1
        // (target CPU 0) at 300, in at 450 (150); preempted (R+) at 500,
        // in at 530 (a preempted wait of 30, not counted); yields (R) at
        // 600, in on CPU 1 at 650 (50). 6: first seen at 500.
        let mut t = T::new();
        t.switch(100, 0, 0, "R", 5)
            .switch(200, 0, 5, "S", 0)
            .wake(300, 1, 7, Wakeup, 5, 0)
            .switch(450, 0, 0, "R", 5)
            .switch(500, 0, 5, "R+", 6)
            .switch(530, 0, 6, "S", 5)
            .switch(600, 0, 5, "R", 0)
            .switch(650, 1, 0, "R", 5);
        t.0.finish();
        let mut waits = Vec::new();
        let r = compute_with(&t.0, |w| waits.push(*w)).unwrap();
        let five = t.0.strings.find("t5").unwrap();
        let six = t.0.strings.find("t6").unwrap();
        let w = |tid: i32, comm, since: u64, at: u64, start, wake: Option<(u32, i32)>, cpu| Wait {
            tid: Tid(tid),
            comm,
            since: Ts(since),
            switched_in: Ts(at),
            delay_ns: at - since,
            start,
            wake_cpu: wake.map(|x| Cpu(x.0)),
            cpu: Cpu(cpu),
            waker: wake.map(|x| Tid(x.1)),
        };
        use WaitStart::{FirstSeen, RunnableSwitchOut};
        assert_eq!(
            waits,
            vec![
                w(5, five, 100, 100, Some(FirstSeen), None, 0),
                w(5, five, 300, 450, Some(WaitStart::Wakeup), Some((0, 7)), 0),
                w(6, six, 500, 500, Some(FirstSeen), None, 0),
                w(5, five, 500, 530, None, None, 0),
                w(5, five, 600, 650, Some(RunnableSwitchOut), None, 1),
            ]
        );
        // the report is the one compute gives
        let row5 = row(&r, 5);
        assert_eq!(
            (row5.switches, row5.delay_max_ns, row5.delay_total_ns),
            (3, 150, 200)
        );
        assert_eq!((row5.preemptions, row5.preempt_delay_total_ns), (1, 30));
        let mut d = row5.delays_ns.clone();
        d.sort_unstable();
        assert_eq!(d, vec![0, 50, 150]);
        assert_eq!(compute(&t.0).unwrap().tasks, r.tasks);
    }

    #[test]
    fn wakeup_to_switch_in_and_runtime() {
        // Ground truth by hand: 5 sleeps at 200, woken (sched_wakeup) at 300,
        // runs at 450: one switch with delay 150. Waking at 290 is ignored.
        // Run time: 5 ran [100,200) and [450,500) on cpu 0 = 150.
        let r = run(T::new()
            .switch(100, 0, 0, "R", 5)
            .switch(200, 0, 5, "S", 0)
            .wake(290, 1, 7, Waking, 5, 0)
            .wake(300, 0, 7, Wakeup, 5, 0)
            .switch(450, 0, 0, "R", 5)
            .switch(500, 0, 5, "S", 0));
        let t = row(&r, 5);
        // First sight of 5 is a switch-in: one switch of zero delay (as perf).
        assert_eq!(t.switches, 2);
        assert_eq!(t.delay_max_ns, 150);
        assert_eq!(t.delay_max_at_ns, 450);
        assert_eq!(t.delay_max_start_ns, 300);
        assert_eq!(t.delay_avg_ns, 75);
        assert_eq!(t.wakeups, 1);
        assert_eq!(t.runtime_ns, 150);
        assert_eq!(r.context_switch_bugs, 0);
        assert_eq!(r.wakeup_event, "sched:sched_wakeup");
    }

    #[test]
    fn preempted_switch_out_does_not_start_a_wait_but_yield_does() {
        let r = run(T::new()
            .switch(10, 0, 0, "R", 5)
            .switch(20, 0, 5, "R+", 6) // preempted: perf 6.1 does not count
            .switch(40, 0, 6, "R", 5) // 6 yields: waits from 40
            .switch(70, 0, 5, "S", 6));
        assert_eq!(row(&r, 5).switches, 1, "only the first-sight switch-in");
        assert_eq!(row(&r, 5).delay_max_ns, 0);
        // ... but the wait after preemption, [20, 40), is reported apart.
        assert_eq!(row(&r, 5).preemptions, 1);
        assert_eq!(row(&r, 5).preempt_delay_max_ns, 20);
        assert_eq!(row(&r, 6).preemptions, 0, "a yield is not a preemption");
        let six = row(&r, 6);
        assert_eq!(six.switches, 2);
        assert_eq!(six.delay_max_ns, 30);
        assert_eq!(six.runtime_ns, 20);
        assert_eq!(row(&r, 5).runtime_ns, 10 + 30);
        // What started each task's largest wait: 5's only switch is its
        // first sight (its preemption started none); 6 was first seen at
        // 20 (wait 0), then waited 30 from its R switch-out at 40.
        assert_eq!(row(&r, 5).delay_max_start, Some(WaitStart::FirstSeen));
        assert_eq!(six.delay_max_start, Some(WaitStart::RunnableSwitchOut));
        assert_eq!(six.delay_max_start_ns, 40);
        assert_eq!(
            r.waits_by_start,
            WaitStarts {
                runnable_switch_out: 1,
                first_seen: 2,
                ..WaitStarts::default()
            }
        );
    }

    #[test]
    fn the_largest_wait_names_its_start_and_ties_keep_the_first() {
        // 5: woken at 100 (sched_wakeup), in at 130 (30); R switch-out at
        // 150, in at 180 (30, a tie: the wakeup, first, stays the max);
        // sleeps at 200, woken at 300, in at 350 (50, the max).
        // 7: sched_wakeup_new at 10, in at 12. waking is ignored (the trace
        // has sched_wakeup).
        let r = run(T::new()
            .wake(10, 1, 0, WakeupNew, 7, 1)
            .switch(12, 1, 0, "R", 7)
            .switch(50, 0, 0, "R", 6)
            .switch(60, 0, 6, "S", 0)
            .switch(90, 0, 0, "R", 5)
            .switch(95, 0, 5, "S", 0)
            .wake(100, 0, 0, Wakeup, 5, 0)
            .switch(130, 0, 0, "R", 5)
            .switch(150, 0, 5, "R", 0)
            .switch(180, 0, 0, "R", 5)
            .switch(200, 0, 5, "S", 0)
            .wake(290, 0, 0, Waking, 5, 0)
            .wake(300, 0, 0, Wakeup, 5, 0)
            .switch(350, 0, 0, "R", 5));
        let five = row(&r, 5);
        assert_eq!((five.switches, five.delay_max_ns), (4, 50));
        assert_eq!(five.delay_max_start, Some(WaitStart::Wakeup));
        assert_eq!(five.delay_max_start_ns, 300);
        assert_eq!(row(&r, 7).delay_max_start, Some(WaitStart::WakeupNew));
        assert_eq!(
            r.waits_by_start,
            WaitStarts {
                wakeup: 2,
                wakeup_new: 1,
                runnable_switch_out: 1,
                first_seen: 2, // 6 at 50, 5 at 90
                ..WaitStarts::default()
            }
        );
        // the tie: 30 from the wakeup at 100 stays ahead of 30 from the R at 150
        let r = run(T::new()
            .switch(90, 0, 0, "R", 5)
            .switch(95, 0, 5, "S", 0)
            .wake(100, 0, 0, Wakeup, 5, 0)
            .switch(130, 0, 0, "R", 5)
            .switch(150, 0, 5, "R", 0)
            .switch(180, 0, 0, "R", 5));
        let five = row(&r, 5);
        assert_eq!(five.delay_max_ns, 30);
        assert_eq!(five.delay_max_start, Some(WaitStart::Wakeup));
    }

    #[test]
    fn wakeup_of_running_or_unknown_task() {
        let r = run(T::new()
            .switch(10, 0, 0, "R", 5)
            .wake(15, 1, 9, Wakeup, 5, 0) // running: ignored
            .wake(20, 1, 9, WakeupNew, 8, 1) // never seen: waits from 20
            .switch(50, 1, 0, "R", 8));
        assert_eq!(row(&r, 5).wakeups, 0);
        assert_eq!(row(&r, 8).delay_max_ns, 30);
        assert_eq!(row(&r, 8).wakeups, 1);
    }

    #[test]
    fn waking_is_used_only_without_wakeup_events() {
        let r = run(T::new()
            .switch(10, 0, 0, "R", 5)
            .switch(20, 0, 5, "S", 0)
            .wake(30, 1, 9, Waking, 5, 0)
            .switch(45, 0, 0, "R", 5));
        assert_eq!(r.wakeup_event, "sched:sched_waking");
        assert_eq!(row(&r, 5).delay_max_ns, 15);
        assert_eq!(row(&r, 5).delay_max_start, Some(WaitStart::Waking));
        assert_eq!(r.waits_by_start.waking, 1);
    }

    #[test]
    fn context_switch_bug_and_sorting() {
        let r = run(T::new()
            .switch(10, 0, 0, "R", 5)
            .switch(20, 0, 6, "S", 0) // cpu 0 ran 5, not 6
            .wake(25, 1, 0, Wakeup, 6, 0)
            .switch(100, 0, 0, "R", 6));
        assert_eq!(r.context_switch_bugs, 1);
        // 6: charged [10,20) although the CPU said 5 (timehist does the same).
        assert_eq!(row(&r, 6).runtime_ns, 10);
        assert_eq!(r.tasks[0].tid, 6, "largest max delay first");
    }

    #[test]
    fn missing_switch_events_is_an_error() {
        let mut t = T::new();
        t.wake(1, 0, 0, Wakeup, 3, 0);
        t.0.finish();
        let e = compute(&t.0).unwrap_err();
        assert!(e.to_string().contains("sched:sched_switch"), "{e}");
    }
}
