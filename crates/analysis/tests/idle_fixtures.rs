//! The idle analysis on the recorded fixtures of `fixtures/idle/` (see its
//! README for the commands, kernel and CPUs). Runs without root or perf:
//! per-CPU idle must match the stored output of `scripts/idle-oracle.py`
//! (an independent computation over `perf script`) within 2%; when perf is
//! installed the oracle is also re-run live on the fixture.

use schedscope_analysis::idle::{self, Attribution, IdleReport};
use schedscope_analysis::{Context, Options, Timeline};
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/idle")
        .join(name)
}

fn analyze(name: &str) -> IdleReport {
    analyze_path(&fixture(name))
}

fn analyze_path(path: &Path) -> IdleReport {
    let name = path.display().to_string();
    let trace = schedscope_parser::load(path).unwrap_or_else(|e| panic!("loading {name}: {e}"));
    let timeline = Timeline::default();
    let opts = Options {
        top: 5,
        ..Options::default()
    };
    let ctx = Context {
        trace: &trace,
        timeline: &timeline,
        opts: &opts,
    };
    idle::analyze(&ctx).unwrap_or_else(|e| panic!("idle analysis of {name}: {e}"))
}

fn oracle_idle(v: &serde_json::Value) -> Vec<(usize, u64)> {
    let idle = v["idle_ns"].as_object().expect("idle_ns object");
    idle.iter()
        .map(|(c, ns)| (c.parse().expect("cpu"), ns.as_u64().expect("ns")))
        .collect()
}

fn check_oracle(name: &str, r: &IdleReport) {
    let stored: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture(&format!("{name}.oracle.json"))).expect("oracle file"),
    )
    .expect("oracle JSON");
    let want = oracle_idle(&stored);
    assert_eq!(want.len(), r.cpus.len(), "{name}: CPU count");
    for &(c, want) in &want {
        let got = r.cpus[c].idle_ns;
        let tol = (want / 50).max(20_000);
        assert!(
            got.abs_diff(want) <= tol,
            "{name} CPU {c}: idle {got} ns, oracle {want} ns"
        );
    }
    let live = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/idle-oracle.py"))
        .arg(fixture(name))
        .output();
    match live {
        Ok(out) if out.status.success() => {
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("oracle JSON");
            assert_eq!(oracle_idle(&v), want, "{name}: stored oracle is stale");
        }
        _ => println!("{name}: perf or python3 unavailable, compared with the stored oracle only"),
    }
}

#[test]
fn capped_fixture_shows_throttled_wasted_idle() {
    let r = analyze("capped.data");
    check_oracle("capped.data", &r);
    assert_eq!(r.attribution, Attribution::Inferred);
    assert!(r.throttled_ns > 0, "{r:?}");
    assert!(r.throttled_ns > r.imbalance_ns);
    assert_eq!(r.wasted_idle_ns, r.throttled_ns + r.imbalance_ns);
    assert_eq!(r.gaps.total_ns, r.wasted_idle_ns);
    // Some throttled burner waits at the start of the longest gap.
    assert!(r.gaps.longest[0]
        .waiting
        .iter()
        .any(|w| w.throttled && w.comm.starts_with("burnC")));
}

#[test]
fn hackbench_fixture_shows_imbalance_ended_by_pulls() {
    let r = analyze("hackbench.data");
    check_oracle("hackbench.data", &r);
    assert!(r.imbalance_ns > 0);
    assert!(r.balance.pulls_into_idle > 0 && r.balance.gap_endings.pull > 0);
    let w = &r.balance.wait_before_pull_ns;
    assert_eq!(w.count, r.balance.pulls_into_idle);
    assert!(w.p50 <= w.p99 && w.p99 <= w.max);
}

#[test]
fn perf_data_and_its_perf_script_text_give_the_same_report() {
    let data = fixture("hackbench.data");
    let out = Command::new("perf")
        .args(["script", "--ns", "-i"])
        .arg(&data)
        .output();
    let text = match out {
        Ok(o) if o.status.success() => o.stdout,
        _ => {
            println!(
                "SKIP perf_data_and_its_perf_script_text_give_the_same_report: perf unavailable"
            );
            return;
        }
    };
    let dir = std::env::temp_dir().join(format!("schedscope-idle-eq-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let txt = dir.join("hackbench.txt");
    std::fs::write(&txt, text).expect("write text");
    let from_data = analyze_path(&data);
    let from_text = analyze_path(&txt);
    let _ = std::fs::remove_dir_all(&dir);
    let mut a = serde_json::to_value(&from_data).expect("json");
    let mut b = serde_json::to_value(&from_text).expect("json");
    // A text trace cannot tell an enabled event that never fired from one
    // that was not recorded; everything else must be identical.
    for v in [&mut a, &mut b] {
        v.as_object_mut().expect("object").remove("missing_events");
    }
    assert_eq!(a, b);
}
