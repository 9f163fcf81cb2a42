//! Unit tests of the timeline build and its repairs.

use super::test_trace::T;
use super::*;
use schedscope_trace::WakeKind;

/// (start, end, state, cpu) of each interval of `tid`.
fn spans(tl: &Timeline, tid: i32) -> Vec<(u64, Option<u64>, ThreadState, Option<u32>)> {
    tl.thread(Tid(tid))
        .unwrap()
        .intervals
        .iter()
        .map(|iv| (iv.ts.0, iv.end.map(|e| e.0), iv.state, iv.cpu.map(|c| c.0)))
        .collect()
}

fn assert_contiguous(tl: &Timeline) {
    for t in &tl.threads {
        for (a, b) in t.intervals.pairs() {
            assert_eq!(a.end, Some(b.ts), "tid {} not contiguous", t.tid);
            assert!(a.ts < b.ts, "tid {} has an empty interval", t.tid);
        }
        if let Some(last) = t.intervals.last() {
            assert_eq!(last.end, None);
        }
    }
}

use ThreadState::*;

#[test]
fn wakeup_run_sleep_cycle() {
    let tl = T::new()
        .switch(100, 0, 0, "R", 5) // 5 first seen running on cpu 0
        .switch(200, 0, 5, "S", 0)
        .wake(300, 1, 7, WakeKind::Waking, 5, 0)
        .wake(305, 0, 7, WakeKind::Wakeup, 5, 0) // second of the pair: ignored
        .switch(400, 0, 0, "R", 5)
        .switch(450, 0, 5, "D", 0)
        .build();
    assert_eq!(
        spans(&tl, 5),
        vec![
            (100, Some(200), Running, Some(0)),
            (200, Some(300), Sleeping, None),
            (300, Some(400), Runnable, Some(0)),
            (400, Some(450), Running, Some(0)),
            (450, None, Blocked, None),
        ]
    );
    let woken = &tl.thread(Tid(5)).unwrap().intervals.to_vec()[2];
    assert_eq!(woken.waker, Some(Tid(7)));
    assert!(!woken.preempted);
    assert_eq!(tl.anomalies, 0);
    assert_contiguous(&tl);
    assert_eq!(tl.state_at(Tid(5), Ts(299)), Sleeping);
    assert_eq!(tl.state_at(Tid(5), Ts(300)), Runnable);
    assert_eq!(tl.state_at(Tid(5), Ts(99)), Unknown);
    assert_eq!(tl.state_at(Tid(5), Ts(10_000)), Blocked);
}

#[test]
fn wakeup_without_waking_uses_wakeup_and_its_waker() {
    let tl = T::new()
        .switch(10, 0, 0, "R", 5)
        .switch(20, 0, 5, "S", 0)
        .wake(30, 1, 9, WakeKind::Wakeup, 5, 1)
        .switch(40, 1, 9, "R+", 5)
        .build();
    let ivs = tl.thread(Tid(5)).unwrap().intervals.to_vec();
    assert_eq!(ivs[2].state, Runnable);
    assert_eq!(ivs[2].waker, Some(Tid(9)));
    assert_eq!(ivs[2].cpu, Some(Cpu(1)));
    // 9 was preempted: Runnable, preempted, on cpu 1, no waker.
    let nine = tl.thread(Tid(9)).unwrap().intervals.to_vec();
    assert_eq!(nine.len(), 1, "{nine:?}"); // no earlier switch on cpu 1: Unknown before
    assert_eq!(nine[0].state, Runnable);
    assert!(nine[0].preempted);
    assert_eq!(nine[0].waker, None);
    assert_eq!(nine[0].cpu, Some(Cpu(1)));
}

#[test]
fn first_switch_out_backfills_from_cpu_previous_switch_only() {
    // cpu 0: switch at 10 puts 3 on; at 50, 4 (never seen switched in) is switched out.
    let tl = T::new()
        .switch(10, 0, 0, "R", 3)
        .switch(20, 1, 8, "S", 0) // 8: no earlier switch on cpu 1 -> Unknown before
        .switch(50, 0, 4, "S", 0)
        .build();
    assert_eq!(spans(&tl, 8), vec![(20, None, Sleeping, None)]);
    assert_eq!(
        spans(&tl, 4),
        vec![(10, Some(50), Running, Some(0)), (50, None, Sleeping, None)]
    );
    // The CPU claimed 3 was running, not 4: one anomaly, and 3 is no
    // longer taken to run there.
    assert_eq!(tl.anomalies, 1);
    assert_eq!(
        spans(&tl, 3),
        vec![(10, Some(50), Running, Some(0)), (50, None, Unknown, None)]
    );
    assert_eq!(
        tl.cpus[0]
            .iter()
            .map(|r| (r.ts.0, r.tid.0))
            .collect::<Vec<_>>(),
        vec![(10, 3), (50, 0)]
    );
    assert_eq!(tl.cpus[0].first().unwrap().end, Some(Ts(50)));
    assert_eq!(tl.cpus[1].len(), 1);
    assert!(tl.thread(Tid(0)).is_none(), "idle is not a thread");
}

