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
use schedscope_trace::{Cpu, EventData, EventKind, KindSet, PrevState, StrId, Tid, Trace, Ts};
use serde::Serialize;
use std::mem::MaybeUninit;
use std::sync::Arc;

/// Size of a [`StateInterval`] in 8-byte words.
const INTERVAL_WORDS: usize = std::mem::size_of::<StateInterval>() / 8;

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

/// A thread's intervals: a slice (it derefs to `[StateInterval]`) of the
/// store that [`Timeline::build`] fills for all threads at once.
///
/// The build writes every thread's intervals into one allocation, each
/// thread in a region sized by the census, instead of one vector per
/// thread: a few huge pages to fault in instead of thousands of small
/// pages (see [`schedscope_trace::mem`]). Cloning shares the store.
#[derive(Clone, Default)]
pub struct Intervals {
    store: Arc<Store>,
    start: usize,
    end: usize,
}

/// Interval slots, in words (memory reused from the decoder, see
/// [`schedscope_trace::mem::Spare`]); only the ranges that an
/// [`Intervals`] names are initialised.
#[derive(Default)]
struct Store(Vec<Word>);

impl std::ops::Deref for Intervals {
    type Target = [StateInterval];
    fn deref(&self) -> &[StateInterval] {
        let slots = &words_as_slots_ref::<StateInterval>(&self.store.0)[self.start..self.end];
        // SAFETY: an Intervals is only made over initialised slots (by
        // `From<Vec<_>>`, or by the builder over the slots it wrote), the
        // store is never written once shared, and MaybeUninit<T> has T's
        // layout.
        unsafe { &*(slots as *const [MaybeUninit<StateInterval>] as *const [StateInterval]) }
    }
}

impl From<Vec<StateInterval>> for Intervals {
    fn from(v: Vec<StateInterval>) -> Intervals {
        let end = v.len();
        let mut words = vec![MaybeUninit::uninit(); end * INTERVAL_WORDS];
        for (slot, iv) in words_as_slots(&mut words).iter_mut().zip(v) {
            slot.write(iv);
        }
        Intervals {
            store: Arc::new(Store(words)),
            start: 0,
            end,
        }
    }
}

impl<'a> IntoIterator for &'a Intervals {
    type Item = &'a StateInterval;
    type IntoIter = std::slice::Iter<'a, StateInterval>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl std::fmt::Debug for Intervals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for Intervals {
    fn eq(&self, other: &Intervals) -> bool {
        self[..] == other[..]
    }
}

impl Serialize for Intervals {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self[..].serialize(s)
    }
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
    /// Per CPU, indexes into `inferred` in time order ([`Timeline::repair_at`]).
    inferred_by_cpu: Vec<Vec<u32>>,
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
    /// No evidence but the rule: the later of "the CPU went idle" and "the
    /// task became runnable" (an idle CPU picks a woken task at once).
    Rule,
}

impl Evidence {
    /// Every kind, strongest first.
    pub const ALL: [Evidence; 4] = [
        Evidence::StatRuntime,
        Evidence::CpuIdle,
        Evidence::TaskEvent,
        Evidence::Rule,
    ];

    /// The JSON / text name.
    pub fn name(self) -> &'static str {
        match self {
            Evidence::StatRuntime => "stat_runtime",
            Evidence::CpuIdle => "cpu_idle",
            Evidence::TaskEvent => "task_event",
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

/// tid -> index map with a cheap multiplicative hash (tids are small integers
/// that need no DoS-resistant hashing).
pub(crate) type TidMap = schedscope_trace::hash::FxMap<Tid, usize>;

/// Tids below this go to the dense table of [`TidIndex`]: Linux's
/// PID_MAX_LIMIT (2^22), so every kernel tid does.
const DENSE_TIDS: usize = 1 << 22;

/// tid -> thread index. Kernel tids are small non-negative integers, so a
/// table indexed by tid (grown on demand; 0 = absent, else index + 1) finds
/// a thread with one load; other tids (negative ones from damaged input,
/// or indexes beyond `u32`) go to a hash map.
#[derive(Clone, Debug, Default)]
pub(crate) struct TidIndex {
    dense: Vec<u32>,
    sparse: TidMap,
}

impl TidIndex {
    /// The index of `tid`, if it has one.
    #[inline]
    pub(crate) fn get(&self, tid: Tid) -> Option<usize> {
        match self.dense.get(tid.0 as u32 as usize) {
            Some(&v) if v != 0 => Some(v as usize - 1),
            _ if self.sparse.is_empty() => None,
            _ => self.sparse.get(&tid).copied(),
        }
    }

    /// Give `tid` the index `i` (`tid` has none yet).
    pub(crate) fn insert(&mut self, tid: Tid, i: usize) {
        let k = tid.0 as u32 as usize;
        let Ok(v) = u32::try_from(i + 1) else {
            self.sparse.insert(tid, i);
            return;
        };
        if k >= DENSE_TIDS {
            self.sparse.insert(tid, i);
            return;
        }
        if k >= self.dense.len() {
            // A fresh zeroed table (pages untouched until used) rather than
            // `resize`, which would write every new slot.
            let n = (k + 1).next_power_of_two().clamp(1024, DENSE_TIDS);
            let mut grown = vec![0u32; n];
            grown[..self.dense.len()].copy_from_slice(&self.dense);
            self.dense = grown;
        }
        self.dense[k] = v;
    }
}

/// Per-CPU evidence, in one trace, that scheduler events are missing: the
/// condition of every lost-event repair (here and in [`crate::idle`]).
///
/// A CPU whose sched_switch chain never breaks is fully traced: no analysis
/// repairs anything there, so a healthy kernel's real waits are never
/// dropped. A break is a switch-out of a task that no recorded switch put on
/// the CPU (the previous sched_switch there switched in someone else), which
/// is what `perf sched latency` counts as "context switch bugs"; a lost
/// sched_switch record always leaves one, and a kernel that does not trace
/// its switches out of idle on some CPU (this project's VM: CPU 1) leaves
/// one for every such switch. Lost-record counts are only known per trace
/// ([`schedscope_trace::Trace::lost`]), not per CPU, so they are not used
/// to mark a CPU: a lost sched_switch shows up as a break on its own CPU.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LossEvidence {
    /// Per CPU (index = CPU number).
    pub cpus: Vec<CpuLoss>,
}

/// One CPU's [`LossEvidence`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CpuLoss {
    /// Switch-outs of a task that the previous recorded sched_switch on this
    /// CPU did not switch in (perf's context-switch bugs).
    pub unswitched_outs: u64,
    /// Of those, the ones where that previous switch had left the CPU idle:
    /// a switch out of idle that was not traced.
    pub idle_exits_missing: u64,
}

impl LossEvidence {
    /// One pass over the sched_switch events of `trace` (time-sorted).
    pub fn of(trace: &Trace) -> LossEvidence {
        LossEvidence::scan(trace, |_, _, _| {})
    }

    /// [`LossEvidence::of`], also calling `each(cpu, ts, next_tid)` for
    /// every sched_switch (for an analysis that wants more of the same
    /// pass).
    pub(crate) fn scan(trace: &Trace, mut each: impl FnMut(usize, u64, Tid)) -> LossEvidence {
        let mut ev = LossEvidence::default();
        let mut cur: Vec<Option<Tid>> = Vec::new();
        for e in &trace.events {
            if let EventData::Switch {
                prev_tid, next_tid, ..
            } = e.data
            {
                let c = e.cpu.0 as usize;
                if c >= cur.len() {
                    cur.resize(c + 1, None);
                }
                ev.note(c, cur[c], prev_tid);
                cur[c] = Some(next_tid);
                each(c, e.ts.0, next_tid);
            }
        }
        ev
    }

