//! Oracle test: our latency and run-time numbers against perf's own, on one
//! recording made by the test.
//!
//! * max delay, its start and switch count per task against `perf sched
//!   latency -p` (Debian perf 6.1; see `latency.rs` for the semantics we
//!   match), and what started the largest wait (`delay_max_start`) against
//!   the event `perf script` shows for that task at that start;
//! * run time per task against `perf sched timehist -s`, within 0.1% (or the
//!   microsecond that perf's truncating print loses);
//! * the same recording decoded from perf.data and from `perf script` text
//!   gives the same latency report and the same thread-state totals.
//!
//! Needs root, perf and tracefs; skips with a message otherwise.

use schedscope_analysis::latency::{self, LatencyReport};
use schedscope_analysis::Timeline;
use schedscope_testkit::{self as testkit, run, tmpdir};
use schedscope_trace::{EventData, Trace};
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const EVENTS: &str =
    "sched:sched_switch,sched:sched_wakeup,sched:sched_waking,sched:sched_migrate_task";

fn skip_reason() -> Option<String> {
    if !testkit::proc_self_owned_by_root() {
        return Some("not root".into());
    }
    if !testkit::perf_starts() {
        return Some("perf not installed".into());
    }
    if !Path::new("/sys/kernel/tracing/events/sched/sched_switch").exists()
        && !Path::new("/sys/kernel/debug/tracing/events/sched/sched_switch").exists()
    {
        return Some("tracefs not mounted".into());
    }
    None
}

/// perf sched latency -p rows: tid -> (switches, max delay in ms).
/// perf's "INFO: x% context switch bugs (N out of M)" count, 0 when absent.
fn perf_switch_bugs(text: &str) -> u64 {
    text.lines()
        .find_map(|l| {
            let (_, rest) = l.split_once("context switch bugs (")?;
            rest.split_whitespace().next()?.parse().ok()
        })
        .unwrap_or(0)
}

/// tid -> (switches, max delay ms, max delay start in us), duplicated tids,
/// context switch bugs.
type PerfRows = (HashMap<i32, (u64, f64, u64)>, Vec<i32>, u64);

fn perf_latency(data: &Path) -> PerfRows {
    let text = run(Command::new("perf")
        .args(["sched", "latency", "-p", "-i"])
        .arg(data));
    let bugs = perf_switch_bugs(&text);
    let mut rows = HashMap::new();
    let mut dup = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('|').collect();
        if f.len() < 5 || !f[4].contains("max:") {
            continue;
        }
        let name = f[0].trim();
        let Some((_, tid)) = name.rsplit_once(':') else {
            continue;
        };
        let Ok(tid) = tid.parse::<i32>() else {
            continue;
        };
        let switches: u64 = f[2].trim().parse().unwrap();
        let max: f64 = f[4]
            .trim()
            .trim_start_matches("max:")
            .trim()
            .trim_end_matches("ms")
            .trim()
            .parse()
            .unwrap();
        // "max start:  6254.609527 s" (perf 6.1 prints it)
        let start_us = f
            .get(5)
            .and_then(|c| c.trim().strip_prefix("max start:"))
            .and_then(|c| c.trim().strip_suffix('s'))
            .and_then(|c| c.trim().split_once('.'))
            .and_then(|(a, b)| Some(a.parse::<u64>().ok()? * 1_000_000 + b.parse::<u64>().ok()?))
            .unwrap_or_else(|| panic!("no `max start` in: {line}"));
        if rows.insert(tid, (switches, max, start_us)).is_some() {
            dup.push(tid);
        }
    }
    (rows, dup, bugs)
}

/// perf sched timehist -s: tid -> run time in ms.
fn perf_runtime(data: &Path) -> (HashMap<i32, f64>, Vec<i32>) {
    let text = run(Command::new("perf")
        .args(["sched", "timehist", "-s", "-i"])
        .arg(data));
    let mut rows = HashMap::new();
    let mut dup = Vec::new();
    for line in text.lines() {
        // "   comm[tid]   parent   sched-in   run-time   min ..."
        let Some(close) = line.find("] ") else {
            continue;
        };
        let Some(open) = line[..close].rfind('[') else {
            continue;
        };
        // "comm[tid]", or "comm[tid/pid]" for a thread of another process.
        let inner = &line[open + 1..close];
        let Ok(tid) = inner.split('/').next().unwrap_or(inner).parse::<i32>() else {
            continue;
        };
        let cols: Vec<&str> = line[close + 1..].split_whitespace().collect();
        if cols.len() < 3 {
            continue;
        }
        let Ok(ms) = cols[2].parse::<f64>() else {
            continue;
        };
        if rows.insert(tid, ms).is_some() {
            dup.push(tid);
        }
    }
    (rows, dup)
}

fn record(dir: &Path) -> PathBuf {
    let data = dir.join("perf.data");
    run(Command::new("perf")
        .args(["record", "-q", "-e", EVENTS, "-a", "-o"])
        .arg(&data)
        .args([
            "--",
            "perf",
            "bench",
            "sched",
            "messaging",
            "-g",
            "4",
            "-l",
            "200",
        ]));
    data
}

