//! The [`Trace`] container: events sorted by time plus everything they refer to.

use crate::event::{CpuMask, Event, EventData, NameId, StackId, Sym};
use crate::ids::{Cpu, Dur, Tid, Ts};
use crate::strings::Strings;
use crate::task::TaskTable;
use serde::Serialize;
use std::collections::BTreeMap;

/// The input format a trace was decoded from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceFormat {
    /// perf.data (PERFILE2), from `perf record` or `schedscope record`.
    PerfData,
    /// Text from /sys/kernel/tracing/trace (or trace_pipe).
    FtraceText,
    /// Text from `trace-cmd report`.
    TraceCmdText,
    /// Text from `perf script` (default output).
    PerfScriptText,
    /// trace-cmd's binary trace.dat (versions 6 and 7).
    TraceDat,
}

impl TraceFormat {
    /// Short human name.
    pub fn as_str(self) -> &'static str {
        match self {
            TraceFormat::PerfData => "perf.data",
            TraceFormat::FtraceText => "ftrace text",
            TraceFormat::TraceCmdText => "trace-cmd report text",
            TraceFormat::PerfScriptText => "perf script text",
            TraceFormat::TraceDat => "trace-cmd trace.dat",
        }
    }
}

/// How bad a [`Warning`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Worth knowing, results unaffected.
    Info,
    /// Some data is missing or was skipped; results may be incomplete.
    DataLoss,
    /// The file is damaged; results cover only the part before the damage.
    Error,
}

/// A counted anomaly met while decoding (perfetto's `stats`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Warning {
    /// How bad.
    pub severity: Severity,
    /// What happened, with file offsets or line numbers where known.
    pub message: String,
    /// How many times (records, lines, events) it happened.
    pub count: u64,
}

/// A sample of one cgroup's CFS bandwidth counters (from `schedscope record --cgroup`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CgroupSample {
    /// When the sample was taken (same clock as the events).
    pub ts: Ts,
    /// cgroup path relative to the controller root, e.g. `/L1/L2/C1`.
    pub path: String,
    /// cfs_quota_us (cgroup v1) or the quota of cpu.max; -1 = unlimited.
    pub quota_us: i64,
    /// cfs_period_us.
    pub period_us: u64,
    /// cpu.stat nr_periods.
    pub nr_periods: u64,
    /// cpu.stat nr_throttled.
    pub nr_throttled: u64,
    /// cpu.stat throttled_time (ns) / throttled_usec * 1000.
    pub throttled_ns: u64,
    /// Total CPU time of the group (cpuacct.usage or cpu.stat usage_usec*1000), if known.
    pub usage_ns: Option<u64>,
}

/// An executable mapping (PERF_RECORD_MMAP/MMAP2), for symbolizing user addresses.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Mapping {
    /// When it was mapped (0 for the snapshot at record start).
    pub ts: Ts,
    /// Process id.
    pub pid: Tid,
    /// Start address.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
    /// File offset of `start`.
    pub pgoff: u64,
    /// Mapped file (or `[kernel.kallsyms]_text` etc.).
    pub filename: String,
}

/// Kernel symbols (from the kallsyms embedded in a perf.data file), sorted by address.
#[derive(Clone, Debug, Default)]
pub struct KernelSymbols {
    /// (address, name), sorted by address.
    pub syms: Vec<(u64, String)>,
}

impl KernelSymbols {
    /// The symbol containing `addr` and the offset into it.
    pub fn lookup(&self, addr: u64) -> Option<(&str, u64)> {
        let i = self.syms.partition_point(|(a, _)| *a <= addr);
        let (start, name) = self.syms.get(i.checked_sub(1)?)?;
        Some((name.as_str(), addr - start))
    }
}

