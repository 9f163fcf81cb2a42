//! The simulation loop: threads, run queues, time slices, sleeps, lock
//! hand-offs, kvm exits and directed yields, advanced tick by tick.
//!
//! Each tick of [`TICK_NS`] has fixed phases: wakeups at +0 us (lock
//! releases by the holder, then timer wakeups), context switches and
//! migrations at +1 us, kvm_exit at +4 us and kvm_entry at +7 us. The
//! [`Oracle`] integrates the thread states between phases.

use crate::config::{Config, Isa, Policy, BASE_NS, TICK_NS};
use crate::truth::{Oracle, St, Truth};
use std::collections::VecDeque;

/// What kind of thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// vCPU `id` of VM `vm`.
    Vcpu {
        /// VM index.
        vm: usize,
        /// vCPU id.
        id: u32,
    },
    /// The I/O thread of VM `vm` (its main thread).
    Io {
        /// VM index.
        vm: usize,
    },
    /// A worker of process `proc_`.
    Worker {
        /// Process index.
        proc_: usize,
    },
}

/// A simulated thread.
#[derive(Clone, Debug)]
pub struct SimThread {
    /// tid.
    pub tid: i32,
    /// tgid.
    pub tgid: i32,
    /// comm.
    pub comm: String,
    /// Kind.
    pub kind: Kind,
}

/// How a task left the CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Out {
    /// Preempted (`R+`).
    Preempted,
    /// Yielded (`R`).
    Yielded,
    /// Went to sleep (`S`).
    Sleep,
}

/// A simulated tracepoint hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimData {
    /// sched_switch; tid 0 = idle.
    Switch {
        /// Outgoing tid.
        prev: i32,
        /// How it left.
        out: Out,
        /// Incoming tid.
        next: i32,
    },
    /// sched_waking.
    Waking {
        /// Woken tid.
        tid: i32,
        /// Target CPU.
        target: u32,
    },
    /// sched_wakeup.
    Wakeup {
        /// Woken tid.
        tid: i32,
        /// Target CPU.
        target: u32,
    },
    /// sched_wakeup_new.
    WakeupNew {
        /// New tid.
        tid: i32,
        /// Target CPU.
        target: u32,
    },
    /// sched_migrate_task.
    Migrate {
        /// Migrated tid.
        tid: i32,
        /// From.
        orig: u32,
        /// To.
        dest: u32,
    },
    /// kvm_exit.
    KvmExit {
        /// Exit reason / code.
        reason: u32,
        /// Flavour.
        isa: Isa,
        /// vCPU id.
        vcpu: u32,
        /// Guest rip.
        rip: u64,
    },
    /// sched_stat_runtime of the task current on the CPU (the event's
    /// pid): CPU time since its previous one or since its switch-in
    /// (added by [`crate::loss::with_stat_runtime`]).
    StatRuntime {
        /// Runtime (ns).
        runtime: u64,
    },
    /// kvm_entry.
    KvmEntry {
        /// vCPU id.
        vcpu: u32,
        /// Guest rip.
        rip: u64,
    },
}

/// One simulated event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimEvent {
    /// ns.
    pub ts: u64,
    /// Emitting CPU.
    pub cpu: u32,
    /// common_pid: the task current on that CPU (0 = idle).
    pub pid: i32,
    /// Payload.
    pub data: SimData,
}

/// A finished simulation.
#[derive(Clone, Debug)]
pub struct Simulation {
    /// The configuration.
    pub config: Config,
    /// Threads (index = internal id).
    pub threads: Vec<SimThread>,
    /// Events in time order.
    pub events: Vec<SimEvent>,
    /// The answers.
    pub truth: Truth,
    /// Events dropped by a ring-buffer loss injected with
    /// [`crate::loss::drop_spans`]: one loss record each (written as
    /// PERF_RECORD_LOST and `CPU:N [LOST K EVENTS]`).
    pub lost: Vec<crate::loss::SimLost>,
}

