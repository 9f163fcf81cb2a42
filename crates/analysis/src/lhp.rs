//! Lock-holder preemption (DESIGN.md "Analyses — definitions", issue 4).
//!
//! Virtualized: every pause-loop exit (kvm_exit with isa VMX and reason 40,
//! or isa SVM and reason 0x77) is classified by the states of the spinning
//! vCPU's siblings (the other members of its gang) at that instant:
//! `sibling_preempted` (some sibling Runnable: a likely preempted lock
//! holder), `all_running` (every alive sibling on a CPU: a futile exit), or
//! `siblings_idle`. A directed yield succeeded when the first context switch
//! on the exit's CPU within [`YIELD_WINDOW_NS`] puts a sibling on it. All
//! exit reasons are counted per VM as `perf kvm stat` does.
//!
//! Bare metal: a waiter B woken by A (the task current on the CPU that
//! emitted sched_waking) after sleeping since t0: the time in [t0, wake)
//! during which A was Runnable is `waker_preempted_ns`, summed per (waker,
//! wakee) pair and per wakee process.
//!
//! Both parts are single passes: PLE exits walk the sorted events with one
//! monotonic cursor per vCPU sibling; the bare-metal part walks each thread's
//! intervals once and answers "runnable time of A before t" from per-thread
//! prefix sums (threads in parallel).

use crate::gang::{self, GangDef, GangKind};
use crate::report::Section;
use crate::timeline::{StateInterval, ThreadState, Timeline};
use crate::{AnalysisError, Context};
use rayon::prelude::*;
use schedscope_trace::{EventData, KvmIsa, Tid, Trace, Ts};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{self, Write};

/// A cheap multiplicative hasher for the small integer keys of the per-event
/// maps (tids, exit codes); keys come from one trace, so no DoS resistance
/// is needed.
#[derive(Default, Clone, Copy)]
struct Fx(u64);

impl Fx {
    #[inline]
    fn add(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.add(u64::from(b));
        }
    }
    fn write_u8(&mut self, v: u8) {
        self.add(u64::from(v));
    }
    fn write_u32(&mut self, v: u32) {
        self.add(u64::from(v));
    }
    fn write_i32(&mut self, v: i32) {
        self.add(v as u32 as u64);
    }
    fn write_u64(&mut self, v: u64) {
        self.add(v);
    }
    fn write_isize(&mut self, v: isize) {
        self.add(v as u64);
    }
    fn write_usize(&mut self, v: usize) {
        self.add(v as u64);
    }
}

type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;

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

/// Waiting caused by a preempted waker, for one (waker, wakee) pair.
#[derive(Clone, Debug, Serialize)]
pub struct WakerPair {
    /// The waker.
    pub waker: Tid,
    /// Its comm.
    pub waker_comm: String,
    /// The woken task.
    pub wakee: Tid,
    /// Its comm.
    pub wakee_comm: String,
    /// Wakeups.
    pub wakeups: u64,
    /// Time the wakee slept while the waker was Runnable (ns).
    pub waker_preempted_ns: u64,
    /// Longest single such wait (ns).
    pub max_ns: u64,
}

/// Waiting caused by a preempted waker, per wakee process.
#[derive(Clone, Debug, Serialize)]
pub struct WakerProcess {
    /// The wakee's process (None: unknown).
    pub tgid: Option<Tid>,
    /// Its name.
    pub name: String,
    /// Wakeups of its threads.
    pub wakeups: u64,
    /// Total sleep of its threads before those wakeups (ns).
    pub sleep_ns: u64,
    /// Part of that during which the waker was Runnable (ns).
    pub waker_preempted_ns: u64,
}

/// The bare-metal part.
#[derive(Clone, Debug, Default, Serialize)]
pub struct WakerPreemptedReport {
    /// Sum over all wakeups (ns).
    pub total_ns: u64,
    /// Wakeups examined (sleep start known, waker a task).
    pub wakeups: u64,
    /// Per pair, largest first (all pairs with nonzero time).
    pub pairs: Vec<WakerPair>,
    /// Per wakee process, largest first.
    pub processes: Vec<WakerProcess>,
}

