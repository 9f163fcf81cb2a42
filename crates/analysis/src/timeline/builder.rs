//! The second pass of [`Timeline::build`]: the state machine that turns
//! each sched_switch, wakeup, migration and exit into per-thread state
//! intervals and per-CPU runs (the repairs of lost switch-ins are in
//! `repair`).

use super::*;

/// What a switch-out leaves a task in.
pub(super) fn state_after_switch_out(prev_state: PrevState, exiting: bool) -> ThreadState {
    let b = prev_state.bits;
    if exiting || b & PrevState::DEAD != 0 {
        ThreadState::Dead
    } else if b == 0 {
        ThreadState::Runnable
    } else if b & PrevState::D != 0 {
        ThreadState::Blocked
    } else if b & (PrevState::S | PrevState::I) != 0 {
        ThreadState::Sleeping
    } else {
        ThreadState::Other
    }
}

/// Per-CPU bookkeeping during the build.
#[derive(Clone, Copy, Default)]
pub(super) struct CpuTracker {
    /// Time of the previous sched_switch on this CPU.
    pub(super) last_switch: Option<Ts>,
    /// Who that switch put on the CPU.
    pub(super) current: Option<Tid>,
}

/// Per-thread state of the second pass, apart from the intervals so that
/// every decision reads a small, cache-resident table: the open interval
/// lives here until a transition closes it, and only then is it appended to
/// the thread's vector (written once, in order, and not read back).
#[derive(Clone, Copy, Default)]
pub(super) struct Hot {
    /// The open (last) interval, if any.
    pub(super) open: Option<StateInterval>,
    /// sched_process_exit seen; the next switch-out makes it Dead.
    pub(super) exiting: bool,
    /// Its region of the interval store: first slot, slots written, size.
    pub(super) base: usize,
    pub(super) len: u32,
    pub(super) cap: u32,
    /// Its intervals moved to [`Builder::spill`] (the region was full).
    pub(super) spilled: bool,
}

/// The mutable state of [`Timeline::build`]'s second pass.
pub(super) struct Builder {
    pub(super) tl: Timeline,
    /// Per thread, by index.
    pub(super) hot: Vec<Hot>,
    /// The interval store: every thread's region, as the census sized it
    /// (in words; see [`Store`]); each start is stored as an offset from
    /// the trace's start, `tl.start` (see [`Packed`]).
    pub(super) store: Vec<Word>,
    /// Intervals of threads whose region was full (never, when the census
    /// bounds hold), by thread index.
    pub(super) spill: schedscope_trace::hash::FxMap<usize, Vec<StateInterval>>,
    pub(super) cpus: Vec<CpuTracker>,
    /// Interval or run pushes that found their vector full (the census
    /// bound was too small); tests check that it stays 0.
    pub(super) regrown: u64,
    /// The trace's sched_stat_runtime name id, if it has any.
    pub(super) stat: Option<schedscope_trace::NameId>,
    /// Per CPU: the last power:cpu_idle exit not followed by an idle entry.
    pub(super) idle_exit: Vec<Option<Ts>>,
    /// Per CPU: the times of the trace's loss records there.
    pub(super) marks: Vec<Vec<u64>>,
    /// Per thread index: its hold-offs and recorded refills (only threads
    /// ever held off; see `refill`).
    pub(super) refills: schedscope_trace::hash::FxMap<usize, super::refill::Refills>,
    /// Whether the trace shows loss anywhere (else no repair needs refills
    /// and none are tracked).
    pub(super) refill_evidence: bool,
    /// What the pass learns for the analyses besides the states (see
    /// [`Seen`]).
    pub(super) seen: Seen,
}

impl Builder {
    /// Index of `tid`'s timeline. The census registered every thread the
    /// events name; a thread it missed is created here all the same.
    #[inline(always)]
    pub(super) fn idx(&mut self, tid: Tid) -> usize {
        match self.tl.index.get(tid) {
            Some(i) => i,
            None => self.add_thread(tid),
        }
    }