impl Simulation {
    /// The thread with tid `tid`.
    pub fn thread(&self, tid: i32) -> Option<&SimThread> {
        self.threads.iter().find(|t| t.tid == tid)
    }

    /// comm of `tid` (`swapper/CPU` for 0).
    pub fn comm(&self, tid: i32, cpu: u32) -> String {
        if tid == 0 {
            format!("swapper/{cpu}")
        } else {
            self.thread(tid).map(|t| t.comm.clone()).unwrap_or_default()
        }
    }

    /// The common_pid's tgid (0 for idle).
    pub fn tgid(&self, tid: i32) -> i32 {
        self.thread(tid).map(|t| t.tgid).unwrap_or(0)
    }
}

/// splitmix64.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn chance(&mut self, p: f64) -> bool {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
    pub(crate) fn range(&mut self, (lo, hi): (u32, u32)) -> u32 {
        lo + (self.next() % u64::from(hi - lo + 1)) as u32
    }
    fn pick<T: Copy>(&mut self, v: &[T]) -> Option<T> {
        if v.is_empty() {
            None
        } else {
            Some(v[(self.next() % v.len() as u64) as usize])
        }
    }
}

struct CpuSt {
    cur: Option<usize>,
    rq: VecDeque<usize>,
    slice_left: u32,
}

struct Sim {
    cfg: Config,
    rng: Rng,
    threads: Vec<SimThread>,
    gang_of: Vec<usize>,
    gangs: Vec<Vec<usize>>,
    st: Vec<St>,
    last_cpu: Vec<usize>,
    work: Vec<u32>,
    wake_at: Vec<Option<u64>>,
    waiters: Vec<Vec<usize>>,
    yield_at: Vec<Option<(u64, usize)>>,
    cpus: Vec<CpuSt>,
    events: Vec<SimEvent>,
    oracle: Oracle,
    /// Per CPU: (switch time, next tid).
    switch_log: Vec<Vec<(u64, i32)>>,
    /// PLE exits: (ts, cpu, VM index).
    ple_log: Vec<(u64, usize, usize)>,
    focus: usize,
}

const VMX_OTHER: &[u32] = &[1, 1, 1, 48, 48, 32, 32, 30, 12, 7];
const SVM_OTHER: &[u32] = &[0x60, 0x60, 0x60, 0x400, 0x400, 0x7c, 0x7c, 0x7b, 0x78, 0x64];

/// Run the simulation described by `cfg`.
///
/// The model runs twice (it is deterministic): the first run finds the last
/// event's time, the second integrates the truth up to exactly that time,
/// which is where a trace of these events ends.
pub fn simulate(cfg: &Config) -> Simulation {
    let first = run(cfg, u64::MAX);
    match first.events.last() {
        Some(e) => run(cfg, e.ts),
        None => first,
    }
}