    /// A sched_switch on CPU `c` switches out `prev` while the previous
    /// recorded switch there put `cur` (if any) on it.
    #[inline(always)]
    fn note(&mut self, c: usize, cur: Option<Tid>, prev: Tid) {
        let Some(cur) = cur.filter(|&cur| cur != prev) else {
            return;
        };
        if c >= self.cpus.len() {
            self.cpus.resize(c + 1, CpuLoss::default());
        }
        let l = &mut self.cpus[c];
        l.unswitched_outs += 1;
        l.idle_exits_missing += cur.is_idle() as u64;
    }

    /// Whether the trace shows loss on CPU `cpu` (repairs apply there).
    pub fn lossy(&self, cpu: u32) -> bool {
        self.cpu(cpu).unswitched_outs > 0
    }

    /// CPU `cpu`'s evidence (zero when it has none).
    pub fn cpu(&self, cpu: u32) -> CpuLoss {
        self.cpus.get(cpu as usize).copied().unwrap_or_default()
    }
}

/// Whether an event of this kind, other than sched_switch, is one whose
/// common_pid the build trusts as the task current on the event's CPU
/// (evidence for the repair, [`Builder::infer_switch_in_from_event`]).
/// Only kinds that every load keeps for a timeline (the scheduler events
/// it is built from, and fork/exit/exec, which the parser always keeps), so
/// that the repair does not depend on which sections were selected; never
/// events that fire inside a context switch, after sched_switch but
/// before the switch itself (tlb:tlb_flush on a task switch reports the
/// previous task).
pub(crate) fn names_current(data: &EventData) -> bool {
    NAMES_CURRENT.contains(data)
}

/// The kinds [`names_current`] is true of.
pub(crate) const NAMES_CURRENT: KindSet = KindSet::of(&[
    EventKind::Wakeup,
    EventKind::Migrate,
    EventKind::Fork,
    EventKind::Exit,
    EventKind::Exec,
]);

/// The name id of `sched:sched_stat_runtime` in `trace`, when it has any
/// such event.
pub(crate) fn stat_runtime_id(trace: &Trace) -> Option<schedscope_trace::NameId> {
    trace.name_id("sched:sched_stat_runtime")
}

/// The `pid` and `runtime` (ns) of a `sched:sched_stat_runtime` event
/// (`ev.name` is its id): typed by a perf.data load without raw fields,
/// else kept as raw fields (a text trace's `runtime=1200 [ns]` too).
/// `None` when they are not there.
pub(crate) fn stat_runtime(trace: &Trace, ev: &schedscope_trace::Event) -> Option<(Tid, u64)> {
    let i = match ev.data {
        EventData::StatRuntime { pid, runtime } => return Some((pid, runtime)),
        EventData::Other(Some(i)) => i,
        _ => return None,
    };
    let (mut pid, mut runtime) = (None, None);
    for (k, v) in trace.raw_args.get(i) {
        let v = v.trim();
        match k {
            "pid" => pid = v.parse::<i32>().ok(),
            "runtime" => {
                let end = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
                runtime = v[..end].parse::<u64>().ok();
            }
            _ => {}
        }
    }
    Some((Tid(pid?), runtime?))
}

/// How many events after the one that makes a repair the build reads for
/// the task's first `sched_stat_runtime` (a tick's worth of events on a
/// busy machine is a few thousand).
const STAT_LOOKAHEAD: usize = 1 << 16;

/// What a switch-out leaves a task in.
fn state_after_switch_out(prev_state: PrevState, exiting: bool) -> ThreadState {
    let b = prev_state.bits;
    if exiting || b & PrevState::DEAD != 0 {
        ThreadState::Dead
    } else if b == 0 {
        ThreadState::Runnable
    } else if b & PrevState::D != 0 {
        ThreadState::Blocked
    } else if b & (PrevState::S | PrevState::I) != 0 {
        ThreadState::Sleeping
    } else {
        ThreadState::Other
    }
}

/// What the first pass of [`Timeline::build`] learns: the threads in order
/// of first sight (the order of [`Timeline::threads`]), each one's latest
/// comm, and upper bounds of the intervals each thread and each CPU will
/// get, so that the second pass writes into vectors of their final size
/// instead of growing (and copying, and faulting in) them.
///
/// The bounds follow [`Builder`] step by step: every interval it pushes is
/// counted here by the event that may push it, under a condition that is
/// implied by the one the builder checks.
struct Census {
    index: TidIndex,
    threads: Vec<Slot>,
    /// Upper bound of the runs of each CPU.
    cpu_bound: Vec<usize>,
    /// Per CPU, who the last sched_switch put on it (`CpuTracker::current`).
    cpu_next: Vec<Option<Tid>>,
    /// Evidence of lost events, per CPU.
    loss: LossEvidence,
}

/// One thread in the [`Census`].
#[derive(Clone, Copy)]
struct Slot {
    tid: Tid,
    /// Latest comm seen in the events.
    comm: StrId,
    /// Upper bound of its intervals.
    bound: u32,
    /// Its last event was a wakeup: it is Running or Runnable, so another
    /// wakeup pushes nothing.
    woken: bool,
}

impl Census {
    fn new(nr_cpus: usize) -> Census {
        Census {
            index: TidIndex::default(),
            threads: Vec::new(),
            cpu_bound: vec![0; nr_cpus],
            cpu_next: vec![None; nr_cpus],
            loss: LossEvidence::default(),
        }
    }

    /// The slot of `tid`, registered on first sight with one interval of
    /// slack (the back-filled Running interval of a task first seen
    /// switched out).
    #[inline(always)]
    fn see(&mut self, tid: Tid, comm: StrId) -> &mut Slot {
        let i = match self.index.get(tid) {
            Some(i) => i,
            None => self.register(tid),
        };
        let slot = &mut self.threads[i];
        if comm != StrId(0) {
            slot.comm = comm;
        }
        slot
    }

    /// First sight of `tid` (out of line: once per thread).
    #[cold]
    #[inline(never)]
    fn register(&mut self, tid: Tid) -> usize {
        let i = self.threads.len();
        self.index.insert(tid, i);
        self.threads.push(Slot {
            tid,
            comm: StrId(0),
            bound: 1,
            woken: false,
        });
        i
    }

    #[inline]
    fn switch(&mut self, cpu: Cpu, prev: Tid, prev_comm: StrId, next: Tid, next_comm: StrId) {
        let c = cpu.0 as usize;
        if c >= self.cpu_bound.len() {
            self.cpu_bound.resize(c + 1, 0);
            self.cpu_next.resize(c + 1, None);
        }
        // An idle CPU switching out a task may infer a switch-in: one more
        // run on the CPU and one more interval of the task.
        let cur = self.cpu_next[c];
        self.loss.note(c, cur, prev);
        let from_idle = !prev.is_idle() && cur == Some(Tid::IDLE);
        self.cpu_bound[c] += 1 + from_idle as usize;
        self.cpu_next[c] = Some(next);
        if let Some(cur) = cur.filter(|&cur| cur != prev && !cur.is_idle()) {
            // A lost switch-out may leave `cur` Unknown.
            if let Some(k) = self.index.get(cur) {
                let slot = &mut self.threads[k];
                slot.bound = slot.bound.saturating_add(1);
                slot.woken = false;
            }
        }
        if !prev.is_idle() {
            let slot = self.see(prev, prev_comm);
            slot.bound = slot.bound.saturating_add(1 + from_idle as u32);
            slot.woken = false;
        }
        if !next.is_idle() {
            let slot = self.see(next, next_comm);
            slot.bound = slot.bound.saturating_add(1);
            slot.woken = false;
        }
    }