#[test]
fn untraced_switch_in_from_idle_is_inferred_at_the_wakeup() {
    // cpu 1 goes idle at 200; 5 is woken onto it at 300; the switch
    // idle -> 5 is not in the trace; at 500 cpu 1 switches 5 out.
    let tl = T::new()
        .switch(100, 1, 0, "R", 5)
        .switch(200, 1, 5, "S", 0)
        .wake(300, 0, 7, WakeKind::Wakeup, 5, 1)
        .switch(500, 1, 5, "S", 0)
        .build();
    assert_eq!(
        spans(&tl, 5),
        vec![
            (100, Some(200), Running, Some(1)),
            (200, Some(300), Sleeping, None),
            (300, Some(500), Running, Some(1)),
            (500, None, Sleeping, None),
        ]
    );
    assert_eq!(
        tl.cpus[1]
            .iter()
            .map(|r| (r.ts.0, r.end.map(|e| e.0), r.tid.0))
            .collect::<Vec<_>>(),
        vec![
            (100, Some(200), 5),
            (200, Some(300), 0),
            (300, Some(500), 5),
            (500, None, 0)
        ]
    );
    assert_eq!((tl.inferred_switch_ins, tl.anomalies), (1, 1));
    // The repaired run is found by where it starts; recorded ones not.
    let r = tl.repair_at(Cpu(1), Tid(5), Ts(300));
    assert_eq!(r.map(|r| (r.ts.0, r.tid.0)), Some((300, 5)));
    assert!(tl.repair_at(Cpu(1), Tid(5), Ts(100)).is_none());
    assert!(tl.repair_at(Cpu(1), Tid(6), Ts(300)).is_none());
    assert!(tl.repair_at(Cpu(0), Tid(5), Ts(300)).is_none());
    assert_contiguous(&tl);
}

#[test]
fn switch_out_of_a_sleeping_task_from_idle_is_not_inferred() {
    // 5 was never woken: nothing says when it ran, so nothing is invented.
    let tl = T::new()
        .switch(100, 1, 0, "R", 5)
        .switch(200, 1, 5, "S", 0)
        .switch(500, 1, 5, "S", 0)
        .build();
    assert_eq!(tl.inferred_switch_ins, 0);
    assert_eq!(tl.anomalies, 2);
    assert_eq!(tl.state_at(Tid(5), Ts(400)), Sleeping);
}

#[test]
fn migration_splits_runnable_interval() {
    let tl = T::new()
        .switch(10, 0, 0, "R", 5)
        .switch(20, 0, 5, "R+", 6)
        .migrate(25, 1, 5, 0, 1)
        .switch(30, 1, 0, "R", 5)
        .migrate(35, 1, 6, 0, 1) // 6 is Running: ignored
        .build();
    assert_eq!(
        spans(&tl, 5),
        vec![
            (10, Some(20), Running, Some(0)),
            (20, Some(25), Runnable, Some(0)),
            (25, Some(30), Runnable, Some(1)),
            (30, None, Running, Some(1)),
        ]
    );
    assert!(tl.thread(Tid(5)).unwrap().intervals.to_vec()[2].preempted);
    assert_eq!(spans(&tl, 6), vec![(20, None, Running, Some(0))]);
    assert_contiguous(&tl);
}

#[test]
fn exit_then_switch_out_is_dead_and_x_is_dead() {
    let tl = T::new()
        .switch(10, 0, 0, "R", 5)
        .exit(15, 0, 5)
        .switch(20, 0, 5, "S", 6) // kernels print various states for the final switch
        .switch(30, 0, 6, "X", 0)
        .build();
    assert_eq!(spans(&tl, 5)[1], (20, None, Dead, None));
    assert_eq!(spans(&tl, 6)[1], (30, None, Dead, None));
}

#[test]
fn other_states_and_idle_prev_state() {
    let tl = T::new()
        .switch(10, 0, 0, "R", 5)
        .switch(20, 0, 5, "T", 6)
        .switch(30, 0, 6, "I", 7)
        .switch(40, 0, 7, "P", 0)
        .build();
    assert_eq!(spans(&tl, 5)[1].2, Other);
    assert_eq!(spans(&tl, 6)[1].2, Sleeping);
    assert_eq!(spans(&tl, 7)[1].2, Other);
    assert_eq!(tl.anomalies, 0);
}

