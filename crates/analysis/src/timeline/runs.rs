//! Where the timeline keeps each CPU's runs: the low 32 bits of the starts
//! and the tids in two arrays, 8 bytes a run instead of [`CpuRun`]'s 32 (a
//! run ends where the next one starts; the starts' high bits change about
//! every 4.3 s and are kept once per change).

use super::*;

/// One CPU's runs, in time order, each ending where the next starts (the
/// last one kept with its end, open when the trace ends with it): read by
/// value ([`Runs::get`], [`Runs::iter`], [`Runs::partition_point`]).
///
/// The build appends runs and may give the last one another tid. Runs
/// that are not contiguous (only ever made by hand, `Runs::from`) are kept
/// whole.
#[derive(Clone, Default)]
pub struct Runs(Repr);

/// No runs ([`Timeline::runs`] of a CPU without any).
pub(super) static NONE: Runs = Runs(Repr::Packed(Packed::EMPTY));

#[derive(Clone)]
enum Repr {
    Packed(Packed),
    /// Runs with gaps between them (or more than 2^32 of them), as they
    /// are.
    Plain(Vec<CpuRun>),
}

impl Default for Repr {
    fn default() -> Repr {
        Repr::Packed(Packed::EMPTY)
    }
}

/// Contiguous runs: the starts' low 32 bits and the tids; `hi` holds
/// (first run, high 32 bits) for each run whose start's high bits differ
/// from the run before's (the first run's included); the last run ends
/// at `last_end`.
#[derive(Clone)]
struct Packed {
    lo: Vec<u32>,
    tid: Vec<Tid>,
    hi: Vec<(u32, u32)>,
    last_end: Option<Ts>,
}

impl Packed {
    const EMPTY: Packed = Packed {
        lo: Vec::new(),
        tid: Vec::new(),
        hi: Vec::new(),
        last_end: None,
    };

    /// The change of high bits that holds run `i` (searched).
    #[inline(always)]
    fn step(&self, i: usize) -> usize {
        self.hi
            .partition_point(|&(at, _)| at as usize <= i)
            .saturating_sub(1)
    }

    /// The change that holds run `i`, `from` (one at or before it) on.
    #[inline(always)]
    fn step_from(&self, from: usize, i: usize) -> usize {
        let mut k = from;
        while self.hi.get(k + 1).is_some_and(|&(at, _)| at as usize <= i) {
            k += 1;
        }
        k
    }

    /// Run `i` (`i < len`), whose change is `step`.
    #[inline(always)]
    fn run(&self, i: usize, step: usize) -> CpuRun {
        let at = |k: usize, j: usize| Ts((u64::from(self.hi[k].1) << 32) | u64::from(self.lo[j]));
        CpuRun {
            ts: at(step, i),
            end: match i + 1 < self.lo.len() {
                true => Some(at(self.step_from(step, i + 1), i + 1)),
                false => self.last_end,
            },
            tid: self.tid[i],
        }
    }
}

impl Runs {
    /// Room for `n` runs, in huge pages where the kernel gives them
    /// ([`schedscope_trace::mem::vec_with_huge_pages`]).
    pub(super) fn with_capacity(n: usize) -> Runs {
        Runs(Repr::Packed(Packed {
            lo: schedscope_trace::mem::vec_with_huge_pages(n),
            tid: schedscope_trace::mem::vec_with_huge_pages(n),
            ..Packed::EMPTY
        }))
    }

    /// Append `run`, which starts where the last one now ends (its end is
    /// `run.ts`). Returns whether the storage had to grow.
    pub(super) fn push(&mut self, run: CpuRun) -> bool {
        if matches!(&self.0, Repr::Packed(p) if u32::try_from(p.lo.len()).is_err()) {
            // (2^32 runs on one CPU: kept whole from here on)
            self.0 = Repr::Plain(self.to_vec());
        }
        match &mut self.0 {
            Repr::Packed(Packed {
                lo,
                tid,
                hi,
                last_end,
            }) => {
                let at = lo.len() as u32;
                let high = (run.ts.0 >> 32) as u32;
                if hi.last().is_none_or(|&(_, h)| h != high) {
                    hi.push((at, high));
                }
                let grew = lo.len() == lo.capacity();
                lo.push(run.ts.0 as u32);
                tid.push(run.tid);
                *last_end = run.end;
                grew
            }
            Repr::Plain(v) => {
                if let Some(last) = v.last_mut() {
                    last.end = Some(run.ts);
                }
                let grew = v.len() == v.capacity();
                v.push(run);
                grew
            }
        }
    }

