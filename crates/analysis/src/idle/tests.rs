//! The idle section from a stream of the events ([`IdleStream`]) is the
//! one from the trace's vector ([`analyze`]).

use super::*;
use crate::test_stream::{push_in, take_events};
use schedscope_trace::{Event, Trace};

/// The section streamed: `events` pushed in slices of the sizes `cuts`
/// cycles through, to a pass over `bare` (the trace without its events)
/// and `tl` (built from them).
fn streamed(
    bare: &Trace,
    events: &[Event],
    tl: &crate::Timeline,
    cuts: &[usize],
) -> Result<IdleReport, AnalysisError> {
    let opts = crate::Options::default();
    let ctx = Context {
        trace: bare,
        timeline: tl,
        opts: &opts,
    };
    let mut prep = IdlePrep::default();
    prep.push(events);
    let mut s = IdleStream::new(&ctx, prep);
    push_in(events, cuts, |e| s.push(e));
    s.finish()
}

#[test]
fn the_streamed_section_is_the_loaded_one() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut waited = 0;
    for name in [
        "perf/sched_small.data",
        "perf/stat_runtime.data",
        "perf/callchain.data",
        "sim/mixed-s1.data",
        "sim/bare-metal-s1.data",
        "idle/capped.data",
        "idle/hackbench.data",
        "ftrace/tracefs-sched.txt",
        "ftrace/tracefs-ipi-tgid.txt",
    ] {
        let path = root.join(name);
        let mut trace = schedscope_parser::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let tl = crate::Timeline::build(&trace);
        let opts = crate::Options::default();
        let ctx = Context {
            trace: &trace,
            timeline: &tl,
            opts: &opts,
        };
        let want = format!("{:?}", analyze(&ctx));
        // (more events than the look-ahead: the pass waits for it)
        waited += (trace.events.len() > 2 * inference::LOOKAHEAD_EVENTS) as u32;
        let (start, end) = (trace.start(), trace.end());
        let events = take_events(&mut trace);
        assert_eq!((trace.start(), trace.end()), (start, end));
        for cuts in [&[1usize][..], &[7, 3000, 1], &[usize::MAX]] {
            let got = format!("{:?}", streamed(&trace, &events, &tl, cuts));
            assert!(got == want, "{name} {cuts:?}:\n{got}\n!=\n{want}");
        }
    }
    assert!(waited >= 4, "{waited}");
    // A trace of lost events, repaired and bounded, is among them.
    let lossy = schedscope_parser::load(&root.join("idle/hackbench.data")).unwrap();
    assert!(lossy.lost > 0 && !lossy.loss_marks.is_empty());
}
