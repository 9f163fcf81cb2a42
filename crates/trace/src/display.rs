//! Events printed the way `perf script` and the kernel print them.
//!
//! [`payload`] formats an event's fields with the tracepoint's own print
//! fmt (the text after `system:event:` in `perf script` and trace-cmd
//! output): `prev_comm=bash prev_pid=27544 prev_prio=120 prev_state=S ==>
//! next_comm=... next_pid=... next_prio=...` for sched_switch, `comm= pid=
//! prio= target_cpu=%03d` for the wakeups, `pages:N reason:NAME (N)` for
//! tlb_flush and so on; events kept without a typed decoder print their
//! raw fields (`name=value`, in the order stored) when the loader kept
//! them, nothing otherwise. [`line()`] prefixes it with the CPU, the time
//! and the event name as `perf script -F cpu,time,event,trace --ns` does.
//! Anything that shows events to a user goes through here, so that they
//! read the same everywhere.
//!
//! The typed model ([`EventData`]) does not keep every field of every
//! tracepoint; those it drops are left out of the text rather than made up:
//! `prio` of sched_migrate_task, the parent's `comm` of sched_process_fork,
//! `prio` and `group_dead` of sched_process_exit, `old_pid` of
//! sched_process_exec, and everything after `rip` of kvm_exit (after the
//! vCPU of kvm_entry). Code addresses print as the kernel's `%pS` does
//! (`name+0xoff`) when the file carries kernel symbols, else in hex, as
//! `perf script` prints them in that case; `%ps` fields (a function) lose
//! the offset. CPU masks print in hex, a comma every 32 bits, every chunk
//! zero-padded, as libtraceevent prints bitmask fields (over the 64-bit
//! words the mask holds: the field's own size is not kept).

use crate::event::{CpuMask, Event, EventData, Sym};
use crate::trace::Trace;
use std::fmt;

/// The payload of `ev` as the tracepoint prints it (see the module docs);
/// a [`fmt::Display`], so that it costs nothing until written.
pub fn payload<'a>(trace: &'a Trace, ev: &'a Event) -> Payload<'a> {
    Payload { trace, ev }
}

/// `[CPU] SECS.NANOS: system:event: payload`, the line `perf script
/// --ns -F cpu,time,event,trace` prints for `ev` (without its padding).
pub fn line<'a>(trace: &'a Trace, ev: &'a Event) -> Line<'a> {
    Line { trace, ev }
}

/// See [`payload()`].
#[derive(Clone, Copy)]
pub struct Payload<'a> {
    trace: &'a Trace,
    ev: &'a Event,
}

/// See [`line()`].
#[derive(Clone, Copy)]
pub struct Line<'a> {
    trace: &'a Trace,
    ev: &'a Event,
}

impl fmt::Display for Line<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ts = self.ev.ts.0;
        write!(
            f,
            "[{:03}] {}.{:09}: {}:",
            self.ev.cpu.0,
            ts / 1_000_000_000,
            ts % 1_000_000_000,
            self.trace.event_name(self.ev.name),
        )?;
        let p = payload(self.trace, self.ev).to_string();
        if p.is_empty() {
            Ok(())
        } else {
            write!(f, " {p}")
        }
    }
}

/// tlb_flush reasons as the kernel names them (`enum tlb_flush_reason`,
/// `TLB_FLUSH_REASON` in include/trace/events/tlb.h).
const TLB_REASONS: [&str; 6] = [
    "flush on task switch",
    "remote shootdown",
    "local shootdown",
    "local MM shootdown",
    "remote IPI send",
    "remote wrong CPU",
];

/// Softirq vector names (`softirq_name` in include/trace/events/irq.h).
const SOFTIRQS: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

impl Payload<'_> {
    fn s(&self, id: crate::StrId) -> &str {
        self.trace.strings.get(id)
    }

    /// `%pS`: `name+0xoff`, the name alone at offset 0, else hex.
    fn sym_off(&self, sym: Sym) -> String {
        self.trace.sym_name(sym)
    }

    /// `%ps`: the function's name without the offset, else hex.
    fn sym(&self, sym: Sym) -> String {
        if let Some(id) = sym.name_id() {
            return self.s(id).to_string();
        }
        match self.trace.kernel_symbols.lookup(sym.0) {
            Some((name, _)) => name.to_string(),
            None => format!("0x{:x}", sym.0),
        }
    }

    fn mask(&self, id: crate::MaskId) -> String {
        match self.trace.cpumasks.get(id.0 as usize) {
            Some(m) => hex_mask(m),
            None => "?".into(),
        }
    }
}

