//! Generated trace with a hand-computed ground truth for every number of the
//! `idle` JSON section.
//!
//! Two CPUs, 2.5 s. Times below are ms after the first event (T0 = 1 s).
//!
//! CPU0: A runs 0-100, A leaves R and CPU0 idles (A throttled: a CPU idles
//! with a preempted task queued on it); C is woken at 150 onto busy CPU1,
//! a SCHED softirq on CPU0 (160-162) pulls C at 161 (idle_balance, waited
//! 11 ms while CPU0 idled), C runs 163-400, A runs 400-600, leaves R to idle
//! again (throttled), runs again at 700 (unthrottle), nohz kick 0->1 at 500,
//! wakes D onto itself at 800 (D stuck behind A), A preempted by D at 830,
//! D sleeps 1200-1500 (nothing waits), F woken onto busy CPU0 at 2300.
//!
//! CPU1: B runs 0-300 and sleeps; idle 300-810 (wasted while A is throttled:
//! 300-400 and 600-700, and while D waits: 800-810), E woken onto CPU1 runs
//! 810-820, idle again 820-851 while D then A wait on CPU0; A is pulled at
//! 850 (newidle, waited 20 ms), runs 851-2200, idle 2200-2500 (F stuck on
//! CPU0 from 2300 to the end).
//!
//! Ground truth (ms): idle CPU0 63+100+300 = 463, CPU1 510+31+300 = 841.
//! Wasted CPU0: 100-163 (throttled 50+2, imbalance 11), 600-700 throttled;
//! CPU1: 300-400 thr, 600-700 thr, 800-810 imb, 820-850 imb, 2300-2500 imb.
//! Gaps: 63 pull, 100 ran_elsewhere, 100 unthrottle, 100 ran_elsewhere, 10
//! wakeup, 30 pull, 200 trace_end. Seconds: bucket 0 idle 163+541 = 704
//! (35.2 %), bucket 1 idle 300 (15 %): avg 25.1, population std-dev 10.1;
//! work 1296 and 1700 ms: avg 1498, std-dev 202. Wait before pull 11, 20:
//! avg 15.5, p50 11, p99 20.

use schedscope_analysis::idle::{self, IdleReport};
use schedscope_analysis::{AnalysisError, Context, Options, Timeline};
use schedscope_render::RenderText;
use schedscope_trace::{
    Cpu, Event, EventData, PrevState, StackId, Sym, Tid, Trace, TraceFormat, Ts, WakeKind,
};
use serde_json::{json, Value};

const T0: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

struct B {
    t: Trace,
}

impl B {
    fn new() -> B {
        B {
            t: Trace::new("generated", TraceFormat::PerfData),
        }
    }
    fn push(&mut self, ms: u64, cpu: u32, tid: i32, name: &str, data: EventData) {
        let name = self.t.intern_name(name);
        let n = self.t.event_names[name.0 as usize].clone();
        *self.t.events_by_name.entry(n).or_default() += 1;
        self.t.events.push(Event {
            ts: Ts(T0 + ms * MS),
            cpu: Cpu(cpu),
            tid: Tid(tid),
            name,
            stack: StackId::NONE,
            data,
        });
    }
    fn comm(&mut self, tid: i32) -> schedscope_trace::StrId {
        let c = match tid {
            0 => "swapper".to_string(),
            t => format!("task{t}"),
        };
        self.t.tasks.set_comm(Tid(tid), &c);
        self.t.strings.intern(&c)
    }
    fn switch(&mut self, ms: u64, cpu: u32, prev: i32, state: &str, next: i32) {
        let (prev_comm, next_comm) = (self.comm(prev), self.comm(next));
        let prev_state = PrevState::parse_text(state).expect("valid state in test");
        self.push(
            ms,
            cpu,
            prev,
            "sched:sched_switch",
            EventData::Switch {
                prev_tid: Tid(prev),
                prev_prio: 120,
                prev_state,
                prev_comm,
                next_tid: Tid(next),
                next_prio: 120,
                next_comm,
            },
        );
    }
    fn wake(&mut self, ms: u64, cpu: u32, cur: i32, tid: i32, target: u32) {
        let comm = self.comm(tid);
        for (kind, name) in [
            (WakeKind::Waking, "sched:sched_waking"),
            (WakeKind::Wakeup, "sched:sched_wakeup"),
        ] {
            self.push(
                ms,
                cpu,
                cur,
                name,
                EventData::Wakeup {
                    kind,
                    tid: Tid(tid),
                    comm,
                    prio: 120,
                    target_cpu: Cpu(target),
                },
            );
        }
    }
    fn migrate(&mut self, ms: u64, cpu: u32, cur: i32, tid: i32, from: u32, to: u32) {
        let comm = self.comm(tid);
        self.push(
            ms,
            cpu,
            cur,
            "sched:sched_migrate_task",
            EventData::Migrate {
                tid: Tid(tid),
                comm,
                orig_cpu: Cpu(from),
                dest_cpu: Cpu(to),
            },
        );
    }
    fn softirq(&mut self, ms: u64, cpu: u32, cur: i32, phase: u8) {
        let name = if phase == 0 {
            "irq:softirq_entry"
        } else {
            "irq:softirq_exit"
        };
        self.push(ms, cpu, cur, name, EventData::Softirq { vec: 7, phase });
    }
}

