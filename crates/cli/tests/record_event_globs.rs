//! `schedscope record -e` with perf's spellings: globs (`sched:*`),
//! comma lists, `+` additions, checked against what perf itself records
//! for the same `-e` (`perf evlist` lists a file's events) and against the
//! kernel's tracefs. Needs root and perf; each test says why it skips
//! otherwise.

#[path = "record_common/mod.rs"]
mod common;

use common::*;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

/// Recordings are system-wide: run them one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// The events of a perf.data file as `perf evlist` names them, without
/// perf's own tracking event.
fn evlist(file: &Path) -> BTreeSet<String> {
    let o = Command::new("perf")
        .args(["evlist", "-i"])
        .arg(file)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty() && !l.starts_with("dummy:"))
        .map(|l| l.trim().to_string())
        .collect()
}

/// `schedscope record` with `extra`, recording for 0.2 s.
fn record_briefly(dir: &Path, file: &str, extra: &[&str]) -> std::process::Output {
    let mut args = extra.to_vec();
    args.extend(["--duration", "0.2"]);
    record(dir, file, &args, &[])
}

#[test]
fn sched_glob_records_what_perf_records_for_it() {
    require_root_and_perf!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmpdir("glob-sched");
    let out = record_briefly(&dir, "s.data", &["-e", "sched:*"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ours = evlist(&dir.join("s.data"));
    let perf = Command::new("perf")
        .args(["record", "-q", "-a", "-e", "sched:*", "-o"])
        .arg(dir.join("p.data"))
        .args(["--", "sleep", "0.1"])
        .output()
        .unwrap();
    assert!(
        perf.status.success(),
        "{}",
        String::from_utf8_lossy(&perf.stderr)
    );
    assert_eq!(
        ours,
        evlist(&dir.join("p.data")),
        "same events as perf's glob"
    );
    // and every tracepoint the kernel has under events/sched/
    let tracefs: BTreeSet<String> = std::fs::read_dir("/sys/kernel/tracing/events/sched")
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| format!("sched:{}", e.file_name().to_string_lossy()))
        .collect();
    assert_eq!(ours, tracefs);
    assert!(ours.contains("sched:sched_switch") && ours.len() > 10);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn comma_lists_and_plus_globs() {
    require_root_and_perf!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmpdir("glob-list");
    let out = record_briefly(
        &dir,
        "l.data",
        &["-e", "sched:sched_switch,sched:sched_wakeup"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        evlist(&dir.join("l.data")),
        BTreeSet::from([
            "sched:sched_switch".to_string(),
            "sched:sched_wakeup".to_string()
        ])
    );

    // `+glob` adds to the default set: the defaults alone, then with it
    let out = record_briefly(&dir, "d.data", &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let defaults = evlist(&dir.join("d.data"));
    let out = record_briefly(&dir, "a.data", &["-e", "+irq:irq_handler_*"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let added = evlist(&dir.join("a.data"));
    let want: BTreeSet<String> = defaults
        .iter()
        .cloned()
        .chain([
            "irq:irq_handler_entry".to_string(),
            "irq:irq_handler_exit".to_string(),
        ])
        .collect();
    assert_eq!(added, want);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unknown_events_and_empty_globs_are_errors_naming_them() {
    require_root_and_perf!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tmpdir("glob-bad");
    for (spec, want) in [
        (
            "sched:nomatch_*",
            "schedscope: event 'sched:nomatch_*': matches no tracepoint under /sys/kernel/tracing/events \
             (list them with `ls /sys/kernel/tracing/events/sched`)\n",
        ),
        (
            "+nosuchsys*:*",
            "schedscope: event '+nosuchsys*:*': matches no tracepoint under /sys/kernel/tracing/events \
             (list them with `ls /sys/kernel/tracing/events/*`)\n",
        ),
        (
            "sched:sched_switch,sched:nope",
            "schedscope: event 'sched:nope': no such tracepoint \
             (/sys/kernel/tracing/events/sched/nope does not exist)\n",
        ),
    ] {
        let out = record(&dir, "x.data", &["-e", spec], &["true"]);
        assert_eq!(out.status.code(), Some(2), "{spec}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), want, "{spec}");
        assert!(!dir.join("x.data").exists(), "{spec}: no file written");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
