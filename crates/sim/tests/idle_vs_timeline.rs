//! The idle pass and the thread-state timeline track the same sched_switch
//! chain with two state machines (issue 10 point 5 is to make them one;
//! see `crates/analysis/src/idle/mod.rs`, "Two trackers"). Until they are
//! one, these tests hold them to each other and to the truth:
//!
//! * on every fixture, on each CPU that the trace shows fully traced (no
//!   [`LossEvidence`] there), the idle time the idle pass counts equals the
//!   idle time of the timeline's per-CPU runs, to the nanosecond; on lossy
//!   CPUs they differ by design (two different repairs) and the test
//!   prints both (`--nocapture`);
//! * which repair gets a lossy CPU's idle time right, against the
//!   simulator's ground truth. Each scenario is simulated fully traced,
//!   then CPU 1's switches out of idle are removed (this VM's pattern).
//!   The truth is CPU 1's idle time in the complete trace, where the idle
//!   pass and the timeline agree (checked). On the damaged trace the
//!   timeline's repair (a switch-in inferred when an idle CPU switches out
//!   a Runnable task, from the later of "idle since" and "runnable since";
//!   gang and lhp read it) must recover the truth within 6% + 10 µs. The
//!   idle pass's own figure (it resynchronises to the task an event names
//!   and otherwise counts the CPU idle until its next recorded switch) is
//!   printed beside it, not held to the truth: its CPU 1 figures on real
//!   recordings are kept as they are (issue 15) until the trackers are one.
//!
//! [`LossEvidence`]: schedscope_analysis::timeline::LossEvidence

use schedscope_analysis::idle;
use schedscope_analysis::{Context, Options, Timeline};
use schedscope_sim::model::{SimData, SimEvent};
use schedscope_sim::{simulate, Config, Simulation};
use schedscope_trace::{EventData, Trace};

mod common;
use common::{idle_of, load_perf, load_text};

/// CPU `c`'s idle time from the timeline's runs, counted as the idle pass
/// counts it: from the trace start when the CPU's first switch leaves idle.
fn timeline_idle(trace: &Trace, tl: &Timeline, c: usize) -> u64 {
    let runs: u64 = tl.cpus.get(c).map_or(0, |runs| {
        runs.iter()
            .filter(|r| r.tid.is_idle())
            .map(|r| r.end.unwrap_or(tl.end).0 - r.ts.0)
            .sum()
    });
    let lead_in = trace
        .events
        .iter()
        .find_map(|e| match e.data {
            EventData::Switch { prev_tid, .. } if e.cpu.0 as usize == c => {
                Some(prev_tid.is_idle().then(|| e.ts.0 - trace.start().0))
            }
            _ => None,
        })
        .flatten()
        .unwrap_or(0);
    runs + lead_in
}

/// `sim` without CPU `cpu`'s switches out of idle.
fn without_idle_exits(sim: &Simulation, cpu: u32) -> Simulation {
    let idle_exit =
        |e: &SimEvent| matches!(e.data, SimData::Switch { prev: 0, next, .. } if next != 0);
    let mut out = sim.clone();
    out.events.retain(|e| !(e.cpu == cpu && idle_exit(e)));
    out
}

#[test]
fn the_timeline_repair_recovers_a_lossy_cpus_idle_time() {
    let (mut checked, mut repaired) = (0, 0);
    for name in ["ple-1x", "ple-2x", "bare-metal", "mixed"] {
        for seed in [1, 2, 3] {
            let full = simulate(&Config::scenario(name, seed).expect("scenario"));
            let sim = without_idle_exits(&full, 1);
            for (what, load) in [
                ("perf.data", load_perf as fn(&Simulation) -> Trace),
                ("ftrace", load_text),
            ] {
                let ctx = format!("{name} seed {seed} {what}");
                let (ft, t) = (load(&full), load(&sim));
                let ftl = Timeline::build(&ft);
                let truth = timeline_idle(&ft, &ftl, 1);
                assert_eq!(idle_of(&ft).cpus[1].idle_ns, truth, "{ctx}: complete trace");
                assert!(!ftl.loss.lossy(1), "{ctx}");
                let tl = Timeline::build(&t);
                // (a scenario whose CPU 1 never idles in between loses nothing)
                if tl.loss.lossy(1) && tl.inferred_switch_ins_by_cpu[1] > 0 {
                    repaired += 1;
                }
                let got = timeline_idle(&t, &tl, 1);
                let idle_pass = idle_of(&t).cpus[1].idle_ns;
                eprintln!(
                    "{ctx}: CPU 1 idle truth {truth} ns, timeline {got} ns, idle pass {idle_pass} ns"
                );
                assert!(
                    got.abs_diff(truth) <= truth * 6 / 100 + 10_000,
                    "{ctx}: timeline {got} ns vs truth {truth} ns"
                );
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 24);
    assert!(repaired >= 12, "{repaired} traces with repairs on CPU 1");
}

#[test]
fn idle_time_agrees_with_the_timeline_on_fully_traced_cpus() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let opts = Options::default();
    let (mut traced, mut lossy) = (0, 0);
    for name in [
        "idle/capped.data",
        "idle/hackbench.data",
        "perf/sched_small.data",
        "ftrace/tracefs-sched.txt",
        "ftrace/tracecmd-sched.txt",
        "sim/bare-metal-s1.data",
        "sim/mixed-s1.data",
    ] {
        let trace =
            schedscope_parser::load(&root.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let tl = Timeline::build(&trace);
        let ctx = Context {
            trace: &trace,
            timeline: &tl,
            opts: &opts,
        };
        let r = idle::analyze(&ctx).unwrap_or_else(|e| panic!("{name}: {e}"));
        for cpu in &r.cpus {
            let c = cpu.cpu as usize;
            let from_tl = timeline_idle(&trace, &tl, c);
            if tl.loss.lossy(cpu.cpu) {
                lossy += 1;
                eprintln!(
                    "{name} CPU {c} (lossy: {:?}, {} inferred switch-ins): idle pass {} ns, timeline {} ns",
                    tl.loss.cpu(cpu.cpu),
                    tl.inferred_switch_ins_by_cpu.get(c).copied().unwrap_or(0),
                    cpu.idle_ns,
                    from_tl
                );
            } else {
                traced += 1;
                assert_eq!(
                    cpu.idle_ns, from_tl,
                    "{name} CPU {c}: idle pass vs timeline"
                );
            }
        }
    }
    eprintln!("{traced} fully traced CPUs agree, {lossy} lossy CPUs");
    assert!(traced >= 8 && lossy >= 1, "{traced} traced, {lossy} lossy");
}
