//! `schedscope demo`: records the bundled workload with call chains and
//! hands the file to `schedscope report --all`. Needs root and perf.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_schedscope");

#[test]
fn demo_records_ebizzy_with_tlb_stacks_and_runs_the_report() {
    if !schedscope_testkit::effective_uid_is_root() || !schedscope_testkit::perf_starts() {
        eprintln!("SKIPPED: needs root and perf");
        return;
    }
    let ebizzy = std::path::Path::new(BIN).with_file_name("schedscope-ebizzy");
    if !ebizzy.is_file() {
        eprintln!(
            "SKIPPED: {} not built (cargo test --workspace or cargo build builds it)",
            ebizzy.display()
        );
        return;
    }
    let dir = schedscope_testkit::tmpdir("demo");
    let file = dir.join("demo.data");
    let out = Command::new(BIN)
        .args(["demo", "--seconds", "1", "-o"])
        .arg(&file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("records/s"),
        "the workload's output is shown:\n{stdout}"
    );
    assert!(stderr.contains(" events, "), "recording summary:\n{stderr}");
    if stderr.contains("`schedscope report` is not built yet") {
        eprintln!("SKIPPED report check: report not built yet");
    } else {
        assert!(out.status.success(), "report failed:\n{stderr}");
    }
    // The workload threads ran and their munmaps flushed TLBs, with stacks.
    let script = Command::new("perf")
        .args([
            "script",
            "--comms",
            "ebizzy-0,ebizzy-1,schedscope-ebiz",
            "-i",
        ])
        .arg(&file)
        .output()
        .unwrap();
    assert!(script.status.success());
    let text = String::from_utf8_lossy(&script.stdout);
    assert!(
        text.contains("sched:sched_switch"),
        "workload threads scheduled"
    );
    let flush = text
        .split("\n\n")
        .find(|blk| blk.contains("tlb:tlb_flush") && blk.contains("munmap"))
        .or_else(|| {
            text.split("\n\n")
                .find(|b| b.contains("tlb:tlb_flush") && b.lines().count() > 1)
        });
    assert!(
        flush.is_some(),
        "tlb_flush events of the workload carry call chains"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
