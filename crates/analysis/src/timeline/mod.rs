//! The thread-state timeline (docs/design.md, "Thread states").
//!
//! Every thread is, at every instant, in exactly one [`ThreadState`]:
//! Running (sched_switch next_pid) until switched out; Runnable after a
//! switch-out with prev_state R/R+ or after a wakeup (sched_waking, or
//! sched_wakeup/wakeup_new when waking is absent); Sleeping/Blocked/other
//! after a switch-out in that state; Unknown before the first event that
//! tells. Per CPU, [`CpuRun`] intervals say who ran (tid 0 = idle).
//!
//! [`Timeline::build`] makes two passes over the time-sorted events. The
//! first (a census) finds the threads, their comms and an upper bound of the
//! intervals each will get; the second runs the state machine into vectors
//! allocated once at that size (growing them by doubling cost more than a
//! pass: each regrowth copies and faults in fresh memory). Threads are found
//! in a table indexed by tid, not hashed. Per thread the second pass keeps
//! the open (last) interval aside; a transition closes it and appends it.
//! Contradictions (a switch-out of a task that was not running there, a
//! switch-in of a task that was already running elsewhere, ...) are counted
//! in [`Timeline::anomalies`] and resolved in favour of the newer event.
//!
//! Details that the analyses rely on:
//! * A migration of a Runnable task splits its Runnable interval: the new
//!   interval keeps `preempted` and `waker` and carries the new `cpu`.
//! * A task first seen being switched out was Running before; its Running
//!   interval is back-filled from the previous sched_switch on that CPU when
//!   there was one (that is how `perf sched timehist` charges run time too),
//!   otherwise the time before is Unknown (no interval).
//! * Unknown is implicit before a thread's first interval; it is explicit
//!   after a lost switch-out: when a CPU switches out a task other than the
//!   one it switched in, that one becomes Unknown there.
//! * A switch-in out of idle that was never traced (some kernels, this
//!   project's VM among them, do not trace every switch out of idle on some
//!   CPUs; loss does the same) is inferred when an idle CPU switches out a
//!   task that was Runnable: the task ran from the later of "the CPU went
//!   idle" and "the task became Runnable" (an idle CPU picks up a woken task
//!   at once). The same switch-in is inferred earlier when, on a lossy CPU
//!   that its last switch left idle, a scheduler event (a wakeup, a
//!   migration, fork, exit or exec: `names_current`) names a task as
//!   current there (its common_pid): from the later of the two times above
//!   when the task was Runnable, else (its wakeup was lost too) from that
//!   event, the first instant the trace proves. Counted in
//!   [`Timeline::inferred_switch_ins`] (per CPU in
//!   [`Timeline::inferred_switch_ins_by_cpu`]; each in
//!   [`Timeline::inferred`]). This is the one lost-event repair of the
//!   analyses: gang and lhp read its result, idle replays it. It fires only
//!   on CPUs that [`LossEvidence`] (kept in [`Timeline::loss`], found by the
//!   census pass) marks lossy (an idle CPU switching out a task is itself
//!   such evidence): on a fully traced CPU nothing is repaired.
//! * After sched_process_exit the next switch-out makes the task Dead,
//!   whatever its prev_state; so does a switch-out with prev_state X, Z or x.

use schedscope_trace::mem::{prefetch, words_as_slots, words_as_slots_ref, Word};
use schedscope_trace::{
    Cpu, Event, EventData, EventKind, KindSet, PrevState, StrId, Tid, Trace, Ts,
};
use serde::Serialize;
use std::mem::MaybeUninit;
use std::sync::Arc;

mod builder;
mod census;
mod loss;
mod refill;
mod repair;
mod runs;
mod store;
mod stream;
#[cfg(test)]
pub(crate) mod test_trace;
#[cfg(test)]
mod tests;

