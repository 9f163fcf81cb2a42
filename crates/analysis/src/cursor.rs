//! The timeline's replay cursor (docs/design.md, "One tracker").
//!
//! A consumer that needs "who is current on each CPU at this event" reads
//! the trace through a [`Cursor`] ([`Timeline::cursor`]) instead of keeping
//! its own state machine. The cursor merges, in time order, the trace's
//! events and the switch-ins the timeline repaired ([`Timeline::inferred`],
//! which the trace lacks), and keeps per CPU the current task and since
//! when ([`CpuState`]) and per thread the CPU it runs on
//! ([`Cursor::running_on`]). It yields [`Step`]s, each already applied to
//! that state; a [`Switch`] carries the CPU's state before it, so that the
//! consumer can account for the run it closes.
//!
//! The consumer names the event kinds it reads (`reads`); the cursor skips
//! the others and trusts the common_pid of the ones it yields as the task
//! current on the event's CPU (so a kind that fires inside a context
//! switch, where common_pid is the previous task, must not be read).
//!
//! What the cursor applies, in order, for each event it reads:
//! 1. the repaired switch-ins placed strictly before the event, each a
//!    [`Switch`] of whoever is current to the repaired task
//!    ([`Cause::Repaired`]);
//! 2. on a CPU not seen yet, [`Step::Learn`]: the event's common_pid is
//!    current there, and was since the trace start;
//! 3. on a CPU the cursor holds idle, an event in the context of a task
//!    that the timeline's repair switched in at this very event (its
//!    evidence kinds, `names_current`): that switch-in
//!    ([`Cause::RepairedAtEvent`]);
//! 4. the event: a sched_switch as a [`Switch`] ([`Cause::Recorded`]; on a
//!    lossy CPU a recorded switch to idle at the instant the repair ran a
//!    task from becomes a switch to that task: the CPU never idled then),
//!    any other kind as [`Step::Event`].
//!
//! Repaired switch-ins left after the last event follow it. The repair is
//! the timeline's, consumed as placed: the cursor re-derives none of it,
//! except before a CPU's first recorded switch, where the timeline has no
//! run (it starts a CPU's runs there) but the cursor knows the CPU idle
//! from its first event: when that first switch switches out a task that
//! the timeline shows Runnable until then on a lossy CPU, the task's
//! switch-in was not traced and the cursor places it by the timeline's
//! rule (the later of the CPU's first event and the task runnable since).
//!
//! Contradictions (a switch-out of a task the cursor did not hold current,
//! a switch-in of a task running elsewhere, each repaired switch-in) are
//! counted in [`Cursor::anomalies`] and resolved in favour of the newer
//! event.

use crate::timeline::{LossEvidence, Timeline, NAMES_CURRENT};
use crate::ThreadState;
use schedscope_trace::hash::FxMap;
use schedscope_trace::{Event, EventData, KindSet, StrId, Tid, Trace, Ts};

/// One CPU's state as the cursor holds it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuState {
    /// Whether the cursor knows who is current (from the CPU's first read
    /// event on, or from a switch to idle).
    pub known: bool,
    /// The current task (tid 0 = idle).
    pub cur: Tid,
    /// Start of its current run (trace clock, ns).
    pub since: u64,
}

impl CpuState {
    /// Known and idle.
    pub fn is_idle(&self) -> bool {
        self.known && self.cur.is_idle()
    }
}

/// Where a [`Switch`] comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// A recorded sched_switch.
    Recorded,
    /// A switch-in the timeline's repair placed before the current event
    /// (or after the last one).
    Repaired,
    /// A switch-in the timeline's repair placed at the current event, which
    /// is the first the trace shows of the task on that CPU.
    RepairedAtEvent,
}

/// A change of the task current on a CPU (already applied to the cursor).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Switch {
    /// When.
    pub ts: u64,
    /// Where.
    pub cpu: u32,
    /// The task switched out: the recorded prev_pid, or, for a repaired
    /// switch-in, whoever the cursor held current.
    pub prev: Tid,
    /// Whether `prev` left runnable (recorded prev_state R; never for a
    /// repaired switch-in).
    pub prev_runnable: bool,
    /// The recorded prev_comm (`StrId(0)` for a repaired switch-in).
    pub prev_comm: StrId,
    /// The task switched in (tid 0 = idle).
    pub next: Tid,
    /// The CPU's state before the switch: `before.cur` ran from
    /// `before.since` to `ts` (when `before.known`).
    pub before: CpuState,
    /// Where it comes from.
    pub cause: Cause,
}

