//! The idle section from a stream of the events ([`IdleStream`]) is the
//! one from the trace's vector ([`analyze`]).

use super::*;
use schedscope_trace::trace::Dropped;
use schedscope_trace::Trace;

/// The trace of `path` without its events, as a stream returns it: its
/// span and count kept in [`Trace::dropped`] (`trace`: the same, loaded).
fn bare(path: &std::path::Path, trace: &Trace) -> Trace {
    let mut t = schedscope_parser::load(path).unwrap();
    if t.dropped.is_none() {
        t.dropped = Some(Dropped {
            total: trace.events.len() as u64,
            first: trace.start(),
            last: trace.end(),
        });
    }
    t.events.clear();
    assert_eq!((t.start(), t.end()), (trace.start(), trace.end()));
    t
}

/// The section streamed: the events pushed in slices of the sizes `cuts`
/// cycles through, to a pass over `bare` (the trace without events) and
/// `tl` (built from the events).
fn streamed(
    path: &std::path::Path,
    trace: &Trace,
    tl: &crate::Timeline,
    cuts: &[usize],
) -> Result<IdleReport, AnalysisError> {
    let bare = bare(path, trace);
    let opts = crate::Options::default();
    let ctx = Context {
        trace: &bare,
        timeline: tl,
        opts: &opts,
    };
    let mut prep = IdlePrep::default();
    prep.push(&trace.events);
    let mut s = IdleStream::new(&ctx, prep);
    let mut rest = &trace.events[..];
    for &n in cuts.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (now, later) = rest.split_at(n.min(rest.len()));
        s.push(now);
        rest = later;
    }
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
        let trace = schedscope_parser::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
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
        for cuts in [&[1usize][..], &[7, 3000, 1], &[usize::MAX]] {
            let got = format!("{:?}", streamed(&path, &trace, &tl, cuts));
            assert!(got == want, "{name} {cuts:?}:\n{got}\n!=\n{want}");
        }
    }
    assert!(waited >= 4, "{waited}");
    // A trace of lost events, repaired and bounded, is among them.
    let lossy = schedscope_parser::load(&root.join("idle/hackbench.data")).unwrap();
    assert!(lossy.lost > 0 && !lossy.loss_marks.is_empty());
}
