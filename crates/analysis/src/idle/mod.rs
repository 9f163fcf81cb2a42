//! Idle under bandwidth control (docs/design.md, "Idle under bandwidth control";
//! how it reads thread states: "One tracker").
//!
//! Idle reads the shared thread-state tracker through the timeline's
//! replay cursor ([`crate::cursor`]): who is current on each CPU, since
//! when, and where each task runs are the cursor's, which merges the
//! trace's events with the switch-ins the timeline repaired, so that
//! idle's CPU states are the timeline's runs (the ones gang and lhp read).
//! One pass over the cursor's steps (`pass`) keeps what only idle needs:
//! per CPU the open wasted-idle gap (`gaps`), the SCHED softirq in
//! progress and the last nohz kick (`balance`); per task its wait (on
//! which CPU since when, and whether it is a CFS-bandwidth throttle:
//! `waits`, `inference`, `recorded`). From them:
//!
//! * per CPU `idle_ns` (pid 0 current) and `wasted_idle_ns`: idle time during
//!   which at least one runnable task was *stuck* somewhere: queued on a busy
//!   CPU, or throttled. A task just woken onto an idle CPU is that CPU's
//!   incoming work (its wakeup latency), not stuck work, so it does not make
//!   other idle CPUs' time wasted.
//! * the split of wasted idle: `throttled_ns` when every stuck task is
//!   throttled, `imbalance_ns` when some stuck task could have run on the idle
//!   CPU (it waits on a busy CPU and is not throttled).
//! * throttling is `inferred` from the trace (on 6.18 a throttled task leaves
//!   the CPU as runnable, prev_state R, and the CPU then idles or runs
//!   something else while the task stays off CPU: a CPU that goes idle while a
//!   preempted task is queued on it proves that task is throttled, from the
//!   moment it left the CPU (the pass looks ahead to that CPU's next
//!   switch); a task once proven throttled is taken as throttled again when
//!   it waits preempted on a busy CPU while another CPU goes idle without
//!   pulling it (newidle balancing would otherwise have pulled it), or when
//!   it leaves a CPU runnable and that CPU then runs something else for
//!   20 ms without a single switch while the task neither runs nor moves (a
//!   runnable queued task gets the CPU back within a slice or two; a
//!   CFS-bandwidth throttle lasts until the next period)) or
//!   `recorded` when the trace carries cgroup cpu.stat samples and tasks map to
//!   the sampled cgroups (by their recorded cgroup membership when the file
//!   has it, else by comm = last path component; see
//!   [`IdleReport::attribution`] and [`IdleReport::cgroup_mapping`]); recorded throttling marks a task throttled
//!   from its R switch-out when its cgroup's nr_throttled grew in that sample
//!   interval.
//!   A task woken (its sched_wakeup) onto a CPU that then stays idle with
//!   it queued for the same 20 ms, without picking it, is throttled from
//!   its wakeup: kernels before per-task throttling keep a task woken into
//!   a throttled cgroup queued on the throttled cfs_rq until the refill.
//! * the CPU states are the cursor's: every sched_switch, plus the
//!   switch-ins the timeline infers on lossy CPUs
//!   ([`crate::timeline::Timeline::inferred`]), merged among the events
//!   at their own time, so that idle's figures and the timeline's are one.
//!   Before a CPU's first recorded switch, where the timeline has no run,
//!   its first event's common_pid is current since the trace start, and
//!   the cursor applies the same repair rule when that first switch
//!   contradicts it on a lossy CPU.
//! * the per-second table of the seeds (idle %, work done), idle-balancing
//!   proxies (SCHED softirqs, nohz kicks, wake_idle_without_ipi, pulls into
//!   idle CPUs), how each wasted-idle gap ended, wait-before-pull percentiles,
//!   a gap-length histogram and the longest gaps with who was waiting.
//!
//! # Lost events: repairs only where the trace shows loss
//!
//! Every repair is conditional on per-CPU evidence of loss in the same
//! trace, [`crate::timeline::LossEvidence`] (shared with the timeline): a
//! switch-out of a task that no recorded sched_switch put on that CPU
//! (`perf sched latency`'s "context switch bugs"; a lost sched_switch
//! record always leaves one, and this VM's CPU 1, which never traces its
//! switches out of idle, leaves one per such switch). Such a CPU is
//! `lossy`. The rule: a CPU never idles with a runnable task queued, so
//! when a CPU idles with a woken task queued on it and does not switch it
//! in next (switching it in next is a race with the CPU's pick: it stays
//! the CPU's incoming work),
//! * on a lossy CPU the task's switch-in was lost: its wait is an
//!   artifact and is dropped (counted in [`CpuRepair::waits_dropped`] and
//!   in the anomalies), so that it cannot count as stuck work until the
//!   trace ends;
//! * on a CPU without evidence, which is taken as fully traced, the wait is
//!   real and never dropped: throttled when the wakeup's look-ahead proved
//!   it ([`CpuRepair::woken_throttled`], above) or the recorded cgroup
//!   samples say so, otherwise kept as it is and shown
//!   ([`CpuRepair::woken_left_queued`], also in the anomalies).
//!
//! [`IdleReport::repairs`] reports, per CPU, the evidence and what was
//! repaired; the text report prints it for every CPU with something to say.
//! Lost-record counts ([`schedscope_trace::Trace::lost`]) are known per
//! trace only, not per CPU, so they mark no CPU; a lost sched_switch shows
//! up as a break on its own CPU.
//!
//! # One tracker, and what idle keeps of its own
//!
//! Idle runs on the finished timeline, in parallel with gang, lhp and
//! tlb's profile (see `report.rs`); a caller that passes no timeline
//! (`Timeline::default()`) gets one built here. The per-CPU current task
//! and the per-task running CPU are the cursor's; idle keeps no second
//! state machine. The task waits are idle's: they carry what the timeline
//! does not keep (wake placement between sched_waking and sched_wakeup,
//! pulls, throttling, preemption queues for the throttle inference), and
//! a switch-in the cursor yields, recorded or repaired, ends them as the
//! timeline ends the Runnable interval. The throttle inference's
//! look-aheads read the events after the cursor's position
//! ([`crate::cursor::Cursor::rest`]). Latency keeps its own pass, which
//! follows `perf sched latency`'s rules to be comparable with it (the
//! documented exception).
//!
//! Against the simulator's truth with this VM's loss pattern injected
//! (CPU 1's switches out of idle removed), idle's CPU 1 figure is the
//! timeline's and within 6% of the truth (ple-1x seed 1: 36.0 ms for a
//! true 35.6 ms), where idle's former own tracker (it resynchronised to
//! the task any event named and otherwise counted the CPU idle until its
//! next recorded switch) counted 152 ms; `crates/sim/tests/idle_vs_timeline.rs`
//! holds both, and that idle equals the timeline on every fixture CPU.

