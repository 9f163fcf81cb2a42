//! Pause-loop exits: each PLE exit classified by its siblings' states, the
//! directed yield that followed it, and every exit reason per VM.

use crate::groups;
use crate::timeline::{Intervals, ThreadState};
use crate::{AnalysisError, Context};
use schedscope_trace::hash::FxMap;
use schedscope_trace::{Event, EventData, KvmIsa, Tid, Trace, Ts};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::BTreeMap;

/// A directed yield counts when the switch follows the exit within this window.
pub const YIELD_WINDOW_NS: u64 = 50_000;

/// Whether a kvm_exit is a pause-loop exit.
pub fn is_ple(isa: KvmIsa, exit_reason: u32) -> bool {
    match isa {
        KvmIsa::Vmx => exit_reason & 0xffff == 40,
        KvmIsa::Svm => exit_reason == 0x77,
        KvmIsa::Other(_) => false,
    }
}

/// The kernel's name of an exit reason (`perf kvm stat` spelling), from
/// the kernel's own kvm_exit tables; `reason N` for codes it does not name.
pub fn exit_reason_name(isa: KvmIsa, exit_reason: u32) -> String {
    let code = match isa {
        KvmIsa::Vmx => exit_reason & 0xffff,
        _ => exit_reason,
    };
    match schedscope_trace::kvm::reasons().name(isa, exit_reason) {
        Some(n) => n.to_string(),
        None => format!("reason {code}"),
    }
}

/// PLE counts of one VM.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PleVm {
    /// The VM's process (None when the trace has no tgid information).
    pub tgid: Option<Tid>,
    /// Display name.
    pub name: String,
    /// Number of vCPU threads in its gang.
    pub vcpus: usize,
    /// PLE exits.
    pub total: u64,
    /// ... while some sibling was Runnable.
    pub sibling_preempted: u64,
    /// ... while every alive sibling was Running.
    pub all_running: u64,
    /// ... otherwise.
    pub siblings_idle: u64,
    /// PLE exits per second of trace.
    pub per_second: f64,
    /// Directed yields to a sibling within the window.
    pub yield_to_sibling: u64,
}

/// PLE counts of one vCPU thread.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PleVcpu {
    /// The vCPU thread.
    pub tid: Tid,
    /// Its vCPU id, when the events carry one.
    pub vcpu: Option<u32>,
    /// Its VM's process.
    pub tgid: Option<Tid>,
    /// PLE exits.
    pub total: u64,
    /// ... while some sibling was Runnable.
    pub sibling_preempted: u64,
    /// ... while every alive sibling was Running.
    pub all_running: u64,
    /// ... otherwise.
    pub siblings_idle: u64,
    /// PLE exits per second of trace.
    pub per_second: f64,
}

/// What followed a PLE exit on its CPU within [`YIELD_WINDOW_NS`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct YieldOutcomes {
    /// The vCPU was switched out and a sibling switched in.
    pub to_sibling: u64,
    /// The vCPU was switched out for a non-sibling (or idle).
    pub to_other: u64,
    /// No switch on that CPU within the window.
    pub no_switch: u64,
}

/// One exit reason of one VM.
#[derive(Clone, Debug, Serialize)]
pub struct ExitReason {
    /// Kernel name (`PAUSE_INSTRUCTION`, `pause`, ...).
    pub reason: String,
    /// Raw code.
    pub code: u32,
    /// Exits.
    pub count: u64,
    /// Share of this VM's exits (0..1).
    pub share: f64,
    /// Total handling time, exit to the next kvm_entry of the same thread (ns).
    pub time_ns: u64,
}

/// All exit reasons of one VM.
#[derive(Clone, Debug, Serialize)]
pub struct VmExits {
    /// The VM's process.
    pub tgid: Option<Tid>,
    /// Display name.
    pub name: String,
    /// Exits of all reasons.
    pub total: u64,
    /// By reason, most frequent first.
    pub reasons: Vec<ExitReason>,
}

/// The virtualized part.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PleReport {
    /// PLE exits.
    pub total: u64,
    /// ... while some sibling was Runnable.
    pub sibling_preempted: u64,
    /// ... while every alive sibling was Running.
    pub all_running: u64,
    /// ... otherwise.
    pub siblings_idle: u64,
    /// PLE exits per second of trace.
    pub per_second: f64,
    /// Directed-yield outcomes.
    pub directed_yield: YieldOutcomes,
    /// Per VM.
    pub per_vm: Vec<PleVm>,
    /// Per vCPU thread.
    pub per_vcpu: Vec<PleVcpu>,
    /// Exit reasons per VM.
    pub exit_reasons: Vec<VmExits>,
}