    /// A thread the census did not register (out of line: never taken
    /// when the census and this pass agree).
    #[cold]
    #[inline(never)]
    pub(super) fn add_thread(&mut self, tid: Tid) -> usize {
        let i = self.tl.threads.len();
        self.tl.index.insert(tid, i);
        self.tl.threads.push(ThreadTimeline {
            tid,
            ..ThreadTimeline::default()
        });
        self.hot.push(Hot::default());
        i
    }

    /// The open interval of thread `i`, if any.
    #[inline]
    pub(super) fn open(&self, i: usize) -> Option<&StateInterval> {
        self.hot[i].open.as_ref()
    }

    /// Close thread `i`'s open interval at `next.ts` and open `next`.
    #[inline(always)]
    pub(super) fn transition(&mut self, i: usize, next: StateInterval) {
        let hot = &mut self.hot[i];
        let Some(mut last) = hot.open.replace(next) else {
            return;
        };
        if last.ts == next.ts {
            // A zero-length interval: drop it, and reopen the one before
            // when it is the same state (e.g. woken and run at one instant).
            if let Some(prev) = self.last_interval(i, last.ts) {
                if prev.end == Some(next.ts)
                    && prev.state == next.state
                    && prev.cpu == next.cpu
                    && prev.preempted == next.preempted
                    && prev.waker == next.waker
                {
                    self.pop_interval(i);
                    self.hot[i].open = Some(StateInterval { end: None, ..prev });
                }
            }
            return;
        }
        last.end = Some(next.ts);
        self.push_interval(i, last);
    }

    /// The last interval written for thread `i` (it ended at `end`, where
    /// the open one starts).
    #[inline(always)]
    pub(super) fn last_interval(&self, i: usize, end: Ts) -> Option<StateInterval> {
        let h = &self.hot[i];
        if h.spilled {
            return self.spill.get(&i).and_then(|v| v.last().copied());
        }
        // SAFETY: the first `len` slots of the region are written.
        let slots = unsafe { written(&self.store, h.base..h.base + h.len as usize) };
        slots.last().map(|p| p.unpack(Some(end), self.tl.start.0))
    }

    /// Drop the last interval written for thread `i`.
    #[inline(always)]
    pub(super) fn pop_interval(&mut self, i: usize) {
        let h = &mut self.hot[i];
        if h.spilled {
            self.spill.get_mut(&i).and_then(|v| v.pop());
        } else {
            h.len -= 1;
        }
    }

    /// Append `iv` to thread `i`'s intervals.
    #[inline(always)]
    pub(super) fn push_interval(&mut self, i: usize, iv: StateInterval) {
        let h = &mut self.hot[i];
        let packed = Packed::pack(&iv, self.tl.start.0);
        if let Some(p) = packed.filter(|_| !h.spilled && h.len < h.cap) {
            let slots = words_as_slots(&mut self.store);
            let at = h.base + h.len as usize;
            slots[at] = MaybeUninit::new(p);
            h.len += 1;
            // The thread's next interval goes to the next slot, many events
            // from now: ask for its cache lines now, so that the write then
            // does not wait for memory (the stores' misses were most of
            // this pass).
            if let Some(next) = slots.get(at + 1) {
                prefetch(next);
            }
        } else {
            self.spill_push(i, iv);
        }
    }

    /// [`Builder::push_interval`] when the region is full or `iv` does not
    /// pack: move the thread's intervals out of the store (out of line:
    /// never taken when the census bounds hold and the intervals fit
    /// [`Packed`]: CPU numbers below 2^14, starts within 4.9 hours of the
    /// trace's).
    #[cold]
    #[inline(never)]
    pub(super) fn spill_push(&mut self, i: usize, iv: StateInterval) {
        self.regrown += 1;
        let h = &mut self.hot[i];
        if !h.spilled {
            h.spilled = true;
            // SAFETY: the first `len` slots of the region are written.
            let slots = unsafe { written(&self.store, h.base..h.base + h.len as usize) };
            // Each ended where the next starts, the last where `iv` does.
            let base = self.tl.start.0;
            let ends = slots.iter().skip(1).map(|n| n.ts(base)).chain([iv.ts]);
            let moved = slots
                .iter()
                .zip(ends)
                .map(|(p, end)| p.unpack(Some(end), base))
                .collect();
            self.spill.insert(i, moved);
        }
        self.spill.entry(i).or_default().push(iv);
    }

