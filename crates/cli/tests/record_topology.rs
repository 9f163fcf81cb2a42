//! `schedscope record` writes HEADER_CPU_TOPOLOGY as perf does: perf's
//! `report --header-only -I` reads our file's sibling lists and per-CPU
//! ids, they equal this machine's sysfs, and our decoder reads the same.
//! Needs root and perf.

#[path = "record_common/mod.rs"]
mod common;

use common::*;
use std::process::Command;

#[test]
fn recorded_topology_reads_back_in_perf_and_in_schedscope() {
    require_root_and_perf!();
    let dir = tmpdir("topology");
    let out = record(
        &dir,
        "t.data",
        &["-e", "sched:sched_switch", "--duration", "0.2"],
        &[],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = dir.join("t.data");
    let rep = Command::new("perf")
        .args(["report", "--header-only", "-I", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&rep.stdout);
    let sockets: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# sibling sockets : "))
        .map(str::to_string)
        .collect();
    let cpu_lines = text.lines().filter(|l| l.starts_with("# CPU ")).count();
    // this machine's own view
    let sys = "/sys/devices/system/cpu";
    let mut want: Vec<String> = Vec::new();
    for cpu in schedscope_collector::online_cpus() {
        let p = format!("{sys}/cpu{cpu}/topology/package_cpus_list");
        let old = format!("{sys}/cpu{cpu}/topology/core_siblings_list");
        let s = std::fs::read_to_string(&p)
            .or_else(|_| std::fs::read_to_string(&old))
            .unwrap();
        let s = s.trim().to_string();
        if !want.contains(&s) {
            want.push(s);
        }
    }
    assert_eq!(sockets, want, "perf's sibling sockets of our file:\n{text}");
    assert!(cpu_lines >= 1, "perf prints per-CPU ids:\n{text}");
    let t = schedscope_parser::load(&file).unwrap();
    let topo = t.topology.expect("decoded");
    assert_eq!(topo.package_cpus, want);
    assert_eq!(topo.cpus.len(), cpu_lines);
}
