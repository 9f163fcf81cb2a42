//! The thread-state timeline (DESIGN.md "Thread states").
//!
//! Every thread is, at every instant, in exactly one [`ThreadState`]:
//! Running (sched_switch next_pid) until switched out; Runnable after a
//! switch-out with prev_state R/R+ or after a wakeup (sched_waking, or
//! sched_wakeup/wakeup_new when waking is absent); Sleeping/Blocked/other
//! after a switch-out in that state; Unknown before the first event that
//! tells. Per CPU, [`CpuRun`] intervals say who ran (tid 0 = idle).

use schedscope_trace::{Cpu, Tid, Trace, Ts};
use serde::Serialize;
use std::collections::HashMap;

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
    pub intervals: Vec<StateInterval>,
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
    pub cpus: Vec<Vec<CpuRun>>,
    /// First event time.
    pub start: Ts,
    /// Last event time.
    pub end: Ts,
    /// Events that contradicted the tracked state (e.g. a switch-out of a
    /// task not known to run there); counted, tolerated.
    pub anomalies: u64,
    index: HashMap<Tid, usize>,
}

impl Timeline {
    /// Build the timeline of `trace` in one pass over its events.
    pub fn build(trace: &Trace) -> Timeline {
        let _ = trace;
        unimplemented!("Timeline::build is being written")
    }

    /// The timeline of `tid`.
    pub fn thread(&self, tid: Tid) -> Option<&ThreadTimeline> {
        self.index.get(&tid).map(|&i| &self.threads[i])
    }

    /// The state of `tid` at instant `ts` (intervals are half-open [ts, end)).
    pub fn state_at(&self, tid: Tid, ts: Ts) -> ThreadState {
        let Some(t) = self.thread(tid) else {
            return ThreadState::Unknown;
        };
        let i = t.intervals.partition_point(|iv| iv.ts <= ts);
        match i.checked_sub(1).map(|i| &t.intervals[i]) {
            Some(iv) if iv.end.is_none_or(|e| ts < e) => iv.state,
            _ => ThreadState::Unknown,
        }
    }
}