const A: i32 = 100;
const BB: i32 = 101;
const C: i32 = 102;
const D: i32 = 103;
const E: i32 = 104;
const F: i32 = 105;

fn scenario() -> Trace {
    let mut b = B::new();
    b.switch(0, 0, 0, "R", A);
    b.switch(0, 1, 0, "R", BB);
    b.switch(100, 0, A, "R", 0);
    b.wake(150, 1, BB, C, 1);
    b.softirq(160, 0, 0, 0);
    b.migrate(161, 0, 0, C, 1, 0);
    b.softirq(162, 0, 0, 1);
    b.switch(163, 0, 0, "R", C);
    b.switch(300, 1, BB, "S", 0);
    b.switch(400, 0, C, "S", A);
    let f = b.t.strings.intern("nohz_csd_func");
    b.push(
        500,
        0,
        A,
        "csd:csd_queue_cpu",
        EventData::CsdQueue {
            cpu: Cpu(1),
            callsite: Sym::from_addr(0xffff_ffff_8100_0000),
            func: Sym::from_name(f),
            csd: 0xffff_8880_0000_1000,
        },
    );
    b.switch(600, 0, A, "R", 0);
    b.switch(700, 0, 0, "R", A);
    b.wake(800, 0, A, D, 0);
    b.wake(810, 1, 0, E, 1);
    b.switch(810, 1, 0, "R", E);
    b.switch(820, 1, E, "S", 0);
    b.switch(830, 0, A, "R", D);
    b.migrate(850, 1, 0, A, 0, 1);
    b.switch(851, 1, 0, "R", A);
    b.switch(1200, 0, D, "S", 0);
    b.wake(1499, 0, 0, D, 0);
    b.switch(1500, 0, 0, "R", D);
    b.switch(2200, 1, A, "S", 0);
    b.wake(2300, 0, D, F, 0);
    b.softirq(2500, 0, D, 0);
    b.push(
        2500,
        0,
        D,
        "sched:sched_wake_idle_without_ipi",
        EventData::WakeIdleNoIpi { cpu: Cpu(1) },
    );
    b.t.finish();
    b.t
}

fn run(trace: &Trace) -> Result<IdleReport, AnalysisError> {
    let timeline = Timeline::default();
    let opts = Options {
        top: 20,
        ..Options::default()
    };
    let ctx = Context {
        trace,
        timeline: &timeline,
        opts: &opts,
    };
    idle::analyze(&ctx)
}

/// The text report of `r` (of `trace`), `top` rows per long table.
fn text_of(r: &IdleReport, _trace: &Trace, top: usize) -> String {
    let mut out = Vec::new();
    r.render_text(&schedscope_render::TextOptions { top }, &mut out)
        .expect("write to a Vec");
    String::from_utf8(out).expect("utf-8")
}

/// Compare JSON values; numbers within a relative 1e-9 (floats from sums).
fn assert_json_eq(path: &str, got: &Value, want: &Value) {
    match (got, want) {
        (Value::Number(g), Value::Number(w)) => {
            let (g, w) = (
                g.as_f64().unwrap_or(f64::NAN),
                w.as_f64().unwrap_or(f64::NAN),
            );
            assert!(
                (g - w).abs() <= 1e-9 * w.abs().max(1.0),
                "{path}: got {g}, want {w}"
            );
        }
        (Value::Object(g), Value::Object(w)) => {
            let gk: Vec<_> = g.keys().collect();
            let wk: Vec<_> = w.keys().collect();
            assert_eq!(gk, wk, "{path}: keys differ");
            for (k, wv) in w {
                assert_json_eq(&format!("{path}.{k}"), &g[k], wv);
            }
        }
        (Value::Array(g), Value::Array(w)) => {
            assert_eq!(g.len(), w.len(), "{path}: length differs: {got}");
            for (i, (gv, wv)) in g.iter().zip(w).enumerate() {
                assert_json_eq(&format!("{path}[{i}]"), gv, wv);
            }
        }
        _ => assert_eq!(got, want, "{path}"),
    }
}

