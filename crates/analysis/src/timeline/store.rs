//! Where the timeline keeps its intervals (one store for every thread,
//! each thread a region of it) and how it finds a thread by tid.

use super::*;
/// Words (8 bytes) that hold `n` [`Packed`] intervals.
pub(super) fn interval_words(n: usize) -> usize {
    (n * std::mem::size_of::<Packed>()).div_ceil(8)
}

/// One stored interval, 12 bytes instead of [`StateInterval`]'s 48: its
/// end is the next interval's start (a thread's intervals are contiguous),
/// its start is kept as an offset from the store's base (the trace's
/// start) in 44 bits, and the offset's high bits, the CPU, the state and
/// the flags share a word. What does not fit (a start before the base or
/// 2^44 ns, about 4.9 hours, after it; a CPU number of 2^14 or more)
/// keeps that thread's intervals unpacked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub(super) struct Packed {
    /// The low 32 bits of the start's offset from the base.
    lo: u32,
    waker: i32,
    /// CPU (low 14 bits), the offset's high 12 bits, state (3 bits),
    /// then the flags below.
    meta: u32,
}

const CPU_BITS: u32 = 14;
const CPU_MASK: u32 = (1 << CPU_BITS) - 1;
const HI_SHIFT: u32 = CPU_BITS;
const HI_BITS: u32 = 12;
const HI_MASK: u32 = (1 << HI_BITS) - 1;
/// Offsets from the base below this pack (2^44 ns).
const OFFSET_LIMIT: u64 = 1 << (32 + HI_BITS);
const STATE_SHIFT: u32 = HI_SHIFT + HI_BITS;
const PREEMPTED: u32 = 1 << 29;
const HAS_CPU: u32 = 1 << 30;
const HAS_WAKER: u32 = 1 << 31;

impl Packed {
    /// `iv` packed against `base`, its end dropped; `None` when its start
    /// or its CPU does not fit.
    #[inline(always)]
    pub(super) fn pack(iv: &StateInterval, base: u64) -> Option<Packed> {
        let offset = iv.ts.0.checked_sub(base).filter(|&o| o < OFFSET_LIMIT)?;
        let state = match iv.state {
            ThreadState::Unknown => 0,
            ThreadState::Running => 1,
            ThreadState::Runnable => 2,
            ThreadState::Sleeping => 3,
            ThreadState::Blocked => 4,
            ThreadState::Other => 5,
            ThreadState::Dead => 6,
        };
        let mut meta = (state << STATE_SHIFT) | (((offset >> 32) as u32) << HI_SHIFT);
        if let Some(c) = iv.cpu {
            if c.0 > CPU_MASK {
                return None;
            }
            meta |= c.0 | HAS_CPU;
        }
        if iv.preempted {
            meta |= PREEMPTED;
        }
        let waker = match iv.waker {
            Some(w) => {
                meta |= HAS_WAKER;
                w.0
            }
            None => 0,
        };
        Some(Packed {
            lo: offset as u32,
            waker,
            meta,
        })
    }

    /// The interval (packed against `base`), ending at `end`.
    #[inline(always)]
    pub(super) fn unpack(self, end: Option<Ts>, base: u64) -> StateInterval {
        let m = self.meta;
        StateInterval {
            ts: self.ts(base),
            end,
            state: match (m >> STATE_SHIFT) & 7 {
                0 => ThreadState::Unknown,
                1 => ThreadState::Running,
                2 => ThreadState::Runnable,
                3 => ThreadState::Sleeping,
                4 => ThreadState::Blocked,
                5 => ThreadState::Other,
                _ => ThreadState::Dead,
            },
            cpu: (m & HAS_CPU != 0).then_some(Cpu(m & CPU_MASK)),
            preempted: m & PREEMPTED != 0,
            waker: (m & HAS_WAKER != 0).then_some(Tid(self.waker)),
        }
    }

    /// Start (packed against `base`).
    #[inline(always)]
    pub(super) fn ts(self, base: u64) -> Ts {
        let hi = u64::from((self.meta >> HI_SHIFT) & HI_MASK);
        Ts(base + ((hi << 32) | u64::from(self.lo)))
    }
}

