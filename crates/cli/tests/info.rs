//! `schedscope info` on the simulator's fixtures (counts known from the
//! fixture README and checked against `perf script` by the decoder tests),
//! and its lost-event repairs per CPU: on the simulator with this project's
//! VM loss pattern injected (the counts derived from the simulator's own
//! events), on a hand-made text trace whose repairs are known by
//! construction, and absent from a loss-free trace.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sim")
        .join(name)
        .display()
        .to_string()
}

fn info(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_schedscope"))
        .arg("info")
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn json_summary() {
    let (code, out, err) = info(&["--format", "json", &fixture("bare-metal-s1.data")]);
    assert_eq!(code, 0, "{err}");
    let d: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(d["events"], 360);
    assert_eq!(d["cpus"], 2);
    assert_eq!(d["lost"], 0);
    assert_eq!(d["format"], "perf_data");
    let by_name = d["events_by_name"].as_object().unwrap();
    let sum: u64 = by_name.values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(sum, 360);
    assert!(by_name.contains_key("sched:sched_switch"));
    assert_eq!(
        d["duration_ns"],
        d["end_ns"].as_u64().unwrap() - d["start_ns"].as_u64().unwrap()
    );
    // Two processes of 4 and 3 threads (README), plus whatever else the
    // simulator names; the workers dominate the comms.
    assert!(d["processes"].as_u64().unwrap() >= 2);
    let comms = d["top_comms"].as_array().unwrap();
    assert!(
        comms
            .iter()
            .any(|c| c["comm"] == "worker-p0" && c["threads"] == 4),
        "{comms:?}"
    );
    assert!(
        comms
            .iter()
            .any(|c| c["comm"] == "worker-p1" && c["threads"] == 3),
        "{comms:?}"
    );
    assert_eq!(d["meta"]["hostname"], "schedscope-sim");
}

#[test]
fn text_summary_fits_a_screen() {
    let (code, out, err) = info(&[&fixture("mixed-s1.data")]);
    assert_eq!(code, 0, "{err}");
    let first = out.lines().next().unwrap();
    assert!(
        first.contains("2438 events") && first.contains("4 CPUs"),
        "{out}"
    );
    assert!(
        out.contains("Tracepoint") && out.contains("sched:sched_switch"),
        "{out}"
    );
    assert!(out.contains("kvm:kvm_exit"), "{out}");
    assert!(out.lines().count() < 50, "{out}");
}

#[test]
fn missing_file_fails_with_the_name() {
    let (code, _, err) = info(&["/nonexistent/x.data"]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("schedscope: /nonexistent/x.data: "),
        "{err}"
    );
}

/// The hand-made trace of `fixtures/repairs/` (its README gives the three
/// repairs it holds, each known by construction).
const HAND_MADE: &str = include_str!("../../../fixtures/repairs/hand-made.txt");

/// A fresh temporary directory.
fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("schedscope-info-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn json_of(path: &str) -> Value {
    let (code, out, err) = info(&["--format", "json", path]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn repairs_of_a_hand_made_trace() {
    let dir = temp_dir("hand");
    let p = dir.join("hand.txt");
    std::fs::write(&p, HAND_MADE).unwrap();
    let p = p.display().to_string();
    let d = json_of(&p);
    assert_eq!(
        d["repairs_by_cpu"],
        serde_json::json!([{
            "cpu": 1,
            "unswitched_switch_outs": 3,
            "idle_exits_missing": 3,
            "switch_ins_repaired": 3,
            "evidence": {"rule": 1, "cpu_idle": 1, "task_event": 1}
        }])
    );
    let (code, out, err) = info(&[&p]);
    assert_eq!(code, 0, "{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("  repaired  "))
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(
        line,
        "  repaired  CPU 1: 3 switch-ins (cpu_idle 1, task_event 1, rule 1); loss shown by 3 \
         switch-outs no recorded switch explains, 3 of them out of idle"
    );
    // right under the lost events
    let lines: Vec<&str> = out.lines().collect();
    let at = lines.iter().position(|l| *l == line).unwrap();
    assert!(lines[at - 1].starts_with("  lost "), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn repairs_of_the_simulated_vm_loss_pattern() {
    use schedscope_sim::loss::{drop_idle_exits, with_stat_runtime};
    use schedscope_sim::model::SimData;
    use schedscope_sim::{simulate_bandwidth, BandwidthSpec};
    let dir = temp_dir("vm");
    let (base, _) = simulate_bandwidth(&BandwidthSpec::old_kernel(1));
    for (stat, sim) in [
        (false, base.clone()),
        (true, with_stat_runtime(&base, 4_000_000)),
    ] {
        let (lossy, dropped) = drop_idle_exits(&sim, 1);
        assert!(dropped > 0);
        // From the simulator's own events: each dropped switch out of idle
        // that follows a recorded switch on CPU 1 and precedes another
        // leaves one switch-out that no recorded switch explains, the
        // previous recorded switch having left the CPU idle.
        let switches: Vec<(u64, i32, i32)> = sim
            .events
            .iter()
            .filter(|e| e.cpu == 1)
            .filter_map(|e| match e.data {
                SimData::Switch { prev, next, .. } => Some((e.ts, prev, next)),
                _ => None,
            })
            .collect();
        let lost = (1..switches.len().saturating_sub(1))
            .filter(|&i| switches[i].1 == 0 && switches[i].2 != 0)
            .filter(|&i| switches[..i].iter().any(|s| !(s.1 == 0 && s.2 != 0)))
            .count() as u64;
        let p = dir.join(format!("vm-{stat}.data"));
        std::fs::write(&p, schedscope_sim::perf::to_perf_data(&lossy).unwrap()).unwrap();
        let d = json_of(&p.display().to_string());
        let r = d["repairs_by_cpu"].as_array().unwrap();
        assert_eq!(r.len(), 1, "only CPU 1 lost events: {r:?}");
        let r = &r[0];
        assert_eq!(r["cpu"], 1);
        assert_eq!(r["unswitched_switch_outs"], lost, "stat={stat}");
        assert_eq!(r["idle_exits_missing"], lost, "stat={stat}");
        let n = r["switch_ins_repaired"].as_u64().unwrap();
        assert!(n > 0 && n <= lost, "stat={stat}: {n} of {lost}");
        let ev = r["evidence"].as_object().unwrap();
        assert_eq!(ev.values().map(|v| v.as_u64().unwrap()).sum::<u64>(), n);
        if stat {
            // every lost switch-in is placed exactly by its task's runtime
            assert_eq!(
                ev.get("stat_runtime").and_then(Value::as_u64),
                Some(n),
                "{ev:?}"
            );
        } else {
            assert!(!ev.contains_key("stat_runtime"), "{ev:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_loss_free_trace_has_no_repairs() {
    let f = fixture("bare-metal-s1.data");
    let d = json_of(&f);
    assert_eq!(d["repairs_by_cpu"], serde_json::json!([]));
    let (code, out, err) = info(&[&f]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("repaired"), "{out}");
}
