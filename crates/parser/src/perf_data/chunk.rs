//! Decoding one chunk of the record stream into events with chunk-local
//! string, mask and stack ids; [`super::merge`] renumbers them globally.
//! Chunks are independent, so they are decoded in parallel.

use super::abi::{context, read_format, sample, RecordType, MISC_COMM_EXEC};
use super::bytes::{u16_at, u32_at, u64_at, until_nul};
use super::header::Attr;
use super::tracepoint::TpDecoder;
use crate::tracefs_format::{FieldKind, FieldRef};
use schedscope_trace::{Cpu, Event, EventData, MaskId, NameId, StackId, StrId, Tally, Tid, Ts};
use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::mem::MaybeUninit;

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

/// Where a sample's fields are, per attr.
#[derive(Clone, Debug)]
pub(crate) struct Layout {
    pub sample_type: u64,
    pub read_format: u64,
    pub sample_id_all: bool,
    /// Field offsets when no variable-size part (READ, CALLCHAIN) comes
    /// before RAW, so that every field sits at a fixed offset.
    fixed: Option<Fixed>,
}

/// Byte offsets of the sample fields in a SAMPLE body of a fixed layout.
#[derive(Clone, Copy, Debug)]
struct Fixed {
    tid: Option<usize>,
    time: Option<usize>,
    cpu: Option<usize>,
    /// Offset of RAW's size word, or None without RAW.
    raw: Option<usize>,
    /// End of the fixed fields: shorter bodies are rejected.
    end: usize,
}

impl Layout {
    pub(crate) fn new(a: &Attr) -> Layout {
        let t = a.sample_type;
        let fixed = (t & (sample::READ | sample::CALLCHAIN) == 0).then(|| {
            let mut p = 0usize;
            let mut at = |bit: u64| {
                (t & bit != 0).then(|| {
                    p += 8;
                    p - 8
                })
            };
            at(sample::IDENTIFIER);
            at(sample::IP);
            let tid = at(sample::TID);
            let time = at(sample::TIME);
            at(sample::ADDR);
            at(sample::ID);
            at(sample::STREAM_ID);
            let cpu = at(sample::CPU);
            at(sample::PERIOD);
            Fixed {
                tid,
                time,
                cpu,
                raw: (t & sample::RAW != 0).then_some(p),
                end: p,
            }
        });
        Layout {
            sample_type: a.sample_type,
            read_format: a.read_format,
            sample_id_all: a.sample_id_all,
            fixed,
        }
    }

    /// perf's `id_pos`: u64 index of the sample id in a SAMPLE body.
    pub(crate) fn id_pos(&self) -> Option<usize> {
        let t = self.sample_type;
        if t & sample::IDENTIFIER != 0 {
            return Some(0);
        }
        if t & sample::ID == 0 {
            return None;
        }
        Some(
            [sample::IP, sample::TID, sample::TIME, sample::ADDR]
                .iter()
                .filter(|&&b| t & b != 0)
                .count(),
        )
    }

    /// perf's `is_pos`: u64 index, counted from the end, of the id in a
    /// sample_id_all trailer.
    pub(crate) fn is_pos(&self) -> Option<usize> {
        let t = self.sample_type;
        if t & sample::IDENTIFIER != 0 {
            return Some(1);
        }
        if t & sample::ID == 0 {
            return None;
        }
        Some(1 + (t & sample::CPU != 0) as usize + (t & sample::STREAM_ID != 0) as usize)
    }

    /// The smallest SAMPLE record (header included) with every field the
    /// sample_type names (a READ, CALLCHAIN or RAW part takes at least 8
    /// bytes); used to size the event vector, never to reject records.
    pub(crate) fn min_sample_size(&self) -> usize {
        let t = self.sample_type;
        let fixed = [
            sample::IDENTIFIER,
            sample::IP,
            sample::TID,
            sample::TIME,
            sample::ADDR,
            sample::ID,
            sample::STREAM_ID,
            sample::CPU,
            sample::PERIOD,
            sample::READ,
            sample::CALLCHAIN,
            sample::RAW,
        ];
        8 + 8 * fixed.iter().filter(|&&b| t & b != 0).count()
    }

