//! Rows of every table, from the trace, its timeline and the analyses.

use crate::error::ExportError;
use crate::schema::TABLES;
use crate::sink::TableSink;
use schedscope_analysis::gang::{self, GangKind};
use schedscope_analysis::latency::{self, LatencyReport, WaitStart};
use schedscope_analysis::lhp::{PleClass, YieldOutcome};
use schedscope_analysis::tlb::IpiClass;
use schedscope_analysis::{idle, ThreadState, Timeline};
use schedscope_trace::hash::FxMap;
use schedscope_trace::{Cpu, EventData, KvmIsa, Sym, Tid, Trace, Ts, WakeKind};

/// The sinks, one slot per table of [`TABLES`].
pub struct Sinks(pub Vec<Slot>);

/// One table's sink.
pub enum Slot {
    /// Not exported.
    Off,
    /// Being written.
    Open(TableSink),
    /// Written: its row count.
    Closed(u64),
}

impl Sinks {
    /// The sink of `name`, when that table is exported and still open.
    pub fn get(&mut self, name: &str) -> Option<&mut TableSink> {
        let i = TABLES.iter().position(|t| t.name == name)?;
        match &mut self.0[i] {
            Slot::Open(t) => Some(t),
            _ => None,
        }
    }

    /// Whether `name` is exported.
    pub fn wants(&self, name: &str) -> bool {
        TABLES
            .iter()
            .position(|t| t.name == name)
            .is_some_and(|i| !matches!(self.0[i], Slot::Off))
    }

    /// Close the tables `names` (their rows are all written), so that their
    /// builders and row groups are released before the next phase.
    pub fn close(&mut self, names: &[&str]) -> Result<(), ExportError> {
        for (t, slot) in TABLES.iter().zip(self.0.iter_mut()) {
            if names.contains(&t.name) {
                if let Slot::Open(_) = slot {
                    let Slot::Open(sink) = std::mem::replace(slot, Slot::Closed(0)) else {
                        continue;
                    };
                    *slot = Slot::Closed(sink.close()?);
                }
            }
        }
        Ok(())
    }

    /// Close every table still open; the rows written per exported table.
    pub fn close_all(mut self) -> Result<Vec<(&'static str, u64)>, ExportError> {
        let names: Vec<&str> = TABLES.iter().map(|t| t.name).collect();
        self.close(&names)?;
        Ok(TABLES
            .iter()
            .zip(self.0)
            .filter_map(|(t, slot)| match slot {
                Slot::Closed(n) => Some((t.name, n)),
                _ => None,
            })
            .collect())
    }
}

/// tid -> utid of the incarnation live at a time.
pub struct Utids {
    by_tid: FxMap<i32, Vec<(u64, i32)>>,
}

impl Utids {
    /// Index the task table.
    pub fn new(trace: &Trace) -> Utids {
        let mut by_tid: FxMap<i32, Vec<(u64, i32)>> = FxMap::default();
        for t in trace.tasks.iter() {
            by_tid
                .entry(t.tid.0)
                .or_default()
                .push((t.fork_ts.map_or(0, |f| f.0), t.utid.0 as i32));
        }
        for v in by_tid.values_mut() {
            v.sort_unstable();
        }
        Utids { by_tid }
    }

    /// The utid of `tid` at `ts`: the last incarnation forked at or before
    /// `ts` (the first one before any fork).
    pub fn at(&self, tid: Tid, ts: Ts) -> Option<i32> {
        let v = self.by_tid.get(&tid.0)?;
        if v.len() == 1 {
            return Some(v[0].1);
        }
        let i = v.partition_point(|&(s, _)| s <= ts.0);
        Some(v[i.saturating_sub(1)].1)
    }
}

fn cpu(c: Cpu) -> i32 {
    c.0 as i32
}

fn state_name(s: ThreadState) -> &'static str {
    match s {
        ThreadState::Unknown => "unknown",
        ThreadState::Running => "running",
        ThreadState::Runnable => "runnable",
        ThreadState::Sleeping => "sleeping",
        ThreadState::Blocked => "blocked",
        ThreadState::Other => "other",
        ThreadState::Dead => "dead",
    }
}

/// A CPU list as `0-3,6`.
pub fn cpu_list(cpus: impl Iterator<Item = u32>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut run: Option<(u32, u32)> = None;
    let flush = |r: (u32, u32), out: &mut Vec<String>| {
        out.push(if r.0 == r.1 {
            r.0.to_string()
        } else {
            format!("{}-{}", r.0, r.1)
        })
    };
    for c in cpus {
        run = match run {
            Some((a, b)) if c == b + 1 => Some((a, c)),
            Some(r) => {
                flush(r, &mut out);
                Some((c, c))
            }
            None => Some((c, c)),
        };
    }
    if let Some(r) = run {
        flush(r, &mut out);
    }
    out.join(",")
}

