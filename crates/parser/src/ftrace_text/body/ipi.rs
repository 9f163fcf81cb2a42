//! IPIs, cross-CPU function calls and TLB flushes: ipi_send_cpu,
//! ipi_send_cpumask, ipi_raise, csd_queue_cpu, csd_function_entry/exit and
//! tlb_flush, with their CPU lists and masks.

use super::fields::{cpu_num, fields, hex, num, sym, MAX_CPU};
use super::Payload;
use schedscope_trace::CpuMask;

pub(super) fn ipi_send_cpu(body: &str) -> Option<Payload<'_>> {
    let [c, cs, cb] = fields(body, ["cpu=", "callsite=", "callback="])?;
    Some(Payload::IpiSendCpu {
        cpu: cpu_num(c)?,
        callsite: sym(cs)?,
        callback: sym(cb)?,
    })
}

/// A cpulist (`0-3,5`), or None if it is not one.
pub(super) fn cpulist(s: &str) -> Option<CpuMask> {
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

pub(super) fn ipi_send_cpumask(body: &str) -> Option<Payload<'_>> {
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
pub(super) fn hex_bitmask(s: &str) -> Option<CpuMask> {
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

pub(super) fn ipi_raise(body: &str) -> Option<Payload<'_>> {
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

pub(super) fn tlb_flush(body: &str) -> Option<Payload<'_>> {
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

pub(super) fn csd_queue(body: &str) -> Option<Payload<'_>> {
    let [c, cs, f, csd] = fields(body, ["cpu=", "callsite=", "func=", "csd="])?;
    Some(Payload::CsdQueue {
        cpu: cpu_num(c)?,
        callsite: sym(cs)?,
        func: sym(f)?,
        csd: hex(csd)?,
    })
}

pub(super) fn csd_function(entry: bool, body: &str) -> Option<Payload<'_>> {
    let [f, csd] = fields(body, ["func=", "csd="])?;
    Some(Payload::CsdFunction {
        entry,
        func: sym(f.trim_end_matches(','))?,
        csd: hex(csd)?,
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::p;
    use super::super::{Kind, SymText};
    use super::*;

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
}