    /// The last run is `tid`'s.
    pub(super) fn set_last_tid(&mut self, who: Tid) {
        match &mut self.0 {
            Repr::Packed(p) => {
                if let Some(t) = p.tid.last_mut() {
                    *t = who;
                }
            }
            Repr::Plain(v) => {
                if let Some(r) = v.last_mut() {
                    r.tid = who;
                }
            }
        }
    }

    /// How many runs.
    #[inline]
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Packed(p) => p.lo.len(),
            Repr::Plain(v) => v.len(),
        }
    }

    /// No runs.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Run `i`, if there is one.
    #[inline]
    pub fn get(&self, i: usize) -> Option<CpuRun> {
        match &self.0 {
            Repr::Packed(p) => (i < p.lo.len()).then(|| p.run(i, p.step(i))),
            Repr::Plain(v) => v.get(i).copied(),
        }
    }

    /// The first run.
    pub fn first(&self) -> Option<CpuRun> {
        self.get(0)
    }

    /// The last run.
    pub fn last(&self) -> Option<CpuRun> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    /// The runs in time order, by value.
    pub fn iter(&self) -> RunsIter<'_> {
        self.range(0..self.len())
    }

    /// Runs `r.start..r.end` (as `slice[r].iter()`; panics when the range
    /// is out of bounds, as slicing would).
    pub fn range(&self, r: std::ops::Range<usize>) -> RunsIter<'_> {
        assert!(
            r.start <= r.end && r.end <= self.len(),
            "run range {r:?} out of 0..{}",
            self.len()
        );
        let step = match &self.0 {
            Repr::Packed(p) => p.step(r.start),
            Repr::Plain(_) => 0,
        };
        RunsIter {
            runs: self,
            front: r.start,
            back: r.end,
            step,
        }
    }

    /// Each run with the next one (as `slice::windows(2)` would).
    pub fn pairs(&self) -> impl Iterator<Item = (CpuRun, CpuRun)> + '_ {
        self.iter().zip(self.range(self.len().min(1)..self.len()))
    }

    /// The index of the first run for which `pred` is false, all before
    /// it true (as `slice::partition_point`).
    pub fn partition_point(&self, pred: impl FnMut(&CpuRun) -> bool) -> usize {
        super::store::partition_index(self.len(), |i| self.get(i).expect("i < len"), pred)
    }

    /// The runs, copied out.
    pub fn to_vec(&self) -> Vec<CpuRun> {
        self.iter().collect()
    }
}

/// [`Runs::iter`].
#[derive(Clone)]
pub struct RunsIter<'a> {
    runs: &'a Runs,
    front: usize,
    back: usize,
    /// Packed: the change of high bits that holds run `front` (found once,
    /// then moved forward: no search per run).
    step: usize,
}

impl Iterator for RunsIter<'_> {
    type Item = CpuRun;
    #[inline]
    fn next(&mut self) -> Option<CpuRun> {
        if self.front >= self.back {
            return None;
        }
        let i = self.front;
        self.front += 1;
        match &self.runs.0 {
            Repr::Packed(p) => {
                self.step = p.step_from(self.step, i);
                Some(p.run(i, self.step))
            }
            Repr::Plain(v) => v.get(i).copied(),
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.back - self.front;
        (n, Some(n))
    }
}

impl DoubleEndedIterator for RunsIter<'_> {
    fn next_back(&mut self) -> Option<CpuRun> {
        if self.front >= self.back {
            return None;
        }
        self.back -= 1;
        self.runs.get(self.back)
    }
}

impl ExactSizeIterator for RunsIter<'_> {}