    /// Append a run to CPU slot `c`.
    #[inline]
    pub(super) fn push_run(&mut self, c: usize, run: CpuRun) {
        self.regrown += u64::from(self.tl.cpus[c].push(run));
    }

    pub(super) fn cpu_slot(&mut self, cpu: Cpu) -> usize {
        let c = cpu.0 as usize;
        if c >= self.cpus.len() {
            self.cpus.resize(c + 1, CpuTracker::default());
            self.tl.cpus.resize(c + 1, Runs::default());
        }
        c
    }

    pub(super) fn switch(&mut self, ts: Ts, cpu: Cpu, prev: Tid, prev_state: PrevState, next: Tid) {
        let c = self.cpu_slot(cpu);
        self.infer_switch_in_from_idle(ts, c, cpu, prev);
        let last = self.cpus[c];
        // Per-CPU runs: the last one ends where the next (pushed below)
        // starts.
        if let Some(cur) = last.current.filter(|&cur| cur != prev) {
            // The CPU said `cur` ran, yet `prev` is switched out: the switch
            // that took `cur` off was lost. Its state since is unknown; do
            // not leave it Running here forever.
            self.tl.anomalies += 1;
            if let Some(start) = last.last_switch {
                self.tl.unknown.push(UnknownStretch {
                    cpu,
                    start,
                    end: ts,
                });
            }
            if !cur.is_idle() {
                if let Some(i) = self.tl.index.get(cur) {
                    let stale = self
                        .open(i)
                        .is_some_and(|iv| iv.state == ThreadState::Running && iv.cpu == Some(cpu));
                    if stale {
                        self.transition(
                            i,
                            StateInterval {
                                ts,
                                end: None,
                                state: ThreadState::Unknown,
                                cpu: None,
                                preempted: false,
                                waker: None,
                            },
                        );
                    }
                }
            }
        }
        self.push_run(
            c,
            CpuRun {
                ts,
                end: None,
                tid: next,
            },
        );
        self.cpus[c] = CpuTracker {
            last_switch: Some(ts),
            current: Some(next),
        };

        // The outgoing task.
        if !prev.is_idle() {
            let i = self.idx(prev);
            match self.open(i) {
                Some(iv) if iv.state == ThreadState::Running && iv.cpu == Some(cpu) => {}
                Some(_) => self.tl.anomalies += 1,
                None => {
                    // First sight: it ran since the CPU's previous switch, if known.
                    if let Some(t0) = last.last_switch {
                        self.hot[i].open = Some(StateInterval {
                            ts: t0,
                            end: None,
                            state: ThreadState::Running,
                            cpu: Some(cpu),
                            preempted: false,
                            waker: None,
                        });
                    }
                }
            }
            let state = state_after_switch_out(prev_state, self.hot[i].exiting);
            let runnable = state == ThreadState::Runnable;
            self.transition(
                i,
                StateInterval {
                    ts,
                    end: None,
                    state,
                    cpu: runnable.then_some(cpu),
                    preempted: runnable,
                    waker: None,
                },
            );
            if state == ThreadState::Dead {
                self.hot[i].exiting = false;
            }
            if self.refill_evidence && runnable && next.is_idle() {
                self.held_off(i, ts);
            }
        }

        // The incoming task.
        if !next.is_idle() {
            let i = self.idx(next);
            if let Some(iv) = self.open(i) {
                if iv.state == ThreadState::Running {
                    // Still running elsewhere: its switch-out was lost.
                    self.tl.anomalies += 1;
                }
            }
            if !self.refills.is_empty() {
                let unthrottled = self
                    .open(i)
                    .is_some_and(|iv| iv.state == ThreadState::Runnable);
                self.ran(i, unthrottled.then_some(ts));
            }
            self.transition(
                i,
                StateInterval {
                    ts,
                    end: None,
                    state: ThreadState::Running,
                    cpu: Some(cpu),
                    preempted: false,
                    waker: None,
                },
            );
        }
    }

