//! The rest of the section, on the timeline: the requests classified,
//! accumulated per class (what each target CPU ran at send time, delivery
//! and handler latencies), the receiving side tallied, and the notes on
//! what the trace cannot show.

use super::hotspots::hotspots;
use super::prepare::Prepared;
use super::report::{
    flush_reason_name, pages_bucket, ClassReport, FlushReason, IpiClass, SymbolStats, TargetStates,
    TlbReport,
};
use super::requests::{self, Request};
use super::senders::{senders, Tgids};
use super::{recorded, EVENTS, JSON_ROWS};
use crate::stats::HistStats;
use crate::{AnalysisError, Context};
use schedscope_trace::hash::FxMap;
use schedscope_trace::{Sym, Tid, Ts};
use std::collections::BTreeMap;

/// The rest of [`analyze`], on the timeline, in phases: classify the
/// requests, accumulate per class (target states at send time on the
/// timeline, latencies), name the hotspots, tally the receiving side, and
/// say where the shootdown count comes from.
pub(crate) fn finish(ctx: &Context, p: Prepared<'_>) -> Result<TlbReport, AnalysisError> {
    let Prepared {
        has_ipi,
        has_csd,
        scan,
        mut tgids,
        req_stack_pid,
        syms,
        func_class,
    } = p;
    let trace = ctx.trace;
    let duration = trace.duration();
    let secs = duration.0 as f64 / 1e9;
    let rate = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };

    let (classified, class_by_index, unmatched_ipis) = classify(&scan, &func_class);
    let tl = ctx.timeline;
    let mut per_class = accumulate(&classified, &class_by_index, &scan, tl, &mut tgids);
    let mut ipi_classes: Vec<ClassReport> = Vec::new();
    for class in IpiClass::ALL {
        let Some(a) = per_class[class.index()].as_mut() else {
            continue;
        };
        ipi_classes.push(ClassReport {
            class,
            count: a.count,
            per_second: rate(a.count),
            targets: a.targets,
            ipis_sent: a.ipis,
            targets_hist: a.targets_hist.clone(),
            targets_at_send: a.states.clone(),
            delivery: HistStats::of(&mut a.delivery),
            handler: HistStats::of(&mut a.handler),
            senders: senders(ctx, &mut tgids, &a.senders, a.count, 10),
        });
    }
    let total = classified.len() as u64;
    let (top_callsites, top_stacks, with_stack) =
        hotspots(trace, &syms, &classified, &req_stack_pid);
    let tlb_flush_by_reason = flush_reasons(&scan);

    let tlb_class = per_class[IpiClass::TlbShootdown.index()].as_ref();
    let mut notes = Vec::new();
    let (shootdowns, source) = if has_ipi {
        let src = if has_csd {
            "csd:csd_queue_cpu"
        } else {
            "ipi:ipi_send_cpu/ipi_send_cpumask"
        };
        (tlb_class.map(|a| a.count).unwrap_or(0), src.to_string())
    } else {
        notes.push(no_ipi_note(ctx));
        let n = tlb_flush_by_reason
            .get("remote IPI send")
            .map(|r| r.count)
            .unwrap_or(0);
        (n, "tlb:tlb_flush remote IPI send".to_string())
    };
    notes.extend(missing_notes(
        ctx,
        has_ipi && total > 0 && with_stack == 0,
        has_csd,
    ));
    let mut states = tlb_class.map(|a| a.states.clone()).unwrap_or_default();
    if states.total() == 0 {
        states = TargetStates::default();
    }
    let senders_all = tlb_class
        .map(|a| senders(ctx, &mut tgids, &a.senders, a.count, JSON_ROWS))
        .unwrap_or_default();
    let unsymbolized = syms.unsymbolized_count() as u64;
    Ok(TlbReport {
        shootdowns,
        shootdowns_per_second: rate(shootdowns),
        targets_hist: tlb_class
            .map(|a| a.targets_hist.clone())
            .unwrap_or_default(),
        targets_at_send: states,
        duration_ns: duration.0,
        source,
        ipi_classes,
        top_callsites,
        top_stacks,
        senders: senders_all,
        tlb_flush_by_reason,
        irq_vectors: scan.irq_vectors.clone(),
        undelivered: scan.undelivered,
        unmatched_ipis,
        symbols: SymbolStats {
            distinct: syms.len() as u64,
            unsymbolized,
            kernel_source: syms.kernel_source.to_string(),
        },
        notes,
    })
}