impl<'a> IntoIterator for &'a Runs {
    type Item = CpuRun;
    type IntoIter = RunsIter<'a>;
    fn into_iter(self) -> RunsIter<'a> {
        self.iter()
    }
}

impl From<Vec<CpuRun>> for Runs {
    /// Packed when each run ends where the next starts, as they are
    /// otherwise.
    fn from(v: Vec<CpuRun>) -> Runs {
        if !v.windows(2).all(|w| w[0].end == Some(w[1].ts)) || u32::try_from(v.len()).is_err() {
            return Runs(Repr::Plain(v));
        }
        let mut runs = Runs::default();
        for r in &v {
            runs.push(CpuRun { end: None, ..*r });
        }
        if let Repr::Packed(p) = &mut runs.0 {
            p.last_end = v.last().and_then(|r| r.end);
        }
        runs
    }
}

impl FromIterator<CpuRun> for Runs {
    fn from_iter<I: IntoIterator<Item = CpuRun>>(it: I) -> Runs {
        Runs::from(it.into_iter().collect::<Vec<_>>())
    }
}

impl std::fmt::Debug for Runs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for Runs {
    fn eq(&self, other: &Runs) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Serialize for Runs {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_trace::assert_reads_as_vec;
    use super::*;

    fn run(ts: u64, end: Option<u64>, tid: i32) -> CpuRun {
        CpuRun {
            ts: Ts(ts),
            end: end.map(Ts),
            tid: Tid(tid),
        }
    }

    /// Every reader of [`Runs`] against the same reads of the vector it
    /// was made from, packed or not; and the build's appends.
    #[test]
    fn runs_read_as_the_vector_they_hold() {
        let contiguous = vec![
            run(10, Some(20), 0),
            run(20, Some(35), 7),
            run(35, Some(50), -1),
            run(50, None, 0),
        ];
        let mut closed = contiguous.clone();
        closed[3].end = Some(Ts(70));
        let mut gap = contiguous.clone();
        gap[1].end = Some(Ts(30));
        // starts whose high 32 bits change, some twice in a row
        let g = 1u64 << 32;
        let far_starts = [
            10,
            g + 5,
            g + 9,
            3 * g + 1,
            3 * g + 2,
            7 * g,
            2 * g,
            2 * g + 3,
        ];
        let far: Vec<CpuRun> = far_starts
            .iter()
            .enumerate()
            .map(|(i, &ts)| run(ts, far_starts.get(i + 1).copied(), i as i32))
            .collect();
        for (v, packs) in [
            (far.clone(), true),
            (contiguous.clone(), true),
            (closed, true),
            (gap, false),
            (Vec::new(), true),
        ] {
            let runs = Runs::from(v.clone());
            assert_eq!(matches!(runs.0, Repr::Packed(_)), packs, "{v:?}");
            let probes = (0..80).chain(far_starts.iter().flat_map(|&t| [t - 1, t, t + 1]));
            let ended = |r: &CpuRun, t: u64| r.end.is_some_and(|e| e.0 <= t);
            assert_reads_as_vec!(runs, v, probes, ended);
        }
        // The build's way: push open runs, each closing the one before.
        let mut built = Runs::with_capacity(contiguous.len());
        for r in &contiguous {
            assert!(!built.push(CpuRun { end: None, ..*r }), "room for all");
        }
        built.set_last_tid(Tid(9));
        let mut want = contiguous.clone();
        want[3].tid = Tid(9);
        assert_eq!(built.to_vec(), want);
        assert!(built.push(run(90, None, 1)), "full: grows");
        let mut plain = Runs::from(vec![run(1, Some(2), 1), run(5, None, 2)]);
        plain.push(run(8, None, 3));
        plain.set_last_tid(Tid(4));
        assert_eq!(
            plain.to_vec(),
            [run(1, Some(2), 1), run(5, Some(8), 2), run(8, None, 4)]
        );
    }

    #[test]
    #[should_panic(expected = "out of 0..1")]
    fn runs_range_out_of_bounds_panics_as_slicing() {
        let _ = Runs::from(vec![run(1, None, 0)]).range(0..2);
    }
}
