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
//! [`profile`] is the cpu-clock "top callers" table of `record --profile`.

pub mod profile;
mod requests;

pub use profile::{analyze_profile, ProfileReport, ProfileRow};

use crate::stats::HistStats;
use crate::{AnalysisError, Context};
use requests::Request;
use schedscope_trace::hash::FxMap;
use schedscope_trace::symbols::{chain_locations, Location, SymbolTable};
use schedscope_trace::{Cpu, Dur, StackId, Sym, TaskTable, Tid, Trace, Ts};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};

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

/// What an IPI asked the target CPU to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IpiClass {
    /// The target runs `flush_tlb_func`.
    TlbShootdown,
    /// The target runs `sched_ttwu_pending` (queued remote wakeup).
    RemoteWakeup,
    /// The target runs `nohz_csd_func` (idle-balance kick).
    IdleBalanceKick,
    /// No callback: a reschedule IPI.
    Reschedule,
    /// Any other function.
    Other,
}

impl IpiClass {
    /// Classify by the function the target runs (`None`/empty = no callback).
    pub fn of_function(name: Option<&str>) -> IpiClass {
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            return IpiClass::Reschedule;
        };
        let base = name.split(['+', '.']).next().unwrap_or(name);
        if base.starts_with("flush_tlb_func") {
            IpiClass::TlbShootdown
        } else if base == "sched_ttwu_pending" {
            IpiClass::RemoteWakeup
        } else if base == "nohz_csd_func" {
            IpiClass::IdleBalanceKick
        } else {
            IpiClass::Other
        }
    }

    /// Human label.
    pub fn label(self) -> &'static str {
        match self {
            IpiClass::TlbShootdown => "TLB shootdown",
            IpiClass::RemoteWakeup => "remote wakeup",
            IpiClass::IdleBalanceKick => "idle-balance kick",
            IpiClass::Reschedule => "reschedule",
            IpiClass::Other => "other",
        }
    }

    /// Position in [`IpiClass::ALL`].
    fn index(self) -> usize {
        self as usize
    }

    const ALL: [IpiClass; 5] = [
        IpiClass::TlbShootdown,
        IpiClass::RemoteWakeup,
        IpiClass::IdleBalanceKick,
        IpiClass::Reschedule,
        IpiClass::Other,
    ];
}

/// What the target CPUs were doing when the IPI was sent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TargetStates {
    /// Target was idle (swapper): lazy TLB or gang scheduling would avoid these.
    pub idle: u64,
    /// Target ran a thread of the sending process.
    pub same_process: u64,
    /// Target ran another process (another mm).
    pub other_process: u64,
    /// Target ran another thread, but the trace does not tell the process
    /// (no tgid for it or the sender, e.g. text traces without tgids).
    pub running_unknown_process: u64,
    /// Not known (no sched_switch before the send on that CPU).
    pub unknown: u64,
}

impl TargetStates {
    fn total(&self) -> u64 {
        self.idle
            + self.same_process
            + self.other_process
            + self.running_unknown_process
            + self.unknown
    }
}

/// One sending thread.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SenderThread {
    /// Thread id.
    pub tid: i32,
    /// Its comm.
    pub comm: String,
    /// Requests it sent.
    pub count: u64,
}

/// One sending process (tgid).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sender {
    /// Process id (tgid; the tid when the tgid is unknown).
    pub pid: i32,
    /// Process comm.
    pub comm: String,
    /// Requests sent.
    pub count: u64,
    /// Fraction of the class's requests.
    pub share: f64,
    /// Its busiest threads (at most 10).
    pub threads: Vec<SenderThread>,
}

/// Per-class statistics.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClassReport {
    /// The class.
    pub class: IpiClass,
    /// Logical requests (one per sender call, whatever the number of targets).
    pub count: u64,
    /// Requests per second of trace.
    pub per_second: f64,
    /// Target CPUs summed over requests.
    pub targets: u64,
    /// Hardware IPIs sent (`ipi:ipi_send_*` attached to these requests).
    pub ipis_sent: u64,
    /// Number of targets -> requests.
    pub targets_hist: BTreeMap<u32, u64>,
    /// Target CPU states at send time.
    pub targets_at_send: TargetStates,
    /// Queue (`csd_queue_cpu`) to `csd_function_entry` on the target.
    pub delivery: Option<HistStats>,
    /// `csd_function_entry` to `csd_function_exit` on the target.
    pub handler: Option<HistStats>,
    /// Top sending processes.
    pub senders: Vec<Sender>,
}