fn gap(cpu: u32, start: u64, dur: u64, thr: u64, ending: &str, waiting: Value) -> Value {
    json!({
        "cpu": cpu, "start_ns": T0 + start * MS, "dur_ns": dur * MS,
        "throttled_ns": thr * MS, "imbalance_ns": (dur - thr) * MS,
        "ending": ending, "waiting": waiting,
    })
}

fn waiter(tid: i32, cpu: u32, throttled: bool) -> Value {
    json!([{"tid": tid, "comm": format!("task{tid}"), "cpu": cpu, "throttled": throttled}])
}

fn bucket(i: u32, count: u64, total_ms: u64) -> Value {
    let (lo, hi) = if i == 0 {
        (0, 1000)
    } else {
        (1000u64 << (i - 1), 1000u64 << i)
    };
    json!({"lo_ns": lo, "hi_ns": hi, "count": count, "total_ns": total_ms * MS})
}

#[test]
fn every_number_matches_the_hand_computed_ground_truth() {
    let trace = scenario();
    let r = run(&trace).expect("all needed events are present");
    let got = serde_json::to_value(&r).expect("serialisable");
    let mut histogram: Vec<Value> = (0..19).map(|i| bucket(i, 0, 0)).collect();
    histogram[14] = bucket(14, 1, 10); // 10 ms in [8192, 16384) µs
    histogram[15] = bucket(15, 1, 30);
    histogram[16] = bucket(16, 1, 63);
    histogram[17] = bucket(17, 3, 300);
    histogram[18] = bucket(18, 1, 200);
    let want = json!({
        "cpus": [
            {"cpu": 0, "idle_ns": 463 * MS, "wasted_idle_ns": 163 * MS, "throttled_ns": 152 * MS,
             "imbalance_ns": 11 * MS, "sched_softirqs": 2, "sched_softirq_ns": 2 * MS,
             "nohz_kicks_received": 0, "wake_idle_without_ipi": 0, "pulls": 1,
             // a trace without loss evidence: every bound is the value
             "idle_ns_min": 463 * MS, "idle_ns_max": 463 * MS,
             "wasted_idle_ns_min": 163 * MS, "wasted_idle_ns_max": 163 * MS,
             "throttled_ns_min": 152 * MS, "throttled_ns_max": 152 * MS},
            {"cpu": 1, "idle_ns": 841 * MS, "wasted_idle_ns": 440 * MS, "throttled_ns": 200 * MS,
             "imbalance_ns": 240 * MS, "sched_softirqs": 0, "sched_softirq_ns": 0,
             "nohz_kicks_received": 1, "wake_idle_without_ipi": 1, "pulls": 1,
             "idle_ns_min": 841 * MS, "idle_ns_max": 841 * MS,
             "wasted_idle_ns_min": 440 * MS, "wasted_idle_ns_max": 440 * MS,
             "throttled_ns_min": 200 * MS, "throttled_ns_max": 200 * MS},
        ],
        "idle_ns": 1304 * MS,
        "wasted_idle_ns": 603 * MS,
        "idle_ns_min": 1304 * MS,
        "idle_ns_max": 1304 * MS,
        "wasted_idle_ns_min": 603 * MS,
        "wasted_idle_ns_max": 603 * MS,
        "throttled_ns_min": 352 * MS,
        "throttled_ns_max": 352 * MS,
        "throttled_ns": 352 * MS,
        "imbalance_ns": 251 * MS,
        "attribution": "inferred",
        "cgroup_mapping": "none",
        "per_second_idle_pct": {"avg": 25.1, "stddev": 10.1, "min": 15.0, "max": 35.2},
        "work_per_second_ns": {"avg": 1498.0 * MS as f64, "stddev": 202.0 * MS as f64},
        "seconds": 2,
        "duration_ns": 2500 * MS,
        "balance": {
            "sched_softirqs": 2,
            "sched_softirq_ns": 2 * MS,
            "nohz_kicks": 1,
            "kicks": [{"from": 0, "to": 1, "count": 1}],
            "wake_idle_without_ipi": 1,
            "pulls_into_idle": 2,
            "pulls_by_path": {"idle_balance": 1, "newidle": 1},
            "wait_before_pull_ns": {"count": 2, "avg": 15.5 * MS as f64, "p50": 11 * MS,
                                    "p99": 20 * MS, "max": 20 * MS},
            "gap_endings": {"wakeup": 1, "pull": 2, "ran_elsewhere": 2, "trace_end": 1,
                            "unthrottle": 1},
        },
        "gaps": {
            "count": 7,
            "total_ns": 603 * MS,
            "histogram": histogram,
            "longest": [
                gap(1, 2300, 200, 0, "trace_end", waiter(F, 0, false)),
                gap(1, 300, 100, 100, "ran_elsewhere", waiter(A, 0, true)),
                gap(0, 600, 100, 100, "unthrottle", waiter(A, 0, true)),
                gap(1, 600, 100, 100, "ran_elsewhere", waiter(A, 0, true)),
                gap(0, 100, 63, 52, "pull", waiter(A, 0, true)),
                gap(1, 820, 30, 0, "pull", waiter(D, 0, false)),
                gap(1, 800, 10, 0, "wakeup", waiter(D, 0, false)),
            ],
        },
        "cgroups": [],
        "missing_events": [],
        "anomalies": 0,
        "repairs": ([0, 1].map(|cpu| json!({
            "cpu": cpu, "unswitched_switch_outs": 0, "idle_exits_missing": 0, "lossy": false,
            "waits_dropped": 0, "woken_throttled": 0, "woken_left_queued": 0,
            "uncertain_ns": 0,
        }))),
    });
    assert_json_eq("idle", &got, &want);
}

