//! Tracepoint payload decoding: each embedded format is resolved once into a
//! [`TpDecoder`] holding the field accessors of the event it describes, and
//! every RAW payload is read through it (no hard-coded offsets).

use super::local::Local;
use crate::tracefs_format::{EventFormat, FieldRef};
use schedscope_trace::{Cpu, EventData, KvmIsa, NameId, PrevState, Sym, Tid, WakeKind};

/// TASK_REPORT_MAX of 4.14+ kernels, used when the print fmt gives no flag list.
const DEFAULT_PREEMPT_MARKER: u64 = 0x100;

/// How a kernel's numeric `prev_state` maps to [`PrevState`] bits, from the
/// sched_switch print fmt's own `__print_flags` list (so that `x`, `K`, `W`,
/// `N` of kernels before 4.14 keep their meaning), or the 4.14+ layout when
/// the print fmt has no list.
#[derive(Clone, Debug)]
pub(crate) struct StateTable {
    /// Preemption marker.
    marker: u64,
    /// (raw value, PrevState bits) per flag of the print fmt.
    flags: Vec<(u64, u16)>,
    /// Every flag maps a raw bit to the same PrevState bit (4.14+): decode
    /// with a mask instead of the table.
    identity: bool,
    /// Union of the raw flag values.
    known: u64,
}

impl StateTable {
    fn of(f: &EventFormat) -> StateTable {
        let marker = f.preempt_marker().unwrap_or(DEFAULT_PREEMPT_MARKER);
        let mut flags: Vec<(u64, u16)> = f
            .prev_state_flags()
            .iter()
            .map(|(v, letters)| {
                let bits = PrevState::parse_text(letters).map_or(PrevState::UNKNOWN, |p| p.bits);
                (*v, bits)
            })
            .collect();
        if flags.is_empty() {
            flags = (0..8).map(|i| (1u64 << i, 1u16 << i)).collect();
        }
        let identity = flags.iter().all(|&(v, b)| v == b as u64);
        let known = flags.iter().fold(0, |a, &(v, _)| a | v);
        StateTable {
            marker,
            flags,
            identity,
            known,
        }
    }

    #[inline]
    fn decode(&self, state: u64) -> PrevState {
        let preempted = state & self.marker != 0;
        let state = state & !self.marker;
        let mut bits = if self.identity {
            (state & self.known) as u16
        } else {
            self.flags
                .iter()
                .filter(|&&(v, _)| state & v != 0)
                .fold(0, |a, &(_, b)| a | b)
        };
        if state & !self.known != 0 {
            bits |= PrevState::UNKNOWN;
        }
        PrevState { bits, preempted }
    }
}

