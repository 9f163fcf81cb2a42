//! `schedscope report --all` on trace-cmd's binary trace.dat, end to end:
//! LISA's real version-6 file (read from shared/real-traces/). The numbers
//! must be plausible (none negative, none beyond the span times the CPUs),
//! and identical to what the same command gives on `trace-cmd report -N -t`'s
//! text of the same file (trace-cmd decodes, our text reader reads): every
//! analysis section the same, to the nanosecond. (`-N` prints through the
//! kernel's own print fmt: trace-cmd's sched_switch plugin drops the `+` of
//! preempted switch-outs, `prev_state & 4096` on this kernel, that the
//! kernel's format prints as `R+`.)

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_schedscope");

fn lisa() -> PathBuf {
    schedscope_testkit::real_trace("lisa_sched_load.trace.dat")
}

fn report_json(file: &Path) -> Value {
    let o = Command::new(BIN)
        .args(["report", "--all", "--format", "json"])
        .arg(file)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "report --all {}: {}",
        file.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn report_all_on_lisa_trace_dat_is_plausible() {
    let d = report_json(&lisa());
    let t = &d["trace"];
    assert_eq!(t["format"], "trace_dat");
    assert_eq!(t["events"], 3724);
    assert_eq!(t["cpus"], 6);
    assert_eq!(t["events_by_name"]["sched:sched_switch"], 399);
    assert_eq!(t["warnings"].as_array().unwrap().len(), 0);
    let span = t["end_ns"].as_u64().unwrap() - t["start_ns"].as_u64().unwrap();
    assert!(span > 400_000_000 && span < 500_000_000, "span {span}");
    let cap = span * 6;
    let lat = &d["latency"];
    let tasks = lat["tasks"].as_array().unwrap();
    assert!(tasks.len() >= 20, "{} tasks", tasks.len());
    let mut runtime = 0u64;
    let mut switches = 0u64;
    for task in tasks {
        for k in [
            "runtime_ns",
            "delay_max_ns",
            "delay_avg_ns",
            "delay_total_ns",
            "switches",
        ] {
            // as_u64: present and not negative
            let v = task[k].as_u64().unwrap_or_else(|| panic!("{k} of {task}"));
            assert!(v <= cap, "{k} = {v} beyond span x CPUs in {task}");
        }
        assert!(task["delay_max_ns"].as_u64().unwrap() <= span);
        runtime += task["runtime_ns"].as_u64().unwrap();
        switches += task["switches"].as_u64().unwrap();
    }
    assert!(runtime > 0 && runtime <= cap, "runtime {runtime}");
    assert_eq!(lat["total_runtime_ns"].as_u64().unwrap(), runtime);
    assert!(switches > 0 && switches <= 399, "switches {switches}");
    // preempted switch-outs (prev_state 4096 = R+ on this kernel) are read
    // as preemptions, not as plain runnable switch-outs
    assert!(tasks.iter().any(|t| t["preemptions"].as_u64().unwrap() > 0));
    // the sections that need sched_waking say so instead of inventing numbers
    for s in ["gang", "idle"] {
        assert!(
            d[s]["message"].as_str().unwrap().contains("sched_waking"),
            "{s}: {}",
            d[s]
        );
    }
    // and the text form runs too
    let o = Command::new(BIN)
        .args(["report", "--all"])
        .arg(lisa())
        .output()
        .unwrap();
    assert!(o.status.success());
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("trace-cmd trace.dat, 3724 events"), "{text}");
}

#[test]
fn report_all_equals_the_report_on_trace_cmds_text() {
    let ok = Command::new("trace-cmd")
        .arg("--help")
        .output()
        .is_ok_and(|o| !o.stdout.is_empty() || !o.stderr.is_empty());
    assert!(
        ok,
        "trace-cmd is not installed (scripts/setup.sh installs it: apt-get install trace-cmd)"
    );
    let txt = schedscope_testkit::tmpdir("tracedat-cli").join("lisa.txt");
    let text = schedscope_testkit::run(
        Command::new("trace-cmd")
            .args(["report", "-N", "-t", "-i"])
            .arg(lisa()),
    );
    std::fs::write(&txt, text).unwrap();
    let from_dat = report_json(&lisa());
    let from_txt = report_json(&txt);
    assert_eq!(from_txt["trace"]["format"], "trace_cmd_text");
    assert_eq!(from_txt["trace"]["start_ns"], from_dat["trace"]["start_ns"]);
    assert_eq!(from_txt["trace"]["end_ns"], from_dat["trace"]["end_ns"]);
    for s in ["latency", "gang", "lhp", "idle", "tlb"] {
        assert_eq!(from_dat[s], from_txt[s], "section {s}");
    }
    assert!(!from_dat["latency"]["tasks"].as_array().unwrap().is_empty());
}