/// What the cursor yields, in time order.
#[derive(Clone, Copy, Debug)]
pub enum Step {
    /// The first read event of a CPU not seen yet: `tid`, its common_pid,
    /// is current there since the trace start.
    Learn {
        /// The event's time.
        ts: u64,
        /// The CPU.
        cpu: u32,
        /// The task current there.
        tid: Tid,
    },
    /// A switch, recorded or repaired.
    Switch(Switch),
    /// A read event other than sched_switch.
    Event(Event),
}

/// A repaired switch-in not yet yielded: (time, CPU, tid, yielded).
type Pending = (u64, u32, Tid, bool);

/// What the cursor has left to yield for the current event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Everything: the repaired switch-ins before it, the CPU-learning or
    /// repaired-at-event step, the event.
    Before,
    /// The event itself (the step before it was yielded).
    Event,
}

/// The replay cursor over a trace and its timeline (module docs).
#[derive(Debug)]
pub struct Cursor<'t> {
    events: Events<'t>,
    reads: KindSet,
    start: u64,
    loss: &'t LossEvidence,
    cpus: Vec<CpuState>,
    running: Running,
    /// Repaired switch-ins, sorted by time then CPU.
    pending: Vec<Pending>,
    /// The first of `pending` not yet yielded (all before it are).
    next_pending: usize,
    /// Index of the event being read (`events.len()` when done).
    idx: usize,
    phase: Phase,
    /// The events from here on are not read yet ([`Cursor::rest`]).
    rest_from: usize,
    anomalies: u64,
}

/// Where a [`Cursor`] reads its events from.
#[derive(Debug)]
enum Events<'t> {
    /// The trace's event vector.
    Slice(&'t [Event]),
    /// A stream's events, pushed by [`Cursor::feed`]: the window not read
    /// yet (and a few read ones), whether the stream ended, and how many
    /// events past the current one must be there before it is read (the
    /// consumer's look-ahead, [`Cursor::rest`]).
    Fed {
        buf: Vec<Event>,
        ended: bool,
        hold: usize,
    },
}

impl Timeline {
    /// A replay cursor over `trace` (the trace this timeline was built
    /// from), yielding the event kinds in `reads` (see [`crate::cursor`]).
    pub fn cursor<'t>(&'t self, trace: &'t Trace, reads: KindSet) -> Cursor<'t> {
        // (the census counted every event's CPU; a timeline not built did not)
        let seen = if self.is_built() {
            self.cpus_seen()
        } else {
            trace.events.iter().map(|e| e.cpu.0 + 1).max().unwrap_or(0)
        };
        let n = seen.max(trace.nr_cpus) as usize;
        let mut lead = LeadIn::new(reads);
        // (only the events up to every CPU's first switch matter)
        for part in trace.events.chunks(1 << 12) {
            lead.push(part);
            if lead.switched(n) {
                break;
            }
        }
        Cursor::new(trace, self, lead, n, Events::Slice(&trace.events))
    }

    /// A replay cursor over a stream of `trace`'s events (the trace without
    /// them, as the stream returned it; this timeline was built from
    /// them), fed by [`Cursor::feed`]: what [`Timeline::cursor`] yields,
    /// step for step. `lead` saw the events before (an earlier pass);
    /// `hold`: the look-ahead the consumer reads through
    /// [`Cursor::rest`] (the cursor waits until that many events follow
    /// the current one, or the stream ended).
    pub fn cursor_fed<'t>(&'t self, trace: &'t Trace, lead: LeadIn, hold: usize) -> Cursor<'t> {
        assert!(self.is_built(), "a fed cursor needs the built timeline");
        let n = self.cpus_seen().max(trace.nr_cpus) as usize;
        Cursor::new(
            trace,
            self,
            lead,
            n,
            Events::Fed {
                buf: Vec::new(),
                ended: false,
                hold,
            },
        )
    }
}

