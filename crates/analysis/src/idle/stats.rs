//! Small statistics helpers: nearest-rank percentiles, population std-dev,
//! one-second buckets and log2 gap buckets.

use super::{DurStats, GapBucket};

/// Nearest-rank percentile of an ascending slice: the value at rank
/// `ceil(p / 100 * n)` (1-based), `None` when empty.
pub fn percentile_nearest_rank(sorted: &[u64], p: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len();
    let rank = ((p / 100.0) * n as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, n) - 1])
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

/// Distribution of `v` (sorted in place).
pub(crate) fn dur_stats(v: &mut [u64]) -> DurStats {
    v.sort_unstable();
    DurStats {
        count: v.len() as u64,
        avg: (!v.is_empty()).then(|| v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64),
        p50: percentile_nearest_rank(v, 50.0),
        p99: percentile_nearest_rank(v, 99.0),
        max: v.last().copied(),
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

/// Index of the log2 bucket of a gap of `dur` ns: 0 for < 1 µs, else
/// `1 + floor(log2(dur / 1 µs))`.
pub(crate) fn gap_bucket(dur: u64) -> usize {
    let us = dur / 1000;
    if us == 0 {
        0
    } else {
        1 + (63 - us.leading_zeros()) as usize
    }
}

/// Bounds of gap bucket `i`.
pub(crate) fn gap_bucket_bounds(i: usize) -> (u64, u64) {
    if i == 0 {
        (0, 1000)
    } else {
        (1000u64 << (i - 1), 1000u64 << i)
    }
}

/// Histogram rows from per-bucket (count, total), trimmed to the last used bucket.
pub(crate) fn histogram(counts: &[(u64, u64)]) -> Vec<GapBucket> {
    let used = counts.iter().rposition(|c| c.0 > 0).map_or(0, |i| i + 1);
    counts[..used]
        .iter()
        .enumerate()
        .map(|(i, &(count, total_ns))| {
            let (lo_ns, hi_ns) = gap_bucket_bounds(i);
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
    fn nearest_rank_matches_definition() {
        let v: Vec<u64> = (1..=10).collect();
        assert_eq!(percentile_nearest_rank(&v, 50.0), Some(5));
        assert_eq!(percentile_nearest_rank(&v, 99.0), Some(10));
        assert_eq!(percentile_nearest_rank(&v, 0.0), Some(1));
        assert_eq!(percentile_nearest_rank(&[], 50.0), None);
        assert_eq!(percentile_nearest_rank(&[7], 99.0), Some(7));
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
    fn gap_buckets_are_log2_from_one_microsecond() {
        assert_eq!(gap_bucket(999), 0);
        assert_eq!(gap_bucket(1000), 1);
        assert_eq!(gap_bucket(1999), 1);
        assert_eq!(gap_bucket(2000), 2);
        assert_eq!(gap_bucket(1_000_000), 10); // 1 ms in [512, 1024) µs
        assert_eq!(gap_bucket_bounds(10), (512_000, 1_024_000));
    }
}
