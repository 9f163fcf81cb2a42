//! Event bodies: the text after `event:` for the tracepoints schedscope types.
//!
//! Each parser takes the body as printed by the kernel's print fmt (ftrace,
//! perf script) or by trace-cmd's plugins (the short forms) and returns a
//! [`Payload`] whose strings borrow from the line; interning happens later,
//! in one serial pass.

use super::kvm;
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
        Kind::Switch => switch(body),
        Kind::Wake(k) => wakeup(k, body),
        Kind::Migrate => migrate(body),
        Kind::Fork => fork(body),
        Kind::Exit => exit(body),
        Kind::Exec => exec(body),
        Kind::KvmExit => kvm_exit(body),
        Kind::KvmEntry => kvm_entry(body),
        Kind::IpiSendCpu => ipi_send_cpu(body),
        Kind::IpiSendCpumask => ipi_send_cpumask(body),
        Kind::IpiRaise => ipi_raise(body),
        Kind::TlbFlush => tlb_flush(body),
        Kind::CsdQueue => csd_queue(body),
        Kind::CsdFunction(entry) => csd_function(entry, body),
        Kind::CpuIdle => cpu_idle(body),
        Kind::Softirq(phase) => softirq(phase, body),
        Kind::WakeIdleNoIpi => wake_idle(body),
        Kind::IrqVector(entry) => irq_vector(entry, body),
    };
    r.ok_or(BadBody)
}

/// Split `body` by keys that appear in this order: the first key must start
/// the body, each later key is searched after the previous one (preceded by
/// a space); values run up to the next key, so string values may hold
/// spaces. Returns the raw values (untrimmed of trailing extras).
fn fields<'a, const N: usize>(body: &'a str, keys: [&str; N]) -> Option<[&'a str; N]> {
    let mut out = [""; N];
    let mut rest = body.strip_prefix(keys[0])?;
    for i in 1..N {
        let k = keys[i];
        let pos = find_key(rest, k)?;
        out[i - 1] = &rest[..pos];
        rest = &rest[pos + 1 + k.len()..];
    }
    out[N - 1] = rest;
    Some(out)
}

/// Position of ` key` in `s` (the space before the key).
fn find_key(s: &str, key: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = s[from..].find(key) {
        let at = from + i;
        if at > 0 && s.as_bytes()[at - 1] == b' ' {
            return Some(at - 1);
        }
        from = at + 1;
    }
    None
}

/// The first space-separated token of `s`, parsed.
fn num<T: std::str::FromStr>(s: &str) -> Option<T> {
    first(s).parse().ok()
}

/// Largest CPU number accepted anywhere (the kernel's NR_CPUS limit is
/// 8192 on x86-64); larger values are damage, and would make per-CPU tables
/// of the analyses huge.
pub(crate) const MAX_CPU: u32 = 65_535;

/// A CPU number field.
fn cpu_num(s: &str) -> Option<u32> {
    num::<u32>(s).filter(|&c| c <= MAX_CPU)
}

fn first(s: &str) -> &str {
    let s = s.trim_start();
    s.split([' ', ',']).next().unwrap_or("")
}

/// A hex number with or without `0x`.
fn hex(s: &str) -> Option<u64> {
    let t = first(s);
    let t = t.strip_prefix("0x").unwrap_or(t);
    u64::from_str_radix(t, 16).ok()
}

/// `name+0x12/0x40`, `name+0x12`, `name`, `0x0` or a decimal address.
fn sym(s: &str) -> Option<SymText<'_>> {
    let t = first(s);
    if t.is_empty() {
        return None;
    }
    if let Some(h) = t.strip_prefix("0x") {
        return u64::from_str_radix(h, 16).ok().map(SymText::Addr);
    }
    if t.bytes().all(|c| c.is_ascii_digit()) {
        return t.parse().ok().map(SymText::Addr);
    }
    let name = match t.find('+') {
        Some(i) => &t[..i],
        None => t,
    };
    // `func [module]` keeps only the function.
    Some(SymText::Name(name))
}

/// `comm:pid [prio]` (trace-cmd short form): (comm, pid, prio, rest after `]`).
fn short_task(s: &str) -> Option<(&str, i32, i32, &str)> {
    let open = s.rfind(" [")?;
    let head = &s[..open];
    let close = s[open..].find(']')? + open;
    let prio = s[open + 2..close].trim().parse().ok()?;
    let colon = head.rfind(':')?;
    let pid = head[colon + 1..].parse().ok()?;
    Some((head[..colon].trim_start(), pid, prio, &s[close + 1..]))
}