fn run(cfg: &Config, clip: u64) -> Simulation {
    let mut threads = Vec::new();
    let mut gangs: Vec<Vec<usize>> = Vec::new();
    let mut gang_meta = Vec::new();
    let mut gang_of = Vec::new();
    for (v, spec) in cfg.vms.iter().enumerate() {
        let tgid = 1000 + 100 * v as i32;
        threads.push(SimThread {
            tid: tgid,
            tgid,
            comm: format!("qemu-vm{v}"),
            kind: Kind::Io { vm: v },
        });
        gang_of.push(usize::MAX);
        let mut members = Vec::new();
        for id in 0..spec.vcpus {
            members.push(threads.len());
            gang_of.push(gangs.len());
            threads.push(SimThread {
                tid: tgid + 1 + id as i32,
                tgid,
                comm: format!("CPU {id}/KVM"),
                kind: Kind::Vcpu { vm: v, id },
            });
        }
        gang_meta.push(("vm", tgid));
        gangs.push(members);
    }
    for (p, spec) in cfg.procs.iter().enumerate() {
        let tgid = 5000 + 100 * p as i32;
        let mut members = Vec::new();
        for i in 0..spec.threads {
            members.push(threads.len());
            gang_of.push(gangs.len());
            threads.push(SimThread {
                tid: tgid + i as i32,
                tgid,
                comm: format!("worker-p{p}"),
                kind: Kind::Worker { proc_: p },
            });
        }
        gang_meta.push(("process", tgid));
        gangs.push(members);
    }
    let n = threads.len();
    let oracle = Oracle::new(
        BASE_NS,
        n,
        gangs
            .iter()
            .zip(&gang_meta)
            .map(|(m, &(kind, tgid))| {
                (
                    kind,
                    tgid,
                    m.clone(),
                    m.iter().map(|&i| threads[i].tid).collect(),
                )
            })
            .collect(),
    );
    let mut oracle = oracle;
    oracle.clip = clip;
    let mut sim = Sim {
        cfg: cfg.clone(),
        rng: Rng(cfg.seed ^ 0x5eed_5eed),
        threads,
        gang_of,
        gangs,
        st: vec![St::New; n],
        last_cpu: vec![0; n],
        work: vec![0; n],
        wake_at: vec![None; n],
        waiters: vec![Vec::new(); n],
        yield_at: vec![None; n],
        cpus: (0..cfg.cpus)
            .map(|_| CpuSt {
                cur: None,
                rq: VecDeque::new(),
                slice_left: 0,
            })
            .collect(),
        events: Vec::new(),
        oracle,
        switch_log: vec![Vec::new(); cfg.cpus as usize],
        ple_log: Vec::new(),
        focus: 0,
    };
    for t in 0..cfg.ticks {
        sim.tick(t);
    }
    sim.finish()
}

impl Sim {
    fn tid(&self, i: Option<usize>) -> i32 {
        i.map(|i| self.threads[i].tid).unwrap_or(0)
    }

    fn emit(&mut self, ts: u64, cpu: usize, data: SimData) {
        let pid = self.tid(self.cpus[cpu].cur);
        self.events.push(SimEvent {
            ts,
            cpu: cpu as u32,
            pid,
            data,
        });
    }

    fn burst(&mut self, i: usize) -> u32 {
        match self.threads[i].kind {
            Kind::Vcpu { .. } => self.rng.range(self.cfg.vcpu_burst),
            Kind::Io { .. } => self.rng.range((1, 10)),
            Kind::Worker { .. } => self.rng.range(self.cfg.worker_burst),
        }
    }

    /// The CPU a woken task is queued on: least loaded, preferring its last CPU.
    fn target_cpu(&self, i: usize) -> usize {
        let load = |c: usize| self.cpus[c].rq.len() + usize::from(self.cpus[c].cur.is_some());
        let mut best = self.last_cpu[i];
        for c in 0..self.cpus.len() {
            if load(c) < load(best) {
                best = c;
            }
        }
        best
    }

    fn make_runnable(&mut self, i: usize, ts: u64, emit_cpu: usize, new: bool) {
        let target = self.target_cpu(i);
        let tid = self.threads[i].tid;
        if new {
            self.emit(
                ts,
                emit_cpu,
                SimData::WakeupNew {
                    tid,
                    target: target as u32,
                },
            );
        } else {
            self.emit(
                ts,
                emit_cpu,
                SimData::Waking {
                    tid,
                    target: target as u32,
                },
            );
            self.emit(
                ts,
                emit_cpu,
                SimData::Wakeup {
                    tid,
                    target: target as u32,
                },
            );
        }
        self.st[i] = St::Runnable;
        self.last_cpu[i] = target;
        self.cpus[target].rq.push_back(i);
        self.work[i] = self.burst(i);
    }

    fn siblings(&self, i: usize) -> &[usize] {
        match self.gang_of[i] {
            usize::MAX => &[],
            g => &self.gangs[g],
        }
    }