    #[inline]
    fn wakeup(&mut self, tid: Tid, comm: StrId) {
        if tid.is_idle() {
            return;
        }
        let slot = self.see(tid, comm);
        if !slot.woken {
            slot.bound = slot.bound.saturating_add(1);
            slot.woken = true;
        }
    }

    /// A migration (at most one interval, Running/Runnable stays so) or an
    /// exit (at most one, and it may end the Running/Runnable state that
    /// makes a later wakeup a no-op).
    #[inline]
    fn other(&mut self, tid: Tid, comm: StrId, exit: bool) {
        if tid.is_idle() {
            return;
        }
        let slot = self.see(tid, comm);
        slot.bound = slot.bound.saturating_add(1);
        slot.woken &= !exit;
    }

    /// An event other than sched_switch on `cpu` names `tid` as current:
    /// on a CPU that the last switch left idle, the build may infer its
    /// switch-in (one more run, one more interval of `tid`).
    #[inline]
    fn names_current(&mut self, cpu: Cpu, tid: Tid) {
        let c = cpu.0 as usize;
        if tid.is_idle() || self.cpu_next.get(c) != Some(&Some(Tid::IDLE)) {
            return;
        }
        self.cpu_bound[c] += 1;
        let slot = self.see(tid, StrId(0));
        slot.bound = slot.bound.saturating_add(1);
        slot.woken = false;
    }

    /// Pass 1 over the events.
    fn of(trace: &Trace) -> Census {
        let mut s = Census::new(trace.nr_cpus as usize);
        let stat = stat_runtime_id(trace);
        for ev in &trace.events {
            if names_current(&ev.data) || (stat.is_some() && Some(ev.name) == stat) {
                s.names_current(ev.cpu, ev.tid);
            }
            match ev.data {
                EventData::Switch {
                    prev_tid,
                    prev_comm,
                    next_tid,
                    next_comm,
                    ..
                } => s.switch(ev.cpu, prev_tid, prev_comm, next_tid, next_comm),
                EventData::Wakeup { tid, comm, .. } => s.wakeup(tid, comm),
                EventData::Migrate { tid, comm, .. } => s.other(tid, comm, false),
                EventData::Fork {
                    child_tid,
                    child_comm,
                    ..
                } if !child_tid.is_idle() => {
                    s.see(child_tid, child_comm);
                }
                EventData::Exit { tid, comm } => s.other(tid, comm, true),
                _ => {}
            }
        }
        s
    }
}

/// Per-CPU bookkeeping during the build.
#[derive(Clone, Copy, Default)]
struct CpuTracker {
    /// Time of the previous sched_switch on this CPU.
    last_switch: Option<Ts>,
    /// Who that switch put on the CPU.
    current: Option<Tid>,
}

/// Per-thread state of the second pass, apart from the intervals so that
/// every decision reads a small, cache-resident table: the open interval
/// lives here until a transition closes it, and only then is it appended to
/// the thread's vector (written once, in order, and not read back).
#[derive(Clone, Copy, Default)]
struct Hot {
    /// The open (last) interval, if any.
    open: Option<StateInterval>,
    /// sched_process_exit seen; the next switch-out makes it Dead.
    exiting: bool,
    /// Its region of the interval store: first slot, slots written, size.
    base: usize,
    len: u32,
    cap: u32,
    /// Its intervals moved to [`Builder::spill`] (the region was full).
    spilled: bool,
}

/// The mutable state of [`Timeline::build`]'s second pass.
struct Builder {
    tl: Timeline,
    /// Per thread, by index.
    hot: Vec<Hot>,
    /// The interval store: every thread's region, as the census sized it
    /// (in words; see [`Store`]).
    store: Vec<Word>,
    /// Intervals of threads whose region was full (never, when the census
    /// bounds hold), by thread index.
    spill: schedscope_trace::hash::FxMap<usize, Vec<StateInterval>>,
    cpus: Vec<CpuTracker>,
    /// Interval or run pushes that found their vector full (the census
    /// bound was too small); tests check that it stays 0.
    regrown: u64,
    /// The trace's sched_stat_runtime name id, if it has any.
    stat: Option<schedscope_trace::NameId>,
    /// Per CPU: the last power:cpu_idle exit not followed by an idle entry.
    idle_exit: Vec<Option<Ts>>,
    /// Per CPU: the times of the trace's loss records there.
    marks: Vec<Vec<u64>>,
}

/// Where a repair puts a lost switch-in (see [`InferredSwitchIn`]).
#[derive(Clone, Copy)]
struct Placement {
    estimate: Ts,
    earliest: Ts,
    latest: Ts,
    evidence: Evidence,
}

impl Builder {
    /// Index of `tid`'s timeline. The census registered every thread the
    /// events name; a thread it missed is created here all the same.
    #[inline(always)]
    fn idx(&mut self, tid: Tid) -> usize {
        match self.tl.index.get(tid) {
            Some(i) => i,
            None => self.add_thread(tid),
        }
    }

    /// A thread the census did not register (out of line: never taken
    /// when the census and this pass agree).
    #[cold]
    #[inline(never)]
    fn add_thread(&mut self, tid: Tid) -> usize {
        let i = self.tl.threads.len();
        self.tl.index.insert(tid, i);
        self.tl.threads.push(ThreadTimeline {
            tid,
            ..ThreadTimeline::default()
        });
        self.hot.push(Hot::default());
        i
    }

    /// The open interval of thread `i`, if any.
    #[inline]
    fn open(&self, i: usize) -> Option<&StateInterval> {
        self.hot[i].open.as_ref()
    }

    /// Close thread `i`'s open interval at `next.ts` and open `next`.
    #[inline(always)]
    fn transition(&mut self, i: usize, next: StateInterval) {
        let hot = &mut self.hot[i];
        let Some(mut last) = hot.open.replace(next) else {
            return;
        };
        if last.ts == next.ts {
            // A zero-length interval: drop it, and reopen the one before
            // when it is the same state (e.g. woken and run at one instant).
            if let Some(prev) = self.last_interval(i) {
                if prev.end == Some(next.ts)
                    && prev.state == next.state
                    && prev.cpu == next.cpu
                    && prev.preempted == next.preempted
                    && prev.waker == next.waker
                {
                    self.pop_interval(i);
                    self.hot[i].open = Some(StateInterval { end: None, ..prev });
                }
            }
            return;
        }
        last.end = Some(next.ts);
        self.push_interval(i, last);
    }

    /// The last interval written for thread `i`.
    #[inline(always)]
    fn last_interval(&self, i: usize) -> Option<StateInterval> {
        let h = &self.hot[i];
        if h.spilled {
            return self.spill.get(&i).and_then(|v| v.last().copied());
        }
        // SAFETY: the first `len` slots of the thread's region are written.
        (h.len > 0).then(|| unsafe {
            words_as_slots_ref::<StateInterval>(&self.store)[h.base + h.len as usize - 1]
                .assume_init()
        })
    }

    /// Drop the last interval written for thread `i`.
    #[inline(always)]
    fn pop_interval(&mut self, i: usize) {
        let h = &mut self.hot[i];
        if h.spilled {
            self.spill.get_mut(&i).and_then(|v| v.pop());
        } else {
            h.len -= 1;
        }
    }