fn switch(body: &str) -> Option<Payload<'_>> {
    if body.starts_with("prev_comm=") {
        // The kernel's print fmt has ` ==> ` before next_comm; trace-cmd
        // without its sched_switch plugin prints the raw fields, with a
        // numeric prev_state and no arrow.
        let next = if find_key(body, "==> next_comm=").is_some() {
            "==> next_comm="
        } else {
            "next_comm="
        };
        let [pc, pp, ppr, ps, nc, np, npr] = fields(
            body,
            [
                "prev_comm=",
                "prev_pid=",
                "prev_prio=",
                "prev_state=",
                next,
                "next_pid=",
                "next_prio=",
            ],
        )?;
        let ps = first(ps);
        let (prev_state, raw_state) = if ps.bytes().all(|c| c.is_ascii_digit()) {
            (PrevState::default(), Some(ps.parse().ok()?))
        } else if let Some(h) = ps.strip_prefix("0x") {
            (PrevState::default(), Some(u64::from_str_radix(h, 16).ok()?))
        } else {
            (PrevState::parse_text(ps)?, None)
        };
        return Some(Payload::Switch {
            prev_comm: pc,
            prev_tid: num(pp)?,
            prev_prio: num(ppr)?,
            prev_state,
            raw_state,
            next_comm: nc,
            next_tid: num(np)?,
            next_prio: num(npr)?,
        });
    }
    // trace-cmd / perf plugin short form:
    // `prev_comm:prev_pid [prio] STATE ==> next_comm:next_pid [prio]`.
    let (left, right) = body.split_once(" ==> ")?;
    let open = left.rfind(" [")?;
    let close = left[open..].find(']')? + open;
    let state = left[close + 1..].trim();
    let (pc, pp, ppr, _) = short_task(&left[..close + 1])?;
    let (nc, np, npr, _) = short_task(right.trim())?;
    Some(Payload::Switch {
        prev_comm: pc,
        prev_tid: pp,
        prev_prio: ppr,
        prev_state: short_state(state)?,
        raw_state: None,
        next_comm: nc,
        next_tid: np,
        next_prio: npr,
    })
}

/// The prev_state of the short form. trace-cmd's sched_switch plugin
/// (libtraceevent) prints the state bits positionally from the table
/// `"SDTtZXxW"` (bit 0 = S, ..., bit 7 = W), whatever the kernel calls them:
/// on 6.x kernels the kernel's `I` (0x80) comes out as `W` and `Z` (0x20) as
/// `X` (checked against tracefs text of the same buffer, see
/// fixtures/ftrace/README.md). Map the letters back to the bits.
fn short_state(s: &str) -> Option<PrevState> {
    const POSITIONAL: &[u8; 8] = b"SDTtZXxW";
    let (s, preempted) = match s.strip_suffix('+') {
        Some(r) => (r, true),
        None => (s, false),
    };
    let mut bits = 0u16;
    for part in s.split('|') {
        let b = part.as_bytes();
        bits |= match (
            b.len(),
            POSITIONAL.iter().position(|&c| Some(&c) == b.first()),
        ) {
            (1, Some(i)) => 1 << i,
            _ => PrevState::parse_text(part)?.bits,
        };
    }
    Some(PrevState { bits, preempted })
}

fn wakeup(kind: WakeKind, body: &str) -> Option<Payload<'_>> {
    if body.starts_with("comm=") {
        let [c, p, pr, tc] = fields(body, ["comm=", "pid=", "prio=", "target_cpu="])?;
        return Some(Payload::Wakeup {
            kind,
            comm: c,
            tid: num(p)?,
            prio: num(pr)?,
            target_cpu: cpu_num(tc)?,
        });
    }
    // `comm:pid [prio] [success=1] CPU:001`.
    let (head, cpu) = body.rsplit_once(" CPU:")?;
    let (c, p, pr, _) =
        short_task(head.trim_end()).or_else(|| short_task(head.rsplit_once(" success=")?.0))?;
    Some(Payload::Wakeup {
        kind,
        comm: c,
        tid: p,
        prio: pr,
        target_cpu: cpu_num(cpu)?,
    })
}

fn migrate(body: &str) -> Option<Payload<'_>> {
    let [c, p, _, o, d] = fields(body, ["comm=", "pid=", "prio=", "orig_cpu=", "dest_cpu="])?;
    Some(Payload::Migrate {
        comm: c,
        tid: num(p)?,
        orig_cpu: cpu_num(o)?,
        dest_cpu: cpu_num(d)?,
    })
}

