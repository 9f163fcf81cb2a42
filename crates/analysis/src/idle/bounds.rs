//! How far lost events can move idle's figures: `idle_ns_min`/`idle_ns_max`
//! and `wasted_idle_ns_min`/`wasted_idle_ns_max`, per CPU and in total
//! (design: "Lost events: evidence first, then a rule, always with bounds").
//!
//! A CPU's state is unknown over its **uncertain windows**: each inferred
//! switch-in's `[earliest, latest]` (the CPU idled before it and ran the
//! task after, so the window's idle is anything in `[0, its length]`), each
//! stretch where a switch-out contradicts the CPU's last recorded switch
//! and nothing was inferred ([`crate::timeline::Timeline::unknown`]), each
//! loss record's span (from the CPU's last event before the record to its
//! first event after), and on a CPU that shows loss the time before its
//! first recorded switch and after its last one when that left it idle
//! (a switch lost there contradicts nothing the trace has). Merged per CPU into disjoint windows `W`, with
//! `v` the timeline's idle inside them and `L` their length:
//!
//! * `idle_ns_min = idle_ns - v`, `idle_ns_max = idle_ns - v + L`;
//! * wasted idle is a cross-CPU figure (a CPU's idle is wasted while some
//!   task is stuck anywhere, and a lost switch-in on one CPU moves when
//!   its task stopped being stuck), so it is bounded over the union `G` of
//!   every CPU's windows: `wasted_idle_ns_min = wasted_idle_ns - (idle
//!   inside G)`, `wasted_idle_ns_max = min(idle_ns_max, wasted_idle_ns +
//!   (the most idle the CPU can have inside G))`;
//! * throttled idle is part of wasted idle and moves with it:
//!   `throttled_ns_min/max` the same way, capped by `wasted_idle_ns_max`.
//!
//! On a trace without loss evidence there are no windows and every bound
//! equals its value. Before a CPU's first recorded switch the timeline has
//! no run (idle replays the first event's common_pid there): a window
//! reaching there counts as entirely idle or entirely busy.

use super::IdleReport;
use crate::timeline::Timeline;
use schedscope_trace::Trace;

/// Disjoint, sorted `[start, end)` windows.
type Windows = Vec<(u64, u64)>;

