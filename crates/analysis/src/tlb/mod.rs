//! TLB-shootdown and IPI hotspots (docs/design.md, "TLB shootdowns and IPIs").
//!
//! Data flow: one time-ordered pass (the `requests` module) turns the IPI-related
//! events into logical *requests*: "CPU c asked CPUs T to run function f".
//! The unit depends on what the trace has:
//!
//! * `csd:csd_queue_cpu` (one event per target; the function `func` is the
//!   logical one, e.g. `flush_tlb_func`): consecutive queue events of one
//!   sender CPU with the same callsite and function and ascending targets
//!   form one multi-target request; the `ipi:ipi_send_*` that follows is the
//!   hardware IPI of that request (its callback is the generic
//!   `generic_smp_call_function_single_interrupt`, so it does not name the
//!   logical function).
//! * otherwise `ipi:ipi_send_cpumask` / `ipi:ipi_send_cpu`, whose callback is
//!   the logical function on the multi-target path.
//! * a NULL callback is a reschedule IPI.
//!
//! `csd_function_entry/exit` on the target give delivery latency (queue ->
//! entry, matched by target CPU and csd pointer) and handler run time;
//! `tlb:tlb_flush` gives the receiving side (reason "remote shootdown") and
//! the pages of each shootdown (reason "remote IPI send"); the
//! [`crate::Timeline`] tells whether each target CPU was idle at send time.
//! All code locations are symbolized once through [`schedscope_trace::symbols`].
//!
//!
//! Files: `report` (the section's types), `requests` (the event pass),
//! `prepare` (the pass and the symbolization, before the timeline; the
//! events pushed in slices through [`TlbPass`], so that a stream of the
//! trace's events can feed it),
//! `finish` (classes, target states on the timeline, notes), `hotspots`
//! (top callsites and stacks), `senders` (top sending processes),
//! `request_rows` (one row per request, for exports).

mod finish;
mod hotspots;
mod prepare;
pub mod profile;
mod report;
mod request_rows;
mod requests;
mod senders;

pub(crate) use finish::finish;
pub(crate) use prepare::prepare;
pub use prepare::{Prepared, TlbPass};
pub use profile::{analyze_profile, ProfilePass, ProfileReport, ProfileRow};
pub use report::{
    flush_reason_name, pages_bucket, Callsite, ClassReport, FlushReason, IpiClass, Sender,
    SenderThread, StackRow, SymbolStats, TargetStates, TlbReport, NO_CALLBACK,
};
pub use request_rows::{requests, RequestRow};

use crate::{AnalysisError, Context};
use schedscope_trace::Dur;

/// The one event of [`EVENTS`] the section only counts (see
/// `Sections::tallied_events`).
pub const TALLIED: &str = "tlb:tlb_flush";

/// Events this analysis reads (any of the IPI ones suffices).
pub const EVENTS: &[&str] = &[
    "csd:csd_queue_cpu",
    "csd:csd_function_entry",
    "csd:csd_function_exit",
    "ipi:ipi_send_cpu",
    "ipi:ipi_send_cpumask",
    "tlb:tlb_flush",
];

/// Functions whose presence marks TLB-flush work (highlighted in tables).
pub const FLUSH_FUNCTIONS: &[&str] = &[
    "native_flush_tlb_multi",
    "native_flush_tlb_others",
    "flush_tlb_mm_range",
    "smp_call_function_many_cond",
    "flush_tlb_func",
    "flush_tlb_others",
    "arch_tlbbatch_flush",
];

/// Rows kept in JSON tables (text output shows `--top`).
const JSON_ROWS: usize = 100;

/// Whether the trace recorded `name` (its event was enabled), fired or not.
fn recorded(ctx: &Context, name: &str) -> bool {
    ctx.trace.count(name) > 0
        || ctx.trace.events_by_name.contains_key(name)
        || ctx.trace.name_id(name).is_some()
}

/// Whether `name` has events in the trace.
fn fired(ctx: &Context, name: &str) -> bool {
    ctx.trace.count(name) > 0
}

/// Compute the tlb section.
pub fn analyze(ctx: &Context) -> Result<TlbReport, AnalysisError> {
    finish(ctx, prepare(ctx)?)
}

/// A delivery or handler duration attributed to request index.
type Timed = (usize, Dur);

#[cfg(test)]
mod tests;