fn fork(body: &str) -> Option<Payload<'_>> {
    let [c, p, cc, cp] = fields(body, ["comm=", "pid=", "child_comm=", "child_pid="])?;
    Some(Payload::Fork {
        parent_comm: c,
        parent_tid: num(p)?,
        child_comm: cc,
        child_tid: num(cp)?,
    })
}

fn exit(body: &str) -> Option<Payload<'_>> {
    let [c, p] = fields(body, ["comm=", "pid="])?;
    Some(Payload::Exit {
        comm: c,
        tid: num(p)?,
    })
}

fn exec(body: &str) -> Option<Payload<'_>> {
    let [f, p] = fields(body, ["filename=", "pid="])?;
    Some(Payload::Exec {
        filename: f,
        tid: num(p)?,
    })
}

fn kvm_exit(body: &str) -> Option<Payload<'_>> {
    // `vcpu N reason NAME rip 0x.. info1 ..` (5.x+) or `reason NAME rip 0x.. info A B`.
    let (vcpu_id, rest) = match body.strip_prefix("vcpu ") {
        Some(r) => {
            let (v, r) = r.split_once(' ')?;
            (Some(v.parse().ok()?), r)
        }
        None => (None, body),
    };
    let rest = rest.trim_start().strip_prefix("reason ")?;
    let at = rest.find(" rip ")?;
    let (exit_reason, isa) = kvm::lookup(&rest[..at])?;
    let guest_rip = hex(&rest[at + 5..])?;
    Some(Payload::KvmExit {
        exit_reason,
        isa,
        vcpu_id,
        guest_rip,
    })
}

fn kvm_entry(body: &str) -> Option<Payload<'_>> {
    let r = body.strip_prefix("vcpu ")?;
    Some(Payload::KvmEntry {
        vcpu_id: Some(num(r)?),
    })
}

fn ipi_send_cpu(body: &str) -> Option<Payload<'_>> {
    let [c, cs, cb] = fields(body, ["cpu=", "callsite=", "callback="])?;
    Some(Payload::IpiSendCpu {
        cpu: cpu_num(c)?,
        callsite: sym(cs)?,
        callback: sym(cb)?,
    })
}

/// A cpulist (`0-3,5`), or None if it is not one.
pub(crate) fn cpulist(s: &str) -> Option<CpuMask> {
    let mut m = CpuMask::default();
    let s = s.trim();
    if s.is_empty() {
        return Some(m);
    }
    for part in s.split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?),
            None => {
                let a = part.parse::<u32>().ok()?;
                (a, a)
            }
        };
        if a > b || b > MAX_CPU {
            return None;
        }
        for c in a..=b {
            m.insert(c);
        }
    }
    Some(m)
}

fn ipi_send_cpumask(body: &str) -> Option<Payload<'_>> {
    // perf 6.1's libtraceevent cannot print __get_cpumask and emits
    // `[FAILED TO PARSE] cpumask=ARRAY[..] callsite=N callback=N`.
    let body = body
        .strip_prefix("[FAILED TO PARSE]")
        .map(str::trim_start)
        .unwrap_or(body);
    let [m, cs, cb] = fields(body, ["cpumask=", "callsite=", "callback="])?;
    Some(Payload::IpiSendCpumask {
        mask: cpulist(m),
        callsite: sym(cs)?,
        callback: sym(cb)?,
    })
}

/// A hex bitmask as printed by `%*pb` / `__get_bitmask`: `00000000,00000003`.
fn hex_bitmask(s: &str) -> Option<CpuMask> {
    let mut m = CpuMask::default();
    let groups: Vec<&str> = s.trim().split(',').collect();
    if groups.len() > (MAX_CPU as usize + 1) / 32 {
        return None;
    }
    for (i, g) in groups.iter().rev().enumerate() {
        let v = u32::from_str_radix(g, 16).ok()?;
        for b in 0..32 {
            if v & (1 << b) != 0 {
                m.insert(i as u32 * 32 + b);
            }
        }
    }
    Some(m)
}

fn ipi_raise(body: &str) -> Option<Payload<'_>> {
    let r = body.strip_prefix("target_mask=")?;
    let (mask, reason) = match r.split_once(' ') {
        Some((m, rest)) => (m, rest.trim().trim_start_matches('(').trim_end_matches(')')),
        None => (r, ""),
    };
    Some(Payload::IpiRaise {
        mask: hex_bitmask(mask)?,
        reason,
    })
}

