//! Timeline::build on the simulator's traces (fixtures/sim), whose ground
//! truth the simulator integrated from its own schedule (no kernel, no
//! decoder of ours involved in producing it):
//!
//! * every gang member's Running time equals `member_running_ns` of the
//!   truth file;
//! * thread and CPU views agree: each Running interval of a thread is
//!   covered by a CpuRun of that thread on that CPU, and per-CPU runs tile
//!   time without overlap;
//! * the perf.data and ftrace-text renditions of a scenario give the same
//!   timeline.

use schedscope_analysis::{ThreadState, Timeline};
use schedscope_trace::{Tid, Ts};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sim")
        .join(name)
}

fn timeline(name: &str) -> Timeline {
    let trace = schedscope_parser::load(&fixture(name)).unwrap_or_else(|e| panic!("{e}"));
    Timeline::build(&trace)
}

fn running_ns(tl: &Timeline, tid: i32) -> u64 {
    tl.thread(Tid(tid)).map_or(0, |t| {
        t.intervals
            .iter()
            .filter(|iv| iv.state == ThreadState::Running)
            .map(|iv| iv.end_or(tl.end).since(iv.ts).0)
            .sum()
    })
}

fn check_scenario(scenario: &str) {
    let truth: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture(&format!("{scenario}.truth.json"))).unwrap(),
    )
    .unwrap();
    let tl = timeline(&format!("{scenario}.data"));
    assert_eq!(tl.anomalies, 0, "the simulator's schedule is consistent");

    // Running time per gang member against the simulator's integral.
    let mut compared = 0;
    for gang in truth["gangs"].as_array().unwrap() {
        let members = gang["members"].as_array().unwrap();
        let expect = gang["member_running_ns"].as_array().unwrap();
        for (m, e) in members.iter().zip(expect) {
            let tid = m.as_i64().unwrap() as i32;
            assert_eq!(
                running_ns(&tl, tid),
                e.as_u64().unwrap(),
                "{scenario}: running time of tid {tid}"
            );
            compared += 1;
        }
    }
    assert!(
        compared >= 5,
        "{scenario}: only {compared} members compared"
    );

    // Thread intervals are contiguous; CPU runs tile each CPU's time.
    for t in &tl.threads {
        for (a, b) in t.intervals.pairs() {
            assert_eq!(a.end, Some(b.ts), "{scenario}: tid {} has a gap", t.tid);
        }
    }
    for (cpu, runs) in tl.cpus.iter().enumerate() {
        for (a, b) in runs.pairs() {
            assert_eq!(
                a.end,
                Some(b.ts),
                "{scenario}: cpu {cpu} runs overlap or gap"
            );
        }
    }
    // Every Running interval lies inside a CpuRun of the same tid on its CPU.
    for t in &tl.threads {
        for iv in t
            .intervals
            .iter()
            .filter(|iv| iv.state == ThreadState::Running)
        {
            let cpu = iv.cpu.expect("running intervals carry their CPU").0 as usize;
            let runs = &tl.cpus[cpu];
            let i = runs.partition_point(|r| r.ts <= iv.ts);
            let run = runs
                .get(i.checked_sub(1).expect("a CpuRun starts at or before"))
                .expect("in range");
            assert_eq!(run.tid, t.tid, "{scenario}: cpu {cpu} at {:?}", iv.ts);
            assert!(iv.end_or(tl.end) <= run.end_or_end(tl.end));
        }
    }

    // The text rendition gives the same timeline.
    let text = timeline(&format!("{scenario}.txt"));
    assert_eq!(text.threads.len(), tl.threads.len());
    for t in &tl.threads {
        let u = text.thread(t.tid).unwrap();
        assert_eq!(
            t.intervals, u.intervals,
            "{scenario}: tid {} differs in text",
            t.tid
        );
    }
    assert_eq!(text.cpus, tl.cpus);
}

trait EndOr {
    fn end_or_end(&self, end: Ts) -> Ts;
}

impl EndOr for schedscope_analysis::CpuRun {
    fn end_or_end(&self, end: Ts) -> Ts {
        self.end.unwrap_or(end)
    }
}

#[test]
fn bare_metal_scenario_matches_simulator_truth() {
    check_scenario("bare-metal-s1");
}

#[test]
fn mixed_scenario_matches_simulator_truth() {
    check_scenario("mixed-s1");
}