/// A hotspot: (callsite, function run by the target).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Callsite {
    /// Function that sent/queued the IPI.
    pub callsite: String,
    /// Function the target runs.
    pub callback: String,
    /// Its class.
    pub class: IpiClass,
    /// Requests.
    pub count: u64,
    /// Fraction of all requests.
    pub share: f64,
}

/// A hot call stack (functions, innermost first).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StackRow {
    /// Symbolized frames, innermost first.
    pub frames: Vec<String>,
    /// Function the targets ran.
    pub callback: String,
    /// Its class.
    pub class: IpiClass,
    /// Requests with this stack.
    pub count: u64,
    /// Fraction of requests that had a stack.
    pub share: f64,
}

/// `tlb:tlb_flush` events of one reason.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FlushReason {
    /// Raw reason code.
    pub reason: i32,
    /// Events.
    pub count: u64,
    /// Events per CPU that emitted them (index = CPU).
    pub by_cpu: Vec<u64>,
    /// Full flushes (`pages` = -1 / TLB_FLUSH_ALL).
    pub full_flushes: u64,
    /// Ranged flushes by page count (`"1"`, `"2-3"`, `"4-7"`, ...).
    pub pages_hist: BTreeMap<String, u64>,
}

/// Symbolization summary.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SymbolStats {
    /// Distinct locations symbolized.
    pub distinct: u64,
    /// Of which without a name.
    pub unsymbolized: u64,
    /// Kernel symbol source used.
    pub kernel_source: String,
}

/// The `tlb` section.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TlbReport {
    /// TLB-shootdown requests (target function flush_tlb_func); from
    /// tlb_flush "remote IPI send" when the trace has no IPI events.
    pub shootdowns: u64,
    /// Shootdowns per second of trace.
    pub shootdowns_per_second: f64,
    /// Number of target CPUs -> shootdowns.
    pub targets_hist: BTreeMap<u32, u64>,
    /// Shootdown target CPU states at send time (idle targets are the ones
    /// lazy TLB or gang scheduling avoids).
    pub targets_at_send: TargetStates,
    /// Trace duration used for rates (ns).
    pub duration_ns: u64,
    /// Which events the requests came from.
    pub source: String,
    /// Per class.
    pub ipi_classes: Vec<ClassReport>,
    /// Top (callsite, callback) pairs over all requests.
    pub top_callsites: Vec<Callsite>,
    /// Top call stacks over all requests that carry one.
    pub top_stacks: Vec<StackRow>,
    /// Processes initiating shootdowns.
    pub senders: Vec<Sender>,
    /// `tlb:tlb_flush` by reason name.
    pub tlb_flush_by_reason: BTreeMap<String, FlushReason>,
    /// irq_vectors entry events by name.
    pub irq_vectors: BTreeMap<String, u64>,
    /// Queued csds never seen entering on the target (trace ended, or lost).
    pub undelivered: u64,
    /// Hardware IPIs with the generic callback and no csd_queue_cpu before them.
    pub unmatched_ipis: u64,
    /// Symbolization summary.
    pub symbols: SymbolStats,
    /// What the data cannot show and why.
    pub notes: Vec<String>,
}

/// `tlb_flush` reason names, as the kernel's print fmt spells them.
pub fn flush_reason_name(reason: i32) -> String {
    match reason {
        0 => "flush on task switch".into(),
        1 => "remote shootdown".into(),
        2 => "local shootdown".into(),
        3 => "local MM shootdown".into(),
        4 => "remote IPI send".into(),
        5 => "remote wrong CPU".into(),
        r => format!("reason {r}"),
    }
}

/// Page-count bucket label for `tlb_flush` (`full` for TLB_FLUSH_ALL).
pub fn pages_bucket(pages: i64) -> String {
    if pages < 0 {
        return "full".into();
    }
    if pages <= 1 {
        return pages.to_string();
    }
    let lo = 1u64 << (63 - (pages as u64).leading_zeros());
    format!("{lo}-{}", lo * 2 - 1)
}

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

