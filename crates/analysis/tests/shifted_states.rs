//! Issue 22, point 1 end to end: a text trace from a kernel that prints
//! prev_state shifted by one letter gives the report of the same trace
//! printed correctly (`fixtures/shifted/`: `sane.txt` is perf script text
//! of a recording here, `shifted.txt` the same text with the letters a
//! shifted kernel prints), and with mixed evidence the sections that need
//! runnable versus sleeping refuse instead of printing numbers.

use schedscope_analysis::report::{Report, Sections};
use schedscope_analysis::{AnalysisError, Options};
use schedscope_trace::Trace;
use std::path::Path;

fn read(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/shifted")
            .join(name),
    )
    .unwrap()
}

fn load(text: &str) -> Trace {
    // The same name for both, so that the reports can be compared whole.
    schedscope_parser::load_bytes("trace.txt", text.as_bytes()).unwrap()
}

fn all(trace: &Trace) -> Report {
    Report::compute(trace, Sections::all(), &Options::default())
}

#[test]
fn shifted_text_gives_the_report_of_the_sane_text() {
    let sane = all(&load(&read("sane.txt")));
    let shifted = all(&load(&read("shifted.txt")));
    assert!(sane.errors().len() <= 1, "{:?}", sane.errors());
    let idle = sane.idle.as_ref().unwrap().0.as_ref().unwrap();
    // The capped scenario wastes idle time: the number the shift distorts.
    assert!(idle.wasted_idle_ns > 100_000_000);
    // Every section equal; the trace summaries differ only by the warning
    // that says the table was shifted.
    let (mut a, mut b) = (
        serde_json::to_value(&sane).unwrap(),
        serde_json::to_value(&shifted).unwrap(),
    );
    let warnings = b["trace"]["warnings"].take();
    assert_eq!(a["trace"]["warnings"].take(), serde_json::json!([]));
    assert_eq!(warnings.as_array().map(Vec::len), Some(1), "{warnings}");
    for key in ["trace", "latency", "idle", "gang", "lhp", "tlb"] {
        assert!(a[key] == b[key], "{key} differs");
    }
    assert_eq!(a, b);
    // Read as printed (the shift not undone), the same letters give other
    // numbers: the check above is not vacuous.
    let printed = read("shifted.txt").replace(
        "prev_pid=0 prev_prio=120 prev_state=S ",
        "prev_pid=0 prev_prio=120 prev_state=R ",
    );
    let wrong = all(&load(&printed));
    assert_ne!(
        serde_json::to_value(&sane.latency).unwrap(),
        serde_json::to_value(&wrong.latency).unwrap()
    );
}

#[test]
fn mixed_evidence_refuses_the_state_sections() {
    let shifted = read("shifted.txt");
    let mixed = shifted.replacen(
        "prev_pid=0 prev_prio=120 prev_state=S ",
        "prev_pid=0 prev_prio=120 prev_state=R ",
        1,
    );
    let r = all(&load(&mixed));
    let errors = r.errors();
    let mut refused: Vec<&str> = errors
        .iter()
        .map(|e| match e {
            AnalysisError::AmbiguousStates { analysis, why } => {
                assert!(why.contains("the evidence is mixed"), "{why}");
                assert!(e.to_string().contains("no numbers are given"), "{e}");
                analysis.as_str()
            }
            other => panic!("{other}"),
        })
        .collect();
    refused.sort_unstable();
    assert_eq!(refused, ["gang", "idle", "latency", "lhp"]);
}
