//! `latency::compute_with` hands over every wait for a CPU, on a recorded
//! fixture (`fixtures/idle/hackbench.data`, 2 CPUs, hackbench):
//!
//! * per task, the waits add up to the report's figures (count =
//!   `switches`, largest = `delay_max_ns`, sum = `delay_total_ns`, nearest
//!   rank p50/p99 = `delay_p50_ns`/`delay_p99_ns`; preempted waits =
//!   `preemptions` and `preempt_delay_*`), and the report is `compute`'s;
//! * against `perf script` (the oracle; skipped without perf): every wait
//!   ends at a sched_switch of that CPU and time that switches the task in,
//!   and starts at the event its `start` names: a sched_wakeup(_new) of the
//!   task at that time, run by the `waker` thread and targeting
//!   `wake_cpu`, or a sched_switch switching the task out with prev_state
//!   `R` (`R+` for a preempted wait).

use schedscope_analysis::latency::{self, Wait, WaitStart};
use schedscope_analysis::stats::percentile_nearest_rank;
use schedscope_testkit as testkit;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::process::Command;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/idle/hackbench.data")
}

fn waits() -> (latency::LatencyReport, Vec<Wait>, schedscope_trace::Trace) {
    let trace = schedscope_parser::load(&fixture()).unwrap();
    let mut waits = Vec::new();
    let report = latency::compute_with(&trace, |w| waits.push(*w)).unwrap();
    (report, waits, trace)
}

#[test]
fn waits_add_up_to_the_report() {
    let (report, waits, trace) = waits();
    assert_eq!(report.tasks, latency::compute(&trace).unwrap().tasks);
    assert!(report.total_switches > 1000, "{}", report.total_switches);
    let mut counted: HashMap<i32, Vec<u64>> = HashMap::new();
    let mut preempted: HashMap<i32, Vec<u64>> = HashMap::new();
    for w in &waits {
        assert_eq!(w.delay_ns, w.switched_in.0.saturating_sub(w.since.0));
        match w.start {
            Some(_) => counted.entry(w.tid.0).or_default().push(w.delay_ns),
            None => preempted.entry(w.tid.0).or_default().push(w.delay_ns),
        }
    }
    assert!(!preempted.is_empty(), "the fixture has preemptions");
    let mut seen = 0;
    for t in &report.tasks {
        let mut d = counted.remove(&t.tid).unwrap_or_default();
        d.sort_unstable();
        assert_eq!(d.len() as u64, t.switches, "tid {}", t.tid);
        assert_eq!(d.iter().sum::<u64>(), t.delay_total_ns, "tid {}", t.tid);
        assert_eq!(d.last().copied().unwrap_or(0), t.delay_max_ns);
        assert_eq!(
            percentile_nearest_rank(&d, 50.0).unwrap_or(0),
            t.delay_p50_ns
        );
        assert_eq!(
            percentile_nearest_rank(&d, 99.0).unwrap_or(0),
            t.delay_p99_ns
        );
        let mut mine = t.delays_ns.clone();
        mine.sort_unstable();
        assert_eq!(d, mine);
        let p = preempted.remove(&t.tid).unwrap_or_default();
        assert_eq!(p.len() as u64, t.preemptions, "tid {}", t.tid);
        assert_eq!(p.iter().sum::<u64>(), t.preempt_delay_total_ns);
        assert_eq!(p.iter().max().copied().unwrap_or(0), t.preempt_delay_max_ns);
        seen += 1;
    }
    assert!(seen > 10);
    // (a task without a row has no counted wait; its preempted ones, if
    // any, would be lost from the report)
    assert!(counted.is_empty(), "{:?}", counted.keys());
    assert!(preempted.is_empty(), "{:?}", preempted.keys());
}