/// A monotonic state cursor over one thread's intervals.
struct Cursor<'a> {
    ivs: Option<&'a Intervals>,
    i: usize,
}

impl Cursor<'_> {
    fn state_at(&mut self, ts: Ts) -> ThreadState {
        let Some(ivs) = self.ivs else {
            return ThreadState::Unknown;
        };
        while ivs
            .get(self.i)
            .is_some_and(|iv| iv.end.is_some_and(|e| e <= ts))
        {
            self.i += 1;
        }
        match ivs.get(self.i) {
            Some(iv) if iv.ts <= ts => iv.state,
            _ => ThreadState::Unknown,
        }
    }
}

/// How a PLE exit is classified by its siblings' states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PleClass {
    /// Some sibling was Runnable (a likely preempted lock holder).
    SiblingPreempted,
    /// Every alive sibling was Running (futile exit).
    AllRunning,
    /// Otherwise (siblings asleep, or no siblings).
    SiblingsIdle,
}

/// What followed one PLE exit on its CPU within [`YIELD_WINDOW_NS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum YieldOutcome {
    /// The next switch put a sibling on the CPU.
    ToSibling,
    /// The next switch put another task (or idle) on the CPU.
    ToOther,
    /// No switch on that CPU within the window.
    NoSwitch,
}

/// One pause-loop exit with its classification (for Parquet export and the TUI).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PleExit {
    /// When.
    pub ts: Ts,
    /// The CPU it happened on.
    pub cpu: schedscope_trace::Cpu,
    /// The spinning vCPU thread.
    pub tid: Tid,
    /// Its VM (tgid), when known.
    pub vm: Option<Tid>,
    /// Sibling states at that instant.
    pub class: PleClass,
    /// Directed-yield outcome.
    pub outcome: YieldOutcome,
}

/// Every PLE exit of the trace, classified, in time order (the rows behind
/// [`PleReport`]'s counts).
pub fn ple_exits(ctx: &Context) -> Result<Vec<PleExit>, AnalysisError> {
    let mut pass = PlePass::with_exits(ctx)?;
    pass.push(&ctx.trace.events);
    Ok(pass.finish_with_exits().1)
}

/// A vCPU thread, looked up once: its VM (tgid), gang position, open exit.
struct Slot {
    vm: Option<Tid>,
    /// (gang, member) in the gang definitions.
    gm: Option<(usize, usize)>,
    /// The exit awaiting its kvm_entry: (time, row in `reason_rows`).
    open: Option<(Ts, usize)>,
}

/// A PLE exit awaiting the next switch on its CPU: (exit time, gang
/// index, row in `exits`).
type Pending = (Ts, Option<usize>, Option<usize>);

/// Exit counts and handling time of one (VM, isa, code): (VM, isa, code,
/// count, ns).
type ReasonRow = (Option<Tid>, KvmIsa, u32, u64, u64);

/// The pause-loop exits fed the events in slices: one pass in which every
/// kvm_exit is counted by reason (with its handling time up to the
/// thread's next kvm_entry) and every PLE exit is classified by its
/// siblings' states and followed to the next switch on its CPU.
///
/// The timeline must be complete when the pass is made ([`PlePass::new`]
/// reads its gangs and vCPUs, the pass its state intervals).
/// [`PlePass::push`] takes the events in time order (any number of
/// consecutive slices); nothing else reads `trace.events`.
pub struct PlePass<'a> {
    trace: &'a Trace,
    tl: &'a crate::Timeline,
    defs: Vec<groups::GangDef>,
    /// tid -> (gang, member).
    index: std::collections::HashMap<Tid, (usize, usize)>,
    /// vCPU thread -> its vCPU id.
    vcpus: BTreeMap<Tid, Option<u32>>,
    /// State cursors per gang member.
    cursors: Vec<Vec<Cursor<'a>>>,
    per_vm: Vec<PleVm>,
    per_vcpu: BTreeMap<Tid, PleVcpu>,
    outcomes: YieldOutcomes,
    /// Per CPU: PLE exits awaiting the next switch.
    pending: Vec<Vec<Pending>>,
    reason_rows: Vec<ReasonRow>,
    reason_idx: FxMap<(Option<Tid>, KvmIsa, u32), usize>,
    slots: Vec<Slot>,
    slot_of: FxMap<Tid, usize>,
    /// One row per PLE exit, when asked for ([`PlePass::with_exits`]).
    exits: Option<Vec<PleExit>>,
}