    pub(super) fn wakeup(&mut self, ts: Ts, waker: Tid, tid: Tid, target: Cpu) {
        if tid.is_idle() {
            return;
        }
        let i = self.idx(tid);
        if let Some(iv) = self.open(i) {
            if matches!(iv.state, ThreadState::Running | ThreadState::Runnable) {
                return;
            }
        }
        self.transition(
            i,
            StateInterval {
                ts,
                end: None,
                state: ThreadState::Runnable,
                cpu: Some(target),
                preempted: false,
                waker: Some(waker),
            },
        );
    }

    pub(super) fn migrate(&mut self, ts: Ts, tid: Tid, dest: Cpu) {
        if tid.is_idle() {
            return;
        }
        let i = self.idx(tid);
        if !self.refills.is_empty() {
            // Moved: the scheduler saw it runnable, not held off.
            self.ran(i, None);
        }
        if let Some(iv) = self.open(i).copied() {
            if iv.state == ThreadState::Runnable && iv.cpu != Some(dest) {
                self.transition(
                    i,
                    StateInterval {
                        ts,
                        cpu: Some(dest),
                        ..iv
                    },
                );
            }
        }
    }

    pub(super) fn exit(&mut self, ts: Ts, tid: Tid) {
        if tid.is_idle() {
            return;
        }
        let i = self.idx(tid);
        match self.open(i).map(|iv| iv.state) {
            Some(ThreadState::Running) => self.hot[i].exiting = true,
            Some(ThreadState::Dead) => {}
            _ => {
                // Not known to run: it cannot be switched out later, so it is dead now.
                self.transition(
                    i,
                    StateInterval {
                        ts,
                        end: None,
                        state: ThreadState::Dead,
                        cpu: None,
                        preempted: false,
                        waker: None,
                    },
                );
            }
        }
    }
}

impl Builder {
    /// Set up pass 2 from pass 1's `census` of `trace` (whose metadata,
    /// tasks and loss records are read; its events are not: they are
    /// pushed to [`Builder::step`]). Returns the builder and each census
    /// thread's latest comm, for [`Builder::finish`].
    pub(super) fn start(trace: &Trace, census: Census, squeeze: bool) -> (Builder, Vec<StrId>) {
        let threads = census
            .threads
            .iter()
            .map(|s| ThreadTimeline {
                tid: s.tid,
                ..ThreadTimeline::default()
            })
            .collect::<Vec<_>>();
        // One store for every thread's intervals, each thread a region.
        let mut hot = Vec::with_capacity(census.threads.len());
        let mut total = 0usize;
        for s in &census.threads {
            hot.push(Hot {
                base: total,
                cap: if squeeze { s.bound.min(2) } else { s.bound },
                ..Hot::default()
            });
            total += s.bound as usize;
        }
        // (memory the decoder is done with, when there is enough)
        let words = interval_words(total);
        let mut store = trace
            .spare
            .take(words)
            .unwrap_or_else(|| schedscope_trace::mem::vec_with_huge_pages(words));
        store.resize(words, MaybeUninit::uninit());
        let cpus = census
            .cpu_bound
            .iter()
            .map(|&n| Runs::with_capacity(n))
            .collect::<Vec<_>>();
        let comms = census.threads.iter().map(|s| s.comm).collect();
        let mut b = Builder {
            hot,
            store,
            spill: Default::default(),
            cpus: vec![CpuTracker::default(); cpus.len()],
            tl: Timeline {
                start: trace.start(),
                end: trace.end(),
                threads,
                cpus,
                index: census.index,
                inferred_switch_ins_by_cpu: vec![0; census.cpu_bound.len()],
                loss: census.loss,
                cpus_seen: census.cpus_seen,
                built: true,
                ..Timeline::default()
            },
            regrown: 0,
            stat: stat_runtime_id(trace),
            idle_exit: Vec::new(),
            marks: Vec::new(),
            refills: Default::default(),
            refill_evidence: false,
            seen: Seen::new(&trace.loss_marks),
        };
        // Hold-offs and refills are tracked only where a repair may use them.
        b.refill_evidence = !trace.loss_marks.is_empty()
            || (0..b.tl.loss.cpus.len() as u32).any(|c| b.tl.loss.lossy(c));
        for m in &trace.loss_marks {
            let c = m.cpu as usize;
            if c >= b.marks.len() {
                b.marks.resize(c + 1, Vec::new());
            }
            b.marks[c].push(m.ts);
        }
        (b, comms)
    }