    /// Append `iv` to thread `i`'s intervals.
    #[inline(always)]
    fn push_interval(&mut self, i: usize, iv: StateInterval) {
        let h = &mut self.hot[i];
        if !h.spilled && h.len < h.cap {
            let slots = words_as_slots(&mut self.store);
            let at = h.base + h.len as usize;
            slots[at] = MaybeUninit::new(iv);
            h.len += 1;
            // The thread's next interval goes to the next slot, many events
            // from now: ask for its cache lines now, so that the write then
            // does not wait for memory (the stores' misses were most of
            // this pass).
            if let Some(next) = slots.get(at + 1) {
                prefetch(next);
            }
        } else {
            self.spill_push(i, iv);
        }
    }

    /// [`Builder::push_interval`] when the region is full: move the
    /// thread's intervals out of the store (out of line: never taken when
    /// the census bounds hold).
    #[cold]
    #[inline(never)]
    fn spill_push(&mut self, i: usize, iv: StateInterval) {
        self.regrown += 1;
        let h = &mut self.hot[i];
        if !h.spilled {
            h.spilled = true;
            // SAFETY: the first `len` slots of the region are written.
            let moved = words_as_slots_ref::<StateInterval>(&self.store)
                [h.base..h.base + h.len as usize]
                .iter()
                .map(|s| unsafe { s.assume_init() })
                .collect();
            self.spill.insert(i, moved);
        }
        self.spill.entry(i).or_default().push(iv);
    }

    /// Append a run to CPU slot `c`.
    #[inline]
    fn push_run(&mut self, c: usize, run: CpuRun) {
        let runs = &mut self.tl.cpus[c];
        self.regrown += (runs.len() == runs.capacity()) as u64;
        runs.push(run);
    }

    fn cpu_slot(&mut self, cpu: Cpu) -> usize {
        let c = cpu.0 as usize;
        if c >= self.cpus.len() {
            self.cpus.resize(c + 1, CpuTracker::default());
            self.tl.cpus.resize(c + 1, Vec::new());
        }
        c
    }

    fn switch(&mut self, ts: Ts, cpu: Cpu, prev: Tid, prev_state: PrevState, next: Tid) {
        let c = self.cpu_slot(cpu);
        self.infer_switch_in_from_idle(ts, c, cpu, prev);
        let last = self.cpus[c];
        // Per-CPU run intervals.
        if let Some(run) = self.tl.cpus[c].last_mut() {
            if run.end.is_none() {
                run.end = Some(ts);
            }
        }
        if let Some(cur) = last.current.filter(|&cur| cur != prev) {
            // The CPU said `cur` ran, yet `prev` is switched out: the switch
            // that took `cur` off was lost. Its state since is unknown; do
            // not leave it Running here forever.
            self.tl.anomalies += 1;
            if let Some(start) = last.last_switch {
                self.tl.unknown.push(UnknownStretch {
                    cpu,
                    start,
                    end: ts,
                });
            }
            if !cur.is_idle() {
                if let Some(i) = self.tl.index.get(cur) {
                    let stale = self
                        .open(i)
                        .is_some_and(|iv| iv.state == ThreadState::Running && iv.cpu == Some(cpu));
                    if stale {
                        self.transition(
                            i,
                            StateInterval {
                                ts,
                                end: None,
                                state: ThreadState::Unknown,
                                cpu: None,
                                preempted: false,
                                waker: None,
                            },
                        );
                    }
                }
            }
        }
        self.push_run(
            c,
            CpuRun {
                ts,
                end: None,
                tid: next,
            },
        );
        self.cpus[c] = CpuTracker {
            last_switch: Some(ts),
            current: Some(next),
        };

        // The outgoing task.
        if !prev.is_idle() {
            let i = self.idx(prev);
            match self.open(i) {
                Some(iv) if iv.state == ThreadState::Running && iv.cpu == Some(cpu) => {}
                Some(_) => self.tl.anomalies += 1,
                None => {
                    // First sight: it ran since the CPU's previous switch, if known.
                    if let Some(t0) = last.last_switch {
                        self.hot[i].open = Some(StateInterval {
                            ts: t0,
                            end: None,
                            state: ThreadState::Running,
                            cpu: Some(cpu),
                            preempted: false,
                            waker: None,
                        });
                    }
                }
            }
            let state = state_after_switch_out(prev_state, self.hot[i].exiting);
            let runnable = state == ThreadState::Runnable;
            self.transition(
                i,
                StateInterval {
                    ts,
                    end: None,
                    state,
                    cpu: runnable.then_some(cpu),
                    preempted: runnable,
                    waker: None,
                },
            );
            if state == ThreadState::Dead {
                self.hot[i].exiting = false;
            }
        }

        // The incoming task.
        if !next.is_idle() {
            let i = self.idx(next);
            if let Some(iv) = self.open(i) {
                if iv.state == ThreadState::Running {
                    // Still running elsewhere: its switch-out was lost.
                    self.tl.anomalies += 1;
                }
            }
            self.transition(
                i,
                StateInterval {
                    ts,
                    end: None,
                    state: ThreadState::Running,
                    cpu: Some(cpu),
                    preempted: false,
                    waker: None,
                },
            );
        }
    }

    /// An idle CPU switches out `prev`, which it was never seen switching
    /// in: if `prev` was Runnable, it was switched in (untraced) when both the
    /// CPU was idle and `prev` runnable. Split the idle run there and make
    /// `prev` Running from then on, so that the switch-out below is consistent.
    fn infer_switch_in_from_idle(&mut self, ts: Ts, c: usize, cpu: Cpu, prev: Tid) {
        let tracker = self.cpus[c];
        if prev.is_idle() || tracker.current != Some(Tid::IDLE) {
            return;
        }
        let Some(idle_since) = tracker.last_switch else {
            return;
        };
        let Some(i) = self.tl.index.get(prev) else {
            return;
        };
        let Some(iv) = self.open(i).copied() else {
            return;
        };
        if iv.state != ThreadState::Runnable {
            return;
        }
        let t_in = iv.ts.max(idle_since);
        if t_in > ts {
            return;
        }
        let at = self.place(c, t_in, ts, Evidence::Rule, None);
        self.switch_in_inferred(c, cpu, i, prev, at);
    }

    /// Place a lost switch-in on CPU slot `c` that the rule puts at
    /// `rule` (with the evidence `kind`, [`Evidence::Rule`] or
    /// [`Evidence::TaskEvent`]), known to precede `proof` (the first event
    /// proving the task ran there): from the task's first
    /// sched_stat_runtime (`stat`, its switch-in time), else the CPU's last
    /// idle exit, else the rule. `earliest` is the rule's time (the CPU
    /// idle since, the task runnable since), or the CPU's idle exit after
    /// it; `latest` is `proof`.
    fn place(&self, c: usize, rule: Ts, proof: Ts, kind: Evidence, stat: Option<Ts>) -> Placement {
        // Without a recorded wakeup the rule's time is the proof itself:
        // the task may have run since the CPU went idle.
        let earliest = match kind {
            Evidence::TaskEvent => self.cpus[c].last_switch.unwrap_or(rule).min(rule),
            _ => rule,
        };
        // A loss record since the CPU went idle: the runtime may count
        // from a lost update, not from the switch-in; it only bounds it.
        let marked = self.marks.get(c).is_some_and(|m| {
            let k = m.partition_point(|&x| x <= earliest.0);
            m.get(k).is_some_and(|&x| x <= proof.0)
        });
        let proof = match stat {
            Some(t) if marked => t.clamp(earliest, proof),
            _ => proof,
        };
        if let Some(t) = stat.filter(|_| !marked) {
            let t = t.clamp(earliest, proof);
            return Placement {
                estimate: t,
                earliest: t,
                latest: t,
                evidence: Evidence::StatRuntime,
            };
        }
        if let Some(x) = self.idle_exit.get(c).copied().flatten() {
            if x >= earliest && x <= proof {
                return Placement {
                    estimate: x,
                    earliest: x,
                    latest: proof,
                    evidence: Evidence::CpuIdle,
                };
            }
        }
        Placement {
            estimate: rule,
            earliest,
            latest: proof,
            evidence: kind,
        }
    }

