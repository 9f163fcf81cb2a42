//! Kernels that print sched_switch `prev_state` shifted by one letter
//! (issue 22, point 1), against an independent oracle: `fixtures/shifted/`
//! holds `sane.txt` (perf script text of a recording on a kernel that
//! prints the states correctly) and `shifted.txt`, the same text with every
//! state rewritten the way the buggy kernels print it (`shift.py`). Decoding
//! the shifted text must give back the states of the sane text.

use schedscope_parser::{load, load_bytes};
use schedscope_trace::{EventData, PrevState, Severity, Tid, Trace};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/shifted")
        .join(name)
}

fn text(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).unwrap()
}

/// (tid switched out, state) of every switch, in time order.
fn states(t: &Trace) -> Vec<(Tid, PrevState)> {
    t.events
        .iter()
        .filter_map(|e| match e.data {
            EventData::Switch {
                prev_tid,
                prev_state,
                ..
            } => Some((prev_tid, prev_state)),
            _ => None,
        })
        .collect()
}

/// Whether anything happens to `tid` after switch `k` of `t` (a switch-in
/// or a wakeup): the oracle for the R+ switch-outs the decoder must leave
/// unknown.
fn anything_after(t: &Trace, k: usize, tid: Tid) -> bool {
    let mut seen = 0;
    let mut after = false;
    for e in &t.events {
        match e.data {
            EventData::Switch { next_tid, .. } => {
                if after && next_tid == tid {
                    return true;
                }
                if seen == k {
                    after = true;
                }
                seen += 1;
            }
            EventData::Wakeup { tid: w, .. } if after && w == tid => return true,
            _ => {}
        }
    }
    false
}

#[test]
fn shifted_letters_decode_to_the_sane_states() {
    let sane = load(&fixture("sane.txt")).unwrap();
    let shifted = load(&fixture("shifted.txt")).unwrap();
    assert!(sane.state_doubt.is_none() && shifted.state_doubt.is_none());
    assert!(
        !sane.warnings.iter().any(|w| w.message.contains("shifted")),
        "{:?}",
        sane.warnings
    );
    let (a, b) = (states(&sane), states(&shifted));
    assert_eq!(a.len(), b.len());
    // The fixture exercises every case: idle switch-outs, preemptions,
    // idle kernel threads (I) and plain sleeps.
    let count = |f: &dyn Fn(&PrevState) -> bool| a.iter().filter(|(_, s)| f(s)).count();
    assert!(a.iter().filter(|(t, _)| *t == Tid(0)).count() >= 20);
    assert!(count(&|s| s.preempted) >= 40);
    assert!(count(&|s| s.bits == PrevState::I) >= 20);
    assert!(count(&|s| s.bits == PrevState::S) >= 50);
    let (mut equal, mut unknown_at_end) = (0, 0);
    for (k, ((tid, want), (tid2, got))) in a.iter().zip(&b).enumerate() {
        assert_eq!(tid, tid2);
        if want == got {
            equal += 1;
            continue;
        }
        // Only an I or R+ (both printed R+ by the shifted kernel) that
        // nothing follows may differ: it is left unknown.
        assert!(
            want.bits == PrevState::I || (want.bits == 0 && want.preempted),
            "switch {k} of tid {}: {} decoded as {}",
            tid.0,
            want.to_text(),
            got.to_text()
        );
        assert!(got.is_unknown(), "switch {k}: {}", got.to_text());
        assert!(!anything_after(&sane, k, *tid), "switch {k}");
        unknown_at_end += 1;
    }
    assert_eq!(equal + unknown_at_end, a.len());
    assert!(unknown_at_end <= 10, "{unknown_at_end}");
    let w = shifted
        .warnings
        .iter()
        .find(|w| w.message.contains("shifted by one letter"))
        .expect("a warning says the table was shifted");
    assert_eq!(w.severity, Severity::Info);
    assert!(
        w.message.contains(&format!(
            "{unknown_at_end} are followed by nothing until the trace ends"
        )),
        "{}",
        w.message
    );
}

/// The idle task switched out as S, but `R` is also printed: refuse.
#[test]
fn mixed_evidence_sets_state_doubt() {
    let shifted = text("shifted.txt");
    // One idle switch-out back to R (as a sane kernel prints it).
    let i = shifted
        .find("prev_pid=0 prev_prio=120 prev_state=S ")
        .unwrap();
    let mixed = format!(
        "{}prev_pid=0 prev_prio=120 prev_state=R {}",
        &shifted[..i],
        &shifted[i + "prev_pid=0 prev_prio=120 prev_state=S ".len()..]
    );
    let t = load_bytes("mixed.txt", mixed.as_bytes()).unwrap();
    let why = t.state_doubt.as_deref().expect("states are doubted");
    assert!(why.contains("switched out as R 1 times"), "{why}");
    let w = t
        .warnings
        .iter()
        .find(|w| w.message.contains("prev_state cannot be trusted"))
        .unwrap();
    assert_eq!(w.severity, Severity::DataLoss);
    // The states stay as printed: nothing was reinterpreted.
    let plain = load_bytes("plain.txt", shifted.as_bytes()).unwrap();
    assert_ne!(states(&plain), states(&t));

    // A plain R for another task is just as impossible for such a kernel.
    let other = shifted.replacen("prev_state=D ==> ", "prev_state=R ==> ", 1);
    let t = load_bytes("other.txt", other.as_bytes()).unwrap();
    assert!(t
        .state_doubt
        .as_deref()
        .is_some_and(|w| w.contains("1 other switch-outs print a plain R")));
}

/// Without wakeup events an R+ cannot be told from an idle kernel thread.
#[test]
fn no_wakeups_sets_state_doubt() {
    let shifted = text("shifted.txt");
    let no_wakeups: String = shifted
        .lines()
        .filter(|l| !l.contains("sched:sched_wakeup:") && !l.contains("sched:sched_waking:"))
        .map(|l| format!("{l}\n"))
        .collect();
    let t = load_bytes("nowake.txt", no_wakeups.as_bytes()).unwrap();
    let why = t.state_doubt.as_deref().expect("states are doubted");
    assert!(
        why.contains("no sched_wakeup or sched_waking events"),
        "{why}"
    );
}

/// A sane text trace without idle switch-outs is left alone (no evidence
/// either way), as before.
#[test]
fn no_idle_switch_outs_changes_nothing() {
    let sane = text("sane.txt");
    let no_idle: String = sane
        .lines()
        .filter(|l| !l.contains("prev_pid=0 "))
        .map(|l| format!("{l}\n"))
        .collect();
    let t = load_bytes("noidle.txt", no_idle.as_bytes()).unwrap();
    assert!(t.state_doubt.is_none());
    assert!(!t.warnings.iter().any(|w| w.message.contains("shifted")));
}
