//! The single time-ordered pass: IPI events -> logical requests, deliveries,
//! handler run times, tlb_flush records. No symbolization here; the caller
//! classifies requests once their function names are known.

use super::{Flush, Timed};
use schedscope_trace::{Cpu, EventData, StackId, Sym, Tid, Trace, Ts};
use std::collections::{BTreeMap, HashMap};

/// "CPU `cpu` (thread `tid`) asked `targets` to run `func`."
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Request {
    /// When the first queue/send event happened.
    pub ts: Ts,
    /// Sending CPU.
    pub cpu: Cpu,
    /// Sending thread.
    pub tid: Tid,
    /// Where it was queued/sent from.
    pub callsite: Sym,
    /// Function the targets run (0 = none: reschedule).
    pub func: Sym,
    /// Target CPUs, ascending for csd groups.
    pub targets: Vec<u32>,
    /// Call chain of the first event.
    pub stack: StackId,
    /// Hardware IPIs (`ipi_send_*`) attached.
    pub ipis: u32,
    /// An `ipi_send_*` with a callback seen in a trace that has csd events
    /// but not after a csd queue: either a generic IPI whose csd was not
    /// traced (dropped by the caller) or an IPI of another kind (irq_work...).
    pub standalone_ipi: bool,
    /// Built from csd_queue_cpu events.
    csd: bool,
}

/// Everything the pass found.
#[derive(Debug, Default)]
pub(super) struct Scan {
    pub requests: Vec<Request>,
    /// Queue -> entry latency per request index.
    pub deliveries: Vec<Timed>,
    /// Entry -> exit run time per request index.
    pub handlers: Vec<Timed>,
    pub flushes: Vec<Flush>,
    pub irq_vectors: BTreeMap<String, u64>,
    pub undelivered: u64,
    pub unmatched_ipis: u64,
}

fn is_null(s: Sym) -> bool {
    s.addr() == Some(0)
}

/// Run the pass. `has_csd`: the trace records csd:csd_queue_cpu, so that
/// ipi_send_* events with a callback are the hardware side of csd requests.
pub(super) fn scan(trace: &Trace, has_csd: bool) -> Scan {
    let mut out = Scan::default();
    let ncpu = (trace.nr_cpus as usize).max(1);
    // Open csd group per sending CPU.
    let mut open: Vec<Option<usize>> = vec![None; ncpu];
    // (target cpu, csd) -> (queue time, request index).
    let mut pending: HashMap<(u32, u64), (Ts, usize)> = HashMap::new();
    // Per target CPU: stack of running csd functions (csd, entry time, request).
    let mut running: Vec<Vec<(u64, Ts, Option<usize>)>> = vec![Vec::new(); ncpu];
    let mut irq_names: HashMap<u16, String> = HashMap::new();

    for e in &trace.events {
        let c = e.cpu.0 as usize;
        if c >= open.len() {
            open.resize(c + 1, None);
            running.resize(c + 1, Vec::new());
        }
        match e.data {
            EventData::CsdQueue {
                cpu: target,
                callsite,
                func,
                csd,
            } => {
                let joined = open[c].and_then(|i| {
                    let r = &mut out.requests[i];
                    let ok = r.csd
                        && r.tid == e.tid
                        && r.callsite == callsite
                        && r.func == func
                        && r.targets.last().is_some_and(|&l| target.0 > l);
                    ok.then(|| {
                        r.targets.push(target.0);
                        i
                    })
                });
                let idx = match joined {
                    Some(i) => i,
                    None => {
                        out.requests.push(Request {
                            ts: e.ts,
                            cpu: e.cpu,
                            tid: e.tid,
                            callsite,
                            func,
                            targets: vec![target.0],
                            stack: e.stack,
                            ipis: 0,
                            standalone_ipi: false,
                            csd: true,
                        });
                        out.requests.len() - 1
                    }
                };
                open[c] = Some(idx);
                if pending.insert((target.0, csd), (e.ts, idx)).is_some() {
                    // The previous queue of this csd was never seen running.
                    out.undelivered += 1;
                }
            }
            EventData::IpiSendCpu {
                cpu: target,
                callsite,
                callback,
            } => {
                ipi(
                    &mut out,
                    &mut open,
                    e,
                    vec![target.0],
                    callsite,
                    callback,
                    has_csd,
                );
            }
            EventData::IpiSendCpumask {
                mask,
                callsite,
                callback,
            } => {
                let targets: Vec<u32> = trace
                    .cpumasks
                    .get(mask.0 as usize)
                    .map(|m| m.iter().collect())
                    .unwrap_or_default();
                ipi(&mut out, &mut open, e, targets, callsite, callback, has_csd);
            }
            EventData::CsdFunctionEntry { csd, .. } => {
                open[c] = None;
                let ri = pending.remove(&(e.cpu.0, csd)).map(|(qts, ri)| {
                    out.deliveries.push((ri, e.ts.since(qts)));
                    ri
                });
                running[c].push((csd, e.ts, ri));
            }
            EventData::CsdFunctionExit { csd, .. } => {
                open[c] = None;
                if let Some(pos) = running[c].iter().rposition(|r| r.0 == csd) {
                    let (_, ets, ri) = running[c].remove(pos);
                    running[c].truncate(pos);
                    if let Some(ri) = ri {
                        out.handlers.push((ri, e.ts.since(ets)));
                    }
                }
            }
            EventData::TlbFlush { reason, pages } => {
                open[c] = None;
                out.flushes.push(Flush {
                    cpu: e.cpu,
                    reason,
                    pages,
                });
            }
            EventData::IrqVector { entry, .. } => {
                open[c] = None;
                if entry {
                    let name = irq_names
                        .entry(e.name.0)
                        .or_insert_with(|| trace.event_name(e.name).to_string());
                    *out.irq_vectors.entry(name.clone()).or_default() += 1;
                }
            }
            _ => open[c] = None,
        }
    }
    out.undelivered += pending.len() as u64;
    out
}

fn ipi(
    out: &mut Scan,
    open: &mut [Option<usize>],
    e: &schedscope_trace::Event,
    targets: Vec<u32>,
    callsite: Sym,
    callback: Sym,
    has_csd: bool,
) {
    let c = e.cpu.0 as usize;
    let group = open[c].take();
    if !is_null(callback) && has_csd {
        if let Some(i) = group {
            out.requests[i].ipis += 1;
            return;
        }
    }
    out.requests.push(Request {
        ts: e.ts,
        cpu: e.cpu,
        tid: e.tid,
        callsite,
        func: callback,
        targets,
        stack: e.stack,
        ipis: 1,
        standalone_ipi: has_csd && !is_null(callback),
        csd: false,
    });
}
