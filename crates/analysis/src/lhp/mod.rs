//! Lock-holder preemption (docs/design.md, "Lock-holder preemption").
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
//! PLE exits are one pass over the sorted events with one monotonic cursor
//! per vCPU sibling. The bare-metal part reads each thread's intervals
//! twice: as a wakee, to find its wakeups, which are bucketed by waker (a
//! counting sort per chunk of wakees); then as a waker, to rebuild the
//! steps of its Runnable time in cache and answer its whole bucket ("Runnable
//! time of A before t" by galloping forward, one cursor per (waker, wakee)
//! run). No per-wakeup hashing or global sort, and little fresh memory,
//! which costs more here than reading the timeline again.

//!
//! The two parts are apart: `ple` (pause-loop exits, one pass over the
//! events) and `waker` (waker-preempted time, from the timeline); this
//! module gathers them into the [`LhpReport`] ([`LhpPass`], fed the events
//! in slices so that a stream of the trace's events can feed it) and
//! re-exports their types.

mod ple;
mod waker;

pub use ple::{
    exit_reason_name, is_ple, ple_exits, ExitReason, PleClass, PleExit, PlePass, PleReport,
    PleVcpu, PleVm, VmExits, YieldOutcome, YieldOutcomes, YIELD_WINDOW_NS,
};
pub use waker::{waker_preempted, WakerPair, WakerPreemptedReport, WakerProcess};

use crate::groups;
use crate::section::Section;
use crate::{AnalysisError, Context, Timeline};
use schedscope_trace::{Event, Trace};
use serde::Serialize;

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
    let mut pass = LhpPass::new(ctx);
    pass.push(&ctx.trace.events);
    pass.finish()
}

/// The lhp section fed the events in slices: [`LhpPass::new`] checks the
/// trace's events and options (an error is kept and returned by
/// [`LhpPass::finish`], as [`analyze`] returns it), [`LhpPass::push`] takes
/// the events in time order (any number of consecutive slices) for the
/// pause-loop exits, [`LhpPass::finish`] adds the waker-preempted time
/// (from the timeline). The timeline must be complete when the pass is
/// made; only `push` reads events.
pub struct LhpPass<'a> {
    trace: &'a Trace,
    timeline: &'a Timeline,
    parts: Result<Parts<'a>, AnalysisError>,
}

/// The two parts of the section, each computed or why not.
struct Parts<'a> {
    ple: Result<PlePass<'a>, AnalysisError>,
    waking: Result<(), AnalysisError>,
}

impl<'a> LhpPass<'a> {
    /// Start the section.
    pub fn new(ctx: &Context<'a>) -> LhpPass<'a> {
        LhpPass {
            trace: ctx.trace,
            timeline: ctx.timeline,
            parts: parts(ctx),
        }
    }

    /// Whether the pass reads the events (its pause-loop-exit part runs;
    /// not when the trace has no kvm_exit, or the section's input is
    /// missing).
    pub fn reads_events(&self) -> bool {
        matches!(&self.parts, Ok(Parts { ple: Ok(_), .. }))
    }

    /// The next events, in time order after those pushed before.
    pub fn push(&mut self, events: &[Event]) {
        if let Ok(Parts { ple: Ok(p), .. }) = &mut self.parts {
            p.push(events);
        }
    }

    /// The section, once every event was pushed.
    pub fn finish(self) -> Result<LhpReport, AnalysisError> {
        let Parts { ple, waking } = self.parts?;
        let ple = ple.map(PlePass::finish);
        let waker_preempted = waking.map(|()| waker_preempted(self.trace, self.timeline));
        Ok(LhpReport {
            ple: Section(ple),
            waker_preempted: Section(waker_preempted),
        })
    }
}

/// What of the section can run, or why none of it can.
fn parts<'a>(ctx: &Context<'a>) -> Result<Parts<'a>, AnalysisError> {
    // Invalid --gang-of specs fail the whole section, naming the option.
    if !ctx.opts.gang_specs.is_empty() {
        groups::resolve_gangs(ctx)?;
    }
    let sched = groups::check_sched_events(ctx.trace, "lhp");
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
        // Nothing of the section can run: pause-loop exits need the kvm
        // events, sched_switch and a wakeup event (either); waker-preempted
        // time needs sched_waking, which alone would also give that part.
        let (mut m, mut improves) = (vec!["kvm:kvm_exit", "kvm:kvm_entry"], Vec::new());
        if ctx.trace.count("sched:sched_switch") == 0 {
            m.push("sched:sched_switch");
        }
        crate::error::wakeup_needs(
            ctx.trace.count("sched:sched_wakeup") > 0,
            ctx.trace.count("sched:sched_waking") > 0,
            &mut m,
            &mut improves,
        );
        return Err(AnalysisError::missing_improves("lhp", &m, &improves));
    }
    let ple = if !has_kvm {
        Err(AnalysisError::missing(
            "lhp (pause-loop exits)",
            &["kvm:kvm_exit", "kvm:kvm_entry"],
        ))
    } else {
        sched.and_then(|()| PlePass::new(ctx))
    };
    Ok(Parts { ple, waking })
}

#[cfg(test)]
mod tests;
