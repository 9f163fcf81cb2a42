//! `schedscope info` on the simulator's fixtures (counts known from the
//! fixture README and checked against `perf script` by the decoder tests).

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
