//! Idle-balancing proxies: SCHED softirqs, nohz idle-balance kicks,
//! sched_wake_idle_without_ipi, and migrations: wake placement or pulls of
//! a queued task into an idle CPU, by inferred balancing path.

use super::pass::Pass;
use schedscope_trace::symbols::{Location, SymbolTable};
use schedscope_trace::{Event, EventData, Sym, Tid, Trace};
use std::collections::HashSet;

impl Pass<'_> {
    /// A balancing proxy on CPU `c` at `ts` (SCHED softirq entry or exit,
    /// csd_queue_cpu of a nohz kick, sched_wake_idle_without_ipi).
    pub(super) fn proxy(&mut self, c: usize, ts: u64, data: &EventData) {
        match *data {
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
    }

    /// Whether a csd_queue_cpu `func` is `nohz_csd_func`.
    fn is_nohz_kick(&self, func: Sym) -> bool {
        self.nohz_funcs.contains(&func.0)
    }

    /// The balancing path of a pull into `dest` seen on CPU `e` (see
    /// [`super::Balance::pulls_by_path`]).
    fn pull_path(&self, e: u32, dest: u32, ev_tid: Tid) -> &'static str {
        if self.trace.tasks.comm(ev_tid).starts_with("migration/") {
            return "active";
        }
        let s = &self.cpus[e as usize];
        if s.softirq_since.is_some() {
            let run = self.cursor.cpu(e);
            let kicked = run.is_idle() && s.last_kick.is_some_and(|k| k >= run.since);
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

    /// A sched_migrate_task `ev` of `tid` to CPU `dest` at `ts`: wake
    /// placement (between sched_waking and sched_wakeup), or the move of a
    /// queued task, a pull when `dest` is idle.
    pub(super) fn migrate(&mut self, ev: &Event, ts: u64, tid: Tid, dest: u32) {
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
            let idle_since = self.cursor.cpu(dest).since;
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
}

/// The csd_queue_cpu `func` values that name `nohz_csd_func`: names in text
/// traces, addresses in perf.data resolved through the trace's kallsyms (or
/// the live kernel's when the trace was recorded on it), see
/// [`schedscope_trace::symbols`].
pub(super) fn nohz_funcs<'e>(
    trace: &Trace,
    events: impl Iterator<Item = &'e schedscope_trace::Event>,
) -> HashSet<u64> {
    // (the decoders give CsdQueue payloads to csd:csd_queue_cpu events
    // only: without that event name, spare the pass over the events)
    if trace.name_id("csd:csd_queue_cpu").is_none() {
        return HashSet::new();
    }
    nohz_of(trace, csd_funcs(events))
}

/// The `func` of every csd_queue_cpu event among `events`.
pub(super) fn csd_funcs<'e>(
    events: impl Iterator<Item = &'e schedscope_trace::Event>,
) -> HashSet<Sym> {
    events
        .filter_map(|e| match e.data {
            EventData::CsdQueue { func, .. } => Some(func),
            _ => None,
        })
        .collect()
}

/// Of the csd functions `funcs`, those that name `nohz_csd_func`.
pub(super) fn nohz_of(trace: &Trace, funcs: HashSet<Sym>) -> HashSet<u64> {
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