/// How one tracepoint's payload becomes an [`EventData`].
#[derive(Clone, Debug)]
pub(crate) enum Kind {
    Switch {
        prev_comm: FieldRef,
        prev_pid: FieldRef,
        prev_prio: FieldRef,
        prev_state: FieldRef,
        next_comm: FieldRef,
        next_pid: FieldRef,
        next_prio: FieldRef,
        states: StateTable,
    },
    Wakeup {
        kind: WakeKind,
        comm: FieldRef,
        pid: FieldRef,
        prio: FieldRef,
        target_cpu: FieldRef,
    },
    Migrate {
        comm: FieldRef,
        pid: FieldRef,
        orig_cpu: FieldRef,
        dest_cpu: FieldRef,
    },
    Fork {
        parent_pid: FieldRef,
        child_comm: FieldRef,
        child_pid: FieldRef,
    },
    Exit {
        comm: FieldRef,
        pid: FieldRef,
    },
    Exec {
        filename: FieldRef,
        pid: FieldRef,
    },
    KvmExit {
        exit_reason: FieldRef,
        isa: Option<FieldRef>,
        vcpu_id: Option<FieldRef>,
        guest_rip: Option<FieldRef>,
    },
    KvmEntry {
        vcpu_id: Option<FieldRef>,
    },
    IpiSendCpu {
        cpu: FieldRef,
        callsite: FieldRef,
        callback: FieldRef,
    },
    IpiSendCpumask {
        mask: FieldRef,
        callsite: FieldRef,
        callback: FieldRef,
    },
    IpiRaise {
        mask: FieldRef,
        reason: FieldRef,
    },
    TlbFlush {
        reason: FieldRef,
        pages: FieldRef,
    },
    CsdQueue {
        cpu: FieldRef,
        callsite: FieldRef,
        func: FieldRef,
        csd: FieldRef,
    },
    CsdFn {
        entry: bool,
        func: FieldRef,
        csd: FieldRef,
    },
    CpuIdle {
        state: FieldRef,
        cpu_id: FieldRef,
    },
    Softirq {
        vec: FieldRef,
        phase: u8,
    },
    WakeIdle {
        cpu: FieldRef,
    },
    IrqVector {
        vector: FieldRef,
        entry: bool,
    },
    /// No typed decoder: the fields are formatted into the raw-args store
    /// when the load asks for them (`LoadOptions::raw_fields`).
    Other {
        fields: Vec<RawField>,
    },
    /// sched:sched_stat_runtime: its `pid` and `runtime` are kept even
    /// without `LoadOptions::raw_fields`, as [`EventData::StatRuntime`]
    /// (untyped with all its fields when raw fields are asked for): the
    /// thread-state timeline places lost switch-ins from them.
    StatRuntime {
        fields: Vec<RawField>,
        /// `pid` and `runtime`, read straight into
        /// [`EventData::StatRuntime`] when no raw fields are kept.
        typed: Option<(FieldRef, FieldRef)>,
    },
}

/// One field of an untyped tracepoint, as the raw-args store keeps it.
#[derive(Clone, Debug)]
pub(crate) struct RawField {
    name: Box<str>,
    at: FieldRef,
    /// A `char` array or `__data_loc char[]`: kept as text.
    text: bool,
}

/// The non-common fields of `f`, for [`Kind::Other`].
fn raw_fields_of(f: &EventFormat) -> Vec<RawField> {
    f.fields
        .iter()
        .filter(|x| !x.name.starts_with("common_"))
        .map(|x| RawField {
            name: x.name.as_str().into(),
            at: x.as_ref(),
            text: x.type_name.ends_with("char") || x.type_name.ends_with("char[]"),
        })
        .collect()
}

/// An untyped field's value as text: integers in decimal (signed as the
/// kernel declares them), strings as text (lossy UTF-8), other arrays as
/// hex bytes; `None` when the payload is too short for it.
fn raw_value(f: &RawField, raw: &[u8]) -> Option<String> {
    use crate::tracefs_format::FieldKind;
    Some(match f.at.kind {
        FieldKind::Scalar if f.at.signed => f.at.read_i64(raw)?.to_string(),
        FieldKind::Scalar => f.at.read_u64(raw)?.to_string(),
        _ if f.text => String::from_utf8_lossy(f.at.read_str(raw)?).into_owned(),
        _ => {
            f.at.read_bytes(raw)?
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        }
    })
}

/// Store the fields of an untyped event in the chunk's raw-args store.
fn keep_raw(fields: &[RawField], raw: &[u8], local: &mut Local<'_>) -> EventData {
    if !local.raw_fields {
        return EventData::Other(None);
    }
    push_raw(fields.iter(), raw, local)
}

/// The fields of a sched_stat_runtime event: all of them with
/// `raw_fields`, else `pid` and `runtime` (what the timeline reads; a
/// format with both fields is decoded into [`EventData::StatRuntime`]
/// instead).
fn keep_stat_runtime(fields: &[RawField], raw: &[u8], local: &mut Local<'_>) -> EventData {
    if local.raw_fields {
        return push_raw(fields.iter(), raw, local);
    }
    let read = fields
        .iter()
        .filter(|f| matches!(&*f.name, "pid" | "runtime"));
    push_raw(read, raw, local)
}