impl<'a> PlePass<'a> {
    /// Start the pass for [`PleReport`]; fails when `--gang-of` specs are
    /// invalid. (The checks of the events the pass needs are the caller's,
    /// as in `lhp::analyze`.)
    pub fn new(ctx: &Context<'a>) -> Result<PlePass<'a>, AnalysisError> {
        let defs = groups::vm_gangs(ctx)?;
        Ok(PlePass::with_defs(ctx, defs, None))
    }

    /// Start the pass for [`ple_exits`] (the report and one row per PLE
    /// exit): fails as `ple_exits` does, on missing events or invalid
    /// `--gang-of` specs.
    pub fn with_exits(ctx: &Context<'a>) -> Result<PlePass<'a>, AnalysisError> {
        if ctx.trace.count("kvm:kvm_exit") == 0 {
            return Err(AnalysisError::missing(
                "lhp (pause-loop exits)",
                &["kvm:kvm_exit", "kvm:kvm_entry"],
            ));
        }
        groups::check_sched_events(ctx.trace, "lhp")?;
        let defs = groups::vm_gangs(ctx)?;
        Ok(PlePass::with_defs(ctx, defs, Some(Vec::new())))
    }

    fn with_defs(
        ctx: &Context<'a>,
        defs: Vec<groups::GangDef>,
        exits: Option<Vec<PleExit>>,
    ) -> Self {
        let (trace, tl) = (ctx.trace, ctx.timeline);
        let cursors = defs
            .iter()
            .map(|d| {
                d.members
                    .iter()
                    .map(|t| Cursor {
                        ivs: tl.thread(*t).map(|x| &x.intervals),
                        i: 0,
                    })
                    .collect()
            })
            .collect();
        let per_vm = defs
            .iter()
            .map(|d| PleVm {
                tgid: d.tgid,
                name: d.name.clone(),
                vcpus: d.members.len(),
                ..PleVm::default()
            })
            .collect();
        PlePass {
            trace,
            tl,
            index: groups::member_index(&defs),
            defs,
            vcpus: tl.vcpus.clone(),
            cursors,
            per_vm,
            per_vcpu: BTreeMap::new(),
            outcomes: YieldOutcomes::default(),
            pending: vec![Vec::new(); trace.nr_cpus as usize],
            reason_rows: Vec::new(),
            reason_idx: FxMap::default(),
            slots: Vec::new(),
            slot_of: FxMap::default(),
            exits,
        }
    }

    /// The next events, in time order after those pushed before.
    pub fn push(&mut self, events: &[Event]) {
        for ev in events {
            match ev.data {
                EventData::KvmExit {
                    exit_reason, isa, ..
                } => self.exit(ev, isa, exit_reason),
                EventData::KvmEntry { .. } => self.entry(ev),
                EventData::Switch { next_tid, .. } => self.switch(ev, next_tid),
                _ => {}
            }
        }
    }

    /// The report, once every event was pushed.
    pub fn finish(self) -> PleReport {
        self.finish_with_exits().0
    }

    /// The report and the PLE exit rows (empty unless the pass was made
    /// by [`PlePass::with_exits`]), once every event was pushed.
    pub fn finish_with_exits(mut self) -> (PleReport, Vec<PleExit>) {
        let exits = self.exits.take().unwrap_or_default();
        (self.report(), exits)
    }

    /// The slot of vCPU thread `tid`, made on its first exit.
    fn slot(&mut self, tid: Tid) -> usize {
        let (tl, trace) = (self.tl, self.trace);
        let (slots, index) = (&mut self.slots, &self.index);
        *self.slot_of.entry(tid).or_insert_with(|| {
            let vm = tl
                .thread(tid)
                .and_then(|t| t.tgid)
                .or_else(|| trace.tasks.tgid(tid));
            slots.push(Slot {
                vm,
                gm: index.get(&tid).copied(),
                open: None,
            });
            slots.len() - 1
        })
    }

    /// A kvm_exit: counted by reason and left open until the thread's
    /// next kvm_entry; a PLE exit is classified and awaits the next switch.
    fn exit(&mut self, ev: &Event, isa: KvmIsa, exit_reason: u32) {
        let si = self.slot(ev.tid);
        let (vm, gm) = (self.slots[si].vm, self.slots[si].gm);
        let code = match isa {
            KvmIsa::Vmx => exit_reason & 0xffff,
            _ => exit_reason,
        };
        let rows = &mut self.reason_rows;
        let ri = *self.reason_idx.entry((vm, isa, code)).or_insert_with(|| {
            rows.push((vm, isa, code, 0, 0));
            rows.len() - 1
        });
        self.reason_rows[ri].3 += 1;
        self.slots[si].open = Some((ev.ts, ri));
        if is_ple(isa, exit_reason) {
            self.ple_exit(ev, vm, gm);
        }
    }

    /// A PLE exit of a thread of VM `vm` at gang position `gm`.
    fn ple_exit(&mut self, ev: &Event, vm: Option<Tid>, gm: Option<(usize, usize)>) {
        let class = match gm {
            None => PleClass::SiblingsIdle,
            Some((g, m)) => classify(&mut self.cursors[g], m, ev.ts),
        };
        let (vcpus, defs) = (&self.vcpus, &self.defs);
        let v = self.per_vcpu.entry(ev.tid).or_insert_with(|| PleVcpu {
            tid: ev.tid,
            vcpu: vcpus.get(&ev.tid).copied().flatten(),
            tgid: gm.and_then(|(g, _)| defs[g].tgid).or(vm),
            ..PleVcpu::default()
        });
        v.total += 1;
        let bump = |sp: &mut u64, ar: &mut u64, si: &mut u64| match class {
            PleClass::SiblingPreempted => *sp += 1,
            PleClass::AllRunning => *ar += 1,
            PleClass::SiblingsIdle => *si += 1,
        };
        bump(
            &mut v.sibling_preempted,
            &mut v.all_running,
            &mut v.siblings_idle,
        );
        if let Some((g, _)) = gm {
            let p = &mut self.per_vm[g];
            p.total += 1;
            bump(
                &mut p.sibling_preempted,
                &mut p.all_running,
                &mut p.siblings_idle,
            );
        }
        let c = ev.cpu.0 as usize;
        if c >= self.pending.len() {
            self.pending.resize(c + 1, Vec::new());
        }
        let row = self.exits.as_mut().map(|x| {
            x.push(PleExit {
                ts: ev.ts,
                cpu: ev.cpu,
                tid: ev.tid,
                vm,
                class,
                outcome: YieldOutcome::NoSwitch,
            });
            x.len() - 1
        });
        self.pending[c].push((ev.ts, gm.map(|(g, _)| g), row));
    }

    /// A kvm_entry closes its thread's open exit: its handling time.
    fn entry(&mut self, ev: &Event) {
        if let Some(&si) = self.slot_of.get(&ev.tid) {
            if let Some((t0, ri)) = self.slots[si].open.take() {
                self.reason_rows[ri].4 += ev.ts.0.saturating_sub(t0.0);
            }
        }
    }

    /// A switch on a CPU decides the directed-yield outcome of the PLE
    /// exits awaiting it there.
    fn switch(&mut self, ev: &Event, next_tid: Tid) {
        let c = ev.cpu.0 as usize;
        let Some(list) = self.pending.get_mut(c) else {
            return;
        };
        for (t0, g, row) in list.drain(..) {
            let outcome = if ev.ts.0.saturating_sub(t0.0) > YIELD_WINDOW_NS {
                self.outcomes.no_switch += 1;
                YieldOutcome::NoSwitch
            } else if g.is_some_and(|g| self.defs[g].members.binary_search(&next_tid).is_ok()) {
                self.outcomes.to_sibling += 1;
                if let Some(g) = g {
                    self.per_vm[g].yield_to_sibling += 1;
                }
                YieldOutcome::ToSibling
            } else {
                self.outcomes.to_other += 1;
                YieldOutcome::ToOther
            };
            if let (Some(x), Some(r)) = (self.exits.as_mut(), row) {
                if let Some(e) = x.get_mut(r) {
                    e.outcome = outcome;
                }
            }
        }
    }

    /// The report: totals and rates, the VMs (gangs with vCPU threads),
    /// the vCPUs, the exit reasons.
    fn report(mut self) -> PleReport {
        let secs = self.trace.duration().0 as f64 / 1e9;
        let rate = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        let mut outcomes = self.outcomes;
        outcomes.no_switch += self.pending.iter().map(|l| l.len() as u64).sum::<u64>();
        let mut report = PleReport {
            directed_yield: outcomes,
            ..PleReport::default()
        };
        for v in self.per_vcpu.values_mut() {
            v.per_second = rate(v.total);
            report.total += v.total;
            report.sibling_preempted += v.sibling_preempted;
            report.all_running += v.all_running;
            report.siblings_idle += v.siblings_idle;
        }
        report.per_second = rate(report.total);
        for p in &mut self.per_vm {
            p.per_second = rate(p.total);
        }
        // Only gangs with vCPU threads are VMs (explicit gangs may be plain processes).
        report.per_vm = self
            .per_vm
            .into_iter()
            .zip(self.defs)
            .filter(|(_, d)| !d.vcpus.is_empty())
            .map(|(v, _)| v)
            .collect();
        report.per_vcpu = self.per_vcpu.into_values().collect();
        report.exit_reasons = exit_reasons(self.trace, self.reason_rows);
        report
    }
}

/// The class of a PLE exit of member `m` at `ts`, from its siblings' states
/// (`cursors`: one per member of its gang, moved forward).
fn classify(cursors: &mut [Cursor], m: usize, ts: Ts) -> PleClass {
    let (mut runnable, mut running, mut alive) = (false, 0, 0);
    for (j, c) in cursors.iter_mut().enumerate() {
        if j == m {
            continue;
        }
        match c.state_at(ts) {
            ThreadState::Runnable => {
                runnable = true;
                alive += 1;
            }
            ThreadState::Running => {
                running += 1;
                alive += 1;
            }
            ThreadState::Sleeping
            | ThreadState::Blocked
            | ThreadState::Other
            | ThreadState::Unknown => alive += 1,
            ThreadState::Dead => {}
        }
    }
    if runnable {
        PleClass::SiblingPreempted
    } else if alive > 0 && running == alive {
        PleClass::AllRunning
    } else {
        PleClass::SiblingsIdle
    }
}

/// Exit reasons per VM from rows (VM, isa, code, count, ns), most frequent
/// first, with their shares.
fn exit_reasons(trace: &Trace, rows: Vec<ReasonRow>) -> Vec<VmExits> {
    let mut by_vm: BTreeMap<Option<Tid>, Vec<ExitReason>> = BTreeMap::new();
    for (vm, isa, code, count, time_ns) in rows {
        by_vm.entry(vm).or_default().push(ExitReason {
            reason: exit_reason_name(isa, code),
            code,
            count,
            share: 0.0,
            time_ns,
        });
    }
    by_vm
        .into_iter()
        .map(|(vm, mut rs)| {
            let total: u64 = rs.iter().map(|r| r.count).sum();
            for r in &mut rs {
                r.share = if total > 0 {
                    r.count as f64 / total as f64
                } else {
                    0.0
                };
            }
            rs.sort_by_key(|r| (Reverse(r.count), r.code));
            VmExits {
                tgid: vm,
                name: match vm {
                    Some(g) => format!("VM {} ({})", g, trace.tasks.comm(g)),
                    None => "threads without tgid".to_string(),
                },
                total,
                reasons: rs,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ple_codes_per_isa() {
        assert!(is_ple(KvmIsa::Vmx, 40));
        // VMX: only the basic reason (low 16 bits) counts; FAILED_VMENTRY bit set.
        assert!(is_ple(KvmIsa::Vmx, 0x8000_0028));
        assert!(!is_ple(KvmIsa::Vmx, 0x77));
        assert!(is_ple(KvmIsa::Svm, 0x77));
        assert!(!is_ple(KvmIsa::Svm, 40));
        assert!(!is_ple(KvmIsa::Other(3), 40));
        assert_eq!(exit_reason_name(KvmIsa::Vmx, 40), "PAUSE_INSTRUCTION");
        assert_eq!(exit_reason_name(KvmIsa::Svm, 0x400), "npf");
        assert_eq!(exit_reason_name(KvmIsa::Vmx, 999), "reason 999");
    }
}