#[test]
fn text_report_puts_the_headline_first_and_prints_the_seed_table() {
    let trace = scenario();
    let r = run(&trace).expect("all needed events are present");
    let text = text_of(&r, &trace, 3);
    let first = text.lines().next().unwrap_or("");
    assert!(
        first.starts_with("Wasted idle: 603.000 ms (12.1% of CPU time)"),
        "{first}"
    );
    let seed = text
        .lines()
        .find(|l| l.trim_start().starts_with("this trace (2 s)"))
        .unwrap_or_else(|| panic!("no seed row in\n{text}"));
    let cells: Vec<&str> = seed.split_whitespace().collect();
    assert_eq!(&cells[4..], &["25.1%", "10.1%", "15.0%", "35.2%"], "{seed}");
    // top = 3 rows of the longest-gaps table.
    let longest = text
        .lines()
        .skip_while(|l| !l.starts_with("Longest"))
        .skip(2)
        .take_while(|l| !l.is_empty())
        .count();
    assert_eq!(longest, 3, "{text}");
}

#[test]
fn missing_switch_events_name_them_and_the_record_command() {
    let mut b = B::new();
    b.wake(0, 0, 0, A, 0);
    b.t.finish();
    match run(&b.t) {
        Err(AnalysisError::MissingEvents {
            missing,
            record_command,
            perf_command,
            ..
        }) => {
            assert_eq!(missing, vec!["sched:sched_switch".to_string()]);
            assert!(
                record_command.contains("sched:sched_switch"),
                "{record_command}"
            );
            assert!(perf_command.starts_with("perf record -a -e sched:sched_switch"));
        }
        other => panic!("expected MissingEvents, got {other:?}"),
    }
}

#[test]
fn missing_wakeups_are_named_and_missing_proxies_listed() {
    let mut b = B::new();
    b.switch(0, 0, 0, "R", A);
    b.switch(10, 0, A, "S", 0);
    b.t.finish();
    match run(&b.t) {
        // either wakeup event serves: the one every kernel has is required,
        // sched_waking only improves the result
        Err(AnalysisError::MissingEvents {
            missing, improves, ..
        }) => {
            assert_eq!(missing, vec!["sched:sched_wakeup".to_string()]);
            assert_eq!(improves[0], "sched:sched_waking");
        }
        other => panic!("expected MissingEvents, got {other:?}"),
    }
    b.wake(20, 0, 0, A, 0);
    b.t.finish();
    let r = run(&b.t).expect("switch and wakeups present");
    assert_eq!(
        r.missing_events,
        vec![
            "sched:sched_migrate_task",
            "irq:softirq_entry",
            "irq:softirq_exit",
            "csd:csd_queue_cpu",
            "sched:sched_wake_idle_without_ipi"
        ]
    );
    assert_eq!(r.idle_ns, 10 * MS);
    assert_eq!(r.per_second_idle_pct.avg, None, "trace shorter than 1 s");
}