/// TLB flush reasons by their printed names (include/trace/events/tlb.h).
fn tlb_reason(name: &str) -> Option<i32> {
    Some(match name {
        "flush on task switch" => 0,
        "remote shootdown" => 1,
        "local shootdown" => 2,
        "local MM shootdown" => 3,
        "remote IPI send" => 4,
        "remote wrong CPU" => 5,
        _ => return None,
    })
}

fn tlb_flush(body: &str) -> Option<Payload<'_>> {
    // `pages:-1 reason:remote shootdown (1)` or `pages=-1 reason=...`.
    let r = body.strip_prefix("pages")?;
    let r = r.strip_prefix(':').or_else(|| r.strip_prefix('='))?;
    let pages = num(r)?;
    let at = r.find(" reason")?;
    let reason_text = r[at + 7..].trim_start_matches([':', '=']).trim();
    let reason = match reason_text.rfind(" (") {
        Some(p) if reason_text.ends_with(')') => reason_text[p + 2..reason_text.len() - 1]
            .parse()
            .ok()
            .or_else(|| tlb_reason(&reason_text[..p]))?,
        _ => tlb_reason(reason_text).or_else(|| reason_text.parse().ok())?,
    };
    Some(Payload::TlbFlush { reason, pages })
}

fn csd_queue(body: &str) -> Option<Payload<'_>> {
    let [c, cs, f, csd] = fields(body, ["cpu=", "callsite=", "func=", "csd="])?;
    Some(Payload::CsdQueue {
        cpu: cpu_num(c)?,
        callsite: sym(cs)?,
        func: sym(f)?,
        csd: hex(csd)?,
    })
}

fn csd_function(entry: bool, body: &str) -> Option<Payload<'_>> {
    let [f, csd] = fields(body, ["func=", "csd="])?;
    Some(Payload::CsdFunction {
        entry,
        func: sym(f.trim_end_matches(','))?,
        csd: hex(csd)?,
    })
}

fn cpu_idle(body: &str) -> Option<Payload<'_>> {
    let [s, c] = fields(body, ["state=", "cpu_id="])?;
    // `state` is printed as an unsigned long; PWR_EVENT_EXIT is (u32)-1.
    let state: u64 = num(s)?;
    Some(Payload::CpuIdle {
        state: state as u32,
        cpu_id: cpu_num(c)?,
    })
}

fn wake_idle(body: &str) -> Option<Payload<'_>> {
    let [cpu] = fields(body, ["cpu="])?;
    Some(Payload::WakeIdleNoIpi { cpu: cpu_num(cpu)? })
}

fn irq_vector(entry: bool, body: &str) -> Option<Payload<'_>> {
    let [v] = fields(body, ["vector="])?;
    Some(Payload::IrqVector {
        vector: num(v)?,
        entry,
    })
}