mod balance;
pub(crate) mod bounds;
mod gaps;
mod inference;
mod pass;
mod recorded;
#[cfg(test)]
mod tests;
mod waits;

use crate::{AnalysisError, Context};
use serde::Serialize;
use std::collections::BTreeMap;

pub use crate::stats::{percentile_nearest_rank, population_stddev, DurStats, GapBucket};
pub use crate::throttle::CgroupMapping;

/// Events the analysis cannot do without.
pub(crate) const REQUIRED: &[&str] = &["sched:sched_switch"];
/// One of these is needed to know when tasks become runnable (either
/// serves; sched_waking improves the result, see
/// [`crate::error::WAKEUP_NOTE`]).
pub(crate) const WAKEUPS: &[&str] = &["sched:sched_waking", "sched:sched_wakeup"];
/// Idle-balancing proxies; without them the balance table is incomplete.
pub(crate) const PROXIES: &[&str] = &[
    "sched:sched_migrate_task",
    "irq:softirq_entry",
    "irq:softirq_exit",
    "csd:csd_queue_cpu",
    "sched:sched_wake_idle_without_ipi",
];

/// Where the throttled/imbalance split comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Attribution {
    /// From the cgroup cpu.stat samples stored in the trace (plus the trace
    /// inference for tasks that map to no sampled cgroup).
    Recorded,
    #[default]
    /// Inferred from the trace alone: a task switched out runnable (prev_state
    /// R) whose CPU then idled while it stayed queued is throttled.
    Inferred,
}