#[test]
fn recorded_cgroup_samples_mark_a_preempted_task_throttled() {
    // task100 is preempted (R) by task101 on CPU0 while CPU1 idles. Without
    // samples that is imbalance (it could have been pulled); with samples of
    // its cgroup (leaf "task100") showing nr_throttled growing, it is
    // throttled and attribution is "recorded".
    let mut b = B::new();
    b.switch(0, 1, 0, "R", 0);
    b.switch(0, 0, 0, "R", A);
    b.wake(10, 0, A, BB, 0);
    b.switch(20, 0, A, "R", BB);
    b.switch(60, 0, BB, "S", A);
    b.t.finish();
    let r = run(&b.t).expect("events present");
    assert_eq!(r.attribution, idle::Attribution::Inferred);
    assert_eq!((r.throttled_ns, r.imbalance_ns), (0, 50 * MS));

    for (ms, thr) in [(0u64, 3u64), (40, 4), (80, 4)] {
        b.t.cgroup_samples.push(schedscope_trace::CgroupSample {
            ts: Ts(T0 + ms * MS),
            path: "/L1/L2/C1/task100".into(),
            quota_us: 50_000,
            period_us: 100_000,
            nr_periods: 10 + ms / 10,
            nr_throttled: thr,
            throttled_ns: thr * 7 * MS,
            usage_ns: Some(ms * MS / 2),
        });
    }
    let r = run(&b.t).expect("events present");
    assert_eq!(r.attribution, idle::Attribution::Recorded);
    // 10-20: BB woken onto busy CPU0 (imbalance); 20-60: A waits, throttled.
    assert_eq!((r.throttled_ns, r.imbalance_ns), (40 * MS, 10 * MS));
    assert_eq!(r.cgroups.len(), 1);
    let cg = &r.cgroups[0];
    assert_eq!(cg.quota_cpus, Some(0.5));
    assert_eq!(cg.usage_cpus, Some(0.5));
    assert_eq!(
        (cg.nr_periods, cg.nr_throttled, cg.throttled_ns),
        (8, 1, 7 * MS)
    );
    assert_eq!((cg.samples, cg.tasks), (3, 1));
    // task100 ran 0-20 and 60-60 (the trace ends at 60): 20 ms of 60.
    assert_eq!(cg.trace_cpu_ns, 20 * MS);
    assert_eq!(cg.trace_cpus, Some(1.0 / 3.0));
}

#[test]
fn recorded_membership_maps_tasks_to_sampled_ancestors_instead_of_names() {
    // As above, but the sampled cgroup's leaf ("C1") names no task: by name
    // nothing maps (inferred). With recorded membership, task100 is in
    // /L1/L2/C1/t (below the sampled /L1/L2/C1, so its throttling counts)
    // and task101 in /L1/L2/C10 (a sibling whose name merely starts alike).
    let mut b = B::new();
    b.switch(0, 1, 0, "R", 0);
    b.switch(0, 0, 0, "R", A);
    b.wake(10, 0, A, BB, 0);
    b.switch(20, 0, A, "R", BB);
    b.switch(60, 0, BB, "S", A);
    for (ms, thr) in [(0u64, 3u64), (40, 4), (80, 4)] {
        b.t.cgroup_samples.push(schedscope_trace::CgroupSample {
            ts: Ts(T0 + ms * MS),
            path: "/L1/L2/C1".into(),
            quota_us: 50_000,
            period_us: 100_000,
            nr_periods: 10 + ms / 10,
            nr_throttled: thr,
            throttled_ns: thr * 7 * MS,
            usage_ns: Some(ms * MS / 2),
        });
    }
    b.t.finish();
    let r = run(&b.t).expect("events present");
    assert_eq!(r.attribution, idle::Attribution::Inferred);
    assert_eq!(r.cgroup_mapping, idle::CgroupMapping::None);
    assert_eq!((r.throttled_ns, r.imbalance_ns), (0, 50 * MS));
    assert_eq!(r.cgroups[0].tasks, 0);

    b.t.tasks.get_or_insert(Tid(A)).cgroup = Some("/L1/L2/C1/t".into());
    b.t.tasks.get_or_insert(Tid(BB)).cgroup = Some("/L1/L2/C10".into());
    let r = run(&b.t).expect("events present");
    assert_eq!(r.attribution, idle::Attribution::Recorded);
    assert_eq!(r.cgroup_mapping, idle::CgroupMapping::Membership);
    assert_eq!((r.throttled_ns, r.imbalance_ns), (40 * MS, 10 * MS));
    assert_eq!(r.cgroups[0].tasks, 1);
    assert_eq!(r.cgroups[0].trace_cpu_ns, 20 * MS);
    let json = serde_json::to_value(&r).expect("serializes");
    assert_eq!(json["cgroup_mapping"], "membership");
    let text = text_of(&r, &b.t, Options::default().top);
    assert!(
        text.contains("tasks mapped by their recorded cgroup membership"),
        "{text}"
    );
}

