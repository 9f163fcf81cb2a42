//! Task waits: per task, on which CPU since when it waits, whether that
//! wait is a CFS-bandwidth throttle and whether it was preempted; the
//! global counters the wasted-idle mode reads (`n_thr`, `n_busyq`); and
//! wakeups, which open or move a wait (wake placement).

use super::pass::Pass;
use schedscope_trace::{StrId, Tid, WakeKind};

/// A task's wait.
#[derive(Clone, Copy, Debug)]
pub(super) struct Wait {
    /// The CPU it is queued on.
    pub(super) cpu: u32,
    /// Since when it waits.
    pub(super) since: u64,
    /// Whether it is throttled.
    pub(super) throttled: bool,
    /// Whether it left a CPU runnable (rather than being woken).
    pub(super) preempted: bool,
    /// Its index in [`Pass::waiting`].
    slot: usize,
}

/// What idle keeps per task (where it runs is the cursor's).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct TaskSt {
    pub(super) wait: Option<Wait>,
    /// Between sched_waking and sched_wakeup: a migration now is wake placement.
    pub(super) in_wake: bool,
    /// Pulled into this CPU during the current wait.
    pub(super) pulled_into: Option<u32>,
    /// Seen throttled before (a CPU idled with it queued).
    pub(super) capped: bool,
    /// Comm of its latest wakeup event (for the recorded cgroup mapping by name).
    pub(super) comm: StrId,
}

impl Pass<'_> {
    pub(super) fn add_wait(
        &mut self,
        tid: Tid,
        cpu: u32,
        since: u64,
        preempted: bool,
        throttled: bool,
    ) {
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

    pub(super) fn remove_wait(&mut self, tid: Tid) -> Option<Wait> {
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

    pub(super) fn set_throttled(&mut self, tid: Tid, throttled: bool) {
        let Some(w) = self.tasks.get(&tid).and_then(|t| t.wait) else {
            return;
        };
        if w.throttled == throttled {
            return;
        }
        self.remove_wait(tid);
        self.add_wait(tid, w.cpu, w.since, w.preempted, throttled);
    }

    pub(super) fn move_wait(&mut self, tid: Tid, cpu: u32) {
        let Some(w) = self.tasks.get(&tid).and_then(|t| t.wait) else {
            return;
        };
        if w.cpu == cpu {
            return;
        }
        self.remove_wait(tid);
        self.add_wait(tid, cpu, w.since, w.preempted, w.throttled);
    }

    pub(super) fn mark_capped(&mut self, tid: Tid) {
        let t = self.tasks.entry(tid).or_default();
        if !t.capped {
            t.capped = true;
            self.n_capped += 1;
        }
    }

    /// A wakeup event (sched_waking, sched_wakeup or sched_wakeup_new) of
    /// `tid` onto CPU `target` at `ts`: opens its wait or moves it (the
    /// wake placement), then, on its enqueue, runs the held-off inference.
    pub(super) fn wakeup(&mut self, ts: u64, kind: WakeKind, tid: Tid, comm: StrId, target: u32) {
        if tid.is_idle() || !self.valid(target) {
            return;
        }
        if self.cursor.running_on(tid).is_some() {
            return;
        }
        let t = self.tasks.entry(tid).or_default();
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
}
