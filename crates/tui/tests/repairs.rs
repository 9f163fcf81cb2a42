//! Runs whose switch-in a lost-event repair placed, as the lanes draw them
//! and the detail line names them: on simulated traces with losses
//! injected (the simulator's `loss` module: a VM that does not trace its
//! switches out of idle, with and without `sched_stat_runtime`, and a full
//! ring dropping spans of events), where the expected cells are computed
//! here from the timeline's own repairs (`Timeline::inferred`) and its CPU
//! runs, not from the lane index; and on a hand-made text trace whose
//! three lost switch-ins, and what places each, are known by construction.

mod common;

use common::*;
use schedscope_analysis::{ThreadState, Timeline};
use schedscope_sim::loss::{drop_idle_exits, drop_spans, with_stat_runtime};
use schedscope_sim::{perf, simulate, simulate_bandwidth, BandwidthSpec, Config};
use schedscope_tui::app::LaneRow;
use schedscope_tui::{App, Data};

/// A CFS tick (HZ=250).
const TICK: u64 = 4_000_000;

/// Lanes 200 cells wide.
const W: u16 = 208;
const H: u16 = 30;

/// The cases: (name, lossy simulation written as perf.data).
fn cases() -> Vec<(String, Vec<u8>)> {
    // CFS-bandwidth throttling leaves the CPUs idle often: many switches
    // out of idle to lose
    let base = simulate_bandwidth(&BandwidthSpec::old_kernel(1)).0;
    let stat = with_stat_runtime(&base, TICK);
    let bytes =
        |sim: &schedscope_sim::Simulation| perf::to_perf_data(sim).expect("write perf.data");
    vec![
        ("vm".into(), bytes(&drop_idle_exits(&base, 1).0)),
        ("vm+stat".into(), bytes(&drop_idle_exits(&stat, 1).0)),
        // a full ring mostly leaves unknown stretches, not repairs: its
        // lanes must still match the timeline's
        ("ring-20%".into(), bytes(&drop_spans(&stat, 1, 0.20, 3))),
    ]
}

fn load(bytes: &[u8]) -> schedscope_trace::Trace {
    schedscope_parser::load_bytes("sim.data", bytes).expect("decode")
}

fn app_of(bytes: &[u8], no_color: bool) -> App {
    App::with_data("sim.data", Data::from_trace(load(bytes), &|_| {}), no_color)
}

/// The end of the run of `tid` that starts at `ts` on `cpu`, from the
/// timeline's CPU runs.
fn run_end(tl: &Timeline, cpu: usize, tid: i32, ts: u64) -> u64 {
    let runs = &tl.cpus[cpu];
    let i = runs.partition_point(|r| r.ts.0 < ts);
    let r = runs
        .range(i..runs.len())
        .take_while(|r| r.ts.0 == ts)
        .find(|r| r.tid.0 == tid)
        .expect("a repair starts a run");
    r.end.map_or(tl.end.0, |e| e.0)
}

/// `(repaired time, busy time)` of `cpu` in `[a, b)`.
fn cell_times(tl: &Timeline, cpu: usize, a: u64, b: u64) -> (u64, u64) {
    let ov = |s: u64, e: u64| e.min(b).saturating_sub(s.max(a));
    let rep: u64 = tl
        .inferred
        .iter()
        .filter(|r| r.cpu.0 as usize == cpu)
        .map(|r| ov(r.ts.0, run_end(tl, cpu, r.tid.0, r.ts.0)))
        .sum();
    let busy: u64 = tl.cpus[cpu]
        .iter()
        .filter(|r| r.tid.0 != 0)
        .map(|r| ov(r.ts.0, r.end.map_or(tl.end.0, |e| e.0)))
        .sum();
    (rep, busy)
}

/// The braille block of busy share `f`, in quarters.
fn braille(f: f64) -> char {
    ['⣀', '⣤', '⣶', '⣿'][((f * 4.0).ceil() as usize).clamp(1, 4) - 1]
}

const DOTS: &str = "⣀⣤⣶⣿";

/// Check every CPU lane cell on screen: dotted exactly where repaired runs
/// hold at least half of the busy time, with the busy height; returns how
/// many cells were dotted and how many busy cells were not.
fn check_lanes(app: &mut App, tl: &Timeline, ctx: &str) -> (usize, usize) {
    let s = screen(app, W, H);
    let (view, cols) = (app.view, app.columns);
    let (mut dotted, mut plain) = (0, 0);
    for (row, lane) in app.lane_rows().iter().enumerate() {
        let LaneRow::Cpu(c) = *lane else { continue };
        let line: Vec<char> = s[2 + row].chars().collect();
        assert!(
            line.iter()
                .collect::<String>()
                .starts_with(&format!("CPU{c}")),
            "{ctx}: {}",
            s[2 + row]
        );
        for i in 0..cols {
            let (a, b) = view.col_range(i, cols);
            let (rep, busy) = cell_times(tl, c, a, b);
            let got = line[8 + usize::from(i)];
            let at = format!("{ctx} CPU{c} cell {i} [{a},{b}) rep {rep} busy {busy}");
            if rep > 0 && 2 * rep >= busy {
                assert_eq!(got, braille(busy as f64 / (b - a) as f64), "{at}");
                dotted += 1;
            } else {
                assert!(!DOTS.contains(got), "{at}: {got}");
                plain += (busy > 0) as usize;
            }
        }
    }
    let legend = s.iter().any(|l| l.contains("⣿ switch-in repaired"));
    assert_eq!(legend, dotted > 0, "{ctx}: the legend explains the dots");
    (dotted, plain)
}