    /// The switch-in time that `tid`'s first sched_stat_runtime on CPU
    /// `cpu` from event `k` on proves (`ts - runtime`), before the CPU's
    /// next sched_switch; `None` without one (or without such events).
    fn stat_switch_in(&self, trace: &Trace, k: usize, cpu: Cpu, tid: Tid) -> Option<Ts> {
        let stat = self.stat?;
        for ev in trace.events.get(k..)?.iter().take(STAT_LOOKAHEAD) {
            if ev.cpu != cpu {
                continue;
            }
            if matches!(ev.data, EventData::Switch { .. }) {
                return None;
            }
            if ev.name == stat && ev.tid == tid {
                if let Some((pid, runtime)) = stat_runtime(trace, ev) {
                    if pid == tid {
                        return Some(Ts(ev.ts.0.saturating_sub(runtime)));
                    }
                }
            }
        }
        None
    }

    /// A power:cpu_idle event on CPU `cpu` at `ts`.
    fn cpu_idle(&mut self, ts: Ts, cpu: Cpu, state: u32) {
        let c = cpu.0 as usize;
        if c >= self.idle_exit.len() {
            self.idle_exit.resize(c + 1, None);
        }
        self.idle_exit[c] = (state == u32::MAX).then_some(ts);
    }

    /// An event on CPU `cpu` at `ts` names `tid` as the task current there
    /// (its common_pid) while the CPU is idle since its last recorded
    /// switch, and the trace shows loss on that CPU: `tid`'s switch-in was
    /// not traced. It ran from the later of "idle since" and "runnable
    /// since" when it was Runnable (as when an idle CPU switches it out),
    /// else (its wakeup was not traced either) from this event on, the
    /// first instant the trace proves. Never on a CPU without evidence of
    /// loss (fully traced: nothing is repaired there).
    fn infer_switch_in_from_event(&mut self, trace: &Trace, k: usize, ts: Ts, cpu: Cpu, tid: Tid) {
        let c = cpu.0 as usize;
        let Some(&tracker) = self.cpus.get(c) else {
            return;
        };
        if tid.is_idle() || tracker.current != Some(Tid::IDLE) || !self.tl.loss.lossy(cpu.0) {
            return;
        }
        let Some(idle_since) = tracker.last_switch else {
            return;
        };
        let i = self.idx(tid);
        let (t_in, kind) = match self.open(i) {
            Some(iv) if iv.state == ThreadState::Runnable => {
                (iv.ts.max(idle_since), Evidence::Rule)
            }
            _ => (ts, Evidence::TaskEvent),
        };
        if t_in > ts {
            return;
        }
        let stat = self.stat_switch_in(trace, k, cpu, tid);
        let at = self.place(c, t_in, ts, kind, stat);
        self.switch_in_inferred(c, cpu, i, tid, at);
    }

    /// The repair's result: idle CPU slot `c` (CPU `cpu`) ran `tid`
    /// (thread `i`) from `t_in` on, a switch-in the trace lacks.
    fn switch_in_inferred(&mut self, c: usize, cpu: Cpu, i: usize, prev: Tid, at: Placement) {
        let t_in = at.estimate;
        if let Some(run) = self.tl.cpus[c].last_mut() {
            if run.tid.is_idle() && run.end.is_none() {
                if run.ts == t_in {
                    run.tid = prev;
                } else {
                    run.end = Some(t_in);
                    self.push_run(
                        c,
                        CpuRun {
                            ts: t_in,
                            end: None,
                            tid: prev,
                        },
                    );
                }
            }
        }
        self.transition(
            i,
            StateInterval {
                ts: t_in,
                end: None,
                state: ThreadState::Running,
                cpu: Some(cpu),
                preempted: false,
                waker: None,
            },
        );
        self.cpus[c].current = Some(prev);
        self.tl.inferred.push(InferredSwitchIn {
            ts: t_in,
            cpu,
            tid: prev,
            earliest: at.earliest,
            latest: at.latest,
            evidence: at.evidence,
        });
        self.tl.inferred_switch_ins += 1;
        if c >= self.tl.inferred_switch_ins_by_cpu.len() {
            self.tl.inferred_switch_ins_by_cpu.resize(c + 1, 0);
        }
        self.tl.inferred_switch_ins_by_cpu[c] += 1;
        self.tl.anomalies += 1;
    }

    fn wakeup(&mut self, ts: Ts, waker: Tid, tid: Tid, target: Cpu) {
        if tid.is_idle() {
            return;
        }
        let i = self.idx(tid);
        if let Some(iv) = self.open(i) {
            if matches!(iv.state, ThreadState::Running | ThreadState::Runnable) {
                return;
            }
        }
        self.transition(
            i,
            StateInterval {
                ts,
                end: None,
                state: ThreadState::Runnable,
                cpu: Some(target),
                preempted: false,
                waker: Some(waker),
            },
        );
    }

    fn migrate(&mut self, ts: Ts, tid: Tid, dest: Cpu) {
        if tid.is_idle() {
            return;
        }
        let i = self.idx(tid);
        if let Some(iv) = self.open(i).copied() {
            if iv.state == ThreadState::Runnable && iv.cpu != Some(dest) {
                self.transition(
                    i,
                    StateInterval {
                        ts,
                        cpu: Some(dest),
                        ..iv
                    },
                );
            }
        }
    }

