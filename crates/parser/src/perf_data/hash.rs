//! The decoder's dense table in front of [`FxMap`] for sample ids and
//! tracepoint types (the hasher itself is `schedscope_trace::hash`).

pub(crate) use schedscope_trace::hash::FxMap;

/// A lookup from integer keys (sample ids, tracepoint type numbers) to
/// small indexes: a table indexed by `key - base` when the keys span a
/// short range (the kernel numbers them consecutively), a hash map
/// otherwise. Read once per sample, so it must not hash.
#[derive(Debug, Default)]
pub(crate) struct DenseMap {
    base: u64,
    table: Vec<u16>,
    map: FxMap<u64, u16>,
}

impl DenseMap {
    const NONE: u16 = u16::MAX;

    pub(crate) fn new(map: FxMap<u64, u16>) -> DenseMap {
        let (Some(&lo), Some(&hi)) = (map.keys().min(), map.keys().max()) else {
            return DenseMap::default();
        };
        let span = hi - lo;
        if span >= (1 << 16).max(16 * map.len() as u64) || map.values().any(|&v| v == Self::NONE) {
            return DenseMap {
                map,
                ..DenseMap::default()
            };
        }
        let mut table = vec![Self::NONE; span as usize + 1];
        for (&k, &v) in &map {
            table[(k - lo) as usize] = v;
        }
        DenseMap {
            base: lo,
            table,
            map: FxMap::default(),
        }
    }

    #[inline]
    pub(crate) fn get(&self, key: u64) -> Option<u16> {
        if self.table.is_empty() {
            return self.map.get(&key).copied();
        }
        let i = usize::try_from(key.wrapping_sub(self.base)).ok()?;
        self.table.get(i).copied().filter(|&v| v != Self::NONE)
    }
}
