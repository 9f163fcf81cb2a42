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
/// `bits` name the states the kernel has reported across versions, one bit
/// per letter that `sched_switch` prints (case as printed), normalised so
/// that a letter means the same bit whatever the kernel version:
///
/// | bit | letter | kernel state |
/// |---|---|---|
/// | 0x0001 | `S` | TASK_INTERRUPTIBLE |
/// | 0x0002 | `D` | TASK_UNINTERRUPTIBLE |
/// | 0x0004 | `T` | __TASK_STOPPED |
/// | 0x0008 | `t` | __TASK_TRACED |
/// | 0x0010 | `X` | EXIT_DEAD |
/// | 0x0020 | `Z` | EXIT_ZOMBIE |
/// | 0x0040 | `P` | TASK_PARKED |
/// | 0x0080 | `I` | TASK_REPORT_IDLE (4.14+) |
/// | 0x0100 | `x` | TASK_DEAD (before 4.14; Android kernels print it) |
/// | 0x0200 | `K` | TASK_WAKEKILL (before 4.14; `D\|K` = killable) |
/// | 0x0400 | `W` | TASK_WAKING (before 4.14) |
/// | 0x0800 | `N` | TASK_NOLOAD (4.2 to 4.13; `D\|N` = TASK_IDLE) |
/// | 0x1000 | `n` | TASK_NEW (4.8 to 4.13) |
/// | 0x8000 | | a letter or bit no kernel version defines ([`PrevState::UNKNOWN`]) |
///
/// Zero means runnable (`R`). `preempted` is the kernel's preemption marker
/// (`TASK_STATE_MAX`, later `TASK_REPORT_MAX`), printed as `R+`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PrevState {
    /// State bits (table above); 0 = runnable.
    pub bits: u16,
    /// The `+` marker: preempted while runnable.
    pub preempted: bool,
}

/// How a kernel version numbers the `prev_state` bits of sched_switch, for
/// traces that carry the number rather than the letters (raw trace-cmd
/// output, perf.data payloads).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StateLayout {
    /// 4.14 and later (`TASK_REPORT`): S D T t X Z P I as bits 0x01..0x80,
    /// preemption marker `TASK_REPORT_MAX` = 0x100.
    Report,
    /// Before 4.14: S D T t as 0x01..0x08, then 16 `Z`, 32 `X`, 64 `x`,
    /// 128 `K`, 256 `W`, 512 `P`, 1024 `N`, 2048 `n` (as labelled by the
    /// sched_switch print fmt of those kernels), up to the preemption marker
    /// `TASK_STATE_MAX`: 512 (3.0 to 3.8), 1024 (3.9 to 4.1), 2048 (4.2 to
    /// 4.7), 4096 (4.8 to 4.13).
    Legacy {
        /// `TASK_STATE_MAX` of that kernel: the preemption marker.
        marker: u64,
    },
}

impl StateLayout {
    /// The preemption marker bit.
    pub fn marker(self) -> u64 {
        match self {
            StateLayout::Report => 0x100,
            StateLayout::Legacy { marker } => marker,
        }
    }