fn load(path: &Path) -> Trace {
    schedscope_parser::load(path).unwrap_or_else(|e| panic!("{e}"))
}

/// Time per (tid, state) over the whole timeline, open intervals closed at its end.
fn state_totals(tl: &Timeline) -> BTreeMap<(i32, String), u64> {
    let mut out = BTreeMap::new();
    for t in &tl.threads {
        for iv in &t.intervals {
            *out.entry((t.tid.0, format!("{:?}", iv.state))).or_insert(0) +=
                iv.end_or(tl.end).since(iv.ts).0;
        }
    }
    out
}

/// Run time that `perf sched timehist` charges to a pseudo-thread instead of
/// prev_pid: the final switch-out of an exiting task is recorded with sample
/// pid/tid -1, and timehist charges the slice to the sample's thread (its
/// `:-1[-1/N]` row), while we charge it to prev_pid, the task that ran.
fn charged_to_sample_minus_one(trace: &Trace) -> HashMap<i32, u64> {
    let mut last: HashMap<u32, u64> = HashMap::new();
    let mut out = HashMap::new();
    for ev in &trace.events {
        if let EventData::Switch { prev_tid, .. } = ev.data {
            if let Some(t0) = last.insert(ev.cpu.0, ev.ts.0) {
                if ev.tid.0 < 0 && !prev_tid.is_idle() {
                    *out.entry(prev_tid.0).or_insert(0) += ev.ts.0 - t0;
                }
            }
        }
    }
    out
}