/// A thread's intervals, sorted, each starting where the previous one
/// ended: a region of the store that [`Timeline::build`] fills for all
/// threads at once, read by value ([`Intervals::get`], [`Intervals::iter`]).
///
/// The build writes every thread's intervals into one allocation, each
/// thread in a region sized by the census, instead of one vector per
/// thread: a few huge pages to fault in instead of thousands of small
/// pages (see [`schedscope_trace::mem`]). Each is stored in 12 bytes
/// (no end, which the next interval's start gives; the start as a 44-bit
/// offset from the trace's start). Cloning
/// shares the store.
#[derive(Clone)]
pub struct Intervals(Repr);

#[derive(Clone)]
enum Repr {
    /// Slots `start..end` of the store; the last interval ends at
    /// `last_end`.
    Packed {
        store: Arc<Store>,
        start: usize,
        end: usize,
        last_end: Option<Ts>,
    },
    /// Intervals that do not pack (a start or a CPU number out of
    /// [`Packed`]'s range, or ends that are not the next starts), as they
    /// are.
    Plain(Arc<[StateInterval]>),
}

/// Slots `r` of `words` (an interval store), as the intervals written
/// there.
///
/// # Safety
/// Every slot in `r` is initialised, and none is written while the result
/// lives.
#[inline(always)]
pub(super) unsafe fn written(words: &[Word], r: std::ops::Range<usize>) -> &[Packed] {
    let slots = &words_as_slots_ref::<Packed>(words)[r];
    // SAFETY: the caller's promise; MaybeUninit<T> has T's layout.
    unsafe { &*(slots as *const [MaybeUninit<Packed>] as *const [Packed]) }
}

/// Interval slots, in words (memory reused from the decoder, see
/// [`schedscope_trace::mem::Spare`]); only the ranges that an
/// [`Intervals`] names are initialised. Each slot's start is an offset
/// from `base`.
#[derive(Default)]
pub(super) struct Store {
    pub(super) words: Vec<Word>,
    pub(super) base: u64,
}

impl Default for Intervals {
    fn default() -> Intervals {
        Intervals(Repr::Plain(Arc::new([])))
    }
}

/// A borrowed [`Intervals`], to read by index.
#[derive(Clone, Copy)]
enum View<'a> {
    /// The slots, the last one's end, the store's base.
    Packed(&'a [Packed], Option<Ts>, u64),
    Plain(&'a [StateInterval]),
}

impl View<'_> {
    #[inline(always)]
    fn len(&self) -> usize {
        match self {
            View::Packed(s, _, _) => s.len(),
            View::Plain(s) => s.len(),
        }
    }

    /// Interval `i` (`i < len`).
    #[inline(always)]
    fn at(&self, i: usize) -> StateInterval {
        match *self {
            View::Packed(s, last_end, base) => {
                s[i].unpack(s.get(i + 1).map_or(last_end, |n| Some(n.ts(base))), base)
            }
            View::Plain(s) => s[i],
        }
    }
}

impl Intervals {
    /// Intervals already packed into slots `start..end` of `store` (the
    /// builder's), the last ending at `last_end`.
    pub(super) fn packed(
        store: Arc<Store>,
        start: usize,
        end: usize,
        last_end: Option<Ts>,
    ) -> Intervals {
        Intervals(Repr::Packed {
            store,
            start,
            end,
            last_end,
        })
    }