    /// The kernel versions that used this layout, for messages.
    pub fn kernels(self) -> &'static str {
        match self {
            StateLayout::Report => "Linux 4.14 and later (TASK_REPORT_MAX = 0x100)",
            StateLayout::Legacy { marker: 512 } => "Linux 3.0 to 3.8 (TASK_STATE_MAX = 512)",
            StateLayout::Legacy { marker: 1024 } => "Linux 3.9 to 4.1 (TASK_STATE_MAX = 1024)",
            StateLayout::Legacy { marker: 2048 } => "Linux 4.2 to 4.7 (TASK_STATE_MAX = 2048)",
            StateLayout::Legacy { marker: 4096 } => "Linux 4.8 to 4.13 (TASK_STATE_MAX = 4096)",
            StateLayout::Legacy { .. } => "a kernel before 4.14 with an unusual TASK_STATE_MAX",
        }
    }
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
    /// Dead (EXIT_DEAD).
    pub const X: u16 = 0x10;
    /// Zombie.
    pub const Z: u16 = 0x20;
    /// Parked.
    pub const P: u16 = 0x40;
    /// Idle (kernel thread waiting for work).
    pub const I: u16 = 0x80;
    /// TASK_DEAD of kernels before 4.14 (printed `x`).
    pub const TASK_DEAD: u16 = 0x100;
    /// TASK_WAKEKILL (printed `K`).
    pub const WAKEKILL: u16 = 0x200;
    /// TASK_WAKING (printed `W`).
    pub const WAKING: u16 = 0x400;
    /// TASK_NOLOAD (printed `N`).
    pub const NOLOAD: u16 = 0x800;
    /// TASK_NEW (printed `n`).
    pub const NEW: u16 = 0x1000;
    /// A letter or bit that no kernel version defines: the task left the
    /// CPU in a state this decoder cannot name (never read as runnable).
    pub const UNKNOWN: u16 = 0x8000;
    /// Every bit that means the task is gone.
    pub const DEAD: u16 = Self::X | Self::Z | Self::TASK_DEAD;

    /// Letters in printing order, with their bits.
    const LETTERS: [(u16, char); 13] = [
        (Self::S, 'S'),
        (Self::D, 'D'),
        (Self::T, 'T'),
        (Self::TRACED, 't'),
        (Self::X, 'X'),
        (Self::Z, 'Z'),
        (Self::P, 'P'),
        (Self::I, 'I'),
        (Self::TASK_DEAD, 'x'),
        (Self::WAKEKILL, 'K'),
        (Self::WAKING, 'W'),
        (Self::NOLOAD, 'N'),
        (Self::NEW, 'n'),
    ];

    /// Runnable: the task left the CPU without blocking (preempted or yielded).
    pub fn is_runnable(self) -> bool {
        self.bits == 0
    }

    /// The task is gone (`X`, `Z` or `x`).
    pub fn is_dead(self) -> bool {
        self.bits & Self::DEAD != 0
    }

    /// A letter or bit no kernel defines was seen.
    pub fn is_unknown(self) -> bool {
        self.bits & Self::UNKNOWN != 0
    }

    /// The bit of one state letter, case as printed.
    pub fn letter_bit(c: char) -> Option<u16> {
        Self::LETTERS.iter().find(|(_, l)| *l == c).map(|(b, _)| *b)
    }

    /// Parse the text form printed by the kernel and perf: `R`, `R+`, `S`,
    /// `D`, `D|K`, `T`, `t`, `X`, `x`, `Z`, `P`, `I`, `K`, `W`, `N`, `n`,
    /// combinations joined by `|` (or run together, as some tools print
    /// them), with an optional trailing `+`. A letter no kernel defines sets
    /// [`PrevState::UNKNOWN`] (check [`PrevState::is_unknown`]); `None`
    /// only for an empty state or one holding characters that are not
    /// letters.
    pub fn parse_text(s: &str) -> Option<PrevState> {
        let (s, preempted) = match s.strip_suffix('+') {
            Some(rest) => (rest, true),
            None => (s, false),
        };
        if s.is_empty() {
            return None;
        }
        let mut bits = 0u16;
        for part in s.split('|') {
            if part.is_empty() {
                return None;
            }
            for c in part.chars() {
                if !c.is_ascii_alphabetic() {
                    return None;
                }
                bits |= match c {
                    'R' => 0,
                    c => Self::letter_bit(c).unwrap_or(Self::UNKNOWN),
                };
            }
        }
        Some(PrevState { bits, preempted })
    }

    /// Decode the numeric `prev_state` of a kernel with layout `layout`.
    /// Bits the layout does not define set [`PrevState::UNKNOWN`].
    pub fn from_raw(value: u64, layout: StateLayout) -> PrevState {
        let marker = layout.marker();
        let preempted = value & marker != 0;
        // Bits at and above the marker other than the marker itself, and
        // bits below it that the layout leaves unnamed, are unknown.
        let state = value & !marker;
        let table: &[(u64, u16)] = match layout {
            StateLayout::Report => &[
                (0x01, Self::S),
                (0x02, Self::D),
                (0x04, Self::T),
                (0x08, Self::TRACED),
                (0x10, Self::X),
                (0x20, Self::Z),
                (0x40, Self::P),
                (0x80, Self::I),
            ],
            StateLayout::Legacy { .. } => &[
                (1, Self::S),
                (2, Self::D),
                (4, Self::T),
                (8, Self::TRACED),
                (16, Self::Z),
                (32, Self::X),
                (64, Self::TASK_DEAD),
                (128, Self::WAKEKILL),
                (256, Self::WAKING),
                (512, Self::P),
                (1024, Self::NOLOAD),
                (2048, Self::NEW),
            ],
        };
        let mut bits = 0u16;
        let mut rest = state;
        for &(raw, bit) in table {
            if raw < marker && state & raw != 0 {
                bits |= bit;
                rest &= !raw;
            }
        }
        if rest != 0 {
            bits |= Self::UNKNOWN;
        }
        PrevState { bits, preempted }
    }

    /// Decode a numeric `prev_state` through a print fmt's own flag table:
    /// `flags` are the `{ value, "letters" }` pairs of its `__print_flags`,
    /// `marker` its preemption marker. Values not in the table set
    /// [`PrevState::UNKNOWN`].
    pub fn from_flags(value: u64, flags: &[(u64, &str)], marker: u64) -> PrevState {
        let preempted = marker != 0 && value & marker == marker;
        let mut rest = if preempted { value & !marker } else { value };
        let mut bits = 0u16;
        for &(raw, letters) in flags {
            if raw != 0 && rest & raw == raw {
                rest &= !raw;
                bits |= PrevState::parse_text(letters).map_or(Self::UNKNOWN, |p| p.bits);
            }
        }
        if rest != 0 {
            bits |= Self::UNKNOWN;
        }
        PrevState { bits, preempted }
    }

    /// The text form (`R`, `R+`, `S`, `D|K`, `x`, ...), as the kernel prints
    /// it; an unknown state prints as `?`.
    pub fn to_text(self) -> String {
        let mut s = if self.bits == 0 {
            "R".to_string()
        } else {
            let mut parts: Vec<String> = Self::LETTERS
                .iter()
                .filter(|(b, _)| self.bits & b != 0)
                .map(|(_, n)| n.to_string())
                .collect();
            if self.is_unknown() {
                parts.push("?".into());
            }
            parts.join("|")
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
    /// sched:sched_stat_runtime, when the load keeps no raw fields: the two
    /// fields the timeline's repairs read (with raw fields it is kept as
    /// [`EventData::Other`] with all of them).
    StatRuntime {
        /// The task whose runtime is accounted (the current one).
        pid: Tid,
        /// ns it ran since its last update (or its switch-in).
        runtime: u64,
    },
    /// Any other tracepoint or sample; when the decoder kept its fields they
    /// are record `i` of [`crate::Trace::raw_args`].
    Other(Option<u32>),
}

/// The variant of an [`EventData`], without its fields: what a consumer
/// names when it says which events it reads ([`KindSet`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum EventKind {
    /// [`EventData::Switch`].
    Switch,
    /// [`EventData::Wakeup`].
    Wakeup,
    /// [`EventData::Migrate`].
    Migrate,
    /// [`EventData::Fork`].
    Fork,
    /// [`EventData::Exit`].
    Exit,
    /// [`EventData::Exec`].
    Exec,
    /// [`EventData::KvmExit`].
    KvmExit,
    /// [`EventData::KvmEntry`].
    KvmEntry,
    /// [`EventData::IpiSendCpu`].
    IpiSendCpu,
    /// [`EventData::IpiSendCpumask`].
    IpiSendCpumask,
    /// [`EventData::IpiRaise`].
    IpiRaise,
    /// [`EventData::TlbFlush`].
    TlbFlush,
    /// [`EventData::CsdQueue`].
    CsdQueue,
    /// [`EventData::CsdFunctionEntry`].
    CsdFunctionEntry,
    /// [`EventData::CsdFunctionExit`].
    CsdFunctionExit,
    /// [`EventData::CpuIdle`].
    CpuIdle,
    /// [`EventData::Softirq`].
    Softirq,
    /// [`EventData::WakeIdleNoIpi`].
    WakeIdleNoIpi,
    /// [`EventData::IrqVector`].
    IrqVector,
    /// [`EventData::StatRuntime`].
    StatRuntime,
    /// [`EventData::Other`].
    Other,
}