/// One `perf script --ns -F tid,cpu,time,event,trace` line: (thread, cpu,
/// time ns, event, payload).
fn parse_line(l: &str) -> Option<(i32, u32, u64, &str, &str)> {
    let (tid, rest) = l.trim_start().split_once(' ')?;
    let rest = rest.trim_start().strip_prefix('[')?;
    let (cpu, rest) = rest.split_once(']')?;
    let (time, rest) = rest.trim_start().split_once(':')?;
    let (sec, ns) = time.split_once('.')?;
    let (event, payload) = rest.trim_start().split_once(": ")?;
    let ts = sec.parse::<u64>().ok()? * 1_000_000_000 + ns.parse::<u64>().ok()?;
    Some((tid.parse().ok()?, cpu.parse().ok()?, ts, event, payload))
}

fn field<'a>(payload: &'a str, key: &str) -> Option<&'a str> {
    payload
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
}

#[test]
fn waits_start_and_end_at_the_events_perf_script_shows() {
    if !testkit::perf_starts() {
        eprintln!("skipped: perf not installed");
        return;
    }
    let out = Command::new("perf")
        .args(["script", "--ns", "-F", "tid,cpu,time,event,trace", "-i"])
        .arg(fixture())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    // (time, tid) -> (waker, target cpu) of the task's wakeups;
    // (time, cpu, next tid) of switch-ins; (time, prev tid, prev_state) of
    // switch-outs.
    let mut wakeups: HashMap<(u64, i32), (i32, u32)> = HashMap::new();
    let mut ins: HashSet<(u64, u32, i32)> = HashSet::new();
    let mut outs: HashMap<(u64, i32), String> = HashMap::new();
    for l in text.lines() {
        let Some((tid, cpu, ts, event, p)) = parse_line(l) else {
            continue;
        };
        let int = |k| field(p, k).and_then(|v| v.parse::<i64>().ok());
        match event {
            "sched:sched_wakeup" | "sched:sched_wakeup_new" => {
                if let (Some(pid), Some(target)) = (int("pid"), int("target_cpu")) {
                    wakeups.insert((ts, pid as i32), (tid, target as u32));
                }
            }
            "sched:sched_switch" => {
                if let (Some(prev), Some(next)) = (int("prev_pid"), int("next_pid")) {
                    ins.insert((ts, cpu, next as i32));
                    outs.insert(
                        (ts, prev as i32),
                        field(p, "prev_state").unwrap_or("").into(),
                    );
                }
            }
            _ => {}
        }
    }
    assert!(ins.len() > 1000, "perf script gave {} switches", ins.len());
    let (_, waits, _) = waits();
    let mut by_start: HashMap<Option<WaitStart>, usize> = HashMap::new();
    for w in &waits {
        *by_start.entry(w.start).or_default() += 1;
        assert!(
            ins.contains(&(w.switched_in.0, w.cpu.0, w.tid.0)),
            "{w:?}: no switch-in at that time and CPU"
        );
        let out_state = || outs.get(&(w.since.0, w.tid.0)).map(String::as_str);
        match w.start {
            Some(WaitStart::Wakeup | WaitStart::WakeupNew) => {
                let (waker, target) = wakeups
                    .get(&(w.since.0, w.tid.0))
                    .unwrap_or_else(|| panic!("{w:?}: no wakeup at that time"));
                assert_eq!(w.waker.map(|t| t.0), Some(*waker), "{w:?}");
                assert_eq!(w.wake_cpu.map(|c| c.0), Some(*target), "{w:?}");
            }
            Some(WaitStart::RunnableSwitchOut) => {
                assert_eq!(out_state(), Some("R"), "{w:?}");
                assert_eq!((w.waker, w.wake_cpu), (None, None));
            }
            None => assert_eq!(out_state(), Some("R+"), "{w:?}"),
            Some(WaitStart::FirstSeen) => assert_eq!(w.since, w.switched_in),
            Some(WaitStart::Waking) => panic!("the fixture has sched_wakeup"),
        }
    }
    // every kind is exercised
    for k in [
        Some(WaitStart::Wakeup),
        Some(WaitStart::RunnableSwitchOut),
        Some(WaitStart::FirstSeen),
        None,
    ] {
        assert!(
            by_start.get(&k).copied().unwrap_or(0) > 0,
            "no wait of kind {k:?}"
        );
    }
}
