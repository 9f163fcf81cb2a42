//! The CFS-bandwidth refill as evidence for a lost switch-in (docs/design.md,
//! "Lost events: evidence first, then a rule, always with bounds").
//!
//! A task switched out runnable to the idle task was held off: a CPU never
//! idles with a runnable task it may run, so the task's cgroup was
//! throttled (a migration, which also explains it, clears this). It runs
//! again only after its cgroup's runtime is refilled, and the bandwidth
//! period timer refills on a fixed grid: the timer is forwarded by whole
//! periods from its previous expiry, so the refills of one cgroup fall at
//! `anchor + k * period`. The trace shows that grid where it recorded the
//! task's own switch-ins after a hold-off (the task switched in with no
//! wakeup in between: an unthrottle); from at least [`MIN_REFILLS`] of
//! them whose spacings are whole multiples of one period (within
//! [`TOLERANCE`]), a lost switch-in after a hold-off is estimated at the
//! first refill after the hold-off.
//!
//! Evidence for the estimate only: runtime returned early by a sibling
//! (the slack timer) can unthrottle between the grid's points, so the
//! bounds stay the rule's `[earliest, latest]`. Spacings that are not
//! whole periods (such early refills, a changed quota or period) leave the
//! task without the evidence.

use super::builder::Builder;
use schedscope_trace::Ts;

/// Traced refills needed before their grid is trusted.
pub(super) const MIN_REFILLS: usize = 3;

/// How far (a fraction `1 / TOLERANCE` of the period) a spacing between
/// traced refills may be from a whole number of periods: the switch-in
/// follows the refill by a wakeup's latency.
pub(super) const TOLERANCE: u64 = 50;

/// The shortest period the kernel accepts (`cfs_period_us` >= 1 ms).
const MIN_PERIOD_NS: u64 = 1_000_000;

/// One held-off task's refill history.
#[derive(Clone, Debug, Default)]
pub(super) struct Refills {
    /// When it was last switched out runnable to idle, if it has not run,
    /// migrated or woken since.
    pub(super) held_since: Option<Ts>,
    /// Its traced switch-ins after a hold-off, in time order.
    pub(super) instants: Vec<Ts>,
}

impl Refills {
    /// The refill grid `(anchor, period)` the traced refills show: the
    /// period is their total spacing over the whole number of periods
    /// each spans (the shortest spacing counting as one), the anchor the
    /// latest refill; `None` with fewer than [`MIN_REFILLS`] or when a
    /// spacing is not a whole number of periods.
    pub(super) fn grid(&self) -> Option<(Ts, u64)> {
        let t = &self.instants;
        if t.len() < MIN_REFILLS {
            return None;
        }
        let gaps = || t.windows(2).map(|w| w[1].0 - w[0].0);
        let shortest = gaps().min()?;
        if shortest < MIN_PERIOD_NS {
            return None;
        }
        let periods = |d: u64| (d + shortest / 2) / shortest;
        let span: u64 = gaps().sum();
        let n: u64 = gaps().map(periods).sum();
        let period = span / n;
        let off = |d: u64| d.abs_diff(periods(d) * period);
        if gaps().any(|d| periods(d) == 0 || off(d) * TOLERANCE > period) {
            return None;
        }
        Some((*t.last()?, period))
    }

    /// The first refill at or after `held` on the grid, if the grid is
    /// known and `held` follows its anchor.
    pub(super) fn next_after(&self, held: Ts) -> Option<Ts> {
        let (anchor, period) = self.grid()?;
        let since = held.0.checked_sub(anchor.0)?;
        Some(Ts(anchor.0 + since.div_ceil(period) * period))
    }
}

impl Builder {
    /// Thread `i` was switched out runnable to idle at `ts`: held off.
    pub(super) fn held_off(&mut self, i: usize, ts: Ts) {
        self.refills.entry(i).or_default().held_since = Some(ts);
    }

    /// Thread `i` ran (or moved): no longer held off. `refill`: the time
    /// of a recorded switch-in that ends a hold-off (an unthrottle, a
    /// point of its cgroup's refill grid).
    pub(super) fn ran(&mut self, i: usize, refill: Option<Ts>) {
        if let Some(r) = self.refills.get_mut(&i) {
            if r.held_since.take().is_some() {
                r.instants.extend(refill);
            }
        }
    }

    /// The refill estimate of a lost switch-in of held-off thread `i`.
    pub(super) fn refill_of(&self, i: usize) -> Option<Ts> {
        let r = self.refills.get(&i)?;
        r.next_after(r.held_since?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn refills(at_ms: &[u64]) -> Refills {
        Refills {
            held_since: None,
            instants: at_ms.iter().map(|&m| Ts(m * MS)).collect(),
        }
    }

    #[test]
    fn the_grid_of_whole_periods_with_latency() {
        // 100 ms periods, refills seen 1, 2 and 4 periods apart, each
        // switch-in a few tens of microseconds after the refill.
        let mut r = refills(&[1000, 1100, 1200, 1400]);
        r.instants[1].0 += 30_000;
        r.instants[2].0 += 10_000;
        let (anchor, period) = r.grid().expect("a grid");
        assert_eq!(anchor, Ts(1400 * MS));
        assert!(period.abs_diff(100 * MS) < 100_000, "{period}");
        // held off at 1437 ms: refilled at 1500 ms.
        let next = r.next_after(Ts(1437 * MS)).unwrap();
        assert!(next.0.abs_diff(1500 * MS) < 300_000, "{next:?}");
        // held off at the refill itself: that refill.
        assert_eq!(r.next_after(Ts(1400 * MS)), Some(Ts(1400 * MS)));
    }

    #[test]
    fn no_grid_from_too_few_or_irregular_refills() {
        assert!(refills(&[1000, 1100]).grid().is_none(), "two refills");
        // 100 ms, then 150 ms: not whole periods (a slack refill).
        assert!(refills(&[1000, 1100, 1250]).grid().is_none());
        // sub-millisecond spacings are no bandwidth period
        assert!(Refills {
            held_since: None,
            instants: vec![Ts(0), Ts(500_000), Ts(1_000_000)],
        }
        .grid()
        .is_none());
        // a hold-off before the anchor says nothing
        assert!(refills(&[1000, 1100, 1200])
            .next_after(Ts(900 * MS))
            .is_none());
    }
}
