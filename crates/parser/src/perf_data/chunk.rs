//! Decoding one chunk of the record stream into events with chunk-local
//! string, mask and stack ids; [`super::assemble`] renumbers them globally.
//! Chunks are independent, so they are decoded in parallel.

use super::abi::{sample, RecordType, MISC_COMM_EXEC};
use super::bytes::{u16_at, u32_at, u64_at, until_nul};
use super::hash::{DenseMap, FxMap};
use super::layout::{parse_sample, Layout};
use super::local::Local;
use super::tracepoint::TpDecoder;
use crate::tracefs_format::FieldRef;
use schedscope_trace::{Cpu, CpuLoss, Event, EventData, NameId, StackId, StrId, Tally, Tid, Ts};
use std::collections::HashMap;
use std::mem::MaybeUninit;

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
    /// Samples naming a CPU at or above this are implausible (the CPU
    /// count the file records, else the decoder's limit).
    pub cpu_limit: u32,
    /// Keep untyped events' fields (`LoadOptions::raw_fields`).
    pub raw_fields: bool,
}

impl Ctx<'_> {
    #[inline]
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
    /// The PERF_RECORD_LOST losses per CPU named by the records'
    /// sample_id (see [`CpuLoss::merge_into`] for the order).
    pub lost_by_cpu: Vec<CpuLoss>,
    /// The PERF_RECORD_LOST records whose sample_id names CPU and time.
    pub loss_marks: Vec<schedscope_trace::LossMark>,
    /// The LOST_SAMPLES records, attributed to CPUs once the whole file's
    /// ID_INDEX is known (see [`LostSamples`]).
    pub lost_samples_list: Vec<LostSamples>,
    /// (event id, CPU) from PERF_RECORD_ID_INDEX records (CPU -1 left out).
    pub id_cpu: Vec<(u64, u32)>,
    pub unknown_id: Anomaly,
    pub unknown_common_type: Anomaly,
    pub no_raw: Anomaly,
    pub short_sample: Anomaly,
    pub short_payload: Anomaly,
    pub unknown_record: Anomaly,
    pub short_record: Anomaly,
    /// Samples naming a CPU the file's CPU count does not have.
    pub bad_cpu: Anomaly,
    /// Samples whose time is implausible next to their neighbours in the
    /// record stream (see [`implausible_time`]); `value` is the time.
    pub bad_time: Anomaly,
    /// Time of the previous sample in file order (not counting samples
    /// skipped as implausible).
    prev_time: Option<u64>,
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
    /// Per PERF_RECORD_FINISHED_ROUND record, in file order: how many of
    /// the chunk's events precede it (the streaming reader flushes there).
    pub rounds: Vec<usize>,
}

/// Tallied events in order of first appearance, with the index of each
/// (name, CPU, payload) in that list: a chunk's, and the whole trace's as
/// the chunks' are added up.
#[derive(Default)]
pub(crate) struct Tallies {
    pub list: Vec<Tally>,
    index: FxMap<(NameId, Cpu, EventData), usize>,
    /// One more than the `list` indexes of the keys added last, newest
    /// first (0: none). A trace's tallied events take few payloads and
    /// consecutive ones mostly repeat one of the last few keys (big.data:
    /// 344 k tlb_flush events, 30 keys, 43% not the previous key), which
    /// this finds without hashing the payload.
    recent: [usize; RECENT_TALLIES],
}

/// How many recent keys [`Tallies`] checks before its hash map.
const RECENT_TALLIES: usize = 4;

