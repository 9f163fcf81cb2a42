//! A tracepoint declared with `__perf_count` (sched_stat_runtime: its
//! count is the runtime in ns) gives one sample per event in
//! `schedscope record`'s file, as in perf's: no sample is written twice
//! (without PERIOD in the sample type the kernel wrote each one up to 400
//! times), and each carries the runtime as its period. Needs root and perf.

#[path = "record_common/mod.rs"]
mod common;

use common::*;
use std::collections::HashSet;
use std::process::Command;

#[test]
fn stat_runtime_events_are_recorded_once_each() {
    require_root_and_perf!();
    let dir = tmpdir("perf_count");
    let out = record(
        &dir,
        "r.data",
        &["-e", "sched:sched_switch", "-e", "sched:sched_stat_runtime"],
        &["perf", "bench", "sched", "pipe", "-l", "20000"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = dir.join("r.data");
    let script = Command::new("perf")
        .args(["script", "--ns", "-F", "cpu,time,period,event,trace", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        script.status.success(),
        "{}",
        String::from_utf8_lossy(&script.stderr)
    );
    let text = String::from_utf8_lossy(&script.stdout);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("sched:sched_stat_runtime"))
        .collect();
    assert!(lines.len() >= 100, "only {} samples:\n{text}", lines.len());
    let distinct: HashSet<&str> = lines.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        lines.len(),
        "samples written more than once (same CPU, ns time and fields)"
    );
    // the period is the runtime: "[000] 123.456789012:  2883719 sched:...: ... runtime=2883719 [ns]"
    for l in &lines {
        let f: Vec<&str> = l.split_whitespace().collect();
        let period = f[2];
        let runtime = l
            .split_whitespace()
            .find_map(|w| w.strip_prefix("runtime="))
            .expect(l);
        assert_eq!(period, runtime, "{l}");
    }
    let t = schedscope_parser::load(&file).unwrap();
    assert_eq!(t.count("sched:sched_stat_runtime"), lines.len() as u64);
}