    /// Time in a sample_id_all trailer at the end of `body`.
    fn trailer_time(&self, body: &[u8]) -> Option<u64> {
        let t = self.sample_type;
        if !self.sample_id_all || t & sample::TIME == 0 {
            return None;
        }
        let after = [
            sample::ID,
            sample::STREAM_ID,
            sample::CPU,
            sample::IDENTIFIER,
        ]
        .iter()
        .filter(|&&b| t & b != 0)
        .count();
        let pos = body.len().checked_sub(8 * (after + 1))?;
        u64_at(body, pos)
    }

    fn read_size(&self, body: &[u8], pos: usize) -> Option<usize> {
        let rf = self.read_format;
        let extra = 8
            * ((rf & read_format::TOTAL_TIME_ENABLED != 0) as usize
                + (rf & read_format::TOTAL_TIME_RUNNING != 0) as usize);
        let per =
            8 * (1 + (rf & read_format::ID != 0) as usize + (rf & read_format::LOST != 0) as usize);
        if rf & read_format::GROUP != 0 {
            let nr = usize::try_from(u64_at(body, pos)?).ok()?;
            nr.checked_mul(per)?.checked_add(8 + extra)
        } else {
            Some(per + extra)
        }
    }
}

/// The fields of a SAMPLE record the decoder uses.
#[derive(Default, Debug)]
pub(crate) struct Sample<'a> {
    pub pid: Option<i32>,
    pub tid: Option<i32>,
    pub time: u64,
    pub cpu: Option<u32>,
    pub callchain: Option<&'a [u8]>,
    pub raw: Option<&'a [u8]>,
}

/// Parse a SAMPLE body (after the 8-byte header) by the attr's layout.
/// `None` if the body is shorter than the layout demands.
pub(crate) fn parse_sample<'a>(b: &'a [u8], l: &Layout) -> Option<Sample<'a>> {
    if let Some(f) = l.fixed {
        // the same checks as below, at precomputed offsets
        if b.len() < f.end {
            return None;
        }
        let mut s = Sample::default();
        if let Some(o) = f.tid {
            s.pid = Some(u32_at(b, o)? as i32);
            s.tid = Some(u32_at(b, o + 4)? as i32);
        }
        if let Some(o) = f.time {
            s.time = u64_at(b, o)?;
        }
        if let Some(o) = f.cpu {
            s.cpu = Some(u32_at(b, o)?);
        }
        if let Some(o) = f.raw {
            let size = u32_at(b, o)? as usize;
            s.raw = Some(b.get(o + 4..(o + 4).checked_add(size)?)?);
        }
        return Some(s);
    }
    let t = l.sample_type;
    let mut s = Sample::default();
    let mut p = 0usize;
    let skip = |p: &mut usize, bit: u64| {
        if t & bit != 0 {
            *p += 8;
        }
    };
    skip(&mut p, sample::IDENTIFIER);
    skip(&mut p, sample::IP);
    if t & sample::TID != 0 {
        s.pid = Some(u32_at(b, p)? as i32);
        s.tid = Some(u32_at(b, p + 4)? as i32);
        p += 8;
    }
    if t & sample::TIME != 0 {
        s.time = u64_at(b, p)?;
        p += 8;
    }
    skip(&mut p, sample::ADDR);
    skip(&mut p, sample::ID);
    skip(&mut p, sample::STREAM_ID);
    if t & sample::CPU != 0 {
        s.cpu = Some(u32_at(b, p)?);
        p += 8;
    }
    skip(&mut p, sample::PERIOD);
    if t & sample::READ != 0 {
        p = p.checked_add(l.read_size(b, p)?)?;
    }
    if t & sample::CALLCHAIN != 0 {
        let nr = usize::try_from(u64_at(b, p)?).ok()?;
        let len = nr.checked_mul(8)?;
        s.callchain = Some(b.get(p + 8..(p + 8).checked_add(len)?)?);
        p += 8 + len;
    }
    if t & sample::RAW != 0 {
        let size = u32_at(b, p)? as usize;
        s.raw = Some(b.get(p + 4..(p + 4).checked_add(size)?)?);
        // p += (4 + size) rounded to 8; nothing after RAW is used
    }
    if p > b.len() {
        return None;
    }
    Some(s)
}

