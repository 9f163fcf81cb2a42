//! The statistics every analysis shares: one percentile routine (nearest
//! rank), one summary of a set of durations ([`Summary`], behind the two
//! JSON shapes: [`DurStats`], idle's, and [`HistStats`], tlb's, with its
//! log2 histogram), one log2 histogram of durations from one microsecond
//! ([`log2_bucket`], idle's [`GapBucket`]s), the population standard
//! deviation and one-second buckets. It knows no analysis.

use serde::Serialize;

/// Nearest-rank percentile of an ascending slice: the value at rank
/// `ceil(p / 100 * n)` (1-based; exact, in integers, for a whole `p`),
/// `None` when empty.
pub fn percentile_nearest_rank(sorted: &[u64], p: f64) -> Option<u64> {
    let i = nearest_rank_index(sorted.len(), p)?;
    Some(sorted[i])
}

/// The 0-based index of the nearest-rank `p`th percentile among `n`
/// ascending values (see [`percentile_nearest_rank`]); `None` when `n` is 0.
fn nearest_rank_index(n: usize, p: f64) -> Option<usize> {
    if n == 0 {
        return None;
    }
    let rank = if p.fract() == 0.0 && (0.0..=100.0).contains(&p) {
        (n * p as usize).div_ceil(100)
    } else {
        ((p / 100.0) * n as f64).ceil() as usize
    };
    Some(rank.clamp(1, n) - 1)
}

/// The nearest-rank percentiles `lo` and `hi` (as [`percentile_nearest_rank`]
/// gives them on the sorted values) of unsorted values, by selection
/// instead of a sort: linear time. `v` is reordered (partitioned around
/// the two ranks, not sorted); `None` when empty.
pub fn two_percentiles_unsorted(v: &mut [u64], lo: f64, hi: f64) -> Option<(u64, u64)> {
    let (a, b) = (
        nearest_rank_index(v.len(), lo)?,
        nearest_rank_index(v.len(), hi)?,
    );
    let (i, j) = (a.min(b), a.max(b));
    let (left, &mut at_j, _) = v.select_nth_unstable(j);
    // (everything left of j is <= v[j], so rank i is among them)
    let at_i = if i == j {
        at_j
    } else {
        *left.select_nth_unstable(i).1
    };
    Some(if a <= b { (at_i, at_j) } else { (at_j, at_i) })
}

/// Count, sum, median, 99th percentile and maximum of a set of durations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Summary {
    /// How many.
    pub count: u64,
    /// Their sum (ns).
    pub sum: u128,
    /// Median, nearest rank.
    pub p50: u64,
    /// 99th percentile, nearest rank.
    pub p99: u64,
    /// Largest.
    pub max: u64,
}

impl Summary {
    /// The summary of `v` (sorted in place); `None` when empty.
    pub fn of(v: &mut [u64]) -> Option<Summary> {
        v.sort_unstable();
        Some(Summary {
            count: v.len() as u64,
            sum: v.iter().map(|&x| x as u128).sum(),
            p50: percentile_nearest_rank(v, 50.0)?,
            p99: percentile_nearest_rank(v, 99.0)?,
            max: *v.last()?,
        })
    }

    /// The mean, rounded down to a whole ns.
    pub fn mean_floor(&self) -> u64 {
        (self.sum / self.count.max(1) as u128) as u64
    }

    /// The mean as a float, summed in floats as `idle` always has.
    pub fn mean_f64(sorted: &[u64]) -> f64 {
        sorted.iter().map(|&x| x as f64).sum::<f64>() / sorted.len() as f64
    }
}

/// Mean and population standard deviation (divide by n), `None` when empty.
pub fn population_stddev(xs: &[f64]) -> Option<(f64, f64)> {
    if xs.is_empty() {
        return None;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    Some((mean, var.sqrt()))
}

/// Distribution of a set of durations.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DurStats {
    /// How many.
    pub count: u64,
    /// Mean (null when empty).
    pub avg: Option<f64>,
    /// Median, nearest rank.
    pub p50: Option<u64>,
    /// 99th percentile, nearest rank.
    pub p99: Option<u64>,
    /// Largest.
    pub max: Option<u64>,
}

/// A log2 bucket of gap lengths.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GapBucket {
    /// Lower bound (inclusive), ns.
    pub lo_ns: u64,
    /// Upper bound (exclusive), ns.
    pub hi_ns: u64,
    /// Gaps in the bucket.
    pub count: u64,
    /// Their total length.
    pub total_ns: u64,
}