/// A request with its class and its index in the scan.
pub(super) type Classified<'s> = (IpiClass, &'s Request, usize);

/// Classify every request by its function; hardware IPIs that only restate
/// a csd request are dropped (and counted with the unmatched IPIs). Also
/// returns each request's class by index and the unmatched-IPI count.
pub(super) fn classify<'s>(
    scan: &'s requests::Scan,
    func_class: &FxMap<Sym, (IpiClass, bool)>,
) -> (Vec<Classified<'s>>, Vec<Option<IpiClass>>, u64) {
    let mut unmatched_ipis = scan.unmatched_ipis;
    let mut classified: Vec<Classified> = Vec::with_capacity(scan.requests.len());
    let mut class_by_index: Vec<Option<IpiClass>> = vec![None; scan.requests.len()];
    for (i, r) in scan.requests.iter().enumerate() {
        let (class, generic) = func_class
            .get(&r.func)
            .copied()
            .unwrap_or((IpiClass::Reschedule, false));
        if r.standalone_ipi && generic {
            unmatched_ipis += 1;
            continue;
        }
        class_by_index[i] = Some(class);
        classified.push((class, r, i));
    }
    (classified, class_by_index, unmatched_ipis)
}

/// Per class: counts, what each target CPU ran at send time (from the
/// timeline), senders, delivery and handler latencies.
fn accumulate(
    classified: &[Classified],
    class_by_index: &[Option<IpiClass>],
    scan: &requests::Scan,
    tl: &crate::Timeline,
    tgids: &mut Tgids,
) -> [Option<ClassAcc>; IpiClass::ALL.len()] {
    let mut per_class: [Option<ClassAcc>; IpiClass::ALL.len()] = Default::default();
    // Requests come in time order: walk each CPU's runs forward.
    let mut current = CpuCursor::new(tl);
    for &(class, r, _) in classified {
        let acc = per_class[class.index()].get_or_insert_with(ClassAcc::default);
        acc.count += 1;
        acc.ipis += r.ipis as u64;
        acc.targets += r.targets.len() as u64;
        *acc.targets_hist.entry(r.targets.len() as u32).or_default() += 1;
        let sender_pid = tgids.pid_of(r.tid);
        for t in r.targets.iter() {
            match current.at(t, r.ts) {
                None => acc.states.unknown += 1,
                Some(cur) if cur.is_idle() => acc.states.idle += 1,
                Some(cur) => {
                    if cur == r.tid || (tgids.known(cur) && tgids.pid_of(cur) == sender_pid) {
                        acc.states.same_process += 1
                    } else if tgids.known(cur) && tgids.known(r.tid) {
                        acc.states.other_process += 1
                    } else {
                        acc.states.running_unknown_process += 1
                    }
                }
            }
        }
        *acc.senders.entry(r.tid).or_default() += 1;
    }
    for (ri, d) in &scan.deliveries {
        if let Some(class) = class_by_index.get(*ri).copied().flatten() {
            per_class[class.index()]
                .get_or_insert_with(ClassAcc::default)
                .delivery
                .push(d.0);
        }
    }
    for (ri, d) in &scan.handlers {
        if let Some(class) = class_by_index.get(*ri).copied().flatten() {
            per_class[class.index()]
                .get_or_insert_with(ClassAcc::default)
                .handler
                .push(d.0);
        }
    }
    per_class
}

/// The receiving side: tlb_flush tallies by reason, with pages.
fn flush_reasons(scan: &requests::Scan) -> BTreeMap<String, FlushReason> {
    let mut tlb_flush_by_reason: BTreeMap<String, FlushReason> = BTreeMap::new();
    for (reason, f) in &scan.flushes {
        let pages_hist: BTreeMap<String, u64> = f
            .pages
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(i, &n)| (pages_bucket(requests::bucket_pages(i)), n))
            .collect();
        tlb_flush_by_reason.insert(
            flush_reason_name(*reason),
            FlushReason {
                reason: *reason,
                count: f.count,
                by_cpu: f.by_cpu.clone(),
                full_flushes: f.pages[requests::page_bucket(-1)],
                pages_hist,
            },
        );
    }
    tlb_flush_by_reason
}