impl Tallies {
    /// Add `count` events of `name` on `cpu` with payload `data`.
    pub fn add(&mut self, name: NameId, cpu: Cpu, data: EventData, count: u64) {
        for k in 0..RECENT_TALLIES {
            let Some(i) = self.recent[k].checked_sub(1) else {
                break;
            };
            let t = &mut self.list[i];
            if t.name == name && t.cpu == cpu && t.data == data {
                t.count += count;
                self.recent.copy_within(0..k, 1);
                self.recent[0] = i + 1;
                return;
            }
        }
        let i = match self.index.entry((name, cpu, data)) {
            std::collections::hash_map::Entry::Occupied(e) => {
                let i = *e.get();
                self.list[i].count += count;
                i
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                let i = self.list.len();
                e.insert(i);
                self.list.push(Tally {
                    name,
                    cpu,
                    data,
                    count,
                });
                i
            }
        };
        self.recent.copy_within(0..RECENT_TALLIES - 1, 1);
        self.recent[0] = i + 1;
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
                if let Some(ev) = decode_sample(ctx, body, off, &mut out, (stream, pos + size)) {
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
                Some(n) => {
                    out.lost = out.lost.saturating_add(n);
                    note_loss(ctx, body, n, &mut out.lost_by_cpu, &mut out.loss_marks);
                }
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
                Some(n) => {
                    out.lost_samples = out.lost_samples.saturating_add(n);
                    out.lost_samples_list.push(LostSamples::of(ctx, body, n));
                }
                None => out.short_record.hit(off, ty as u64),
            },
            RecordType::ID_INDEX => id_index(body, &mut out.id_cpu),
            RecordType::FINISHED_ROUND => out.rounds.push(out.n),
            _ if is_known_record(ty) => {}
            _ => out.unknown_record.hit(off, ty as u64),
        }
        pos += size;
    }
    out
}

/// Count a PERF_RECORD_LOST of `n` events under the CPU and time of its
/// sample_id trailer (the kernel fills it in: the CPU is the ring's).
fn note_loss(
    ctx: &Ctx<'_>,
    body: &[u8],
    n: u64,
    list: &mut Vec<CpuLoss>,
    marks: &mut Vec<schedscope_trace::LossMark>,
) {
    let layout = &ctx.attrs[ctx.attr_of_other(body)].layout;
    // id and lost come before the trailer.
    let cpu = layout.trailer_cpu(body, 16);
    // A time only where the trailer is really there (the CPU check also
    // checks the length).
    let ts = cpu.and_then(|_| layout.trailer_time(body));
    let mut one = CpuLoss {
        cpu,
        ..CpuLoss::default()
    };
    one.add(n, true, ts);
    CpuLoss::merge_into(list, &one);
    if let (Some(cpu), Some(ts)) = (cpu, ts) {
        marks.push(schedscope_trace::LossMark { ts, cpu, lost: n });
    }
}

/// One PERF_RECORD_LOST_SAMPLES: a recorder writes it at the end from an
/// event's lost counter, for one (event, CPU).
#[derive(Clone, Copy, Debug)]
pub(crate) struct LostSamples {
    /// The event id of its sample_id trailer.
    pub id: Option<u64>,
    /// The CPU of its trailer, when the trailer was filled in: perf (6.1)
    /// writes these records with a zeroed trailer (time 0, CPU 0) and an
    /// ID_INDEX that names the id's CPU; schedscope fills in CPU and time.
    pub cpu: Option<u32>,
    /// Samples lost.
    pub n: u64,
}

impl LostSamples {
    fn of(ctx: &Ctx<'_>, body: &[u8], n: u64) -> LostSamples {
        let layout = &ctx.attrs[ctx.attr_of_other(body)].layout;
        // lost comes before the trailer.
        let cpu = layout.trailer_cpu(body, 8);
        let filled = cpu.is_some() && layout.trailer_time(body).is_some_and(|t| t != 0);
        let id = layout
            .is_pos()
            .filter(|_| layout.sample_id_all && cpu.is_some())
            .and_then(|p| body.len().checked_sub(p * 8))
            .and_then(|p| u64_at(body, p));
        LostSamples {
            id,
            cpu: cpu.filter(|_| filled),
            n,
        }
    }
}

/// The (id, CPU) pairs of a PERF_RECORD_ID_INDEX body: nr, then nr entries
/// of id, idx, cpu, tid (u64 each); a CPU of -1 (per-thread events) names
/// none. A body shorter than its nr says keeps the entries it has.
fn id_index(body: &[u8], out: &mut Vec<(u64, u32)>) {
    let nr = u64_at(body, 0).unwrap_or(0);
    for k in 0..nr.min((body.len().saturating_sub(8) / 32) as u64) as usize {
        let at = 8 + 32 * k;
        if let (Some(id), Some(cpu)) = (u64_at(body, at), u64_at(body, at + 16)) {
            if let Ok(cpu) = u32::try_from(cpu) {
                if cpu != u32::MAX {
                    out.push((id, cpu));
                }
            }
        }
    }
}