    fn exit(&mut self, ts: Ts, tid: Tid) {
        if tid.is_idle() {
            return;
        }
        let i = self.idx(tid);
        match self.open(i).map(|iv| iv.state) {
            Some(ThreadState::Running) => self.hot[i].exiting = true,
            Some(ThreadState::Dead) => {}
            _ => {
                // Not known to run: it cannot be switched out later, so it is dead now.
                self.transition(
                    i,
                    StateInterval {
                        ts,
                        end: None,
                        state: ThreadState::Dead,
                        cpu: None,
                        preempted: false,
                        waker: None,
                    },
                );
            }
        }
    }
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
        let threads = census
            .threads
            .iter()
            .map(|s| ThreadTimeline {
                tid: s.tid,
                ..ThreadTimeline::default()
            })
            .collect::<Vec<_>>();
        // One store for every thread's intervals, each thread a region.
        let mut hot = Vec::with_capacity(census.threads.len());
        let mut total = 0usize;
        for s in &census.threads {
            hot.push(Hot {
                base: total,
                cap: if squeeze { s.bound.min(2) } else { s.bound },
                ..Hot::default()
            });
            total += s.bound as usize;
        }
        // (memory the decoder is done with, when there is enough)
        let words = total * INTERVAL_WORDS;
        let mut store = trace
            .spare
            .take(words)
            .unwrap_or_else(|| schedscope_trace::mem::vec_with_huge_pages(words));
        store.resize(words, MaybeUninit::uninit());
        let cpus = census
            .cpu_bound
            .iter()
            .map(|&n| schedscope_trace::mem::vec_with_huge_pages(n))
            .collect::<Vec<_>>();
        let mut b = Builder {
            hot,
            store,
            spill: Default::default(),
            cpus: vec![CpuTracker::default(); cpus.len()],
            tl: Timeline {
                start: trace.start(),
                end: trace.end(),
                threads,
                cpus,
                index: census.index,
                inferred_switch_ins_by_cpu: vec![0; census.cpu_bound.len()],
                loss: census.loss,
                built: true,
                ..Timeline::default()
            },
            regrown: 0,
            stat: stat_runtime_id(trace),
            idle_exit: Vec::new(),
            marks: Vec::new(),
        };
        for m in &trace.loss_marks {
            let c = m.cpu as usize;
            if c >= b.marks.len() {
                b.marks.resize(c + 1, Vec::new());
            }
            b.marks[c].push(m.ts);
        }
        // Pass 2: the state machine.
        for (k, ev) in trace.events.iter().enumerate() {
            if names_current(&ev.data) || (b.stat.is_some() && Some(ev.name) == b.stat) {
                b.infer_switch_in_from_event(trace, k, ev.ts, ev.cpu, ev.tid);
            }
            match ev.data {
                EventData::Switch {
                    prev_tid,
                    prev_state,
                    next_tid,
                    ..
                } => b.switch(ev.ts, ev.cpu, prev_tid, prev_state, next_tid),
                EventData::Wakeup {
                    tid, target_cpu, ..
                } => b.wakeup(ev.ts, ev.tid, tid, target_cpu),
                EventData::Migrate { tid, dest_cpu, .. } => b.migrate(ev.ts, tid, dest_cpu),
                EventData::Exit { tid, .. } => b.exit(ev.ts, tid),
                EventData::CpuIdle { state, .. } => b.cpu_idle(ev.ts, ev.cpu, state),
                _ => {}
            }
        }
        for i in 0..b.hot.len() {
            if let Some(open) = b.hot[i].open {
                b.push_interval(i, open);
            }
        }
        let Builder {
            mut tl,
            hot,
            store,
            mut spill,
            regrown,
            ..
        } = b;
        let store = Arc::new(Store(store));
        for (i, (t, h)) in tl.threads.iter_mut().zip(&hot).enumerate() {
            t.intervals = match spill.remove(&i) {
                Some(v) => Intervals::from(v),
                None => Intervals {
                    store: Arc::clone(&store),
                    start: h.base,
                    end: h.base + h.len as usize,
                },
            };
            let task = trace.tasks.by_tid(t.tid);
            t.tgid = task.and_then(|k| k.tgid);
            t.comm = match task {
                Some(k) if !k.comm.is_empty() => k.comm.clone(),
                _ => {
                    let comm = census.threads.get(i).map_or(StrId(0), |s| s.comm);
                    trace.strings.get(comm).to_string()
                }
            };
        }
        for (i, r) in tl.inferred.iter().enumerate() {
            let c = r.cpu.0 as usize;
            if c >= tl.inferred_by_cpu.len() {
                tl.inferred_by_cpu.resize(c + 1, Vec::new());
            }
            tl.inferred_by_cpu[c].push(i as u32);
        }
        for on in &mut tl.inferred_by_cpu {
            on.sort_by_key(|&i| tl.inferred[i as usize].ts);
        }
        (tl, regrown)
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
        match i.checked_sub(1).map(|i| &t.intervals[i]) {
            Some(iv) if iv.end.is_none_or(|e| ts < e) => iv.state,
            _ => ThreadState::Unknown,
        }
    }
}

/// Hand-built traces for unit tests (shared with the latency tests).
#[cfg(test)]
pub(crate) mod test_trace {
    use super::Timeline;
    use schedscope_trace::{
        Cpu, Event, EventData, PrevState, StackId, StrId, Tid, Trace, TraceFormat, Ts, WakeKind,
    };

    /// A hand-built trace: events appended in time order.
    pub(crate) struct T(pub(crate) Trace);