/// One CPU's idle figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CpuIdle {
    /// CPU number.
    pub cpu: u32,
    /// Time the idle task (pid 0) was current.
    pub idle_ns: u64,
    /// Idle time while some runnable task was stuck elsewhere or throttled.
    pub wasted_idle_ns: u64,
    /// Part of `wasted_idle_ns` when every stuck task was throttled.
    pub throttled_ns: u64,
    /// Part of `wasted_idle_ns` when some stuck task was not throttled.
    pub imbalance_ns: u64,
    /// SCHED softirq runs (irq:softirq_entry vec=7) on this CPU.
    pub sched_softirqs: u64,
    /// Time spent in SCHED softirqs on this CPU.
    pub sched_softirq_ns: u64,
    /// nohz idle-balance kicks (csd_queue_cpu func=nohz_csd_func) sent to this CPU.
    pub nohz_kicks_received: u64,
    /// sched_wake_idle_without_ipi targeting this CPU.
    pub wake_idle_without_ipi: u64,
    /// Runnable tasks migrated into this CPU while it was idle.
    pub pulls: u64,
    /// The least `idle_ns` can be given the events lost on this CPU
    /// (`bounds`; equal to `idle_ns` on a CPU without loss evidence).
    pub idle_ns_min: u64,
    /// The most `idle_ns` can be given the events lost on this CPU.
    pub idle_ns_max: u64,
    /// The least `wasted_idle_ns` can be given the events lost on any CPU
    /// (equal to `wasted_idle_ns` on a trace without loss evidence).
    pub wasted_idle_ns_min: u64,
    /// The most `wasted_idle_ns` can be given the events lost on any CPU.
    pub wasted_idle_ns_max: u64,
    /// The least `throttled_ns` can be given the events lost on any CPU
    /// (equal to `throttled_ns` on a trace without loss evidence).
    pub throttled_ns_min: u64,
    /// The most `throttled_ns` can be given the events lost on any CPU.
    pub throttled_ns_max: u64,
}

/// Statistics of the per-second idle %.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PctStats {
    /// Mean over the full one-second buckets (null when the trace is shorter than 1 s).
    pub avg: Option<f64>,
    /// Population standard deviation.
    pub stddev: Option<f64>,
    /// Smallest bucket.
    pub min: Option<f64>,
    /// Largest bucket.
    pub max: Option<f64>,
}

/// Statistics of the CPU time delivered to non-idle tasks per second.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct WorkStats {
    /// Mean ns of non-idle CPU time per full one-second bucket (all CPUs).
    pub avg: Option<f64>,
    /// Population standard deviation.
    pub stddev: Option<f64>,
}

/// How wasted-idle gaps ended.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GapEndings {
    /// The CPU left idle to run a task woken onto it.
    pub wakeup: u64,
    /// A runnable task was migrated into the CPU during the gap (a pull).
    pub pull: u64,
    /// The stuck work got a CPU elsewhere (or was unthrottled there) while
    /// this CPU stayed idle.
    pub ran_elsewhere: u64,
    /// Still open when the trace ended.
    pub trace_end: u64,
    /// The CPU left idle to run a task that had been throttled on it.
    pub unthrottle: u64,
}

/// nohz kicks between one pair of CPUs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Kick {
    /// CPU that sent the kick.
    pub from: u32,
    /// CPU that was kicked.
    pub to: u32,
    /// How many times.
    pub count: u64,
}

/// Idle-balancing proxies.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Balance {
    /// SCHED softirq runs, all CPUs.
    pub sched_softirqs: u64,
    /// Time in SCHED softirqs, all CPUs.
    pub sched_softirq_ns: u64,
    /// nohz idle-balance kicks.
    pub nohz_kicks: u64,
    /// Who kicked whom.
    pub kicks: Vec<Kick>,
    /// sched_wake_idle_without_ipi events.
    pub wake_idle_without_ipi: u64,
    /// Runnable (queued, not being woken) tasks migrated into an idle CPU.
    pub pulls_into_idle: u64,
    /// Pulls by inferred balancing path: `nohz_kick` (in a SCHED softirq of a
    /// CPU kicked since it went idle), `nohz_balance` (SCHED softirq on
    /// another CPU balancing for the idle one), `idle_balance` (SCHED softirq
    /// of the idle CPU itself, not kicked), `newidle` (from the idle CPU
    /// outside a softirq), `active` (migration/N stopper), `other`.
    pub pulls_by_path: BTreeMap<String, u64>,
    /// How long the pulled task had waited while the destination CPU was idle.
    pub wait_before_pull_ns: DurStats,
    /// How wasted-idle gaps ended.
    pub gap_endings: GapEndings,
}

