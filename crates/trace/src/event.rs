//! The typed event model.
//!
//! Every event carries when ([`Ts`]), where ([`Cpu`]), who was current
//! ([`Tid`], the tracepoint's `common_pid` or the sample's tid), which
//! tracepoint it was ([`NameId`], an index into [`crate::Trace::event_names`],
//! spelled `system:event`), and a typed payload ([`EventData`]) for the
//! tracepoints schedscope analyses. Tracepoints without a typed variant are
//! [`EventData::Other`]: counted and shown, their fields optionally kept.

use crate::ids::{Cpu, Tid, Ts};
use crate::strings::StrId;

/// Index into [`crate::Trace::event_names`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NameId(pub u16);

/// Index into [`crate::Trace::cpumasks`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MaskId(pub u32);

/// Index into [`crate::Trace::stacks`]; [`StackId::NONE`] when no call chain was recorded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StackId(pub u32);

impl StackId {
    /// No call chain.
    pub const NONE: StackId = StackId(u32::MAX);
    /// Whether a call chain is attached.
    pub fn is_some(self) -> bool {
        self != Self::NONE
    }
}

/// A code location: a raw address (perf.data) or a symbol name (text traces).
///
/// Text traces print symbols (`func=flush_tlb_func`), binary traces carry
/// addresses. Names are encoded as `NAME_TAG | StrId` so that the value stays
/// 8 bytes; the tag lies in the non-canonical x86-64 range, which no real
/// address uses. Use [`Sym::name_id`] / [`Sym::addr`] to tell them apart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Sym(pub u64);

impl Sym {
    const NAME_TAG: u64 = 0xfffe_5359_0000_0000;
    const TAG_MASK: u64 = 0xffff_ffff_0000_0000;

    /// A raw address.
    pub fn from_addr(addr: u64) -> Sym {
        Sym(addr)
    }
    /// A symbol known only by name.
    pub fn from_name(id: StrId) -> Sym {
        Sym(Self::NAME_TAG | id.0 as u64)
    }
    /// The interned name, when this is a named symbol.
    pub fn name_id(self) -> Option<StrId> {
        (self.0 & Self::TAG_MASK == Self::NAME_TAG).then_some(StrId(self.0 as u32))
    }
    /// The address, when this is an address.
    pub fn addr(self) -> Option<u64> {
        (self.0 & Self::TAG_MASK != Self::NAME_TAG).then_some(self.0)
    }
}

/// A set of CPUs (from `__data_loc cpumask_t` fields or text `cpumask=0-3`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct CpuMask {
    /// Bit `i` of word `i / 64` is CPU `i`.
    pub words: Vec<u64>,
}

impl CpuMask {
    /// Number of CPUs in the set.
    pub fn count(&self) -> u32 {
        self.words.iter().map(|w| w.count_ones()).sum()
    }
    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: u32) -> bool {
        self.words
            .get(cpu as usize / 64)
            .is_some_and(|w| w & (1 << (cpu % 64)) != 0)
    }
    /// Add `cpu` to the set.
    pub fn insert(&mut self, cpu: u32) {
        let i = cpu as usize / 64;
        if self.words.len() <= i {
            self.words.resize(i + 1, 0);
        }
        self.words[i] |= 1 << (cpu % 64);
    }
    /// The CPUs in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            (0..64)
                .filter(move |b| w & (1u64 << b) != 0)
                .map(move |b| (i * 64 + b) as u32)
        })
    }
}

/// The state a task left the CPU in (`prev_state` of sched_switch).
///
/// `bits` are the kernel's task-report bits with the preemption marker
/// normalised: bit 0x01 S, 0x02 D, 0x04 T, 0x08 t, 0x10 X, 0x20 Z, 0x40 P,
/// 0x80 I; zero means runnable (R). `preempted` is the kernel's
/// `TASK_REPORT_MAX` bit (printed as `R+`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PrevState {
    /// Task-report bits; 0 = runnable.
    pub bits: u16,
    /// The `+` marker: preempted while runnable.
    pub preempted: bool,
}

impl PrevState {
    /// Interruptible sleep.
    pub const S: u16 = 0x01;
    /// Uninterruptible sleep (blocked).
    pub const D: u16 = 0x02;
    /// Stopped.
    pub const T: u16 = 0x04;
    /// Traced.
    pub const TRACED: u16 = 0x08;
    /// Dead.
    pub const X: u16 = 0x10;
    /// Zombie.
    pub const Z: u16 = 0x20;
    /// Parked.
    pub const P: u16 = 0x40;
    /// Idle (kernel thread waiting for work).
    pub const I: u16 = 0x80;

    /// Runnable: the task left the CPU without blocking (preempted or yielded).
    pub fn is_runnable(self) -> bool {
        self.bits == 0
    }

