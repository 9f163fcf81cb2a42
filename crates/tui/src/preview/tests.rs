use super::*;
use crate::data::Data;
use schedscope_analysis::Timeline;
use std::path::PathBuf;
use std::sync::mpsc::channel;

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(format!(
        "{}/../../fixtures/{rel}",
        env!("CARGO_MANIFEST_DIR")
    ))
}

/// Stream `rel` through [`load`] with a preview: the trace, the preview
/// and every preview message (the final one included).
fn streamed(rel: &str) -> (Trace, Preview, Vec<Data>) {
    let (tx, rx) = channel();
    let progress = Arc::new(Progress::default());
    let mut preview = Preview::new(tx, Arc::clone(&progress));
    let opts = LoadOptions::default();
    let trace = load(&fixture(rel), &opts, &progress.decoded, &mut preview).expect("loads");
    let last = preview.snapshot(false).map(Data::preview);
    let mut sent: Vec<Data> = rx
        .try_iter()
        .map(|m| match m {
            LoadMsg::Preview(d) => *d,
            _ => panic!("only previews"),
        })
        .collect();
    sent.extend(last);
    (trace, preview, sent)
}

/// Each CPU's runs from the recorded sched_switch events of `trace`
/// (start, end, incoming tid), the last one ending at the last event.
fn recorded_switches(trace: &Trace) -> Vec<Vec<(u64, u64, Tid)>> {
    let last = trace.events.last().map_or(0, |e| e.ts.0);
    let mut ins: Vec<Vec<(u64, Tid)>> = Vec::new();
    for e in &trace.events {
        if let EventData::Switch { next_tid, .. } = e.data {
            let c = e.cpu.0 as usize;
            if ins.len() <= c {
                ins.resize(c + 1, Vec::new());
            }
            ins[c].push((e.ts.0, next_tid.0));
        }
    }
    ins.iter()
        .map(|v| {
            (0..v.len())
                .map(|i| (v[i].0, v.get(i + 1).map_or(last, |n| n.0), v[i].1))
                .collect()
        })
        .collect()
}

/// Fixtures the stream reads to their end (`idle/` ones are compressed).
const STREAMABLE: [&str; 4] = [
    "sim/mixed-s1.data",
    "sim/bare-metal-s1.data",
    "perf/sched_small.data",
    "perf/stat_runtime.data",
];

#[test]
fn the_stream_loads_the_loaders_trace() {
    for rel in STREAMABLE {
        let (trace, preview, _) = streamed(rel);
        let whole = schedscope_parser::load(&fixture(rel)).unwrap();
        assert_eq!(trace.events, whole.events, "{rel}");
        assert_eq!(trace.event_count(), whole.event_count(), "{rel}");
        assert_eq!(trace.events_by_name, whole.events_by_name, "{rel}");
        assert_eq!(preview.events, whole.events.len() as u64, "{rel}");
    }
}

#[test]
fn the_preview_is_the_recorded_switches() {
    for rel in STREAMABLE {
        let (trace, _, sent) = streamed(rel);
        let last = sent.last().expect("a preview");
        assert!(
            last.preview && !last.from_cache && last.lanes_only(),
            "{rel}"
        );
        assert_eq!(last.report.trace.events, trace.events.len() as u64);
        let want = recorded_switches(&trace);
        for (c, lane) in last.lanes.cpus.iter().enumerate() {
            let got: Vec<_> = lane.runs().collect();
            assert_eq!(
                got,
                want.get(c).cloned().unwrap_or_default(),
                "{rel} CPU {c}"
            );
        }
        // where the timeline repaired nothing, its lanes run as the
        // preview's (but for the open last run, which it draws to the
        // trace's end)
        let tl = Timeline::build(&trace);
        let full = Lanes::build(&tl);
        for (c, lane) in full.cpus.iter().enumerate() {
            if full.repaired[c].covered(0, u64::MAX) > 0 {
                continue;
            }
            let mut got: Vec<_> = last.lanes.cpus[c].runs().collect();
            let mut want: Vec<_> = lane.runs().collect();
            assert_eq!(
                got.pop().map(|r| (r.0, r.2)),
                want.pop().map(|r| (r.0, r.2))
            );
            assert_eq!(got, want, "{rel} CPU {c}");
        }
    }
}

#[test]
fn a_trace_that_cannot_stream_is_loaded_whole_without_a_preview() {
    for rel in [
        "perf/sched_small_zstd.data",
        "idle/hackbench.data",
        "ftrace/tracefs-sched.txt",
    ] {
        let (trace, preview, sent) = streamed(rel);
        let whole = schedscope_parser::load(&fixture(rel)).unwrap();
        assert_eq!(trace.events, whole.events, "{rel}");
        // what the stream gave before it gave up is forgotten
        assert_eq!(preview.events, 0, "{rel}");
        assert!(
            sent.is_empty(),
            "{rel}: no preview after the stream gave up"
        );
    }
}

#[test]
fn the_axis_reaches_past_the_last_event_by_the_share_still_to_decode() {
    let progress = Arc::new(Progress::default());
    let (tx, _rx) = channel();
    let mut p = Preview::new(tx, Arc::clone(&progress));
    p.file_size = 1000;
    p.span = Some((100, 200));
    progress.decoded.store(250, Ordering::Relaxed);
    let s = p.snapshot(true).unwrap();
    assert_eq!((s.start, s.end), (100, 500));
    assert_eq!(p.snapshot(false).unwrap().end, 200);
}

#[test]
fn a_load_that_runs_long_enough_sends_previews_as_the_events_come() {
    let trace = schedscope_parser::load(&fixture("sim/mixed-s1.data")).unwrap();
    let (tx, rx) = channel();
    let progress = Arc::new(Progress::default());
    let mut p = Preview::new(tx, Arc::clone(&progress));
    let (a, b) = trace.events.split_at(trace.events.len() / 2);
    p.push(a);
    assert!(rx.try_recv().is_err(), "none before FIRST_AFTER");
    // as if the load had run for a while
    p.next = Instant::now();
    p.push(b);
    let Ok(LoadMsg::Preview(d)) = rx.try_recv() else {
        panic!("a preview");
    };
    assert_eq!(d.report.trace.events, trace.events.len() as u64);
    assert_eq!(
        progress.streamed.load(Ordering::Relaxed),
        d.report.trace.events
    );
    // the next one waits MIN_GAP at least
    p.push(b);
    assert!(rx.try_recv().is_err());
    // the end of the stream sends the whole (on its own thread)
    p.finish();
    let Ok(LoadMsg::Preview(d)) = rx.recv() else {
        panic!("the last preview");
    };
    assert_eq!(d.report.trace.events, (trace.events.len() + b.len()) as u64);
    assert!(rx.recv().is_err(), "the preview is done with");
}
