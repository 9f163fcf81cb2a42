//! The trace clock of version-6 trace.dat files (issue 22, point 2):
//! trace-cmd writes version 6's TRACECLOCK option empty, as a flag, and the
//! `trace_clock` listing after the flyrecord CPU offsets. The fixtures in
//! `fixtures/tracedat-clock/` are byte-level edits of `gen_v6.dat` (see
//! `make.py` there); `trace-cmd dump --clock` and `trace-cmd report` are
//! the oracle for what they hold.

#[path = "trace_dat_oracle/mod.rs"]
mod oracle;

use schedscope_parser::trace_dat;
use schedscope_trace::Severity;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(dir: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(dir)
        .join(name)
}

/// The selected clock as `trace-cmd dump --clock` prints it.
fn dumped_clock(path: &Path) -> String {
    oracle::need_trace_cmd();
    let out = Command::new("trace-cmd")
        .args(["dump", "--clock", "-i"])
        .arg(path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let sel = text
        .split_whitespace()
        .find(|w| w.starts_with('[') && w.ends_with(']'))
        .unwrap_or_else(|| panic!("no selected clock in {text:?}"));
    sel.trim_matches(['[', ']']).to_string()
}

#[test]
fn empty_traceclock_option_reads_the_listing_after_the_cpu_offsets() {
    let base = oracle::load(&fixture("tracedat", "gen_v6.dat"));
    for (name, clock) in [
        ("empty_option_local.dat", "local"),
        ("empty_option_counter.dat", "counter"),
    ] {
        let path = fixture("tracedat-clock", name);
        assert_eq!(dumped_clock(&path), clock, "{name}");
        let t = oracle::load(&path);
        // The edit moved no event: the same events as the file it came from.
        assert_eq!(t.events, base.events, "{name}");
        let clock_warnings: Vec<_> = t
            .warnings
            .iter()
            .filter(|w| w.message.contains("trace clock"))
            .collect();
        if clock == "local" {
            assert!(clock_warnings.is_empty(), "{name}: {:?}", t.warnings);
            assert_eq!(t.warnings, base.warnings);
            let data = std::fs::read(&path).unwrap();
            let meta = trace_dat::meta::parse("x", &data).unwrap();
            assert_eq!(oracle::compare_with_report(&path, &t, &meta.formats), 46);
        } else {
            // One warning per instance, naming the clock; trace-cmd report
            // agrees the times are not ns (it prints them without a point).
            assert_eq!(clock_warnings.len(), 2, "{:?}", t.warnings);
            for w in clock_warnings {
                assert_eq!(w.severity, Severity::DataLoss);
                assert!(
                    w.message.contains("\"counter\" trace clock"),
                    "{}",
                    w.message
                );
            }
            let out = Command::new("trace-cmd")
                .args(["report", "-i"])
                .arg(&path)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            let first = text.lines().find(|l| l.contains("sched_")).unwrap();
            assert!(first.contains(" 5000012345: "), "{first}");
        }
    }
}

/// A version-6 file with no TRACECLOCK option at all has no clock to warn
/// about (the LISA-made and generated fixtures).
#[test]
fn no_traceclock_option_no_warning() {
    let t = oracle::load(&fixture("tracedat", "gen_v6.dat"));
    assert!(
        !t.warnings.iter().any(|w| w.message.contains("clock")),
        "{:?}",
        t.warnings
    );
}
