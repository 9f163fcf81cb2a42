//! The latency pass by hand-made traces.

use super::*;
use crate::timeline::test_trace::T;
use schedscope_trace::WakeKind::{Wakeup, WakeupNew, Waking};

fn row(r: &LatencyReport, tid: i32) -> &TaskLatency {
    r.tasks.iter().find(|t| t.tid == tid).unwrap()
}

/// The report of `t`, which the streaming consumer (not told the trace's
/// counts until the end) and the parallel parts must give too.
fn run(t: &mut T) -> LatencyReport {
    t.0.finish();
    let r = compute(&t.0).unwrap();
    same(&r, &streamed(&t.0));
    same(&r, &compute_in_parts(&t.0, 4).unwrap());
    r
}

/// The report of a [`LatencyPass`] fed the events one by one.
fn streamed(t: &Trace) -> LatencyReport {
    let mut p = LatencyPass::new(t.nr_cpus, t.cpu_unknown);
    for ev in &t.events {
        p.push(ev);
    }
    p.finish(t).unwrap()
}

fn same(a: &LatencyReport, b: &LatencyReport) {
    assert_eq!(
        serde_json::to_value(a).unwrap(),
        serde_json::to_value(b).unwrap()
    );
    assert_eq!(a.tasks, b.tasks);
}

#[test]
fn delay_percentiles_by_hand() {
    // 5 is first seen at 100 (a wait of 0), then sleeps and waits
    // 30, 10, 50, 20 after its wakeups: waits {0, 10, 20, 30, 50}.
    // Nearest rank over n = 5: p50 = rank ceil(2.5) = 3rd = 20,
    // p99 = rank ceil(4.95) = 5th = 50.
    let mut t = T::new();
    t.switch(100, 0, 0, "R", 5);
    let mut at = 100;
    for d in [30, 10, 50, 20] {
        t.switch(at + 10, 0, 5, "S", 0)
            .wake(at + 100, 1, 7, Wakeup, 5, 0)
            .switch(at + 100 + d, 0, 0, "R", 5);
        at += 1000;
    }
    let r = run(&mut t);
    let row = row(&r, 5);
    assert_eq!(row.switches, 5);
    let mut d = row.delays_ns.clone();
    d.sort_unstable();
    assert_eq!(d, vec![0, 10, 20, 30, 50]);
    assert_eq!(row.delay_p50_ns, 20);
    assert_eq!(row.delay_p99_ns, 50);
    assert_eq!(row.delay_max_ns, 50);
    // In the JSON, next to the other delay fields; the samples are not.
    let j = serde_json::to_value(row).unwrap();
    assert_eq!(j["delay_p50_ns"], 20);
    assert_eq!(j["delay_p99_ns"], 50);
    assert!(j.get("delays_ns").is_none());
}

#[test]
fn every_wait_is_handed_over_with_its_start_cpus_and_waker() {
    // 5: first seen at 100 (0); sleeps at 200, woken by 7 on CPU 1
    // (target CPU 0) at 300, in at 450 (150); preempted (R+) at 500,
    // in at 530 (a preempted wait of 30, not counted); yields (R) at
    // 600, in on CPU 1 at 650 (50). 6: first seen at 500.
    let mut t = T::new();
    t.switch(100, 0, 0, "R", 5)
        .switch(200, 0, 5, "S", 0)
        .wake(300, 1, 7, Wakeup, 5, 0)
        .switch(450, 0, 0, "R", 5)
        .switch(500, 0, 5, "R+", 6)
        .switch(530, 0, 6, "S", 5)
        .switch(600, 0, 5, "R", 0)
        .switch(650, 1, 0, "R", 5);
    t.0.finish();
    let mut waits = Vec::new();
    let r = compute_with(&t.0, |w| waits.push(*w)).unwrap();
    let five = t.0.strings.find("t5").unwrap();
    let six = t.0.strings.find("t6").unwrap();
    let w = |tid: i32, comm, since: u64, at: u64, start, wake: Option<(u32, i32)>, cpu| Wait {
        tid: Tid(tid),
        comm,
        since: Ts(since),
        switched_in: Ts(at),
        delay_ns: at - since,
        start,
        wake_cpu: wake.map(|x| Cpu(x.0)),
        cpu: Cpu(cpu),
        waker: wake.map(|x| Tid(x.1)),
    };
    use WaitStart::{FirstSeen, RunnableSwitchOut};
    assert_eq!(
        waits,
        vec![
            w(5, five, 100, 100, Some(FirstSeen), None, 0),
            w(5, five, 300, 450, Some(WaitStart::Wakeup), Some((0, 7)), 0),
            w(6, six, 500, 500, Some(FirstSeen), None, 0),
            w(5, five, 500, 530, None, None, 0),
            w(5, five, 600, 650, Some(RunnableSwitchOut), None, 1),
        ]
    );
    // the report is the one compute gives
    let row5 = row(&r, 5);
    assert_eq!(
        (row5.switches, row5.delay_max_ns, row5.delay_total_ns),
        (3, 150, 200)
    );
    assert_eq!((row5.preemptions, row5.preempt_delay_total_ns), (1, 30));
    let mut d = row5.delays_ns.clone();
    d.sort_unstable();
    assert_eq!(d, vec![0, 50, 150]);
    assert_eq!(compute(&t.0).unwrap().tasks, r.tasks);
}

