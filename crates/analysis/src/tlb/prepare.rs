//! The part of the section that does not read the timeline: the pass over
//! the events (`requests`) and the symbolization of every distinct
//! callsite, function and (stack, process), each once.

use super::report::{IpiClass, NO_CALLBACK};
use super::senders::Tgids;
use super::{fired, recorded, requests, EVENTS};
use crate::{AnalysisError, Context};
use schedscope_trace::hash::FxMap;
use schedscope_trace::symbols::{chain_locations, Location, SymbolTable};
use schedscope_trace::{Event, StackId, Sym, Tid};
use std::collections::HashSet;

/// What [`TlbPass::finish`] (and `prepare`) computes for `finish`, the
/// part of the section that reads the timeline.
pub struct Prepared<'a> {
    pub(super) has_ipi: bool,
    pub(super) has_csd: bool,
    pub(super) scan: requests::Scan,
    pub(super) tgids: Tgids<'a>,
    pub(super) req_stack_pid: Vec<Option<Tid>>,
    pub(super) syms: SymbolTable,
    pub(super) func_class: FxMap<Sym, (IpiClass, bool)>,
}

/// The part of [`analyze`] that does not read the timeline (most of its
/// time: the pass over the events and the symbolization), so that it can
/// run while the timeline is built; `ctx.timeline` is not read.
pub(crate) fn prepare<'a>(ctx: &Context<'a>) -> Result<Prepared<'a>, AnalysisError> {
    let mut pass = TlbPass::new(ctx)?;
    pass.push(&ctx.trace.events);
    Ok(pass.finish())
}

/// The section's part before the timeline (what `prepare` runs), fed the
/// events in slices: [`TlbPass::new`] checks that the trace recorded the
/// section's events, [`TlbPass::push`] takes the events in time order (any
/// number of consecutive slices), [`TlbPass::finish`] symbolizes. Only
/// `push` reads events: the trace (tasks, stacks, names, cpumasks,
/// tallies) may have none, and the timeline is not read.
pub struct TlbPass<'a> {
    trace: &'a schedscope_trace::Trace,
    has_ipi: bool,
    has_csd: bool,
    pass: requests::Pass<'a>,
}

impl<'a> TlbPass<'a> {
    /// Start the pass, or say which events the trace lacks.
    pub fn new(ctx: &Context<'a>) -> Result<TlbPass<'a>, AnalysisError> {
        let trace = ctx.trace;
        if !EVENTS.iter().any(|n| recorded(ctx, n)) {
            return Err(AnalysisError::missing("tlb", EVENTS));
        }
        let ipi_events = &EVENTS[..5];
        // IPI mode when any csd/ipi event fired; otherwise count shootdowns from
        // tlb_flush "remote IPI send" when that fired.
        let has_ipi = ipi_events.iter().any(|n| fired(ctx, n)) || !fired(ctx, "tlb:tlb_flush");
        let has_csd = recorded(ctx, "csd:csd_queue_cpu");
        Ok(TlbPass {
            trace,
            has_ipi,
            has_csd,
            pass: requests::Pass::new(trace, has_csd),
        })
    }

    /// The next events, in time order after those pushed before.
    pub fn push(&mut self, events: &[Event]) {
        self.pass.push(events);
    }

    /// The pass's result, symbolized: what the timeline part of the
    /// section (`tlb::finish`) takes.
    pub fn finish(self) -> Prepared<'a> {
        let TlbPass {
            trace,
            has_ipi,
            has_csd,
            pass,
        } = self;
        let scan = pass.finish();

        // Symbolize every distinct callsite, function and (stack, process) once.
        let mut tgids = Tgids::new(&trace.tasks);
        // A stack's process matters only when it has user frames.
        let mut has_user: FxMap<StackId, bool> = FxMap::default();
        let mut stack_pid = |id: StackId, tid: Tid| -> Option<Tid> {
            let user = *has_user.entry(id).or_insert_with(|| {
                trace
                    .stack(id)
                    .is_some_and(|st| chain_locations(st, None).iter().any(|l| l.user))
            });
            if user {
                tgids.pid_of(tid)
            } else {
                None
            }
        };
        let mut distinct_syms: FxMap<Sym, ()> = FxMap::default();
        let mut distinct_stacks: HashSet<(StackId, Option<Tid>)> = HashSet::new();
        let mut req_stack_pid: Vec<Option<Tid>> = Vec::with_capacity(scan.requests.len());
        for r in &scan.requests {
            distinct_syms.insert(r.callsite, ());
            distinct_syms.insert(r.func, ());
            let pid = if r.stack.is_some() {
                let pid = stack_pid(r.stack, r.tid);
                distinct_stacks.insert((r.stack, pid));
                pid
            } else {
                None
            };
            req_stack_pid.push(pid);
        }
        let mut locs: Vec<Location> = distinct_syms.keys().map(|&s| Location::kernel(s)).collect();
        for &(id, pid) in &distinct_stacks {
            if let Some(st) = trace.stack(id) {
                locs.extend(chain_locations(st, pid));
            }
        }
        let syms = SymbolTable::build(trace, locs);
        // Per distinct function: its class, or `None` for the generic callback
        // of a hardware IPI that only restates a csd request.
        let func_class: FxMap<Sym, (IpiClass, bool)> = distinct_syms
            .keys()
            .map(|&s| {
                let name = func_name(&syms, s);
                let generic = name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("generic_smp_call_function"));
                (s, (IpiClass::of_function(name.as_deref()), generic))
            })
            .collect();
        Prepared {
            has_ipi,
            has_csd,
            scan,
            tgids,
            req_stack_pid,
            syms,
            func_class,
        }
    }
}

/// Display name of a request's function (`(none)` for a NULL callback).
pub(super) fn callback_name(syms: &SymbolTable, func: Sym) -> String {
    func_name(syms, func).unwrap_or_else(|| NO_CALLBACK.to_string())
}

/// The function a request asks for, `None` for a NULL callback.
fn func_name(syms: &SymbolTable, func: Sym) -> Option<String> {
    if func.addr() == Some(0) {
        return None;
    }
    let r = syms.get(Location::kernel(func));
    if !r.is_symbolized() && r.addr == 0 {
        return None;
    }
    Some(r.function())
}
