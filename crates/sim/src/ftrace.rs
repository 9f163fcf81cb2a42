//! ftrace text output, as /sys/kernel/tracing/trace prints it with the
//! `record-tgid` option (the TGID column), using this kernel's print formats.

use crate::config::Isa;
use crate::model::{Out, SimData, Simulation};
use std::fmt::Write as _;

/// The name the kernel's print fmt gives an exit reason.
pub fn reason_name(isa: Isa, reason: u32) -> String {
    let n = match (isa, reason) {
        (Isa::Vmx, 1) => "EXTERNAL_INTERRUPT",
        (Isa::Vmx, 7) => "INTERRUPT_WINDOW",
        (Isa::Vmx, 12) => "HLT",
        (Isa::Vmx, 30) => "IO_INSTRUCTION",
        (Isa::Vmx, 32) => "MSR_WRITE",
        (Isa::Vmx, 40) => "PAUSE_INSTRUCTION",
        (Isa::Vmx, 48) => "EPT_VIOLATION",
        (Isa::Svm, 0x60) => "interrupt",
        (Isa::Svm, 0x64) => "vintr",
        (Isa::Svm, 0x77) => "pause",
        (Isa::Svm, 0x78) => "hlt",
        (Isa::Svm, 0x7b) => "io",
        (Isa::Svm, 0x7c) => "msr",
        (Isa::Svm, 0x400) => "npf",
        _ => return format!("0x{reason:x}"),
    };
    n.to_string()
}

/// The `prev_state` text of a switch-out.
pub fn prev_state_text(prev: i32, out: Out) -> &'static str {
    match (prev, out) {
        (0, _) | (_, Out::Yielded) => "R",
        (_, Out::Preempted) => "R+",
        (_, Out::Sleep) => "S",
    }
}

/// How kvm_exit / kvm_entry lines are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvmStyle {
    /// This kernel's format: `vcpu N reason NAME rip 0x.. info1 .. requests 0x..`.
    Current,
    /// Older kernels (4.x): `reason NAME rip 0x.. info A B`, no vCPU id;
    /// kvm_entry prints only `vcpu N`.
    Old,
}

/// Render the whole trace as ftrace text (this kernel's formats).
pub fn to_ftrace_text(sim: &Simulation) -> String {
    to_ftrace_text_style(sim, KvmStyle::Current)
}

