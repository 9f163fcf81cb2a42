//! One row per request (for per-request exports such as the Parquet
//! `ipi_request` table), with its delivery and handler times.

use super::finish::classify;
use super::prepare::{callback_name, prepare};
use super::report::IpiClass;
#[cfg(doc)]
use super::report::{ClassReport, TlbReport, NO_CALLBACK};
use crate::{AnalysisError, Context};
use schedscope_trace::symbols::Location;
use schedscope_trace::{Cpu, Tid, Ts};

/// One logical IPI request, as the section counts it (for per-request
/// exports such as the Parquet `ipi_request` table; never part of the
/// report JSON). Hardware IPIs that only restate a csd request are not
/// requests (see [`TlbReport::unmatched_ipis`](super::TlbReport::unmatched_ipis)), so the rows of a class
/// number [`ClassReport::count`](super::ClassReport::count), and their delivery and handler times are
/// exactly the samples behind [`ClassReport::delivery`](super::ClassReport::delivery) and
/// [`ClassReport::handler`](super::ClassReport::handler).
#[derive(Clone, Debug, PartialEq)]
pub struct RequestRow {
    /// When the first queue/send event happened.
    pub ts: Ts,
    /// Sending CPU.
    pub cpu: Cpu,
    /// Sending thread.
    pub tid: Tid,
    /// The class (from the function the targets run).
    pub class: IpiClass,
    /// Where it was queued/sent from (symbolized).
    pub callsite: String,
    /// The function the targets run ([`NO_CALLBACK`](super::NO_CALLBACK) for none).
    pub function: String,
    /// Target CPUs.
    pub targets: Vec<u32>,
    /// Hardware IPIs (`ipi_send_*`) attached.
    pub ipis: u32,
    /// Queue -> `csd_function_entry` latency of each delivery seen, in the
    /// order the entries happened.
    pub delivery_ns: Vec<u64>,
    /// `csd_function_entry` -> exit run time of each handler run seen.
    pub handler_ns: Vec<u64>,
}

/// Every request of the section, in time order (see [`RequestRow`]). Runs
/// the section's event pass and symbolization again; the timeline is not
/// read.
pub fn requests(ctx: &Context) -> Result<Vec<RequestRow>, AnalysisError> {
    let p = prepare(ctx)?;
    let (classified, _, _) = classify(&p.scan, &p.func_class);
    let mut row_of: Vec<Option<usize>> = vec![None; p.scan.requests.len()];
    let mut rows: Vec<RequestRow> = Vec::with_capacity(classified.len());
    for &(class, r, i) in &classified {
        row_of[i] = Some(rows.len());
        rows.push(RequestRow {
            ts: r.ts,
            cpu: r.cpu,
            tid: r.tid,
            class,
            callsite: p.syms.name(Location::kernel(r.callsite)),
            function: callback_name(&p.syms, r.func),
            targets: r.targets.iter().collect(),
            ipis: r.ipis,
            delivery_ns: Vec::new(),
            handler_ns: Vec::new(),
        });
    }
    for (ri, d) in &p.scan.deliveries {
        if let Some(row) = row_of.get(*ri).copied().flatten() {
            rows[row].delivery_ns.push(d.0);
        }
    }
    for (ri, d) in &p.scan.handlers {
        if let Some(row) = row_of.get(*ri).copied().flatten() {
            rows[row].handler_ns.push(d.0);
        }
    }
    Ok(rows)
}
