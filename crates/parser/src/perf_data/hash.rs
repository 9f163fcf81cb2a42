//! The decoder's hash maps: FxHash for small integer and byte keys, and a
//! dense table in front of it for sample ids and tracepoint types.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// FxHash (rustc's hasher): a fast non-cryptographic hash for small keys.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut a = [0u8; 8];
            a.copy_from_slice(c);
            self.add(u64::from_le_bytes(a));
        }
        for &b in chunks.remainder() {
            self.add(b as u64);
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64)
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64)
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i)
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64)
    }
    #[inline]
    fn write_i32(&mut self, i: i32) {
        self.add(i as u32 as u64)
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

impl FxHasher {
    #[inline]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// A HashMap with [`FxHasher`].
pub(crate) type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

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