impl<'t> Cursor<'t> {
    /// On `n` CPUs.
    fn new(
        trace: &'t Trace,
        tl: &'t Timeline,
        lead: LeadIn,
        n: usize,
        events: Events<'t>,
    ) -> Cursor<'t> {
        let mut pending: Vec<Pending> = tl
            .inferred
            .iter()
            .map(|i| (i.ts.0, i.cpu.0, i.tid, false))
            .collect();
        let reads = lead.reads;
        pending.extend(lead.switch_ins(tl, n));
        pending.sort_by_key(|&(ts, cpu, _, _)| (ts, cpu));
        Cursor {
            events,
            reads,
            start: trace.start().0,
            loss: &tl.loss,
            cpus: vec![CpuState::default(); n],
            running: Running::default(),
            pending,
            next_pending: 0,
            idx: 0,
            phase: Phase::Before,
            rest_from: 0,
            anomalies: 0,
        }
    }

    /// Number of CPUs (one more than the highest CPU an event names, at
    /// least the trace's CPU count).
    pub fn n_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// CPU `cpu`'s state (unknown for a CPU out of range).
    pub fn cpu(&self, cpu: u32) -> CpuState {
        self.cpus.get(cpu as usize).copied().unwrap_or_default()
    }

    /// Whether CPU `cpu` is known and idle.
    pub fn is_idle(&self, cpu: u32) -> bool {
        self.cpus.get(cpu as usize).is_some_and(CpuState::is_idle)
    }

    /// The CPU `tid` runs on, if the cursor holds it current somewhere.
    pub fn running_on(&self, tid: Tid) -> Option<u32> {
        self.running.get(tid)
    }

    /// Contradictions met so far (module docs), repaired switch-ins
    /// included.
    pub fn anomalies(&self) -> u64 {
        self.anomalies
    }

    /// The events not read yet: after the current one (for a repaired
    /// switch-in, from the event it precedes). For look-aheads (of a fed
    /// cursor: at least its `hold` events, or all the stream had left).
    pub fn rest(&self) -> &[Event] {
        let events = self.events();
        &events[self.rest_from.min(events.len())..]
    }

    /// The events read from (the window of a fed cursor).
    #[inline(always)]
    fn events(&self) -> &[Event] {
        match &self.events {
            Events::Slice(s) => s,
            Events::Fed { buf, .. } => buf,
        }
    }

    /// Give a cursor from [`Timeline::cursor_fed`] the stream's next
    /// `events` (in the trace's order), or tell it the stream ended
    /// (`ended`, with the last events or none). Then read its steps with
    /// [`Cursor::next`] until it returns `None`: it waits for more
    /// events, or (after the end) is done.
    pub fn feed(&mut self, events: &[Event], ended: bool) {
        // (what the cursor has read, and its look-ahead no longer needs)
        let done = self.idx.min(self.rest_from);
        let Events::Fed { buf, ended: e, .. } = &mut self.events else {
            panic!("Cursor::feed on a cursor over the trace's events");
        };
        if done > 0 && done >= buf.len() / 2 {
            buf.drain(..done);
            self.idx -= done;
            self.rest_from -= done;
        }
        buf.extend_from_slice(events);
        *e = ended;
    }

    /// The next step, applied, or `None` at the end (of a fed cursor: or
    /// until it is fed more, [`Cursor::feed`]).
    #[allow(clippy::should_implement_trait)]
    #[inline]
    pub fn next(&mut self) -> Option<Step> {
        loop {
            if let Events::Fed {
                buf,
                ended: false,
                hold,
            } = &self.events
            {
                // (wait until the look-ahead past this event is there)
                if self.idx + hold >= buf.len() {
                    return None;
                }
            }
            let Some(&ev) = self.events().get(self.idx) else {
                self.rest_from = self.events().len();
                return self.replay_before(u64::MAX).map(Step::Switch);
            };
            let c = ev.cpu.0 as usize;
            if self.phase == Phase::Event {
                self.phase = Phase::Before;
                return Some(self.take_event(ev, c));
            }
            if c >= self.cpus.len() {
                self.anomalies += 1;
                self.idx += 1;
                continue;
            }
            if !self.reads.contains(&ev.data) {
                self.idx += 1;
                continue;
            }
            self.rest_from = self.idx;
            if let Some(s) = self.replay_before(ev.ts.0) {
                return Some(Step::Switch(s));
            }
            self.rest_from = self.idx + 1;
            if let Some(step) = self.learn(&ev, c) {
                self.phase = Phase::Event;
                return Some(step);
            }
            return Some(self.take_event(ev, c));
        }
    }

    /// The step before event `ev` on CPU `c`, if any: on a CPU not seen
    /// yet, [`Step::Learn`]; on an idle CPU, the switch-in the repair
    /// placed at this event.
    #[inline]
    fn learn(&mut self, ev: &Event, c: usize) -> Option<Step> {
        let ts = ev.ts.0;
        let st = self.cpus[c];
        if !st.known {
            self.cpus[c] = CpuState {
                known: true,
                cur: ev.tid,
                since: self.start,
            };
            if !ev.tid.is_idle() {
                self.running.set(ev.tid, Some(c as u32));
            }
            return Some(Step::Learn {
                ts,
                cpu: c as u32,
                tid: ev.tid,
            });
        }
        if st.cur.is_idle() && !ev.tid.is_idle() && NAMES_CURRENT.contains(&ev.data) {
            if let Some(tid) = self.take_pending(c, ts, Some(ev.tid)) {
                self.anomalies += 1;
                let s = self.switch(c, ts, Tid::IDLE, false, StrId(0), tid);
                return Some(Step::Switch(Switch {
                    cause: Cause::RepairedAtEvent,
                    ..s
                }));
            }
        }
        None
    }

    /// Event `ev` on CPU `c` as a step (applied), moving on to the next.
    #[inline]
    fn take_event(&mut self, ev: Event, c: usize) -> Step {
        self.idx += 1;
        match ev.data {
            EventData::Switch {
                prev_tid,
                prev_state,
                prev_comm,
                next_tid,
                ..
            } => Step::Switch(self.switch(
                c,
                ev.ts.0,
                prev_tid,
                prev_state.is_runnable(),
                prev_comm,
                next_tid,
            )),
            _ => Step::Event(ev),
        }
    }

    /// The next repaired switch-in placed before `ts` and not yielded yet,
    /// applied.
    fn replay_before(&mut self, ts: u64) -> Option<Switch> {
        while let Some(&(t_in, cpu, tid, done)) = self.pending.get(self.next_pending) {
            if t_in >= ts {
                return None;
            }
            self.next_pending += 1;
            let c = cpu as usize;
            if done || c >= self.cpus.len() {
                continue;
            }
            // Also in the timeline's anomalies: a switch the trace lacks.
            self.anomalies += 1;
            let cur = self.cpus[c].cur;
            let s = self.switch(c, t_in, cur, false, StrId(0), tid);
            return Some(Switch {
                cause: Cause::Repaired,
                ..s
            });
        }
        None
    }

    /// A repaired switch-in on CPU `c` at `ts` (of the current event; of
    /// `tid` when given), not yielded yet: marked yielded and returned.
    fn take_pending(&mut self, c: usize, ts: u64, tid: Option<Tid>) -> Option<Tid> {
        let from = self.next_pending;
        let k = self.pending[from..]
            .iter()
            .take_while(|e| e.0 <= ts)
            .position(|e| e.0 == ts && e.1 as usize == c && !e.3 && tid.is_none_or(|t| t == e.2))?;
        let e = &mut self.pending[from + k];
        e.3 = true;
        Some(e.2)
    }

    /// Apply a switch on CPU `c` at `ts` (a recorded one unless told).
    fn switch(
        &mut self,
        c: usize,
        ts: u64,
        prev: Tid,
        prev_runnable: bool,
        prev_comm: StrId,
        next: Tid,
    ) -> Switch {
        let next = if next.is_idle() && self.loss.lossy(c as u32) {
            // A recorded switch to idle at the time the repair ran a task
            // from: the CPU never idled then.
            match self.take_pending(c, ts, None) {
                Some(t) => {
                    self.anomalies += 1;
                    t
                }
                None => next,
            }
        } else {
            next
        };
        let before = self.cpus[c];
        if before.cur != prev {
            // Lost events: whoever was current here left at an unknown time.
            self.anomalies += 1;
            if !before.cur.is_idle() && self.running.get(before.cur) == Some(c as u32) {
                self.running.set(before.cur, None);
            }
        }
        if !prev.is_idle() {
            self.running.set(prev, None);
        }
        if !next.is_idle() {
            if let Some(r) = self.running.set(next, Some(c as u32)) {
                if r != c as u32 {
                    self.anomalies += 1;
                }
            }
        }
        self.cpus[c] = CpuState {
            known: before.known || next.is_idle(),
            cur: next,
            since: ts,
        };
        Switch {
            ts,
            cpu: c as u32,
            prev,
            prev_runnable,
            prev_comm,
            next,
            before,
            cause: Cause::Recorded,
        }
    }
}