const SOFTIRQ_NAMES: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// The typed fields of event kinds without a table of their own, as
/// `raw_arg` rows.
fn typed_args(trace: &Trace, data: &EventData) -> Vec<(&'static str, String)> {
    let s = |id| trace.strings.get(id).to_string();
    match *data {
        EventData::Fork {
            parent_tid,
            child_tid,
            child_comm,
        } => vec![
            ("parent_pid", parent_tid.0.to_string()),
            ("child_pid", child_tid.0.to_string()),
            ("child_comm", s(child_comm)),
        ],
        EventData::Exit { tid, comm } => vec![("pid", tid.0.to_string()), ("comm", s(comm))],
        EventData::Exec { tid, filename } => {
            vec![("pid", tid.0.to_string()), ("filename", s(filename))]
        }
        EventData::KvmEntry { vcpu_id } => vcpu_id
            .map(|v| vec![("vcpu_id", v.to_string())])
            .unwrap_or_default(),
        EventData::WakeIdleNoIpi { cpu } => vec![("cpu", cpu.0.to_string())],
        EventData::IrqVector { vector, entry } => vec![
            ("vector", vector.to_string()),
            ("phase", if entry { "entry" } else { "exit" }.to_string()),
        ],
        _ => Vec::new(),
    }
}

/// The tables that [`events`] writes.
pub const EVENT_TABLES: &[&str] = &[
    "stack_sample",
    "sched_switch",
    "sched_wakeup",
    "sched_migrate",
    "sched_stat_runtime",
    "kvm_exit",
    "ipi",
    "tlb_flush",
    "cpu_idle",
    "softirq",
    "raw_event",
    "raw_arg",
];

/// Per CPU, the switch-ins in time order: (ts, next tid, next prio).
pub type SwitchIns = Vec<Vec<(u64, i32, i32)>>;

/// One pass over the events: every per-kind table, raw_event/raw_arg and
/// stack_sample. Returns the switch-ins that `sched_slice` needs.
pub fn events(trace: &Trace, u: &Utids, s: &mut Sinks) -> Result<SwitchIns, ExportError> {
    let mut switch_ins: SwitchIns = vec![Vec::new(); trace.nr_cpus as usize];
    let want_slices = s.wants("sched_slice");
    let stat_runtime = trace.name_id("sched:sched_stat_runtime");
    let mut raw_id: i64 = 0;
    for ev in &trace.events {
        let ut = u.at(ev.tid, ev.ts);
        let ts = ev.ts.0 as i64;
        let c = cpu(ev.cpu);
        if ev.stack.is_some() {
            if let Some(t) = s.get("stack_sample") {
                t.i64("ts", ts)
                    .i32("cpu", c)
                    .i32("utid", ut)
                    .i32("tid", ev.tid.0)
                    .str("event", Some(trace.event_name(ev.name)))
                    .i64("stack_id", ev.stack.0 as i64);
                t.end()?;
            }
        }
        match ev.data {
            EventData::Switch {
                next_tid, next_prio, ..
            } => {
                if want_slices {
                    let ci = ev.cpu.0 as usize;
                    if ci >= switch_ins.len() {
                        switch_ins.resize(ci + 1, Vec::new());
                    }
                    switch_ins[ci].push((ev.ts.0, next_tid.0, next_prio));
                }
                if let Some(t) = s.get("sched_switch") {
                    switch_row(trace, u, t, ev)?;
                }
            }
            EventData::Wakeup { .. } => {
                if let Some(t) = s.get("sched_wakeup") {
                    wakeup_row(trace, u, t, ev, ut)?;
                }
            }
            EventData::Migrate { .. } => {
                if let Some(t) = s.get("sched_migrate") {
                    migrate_row(trace, u, t, ev)?;
                }
            }
            EventData::KvmExit { .. } => {
                if let Some(t) = s.get("kvm_exit") {
                    kvm_exit_row(t, ev, ut)?;
                }
            }
            EventData::IpiSendCpu { .. }
            | EventData::IpiSendCpumask { .. }
            | EventData::IpiRaise { .. }
            | EventData::CsdQueue { .. }
            | EventData::CsdFunctionEntry { .. }
            | EventData::CsdFunctionExit { .. } => {
                if let Some(t) = s.get("ipi") {
                    ipi_row(trace, t, ev, ut)?;
                }
            }
            EventData::TlbFlush { reason, pages } => {
                if let Some(t) = s.get("tlb_flush") {
                    t.i64("ts", ts)
                        .i32("cpu", c)
                        .i32("utid", ut)
                        .i32("tid", ev.tid.0)
                        .i32("reason", reason)
                        .str(
                            "reason_name",
                            Some(&schedscope_analysis::tlb::flush_reason_name(reason)),
                        )
                        .i64("pages", pages);
                    t.end()?;
                }
            }
            EventData::CpuIdle { state, cpu_id } => {
                if let Some(t) = s.get("cpu_idle") {
                    let st = if state == u32::MAX { -1 } else { state as i64 };
                    t.i64("ts", ts)
                        .i32("cpu", c)
                        .i64("state", st)
                        .i32("cpu_id", cpu(cpu_id));
                    t.end()?;
                }
            }
            EventData::Softirq { vec, phase } => {
                if let Some(t) = s.get("softirq") {
                    let ph = match phase {
                        0 => "entry",
                        1 => "exit",
                        _ => "raise",
                    };
                    t.i64("ts", ts)
                        .i32("cpu", c)
                        .i32("utid", ut)
                        .i32("tid", ev.tid.0)
                        .i32("vec", vec as i32)
                        .str("vec_name", SOFTIRQ_NAMES.get(vec as usize).copied())
                        .str("phase", Some(ph));
                    t.end()?;
                }
            }
            EventData::Fork { .. }
            | EventData::Exit { .. }
            | EventData::Exec { .. }
            | EventData::KvmEntry { .. }
            | EventData::WakeIdleNoIpi { .. }
            | EventData::IrqVector { .. }
            // (typed only by a load without raw fields, which export's is not)
            | EventData::StatRuntime { .. }
            | EventData::Other(_) => {
                other_rows(trace, u, s, ev, ut, stat_runtime, &mut raw_id)?;
            }
        }
    }
    Ok(switch_ins)
}

