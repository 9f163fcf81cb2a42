//! Throttled periods ([`schedscope_analysis::throttle`], the TUI's `r`
//! overlay) on a real throttling recording: `scripts/cgroup-scenario.sh`
//! runs three CPU burners, each in its own cgroup capped at half a CPU,
//! around `schedscope record`; the kernel's own cpu.stat deltas over the
//! recording (the script's `--stat-out`, read apart from the recorder) are
//! the oracle.
//!
//! Needs root, perf and a cgroup cpu controller; skips (saying why)
//! otherwise. Timing-sensitive: at very high load a 50% quota may not be
//! reached, so the burners are not throttled (the test then says so and
//! checks only what holds without throttling).

#[path = "record_common/mod.rs"]
mod common;

use common::*;
use schedscope_analysis::throttle::Throttling;
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

#[test]
fn throttled_periods_match_the_kernels_cpu_stat() {
    require_root_and_perf!();
    let dir = tmpdir("throttle");
    let data = dir.join("thr.data");
    let stat = dir.join("cpu.stat.txt");
    let root = format!("ssThr{}", std::process::id());
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new("bash")
        .arg(repo.join("scripts/cgroup-scenario.sh"))
        .args(["--root", &root, "--tasks", "3", "--l1-shares", "262144"])
        .arg("--stat-out")
        .arg(&stat)
        .arg("--")
        .arg(BIN)
        .args(["record", "-o"])
        .arg(&data)
        .args(["-e", "sched:sched_switch", "-e", "sched:sched_wakeup"])
        .args(["--", "sleep", "1.5"])
        .output()
        .expect("run cgroup-scenario.sh");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(77) {
        eprintln!("SKIPPED: no cgroup cpu controller:\n{stderr}");
        return;
    }
    assert!(out.status.success(), "scenario failed:\n{stderr}");
    // path -> (nr_throttled, throttled_ns) over the whole recording
    let kernel: HashMap<String, (u64, u64)> = std::fs::read_to_string(&stat)
        .expect("cpu.stat deltas")
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((
                f.first()?.to_string(),
                (f.get(2)?.parse().ok()?, f.get(3)?.parse().ok()?),
            ))
        })
        .collect();
    assert_eq!(kernel.len(), 3, "three burner cgroups in {stat:?}");

    let trace = schedscope_parser::load(&data).expect("decode the recording");
    let (t0, t1) = (
        trace.events.first().map_or(0, |e| e.ts.0),
        trace.events.last().map_or(0, |e| e.ts.0),
    );
    let thr = Throttling::compute(&trace);
    for (path, &(k_n, k_ns)) in &kernel {
        let Some(i) = thr.cgroups.iter().position(|c| &c.path == path) else {
            panic!("cgroup {path} was not sampled: {:?}", thr.cgroups);
        };
        let cg = &thr.cgroups[i];
        assert_eq!(cg.quota_us, 50_000, "{path}");
        // Its burner (comm = leaf name) is a member: the recorder stores
        // membership, so this is the membership mapping, not the name one.
        let leaf = path.rsplit('/').next().unwrap_or_default();
        assert!(
            cg.members.iter().any(|&t| trace.tasks.comm(t) == leaf),
            "{path}: members {:?} lack the burner {leaf}",
            cg.members
        );
        let ps: Vec<_> = thr.periods.iter().filter(|p| p.cgroup == i).collect();
        let (n, ns): (u64, u64) = (
            ps.iter().map(|p| p.nr_throttled).sum(),
            ps.iter().map(|p| p.throttled_ns).sum(),
        );
        println!(
            "{path}: {} periods, {n} throttles, {:.1} ms; kernel over the recording: {k_n}, {:.1} ms",
            ps.len(),
            ns as f64 / 1e6,
            k_ns as f64 / 1e6
        );
        // The samples fall inside the recording, so they see at most what
        // the kernel counted over it ...
        assert!(
            n <= k_n && ns <= k_ns,
            "{path}: {n}/{ns} > kernel {k_n}/{k_ns}"
        );
        for p in &ps {
            assert!(p.start_ns < p.end_ns && p.nr_throttled > 0, "{p:?}");
            // 100 ms sampling (with slack for a loaded machine)
            assert!(p.end_ns - p.start_ns < 1_000_000_000, "{p:?}");
            assert!(
                p.start_ns + 200_000_000 >= t0 && p.end_ns <= t1 + 200_000_000,
                "{p:?} outside the events {t0}..{t1}"
            );
        }
        // ... and, when the kernel throttled it many times, a good part of
        // it: the kernel's window also holds the recorder's start-up and
        // finish (0.1-1 s on a loaded machine, burners still burning)
        // around the 1.5 s of samples.
        if k_n >= 8 {
            assert!(n * 4 >= k_n, "{path}: {n} of the kernel's {k_n} throttles");
            assert!(ns * 4 >= k_ns, "{path}: {ns} of the kernel's {k_ns} ns");
        } else {
            eprintln!("{path}: only {k_n} throttles (machine too loaded to reach the quota?)");
        }
    }
}