/// Summary of a set of durations (ns) with a log2 histogram (tlb's JSON
/// shape of delivery and handler times).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HistStats {
    /// Number of samples.
    pub count: u64,
    /// Mean.
    pub mean_ns: u64,
    /// Median.
    pub p50_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// Maximum.
    pub max_ns: u64,
    /// Log2 histogram: `[lo_ns, hi_ns)`, last bucket open (`hi_ns` null).
    pub hist: Vec<HistBucket>,
}

/// One histogram bucket.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HistBucket {
    /// Inclusive lower bound (ns).
    pub lo_ns: u64,
    /// Exclusive upper bound (ns); `None` = unbounded.
    pub hi_ns: Option<u64>,
    /// Samples in the bucket.
    pub count: u64,
}

/// The last [`HistStats::hist`] bucket, open above: `[2^20 us, inf)`.
const HIST_OPEN: usize = 21;

impl HistStats {
    /// Statistics of `v` (sorted in place); `None` when empty.
    pub fn of(v: &mut [u64]) -> Option<HistStats> {
        let s = Summary::of(v)?;
        // Log2 buckets (stats::log2_bucket) up to the maximum's, the last
        // one open; `v` is sorted: count by binary search.
        let last = log2_bucket(s.max).min(HIST_OPEN);
        let mut hist: Vec<HistBucket> = (0..=last)
            .map(|i| {
                let (lo, hi) = log2_bucket_bounds(i);
                let from = v.partition_point(|&x| x < lo);
                let to = if i == HIST_OPEN {
                    v.len()
                } else {
                    v.partition_point(|&x| x < hi)
                };
                HistBucket {
                    lo_ns: lo,
                    hi_ns: (i != HIST_OPEN).then_some(hi),
                    count: (to - from) as u64,
                }
            })
            .collect();
        let empty_head = hist.iter().take_while(|b| b.count == 0).count();
        hist.drain(..empty_head.min(hist.len() - 1));
        Some(HistStats {
            count: s.count,
            mean_ns: s.mean_floor(),
            p50_ns: s.p50,
            p99_ns: s.p99,
            max_ns: s.max,
            hist,
        })
    }
}

/// Distribution of `v` (sorted in place) in `idle`'s JSON shape.
pub(crate) fn dur_stats(v: &mut [u64]) -> DurStats {
    let s = Summary::of(v);
    DurStats {
        count: v.len() as u64,
        avg: s.map(|_| Summary::mean_f64(v)),
        p50: s.map(|s| s.p50),
        p99: s.map(|s| s.p99),
        max: s.map(|s| s.max),
    }
}

/// Per-bucket accumulation of time over full one-second buckets from `start`.
pub(crate) struct SecondBuckets {
    start: u64,
    ns: Vec<u64>,
}

pub(crate) const SEC: u64 = 1_000_000_000;

impl SecondBuckets {
    /// `n` full buckets from `start`.
    pub(crate) fn new(start: u64, n: usize) -> Self {
        SecondBuckets {
            start,
            ns: vec![0; n],
        }
    }

    /// Add the interval [a, b), clipped to the buckets.
    pub(crate) fn add(&mut self, a: u64, b: u64) {
        let end = self.start + self.ns.len() as u64 * SEC;
        let (a, b) = (a.max(self.start), b.min(end));
        if a >= b {
            return;
        }
        let mut t = a;
        while t < b {
            let k = ((t - self.start) / SEC) as usize;
            let bucket_end = self.start + (k as u64 + 1) * SEC;
            let seg_end = bucket_end.min(b);
            self.ns[k] += seg_end - t;
            t = seg_end;
        }
    }

    pub(crate) fn values(&self) -> &[u64] {
        &self.ns
    }
}

/// Index of the log2 bucket of a duration of `dur` ns: 0 for < 1 µs, else
/// `1 + floor(log2(dur / 1 µs))`; bucket `i` is [`log2_bucket_bounds`]`(i)`.
pub fn log2_bucket(dur: u64) -> usize {
    let us = dur / 1000;
    if us == 0 {
        0
    } else {
        1 + (63 - us.leading_zeros()) as usize
    }
}