/// A `sched_switch` row.
fn switch_row(
    trace: &Trace,
    u: &Utids,
    t: &mut TableSink,
    ev: &schedscope_trace::Event,
) -> Result<(), ExportError> {
    let EventData::Switch {
        prev_tid,
        prev_prio,
        prev_state,
        prev_comm,
        next_tid,
        next_prio,
        next_comm,
    } = ev.data
    else {
        return Ok(());
    };
    let (ts, c) = (ev.ts.0 as i64, cpu(ev.cpu));
    t.i64("ts", ts)
        .i32("cpu", c)
        .i32("prev_utid", u.at(prev_tid, ev.ts))
        .i32("prev_tid", prev_tid.0)
        .str("prev_comm", Some(trace.strings.get(prev_comm)))
        .i32("prev_prio", prev_prio)
        .str("prev_state", Some(&prev_state.to_text()))
        .i32(
            "prev_state_raw",
            prev_state.bits as i32 | if prev_state.preempted { 0x100 } else { 0 },
        )
        .i32("next_utid", u.at(next_tid, ev.ts))
        .i32("next_tid", next_tid.0)
        .str("next_comm", Some(trace.strings.get(next_comm)))
        .i32("next_prio", next_prio);
    t.end()?;
    Ok(())
}

/// A `sched_wakeup` row (waking, wakeup, wakeup_new).
fn wakeup_row(
    trace: &Trace,
    u: &Utids,
    t: &mut TableSink,
    ev: &schedscope_trace::Event,
    ut: Option<i32>,
) -> Result<(), ExportError> {
    let EventData::Wakeup {
        kind,
        tid,
        comm,
        prio,
        target_cpu,
    } = ev.data
    else {
        return Ok(());
    };
    let (ts, c) = (ev.ts.0 as i64, cpu(ev.cpu));
    let k = match kind {
        WakeKind::Waking => "waking",
        WakeKind::Wakeup => "wakeup",
        WakeKind::WakeupNew => "wakeup_new",
    };
    t.i64("ts", ts)
        .i32("cpu", c)
        .str("kind", Some(k))
        .i32("utid", u.at(tid, ev.ts))
        .i32("tid", tid.0)
        .str("comm", Some(trace.strings.get(comm)))
        .i32("prio", prio)
        .i32("target_cpu", cpu(target_cpu))
        .i32("waker_utid", ut)
        .i32("waker_tid", ev.tid.0);
    t.end()?;
    Ok(())
}