/// What [`prepare`] computes for [`finish`].
pub(crate) struct Prepared<'a> {
    has_ipi: bool,
    has_csd: bool,
    scan: requests::Scan,
    tgids: Tgids<'a>,
    req_stack_pid: Vec<Option<Tid>>,
    syms: SymbolTable,
    func_class: FxMap<Sym, (IpiClass, bool)>,
}

/// The part of [`analyze`] that does not read the timeline (most of its
/// time: the pass over the events and the symbolization), so that it can
/// run while the timeline is built; `ctx.timeline` is not read.
pub(crate) fn prepare<'a>(ctx: &Context<'a>) -> Result<Prepared<'a>, AnalysisError> {
    let trace = ctx.trace;
    if !EVENTS.iter().any(|n| recorded(ctx, n)) {
        return Err(AnalysisError::missing("tlb", EVENTS));
    }
    let ipi_events = &EVENTS[..5];
    // IPI mode when any csd/ipi event fired; otherwise count shootdowns from
    // tlb_flush "remote IPI send" when that fired.
    let has_ipi = ipi_events.iter().any(|n| fired(ctx, n)) || !fired(ctx, "tlb:tlb_flush");
    let has_csd = recorded(ctx, "csd:csd_queue_cpu");
    let scan = requests::scan(trace, has_csd);

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
    Ok(Prepared {
        has_ipi,
        has_csd,
        scan,
        tgids,
        req_stack_pid,
        syms,
        func_class,
    })
}

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

/// One logical IPI request, as the section counts it (for per-request
/// exports such as the Parquet `ipi_request` table; never part of the
/// report JSON). Hardware IPIs that only restate a csd request are not
/// requests (see [`TlbReport::unmatched_ipis`]), so the rows of a class
/// number [`ClassReport::count`], and their delivery and handler times are
/// exactly the samples behind [`ClassReport::delivery`] and
/// [`ClassReport::handler`].
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
    /// The function the targets run ([`NO_CALLBACK`] for none).
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

/// A request with its class and its index in the scan.
type Classified<'s> = (IpiClass, &'s Request, usize);

/// Classify every request by its function; hardware IPIs that only restate
/// a csd request are dropped (and counted with the unmatched IPIs). Also
/// returns each request's class by index and the unmatched-IPI count.
fn classify<'s>(
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

/// The top callsites and top stacks (counted by raw keys first, then each
/// distinct key named once: different addresses in one function merge),
/// and how many requests had a stack.
fn hotspots(
    trace: &Trace,
    syms: &SymbolTable,
    classified: &[Classified],
    req_stack_pid: &[Option<Tid>],
) -> (Vec<Callsite>, Vec<StackRow>, u64) {
    let total = classified.len() as u64;
    let mut by_site_raw: FxMap<(Sym, Sym, IpiClass), u64> = FxMap::default();
    let mut by_stack_raw: FxMap<(StackId, Option<Tid>, Sym, IpiClass), u64> = FxMap::default();
    for &(class, r, i) in classified {
        *by_site_raw.entry((r.callsite, r.func, class)).or_default() += 1;
        if r.stack.is_some() {
            *by_stack_raw
                .entry((r.stack, req_stack_pid[i], r.func, class))
                .or_default() += 1;
        }
    }
    let mut by_site: HashMap<(String, String, IpiClass), u64> = HashMap::new();
    for ((cs, f, class), n) in by_site_raw {
        let key = (
            syms.name(Location::kernel(cs)),
            callback_name(syms, f),
            class,
        );
        *by_site.entry(key).or_default() += n;
    }
    let mut by_stack: HashMap<(Vec<String>, String, IpiClass), u64> = HashMap::new();
    let mut with_stack = 0u64;
    for ((id, pid, f, class), n) in by_stack_raw {
        let Some(st) = trace.stack(id) else { continue };
        let mut fr: Vec<String> = chain_locations(st, pid)
            .into_iter()
            .map(|l| match syms.resolved(l) {
                // Group stacks whose user part cannot be named.
                Some(r) if l.user && !r.is_symbolized() => {
                    format!("[unsymbolized user frames: {}]", r.reason)
                }
                Some(r) => r.function(),
                None => syms.name(l),
            })
            .collect();
        fr.dedup();
        if !fr.is_empty() {
            with_stack += n;
            *by_stack
                .entry((fr, callback_name(syms, f), class))
                .or_default() += n;
        }
    }
    let share = |n: u64, of: u64| if of > 0 { n as f64 / of as f64 } else { 0.0 };
    let mut top_callsites: Vec<Callsite> = by_site
        .into_iter()
        .map(|((callsite, callback, class), count)| Callsite {
            callsite,
            callback,
            class,
            count,
            share: share(count, total),
        })
        .collect();
    top_callsites.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| (&a.callsite, &a.callback).cmp(&(&b.callsite, &b.callback)))
    });
    top_callsites.truncate(JSON_ROWS);
    let mut top_stacks: Vec<StackRow> = by_stack
        .into_iter()
        .map(|((frames, callback, class), count)| StackRow {
            frames,
            callback,
            class,
            count,
            share: share(count, with_stack),
        })
        .collect();
    top_stacks.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| a.frames.cmp(&b.frames))
            .then_with(|| a.callback.cmp(&b.callback))
    });
    top_stacks.truncate(JSON_ROWS);
    (top_callsites, top_stacks, with_stack)
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

