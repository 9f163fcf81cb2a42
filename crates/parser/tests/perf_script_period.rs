//! perf script lines with a period column (issue 22, point 3):
//! `comm tid [cpu] time:  PERIOD event: ...`, printed by `perf script -F
//! +period` for every event and by default for samples that have a period
//! (`cpu-clock`, `cycles`). `fixtures/perf-period/` holds both prints of one
//! `perf record` made here; the oracle is plain text scanning of the files.

use schedscope_parser::load;
use schedscope_trace::{Event, Trace};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/perf-period")
        .join(name)
}

/// Per event name, count and (first, last) time in ns, by scanning the
/// text: the token after `SECS.FRAC:` (skipping a bare number, the period)
/// that ends in `:` is the event.
fn scan(text: &str) -> (BTreeMap<String, u64>, u64, u64) {
    let (mut counts, mut first, mut last) = (BTreeMap::new(), u64::MAX, 0);
    for line in text.lines().filter(|l| !l.starts_with(['#', '\t'])) {
        let toks: Vec<&str> = line.split_whitespace().collect();
        let Some(i) = toks.iter().position(|t| {
            t.strip_suffix(':')
                .and_then(|n| n.split_once('.'))
                .is_some_and(|(a, b)| {
                    a.bytes().all(|c| c.is_ascii_digit()) && b.bytes().all(|c| c.is_ascii_digit())
                })
        }) else {
            continue;
        };
        let mut j = i + 1;
        if toks
            .get(j)
            .is_some_and(|t| t.bytes().all(|c| c.is_ascii_digit()))
        {
            j += 1;
        }
        let Some(ev) = toks.get(j).and_then(|t| t.strip_suffix(':')) else {
            continue;
        };
        let (s, f) = toks[i].trim_end_matches(':').split_once('.').unwrap();
        let ns = s.parse::<u64>().unwrap() * 1_000_000_000 + f.parse::<u64>().unwrap();
        first = first.min(ns);
        last = last.max(ns);
        *counts.entry(ev.to_string()).or_insert(0) += 1;
    }
    (counts, first, last)
}

fn check(name: &str) -> Trace {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    let (counts, first, last) = scan(&text);
    assert!(
        counts.get("cpu-clock").copied().unwrap_or(0) > 100,
        "{counts:?}"
    );
    assert!(counts.get("sched:sched_switch").copied().unwrap_or(0) > 10);
    let t = load(&fixture(name)).unwrap();
    assert_eq!(t.events_by_name, counts, "{name}");
    assert_eq!(t.events.len() as u64, counts.values().sum::<u64>());
    assert_eq!(
        (t.events[0].ts.0, t.events[t.events.len() - 1].ts.0),
        (first, last),
        "{name}"
    );
    assert!(t.warnings.is_empty(), "{name}: {:?}", t.warnings);
    t
}

#[test]
fn period_column_lines_are_events() {
    let with = check("period.script.txt");
    let without = check("plain.script.txt");
    // Both prints of one recording give the same events (call chains aside:
    // `-F +period` replaces the default field list of the tracepoints).
    let strip = |t: &Trace| -> Vec<Event> {
        t.events
            .iter()
            .map(|e| Event {
                stack: schedscope_trace::StackId::NONE,
                ..*e
            })
            .collect()
    };
    assert_eq!(strip(&with).len(), strip(&without).len());
    for (a, b) in strip(&with).iter().zip(&strip(&without)) {
        assert_eq!(
            (a.ts, a.cpu, a.tid, with.event_name(a.name)),
            (b.ts, b.cpu, b.tid, without.event_name(b.name))
        );
    }
}
