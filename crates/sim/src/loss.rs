//! Lost events injected into a finished [`Simulation`], with its truth
//! untouched (the truth is the model's, not the trace's): the two ways real
//! recordings lose scheduler events, and the event that lets an analysis
//! place what was lost.
//!
//! * [`drop_spans`]: like a full perf ring or tracefs buffer, contiguous
//!   spans of one CPU's events are dropped, each leaving one loss record
//!   (PERF_RECORD_LOST in perf.data, `CPU:N [LOST K EVENTS]` in text).
//! * [`drop_idle_exits`]: like this project's VM, whose CPU 1 never traces
//!   its switches out of idle: those switches are missing, with no record.
//! * [`with_stat_runtime`]: `sched:sched_stat_runtime` as CFS emits it, at
//!   every scheduler tick and every switch-out of a running task, with the
//!   CPU time since the task's previous one (or its switch-in).

use crate::model::{Rng, SimData, SimEvent, Simulation};

/// One loss record (see [`Simulation::lost`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimLost {
    /// When the record is written: the time of the first event the CPU
    /// kept after the span.
    pub ts: u64,
    /// The CPU whose events were dropped.
    pub cpu: u32,
    /// How many.
    pub n: u64,
}

/// `sim` with a `sched_stat_runtime` of the running task on each CPU every
/// `tick_ns` (at `+5 us` of that instant, between the model's phases) and
/// just before each of its switch-outs, each with the CPU time since the
/// previous one or since the switch-in.
pub fn with_stat_runtime(sim: &Simulation, tick_ns: u64) -> Simulation {
    let n = sim.config.cpus as usize;
    let mut cur: Vec<Option<(i32, u64)>> = vec![None; n];
    let mut out = Vec::with_capacity(sim.events.len() * 2);
    let Some(first) = sim.events.first().map(|e| e.ts) else {
        return sim.clone();
    };
    let tick = tick_ns.max(1);
    let mut next_tick = first - first % tick + tick + 5_000;
    let flush_ticks = |upto: u64,
                       next_tick: &mut u64,
                       cur: &mut Vec<Option<(i32, u64)>>,
                       out: &mut Vec<SimEvent>| {
        while *next_tick < upto {
            for (c, slot) in cur.iter_mut().enumerate() {
                if let Some((tid, since)) = slot {
                    if *next_tick > *since {
                        out.push(SimEvent {
                            ts: *next_tick,
                            cpu: c as u32,
                            pid: *tid,
                            data: SimData::StatRuntime {
                                runtime: *next_tick - *since,
                            },
                        });
                        *since = *next_tick;
                    }
                }
            }
            *next_tick += tick;
        }
    };
    for ev in &sim.events {
        flush_ticks(ev.ts, &mut next_tick, &mut cur, &mut out);
        if let SimData::Switch { prev, next, .. } = ev.data {
            let c = ev.cpu as usize;
            if c >= cur.len() {
                cur.resize(c + 1, None);
            }
            if let Some((tid, since)) = cur[c] {
                if tid == prev && ev.ts > since {
                    out.push(SimEvent {
                        ts: ev.ts,
                        cpu: ev.cpu,
                        pid: prev,
                        data: SimData::StatRuntime {
                            runtime: ev.ts - since,
                        },
                    });
                }
            }
            cur[c] = (next != 0).then_some((next, ev.ts));
        }
        out.push(*ev);
    }
    Simulation {
        events: out,
        ..sim.clone()
    }
}

/// Whether `e` is a switch out of idle.
fn idle_exit(e: &SimEvent) -> bool {
    matches!(e.data, SimData::Switch { prev: 0, next, .. } if next != 0)
}

/// `sim` without CPU `cpu`'s switches out of idle (this VM's pattern: no
/// loss record says so). Returns how many were dropped.
pub fn drop_idle_exits(sim: &Simulation, cpu: u32) -> (Simulation, u64) {
    let before = sim.events.len();
    let events: Vec<SimEvent> = sim
        .events
        .iter()
        .filter(|e| !(e.cpu == cpu && idle_exit(e)))
        .copied()
        .collect();
    let dropped = (before - events.len()) as u64;
    (
        Simulation {
            events,
            ..sim.clone()
        },
        dropped,
    )
}

/// `sim` with about `fraction` of CPU `cpu`'s events dropped in contiguous
/// spans of 20 to 200 of its events (a full ring), each followed by a loss
/// record at the CPU's next kept event. Neither the first nor the last
/// event of the trace is dropped (the trace's span stays the truth's).
pub fn drop_spans(sim: &Simulation, cpu: u32, fraction: f64, seed: u64) -> Simulation {
    let mut rng = Rng(seed ^ 0x1055_1055);
    let on_cpu: Vec<usize> = (0..sim.events.len())
        .filter(|&i| sim.events[i].cpu == cpu)
        .collect();
    let total = on_cpu.len();
    let target = (total as f64 * fraction.clamp(0.0, 0.9)) as usize;
    let mut drop = vec![false; sim.events.len()];
    let mut dropped = 0;
    let last = sim.events.len().saturating_sub(1);
    let mut guard = 0;
    while dropped < target && total > 2 && guard < 100_000 {
        guard += 1;
        let len = (rng.range((20, 200)) as usize).min(target - dropped).max(1);
        let start = 1 + (rng.next() as usize) % (total - 1);
        let end = (start + len).min(total - 1);
        for &i in &on_cpu[start..end] {
            if !drop[i] && i != 0 && i != last {
                drop[i] = true;
                dropped += 1;
            }
        }
    }
    let mut events = Vec::with_capacity(sim.events.len() - dropped);
    let mut lost = Vec::new();
    let mut pending = 0u64;
    for (i, ev) in sim.events.iter().enumerate() {
        if drop[i] {
            pending += 1;
            continue;
        }
        if ev.cpu == cpu && pending > 0 {
            lost.push(SimLost {
                ts: ev.ts,
                cpu,
                n: pending,
            });
            pending = 0;
        }
        events.push(*ev);
    }
    Simulation {
        events,
        lost,
        ..sim.clone()
    }
}