/// Store `fields` of an event in the chunk's raw-args store.
fn push_raw<'f>(
    fields: impl Iterator<Item = &'f RawField> + Clone,
    raw: &[u8],
    local: &mut Local<'_>,
) -> EventData {
    let values: Vec<Option<String>> = fields.clone().map(|f| raw_value(f, raw)).collect();
    let pairs = fields
        .zip(&values)
        .filter_map(|(f, v)| Some((&*f.name, v.as_deref()?)));
    match local.raw.push(pairs) {
        Ok(i) => EventData::Other(Some(i)),
        Err(_) => EventData::Other(None),
    }
}

/// The decoder of one tracepoint.
#[derive(Clone, Debug)]
pub(crate) struct TpDecoder {
    /// `system:event` name id.
    pub name: NameId,
    /// Accessor for common_pid.
    pub common_pid: Option<FieldRef>,
    /// How to decode the payload.
    pub kind: Kind,
}

impl TpDecoder {
    /// Resolve `f`'s fields. Returns the decoder and, when a known event
    /// lacks a field schedscope needs, a message (the event is then kept as
    /// [`EventData::Other`]).
    pub(crate) fn build(f: &EventFormat, name: NameId) -> (TpDecoder, Option<String>) {
        let common_pid = f.field_ref("common_pid");
        let (kind, problem) = match build_kind(f) {
            Ok(k) => (k, None),
            Err(missing) => (
                Kind::Other {
                    fields: raw_fields_of(f),
                },
                Some(format!(
                    "format of {} has no field `{missing}`: its events are kept undecoded",
                    f.full_name()
                )),
            ),
        };
        (
            TpDecoder {
                name,
                common_pid,
                kind,
            },
            problem,
        )
    }
}

