//! Issue 22, point 5: an event the recording enabled but has no samples of
//! is not "missing, record it". `fixtures/perf-empty/switch_filtered.data`
//! was recorded here with sched:sched_switch behind a filter nothing
//! matches; `perf evlist` and `perf script` (stored beside it) are the
//! oracle for what it holds.

use schedscope_analysis::report::{Report, Sections};
use schedscope_analysis::{AnalysisError, Options};
use schedscope_trace::{Severity, Trace, TraceFormat};
use std::path::Path;

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/perf-empty")
        .join(name)
}

#[test]
fn recorded_switch_without_samples_says_so() {
    let evlist = std::fs::read_to_string(fixture("switch_filtered.evlist.txt")).unwrap();
    let counts = std::fs::read_to_string(fixture("switch_filtered.counts.txt")).unwrap();
    assert!(evlist.lines().any(|l| l == "sched:sched_switch"));
    assert!(!counts.contains("sched_switch") && counts.contains("sched_wakeup"));
    let t = schedscope_parser::load(&fixture("switch_filtered.data")).unwrap();
    assert_eq!(t.count("sched:sched_switch"), 0);
    let r = Report::compute(&t, Sections::all(), &Options::default());
    let lat = r.latency.as_ref().unwrap().0.as_ref().unwrap_err();
    match lat {
        AnalysisError::MissingEvents {
            missing, recorded, ..
        } => {
            assert_eq!(missing, &["sched:sched_switch"]);
            let r = recorded.as_deref().unwrap();
            assert_eq!(r.recorded_empty, ["sched:sched_switch"]);
            assert!(!r.no_payload);
        }
        other => panic!("{other}"),
    }
    let msg = lat.to_string();
    assert!(
        msg.contains("sched:sched_switch is in the recording's event list but has 0 samples"),
        "{msg}"
    );
    assert!(!msg.contains("the trace has no"), "{msg}");
}

/// Events the file does not list keep the old message; an event listed but
/// whose samples had no raw payload says that.
#[test]
fn absent_and_payloadless_events() {
    let mut t = Trace::new("x.data", TraceFormat::PerfData);
    let mut e = AnalysisError::missing("latency", &["sched:sched_switch"]);
    e.note_recorded(&t);
    assert!(e
        .to_string()
        .starts_with("latency: the trace has no sched:sched_switch events; record them with"));
    t.event_names.push("sched:sched_switch".into());
    t.warn(
        Severity::DataLoss,
        "12 tracepoint samples carry no RAW payload (first at byte offset 4096); skipped",
        12,
    );
    let mut e = AnalysisError::missing("latency", &["sched:sched_switch"]);
    e.note_recorded(&t);
    let msg = e.to_string();
    assert!(
        msg.contains("written without their raw payload (PERF_SAMPLE_RAW"),
        "{msg}"
    );
}