/// Memoized thread -> tgid lookups (the task table hashes with SipHash).
struct Tgids<'a> {
    tasks: &'a TaskTable,
    memo: FxMap<Tid, Option<Tid>>,
}

impl<'a> Tgids<'a> {
    fn new(tasks: &'a TaskTable) -> Tgids<'a> {
        Tgids {
            tasks,
            memo: FxMap::default(),
        }
    }
    fn tgid(&mut self, tid: Tid) -> Option<Tid> {
        let tasks = self.tasks;
        *self.memo.entry(tid).or_insert_with(|| tasks.tgid(tid))
    }
    /// The process of `tid`: its tgid when known (> 0), else itself.
    fn pid_of(&mut self, tid: Tid) -> Option<Tid> {
        self.tgid(tid).filter(|p| p.0 > 0).or(Some(tid))
    }
    /// Whether the tgid of `tid` is known.
    fn known(&mut self, tid: Tid) -> bool {
        self.tgid(tid).is_some_and(|p| p.0 > 0)
    }
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

/// Display name of a request's function (`(none)` for a NULL callback).
fn callback_name(syms: &SymbolTable, func: Sym) -> String {
    func_name(syms, func).unwrap_or_else(|| NO_CALLBACK.to_string())
}

/// What reschedule IPIs show as their function.
pub const NO_CALLBACK: &str = "(none)";

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

/// The top `rows` sending processes of `by_tid` (requests per thread),
/// names resolved for those rows only.
fn senders(
    ctx: &Context,
    tgids: &mut Tgids,
    by_tid: &FxMap<Tid, u64>,
    total: u64,
    rows: usize,
) -> Vec<Sender> {
    let tasks = &ctx.trace.tasks;
    let mut by_pid: FxMap<Tid, Vec<(Tid, u64)>> = FxMap::default();
    for (&tid, &n) in by_tid {
        let pid = tgids.tgid(tid).filter(|p| p.0 > 0).unwrap_or(tid);
        by_pid.entry(pid).or_default().push((tid, n));
    }
    // (pid, requests, its threads with their requests)
    type Proc = (Tid, u64, Vec<(Tid, u64)>);
    let mut procs: Vec<Proc> = by_pid
        .into_iter()
        .map(|(pid, threads)| (pid, threads.iter().map(|t| t.1).sum(), threads))
        .collect();
    procs.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    procs.truncate(rows);
    procs
        .into_iter()
        .map(|(pid, count, mut threads)| {
            threads.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let comm = match tasks.comm(pid) {
                "" => threads
                    .first()
                    .map(|t| tasks.comm(t.0).to_string())
                    .unwrap_or_default(),
                c => c.to_string(),
            };
            Sender {
                pid: pid.0,
                comm,
                count,
                share: if total > 0 {
                    count as f64 / total as f64
                } else {
                    0.0
                },
                threads: threads
                    .iter()
                    .take(10)
                    .map(|&(tid, count)| SenderThread {
                        tid: tid.0,
                        comm: tasks.comm(tid).to_string(),
                        count,
                    })
                    .collect(),
            }
        })
        .collect()
}

/// A delivery or handler duration attributed to request index.
type Timed = (usize, Dur);

#[cfg(test)]
mod tests;
