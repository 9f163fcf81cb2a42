//! Overlay indexes: per-CPU point events with a value (wakeup-to-run
//! latencies at their switch-in, preemptions) and interval sets (wasted
//! idle), each answering a cell query in O(log n).

/// Sorted instants with a value; range max from a segment tree.
#[derive(Debug, Default)]
pub struct Marks {
    times: Vec<u64>,
    /// Bottom-up segment tree of maxima: leaves at `n..2n`.
    tree: Vec<u64>,
}

impl Marks {
    /// From (time, value) pairs in any order.
    pub fn new(mut v: Vec<(u64, u64)>) -> Marks {
        v.sort_unstable();
        let n = v.len();
        let mut tree = vec![0; 2 * n];
        for (i, &(_, x)) in v.iter().enumerate() {
            tree[n + i] = x;
        }
        for i in (1..n).rev() {
            tree[i] = tree[2 * i].max(tree[2 * i + 1]);
        }
        Marks {
            times: v.into_iter().map(|x| x.0).collect(),
            tree,
        }
    }

    fn range(&self, a: u64, b: u64) -> (usize, usize) {
        (
            self.times.partition_point(|&t| t < a),
            self.times.partition_point(|&t| t < b),
        )
    }

    /// How many marks fall in `[a, b)`.
    pub fn count(&self, a: u64, b: u64) -> usize {
        let (l, r) = self.range(a, b);
        r.saturating_sub(l)
    }

    /// The largest value in `[a, b)` (None when there is no mark).
    pub fn max(&self, a: u64, b: u64) -> Option<u64> {
        let (l, r) = self.range(a, b);
        if l >= r {
            return None;
        }
        let n = self.times.len();
        let (mut l, mut r) = (l + n, r + n);
        let mut m = 0;
        while l < r {
            if l & 1 == 1 {
                m = m.max(self.tree[l]);
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                m = m.max(self.tree[r]);
            }
            l /= 2;
            r /= 2;
        }
        Some(m)
    }
}

/// Sorted disjoint intervals with prefix sums of their lengths.
#[derive(Debug, Default)]
pub struct Spans {
    starts: Vec<u64>,
    ends: Vec<u64>,
    prefix: Vec<u64>,
}

impl Spans {
    /// From intervals in any order (overlaps are merged).
    pub fn new(mut v: Vec<(u64, u64)>) -> Spans {
        v.sort_unstable();
        let mut s = Spans {
            prefix: vec![0],
            ..Spans::default()
        };
        for (a, b) in v {
            if b <= a {
                continue;
            }
            match s.ends.last_mut() {
                Some(e) if a <= *e => *e = (*e).max(b),
                _ => {
                    s.starts.push(a);
                    s.ends.push(b);
                }
            }
        }
        let mut acc = 0;
        for (a, b) in s.starts.iter().zip(&s.ends) {
            acc += b - a;
            s.prefix.push(acc);
        }
        s
    }

    /// The intervals.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.starts.iter().copied().zip(self.ends.iter().copied())
    }

    /// Covered time before `t`.
    fn before(&self, t: u64) -> u64 {
        let i = self.starts.partition_point(|&s| s < t);
        if i == 0 {
            return 0;
        }
        // spans 0..i-1 are whole; span i-1 may extend past t
        self.prefix[i] - self.ends[i - 1].saturating_sub(t)
    }

    /// Covered time in `[a, b)`.
    pub fn covered(&self, a: u64, b: u64) -> u64 {
        if b <= a {
            return 0;
        }
        self.before(b) - self.before(a)
    }

    /// Intersection with another sorted set of intervals `(start, end)`.
    pub fn intersect(&self, other: impl Iterator<Item = (u64, u64)>) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut i = 0;
        for (a, b) in other {
            while i < self.ends.len() && self.ends[i] <= a {
                i += 1;
            }
            let mut j = i;
            while j < self.starts.len() && self.starts[j] < b {
                let (s, e) = (self.starts[j].max(a), self.ends[j].min(b));
                if e > s {
                    out.push((s, e));
                }
                j += 1;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_count_and_max_match_a_scan() {
        let v: Vec<(u64, u64)> = (0..1000u64)
            .map(|i| ((i * 7919) % 10_000, (i * 31) % 977))
            .collect();
        let m = Marks::new(v.clone());
        for (a, b) in [
            (0, 10_000),
            (100, 200),
            (5000, 5001),
            (9000, 20_000),
            (3, 3),
        ] {
            let inside: Vec<u64> = v
                .iter()
                .filter(|x| x.0 >= a && x.0 < b)
                .map(|x| x.1)
                .collect();
            assert_eq!(m.count(a, b), inside.len());
            assert_eq!(m.max(a, b), inside.iter().copied().max());
        }
    }

    #[test]
    fn spans_merge_cover_and_intersect() {
        let s = Spans::new(vec![(10, 20), (15, 30), (40, 50)]);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(10, 30), (40, 50)]);
        assert_eq!(s.covered(0, 100), 30);
        assert_eq!(s.covered(25, 45), 5 + 5);
        assert_eq!(s.covered(12, 14), 2);
        assert_eq!(
            s.intersect([(0, 12), (28, 42), (45, 60)].into_iter()),
            vec![(10, 12), (28, 30), (40, 42), (45, 50)]
        );
    }
}