impl EventData {
    /// The variant.
    #[inline]
    pub fn kind(&self) -> EventKind {
        match self {
            EventData::Switch { .. } => EventKind::Switch,
            EventData::Wakeup { .. } => EventKind::Wakeup,
            EventData::Migrate { .. } => EventKind::Migrate,
            EventData::Fork { .. } => EventKind::Fork,
            EventData::Exit { .. } => EventKind::Exit,
            EventData::Exec { .. } => EventKind::Exec,
            EventData::KvmExit { .. } => EventKind::KvmExit,
            EventData::KvmEntry { .. } => EventKind::KvmEntry,
            EventData::IpiSendCpu { .. } => EventKind::IpiSendCpu,
            EventData::IpiSendCpumask { .. } => EventKind::IpiSendCpumask,
            EventData::IpiRaise { .. } => EventKind::IpiRaise,
            EventData::TlbFlush { .. } => EventKind::TlbFlush,
            EventData::CsdQueue { .. } => EventKind::CsdQueue,
            EventData::CsdFunctionEntry { .. } => EventKind::CsdFunctionEntry,
            EventData::CsdFunctionExit { .. } => EventKind::CsdFunctionExit,
            EventData::CpuIdle { .. } => EventKind::CpuIdle,
            EventData::Softirq { .. } => EventKind::Softirq,
            EventData::WakeIdleNoIpi { .. } => EventKind::WakeIdleNoIpi,
            EventData::IrqVector { .. } => EventKind::IrqVector,
            EventData::StatRuntime { .. } => EventKind::StatRuntime,
            EventData::Other(_) => EventKind::Other,
        }
    }
}