/// The same trace without the TGID column (tracefs without `record-tgid`):
/// the decoder learns no process ids, so only explicit gangs exist.
pub fn to_ftrace_text_without_tgid(sim: &Simulation) -> String {
    let text = to_ftrace_text(sim);
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        if line.starts_with('#') {
            if line.contains("TASK-PID") {
                out.push_str("#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n");
            } else if line.contains("| |") {
                out.push_str("#              | |         |   |||||     |         |\n");
            } else {
                out.push_str(line);
                out.push('\n');
            }
            continue;
        }
        // "%16s-%-7d (%7s) [": the TGID column is the 10 bytes before " [" ... "(".
        match line.find(" (") {
            Some(i) if line[i..].starts_with(" (") && line[i + 11..].starts_with('[') => {
                out.push_str(&line[..i + 1]);
                out.push_str(&line[i + 11..]);
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// Render the whole trace as ftrace text with kvm lines in `style`.
pub fn to_ftrace_text_style(sim: &Simulation, style: KvmStyle) -> String {
    let mut s = String::with_capacity(sim.events.len() * 150);
    let n = sim.events.len();
    let _ = write!(
        s,
        "# tracer: nop\n#\n# entries-in-buffer/entries-written: {n}/{n}   #P:{}\n#\n\
#                                          _-----=> irqs-off/BH-disabled\n\
#                                         / _----=> need-resched\n\
#                                        | / _---=> hardirq/softirq\n\
#                                        || / _--=> preempt-depth\n\
#                                        ||| / _-=> migrate-disable\n\
#                                        |||| /     delay\n\
#           TASK-PID       TGID    CPU#  |||||  TIMESTAMP  FUNCTION\n\
#              | |           |       |   |||||     |         |\n",
        sim.config.cpus
    );
    let mut lost = sim.lost.iter().peekable();
    for ev in &sim.events {
        // A loss record before the first event its CPU kept after the loss.
        while let Some(l) = lost.next_if(|l| l.ts <= ev.ts) {
            let _ = writeln!(s, "CPU:{} [LOST {} EVENTS]", l.cpu, l.n);
        }
        let (comm, tgid) = if ev.pid == 0 {
            ("<idle>".to_string(), "-------".to_string())
        } else {
            (sim.comm(ev.pid, ev.cpu), sim.tgid(ev.pid).to_string())
        };
        // "%16s-%-7d (%7s) [%03d] flags %5lu.%06lu: ", as the kernel prints it.
        let _ = write!(
            s,
            "{:>16}-{:<7} ({:>7}) [{:03}] d..2. {:>5}.{:06}: ",
            comm,
            ev.pid,
            tgid,
            ev.cpu,
            ev.ts / 1_000_000_000,
            (ev.ts % 1_000_000_000) / 1000
        );
        match ev.data {
            SimData::Switch { prev, out, next } => {
                let _ = writeln!(
                    s,
                    "sched_switch: prev_comm={} prev_pid={} prev_prio=120 prev_state={} ==> next_comm={} next_pid={} next_prio=120",
                    sim.comm(prev, ev.cpu),
                    prev,
                    prev_state_text(prev, out),
                    sim.comm(next, ev.cpu),
                    next
                );
            }
            SimData::Waking { tid, target } => {
                let _ = writeln!(
                    s,
                    "sched_waking: comm={} pid={tid} prio=120 target_cpu={target:03}",
                    sim.comm(tid, 0)
                );
            }
            SimData::Wakeup { tid, target } => {
                let _ = writeln!(
                    s,
                    "sched_wakeup: comm={} pid={tid} prio=120 target_cpu={target:03}",
                    sim.comm(tid, 0)
                );
            }
            SimData::WakeupNew { tid, target } => {
                let _ = writeln!(
                    s,
                    "sched_wakeup_new: comm={} pid={tid} prio=120 target_cpu={target:03}",
                    sim.comm(tid, 0)
                );
            }
            SimData::Migrate { tid, orig, dest } => {
                let _ = writeln!(
                    s,
                    "sched_migrate_task: comm={} pid={tid} prio=120 orig_cpu={orig} dest_cpu={dest}",
                    sim.comm(tid, 0)
                );
            }
            SimData::KvmExit {
                reason,
                isa,
                vcpu,
                rip,
            } if style == KvmStyle::Old => {
                let _ = vcpu;
                let _ = writeln!(
                    s,
                    "kvm_exit: reason {} rip 0x{rip:x} info 0 0",
                    reason_name(isa, reason)
                );
            }
            SimData::KvmExit {
                reason,
                isa,
                vcpu,
                rip,
            } => {
                let _ = writeln!(
                    s,
                    "kvm_exit: vcpu {vcpu} reason {} rip 0x{rip:x} info1 0x{:016x} info2 0x{:016x} intr_info 0x{:08x} error_code 0x{:08x} requests 0x{:016x}",
                    reason_name(isa, reason),
                    0,
                    0,
                    0,
                    0,
                    0
                );
            }
            SimData::StatRuntime { runtime } => {
                let _ = writeln!(
                    s,
                    "sched_stat_runtime: comm={} pid={} runtime={runtime} [ns]",
                    sim.comm(ev.pid, ev.cpu),
                    ev.pid
                );
            }
            SimData::KvmEntry { vcpu, .. } if style == KvmStyle::Old => {
                let _ = writeln!(s, "kvm_entry: vcpu {vcpu}");
            }
            SimData::KvmEntry { vcpu, rip } => {
                let _ = writeln!(
                    s,
                    "kvm_entry: vcpu {vcpu}, rip 0x{rip:x} intr_info 0x{:08x} error_code 0x{:08x}",
                    0, 0
                );
            }
        }
    }
    s
}