#[test]
fn wakeup_to_switch_in_and_runtime() {
    // Ground truth by hand: 5 sleeps at 200, woken (sched_wakeup) at 300,
    // runs at 450: one switch with delay 150. Waking at 290 is ignored.
    // Run time: 5 ran [100,200) and [450,500) on cpu 0 = 150.
    let r = run(T::new()
        .switch(100, 0, 0, "R", 5)
        .switch(200, 0, 5, "S", 0)
        .wake(290, 1, 7, Waking, 5, 0)
        .wake(300, 0, 7, Wakeup, 5, 0)
        .switch(450, 0, 0, "R", 5)
        .switch(500, 0, 5, "S", 0));
    let t = row(&r, 5);
    // First sight of 5 is a switch-in: one switch of zero delay (as perf).
    assert_eq!(t.switches, 2);
    assert_eq!(t.delay_max_ns, 150);
    assert_eq!(t.delay_max_at_ns, 450);
    assert_eq!(t.delay_max_start_ns, 300);
    assert_eq!(t.delay_avg_ns, 75);
    assert_eq!(t.wakeups, 1);
    assert_eq!(t.runtime_ns, 150);
    assert_eq!(r.context_switch_bugs, 0);
    assert_eq!(r.wakeup_event, "sched:sched_wakeup");
}

#[test]
fn preempted_switch_out_does_not_start_a_wait_but_yield_does() {
    let r = run(T::new()
        .switch(10, 0, 0, "R", 5)
        .switch(20, 0, 5, "R+", 6) // preempted: perf 6.1 does not count
        .switch(40, 0, 6, "R", 5) // 6 yields: waits from 40
        .switch(70, 0, 5, "S", 6));
    assert_eq!(row(&r, 5).switches, 1, "only the first-sight switch-in");
    assert_eq!(row(&r, 5).delay_max_ns, 0);
    // ... but the wait after preemption, [20, 40), is reported apart.
    assert_eq!(row(&r, 5).preemptions, 1);
    assert_eq!(row(&r, 5).preempt_delay_max_ns, 20);
    assert_eq!(row(&r, 6).preemptions, 0, "a yield is not a preemption");
    let six = row(&r, 6);
    assert_eq!(six.switches, 2);
    assert_eq!(six.delay_max_ns, 30);
    assert_eq!(six.runtime_ns, 20);
    assert_eq!(row(&r, 5).runtime_ns, 10 + 30);
    // What started each task's largest wait: 5's only switch is its
    // first sight (its preemption started none); 6 was first seen at
    // 20 (wait 0), then waited 30 from its R switch-out at 40.
    assert_eq!(row(&r, 5).delay_max_start, Some(WaitStart::FirstSeen));
    assert_eq!(six.delay_max_start, Some(WaitStart::RunnableSwitchOut));
    assert_eq!(six.delay_max_start_ns, 40);
    assert_eq!(
        r.waits_by_start,
        WaitStarts {
            runnable_switch_out: 1,
            first_seen: 2,
            ..WaitStarts::default()
        }
    );
}

#[test]
fn the_largest_wait_names_its_start_and_ties_keep_the_first() {
    // 5: woken at 100 (sched_wakeup), in at 130 (30); R switch-out at
    // 150, in at 180 (30, a tie: the wakeup, first, stays the max);
    // sleeps at 200, woken at 300, in at 350 (50, the max).
    // 7: sched_wakeup_new at 10, in at 12. waking is ignored (the trace
    // has sched_wakeup).
    let r = run(T::new()
        .wake(10, 1, 0, WakeupNew, 7, 1)
        .switch(12, 1, 0, "R", 7)
        .switch(50, 0, 0, "R", 6)
        .switch(60, 0, 6, "S", 0)
        .switch(90, 0, 0, "R", 5)
        .switch(95, 0, 5, "S", 0)
        .wake(100, 0, 0, Wakeup, 5, 0)
        .switch(130, 0, 0, "R", 5)
        .switch(150, 0, 5, "R", 0)
        .switch(180, 0, 0, "R", 5)
        .switch(200, 0, 5, "S", 0)
        .wake(290, 0, 0, Waking, 5, 0)
        .wake(300, 0, 0, Wakeup, 5, 0)
        .switch(350, 0, 0, "R", 5));
    let five = row(&r, 5);
    assert_eq!((five.switches, five.delay_max_ns), (4, 50));
    assert_eq!(five.delay_max_start, Some(WaitStart::Wakeup));
    assert_eq!(five.delay_max_start_ns, 300);
    assert_eq!(row(&r, 7).delay_max_start, Some(WaitStart::WakeupNew));
    assert_eq!(
        r.waits_by_start,
        WaitStarts {
            wakeup: 2,
            wakeup_new: 1,
            runnable_switch_out: 1,
            first_seen: 2, // 6 at 50, 5 at 90
            ..WaitStarts::default()
        }
    );
    // the tie: 30 from the wakeup at 100 stays ahead of 30 from the R at 150
    let r = run(T::new()
        .switch(90, 0, 0, "R", 5)
        .switch(95, 0, 5, "S", 0)
        .wake(100, 0, 0, Wakeup, 5, 0)
        .switch(130, 0, 0, "R", 5)
        .switch(150, 0, 5, "R", 0)
        .switch(180, 0, 0, "R", 5));
    let five = row(&r, 5);
    assert_eq!(five.delay_max_ns, 30);
    assert_eq!(five.delay_max_start, Some(WaitStart::Wakeup));
}