#[test]
fn lost_switch_out_is_counted_and_resolved() {
    // 5 switched in on cpu 0 and again on cpu 1 without a switch-out.
    let tl = T::new()
        .switch(10, 0, 0, "R", 5)
        .switch(20, 1, 0, "R", 5)
        .build();
    assert_eq!(tl.anomalies, 1);
    assert_eq!(
        spans(&tl, 5),
        vec![
            (10, Some(20), Running, Some(0)),
            (20, None, Running, Some(1))
        ]
    );
}

#[test]
fn same_instant_wakeup_and_switch_in_leave_no_empty_interval() {
    let tl = T::new()
        .switch(10, 0, 0, "R", 5)
        .switch(20, 0, 5, "S", 0)
        .wake(30, 0, 0, WakeKind::Waking, 5, 0)
        .switch(30, 0, 0, "R", 5)
        .build();
    assert_contiguous(&tl);
    assert_eq!(spans(&tl, 5).last(), Some(&(30, None, Running, Some(0))));
}

#[test]
fn census_bounds_hold_on_random_contradictory_traces() {
    // Random switches (prev often not the task that runs), wakeups,
    // migrations and exits: every anomaly path of the builder is taken,
    // and no vector may outgrow the room the census gave it.
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    for round in 0..20 {
        let mut t = T::new();
        let mut ts = 0;
        for _ in 0..2000 {
            ts += next(3); // equal timestamps too: zero-length intervals
            let cpu = next(3) as u32;
            let a = next(8) as i32; // 0 = idle
            let b = next(8) as i32;
            match next(10) {
                0..=4 => {
                    let state = ["R", "R+", "S", "D", "X", "T", "I"][next(7) as usize];
                    t.switch(ts, cpu, a, state, b);
                }
                5 => {
                    t.wake(ts, cpu, a, WakeKind::Waking, b, next(3) as u32);
                }
                6 => {
                    t.wake(ts, cpu, a, WakeKind::Wakeup, b, next(3) as u32);
                }
                7 => {
                    t.migrate(ts, cpu, b, cpu, next(3) as u32);
                }
                8 => {
                    t.exit(ts, cpu, b);
                }
                _ => {
                    t.push(
                        ts,
                        cpu,
                        a,
                        EventData::Fork {
                            parent_tid: Tid(a),
                            child_tid: Tid(b),
                            child_comm: StrId(0),
                        },
                    );
                }
            }
        }
        let tl = t.build(); // asserts the bounds
        assert!(tl.inferred_switch_ins > 0 && tl.anomalies > tl.inferred_switch_ins);
        for th in &tl.threads {
            for (a, b) in th.intervals.pairs() {
                assert_eq!(a.end, Some(b.ts), "round {round} tid {}", th.tid);
            }
        }
    }
}

#[test]
fn census_bounds_hold_on_recorded_and_simulated_traces() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut checked = 0;
    for name in [
        "perf/sched_small.data",
        "perf/callchain.data",
        "ftrace/tracefs-sched.txt",
        "ftrace/tracecmd-sched.txt",
        "sim/bare-metal-s1.data",
        "sim/mixed-s1.data",
    ] {
        // (perf.data: the decoder leaves its memory for the timeline)
        let spare = schedscope_parser::LoadOptions {
            spare: true,
            ..Default::default()
        };
        let trace = schedscope_parser::load_with(&root.join(name), &spare)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let spare = trace.spare.bytes();
        let (tl, regrown) = Timeline::build_counting(&trace, false);
        assert_eq!(regrown, 0, "{name}");
        if name.ends_with(".data") {
            // the decoder's slots held the intervals: reused
            assert!(spare > 0 && trace.spare.bytes() == 0, "{name}: {spare}");
        }
        // Threads whose region is full spill into vectors of their
        // own: the same timeline.
        let (squeezed, spilled) = Timeline::build_counting(&trace, true);
        assert!(spilled > 0, "{name}");
        assert_eq!(squeezed.threads.len(), tl.threads.len(), "{name}");
        for (a, b) in squeezed.threads.iter().zip(&tl.threads) {
            assert_eq!((a.tid, &a.intervals), (b.tid, &b.intervals), "{name}");
        }
        assert!(!tl.threads.is_empty(), "{name}");
        // The bound is a bound, not a guess: nowhere near the 2x a
        // doubling vector leaves.
        let len: usize = tl.threads.iter().map(|t| t.intervals.len()).sum();
        // (the store's size: one region of `bound` slots per thread)
        let cap: usize = Census::of(&trace)
            .threads
            .iter()
            .map(|s| s.bound as usize)
            .sum();
        assert!(
            cap * 4 <= len * 5 + 4 * tl.threads.len(),
            "{name}: {cap} for {len}"
        );
        checked += 1;
    }
    assert_eq!(checked, 6);
}