/// Sort and merge `w`, dropping empty windows.
fn merge(mut w: Windows) -> Windows {
    w.retain(|&(a, b)| b > a);
    w.sort_unstable();
    let mut out: Windows = Vec::with_capacity(w.len());
    for (a, b) in w {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// Total length of `w`.
fn len(w: &Windows) -> u64 {
    w.iter().map(|&(a, b)| b - a).sum()
}

/// The uncertain windows of each CPU (`n` CPUs), clipped to `[lo, hi]`.
fn windows(trace: &Trace, tl: &Timeline, n: usize, lo: u64, hi: u64) -> Vec<Windows> {
    let mut w: Vec<Windows> = vec![Vec::new(); n];
    let mut add = |cpu: u32, a: u64, b: u64| {
        if let Some(v) = w.get_mut(cpu as usize) {
            v.push((a.max(lo), b.min(hi)));
        }
    };
    for r in &tl.inferred {
        add(r.cpu.0, r.earliest.0, r.latest.0);
    }
    for u in &tl.unknown {
        add(u.cpu.0, u.start.0, u.end.0);
    }
    // On a CPU that shows loss, its first recorded switch may follow lost
    // ones: who ran before it is unknown.
    for (c, runs) in tl.cpus.iter().enumerate() {
        let marked = trace.loss_marks.iter().any(|m| m.cpu as usize == c);
        if tl.loss.lossy(c as u32) || marked {
            add(c as u32, lo, runs.first().map_or(hi, |r| r.ts.0));
            // Nor does anything contradict a lost switch out of its last
            // idle run: the trace ends before the task's switch-out.
            if let Some(r) = runs.last().filter(|r| r.tid.is_idle()) {
                add(c as u32, r.ts.0, hi);
            }
        }
    }
    // Around each loss record: from the CPU's last event strictly before
    // it to its first at or after it (the trace's ends when there is
    // none), as the timeline's build found them.
    debug_assert_eq!(tl.mark_spans.len(), trace.loss_marks.len());
    for (m, s) in trace.loss_marks.iter().zip(&tl.mark_spans) {
        add(
            m.cpu,
            s.before.map_or(lo, |t| t.0),
            s.after.map_or(hi, |t| t.0),
        );
    }
    w.into_iter().map(merge).collect()
}

/// The timeline's idle time of CPU `c` inside `w`, and the part of `w`
/// before the CPU's first run (where idle's own lead-in decides).
fn idle_inside(tl: &Timeline, c: usize, w: &Windows, hi: u64) -> (u64, u64) {
    let runs = tl.runs(c);
    let first = runs.first().map_or(hi, |r| r.ts.0);
    let mut idle = 0;
    let mut before = 0;
    for &(a, b) in w {
        if a < first {
            before += b.min(first) - a;
        }
        let k = runs.partition_point(|r| r.end.is_some_and(|e| e.0 <= a));
        for r in runs.range(k..runs.len()) {
            if r.ts.0 >= b {
                break;
            }
            if r.tid.is_idle() {
                let e = r.end.map_or(hi, |e| e.0);
                idle += e.min(b).saturating_sub(r.ts.0.max(a));
            }
        }
    }
    (idle, before)
}

/// Every CPU's uncertain windows together, sorted by start, answering
/// "where within `[a, b]` may events be missing" for the other analyses'
/// bounds (latency's largest wait, gang's uncertain time).
pub(crate) struct AllWindows {
    /// Every CPU's windows, sorted by start (they may overlap each other).
    all: Windows,
    /// `reach[k]`: the largest end among `all[..=k]`.
    reach: Vec<u64>,
}

impl AllWindows {
    pub(crate) fn new(per_cpu: &[Windows]) -> AllWindows {
        let mut all: Windows = per_cpu.iter().flatten().copied().collect();
        all.sort_unstable();
        let mut far = 0u64;
        let reach = all
            .iter()
            .map(|&(_, e)| {
                far = far.max(e);
                far
            })
            .collect();
        AllWindows { all, reach }
    }

    /// Whether some window overlaps `[a, b]`.
    pub(crate) fn overlaps(&self, a: u64, b: u64) -> bool {
        let k = self.all.partition_point(|&(s, _)| s <= b);
        k > 0 && self.reach[k - 1] > a
    }

    /// The earliest instant in `[a, b]` that a window covers, `None` when
    /// none overlaps: the first window ending after `a` (`reach` is
    /// monotone, so every earlier one ends by `a`) starts no later than any
    /// other window overlapping `[a, b]`.
    pub(crate) fn first_in(&self, a: u64, b: u64) -> Option<u64> {
        let k = self.reach.partition_point(|&e| e <= a);
        self.all
            .get(k)
            .filter(|&&(s, _)| s <= b)
            .map(|&(s, _)| s.max(a))
    }
}

/// Every CPU's uncertain windows over the whole trace (empty on a trace
/// without loss evidence), for the other analyses' bounds.
pub(crate) fn uncertain_windows(trace: &Trace, tl: &Timeline) -> Vec<Windows> {
    let n = tl.cpus.len().max(trace.nr_cpus as usize);
    windows(trace, tl, n, trace.start().0, trace.end().0)
}

/// Fill in the bounds of `r` (per CPU and in total) from `tl` and `trace`.
pub(super) fn fill(r: &mut IdleReport, trace: &Trace, tl: &Timeline) {
    let lo = trace.start().0;
    let hi = lo + r.duration_ns;
    let n = r.cpus.len();
    let w = windows(trace, tl, n, lo, hi);
    let all = merge(w.iter().flatten().copied().collect());
    for (c, cpu) in r.cpus.iter_mut().enumerate() {
        let own = &w[c];
        let (v, pre) = idle_inside(tl, c, own, hi);
        let l = len(own);
        cpu.idle_ns_min = cpu.idle_ns.saturating_sub(v + pre);
        cpu.idle_ns_max = (cpu.idle_ns - v.min(cpu.idle_ns)) + l;
        // Wasted: over every CPU's windows.
        let (g_idle, g_pre) = idle_inside(tl, c, &all, hi);
        let rest: Windows = subtract(&all, own);
        let (rest_idle, rest_pre) = idle_inside(tl, c, &rest, hi);
        cpu.wasted_idle_ns_min = cpu.wasted_idle_ns.saturating_sub(g_idle + g_pre);
        cpu.wasted_idle_ns_max = (cpu.wasted_idle_ns + l + rest_idle + rest_pre)
            .min(cpu.idle_ns_max)
            .max(cpu.wasted_idle_ns);
        // Throttled: part of wasted idle, moved by the same windows.
        cpu.throttled_ns_min = cpu.throttled_ns.saturating_sub(g_idle + g_pre);
        cpu.throttled_ns_max = (cpu.throttled_ns + l + rest_idle + rest_pre)
            .min(cpu.wasted_idle_ns_max)
            .max(cpu.throttled_ns);
    }
    r.idle_ns_min = r.cpus.iter().map(|c| c.idle_ns_min).sum();
    r.idle_ns_max = r.cpus.iter().map(|c| c.idle_ns_max).sum();
    r.wasted_idle_ns_min = r.cpus.iter().map(|c| c.wasted_idle_ns_min).sum();
    r.wasted_idle_ns_max = r.cpus.iter().map(|c| c.wasted_idle_ns_max).sum();
    r.throttled_ns_min = r.cpus.iter().map(|c| c.throttled_ns_min).sum();
    r.throttled_ns_max = r.cpus.iter().map(|c| c.throttled_ns_max).sum();
    // Which evidence placed each CPU's inferred switch-ins.
    for rep in r.repairs.iter_mut() {
        rep.evidence = tl.repairs_by_evidence(schedscope_trace::Cpu(rep.cpu));
        rep.uncertain_ns = w.get(rep.cpu as usize).map_or(0, len);
    }
}

/// `a` minus `b` (both merged: sorted and disjoint), in one walk over
/// both (a lossy CPU has a window per repaired switch-in, tens of
/// thousands on a long recording).
fn subtract(a: &Windows, b: &Windows) -> Windows {
    let mut out = Vec::new();
    // The first window of `b` that may still overlap: those before it end
    // at or before the current window of `a` starts (both are sorted).
    let mut j = 0;
    for &(s, e) in a {
        while b.get(j).is_some_and(|&(_, be)| be <= s) {
            j += 1;
        }
        let mut cur = s;
        for &(bs, be) in &b[j..] {
            if bs >= e {
                break;
            }
            if be <= cur {
                continue;
            }
            if bs > cur {
                out.push((cur, bs));
            }
            cur = cur.max(be);
        }
        if cur < e {
            out.push((cur, e));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_and_subtract() {
        let m = merge(vec![(5, 9), (1, 3), (2, 4), (9, 9), (8, 12)]);
        assert_eq!(m, vec![(1, 4), (5, 12)]);
        assert_eq!(len(&m), 10);
        assert_eq!(
            subtract(&m, &vec![(0, 2), (6, 7), (11, 20)]),
            vec![(2, 4), (5, 6), (7, 11)]
        );
        // Against the definition (a point is kept when in `a` and not in
        // `b`), on random merged windows.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..200 {
            let mut gen = |k: u64| {
                merge(
                    (0..k)
                        .map(|_| {
                            let s = rnd(100);
                            (s, s + rnd(12))
                        })
                        .collect(),
                )
            };
            let (a, b) = (gen(8), gen(8));
            let d = subtract(&a, &b);
            let inside = |w: &Windows, p: u64| w.iter().any(|&(s, e)| s <= p && p < e);
            for p in 0..120 {
                assert_eq!(
                    inside(&d, p),
                    inside(&a, p) && !inside(&b, p),
                    "{a:?} - {b:?} at {p}"
                );
            }
            assert_eq!(d, merge(d.clone()), "sorted and disjoint");
        }
    }
}
