//! The largest wait's upper bound on a lossy trace counts a switch-in from
//! a sleep as a wait only as far back as the first uncertain instant
//! within the sleep (a lost wakeup lies where events are missing), on a
//! hand-made text trace whose windows are known by construction:
//!
//! * CPU 1 shows loss: `a` (101) is switched out at 100.700 although the
//!   CPU's last recorded switch left it idle at 100.600; `a` had been
//!   woken at 100.550, so the rule repairs its switch-in over
//!   [100.600, 100.700].
//! * `z` (300) sleeps on CPU 0 from 100.010 and is switched in at 100.400
//!   with no recorded wakeup: before any uncertain window, so no wakeup
//!   of it can have been lost and its 390 ms sleep is no wait.
//! * `w` (301) sleeps on CPU 0 from 100.020 and is switched in at 100.800
//!   with no recorded wakeup: its sleep overlaps CPU 1's window from
//!   100.600, so its wait may have begun there, 200 ms before.

const TRACE: &str = "\
# tracer: nop
#
          <idle>-0       [000] d..2.   100.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=z next_pid=300 next_prio=120
          <idle>-0       [001] d..2.   100.000000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=102 next_prio=120
               z-300     [000] d..2.   100.010000: sched_switch: prev_comm=z prev_pid=300 prev_prio=120 prev_state=S ==> next_comm=w next_pid=301 next_prio=120
               w-301     [000] d..2.   100.020000: sched_switch: prev_comm=w prev_pid=301 prev_prio=120 prev_state=S ==> next_comm=x next_pid=200 next_prio=120
               x-200     [000] d..2.   100.400000: sched_switch: prev_comm=x prev_pid=200 prev_prio=120 prev_state=S ==> next_comm=z next_pid=300 next_prio=120
               z-300     [000] d..2.   100.550000: sched_wakeup: comm=a pid=101 prio=120 target_cpu=001
               b-102     [001] d..2.   100.600000: sched_switch: prev_comm=b prev_pid=102 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
               a-101     [001] d..2.   100.700000: sched_switch: prev_comm=a prev_pid=101 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
               z-300     [000] d..2.   100.800000: sched_switch: prev_comm=z prev_pid=300 prev_prio=120 prev_state=S ==> next_comm=w next_pid=301 next_prio=120
               w-301     [000] d..2.   100.900000: sched_switch: prev_comm=w prev_pid=301 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
";

const MS: u64 = 1_000_000;

#[test]
fn a_sleep_no_uncertain_window_overlaps_is_no_wait() {
    let trace = schedscope_parser::load_bytes("lost-wakeup.txt", TRACE.as_bytes()).unwrap();
    let tl = schedscope_analysis::Timeline::build(&trace);
    // The repair the comments describe: a's switch-in on CPU 1, by the rule.
    let r: Vec<_> = tl
        .inferred
        .iter()
        .map(|r| (r.cpu.0, r.earliest.0, r.latest.0))
        .collect();
    assert_eq!(r, [(1, 100_600 * MS, 100_700 * MS)]);
    let mut l = schedscope_analysis::latency::compute(&trace).expect("switches present");
    l.add_loss_bounds(&trace, &tl);
    // a's measured wait: woken 100.550, its switch-in placed at 100.600
    // by nothing perf's rules see (the pass pairs it with no switch-in).
    let hi = l.max_delay_ns_max.expect("the trace shows loss");
    // w's wait from CPU 1's first uncertain instant (100.600) to its
    // switch-in (100.800) is the largest the loss allows; z's sleep
    // (390 ms) and w's whole sleep (780 ms) are not waits.
    assert_eq!(hi, 200 * MS, "{l:?}");
    assert!(l.max_delay_ns_min.unwrap() <= hi);
}