/// Per-attr decoding context.
#[derive(Debug)]
pub(crate) struct AttrCtx {
    pub layout: Layout,
    /// Name id for non-tracepoint samples (and tracepoints without formats).
    pub name: NameId,
    /// Tracepoint attr.
    pub tracepoint: bool,
}

/// Everything shared (read-only) by the chunk decoders.
pub(crate) struct Ctx<'a> {
    pub attrs: Vec<AttrCtx>,
    /// Sample id -> attr index.
    pub ids: DenseMap,
    /// Position of the id in samples, shared by all attrs (None: single attr).
    pub id_pos: Option<usize>,
    /// Position (from the end) of the id in sample_id_all trailers.
    pub is_pos: Option<usize>,
    /// common_type -> tracepoint decoder index.
    pub tp_by_type: DenseMap,
    pub tps: Vec<TpDecoder>,
    /// Accessor for `common_type`.
    pub common_type: Option<FieldRef>,
    pub printk: &'a HashMap<u64, String>,
    /// Per NameId: keep the event in the trace (empty: keep all). Events
    /// not kept are counted, their payloads are not decoded.
    pub keep: Vec<bool>,
    /// Per NameId: tally the event instead (empty: none); see
    /// `LoadOptions::tally`.
    pub tally: Vec<bool>,
    /// Keep untyped events' fields (`LoadOptions::raw_fields`).
    pub raw_fields: bool,
}

impl Ctx<'_> {
    fn attr_of_sample(&self, body: &[u8]) -> Result<usize, u64> {
        match self.id_pos {
            None => Ok(0),
            Some(pos) => {
                let id = u64_at(body, pos * 8).ok_or(u64::MAX)?;
                self.ids.get(id).map(|i| i as usize).ok_or(id)
            }
        }
    }
    fn attr_of_other(&self, body: &[u8]) -> usize {
        match self.is_pos {
            Some(pos) if self.attrs.len() > 1 => body
                .len()
                .checked_sub(pos * 8)
                .and_then(|p| u64_at(body, p))
                .and_then(|id| self.ids.get(id))
                .map(|i| i as usize)
                .unwrap_or(0),
            _ => 0,
        }
    }
}

/// A task-table change from a record, applied in time order after merging.
#[derive(Clone, Copy, Debug)]
pub(crate) enum TaskOp {
    /// PERF_RECORD_COMM.
    Comm { pid: i32, tid: i32, comm: StrId },
    /// PERF_RECORD_FORK.
    Fork { pid: i32, tid: i32, ptid: i32 },
    /// PERF_RECORD_EXIT.
    Exit { tid: i32 },
}

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
    comm_index: FxMap<i32, u32>,
    /// Direct-mapped cache by tid in front of `comm_index`: the raw
    /// 16-byte comm field last seen for the tid and its entry.
    comm_cache: Vec<CommSlot>,
    /// tid -> pid (tgid) from sample TID fields.
    pub tgid_by_tid: FxMap<i32, i32>,
    /// The last (tid, pid) inserted into `tgid_by_tid`.
    last_tgid: Option<(i32, i32)>,
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
    fn stack(&mut self, chain: &[u8]) -> StackId {
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

/// A per-kind anomaly counter with the first byte offset it happened at.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Anomaly {
    pub count: u64,
    pub first_offset: u64,
    /// A value worth naming in the message (an id, a type).
    pub value: u64,
}

impl Anomaly {
    fn hit(&mut self, offset: u64, value: u64) {
        if self.count == 0 {
            self.first_offset = offset;
            self.value = value;
        }
        self.count += 1;
    }
    pub(crate) fn merge(&mut self, o: &Anomaly) {
        if o.count > 0 && self.count == 0 {
            self.first_offset = o.first_offset;
            self.value = o.value;
        }
        self.count += o.count;
    }
}