/// A `sched_migrate` row.
fn migrate_row(
    trace: &Trace,
    u: &Utids,
    t: &mut TableSink,
    ev: &schedscope_trace::Event,
) -> Result<(), ExportError> {
    let EventData::Migrate {
        tid,
        comm,
        orig_cpu,
        dest_cpu,
    } = ev.data
    else {
        return Ok(());
    };
    let (ts, c) = (ev.ts.0 as i64, cpu(ev.cpu));
    t.i64("ts", ts)
        .i32("cpu", c)
        .i32("utid", u.at(tid, ev.ts))
        .i32("tid", tid.0)
        .str("comm", Some(trace.strings.get(comm)))
        .i32("orig_cpu", cpu(orig_cpu))
        .i32("dest_cpu", cpu(dest_cpu));
    t.end()?;
    Ok(())
}

/// A `kvm_exit` row.
fn kvm_exit_row(
    t: &mut TableSink,
    ev: &schedscope_trace::Event,
    ut: Option<i32>,
) -> Result<(), ExportError> {
    let EventData::KvmExit {
        exit_reason,
        isa,
        vcpu_id,
        guest_rip,
    } = ev.data
    else {
        return Ok(());
    };
    let (ts, c) = (ev.ts.0 as i64, cpu(ev.cpu));
    let isa_s = match isa {
        KvmIsa::Vmx => "vmx".to_string(),
        KvmIsa::Svm => "svm".to_string(),
        KvmIsa::Other(v) => format!("other:{v}"),
    };
    t.i64("ts", ts)
        .i32("cpu", c)
        .i32("utid", ut)
        .i32("tid", ev.tid.0)
        .i64("reason_code", exit_reason as i64)
        .str(
            "reason_name",
            Some(&schedscope_analysis::lhp::exit_reason_name(
                isa,
                exit_reason,
            )),
        )
        .str("isa", Some(&isa_s))
        .bool("is_ple", schedscope_analysis::lhp::is_ple(isa, exit_reason))
        .i32("vcpu", vcpu_id.map(|v| v as i32))
        .i64("guest_rip", guest_rip as i64);
    t.end()?;
    Ok(())
}

/// The rows of an event that has no table of its own: `sched_stat_runtime`
/// when its fields are the standard ones, else `raw_event` (numbered by
/// `raw_id`) and its `raw_arg`s.
fn other_rows(
    trace: &Trace,
    u: &Utids,
    s: &mut Sinks,
    ev: &schedscope_trace::Event,
    ut: Option<i32>,
    stat_runtime: Option<schedscope_trace::NameId>,
    raw_id: &mut i64,
) -> Result<(), ExportError> {
    let ts = ev.ts.0 as i64;
    let c = cpu(ev.cpu);
    let typed = match ev.data {
        EventData::Other(Some(i)) if Some(ev.name) == stat_runtime => StatRuntime::of(trace, i),
        _ => None,
    };
    if let Some(r) = typed {
        if let Some(t) = s.get("sched_stat_runtime") {
            t.i64("ts", ts)
                .i32("cpu", c)
                .i32("utid", u.at(Tid(r.pid), ev.ts))
                .i32("tid", r.pid)
                .str("comm", Some(r.comm))
                .u64("runtime_ns", r.runtime)
                .u64("vruntime_ns", r.vruntime)
                .i32("cur_tid", ev.tid.0);
            t.end()?;
        }
        return Ok(());
    }
    let id = *raw_id;
    *raw_id += 1;
    if let Some(t) = s.get("raw_event") {
        t.i64("event_id", id)
            .i64("ts", ts)
            .i32("cpu", c)
            .i32("utid", ut)
            .i32("tid", ev.tid.0)
            .str("name", Some(trace.event_name(ev.name)))
            .i64("stack_id", ev.stack.is_some().then_some(ev.stack.0 as i64));
        t.end()?;
    }
    if let Some(t) = s.get("raw_arg") {
        if let EventData::Other(Some(i)) = ev.data {
            for (k, v) in trace.raw_args.get(i) {
                t.i64("event_id", id)
                    .str("key", Some(k))
                    .str("value", Some(v));
                t.end()?;
            }
        } else {
            for (k, v) in typed_args(trace, &ev.data) {
                t.i64("event_id", id)
                    .str("key", Some(k))
                    .str("value", Some(&v));
                t.end()?;
            }
        }
    }
    Ok(())
}

/// The fields of a `sched:sched_stat_runtime` event, as its format has
/// them: `comm`, `pid`, `runtime` and, before Linux 6.8, `vruntime`.
struct StatRuntime<'a> {
    comm: &'a str,
    pid: i32,
    runtime: u64,
    vruntime: Option<u64>,
}