#[test]
fn wakeup_of_running_or_unknown_task() {
    let r = run(T::new()
        .switch(10, 0, 0, "R", 5)
        .wake(15, 1, 9, Wakeup, 5, 0) // running: ignored
        .wake(20, 1, 9, WakeupNew, 8, 1) // never seen: waits from 20
        .switch(50, 1, 0, "R", 8));
    assert_eq!(row(&r, 5).wakeups, 0);
    assert_eq!(row(&r, 8).delay_max_ns, 30);
    assert_eq!(row(&r, 8).wakeups, 1);
}

#[test]
fn waking_is_used_only_without_wakeup_events() {
    let r = run(T::new()
        .switch(10, 0, 0, "R", 5)
        .switch(20, 0, 5, "S", 0)
        .wake(30, 1, 9, Waking, 5, 0)
        .switch(45, 0, 0, "R", 5));
    assert_eq!(r.wakeup_event, "sched:sched_waking");
    assert_eq!(row(&r, 5).delay_max_ns, 15);
    assert_eq!(row(&r, 5).delay_max_start, Some(WaitStart::Waking));
    assert_eq!(r.waits_by_start.waking, 1);
}

#[test]
fn context_switch_bug_and_sorting() {
    let r = run(T::new()
        .switch(10, 0, 0, "R", 5)
        .switch(20, 0, 6, "S", 0) // cpu 0 ran 5, not 6
        .wake(25, 1, 0, Wakeup, 6, 0)
        .switch(100, 0, 0, "R", 6));
    assert_eq!(r.context_switch_bugs, 1);
    // 6: charged [10,20) although the CPU said 5 (timehist does the same).
    assert_eq!(row(&r, 6).runtime_ns, 10);
    assert_eq!(r.tasks[0].tid, 6, "largest max delay first");
}

#[test]
fn missing_switch_events_is_an_error() {
    let mut t = T::new();
    t.wake(1, 0, 0, Wakeup, 3, 0);
    t.0.finish();
    let e = compute(&t.0).unwrap_err();
    assert!(e.to_string().contains("sched:sched_switch"), "{e}");
}

#[test]
fn wakings_before_the_first_wakeup_start_no_wait_when_the_trace_has_wakeups() {
    // 5 sleeps at 20; a waking at 30 (ignored: the trace has a
    // sched_wakeup, later, of 6); 5 in at 45 after no counted wakeup: no
    // wait. Counting the waking would give 5 a wait of 15.
    let r = run(T::new()
        .switch(10, 0, 0, "R", 5)
        .switch(20, 0, 5, "S", 0)
        .wake(30, 1, 9, Waking, 5, 0)
        .switch(45, 0, 0, "R", 5)
        .switch(50, 0, 5, "S", 6)
        .switch(60, 0, 6, "S", 0)
        .wake(70, 1, 9, Wakeup, 6, 0)
        .switch(90, 0, 0, "R", 6));
    assert_eq!(r.wakeup_event, "sched:sched_wakeup");
    assert_eq!(row(&r, 5).delay_max_ns, 0);
    assert_eq!(row(&r, 5).switches, 1);
    assert_eq!(row(&r, 6).delay_max_ns, 20);
    assert_eq!(r.waits_by_start.waking, 0);
}

#[test]
fn waits_of_more_than_four_seconds_keep_their_width() {
    // 5 first seen at 100 (0); woken at 1_000, in 5 s later; woken again,
    // in 10 ns later: waits {0, 10, 5e9} (a wait past u32::MAX ns is
    // stored apart from the short ones).
    let long = 5_000_000_000u64;
    let r = run(T::new()
        .switch(100, 0, 0, "R", 5)
        .switch(200, 0, 5, "S", 0)
        .wake(1_000, 1, 7, Wakeup, 5, 0)
        .switch(1_000 + long, 0, 0, "R", 5)
        .switch(2 * long, 0, 5, "S", 0)
        .wake(2 * long + 5, 1, 7, Wakeup, 5, 0)
        .switch(2 * long + 15, 0, 0, "R", 5));
    let row = row(&r, 5);
    let mut d = row.delays_ns.clone();
    d.sort_unstable();
    assert_eq!(d, vec![0, 10, long]);
    assert_eq!(
        (row.delay_max_ns, row.delay_p99_ns, row.delay_p50_ns),
        (long, long, 10)
    );
    assert_eq!(row.delay_total_ns, long + 10);
}
