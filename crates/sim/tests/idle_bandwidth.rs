//! The idle analysis against the simulator's ground truth for CFS bandwidth
//! control on kernels before per-task throttling (a fully traced trace:
//! no lost-event repair may fire), and the per-CPU lost-event repairs on a
//! trace with this VM's pattern (one CPU's switches out of idle missing).

use schedscope_analysis::Timeline;
use schedscope_render::RenderText;
use schedscope_sim::model::{SimData, SimEvent};
use schedscope_sim::{simulate, simulate_bandwidth, BandwidthSpec, Config, Simulation};

mod common;
use common::{idle_of, load_perf, load_text};

#[test]
fn old_kernel_throttling_matches_the_truth_exactly_with_no_wait_dropped() {
    for seed in [1, 2, 3] {
        let (sim, truth) = simulate_bandwidth(&BandwidthSpec::old_kernel(seed));
        // The scenario does what it is for: members throttled while
        // running, and members woken while throttled that stay queued
        // while their CPU idles, longer than the inference's hold (20 ms).
        assert!(truth.throttled_switch_outs > 10, "seed {seed}");
        assert!(truth.woken_while_throttled > 5, "seed {seed}");
        assert!(
            truth
                .min_throttled_wake_wait_ns
                .is_some_and(|w| w > 20_000_000),
            "seed {seed}: {:?}",
            truth.min_throttled_wake_wait_ns
        );
        for (what, trace) in [("perf.data", load_perf(&sim)), ("ftrace", load_text(&sim))] {
            let r = idle_of(&trace);
            let ctx = format!("seed {seed}, {what}");
            assert_eq!(r.cpus.len(), truth.cpus.len(), "{ctx}");
            for (got, want) in r.cpus.iter().zip(&truth.cpus) {
                assert!(want.throttled_ns > 0, "{ctx}: CPU {}", got.cpu);
                assert_eq!(got.idle_ns, want.idle_ns, "{ctx}: CPU {} idle", got.cpu);
                assert_eq!(
                    got.wasted_idle_ns, want.wasted_idle_ns,
                    "{ctx}: CPU {} wasted",
                    got.cpu
                );
                assert_eq!(
                    got.throttled_ns, want.throttled_ns,
                    "{ctx}: CPU {} throttled",
                    got.cpu
                );
                assert_eq!(
                    got.imbalance_ns, want.imbalance_ns,
                    "{ctx}: CPU {} imbalance",
                    got.cpu
                );
            }
            for c in &r.repairs {
                assert!(!c.lossy, "{ctx}: CPU {} is fully traced", c.cpu);
                assert_eq!(c.unswitched_switch_outs, 0, "{ctx}");
                assert_eq!(c.waits_dropped, 0, "{ctx}: CPU {}", c.cpu);
                assert_eq!(c.woken_left_queued, 0, "{ctx}: CPU {}", c.cpu);
            }
            let held: u64 = r.repairs.iter().map(|c| c.woken_throttled).sum();
            assert_eq!(held, truth.woken_while_throttled, "{ctx}");
            assert_eq!(r.anomalies, 0, "{ctx}");
        }
    }
}

/// `sim` without CPU `cpu`'s switches out of idle, as this VM traces, and
/// how many of the removed switches had a switch on that CPU before and
/// after them (each of these leaves one switch-out that no recorded switch
/// explains: the one after it, of the task it switched in).
fn without_idle_exits(sim: &Simulation, cpu: u32) -> (Simulation, u64) {
    let idle_exit =
        |e: &SimEvent| matches!(e.data, SimData::Switch { prev: 0, next, .. } if next != 0);
    let switches: Vec<&SimEvent> = sim
        .events
        .iter()
        .filter(|e| e.cpu == cpu && matches!(e.data, SimData::Switch { .. }))
        .collect();
    let inner = switches.len().saturating_sub(1);
    let breaks = (1..inner).filter(|&k| idle_exit(switches[k])).count() as u64;
    let mut out = sim.clone();
    out.events.retain(|e| !(e.cpu == cpu && idle_exit(e)));
    (out, breaks)
}

#[test]
fn missing_idle_exits_on_one_cpu_are_repaired_and_reported_there_only() {
    let full = simulate(&Config::scenario("ple-1x", 1).expect("scenario"));
    let (sim, removed) = without_idle_exits(&full, 1);
    // (`removed`: the removed switches that break the CPU's chain)
    assert!(removed > 50, "the scenario idles CPU 1 often: {removed}");
    for (what, trace) in [("perf.data", load_perf(&sim)), ("ftrace", load_text(&sim))] {
        // Every removed switch leaves exactly one switch-out of a task that
        // no recorded switch put there, on CPU 1, out of idle.
        let r = idle_of(&trace);
        let (c0, c1) = (&r.repairs[0], &r.repairs[1]);
        assert!(r.repairs[2..].iter().all(|c| !c.lossy), "{what}");
        assert!(!c0.lossy, "{what}: CPU 0 is fully traced");
        assert_eq!(
            (c0.unswitched_switch_outs, c0.waits_dropped),
            (0, 0),
            "{what}"
        );
        assert!(c1.lossy, "{what}");
        assert_eq!(c1.unswitched_switch_outs, removed, "{what}");
        assert_eq!(c1.idle_exits_missing, removed, "{what}");
        // The timeline sees the same evidence and infers the lost
        // switch-ins on CPU 1 only.
        let tl = Timeline::build(&trace);
        assert_eq!(tl.loss.cpu(0).unswitched_outs, 0, "{what}");
        assert_eq!(tl.loss.cpu(1).idle_exits_missing, removed, "{what}");
        assert_eq!(tl.inferred_switch_ins_by_cpu[0], 0, "{what}");
        assert!(tl.inferred_switch_ins_by_cpu[1] > 0, "{what}");
        let mut text = Vec::new();
        let opts = schedscope_render::TextOptions::default();
        r.render_text(&opts, &mut text).expect("render");
        let text = String::from_utf8(text).expect("utf-8");
        let line = format!(
            "  CPU 1: {removed} switch-outs no recorded switch explains, {removed} of them switches out of idle missing; {} waits dropped",
            c1.waits_dropped
        );
        // (the report groups digits by three)
        assert!(
            text.replace(',', "").contains(&line.replace(',', "")),
            "{text}"
        );
        assert!(!text.contains("  CPU 0:"), "{text}");
    }
    // The complete trace has no evidence anywhere and repairs nothing.
    let r = idle_of(&load_perf(&full));
    assert!(r.repairs.iter().all(|c| !c.lossy && c.waits_dropped == 0));
}
