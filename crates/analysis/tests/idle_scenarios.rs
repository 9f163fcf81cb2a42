//! Real CFS-bandwidth scenarios recorded on this machine.
//!
//! * capped: `scripts/cgroup-scenario.sh` (nested cgroups, each burner capped
//!   at 50% of a CPU) recorded with `perf record -a`: the analysis must find
//!   throttled wasted idle, and the kernel's own cpu.stat must agree that the
//!   groups were throttled.
//! * uncapped: the same tree with `--no-caps`: throttled wasted idle near zero.
//! * hackbench bursts (no caps): imbalance wasted idle, gaps ended by pulls,
//!   wait-before-pull figures.
//!
//! Each recording is cross-checked against `scripts/idle-oracle.py`, an
//! independent per-CPU idle computation over `perf script` output (within 2%).
//!
//! Needs root, perf and tracefs; skips with a message without them, and the
//! cgroup scenarios skip only when no cgroup cpu controller exists.

use schedscope_analysis::idle::{self, IdleReport};
use schedscope_analysis::{Context, Options, Timeline};
use schedscope_render::RenderText;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};

/// The scenarios measure the whole machine: one at a time, even when the
/// test harness runs tests in parallel (`cargo test` without
/// `--test-threads=1`), or the burners of one fill the idle of another.
static MACHINE: Mutex<()> = Mutex::new(());

fn machine() -> MutexGuard<'static, ()> {
    MACHINE.lock().unwrap_or_else(|e| e.into_inner())
}

const EVENTS: &str = "sched:sched_switch,sched:sched_waking,sched:sched_wakeup,sched:sched_migrate_task,irq:softirq_entry,irq:softirq_exit,csd:csd_queue_cpu,sched:sched_wake_idle_without_ipi";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A scratch directory removed when dropped (recordings are tens of MB).
struct TmpDir(PathBuf);