use builder::*;
use census::*;
pub(crate) use loss::{names_current, stat_runtime, stat_runtime_id, NAMES_CURRENT};
pub use loss::{CpuLoss, LossEvidence, LossScan};
pub use runs::{Runs, RunsIter};
pub(crate) use store::TidIndex;
use store::*;
pub use store::{Intervals, IntervalsIter};
use stream::Seen;
pub use stream::{MarkSpan, TimelineCensus, TimelineStream};

/// The state of a thread during an interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadState {
    /// Before the first event that tells.
    Unknown,
    /// On a CPU.
    Running,
    /// Ready to run, waiting for a CPU (woken, or preempted).
    Runnable,
    /// Interruptible sleep (S, also I).
    Sleeping,
    /// Uninterruptible sleep (D).
    Blocked,
    /// Stopped, traced, parked, or another non-runnable state.
    Other,
    /// Exited.
    Dead,
}

/// One interval of a thread's life in one state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct StateInterval {
    /// Start.
    pub ts: Ts,
    /// End; `None` = still in this state when the trace ends.
    pub end: Option<Ts>,
    /// State.
    pub state: ThreadState,
    /// CPU: where it runs (Running), or where it waits (Runnable) when known.
    pub cpu: Option<Cpu>,
    /// Runnable because preempted (switched out with prev_state R/R+), not woken.
    pub preempted: bool,
    /// For Runnable after a wakeup: the task that woke it (current on the
    /// CPU that emitted sched_waking / sched_wakeup).
    pub waker: Option<Tid>,
}

impl StateInterval {
    /// End, with open intervals closed at `trace_end`.
    pub fn end_or(&self, trace_end: Ts) -> Ts {
        self.end.unwrap_or(trace_end)
    }
}

/// All state intervals of one thread, contiguous and time-ordered.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ThreadTimeline {
    /// Kernel tid.
    pub tid: Tid,
    /// Thread-group id, when known.
    pub tgid: Option<Tid>,
    /// Command name (latest).
    pub comm: String,
    /// Intervals, sorted, each starting where the previous ended.
    pub intervals: Intervals,
}

/// Who ran on a CPU from `ts` to `end` (tid 0 = idle).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CpuRun {
    /// Start.
    pub ts: Ts,
    /// End; `None` = still running when the trace ends.
    pub end: Option<Ts>,
    /// Who ran.
    pub tid: Tid,
}

/// Per-thread state intervals and per-CPU run intervals of a trace.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// One entry per thread seen (tid 0, the idle task, excluded), by tid.
    pub threads: Vec<ThreadTimeline>,
    /// Per CPU (index = CPU number): run intervals in time order.
    pub cpus: Vec<Runs>,
    /// First event time.
    pub start: Ts,
    /// Last event time.
    pub end: Ts,
    /// Events that contradicted the tracked state (e.g. a switch-out of a
    /// task not known to run there); counted, tolerated.
    pub anomalies: u64,
    /// Switch-ins that no sched_switch recorded but that the trace implies:
    /// an idle CPU switched out a task that was Runnable (see the module
    /// docs). Also counted in `anomalies`.
    pub inferred_switch_ins: u64,
    /// Per CPU: switch-ins inferred by that rule (index = CPU number; it
    /// only fires on CPUs that [`Timeline::loss`] marks lossy, since an
    /// idle CPU switching out a task is itself such evidence).
    pub inferred_switch_ins_by_cpu: Vec<u64>,
    /// Per-CPU evidence of lost events (see [`LossEvidence`]).
    pub loss: LossEvidence,
    /// Every inferred switch-in, in the order the build found them (each
    /// CPU's in time order): the idle analysis replays them among the
    /// events, so that its CPU states carry the same repair.
    pub inferred: Vec<InferredSwitchIn>,
    /// On lossy CPUs, the stretches where a switch-out contradicts the
    /// CPU's last recorded switch and no switch-in was inferred (from that
    /// switch to the contradicting one): who ran there, or whether the CPU
    /// idled, is unknown. With the inferred switch-ins' `[earliest,
    /// latest]` and the loss records' spans, they bound what loss can move
    /// (`crate::idle`'s `idle_ns_min`/`idle_ns_max`).
    pub unknown: Vec<UnknownStretch>,
    /// The threads seen in kvm_exit / kvm_entry (vCPU threads), with their
    /// vCPU id when the events carry one.
    pub vcpus: std::collections::BTreeMap<Tid, Option<u32>>,
    /// Per loss record of the trace ([`Trace::loss_marks`], same order):
    /// its CPU's nearest events, which bound the span the loss may cover.
    pub mark_spans: Vec<MarkSpan>,
    /// Per CPU, indexes into `inferred` in time order ([`Timeline::repair_at`]).
    inferred_by_cpu: Vec<Vec<u32>>,
    /// One more than the highest CPU any event of the trace names
    /// ([`Timeline::cpus_seen`]).
    cpus_seen: u32,
    /// Made by [`Timeline::build`] (not a `Default` placeholder).
    built: bool,
    index: TidIndex,
}

