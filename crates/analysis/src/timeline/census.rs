//! The first pass of [`Timeline::build`]: the threads, their comms, and
//! how much room each thread's intervals and each CPU's runs need.

use super::*;

/// What the first pass of [`Timeline::build`] learns: the threads in order
/// of first sight (the order of [`Timeline::threads`]), each one's latest
/// comm, and upper bounds of the intervals each thread and each CPU will
/// get, so that the second pass writes into vectors of their final size
/// instead of growing (and copying, and faulting in) them.
///
/// The bounds follow [`Builder`] step by step: every interval it pushes is
/// counted here by the event that may push it, under a condition that is
/// implied by the one the builder checks.
pub(super) struct Census {
    pub(super) index: TidIndex,
    pub(super) threads: Vec<Slot>,
    /// Upper bound of the runs of each CPU.
    pub(super) cpu_bound: Vec<usize>,
    /// Per CPU, who the last sched_switch put on it (`CpuTracker::current`).
    pub(super) cpu_next: Vec<Option<Tid>>,
    /// Evidence of lost events, per CPU.
    pub(super) loss: LossEvidence,
    /// One more than the highest CPU any event names (of every kind).
    pub(super) cpus_seen: u32,
}

/// One thread in the [`Census`].
#[derive(Clone, Copy)]
pub(super) struct Slot {
    pub(super) tid: Tid,
    /// Latest comm seen in the events.
    pub(super) comm: StrId,
    /// Upper bound of its intervals.
    pub(super) bound: u32,
    /// Its last event was a wakeup: it is Running or Runnable, so another
    /// wakeup pushes nothing.
    pub(super) woken: bool,
}

impl Census {
    pub(super) fn new(nr_cpus: usize) -> Census {
        Census {
            index: TidIndex::default(),
            threads: Vec::new(),
            cpu_bound: vec![0; nr_cpus],
            cpu_next: vec![None; nr_cpus],
            loss: LossEvidence::default(),
            cpus_seen: 0,
        }
    }

    /// The slot of `tid`, registered on first sight with one interval of
    /// slack (the back-filled Running interval of a task first seen
    /// switched out).
    #[inline(always)]
    pub(super) fn see(&mut self, tid: Tid, comm: StrId) -> &mut Slot {
        let i = match self.index.get(tid) {
            Some(i) => i,
            None => self.register(tid),
        };
        let slot = &mut self.threads[i];
        if comm != StrId(0) {
            slot.comm = comm;
        }
        slot
    }

    /// First sight of `tid` (out of line: once per thread).
    #[cold]
    #[inline(never)]
    pub(super) fn register(&mut self, tid: Tid) -> usize {
        let i = self.threads.len();
        self.index.insert(tid, i);
        self.threads.push(Slot {
            tid,
            comm: StrId(0),
            bound: 1,
            woken: false,
        });
        i
    }

    #[inline]
    pub(super) fn switch(
        &mut self,
        cpu: Cpu,
        prev: Tid,
        prev_comm: StrId,
        next: Tid,
        next_comm: StrId,
    ) {
        let c = cpu.0 as usize;
        if c >= self.cpu_bound.len() {
            self.cpu_bound.resize(c + 1, 0);
            self.cpu_next.resize(c + 1, None);
        }
        // An idle CPU switching out a task may infer a switch-in: one more
        // run on the CPU and one more interval of the task.
        let cur = self.cpu_next[c];
        self.loss.note(c, cur, prev);
        let from_idle = !prev.is_idle() && cur == Some(Tid::IDLE);
        self.cpu_bound[c] += 1 + from_idle as usize;
        self.cpu_next[c] = Some(next);
        if let Some(cur) = cur.filter(|&cur| cur != prev && !cur.is_idle()) {
            // A lost switch-out may leave `cur` Unknown.
            if let Some(k) = self.index.get(cur) {
                let slot = &mut self.threads[k];
                slot.bound = slot.bound.saturating_add(1);
                slot.woken = false;
            }
        }
        if !prev.is_idle() {
            let slot = self.see(prev, prev_comm);
            slot.bound = slot.bound.saturating_add(1 + from_idle as u32);
            slot.woken = false;
        }
        if !next.is_idle() {
            let slot = self.see(next, next_comm);
            slot.bound = slot.bound.saturating_add(1);
            slot.woken = false;
        }
    }

    #[inline]
    pub(super) fn wakeup(&mut self, tid: Tid, comm: StrId) {
        if tid.is_idle() {
            return;
        }
        let slot = self.see(tid, comm);
        if !slot.woken {
            slot.bound = slot.bound.saturating_add(1);
            slot.woken = true;
        }
    }

    /// A migration (at most one interval, Running/Runnable stays so) or an
    /// exit (at most one, and it may end the Running/Runnable state that
    /// makes a later wakeup a no-op).
    #[inline]
    pub(super) fn other(&mut self, tid: Tid, comm: StrId, exit: bool) {
        if tid.is_idle() {
            return;
        }
        let slot = self.see(tid, comm);
        slot.bound = slot.bound.saturating_add(1);
        slot.woken &= !exit;
    }

    /// An event other than sched_switch on `cpu` names `tid` as current:
    /// on a CPU that the last switch left idle, the build may infer its
    /// switch-in (one more run, one more interval of `tid`).
    #[inline]
    pub(super) fn names_current(&mut self, cpu: Cpu, tid: Tid) {
        let c = cpu.0 as usize;
        if tid.is_idle() || self.cpu_next.get(c) != Some(&Some(Tid::IDLE)) {
            return;
        }
        self.cpu_bound[c] += 1;
        let slot = self.see(tid, StrId(0));
        slot.bound = slot.bound.saturating_add(1);
        slot.woken = false;
    }

    /// Pass 1 over the events.
    pub(super) fn of(trace: &Trace) -> Census {
        let mut s = Census::new(trace.nr_cpus as usize);
        let stat = stat_runtime_id(trace);
        for ev in &trace.events {
            s.push(ev, stat);
        }
        s
    }

    /// One event of pass 1 (`stat`: the trace's sched_stat_runtime name
    /// id, [`stat_runtime_id`]), in time order: [`Census::of`] pushes the
    /// trace's events, [`super::TimelineCensus`] a stream's.
    #[inline]
    pub(super) fn push(&mut self, ev: &Event, stat: Option<schedscope_trace::NameId>) {
        self.cpus_seen = self.cpus_seen.max(ev.cpu.0.saturating_add(1));
        if names_current(&ev.data) || (stat.is_some() && Some(ev.name) == stat) {
            self.names_current(ev.cpu, ev.tid);
        }
        match ev.data {
            EventData::Switch {
                prev_tid,
                prev_comm,
                next_tid,
                next_comm,
                ..
            } => self.switch(ev.cpu, prev_tid, prev_comm, next_tid, next_comm),
            EventData::Wakeup { tid, comm, .. } => self.wakeup(tid, comm),
            EventData::Migrate { tid, comm, .. } => self.other(tid, comm, false),
            EventData::Fork {
                child_tid,
                child_comm,
                ..
            } if !child_tid.is_idle() => {
                self.see(child_tid, child_comm);
            }
            EventData::Exit { tid, comm } => self.other(tid, comm, true),
            _ => {}
        }
    }
}