impl Drop for TmpDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tmpdir(name: &str) -> TmpDir {
    let d = std::env::temp_dir().join(format!("schedscope-idle-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create temp dir");
    TmpDir(d)
}

/// Why these tests cannot run here, if they cannot.
fn unavailable() -> Option<String> {
    if !schedscope_testkit::id_u_is_root()? {
        return Some("not root".into());
    }
    if !schedscope_testkit::perf_starts() {
        return Some("perf not installed".into());
    }
    if !Path::new("/sys/kernel/tracing/events/sched/sched_switch").exists() {
        return Some("tracefs not mounted at /sys/kernel/tracing".into());
    }
    None
}

fn perf_record(out: &Path) -> Vec<String> {
    vec![
        "perf".into(),
        "record".into(),
        "-q".into(),
        "-a".into(),
        "-e".into(),
        EVENTS.into(),
        "-o".into(),
        out.display().to_string(),
        "--".into(),
    ]
}

/// The idle report of `path`, and the share of CPU time that went to tasks
/// outside the scenario (`ours` tells a scenario task by its comm).
fn analyze(path: &Path, ours: &dyn Fn(&str) -> bool) -> (IdleReport, f64) {
    let trace =
        schedscope_parser::load(path).unwrap_or_else(|e| panic!("loading {}: {e}", path.display()));
    let timeline = Timeline::build(&trace);
    let opts = Options {
        top: 10,
        ..Options::default()
    };
    let ctx = Context {
        trace: &trace,
        timeline: &timeline,
        opts: &opts,
    };
    let r = idle::analyze(&ctx).unwrap_or_else(|e| panic!("idle analysis: {e}"));
    let mut text = Vec::new();
    r.render_text(
        &schedscope_render::TextOptions { top: ctx.opts.top },
        &mut text,
    )
    .expect("render");
    println!("{}", String::from_utf8_lossy(&text));
    let end = trace.end();
    let foreign: u64 = timeline
        .cpus
        .iter()
        .flatten()
        .filter(|run| !run.tid.is_idle() && !ours(trace.tasks.comm(run.tid)))
        .map(|run| run.end.unwrap_or(end).0.saturating_sub(run.ts.0))
        .sum();
    let cpu_time = (r.duration_ns * r.cpus.len() as u64).max(1);
    (r, foreign as f64 / cpu_time as f64)
}

/// On a machine shared with other work (the dev VM runs several builds at
/// once), that work fills every idle slot and no scenario can show wasted
/// idle: say so instead of failing. A dedicated CI runner never hits this.
fn saturated_by_others(test: &str, r: &IdleReport, foreign: f64) -> bool {
    let cpu_time = (r.duration_ns * r.cpus.len() as u64).max(1) as f64;
    let idle = r.idle_ns as f64 / cpu_time;
    if foreign > 0.10 && idle < 0.02 {
        println!(
            "SKIP {test}: inconclusive, other work used {:.0}% of the CPUs and left {:.2}% idle",
            foreign * 100.0,
            idle * 100.0
        );
        return true;
    }
    false
}

/// Per-CPU idle from the oracle script must match ours within 2%.
fn check_oracle(path: &Path, r: &IdleReport) {
    let out = Command::new("python3")
        .arg(repo().join("scripts/idle-oracle.py"))
        .arg(path)
        .output()
        .expect("run idle-oracle.py");
    assert!(
        out.status.success(),
        "idle-oracle.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("oracle JSON");
    let idle = v["idle_ns"].as_object().expect("idle_ns object");
    assert!(!idle.is_empty(), "oracle saw no CPU");
    for (cpu, want) in idle {
        let want = want.as_u64().expect("ns");
        let c: usize = cpu.parse().expect("cpu number");
        let got = r.cpus.get(c).map_or(0, |c| c.idle_ns);
        let tol = (want / 50).max(20_000); // 2%, at least 20 µs for near-zero idle
        assert!(
            got.abs_diff(want) <= tol,
            "CPU {c}: idle {got} ns, oracle {want} ns (tolerance {tol})"
        );
        println!("CPU {c}: idle {got} ns, oracle {want} ns");
    }
}

/// Run the cgroup scenario around a perf recording; None when the cpu controller is absent.
fn cgroup_scenario(name: &str, extra: &[&str]) -> Option<(TmpDir, PathBuf, String)> {
    let dir = tmpdir(name);
    let data = dir.0.join("perf.data");
    let stat = dir.0.join("cpu.stat.txt");
    let root = format!("ssIdle{name}{}", std::process::id());
    let mut cmd = Command::new("bash");
    cmd.arg(repo().join("scripts/cgroup-scenario.sh"))
        .args(["--root", &root, "--stat-out"])
        .arg(&stat)
        .args(extra)
        .arg("--")
        .args(perf_record(&data))
        .args(["sleep", "3"]);
    let out = cmd.output().expect("run cgroup-scenario.sh");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    if out.status.code() == Some(77) {
        println!("SKIP: no cgroup cpu controller on this machine");
        return None;
    }
    assert!(
        out.status.success(),
        "cgroup-scenario.sh failed: {:?}",
        out.status
    );
    assert!(
        !Path::new("/sys/fs/cgroup/cpu").join(&root).exists(),
        "the scenario left its cgroups behind"
    );
    let stat = std::fs::read_to_string(&stat).expect("cpu.stat deltas");
    Some((dir, data, stat))
}

#[test]
fn capped_cgroups_show_throttled_wasted_idle() {
    let _machine = machine();
    if let Some(why) = unavailable() {
        println!("SKIP capped_cgroups_show_throttled_wasted_idle: {why}");
        return;
    }
    let Some((_dir, data, stat)) =
        cgroup_scenario("cap", &["--tasks", "3", "--l1-shares", "262144"])
    else {
        return;
    };
    // Independent confirmation from the kernel: the groups were throttled.
    let throttles: u64 = stat
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2)?.parse::<u64>().ok())
        .sum();
    println!("cpu.stat deltas:\n{stat}");
    assert!(throttles > 0, "cpu.stat shows no throttling:\n{stat}");
    let (r, foreign) = analyze(&data, &|c| c.starts_with("burnC"));
    check_oracle(&data, &r);
    // Invariants of every report.
    assert_eq!(r.gaps.total_ns, r.wasted_idle_ns);
    assert_eq!(
        r.wasted_idle_ns,
        r.throttled_ns + r.imbalance_ns,
        "split must add up"
    );
    // Three 50% burners on two CPUs leave about a quarter of the machine
    // idle, and that idle is wasted with throttled burners waiting.
    let cpu_time = r.duration_ns * r.cpus.len() as u64;
    let shown = r.throttled_ns > 0 && r.throttled_ns > r.imbalance_ns && r.idle_ns * 10 > cpu_time;
    if !shown && foreign > 0.10 {
        println!(
            "SKIP capped_cgroups_show_throttled_wasted_idle: inconclusive, other work used {:.0}% of the CPUs",
            foreign * 100.0
        );
        return;
    }
    assert!(r.throttled_ns > 0, "no throttled wasted idle");
    assert!(
        r.throttled_ns > r.imbalance_ns,
        "throttled {} <= imbalance {}",
        r.throttled_ns,
        r.imbalance_ns
    );
    assert!(
        r.idle_ns * 10 > cpu_time,
        "idle {} of {cpu_time}",
        r.idle_ns
    );
    assert!(r.gaps.longest.iter().any(|g| g
        .waiting
        .iter()
        .any(|w| w.throttled && w.comm.starts_with("burnC"))));
}

