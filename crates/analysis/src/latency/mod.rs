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
use schedscope_trace::{Cpu, Event, EventData, PrevState, StrId, Tid, Trace, Ts, WakeKind};
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

/// One task's counted waits, in 4 bytes each (those of 2^32 ns or more,
/// about 4.3 s, apart at full width): the pass's one cost per event.
#[derive(Clone, Debug, Default)]
struct Delays {
    small: Vec<u32>,
    big: Vec<u64>,
}

impl Delays {
    #[inline]
    fn push(&mut self, d: u64) {
        match u32::try_from(d) {
            Ok(x) => self.small.push(x),
            Err(_) => self.big.push(d),
        }
    }

    /// Every wait, at full width.
    fn into_vec(self) -> Vec<u64> {
        let mut v = Vec::with_capacity(self.small.len() + self.big.len());
        v.extend(self.small.iter().map(|&x| u64::from(x)));
        drop(self.small);
        v.extend(self.big);
        v
    }
}

/// The accumulation state of one pass.
#[derive(Clone)]
struct Pass {
    part: Part,
    index: TidIndex,
    acc: Vec<Acc>,
    /// Each task's counted waits (index as `acc`), for the percentiles.
    delays: Vec<Delays>,
    cpu_last: Vec<Option<Ts>>,
    cpu_curr: Vec<Option<Tid>>,
    bugs: u64,
    starts: WaitStarts,
    /// The trace has no CPU column ([`Trace::cpu_unknown`]): run time is
    /// measured per task from its switch-in, and no CPU is checked.
    cpu_unknown: bool,
}

impl Pass {
    /// A pass over a trace of `nr_cpus` CPUs (more are added as events
    /// name them), keeping `part`'s accounts.
    fn new(nr_cpus: u32, cpu_unknown: bool, part: Part) -> Pass {
        let nr_cpus = nr_cpus as usize;
        Pass {
            part,
            index: TidIndex::default(),
            acc: Vec::new(),
            delays: Vec::new(),
            cpu_last: vec![None; nr_cpus],
            cpu_curr: vec![None; nr_cpus],
            bugs: 0,
            starts: WaitStarts::default(),
            cpu_unknown,
        }
    }

