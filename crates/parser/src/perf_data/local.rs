//! A chunk's local tables: strings, CPU masks and call chains interned with
//! chunk-local ids (renumbered when the chunks are merged), and the comms
//! and thread groups its events name. Shared by the chunk decoder and the
//! tracepoint payload decoders.

use super::abi::context;
use super::hash::FxMap;
use crate::tracefs_format::{FieldKind, FieldRef};
use schedscope_trace::{MaskId, StackId, StrId, Tid};
use std::borrow::Cow;
use std::collections::HashMap;

/// Chunk-local tables (strings, masks, stacks) and per-chunk facts.
#[derive(Default)]
pub(crate) struct Local<'a> {
    pub strings: Vec<Cow<'a, [u8]>>,
    str_map: FxMap<Cow<'a, [u8]>, u32>,
    pub masks: Vec<Vec<u64>>,
    mask_map: FxMap<Vec<u64>, u32>,
    mask_buf: Vec<u64>,
    pub stacks: Vec<Vec<u64>>,
    stack_map: FxMap<Vec<u64>, u32>,
    stack_buf: Vec<u64>,
    /// Latest (ts, comm) seen in events per tid (one entry per tid).
    pub comm_by_tid: Vec<(i32, (u64, StrId))>,
    /// tid -> its index in `comm_by_tid`.
    pub(crate) comm_index: FxMap<i32, u32>,
    /// Direct-mapped cache by tid in front of `comm_index`: the raw
    /// 16-byte comm field last seen for the tid and its entry.
    comm_cache: Vec<CommSlot>,
    /// tid -> pid (tgid) from sample TID fields.
    pub tgid_by_tid: FxMap<i32, i32>,
    /// The last (tid, pid) inserted into `tgid_by_tid`.
    pub(crate) last_tgid: Option<(i32, i32)>,
    pub printk: Option<&'a HashMap<u64, String>>,
    /// Keep untyped events' fields (`LoadOptions::raw_fields`) in `raw`.
    pub raw_fields: bool,
    /// Fields of the chunk's untyped events (chunk-local record numbers).
    pub raw: schedscope_trace::RawArgs,
}

impl<'a> Local<'a> {
    /// Intern a string (chunk-local id).
    #[inline]
    pub(crate) fn intern(&mut self, s: &'a [u8]) -> StrId {
        if let Some(&id) = self.str_map.get(s) {
            return StrId(id);
        }
        let id = self.strings.len() as u32;
        self.strings.push(Cow::Borrowed(s));
        self.str_map.insert(Cow::Borrowed(s), id);
        StrId(id)
    }

    fn intern_owned(&mut self, s: Vec<u8>) -> StrId {
        if let Some(&id) = self.str_map.get(s.as_slice()) {
            return StrId(id);
        }
        let id = self.strings.len() as u32;
        self.strings.push(Cow::Owned(s.clone()));
        self.str_map.insert(Cow::Owned(s), id);
        StrId(id)
    }

    /// Read the comm field `f` of `raw`, intern it and remember it as
    /// `tid`'s latest comm (`None` when the payload is too short).
    #[inline]
    pub(crate) fn comm(&mut self, f: &FieldRef, raw: &'a [u8], tid: Tid, ts: u64) -> Option<StrId> {
        // fastest path: the same 16 raw bytes as the tid's latest comm
        // (the usual case) cost one load and compare, no string handling
        let key = match f.kind {
            FieldKind::Scalar | FieldKind::Array { .. } if f.size == 16 => {
                let o = f.offset as usize;
                raw.get(o..o + 16)
                    .and_then(|b| <[u8; 16]>::try_from(b).ok())
                    .map(u128::from_le_bytes)
            }
            _ => None,
        };
        let slot_ix = tid.0 as u32 as usize % COMM_CACHE;
        if let Some(k) = key {
            if self.comm_cache.is_empty() {
                self.comm_cache = vec![CommSlot::EMPTY; COMM_CACHE];
            }
            let slot = self.comm_cache[slot_ix];
            if slot.entry != u32::MAX && slot.tid == tid.0 && slot.key == k {
                if let Some((_, e)) = self.comm_by_tid.get_mut(slot.entry as usize) {
                    // (the entry still holds that comm: the bytes name it)
                    if e.1 == slot.id {
                        if e.0 <= ts {
                            e.0 = ts;
                        }
                        return Some(slot.id);
                    }
                }
            }
        }
        let (id, entry) = self.comm_str(f.read_str(raw)?, tid, ts);
        if let Some(k) = key {
            let holds = self.comm_by_tid.get(entry).is_some_and(|e| e.1 .1 == id);
            self.comm_cache[slot_ix] = if holds {
                CommSlot {
                    tid: tid.0,
                    entry: entry as u32,
                    id,
                    key: k,
                }
            } else {
                CommSlot::EMPTY
            };
        }
        Some(id)
    }