    fn tick(&mut self, t: u64) {
        let t0 = BASE_NS + t * TICK_NS;
        // Phase A: wakeups.
        self.oracle.advance(t0, &self.st);
        if t == 0 {
            for i in 0..self.threads.len() {
                let c = i % self.cpus.len();
                self.make_runnable(i, t0, c, true);
            }
        }
        // Lock releases by holders whose burst is over.
        for c in 0..self.cpus.len() {
            let Some(h) = self.cpus[c].cur else { continue };
            if self.work[h] > 0 || self.waiters[h].is_empty() {
                continue;
            }
            for w in std::mem::take(&mut self.waiters[h]) {
                let (wt, wg) = (self.threads[w].tid, self.threads[w].tgid);
                self.oracle
                    .wake(w, wt, wg, Some((h, self.threads[h].tid)), t0);
                self.make_runnable(w, t0, c, false);
            }
        }
        // Timer wakeups, emitted on the sleeper's last CPU by whoever runs there.
        for i in 0..self.threads.len() {
            if self.st[i] != St::Sleeping || self.wake_at[i] != Some(t) {
                continue;
            }
            self.wake_at[i] = None;
            let c = self.last_cpu[i];
            let waker = self.cpus[c].cur.map(|w| (w, self.threads[w].tid));
            let (wt, wg) = (self.threads[i].tid, self.threads[i].tgid);
            self.oracle.wake(i, wt, wg, waker, t0);
            self.make_runnable(i, t0, c, false);
        }

        // Phase B: context switches.
        let t1 = t0 + 1_000;
        self.oracle.advance(t1, &self.st);
        let slice = u64::from(self.cfg.slice_ticks.max(1));
        let boundary = self.cfg.policy == Policy::Gang && t > 0 && t.is_multiple_of(slice);
        if boundary {
            self.rotate_focus();
        }
        for c in 0..self.cpus.len() {
            self.schedule(c, t, t1, boundary);
        }
        for c in 0..self.cpus.len() {
            if let Some(x) = self.cpus[c].cur {
                self.work[x] = self.work[x].saturating_sub(1);
                self.cpus[c].slice_left = self.cpus[c].slice_left.saturating_sub(1);
            }
        }

        // kvm exits at +4 us, entries at +7 us.
        let t4 = t0 + 4_000;
        let mut entries = Vec::new();
        for c in 0..self.cpus.len() {
            let Some(x) = self.cpus[c].cur else { continue };
            let Kind::Vcpu { vm, id } = self.threads[x].kind else {
                continue;
            };
            let isa = self.cfg.vms[vm].isa;
            let runnable: Vec<usize> = self
                .siblings(x)
                .iter()
                .copied()
                .filter(|&s| s != x && self.st[s] == St::Runnable)
                .collect();
            let p = if runnable.is_empty() {
                self.cfg.ple_futile_prob
            } else {
                self.cfg.ple_spin_prob
            };
            let reason = if self.rng.chance(p) {
                let class = if !runnable.is_empty() {
                    1
                } else if self.siblings(x).len() > 1
                    && self.siblings(x).iter().all(|&s| self.st[s] == St::Running)
                {
                    2
                } else {
                    3
                };
                let vm_tgid = self.threads[x].tgid;
                let tid = self.threads[x].tid;
                for counts in [
                    &mut self.oracle.ple.counts,
                    self.oracle.ple.per_vm.entry(vm_tgid).or_default(),
                    self.oracle.ple.per_vcpu.entry(tid).or_default(),
                ] {
                    counts[0] += 1;
                    counts[class] += 1;
                }
                self.ple_log.push((t4, c, self.gang_of[x]));
                if let Some(target) = self.rng.pick(&runnable) {
                    if self.rng.chance(self.cfg.yield_prob) {
                        let k = self.rng.range((1, 8));
                        self.yield_at[x] = Some((t + u64::from(k), target));
                    }
                }
                Some(match isa {
                    Isa::Vmx => 40,
                    Isa::Svm => 0x77,
                })
            } else if self.rng.chance(self.cfg.other_exit_prob) {
                let list = match isa {
                    Isa::Vmx => VMX_OTHER,
                    Isa::Svm => SVM_OTHER,
                };
                self.rng.pick(list)
            } else {
                None
            };
            if let Some(reason) = reason {
                let rip = 0xffff_ffff_8100_0000 + (self.rng.next() % 0x10_0000) * 16;
                *self
                    .oracle
                    .exits
                    .entry(self.threads[x].tgid)
                    .or_default()
                    .entry(reason)
                    .or_default() += 1;
                self.emit(
                    t4,
                    c,
                    SimData::KvmExit {
                        reason,
                        isa,
                        vcpu: id,
                        rip,
                    },
                );
                entries.push((c, id, rip));
            }
        }
        for (c, vcpu, rip) in entries {
            self.emit(t0 + 7_000, c, SimData::KvmEntry { vcpu, rip });
        }
    }