#[test]
fn empty_trace() {
    let tl = T::new().build();
    assert!(tl.threads.is_empty() && tl.cpus.is_empty());
    assert_eq!(tl.state_at(Tid(1), Ts(0)), Unknown);
}

/// The timeline a stream of `trace`'s events builds ([`TimelineCensus`],
/// then [`TimelineStream`]), the events pushed in slices of the sizes
/// `cuts` cycles through.
fn streamed(trace: &Trace, cuts: &[usize]) -> Timeline {
    let mut census = TimelineCensus::new(trace);
    for ev in &trace.events {
        census.push(ev);
    }
    let mut stream = TimelineStream::new(trace, census);
    crate::test_stream::push_in(&trace.events, cuts, |s| stream.push(s));
    stream.finish()
}

#[test]
fn a_streamed_build_is_the_whole_build() {
    // A lossy random trace several look-aheads long: switches that
    // contradict each other, wakeups, sched_stat_runtime (the repairs'
    // look-ahead reads it across the stream's ring compactions), kvm
    // entries and loss records.
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    let mut t = T::new();
    let mut ts = 0;
    let n = 5 * repair::STAT_LOOKAHEAD;
    for _ in 0..n {
        ts += next(4);
        let cpu = next(3) as u32;
        let a = next(12) as i32;
        let b = next(12) as i32;
        match next(16) {
            0..=6 => {
                let state = ["R", "R+", "S", "D", "S", "S", "I"][next(7) as usize];
                t.switch(ts, cpu, a, state, b);
            }
            7..=9 => {
                t.wake(ts, cpu, a, WakeKind::Waking, b, next(3) as u32);
            }
            10 => {
                t.migrate(ts, cpu, b, cpu, next(3) as u32);
            }
            11..=13 => {
                t.push(
                    ts,
                    cpu,
                    a,
                    EventData::StatRuntime {
                        pid: Tid(a),
                        runtime: next(2 * ts.max(1)),
                    },
                );
            }
            14 => {
                let id = next(4);
                t.push(
                    ts,
                    cpu,
                    a,
                    EventData::KvmEntry {
                        vcpu_id: (id < 3).then_some(id as u32),
                    },
                );
            }
            _ => {
                t.0.loss_marks.push(schedscope_trace::LossMark {
                    ts: ts.saturating_sub(next(50)),
                    cpu,
                    lost: 1,
                });
            }
        }
    }
    t.0.loss_marks.push(schedscope_trace::LossMark {
        ts: ts + 1,
        cpu: 0,
        lost: 1,
    });
    let whole = t.build();
    let trace = &t.0;
    assert!(whole
        .repairs_by_evidence(Cpu(0))
        .contains_key("stat_runtime"));
    assert!(!whole.vcpus.is_empty());
    assert_eq!(whole.mark_spans.len(), trace.loss_marks.len());
    assert!(whole.mark_spans.iter().any(|s| s.after.is_none()));
    // Each loss record's span, found by search in the sorted events.
    for (m, span) in trace.loss_marks.iter().zip(&whole.mark_spans) {
        let k = trace.events.partition_point(|e| e.ts.0 < m.ts);
        let on = |e: &&Event| e.cpu.0 == m.cpu;
        let before = trace.events[..k].iter().rev().find(on).map(|e| e.ts);
        let after = trace.events[k..].iter().find(on).map(|e| e.ts);
        assert_eq!((span.before, span.after), (before, after), "{m:?}");
    }
    let want = format!("{whole:?}");
    for cuts in [&[1usize][..], &[7, 70_000, 3], &[n]] {
        assert_eq!(format!("{:?}", streamed(trace, cuts)), want, "{cuts:?}");
    }
}

#[test]
fn a_streamed_build_is_the_whole_build_on_the_fixtures() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    for name in [
        "perf/sched_small.data",
        "perf/stat_runtime.data",
        "ftrace/tracefs-sched.txt",
        "sim/mixed-s1.data",
        "idle/capped.data",
    ] {
        let trace =
            schedscope_parser::load(&root.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let whole = Timeline::build(&trace);
        assert!(!whole.threads.is_empty(), "{name}");
        assert_eq!(
            format!("{:?}", streamed(&trace, &[4096])),
            format!("{whole:?}"),
            "{name}"
        );
    }
}
