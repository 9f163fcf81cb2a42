//! Hand-built traces for unit tests (shared with the latency tests).

use super::{StateInterval, ThreadState, Timeline};
use schedscope_trace::{
    Cpu, Event, EventData, PrevState, StackId, StrId, Tid, Trace, TraceFormat, Ts, WakeKind,
};

/// An interval from `ts` to `end` in `state`, with no CPU, waker or
/// preemption.
pub(crate) fn iv(ts: u64, end: Option<u64>, state: ThreadState) -> StateInterval {
    StateInterval {
        ts: Ts(ts),
        end: end.map(Ts),
        state,
        cpu: None,
        preempted: false,
        waker: None,
    }
}

/// A hand-built trace: events appended in time order.
pub(crate) struct T(pub(crate) Trace);

impl T {
    pub(crate) fn new() -> T {
        T(Trace::new("test", TraceFormat::FtraceText))
    }
    pub(crate) fn push(&mut self, ts: u64, cpu: u32, tid: i32, data: EventData) -> &mut T {
        let name = match data {
            EventData::Switch { .. } => "sched:sched_switch",
            EventData::Wakeup {
                kind: WakeKind::Waking,
                ..
            } => "sched:sched_waking",
            EventData::Wakeup {
                kind: WakeKind::Wakeup,
                ..
            } => "sched:sched_wakeup",
            EventData::Wakeup { .. } => "sched:sched_wakeup_new",
            EventData::Migrate { .. } => "sched:sched_migrate_task",
            EventData::Exit { .. } => "sched:sched_process_exit",
            EventData::StatRuntime { .. } => "sched:sched_stat_runtime",
            EventData::KvmEntry { .. } => "kvm:kvm_entry",
            _ => "other:other",
        };
        *self.0.events_by_name.entry(name.to_string()).or_insert(0) += 1;
        let name = self.0.intern_name(name);
        self.0.events.push(Event {
            ts: Ts(ts),
            cpu: Cpu(cpu),
            tid: Tid(tid),
            name,
            stack: StackId::NONE,
            data,
        });
        self
    }
    pub(crate) fn switch(
        &mut self,
        ts: u64,
        cpu: u32,
        prev: i32,
        state: &str,
        next: i32,
    ) -> &mut T {
        let prev_comm = self.0.strings.intern(&format!("t{prev}"));
        let next_comm = self.0.strings.intern(&format!("t{next}"));
        let prev_state = PrevState::parse_text(state).unwrap();
        self.push(
            ts,
            cpu,
            prev,
            EventData::Switch {
                prev_tid: Tid(prev),
                prev_prio: 120,
                prev_state,
                prev_comm,
                next_tid: Tid(next),
                next_prio: 120,
                next_comm,
            },
        )
    }
    pub(crate) fn wake(
        &mut self,
        ts: u64,
        cpu: u32,
        waker: i32,
        kind: WakeKind,
        tid: i32,
        target: u32,
    ) -> &mut T {
        self.push(
            ts,
            cpu,
            waker,
            EventData::Wakeup {
                kind,
                tid: Tid(tid),
                comm: StrId(0),
                prio: 120,
                target_cpu: Cpu(target),
            },
        )
    }
    pub(crate) fn migrate(&mut self, ts: u64, cpu: u32, tid: i32, from: u32, to: u32) -> &mut T {
        self.push(
            ts,
            cpu,
            0,
            EventData::Migrate {
                tid: Tid(tid),
                comm: StrId(0),
                orig_cpu: Cpu(from),
                dest_cpu: Cpu(to),
            },
        )
    }
    pub(crate) fn exit(&mut self, ts: u64, cpu: u32, tid: i32) -> &mut T {
        self.push(
            ts,
            cpu,
            tid,
            EventData::Exit {
                tid: Tid(tid),
                comm: StrId(0),
            },
        )
    }
    /// The timeline, checking that the census sized every vector.
    pub(crate) fn build(&mut self) -> Timeline {
        self.0.finish();
        let (tl, regrown) = Timeline::build_counting(&self.0, false);
        assert_eq!(regrown, 0, "census bound too small");
        tl
    }
}
