//! Lost switch-ins, placed from the strongest evidence the trace carries
//! (docs/design.md, "Lost events: evidence first, then a rule, always
//! with bounds"): `sched_stat_runtime`, a `power:cpu_idle` exit, an event
//! in the task's context, else the rule.

use super::*;

/// How many events after the one that makes a repair the build reads for
/// the task's first `sched_stat_runtime` (a tick's worth of events on a
/// busy machine is a few thousand).
pub(super) const STAT_LOOKAHEAD: usize = 1 << 16;

/// Where a repair puts a lost switch-in (see [`InferredSwitchIn`]).
#[derive(Clone, Copy)]
pub(super) struct Placement {
    pub(super) estimate: Ts,
    pub(super) earliest: Ts,
    pub(super) latest: Ts,
    pub(super) evidence: Evidence,
}

impl Builder {
    /// An idle CPU switches out `prev`, which it was never seen switching
    /// in: if `prev` was Runnable, it was switched in (untraced) when both the
    /// CPU was idle and `prev` runnable. Split the idle run there and make
    /// `prev` Running from then on, so that the switch-out below is consistent.
    pub(super) fn infer_switch_in_from_idle(&mut self, ts: Ts, c: usize, cpu: Cpu, prev: Tid) {
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
        let at = self.place(c, i, t_in, ts, Evidence::Rule, None);
        self.switch_in_inferred(c, cpu, i, prev, at);
    }

    /// Place a lost switch-in on CPU slot `c` that the rule puts at
    /// `rule` (with the evidence `kind`, [`Evidence::Rule`] or
    /// [`Evidence::TaskEvent`]), known to precede `proof` (the first event
    /// proving the task ran there): from the task's first
    /// sched_stat_runtime (`stat`, its switch-in time), else the CPU's last
    /// idle exit, else (thread `i` held off by its cgroup) its next refill,
    /// else the rule. `earliest` is the rule's time (the CPU
    /// idle since, the task runnable since), or the CPU's idle exit after
    /// it; `latest` is `proof`.
    pub(super) fn place(
        &self,
        c: usize,
        i: usize,
        rule: Ts,
        proof: Ts,
        kind: Evidence,
        stat: Option<Ts>,
    ) -> Placement {
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
        // Held off by its cgroup: the first refill after the hold-off, on
        // the grid its recorded refills show (an estimate: the bounds stay).
        if kind == Evidence::Rule {
            if let Some(r) = self.refill_of(i).map(|r| r.max(earliest)) {
                if r <= proof {
                    return Placement {
                        estimate: r,
                        earliest,
                        latest: proof,
                        evidence: Evidence::Refill,
                    };
                }
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
    /// `cpu` among the events `ahead` (the current one and those after it)
    /// proves (`ts - runtime`), before the CPU's next sched_switch; `None`
    /// without one (or without such events).
    pub(super) fn stat_switch_in(
        &self,
        trace: &Trace,
        ahead: &[Event],
        cpu: Cpu,
        tid: Tid,
    ) -> Option<Ts> {
        let stat = self.stat?;
        for ev in ahead.iter().take(STAT_LOOKAHEAD) {
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
    pub(super) fn cpu_idle(&mut self, ts: Ts, cpu: Cpu, state: u32) {
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
    pub(super) fn infer_switch_in_from_event(
        &mut self,
        trace: &Trace,
        ahead: &[Event],
        ts: Ts,
        cpu: Cpu,
        tid: Tid,
    ) {
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
        let stat = self.stat_switch_in(trace, ahead, cpu, tid);
        let at = self.place(c, i, t_in, ts, kind, stat);
        self.switch_in_inferred(c, cpu, i, tid, at);
    }

    /// The repair's result: idle CPU slot `c` (CPU `cpu`) ran `tid`
    /// (thread `i`) from `t_in` on, a switch-in the trace lacks.
    pub(super) fn switch_in_inferred(
        &mut self,
        c: usize,
        cpu: Cpu,
        i: usize,
        prev: Tid,
        at: Placement,
    ) {
        let t_in = at.estimate;
        if !self.refills.is_empty() {
            // Its switch-in is an estimate, not a recorded refill.
            self.ran(i, None);
        }
        if let Some(run) = self.tl.cpus[c].last() {
            if run.tid.is_idle() && run.end.is_none() {
                if run.ts == t_in {
                    self.tl.cpus[c].set_last_tid(prev);
                } else {
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
}