fn build_kind(f: &EventFormat) -> Result<Kind, &'static str> {
    let req = |n: &'static str| f.field_ref(n).ok_or(n);
    let opt = |n: &str| f.field_ref(n);
    let wake = |kind| -> Result<Kind, &'static str> {
        Ok(Kind::Wakeup {
            kind,
            comm: req("comm")?,
            pid: req("pid")?,
            prio: req("prio")?,
            target_cpu: req("target_cpu")?,
        })
    };
    Ok(match (f.system.as_str(), f.name.as_str()) {
        ("sched", "sched_stat_runtime") => Kind::StatRuntime {
            fields: raw_fields_of(f),
            typed: opt("pid").zip(opt("runtime")),
        },
        ("sched", "sched_switch") => Kind::Switch {
            prev_comm: req("prev_comm")?,
            prev_pid: req("prev_pid")?,
            prev_prio: req("prev_prio")?,
            prev_state: req("prev_state")?,
            next_comm: req("next_comm")?,
            next_pid: req("next_pid")?,
            next_prio: req("next_prio")?,
            states: StateTable::of(f),
        },
        ("sched", "sched_waking") => wake(WakeKind::Waking)?,
        ("sched", "sched_wakeup") => wake(WakeKind::Wakeup)?,
        ("sched", "sched_wakeup_new") => wake(WakeKind::WakeupNew)?,
        ("sched", "sched_migrate_task") => Kind::Migrate {
            comm: req("comm")?,
            pid: req("pid")?,
            orig_cpu: req("orig_cpu")?,
            dest_cpu: req("dest_cpu")?,
        },
        ("sched", "sched_process_fork") => Kind::Fork {
            parent_pid: req("parent_pid")?,
            child_comm: req("child_comm")?,
            child_pid: req("child_pid")?,
        },
        ("sched", "sched_process_exit") => Kind::Exit {
            comm: req("comm")?,
            pid: req("pid")?,
        },
        ("sched", "sched_process_exec") => Kind::Exec {
            filename: req("filename")?,
            pid: req("pid")?,
        },
        ("sched", "sched_wake_idle_without_ipi") => Kind::WakeIdle { cpu: req("cpu")? },
        ("kvm", "kvm_exit") => Kind::KvmExit {
            exit_reason: req("exit_reason")?,
            isa: opt("isa"),
            vcpu_id: opt("vcpu_id"),
            guest_rip: opt("guest_rip"),
        },
        ("kvm", "kvm_entry") => Kind::KvmEntry {
            vcpu_id: opt("vcpu_id"),
        },
        ("ipi", "ipi_send_cpu") => Kind::IpiSendCpu {
            cpu: req("cpu")?,
            callsite: req("callsite")?,
            callback: req("callback")?,
        },
        ("ipi", "ipi_send_cpumask") => Kind::IpiSendCpumask {
            mask: req("cpumask")?,
            callsite: req("callsite")?,
            callback: req("callback")?,
        },
        ("ipi", "ipi_raise") => Kind::IpiRaise {
            mask: req("target_cpus")?,
            reason: req("reason")?,
        },
        ("tlb", "tlb_flush") => Kind::TlbFlush {
            reason: req("reason")?,
            pages: req("pages")?,
        },
        ("csd", "csd_queue_cpu") => Kind::CsdQueue {
            cpu: req("cpu")?,
            callsite: req("callsite")?,
            func: req("func")?,
            csd: req("csd")?,
        },
        ("csd", "csd_function_entry") => Kind::CsdFn {
            entry: true,
            func: req("func")?,
            csd: req("csd")?,
        },
        ("csd", "csd_function_exit") => Kind::CsdFn {
            entry: false,
            func: req("func")?,
            csd: req("csd")?,
        },
        ("power", "cpu_idle") => Kind::CpuIdle {
            state: req("state")?,
            cpu_id: req("cpu_id")?,
        },
        ("irq", "softirq_entry") => Kind::Softirq {
            vec: req("vec")?,
            phase: 0,
        },
        ("irq", "softirq_exit") => Kind::Softirq {
            vec: req("vec")?,
            phase: 1,
        },
        ("irq", "softirq_raise") => Kind::Softirq {
            vec: req("vec")?,
            phase: 2,
        },
        ("irq_vectors", n) if n.ends_with("_entry") || n.ends_with("_exit") => {
            match opt("vector") {
                Some(vector) => Kind::IrqVector {
                    vector,
                    entry: n.ends_with("_entry"),
                },
                None => Kind::Other {
                    fields: raw_fields_of(f),
                },
            }
        }
        _ => Kind::Other {
            fields: raw_fields_of(f),
        },
    })
}

/// CPU numbers at or above this are taken as corruption (Linux NR_CPUS is
/// at most 8192): the event is skipped and counted rather than handing
/// absurd CPU numbers to the analyses.
pub(crate) const MAX_CPUS: u64 = 1 << 16;

/// A CPU-number field, `None` when out of range.
#[inline]
fn cpu(f: &FieldRef, raw: &[u8]) -> Option<Cpu> {
    let v = f.read_u64(raw)?;
    // 4-byte `int` CPU fields: compare the 32-bit value
    let v = if f.size == 4 { v & 0xffff_ffff } else { v };
    (v < MAX_CPUS).then_some(Cpu(v as u32))
}

#[inline]
fn int(f: &FieldRef, raw: &[u8]) -> Option<i64> {
    f.read_i64(raw)
}

#[inline]
fn uint(f: &FieldRef, raw: &[u8]) -> Option<u64> {
    f.read_u64(raw)
}

