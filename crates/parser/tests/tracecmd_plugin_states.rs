//! trace-cmd report's sched_switch plugin text loses the `+` of `R+`
//! (issue 22, point 6). The oracle is the tracefs text of the same ring
//! buffer (`fixtures/ftrace/tracefs-sched.txt`, which prints `R+`): the
//! plugin text's `R` switch-outs are its `R` plus its `R+` ones, and the
//! decoder says so in a warning that names a trace.dat lying beside the text.

use schedscope_parser::load;
use schedscope_trace::{EventData, Severity, Trace};
use std::path::{Path, PathBuf};

fn fixture(dir: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(dir)
        .join(name)
}

/// (runnable not marked preempted, marked preempted) switch-outs.
fn runnable(t: &Trace) -> (u64, u64) {
    let mut out = (0, 0);
    for e in &t.events {
        if let EventData::Switch { prev_state, .. } = e.data {
            if prev_state.bits == 0 {
                if prev_state.preempted {
                    out.1 += 1;
                } else {
                    out.0 += 1;
                }
            }
        }
    }
    out
}

fn plugin_warning(t: &Trace) -> Option<&schedscope_trace::Warning> {
    t.warnings
        .iter()
        .find(|w| w.message.contains("sched_switch plugin prints a preempted"))
}

#[test]
fn plugin_text_warns_that_r_may_be_preempted() {
    let tracefs = load(&fixture("ftrace", "tracefs-sched.txt")).unwrap();
    let plugin = load(&fixture("ftrace", "tracecmd-sched.txt")).unwrap();
    let (r, r_plus) = runnable(&tracefs);
    assert!(r_plus > 0, "the buffer has a preempted switch-out");
    assert_eq!(runnable(&plugin), (r + r_plus, 0));
    let w = plugin_warning(&plugin).expect("a warning about R+");
    assert_eq!(w.severity, Severity::Info);
    assert_eq!(w.count, r + r_plus);
    assert!(w
        .message
        .contains(&format!("counts all {} R switch-outs", r + r_plus)));
    assert!(w
        .message
        .contains("the trace.dat this text was printed from"));
    // tracefs text prints the +: no such warning.
    assert!(plugin_warning(&tracefs).is_none());
    // Nor does trace-cmd's raw print (numeric states keep the marker).
    let raw = "version = 6\ncpus=1\n          <idle>-0     [000]     1.000000: sched_switch:         prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=256 next_comm=a next_pid=5 next_prio=120\n";
    let t = schedscope_parser::load_bytes("raw.txt", raw.as_bytes()).unwrap();
    assert!(plugin_warning(&t).is_none(), "{:?}", t.warnings);
}

#[test]
fn plugin_text_points_to_the_trace_dat_beside_it() {
    let dir = schedscope_testkit::tmpdir("plugin-beside");
    let text = dir.join("report.txt");
    std::fs::copy(fixture("ftrace", "tracecmd-sched.txt"), &text).unwrap();
    let t = load(&text).unwrap();
    assert!(plugin_warning(&t)
        .unwrap()
        .message
        .contains("the trace.dat this text was printed from"));
    // A file named trace.dat that is not one is not pointed to.
    std::fs::write(dir.join("trace.dat"), b"not a trace.dat file").unwrap();
    let t = load(&text).unwrap();
    assert!(!plugin_warning(&t).unwrap().message.contains("beside"));
    std::fs::copy(fixture("tracedat", "gen_v6.dat"), dir.join("report.dat")).unwrap();
    let t = load(&text).unwrap();
    let m = &plugin_warning(&t).unwrap().message;
    let want = format!(
        "give schedscope {}, beside this text,",
        dir.join("report.dat").display()
    );
    assert!(m.contains(&want), "{m}");
}
