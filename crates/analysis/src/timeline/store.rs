//! Where the timeline keeps its intervals (one store for every thread,
//! each thread a region of it) and how it finds a thread by tid.

use super::*;
/// Size of a [`StateInterval`] in 8-byte words.
pub(super) const INTERVAL_WORDS: usize = std::mem::size_of::<StateInterval>() / 8;

/// A thread's intervals: a slice (it derefs to `[StateInterval]`) of the
/// store that [`Timeline::build`] fills for all threads at once.
///
/// The build writes every thread's intervals into one allocation, each
/// thread in a region sized by the census, instead of one vector per
/// thread: a few huge pages to fault in instead of thousands of small
/// pages (see [`schedscope_trace::mem`]). Cloning shares the store.
#[derive(Clone, Default)]
pub struct Intervals {
    pub(super) store: Arc<Store>,
    pub(super) start: usize,
    pub(super) end: usize,
}

/// Interval slots, in words (memory reused from the decoder, see
/// [`schedscope_trace::mem::Spare`]); only the ranges that an
/// [`Intervals`] names are initialised.
#[derive(Default)]
pub(super) struct Store(pub(super) Vec<Word>);

impl std::ops::Deref for Intervals {
    type Target = [StateInterval];
    fn deref(&self) -> &[StateInterval] {
        let slots = &words_as_slots_ref::<StateInterval>(&self.store.0)[self.start..self.end];
        // SAFETY: an Intervals is only made over initialised slots (by
        // `From<Vec<_>>`, or by the builder over the slots it wrote), the
        // store is never written once shared, and MaybeUninit<T> has T's
        // layout.
        unsafe { &*(slots as *const [MaybeUninit<StateInterval>] as *const [StateInterval]) }
    }
}

impl From<Vec<StateInterval>> for Intervals {
    fn from(v: Vec<StateInterval>) -> Intervals {
        let end = v.len();
        let mut words = vec![MaybeUninit::uninit(); end * INTERVAL_WORDS];
        for (slot, iv) in words_as_slots(&mut words).iter_mut().zip(v) {
            slot.write(iv);
        }
        Intervals {
            store: Arc::new(Store(words)),
            start: 0,
            end,
        }
    }
}

impl<'a> IntoIterator for &'a Intervals {
    type Item = &'a StateInterval;
    type IntoIter = std::slice::Iter<'a, StateInterval>;
    fn into_iter(self) -> Self::IntoIter {
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
        self[..] == other[..]
    }
}

impl Serialize for Intervals {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self[..].serialize(s)
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
    use super::*;

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
