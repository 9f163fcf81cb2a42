//! The section fed the events in slices is the section of the whole trace.

use super::*;
use crate::test_stream::{push_in, take_events, SLICINGS};
use crate::{Options, Timeline};

/// The section and the PLE exit rows from the events pushed in slices of
/// every [`SLICINGS`] size, to a trace without events (the timeline built
/// from the whole trace), are those of the whole trace; returns the PLE
/// exits found.
fn check_slices(name: &str, mut trace: Trace, opts: &Options) -> usize {
    let tl = Timeline::build(&trace);
    let ctx = Context {
        trace: &trace,
        timeline: &tl,
        opts,
    };
    let whole = format!("{:?}", analyze(&ctx));
    let exits = ple_exits(&ctx);
    let n = exits.as_ref().map_or(0, Vec::len);
    let exits = format!("{exits:?}");
    let events = take_events(&mut trace);
    let ctx = Context {
        trace: &trace,
        timeline: &tl,
        opts,
    };
    for sizes in SLICINGS {
        let mut pass = LhpPass::new(&ctx);
        push_in(&events, sizes, |s| pass.push(s));
        assert_eq!(format!("{:?}", pass.finish()), whole, "{name} {sizes:?}");
        let got = PlePass::with_exits(&ctx).map(|mut pass| {
            push_in(&events, sizes, |s| pass.push(s));
            pass.finish_with_exits().1
        });
        assert_eq!(format!("{got:?}"), exits, "{name} {sizes:?}");
    }
    n
}

#[test]
fn pushed_in_slices_is_one_push() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let load = |name: &str| {
        schedscope_parser::load(&root.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let opts = Options::default();
    for name in [
        "sim/mixed-s1.data",
        "sim/bare-metal-s1.data",
        "perf/sched_small.data",
        "tlb/tracefs-tlb.txt",
    ] {
        let n = check_slices(name, load(name), &opts);
        if name == "sim/mixed-s1.data" {
            assert!(n > 50, "{name}: {n} PLE exits");
        }
    }
    // Explicit gangs (the VMs' processes), and an invalid spec: the
    // section's error.
    for specs in [vec!["pid=1000", "pid=1100"], vec!["nonsense"]] {
        let opts = Options {
            gang_specs: specs.iter().map(|s| s.to_string()).collect(),
            ..Options::default()
        };
        check_slices("sim/mixed-s1.data", load("sim/mixed-s1.data"), &opts);
    }
}
