//! Issue 13 point 9: the missing-events errors of latency, gang, lhp and idle
//! list only the events a section really requires (`missing`), and apart
//! from them the absent ones that would improve its result (`improves`),
//! in the JSON error object and in the message. Each case is a small ftrace
//! text trace with one kind of event left out; the expected lists are the
//! sections' documented needs:
//!
//! * latency: sched_switch (prev_state=R switch-outs start waits without
//!   any wakeup; sched_wakeup improves it);
//! * gang and idle: sched_switch and a wakeup event, either sched_wakeup or
//!   sched_waking (so sched_wakeup is the one named as required and
//!   sched_waking improves); idle's balancing proxies improve it;
//! * lhp: pause-loop exits need kvm_exit/kvm_entry, sched_switch and a
//!   wakeup event; waker-preempted time needs sched_switch and
//!   sched_waking (the waker's own context), so without kvm events and
//!   without sched_waking the whole section lists the kvm events as
//!   required and sched_waking as an improvement.

use serde_json::{json, Value};
use std::process::Command;

/// Two CPUs, two tasks: a yield, a sleep, a wakeup of 6 onto CPU 1
/// (sched_waking then sched_wakeup), both tasks sleep at the end.
const FULL: &str = "\
# tracer: nop
 a-5 [000] .... 1.000000: sched_switch: prev_comm=a prev_pid=5 prev_prio=120 prev_state=R ==> next_comm=b next_pid=6 next_prio=120
 b-6 [000] .... 1.000010: sched_switch: prev_comm=b prev_pid=6 prev_prio=120 prev_state=S ==> next_comm=a next_pid=5 next_prio=120
 a-5 [000] d... 1.000015: sched_waking: comm=b pid=6 prio=120 target_cpu=001
 a-5 [000] d... 1.000016: sched_wakeup: comm=b pid=6 prio=120 target_cpu=001
 <idle>-0 [001] .... 1.000020: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=b next_pid=6 next_prio=120
 a-5 [000] .... 1.000030: sched_switch: prev_comm=a prev_pid=5 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
 b-6 [001] .... 1.000040: sched_switch: prev_comm=b prev_pid=6 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
";

const PROXIES: [&str; 5] = [
    "sched:sched_migrate_task",
    "irq:softirq_entry",
    "irq:softirq_exit",
    "csd:csd_queue_cpu",
    "sched:sched_wake_idle_without_ipi",
];

/// `report --all --format json` on FULL without the lines naming any of
/// `drop`; the JSON and stderr.
fn report_without(tag: &str, drop: &[&str]) -> (Value, String) {
    let dir = schedscope_testkit::tmpdir(&format!("missing-{tag}"));
    let path = dir.join(format!("{tag}.txt"));
    let text: String = FULL
        .lines()
        .filter(|l| !drop.iter().any(|d| l.contains(&format!(" {d}:"))))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&path, text).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_schedscope"))
        .args(["report", "--all", "--format", "json"])
        .arg(&path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!err.contains("panicked"), "{err}");
    let v: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{tag}: no JSON ({e}): {err}"));
    let _ = std::fs::remove_dir_all(&dir);
    (v, err)
}

/// The section ran (no error object).
fn ran(r: &Value, section: &str) {
    assert!(
        r[section].get("error").is_none(),
        "{section} should run: {}",
        r[section]
    );
}

/// The error object lists exactly `missing` and `improves`, its commands
/// record both, and the message names as missing only `missing`.
fn needs(e: &Value, message: &str, missing: &[&str], improves: &[&str]) {
    assert_eq!(e["kind"], "missing_events", "{e}");
    assert_eq!(e["missing"], json!(missing), "{e}");
    assert_eq!(e["improves"], json!(improves), "{e}");
    for ev in missing.iter().chain(improves) {
        assert!(
            e["record_command"]
                .as_str()
                .unwrap()
                .contains(&format!("-e +{ev}")),
            "{e}"
        );
        assert!(e["perf_command"].as_str().unwrap().contains(ev), "{e}");
    }
    let head = format!("the trace has no {} events;", missing.join(", "));
    assert!(message.contains(&head), "`{head}` not in: {message}");
    if improves.is_empty() {
        assert!(!message.contains("would improve"), "{message}");
    } else {
        assert!(
            message.contains(&format!(
                "not required, {} would improve the result",
                improves.join(", ")
            )),
            "{message}"
        );
    }
}

