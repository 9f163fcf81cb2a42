//! The ground truth: every number the gang and lhp analyses report, computed
//! by the simulator from its own schedule while it runs.
//!
//! This deliberately shares no code or method with the analyses: instead of
//! rebuilding state intervals from events, it integrates the simulator's own
//! per-thread state arrays over each constant stretch of time (the
//! simulator calls [`Oracle::advance`] before every batch of state changes),
//! and classifies PLE exits from the live state, not from a timeline.

use serde::Serialize;
use std::collections::BTreeMap;

/// A thread's scheduling state as the simulator knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum St {
    /// Not created yet (before its sched_wakeup_new).
    New,
    /// On a CPU.
    Running,
    /// Waiting for a CPU.
    Runnable,
    /// Sleeping (halted vCPU, timer sleep, or waiting for a lock).
    Sleeping,
}

/// Ground truth of one gang.
#[derive(Clone, Debug, Serialize)]
pub struct GangTruth {
    /// `vm` or `process`.
    pub kind: &'static str,
    /// The process id.
    pub tgid: i32,
    /// Member tids, ascending.
    pub members: Vec<i32>,
    /// time(all alive members running) / time(any running).
    pub corun_ratio: f64,
    /// Time with 1 <= running < active (ns).
    pub fragmented_ns: u64,
    /// Index k = time with exactly k members running (ns).
    pub running_hist_ns: Vec<u64>,
    /// time(i and j running) / time(i or j running).
    pub pair_corun: Vec<Vec<f64>>,
    /// Time any member ran (ns).
    pub any_running_ns: u64,
    /// Time all alive members ran (ns).
    pub all_running_ns: u64,
    /// Run time per member (ns).
    pub member_running_ns: Vec<u64>,
    /// The longest fragmented episode: (start ns, duration ns), earliest on ties.
    pub longest_episode: Option<(u64, u64)>,
    /// Time with at least two members running or runnable (ns). Not in
    /// the stored truth files (they predate it).
    #[serde(skip)]
    pub demand_ns: u64,
    /// time(running = active, active >= 2) / `demand_ns`; 0 when
    /// `demand_ns` is 0. Not in the stored truth files.
    #[serde(skip)]
    pub demand_corun_ratio: f64,
}

/// PLE counts: `[total, sibling_preempted, all_running, siblings_idle]`.
pub type PleCounts = [u64; 4];

/// Ground truth of the pause-loop exits.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PleTruth {
    /// All VMs.
    pub counts: PleCounts,
    /// Per VM tgid.
    pub per_vm: BTreeMap<i32, PleCounts>,
    /// Per vCPU tid.
    pub per_vcpu: BTreeMap<i32, PleCounts>,
    /// Directed yields to a sibling within 50 us, per VM tgid.
    pub yield_to_sibling_per_vm: BTreeMap<i32, u64>,
    /// First switch on the exit's CPU within 50 us put a sibling on it.
    pub to_sibling: u64,
    /// ... put another task (or idle) on it.
    pub to_other: u64,
    /// No switch on that CPU within 50 us.
    pub no_switch: u64,
}

/// One (waker, wakee) pair.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PairTruth {
    /// Waker tid.
    pub waker: i32,
    /// Wakee tid.
    pub wakee: i32,
    /// Wakeups.
    pub wakeups: u64,
    /// Sleep time while the waker was Runnable (ns).
    pub ns: u64,
}

/// One wakee process.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ProcTruth {
    /// tgid.
    pub tgid: i32,
    /// Wakeups of its threads by a task.
    pub wakeups: u64,
    /// Their total sleep (ns).
    pub sleep_ns: u64,
    /// Part of it with the waker Runnable (ns).
    pub ns: u64,
}

/// Ground truth of waker-preempted time.
#[derive(Clone, Debug, Default, Serialize)]
pub struct WakerTruth {
    /// Sum (ns).
    pub total_ns: u64,
    /// Wakeups by a task (sleep start known).
    pub wakeups: u64,
    /// Per pair (all pairs, also those with zero time).
    pub pairs: Vec<PairTruth>,
    /// Per wakee process.
    pub processes: Vec<ProcTruth>,
}