/// A runnable task that was stuck when a gap opened.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Waiter {
    /// Thread id.
    pub tid: i32,
    /// Command name.
    pub comm: String,
    /// CPU it was queued on.
    pub cpu: u32,
    /// Whether it was throttled.
    pub throttled: bool,
}

/// One wasted-idle gap.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Gap {
    /// The idle CPU.
    pub cpu: u32,
    /// Start (trace clock, ns).
    pub start_ns: u64,
    /// Length.
    pub dur_ns: u64,
    /// Part of it with only throttled tasks stuck.
    pub throttled_ns: u64,
    /// Part of it with some unthrottled task stuck.
    pub imbalance_ns: u64,
    /// How it ended (`wakeup`, `pull`, `ran_elsewhere`, `trace_end`, `unthrottle`).
    pub ending: String,
    /// Up to four tasks stuck when it opened.
    pub waiting: Vec<Waiter>,
}

/// Wasted-idle gaps.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Gaps {
    /// Number of gaps.
    pub count: u64,
    /// Their total length (= `wasted_idle_ns`).
    pub total_ns: u64,
    /// By length: bucket 0 is < 1 µs, bucket i covers [2^(i-1), 2^i) µs.
    pub histogram: Vec<GapBucket>,
    /// The 20 longest, longest first.
    pub longest: Vec<Gap>,
}

/// One cgroup's CPU time vs its quota, from the recorded samples.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CgroupUsage {
    /// Path relative to the controller root.
    pub path: String,
    /// cfs_quota_us (latest sample); -1 = unlimited.
    pub quota_us: i64,
    /// cfs_period_us.
    pub period_us: u64,
    /// Quota in CPUs (quota / period); null when unlimited.
    pub quota_cpus: Option<f64>,
    /// CPUs used on average between the first and last sample (null without usage).
    pub usage_cpus: Option<f64>,
    /// CPU time the trace shows for the tasks mapped to this cgroup.
    pub trace_cpu_ns: u64,
    /// The same in CPUs over the trace duration (compare with `quota_cpus`).
    pub trace_cpus: Option<f64>,
    /// nr_periods growth between the first and last sample.
    pub nr_periods: u64,
    /// nr_throttled growth.
    pub nr_throttled: u64,
    /// throttled time growth.
    pub throttled_ns: u64,
    /// Number of samples.
    pub samples: u64,
    /// Tasks of the trace mapped to this cgroup (by recorded membership, at
    /// or below this path, when the trace has it; else by comm = last path
    /// component), see [`IdleReport::cgroup_mapping`].
    pub tasks: u64,
}

/// The `idle` section.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct IdleReport {
    /// Per CPU.
    pub cpus: Vec<CpuIdle>,
    /// Sum of per-CPU idle.
    pub idle_ns: u64,
    /// Sum of per-CPU wasted idle.
    pub wasted_idle_ns: u64,
    /// Wasted idle with only throttled work stuck.
    pub throttled_ns: u64,
    /// Wasted idle with unthrottled work stuck elsewhere.
    pub imbalance_ns: u64,
    /// Where the split comes from.
    pub attribution: Attribution,
    /// How tasks were mapped to the recorded cgroup samples.
    pub cgroup_mapping: CgroupMapping,
    /// Idle % per full one-second bucket from the first event.
    pub per_second_idle_pct: PctStats,
    /// Non-idle CPU time per full one-second bucket.
    pub work_per_second_ns: WorkStats,
    /// Full one-second buckets.
    pub seconds: u64,
    /// Time from first to last event.
    pub duration_ns: u64,
    /// Idle-balancing proxies and gap endings.
    pub balance: Balance,
    /// Wasted-idle gaps.
    pub gaps: Gaps,
    /// Per-cgroup CPU time vs quota (from recorded samples).
    pub cgroups: Vec<CgroupUsage>,
    /// Balancing proxies that the trace lacks (their counts above are 0 for that reason).
    pub missing_events: Vec<String>,
    /// Events that contradicted the tracked state (tolerated).
    pub anomalies: u64,
    /// Per CPU: the evidence of lost events and what was repaired because
    /// of it, or reported instead (see the module docs, "Lost events").
    pub repairs: Vec<CpuRepair>,
    /// Sum of per-CPU `idle_ns_min` (`bounds`).
    pub idle_ns_min: u64,
    /// Sum of per-CPU `idle_ns_max`.
    pub idle_ns_max: u64,
    /// Sum of per-CPU `wasted_idle_ns_min`.
    pub wasted_idle_ns_min: u64,
    /// Sum of per-CPU `wasted_idle_ns_max`.
    pub wasted_idle_ns_max: u64,
    /// Sum of per-CPU `throttled_ns_min`.
    pub throttled_ns_min: u64,
    /// Sum of per-CPU `throttled_ns_max`.
    pub throttled_ns_max: u64,
}