/// The `lhp` section.
#[derive(Clone, Debug, Serialize)]
pub struct LhpReport {
    /// Pause-loop exits (or why there are none).
    pub ple: Section<PleReport>,
    /// Waker-preempted time (or why there is none).
    pub waker_preempted: Section<WakerPreemptedReport>,
}

/// Compute the lhp section.
pub fn analyze(ctx: &Context) -> Result<LhpReport, AnalysisError> {
    // Invalid --gang-of specs fail the whole section, naming the option.
    if !ctx.opts.gang_specs.is_empty() {
        gang::resolve_gangs(ctx)?;
    }
    let sched = gang::check_sched_events(ctx.trace, "lhp");
    let waking = if ctx.trace.count("sched:sched_waking") == 0 {
        let mut m = vec!["sched:sched_waking"];
        if ctx.trace.count("sched:sched_switch") == 0 {
            m.push("sched:sched_switch");
        }
        Err(AnalysisError::missing("lhp (waker-preempted)", &m))
    } else {
        sched.clone()
    };
    let has_kvm = ctx.trace.count("kvm:kvm_exit") > 0;
    if !has_kvm && waking.is_err() {
        let mut m = vec!["kvm:kvm_exit", "kvm:kvm_entry"];
        if ctx.trace.count("sched:sched_switch") == 0 {
            m.push("sched:sched_switch");
        }
        if ctx.trace.count("sched:sched_waking") == 0 {
            m.push("sched:sched_waking");
        }
        return Err(AnalysisError::missing("lhp", &m));
    }
    let ple = if !has_kvm {
        Err(AnalysisError::missing(
            "lhp (pause-loop exits)",
            &["kvm:kvm_exit", "kvm:kvm_entry"],
        ))
    } else {
        match sched {
            Err(e) => Err(e),
            Ok(()) => ple(ctx),
        }
    };
    let waker_preempted = waking.map(|()| waker_preempted(ctx.trace, ctx.timeline));
    Ok(LhpReport {
        ple: Section(ple),
        waker_preempted: Section(waker_preempted),
    })
}

/// A monotonic state cursor over one thread's intervals.
struct Cursor<'a> {
    ivs: &'a [StateInterval],
    i: usize,
}

