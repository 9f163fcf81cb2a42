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

/// Every reader of `$packed` (an `Intervals` or a `Runs`) against the
/// same read of the vector `$v` it was made from: length, copies in both
/// directions, first and last, each index (and past the end), pairs,
/// every range and its length, `partition_point` by start and by
/// `$ended(x, t)` at each time `t` of `$probes`, and the JSON.
macro_rules! assert_reads_as_vec {
    ($packed:expr, $v:expr, $probes:expr, $ended:expr) => {{
        let (p, v) = (&$packed, &$v);
        assert_eq!(p.len(), v.len());
        assert_eq!(p.is_empty(), v.is_empty());
        assert_eq!(&p.to_vec(), v);
        assert_eq!(
            p.iter().rev().collect::<Vec<_>>(),
            v.iter().rev().copied().collect::<Vec<_>>()
        );
        assert_eq!(p.first(), v.first().copied());
        assert_eq!(p.last(), v.last().copied());
        for i in 0..=v.len() + 1 {
            assert_eq!(p.get(i), v.get(i).copied());
        }
        let pairs: Vec<_> = v.windows(2).map(|w| (w[0], w[1])).collect();
        assert_eq!(p.pairs().collect::<Vec<_>>(), pairs);
        for a in 0..=v.len() {
            for b in a..=v.len() {
                assert_eq!(p.range(a..b).collect::<Vec<_>>(), v[a..b]);
                assert_eq!(p.range(a..b).len(), b - a);
            }
        }
        for t in $probes {
            assert_eq!(
                p.partition_point(|x| x.ts.0 <= t),
                v.partition_point(|x| x.ts.0 <= t)
            );
            assert_eq!(
                p.partition_point(|x| $ended(x, t)),
                v.partition_point(|x| $ended(x, t))
            );
        }
        assert_eq!(
            serde_json::to_string(p).unwrap(),
            serde_json::to_string(v).unwrap()
        );
    }};
}
pub(crate) use assert_reads_as_vec;

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
