//! The Runnable-time index of one thread: its Runnable intervals as steps
//! of a prefix sum, answering "Runnable time before t" by galloping from
//! an earlier answer.

use crate::timeline::{StateInterval, ThreadState};
use schedscope_trace::Ts;

/// One step of a thread's Runnable-time index: for `t > ts` (up to the next
/// step), the thread's Runnable time in [start of trace, t) is
/// `base + min(t, cap) - ts`.
///
/// Steps are the thread's Runnable intervals (`cap` = their end) plus, after
/// a Runnable interval that ends later than the next interval starts (never
/// in a contiguous timeline), that next interval as a zero-length marker
/// (`cap` = `ts`), so that the answer equals the prefix sum over *all*
/// intervals (full length of every earlier Runnable interval, the one
/// containing `t` clipped at `t`) while a thread keeps one step per
/// Runnable interval, a fraction of its intervals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Step {
    ts: u64,
    cap: u64,
    base: u64,
}

/// The number of steps that start before `t` (their partition point),
/// galloping from `hint` (an earlier answer, for any `t`) in whichever
/// direction `t` lies: queries that move forward a little cost a few
/// probes, not a binary search over the thread.
pub(super) fn seek(steps: &[Step], t: u64, hint: usize) -> usize {
    let n = steps.len();
    let h = hint.min(n);
    let (lo, hi) = if h > 0 && steps[h - 1].ts >= t {
        // The answer is below h: gallop back.
        let mut hi = h - 1;
        let mut step = 1;
        loop {
            if hi < step {
                break (0, hi);
            }
            let probe = hi - step;
            if steps[probe].ts < t {
                break (probe + 1, hi);
            }
            hi = probe;
            step *= 2;
        }
    } else {
        // Every step before h starts before t: gallop forward.
        let mut lo = h;
        let mut step = 1;
        loop {
            let probe = lo + step - 1;
            if probe >= n {
                break (lo, n);
            }
            if steps[probe].ts >= t {
                break (lo, probe);
            }
            lo = probe + 1;
            step *= 2;
        }
    };
    lo + steps[lo..hi].partition_point(|s| s.ts < t)
}

/// Runnable time in [start of trace, t), given `p` = [`seek`]'s answer for `t`.
pub(super) fn runnable_before(steps: &[Step], p: usize, t: u64) -> u64 {
    match p.checked_sub(1).map(|i| &steps[i]) {
        // ts < t (partition point) and ts <= cap: no underflow.
        // (Sums wrap like the u64 additions they stand for: no panic on
        // absurd timestamps.)
        Some(s) => s.base.wrapping_add(t.min(s.cap) - s.ts),
        None => 0,
    }
}

/// A thread's Runnable-time steps (see [`Step`]) from its intervals, into
/// `buf` (reused across threads, grown as needed): returns how many.
/// Branch-free per interval: states alternate unpredictably.
pub(super) fn runnable_steps(
    ivs: impl ExactSizeIterator<Item = StateInterval>,
    end: Ts,
    buf: &mut Vec<Step>,
) -> usize {
    if buf.len() < ivs.len() {
        buf.resize(ivs.len(), Step::default());
    }
    let (mut m, mut acc) = (0usize, 0u64);
    // End of the previous interval when it was Runnable, else 0.
    let mut overhang = 0u64;
    for iv in ivs {
        let ts = iv.ts.0;
        let runnable = iv.state == ThreadState::Runnable;
        let cap = if runnable {
            iv.end_or(end).0.max(ts)
        } else {
            ts
        };
        // Written always, kept when it is a step (m <= this index < len).
        buf[m] = Step { ts, cap, base: acc };
        m += usize::from(runnable | (overhang > ts));
        acc = acc.wrapping_add(cap - ts);
        overhang = if runnable { cap } else { 0 };
    }
    m
}

#[cfg(test)]
mod tests {
    use super::super::tests::{iv, Rng, STATES};
    use super::*;

    /// Runnable time before `t` the long way: prefix sums over every
    /// interval, the one holding `t` (last to start before it) clipped at `t`.
    fn prefix_oracle(ivs: &[StateInterval], t: u64, end: Ts) -> u64 {
        let i = ivs.partition_point(|iv| iv.ts.0 < t);
        let len = |iv: &StateInterval| {
            if iv.state == ThreadState::Runnable {
                iv.end_or(end).0.saturating_sub(iv.ts.0)
            } else {
                0
            }
        };
        let mut s: u64 = ivs[..i.saturating_sub(1)].iter().map(len).sum();
        if let Some(iv) = i.checked_sub(1).map(|k| &ivs[k]) {
            if iv.state == ThreadState::Runnable {
                s += t.min(iv.end_or(end).0).saturating_sub(iv.ts.0);
            }
        }
        s
    }

    #[test]
    fn runnable_steps_clip_partial_intervals() {
        let ivs = [
            iv(10, Some(20), ThreadState::Running),
            iv(20, Some(50), ThreadState::Runnable),
            iv(50, Some(60), ThreadState::Running),
            iv(60, None, ThreadState::Runnable),
        ];
        let mut steps = Vec::new();
        let m = runnable_steps(ivs.iter().copied(), Ts(100), &mut steps);
        steps.truncate(m);
        // Only the Runnable intervals are steps in a contiguous timeline.
        assert_eq!(steps.len(), 2);
        let at = |t: u64| runnable_before(&steps, seek(&steps, t, 0), t);
        assert_eq!(at(5), 0);
        assert_eq!(at(20), 0);
        assert_eq!(at(30), 10);
        assert_eq!(at(55), 30);
        assert_eq!(at(80), 50);
        // The open interval ends with the trace.
        assert_eq!(at(200), 70);
    }

    #[test]
    fn runnable_steps_equal_prefix_sums_over_all_intervals() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for case in 0..400 {
            // Mostly contiguous intervals; some cases with gaps, overlaps
            // (an end past the next start), zero-length and reversed ones.
            let messy = case % 4 == 3;
            let n = 1 + rng.below(40) as usize;
            let mut ivs = Vec::with_capacity(n);
            let mut ts = rng.below(50);
            for k in 0..n {
                let len = rng.below(30);
                let end = if k + 1 == n && rng.below(2) == 0 {
                    None
                } else if messy {
                    Some((ts + len).saturating_sub(rng.below(40)) + rng.below(40))
                } else {
                    Some(ts + len)
                };
                ivs.push(iv(ts, end, STATES[rng.below(5) as usize]));
                ts = if messy {
                    ts + rng.below(2) * len
                } else {
                    ts + len
                };
            }
            let end = Ts(ts + rng.below(20));
            let mut steps = Vec::new();
            let m = runnable_steps(ivs.iter().copied(), end, &mut steps);
            steps.truncate(m);
            let last = end.0 + 40;
            for t in 0..=last {
                let want = prefix_oracle(&ivs, t, end);
                for hint in [0, 1, steps.len() / 2, steps.len(), steps.len() + 3] {
                    let p = seek(&steps, t, hint);
                    assert_eq!(p, steps.partition_point(|s| s.ts < t), "case {case} t={t}");
                    assert_eq!(
                        runnable_before(&steps, p, t),
                        want,
                        "case {case} t={t} hint={hint}: {ivs:?}"
                    );
                }
            }
        }
    }
}