/// What one chunk produced.
#[derive(Default)]
pub(crate) struct ChunkOut<'a> {
    /// Number of events written to the chunk's slice of the event vector.
    pub n: usize,
    pub local: Local<'a>,
    /// Count per NameId.
    pub counts: Vec<u64>,
    /// (ts, op), in file order.
    pub task_ops: Vec<(u64, TaskOp)>,
    pub saw_fork_records: bool,
    pub saw_exit_records: bool,
    /// Sum of PERF_RECORD_LOST counts.
    pub lost: u64,
    /// Sum of PERF_RECORD_LOST_SAMPLES counts.
    pub lost_samples: u64,
    pub unknown_id: Anomaly,
    pub unknown_common_type: Anomaly,
    pub no_raw: Anomaly,
    pub short_sample: Anomaly,
    pub short_payload: Anomaly,
    pub unknown_record: Anomaly,
    pub short_record: Anomaly,
    /// Samples decoded but not kept (see [`Ctx::keep`]).
    pub dropped: u64,
    /// Smallest and largest time of the samples decoded, kept or not
    /// (u64::MAX / 0 when none).
    pub first_ts: u64,
    pub last_ts: u64,
    /// Largest CPU of the samples decoded, kept or not, plus one.
    pub cpus: u32,
    /// Largest CPU of the events kept, plus one.
    pub kept_cpus: u32,
    /// Where the events (`slots[..n]`) go back in time: each index starts
    /// a new sorted run.
    pub runs: Vec<usize>,
    /// MMAP/MMAP2 records, in file order.
    pub mappings: Vec<schedscope_trace::Mapping>,
    /// More events were kept than slots were reserved (see
    /// [`super::decode_with`]).
    pub overflow: bool,
    /// Tallied events (see [`Ctx::tally`]), payloads with chunk-local ids.
    pub tallies: Tallies,
}

/// Tallied events in order of first appearance, with the index of each
/// (name, CPU, payload) in that list: a chunk's, and the whole trace's as
/// the chunks' are added up.
#[derive(Default)]
pub(crate) struct Tallies {
    pub list: Vec<Tally>,
    index: FxMap<(NameId, Cpu, EventData), usize>,
}

impl Tallies {
    /// Add `count` events of `name` on `cpu` with payload `data`.
    pub fn add(&mut self, name: NameId, cpu: Cpu, data: EventData, count: u64) {
        // (the same key as the previous one is the usual case)
        if let Some(last) = self.list.last_mut() {
            if (last.name, last.cpu, last.data) == (name, cpu, data) {
                last.count += count;
                return;
            }
        }
        match self.index.entry((name, cpu, data)) {
            std::collections::hash_map::Entry::Occupied(e) => self.list[*e.get()].count += count,
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(self.list.len());
                self.list.push(Tally {
                    name,
                    cpu,
                    data,
                    count,
                });
            }
        }
    }
}