    /// Parse the text form printed by the kernel and perf: `R`, `R+`, `S`,
    /// `D`, `D|K`, `T`, `t`, `X`, `Z`, `P`, `I`, or combinations joined by `|`.
    pub fn parse_text(s: &str) -> Option<PrevState> {
        let (s, preempted) = match s.strip_suffix('+') {
            Some(rest) => (rest, true),
            None => (s, false),
        };
        let mut bits = 0u16;
        for part in s.split('|') {
            bits |= match part {
                "R" => 0,
                "S" => Self::S,
                "D" => Self::D,
                "T" => Self::T,
                "t" => Self::TRACED,
                "X" => Self::X,
                "Z" => Self::Z,
                "P" => Self::P,
                "I" => Self::I,
                "K" | "W" | "N" | "x" => 0, // historical flags with no state of their own
                _ => return None,
            };
        }
        Some(PrevState { bits, preempted })
    }

    /// The text form (`R`, `R+`, `S`, `D`, ...), as `perf script` prints it.
    pub fn to_text(self) -> String {
        const NAMES: [(u16, &str); 8] = [
            (0x01, "S"),
            (0x02, "D"),
            (0x04, "T"),
            (0x08, "t"),
            (0x10, "X"),
            (0x20, "Z"),
            (0x40, "P"),
            (0x80, "I"),
        ];
        let mut s = if self.bits == 0 {
            "R".to_string()
        } else {
            NAMES
                .iter()
                .filter(|(b, _)| self.bits & b != 0)
                .map(|(_, n)| *n)
                .collect::<Vec<_>>()
                .join("|")
        };
        if self.preempted {
            s.push('+');
        }
        s
    }
}

/// Which wakeup tracepoint a [`EventData::Wakeup`] came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WakeKind {
    /// sched_waking: emitted on the waker's CPU, the waker is current.
    Waking,
    /// sched_wakeup: the task became runnable.
    Wakeup,
    /// sched_wakeup_new: a new task became runnable for the first time.
    WakeupNew,
}

/// The `isa` field of kvm_exit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KvmIsa {
    /// Intel VT-x (`isa == 1`).
    Vmx,
    /// AMD-V (`isa == 2`).
    Svm,
    /// Something else (raw value).
    Other(u32),
}

impl KvmIsa {
    /// From the raw `isa` field.
    pub fn from_raw(v: u32) -> KvmIsa {
        match v {
            1 => KvmIsa::Vmx,
            2 => KvmIsa::Svm,
            v => KvmIsa::Other(v),
        }
    }
}