/// One CPU's lost-event evidence and repairs (JSON `idle.repairs[]`).
///
/// Repairs happen only on a `lossy` CPU; a CPU without evidence is taken
/// as fully traced and its waits are never dropped.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CpuRepair {
    /// CPU number.
    pub cpu: u32,
    /// Evidence: switch-outs of a task that no recorded sched_switch put on
    /// this CPU (`perf sched latency`'s context-switch bugs).
    pub unswitched_switch_outs: u64,
    /// Of them, switches out of idle that were not traced (the previous
    /// recorded switch had left the CPU idle).
    pub idle_exits_missing: u64,
    /// Whether the trace shows loss on this CPU (`unswitched_switch_outs`
    /// > 0), so that repairs apply here.
    pub lossy: bool,
    /// Repair (lossy CPU only): woken tasks whose wait was dropped because
    /// the CPU went idle with them queued and did not switch them in next.
    pub waits_dropped: u64,
    /// Fully traced CPU only: woken tasks that the CPU held off (it idled
    /// with them queued), taken as throttled from their wakeup.
    pub woken_throttled: u64,
    /// Fully traced CPU only: times the CPU went idle with a woken task
    /// queued on it that it did not switch in next and that no inference
    /// explains; the wait is kept (throttled when the recorded samples say
    /// so), and each time is counted in [`IdleReport::anomalies`].
    pub woken_left_queued: u64,
    /// The timeline's inferred switch-ins on this CPU by the evidence
    /// that placed them (`stat_runtime`, `cpu_idle`, `task_event`, `refill`, `rule`;
    /// see [`crate::timeline::Evidence`]); empty without any.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub evidence: BTreeMap<&'static str, u64>,
    /// Length of this CPU's uncertain windows (`bounds`): where lost
    /// events leave its state unknown.
    pub uncertain_ns: u64,
}

fn has_event(trace: &schedscope_trace::Trace, name: &str) -> bool {
    trace.count(name) > 0 || trace.name_id(name).is_some()
}

/// Compute the idle section.
///
/// Errors with [`AnalysisError::MissingEvents`] when the trace has no
/// sched_switch or no wakeup events (without them idle and waiting time are
/// unknowable); missing balancing proxies only leave those tables empty and
/// are listed in [`IdleReport::missing_events`].
pub fn analyze(ctx: &Context) -> Result<IdleReport, AnalysisError> {
    analyze_with_gaps(ctx, false).map(|(r, _)| r)
}

/// [`analyze`], also returning every wasted-idle gap in the order they
/// closed when `keep_gaps` (the rows behind [`Gaps`], for the Parquet
/// export); their durations add up to [`IdleReport::wasted_idle_ns`].
pub fn analyze_with_gaps(
    ctx: &Context,
    keep_gaps: bool,
) -> Result<(IdleReport, Vec<Gap>), AnalysisError> {
    let trace = ctx.trace;
    check(trace)?;
    // The shared timeline (built here when the caller passed none).
    let own;
    let tl = if ctx.timeline.is_built() {
        ctx.timeline
    } else {
        own = crate::Timeline::build(trace);
        &own
    };
    let (mut report, gaps) = pass::run_with(trace, tl, keep_gaps);
    complete(&mut report, trace, tl);
    Ok((report, gaps))
}

