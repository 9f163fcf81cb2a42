//! `schedscope report` end to end, on the simulator's fixture traces
//! (fixtures/sim, known answers) and against `perf sched latency` on the
//! same file when perf is installed.

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sim")
        .join(name)
}

fn schedscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schedscope"))
        .args(args)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(args: &[&str]) -> Value {
    let o = schedscope(args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn latency_is_the_default_and_json_keys_are_the_contract() {
    let data = fixture("bare-metal-s1.data");
    let d = json(&["report", "--format", "json", data.to_str().unwrap()]);
    let obj = d.as_object().unwrap();
    let mut keys: Vec<&String> = obj.keys().collect();
    keys.sort();
    assert_eq!(keys, vec!["latency", "trace"], "only the default section");
    for k in [
        "path",
        "format",
        "events",
        "lost",
        "lost_by_cpu",
        "cpus",
        "start_ns",
        "end_ns",
        "events_by_name",
    ] {
        assert!(d["trace"].get(k).is_some(), "trace.{k} missing");
    }
    assert_eq!(d["trace"]["format"], "perf_data");
    assert_eq!(d["trace"]["events"], 360);
    assert_eq!(d["trace"]["cpus"], 2);
    assert_eq!(
        d["trace"]["lost_by_cpu"],
        serde_json::json!([]),
        "no loss records"
    );
    let tasks = d["latency"]["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 7);
    for t in tasks {
        for k in [
            "tid",
            "tgid",
            "comm",
            "switches",
            "runtime_ns",
            "wakeups",
            "delay_max_ns",
            "delay_avg_ns",
            "delay_max_at_ns",
        ] {
            assert!(t.get(k).is_some(), "latency.tasks[].{k} missing in {t}");
        }
    }
    // Run time = the simulator's integral of each thread's running time,
    // except for the slice of a task still running when the trace ends:
    // like perf sched timehist, run time is charged at switch-out. So at most
    // one task per CPU falls short, by less than one 1 ms slice (+ a tick).
    let truth: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("bare-metal-s1.truth.json")).unwrap(),
    )
    .unwrap();
    let mut compared = 0;
    let mut cut_short = 0;
    for g in truth["gangs"].as_array().unwrap() {
        for (m, ns) in g["members"]
            .as_array()
            .unwrap()
            .iter()
            .zip(g["member_running_ns"].as_array().unwrap())
        {
            let t = tasks.iter().find(|t| t["tid"] == *m).unwrap();
            let short = ns.as_u64().unwrap() - t["runtime_ns"].as_u64().unwrap();
            assert!(short <= 1_010_000, "tid {m}: {short} ns short");
            if short > 0 {
                cut_short += 1;
            }
            assert_eq!(t["tgid"], g["tgid"], "tid {m}");
            compared += 1;
        }
    }
    assert_eq!(compared, 7);
    assert!(
        cut_short <= 2,
        "{cut_short} tasks short of their run time on 2 CPUs"
    );
}

#[test]
fn agrees_with_perf_sched_latency_on_the_fixture() {
    let data = fixture("bare-metal-s1.data");
    let perf = match Command::new("perf")
        .args(["sched", "latency", "-p", "-i"])
        .arg(&data)
        .output()
    {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        _ => {
            eprintln!("SKIPPED agrees_with_perf_sched_latency_on_the_fixture: perf is not installed or failed");
            return;
        }
    };
    let d = json(&["report", "--format", "json", data.to_str().unwrap()]);
    let tasks = d["latency"]["tasks"].as_array().unwrap();
    let mut rows = 0;
    for line in perf.lines().filter(|l| l.contains("max:")) {
        let f: Vec<&str> = line.split('|').collect();
        let tid: i64 = f[0].trim().rsplit_once(':').unwrap().1.parse().unwrap();
        let switches: u64 = f[2].trim().parse().unwrap();
        let num = |s: &str, key: &str| -> f64 {
            s.trim()
                .trim_start_matches(key)
                .trim()
                .trim_end_matches("ms")
                .trim()
                .parse()
                .unwrap()
        };
        let avg = num(f[3], "avg:");
        let max = num(f[4], "max:");
        let end: f64 = f[6]
            .trim()
            .trim_start_matches("max end:")
            .trim_end_matches('s')
            .trim()
            .parse()
            .unwrap();
        let t = tasks.iter().find(|t| t["tid"] == tid).unwrap();
        assert_eq!(t["switches"], switches, "tid {tid}");
        let ms = |v: &Value| (v.as_u64().unwrap() as f64 / 1e6 * 1e3).round() / 1e3;
        assert_eq!(ms(&t["delay_max_ns"]), max, "tid {tid}");
        assert_eq!(ms(&t["delay_avg_ns"]), avg, "tid {tid}");
        let at = t["delay_max_at_ns"].as_u64().unwrap() as f64 / 1e9;
        assert!((at - end).abs() < 1e-6, "tid {tid}");
        rows += 1;
    }
    assert_eq!(rows, 7, "perf listed {rows} tasks:\n{perf}");

    // Run time against perf sched timehist -s (whole microseconds, truncated).
    let th = Command::new("perf")
        .args(["sched", "timehist", "-s", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    let th = String::from_utf8_lossy(&th.stdout);
    let mut rt = 0;
    for line in th.lines() {
        let Some((name, rest)) = line.split_once("] ") else {
            continue;
        };
        let Some((_, tid)) = name.rsplit_once('[') else {
            continue;
        };
        // "comm[tid]", or "comm[tid/pid]" for a thread of another process.
        let tid = tid.split('/').next().unwrap_or(tid);
        let Ok(tid) = tid.parse::<i64>() else {
            continue;
        };
        let cols: Vec<&str> = rest.split_whitespace().collect();
        let Some(ms) = cols.get(2).and_then(|c| c.parse::<f64>().ok()) else {
            continue;
        };
        if let Some(t) = tasks.iter().find(|t| t["tid"] == tid) {
            let us = t["runtime_ns"].as_u64().unwrap() / 1000;
            assert_eq!(us, (ms * 1000.0).round() as u64, "tid {tid} run time");
            rt += 1;
        }
    }
    assert_eq!(rt, 7, "timehist rows matched: {rt}\n{th}");
}

#[test]
fn text_report_headline_table_and_top() {
    let data = fixture("bare-metal-s1.data");
    let o = schedscope(&["report", "--latency", "--top", "3", data.to_str().unwrap()]);
    assert!(o.status.success());
    let s = stdout(&o);
    assert!(s.contains("== Scheduling latency =="), "{s}");
    assert!(
        s.contains("Scheduling latency: max delay 2.331 ms (worker-p1:5102 at 1000.002331 s, waiting since its sched:sched_wakeup_new)"),
        "{s}"
    );
    let rows = s.lines().filter(|l| l.starts_with("  worker-")).count();
    assert_eq!(rows, 3, "{s}");
    assert!(s.contains("(4 more tasks not shown"), "{s}");
}

#[test]
fn failed_sections_print_and_exit_code_counts_only_total_failure() {
    let data = fixture("bare-metal-s1.data");
    let path = data.to_str().unwrap();
    // No IPI/TLB events: --tlb alone fails -> exit 1 with the reason.
    let o = schedscope(&["report", "--tlb", path]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("the trace has no"), "{}", stdout(&o));
    // --all: tlb fails, the others print; exit 0; JSON carries {error: ...}.
    let o = schedscope(&["report", "--all", path]);
    assert_eq!(o.status.code(), Some(0));
    let s = stdout(&o);
    assert!(
        s.contains("== Scheduling latency ==") && s.contains("== TLB shootdowns"),
        "{s}"
    );
    let d = json(&["report", "--all", "--format", "json", path]);
    assert_eq!(d["tlb"]["error"]["kind"], "missing_events", "{}", d["tlb"]);
    assert!(d["latency"]["tasks"].is_array());
    for k in ["gang", "lhp", "idle"] {
        assert!(d.get(k).is_some(), "{k} missing with --all");
    }
}

#[test]
fn file_errors_name_the_file_and_exit_1() {
    let o = schedscope(&["report", "/nonexistent/trace.data"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("schedscope: /nonexistent/trace.data: "),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn invalid_gang_of_is_a_usage_error_before_loading() {
    // The file does not exist: the spec is rejected before it is opened.
    for (spec, why) in [
        ("pid=abc", "`abc` is not a process id"),
        ("tids=1,x", "`x` is not a thread id"),
        ("comm=(", "bad regular expression"),
        ("size=4", "unknown key `size`"),
        (
            "cgroup",
            "expected pid=N, tids=A,B,C, comm=REGEX or cgroup=PATH",
        ),
    ] {
        let o = schedscope(&["report", "--gang-of", spec, "/nonexistent/trace.data"]);
        assert_eq!(o.status.code(), Some(2), "{spec}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.starts_with(&format!("schedscope: invalid --gang-of {spec}: "))
                && err.contains(why),
            "{spec}: {err}"
        );
        assert!(
            !err.contains("nonexistent"),
            "loaded before checking: {err}"
        );
        assert!(o.stdout.is_empty());
    }
    // A valid spec goes on to load the file (and fails on it: exit 1).
    let o = schedscope(&[
        "report",
        "--gang-of",
        "cgroup=/a",
        "/nonexistent/trace.data",
    ]);
    assert_eq!(o.status.code(), Some(1));
    // A spec that is valid but names nothing in the trace is still the
    // gang section's error, after loading.
    let data = fixture("bare-metal-s1.data");
    let o = schedscope(&["report", "--gang-of", "pid=999999", data.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("invalid --gang-of pid=999999: process 999999 does not appear"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn text_and_perf_data_renditions_give_the_same_json() {
    let a = json(&[
        "report",
        "--format",
        "json",
        fixture("bare-metal-s1.data").to_str().unwrap(),
    ]);
    let b = json(&[
        "report",
        "--format",
        "json",
        fixture("bare-metal-s1.txt").to_str().unwrap(),
    ]);
    assert_eq!(a["latency"], b["latency"]);
}