/// One switch-in that no sched_switch recorded, inferred by the repair
/// described in the module docs: `tid` ran on `cpu` from `ts` (the CPU was
/// idle before), until the sched_switch that switched it out.
///
/// The trace proves the switch-in happened in `[earliest, latest]`; `ts`
/// is the estimate the timeline uses (its runs and intervals start
/// there), placed from the strongest `evidence` the trace carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct InferredSwitchIn {
    /// When it was switched in: the estimate, in `[earliest, latest]`.
    pub ts: Ts,
    /// Where.
    pub cpu: Cpu,
    /// Who.
    pub tid: Tid,
    /// The earliest instant the evidence allows.
    pub earliest: Ts,
    /// The latest instant the evidence allows.
    pub latest: Ts,
    /// What placed the estimate.
    pub evidence: Evidence,
}

/// What placed an inferred switch-in, strongest first (JSON names in
/// snake_case).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Evidence {
    /// The task's first `sched:sched_stat_runtime` on the CPU after the
    /// gap, in its own context: it ran over `[ts - runtime, ts]`
    /// (update_curr's delta starts at the switch-in), so it was switched
    /// in at `ts - runtime`. Exact: `earliest = latest = ts`.
    StatRuntime,
    /// The CPU's last `power:cpu_idle` exit (not followed by an idle
    /// entry) before the first event that proves the task ran: the CPU
    /// left idle then (`earliest`), and the estimate is that exit.
    CpuIdle,
    /// The task's wakeup was not recorded: the first event that proves it
    /// current on the CPU (in its context) is the estimate and `latest`.
    TaskEvent,
    /// The task was held off (switched out runnable to idle: its cgroup
    /// throttled) and the trace shows its cgroup's refills on a fixed grid
    /// (its own recorded switch-ins after earlier hold-offs, whole
    /// bandwidth periods apart): the estimate is the first refill after the
    /// hold-off. The bounds stay the rule's (an early refill of runtime a
    /// sibling returned falls between the grid's points).
    Refill,
    /// No evidence but the rule: the later of "the CPU went idle" and "the
    /// task became runnable" (an idle CPU picks a woken task at once).
    Rule,
}

impl Evidence {
    /// Every kind, strongest first.
    pub const ALL: [Evidence; 5] = [
        Evidence::StatRuntime,
        Evidence::CpuIdle,
        Evidence::TaskEvent,
        Evidence::Refill,
        Evidence::Rule,
    ];

    /// The JSON / text name.
    pub fn name(self) -> &'static str {
        match self {
            Evidence::StatRuntime => "stat_runtime",
            Evidence::CpuIdle => "cpu_idle",
            Evidence::TaskEvent => "task_event",
            Evidence::Refill => "refill",
            Evidence::Rule => "rule",
        }
    }
}