#[test]
fn repaired_runs_are_dotted_where_the_timeline_repaired_them() {
    for (name, bytes) in cases() {
        // the oracle: the timeline of the same file, built apart
        let tl = &Timeline::build(&load(&bytes));
        if name.starts_with("vm") {
            assert!(!tl.inferred.is_empty(), "{name}: the loss was repaired");
        }
        assert!(
            tl.inferred.iter().all(|r| r.cpu.0 == 1),
            "{name}: only the lossy CPU"
        );
        let firsts: Vec<(u64, u64)> = tl
            .inferred
            .iter()
            .take(3)
            .map(|r| (r.ts.0, run_end(tl, 1, r.tid.0, r.ts.0)))
            .collect();
        for no_color in [false, true] {
            let mut app = app_of(&bytes, no_color);
            let ctx = format!("{name} no_color={no_color}");
            // the whole trace: cells of many runs
            let (d0, p0) = check_lanes(&mut app, tl, &format!("{ctx} whole"));
            assert!(p0 > 0, "{ctx}: some busy cell is drawn plain");
            let mut dotted = d0;
            // zoomed onto single repaired runs
            for &(a, b) in &firsts {
                app.view.show(a, b);
                dotted += check_lanes(&mut app, tl, &format!("{ctx} at {a}")).0;
            }
            assert_eq!(dotted > 0, !tl.inferred.is_empty(), "{ctx}");
        }
    }
}

/// The detail line of the app's screen.
fn detail(app: &mut App) -> String {
    screen(app, W, H)[usize::from(H) - 2].trim_end().to_string()
}

/// Put the cursor in the middle of `[a, b)`, zoomed onto it, on lane row
/// `lane`.
fn cursor_on(app: &mut App, lane: LaneRow, a: u64, b: u64) {
    app.view.show(a, b);
    app.view.cursor = a + (b - a) / 2;
    app.lane = app
        .lane_rows()
        .iter()
        .position(|l| *l == lane)
        .expect("lane shown");
}

#[test]
fn the_detail_line_names_the_repair() {
    for (name, bytes) in cases().into_iter().filter(|c| c.0.starts_with("vm")) {
        let mut app = app_of(&bytes, false);
        let tl = &Timeline::build(&load(&bytes));
        let lo = app.view.lo;
        let us = |t: u64| format!("{:.6}s", (t - lo) as f64 / 1e9);
        for r in tl.inferred.iter().take(5) {
            let end = run_end(tl, 1, r.tid.0, r.ts.0);
            cursor_on(&mut app, LaneRow::Cpu(1), r.ts.0, end);
            let want = format!(
                "switch-in repaired from {}, between {} and {}",
                r.evidence.name(),
                us(r.earliest.0),
                us(r.latest.0)
            );
            let got = detail(&mut app);
            assert!(got.contains(&want), "{name}: {got}\nwant {want}");
            assert!(got.contains(&format!("[{}]", r.tid.0)), "{name}: {got}");
        }
        // a recorded run (CPU 0 lost nothing): no repair named
        let run = tl.cpus[0]
            .iter()
            .find(|r| r.tid.0 != 0 && r.end.is_some_and(|e| e.0 > r.ts.0 + 1000))
            .expect("a run on CPU 0");
        cursor_on(
            &mut app,
            LaneRow::Cpu(0),
            run.ts.0,
            run.end.map_or(0, |e| e.0),
        );
        let got = detail(&mut app);
        assert!(got.contains(&format!("[{}]", run.tid.0)), "{name}: {got}");
        assert!(!got.contains("repaired"), "{name}: {got}");
        // The task lane of a repaired task: dotted inside its repaired
        // run, solid inside its recorded ones; the detail line names the
        // repair too.
        let r = tl.inferred[0];
        let end = run_end(tl, 1, r.tid.0, r.ts.0);
        app.selected = vec![r.tid.0];
        app.task_lanes = true;
        cursor_on(&mut app, LaneRow::Task(r.tid.0), r.ts.0, end);
        let s = screen(&mut app, W, H);
        let (view, cols) = (app.view, app.columns);
        // (screen rows: tab bar, time axis, then the lanes)
        let row = 2 + app.lane;
        let line: Vec<char> = s[row].chars().collect();
        let th = tl.thread(r.tid).expect("thread");
        let mut dotted = 0;
        for i in 0..cols {
            let (a, b) = view.col_range(i, cols);
            // a cell inside one Running interval
            let Some(iv) = th
                .intervals
                .iter()
                .find(|iv| iv.ts.0 <= a && iv.end.is_some_and(|e| e.0 >= b))
            else {
                continue;
            };
            if iv.state != ThreadState::Running {
                continue;
            }
            let repaired = tl.inferred.iter().any(|x| x.tid == r.tid && x.ts == iv.ts);
            let got = line[8 + usize::from(i)];
            assert_eq!(got, if repaired { '⣿' } else { '█' }, "{name} cell {i}");
            dotted += repaired as usize;
        }
        assert!(dotted > 0, "{name}: {}", s[row]);
        let got = detail(&mut app);
        assert!(
            got.contains("Running on CPU1")
                && got.contains(&format!("switch-in repaired from {}", r.evidence.name())),
            "{name}: {got}"
        );
    }
}