/// Decode the records in `stream[range]`. Record headers were validated by
/// the walk, so every record lies inside the range. `base` is the file
/// offset of `stream[0]` (for messages).
/// Events go to `slots` (uninitialised memory, never read here), which has
/// room for one event per SAMPLE record of the range; on return
/// `slots[..out.n]` holds them, initialised, in file order: sorted runs
/// that start at 0 and at each index of `out.runs`.
pub(crate) fn decode_chunk<'a>(
    ctx: &Ctx<'a>,
    stream: &'a [u8],
    range: std::ops::Range<usize>,
    base: u64,
    n_names: usize,
    slots: &mut [MaybeUninit<Event>],
) -> ChunkOut<'a> {
    let mut out = ChunkOut {
        counts: vec![0; n_names],
        first_ts: u64::MAX,
        ..ChunkOut::default()
    };
    out.local.printk = Some(ctx.printk);
    out.local.raw_fields = ctx.raw_fields;
    // a chunk sees a few hundred threads: no rehashing as they show up
    out.local.tgid_by_tid.reserve(512);
    out.local.comm_index.reserve(512);
    let mut last_ts = 0u64;
    let mut pos = range.start;
    while pos + 8 <= range.end {
        let size = u16_at(stream, pos + 6).unwrap_or(0) as usize;
        let ty = u32_at(stream, pos).unwrap_or(0);
        let misc = u16_at(stream, pos + 4).unwrap_or(0);
        if size < 8 || pos + size > range.end {
            break; // cannot happen after the walk; stop defensively
        }
        let body = &stream[pos + 8..pos + size];
        let off = base + pos as u64;
        match RecordType(ty) {
            RecordType::SAMPLE => {
                if let Some(ev) = decode_sample(ctx, body, off, &mut out) {
                    match slots.get_mut(out.n) {
                        Some(slot) => {
                            if ev.ts.0 < last_ts {
                                out.runs.push(out.n);
                            }
                            last_ts = ev.ts.0;
                            out.kept_cpus = out.kept_cpus.max(ev.cpu.0.saturating_add(1));
                            slot.write(ev);
                            out.n += 1;
                        }
                        None => out.overflow = true, // a filtered pass reserved too few
                    }
                }
            }
            RecordType::COMM => {
                let a = &ctx.attrs[ctx.attr_of_other(body)];
                match (u32_at(body, 0), u32_at(body, 4), body.get(8..)) {
                    (Some(pid), Some(tid), Some(rest)) => {
                        let comm = out.local.intern(until_nul(rest));
                        let ts = a.layout.trailer_time(body).unwrap_or(0);
                        let _exec = misc & MISC_COMM_EXEC != 0;
                        out.task_ops.push((
                            ts,
                            TaskOp::Comm {
                                pid: pid as i32,
                                tid: tid as i32,
                                comm,
                            },
                        ));
                    }
                    _ => out.short_record.hit(off, ty as u64),
                }
            }
            RecordType::FORK | RecordType::EXIT => {
                match (
                    u32_at(body, 0),
                    u32_at(body, 8),
                    u32_at(body, 12),
                    u64_at(body, 16),
                ) {
                    (Some(pid), Some(tid), Some(ptid), Some(ts)) => {
                        if ty == RecordType::FORK.0 {
                            out.saw_fork_records = true;
                            out.task_ops.push((
                                ts,
                                TaskOp::Fork {
                                    pid: pid as i32,
                                    tid: tid as i32,
                                    ptid: ptid as i32,
                                },
                            ));
                        } else {
                            out.saw_exit_records = true;
                            out.task_ops.push((ts, TaskOp::Exit { tid: tid as i32 }));
                        }
                    }
                    _ => out.short_record.hit(off, ty as u64),
                }
            }
            RecordType::LOST => match u64_at(body, 8) {
                Some(n) => out.lost = out.lost.saturating_add(n),
                None => out.short_record.hit(off, ty as u64),
            },
            RecordType::MMAP | RecordType::MMAP2 => {
                let ts = ctx.attrs[ctx.attr_of_other(body)].layout.trailer_time(body);
                match super::mmap::parse(ty == RecordType::MMAP2.0, body, ts.unwrap_or(0)) {
                    Some(m) => out.mappings.push(m),
                    None => out.short_record.hit(off, ty as u64),
                }
            }
            RecordType::LOST_SAMPLES => match u64_at(body, 0) {
                Some(n) => out.lost_samples = out.lost_samples.saturating_add(n),
                None => out.short_record.hit(off, ty as u64),
            },
            _ if is_known_record(ty) => {}
            _ => out.unknown_record.hit(off, ty as u64),
        }
        pos += size;
    }
    out
}

/// Record types perf documents; the decoder ignores those it does not use.
fn is_known_record(ty: u32) -> bool {
    (1..=21).contains(&ty) || (64..=83).contains(&ty)
}

