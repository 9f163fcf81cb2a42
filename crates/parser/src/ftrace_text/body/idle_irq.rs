//! The idle analysis's events: cpu_idle, sched_wake_idle_without_ipi,
//! softirq_entry/exit/raise and the IRQ vectors' entry/exit.

use super::fields::{cpu_num, fields, num};
use super::Payload;

pub(super) fn cpu_idle(body: &str) -> Option<Payload<'_>> {
    let [s, c] = fields(body, ["state=", "cpu_id="])?;
    // `state` is printed as an unsigned long; PWR_EVENT_EXIT is (u32)-1.
    let state: u64 = num(s)?;
    Some(Payload::CpuIdle {
        state: state as u32,
        cpu_id: cpu_num(c)?,
    })
}

pub(super) fn wake_idle(body: &str) -> Option<Payload<'_>> {
    let [cpu] = fields(body, ["cpu="])?;
    Some(Payload::WakeIdleNoIpi { cpu: cpu_num(cpu)? })
}

pub(super) fn irq_vector(entry: bool, body: &str) -> Option<Payload<'_>> {
    let [v] = fields(body, ["vector="])?;
    Some(Payload::IrqVector {
        vector: num(v)?,
        entry,
    })
}

pub(super) fn softirq(phase: u8, body: &str) -> Option<Payload<'_>> {
    let [v] = fields(body, ["vec="])?;
    Some(Payload::Softirq {
        vec: num(v)?,
        phase,
    })
}