    fn rotate_focus(&mut self) {
        let ng = self.gangs.len();
        for k in 1..=ng {
            let g = (self.focus + k) % ng;
            if self.gangs[g]
                .iter()
                .any(|&m| matches!(self.st[m], St::Runnable | St::Running))
            {
                self.focus = g;
                return;
            }
        }
    }

    fn in_focus(&self, i: usize) -> bool {
        self.gang_of[i] == self.focus
    }

    /// Take the next task for CPU `c` from its queue or another CPU's.
    fn pick(&mut self, c: usize, ts: u64) -> Option<usize> {
        if self.cfg.policy == Policy::Gang {
            if let Some(p) = self.cpus[c].rq.iter().position(|&i| self.in_focus(i)) {
                return self.cpus[c].rq.remove(p);
            }
            for o in 0..self.cpus.len() {
                if o == c {
                    continue;
                }
                if let Some(p) = self.cpus[o].rq.iter().position(|&i| self.in_focus(i)) {
                    let i = self.cpus[o].rq.remove(p)?;
                    self.migrate(i, o, c, ts);
                    return Some(i);
                }
            }
        }
        if let Some(i) = self.cpus[c].rq.pop_front() {
            return Some(i);
        }
        let o = (0..self.cpus.len())
            .filter(|&o| o != c)
            .max_by_key(|&o| (self.cpus[o].rq.len(), std::cmp::Reverse(o)))?;
        let i = self.cpus[o].rq.pop_front()?;
        self.migrate(i, o, c, ts);
        Some(i)
    }

    fn migrate(&mut self, i: usize, from: usize, to: usize, ts: u64) {
        let tid = self.threads[i].tid;
        self.emit(
            ts,
            to,
            SimData::Migrate {
                tid,
                orig: from as u32,
                dest: to as u32,
            },
        );
        self.last_cpu[i] = to;
    }