#[test]
fn a_task_seen_throttled_is_throttled_when_preempted_while_another_cpu_idles() {
    // A is proven throttled at 10 (CPU0 idles with it queued), runs again at
    // 20, is preempted by C at 30 (C woken at 25); CPU1 goes idle at 40
    // without pulling A: A counts as throttled, so 40-60 is throttled idle.
    // Control: task B never seen throttled, same pattern: imbalance.
    let mut b = B::new();
    b.switch(0, 0, 0, "R", A);
    b.switch(0, 1, 0, "R", BB);
    b.switch(10, 0, A, "R", 0);
    b.switch(20, 0, 0, "R", A);
    b.wake(25, 0, A, C, 0);
    b.switch(30, 0, A, "R", C);
    b.switch(40, 1, BB, "S", 0);
    b.switch(60, 0, C, "S", A);
    b.switch(70, 0, A, "S", 0);
    b.t.finish();
    let r = run(&b.t).expect("events present");
    // CPU0 10-20 throttled (A queued on it); CPU1 40-60 throttled; 60-70 nothing waits.
    assert_eq!(r.cpus[0].throttled_ns, 10 * MS);
    assert_eq!(r.cpus[1].throttled_ns, 20 * MS);
    assert_eq!(r.imbalance_ns, 0);

    let mut b = B::new();
    b.switch(0, 0, 0, "R", BB);
    b.switch(0, 1, 0, "R", D);
    b.wake(25, 0, BB, C, 0);
    b.switch(30, 0, BB, "R", C);
    b.switch(40, 1, D, "S", 0);
    b.switch(60, 0, C, "S", BB);
    b.switch(70, 0, BB, "S", 0);
    b.t.finish();
    let r = run(&b.t).expect("events present");
    assert_eq!((r.throttled_ns, r.imbalance_ns), (0, 20 * MS));
}

/// A is seen throttled (CPU0 idles with it queued, 10-50), runs again, and
/// at 61 leaves CPU0 runnable for C (woken at 55) while CPU1 idles (B,
/// throttled, since 60).
fn held_off_until_61() -> B {
    let mut b = B::new();
    b.switch(0, 0, 0, "R", A);
    b.switch(0, 1, 0, "R", BB);
    b.switch(10, 0, A, "R", 0);
    b.switch(50, 0, 0, "R", A);
    b.wake(55, 0, A, C, 0);
    b.switch(60, 1, BB, "R", 0);
    b.switch(61, 0, A, "R", C);
    b
}

#[test]
fn a_throttled_task_held_off_a_cpu_that_never_switched_is_throttled_from_its_switch_out() {
    // The pattern of a real capped recording (3 burners at 50% on 2 CPUs):
    // A is seen throttled (CPU0 idles with it queued, 10-50), then at 61 it
    // leaves CPU0 runnable for C while CPU1 idles (B throttled since 60),
    // and C keeps CPU0 without a switch until 100, when A runs again. A
    // queued runnable task would have had CPU0 back within a slice or been
    // pulled by idle CPU1: A was throttled from 61, so CPU1's 60-100 is
    // throttled wasted idle, not imbalance.
    let mut b = held_off_until_61();
    b.switch(100, 0, C, "S", A);
    b.switch(100, 1, 0, "R", BB);
    b.switch(110, 0, A, "S", 0);
    b.t.finish();
    let r = run(&b.t).expect("events present");
    assert_eq!(r.attribution, idle::Attribution::Inferred);
    // CPU0: 10-50 throttled (A). CPU1: 60-61 imbalance (C, woken at 55,
    // still queued behind A), 61-100 throttled.
    assert_eq!(r.cpus[0].throttled_ns, 40 * MS);
    assert_eq!(r.cpus[1].throttled_ns, 39 * MS);
    assert_eq!((r.throttled_ns, r.imbalance_ns), (79 * MS, MS));
    assert_eq!(r.balance.gap_endings.unthrottle, 2);

    // Same, but C gives CPU0 back to A at 75 (within the hold time): A was
    // runnable all along, so 60-75 is imbalance (C then A queued on busy
    // CPU0), and then CPU1 stays idle with only the throttled B waiting
    // (75-100).
    let mut b = held_off_until_61();
    b.switch(75, 0, C, "S", A);
    b.switch(100, 1, 0, "R", BB);
    b.switch(110, 0, A, "S", 0);
    b.t.finish();
    let r = run(&b.t).expect("events present");
    assert_eq!(r.cpus[1].throttled_ns, 25 * MS);
    assert_eq!(r.cpus[1].imbalance_ns, 15 * MS);
}

