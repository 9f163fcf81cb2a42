//! `schedscope info` wording for text traces (issue 22, point 7): a trace
//! without process ids says so instead of "in 0 processes", and perf script
//! text without a CPU column does not claim "on 1 CPUs". The oracles are the
//! files themselves: `tracefs-sched.txt` has no tgid column,
//! `tracefs-ipi-tgid.txt` has one (grep shows it).

use std::path::PathBuf;
use std::process::Command;

fn fixture(path: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(path)
        .display()
        .to_string()
}

fn info_text(path: &str) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_schedscope"))
        .args(["info", path])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn text_without_process_ids_or_cpus() {
    let out = info_text(&fixture("ftrace/tracefs-sched.txt"));
    assert!(
        out.contains(" threads (the trace has no process ids)\n"),
        "{out}"
    );
    let out = info_text(&fixture("ftrace/tracefs-ipi-tgid.txt"));
    assert!(
        out.contains(" processes\n") && !out.contains(" in 0 processes"),
        "{out}"
    );

    // perf script text printed without the CPU column.
    let text = std::fs::read_to_string(fixture("ftrace/perf-script.txt")).unwrap();
    let no_cpu: String = text
        .lines()
        .map(|l| match (l.find(" ["), l.find("] ")) {
            (Some(a), Some(b)) if a < b && l[a + 2..b].bytes().all(|c| c.is_ascii_digit()) => {
                format!("{}{}\n", &l[..a], &l[b + 1..])
            }
            _ => format!("{l}\n"),
        })
        .collect();
    let dir = std::env::temp_dir().join(format!("schedscope-nocpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("nocpu.txt");
    std::fs::write(&p, no_cpu).unwrap();
    let out = info_text(&p.display().to_string());
    let first = out.lines().next().unwrap();
    assert!(
        first.contains(" on unknown CPUs (the text has no CPU column) "),
        "{first}"
    );
    assert!(!first.contains("1 CPUs"), "{first}");
}