    #[inline(always)]
    fn view(&self) -> View<'_> {
        match &self.0 {
            Repr::Packed {
                store,
                start,
                end,
                last_end,
            } => {
                // SAFETY: a Packed repr is only made over initialised slots
                // (by `From<Vec<_>>`, or by the builder over the slots it
                // wrote), and the store is never written once shared.
                View::Packed(
                    unsafe { written(&store.words, *start..*end) },
                    *last_end,
                    store.base,
                )
            }
            Repr::Plain(v) => View::Plain(v),
        }
    }

    /// How many intervals.
    #[inline]
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Packed { start, end, .. } => end - start,
            Repr::Plain(v) => v.len(),
        }
    }

    /// No intervals.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Interval `i`, if there is one.
    #[inline]
    pub fn get(&self, i: usize) -> Option<StateInterval> {
        let v = self.view();
        (i < v.len()).then(|| v.at(i))
    }

    /// The first interval.
    pub fn first(&self) -> Option<StateInterval> {
        self.get(0)
    }

    /// The last interval.
    pub fn last(&self) -> Option<StateInterval> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    /// The intervals in time order, by value.
    pub fn iter(&self) -> IntervalsIter<'_> {
        let view = self.view();
        IntervalsIter {
            back: view.len(),
            view,
            front: 0,
        }
    }

    /// Intervals `r.start..r.end` (as `slice[r].iter()`; panics when
    /// the range is out of bounds, as slicing would).
    pub fn range(&self, r: std::ops::Range<usize>) -> IntervalsIter<'_> {
        let view = self.view();
        assert!(
            r.start <= r.end && r.end <= view.len(),
            "interval range {r:?} out of 0..{}",
            view.len()
        );
        IntervalsIter {
            view,
            front: r.start,
            back: r.end,
        }
    }

    /// Each interval with the next one (as `slice::windows(2)` would).
    pub fn pairs(&self) -> impl Iterator<Item = (StateInterval, StateInterval)> + '_ {
        let mut it = self.iter();
        let mut prev = it.next();
        it.map(move |next| {
            let p = prev.replace(next).expect("set before each step");
            (p, next)
        })
    }

    /// The index of the first interval for which `pred` is false, all
    /// before it true (as `slice::partition_point`).
    pub fn partition_point(&self, pred: impl FnMut(&StateInterval) -> bool) -> usize {
        let v = self.view();
        partition_index(v.len(), |i| v.at(i), pred)
    }

    /// The intervals, copied out.
    pub fn to_vec(&self) -> Vec<StateInterval> {
        self.iter().collect()
    }
}

/// The first index in `0..len` whose element (`at(i)`) fails `pred`, all
/// before it passing: `slice::partition_point` over elements read by
/// value ([`Intervals`], [`Runs`]).
pub(super) fn partition_index<T>(
    len: usize,
    at: impl Fn(usize) -> T,
    mut pred: impl FnMut(&T) -> bool,
) -> usize {
    let (mut lo, mut hi) = (0, len);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(&at(mid)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// [`Intervals::iter`].
#[derive(Clone)]
pub struct IntervalsIter<'a> {
    view: View<'a>,
    front: usize,
    back: usize,
}

impl Iterator for IntervalsIter<'_> {
    type Item = StateInterval;
    #[inline]
    fn next(&mut self) -> Option<StateInterval> {
        (self.front < self.back).then(|| {
            self.front += 1;
            self.view.at(self.front - 1)
        })
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.back - self.front;
        (n, Some(n))
    }
}

impl DoubleEndedIterator for IntervalsIter<'_> {
    fn next_back(&mut self) -> Option<StateInterval> {
        (self.front < self.back).then(|| {
            self.back -= 1;
            self.view.at(self.back)
        })
    }
}

impl ExactSizeIterator for IntervalsIter<'_> {}

impl From<Vec<StateInterval>> for Intervals {
    /// Packed when the intervals are contiguous and every CPU fits, as
    /// they are otherwise.
    fn from(v: Vec<StateInterval>) -> Intervals {
        let contiguous = v.windows(2).all(|w| w[0].end == Some(w[1].ts));
        // (sorted: the first starts first)
        let base = v.first().map_or(0, |iv| iv.ts.0);
        let packed: Option<Vec<Packed>> = if contiguous {
            v.iter().map(|iv| Packed::pack(iv, base)).collect()
        } else {
            None
        };
        let Some(packed) = packed else {
            return Intervals(Repr::Plain(v.into()));
        };
        let end = packed.len();
        let mut words = vec![MaybeUninit::uninit(); interval_words(end)];
        for (slot, p) in words_as_slots(&mut words).iter_mut().zip(packed) {
            slot.write(p);
        }
        Intervals::packed(
            Arc::new(Store { words, base }),
            0,
            end,
            v.last().and_then(|iv| iv.end),
        )
    }
}