/// A set of [`EventKind`]s, one bit each: a membership test is a shift and
/// a mask, cheap enough for a per-event filter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct KindSet(u32);

impl KindSet {
    /// The set of `kinds`.
    pub const fn of(kinds: &[EventKind]) -> KindSet {
        let mut bits = 0u32;
        let mut i = 0;
        while i < kinds.len() {
            bits |= 1 << kinds[i] as u32;
            i += 1;
        }
        KindSet(bits)
    }

    /// Both sets' kinds.
    pub const fn union(self, other: KindSet) -> KindSet {
        KindSet(self.0 | other.0)
    }

    /// Whether `kind` is in the set.
    #[inline]
    pub const fn has(self, kind: EventKind) -> bool {
        self.0 & (1 << kind as u32) != 0
    }

    /// Whether `data`'s kind is in the set.
    #[inline]
    pub fn contains(self, data: &EventData) -> bool {
        self.has(data.kind())
    }
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
    fn kind_sets_hold_what_they_are_made_of() {
        let set = KindSet::of(&[EventKind::Switch, EventKind::Other]);
        let sw = EventData::Switch {
            prev_tid: Tid(1),
            prev_prio: 120,
            prev_state: PrevState::default(),
            prev_comm: crate::StrId(0),
            next_tid: Tid(0),
            next_prio: 120,
            next_comm: crate::StrId(0),
        };
        assert!(set.contains(&sw) && set.contains(&EventData::Other(None)));
        assert!(!set.has(EventKind::Wakeup) && !set.has(EventKind::IrqVector));
        let all = set.union(KindSet::of(&[EventKind::IrqVector]));
        assert!(all.has(EventKind::IrqVector) && all.has(EventKind::Switch));
        assert_eq!(KindSet::default(), KindSet::of(&[]));
    }