impl StatRuntime<'_> {
    /// Record `i` of the raw-args store, when it holds exactly these
    /// fields, in this order, with decimal numbers (as the perf.data and
    /// trace.dat decoders store them). Anything else (a text trace's
    /// `runtime=12 [ns]`, another format) is left to raw_event/raw_arg, so
    /// that no field is lost.
    fn of(trace: &Trace, i: u32) -> Option<StatRuntime<'_>> {
        let mut args = trace.raw_args.get(i);
        let mut field = |name: &str| match args.next() {
            Some((k, v)) if k == name => Some(v),
            _ => None,
        };
        let comm = field("comm")?;
        let pid = field("pid")?.parse().ok()?;
        let runtime = field("runtime")?.parse().ok()?;
        let vruntime = match args.next() {
            None => None,
            Some(("vruntime", v)) => Some(v.parse().ok()?),
            Some(_) => return None,
        };
        if args.next().is_some() {
            return None;
        }
        Some(StatRuntime {
            comm,
            pid,
            runtime,
            vruntime,
        })
    }
}

/// callsite, callback, target count, target list, csd, reason.
type IpiCols<'a> = (
    Option<String>,
    Option<String>,
    Option<i32>,
    Option<String>,
    Option<i64>,
    Option<&'a str>,
);

fn ipi_row(
    trace: &Trace,
    t: &mut TableSink,
    ev: &schedscope_trace::Event,
    ut: Option<i32>,
) -> Result<(), ExportError> {
    let sym = |s: Sym| Some(trace.sym_name(s));
    let mask = |m: schedscope_trace::MaskId| trace.cpumasks.get(m.0 as usize);
    let (callsite, callback, count, list, csd, reason): IpiCols = match ev.data {
        EventData::IpiSendCpu {
            cpu: target,
            callsite,
            callback,
        } => (
            sym(callsite),
            sym(callback),
            Some(1),
            Some(target.0.to_string()),
            None,
            None,
        ),
        EventData::IpiSendCpumask {
            mask: m,
            callsite,
            callback,
        } => {
            let m = mask(m);
            (
                sym(callsite),
                sym(callback),
                m.map(|m| m.count() as i32),
                m.map(|m| cpu_list(m.iter())),
                None,
                None,
            )
        }
        EventData::IpiRaise { mask: m, reason } => {
            let m = mask(m);
            (
                None,
                None,
                m.map(|m| m.count() as i32),
                m.map(|m| cpu_list(m.iter())),
                None,
                Some(trace.strings.get(reason)),
            )
        }
        EventData::CsdQueue {
            cpu: target,
            callsite,
            func,
            csd,
        } => (
            sym(callsite),
            sym(func),
            Some(1),
            Some(target.0.to_string()),
            Some(csd as i64),
            None,
        ),
        EventData::CsdFunctionEntry { func, csd } | EventData::CsdFunctionExit { func, csd } => {
            (None, sym(func), None, None, Some(csd as i64), None)
        }
        _ => return Ok(()),
    };
    t.i64("ts", ev.ts.0 as i64)
        .i32("cpu", cpu(ev.cpu))
        .i32("utid", ut)
        .i32("tid", ev.tid.0)
        .str("event", Some(trace.event_name(ev.name)))
        .str("callsite", callsite.as_deref())
        .str("callback", callback.as_deref())
        .i32("target_count", count)
        .str("target_mask", list.as_deref())
        .i64("csd", csd)
        .str("reason", reason);
    t.end()
}

/// The `stack` table: frames root first.
pub fn stacks(trace: &Trace, s: &mut Sinks) -> Result<(), ExportError> {
    let Some(t) = s.get("stack") else {
        return Ok(());
    };
    for (id, frames) in trace.stacks.iter().enumerate() {
        let names: Vec<String> = frames
            .iter()
            .rev()
            .map(|&a| trace.sym_name(Sym::from_addr(a)))
            .collect();
        t.i64("stack_id", id as i64)
            .i32("depth", frames.len() as i32)
            .str_list("frames", names.iter().map(String::as_str))
            .i64_list("frame_addrs", frames.iter().rev().map(|&a| a as i64));
        t.end()?;
    }
    Ok(())
}