/// Record types perf documents; the decoder ignores those it does not use.
fn is_known_record(ty: u32) -> bool {
    (1..=21).contains(&ty) || (64..=83).contains(&ty)
}

/// Slack of [`implausible_time`]: one minute.
const TIME_SLACK_NS: u64 = 60_000_000_000;

/// Whether a sample time `t` is implausible next to the times of its
/// neighbours in the record stream (`lo` <= `hi`, the smaller and larger
/// of the previous and next sample's times; equal when only one is
/// known). perf writes each CPU's ring buffer in turn, so the stream is
/// made of sorted runs and a neighbour may be earlier or later by the
/// time between two reads of the buffers; but sample times count from
/// boot, so a time more than twice its neighbours' (plus a minute), or
/// less than half of them (minus a minute), is not one the kernel wrote:
/// it is damage (one such sample made a damaged file span 576 million
/// seconds).
pub(crate) fn implausible_time(t: u64, lo: u64, hi: u64) -> bool {
    t > hi.saturating_mul(2).saturating_add(TIME_SLACK_NS)
        || t.saturating_mul(2).saturating_add(TIME_SLACK_NS) < lo
}

/// The times of the next two SAMPLE records after byte `pos` of `stream`
/// (looking at most 64 records ahead; `None` where none is found or the
/// records there are damaged). Only asked for samples whose time already
/// looks implausible next to the previous one, and for a chunk's first.
fn next_sample_times(ctx: &Ctx<'_>, stream: &[u8], mut pos: usize) -> [Option<u64>; 2] {
    let mut out = [None; 2];
    let mut found = 0;
    for _ in 0..64 {
        let (Some(ty), Some(size)) = (u32_at(stream, pos), u16_at(stream, pos + 6)) else {
            break;
        };
        let size = size as usize;
        let Some(body) = stream.get(pos + 8..pos + size.max(8)) else {
            break;
        };
        if size < 8 {
            break;
        }
        if ty == RecordType::SAMPLE.0 {
            let Some(a) = ctx.attr_of_sample(body).ok().and_then(|i| ctx.attrs.get(i)) else {
                break;
            };
            if a.layout.sample_type & sample::TIME == 0 {
                pos += size;
                continue;
            }
            let Some(t) = parse_sample(body, &a.layout).map(|s| s.time) else {
                break;
            };
            out[found] = Some(t);
            found += 1;
            if found == out.len() {
                break;
            }
        }
        pos += size;
    }
    out
}

