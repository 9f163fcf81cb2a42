//! The CFS-bandwidth refill as evidence for a lost switch-in
//! (docs/design.md, "Lost events"), on hand-made traces whose truth is
//! known by construction: a burner `x` (pid 500) capped at half a CPU,
//! 100 ms periods. It runs 50 ms, is held off (switched out `R+` to idle)
//! until the next refill, and is switched back in a few tens of
//! microseconds after it. Its first four refills happen on CPU 0, whose
//! switches are all recorded; then it runs on CPU 1, which (like the
//! development VM's) does not trace its switches out of idle: the
//! switch-in after its hold-off at 100.550 s is lost, and the next
//! switch-out at 100.650 s is all the trace shows. The truth: CPU 1 idled
//! from 100.550 s to the refill at 100.600 s.

use schedscope_analysis::timeline::Evidence;
use schedscope_analysis::Timeline;

const MS: u64 = 1_000_000;
const T0: u64 = 100_000 * MS;

fn switch(cpu: u32, at_us: u64, prev: (&str, u32, &str), next: (&str, u32)) -> String {
    let (pc, pp, st) = prev;
    let (nc, np) = next;
    let who = if pp == 0 {
        "<idle>".to_string()
    } else {
        pc.to_string()
    };
    format!(
        "{who:>16}-{pp:<7} [{cpu:03}] d..2. {:>6}.{:06}: sched_switch: prev_comm={pc} prev_pid={pp} \
         prev_prio=120 prev_state={st} ==> next_comm={nc} next_pid={np} next_prio=120\n",
        100 + at_us / 1_000_000,
        at_us % 1_000_000
    )
}

/// The trace: `x`'s recorded refills on CPU 0 at the given offsets (us
/// after 100 s), each after a hold-off 50 ms before it; then the CPU 1
/// part described above.
fn trace(refills_us: &[u64]) -> String {
    let idle = |c: u32| if c == 0 { "swapper/0" } else { "swapper/1" };
    let mut t = String::from("# tracer: nop\n#\n");
    t += &switch(0, 0, (idle(0), 0, "R"), ("x", 500));
    for &r in refills_us {
        t += &switch(0, r - 50_000, ("x", 500, "R+"), (idle(0), 0));
        t += &switch(0, r, (idle(0), 0, "R"), ("x", 500));
    }
    // To CPU 1: held off on CPU 0, refilled (recorded) on CPU 1.
    t += &switch(0, 450_000, ("x", 500, "R+"), (idle(0), 0));
    t += &switch(1, 500_025, (idle(1), 0, "R"), ("x", 500));
    t += &switch(1, 550_000, ("x", 500, "R+"), (idle(1), 0));
    // lost: swapper/1 -> x at about 100.600025
    t += &switch(1, 650_000, ("x", 500, "R+"), (idle(1), 0));
    t += &switch(0, 700_000, (idle(0), 0, "R"), ("y", 600));
    t += &switch(0, 700_500, ("y", 600, "S"), (idle(0), 0));
    t
}

fn repair(text: &str) -> (Timeline, schedscope_analysis::timeline::InferredSwitchIn) {
    let trace = schedscope_parser::load_bytes("refill.txt", text.as_bytes()).unwrap();
    let tl = Timeline::build(&trace);
    assert_eq!(
        tl.inferred.len(),
        1,
        "one lost switch-in: {:?}",
        tl.inferred
    );
    let r = tl.inferred[0];
    assert_eq!((r.cpu.0, r.tid.0), (1, 500));
    // The bounds are the rule's whatever the estimate.
    assert_eq!((r.earliest.0, r.latest.0), (T0 + 550 * MS, T0 + 650 * MS));
    (tl, r)
}

#[test]
fn a_lost_switch_in_after_a_hold_off_is_placed_at_the_next_refill() {
    // Refills at 100.100020, .200030, .300010, .400015 and .500025.
    let (tl, r) = repair(&trace(&[100_020, 200_030, 300_010, 400_015]));
    assert_eq!(r.evidence, Evidence::Refill);
    let truth = T0 + 600 * MS;
    assert!(
        r.ts.0.abs_diff(truth) < 100_000,
        "placed at {} ns, true refill {truth}",
        r.ts.0
    );
    // CPU 1 idles from the hold-off to the estimate, then runs x.
    let runs: Vec<_> = tl.cpus[1].iter().map(|run| (run.ts.0, run.tid.0)).collect();
    assert_eq!(
        runs,
        [
            (T0 + 500_025_000, 500),
            (T0 + 550 * MS, 0),
            (r.ts.0, 500),
            (T0 + 650 * MS, 0)
        ]
    );
}

#[test]
fn without_a_regular_grid_the_rule_places_it() {
    // Two recorded refills only (one on CPU 0, one on CPU 1): no grid.
    let (_, r) = repair(&trace(&[400_015]));
    assert_eq!(r.evidence, Evidence::Rule);
    assert_eq!(r.ts.0, T0 + 550 * MS, "as early as possible");
    // Refills 100 ms and then 150 ms apart: not whole periods (a refill
    // from runtime a sibling returned), so the grid is not trusted.
    let (_, r) = repair(&trace(&[100_020, 200_030, 350_010]));
    assert_eq!(r.evidence, Evidence::Rule);
}