    impl T {
        pub(crate) fn new() -> T {
            T(Trace::new("test", TraceFormat::FtraceText))
        }
        pub(crate) fn push(&mut self, ts: u64, cpu: u32, tid: i32, data: EventData) -> &mut T {
            let name = match data {
                EventData::Switch { .. } => "sched:sched_switch",
                EventData::Wakeup {
                    kind: WakeKind::Waking,
                    ..
                } => "sched:sched_waking",
                EventData::Wakeup {
                    kind: WakeKind::Wakeup,
                    ..
                } => "sched:sched_wakeup",
                EventData::Wakeup { .. } => "sched:sched_wakeup_new",
                EventData::Migrate { .. } => "sched:sched_migrate_task",
                EventData::Exit { .. } => "sched:sched_process_exit",
                _ => "other:other",
            };
            *self.0.events_by_name.entry(name.to_string()).or_insert(0) += 1;
            let name = self.0.intern_name(name);
            self.0.events.push(Event {
                ts: Ts(ts),
                cpu: Cpu(cpu),
                tid: Tid(tid),
                name,
                stack: StackId::NONE,
                data,
            });
            self
        }
        pub(crate) fn switch(
            &mut self,
            ts: u64,
            cpu: u32,
            prev: i32,
            state: &str,
            next: i32,
        ) -> &mut T {
            let prev_comm = self.0.strings.intern(&format!("t{prev}"));
            let next_comm = self.0.strings.intern(&format!("t{next}"));
            let prev_state = PrevState::parse_text(state).unwrap();
            self.push(
                ts,
                cpu,
                prev,
                EventData::Switch {
                    prev_tid: Tid(prev),
                    prev_prio: 120,
                    prev_state,
                    prev_comm,
                    next_tid: Tid(next),
                    next_prio: 120,
                    next_comm,
                },
            )
        }
        pub(crate) fn wake(
            &mut self,
            ts: u64,
            cpu: u32,
            waker: i32,
            kind: WakeKind,
            tid: i32,
            target: u32,
        ) -> &mut T {
            self.push(
                ts,
                cpu,
                waker,
                EventData::Wakeup {
                    kind,
                    tid: Tid(tid),
                    comm: StrId(0),
                    prio: 120,
                    target_cpu: Cpu(target),
                },
            )
        }
        pub(crate) fn migrate(
            &mut self,
            ts: u64,
            cpu: u32,
            tid: i32,
            from: u32,
            to: u32,
        ) -> &mut T {
            self.push(
                ts,
                cpu,
                0,
                EventData::Migrate {
                    tid: Tid(tid),
                    comm: StrId(0),
                    orig_cpu: Cpu(from),
                    dest_cpu: Cpu(to),
                },
            )
        }
        pub(crate) fn exit(&mut self, ts: u64, cpu: u32, tid: i32) -> &mut T {
            self.push(
                ts,
                cpu,
                tid,
                EventData::Exit {
                    tid: Tid(tid),
                    comm: StrId(0),
                },
            )
        }
        /// The timeline, checking that the census sized every vector.
        pub(crate) fn build(&mut self) -> Timeline {
            self.0.finish();
            let (tl, regrown) = Timeline::build_counting(&self.0, false);
            assert_eq!(regrown, 0, "census bound too small");
            tl
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_trace::T;
    use super::*;
    use schedscope_trace::WakeKind;

    /// (start, end, state, cpu) of each interval of `tid`.
    fn spans(tl: &Timeline, tid: i32) -> Vec<(u64, Option<u64>, ThreadState, Option<u32>)> {
        tl.thread(Tid(tid))
            .unwrap()
            .intervals
            .iter()
            .map(|iv| (iv.ts.0, iv.end.map(|e| e.0), iv.state, iv.cpu.map(|c| c.0)))
            .collect()
    }

    fn assert_contiguous(tl: &Timeline) {
        for t in &tl.threads {
            for w in t.intervals.windows(2) {
                assert_eq!(w[0].end, Some(w[1].ts), "tid {} not contiguous", t.tid);
                assert!(w[0].ts < w[1].ts, "tid {} has an empty interval", t.tid);
            }
            if let Some(last) = t.intervals.last() {
                assert_eq!(last.end, None);
            }
        }
    }

    use ThreadState::*;

    #[test]
    fn wakeup_run_sleep_cycle() {
        let tl = T::new()
            .switch(100, 0, 0, "R", 5) // 5 first seen running on cpu 0
            .switch(200, 0, 5, "S", 0)
            .wake(300, 1, 7, WakeKind::Waking, 5, 0)
            .wake(305, 0, 7, WakeKind::Wakeup, 5, 0) // second of the pair: ignored
            .switch(400, 0, 0, "R", 5)
            .switch(450, 0, 5, "D", 0)
            .build();
        assert_eq!(
            spans(&tl, 5),
            vec![
                (100, Some(200), Running, Some(0)),
                (200, Some(300), Sleeping, None),
                (300, Some(400), Runnable, Some(0)),
                (400, Some(450), Running, Some(0)),
                (450, None, Blocked, None),
            ]
        );
        let woken = &tl.thread(Tid(5)).unwrap().intervals[2];
        assert_eq!(woken.waker, Some(Tid(7)));
        assert!(!woken.preempted);
        assert_eq!(tl.anomalies, 0);
        assert_contiguous(&tl);
        assert_eq!(tl.state_at(Tid(5), Ts(299)), Sleeping);
        assert_eq!(tl.state_at(Tid(5), Ts(300)), Runnable);
        assert_eq!(tl.state_at(Tid(5), Ts(99)), Unknown);
        assert_eq!(tl.state_at(Tid(5), Ts(10_000)), Blocked);
    }

    #[test]
    fn wakeup_without_waking_uses_wakeup_and_its_waker() {
        let tl = T::new()
            .switch(10, 0, 0, "R", 5)
            .switch(20, 0, 5, "S", 0)
            .wake(30, 1, 9, WakeKind::Wakeup, 5, 1)
            .switch(40, 1, 9, "R+", 5)
            .build();
        let ivs = &tl.thread(Tid(5)).unwrap().intervals;
        assert_eq!(ivs[2].state, Runnable);
        assert_eq!(ivs[2].waker, Some(Tid(9)));
        assert_eq!(ivs[2].cpu, Some(Cpu(1)));
        // 9 was preempted: Runnable, preempted, on cpu 1, no waker.
        let nine = &tl.thread(Tid(9)).unwrap().intervals;
        assert_eq!(nine.len(), 1, "{nine:?}"); // no earlier switch on cpu 1: Unknown before
        assert_eq!(nine[0].state, Runnable);
        assert!(nine[0].preempted);
        assert_eq!(nine[0].waker, None);
        assert_eq!(nine[0].cpu, Some(Cpu(1)));
    }

    #[test]
    fn first_switch_out_backfills_from_cpu_previous_switch_only() {
        // cpu 0: switch at 10 puts 3 on; at 50, 4 (never seen switched in) is switched out.
        let tl = T::new()
            .switch(10, 0, 0, "R", 3)
            .switch(20, 1, 8, "S", 0) // 8: no earlier switch on cpu 1 -> Unknown before
            .switch(50, 0, 4, "S", 0)
            .build();
        assert_eq!(spans(&tl, 8), vec![(20, None, Sleeping, None)]);
        assert_eq!(
            spans(&tl, 4),
            vec![(10, Some(50), Running, Some(0)), (50, None, Sleeping, None)]
        );
        // The CPU claimed 3 was running, not 4: one anomaly, and 3 is no
        // longer taken to run there.
        assert_eq!(tl.anomalies, 1);
        assert_eq!(
            spans(&tl, 3),
            vec![(10, Some(50), Running, Some(0)), (50, None, Unknown, None)]
        );
        assert_eq!(
            tl.cpus[0]
                .iter()
                .map(|r| (r.ts.0, r.tid.0))
                .collect::<Vec<_>>(),
            vec![(10, 3), (50, 0)]
        );
        assert_eq!(tl.cpus[0][0].end, Some(Ts(50)));
        assert_eq!(tl.cpus[1].len(), 1);
        assert!(tl.thread(Tid(0)).is_none(), "idle is not a thread");
    }

    #[test]
    fn untraced_switch_in_from_idle_is_inferred_at_the_wakeup() {
        // cpu 1 goes idle at 200; 5 is woken onto it at 300; the switch
        // idle -> 5 is not in the trace; at 500 cpu 1 switches 5 out.
        let tl = T::new()
            .switch(100, 1, 0, "R", 5)
            .switch(200, 1, 5, "S", 0)
            .wake(300, 0, 7, WakeKind::Wakeup, 5, 1)
            .switch(500, 1, 5, "S", 0)
            .build();
        assert_eq!(
            spans(&tl, 5),
            vec![
                (100, Some(200), Running, Some(1)),
                (200, Some(300), Sleeping, None),
                (300, Some(500), Running, Some(1)),
                (500, None, Sleeping, None),
            ]
        );
        assert_eq!(
            tl.cpus[1]
                .iter()
                .map(|r| (r.ts.0, r.end.map(|e| e.0), r.tid.0))
                .collect::<Vec<_>>(),
            vec![
                (100, Some(200), 5),
                (200, Some(300), 0),
                (300, Some(500), 5),
                (500, None, 0)
            ]
        );
        assert_eq!((tl.inferred_switch_ins, tl.anomalies), (1, 1));
        // The repaired run is found by where it starts; recorded ones not.
        let r = tl.repair_at(Cpu(1), Tid(5), Ts(300));
        assert_eq!(r.map(|r| (r.ts.0, r.tid.0)), Some((300, 5)));
        assert!(tl.repair_at(Cpu(1), Tid(5), Ts(100)).is_none());
        assert!(tl.repair_at(Cpu(1), Tid(6), Ts(300)).is_none());
        assert!(tl.repair_at(Cpu(0), Tid(5), Ts(300)).is_none());
        assert_contiguous(&tl);
    }

    #[test]
    fn switch_out_of_a_sleeping_task_from_idle_is_not_inferred() {
        // 5 was never woken: nothing says when it ran, so nothing is invented.
        let tl = T::new()
            .switch(100, 1, 0, "R", 5)
            .switch(200, 1, 5, "S", 0)
            .switch(500, 1, 5, "S", 0)
            .build();
        assert_eq!(tl.inferred_switch_ins, 0);
        assert_eq!(tl.anomalies, 2);
        assert_eq!(tl.state_at(Tid(5), Ts(400)), Sleeping);
    }

    #[test]
    fn migration_splits_runnable_interval() {
        let tl = T::new()
            .switch(10, 0, 0, "R", 5)
            .switch(20, 0, 5, "R+", 6)
            .migrate(25, 1, 5, 0, 1)
            .switch(30, 1, 0, "R", 5)
            .migrate(35, 1, 6, 0, 1) // 6 is Running: ignored
            .build();
        assert_eq!(
            spans(&tl, 5),
            vec![
                (10, Some(20), Running, Some(0)),
                (20, Some(25), Runnable, Some(0)),
                (25, Some(30), Runnable, Some(1)),
                (30, None, Running, Some(1)),
            ]
        );
        assert!(tl.thread(Tid(5)).unwrap().intervals[2].preempted);
        assert_eq!(spans(&tl, 6), vec![(20, None, Running, Some(0))]);
        assert_contiguous(&tl);
    }

    #[test]
    fn exit_then_switch_out_is_dead_and_x_is_dead() {
        let tl = T::new()
            .switch(10, 0, 0, "R", 5)
            .exit(15, 0, 5)
            .switch(20, 0, 5, "S", 6) // kernels print various states for the final switch
            .switch(30, 0, 6, "X", 0)
            .build();
        assert_eq!(spans(&tl, 5)[1], (20, None, Dead, None));
        assert_eq!(spans(&tl, 6)[1], (30, None, Dead, None));
    }

    #[test]
    fn other_states_and_idle_prev_state() {
        let tl = T::new()
            .switch(10, 0, 0, "R", 5)
            .switch(20, 0, 5, "T", 6)
            .switch(30, 0, 6, "I", 7)
            .switch(40, 0, 7, "P", 0)
            .build();
        assert_eq!(spans(&tl, 5)[1].2, Other);
        assert_eq!(spans(&tl, 6)[1].2, Sleeping);
        assert_eq!(spans(&tl, 7)[1].2, Other);
        assert_eq!(tl.anomalies, 0);
    }

    #[test]
    fn lost_switch_out_is_counted_and_resolved() {
        // 5 switched in on cpu 0 and again on cpu 1 without a switch-out.
        let tl = T::new()
            .switch(10, 0, 0, "R", 5)
            .switch(20, 1, 0, "R", 5)
            .build();
        assert_eq!(tl.anomalies, 1);
        assert_eq!(
            spans(&tl, 5),
            vec![
                (10, Some(20), Running, Some(0)),
                (20, None, Running, Some(1))
            ]
        );
    }

    #[test]
    fn same_instant_wakeup_and_switch_in_leave_no_empty_interval() {
        let tl = T::new()
            .switch(10, 0, 0, "R", 5)
            .switch(20, 0, 5, "S", 0)
            .wake(30, 0, 0, WakeKind::Waking, 5, 0)
            .switch(30, 0, 0, "R", 5)
            .build();
        assert_contiguous(&tl);
        assert_eq!(spans(&tl, 5).last(), Some(&(30, None, Running, Some(0))));
    }

    #[test]
    fn census_bounds_hold_on_random_contradictory_traces() {
        // Random switches (prev often not the task that runs), wakeups,
        // migrations and exits: every anomaly path of the builder is taken,
        // and no vector may outgrow the room the census gave it.
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        for round in 0..20 {
            let mut t = T::new();
            let mut ts = 0;
            for _ in 0..2000 {
                ts += next(3); // equal timestamps too: zero-length intervals
                let cpu = next(3) as u32;
                let a = next(8) as i32; // 0 = idle
                let b = next(8) as i32;
                match next(10) {
                    0..=4 => {
                        let state = ["R", "R+", "S", "D", "X", "T", "I"][next(7) as usize];
                        t.switch(ts, cpu, a, state, b);
                    }
                    5 => {
                        t.wake(ts, cpu, a, WakeKind::Waking, b, next(3) as u32);
                    }
                    6 => {
                        t.wake(ts, cpu, a, WakeKind::Wakeup, b, next(3) as u32);
                    }
                    7 => {
                        t.migrate(ts, cpu, b, cpu, next(3) as u32);
                    }
                    8 => {
                        t.exit(ts, cpu, b);
                    }
                    _ => {
                        t.push(
                            ts,
                            cpu,
                            a,
                            EventData::Fork {
                                parent_tid: Tid(a),
                                child_tid: Tid(b),
                                child_comm: StrId(0),
                            },
                        );
                    }
                }
            }
            let tl = t.build(); // asserts the bounds
            assert!(tl.inferred_switch_ins > 0 && tl.anomalies > tl.inferred_switch_ins);
            for th in &tl.threads {
                for w in th.intervals.windows(2) {
                    assert_eq!(w[0].end, Some(w[1].ts), "round {round} tid {}", th.tid);
                }
            }
        }
    }

    #[test]
    fn census_bounds_hold_on_recorded_and_simulated_traces() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
        let mut checked = 0;
        for name in [
            "perf/sched_small.data",
            "perf/callchain.data",
            "ftrace/tracefs-sched.txt",
            "ftrace/tracecmd-sched.txt",
            "sim/bare-metal-s1.data",
            "sim/mixed-s1.data",
        ] {
            // (perf.data: the decoder leaves its memory for the timeline)
            let spare = schedscope_parser::LoadOptions {
                spare: true,
                ..Default::default()
            };
            let trace = schedscope_parser::load_with(&root.join(name), &spare)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let spare = trace.spare.bytes();
            let (tl, regrown) = Timeline::build_counting(&trace, false);
            assert_eq!(regrown, 0, "{name}");
            if name.ends_with(".data") {
                // the decoder's slots held the intervals: reused
                assert!(spare > 0 && trace.spare.bytes() == 0, "{name}: {spare}");
            }
            // Threads whose region is full spill into vectors of their
            // own: the same timeline.
            let (squeezed, spilled) = Timeline::build_counting(&trace, true);
            assert!(spilled > 0, "{name}");
            assert_eq!(squeezed.threads.len(), tl.threads.len(), "{name}");
            for (a, b) in squeezed.threads.iter().zip(&tl.threads) {
                assert_eq!((a.tid, &a.intervals), (b.tid, &b.intervals), "{name}");
            }
            assert!(!tl.threads.is_empty(), "{name}");
            // The bound is a bound, not a guess: nowhere near the 2x a
            // doubling vector leaves.
            let len: usize = tl.threads.iter().map(|t| t.intervals.len()).sum();
            // (the store's size: one region of `bound` slots per thread)
            let cap: usize = Census::of(&trace)
                .threads
                .iter()
                .map(|s| s.bound as usize)
                .sum();
            assert!(
                cap * 4 <= len * 5 + 4 * tl.threads.len(),
                "{name}: {cap} for {len}"
            );
            checked += 1;
        }
        assert_eq!(checked, 6);
    }

    #[test]
    fn tid_index_takes_any_tid() {
        let mut ix = TidIndex::default();
        let tids = [5, 0, 70_000, (1 << 22) - 1, 1 << 22, i32::MAX, -1, i32::MIN];
        for (i, &t) in tids.iter().enumerate() {
            assert_eq!(ix.get(Tid(t)), None);
            ix.insert(Tid(t), i);
        }
        for (i, &t) in tids.iter().enumerate() {
            assert_eq!(ix.get(Tid(t)), Some(i), "tid {t}");
        }
        assert_eq!(ix.get(Tid(6)), None);
        assert_eq!(ix.get(Tid(-2)), None);
        assert!(ix.dense.len() <= DENSE_TIDS);
    }

    #[test]
    fn empty_trace() {
        let tl = T::new().build();
        assert!(tl.threads.is_empty() && tl.cpus.is_empty());
        assert_eq!(tl.state_at(Tid(1), Ts(0)), Unknown);
    }
}