/// Bounds `[lo, hi)` (ns) of [`log2_bucket`] `i`: `[0, 1 µs)`, `[1, 2 µs)`,
/// `[2, 4 µs)`, ...
pub fn log2_bucket_bounds(i: usize) -> (u64, u64) {
    if i == 0 {
        (0, 1000)
    } else {
        (1000u64 << (i - 1), 1000u64 << i)
    }
}

/// `idle`'s gap histogram rows from per-[`log2_bucket`] (count, total),
/// trimmed to the last used bucket.
pub(crate) fn histogram(counts: &[(u64, u64)]) -> Vec<GapBucket> {
    let used = counts.iter().rposition(|c| c.0 > 0).map_or(0, |i| i + 1);
    counts[..used]
        .iter()
        .enumerate()
        .map(|(i, &(count, total_ns))| {
            let (lo_ns, hi_ns) = log2_bucket_bounds(i);
            GapBucket {
                lo_ns,
                hi_ns,
                count,
                total_ns,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_percentiles_by_selection_are_the_sorted_ones() {
        // every length up to 300 and a few large ones, with and without
        // repeated values, against the sort (pseudo-random, fixed seed)
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        assert_eq!(two_percentiles_unsorted(&mut [], 50.0, 99.0), None);
        for n in (1..300).chain([1000, 4097]) {
            for modulus in [3, 1 << 20, u64::MAX] {
                let v: Vec<u64> = (0..n).map(|_| next() % modulus).collect();
                let mut sorted = v.clone();
                sorted.sort_unstable();
                for (lo, hi) in [(50.0, 99.0), (99.0, 50.0), (0.0, 100.0), (25.0, 25.0)] {
                    let mut w = v.clone();
                    let want = (
                        percentile_nearest_rank(&sorted, lo).unwrap(),
                        percentile_nearest_rank(&sorted, hi).unwrap(),
                    );
                    assert_eq!(
                        two_percentiles_unsorted(&mut w, lo, hi),
                        Some(want),
                        "n {n}"
                    );
                    w.sort_unstable();
                    assert_eq!(w, sorted, "a permutation");
                }
            }
        }
    }

    #[test]
    fn nearest_rank_matches_definition() {
        let v: Vec<u64> = (1..=10).collect();
        assert_eq!(percentile_nearest_rank(&v, 50.0), Some(5));
        assert_eq!(percentile_nearest_rank(&v, 99.0), Some(10));
        assert_eq!(percentile_nearest_rank(&v, 0.0), Some(1));
        assert_eq!(percentile_nearest_rank(&[], 50.0), None);
        assert_eq!(percentile_nearest_rank(&[7], 99.0), Some(7));
        // Whole percentages are exact: rank ceil(99 * 100 / 100) = 99.
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile_nearest_rank(&v, 99.0), Some(99));
        assert_eq!(percentile_nearest_rank(&v, 99.5), Some(100));
    }

    #[test]
    fn summary_of_durations() {
        let mut v = vec![5, 1, 3, 2, 4];
        let s = Summary::of(&mut v).unwrap();
        assert_eq!(v, [1, 2, 3, 4, 5], "sorted in place");
        assert_eq!((s.count, s.sum, s.p50, s.p99, s.max), (5, 15, 3, 5, 5));
        assert_eq!(s.mean_floor(), 3);
        assert_eq!(Summary::of(&mut []), None);
    }

    #[test]
    fn population_stddev_of_known_set() {
        // 2,4,4,4,5,5,7,9: mean 5, population std-dev 2.
        let (m, s) = population_stddev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(m, 5.0);
        assert_eq!(s, 2.0);
    }

    #[test]
    fn second_buckets_split_and_clip() {
        let mut b = SecondBuckets::new(100, 2);
        b.add(50, 100 + SEC + 10); // clipped at start, spans into bucket 1
        b.add(100 + 2 * SEC - 5, 100 + 5 * SEC); // clipped at end
        assert_eq!(b.values(), &[SEC, 10 + 5]);
    }

    #[test]
    fn log2_buckets_start_at_one_microsecond() {
        assert_eq!(log2_bucket(999), 0);
        assert_eq!(log2_bucket(1000), 1);
        assert_eq!(log2_bucket(1999), 1);
        assert_eq!(log2_bucket(2000), 2);
        assert_eq!(log2_bucket(1_000_000), 10); // 1 ms in [512, 1024) µs
        assert_eq!(log2_bucket_bounds(10), (512_000, 1_024_000));
    }
}