/// Per thread, the CPU it runs on: a table indexed by tid for kernel tids
/// (below Linux's PID_MAX_LIMIT, 2^22; grown on demand), a map for others
/// (negative tids from damaged input). One load per look-up, where a hash
/// map made the cursor's per-switch updates cost as much as idle's own.
#[derive(Debug, Default)]
struct Running {
    dense: Vec<u32>,
    other: FxMap<Tid, u32>,
}

/// [`Running::dense`]'s "runs nowhere".
const NOWHERE: u32 = u32::MAX;

/// Tids below this go to [`Running::dense`].
const DENSE_TIDS: usize = 1 << 22;

impl Running {
    fn get(&self, tid: Tid) -> Option<u32> {
        match usize::try_from(tid.0) {
            Ok(i) if i < DENSE_TIDS => self.dense.get(i).copied().filter(|&c| c != NOWHERE),
            _ => self.other.get(&tid).copied(),
        }
    }

    /// Set where `tid` runs; returns where it ran.
    fn set(&mut self, tid: Tid, cpu: Option<u32>) -> Option<u32> {
        match usize::try_from(tid.0) {
            Ok(i) if i < DENSE_TIDS => {
                if i >= self.dense.len() {
                    // (nothing to clear beyond the table)
                    cpu?;
                    self.dense.resize((i + 1).next_power_of_two(), NOWHERE);
                }
                let old = std::mem::replace(&mut self.dense[i], cpu.unwrap_or(NOWHERE));
                (old != NOWHERE).then_some(old)
            }
            _ => match cpu {
                Some(c) => self.other.insert(tid, c),
                None => self.other.remove(&tid),
            },
        }
    }
}