    /// One event of pass 2: `ahead[0]`, followed by the events after it
    /// (at least [`repair::STAT_LOOKAHEAD`] of them, or all that are left:
    /// a repair reads that far for the task's sched_stat_runtime).
    #[inline]
    pub(super) fn step(&mut self, trace: &Trace, ahead: &[Event]) {
        let ev = &ahead[0];
        if names_current(&ev.data) || (self.stat.is_some() && Some(ev.name) == self.stat) {
            self.infer_switch_in_from_event(trace, ahead, ev.ts, ev.cpu, ev.tid);
        }
        self.seen.push(ev);
        match ev.data {
            EventData::Switch {
                prev_tid,
                prev_state,
                next_tid,
                ..
            } => self.switch(ev.ts, ev.cpu, prev_tid, prev_state, next_tid),
            EventData::Wakeup {
                tid, target_cpu, ..
            } => self.wakeup(ev.ts, ev.tid, tid, target_cpu),
            EventData::Migrate { tid, dest_cpu, .. } => self.migrate(ev.ts, tid, dest_cpu),
            EventData::Exit { tid, .. } => self.exit(ev.ts, tid),
            EventData::CpuIdle { state, .. } => self.cpu_idle(ev.ts, ev.cpu, state),
            _ => {}
        }
    }

    /// Close the open intervals and hand over the timeline (`comms`: from
    /// [`Builder::start`]; names come from `trace`'s tasks first), with how
    /// many pushes outgrew the census's bounds.
    pub(super) fn finish(mut self, trace: &Trace, comms: &[StrId]) -> (Timeline, u64) {
        // The last interval of each thread: its open one (when the pass
        // closes no interval after the last push, its end is open's).
        let last_end: Vec<Option<Ts>> = (0..self.hot.len())
            .map(|i| {
                let open = self.hot[i].open?;
                self.push_interval(i, open);
                open.end
            })
            .collect();
        let Builder {
            mut tl,
            hot,
            store,
            mut spill,
            regrown,
            seen,
            ..
        } = self;
        (tl.vcpus, tl.mark_spans) = seen.finish();
        let store = Arc::new(Store {
            words: store,
            base: tl.start.0,
        });
        for (i, (t, h)) in tl.threads.iter_mut().zip(&hot).enumerate() {
            t.intervals = match spill.remove(&i) {
                Some(v) => Intervals::from(v),
                None => Intervals::packed(
                    Arc::clone(&store),
                    h.base,
                    h.base + h.len as usize,
                    last_end[i],
                ),
            };
            let task = trace.tasks.by_tid(t.tid);
            t.tgid = task.and_then(|k| k.tgid);
            t.comm = match task {
                Some(k) if !k.comm.is_empty() => k.comm.clone(),
                _ => {
                    let comm = comms.get(i).copied().unwrap_or(StrId(0));
                    trace.strings.get(comm).to_string()
                }
            };
        }
        for (i, r) in tl.inferred.iter().enumerate() {
            let c = r.cpu.0 as usize;
            if c >= tl.inferred_by_cpu.len() {
                tl.inferred_by_cpu.resize(c + 1, Vec::new());
            }
            tl.inferred_by_cpu[c].push(i as u32);
        }
        for on in &mut tl.inferred_by_cpu {
            on.sort_by_key(|&i| tl.inferred[i as usize].ts);
        }
        (tl, regrown)
    }
}