impl TpDecoder {
    /// Decode `raw` into an [`EventData`]; `None` when the payload is too
    /// short for the format (the caller counts it). Comms go to `local`.
    /// `ts` is used for the comm-by-tid tracking.
    pub(crate) fn decode<'a>(
        &self,
        raw: &'a [u8],
        ts: u64,
        local: &mut Local<'a>,
    ) -> Option<EventData> {
        // Every kind is named here, so that a new one is routed.
        match &self.kind {
            k @ (Kind::Switch { .. }
            | Kind::Wakeup { .. }
            | Kind::Migrate { .. }
            | Kind::Fork { .. }
            | Kind::Exit { .. }
            | Kind::Exec { .. }) => decode_task(k, raw, ts, local),
            k @ (Kind::KvmExit { .. }
            | Kind::KvmEntry { .. }
            | Kind::IpiSendCpu { .. }
            | Kind::IpiSendCpumask { .. }
            | Kind::IpiRaise { .. }
            | Kind::TlbFlush { .. }
            | Kind::CsdQueue { .. }
            | Kind::CsdFn { .. }
            | Kind::CpuIdle { .. }
            | Kind::Softirq { .. }
            | Kind::WakeIdle { .. }
            | Kind::IrqVector { .. }
            | Kind::Other { .. }
            | Kind::StatRuntime { .. }) => decode_cpu(k, raw, local),
        }
    }
}

/// [`TpDecoder::decode`] of the scheduler's events, which name tasks
/// (their comms are tracked by tid at `ts`).
#[inline(always)]
fn decode_task<'a>(
    kind: &Kind,
    raw: &'a [u8],
    ts: u64,
    local: &mut Local<'a>,
) -> Option<EventData> {
    Some(match kind {
        Kind::Switch {
            prev_comm,
            prev_pid,
            prev_prio,
            prev_state,
            next_comm,
            next_pid,
            next_prio,
            states,
        } => {
            let state = uint(prev_state, raw)?;
            let prev_tid = Tid(int(prev_pid, raw)? as i32);
            let next_tid = Tid(int(next_pid, raw)? as i32);
            let pc = local.comm(prev_comm, raw, prev_tid, ts)?;
            let nc = local.comm(next_comm, raw, next_tid, ts)?;
            EventData::Switch {
                prev_tid,
                prev_prio: int(prev_prio, raw)? as i32,
                prev_state: states.decode(state),
                prev_comm: pc,
                next_tid,
                next_prio: int(next_prio, raw)? as i32,
                next_comm: nc,
            }
        }
        Kind::Wakeup {
            kind,
            comm,
            pid,
            prio,
            target_cpu,
        } => {
            let tid = Tid(int(pid, raw)? as i32);
            EventData::Wakeup {
                kind: *kind,
                tid,
                comm: local.comm(comm, raw, tid, ts)?,
                prio: int(prio, raw)? as i32,
                target_cpu: cpu(target_cpu, raw)?,
            }
        }
        Kind::Migrate {
            comm,
            pid,
            orig_cpu,
            dest_cpu,
        } => {
            let tid = Tid(int(pid, raw)? as i32);
            EventData::Migrate {
                tid,
                comm: local.comm(comm, raw, tid, ts)?,
                orig_cpu: cpu(orig_cpu, raw)?,
                dest_cpu: cpu(dest_cpu, raw)?,
            }
        }
        Kind::Fork {
            parent_pid,
            child_comm,
            child_pid,
        } => {
            let child_tid = Tid(int(child_pid, raw)? as i32);
            EventData::Fork {
                parent_tid: Tid(int(parent_pid, raw)? as i32),
                child_tid,
                child_comm: local.comm(child_comm, raw, child_tid, ts)?,
            }
        }
        Kind::Exit { comm, pid } => {
            let tid = Tid(int(pid, raw)? as i32);
            EventData::Exit {
                tid,
                comm: local.comm(comm, raw, tid, ts)?,
            }
        }
        Kind::Exec { filename, pid } => EventData::Exec {
            tid: Tid(int(pid, raw)? as i32),
            filename: local.intern(filename.read_str(raw)?),
        },
        // (the other kinds are decode_cpu's)
        _ => return None,
    })
}