    #[test]
    fn prev_state_text_round_trip() {
        for s in [
            "R", "R+", "S", "D", "T", "t", "X", "Z", "P", "I", "S|D", "x", "K", "W", "N", "n",
            "D|K", "D|W", "D|N", "S|K",
        ] {
            let p = PrevState::parse_text(s).unwrap();
            assert_eq!(p.to_text(), s);
            assert!(!p.is_unknown(), "{s}");
        }
        assert!(PrevState::parse_text("R+").unwrap().is_runnable());
        assert!(!PrevState::parse_text("S").unwrap().is_runnable());
        // Lowercase x is TASK_DEAD, never runnable (issue 13).
        let x = PrevState::parse_text("x").unwrap();
        assert!(x.is_dead() && !x.is_runnable());
        // Unknown letters are kept as unknown, never runnable.
        let q = PrevState::parse_text("Q").unwrap();
        assert!(q.is_unknown() && !q.is_runnable());
        assert_eq!(q.to_text(), "?");
        assert_eq!(PrevState::parse_text(""), None);
        assert_eq!(PrevState::parse_text("1"), None);
        assert_eq!(PrevState::parse_text("S||D"), None);
    }

    #[test]
    fn numeric_states_per_kernel_layout() {
        let legacy = |m| StateLayout::Legacy { marker: m };
        let t = |v, l| PrevState::from_raw(v, l).to_text();
        // 4.8 to 4.13 (the LISA trace): 4096 alone is a preemption.
        assert_eq!(t(4096, legacy(4096)), "R+");
        assert_eq!(t(0, legacy(4096)), "R");
        assert_eq!(t(1, legacy(4096)), "S");
        assert_eq!(t(2, legacy(4096)), "D");
        assert_eq!(t(64, legacy(4096)), "x");
        assert_eq!(t(130, legacy(4096)), "D|K");
        assert_eq!(t(1026, legacy(4096)), "D|N");
        assert_eq!(t(2048, legacy(4096)), "n");
        assert_eq!(t(16, legacy(4096)), "Z");
        assert_eq!(t(32, legacy(4096)), "X");
        // 4.2 to 4.7: 2048 is the marker; 3.9 to 4.1: 1024.
        assert_eq!(t(2048, legacy(2048)), "R+");
        assert_eq!(t(1024, legacy(1024)), "R+");
        assert_eq!(t(512, legacy(1024)), "P");
        // 4.14+: 0x100 is the marker, 0x40 P, 0x80 I, 0x10 X, 0x20 Z.
        assert_eq!(t(0x100, StateLayout::Report), "R+");
        assert_eq!(t(0x40, StateLayout::Report), "P");
        assert_eq!(t(0x80, StateLayout::Report), "I");
        assert_eq!(t(0x10, StateLayout::Report), "X");
        assert_eq!(t(0x20, StateLayout::Report), "Z");
        // Bits the layout does not define are unknown, not runnable.
        let u = PrevState::from_raw(0x400, StateLayout::Report);
        assert!(u.is_unknown() && !u.is_runnable());
        assert!(PrevState::from_raw(8192, legacy(4096)).is_unknown());
        assert!(PrevState::from_raw(64, legacy(4096)).is_dead());
    }

    #[test]
    fn numeric_states_through_a_print_fmt_flag_table() {
        let flags = [
            (1, "S"),
            (2, "D"),
            (4, "T"),
            (8, "t"),
            (16, "Z"),
            (32, "X"),
            (64, "x"),
            (128, "K"),
            (256, "W"),
            (512, "P"),
            (1024, "N"),
        ];
        let t = |v| PrevState::from_flags(v, &flags, 2048).to_text();
        assert_eq!(t(2048), "R+");
        assert_eq!(t(64), "x");
        assert_eq!(t(130), "D|K");
        assert_eq!(t(0), "R");
        assert!(PrevState::from_flags(4096, &flags, 2048).is_unknown());
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