/// The section's missing-events error, if any.
fn check(trace: &schedscope_trace::Trace) -> Result<(), AnalysisError> {
    let mut missing: Vec<&str> = REQUIRED
        .iter()
        .copied()
        .filter(|n| !has_event(trace, n))
        .collect();
    let mut improves = Vec::new();
    crate::error::wakeup_needs(
        has_event(trace, "sched:sched_wakeup"),
        has_event(trace, "sched:sched_waking"),
        &mut missing,
        &mut improves,
    );
    if !missing.is_empty() {
        improves.extend(PROXIES.iter().filter(|n| !has_event(trace, n)));
        return Err(AnalysisError::missing_improves("idle", &missing, &improves));
    }
    Ok(())
}

/// What the pass leaves to the end: the loss bounds and the proxies missing.
fn complete(report: &mut IdleReport, trace: &schedscope_trace::Trace, tl: &crate::Timeline) {
    bounds::fill(report, trace, tl);
    report.missing_events = PROXIES
        .iter()
        .filter(|n| !has_event(trace, n))
        .map(|s| s.to_string())
        .collect();
}

/// What the idle section's pass needs from an earlier pass over a stream
/// of the events ([`IdleStream`]): each CPU's first events (the cursor's
/// lead-in repair), the csd functions queued (which of them are the
/// nohz balancer's), and how many events there are.
#[derive(Clone, Debug)]
pub struct IdlePrep {
    lead: crate::cursor::LeadIn,
    csd: std::collections::HashSet<schedscope_trace::Sym>,
    kept: usize,
}

impl Default for IdlePrep {
    fn default() -> IdlePrep {
        IdlePrep {
            lead: crate::cursor::LeadIn::new(pass::READS),
            csd: Default::default(),
            kept: 0,
        }
    }
}

impl IdlePrep {
    /// The next events, in the trace's order.
    pub fn push(&mut self, events: &[schedscope_trace::Event]) {
        self.lead.push(events);
        self.csd.extend(balance::csd_funcs(events.iter()));
        self.kept += events.len();
    }
}

/// The idle section computed from a stream of the trace's events: what
/// [`analyze`] gives, the events pushed as they stream past ([`push`],
/// in the trace's order) instead of read from the trace's vector. Made
/// once the timeline is built and an earlier pass filled an [`IdlePrep`];
/// the pass runs its inference's look-ahead (200,000 events) behind the
/// stream, over a window of the events.
///
/// [`push`]: IdleStream::push
pub struct IdleStream<'t> {
    run: Result<(pass::Pass<'t>, &'t crate::Timeline), AnalysisError>,
}

impl<'t> IdleStream<'t> {
    /// Start the pass; `ctx.trace` is the trace without its events (as the
    /// stream returned it), `ctx.timeline` built from them.
    pub fn new(ctx: &Context<'t>, prep: IdlePrep) -> IdleStream<'t> {
        let (trace, tl) = (ctx.trace, ctx.timeline);
        let run = check(trace).map(|()| {
            let cursor = tl.cursor_fed(trace, prep.lead, inference::LOOKAHEAD_EVENTS);
            // (empty without csd_queue_cpu events: nothing to resolve)
            let nohz = balance::nohz_of(trace, prep.csd);
            (
                pass::Pass::new(trace, tl, false, cursor, prep.kept, nohz),
                tl,
            )
        });
        IdleStream { run }
    }

    /// Whether the pass reads the events (not when the section's input is
    /// missing: [`IdleStream::finish`] then gives the error).
    pub fn reads_events(&self) -> bool {
        self.run.is_ok()
    }

    /// The next events, in the trace's order.
    pub fn push(&mut self, events: &[schedscope_trace::Event]) {
        if let Ok((p, _)) = &mut self.run {
            p.cursor.feed(events, false);
            p.run();
        }
    }

    /// The section, after the last event.
    pub fn finish(self) -> Result<IdleReport, AnalysisError> {
        let (mut p, tl) = self.run?;
        p.cursor.feed(&[], true);
        p.run();
        let trace = p.trace;
        let (mut report, _) = p.end();
        complete(&mut report, trace, tl);
        Ok(report)
    }
}