/// Facts about the recording.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TraceMeta {
    /// Host name, when recorded.
    pub hostname: Option<String>,
    /// Kernel release, when recorded.
    pub os_release: Option<String>,
    /// Architecture, when recorded.
    pub arch: Option<String>,
    /// The recording command line, when recorded.
    pub cmdline: Option<String>,
    /// Number of CPUs online at record time, when recorded.
    pub nr_cpus_online: Option<u32>,
    /// The wall-clock anchor, when recorded (perf.data HEADER_CLOCK_DATA,
    /// written by `perf record -k CLOCK`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wall_clock: Option<WallClock>,
}

/// A wall-clock anchor: at `clock_ns` on the events' clock, the time of
/// day was `tod_ns` (ns since the Unix epoch, UTC).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WallClock {
    /// The events' clock (`clockid_t`: 1 = CLOCK_MONOTONIC, ...).
    pub clockid: u32,
    /// Time of day, ns since the Unix epoch.
    pub tod_ns: u64,
    /// The events' clock at the same instant, ns.
    pub clock_ns: u64,
}

impl WallClock {
    /// The time of day (ns since the Unix epoch) of `ts` on the events'
    /// clock; `None` if it falls outside the i64 range.
    pub fn tod_of(&self, ts: u64) -> Option<i64> {
        let v = i128::from(self.tod_ns) + i128::from(ts) - i128::from(self.clock_ns);
        i64::try_from(v).ok()
    }
}

/// A decoded trace.
#[derive(Debug)]
pub struct Trace {
    /// Where it came from (as given by the user).
    pub path: String,
    /// Input format.
    pub format: TraceFormat,
    /// Events in non-decreasing time order (stable for equal timestamps).
    pub events: Vec<Event>,
    /// `system:event` names; [`NameId`] indexes this.
    pub event_names: Vec<String>,
    /// Count of every event by name, including those not kept as typed events.
    pub events_by_name: BTreeMap<String, u64>,
    /// Interned strings (comms, symbol names, reasons).
    pub strings: Strings,
    /// CPU masks referenced by IPI events.
    pub cpumasks: Vec<CpuMask>,
    /// Call chains (innermost frame first); [`StackId`] indexes this.
    pub stacks: Vec<Vec<u64>>,
    /// Fields of [`crate::EventData::Other`] events, when the loader was
    /// asked to keep them (`EventData::Other(Some(i))` is record `i`).
    pub raw_args: crate::raw::RawArgs,
    /// Events of a name that has a typed decoder whose payload could not be
    /// typed (a body in an unknown form, a state that could not be
    /// decoded), by `system:event` name. Analyses refuse to run on
    /// sched_switch events they cannot read instead of guessing.
    pub untyped: BTreeMap<String, u64>,
    /// The input has no CPU column (perf script without `[CPU]`): every
    /// event's `cpu` is 0 and means "unknown", so per-CPU analyses cannot
    /// run; per-task ones (latency) can.
    pub cpu_unknown: bool,
    /// Set by a decoder when the sched_switch `prev_state` values cannot
    /// tell runnable from sleeping switch-outs (text from a kernel that
    /// prints them shifted by one letter, with mixed evidence): why. The
    /// analyses that depend on that distinction refuse to run.
    pub state_doubt: Option<String>,
    /// Threads.
    pub tasks: TaskTable,
    /// Number of CPUs (highest CPU seen + 1, or as recorded).
    pub nr_cpus: u32,
    /// Events the kernel reported lost (PERF_RECORD_LOST, LOST_SAMPLES, ftrace "LOST").
    pub lost: u64,
    /// Where the loss records say events were lost: one entry per CPU
    /// named by them (in CPU order), then one with `cpu: None` for records
    /// that name no CPU. Empty when the file has no loss records.
    pub lost_by_cpu: Vec<CpuLoss>,
    /// Where in time each loss record says a CPU lost events, in time
    /// order: a perf.data PERF_RECORD_LOST whose sample_id names the CPU
    /// and time (the kernel writes it when the ring has room again, before
    /// the CPU's next recorded event), or a text trace's `CPU:N [LOST K
    /// EVENTS]` line (timed by the event line before it). The events lost
    /// fall between the CPU's last recorded event before the mark and its
    /// first one after.
    pub loss_marks: Vec<LossMark>,
    /// Anomalies met while decoding.
    pub warnings: Vec<Warning>,
    /// Kernel symbols stored in the file.
    pub kernel_symbols: KernelSymbols,
    /// cgroup bandwidth samples stored in the file.
    pub cgroup_samples: Vec<CgroupSample>,
    /// Executable mappings (from MMAP/MMAP2 records), in file order.
    pub mappings: Vec<Mapping>,
    /// Recording metadata.
    pub meta: TraceMeta,
    /// The recording machine's CPU topology, when the file has it
    /// (perf.data HEADER_CPU_TOPOLOGY).
    pub topology: Option<crate::CpuTopology>,
    /// Set when the decoder was asked to keep only some events (see
    /// `schedscope_parser::LoadOptions`): the number of events decoded from
    /// the file and the times of the first and last of them, so that counts
    /// and the time span still describe the whole file. `None`: `events`
    /// holds every event.
    pub dropped: Option<Dropped>,
    /// Memory the decoder is done with (already faulted in), for the
    /// analyses to reuse instead of asking the kernel for fresh pages.
    pub spare: crate::mem::Spare,
    /// Events a filtered load counted instead of keeping them in `events`
    /// (`schedscope_parser::LoadOptions::tally`), grouped by name, CPU and
    /// payload, in order of first appearance (per chunk of the file, in
    /// file order). Their counts are also in `events_by_name`.
    pub tallies: Vec<Tally>,
}

