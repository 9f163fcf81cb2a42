//! Benchmarks of `Timeline::build` and the latency pass (divan).
//!
//!     cargo bench -p schedscope-analysis --bench timeline
//!     SCHEDSCOPE_BENCH_FILE=big.data cargo bench -p schedscope-analysis --bench timeline
//!
//! The default input is a generated trace of 1.4M sched_switch / waking /
//! wakeup events (400 tasks on 8 CPUs, deterministic), so the benchmark runs
//! anywhere; with `SCHEDSCOPE_BENCH_FILE` a recorded trace is loaded once
//! (and loading itself is measured too). `timeline_output_floor` only
//! allocates and writes as many intervals and runs as the timeline holds:
//! the part of `timeline_build` that is the kernel faulting in fresh pages.
//!
//! The timeline writes every thread's intervals into one store. In
//! `schedscope report` that store is the decoder's spare slot memory
//! (already faulted in, see `schedscope_trace::mem::Spare`); here only the
//! first build finds the spare of a loaded file, and later iterations
//! allocate the store afresh, so whether an iteration faults its output in
//! depends on whether the allocator hands it the pages the previous one
//! freed. Check with `perf stat -e page-faults` before trusting a
//! difference, and confirm with `SCHEDSCOPE_TIMING=1 schedscope report`.

use schedscope_analysis::{latency, CpuRun, StateInterval, Timeline};
use schedscope_trace::{
    Cpu, Event, EventData, PrevState, StackId, Tid, Trace, TraceFormat, Ts, WakeKind,
};
use std::collections::VecDeque;
use std::sync::OnceLock;

fn main() {
    divan::main();
}

/// A deterministic scheduling trace of about `n` events.
fn synthetic(n: usize) -> Trace {
    const TASKS: i32 = 400;
    const CPUS: u32 = 8;
    let mut t = Trace::new("synthetic", TraceFormat::PerfData);
    let sw = t.intern_name("sched:sched_switch");
    let waking = t.intern_name("sched:sched_waking");
    let wakeup = t.intern_name("sched:sched_wakeup");
    let comm = t.strings.intern("worker");
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut sleeping: Vec<Tid> = (1..=TASKS).map(Tid).collect();
    let mut runq: Vec<VecDeque<Tid>> = vec![VecDeque::new(); CPUS as usize];
    let mut cur = vec![Tid(0); CPUS as usize];
    let mut ts = 1_000_000u64;
    t.events.reserve(n + 2);
    while t.events.len() < n {
        ts += next() % 2000 + 1;
        let cpu = (next() % CPUS as u64) as u32;
        let ev = |name, tid, data| Event {
            ts: Ts(ts),
            cpu: Cpu(cpu),
            tid,
            name,
            stack: StackId::NONE,
            data,
        };
        if next() % 2 == 0 && !sleeping.is_empty() {
            let i = (next() % sleeping.len() as u64) as usize;
            let tid = sleeping.swap_remove(i);
            let target = Cpu((next() % CPUS as u64) as u32);
            for (name, kind) in [(waking, WakeKind::Waking), (wakeup, WakeKind::Wakeup)] {
                let data = EventData::Wakeup {
                    kind,
                    tid,
                    comm,
                    prio: 120,
                    target_cpu: target,
                };
                t.events.push(ev(name, cur[cpu as usize], data));
            }
            runq[target.0 as usize].push_back(tid);
        } else {
            let c = cpu as usize;
            let prev = cur[c];
            let nxt = runq[c].pop_front().unwrap_or(Tid(0));
            let mut prev_state = PrevState::default();
            if !prev.is_idle() {
                if next() % 4 == 0 {
                    prev_state.preempted = true;
                    runq[c].push_back(prev);
                } else {
                    prev_state.bits = PrevState::S;
                    sleeping.push(prev);
                }
            }
            let data = EventData::Switch {
                prev_tid: prev,
                prev_prio: 120,
                prev_state,
                prev_comm: comm,
                next_tid: nxt,
                next_prio: 120,
                next_comm: comm,
            };
            t.events.push(ev(sw, prev, data));
            cur[c] = nxt;
        }
    }
    for e in &t.events {
        let name = t.event_names[e.name.0 as usize].clone();
        *t.events_by_name.entry(name).or_insert(0) += 1;
    }
    t.finish();
    t
}

fn input() -> &'static Trace {
    static INPUT: OnceLock<Trace> = OnceLock::new();
    INPUT.get_or_init(|| match std::env::var_os("SCHEDSCOPE_BENCH_FILE") {
        Some(p) => schedscope_parser::load(std::path::Path::new(&p))
            .unwrap_or_else(|e| panic!("SCHEDSCOPE_BENCH_FILE: {e}")),
        None => synthetic(1_400_000),
    })
}

#[divan::bench(sample_count = 10)]
fn timeline_build(b: divan::Bencher) {
    let trace = input();
    b.counter(divan::counter::ItemsCount::new(trace.events.len()))
        .bench(|| Timeline::build(divan::black_box(trace)));
}

/// The floor under `timeline_build`: allocate and write as many intervals
/// and runs as the timeline of the input holds, nothing else (on a VM, most
/// of it is the kernel faulting in fresh pages).
#[divan::bench(sample_count = 10)]
fn timeline_output_floor(b: divan::Bencher) {
    let trace = input();
    let tl = Timeline::build(trace);
    let sizes: Vec<usize> = tl.threads.iter().map(|t| t.intervals.len()).collect();
    let runs: Vec<usize> = tl.cpus.iter().map(|r| r.len()).collect();
    let iv = tl.threads.iter().find_map(|t| t.intervals.first());
    let run = tl.cpus.iter().find_map(|c| c.first());
    let (Some(iv), Some(run)) = (iv, run) else {
        return;
    };
    let total: usize = sizes.iter().sum();
    b.bench(|| {
        // (one store for all threads' intervals, as the build writes them)
        let ivs: Vec<StateInterval> = vec![iv; total];
        let runs: Vec<Vec<CpuRun>> = runs.iter().map(|&n| vec![run; n]).collect();
        (ivs, runs)
    });
}

#[divan::bench(sample_count = 10)]
fn latency_compute(b: divan::Bencher) {
    let trace = input();
    b.counter(divan::counter::ItemsCount::new(trace.events.len()))
        .bench(|| latency::compute(divan::black_box(trace)));
}

#[divan::bench(sample_count = 5)]
fn load_file(b: divan::Bencher) {
    let Some(p) = std::env::var_os("SCHEDSCOPE_BENCH_FILE") else {
        return;
    };
    b.bench(|| schedscope_parser::load(std::path::Path::new(&p)).map(|t| t.events.len()));
}
