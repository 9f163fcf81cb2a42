//! Benchmarks of the gang and lhp analyses (divan).
//!
//!     cargo bench -p schedscope-sim --bench gang_lhp
//!     SCHEDSCOPE_BENCH_FILE=big.data cargo bench -p schedscope-sim --bench gang_lhp
//!
//! The default input is the simulator's `mixed` scenario (2 VMs with PLE and
//! other kvm exits, 2 processes, 4 CPUs) run for 28 s of simulated time:
//! about 1.4M events, written as perf.data and decoded once, so the numbers
//! include every event kind the analyses look at. With
//! `SCHEDSCOPE_BENCH_FILE` a recorded trace is loaded instead.

use schedscope_analysis::{gang, lhp, Context, Options, Timeline};
use schedscope_sim::{perf, simulate, Config};
use schedscope_trace::Trace;
use std::sync::OnceLock;

fn main() {
    divan::main();
}

fn input() -> &'static (Trace, Timeline) {
    static INPUT: OnceLock<(Trace, Timeline)> = OnceLock::new();
    INPUT.get_or_init(|| {
        let trace = match std::env::var_os("SCHEDSCOPE_BENCH_FILE") {
            Some(p) => schedscope_parser::load(std::path::Path::new(&p))
                .unwrap_or_else(|e| panic!("SCHEDSCOPE_BENCH_FILE: {e}")),
            None => {
                let mut cfg = Config::scenario("mixed", 1).expect("scenario");
                cfg.ticks = 2_800_000;
                let bytes = perf::to_perf_data(&simulate(&cfg)).expect("perf.data");
                schedscope_parser::load_bytes("sim-bench.data", &bytes).expect("decode")
            }
        };
        let tl = Timeline::build(&trace);
        eprintln!("bench input: {} events", trace.events.len());
        (trace, tl)
    })
}

fn with_ctx<R>(f: impl Fn(&Context) -> R) -> R {
    let (trace, tl) = input();
    let opts = Options {
        gang_specs: Vec::new(),
        top: 20,
        ..Default::default()
    };
    f(&Context {
        trace,
        timeline: tl,
        opts: &opts,
    })
}

#[divan::bench(sample_count = 10)]
fn gang_analyze(b: divan::Bencher) {
    let n = input().0.events.len();
    b.counter(divan::counter::ItemsCount::new(n))
        .bench(|| with_ctx(|ctx| gang::analyze(divan::black_box(ctx)).map(|r| r.gangs.len())));
}

#[divan::bench(sample_count = 10)]
fn lhp_analyze(b: divan::Bencher) {
    let n = input().0.events.len();
    b.counter(divan::counter::ItemsCount::new(n))
        .bench(|| with_ctx(|ctx| lhp::analyze(divan::black_box(ctx)).map(|r| r.ple.0.is_ok())));
}

/// The bare-metal part alone (most of `lhp` on a recorded trace without
/// kvm events, such as the messaging benchmark file).
#[divan::bench(sample_count = 10)]
fn lhp_waker_preempted(b: divan::Bencher) {
    let n = input().0.events.len();
    b.counter(divan::counter::ItemsCount::new(n)).bench(|| {
        let (trace, tl) = input();
        lhp::waker_preempted(divan::black_box(trace), divan::black_box(tl)).wakeups
    });
}