#[test]
fn uncapped_cgroups_have_near_zero_throttled_idle() {
    let _machine = machine();
    if let Some(why) = unavailable() {
        println!("SKIP uncapped_cgroups_have_near_zero_throttled_idle: {why}");
        return;
    }
    let Some((_dir, data, stat)) = cgroup_scenario("nocap", &["--no-caps"]) else {
        return;
    };
    assert!(
        stat.lines()
            .all(|l| l.split_whitespace().nth(2) == Some("0")),
        "uncapped groups throttled:\n{stat}"
    );
    let (r, _) = analyze(&data, &|c| c.starts_with("burnC"));
    check_oracle(&data, &r);
    let cpu_time = r.duration_ns * r.cpus.len() as u64;
    assert!(
        r.throttled_ns * 1000 < cpu_time,
        "throttled {} ns of {cpu_time} ns without caps",
        r.throttled_ns
    );
}

#[test]
fn bursty_hackbench_shows_imbalance_ended_by_pulls() {
    let _machine = machine();
    const TEST: &str = "bursty_hackbench_shows_imbalance_ended_by_pulls";
    if let Some(why) = unavailable() {
        println!("SKIP {TEST}: {why}");
        return;
    }
    // hackbench (rt-tests, installed by scripts/setup.sh): 160 tasks in
    // bursts of socket messages; perf's copy of it when hackbench is missing.
    let workload: &[&str] = if Command::new("hackbench").arg("--help").output().is_ok() {
        &["hackbench", "-g", "4", "-l", "1000"]
    } else {
        &[
            "perf",
            "bench",
            "sched",
            "messaging",
            "-g",
            "4",
            "-l",
            "1000",
        ]
    };
    // Whether a balancing pull lands inside a wasted-idle gap is up to the
    // scheduler (on 2 CPUs a run has a handful of such gaps): up to three
    // recordings, each cross-checked against the oracle.
    let mut saturated = 0;
    let mut last = String::new();
    for attempt in 0..3 {
        let dir = tmpdir(&format!("hb{attempt}"));
        let data = dir.0.join("perf.data");
        let mut args = perf_record(&data);
        args.extend(workload.iter().map(|s| s.to_string()));
        let out = Command::new(&args[0])
            .args(&args[1..])
            .output()
            .expect("run perf record");
        assert!(
            out.status.success(),
            "perf record failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (r, foreign) = analyze(&data, &|c| {
            c.starts_with("sched-messaging") || c == "hackbench" || c == "perf"
        });
        check_oracle(&data, &r);
        // Invariants of every report.
        let e = &r.balance.gap_endings;
        assert_eq!(
            e.wakeup + e.pull + e.ran_elsewhere + e.trace_end + e.unthrottle,
            r.gaps.count
        );
        assert_eq!(r.gaps.total_ns, r.wasted_idle_ns);
        let w = &r.balance.wait_before_pull_ns;
        assert_eq!(w.count, r.balance.pulls_into_idle);
        assert!(w.p50 <= w.p99 && w.p99 <= w.max, "{w:?}");
        if r.imbalance_ns > 0 && r.balance.pulls_into_idle > 0 && e.pull > 0 {
            assert!(w.p50.is_some() && w.max.is_some());
            return;
        }
        if saturated_by_others(TEST, &r, foreign) {
            saturated += 1;
            continue;
        }
        last = format!(
            "imbalance {} ns, pulls into idle {}, gap endings {e:?}",
            r.imbalance_ns, r.balance.pulls_into_idle
        );
    }
    if saturated == 3 {
        println!("SKIP {TEST}: the machine was saturated by other work in all three recordings");
        return;
    }
    panic!("no recording showed imbalance wasted idle ended by a pull; last: {last}");
}