/// Every task's `delay_max_start` names the event `perf script` shows at
/// `delay_max_start_ns`: a sched_wakeup(_new) of the task, or its
/// sched_switch out with prev_state exactly `R` (not `R+`).
fn check_wait_starts(report: &LatencyReport, script: &str) {
    use latency::WaitStart;
    // (ts ns, kind, tid) of every event that can start a wait
    let mut starts = std::collections::HashSet::new();
    for l in script.lines() {
        let toks: Vec<&str> = l.split_whitespace().collect();
        let Some(i) = toks.iter().position(|t| {
            t.strip_suffix(':')
                .and_then(|x| x.split_once('.'))
                .is_some_and(|(a, b)| {
                    b.len() == 9 && a.parse::<u64>().is_ok() && b.parse::<u64>().is_ok()
                })
        }) else {
            continue;
        };
        let (a, b) = toks[i].trim_end_matches(':').split_once('.').unwrap();
        let ts = a.parse::<u64>().unwrap() * 1_000_000_000 + b.parse::<u64>().unwrap();
        let field = |k: &str| {
            toks.iter()
                .find_map(|t| t.strip_prefix(k))
                .and_then(|v| v.parse::<i32>().ok())
        };
        match toks.get(i + 1).copied() {
            Some("sched:sched_wakeup:") => {
                if let Some(pid) = field("pid=") {
                    starts.insert((ts, "wakeup", pid));
                }
            }
            Some("sched:sched_wakeup_new:") => {
                if let Some(pid) = field("pid=") {
                    starts.insert((ts, "wakeup_new", pid));
                }
            }
            Some("sched:sched_switch:") if toks.contains(&"prev_state=R") => {
                if let Some(pid) = field("prev_pid=") {
                    starts.insert((ts, "runnable_switch_out", pid));
                }
            }
            _ => {}
        }
    }
    let mut checked = 0;
    let mut bad = Vec::new();
    for t in report.tasks.iter().filter(|t| t.delay_max_ns > 0) {
        let kind = match t.delay_max_start {
            Some(WaitStart::Wakeup) => "wakeup",
            Some(WaitStart::WakeupNew) => "wakeup_new",
            Some(WaitStart::RunnableSwitchOut) => "runnable_switch_out",
            other => {
                bad.push(format!(
                    "tid {}: {other:?} for a wait of {} ns",
                    t.tid, t.delay_max_ns
                ));
                continue;
            }
        };
        if starts.contains(&(t.delay_max_start_ns, kind, t.tid)) {
            checked += 1;
        } else {
            bad.push(format!(
                "tid {}: no {kind} at {} ns in perf script",
                t.tid, t.delay_max_start_ns
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "largest waits whose start perf script does not show: {bad:#?}"
    );
    assert!(checked >= 100, "only {checked} wait starts checked");
    eprintln!("latency: {checked} largest-wait starts found in perf script");
}

#[test]
fn latency_and_runtime_agree_with_perf() {
    if let Some(why) = skip_reason() {
        eprintln!(
            "SKIPPED latency_and_runtime_agree_with_perf: {why} (needs root, perf and tracefs)"
        );
        return;
    }
    let dir = tmpdir("latency");
    let data = record(&dir);
    let trace = load(&data);
    let report = latency::compute(&trace).unwrap();
    let orphan = charged_to_sample_minus_one(&trace);
    let states_data = state_totals(&Timeline::build(&trace));
    drop(trace);

    let (perf_lat, dup_lat, perf_bugs) = perf_latency(&data);
    let (perf_run, dup_run) = perf_runtime(&data);
    assert!(
        perf_lat.len() >= 100,
        "perf listed only {} tasks",
        perf_lat.len()
    );
    let by_tid: HashMap<i32, &latency::TaskLatency> =
        report.tasks.iter().map(|t| (t.tid, t)).collect();

    // Same tasks: every task perf lists (it lists those with switches > 0),
    // and no task of ours with switches that perf does not list. A tid that
    // perf shows twice (reused by a new thread) is compared by presence only.
    let ours_with_switches: Vec<i32> = report
        .tasks
        .iter()
        .filter(|t| t.switches > 0)
        .map(|t| t.tid)
        .collect();
    for tid in &ours_with_switches {
        assert!(
            perf_lat.contains_key(tid),
            "tid {tid} has switches here but perf does not list it"
        );
    }
    let mut exact = 0;
    let mut diffs = Vec::new();
    let mut start_diffs = Vec::new();
    for (tid, &(switches, max_ms, start_us)) in &perf_lat {
        let t = by_tid
            .get(tid)
            .unwrap_or_else(|| panic!("perf lists tid {tid}, we do not"));
        if dup_lat.contains(tid) {
            continue;
        }
        // perf prints %8.3f ms, i.e. rounded to the microsecond.
        let ours_ms = (t.delay_max_ns as f64 / 1e6 * 1000.0).round() / 1000.0;
        if (ours_ms - max_ms).abs() < 0.0005 && t.switches == switches {
            exact += 1;
            // perf prints the start to the microsecond, truncated; with a
            // zero max it prints the start of the first wait, we keep 0
            if t.delay_max_ns > 0 && t.delay_max_start_ns / 1000 != start_us {
                start_diffs.push((*tid, start_us, t.delay_max_start_ns));
            }
        } else {
            diffs.push((*tid, switches, max_ms, t.switches, t.delay_max_ns));
        }
    }
    let n = perf_lat.len() - dup_lat.len();
    assert!(
        start_diffs.is_empty(),
        "max delay start differs from perf's (tid, perf us, our ns): {start_diffs:?}"
    );
    assert!(
        exact * 100 >= n * 99,
        "max delay/switches equal for only {exact}/{n} tasks; differing (tid, perf switches, perf max ms, our switches, our max ns): {diffs:?}"
    );
    // "Context switch bugs": a CPU switches out a task that its previous
    // switch did not switch in. perf reports about 1% of them on these
    // recordings even when it reports no lost events; in the ones inspected,
    // a freshly forked sched-messaging task is switched out on a CPU whose
    // last recorded switch went to idle, i.e. the recording simply has no
    // switch-in for it. perf's latency state machine carries on through
    // them and so does ours, with the same rules (see latency.rs), so the
    // per-task numbers still agree; both count the same bugs.
    assert_eq!(report.context_switch_bugs, perf_bugs, "context switch bugs");
    eprintln!(
        "latency: {exact}/{n} tasks equal to the microsecond; context switch bugs {}",
        report.context_switch_bugs
    );

    // Run time against timehist, within 0.1% or perf's print rounding.
    let mut checked = 0;
    for (tid, &ms) in &perf_run {
        if *tid <= 0 || dup_run.contains(tid) {
            continue;
        }
        let ours_ns = by_tid.get(tid).map(|t| t.runtime_ns).unwrap_or(0)
            - orphan.get(tid).copied().unwrap_or(0);
        // timehist prints whole microseconds, truncated (print_sched_time).
        let ours_us = ours_ns / 1000;
        let perf_us = (ms * 1000.0).round() as u64;
        let within =
            ours_us == perf_us || (ours_us as f64 - perf_us as f64).abs() <= perf_us as f64 * 0.001;
        assert!(
            within,
            "tid {tid}: run time {ours_ns} ns here, {ms:.3} ms in perf sched timehist"
        );
        checked += 1;
    }
    assert!(checked >= 100, "only {checked} run times compared");

    // The same recording as perf script text gives the same numbers.
    let text = dir.join("perf.txt");
    let script = run(Command::new("perf")
        .args(["script", "--ns", "-i"])
        .arg(&data));
    check_wait_starts(&report, &script);
    std::fs::write(&text, script).unwrap();
    let text_trace = load(&text);
    let from_text = latency::compute(&text_trace).unwrap();
    // Thread-state totals (ns per tid and state) agree between the two
    // renditions of the recording.
    let states_text = state_totals(&Timeline::build(&text_trace));
    drop(text_trace);
    assert!(
        states_data.len() > 100,
        "{} (tid, state) totals",
        states_data.len()
    );
    assert_eq!(
        states_data, states_text,
        "thread-state totals differ between perf.data and text"
    );
    let key = |r: &LatencyReport| {
        let mut v: Vec<(i32, u64, u64, u64, u64)> = r
            .tasks
            .iter()
            .map(|t| {
                (
                    t.tid,
                    t.switches,
                    t.delay_max_ns,
                    t.delay_total_ns,
                    t.runtime_ns,
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        key(&report),
        key(&from_text),
        "perf.data and perf script text disagree"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