#[inline]
fn decode_sample<'a>(
    ctx: &Ctx<'a>,
    body: &'a [u8],
    off: u64,
    out: &mut ChunkOut<'a>,
) -> Option<Event> {
    let ai = match ctx.attr_of_sample(body) {
        Ok(i) => i,
        Err(id) => {
            out.unknown_id.hit(off, id);
            return None;
        }
    };
    let Some(a) = ctx.attrs.get(ai) else {
        out.unknown_id.hit(off, ai as u64);
        return None;
    };
    let Some(s) = parse_sample(body, &a.layout) else {
        out.short_sample.hit(off, ai as u64);
        return None;
    };
    if s.cpu
        .is_some_and(|c| u64::from(c) >= super::tracepoint::MAX_CPUS)
    {
        out.short_sample.hit(off, ai as u64);
        return None;
    }
    if let (Some(pid), Some(tid)) = (s.pid, s.tid) {
        // consecutive samples are mostly of one thread: skip the hash then
        if tid >= 0 && (pid > 0 || tid == 0) && out.local.last_tgid != Some((tid, pid)) {
            out.local.tgid_by_tid.insert(tid, pid);
            out.local.last_tgid = Some((tid, pid));
        }
    }
    let stack = match s.callchain {
        Some(c) => out.local.stack(c),
        None => StackId::NONE,
    };
    // The event's name first: a sample that is not kept is only counted
    // (no payload decoding, no Event).
    let cpu = Cpu(s.cpu.unwrap_or(0));
    let (name, tp) = if a.tracepoint {
        let Some(raw) = s.raw else {
            out.no_raw.hit(off, ai as u64);
            return None;
        };
        let ty = ctx
            .common_type
            .and_then(|f| f.read_u64(raw))
            .map(|v| v as u32);
        let Some(tp) = ty
            .and_then(|t| ctx.tp_by_type.get(u64::from(t)))
            .and_then(|i| ctx.tps.get(i as usize))
        else {
            out.unknown_common_type
                .hit(off, ty.map(u64::from).unwrap_or(u64::MAX));
            return None;
        };
        (tp.name, Some((tp, raw)))
    } else {
        (a.name, None)
    };
    if tally(ctx, name) {
        out.tally_sample(tp, name, s.time, cpu, off);
        return None;
    }
    if !keep(ctx, name) {
        out.drop_sample(name, s.time, cpu);
        return None;
    }
    let mut tid = Tid(s.tid.unwrap_or(0));
    let data = match tp {
        Some((tp, raw)) => {
            if s.tid.is_none() {
                if let Some(p) = tp.common_pid.and_then(|f| f.read_i64(raw)) {
                    tid = Tid(p as i32);
                }
            }
            match tp.decode(raw, s.time, &mut out.local) {
                Some(d) => d,
                None => {
                    out.short_payload.hit(off, tp.name.0 as u64);
                    return None;
                }
            }
        }
        None => EventData::Other(None),
    };
    if let Some(c) = out.counts.get_mut(name.0 as usize) {
        *c += 1;
    }
    out.first_ts = out.first_ts.min(s.time);
    out.last_ts = out.last_ts.max(s.time);
    out.cpus = out.cpus.max(cpu.0.saturating_add(1));
    Some(Event {
        ts: Ts(s.time),
        cpu,
        tid,
        name,
        stack,
        data,
    })
}

#[inline]
fn tally(ctx: &Ctx<'_>, name: NameId) -> bool {
    ctx.tally.get(name.0 as usize).copied().unwrap_or(false)
}

#[inline]
fn keep(ctx: &Ctx<'_>, name: NameId) -> bool {
    ctx.keep.is_empty() || ctx.keep.get(name.0 as usize).copied().unwrap_or(false)
}