#[test]
fn a_cpu_that_idles_with_a_preempted_task_queued_proves_the_throttle_from_its_switch_out() {
    // X (never throttled before) leaves CPU0 runnable for Y at 20 while
    // CPU1 idles; Y sleeps at 25 and CPU0 idles although X is queued there:
    // X was not runnable since 20 (throttled), so CPU1's 20-25 is throttled.
    let mut b = B::new();
    b.switch(0, 1, 0, "R", 0);
    b.switch(0, 0, 0, "R", A);
    b.wake(10, 0, A, BB, 0);
    b.switch(20, 0, A, "R", BB);
    b.switch(25, 0, BB, "S", 0);
    b.switch(60, 0, 0, "R", A);
    b.switch(70, 0, A, "S", 0);
    b.t.finish();
    let r = run(&b.t).expect("events present");
    // CPU1: 10-20 imbalance (BB queued behind A), 20-60 throttled (A).
    assert_eq!(r.cpus[1].imbalance_ns, 10 * MS);
    assert_eq!(r.cpus[1].throttled_ns, 40 * MS);
    // CPU0: 25-60 throttled.
    assert_eq!(r.cpus[0].throttled_ns, 35 * MS);
}

const P: i32 = 110;
const X: i32 = 111;

/// A runs on CPU0 until it sleeps at 10; X runs on CPU1.
fn cpu0_idle_from_10() -> B {
    let mut b = B::new();
    b.switch(0, 0, 0, "R", A);
    b.switch(0, 1, 0, "R", X);
    b.switch(10, 0, A, "S", 0);
    b
}

/// P is woken (sched_waking, target CPU0) and placed on CPU1
/// (sched_migrate_task), but its sched_wakeup and switch-in never show.
/// CPU0 idles from 10; CPU1 idles at 30 with P still queued, runs X 40-60.
fn p_left_queued_on_cpu1() -> B {
    let mut b = cpu0_idle_from_10();
    let comm = b.comm(P);
    b.push(
        20,
        0,
        0,
        "sched:sched_waking",
        EventData::Wakeup {
            kind: WakeKind::Waking,
            tid: Tid(P),
            comm,
            prio: 120,
            target_cpu: Cpu(0),
        },
    );
    b.migrate(20, 0, 0, P, 0, 1);
    b.switch(30, 1, X, "S", 0);
    b.wake(40, 1, 0, X, 1);
    b.switch(40, 1, 0, "R", X);
    b.switch(60, 1, X, "S", 0);
    b
}

#[test]
fn a_woken_task_left_queued_on_a_lossy_cpu_that_idles_is_dropped_unless_it_runs_next() {
    // As on this VM's CPU 1, whose trace shows loss: at 70 idle CPU1
    // switches out Y, which no recorded switch put there (its switch out of
    // idle was not traced). CPU1 idles at 30 with P still queued, which a
    // scheduler never does with a runnable task, and P never shows up
    // again: the wait is a lost-event artifact and ends at 30, so CPU1's
    // later busy spell (40-60) does not make CPU0's idle wasted.
    let mut b = p_left_queued_on_cpu1();
    b.switch(70, 1, Y, "S", 0);
    b.t.finish();
    let r = run(&b.t).expect("events present");
    assert_eq!((r.throttled_ns, r.imbalance_ns), (0, 10 * MS));
    assert!(r.anomalies >= 1, "the dropped wait is counted");
    let cpu1 = &r.repairs[1];
    assert!(cpu1.lossy);
    assert_eq!(
        (cpu1.unswitched_switch_outs, cpu1.idle_exits_missing),
        (1, 1)
    );
    assert_eq!(cpu1.waits_dropped, 1);
    assert!(!r.repairs[0].lossy, "CPU0's switches are all consistent");
    assert_eq!(r.repairs[0].waits_dropped, 0);

    // The other case: P is switched in next (at 40, on CPU1), without having
    // run or been woken in between: its wakeup raced with CPU1's pick, and
    // it stays CPU1's incoming work (not stuck). CPU0 20-30 imbalance only.
    let mut b = cpu0_idle_from_10();
    b.wake(20, 1, X, P, 1);
    b.switch(30, 1, X, "S", 0);
    b.switch(40, 1, 0, "R", P);
    b.switch(50, 1, P, "S", 0);
    b.wake(60, 0, 0, A, 0);
    b.t.finish();
    let r = run(&b.t).expect("events present");
    assert_eq!((r.throttled_ns, r.imbalance_ns), (0, 10 * MS));
    assert_eq!(r.anomalies, 0);
}