/// The hand-made trace of `fixtures/repairs/` (its README gives the three
/// repairs it holds, each known by construction).
const HAND_MADE: &str = include_str!("../../../fixtures/repairs/hand-made.txt");

/// The hand-made trace's repairs: (tid, evidence, estimate, earliest,
/// latest), times in us after 100 s.
const HAND_MADE_REPAIRS: [(i32, &str, u64, u64, u64); 3] = [
    (101, "rule", 2000, 2000, 4000),
    (102, "cpu_idle", 11000, 11000, 13000),
    (103, "task_event", 21000, 13000, 21000),
];

#[test]
fn a_hand_made_trace_names_each_kind_of_evidence() {
    let at = |us: u64| 100_000_000_000 + us * 1000;
    let load = || schedscope_parser::load_bytes("hand.txt", HAND_MADE.as_bytes()).expect("decode");
    let mut app = App::with_data("hand.txt", Data::from_trace(load(), &|_| {}), false);
    let lo = app.view.lo;
    assert_eq!(lo, at(0));
    for (tid, evidence, ts, earliest, latest) in HAND_MADE_REPAIRS {
        // the switch-out that follows each repaired switch-in
        let out = [at(4000), at(13000), at(23000)][(tid - 101) as usize];
        cursor_on(&mut app, LaneRow::Cpu(1), at(ts), out);
        let got = detail(&mut app);
        let want = format!(
            "switch-in repaired from {evidence}, between {:.6}s and {:.6}s",
            earliest as f64 / 1e6,
            latest as f64 / 1e6
        );
        assert!(got.contains(&want), "{got}\nwant {want}");
        assert!(got.contains(&format!("[{tid}]")), "{got}");
        // the cells of the run are dotted, full height
        let s = screen(&mut app, W, H);
        let row = 2 + app.lane;
        let (view, cols) = (app.view, app.columns);
        let line: Vec<char> = s[row].chars().collect();
        let inside = (0..cols)
            .filter(|&i| {
                let (a, b) = view.col_range(i, cols);
                a >= at(ts) && b <= out
            })
            .collect::<Vec<_>>();
        assert!(inside.len() > 10, "{}", s[row]);
        for i in inside {
            assert_eq!(line[8 + usize::from(i)], '⣿', "{tid} cell {i}: {}", s[row]);
        }
        // and CPU 1 was idle in the 0.5 ms before the estimate
        let before = (0..cols).filter(|&i| {
            let (a, b) = view.col_range(i, cols);
            a >= at(ts) - 500_000 && b <= at(ts)
        });
        for i in before {
            assert_eq!(line[8 + usize::from(i)], ' ', "{tid} cell {i}: {}", s[row]);
        }
    }
    // x's run on CPU 0 was recorded
    cursor_on(&mut app, LaneRow::Cpu(0), at(0), at(30000));
    let got = detail(&mut app);
    assert!(got.contains("x[200]") && !got.contains("repaired"), "{got}");
}

#[test]
fn a_loss_free_trace_draws_no_dots() {
    let mut cfg = Config::scenario("mixed", 1).expect("scenario");
    cfg.ticks = 3000;
    let bytes = perf::to_perf_data(&simulate(&cfg)).expect("write perf.data");
    let mut app = app_of(&bytes, false);
    let tl = Timeline::build(&load(&bytes));
    assert!(tl.inferred.is_empty());
    let s = screen(&mut app, W, H);
    assert!(
        !s.iter().any(|l| l.chars().any(|c| DOTS.contains(c))),
        "{}",
        s.join("\n")
    );
    let (_, plain) = check_lanes(&mut app, &tl, "loss-free");
    assert!(plain > 0);
}
