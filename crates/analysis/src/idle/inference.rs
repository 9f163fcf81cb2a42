//! The throttle inference: what a CPU going idle proves about the tasks
//! queued on it, and the look-aheads that decide whether a task that left
//! a CPU runnable, or was woken onto one, was held off (throttled).

use super::gaps::Mode;
use super::pass::{Pass, READS};
use schedscope_trace::{EventData, StrId, Tid};

/// Inference: a task that was throttled before and now waits preempted on a
/// CPU that runs something else without a single switch for this long (and
/// neither runs nor moves meanwhile) is throttled again. A runnable queued
/// task of comparable weight gets the CPU within a slice or two (EEVDF's base
/// slice is 0.75-3 ms, the tick 1-10 ms), while a CFS-bandwidth throttle
/// lasts until the next period (default 100 ms).
const HOLD_NS: u64 = 20_000_000;

/// Bound on the events one look-ahead reads (in unit tests small, so that
/// a streamed pass waits for its look-ahead on the fixtures too).
pub(super) const LOOKAHEAD_EVENTS: usize = if cfg!(test) { 1 << 10 } else { 200_000 };

impl<'t> Pass<'t> {
    /// CPU `c` went idle at `ts` (the cursor holds it idle, the wait
    /// counters know it): what that proves about the tasks queued on it
    /// and on other CPUs, then its gap opens if some work is stuck.
    pub(super) fn went_idle(&mut self, c: usize, ts: u64) {
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

    /// The events after the current one that a look-ahead may read (at
    /// most [`LOOKAHEAD_EVENTS`]).
    fn ahead(&self) -> &[schedscope_trace::Event] {
        let rest = self.cursor.rest();
        &rest[..rest.len().min(LOOKAHEAD_EVENTS)]
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
    pub(super) fn held_off(&self, cpu: u32, tid: Tid, ts: u64) -> bool {
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
            if !READS.contains(&ev.data) {
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
    pub(super) fn woken_held_off(&self, cpu: u32, tid: Tid, ts: u64) -> bool {
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
}