/// Everything the analyses should report for a simulated trace.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Truth {
    /// First event time (ns).
    pub start_ns: u64,
    /// Last event time (ns).
    pub end_ns: u64,
    /// Gangs: VMs in order, then processes in order.
    pub gangs: Vec<GangTruth>,
    /// Pause-loop exits.
    pub ple: PleTruth,
    /// Exit counts per VM tgid and exit code (VMX basic reason / SVM code).
    pub exits: BTreeMap<i32, BTreeMap<u32, u64>>,
    /// Waker-preempted time.
    pub waker_preempted: WakerTruth,
    /// Work done per gang member class: CPU time delivered to each gang (ns), same order as `gangs`.
    pub gang_cpu_ns: Vec<u64>,
}

/// Accumulators of one gang.
struct GangAcc {
    members: Vec<usize>,
    hist: Vec<u64>,
    any: u64,
    all: u64,
    frag: u64,
    demand: u64,
    demand_met: u64,
    both: Vec<Vec<u64>>,
    run: Vec<u64>,
    episode: Option<(u64, u64)>,
    longest: Option<(u64, u64)>,
}

/// The running integrator.
pub struct Oracle {
    acc_ts: u64,
    /// Integrate nothing past this time (the trace's last event).
    pub clip: u64,
    gangs: Vec<(GangAcc, &'static str, i32, Vec<i32>)>,
    runnable_ns: Vec<u64>,
    sleep_snap: Vec<Option<(u64, Vec<u64>)>>,
    pairs: BTreeMap<(i32, i32), (u64, u64)>,
    procs: BTreeMap<i32, (u64, u64, u64)>,
    /// PLE truth (filled by the simulator).
    pub ple: PleTruth,
    /// Exit counts (filled by the simulator).
    pub exits: BTreeMap<i32, BTreeMap<u32, u64>>,
}

impl Oracle {
    /// Start integrating at `start` for `nthreads` threads and the given gangs
    /// (kind, tgid, member indices, member tids).
    pub fn new(
        start: u64,
        nthreads: usize,
        gangs: Vec<(&'static str, i32, Vec<usize>, Vec<i32>)>,
    ) -> Oracle {
        Oracle {
            acc_ts: start,
            clip: u64::MAX,
            gangs: gangs
                .into_iter()
                .map(|(kind, tgid, members, tids)| {
                    let n = members.len();
                    (
                        GangAcc {
                            members,
                            hist: vec![0; n + 1],
                            any: 0,
                            all: 0,
                            frag: 0,
                            demand: 0,
                            demand_met: 0,
                            both: vec![vec![0; n]; n],
                            run: vec![0; n],
                            episode: None,
                            longest: None,
                        },
                        kind,
                        tgid,
                        tids,
                    )
                })
                .collect(),
            runnable_ns: vec![0; nthreads],
            sleep_snap: vec![None; nthreads],
            pairs: BTreeMap::new(),
            procs: BTreeMap::new(),
            ple: PleTruth::default(),
            exits: BTreeMap::new(),
        }
    }

    /// Integrate the states `st` (constant since the last call) up to `to`.
    pub fn advance(&mut self, to: u64, st: &[St]) {
        let to = to.min(self.clip);
        let dur = to.saturating_sub(self.acc_ts);
        if dur == 0 {
            return;
        }
        let from = self.acc_ts;
        self.acc_ts = to;
        for (i, s) in st.iter().enumerate() {
            if *s == St::Runnable {
                self.runnable_ns[i] += dur;
            }
        }
        for (g, ..) in &mut self.gangs {
            let mut running = 0;
            let mut active = 0;
            let mut alive = 0;
            for &m in &g.members {
                match st[m] {
                    St::Running => {
                        running += 1;
                        active += 1;
                        alive += 1;
                    }
                    St::Runnable => {
                        active += 1;
                        alive += 1;
                    }
                    St::Sleeping => alive += 1,
                    St::New => {}
                }
            }
            g.hist[running] += dur;
            if active >= 2 {
                g.demand += dur;
                if running == active {
                    g.demand_met += dur;
                }
            }
            if running >= 1 {
                g.any += dur;
                if running == alive {
                    g.all += dur;
                }
            }
            for a in 0..g.members.len() {
                if st[g.members[a]] != St::Running {
                    continue;
                }
                g.run[a] += dur;
                for b in 0..g.members.len() {
                    if b != a && st[g.members[b]] == St::Running {
                        g.both[a][b] += dur;
                    }
                }
            }
            let fragmented = running >= 1 && running < active;
            if fragmented {
                g.frag += dur;
                g.episode = match g.episode {
                    Some((s, _)) => Some((s, to)),
                    None => Some((from, to)),
                };
            } else if let Some((s, e)) = g.episode.take() {
                Self::offer(&mut g.longest, s, e);
            }
        }
    }

    fn offer(longest: &mut Option<(u64, u64)>, s: u64, e: u64) {
        let d = e - s;
        if longest.is_none_or(|(ls, ld)| d > ld || (d == ld && s < ls)) {
            *longest = Some((s, d));
        }
    }

    /// Thread `i` went to sleep now (call right after [`Oracle::advance`]).
    pub fn sleep(&mut self, i: usize, now: u64) {
        self.sleep_snap[i] = Some((now, self.runnable_ns.clone()));
    }

    /// Thread `i` (tid `wakee`, process `tgid`) was woken now by thread
    /// index `waker` (tid `waker_tid`), or by the idle task (`None`).
    pub fn wake(&mut self, i: usize, wakee: i32, tgid: i32, waker: Option<(usize, i32)>, now: u64) {
        let Some((t0, snap)) = self.sleep_snap[i].take() else {
            return;
        };
        let Some((w, wtid)) = waker else {
            return;
        };
        let ns = self.runnable_ns[w] - snap[w];
        let p = self.pairs.entry((wtid, wakee)).or_default();
        p.0 += 1;
        p.1 += ns;
        let q = self.procs.entry(tgid).or_default();
        q.0 += 1;
        q.1 += now - t0;
        q.2 += ns;
    }

    /// Finish at `end` (the last event's time) with the final states.
    pub fn finish(mut self, start: u64, end: u64, st: &[St]) -> Truth {
        self.advance(end, st);
        let mut gangs = Vec::new();
        let mut cpu = Vec::new();
        for (mut g, kind, tgid, tids) in self.gangs {
            if let Some((s, e)) = g.episode.take() {
                Self::offer(&mut g.longest, s, e);
            }
            let n = g.members.len();
            let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
            let pair = (0..n)
                .map(|a| {
                    (0..n)
                        .map(|b| {
                            let both = if a == b { g.run[a] } else { g.both[a][b] };
                            ratio(both, g.run[a] + g.run[b] - both)
                        })
                        .collect()
                })
                .collect();
            cpu.push(g.run.iter().sum());
            gangs.push(GangTruth {
                kind,
                tgid,
                members: tids,
                corun_ratio: ratio(g.all, g.any),
                fragmented_ns: g.frag,
                running_hist_ns: g.hist,
                pair_corun: pair,
                any_running_ns: g.any,
                all_running_ns: g.all,
                member_running_ns: g.run,
                longest_episode: g.longest,
                demand_ns: g.demand,
                demand_corun_ratio: ratio(g.demand_met, g.demand),
            });
        }
        let pairs: Vec<PairTruth> = self
            .pairs
            .iter()
            .map(|(&(waker, wakee), &(wakeups, ns))| PairTruth {
                waker,
                wakee,
                wakeups,
                ns,
            })
            .collect();
        Truth {
            start_ns: start,
            end_ns: end,
            gangs,
            ple: self.ple,
            exits: self.exits,
            waker_preempted: WakerTruth {
                total_ns: pairs.iter().map(|p| p.ns).sum(),
                wakeups: pairs.iter().map(|p| p.wakeups).sum(),
                pairs,
                processes: self
                    .procs
                    .iter()
                    .map(|(&tgid, &(wakeups, sleep_ns, ns))| ProcTruth {
                        tgid,
                        wakeups,
                        sleep_ns,
                        ns,
                    })
                    .collect(),
            },
            gang_cpu_ns: cpu,
        }
    }
}