/// Typed payload of the tracepoints schedscope understands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventData {
    /// sched:sched_switch.
    Switch {
        /// Outgoing task.
        prev_tid: Tid,
        /// Its priority.
        prev_prio: i32,
        /// The state it left in.
        prev_state: PrevState,
        /// Its comm.
        prev_comm: StrId,
        /// Incoming task.
        next_tid: Tid,
        /// Its priority.
        next_prio: i32,
        /// Its comm.
        next_comm: StrId,
    },
    /// sched:sched_waking / sched_wakeup / sched_wakeup_new.
    Wakeup {
        /// Which tracepoint.
        kind: WakeKind,
        /// The task being woken.
        tid: Tid,
        /// Its comm.
        comm: StrId,
        /// Its priority.
        prio: i32,
        /// CPU it will run on.
        target_cpu: Cpu,
    },
    /// sched:sched_migrate_task.
    Migrate {
        /// Migrated task.
        tid: Tid,
        /// Its comm.
        comm: StrId,
        /// Source CPU.
        orig_cpu: Cpu,
        /// Destination CPU.
        dest_cpu: Cpu,
    },
    /// sched:sched_process_fork.
    Fork {
        /// Parent tid.
        parent_tid: Tid,
        /// Child tid.
        child_tid: Tid,
        /// Child comm.
        child_comm: StrId,
    },
    /// sched:sched_process_exit.
    Exit {
        /// Exiting tid.
        tid: Tid,
        /// Its comm.
        comm: StrId,
    },
    /// sched:sched_process_exec.
    Exec {
        /// The task.
        tid: Tid,
        /// The executed file.
        filename: StrId,
    },
    /// kvm:kvm_exit.
    KvmExit {
        /// Raw exit reason (VMX basic reason in the low 16 bits; SVM exit code).
        exit_reason: u32,
        /// Which hardware virtualization.
        isa: KvmIsa,
        /// vCPU id, when the format has it.
        vcpu_id: Option<u32>,
        /// Guest instruction pointer.
        guest_rip: u64,
    },
    /// kvm:kvm_entry.
    KvmEntry {
        /// vCPU id.
        vcpu_id: Option<u32>,
    },
    /// ipi:ipi_send_cpu.
    IpiSendCpu {
        /// Target CPU.
        cpu: Cpu,
        /// Where the IPI was sent from.
        callsite: Sym,
        /// Function the target runs.
        callback: Sym,
    },
    /// ipi:ipi_send_cpumask.
    IpiSendCpumask {
        /// Target CPUs.
        mask: MaskId,
        /// Where the IPI was sent from.
        callsite: Sym,
        /// Function the targets run.
        callback: Sym,
    },
    /// ipi:ipi_raise (older kernels): target mask and reason.
    IpiRaise {
        /// Target CPUs.
        mask: MaskId,
        /// Reason string.
        reason: StrId,
    },
    /// tlb:tlb_flush.
    TlbFlush {
        /// Raw reason (0 TLB_FLUSH_ON_TASK_SWITCH, 1 TLB_REMOTE_SHOOTDOWN,
        /// 2 TLB_LOCAL_SHOOTDOWN, 3 TLB_LOCAL_MM_SHOOTDOWN, 4 TLB_REMOTE_SEND_IPI).
        reason: i32,
        /// Pages flushed (-1 = full flush).
        pages: i64,
    },
    /// csd:csd_queue_cpu.
    CsdQueue {
        /// Target CPU.
        cpu: Cpu,
        /// Where it was queued from.
        callsite: Sym,
        /// Function the target will run.
        func: Sym,
        /// The csd pointer (pairs queue with entry/exit).
        csd: u64,
    },
    /// csd:csd_function_entry.
    CsdFunctionEntry {
        /// Function run.
        func: Sym,
        /// The csd pointer.
        csd: u64,
    },
    /// csd:csd_function_exit.
    CsdFunctionExit {
        /// Function run.
        func: Sym,
        /// The csd pointer.
        csd: u64,
    },
    /// power:cpu_idle (`state` u32::MAX = exit from idle).
    CpuIdle {
        /// C-state entered, or u32::MAX (PWR_EVENT_EXIT).
        state: u32,
        /// The CPU.
        cpu_id: Cpu,
    },
    /// irq:softirq_entry / irq:softirq_exit / irq:softirq_raise.
    Softirq {
        /// Softirq vector (7 = SCHED).
        vec: u32,
        /// 0 entry, 1 exit, 2 raise.
        phase: u8,
    },
    /// sched:sched_wake_idle_without_ipi.
    WakeIdleNoIpi {
        /// CPU that was woken by setting need_resched.
        cpu: Cpu,
    },
    /// irq_vectors:*_entry/exit (call_function, call_function_single, reschedule).
    IrqVector {
        /// IRQ vector number.
        vector: i32,
        /// True for *_entry, false for *_exit.
        entry: bool,
    },
    /// Any other tracepoint or sample; when the decoder kept its fields they
    /// are at this index of [`crate::Trace::other_fields`].
    Other(Option<u32>),
}

/// One event of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// When.
    pub ts: Ts,
    /// The CPU that emitted it.
    pub cpu: Cpu,
    /// Current task on that CPU (common_pid / sample tid).
    pub tid: Tid,
    /// Which tracepoint (`system:event`), index into the trace's names.
    pub name: NameId,
    /// Call chain, when recorded.
    pub stack: StackId,
    /// Typed payload.
    pub data: EventData,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prev_state_text_round_trip() {
        for s in ["R", "R+", "S", "D", "T", "t", "X", "Z", "P", "I", "S|D"] {
            assert_eq!(PrevState::parse_text(s).unwrap().to_text(), s);
        }
        assert!(PrevState::parse_text("R+").unwrap().is_runnable());
        assert!(!PrevState::parse_text("S").unwrap().is_runnable());
        assert_eq!(PrevState::parse_text("Q"), None);
    }

    #[test]
    fn sym_tags_do_not_collide_with_kernel_addresses() {
        let a = Sym::from_addr(0xffff_ffff_8100_0000);
        assert_eq!(a.addr(), Some(0xffff_ffff_8100_0000));
        assert_eq!(a.name_id(), None);
        let n = Sym::from_name(StrId(42));
        assert_eq!(n.name_id(), Some(StrId(42)));
        assert_eq!(n.addr(), None);
    }

    #[test]
    fn cpumask_ops() {
        let mut m = CpuMask::default();
        m.insert(1);
        m.insert(70);
        assert_eq!(m.count(), 2);
        assert!(m.contains(70) && !m.contains(2));
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![1, 70]);
    }

    #[test]
    fn event_stays_small() {
        // 1.65 M events of a 168 MB recording: every byte is 1.6 MB of RSS
        // (issue 2). The payload is 32 bytes, the header 24.
        assert!(
            std::mem::size_of::<EventData>() <= 32,
            "{}",
            std::mem::size_of::<EventData>()
        );
        assert!(
            std::mem::size_of::<Event>() <= 56,
            "{}",
            std::mem::size_of::<Event>()
        );
    }
}
