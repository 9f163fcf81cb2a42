//! How far lost events can move the largest wait for a CPU
//! (docs/design.md, "Lost events: evidence first, then a rule, always
//! with bounds"): `max_delay_ns_min` / `max_delay_ns_max`.
//!
//! The latency pass follows `perf sched latency`'s rules and knows nothing
//! of loss; these bounds come from the thread-state timeline and the
//! uncertain windows the idle bounds use (every CPU's repaired switch-ins'
//! `[earliest, latest]`, its unknown stretches, the spans around loss
//! records). The largest true wait (a wakeup or an `R` switch-out to the
//! next switch-in; preempted `R+` waits are counted apart, as the pass
//! does) lies in `[min, max]`:
//!
//! - **min**: the largest of the tasks' largest waits that no uncertain
//!   window on any CPU overlaps (their wakeup and switch-in were both
//!   recorded and nothing was lost in between, so the wait is the true one).
//!   A true wait the trace misses can only make the truth larger.
//! - **max**: the largest of the measured waits; of every run of
//!   consecutive not-preempted Runnable intervals of a thread (a wait ends
//!   by the time its Runnable state ends: at the switch-in, or at the
//!   switch-out that shows a lost one); of a repaired switch-in's `latest`
//!   less the start of the wait it ends; and of a switch-in from a sleep
//!   whose wakeup was lost: a lost wakeup lies in an uncertain window (a
//!   span where events are missing), so the wait began no earlier than
//!   the first uncertain instant within the sleep, and a sleep that no
//!   window overlaps had no lost wakeup.

use super::LatencyReport;
use crate::{ThreadState, Timeline};
use schedscope_trace::Trace;

/// Bounds of the largest wait (`None` on a trace without loss evidence,
/// where the measured value is exact).
pub(super) fn max_delay(
    report: &LatencyReport,
    trace: &Trace,
    tl: &Timeline,
) -> Option<(u64, u64)> {
    let windows = crate::idle::bounds::uncertain_windows(trace, tl);
    if windows.iter().all(Vec::is_empty) {
        return None;
    }
    let all = crate::idle::bounds::AllWindows::new(&windows);
    let mut lo = 0u64;
    let mut hi = 0u64;
    for t in &report.tasks {
        hi = hi.max(t.delay_max_ns);
        if t.switches > 0 && !all.overlaps(t.delay_max_start_ns, t.delay_max_at_ns) {
            lo = lo.max(t.delay_max_ns);
        }
    }
    for th in &tl.threads {
        let ivs = &th.intervals;
        let mut wait_from: Option<u64> = None;
        for (k, iv) in ivs.iter().enumerate() {
            let waiting = iv.state == ThreadState::Runnable && !iv.preempted;
            if waiting {
                let from = *wait_from.get_or_insert(iv.ts.0);
                if let Some(e) = iv.end {
                    hi = hi.max(e.0 - from);
                }
                continue;
            }
            if iv.state == ThreadState::Running {
                let repaired = iv.cpu.and_then(|c| tl.repair_at(c, th.tid, iv.ts));
                let until = repaired.map_or(iv.ts.0, |r| r.latest.0.max(iv.ts.0));
                match wait_from {
                    Some(from) => hi = hi.max(until - from),
                    None => {
                        // Switched in from a sleep: its wakeup was lost, so
                        // it lies where events may be missing, in an
                        // uncertain window overlapping the sleep; the wait
                        // began no earlier than the first such instant.
                        if let Some(prev) = k.checked_sub(1).and_then(|p| ivs.get(p)) {
                            if prev.state != ThreadState::Runnable {
                                if let Some(from) = all.first_in(prev.ts.0, until) {
                                    hi = hi.max(until.saturating_sub(from));
                                }
                            }
                        }
                    }
                }
            }
            wait_from = None;
        }
    }
    Some((lo, hi.max(lo)))
}