    fn schedule(&mut self, c: usize, t: u64, ts: u64, boundary: bool) {
        let cur = self.cpus[c].cur;
        let mut next: Option<usize> = None;
        let mut out = None;
        if let Some(x) = cur {
            let yield_target = match self.yield_at[x] {
                Some((at, target)) if at == t => {
                    self.yield_at[x] = None;
                    (self.st[target] == St::Runnable).then_some(target)
                }
                _ => None,
            };
            if self.work[x] == 0 {
                // Burst over: block on a busy sibling's lock, or sleep on a timer.
                let holder = match self.threads[x].kind {
                    Kind::Worker { .. } if self.rng.chance(self.cfg.lock_prob) => {
                        let busy: Vec<usize> = self
                            .siblings(x)
                            .iter()
                            .copied()
                            .filter(|&s| s != x && self.work[s] > 0)
                            .filter(|&s| matches!(self.st[s], St::Running | St::Runnable))
                            .collect();
                        self.rng.pick(&busy)
                    }
                    _ => None,
                };
                match holder {
                    Some(h) => self.waiters[h].push(x),
                    None => {
                        let range = match self.threads[x].kind {
                            Kind::Vcpu { .. } => self.cfg.vcpu_sleep,
                            Kind::Io { .. } => (50, 500),
                            Kind::Worker { .. } => self.cfg.worker_sleep,
                        };
                        self.wake_at[x] = Some(t + u64::from(self.rng.range(range)));
                    }
                }
                out = Some(Out::Sleep);
            } else if let Some(target) = yield_target {
                out = Some(Out::Yielded);
                next = Some(target);
            } else if boundary {
                let waiting_focus = self
                    .gangs
                    .get(self.focus)
                    .is_some_and(|g| g.iter().any(|&m| self.st[m] == St::Runnable));
                if !self.in_focus(x) && (waiting_focus || !self.cpus[c].rq.is_empty()) {
                    out = Some(Out::Preempted);
                }
            } else if self.cfg.policy == Policy::Fair
                && self.cpus[c].slice_left == 0
                && !self.cpus[c].rq.is_empty()
            {
                out = Some(Out::Preempted);
            }
        }
        if cur.is_some() && out.is_none() {
            return;
        }
        // The CPU is free (idle, or its task leaves).
        if let Some(target) = next {
            // Directed yield: pull the sibling from whichever queue holds it.
            for o in 0..self.cpus.len() {
                if let Some(p) = self.cpus[o].rq.iter().position(|&i| i == target) {
                    self.cpus[o].rq.remove(p);
                    if o != c {
                        self.migrate(target, o, c, ts);
                    }
                    break;
                }
            }
        } else {
            next = self.pick(c, ts);
        }
        if cur.is_none() && next.is_none() {
            return;
        }
        if let (Some(x), Some(o)) = (cur, out) {
            match o {
                Out::Sleep => {
                    self.st[x] = St::Sleeping;
                    self.oracle.sleep(x, ts);
                }
                Out::Preempted | Out::Yielded => {
                    self.st[x] = St::Runnable;
                    self.cpus[c].rq.push_back(x);
                }
            }
            self.yield_at[x] = None;
        }
        let prev = self.tid(cur);
        let next_tid = self.tid(next);
        self.emit(
            ts,
            c,
            SimData::Switch {
                prev,
                out: out.unwrap_or(Out::Preempted),
                next: next_tid,
            },
        );
        self.switch_log[c].push((ts, next_tid));
        self.cpus[c].cur = next;
        if let Some(nx) = next {
            self.st[nx] = St::Running;
            self.last_cpu[nx] = c;
            self.cpus[c].slice_left = self.cfg.slice_ticks;
            if self.work[nx] == 0 {
                self.work[nx] = self.burst(nx);
            }
        }
    }

    fn finish(mut self) -> Simulation {
        let start = self.events.first().map(|e| e.ts).unwrap_or(BASE_NS);
        let end = self.events.last().map(|e| e.ts).unwrap_or(BASE_NS);
        // Directed-yield outcomes from the per-CPU switch log.
        for &(ts, c, g) in &self.ple_log {
            let log = &self.switch_log[c];
            let i = log.partition_point(|&(s, _)| s <= ts);
            let vm_tgid = self.threads[self.gangs[g][0]].tgid;
            match log.get(i) {
                Some(&(s, next)) if s - ts <= 50_000 => {
                    if self.gangs[g].iter().any(|&m| self.threads[m].tid == next) {
                        self.oracle.ple.to_sibling += 1;
                        *self
                            .oracle
                            .ple
                            .yield_to_sibling_per_vm
                            .entry(vm_tgid)
                            .or_default() += 1;
                    } else {
                        self.oracle.ple.to_other += 1;
                    }
                }
                _ => self.oracle.ple.no_switch += 1,
            }
        }
        let truth = self.oracle.finish(start, end, &self.st);
        Simulation {
            config: self.cfg,
            threads: self.threads,
            events: self.events,
            truth,
            lost: Vec::new(),
        }
    }
}