impl<'a> ChunkOut<'a> {
    /// Count a sample that is tallied (see [`Ctx::tally`]): decode its
    /// payload and add it to the tally of (name, cpu, payload).
    fn tally_sample(
        &mut self,
        tp: Option<(&TpDecoder, &'a [u8])>,
        name: NameId,
        ts: u64,
        cpu: Cpu,
        off: u64,
    ) {
        let data = match tp {
            Some((tp, raw)) => match tp.decode(raw, ts, &mut self.local) {
                Some(d) => d,
                None => {
                    self.short_payload.hit(off, tp.name.0 as u64);
                    return;
                }
            },
            None => EventData::Other(None),
        };
        self.drop_sample(name, ts, cpu);
        self.tallies.add(name, cpu, data, 1);
    }

    /// Count a sample that is not kept.
    fn drop_sample(&mut self, name: NameId, ts: u64, cpu: Cpu) {
        if let Some(c) = self.counts.get_mut(name.0 as usize) {
            *c += 1;
        }
        self.dropped += 1;
        self.first_ts = self.first_ts.min(ts);
        self.last_ts = self.last_ts.max(ts);
        self.cpus = self.cpus.max(cpu.0.saturating_add(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(sample_type: u64, read_format: u64) -> Layout {
        Layout::new(&Attr {
            sample_type,
            read_format,
            sample_id_all: true,
            ..Attr::default()
        })
    }

    #[test]
    fn id_positions_follow_perf() {
        use sample::*;
        // perf_evsel__calc_id_pos / calc_is_pos
        assert_eq!(layout(IDENTIFIER | IP | TID, 0).id_pos(), Some(0));
        assert_eq!(layout(IP | TID | TIME | ID | CPU, 0).id_pos(), Some(3));
        assert_eq!(layout(IP | TID | TIME | ADDR | ID, 0).id_pos(), Some(4));
        assert_eq!(layout(IP | TID | TIME, 0).id_pos(), None);
        assert_eq!(layout(IDENTIFIER | TIME, 0).is_pos(), Some(1));
        assert_eq!(layout(TID | TIME | ID | CPU, 0).is_pos(), Some(2));
        assert_eq!(
            layout(TID | TIME | ID | STREAM_ID | CPU, 0).is_pos(),
            Some(3)
        );
    }

    #[test]
    fn sample_fields_by_layout() {
        use sample::*;
        let st = IP | TID | TIME | ID | CPU | PERIOD | READ | CALLCHAIN | RAW;
        let rf = read_format::GROUP | read_format::ID | read_format::LOST;
        let mut b = Vec::new();
        let p64 = |b: &mut Vec<u8>, v: u64| b.extend_from_slice(&v.to_le_bytes());
        p64(&mut b, 0xffff_ffff_8100_0000); // ip
        b.extend_from_slice(&10u32.to_le_bytes()); // pid
        b.extend_from_slice(&11u32.to_le_bytes()); // tid
        p64(&mut b, 123_456); // time
        p64(&mut b, 77); // id
        b.extend_from_slice(&3u32.to_le_bytes()); // cpu
        b.extend_from_slice(&0u32.to_le_bytes());
        p64(&mut b, 1); // period
        p64(&mut b, 2); // read: nr
        for v in [5, 77, 0, 6, 78, 1] {
            p64(&mut b, v); // (value, id, lost) x2
        }
        p64(&mut b, 3); // callchain nr
        for v in [
            context::KERNEL,
            0xffff_ffff_8100_0010,
            0xffff_ffff_8100_0020,
        ] {
            p64(&mut b, v);
        }
        b.extend_from_slice(&6u32.to_le_bytes()); // raw size
        b.extend_from_slice(&[1, 2, 3, 4, 5, 6]);
        b.extend_from_slice(&[0, 0]); // padding to 8
        let l = layout(st, rf);
        let s = parse_sample(&b, &l).unwrap();
        assert_eq!(
            (s.pid, s.tid, s.time, s.cpu),
            (Some(10), Some(11), 123_456, Some(3))
        );
        assert_eq!(s.raw, Some(&[1u8, 2, 3, 4, 5, 6][..]));
        assert_eq!(s.callchain.map(|c| c.len()), Some(24));
        assert_eq!(u64_at(&b, l.id_pos().unwrap() * 8), Some(77));
        // every truncation is rejected, never a panic
        for cut in 0..b.len() - 2 {
            assert!(parse_sample(&b[..cut], &l).is_none(), "cut {cut}");
        }
        // a callchain count that would overflow
        let mut huge = b.clone();
        let cc = 8 * 13;
        huge[cc..cc + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(parse_sample(&huge, &l).is_none());
    }

    #[test]
    fn trailer_time_of_non_sample_records() {
        use sample::*;
        let l = layout(IDENTIFIER | IP | TID | TIME | CPU | PERIOD | RAW, 0);
        // COMM body: pid, tid, "bash\0\0\0\0", then trailer TID TIME CPU IDENTIFIER
        let mut b = Vec::new();
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(b"bash\0\0\0\0");
        b.extend_from_slice(&[0u8; 8]); // tid
        b.extend_from_slice(&999u64.to_le_bytes()); // time
        b.extend_from_slice(&[0u8; 8]); // cpu
        b.extend_from_slice(&5u64.to_le_bytes()); // identifier
        assert_eq!(l.trailer_time(&b), Some(999));
        assert_eq!(l.trailer_time(&b[..8]), None);
    }
}