/// `thread_state` (every timeline interval) and `sched_slice` (every CPU run).
pub fn timeline(
    trace: &Trace,
    tl: &Timeline,
    u: &Utids,
    switch_ins: &SwitchIns,
    s: &mut Sinks,
) -> Result<(), ExportError> {
    if let Some(t) = s.get("thread_state") {
        // In the declared order: by tid, then time.
        let mut threads: Vec<_> = tl.threads.iter().collect();
        threads.sort_by_key(|th| th.tid);
        for th in threads {
            for iv in &th.intervals {
                let repair = match (iv.state, iv.cpu) {
                    (ThreadState::Running, Some(c)) => tl.repair_at(c, th.tid, iv.ts),
                    _ => None,
                };
                t.i64("ts", iv.ts.0 as i64)
                    .u64("dur", iv.end.map(|e| e.0.saturating_sub(iv.ts.0)))
                    .i32("utid", u.at(th.tid, iv.ts))
                    .i32("tid", th.tid.0)
                    .str("state", Some(state_name(iv.state)))
                    .i32("cpu", iv.cpu.map(cpu))
                    .bool("preempted", iv.preempted)
                    .i32("waker_utid", iv.waker.and_then(|w| u.at(w, iv.ts)))
                    .i32("waker_tid", iv.waker.map(|w| w.0))
                    .bool("repaired", repair.is_some())
                    .str("repair_evidence", repair.map(|r| r.evidence.name()));
                t.end()?;
            }
        }
    }
    let _ = trace;
    if let Some(t) = s.get("sched_slice") {
        let mut cursors: FxMap<Tid, usize> = FxMap::default();
        for (c, runs) in tl.cpus.iter().enumerate() {
            let ins = switch_ins.get(c).map(Vec::as_slice).unwrap_or(&[]);
            cursors.clear();
            let mut k = 0;
            for r in runs {
                while k < ins.len() && ins[k].0 < r.ts.0 {
                    k += 1;
                }
                let prio = ins[k..]
                    .iter()
                    .take_while(|x| x.0 == r.ts.0)
                    .find(|x| x.1 == r.tid.0)
                    .map(|x| x.2);
                let end_state = match r.end {
                    Some(e) if !r.tid.is_idle() => {
                        Some(state_name(state_after(tl, r.tid, e, &mut cursors)))
                    }
                    Some(_) => Some("idle_exit"),
                    None => None,
                };
                let repair = match r.tid.is_idle() {
                    true => None,
                    false => tl.repair_at(Cpu(c as u32), r.tid, r.ts),
                };
                t.i64("ts", r.ts.0 as i64)
                    .u64("dur", r.end.map(|e| e.0.saturating_sub(r.ts.0)))
                    .i32("cpu", c as i32)
                    .i32("utid", u.at(r.tid, r.ts))
                    .i32("tid", r.tid.0)
                    .str("end_state", end_state)
                    .i32("priority", prio)
                    .bool("repaired", repair.is_some())
                    .str("repair_evidence", repair.map(|r| r.evidence.name()));
                t.end()?;
            }
        }
    }
    Ok(())
}

/// [`Timeline::state_at`]`(tid, ts)`, looked up from where the previous
/// lookup of `tid` stopped (`cursors`): a CPU's runs end in time order, so
/// the lookups of one thread on one CPU only move forward, and a forward
/// scan replaces a binary search per run (it was 5.6% of the export's CPU
/// time on a 1.75 M-event recording). A lookup earlier than the previous
/// one falls back to the binary search.
fn state_after(tl: &Timeline, tid: Tid, ts: Ts, cursors: &mut FxMap<Tid, usize>) -> ThreadState {
    let Some(t) = tl.thread(tid) else {
        return ThreadState::Unknown;
    };
    let ivs = &t.intervals;
    let c = cursors.entry(tid).or_insert(0);
    let mut i = *c;
    if i > 0 && ivs.get(i - 1).is_some_and(|iv| iv.ts > ts) {
        i = ivs.partition_point(|iv| iv.ts <= ts);
    } else {
        while ivs.get(i).is_some_and(|iv| iv.ts <= ts) {
            i += 1;
        }
    }
    *c = i;
    match i.checked_sub(1).and_then(|i| ivs.get(i)) {
        Some(iv) if iv.end.is_none_or(|e| ts < e) => iv.state,
        _ => ThreadState::Unknown,
    }
}