fn section_error<'a>(r: &'a Value, section: &str) -> (&'a Value, &'a str) {
    (
        &r[section]["error"],
        r[section]["message"]
            .as_str()
            .unwrap_or_else(|| panic!("{section}: no message: {}", r[section])),
    )
}

#[test]
fn without_sched_waking_everything_runs_but_lhp_names_what_it_lacks() {
    let (r, _) = report_without("no-waking", &["sched_waking"]);
    for s in ["latency", "gang", "idle"] {
        ran(&r, s);
    }
    let (e, m) = section_error(&r, "lhp");
    needs(
        e,
        m,
        &["kvm:kvm_exit", "kvm:kvm_entry"],
        &["sched:sched_waking"],
    );
    assert!(
        m.contains("waker-preempted time needs sched:sched_switch and sched:sched_waking"),
        "{m}"
    );
}

#[test]
fn with_sched_waking_alone_the_wakeup_sections_run() {
    let (r, _) = report_without("waking-only", &["sched_wakeup"]);
    for s in ["latency", "gang", "idle"] {
        ran(&r, s);
    }
    assert_eq!(r["latency"]["wakeup_event"], "sched:sched_waking");
    // lhp: waker-preempted runs, the pause-loop part names the kvm events
    assert!(
        r["lhp"]["waker_preempted"].get("error").is_none(),
        "{}",
        r["lhp"]
    );
    let ple = &r["lhp"]["ple"];
    needs(
        &ple["error"],
        ple["message"].as_str().unwrap(),
        &["kvm:kvm_exit", "kvm:kvm_entry"],
        &[],
    );
}

#[test]
fn without_any_wakeup_sched_wakeup_is_required_and_sched_waking_improves() {
    let (r, _) = report_without("no-wakeups", &["sched_waking", "sched_wakeup"]);
    // latency runs on prev_state=R switch-outs alone
    ran(&r, "latency");
    assert_eq!(r["latency"]["waits_by_start"]["runnable_switch_out"], 1);
    let (e, m) = section_error(&r, "gang");
    needs(e, m, &["sched:sched_wakeup"], &["sched:sched_waking"]);
    assert!(
        m.contains("either sched:sched_wakeup or sched:sched_waking serves"),
        "{m}"
    );
    let (e, m) = section_error(&r, "idle");
    let mut improves = vec!["sched:sched_waking"];
    improves.extend(PROXIES);
    needs(e, m, &["sched:sched_wakeup"], &improves);
    let (e, m) = section_error(&r, "lhp");
    needs(
        e,
        m,
        &["kvm:kvm_exit", "kvm:kvm_entry", "sched:sched_wakeup"],
        &["sched:sched_waking"],
    );
}

#[test]
fn without_sched_switch_only_it_is_required() {
    let (r, _) = report_without("no-switch-waking", &["sched_switch", "sched_waking"]);
    let (e, m) = section_error(&r, "latency");
    needs(e, m, &["sched:sched_switch"], &[]);
    let (e, m) = section_error(&r, "gang");
    needs(e, m, &["sched:sched_switch"], &["sched:sched_waking"]);
    let (e, m) = section_error(&r, "idle");
    let mut improves = vec!["sched:sched_waking"];
    improves.extend(PROXIES);
    needs(e, m, &["sched:sched_switch"], &improves);

    let (r, _) = report_without("no-switch", &["sched_switch"]);
    let (e, m) = section_error(&r, "gang");
    needs(e, m, &["sched:sched_switch"], &[]);
    let (e, m) = section_error(&r, "lhp");
    needs(
        e,
        m,
        &["kvm:kvm_exit", "kvm:kvm_entry", "sched:sched_switch"],
        &[],
    );
    let (e, m) = section_error(&r, "idle");
    needs(e, m, &["sched:sched_switch"], &PROXIES);
}