impl Cursor<'_> {
    fn state_at(&mut self, ts: Ts) -> ThreadState {
        while self.i < self.ivs.len() && self.ivs[self.i].end.is_some_and(|e| e <= ts) {
            self.i += 1;
        }
        match self.ivs.get(self.i) {
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
    if ctx.trace.count("kvm:kvm_exit") == 0 {
        return Err(AnalysisError::missing(
            "lhp (pause-loop exits)",
            &["kvm:kvm_exit", "kvm:kvm_entry"],
        ));
    }
    gang::check_sched_events(ctx.trace, "lhp")?;
    let mut exits = Vec::new();
    ple_pass(ctx, Some(&mut exits))?;
    Ok(exits)
}

fn ple(ctx: &Context) -> Result<PleReport, AnalysisError> {
    ple_pass(ctx, None)
}

fn ple_pass(
    ctx: &Context,
    mut exits: Option<&mut Vec<PleExit>>,
) -> Result<PleReport, AnalysisError> {
    let trace = ctx.trace;
    let tl = ctx.timeline;
    let defs: Vec<GangDef> = if ctx.opts.gang_specs.is_empty() {
        // Automatic: one gang per VM; vCPUs without tgid form a gang each.
        let mut d: Vec<GangDef> = gang::resolve_gangs(ctx)?
            .into_iter()
            .filter(|g| g.kind == GangKind::Vm)
            .collect();
        let grouped = gang::member_index(&d);
        for (tid, vcpu) in gang::vcpu_threads(trace) {
            if !grouped.contains_key(&tid) {
                d.push(GangDef {
                    name: format!("vCPU thread {tid} (no tgid)"),
                    kind: GangKind::Vm,
                    tgid: None,
                    members: vec![tid],
                    vcpus: vec![vcpu],
                });
            }
        }
        d
    } else {
        gang::resolve_gangs(ctx)?
    };
    let index = gang::member_index(&defs);
    let vcpus = gang::vcpu_threads(trace);
    // Cursors per gang member.
    let mut cursors: Vec<Vec<Cursor>> = defs
        .iter()
        .map(|d| {
            d.members
                .iter()
                .map(|t| Cursor {
                    ivs: tl.thread(*t).map(|x| x.intervals.as_slice()).unwrap_or(&[]),
                    i: 0,
                })
                .collect()
        })
        .collect();

    let secs = trace.duration().0 as f64 / 1e9;
    let rate = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    let mut per_vm: Vec<PleVm> = defs
        .iter()
        .map(|d| PleVm {
            tgid: d.tgid,
            name: d.name.clone(),
            vcpus: d.members.len(),
            ..PleVm::default()
        })
        .collect();
    let mut per_vcpu: BTreeMap<Tid, PleVcpu> = BTreeMap::new();
    let mut outcomes = YieldOutcomes::default();
    // Per CPU: PLE exits awaiting the next switch (ts, gang index or none).
    // (exit time, gang index, row in `exits`)
    type Pending = (Ts, Option<usize>, Option<usize>);
    let mut pending: Vec<Vec<Pending>> = vec![Vec::new(); trace.nr_cpus as usize];
    // Exit counts and handling time: rows (VM, isa, code, count, ns) and their index.
    let mut reason_rows: Vec<(Option<Tid>, KvmIsa, u32, u64, u64)> = Vec::new();
    let mut reason_idx: FxMap<(Option<Tid>, KvmIsa, u32), usize> = FxMap::default();
    // Per vCPU thread, looked up once: its VM (tgid), gang position, open exit.
    struct Slot {
        vm: Option<Tid>,
        gm: Option<(usize, usize)>,
        open: Option<(Ts, usize)>,
    }
    let mut slots: Vec<Slot> = Vec::new();
    let mut slot_of: FxMap<Tid, usize> = FxMap::default();

    for ev in &trace.events {
        match ev.data {
            EventData::KvmExit {
                exit_reason, isa, ..
            } => {
                let si = *slot_of.entry(ev.tid).or_insert_with(|| {
                    let vm = tl
                        .thread(ev.tid)
                        .and_then(|t| t.tgid)
                        .or_else(|| trace.tasks.tgid(ev.tid));
                    slots.push(Slot {
                        vm,
                        gm: index.get(&ev.tid).copied(),
                        open: None,
                    });
                    slots.len() - 1
                });
                let (vm, gm) = (slots[si].vm, slots[si].gm);
                let code = match isa {
                    KvmIsa::Vmx => exit_reason & 0xffff,
                    _ => exit_reason,
                };
                let ri = *reason_idx.entry((vm, isa, code)).or_insert_with(|| {
                    reason_rows.push((vm, isa, code, 0, 0));
                    reason_rows.len() - 1
                });
                reason_rows[ri].3 += 1;
                slots[si].open = Some((ev.ts, ri));
                if !is_ple(isa, exit_reason) {
                    continue;
                }
                let class = match gm {
                    None => PleClass::SiblingsIdle,
                    Some((g, m)) => {
                        let (mut runnable, mut running, mut alive) = (false, 0, 0);
                        for (j, c) in cursors[g].iter_mut().enumerate() {
                            if j == m {
                                continue;
                            }
                            match c.state_at(ev.ts) {
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
                };
                let v = per_vcpu.entry(ev.tid).or_insert_with(|| PleVcpu {
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
                    let p = &mut per_vm[g];
                    p.total += 1;
                    bump(
                        &mut p.sibling_preempted,
                        &mut p.all_running,
                        &mut p.siblings_idle,
                    );
                }
                let c = ev.cpu.0 as usize;
                if c >= pending.len() {
                    pending.resize(c + 1, Vec::new());
                }
                let row = exits.as_deref_mut().map(|x| {
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
                pending[c].push((ev.ts, gm.map(|(g, _)| g), row));
            }
            EventData::KvmEntry { .. } => {
                if let Some(&si) = slot_of.get(&ev.tid) {
                    if let Some((t0, ri)) = slots[si].open.take() {
                        reason_rows[ri].4 += ev.ts.0.saturating_sub(t0.0);
                    }
                }
            }
            EventData::Switch { next_tid, .. } => {
                let c = ev.cpu.0 as usize;
                let Some(list) = pending.get_mut(c) else {
                    continue;
                };
                for (t0, g, row) in list.drain(..) {
                    let outcome = if ev.ts.0.saturating_sub(t0.0) > YIELD_WINDOW_NS {
                        outcomes.no_switch += 1;
                        YieldOutcome::NoSwitch
                    } else if g.is_some_and(|g| defs[g].members.binary_search(&next_tid).is_ok()) {
                        outcomes.to_sibling += 1;
                        if let Some(g) = g {
                            per_vm[g].yield_to_sibling += 1;
                        }
                        YieldOutcome::ToSibling
                    } else {
                        outcomes.to_other += 1;
                        YieldOutcome::ToOther
                    };
                    if let (Some(x), Some(r)) = (exits.as_deref_mut(), row) {
                        if let Some(e) = x.get_mut(r) {
                            e.outcome = outcome;
                        }
                    }
                }
            }
            _ => {}
        }
    }
    outcomes.no_switch += pending.iter().map(|l| l.len() as u64).sum::<u64>();

    let mut report = PleReport {
        directed_yield: outcomes,
        ..PleReport::default()
    };
    for v in per_vcpu.values_mut() {
        v.per_second = rate(v.total);
        report.total += v.total;
        report.sibling_preempted += v.sibling_preempted;
        report.all_running += v.all_running;
        report.siblings_idle += v.siblings_idle;
    }
    report.per_second = rate(report.total);
    for p in &mut per_vm {
        p.per_second = rate(p.total);
    }
    // Only gangs with vCPU threads are VMs (explicit gangs may be plain processes).
    report.per_vm = per_vm
        .into_iter()
        .zip(&defs)
        .filter(|(_, d)| !d.vcpus.is_empty())
        .map(|(v, _)| v)
        .collect();
    report.per_vcpu = per_vcpu.into_values().collect();
    let mut by_vm: BTreeMap<Option<Tid>, Vec<ExitReason>> = BTreeMap::new();
    for (vm, isa, code, count, time_ns) in reason_rows {
        by_vm.entry(vm).or_default().push(ExitReason {
            reason: exit_reason_name(isa, code),
            code,
            count,
            share: 0.0,
            time_ns,
        });
    }
    report.exit_reasons = by_vm
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
        .collect();
    Ok(report)
}

/// Per-thread prefix sums of Runnable time: `cum[i]` = Runnable ns before interval i.
struct RunnableSums<'a> {
    ivs: &'a [StateInterval],
    cum: Vec<u64>,
}

impl RunnableSums<'_> {
    /// Runnable time in [start of trace, t).
    #[cfg(test)]
    fn before(&self, t: Ts, end: Ts) -> u64 {
        let mut hint = 0;
        self.before_from(t, end, &mut hint)
    }

    /// [`Self::before`], searching forward from `*hint` (a previous answer
    /// for an earlier `t`) by galloping, and leaving the new position there.
    /// Queries of one (waker, wakee) pair come in time order, so this stays
    /// near the data it touched last instead of a cold binary search.
    fn before_from(&self, t: Ts, end: Ts, hint: &mut usize) -> u64 {
        let n = self.ivs.len();
        let mut lo = (*hint).min(n);
        if lo > 0 && self.ivs[lo - 1].ts >= t {
            lo = 0; // not monotone: search everything
        }
        let mut step = 1;
        let mut hi = lo;
        while hi < n && self.ivs[hi].ts < t {
            lo = hi + 1;
            hi = (hi + step).min(n);
            step *= 2;
        }
        let i = lo + self.ivs[lo..hi].partition_point(|iv| iv.ts < t);
        *hint = i;
        self.value_at(i, t, end)
    }

    /// The partition point for `t` (first interval starting at or after it)
    /// at or before index `from`, galloping backwards from `from`.
    fn index_back(&self, t: Ts, from: usize) -> usize {
        let mut hi = from.min(self.ivs.len());
        let mut lo = hi;
        let mut step = 1;
        while lo > 0 && self.ivs[lo - 1].ts >= t {
            hi = lo - 1;
            lo = lo.saturating_sub(step);
            step *= 2;
        }
        lo + self.ivs[lo..hi].partition_point(|iv| iv.ts < t)
    }

    /// Runnable time before `t`, given `i` = the partition point of `t`.
    fn value_at(&self, i: usize, t: Ts, end: Ts) -> u64 {
        if i == 0 {
            return 0;
        }
        let iv = &self.ivs[i - 1];
        let mut s = self.cum[i - 1];
        if iv.state == ThreadState::Runnable {
            s += t.0.min(iv.end_or(end).0).saturating_sub(iv.ts.0);
        }
        s
    }
}

/// Compute the bare-metal waker-preempted table.
pub fn waker_preempted(trace: &Trace, tl: &Timeline) -> WakerPreemptedReport {
    let end = tl.end;
    let sums: Vec<RunnableSums> = tl
        .threads
        .par_iter()
        .map(|t| {
            let mut cum = Vec::with_capacity(t.intervals.len());
            let mut acc = 0u64;
            for iv in &t.intervals {
                cum.push(acc);
                if iv.state == ThreadState::Runnable {
                    acc += iv.end_or(end).0.saturating_sub(iv.ts.0);
                }
            }
            RunnableSums {
                ivs: &t.intervals,
                cum,
            }
        })
        .collect();
    let pos: FxMap<Tid, usize> = tl
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| (t.tid, i))
        .collect();
    // Every wakeup of a sleeper by a task: (wake, sleep start, waker index, wakee index, waker).
    const NO_WAKER: u32 = u32::MAX;
    let mut wakes: Vec<(Ts, Ts, u32, u32, Tid)> = tl
        .threads
        .par_iter()
        .enumerate()
        .flat_map_iter(|(bi, t)| {
            let pos = &pos;
            t.intervals.windows(2).filter_map(move |w| {
                let (sleep, wake) = (&w[0], &w[1]);
                if !matches!(sleep.state, ThreadState::Sleeping | ThreadState::Blocked)
                    || wake.state != ThreadState::Runnable
                    || wake.preempted
                {
                    return None;
                }
                let waker = wake.waker.filter(|w| !w.is_idle() && *w != t.tid)?;
                let wi = pos.get(&waker).map_or(NO_WAKER, |&i| i as u32);
                Some((wake.ts, sleep.ts, wi, bi as u32, waker))
            })
        })
        .collect();
    // One pass in wake order: each waker's cursor only moves forward for the
    // wake time; the sleep start is found by galloping back from it.
    wakes.par_sort_unstable_by_key(|w| (w.0, w.3));
    let mut cursor = vec![0usize; sums.len()];
    // (waker, wakee) -> (wakeups, ns, max); wakee tgid -> (wakeups, sleep, ns)
    let mut pairs: FxMap<(Tid, Tid), (u64, u64, u64)> = FxMap::default();
    let mut procs: FxMap<Option<Tid>, (u64, u64, u64)> = FxMap::default();
    for &(tw, t0, wi, bi, waker) in &wakes {
        let wakee = &tl.threads[bi as usize];
        let ns = if wi == NO_WAKER {
            0
        } else {
            let s = &sums[wi as usize];
            let c = &mut cursor[wi as usize];
            let at_wake = s.before_from(tw, end, c);
            let i0 = s.index_back(t0, *c);
            at_wake.saturating_sub(s.value_at(i0, t0, end))
        };
        let p = pairs.entry((waker, wakee.tid)).or_default();
        p.0 += 1;
        p.1 += ns;
        p.2 = p.2.max(ns);
        let q = procs.entry(wakee.tgid).or_default();
        q.0 += 1;
        q.1 += tw.0.saturating_sub(t0.0);
        q.2 += ns;
    }
    let wakeups = wakes.len() as u64;
    let comm = |tid: Tid| {
        tl.thread(tid)
            .map(|t| t.comm.clone())
            .unwrap_or_else(|| trace.tasks.comm(tid).to_string())
    };
    let mut pairs: Vec<WakerPair> = pairs
        .into_iter()
        .filter(|(_, v)| v.1 > 0)
        .map(|((waker, wakee), (wakeups, ns, max))| WakerPair {
            waker,
            waker_comm: comm(waker),
            wakee,
            wakee_comm: comm(wakee),
            wakeups,
            waker_preempted_ns: ns,
            max_ns: max,
        })
        .collect();
    pairs.sort_by_key(|p| (Reverse(p.waker_preempted_ns), p.waker, p.wakee));
    let mut processes: Vec<WakerProcess> = procs
        .into_iter()
        .map(|(tgid, (wakeups, sleep_ns, ns))| WakerProcess {
            tgid,
            name: match tgid {
                Some(g) => {
                    let c = trace.tasks.comm(g);
                    if c.is_empty() {
                        comm(g)
                    } else {
                        c.to_string()
                    }
                }
                None => "(no tgid)".to_string(),
            },
            wakeups,
            sleep_ns,
            waker_preempted_ns: ns,
        })
        .collect();
    processes.sort_by_key(|p| (Reverse(p.waker_preempted_ns), p.tgid));
    WakerPreemptedReport {
        total_ns: pairs.iter().map(|p| p.waker_preempted_ns).sum(),
        wakeups,
        pairs,
        processes,
    }
}

fn pct(a: u64, b: u64) -> String {
    if b == 0 {
        "-".into()
    } else {
        format!("{:.1}", a as f64 * 100.0 / b as f64)
    }
}

fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

impl LhpReport {
    /// Text: PLE headline and tables, exit reasons, then the waker-preempted tables.
    pub fn render_text(&self, ctx: &Context, out: &mut dyn Write) -> io::Result<()> {
        let top = if ctx.opts.top == 0 { 20 } else { ctx.opts.top };
        match &self.ple.0 {
            Err(e) => writeln!(out, "  pause-loop exits: {e}")?,
            Ok(p) => {
                writeln!(
                    out,
                    "  {} pause-loop exits ({:.1}/s): {}% with a sibling vCPU preempted, {}% with all siblings running, {}% with siblings idle; {} directed yields to a sibling within 50 us",
                    p.total,
                    p.per_second,
                    pct(p.sibling_preempted, p.total),
                    pct(p.all_running, p.total),
                    pct(p.siblings_idle, p.total),
                    p.directed_yield.to_sibling
                )?;
                let hdr = [
                    "VM",
                    "vCPUs",
                    "PLE exits",
                    "per s",
                    "sibling preempted (%)",
                    "all running (%)",
                    "siblings idle (%)",
                    "yield to sibling",
                ];
                let rows: Vec<Vec<String>> = p
                    .per_vm
                    .iter()
                    .take(top)
                    .map(|v| {
                        vec![
                            v.name.clone(),
                            v.vcpus.to_string(),
                            v.total.to_string(),
                            format!("{:.1}", v.per_second),
                            pct(v.sibling_preempted, v.total),
                            pct(v.all_running, v.total),
                            pct(v.siblings_idle, v.total),
                            v.yield_to_sibling.to_string(),
                        ]
                    })
                    .collect();
                gang::write_table(out, "  ", &hdr, &rows)?;
                let mut vc: Vec<&PleVcpu> = p.per_vcpu.iter().collect();
                vc.sort_by_key(|v| Reverse(v.total));
                let rows: Vec<Vec<String>> = vc
                    .iter()
                    .take(top)
                    .map(|v| {
                        vec![
                            v.tid.to_string(),
                            v.vcpu.map(|x| x.to_string()).unwrap_or_else(|| "-".into()),
                            v.tgid.map(|x| x.to_string()).unwrap_or_else(|| "-".into()),
                            v.total.to_string(),
                            format!("{:.1}", v.per_second),
                            pct(v.sibling_preempted, v.total),
                            pct(v.all_running, v.total),
                            pct(v.siblings_idle, v.total),
                        ]
                    })
                    .collect();
                writeln!(out)?;
                gang::write_table(
                    out,
                    "  ",
                    &[
                        "vCPU tid",
                        "vcpu",
                        "VM",
                        "PLE exits",
                        "per s",
                        "sibling preempted (%)",
                        "all running (%)",
                        "siblings idle (%)",
                    ],
                    &rows,
                )?;
                writeln!(
                    out,
                    "  directed yield within 50 us: {} to a sibling, {} to another task, {} no switch",
                    p.directed_yield.to_sibling, p.directed_yield.to_other, p.directed_yield.no_switch
                )?;
                for vm in &p.exit_reasons {
                    writeln!(out)?;
                    writeln!(out, "  exit reasons of {} ({} exits)", vm.name, vm.total)?;
                    let rows: Vec<Vec<String>> = vm
                        .reasons
                        .iter()
                        .take(top)
                        .map(|r| {
                            vec![
                                r.reason.clone(),
                                r.count.to_string(),
                                format!("{:.2}", r.share * 100.0),
                                format!("{:.2}", r.time_ns as f64 / 1e3 / r.count.max(1) as f64),
                            ]
                        })
                        .collect();
                    gang::write_table(
                        out,
                        "    ",
                        &["reason", "samples", "samples (%)", "avg time (us)"],
                        &rows,
                    )?;
                }
            }
        }
        writeln!(out)?;
        match &self.waker_preempted.0 {
            Err(e) => writeln!(out, "  waker-preempted time: {e}")?,
            Ok(w) => {
                writeln!(
                    out,
                    "  waker-preempted time: {} ms over {} wakeups (sleepers waited while their waker was runnable but off CPU)",
                    ms(w.total_ns),
                    w.wakeups
                )?;
                let rows: Vec<Vec<String>> = w
                    .pairs
                    .iter()
                    .take(top)
                    .map(|p| {
                        vec![
                            format!("{}:{}", p.waker_comm, p.waker),
                            format!("{}:{}", p.wakee_comm, p.wakee),
                            p.wakeups.to_string(),
                            ms(p.waker_preempted_ns),
                            ms(p.max_ns),
                        ]
                    })
                    .collect();
                gang::write_table(
                    out,
                    "  ",
                    &[
                        "waker",
                        "wakee",
                        "wakeups",
                        "waker preempted (ms)",
                        "max (ms)",
                    ],
                    &rows,
                )?;
                writeln!(out)?;
                let rows: Vec<Vec<String>> = w
                    .processes
                    .iter()
                    .take(top)
                    .map(|p| {
                        vec![
                            format!(
                                "{}:{}",
                                p.name,
                                p.tgid.map(|t| t.to_string()).unwrap_or_else(|| "-".into())
                            ),
                            p.wakeups.to_string(),
                            ms(p.sleep_ns),
                            ms(p.waker_preempted_ns),
                            pct(p.waker_preempted_ns, p.sleep_ns),
                        ]
                    })
                    .collect();
                gang::write_table(
                    out,
                    "  ",
                    &[
                        "process",
                        "wakeups",
                        "slept (ms)",
                        "waker preempted (ms)",
                        "share (%)",
                    ],
                    &rows,
                )?;
            }
        }
        Ok(())
    }
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

    #[test]
    fn runnable_prefix_sums_clip_partial_intervals() {
        let iv = |ts: u64, end: Option<u64>, state| StateInterval {
            ts: Ts(ts),
            end: end.map(Ts),
            state,
            cpu: None,
            preempted: false,
            waker: None,
        };
        let ivs = vec![
            iv(10, Some(20), ThreadState::Running),
            iv(20, Some(50), ThreadState::Runnable),
            iv(50, Some(60), ThreadState::Running),
            iv(60, None, ThreadState::Runnable),
        ];
        let s = RunnableSums {
            ivs: &ivs,
            cum: vec![0, 0, 30, 30],
        };
        let end = Ts(100);
        assert_eq!(s.before(Ts(5), end), 0);
        assert_eq!(s.before(Ts(30), end), 10);
        assert_eq!(s.before(Ts(55), end), 30);
        assert_eq!(s.before(Ts(80), end), 50);
        assert_eq!(s.before(Ts(80), end) - s.before(Ts(30), end), 40);
        // Galloping back from any later position finds the same point.
        for t in [0u64, 5, 10, 20, 30, 50, 55, 60, 80] {
            for from in 0..=ivs.len() {
                let i = s.index_back(Ts(t), from.max(ivs.partition_point(|iv| iv.ts < Ts(t))));
                assert_eq!(
                    s.value_at(i, Ts(t), end),
                    s.before(Ts(t), end),
                    "t={t} from={from}"
                );
            }
        }
        // Galloping from hints gives the same answers, monotone or not.
        let mut hint = 0;
        for (t, want) in [(5, 0), (30, 10), (55, 30), (80, 50), (30, 10), (200, 70)] {
            assert_eq!(s.before_from(Ts(t), end, &mut hint), want.min(100), "t={t}");
        }
    }
}
