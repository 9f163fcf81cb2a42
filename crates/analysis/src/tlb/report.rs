//! The `tlb` section's report types, and the names its tables print.

use crate::stats::HistStats;
use serde::Serialize;
use std::collections::BTreeMap;

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
    pub(super) fn index(self) -> usize {
        self as usize
    }

    pub(super) const ALL: [IpiClass; 5] = [
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
    pub(super) fn total(&self) -> u64 {
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

/// What reschedule IPIs show as their function.
pub const NO_CALLBACK: &str = "(none)";