/// What the cursor's lead-in repair (module docs: before each CPU's first
/// recorded switch) needs from the start of the events: per CPU, its first
/// read event (time, current task) and its first sched_switch (time,
/// prev_pid). [`Timeline::cursor`] finds them in the trace's events; a
/// stream's consumer pushes the events to it in an earlier pass and hands
/// it to [`Timeline::cursor_fed`].
#[derive(Clone, Debug)]
pub struct LeadIn {
    reads: KindSet,
    first: Vec<Option<(u64, Tid)>>,
    switch: Vec<Option<(Ts, Tid)>>,
}

impl LeadIn {
    /// For a cursor reading the kinds `reads`.
    pub fn new(reads: KindSet) -> LeadIn {
        LeadIn {
            reads,
            first: Vec::new(),
            switch: Vec::new(),
        }
    }

    /// Whether each of the first `n` CPUs had its first switch: later
    /// events change nothing.
    fn switched(&self, n: usize) -> bool {
        self.switch.len() >= n && self.switch[..n].iter().all(Option::is_some)
    }

    /// The next events, in the trace's order.
    pub fn push(&mut self, events: &[Event]) {
        for e in events {
            let c = e.cpu.0 as usize;
            if c >= self.first.len() {
                self.first.resize(c + 1, None);
                self.switch.resize(c + 1, None);
            }
            if self.switch[c].is_some() || !self.reads.contains(&e.data) {
                continue;
            }
            self.first[c].get_or_insert((e.ts.0, e.tid));
            if let EventData::Switch { prev_tid, .. } = e.data {
                self.switch[c] = Some((e.ts, prev_tid));
            }
        }
    }