/// A CPU mask as libtraceevent prints a bitmask field: hex, most
/// significant first, 32 bits per comma-separated chunk, every chunk
/// zero-padded (`00000002,00000001` for CPUs 0 and 33).
pub fn hex_mask(m: &CpuMask) -> String {
    let words = if m.words.is_empty() {
        &[0u64][..]
    } else {
        &m.words[..]
    };
    let mut chunks = Vec::with_capacity(words.len() * 2);
    for w in words.iter().rev() {
        chunks.push(format!("{:08x}", w >> 32));
        chunks.push(format!("{:08x}", w & 0xffff_ffff));
    }
    chunks.join(",")
}

impl fmt::Display for Payload<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.ev.data {
            EventData::Switch {
                prev_tid,
                prev_prio,
                prev_state,
                prev_comm,
                next_tid,
                next_prio,
                next_comm,
            } => write!(
                f,
                "prev_comm={} prev_pid={} prev_prio={prev_prio} prev_state={} ==> \
                 next_comm={} next_pid={} next_prio={next_prio}",
                self.s(prev_comm),
                prev_tid.0,
                prev_state.to_text(),
                self.s(next_comm),
                next_tid.0,
            ),
            EventData::Wakeup {
                tid,
                comm,
                prio,
                target_cpu,
                ..
            } => write!(
                f,
                "comm={} pid={} prio={prio} target_cpu={:03}",
                self.s(comm),
                tid.0,
                target_cpu.0
            ),
            EventData::Migrate {
                tid,
                comm,
                orig_cpu,
                dest_cpu,
            } => write!(
                f,
                "comm={} pid={} orig_cpu={} dest_cpu={}",
                self.s(comm),
                tid.0,
                orig_cpu.0,
                dest_cpu.0
            ),
            EventData::Fork {
                parent_tid,
                child_tid,
                child_comm,
            } => write!(
                f,
                "pid={} child_comm={} child_pid={}",
                parent_tid.0,
                self.s(child_comm),
                child_tid.0
            ),
            EventData::Exit { tid, comm } => write!(f, "comm={} pid={}", self.s(comm), tid.0),
            EventData::Exec { tid, filename } => {
                write!(f, "filename={} pid={}", self.s(filename), tid.0)
            }
            _ => self.fmt_other(f),
        }
    }
}