/// One loss record placed in time (see [`Trace::loss_marks`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct LossMark {
    /// When (trace clock, ns).
    pub ts: u64,
    /// The CPU that lost events.
    pub cpu: u32,
    /// How many it lost.
    pub lost: u64,
}

/// Events lost on one CPU, from the file's loss records (see
/// [`Trace::lost_by_cpu`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CpuLoss {
    /// The CPU whose ring buffer lost them (the CPU field of the records'
    /// sample_id); `None` when the records do not carry one.
    pub cpu: Option<u32>,
    /// Sum of this CPU's PERF_RECORD_LOST counts (written by the kernel
    /// into the ring when it had to drop samples).
    pub lost_records: u64,
    /// Sum of this CPU's PERF_RECORD_LOST_SAMPLES counts (written by the
    /// recorder at the end from the events' lost counters).
    pub lost_samples: u64,
    /// Events lost: the larger of the two sums (both count the same drops).
    pub lost: u64,
    /// Time of this CPU's first PERF_RECORD_LOST (trace clock, ns); `None`
    /// when only LOST_SAMPLES records (or records without a time) say so.
    pub first_ns: Option<u64>,
    /// Time of this CPU's last PERF_RECORD_LOST (trace clock, ns).
    pub last_ns: Option<u64>,
}

impl CpuLoss {
    /// Add one loss record: `n` events, from a PERF_RECORD_LOST when
    /// `in_stream`, else from a LOST_SAMPLES; `ts` its time when known.
    pub fn add(&mut self, n: u64, in_stream: bool, ts: Option<u64>) {
        if in_stream {
            self.lost_records = self.lost_records.saturating_add(n);
            if let Some(t) = ts {
                self.first_ns = Some(self.first_ns.map_or(t, |f| f.min(t)));
                self.last_ns = Some(self.last_ns.map_or(t, |l| l.max(t)));
            }
        } else {
            self.lost_samples = self.lost_samples.saturating_add(n);
        }
        self.lost = self.lost_records.max(self.lost_samples);
    }