    /// Take in one event (in trace order); `use_waking`: sched_waking
    /// starts waits; `on_wait` receives every [`Wait`] that ends.
    #[inline]
    fn event(&mut self, ev: &Event, use_waking: bool, on_wait: &mut impl FnMut(&Wait)) {
        match ev.data {
            EventData::Switch {
                prev_tid,
                prev_state,
                prev_comm,
                next_tid,
                next_comm,
                ..
            } => self.switch(
                ev.ts,
                ev.cpu,
                (prev_tid, prev_state, prev_comm),
                (next_tid, next_comm),
                on_wait,
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
                    self.wakeup(ev.ts, tid, comm, w);
                }
            }
            _ => {}
        }
    }

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
        self.delays.push(Delays::default());
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

    fn switch(
        &mut self,
        ts: Ts,
        cpu: Cpu,
        (prev, prev_state, prev_comm): (Tid, PrevState, StrId),
        (next, next_comm): (Tid, StrId),
        on_wait: &mut impl FnMut(&Wait),
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
                on_wait(&Wait {
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
                    on_wait(&Wait {
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

/// Compute the latency section from the trace alone: its events pushed
/// through a [`LatencyPass`].
pub fn compute(trace: &Trace) -> Result<LatencyReport, AnalysisError> {
    let mut p = LatencyPass::for_trace(trace)?;
    for ev in &trace.events {
        p.push(ev);
    }
    p.finish(trace)
}

/// [`compute`], handing every wait for a CPU to `on_wait` as the pass
/// meets it (in trace order, see [`Wait`]): one pass gives both the
/// report and the waits, with exactly the report's semantics, for
/// consumers that list waits one by one (a `sched_latency` table).
pub fn compute_with(
    trace: &Trace,
    mut on_wait: impl FnMut(&Wait),
) -> Result<LatencyReport, AnalysisError> {
    let use_waking = check(trace)?;
    let mut p = Pass::new(trace.nr_cpus, trace.cpu_unknown, Part::WHOLE);
    for ev in &trace.events {
        p.event(ev, use_waking, &mut on_wait);
    }
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
    let passes: Vec<Pass> = (0..of)
        .into_par_iter()
        .map(|k| {
            let mut p = Pass::new(trace.nr_cpus, trace.cpu_unknown, Part { k, of });
            for ev in &trace.events {
                p.event(ev, use_waking, &mut |_| {});
            }
            p
        })
        .collect();
    Ok(finish(trace, use_waking, passes))
}

/// The latency pass as a consumer of events pushed one by one in trace
/// order ([`LatencyPass::push`]), for traces that are never held whole
/// (the streaming load); [`LatencyPass::finish`] gives the report that
/// [`compute`] gives on the whole trace.
///
/// Whether `sched_waking` starts waits depends on the whole trace's counts
/// (it does only when the trace has no sched_wakeup), which a stream knows
/// only at its end. Until the first waking event the two readings are the
/// same pass; from there, while no wakeup has been seen, a second pass
/// that counts wakings runs beside (a copy of the first at that instant),
/// and the first wakeup drops it. So a trace with wakeups pays for one
/// pass; one with wakings only, for two.
#[derive(Clone)]
pub struct LatencyPass {
    pass: Pass,
    /// The pass that lets sched_waking start waits, while it may be needed.
    waking: Option<Pass>,
    /// Whether sched_waking starts waits, when known from the start.
    use_waking: Option<bool>,
    /// A sched_wakeup or sched_wakeup_new was pushed.
    saw_wakeup: bool,
}

impl LatencyPass {
    /// A pass over a stream of events of a trace of `nr_cpus` CPUs (more
    /// are added as events name them; see [`Trace::cpu_unknown`] for
    /// `cpu_unknown`).
    pub fn new(nr_cpus: u32, cpu_unknown: bool) -> LatencyPass {
        LatencyPass {
            pass: Pass::new(nr_cpus, cpu_unknown, Part::WHOLE),
            waking: None,
            use_waking: None,
            saw_wakeup: false,
        }
    }

    /// A pass over the events of `trace` (which knows its counts already);
    /// the section's error when the trace lacks its input.
    pub fn for_trace(trace: &Trace) -> Result<LatencyPass, AnalysisError> {
        let mut p = LatencyPass::new(trace.nr_cpus, trace.cpu_unknown);
        p.use_waking = Some(check(trace)?);
        Ok(p)
    }

    /// Take in the next event (in trace order).
    #[inline]
    pub fn push(&mut self, ev: &Event) {
        if let Some(w) = self.use_waking {
            self.pass.event(ev, w, &mut |_| {});
            return;
        }
        if let EventData::Wakeup { kind, .. } = ev.data {
            if kind == WakeKind::Waking {
                if !self.saw_wakeup && self.waking.is_none() {
                    self.waking = Some(self.pass.clone());
                }
            } else {
                self.saw_wakeup = true;
                self.waking = None;
            }
        }
        self.pass.event(ev, false, &mut |_| {});
        if let Some(p) = &mut self.waking {
            p.event(ev, true, &mut |_| {});
        }
    }

    /// The report, given the trace the events came from (its counts,
    /// tasks and strings: the streaming load's trace without events
    /// serves); the section's error when the trace lacks its input.
    pub fn finish(self, trace: &Trace) -> Result<LatencyReport, AnalysisError> {
        let use_waking = check(trace)?;
        debug_assert!(
            self.use_waking.is_none_or(|w| w == use_waking),
            "the trace's counts changed since for_trace"
        );
        let pass = match (use_waking, self.waking) {
            (true, Some(p)) if self.use_waking.is_none() => p,
            _ => self.pass,
        };
        Ok(finish(trace, use_waking, vec![pass]))
    }
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

/// The report from the passes' accounts (their tasks are disjoint).
fn finish(trace: &Trace, use_waking: bool, passes: Vec<Pass>) -> LatencyReport {
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
        .map(|(a, delays)| {
            let mut delays_ns = delays.into_vec();
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
mod tests;