fn softirq(phase: u8, body: &str) -> Option<Payload<'_>> {
    let [v] = fields(body, ["vec="])?;
    Some(Payload::Softirq {
        vec: num(v)?,
        phase,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(kind: Kind, body: &str) -> Payload<'_> {
        parse(kind, body).unwrap_or_else(|_| panic!("no parse: {body}"))
    }

    #[test]
    fn switch_raw_numeric_form_of_trace_cmd() {
        match p(Kind::Switch, "prev_comm=kworker/u12:1 prev_pid=46 prev_prio=120 prev_state=4096 next_comm=sh next_pid=1642 next_prio=120") {
            Payload::Switch { prev_comm, prev_tid, raw_state, next_comm, next_tid, next_prio, .. } => {
                assert_eq!(
                    (prev_comm, prev_tid, raw_state, next_comm, next_tid, next_prio),
                    ("kworker/u12:1", 46, Some(4096), "sh", 1642, 120)
                );
            }
            other => panic!("{other:?}"),
        }
        // Lowercase x (TASK_DEAD, Android) is dead, not runnable.
        match p(Kind::Switch, "prev_comm=a prev_pid=5 prev_prio=120 prev_state=x ==> next_comm=b next_pid=6 next_prio=120") {
            Payload::Switch { prev_state, raw_state: None, .. } => assert!(prev_state.is_dead()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn switch_key_value_and_short_forms() {
        let want = Payload::Switch {
            prev_comm: "bash",
            prev_tid: 8402,
            prev_prio: 120,
            prev_state: PrevState::parse_text("S").unwrap(),
            raw_state: None,
            next_comm: "kworker/u4:0",
            next_tid: 6,
            next_prio: 120,
        };
        assert_eq!(
            p(Kind::Switch, "prev_comm=bash prev_pid=8402 prev_prio=120 prev_state=S ==> next_comm=kworker/u4:0 next_pid=6 next_prio=120"),
            want
        );
        assert_eq!(
            p(Kind::Switch, "bash:8402 [120] S ==> kworker/u4:0:6 [120]"),
            want
        );
        // Spaces in comms (qemu vCPU threads), preempted state.
        match p(Kind::Switch, "prev_comm=CPU 0/KVM prev_pid=4242 prev_prio=120 prev_state=R+ ==> next_comm=CPU 1/KVM next_pid=4243 next_prio=120") {
            Payload::Switch { prev_comm, prev_state, next_comm, next_tid, .. } => {
                assert_eq!((prev_comm, next_comm, next_tid), ("CPU 0/KVM", "CPU 1/KVM", 4243));
                assert!(prev_state.preempted && prev_state.is_runnable());
            }
            o => panic!("{o:?}"),
        }
        match p(
            Kind::Switch,
            "CPU 0/KVM:4242 [120] D|W ==> swapper/1:0 [120]",
        ) {
            Payload::Switch {
                prev_comm,
                prev_state,
                next_tid,
                ..
            } => {
                assert_eq!(
                    (prev_comm, prev_state.bits, next_tid),
                    ("CPU 0/KVM", PrevState::D | PrevState::I, 0)
                );
            }
            o => panic!("{o:?}"),
        }
        assert_eq!(parse(Kind::Switch, "prev_comm=x prev_pid=zz"), Err(BadBody));
    }

    #[test]
    fn short_form_states_are_positional() {
        let st = |x| short_state(x).unwrap();
        assert_eq!(st("S").bits, PrevState::S);
        assert_eq!(st("W").bits, PrevState::I);
        assert_eq!(st("X").bits, PrevState::Z);
        assert_eq!(st("Z").bits, PrevState::X);
        assert_eq!(st("R"), PrevState::default());
        assert!(st("R+").preempted);
        assert_eq!(st("D|W").bits, PrevState::D | PrevState::I);
        assert!(st("Q").is_unknown() && !st("Q").is_runnable());
    }

    #[test]
    fn wakeup_forms() {
        let w = |b| match p(Kind::Wake(WakeKind::Wakeup), b) {
            Payload::Wakeup {
                comm,
                tid,
                prio,
                target_cpu,
                ..
            } => (comm, tid, prio, target_cpu),
            o => panic!("{o:?}"),
        };
        assert_eq!(
            w("comm=migration/1 pid=21 prio=0 target_cpu=001"),
            ("migration/1", 21, 0, 1)
        );
        assert_eq!(
            w("comm=foo pid=7 prio=120 success=1 target_cpu=003"),
            ("foo", 7, 120, 3)
        );
        assert_eq!(
            w("kworker/u4:0:6 [120] success=1 CPU:001"),
            ("kworker/u4:0", 6, 120, 1)
        );
        assert_eq!(w("sshd:1683 [120] CPU:000"), ("sshd", 1683, 120, 0));
    }

    #[test]
    fn kvm_forms() {
        assert_eq!(
            p(Kind::KvmExit, "vcpu 1 reason PAUSE_INSTRUCTION rip 0xffffffff8104f1b6 info1 0x0000000000000000 info2 0x0000000000000000 intr_info 0x00000000 error_code 0x00000000 requests 0x0000000000000000"),
            Payload::KvmExit { exit_reason: 40, isa: KvmIsa::Vmx, vcpu_id: Some(1), guest_rip: 0xffffffff8104f1b6 }
        );
        assert_eq!(
            p(
                Kind::KvmExit,
                "reason EPT_VIOLATION rip 0xfffff802987d6169 info 181 0"
            ),
            Payload::KvmExit {
                exit_reason: 48,
                isa: KvmIsa::Vmx,
                vcpu_id: None,
                guest_rip: 0xfffff802987d6169
            }
        );
        assert_eq!(
            p(
                Kind::KvmExit,
                "reason EXIT_NPF rip 0x0 info 1680000007 1729a1000"
            ),
            Payload::KvmExit {
                exit_reason: 0x400,
                isa: KvmIsa::Svm,
                vcpu_id: None,
                guest_rip: 0
            }
        );
        assert_eq!(
            p(Kind::KvmExit, "vcpu 3 reason pause rip 0x10 info1 0x0 info2 0x0 intr_info 0x0 error_code 0x0 requests 0x0"),
            Payload::KvmExit { exit_reason: 0x77, isa: KvmIsa::Svm, vcpu_id: Some(3), guest_rip: 0x10 }
        );
        assert_eq!(
            p(
                Kind::KvmEntry,
                "vcpu 1, rip 0xffffffff81000000 intr_info 0x0"
            ),
            Payload::KvmEntry { vcpu_id: Some(1) }
        );
        assert_eq!(
            p(Kind::KvmEntry, "vcpu 3"),
            Payload::KvmEntry { vcpu_id: Some(3) }
        );
    }

    #[test]
    fn ipi_csd_tlb_forms() {
        assert_eq!(
            p(Kind::IpiSendCpu, "cpu=0 callsite=on_each_cpu_cond_mask+0x20/0x60 callback=generic_smp_call_function_single_interrupt+0x0/0x10"),
            Payload::IpiSendCpu { cpu: 0, callsite: SymText::Name("on_each_cpu_cond_mask"), callback: SymText::Name("generic_smp_call_function_single_interrupt") }
        );
        assert_eq!(
            p(
                Kind::IpiSendCpu,
                "cpu=1 callsite=wakeup_preempt+0x55/0xa0 callback=0x0"
            ),
            Payload::IpiSendCpu {
                cpu: 1,
                callsite: SymText::Name("wakeup_preempt"),
                callback: SymText::Addr(0)
            }
        );
        match p(Kind::IpiSendCpumask, "cpumask=0-3,5 callsite=smp_call_function_many_cond+0x1/0x2 callback=flush_tlb_func+0x0/0x30") {
            Payload::IpiSendCpumask { mask: Some(m), callback, .. } => {
                assert_eq!(m.iter().collect::<Vec<_>>(), vec![0, 1, 2, 3, 5]);
                assert_eq!(callback, SymText::Name("flush_tlb_func"));
            }
            o => panic!("{o:?}"),
        }
        match p(Kind::IpiSendCpumask, "[FAILED TO PARSE] cpumask=ARRAY[02, 00, 00, 00, 00, 00, 00, 00] callsite=18446744071581999652 callback=18446744071579000000") {
            Payload::IpiSendCpumask { mask: None, callsite: SymText::Addr(a), .. } => assert_eq!(a, 18446744071581999652),
            o => panic!("{o:?}"),
        }
        match p(
            Kind::IpiRaise,
            "target_mask=00000000,00000003 (Function call interrupts)",
        ) {
            Payload::IpiRaise { mask, reason } => {
                assert_eq!(mask.iter().collect::<Vec<_>>(), vec![0, 1]);
                assert_eq!(reason, "Function call interrupts");
            }
            o => panic!("{o:?}"),
        }
        assert_eq!(
            p(Kind::TlbFlush, "pages:-1 reason:remote shootdown (1)"),
            Payload::TlbFlush {
                reason: 1,
                pages: -1
            }
        );
        assert_eq!(
            p(Kind::TlbFlush, "pages=-1 reason=remote shootdown (1)"),
            Payload::TlbFlush {
                reason: 1,
                pages: -1
            }
        );
        assert_eq!(
            p(Kind::TlbFlush, "pages:0 reason:flush on task switch (0)"),
            Payload::TlbFlush {
                reason: 0,
                pages: 0
            }
        );
        assert_eq!(
            p(Kind::TlbFlush, "pages:1 reason:local MM shootdown"),
            Payload::TlbFlush {
                reason: 3,
                pages: 1
            }
        );
        assert_eq!(
            p(Kind::CsdQueue, "cpu=0 callsite=on_each_cpu_cond_mask+0x20/0x60 func=flush_tlb_func csd=0000000070c6653f"),
            Payload::CsdQueue { cpu: 0, callsite: SymText::Name("on_each_cpu_cond_mask"), func: SymText::Name("flush_tlb_func"), csd: 0x70c6653f }
        );
        assert_eq!(
            p(
                Kind::CsdFunction(true),
                "func=flush_tlb_func, csd=0xffff8881097b9738"
            ),
            Payload::CsdFunction {
                entry: true,
                func: SymText::Name("flush_tlb_func"),
                csd: 0xffff8881097b9738
            }
        );
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
        assert_eq!(cpulist("0-4000000000"), None);
        assert_eq!(hex_bitmask(&vec!["1"; 5000].join(",")), None);
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
