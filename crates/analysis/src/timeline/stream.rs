//! [`Timeline::build`]'s two passes, fed from two streams of the trace's
//! events instead of one event vector (docs/design.md, "The streaming
//! pass"): [`TimelineCensus`] is pass 1, [`TimelineStream`] pass 2. The
//! timeline is the one [`Timeline::build`] makes of the loaded trace,
//! field for field, while the events are never held: pass 2 keeps a ring
//! of the last [`STAT_LOOKAHEAD`] events, the look-ahead of a repair.
//!
//! Also here: [`Seen`], what pass 2 learns besides the states for the
//! analyses that read the timeline and would otherwise walk the events
//! again (the vCPU threads, the events around each loss record).

use super::repair::STAT_LOOKAHEAD;
use super::*;
use std::collections::BTreeMap;

/// Pass 1 of a streamed [`Timeline`] build: push every event of the
/// trace, in the loaded trace's order, then hand it to
/// [`TimelineStream::new`] with the trace the stream returned.
pub struct TimelineCensus {
    census: Census,
    stat: Option<schedscope_trace::NameId>,
}

impl TimelineCensus {
    /// Start pass 1; `meta` is the trace as known before its events (its
    /// event names: a stream's `start`).
    pub fn new(meta: &Trace) -> TimelineCensus {
        TimelineCensus {
            census: Census::new(0),
            stat: stat_runtime_id(meta),
        }
    }

    /// The next event.
    #[inline]
    pub fn push(&mut self, ev: &Event) {
        self.census.push(ev, self.stat);
    }
}

/// Pass 2 of a streamed [`Timeline`] build: push the same events again,
/// then [`TimelineStream::finish`]. `trace` is the whole trace without
/// its events, as pass 1's stream returned it (metadata, tasks, loss
/// records: what [`Timeline::build`] reads besides the events).
pub struct TimelineStream<'t> {
    trace: &'t Trace,
    b: Builder,
    comms: Vec<StrId>,
    /// The events not yet stepped, from `head` on (and some stepped ones
    /// before it, dropped in bulk).
    ring: Vec<Event>,
    head: usize,
}

impl<'t> TimelineStream<'t> {
    /// Start pass 2 from pass 1's `census`.
    pub fn new(trace: &'t Trace, census: TimelineCensus) -> TimelineStream<'t> {
        let mut census = census.census;
        // (pass 1 started before the CPU count was final; the whole build
        // sizes its CPUs from the final one)
        let n = census.cpu_bound.len().max(trace.nr_cpus as usize);
        census.cpu_bound.resize(n, 0);
        census.cpu_next.resize(n, None);
        let (b, comms) = Builder::start(trace, census, false);
        TimelineStream {
            trace,
            b,
            comms,
            ring: Vec::with_capacity(2 * STAT_LOOKAHEAD),
            head: 0,
        }
    }

    /// The next events, in time order (the loaded trace's order).
    pub fn push(&mut self, events: &[Event]) {
        for chunk in events.chunks(STAT_LOOKAHEAD) {
            self.ring.extend_from_slice(chunk);
            // Step every event that has its look-ahead.
            while self.ring.len() - self.head >= STAT_LOOKAHEAD {
                self.b.step(self.trace, &self.ring[self.head..]);
                self.head += 1;
            }
            if self.head >= STAT_LOOKAHEAD {
                self.ring.drain(..self.head);
                self.head = 0;
            }
        }
    }

    /// Step the events left and hand over the timeline.
    pub fn finish(mut self) -> Timeline {
        for k in self.head..self.ring.len() {
            self.b.step(self.trace, &self.ring[k..]);
        }
        self.b.finish(self.trace, &self.comms).0
    }
}

/// The events around one loss record on its CPU (see
/// [`Timeline::mark_spans`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MarkSpan {
    /// The CPU's last event strictly before the record.
    pub before: Option<Ts>,
    /// Its first event at or after it.
    pub after: Option<Ts>,
}

/// What pass 2 learns besides the states, for the analyses that read the
/// timeline: the vCPU threads (in kvm_exit / kvm_entry, with their vCPU
/// id) and, per loss record, its CPU's nearest events ([`MarkSpan`]).
pub(super) struct Seen {
    vcpus: FxMap<Tid, Option<u32>>,
    last_vcpu: Option<Tid>,
    /// Per CPU, its loss records as (time, index in the trace's list),
    /// time-sorted, and how many of them an event has reached.
    pending: Vec<(Vec<(u64, usize)>, usize)>,
    /// Per CPU, its last event's time.
    last: Vec<Option<Ts>>,
    spans: Vec<MarkSpan>,
}

use schedscope_trace::hash::FxMap;

impl Seen {
    pub(super) fn new(marks: &[schedscope_trace::LossMark]) -> Seen {
        let mut pending: Vec<(Vec<(u64, usize)>, usize)> = Vec::new();
        for (i, m) in marks.iter().enumerate() {
            let c = m.cpu as usize;
            if c >= pending.len() {
                pending.resize(c + 1, (Vec::new(), 0));
            }
            pending[c].0.push((m.ts, i));
        }
        for (p, _) in &mut pending {
            p.sort_by_key(|&(ts, _)| ts);
        }
        Seen {
            vcpus: FxMap::default(),
            last_vcpu: None,
            last: vec![None; pending.len()],
            pending,
            spans: vec![MarkSpan::default(); marks.len()],
        }
    }

    #[inline(always)]
    pub(super) fn push(&mut self, ev: &Event) {
        if let EventData::KvmExit { vcpu_id, .. } | EventData::KvmEntry { vcpu_id } = ev.data {
            self.vcpu(ev.tid, vcpu_id);
        }
        if !self.pending.is_empty() {
            self.near_marks(ev);
        }
    }

    /// A kvm_exit / kvm_entry in the context of `tid` (the vCPU id when
    /// the event has one).
    #[cold]
    fn vcpu(&mut self, tid: Tid, id: Option<u32>) {
        if tid.is_idle() || (self.last_vcpu == Some(tid) && id.is_none()) {
            return;
        }
        self.last_vcpu = Some(tid);
        let slot = self.vcpus.entry(tid).or_insert(None);
        if slot.is_none() {
            *slot = id;
        }
    }

    fn near_marks(&mut self, ev: &Event) {
        let c = ev.cpu.0 as usize;
        let Some((marks, next)) = self.pending.get_mut(c) else {
            return;
        };
        while let Some(&(_, i)) = marks.get(*next).filter(|&&(ts, _)| ts <= ev.ts.0) {
            self.spans[i] = MarkSpan {
                before: self.last[c],
                after: Some(ev.ts),
            };
            *next += 1;
        }
        self.last[c] = Some(ev.ts);
    }

    /// The vCPU threads and the loss records' spans.
    pub(super) fn finish(mut self) -> (BTreeMap<Tid, Option<u32>>, Vec<MarkSpan>) {
        for (c, (marks, next)) in self.pending.iter().enumerate() {
            for &(_, i) in &marks[*next..] {
                self.spans[i] = MarkSpan {
                    before: self.last[c],
                    after: None,
                };
            }
        }
        (self.vcpus.into_iter().collect(), self.spans)
    }
}