    /// The repaired switch-ins before each CPU's first recorded switch, on
    /// `n` CPUs: entries as in [`Cursor::pending`]. On a lossy CPU whose
    /// first read event found it idle, a first switch out of a task that
    /// the timeline shows Runnable until then: its switch-in was not
    /// traced, placed by the timeline's rule (the later of the CPU's first
    /// event and the task runnable since).
    fn switch_ins(&self, tl: &Timeline, n: usize) -> Vec<Pending> {
        let mut out = Vec::new();
        for c in 0..n.min(self.first.len()) {
            let (Some(f), Some((ts, prev_tid))) = (self.first[c], self.switch[c]) else {
                continue;
            };
            if !f.1.is_idle() || prev_tid.is_idle() || !tl.loss.lossy(c as u32) {
                continue;
            }
            let Some(t) = tl.thread(prev_tid) else {
                continue;
            };
            let k = t.intervals.partition_point(|iv| iv.ts < ts);
            let Some(iv) = k.checked_sub(1).and_then(|k| t.intervals.get(k)) else {
                continue;
            };
            if iv.state == ThreadState::Runnable && iv.end == Some(ts) {
                out.push((iv.ts.0.max(f.0), c as u32, prev_tid, false));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::test_trace::T;
    use schedscope_trace::WakeKind;

    /// Everything but balancing proxies (those of idle's kinds a test may
    /// leave out).
    const SCHED: KindSet = NAMES_CURRENT.union(KindSet::of(&[schedscope_trace::EventKind::Switch]));

    /// Every switch, and per CPU the runs of positive length the cursor's
    /// switches closed plus the run open at the end: (start, end, tid).
    #[allow(clippy::type_complexity)]
    fn replay(
        trace: &Trace,
        tl: &Timeline,
    ) -> (Vec<Switch>, Vec<Vec<(u64, Option<u64>, i32)>>, u64) {
        let mut cur = tl.cursor(trace, SCHED);
        let mut switches = Vec::new();
        let mut runs = vec![Vec::new(); cur.n_cpus()];
        while let Some(step) = cur.next() {
            if let Step::Switch(s) = step {
                if s.before.known && s.ts > s.before.since {
                    runs[s.cpu as usize].push((s.before.since, Some(s.ts), s.before.cur.0));
                }
                switches.push(s);
            }
        }
        for (c, r) in runs.iter_mut().enumerate() {
            let st = cur.cpu(c as u32);
            if st.known {
                r.push((st.since, None, st.cur.0));
            }
        }
        (switches, runs, cur.anomalies())
    }

    /// The timeline's runs of CPU `c`, as [`replay`] gives them.
    fn timeline_runs(tl: &Timeline, c: usize) -> Vec<(u64, Option<u64>, i32)> {
        tl.cpus[c]
            .iter()
            .map(|r| (r.ts.0, r.end.map(|e| e.0), r.tid.0))
            .collect()
    }

    /// The cursor's runs of CPU `c` from the timeline's first run on (the
    /// timeline starts a CPU's runs at its first recorded switch).
    fn cursor_runs(
        runs: &[Vec<(u64, Option<u64>, i32)>],
        tl: &Timeline,
        c: usize,
    ) -> Vec<(u64, Option<u64>, i32)> {
        let from = tl.cpus[c].first().map_or(u64::MAX, |r| r.ts.0);
        runs[c].iter().copied().filter(|r| r.0 >= from).collect()
    }

    #[test]
    fn a_fully_traced_trace_replays_as_recorded_with_the_timelines_runs() {
        let mut t = T::new();
        t.switch(100, 0, 0, "R", 5)
            .wake(150, 0, 5, WakeKind::Wakeup, 6, 1)
            .switch(160, 1, 0, "R", 6)
            .switch(200, 0, 5, "S", 0)
            .switch(300, 1, 6, "R", 7)
            .switch(400, 1, 7, "S", 6);
        let tl = t.build();
        let trace = &t.0;
        let mut cur = tl.cursor(trace, SCHED);
        let mut seen = Vec::new();
        while let Some(step) = cur.next() {
            match step {
                Step::Learn { ts, cpu, tid } => seen.push(("learn", ts, cpu, tid.0)),
                Step::Switch(s) => {
                    assert_eq!(s.cause, Cause::Recorded);
                    seen.push(("switch", s.ts, s.cpu, s.next.0));
                    if s.ts == 300 {
                        assert_eq!(
                            s.before,
                            CpuState {
                                known: true,
                                cur: Tid(6),
                                since: 160
                            }
                        );
                        assert_eq!(cur.running_on(Tid(7)), Some(1));
                        assert_eq!(cur.running_on(Tid(6)), None);
                        assert!(s.prev_runnable);
                    }
                }
                Step::Event(e) => seen.push(("event", e.ts.0, e.cpu.0, e.tid.0)),
            }
        }
        assert_eq!(
            seen,
            vec![
                ("learn", 100, 0, 0),
                ("switch", 100, 0, 5),
                ("event", 150, 0, 5),
                ("learn", 160, 1, 0),
                ("switch", 160, 1, 6),
                ("switch", 200, 0, 0),
                ("switch", 300, 1, 7),
                ("switch", 400, 1, 6),
            ]
        );
        assert_eq!(cur.anomalies(), 0);
        assert!(cur.is_idle(0) && !cur.is_idle(1));
        assert!(cur.rest().is_empty());
        let (_, runs, _) = replay(trace, &tl);
        for c in 0..2 {
            assert_eq!(cursor_runs(&runs, &tl, c), timeline_runs(&tl, c), "CPU {c}");
        }
    }

    #[test]
    fn a_lost_switch_in_is_replayed_where_the_timeline_placed_it() {
        // CPU 1 goes idle at 200; 5 is woken onto it at 300; the switch
        // idle -> 5 is not in the trace; at 500 CPU 1 switches 5 out.
        let mut t = T::new();
        t.switch(100, 1, 0, "R", 5)
            .switch(200, 1, 5, "S", 0)
            .wake(300, 0, 7, WakeKind::Wakeup, 5, 1)
            .switch(500, 1, 5, "S", 0);
        let tl = t.build();
        assert_eq!(tl.inferred.len(), 1);
        let (switches, runs, anomalies) = replay(&t.0, &tl);
        let repaired: Vec<&Switch> = switches
            .iter()
            .filter(|s| s.cause != Cause::Recorded)
            .collect();
        let i = tl.inferred[0];
        assert_eq!(repaired.len(), 1);
        assert_eq!(
            (repaired[0].ts, repaired[0].cpu, repaired[0].next),
            (i.ts.0, i.cpu.0, i.tid)
        );
        // The recorded switch-out of 5 then finds it current: no second
        // contradiction beyond the repair itself, as in the timeline.
        assert_eq!(anomalies, tl.anomalies);
        assert_eq!(cursor_runs(&runs, &tl, 1), timeline_runs(&tl, 1));
    }

    #[test]
    fn events_not_read_are_skipped_and_teach_nothing() {
        // A softirq in task 9's context on CPU 2 before its first switch:
        // with a `reads` that leaves softirqs out, the CPU is learnt from
        // the switch (prev 4), not from the softirq.
        let mut t = T::new();
        t.push(50, 2, 9, EventData::Softirq { vec: 7, phase: 0 })
            .switch(100, 2, 4, "S", 0);
        let tl = t.build();
        let mut cur = tl.cursor(&t.0, SCHED);
        match cur.next() {
            Some(Step::Learn { ts, cpu, tid }) => assert_eq!((ts, cpu, tid), (100, 2, Tid(4))),
            other => panic!("expected a Learn step, got {other:?}"),
        }
        assert_eq!(cur.cpu(2).since, 50, "current since the trace start");
        assert!(matches!(cur.next(), Some(Step::Switch(s)) if s.prev == Tid(4)));
        assert!(cur.next().is_none());
        assert_eq!(cur.anomalies(), 0);
    }
}
