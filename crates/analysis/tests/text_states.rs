//! Issue 13 end to end on small generated text traces with hand-computed
//! answers: a task switched out dead with lowercase `x` (Android's
//! TASK_DEAD) is dead, not runnable work that makes idle CPUs "wasted";
//! sections refuse a trace whose switches could not be typed, and per-CPU
//! sections refuse a trace without a CPU column while latency still runs.

use schedscope_analysis::report::{Report, Sections};
use schedscope_analysis::timeline::ThreadState;
use schedscope_analysis::{AnalysisError, Options, Timeline};
use schedscope_trace::{Tid, Trace, Ts};

fn load(text: &str) -> Trace {
    schedscope_parser::load_bytes("gen.txt", text.as_bytes()).unwrap()
}

fn all(trace: &Trace) -> Report {
    Report::compute(trace, Sections::all(), &Options::default())
}

/// CPU 0: task 5 runs 1.0 .. 1.5 then leaves with `state`; CPU 0 idles
/// to the end (3.0). CPU 1: task 6 is woken at 1.0 and runs 1.0 .. 3.0.
fn dead_or_alive(state: &str) -> String {
    format!(
        "\
# tracer: nop
          <idle>-0     [000] d..2.   1.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=5 next_prio=120
          <idle>-0     [001] d..2.   1.000000: sched_wakeup: comm=b pid=6 prio=120 target_cpu=001
          <idle>-0     [001] d..2.   1.000000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=6 next_prio=120
               a-5     [000] d..2.   1.500000: sched_switch: prev_comm=a prev_pid=5 prev_prio=120 prev_state={state} ==> next_comm=swapper/0 next_pid=0 next_prio=120
               b-6     [001] d..2.   3.000000: sched_switch: prev_comm=b prev_pid=6 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
"
    )
}

#[test]
fn lowercase_x_is_dead_and_wastes_no_idle() {
    for (state, want, wasted_ns) in [
        // dead: CPU 0 idles 1.5 s with nothing waiting
        ("x", ThreadState::Dead, 0),
        ("X", ThreadState::Dead, 0),
        // runnable (a yield): task 5 waits while CPU 0 idles 1.5 .. 3.0
        ("R", ThreadState::Runnable, 1_500_000_000),
    ] {
        let t = load(&dead_or_alive(state));
        let tl = Timeline::build(&t);
        assert_eq!(tl.state_at(Tid(5), Ts(2_000_000_000)), want, "{state}");
        let r = all(&t);
        let idle = r.idle.as_ref().unwrap().0.as_ref().unwrap();
        let cpu0 = idle.cpus.iter().find(|c| c.cpu == 0).unwrap();
        assert_eq!(cpu0.idle_ns, 1_500_000_000, "{state}");
        assert_eq!(idle.wasted_idle_ns, wasted_ns, "{state}");
    }
}

/// `n` switches on CPU 0 alternating tasks 5 and 6, the first `bad` of
/// them with a body in no known form.
fn switches(n: usize, bad: usize) -> String {
    let mut s = String::from("# tracer: nop\n");
    for i in 0..n {
        let (p, q) = if i % 2 == 0 { (5, 6) } else { (6, 5) };
        s.push_str(&format!("          <idle>-0     [001] d..2.   1.{i:06}: sched_wakeup: comm=t pid={q} prio=120 target_cpu=000\n"));
        let body = if i < bad {
            format!("prev_comm=t prev_pid={p} garbled")
        } else {
            format!("prev_comm=t prev_pid={p} prev_prio=120 prev_state=S ==> next_comm=t next_pid={q} next_prio=120")
        };
        s.push_str(&format!(
            "               t-{p}     [000] d..2.   1.{i:06}: sched_switch: {body}\n"
        ));
    }
    s
}

#[test]
fn untyped_switches_stop_every_section() {
    let t = load(&switches(100, 100));
    assert_eq!(t.untyped.get("sched:sched_switch"), Some(&100));
    let r = all(&t);
    let errors = r.errors();
    assert_eq!(errors.len(), 5, "{errors:?}");
    for e in errors {
        match e {
            AnalysisError::UntypedSwitches { untyped, total, .. } => {
                assert_eq!((*untyped, *total), (100, 100));
            }
            other => panic!("{other}"),
        }
        assert!(e
            .to_string()
            .contains("100 of 100 sched:sched_switch events could not be decoded"));
    }
    // 2 of 100 (2%) still refuses; 1 of 200 (0.5%) is a counted loss only.
    assert!(matches!(
        all(&load(&switches(100, 2))).latency.unwrap().0,
        Err(AnalysisError::UntypedSwitches {
            untyped: 2,
            total: 100,
            ..
        })
    ));
    let r = all(&load(&switches(200, 1)));
    assert!(r.latency.unwrap().0.is_ok());
    assert!(r.idle.unwrap().0.is_ok());
}

#[test]
fn no_cpu_column_refuses_per_cpu_sections_and_keeps_latency() {
    // perf script without [CPU]: task 5 woken at 10.0001, switched in at
    // 10.0003 (delay 200 us), runs to 10.0010 (run time 700 us).
    let text = "\
swapper     0 10.000100: sched:sched_wakeup: comm=a pid=5 prio=120 success=1 target_cpu=001
swapper     0 10.000300: sched:sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=a next_pid=5 next_prio=120
a     5 10.001000: sched:sched_switch: prev_comm=a prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
";
    let t = load(text);
    assert!(t.cpu_unknown);
    let r = all(&t);
    let lat = r.latency.as_ref().unwrap().0.as_ref().unwrap();
    let a = lat.tasks.iter().find(|x| x.tid == 5).unwrap();
    assert_eq!(
        (a.switches, a.delay_max_ns, a.runtime_ns),
        (1, 200_000, 700_000)
    );
    for (name, e) in [
        ("gang", r.gang.as_ref().map(|s| s.0.as_ref().err())),
        ("lhp", r.lhp.as_ref().map(|s| s.0.as_ref().err())),
        ("idle", r.idle.as_ref().map(|s| s.0.as_ref().err())),
        ("tlb", r.tlb.as_ref().map(|s| s.0.as_ref().err())),
    ] {
        match e.flatten() {
            Some(AnalysisError::NeedsCpuColumn { analysis, path }) => {
                assert_eq!((analysis.as_str(), path.as_str()), (name, "gen.txt"));
            }
            other => panic!("{name}: {other:?}"),
        }
    }
}