    /// Intern the comm `s` and remember it as `tid`'s latest comm; returns
    /// its id and the tid's index in `comm_by_tid`.
    fn comm_str(&mut self, s: &'a [u8], tid: Tid, ts: u64) -> (StrId, usize) {
        // the tid's latest comm is usually this one (an integer hash and a
        // 16-byte compare instead of hashing the string)
        if let Some(&i) = self.comm_index.get(&tid.0) {
            if let Some((_, e)) = self.comm_by_tid.get_mut(i as usize) {
                if self
                    .strings
                    .get(e.1 .0 as usize)
                    .is_some_and(|c| c.as_ref() == s)
                {
                    if e.0 <= ts {
                        e.0 = ts;
                    }
                    return (e.1, i as usize);
                }
            }
        }
        let id = self.intern(s);
        let entries = &mut self.comm_by_tid;
        let i = *self.comm_index.entry(tid.0).or_insert_with(|| {
            entries.push((tid.0, (ts, id)));
            (entries.len() - 1) as u32
        }) as usize;
        if let Some((_, e)) = self.comm_by_tid.get_mut(i) {
            if e.0 <= ts {
                *e = (ts, id);
            }
        }
        (id, i)
    }

    /// The printk string at `addr` (or the address in hex).
    pub(crate) fn printk(&mut self, addr: u64) -> StrId {
        match self.printk.and_then(|p| p.get(&addr)) {
            Some(s) => self.intern(s.as_bytes()),
            None => self.intern_owned(format!("0x{addr:x}").into_bytes()),
        }
    }

    /// Read a CPU mask field and intern it (chunk-local id).
    pub(crate) fn mask(&mut self, f: &FieldRef, raw: &[u8]) -> Option<MaskId> {
        let b = f.read_bytes(raw)?;
        self.mask_buf.clear();
        // an array of little-endian unsigned longs: 4-byte longs pair up
        // into the same bits as 8-byte ones
        for w in b.chunks(8) {
            let mut a = [0u8; 8];
            a[..w.len()].copy_from_slice(w);
            self.mask_buf.push(u64::from_le_bytes(a));
        }
        while self.mask_buf.last() == Some(&0) {
            self.mask_buf.pop();
        }
        if let Some(&id) = self.mask_map.get(self.mask_buf.as_slice()) {
            return Some(MaskId(id));
        }
        let id = self.masks.len() as u32;
        self.masks.push(self.mask_buf.clone());
        self.mask_map.insert(self.mask_buf.clone(), id);
        Some(MaskId(id))
    }

    /// Intern a call chain (PERF_CONTEXT_* markers dropped; chunk-local id).
    pub(crate) fn stack(&mut self, chain: &[u8]) -> StackId {
        self.stack_buf.clear();
        for c in chain.chunks_exact(8) {
            let mut a = [0u8; 8];
            a.copy_from_slice(c);
            let ip = u64::from_le_bytes(a);
            if ip < context::MAX {
                self.stack_buf.push(ip);
            }
        }
        if let Some(&id) = self.stack_map.get(self.stack_buf.as_slice()) {
            return StackId(id);
        }
        let id = self.stacks.len() as u32;
        self.stacks.push(self.stack_buf.clone());
        self.stack_map.insert(self.stack_buf.clone(), id);
        StackId(id)
    }
}

/// Slots of [`Local`]'s comm cache.
const COMM_CACHE: usize = 256;

/// A comm cache slot: `tid`'s entry `entry` in `comm_by_tid` holds `id`,
/// whose bytes are the raw 16-byte field `key`.
#[derive(Clone, Copy)]
struct CommSlot {
    tid: i32,
    /// u32::MAX: empty.
    entry: u32,
    id: StrId,
    key: u128,
}

impl CommSlot {
    const EMPTY: CommSlot = CommSlot {
        tid: 0,
        entry: u32::MAX,
        id: StrId(0),
        key: 0,
    };
}
