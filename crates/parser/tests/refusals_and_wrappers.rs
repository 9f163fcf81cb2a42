//! Issue 22, points 4 and 7: simpleperf's perf.data is refused with a
//! message that names simpleperf and how to convert; a perf script dump of
//! hardware samples only is refused without an "unknown trace format"
//! prefix; the HTML page around a systrace file's trace data is not counted
//! as lost data.

use schedscope_parser::{load, load_bytes, ParseError};
use schedscope_trace::Severity;
use std::path::{Path, PathBuf};

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(path)
}

/// A real perf.data made here, marked as simpleperf's the two documented
/// ways: a simpleperf feature bit (FEAT_META_INFO = 129, which every
/// simpleperf file carries), or a first record of a simpleperf record type
/// (SIMPLE_PERF_RECORD_TRACING_DATA = 32777).
#[test]
fn simpleperf_files_are_refused_by_name() {
    let orig = std::fs::read(fixture("perf/sched_small.data")).unwrap();
    assert!(load_bytes("ok.data", &orig).is_ok());
    let mut feat = orig.clone();
    // The feature bitmap is 4 u64 at byte 72; bit 129 is bit 1 of word 2.
    feat[72 + 16] |= 0b10;
    let mut rec = orig.clone();
    let data_off = u64::from_le_bytes(orig[40..48].try_into().unwrap()) as usize;
    rec[data_off..data_off + 4].copy_from_slice(&32777u32.to_le_bytes());
    for (name, bytes) in [("feat.data", feat), ("rec.data", rec)] {
        match load_bytes(name, &bytes) {
            Err(e @ ParseError::Unsupported { .. }) => {
                let m = e.to_string();
                assert!(
                    m.starts_with(&format!(
                        "{name}: a perf.data written by Android's simpleperf"
                    )),
                    "{m}"
                );
                assert!(m.contains("report_sample.py"), "{m}");
                assert!(!m.contains("corrupt"), "{m}");
            }
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn hardware_sample_dump_is_refused_without_unknown_format() {
    // The cpu-clock samples (with their call chains) of a perf script print
    // made here, without its tracepoint lines.
    let text = std::fs::read_to_string(fixture("perf-period/plain.script.txt")).unwrap();
    let mut keep = false;
    let mut out = String::new();
    for l in text.lines() {
        if !l.starts_with('\t') && !l.is_empty() {
            keep = l.contains(" cpu-clock:");
        }
        if keep {
            out.push_str(l);
            out.push('\n');
        }
    }
    assert!(out.lines().count() > 100);
    match load_bytes("samples.txt", out.as_bytes()) {
        Err(e @ ParseError::Unsupported { .. }) => {
            let m = e.to_string();
            assert!(!m.contains("unknown trace format"), "{m}");
            assert!(
                m.starts_with("samples.txt: a perf script dump of hardware/software samples only (`cpu-clock` events)"),
                "{m}"
            );
        }
        other => panic!("{other:?}"),
    }
    // Text that is no trace at all keeps its message.
    assert!(matches!(
        load_bytes("junk.txt", b"hello\nworld\n"),
        Err(ParseError::UnknownFormat { .. })
    ));
}

#[test]
fn systrace_html_page_is_not_lost_data() {
    let ftrace = std::fs::read_to_string(fixture("ftrace/tracefs-sched.txt")).unwrap();
    let html = format!(
        "<!DOCTYPE html>\n<html>\n<head>\n<title>Android System Trace</title>\n<style>\n  body {{ height: 100%; }}\n</style>\n</head>\n<body>\n  <script>\n  var x = 1;\n  </script>\n<!-- BEGIN TRACE -->\n  <script class=\"trace-data\" type=\"application/text\">\n{ftrace}  </script>\n  <script class=\"trace-data\" type=\"application/text\">\n{{\"traceEvents\": [], \"metadata\": {{}}}}  </script>\n<!-- END TRACE -->\n</body>\n</html>\n"
    );
    let plain = load(&fixture("ftrace/tracefs-sched.txt")).unwrap();
    let t = load_bytes("systrace.html", html.as_bytes()).unwrap();
    assert_eq!(t.events, plain.events);
    assert!(
        !t.warnings.iter().any(|w| w.severity >= Severity::DataLoss),
        "{:?}",
        t.warnings
    );
    // The page: 13 lines before the first block and 3 after the last (the
    // blocks' opening lines are the blocks'); one line of JSON in a block.
    let w = t
        .warnings
        .iter()
        .find(|w| w.message.starts_with("systrace HTML"))
        .unwrap();
    assert_eq!(w.severity, Severity::Info);
    assert!(
        w.message.contains("skipped 16 lines of the page"),
        "{}",
        w.message
    );
    assert!(
        w.message.contains("1 lines of JSON trace data"),
        "{}",
        w.message
    );
}
