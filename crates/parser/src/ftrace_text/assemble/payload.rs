//! Interning a typed payload into [`EventData`]: strings, code locations
//! and CPU masks get the trace's ids; the scheduler's payloads also name
//! their tasks in the task table and note the prev_states to decode later.

use super::super::body::{Payload, SymText};
use super::Builder;
use schedscope_trace::{Cpu, CpuMask, EventData, MaskId, Sym, Tid, Ts};

impl Builder {
    /// Intern a payload; the scheduler's also update the task table.
    pub(super) fn payload(&mut self, p: Payload<'_>, ts: Ts, line: u64) -> EventData {
        let s = |b: &mut Builder, x: &str| b.trace.strings.intern(x);
        match p {
            Payload::Switch {
                prev_comm,
                prev_tid,
                prev_prio,
                prev_state,
                raw_state,
                next_comm,
                next_tid,
                next_prio,
            } => {
                if let Some(v) = raw_state {
                    // Decoded once the whole file has shown which layout it uses.
                    self.numeric_states.push((self.trace.events.len(), v));
                } else if prev_state.is_unknown() {
                    if self.unknown_states.0 == 0 {
                        self.unknown_states.1 = line;
                        self.unknown_states.2 = prev_state.to_text();
                    }
                    self.unknown_states.0 += 1;
                }
                self.tasks.printed_comm(Tid(prev_tid), prev_comm);
                self.tasks.printed_comm(Tid(next_tid), next_comm);
                EventData::Switch {
                    prev_tid: Tid(prev_tid),
                    prev_prio,
                    prev_state,
                    prev_comm: s(self, prev_comm),
                    next_tid: Tid(next_tid),
                    next_prio,
                    next_comm: s(self, next_comm),
                }
            }
            Payload::Wakeup {
                kind,
                comm,
                tid,
                prio,
                target_cpu,
            } => {
                self.tasks.printed_comm(Tid(tid), comm);
                EventData::Wakeup {
                    kind,
                    tid: Tid(tid),
                    comm: s(self, comm),
                    prio,
                    target_cpu: Cpu(target_cpu),
                }
            }
            Payload::Migrate {
                comm,
                tid,
                orig_cpu,
                dest_cpu,
            } => {
                self.tasks.printed_comm(Tid(tid), comm);
                EventData::Migrate {
                    tid: Tid(tid),
                    comm: s(self, comm),
                    orig_cpu: Cpu(orig_cpu),
                    dest_cpu: Cpu(dest_cpu),
                }
            }
            Payload::Fork {
                parent_comm,
                parent_tid,
                child_comm,
                child_tid,
            } => {
                self.tasks.printed_comm(Tid(parent_tid), parent_comm);
                self.tasks.fork_event(Tid(child_tid), child_comm, ts);
                EventData::Fork {
                    parent_tid: Tid(parent_tid),
                    child_tid: Tid(child_tid),
                    child_comm: s(self, child_comm),
                }
            }
            Payload::Exit { comm, tid } => {
                self.tasks.exit(Tid(tid), ts);
                EventData::Exit {
                    tid: Tid(tid),
                    comm: s(self, comm),
                }
            }
            Payload::Exec { filename, tid } => EventData::Exec {
                tid: Tid(tid),
                filename: s(self, filename),
            },
            other => self.cpu_payload(other, line),
        }
    }

    /// Intern a payload of the events that name no task (KVM, IPIs, csd,
    /// TLB flushes, idle, IRQs).
    #[inline(always)]
    fn cpu_payload(&mut self, p: Payload<'_>, line: u64) -> EventData {
        let s = |b: &mut Builder, x: &str| b.trace.strings.intern(x);
        match p {
            Payload::KvmExit {
                exit_reason,
                isa,
                vcpu_id,
                guest_rip,
            } => EventData::KvmExit {
                exit_reason,
                isa,
                vcpu_id,
                guest_rip,
            },
            Payload::KvmEntry { vcpu_id } => EventData::KvmEntry { vcpu_id },
            Payload::IpiSendCpu {
                cpu,
                callsite,
                callback,
            } => EventData::IpiSendCpu {
                cpu: Cpu(cpu),
                callsite: self.sym(callsite),
                callback: self.sym(callback),
            },
            Payload::IpiSendCpumask {
                mask,
                callsite,
                callback,
            } => {
                let mask = match mask {
                    Some(m) => m,
                    None => {
                        if self.mask_unprinted.0 == 0 {
                            self.mask_unprinted.1 = line;
                        }
                        self.mask_unprinted.0 += 1;
                        CpuMask::default()
                    }
                };
                EventData::IpiSendCpumask {
                    mask: self.mask(mask),
                    callsite: self.sym(callsite),
                    callback: self.sym(callback),
                }
            }
            Payload::IpiRaise { mask, reason } => EventData::IpiRaise {
                mask: self.mask(mask),
                reason: s(self, reason),
            },
            Payload::TlbFlush { reason, pages } => EventData::TlbFlush { reason, pages },
            Payload::CsdQueue {
                cpu,
                callsite,
                func,
                csd,
            } => EventData::CsdQueue {
                cpu: Cpu(cpu),
                callsite: self.sym(callsite),
                func: self.sym(func),
                csd,
            },
            Payload::CsdFunction { entry, func, csd } => {
                let func = self.sym(func);
                if entry {
                    EventData::CsdFunctionEntry { func, csd }
                } else {
                    EventData::CsdFunctionExit { func, csd }
                }
            }
            Payload::CpuIdle { state, cpu_id } => EventData::CpuIdle {
                state,
                cpu_id: Cpu(cpu_id),
            },
            Payload::Softirq { vec, phase } => EventData::Softirq { vec, phase },
            Payload::WakeIdleNoIpi { cpu } => EventData::WakeIdleNoIpi { cpu: Cpu(cpu) },
            Payload::IrqVector { vector, entry } => EventData::IrqVector { vector, entry },
            // The scheduler's payloads are `payload`'s own.
            Payload::Switch { .. }
            | Payload::Wakeup { .. }
            | Payload::Migrate { .. }
            | Payload::Fork { .. }
            | Payload::Exit { .. }
            | Payload::Exec { .. } => EventData::Other(None),
        }
    }

    /// A code location: a name interned, or an address.
    fn sym(&mut self, s: SymText<'_>) -> Sym {
        match s {
            SymText::Name(n) => Sym::from_name(self.trace.strings.intern(n)),
            SymText::Addr(a) => Sym::from_addr(a),
        }
    }

    /// The id of a CPU mask, stored once.
    fn mask(&mut self, m: CpuMask) -> MaskId {
        if let Some(&id) = self.masks.get(&m) {
            return id;
        }
        let id = MaskId(self.trace.cpumasks.len() as u32);
        self.trace.cpumasks.push(m.clone());
        self.masks.insert(m, id);
        id
    }
}