#[test]
fn a_woken_task_left_queued_on_a_fully_traced_cpu_keeps_its_wait_and_is_shown() {
    // The same trace without the evidence of loss: CPU1 is taken as fully
    // traced, so P's wait is real and kept. It is not explained (no
    // sched_wakeup, so no look-ahead), hence shown as an anomaly: P stays
    // queued on CPU1 while CPU1 runs X (40-60), and CPU0's idle is wasted
    // then too: imbalance 20-30 and 40-60.
    let mut b = p_left_queued_on_cpu1();
    b.t.finish();
    let r = run(&b.t).expect("events present");
    assert_eq!((r.throttled_ns, r.imbalance_ns), (0, 30 * MS));
    assert!(r.repairs.iter().all(|c| !c.lossy && c.waits_dropped == 0));
    assert_eq!(
        r.repairs[1].woken_left_queued, 2,
        "CPU1 idled at 30 and 60 with P queued"
    );
    let text = text_of(&r, &b.t, Options::default().top);
    assert!(
        text.contains(
            "CPU 1: fully traced, nothing dropped; 2 woken tasks left queued while it idled"
        ),
        "{text}"
    );
}

const Y: i32 = 112;
const G: i32 = 113;

#[test]
fn a_task_woken_into_a_throttled_cgroup_on_a_healthy_kernel_is_throttled_from_its_wakeup() {
    // Kernels before per-task CFS-bandwidth throttling: G, woken (waking +
    // wakeup) into a throttled cgroup, stays queued on its CPU until the
    // refill. CPU0 idles from 10 (A sleeps); X runs on CPU1.
    // * G woken onto CPU1 at 20 while X runs; X sleeps at 30 and CPU1
    //   idles with G queued: G throttled from 20; runs at 60 (refill).
    // * G sleeps at 70, woken onto idle CPU0 at 80, not picked until the
    //   refill at 130 (> 20 ms while CPU0 idles): throttled from 80.
    // Truth: the only stuck work is G, throttled, 20-60 and 80-130 (a
    // throttled task is stuck even on an idle CPU). Wasted idle, all of it
    // throttled: CPU0 (idle 10-130) 20-60 and 80-130 = 90 ms, CPU1 (idle
    // 30-60 and 70-) 30-60 and 80-130 = 80 ms. Zero waits dropped, both
    // CPUs fully traced.
    let mut b = cpu0_idle_from_10();
    b.wake(20, 1, X, G, 1);
    b.switch(30, 1, X, "S", 0);
    b.switch(60, 1, 0, "R", G);
    b.switch(70, 1, G, "S", 0);
    b.wake(80, 1, 0, G, 0);
    b.switch(130, 0, 0, "R", G);
    b.switch(140, 0, G, "S", 0);
    b.t.finish();
    let r = run(&b.t).expect("events present");
    assert_eq!(r.throttled_ns, 170 * MS);
    assert_eq!(r.imbalance_ns, 0);
    assert_eq!(r.wasted_idle_ns, 170 * MS);
    assert_eq!(r.cpus[0].throttled_ns, 90 * MS);
    assert_eq!(r.cpus[1].throttled_ns, 80 * MS);
    assert!(r.repairs.iter().all(|c| !c.lossy && c.waits_dropped == 0));
    assert_eq!(r.repairs[1].woken_throttled, 1);
    assert_eq!(r.repairs[0].woken_throttled, 1);
    assert_eq!(r.anomalies, 0);
}

#[test]
fn a_woken_task_an_idle_cpu_picks_within_the_hold_is_its_incoming_work() {
    // The same wake onto idle CPU0 at 80, picked at 90 (< 20 ms): a slow
    // idle exit, not a throttle. Nothing is stuck anywhere.
    let mut b = cpu0_idle_from_10();
    b.switch(20, 1, X, "S", 0);
    b.wake(80, 1, 0, G, 0);
    b.switch(90, 0, 0, "R", G);
    b.switch(140, 0, G, "S", 0);
    b.t.finish();
    let r = run(&b.t).expect("events present");
    assert_eq!(r.wasted_idle_ns, 0);
    assert_eq!(r.repairs[0].woken_throttled, 0);
}