/// A stretch of one CPU whose state the trace does not prove (see
/// [`Timeline::unknown`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct UnknownStretch {
    /// The CPU.
    pub cpu: Cpu,
    /// Start: the last instant the trace proves the CPU's state.
    pub start: Ts,
    /// End: the first instant after it that the trace proves it again.
    pub end: Ts,
}

impl Timeline {
    /// Build the timeline of `trace` in two passes over its events.
    ///
    /// Events must be time-sorted (as every decoder returns them).
    pub fn build(trace: &Trace) -> Timeline {
        Timeline::build_counting(trace, false).0
    }

    /// [`Timeline::build`], also returning how many pushes outgrew the
    /// vectors sized by the census (0 when its bounds hold). `squeeze`
    /// (tests): give each thread room for 2 intervals only, so that the
    /// spill path runs.
    fn build_counting(trace: &Trace, squeeze: bool) -> (Timeline, u64) {
        // Pass 1: the threads, their comms, and how much room each needs.
        let census = Census::of(trace);
        // Pass 2: the state machine.
        let (mut b, comms) = Builder::start(trace, census, squeeze);
        let events = &trace.events[..];
        for k in 0..events.len() {
            b.step(trace, &events[k..]);
        }
        b.finish(trace, &comms)
    }

    /// Whether [`Timeline::build`] made this timeline (a
    /// `Timeline::default()` stands for "not built": a caller that needs
    /// none passes it).
    pub fn is_built(&self) -> bool {
        self.built
    }

    /// The repair that placed the switch-in of `tid` on `cpu` at `ts`, if
    /// that switch-in was inferred (not recorded): a [`CpuRun`] of `tid`
    /// starting at `ts` on `cpu`, and the Running [`StateInterval`] of `tid`
    /// starting there, were placed by it. `None` for everything the trace
    /// proves.
    pub fn repair_at(&self, cpu: Cpu, tid: Tid, ts: Ts) -> Option<&InferredSwitchIn> {
        let on = self.inferred_by_cpu.get(cpu.0 as usize)?;
        let k = on.partition_point(|&i| self.inferred[i as usize].ts < ts);
        on[k..]
            .iter()
            .map(|&i| &self.inferred[i as usize])
            .take_while(|r| r.ts == ts)
            .find(|r| r.tid == tid)
    }

    /// How many of CPU `cpu`'s switch-ins the repair placed, per kind of
    /// evidence ([`Evidence::name`]); empty on a CPU without repairs.
    pub fn repairs_by_evidence(&self, cpu: Cpu) -> std::collections::BTreeMap<&'static str, u64> {
        let mut by = std::collections::BTreeMap::new();
        for &i in self
            .inferred_by_cpu
            .get(cpu.0 as usize)
            .into_iter()
            .flatten()
        {
            *by.entry(self.inferred[i as usize].evidence.name())
                .or_insert(0) += 1;
        }
        by
    }

    /// CPU `c`'s runs (none for a CPU the timeline has no runs of).
    pub fn runs(&self, c: usize) -> &Runs {
        self.cpus.get(c).unwrap_or(&runs::NONE)
    }

    /// One more than the highest CPU any event of the trace names, every
    /// kind counted (0 for a timeline not built, or of a trace without
    /// events).
    pub fn cpus_seen(&self) -> u32 {
        self.cpus_seen
    }

    /// The timeline of `tid`.
    pub fn thread(&self, tid: Tid) -> Option<&ThreadTimeline> {
        self.index.get(tid).map(|i| &self.threads[i])
    }

    /// The state of `tid` at instant `ts` (intervals are half-open [ts, end)).
    pub fn state_at(&self, tid: Tid, ts: Ts) -> ThreadState {
        let Some(t) = self.thread(tid) else {
            return ThreadState::Unknown;
        };
        let i = t.intervals.partition_point(|iv| iv.ts <= ts);
        match i.checked_sub(1).and_then(|i| t.intervals.get(i)) {
            Some(iv) if iv.end.is_none_or(|e| ts < e) => iv.state,
            _ => ThreadState::Unknown,
        }
    }
}