    /// Fold `o` (the same CPU's losses from another part of the file) in.
    pub fn merge(&mut self, o: &CpuLoss) {
        self.lost_records = self.lost_records.saturating_add(o.lost_records);
        self.lost_samples = self.lost_samples.saturating_add(o.lost_samples);
        self.lost = self.lost_records.max(self.lost_samples);
        self.first_ns = match (self.first_ns, o.first_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.last_ns = match (self.last_ns, o.last_ns) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }

    /// Add `o` to the entry of its CPU in `list` (kept in CPU order, the
    /// CPU-less entry last), creating it when missing.
    pub fn merge_into(list: &mut Vec<CpuLoss>, o: &CpuLoss) {
        let key = |c: &CpuLoss| c.cpu.unwrap_or(u32::MAX) as u64 + u64::from(c.cpu.is_none());
        match list.binary_search_by_key(&key(o), key) {
            Ok(i) => list[i].merge(o),
            Err(i) => list.insert(i, *o),
        }
    }
}

/// How many events of one name, on one CPU, had one payload (see
/// [`Trace::tallies`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tally {
    /// The event.
    pub name: NameId,
    /// The CPU it was recorded on.
    pub cpu: Cpu,
    /// Its payload (ids renumbered like those of kept events).
    pub data: EventData,
    /// How many times.
    pub count: u64,
}

/// What a filtered load left out of [`Trace::events`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dropped {
    /// Events decoded from the file, kept or not.
    pub total: u64,
    /// Time of the first event decoded (kept or not).
    pub first: Ts,
    /// Time of the last event decoded (kept or not).
    pub last: Ts,
}

impl Trace {
    /// An empty trace of the given format.
    pub fn new(path: impl Into<String>, format: TraceFormat) -> Trace {
        Trace {
            path: path.into(),
            format,
            events: Vec::new(),
            event_names: Vec::new(),
            events_by_name: BTreeMap::new(),
            strings: Strings::new(),
            cpumasks: Vec::new(),
            stacks: Vec::new(),
            raw_args: crate::raw::RawArgs::new(),
            untyped: BTreeMap::new(),
            cpu_unknown: false,
            state_doubt: None,
            tasks: TaskTable::new(),
            nr_cpus: 0,
            lost: 0,
            lost_by_cpu: Vec::new(),
            loss_marks: Vec::new(),
            warnings: Vec::new(),
            kernel_symbols: KernelSymbols::default(),
            cgroup_samples: Vec::new(),
            mappings: Vec::new(),
            meta: TraceMeta::default(),
            topology: None,
            dropped: None,
            spare: crate::mem::Spare::default(),
            tallies: Vec::new(),
        }
    }

    /// First event's time (0 for an empty trace), counting events a
    /// filtered load did not keep.
    pub fn start(&self) -> Ts {
        let kept = self.events.first().map(|e| e.ts);
        match (self.dropped, kept) {
            (Some(d), Some(k)) => d.first.min(k),
            (Some(d), None) if d.total > 0 => d.first,
            _ => kept.unwrap_or_default(),
        }
    }

    /// Last event's time (0 for an empty trace), counting events a filtered
    /// load did not keep.
    pub fn end(&self) -> Ts {
        let kept = self.events.last().map(|e| e.ts);
        match (self.dropped, kept) {
            (Some(d), Some(k)) => d.last.max(k),
            (Some(d), None) if d.total > 0 => d.last,
            _ => kept.unwrap_or_default(),
        }
    }

    /// Number of events in the trace: `events.len()`, or after a filtered
    /// load the number decoded from the file (kept or not).
    pub fn event_count(&self) -> u64 {
        match self.dropped {
            Some(d) => d.total.max(self.events.len() as u64),
            None => self.events.len() as u64,
        }
    }

    /// Time covered by the events.
    pub fn duration(&self) -> Dur {
        self.end().since(self.start())
    }

    /// The `system:event` name of `id`.
    pub fn event_name(&self, id: NameId) -> &str {
        self.event_names
            .get(id.0 as usize)
            .map(String::as_str)
            .unwrap_or("?")
    }

    /// The id of `name` if the trace has any such event name.
    pub fn name_id(&self, name: &str) -> Option<NameId> {
        self.event_names
            .iter()
            .position(|n| n == name)
            .map(|i| NameId(i as u16))
    }

