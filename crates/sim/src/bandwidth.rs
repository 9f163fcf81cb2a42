//! CFS bandwidth control as kernels before per-task throttling do it, with
//! its ground truth for the idle analysis (wasted idle, throttled,
//! imbalance, per CPU).
//!
//! One capped cgroup with one task pinned to each CPU and nothing else to
//! run. The group gets `quota_ticks` of CPU time per period of
//! `period_ticks`, shared by all its tasks. When the period's time is used
//! up the group is throttled: a running member is switched out runnable
//! (`R+`, it is still TASK_RUNNING) and its CPU idles; a member woken
//! meanwhile gets its sched_waking/sched_wakeup but stays queued on its
//! throttled cfs_rq while its CPU idles. At the next period the group is
//! refilled and every queued member is switched in at once. This is the
//! behaviour that a per-CPU "a CPU never idles with a woken task queued"
//! repair would get wrong: the woken members' waits are real.
//!
//! Timing follows [`crate::model`]: wakeups at +0 us of a tick, the refill
//! and context switches at +1 us. The truth is integrated from the model's
//! own state (who runs, who is queued, whether the group is throttled),
//! not from the events: a CPU's idle time is wasted while some task is
//! stuck (queued and throttled, or queued unthrottled behind a running
//! task, which this model never does), throttled when every stuck task is
//! throttled. A task woken unthrottled onto its idle CPU is that CPU's
//! incoming work for the 1 us until its switch-in, not stuck.

use crate::config::{Config, BASE_NS, TICK_NS};
use crate::model::{Kind, Out, Rng, SimData, SimEvent, SimThread, Simulation};
use crate::truth::Truth;
use serde::Serialize;

/// The capped-cgroup setup.
#[derive(Clone, Debug, Serialize)]
pub struct BandwidthSpec {
    /// Random seed.
    pub seed: u64,
    /// CPUs, one capped task pinned to each.
    pub cpus: u32,
    /// Simulated length in ticks of [`TICK_NS`].
    pub ticks: u64,
    /// The group's CPU time per period (ticks).
    pub quota_ticks: u64,
    /// The period (ticks).
    pub period_ticks: u64,
    /// A task's run burst (ticks), inclusive range.
    pub burst: (u32, u32),
    /// A task's sleep (ticks), inclusive range.
    pub sleep: (u32, u32),
}

impl BandwidthSpec {
    /// Two CPUs, 2 s, 10 ms of quota per 100 ms period, bursts of 3-6 ms
    /// and sleeps of 1-4 ms: the group is throttled for most of every
    /// period, some members while running, others woken while throttled.
    /// The run ends just after a refill, so that every throttled wait ends
    /// in the trace.
    pub fn old_kernel(seed: u64) -> BandwidthSpec {
        BandwidthSpec {
            seed,
            cpus: 2,
            ticks: 200_001,
            quota_ticks: 1_000,
            period_ticks: 10_000,
            burst: (300, 600),
            sleep: (100, 400),
        }
    }
}

/// Ground truth of one CPU (ns).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CpuIdleTruth {
    /// Time with nothing running.
    pub idle_ns: u64,
    /// Idle time while some task was stuck.
    pub wasted_idle_ns: u64,
    /// Part of it while every stuck task was throttled.
    pub throttled_ns: u64,
    /// Part of it while some stuck task was not throttled.
    pub imbalance_ns: u64,
}

/// Ground truth of a [`simulate_bandwidth`] run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct BandwidthTruth {
    /// Per CPU.
    pub cpus: Vec<CpuIdleTruth>,
    /// Members switched out because the group was throttled.
    pub throttled_switch_outs: u64,
    /// Members woken while the group was throttled (they stayed queued).
    pub woken_while_throttled: u64,
    /// Shortest time from such a wakeup to the member's switch-in (ns).
    pub min_throttled_wake_wait_ns: Option<u64>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum TaskSt {
    Running,
    Queued,
    Sleeping(u64),
}

/// A state stretch for the truth: [from, to) with, per CPU, whether idle,
/// and whether some task was stuck throttled / stuck unthrottled.
struct Stretch {
    from: u64,
    to: u64,
    idle: Vec<bool>,
    thr: bool,
    imb: bool,
}

