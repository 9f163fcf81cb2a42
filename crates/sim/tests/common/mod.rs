//! Loading a simulation's events through both input formats (shared by the
//! simulator's test files).

use schedscope_sim::{ftrace, perf, Simulation};
use schedscope_trace::Trace;

/// The simulation written as ftrace text and decoded.
pub fn load_text(sim: &Simulation) -> Trace {
    let text = ftrace::to_ftrace_text(sim);
    schedscope_parser::load_bytes("sim.txt", text.as_bytes()).expect("decode simulated ftrace text")
}

/// The simulation written as perf.data and decoded.
pub fn load_perf(sim: &Simulation) -> Trace {
    let bytes = perf::to_perf_data(sim).expect("write perf.data");
    schedscope_parser::load_bytes("sim.data", &bytes).expect("decode simulated perf.data")
}

/// The idle section of `trace`, on its timeline.
#[allow(dead_code)] // (not every test file that shares this module uses it)
pub fn idle_of(trace: &Trace) -> schedscope_analysis::idle::IdleReport {
    let tl = schedscope_analysis::Timeline::build(trace);
    let opts = schedscope_analysis::Options::default();
    schedscope_analysis::idle::analyze(&schedscope_analysis::Context {
        trace,
        timeline: &tl,
        opts: &opts,
    })
    .expect("switches and wakeups present")
}