    /// Register an event name, returning its id.
    pub fn intern_name(&mut self, name: &str) -> NameId {
        match self.name_id(name) {
            Some(id) => id,
            None => {
                self.event_names.push(name.to_string());
                NameId((self.event_names.len() - 1) as u16)
            }
        }
    }

    /// Count of events named `name` (0 if none).
    pub fn count(&self, name: &str) -> u64 {
        self.events_by_name.get(name).copied().unwrap_or(0)
    }

    /// The call chain of `id`, if any.
    pub fn stack(&self, id: StackId) -> Option<&[u64]> {
        if id.is_some() {
            self.stacks.get(id.0 as usize).map(Vec::as_slice)
        } else {
            None
        }
    }

    /// A printable name for a code location: the text name, or the kernel
    /// symbol `name+0xoff` from the embedded kallsyms, or the hex address.
    pub fn sym_name(&self, sym: Sym) -> String {
        if let Some(id) = sym.name_id() {
            return self.strings.get(id).to_string();
        }
        let addr = sym.0;
        match self.kernel_symbols.lookup(addr) {
            Some((name, 0)) => name.to_string(),
            Some((name, off)) => format!("{name}+0x{off:x}"),
            None => format!("0x{addr:x}"),
        }
    }

    /// Add a warning, merging with an identical message.
    pub fn warn(&mut self, severity: Severity, message: impl Into<String>, count: u64) {
        let message = message.into();
        if let Some(w) = self.warnings.iter_mut().find(|w| w.message == message) {
            w.count += count;
        } else {
            self.warnings.push(Warning {
                severity,
                message,
                count,
            });
        }
    }

    /// Sort events by time (stable) and recompute `nr_cpus` from the events.
    pub fn finish(&mut self) {
        if !self.events.windows(2).all(|w| w[0].ts <= w[1].ts) {
            self.events.sort_by_key(|e| e.ts);
        }
        let max_cpu = self
            .events
            .iter()
            .map(|e| e.cpu.0.saturating_add(1))
            .max()
            .unwrap_or(0);
        self.nr_cpus = self.nr_cpus.max(max_cpu);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kallsyms_lookup() {
        let k = KernelSymbols {
            syms: vec![(0x1000, "a".into()), (0x2000, "b".into())],
        };
        assert_eq!(k.lookup(0x1010), Some(("a", 0x10)));
        assert_eq!(k.lookup(0x2000), Some(("b", 0)));
        assert_eq!(k.lookup(0x10), None);
    }

    #[test]
    fn cpu_losses_merge_per_cpu_in_cpu_order_unknown_last() {
        let one = |cpu, n, stream, ts| {
            let mut l = CpuLoss {
                cpu,
                ..CpuLoss::default()
            };
            l.add(n, stream, ts);
            l
        };
        let mut list = Vec::new();
        for l in [
            one(None, 7, false, None),
            one(Some(3), 10, true, Some(500)),
            one(Some(1), 4, true, Some(900)),
            one(Some(3), 5, true, Some(200)),
            one(Some(3), 12, false, None),
            one(Some(1), 2, true, None),
        ] {
            CpuLoss::merge_into(&mut list, &l);
        }
        let cpus: Vec<Option<u32>> = list.iter().map(|l| l.cpu).collect();
        assert_eq!(cpus, vec![Some(1), Some(3), None]);
        // CPU 3: 15 in the stream, 12 by the counters: 15 lost, 200..500.
        assert_eq!(
            list[1],
            CpuLoss {
                cpu: Some(3),
                lost_records: 15,
                lost_samples: 12,
                lost: 15,
                first_ns: Some(200),
                last_ns: Some(500)
            }
        );
        // A record without a time keeps the times of those that had one.
        assert_eq!(
            (list[0].lost, list[0].first_ns, list[0].last_ns),
            (6, Some(900), Some(900))
        );
        assert_eq!((list[2].lost, list[2].first_ns), (7, None));
    }
}