#[inline]
fn decode_sample<'a>(
    ctx: &Ctx<'a>,
    body: &'a [u8],
    off: u64,
    out: &mut ChunkOut<'a>,
    (stream, after): (&[u8], usize),
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
    if s.cpu.is_some_and(|c| c >= ctx.cpu_limit) {
        out.bad_cpu.hit(off, u64::from(s.cpu.unwrap_or(0)));
        return None;
    }
    // (Only samples with a time field: attrs without one read as 0.)
    if a.layout.sample_type & sample::TIME != 0 {
        // A time far from the previous sample's is checked against the next
        // one's too (rare: the stream is sorted runs of nearby times).
        // (A chunk's first sample has no previous one: it is checked against
        // the next two, and is implausible only if it is next to both, so that
        // a damaged second sample does not condemn a sound first one.)
        let suspect = match out.prev_time {
            Some(p) => implausible_time(s.time, p, p),
            None => true,
        };
        if suspect {
            let [n1, n2] = next_sample_times(ctx, stream, after);
            let bad = |x: Option<u64>, y: Option<u64>| match (x, y) {
                (Some(a), Some(b)) => implausible_time(s.time, a.min(b), a.max(b)),
                (Some(a), None) | (None, Some(a)) => implausible_time(s.time, a, a),
                (None, None) => false,
            };
            let implausible = match out.prev_time {
                Some(p) => bad(Some(p), n1),
                None => bad(n1, None) && (n2.is_none() || bad(n2, None)),
            };
            if implausible {
                out.bad_time.hit(off, s.time);
                return None;
            }
        }
        out.prev_time = Some(s.time);
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

    const S: u64 = 1_000_000_000;

    /// The recent-key check finds the entry the hash map would: the
    /// list is the keys in order of first appearance with their counts,
    /// however the keys interleave (more of them than recent slots).
    #[test]
    fn tallies_count_each_key_in_order_of_first_appearance() {
        let key = |k: u64| {
            (
                NameId((k % 2) as u16),
                Cpu((k / 2 % 3) as u32),
                EventData::TlbFlush {
                    reason: (k % 5) as i32,
                    pages: k as i64 - 3,
                },
            )
        };
        // runs of one key, alternations of two, then cycles over up to 9
        let mut seq: Vec<u64> = vec![0, 0, 0, 1, 0, 1, 0, 2, 2, 1];
        for span in 1..10u64 {
            for i in 0..40 {
                seq.push((i * 7 + span) % span + span);
            }
        }
        let mut t = Tallies::default();
        let mut want: Vec<(u64, u64)> = Vec::new();
        for (n, &k) in seq.iter().enumerate() {
            let (name, cpu, data) = key(k);
            let count = 1 + n as u64 % 3;
            t.add(name, cpu, data, count);
            match want.iter_mut().find(|(x, _)| *x == k) {
                Some((_, c)) => *c += count,
                None => want.push((k, count)),
            }
        }
        let got: Vec<Tally> = t.list.clone();
        let want: Vec<Tally> = want
            .iter()
            .map(|&(k, count)| {
                let (name, cpu, data) = key(k);
                Tally {
                    name,
                    cpu,
                    data,
                    count,
                }
            })
            .collect();
        assert_eq!(got, want);
        assert!(want.len() > RECENT_TALLIES + 4);
    }

    #[test]
    fn id_index_pairs_ids_with_cpus() {
        let mut b = Vec::new();
        b.extend_from_slice(&3u64.to_ne_bytes());
        for (id, cpu) in [(8085u64, 0u64), (8086, 1), (9000, u64::MAX)] {
            for v in [id, 0, cpu, u64::MAX] {
                b.extend_from_slice(&v.to_ne_bytes());
            }
        }
        let mut out = Vec::new();
        id_index(&b, &mut out);
        // CPU -1 (a per-thread event) names no CPU.
        assert_eq!(out, vec![(8085, 0), (8086, 1)]);
        // A cut body keeps the whole entries it has; nr beyond them is ignored.
        out.clear();
        id_index(&b[..8 + 32 + 20], &mut out);
        assert_eq!(out, vec![(8085, 0)]);
    }

    /// Times within a factor of two of their neighbours (give or take a
    /// minute) are plausible, whatever the gap a real idle CPU can leave;
    /// a time from 8 random bytes, or near zero among times of hours, is not.
    #[test]
    fn implausible_times() {
        // sorted runs: a neighbour may be earlier or later by the time
        // between two reads of the ring buffers
        assert!(!implausible_time(1332 * S, 1330 * S, 1334 * S));
        assert!(!implausible_time(1000 * S, 1332 * S, 1332 * S));
        assert!(!implausible_time(2600 * S, 1332 * S, 1332 * S));
        // early in the boot, the minute of slack
        assert!(!implausible_time(50 * S, S, S));
        assert!(!implausible_time(0, 30 * S, 30 * S));
        // damage
        assert!(implausible_time(1 << 59, 1332 * S, 1334 * S));
        assert!(implausible_time(u64::MAX, 1332 * S, 1334 * S));
        assert!(implausible_time(17, 1332 * S, 1334 * S));
        assert!(implausible_time(3000 * S, 1332 * S, 1332 * S));
        // no overflow at the edges
        assert!(!implausible_time(u64::MAX, u64::MAX, u64::MAX));
        assert!(!implausible_time(0, 0, 0));
    }
}