/// `sched_latency`: each wait for a CPU, as the latency analysis meets it
/// ([`latency::compute_with`]: perf 6.1's `perf sched latency` rules, see
/// that module's docs), so that per-task aggregates of these rows equal
/// `report --latency`: count(kind in wakeup|runnable_switch_out|first_seen)
/// = switches, max(latency_ns) = delay_max_ns, sum = delay_total_ns; rows
/// of kind `preempted` give preemptions / preempt_delay_*.
///
/// One pass gives the rows and the latency report, which is returned when
/// `want_report` (the summary metrics read it) or the table is wanted;
/// `None` when neither is, or the trace has no sched_switch (no rows).
pub fn latency(
    trace: &Trace,
    u: &Utids,
    s: &mut Sinks,
    want_report: bool,
) -> Result<Option<LatencyReport>, ExportError> {
    let mut t = s.get("sched_latency");
    if t.is_none() && !want_report {
        return Ok(None);
    }
    let mut failed: Option<ExportError> = None;
    let report = latency::compute_with(trace, |w| {
        let Some(t) = t.as_mut() else {
            return;
        };
        if failed.is_some() {
            return;
        }
        let kind = match w.start {
            None => "preempted",
            Some(WaitStart::Wakeup | WaitStart::WakeupNew | WaitStart::Waking) => "wakeup",
            Some(WaitStart::RunnableSwitchOut) => "runnable_switch_out",
            Some(WaitStart::FirstSeen) => "first_seen",
        };
        let comm = match trace.tasks.by_tid(w.tid) {
            Some(k) if !k.comm.is_empty() => k.comm.as_str(),
            _ => trace.strings.get(w.comm),
        };
        t.i32("utid", u.at(w.tid, w.since))
            .i32("tid", w.tid.0)
            .str("comm", Some(comm))
            .i64("ts_runnable", w.since.0 as i64)
            .i64("ts_run", w.switched_in.0 as i64)
            .u64("latency_ns", w.delay_ns)
            .str("kind", Some(kind))
            .i32("wake_cpu", w.wake_cpu.map(cpu))
            .i32("run_cpu", cpu(w.cpu))
            .i32("waker_utid", w.waker.and_then(|k| u.at(k, w.since)))
            .i32("waker_tid", w.waker.map(|k| k.0));
        if let Err(e) = t.end() {
            failed = Some(e);
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    // No sched_switch: no waits, no rows, no latency figures.
    Ok(report.ok())
}

/// `gang_summary` and `gang_episode` from the gang section.
pub fn gangs(
    trace: &Trace,
    ctx: &schedscope_analysis::Context,
    report: &schedscope_analysis::gang::GangReport,
    s: &mut Sinks,
) -> Result<(), ExportError> {
    if let Some(t) = s.get("gang_summary") {
        let keys = schedscope_analysis::keys::ProcessKeys::new(&trace.tasks, Default::default());
        for g in &report.gangs {
            let kind = match g.kind {
                GangKind::Vm => "vm",
                GangKind::Process => "process",
                GangKind::Explicit => "explicit",
            };
            t.str("gang", Some(&g.name))
                .str("kind", Some(kind))
                .i32("pid", g.tgid.map(|p| p.0))
                .i32("members", g.members.len() as i32)
                .f64("corun_ratio", g.corun_ratio)
                .u64("fragmented_ns", g.fragmented_ns)
                .f64("fragmented_ratio", g.fragmented_ratio)
                .u64("any_running_ns", g.any_running_ns)
                .u64("all_running_ns", g.all_running_ns)
                .str("match_key", Some(&keys.key(g.tgid, &g.name)));
            t.end()?;
        }
    }
    if let Some(t) = s.get("gang_episode") {
        let defs = gang::resolve_gangs(ctx).unwrap_or_default();
        for d in &defs {
            let mut ep: Option<(u64, u64, u32, u32)> = None;
            let ivs = gang::intervals(d, ctx.timeline, trace);
            let emit = |e: (u64, u64, u32, u32), t: &mut TableSink| {
                t.str("gang", Some(&d.name))
                    .i32("pid", d.tgid.map(|p| p.0))
                    .u64("ts", e.0)
                    .u64("dur", e.1.saturating_sub(e.0))
                    .i32("min_running", e.2 as i32)
                    .i32("max_waiting", e.3 as i32);
                t.end()
            };
            for iv in &ivs {
                let frag = iv.running >= 1 && iv.running < iv.active;
                match (&mut ep, frag) {
                    (Some(e), true) if e.1 == iv.start_ns => {
                        e.1 = iv.end_ns;
                        e.2 = e.2.min(iv.running);
                        e.3 = e.3.max(iv.active - iv.running);
                    }
                    (_, true) => {
                        if let Some(e) = ep.take() {
                            emit(e, t)?;
                        }
                        ep = Some((iv.start_ns, iv.end_ns, iv.running, iv.active - iv.running));
                    }
                    (_, false) => {
                        if let Some(e) = ep.take() {
                            emit(e, t)?;
                        }
                    }
                }
            }
            if let Some(e) = ep.take() {
                emit(e, t)?;
            }
        }
    }
    Ok(())
}

/// `ple_exit`: every pause-loop exit, classified as report --lhp does.
pub fn ple(
    ctx: &schedscope_analysis::Context,
    u: &Utids,
    s: &mut Sinks,
) -> Result<(), ExportError> {
    let Some(t) = s.get("ple_exit") else {
        return Ok(());
    };
    let Ok(exits) = schedscope_analysis::lhp::ple_exits(ctx) else {
        return Ok(());
    };
    for e in exits {
        let class = match e.class {
            PleClass::SiblingPreempted => "sibling_preempted",
            PleClass::AllRunning => "all_running",
            PleClass::SiblingsIdle => "siblings_idle",
        };
        let outcome = match e.outcome {
            YieldOutcome::ToSibling => "to_sibling",
            YieldOutcome::ToOther => "to_other",
            YieldOutcome::NoSwitch => "no_switch",
        };
        t.i64("ts", e.ts.0 as i64)
            .i32("cpu", cpu(e.cpu))
            .i32("utid", u.at(e.tid, e.ts))
            .i32("tid", e.tid.0)
            .i32("vm_pid", e.vm.map(|v| v.0))
            .str("class", Some(class))
            .str("outcome", Some(outcome));
        t.end()?;
    }
    Ok(())
}

/// `idle_gap`: every wasted-idle gap.
pub fn idle_gaps(gaps: &[idle::Gap], s: &mut Sinks) -> Result<(), ExportError> {
    let Some(t) = s.get("idle_gap") else {
        return Ok(());
    };
    let mut gaps: Vec<&idle::Gap> = gaps.iter().collect();
    gaps.sort_by_key(|g| (g.start_ns, g.cpu));
    for g in gaps {
        t.u64("ts", g.start_ns)
            .u64("dur", g.dur_ns)
            .i32("cpu", g.cpu as i32)
            .u64("throttled_ns", g.throttled_ns)
            .u64("imbalance_ns", g.imbalance_ns)
            .str("ending", Some(&g.ending))
            .i32("waiting", g.waiting.len() as i32)
            .i64_list("waiting_tids", g.waiting.iter().map(|w| w.tid as i64));
        t.end()?;
    }
    Ok(())
}

/// `ipi_request`: every logical IPI/csd request of the tlb section, with
/// its delivery and handler times.
pub fn ipi_requests(
    ctx: &schedscope_analysis::Context,
    u: &Utids,
    s: &mut Sinks,
) -> Result<(), ExportError> {
    let Some(t) = s.get("ipi_request") else {
        return Ok(());
    };
    // A trace without IPI events has no requests (the table stays empty).
    let Ok(rows) = schedscope_analysis::tlb::requests(ctx) else {
        return Ok(());
    };
    for r in rows {
        let class = match r.class {
            IpiClass::TlbShootdown => "tlb_shootdown",
            IpiClass::RemoteWakeup => "remote_wakeup",
            IpiClass::IdleBalanceKick => "idle_balance_kick",
            IpiClass::Reschedule => "reschedule",
            IpiClass::Other => "other",
        };
        t.i64("ts", r.ts.0 as i64)
            .i32("cpu", cpu(r.cpu))
            .i32("utid", u.at(r.tid, r.ts))
            .i32("tid", r.tid.0)
            .str("class", Some(class))
            .str("callsite", Some(&r.callsite))
            .str("callback", Some(&r.function))
            .i32("target_count", r.targets.len() as i32)
            .i64_list("targets", r.targets.iter().map(|&c| c as i64))
            .i32("ipis", r.ipis as i32)
            .i64_list("delivery_ns", r.delivery_ns.iter().map(|&d| d as i64))
            .i64_list("handler_ns", r.handler_ns.iter().map(|&d| d as i64));
        t.end()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedscope_trace::TraceFormat;

    /// The typed table takes exactly the format's fields, with or without
    /// vruntime; anything else stays a raw event.
    #[test]
    fn stat_runtime_fields() {
        let mut t = Trace::new("t", TraceFormat::PerfData);
        let records: [&[(&str, &str)]; 6] = [
            &[("comm", "a b"), ("pid", "5"), ("runtime", "10")],
            &[
                ("comm", "a"),
                ("pid", "5"),
                ("runtime", "10"),
                ("vruntime", "18446744073709551615"),
            ],
            &[("comm", "a"), ("pid", "5"), ("runtime", "10 [ns]")],
            &[("comm", "a"), ("pid", "5")],
            &[("comm", "a"), ("pid", "5"), ("runtime", "1"), ("x", "2")],
            &[("pid", "5"), ("comm", "a"), ("runtime", "1")],
        ];
        let ids: Vec<u32> = records
            .iter()
            .map(|r| t.raw_args.push(r.iter().copied()).unwrap())
            .collect();
        let r = StatRuntime::of(&t, ids[0]).unwrap();
        assert_eq!((r.comm, r.pid, r.runtime, r.vruntime), ("a b", 5, 10, None));
        let r = StatRuntime::of(&t, ids[1]).unwrap();
        assert_eq!(r.vruntime, Some(u64::MAX));
        for &i in &ids[2..] {
            assert!(StatRuntime::of(&t, i).is_none(), "record {i}");
        }
    }
}