impl<'a> IntoIterator for &'a Intervals {
    type Item = StateInterval;
    type IntoIter = IntervalsIter<'a>;
    fn into_iter(self) -> IntervalsIter<'a> {
        self.iter()
    }
}

impl std::fmt::Debug for Intervals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for Intervals {
    fn eq(&self, other: &Intervals) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Serialize for Intervals {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

/// tid -> index map with a cheap multiplicative hash (tids are small integers
/// that need no DoS-resistant hashing).
pub(super) type TidMap = schedscope_trace::hash::FxMap<Tid, usize>;

/// Tids below this go to the dense table of [`TidIndex`]: Linux's
/// PID_MAX_LIMIT (2^22), so every kernel tid does.
const DENSE_TIDS: usize = 1 << 22;

/// tid -> thread index. Kernel tids are small non-negative integers, so a
/// table indexed by tid (grown on demand; 0 = absent, else index + 1) finds
/// a thread with one load; other tids (negative ones from damaged input,
/// or indexes beyond `u32`) go to a hash map.
#[derive(Clone, Debug, Default)]
pub(crate) struct TidIndex {
    dense: Vec<u32>,
    sparse: TidMap,
}

impl TidIndex {
    /// The index of `tid`, if it has one.
    #[inline]
    pub(crate) fn get(&self, tid: Tid) -> Option<usize> {
        match self.dense.get(tid.0 as u32 as usize) {
            Some(&v) if v != 0 => Some(v as usize - 1),
            _ if self.sparse.is_empty() => None,
            _ => self.sparse.get(&tid).copied(),
        }
    }

    /// Give `tid` the index `i` (`tid` has none yet).
    pub(crate) fn insert(&mut self, tid: Tid, i: usize) {
        let k = tid.0 as u32 as usize;
        let Ok(v) = u32::try_from(i + 1) else {
            self.sparse.insert(tid, i);
            return;
        };
        if k >= DENSE_TIDS {
            self.sparse.insert(tid, i);
            return;
        }
        if k >= self.dense.len() {
            // A fresh zeroed table (pages untouched until used) rather than
            // `resize`, which would write every new slot.
            let n = (k + 1).next_power_of_two().clamp(1024, DENSE_TIDS);
            let mut grown = vec![0u32; n];
            grown[..self.dense.len()].copy_from_slice(&self.dense);
            self.dense = grown;
        }
        self.dense[k] = v;
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_trace::{assert_reads_as_vec, iv};
    use super::*;

    const STATES: [ThreadState; 7] = [
        ThreadState::Unknown,
        ThreadState::Running,
        ThreadState::Runnable,
        ThreadState::Sleeping,
        ThreadState::Blocked,
        ThreadState::Other,
        ThreadState::Dead,
    ];

    #[test]
    fn packed_interval_is_twelve_bytes_and_round_trips() {
        assert_eq!(std::mem::size_of::<Packed>(), 12);
        assert_eq!(interval_words(0), 0);
        assert_eq!(interval_words(1), 2);
        assert_eq!(interval_words(2), 3);
        let cpus = [None, Some(Cpu(0)), Some(Cpu(7)), Some(Cpu(CPU_MASK))];
        let wakers = [
            None,
            Some(Tid(0)),
            Some(Tid(-1)),
            Some(Tid(i32::MAX)),
            Some(Tid(4242)),
        ];
        let base = u64::MAX - OFFSET_LIMIT;
        let starts = [base, base + 1, base + (1 << 32) + 5, u64::MAX - 1];
        for state in STATES {
            for cpu in cpus {
                for waker in wakers {
                    for preempted in [false, true] {
                        for (ts, end) in
                            starts.iter().zip([None, Some(Ts(u64::MAX))].iter().cycle())
                        {
                            let want = StateInterval {
                                ts: Ts(*ts),
                                end: *end,
                                state,
                                cpu,
                                preempted,
                                waker,
                            };
                            let p = Packed::pack(&want, base).expect("fits");
                            assert_eq!(p.unpack(*end, base), want);
                            assert_eq!(p.ts(base), want.ts);
                        }
                    }
                }
            }
        }
        let big = StateInterval {
            cpu: Some(Cpu(CPU_MASK + 1)),
            ..iv(1, None, ThreadState::Running)
        };
        assert_eq!(Packed::pack(&big, 0), None);
        // a start before the base, or 2^44 ns after it, does not pack
        let at = |ts| iv(ts, None, ThreadState::Sleeping);
        assert_eq!(Packed::pack(&at(9), 10), None);
        assert_eq!(Packed::pack(&at(10 + OFFSET_LIMIT), 10), None);
        assert!(Packed::pack(&at(10 + OFFSET_LIMIT - 1), 10).is_some());
    }

    /// Every reader of [`Intervals`] against the same reads of the vector
    /// it was made from, packed or not.
    #[test]
    fn intervals_read_as_the_vector_they_hold() {
        let contiguous = vec![
            StateInterval {
                cpu: Some(Cpu(3)),
                waker: Some(Tid(9)),
                ..iv(10, Some(20), ThreadState::Runnable)
            },
            StateInterval {
                cpu: Some(Cpu(3)),
                ..iv(20, Some(35), ThreadState::Running)
            },
            iv(35, Some(50), ThreadState::Sleeping),
            StateInterval {
                preempted: true,
                ..iv(50, None, ThreadState::Runnable)
            },
        ];
        let mut closed = contiguous.clone();
        closed[3].end = Some(Ts(70));
        let mut gap = contiguous.clone();
        gap[1].end = Some(Ts(30));
        let mut big_cpu = contiguous.clone();
        big_cpu[1].cpu = Some(Cpu(1 << 30));
        // spans of 2^44 ns and more do not pack; starts past 2^32 do
        let mut long = contiguous.clone();
        long[3].ts = Ts(20 + OFFSET_LIMIT);
        long[2].end = Some(long[3].ts);
        let mut far = contiguous.clone();
        let far_ts = 10 + (7 << 32) + 3;
        far[3].ts = Ts(far_ts);
        far[2].end = Some(far[3].ts);
        for (v, packs) in [
            (contiguous, true),
            (closed, true),
            (gap, false),
            (big_cpu, false),
            (long, false),
            (far, true),
            (Vec::new(), true),
        ] {
            let ivs = Intervals::from(v.clone());
            assert_eq!(matches!(ivs.0, Repr::Packed { .. }), packs, "{v:?}");
            let probes = (0..80).chain([far_ts - 1, far_ts, far_ts + 1]);
            let ended = |x: &StateInterval, t: u64| x.end_or(Ts(60)).0 <= t;
            assert_reads_as_vec!(ivs, v, probes, ended);
            assert_eq!(ivs, Intervals::from(v.clone()));
            assert_eq!(
                serde_json::to_string(&ivs).unwrap(),
                serde_json::to_string(&v).unwrap()
            );
        }
    }

    #[test]
    #[should_panic(expected = "out of 0..1")]
    fn intervals_range_out_of_bounds_panics_as_slicing() {
        let _ = Intervals::from(vec![iv(1, None, ThreadState::Running)]).range(0..2);
    }

    #[test]
    fn tid_index_takes_any_tid() {
        let mut ix = TidIndex::default();
        let tids = [5, 0, 70_000, (1 << 22) - 1, 1 << 22, i32::MAX, -1, i32::MIN];
        for (i, &t) in tids.iter().enumerate() {
            assert_eq!(ix.get(Tid(t)), None);
            ix.insert(Tid(t), i);
        }
        for (i, &t) in tids.iter().enumerate() {
            assert_eq!(ix.get(Tid(t)), Some(i), "tid {t}");
        }
        assert_eq!(ix.get(Tid(6)), None);
        assert_eq!(ix.get(Tid(-2)), None);
        assert!(ix.dense.len() <= DENSE_TIDS);
    }
}
