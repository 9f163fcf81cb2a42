//! Event bodies: the text after `event:` for the tracepoints schedscope types.
//!
//! Each parser takes the body as printed by the kernel's print fmt (ftrace,
//! perf script) or by trace-cmd's plugins (the short forms) and returns a
//! [`Payload`] whose strings borrow from the line; interning happens later,
//! in one serial pass.
//!
//! Here: the payload type, which parser handles which event
//! ([`kind_of`], [`system_of`]) and the dispatch ([`parse`]); the parsers
//! live by subsystem in `sched` (the scheduler's events), `ipi` (IPIs, csd
//! and TLB flushes), `kvm` and `idle_irq` (cpu_idle, wake_idle_without_ipi,
//! softirqs and IRQ vectors), on the field splitting of `fields`.

mod fields;
mod idle_irq;
mod ipi;
mod kvm;
mod sched;

pub(crate) use fields::MAX_CPU;
use schedscope_trace::{CpuMask, KvmIsa, PrevState, WakeKind};

/// A code location as printed: a name (offset stripped) or an address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SymText<'a> {
    /// `flush_tlb_func` (from `flush_tlb_func+0x0/0x30`).
    Name(&'a str),
    /// `0x0` or an unsymbolised decimal address.
    Addr(u64),
}

/// A decoded body with borrowed strings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Payload<'a> {
    /// sched_switch.
    Switch {
        prev_comm: &'a str,
        prev_tid: i32,
        prev_prio: i32,
        prev_state: PrevState,
        /// A numeric prev_state (trace-cmd's raw print), decoded once the
        /// file's layout is known; `prev_state` is a placeholder then.
        raw_state: Option<u64>,
        next_comm: &'a str,
        next_tid: i32,
        next_prio: i32,
    },
    /// sched_waking / sched_wakeup / sched_wakeup_new.
    Wakeup {
        kind: WakeKind,
        comm: &'a str,
        tid: i32,
        prio: i32,
        target_cpu: u32,
    },
    /// sched_migrate_task.
    Migrate {
        comm: &'a str,
        tid: i32,
        orig_cpu: u32,
        dest_cpu: u32,
    },
    /// sched_process_fork.
    Fork {
        parent_comm: &'a str,
        parent_tid: i32,
        child_comm: &'a str,
        child_tid: i32,
    },
    /// sched_process_exit.
    Exit { comm: &'a str, tid: i32 },
    /// sched_process_exec.
    Exec { filename: &'a str, tid: i32 },
    /// kvm_exit.
    KvmExit {
        exit_reason: u32,
        isa: KvmIsa,
        vcpu_id: Option<u32>,
        guest_rip: u64,
    },
    /// kvm_entry.
    KvmEntry { vcpu_id: Option<u32> },
    /// ipi_send_cpu.
    IpiSendCpu {
        cpu: u32,
        callsite: SymText<'a>,
        callback: SymText<'a>,
    },
    /// ipi_send_cpumask; `mask` is None when the tool could not print it.
    IpiSendCpumask {
        mask: Option<CpuMask>,
        callsite: SymText<'a>,
        callback: SymText<'a>,
    },
    /// ipi_raise.
    IpiRaise { mask: CpuMask, reason: &'a str },
    /// tlb_flush.
    TlbFlush { reason: i32, pages: i64 },
    /// csd_queue_cpu.
    CsdQueue {
        cpu: u32,
        callsite: SymText<'a>,
        func: SymText<'a>,
        csd: u64,
    },
    /// csd_function_entry (true) / exit (false).
    CsdFunction {
        entry: bool,
        func: SymText<'a>,
        csd: u64,
    },
    /// cpu_idle.
    CpuIdle { state: u32, cpu_id: u32 },
    /// softirq_entry/exit/raise.
    Softirq { vec: u32, phase: u8 },
    /// sched_wake_idle_without_ipi.
    WakeIdleNoIpi { cpu: u32 },
    /// irq_vectors call_function*/reschedule entry/exit.
    IrqVector { vector: i32, entry: bool },
}

/// Which typed parser handles a bare event name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Switch,
    Wake(WakeKind),
    Migrate,
    Fork,
    Exit,
    Exec,
    KvmExit,
    KvmEntry,
    IpiSendCpu,
    IpiSendCpumask,
    IpiRaise,
    TlbFlush,
    CsdQueue,
    CsdFunction(bool),
    CpuIdle,
    Softirq(u8),
    WakeIdleNoIpi,
    IrqVector(bool),
}

/// The system of a bare ftrace event name, for the events we know.
pub(crate) fn system_of(bare: &str) -> Option<&'static str> {
    const IRQ_VECTORS: [&str; 12] = [
        "call_function",
        "call_function_single",
        "reschedule",
        "local_timer",
        "spurious_apic",
        "error_apic",
        "x86_platform_ipi",
        "irq_work",
        "threshold_apic",
        "deferred_error_apic",
        "thermal_apic",
        "reboot",
    ];
    let stem = bare
        .strip_suffix("_entry")
        .or_else(|| bare.strip_suffix("_exit"));
    if stem.is_some_and(|s| IRQ_VECTORS.contains(&s)) {
        return Some("irq_vectors");
    }
    if bare.starts_with("sched_") {
        Some("sched")
    } else if bare.starts_with("kvm_") {
        Some("kvm")
    } else if bare.starts_with("ipi_") {
        Some("ipi")
    } else if bare == "tlb_flush" {
        Some("tlb")
    } else if bare.starts_with("csd_") {
        Some("csd")
    } else if matches!(
        bare,
        "cpu_idle" | "cpu_idle_miss" | "cpu_frequency" | "cpu_frequency_limits"
    ) {
        Some("power")
    } else if bare.starts_with("softirq_") || bare.starts_with("irq_handler_") {
        Some("irq")
    } else {
        None
    }
}

