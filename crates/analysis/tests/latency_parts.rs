//! `latency::compute_in_parts` (the pass split by tid across cores, for
//! `report --latency` alone) gives exactly `latency::compute`'s report:
//! every row and total, the context-switch bugs (counted by one part) and
//! each task's waits, on every fixture trace the parser reads, for part
//! counts that are and are not powers of two.

use schedscope_analysis::latency;
use std::path::{Path, PathBuf};

fn fixtures() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if p.is_dir() {
                walk(&p, out);
            } else if (name.ends_with(".data") || name.ends_with(".txt"))
                && !name.starts_with("README")
            {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures"),
        &mut out,
    );
    out.sort();
    out
}

/// The report as JSON, and each task's waits sorted (not in the JSON).
fn view(r: &latency::LatencyReport) -> (serde_json::Value, Vec<(i32, Vec<u64>)>) {
    let waits = r
        .tasks
        .iter()
        .map(|t| {
            let mut d = t.delays_ns.clone();
            d.sort_unstable();
            (t.tid, d)
        })
        .collect();
    (serde_json::to_value(r).unwrap(), waits)
}

#[test]
fn parts_give_the_single_pass_report() {
    let (mut compared, mut with_bugs, mut rows) = (0, 0, 0);
    for f in fixtures() {
        let Ok(trace) = schedscope_parser::load(&f) else {
            continue; // not a trace (an oracle's text output)
        };
        let Ok(whole) = latency::compute(&trace) else {
            continue; // no sched_switch
        };
        let want = view(&whole);
        for parts in [1, 2, 3, 4, 7, 8, 64] {
            let got = latency::compute_in_parts(&trace, parts).unwrap();
            assert_eq!(view(&got), want, "{} in {parts} parts", f.display());
        }
        compared += 1;
        rows += whole.tasks.len();
        with_bugs += usize::from(whole.context_switch_bugs > 0);
    }
    // (the fixtures cover lost events, hence context-switch bugs)
    assert!(
        compared >= 5 && rows > 100 && with_bugs > 0,
        "{compared} {rows} {with_bugs}"
    );
}
