//! The evidence that a CPU lost events (the condition of every repair)
//! and the events the repairs read as evidence.

use super::*;

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
        let mut scan = LossScan::default();
        for e in &trace.events {
            if let Some((c, next)) = scan.step(e) {
                each(c, e.ts.0, next);
            }
        }
        scan.finish()
    }

    /// A sched_switch on CPU `c` switches out `prev` while the previous
    /// recorded switch there put `cur` (if any) on it.
    #[inline(always)]
    pub(super) fn note(&mut self, c: usize, cur: Option<Tid>, prev: Tid) {
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

/// [`LossEvidence::of`] over events pushed in slices (a stream's).
#[derive(Clone, Debug, Default)]
pub struct LossScan {
    ev: LossEvidence,
    /// Per CPU, who its last recorded switch put on it.
    cur: Vec<Option<Tid>>,
}

impl LossScan {
    /// The next events, in time order.
    pub fn push(&mut self, events: &[schedscope_trace::Event]) {
        for e in events {
            self.step(e);
        }
    }

    /// One event: for a sched_switch, its CPU slot and next_pid.
    #[inline]
    fn step(&mut self, e: &schedscope_trace::Event) -> Option<(usize, Tid)> {
        let EventData::Switch {
            prev_tid, next_tid, ..
        } = e.data
        else {
            return None;
        };
        let c = e.cpu.0 as usize;
        if c >= self.cur.len() {
            self.cur.resize(c + 1, None);
        }
        self.ev.note(c, self.cur[c], prev_tid);
        self.cur[c] = Some(next_tid);
        Some((c, next_tid))
    }

    /// The evidence.
    pub fn finish(self) -> LossEvidence {
        self.ev
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