/// The typed parser for `system` / `bare` (system as printed by perf, or
/// derived for ftrace).
pub(crate) fn kind_of(system: &str, bare: &str) -> Option<Kind> {
    Some(match (system, bare) {
        ("sched", "sched_switch") => Kind::Switch,
        ("sched", "sched_waking") => Kind::Wake(WakeKind::Waking),
        ("sched", "sched_wakeup") => Kind::Wake(WakeKind::Wakeup),
        ("sched", "sched_wakeup_new") => Kind::Wake(WakeKind::WakeupNew),
        ("sched", "sched_migrate_task") => Kind::Migrate,
        ("sched", "sched_process_fork") => Kind::Fork,
        ("sched", "sched_process_exit") => Kind::Exit,
        ("sched", "sched_process_exec") => Kind::Exec,
        ("sched", "sched_wake_idle_without_ipi") => Kind::WakeIdleNoIpi,
        ("kvm", "kvm_exit") => Kind::KvmExit,
        ("kvm", "kvm_entry") => Kind::KvmEntry,
        ("ipi", "ipi_send_cpu") => Kind::IpiSendCpu,
        ("ipi", "ipi_send_cpumask") => Kind::IpiSendCpumask,
        ("ipi", "ipi_raise") => Kind::IpiRaise,
        ("tlb", "tlb_flush") => Kind::TlbFlush,
        ("csd", "csd_queue_cpu") => Kind::CsdQueue,
        ("csd", "csd_function_entry") => Kind::CsdFunction(true),
        ("csd", "csd_function_exit") => Kind::CsdFunction(false),
        ("power", "cpu_idle") => Kind::CpuIdle,
        ("irq", "softirq_entry") => Kind::Softirq(0),
        ("irq", "softirq_exit") => Kind::Softirq(1),
        ("irq", "softirq_raise") => Kind::Softirq(2),
        (
            "irq_vectors",
            "call_function_entry" | "call_function_single_entry" | "reschedule_entry",
        ) => Kind::IrqVector(true),
        ("irq_vectors", "call_function_exit" | "call_function_single_exit" | "reschedule_exit") => {
            Kind::IrqVector(false)
        }
        _ => return None,
    })
}

/// Why a body did not parse (for the warning).
pub(crate) type BodyResult<'a> = Result<Payload<'a>, BadBody>;

/// A body that does not match its event's known forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BadBody;