/// Why shootdowns are counted from tlb_flush (no csd/ipi event fired).
fn no_ipi_note(ctx: &Context) -> String {
    let recorded_ipi: Vec<&str> = EVENTS[..5]
        .iter()
        .copied()
        .filter(|n| recorded(ctx, n))
        .collect();
    let why = if recorded_ipi.is_empty() {
        "the trace has no csd/ipi events".to_string()
    } else {
        format!(
            "{} recorded but never fired (a shootdown to a single CPU takes the \
             csd:csd_queue_cpu + ipi:ipi_send_cpu path)",
            recorded_ipi.join(", ")
        )
    };
    format!(
        "{why}: shootdowns are counted from tlb_flush \"remote IPI send\", one per \
         native_flush_tlb_multi call, including calls whose targets were all skipped \
         (lazy TLB) and sent no IPI; targets, callsites and latencies need \
         csd:csd_queue_cpu, csd:csd_function_entry, csd:csd_function_exit, \
         ipi:ipi_send_cpu"
    )
}

/// Notes on what the trace lacks for the other figures.
fn missing_notes(ctx: &Context, no_stacks: bool, has_csd: bool) -> Vec<String> {
    let mut notes = Vec::new();
    if has_csd && !recorded(ctx, "csd:csd_function_entry") {
        notes.push(
            "no csd:csd_function_entry/exit events: delivery latency and handler run time unknown"
                .into(),
        );
    }
    if !recorded(ctx, "tlb:tlb_flush") {
        notes.push("no tlb:tlb_flush events: receiving side and page counts unknown".into());
    }
    if no_stacks {
        notes.push(
            "no call chains: record with `schedscope record --call-graph` (or `perf record -g`) \
             for top stacks"
                .into(),
        );
    }
    if ctx.timeline.cpus.iter().all(|runs| runs.is_empty()) {
        notes.push("no sched:sched_switch timeline: target CPU states at send time unknown".into());
    }
    if !has_csd && recorded(ctx, "ipi:ipi_send_cpu") {
        notes.push(
            "without csd:csd_queue_cpu, single-target IPIs carry only the generic callback \
             (generic_smp_call_function_single_interrupt): their logical function is unknown"
                .into(),
        );
    }
    notes
}

#[derive(Default)]
struct ClassAcc {
    count: u64,
    ipis: u64,
    targets: u64,
    targets_hist: BTreeMap<u32, u64>,
    states: TargetStates,
    delivery: Vec<u64>,
    handler: Vec<u64>,
    senders: FxMap<Tid, u64>,
}

/// Who was current on a CPU at a time, for queries in time order: each
/// CPU's run list is walked forward once (a binary search when a query
/// goes back in time).
struct CpuCursor<'a> {
    tl: &'a crate::Timeline,
    /// Per CPU: runs that started at or before the last query time.
    pos: Vec<usize>,
    last: Vec<Ts>,
}

impl<'a> CpuCursor<'a> {
    fn new(tl: &'a crate::Timeline) -> CpuCursor<'a> {
        CpuCursor {
            tl,
            pos: vec![0; tl.cpus.len()],
            last: vec![Ts(0); tl.cpus.len()],
        }
    }

    /// The thread whose run on `cpu` covers `ts` (the last run that started
    /// at or before `ts`, if it had not ended by then).
    fn at(&mut self, cpu: u32, ts: Ts) -> Option<Tid> {
        let c = cpu as usize;
        let runs = self.tl.cpus.get(c)?;
        let mut i = self.pos[c];
        if ts < self.last[c] {
            i = runs.partition_point(|r| r.ts <= ts);
        } else {
            while runs.get(i).is_some_and(|r| r.ts <= ts) {
                i += 1;
            }
        }
        self.pos[c] = i;
        self.last[c] = ts;
        let r = runs.get(i.checked_sub(1)?)?;
        r.end.is_none_or(|e| ts < e).then_some(r.tid)
    }
}