impl Payload<'_> {
    /// The payloads of the events besides the scheduler's own (KVM, IPI,
    /// TLB, CSD, idle, softirq, runtime, untyped).
    fn fmt_other(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.ev.data {
            EventData::KvmExit {
                exit_reason,
                isa,
                vcpu_id,
                guest_rip,
            } => {
                if let Some(v) = vcpu_id {
                    write!(f, "vcpu {v} ")?;
                }
                match crate::kvm::reasons().name(isa, exit_reason) {
                    Some(n) => write!(f, "reason {n}")?,
                    None => write!(f, "reason 0x{exit_reason:x}")?,
                }
                write!(f, " rip 0x{guest_rip:x}")
            }
            EventData::KvmEntry { vcpu_id } => match vcpu_id {
                Some(v) => write!(f, "vcpu {v}"),
                None => Ok(()),
            },
            EventData::IpiSendCpu {
                cpu,
                callsite,
                callback,
            } => write!(
                f,
                "cpu={} callsite={} callback={}",
                cpu.0,
                self.sym_off(callsite),
                self.sym_off(callback)
            ),
            EventData::IpiSendCpumask {
                mask,
                callsite,
                callback,
            } => write!(
                f,
                "cpumask={} callsite={} callback={}",
                self.mask(mask),
                self.sym_off(callsite),
                self.sym_off(callback)
            ),
            EventData::IpiRaise { mask, reason } => {
                write!(f, "target_mask={} ({})", self.mask(mask), self.s(reason))
            }
            EventData::TlbFlush { reason, pages } => {
                let name = usize::try_from(reason)
                    .ok()
                    .and_then(|r| TLB_REASONS.get(r))
                    .map_or_else(|| format!("0x{reason:x}"), |n| n.to_string());
                write!(f, "pages:{pages} reason:{name} ({reason})")
            }
            EventData::CsdQueue {
                cpu,
                callsite,
                func,
                csd,
            } => write!(
                f,
                "cpu={} callsite={} func={} csd=0x{csd:x}",
                cpu.0,
                self.sym_off(callsite),
                self.sym(func)
            ),
            EventData::CsdFunctionEntry { func, csd }
            | EventData::CsdFunctionExit { func, csd } => {
                write!(f, "func={} csd=0x{csd:x}", self.sym(func))
            }
            EventData::CpuIdle { state, cpu_id } => {
                write!(f, "state={state} cpu_id={}", cpu_id.0)
            }
            EventData::Softirq { vec, .. } => match SOFTIRQS.get(vec as usize) {
                Some(n) => write!(f, "vec={vec} [action={n}]"),
                None => write!(f, "vec={vec} [action=0x{vec:x}]"),
            },
            EventData::WakeIdleNoIpi { cpu } => write!(f, "cpu={}", cpu.0),
            EventData::IrqVector { vector, .. } => write!(f, "vector={vector}"),
            // (the comm and vruntime perf prints are not kept in this form)
            EventData::StatRuntime { pid, runtime } => {
                write!(f, "pid={} runtime={runtime} [ns]", pid.0)
            }
            EventData::Other(None)
            | EventData::Switch { .. }
            | EventData::Wakeup { .. }
            | EventData::Migrate { .. }
            | EventData::Fork { .. }
            | EventData::Exit { .. }
            | EventData::Exec { .. } => Ok(()),
            EventData::Other(Some(r)) => {
                for (i, (k, v)) in self.trace.raw_args.get(r).enumerate() {
                    if i > 0 {
                        f.write_str(" ")?;
                    }
                    write!(f, "{k}={v}")?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Cpu, PrevState, StackId, Tid, TraceFormat, Ts, WakeKind};

    fn ev(t: &mut Trace, name: &str, data: EventData) -> Event {
        Event {
            ts: Ts(1_332_246_129_513),
            cpu: Cpu(1),
            tid: Tid(7),
            name: t.intern_name(name),
            stack: StackId::NONE,
            data,
        }
    }

    #[test]
    fn kernel_print_formats() {
        let mut t = Trace::new("x", TraceFormat::PerfData);
        let bash = t.strings.intern("bash");
        let sw = EventData::Switch {
            prev_tid: Tid(27544),
            prev_prio: 120,
            prev_state: PrevState {
                bits: 0,
                preempted: true,
            },
            prev_comm: bash,
            next_tid: Tid(0),
            next_prio: 120,
            next_comm: t.strings.intern("swapper/1"),
        };
        let e = ev(&mut t, "sched:sched_switch", sw);
        assert_eq!(
            line(&t, &e).to_string(),
            "[001] 1332.246129513: sched:sched_switch: prev_comm=bash prev_pid=27544 \
             prev_prio=120 prev_state=R+ ==> next_comm=swapper/1 next_pid=0 next_prio=120"
        );
        let w = EventData::Wakeup {
            kind: WakeKind::Waking,
            tid: Tid(18),
            comm: bash,
            prio: 0,
            target_cpu: Cpu(1),
        };
        let e = ev(&mut t, "sched:sched_waking", w);
        assert_eq!(
            payload(&t, &e).to_string(),
            "comm=bash pid=18 prio=0 target_cpu=001"
        );
        let e = ev(
            &mut t,
            "tlb:tlb_flush",
            EventData::TlbFlush {
                reason: 3,
                pages: -1,
            },
        );
        assert_eq!(
            payload(&t, &e).to_string(),
            "pages:-1 reason:local MM shootdown (3)"
        );
        let e = ev(
            &mut t,
            "irq:softirq_entry",
            EventData::Softirq { vec: 7, phase: 0 },
        );
        assert_eq!(payload(&t, &e).to_string(), "vec=7 [action=SCHED]");
        let mut m = CpuMask::default();
        m.insert(0);
        m.insert(33);
        t.cpumasks.push(m);
        let e = ev(
            &mut t,
            "ipi:ipi_send_cpumask",
            EventData::IpiSendCpumask {
                mask: crate::MaskId(0),
                callsite: Sym::from_addr(0xffff_ffff_8100_0010),
                callback: Sym::from_addr(0),
            },
        );
        t.kernel_symbols.syms = vec![(0xffff_ffff_8100_0000, "f".into())];
        assert_eq!(
            payload(&t, &e).to_string(),
            "cpumask=00000002,00000001 callsite=f+0x10 callback=0x0"
        );
        let e = ev(
            &mut t,
            "csd:csd_function_entry",
            EventData::CsdFunctionEntry {
                func: Sym::from_addr(0xffff_ffff_8100_0010),
                csd: 0xabc,
            },
        );
        assert_eq!(payload(&t, &e).to_string(), "func=f csd=0xabc");
        let r = t
            .raw_args
            .push([("comm", "perf"), ("runtime", "5")])
            .unwrap();
        let e = ev(
            &mut t,
            "sched:sched_stat_runtime",
            EventData::Other(Some(r)),
        );
        assert_eq!(payload(&t, &e).to_string(), "comm=perf runtime=5");
        let e = ev(
            &mut t,
            "sched:sched_stat_runtime",
            EventData::StatRuntime {
                pid: Tid(42),
                runtime: 5,
            },
        );
        assert_eq!(payload(&t, &e).to_string(), "pid=42 runtime=5 [ns]");
        let e = ev(&mut t, "x:y", EventData::Other(None));
        assert_eq!(line(&t, &e).to_string(), "[001] 1332.246129513: x:y:");
    }
}