/// Parse `body` for an event of kind `kind`.
pub(crate) fn parse(kind: Kind, body: &str) -> BodyResult<'_> {
    let r = match kind {
        Kind::Switch => sched::switch(body),
        Kind::Wake(k) => sched::wakeup(k, body),
        Kind::Migrate => sched::migrate(body),
        Kind::Fork => sched::fork(body),
        Kind::Exit => sched::exit(body),
        Kind::Exec => sched::exec(body),
        Kind::KvmExit => kvm::kvm_exit(body),
        Kind::KvmEntry => kvm::kvm_entry(body),
        Kind::IpiSendCpu => ipi::ipi_send_cpu(body),
        Kind::IpiSendCpumask => ipi::ipi_send_cpumask(body),
        Kind::IpiRaise => ipi::ipi_raise(body),
        Kind::TlbFlush => ipi::tlb_flush(body),
        Kind::CsdQueue => ipi::csd_queue(body),
        Kind::CsdFunction(entry) => ipi::csd_function(entry, body),
        Kind::CpuIdle => idle_irq::cpu_idle(body),
        Kind::Softirq(phase) => idle_irq::softirq(phase, body),
        Kind::WakeIdleNoIpi => idle_irq::wake_idle(body),
        Kind::IrqVector(entry) => idle_irq::irq_vector(entry, body),
    };
    r.ok_or(BadBody)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The payload of `body`, which must parse.
    pub(super) fn p(kind: Kind, body: &str) -> Payload<'_> {
        parse(kind, body).unwrap_or_else(|_| panic!("no parse: {body}"))
    }

    #[test]
    fn misc_forms() {
        assert_eq!(
            p(Kind::CpuIdle, "state=4294967295 cpu_id=0"),
            Payload::CpuIdle {
                state: u32::MAX,
                cpu_id: 0
            }
        );
        assert_eq!(
            p(Kind::Softirq(2), "vec=7 [action=SCHED]"),
            Payload::Softirq { vec: 7, phase: 2 }
        );
        assert_eq!(
            p(Kind::WakeIdleNoIpi, "cpu=1"),
            Payload::WakeIdleNoIpi { cpu: 1 }
        );
        assert_eq!(
            p(Kind::IrqVector(false), "vector=251"),
            Payload::IrqVector {
                vector: 251,
                entry: false
            }
        );
        assert_eq!(
            p(
                Kind::Fork,
                "comm=bash pid=8402 child_comm=bash child_pid=8404"
            ),
            Payload::Fork {
                parent_comm: "bash",
                parent_tid: 8402,
                child_comm: "bash",
                child_tid: 8404
            }
        );
        assert_eq!(
            p(
                Kind::Exit,
                "comm=sched-messaging pid=8443 prio=120 group_dead=true"
            ),
            Payload::Exit {
                comm: "sched-messaging",
                tid: 8443
            }
        );
        assert_eq!(
            p(Kind::Exec, "filename=/usr/bin/perf pid=8404 old_pid=8404"),
            Payload::Exec {
                filename: "/usr/bin/perf",
                tid: 8404
            }
        );
        assert_eq!(
            p(
                Kind::Migrate,
                "comm=bash pid=8404 prio=120 orig_cpu=1 dest_cpu=0"
            ),
            Payload::Migrate {
                comm: "bash",
                tid: 8404,
                orig_cpu: 1,
                dest_cpu: 0
            }
        );
    }

    #[test]
    fn absurd_cpu_numbers_are_rejected() {
        assert_eq!(parse(Kind::WakeIdleNoIpi, "cpu=4294967295"), Err(BadBody));
        assert_eq!(
            parse(
                Kind::Migrate,
                "comm=a pid=1 prio=1 orig_cpu=0 dest_cpu=70000"
            ),
            Err(BadBody)
        );
        assert_eq!(ipi::cpulist("0-4000000000"), None);
        assert_eq!(ipi::hex_bitmask(&vec!["1"; 5000].join(",")), None);
    }

    #[test]
    fn systems() {
        assert_eq!(system_of("sched_switch"), Some("sched"));
        assert_eq!(system_of("reschedule_entry"), Some("irq_vectors"));
        assert_eq!(system_of("call_function_single_exit"), Some("irq_vectors"));
        assert_eq!(system_of("cpu_idle"), Some("power"));
        assert_eq!(system_of("softirq_raise"), Some("irq"));
        assert_eq!(system_of("csd_queue_cpu"), Some("csd"));
        assert_eq!(system_of("tlb_flush"), Some("tlb"));
        assert_eq!(system_of("rcu_utilization"), None);
    }
}