/// Simulate `spec`: the events (written by [`crate::ftrace`] and
/// [`crate::perf`] like any [`Simulation`]) and the idle truth up to the
/// last event, where a trace of them ends.
pub fn simulate_bandwidth(spec: &BandwidthSpec) -> (Simulation, BandwidthTruth) {
    let n = spec.cpus as usize;
    let mut rng = Rng(spec.seed);
    let threads: Vec<SimThread> = (0..n)
        .map(|i| SimThread {
            tid: 3000 + i as i32,
            tgid: 3000 + i as i32,
            comm: "capped".to_string(),
            kind: Kind::Worker { proc_: 0 },
        })
        .collect();
    let tid = |i: usize| threads[i].tid;
    let mut st = vec![TaskSt::Sleeping(0); n];
    let mut left = vec![0u32; n];
    let mut woken_thr: Vec<Option<u64>> = vec![None; n];
    let mut used = 0u64;
    let mut throttled = false;
    let mut events = Vec::new();
    let mut stretches: Vec<Stretch> = Vec::new();
    let mut truth = BandwidthTruth::default();
    let snapshot = |st: &[TaskSt], throttled: bool, from: u64, to: u64| Stretch {
        from,
        to,
        idle: st.iter().map(|s| *s != TaskSt::Running).collect(),
        thr: throttled && st.contains(&TaskSt::Queued),
        // A queued member is on its own (idle) CPU: incoming work unless
        // throttled; nothing ever waits behind a running task here.
        imb: false,
    };
    for t in 0..spec.ticks {
        let t0 = BASE_NS + t * TICK_NS;
        // +0 us: wakeups, by the idle task of the member's CPU.
        for i in 0..n {
            if st[i] == TaskSt::Sleeping(t) {
                for data in [
                    SimData::Waking {
                        tid: tid(i),
                        target: i as u32,
                    },
                    SimData::Wakeup {
                        tid: tid(i),
                        target: i as u32,
                    },
                ] {
                    events.push(SimEvent {
                        ts: t0,
                        cpu: i as u32,
                        pid: 0,
                        data,
                    });
                }
                st[i] = TaskSt::Queued;
                if throttled {
                    truth.woken_while_throttled += 1;
                    woken_thr[i] = Some(t0);
                }
            }
        }
        stretches.push(snapshot(&st, throttled, t0, t0 + 1_000));
        // +1 us: the refill, then the switches.
        let t1 = t0 + 1_000;
        if t > 0 && t % spec.period_ticks == 0 {
            used = 0;
            throttled = false;
        }
        for i in 0..n {
            let out = match st[i] {
                TaskSt::Running if left[i] == 0 => Some(Out::Sleep),
                TaskSt::Running if throttled => Some(Out::Preempted),
                _ => None,
            };
            if let Some(out) = out {
                events.push(SimEvent {
                    ts: t1,
                    cpu: i as u32,
                    pid: tid(i),
                    data: SimData::Switch {
                        prev: tid(i),
                        out,
                        next: 0,
                    },
                });
                st[i] = if out == Out::Sleep {
                    TaskSt::Sleeping(t + u64::from(rng.range(spec.sleep)))
                } else {
                    truth.throttled_switch_outs += 1;
                    TaskSt::Queued
                };
            } else if st[i] == TaskSt::Queued && !throttled {
                events.push(SimEvent {
                    ts: t1,
                    cpu: i as u32,
                    pid: 0,
                    data: SimData::Switch {
                        prev: 0,
                        out: Out::Preempted,
                        next: tid(i),
                    },
                });
                if let Some(w) = woken_thr[i].take() {
                    let d = t1 - w;
                    truth.min_throttled_wake_wait_ns =
                        Some(truth.min_throttled_wake_wait_ns.map_or(d, |m| m.min(d)));
                }
                st[i] = TaskSt::Running;
                if left[i] == 0 {
                    left[i] = rng.range(spec.burst);
                }
            }
        }
        stretches.push(snapshot(&st, throttled, t1, t0 + TICK_NS));
        // The tick's CPU time.
        for i in 0..n {
            if st[i] == TaskSt::Running {
                left[i] -= 1;
                used += 1;
            }
        }
        if used >= spec.quota_ticks {
            throttled = true;
        }
    }
    let end = events.last().map_or(BASE_NS, |e| e.ts);
    truth.cpus = vec![CpuIdleTruth::default(); n];
    for s in &stretches {
        let to = s.to.min(end);
        if to <= s.from {
            continue;
        }
        let d = to - s.from;
        for (c, &idle) in s.idle.iter().enumerate() {
            if !idle {
                continue;
            }
            let ct = &mut truth.cpus[c];
            ct.idle_ns += d;
            if s.imb {
                ct.imbalance_ns += d;
                ct.wasted_idle_ns += d;
            } else if s.thr {
                ct.throttled_ns += d;
                ct.wasted_idle_ns += d;
            }
        }
    }
    let mut config = Config::new("bandwidth-old-kernel", spec.seed, spec.cpus, vec![], vec![]);
    config.ticks = spec.ticks;
    let sim = Simulation {
        config,
        threads,
        events,
        truth: Truth {
            start_ns: BASE_NS,
            end_ns: end,
            ..Truth::default()
        },
        lost: Vec::new(),
    };
    (sim, truth)
}