/// [`TpDecoder::decode`] of the events that name no task: KVM, IPIs, csd,
/// TLB flushes, idle, IRQs, and the untyped ones.
#[inline(always)]
fn decode_cpu<'a>(kind: &Kind, raw: &'a [u8], local: &mut Local<'a>) -> Option<EventData> {
    Some(match kind {
        Kind::KvmExit {
            exit_reason,
            isa,
            vcpu_id,
            guest_rip,
        } => EventData::KvmExit {
            exit_reason: uint(exit_reason, raw)? as u32,
            isa: KvmIsa::from_raw(isa.and_then(|f| uint(&f, raw)).unwrap_or(1) as u32),
            vcpu_id: vcpu_id.and_then(|f| uint(&f, raw)).map(|v| v as u32),
            guest_rip: guest_rip.and_then(|f| uint(&f, raw)).unwrap_or(0),
        },
        Kind::KvmEntry { vcpu_id } => EventData::KvmEntry {
            vcpu_id: vcpu_id.and_then(|f| uint(&f, raw)).map(|v| v as u32),
        },
        Kind::IpiSendCpu {
            cpu: c,
            callsite,
            callback,
        } => EventData::IpiSendCpu {
            cpu: cpu(c, raw)?,
            callsite: Sym::from_addr(uint(callsite, raw)?),
            callback: Sym::from_addr(uint(callback, raw)?),
        },
        Kind::IpiSendCpumask {
            mask,
            callsite,
            callback,
        } => EventData::IpiSendCpumask {
            mask: local.mask(mask, raw)?,
            callsite: Sym::from_addr(uint(callsite, raw)?),
            callback: Sym::from_addr(uint(callback, raw)?),
        },
        Kind::IpiRaise { mask, reason } => {
            let addr = uint(reason, raw)?;
            EventData::IpiRaise {
                mask: local.mask(mask, raw)?,
                reason: local.printk(addr),
            }
        }
        Kind::TlbFlush { reason, pages } => EventData::TlbFlush {
            reason: int(reason, raw)? as i32,
            pages: int(pages, raw)?,
        },
        Kind::CsdQueue {
            cpu: c,
            callsite,
            func,
            csd,
        } => EventData::CsdQueue {
            cpu: cpu(c, raw)?,
            callsite: Sym::from_addr(uint(callsite, raw)?),
            func: Sym::from_addr(uint(func, raw)?),
            csd: uint(csd, raw)?,
        },
        Kind::CsdFn { entry, func, csd } => {
            let func = Sym::from_addr(uint(func, raw)?);
            let csd = uint(csd, raw)?;
            if *entry {
                EventData::CsdFunctionEntry { func, csd }
            } else {
                EventData::CsdFunctionExit { func, csd }
            }
        }
        Kind::CpuIdle { state, cpu_id } => EventData::CpuIdle {
            state: uint(state, raw)? as u32,
            cpu_id: cpu(cpu_id, raw)?,
        },
        Kind::Softirq { vec, phase } => EventData::Softirq {
            vec: uint(vec, raw)? as u32,
            phase: *phase,
        },
        Kind::WakeIdle { cpu: c } => EventData::WakeIdleNoIpi { cpu: cpu(c, raw)? },
        Kind::IrqVector { vector, entry } => EventData::IrqVector {
            vector: int(vector, raw)? as i32,
            entry: *entry,
        },
        Kind::Other { fields } => keep_raw(fields, raw, local),
        Kind::StatRuntime {
            typed: Some((pid, runtime)),
            ..
        } if !local.raw_fields => EventData::StatRuntime {
            pid: Tid(int(pid, raw)? as i32),
            runtime: uint(runtime, raw)?,
        },
        Kind::StatRuntime { fields, .. } => keep_stat_runtime(fields, raw, local),
        // (the scheduler's kinds are decode_task's)
        _ => return None,
    })
}
