//! The workload's command line and output format (ebizzy-like).

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_schedscope-ebizzy");

#[test]
fn prints_records_per_second_each_second_and_a_total() {
    let out = Command::new(BIN)
        .args(["-t", "2", "-S", "2", "-s", "65536"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.len(),
        2 + 1 + 3,
        "2 per-second lines, total, real/user/sys:\n{text}"
    );
    let per_sec: Vec<u64> = lines[..3]
        .iter()
        .map(|l| l.strip_suffix(" records/s").unwrap().parse().unwrap())
        .collect();
    assert!(
        per_sec.iter().all(|&n| n > 0),
        "work was done every second: {per_sec:?}"
    );
    assert!(
        lines[3].starts_with("real ")
            && lines[4].starts_with("user ")
            && lines[5].starts_with("sys ")
    );
    let real: f64 = lines[3].split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(real >= 2.0, "ran for the requested time: {real}");
}

#[test]
fn bad_options_exit_2_with_usage() {
    for args in [&["-t", "0"][..], &["-S"], &["-x"], &["-s", "abc"]] {
        let out = Command::new(BIN).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("usage:"));
    }
}
