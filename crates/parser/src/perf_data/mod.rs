//! perf.data (PERFILE2) decoder.
//!
//! Data flow: [`header`] reads the file header, the attr table and the
//! feature sections (metadata, [`tracing_data`] with the embedded tracefs
//! formats and kallsyms, the schedscope cgroup section). A cheap sequential
//! walk over the record headers of the data section validates sizes, finds
//! the damage point if any, collects `PERF_RECORD_COMPRESSED` payloads (one
//! zstd stream across all of them, as perf writes it) and cuts the stream
//! into chunks at record boundaries; each chunk is handed to the decoders
//! as soon as it is cut, so walking and decoding overlap. The chunks (of the file
//! and of the decompressed stream) are decoded in parallel with rayon
//! straight into one event vector, with chunk-local string/mask/stack ids;
//! a file chunk's pages are released (through the `release` callback of
//! [`decode_with`]) once decoded, so a mapped file is never resident whole.
//! Events the caller did not ask to keep ([`crate::LoadOptions`]) are
//! counted, not decoded. The chunks leave their events in file order and
//! note where time goes back (perf flushes one CPU's ring buffer after the
//! other, so the stream is made of long sorted runs); [`order`] merges the
//! runs into the final time-sorted vector in one parallel pass, renumbering
//! the chunk-local ids on the way. The task table is built from
//! COMM/FORK/EXIT records, sample tids and event comms. Both event vectors
//! ask for transparent huge pages: faulting in ~100 MB of 4 KiB pages cost
//! more than decoding the events that fill them. When the caller asks for
//! it ([`crate::LoadOptions::spare`]), the file-order vector is not freed
//! after the merge but left in [`Trace::spare`], already faulted in, for
//! the timeline to reuse (see `schedscope_trace::mem`); otherwise the merge
//! gives its pages back as it goes, so that the peak stays below both.
//!
//! Why not the `linux-perf-data` crate for the container: measured on the
//! same 120 MB, 1.17 M-sample `perf record -a -e 'sched:*,ipi:*,tlb:tlb_flush'`
//! file (2 CPUs, page cache warm), just iterating and parsing its samples
//! with `linux-perf-data` 0.11 (no tracepoint field decoding) took 0.43 s,
//! while this decoder does the whole job (fields, tasks, sorting) in
//! 0.07-0.08 s; `perf sched latency` takes 0.23-0.24 s and `perf script`
//! 1.38 s on that file. Its sequential, round-sorted record iterator does
//! not split into parallel chunks, which is where the speed comes from.

pub use schedscope_perf_data::abi;
mod bytes;
mod chunk;
pub mod header;
mod mmap;
mod order;
mod task_cgroups;
mod tracepoint;
pub mod tracing_data;

use crate::ParseError;
use abi::{attr_type, RecordType};
use bytes::{u16_at, u32_at, u64_at};
use chunk::{Anomaly, AttrCtx, ChunkOut, Ctx, DenseMap, FxMap, Layout, TaskOp};
use header::FileHeader;
use rayon::prelude::*;
use schedscope_trace::{
    CpuMask, Event, EventData, MaskId, Severity, StackId, StrId, Tid, Trace, TraceFormat, Ts,
};
use std::io::Read;
use std::mem::MaybeUninit;
use std::ops::Range;
use tracepoint::TpDecoder;

/// How far the header walk goes in one step before it hands the chunks it
/// cut to the decoders (and checks how far ahead of them it is).
const WINDOW_BYTES: usize = if cfg!(test) { 256 << 10 } else { 8 << 20 };

/// How many chunks the walk may cut before the decoders have finished
/// them: beyond this it decodes one itself.
const MAX_CHUNKS_AHEAD: usize = 24;

/// Target size of one parallel decoding chunk.
/// (Small in unit tests, so that the small fixtures span several chunks.)
const CHUNK_BYTES: usize = if cfg!(test) { 64 << 10 } else { 1 << 20 };

/// Decode a perf.data file held in memory; `name` is used in messages.
pub fn decode(name: &str, data: &[u8]) -> Result<Trace, ParseError> {
    decode_with(name, data, &crate::LoadOptions::default(), &|_| {})
}

/// Whether the `LoadOptions::keep` entry `pat` names the event `name`:
/// equal, or a prefix of it when `pat` ends with `*`.
fn keep_matches(pat: &str, name: &str) -> bool {
    match pat.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pat == name,
    }
}

/// Event names every filtered load keeps: the task table falls back on them
/// when the file has no FORK/EXIT records.
pub(crate) const ALWAYS_KEEP: [&str; 3] = [
    "sched:sched_process_fork",
    "sched:sched_process_exit",
    "sched:sched_process_exec",
];

/// [`decode`] with options. `release(range)` is called with byte ranges of
/// `data` that the decoder has finished reading (it may read them again,
/// rarely: strings are borrowed until the merge), so that the caller can
/// drop the pages of a mapped file.
pub fn decode_with(
    name: &str,
    data: &[u8],
    opts: &crate::LoadOptions,
    release: &(dyn Fn(Range<usize>) + Sync),
) -> Result<Trace, ParseError> {
    // A filtered load first reserves slots only for the samples of kept
    // attrs; a payload naming a kept event under an attr that is not kept
    // (a file whose attrs and formats disagree) overflows them, and the
    // file is decoded again with one slot per sample.
    match decode_pass(name, data, opts, release, opts.keep.is_some())? {
        Some(t) => Ok(t),
        None => decode_pass(name, data, opts, release, false)?.ok_or_else(|| ParseError::Corrupt {
            path: name.into(),
            offset: 0,
            detail: "more events than SAMPLE records".into(),
        }),
    }
}

/// One decoding pass; `exact`: reserve slots only for the samples whose
/// attr is kept, returning `None` when that was too few.
fn decode_pass(
    name: &str,
    data: &[u8],
    opts: &crate::LoadOptions,
    release: &(dyn Fn(Range<usize>) + Sync),
    exact: bool,
) -> Result<Option<Trace>, ParseError> {
    let timing = Timing::new();
    let hdr = FileHeader::parse(name, data)?;
    let mut attrs = header::read_attrs(name, data, &hdr)?;
    let feats = header::read_features(data, &hdr);
    let mut trace = Trace::new(name, TraceFormat::PerfData);
    for p in &feats.problems {
        trace.warn(Severity::DataLoss, p.clone(), 1);
    }
    trace.meta.hostname = feats.hostname.clone();
    trace.meta.os_release = feats.os_release.clone();
    trace.meta.arch = feats.arch.clone();
    trace.meta.cmdline = feats.cmdline.clone();
    trace.meta.nr_cpus_online = feats.nr_cpus_online;
    trace.nr_cpus = feats.nr_cpus_online.unwrap_or(0).min(1 << 16);

    let td = match feats.tracing_data {
        Some((b, off)) => tracing_data::parse(b, off),
        None => tracing_data::TracingData::default(),
    };
    for p in &td.problems {
        trace.warn(Severity::DataLoss, p.clone(), 1);
    }

    if td.formats.is_empty() && attrs.iter().any(|a| a.attr.type_ == attr_type::TRACEPOINT) {
        trace.warn(
            Severity::Error,
            "the file has tracepoint events but no readable tracing data (HEADER_TRACING_DATA feature section): their payloads cannot be decoded",
            1,
        );
    }

    // Event names: EVENT_DESC names the attrs by their ids.
    for (ename, ids) in &feats.event_desc {
        if let Some(a) = attrs
            .iter_mut()
            .find(|a| a.name.is_empty() && ids.iter().any(|i| a.ids.contains(i)))
        {
            a.name = ename.clone();
        }
    }

    // Tracepoint decoders, one per embedded format.
    let mut tps = Vec::new();
    let mut tp_by_type = FxMap::default();
    for f in &td.formats {
        let nid = trace.intern_name(&f.full_name());
        let (dec, problem) = TpDecoder::build(f, nid);
        if let Some(p) = problem {
            trace.warn(Severity::Info, p, 1);
        }
        tp_by_type.insert(u64::from(f.id), tps.len() as u16);
        tps.push(dec);
    }
    let common_type = td.formats.iter().find_map(|f| f.field_ref("common_type"));

    let mut ctx_attrs = Vec::with_capacity(attrs.len());
    let mut ids = FxMap::default();
    for (i, a) in attrs.iter().enumerate() {
        let tracepoint = a.attr.type_ == attr_type::TRACEPOINT;
        let fmt_name = tracepoint
            .then(|| td.formats.iter().find(|f| u64::from(f.id) == a.attr.config))
            .flatten()
            .map(|f| f.full_name());
        let ename = match (fmt_name, a.name.is_empty()) {
            (Some(n), _) => n,
            (None, false) => a.name.clone(),
            (None, true) => format!("type{}:0x{:x}", a.attr.type_, a.attr.config),
        };
        let nid = trace.intern_name(&ename);
        for &id in &a.ids {
            ids.insert(id, i as u16);
        }
        ctx_attrs.push(AttrCtx {
            layout: Layout::new(&a.attr),
            name: nid,
            tracepoint,
        });
    }
    let (id_pos, is_pos) = if ctx_attrs.len() == 1 {
        (None, None)
    } else {
        let id_pos = ctx_attrs[0].layout.id_pos();
        let is_pos = ctx_attrs[0].layout.is_pos();
        if id_pos.is_none()
            || ctx_attrs
                .iter()
                .any(|a| a.layout.id_pos() != id_pos || a.layout.is_pos() != is_pos)
        {
            trace.warn(
                Severity::Error,
                format!(
                    "{} attrs without a common sample id position (attr table at byte offset {}): samples are attributed to the first attr",
                    ctx_attrs.len(),
                    hdr.attrs.offset
                ),
                1,
            );
            (None, None)
        } else {
            (id_pos, is_pos)
        }
    };
    let ctx = Ctx {
        attrs: ctx_attrs,
        ids: DenseMap::new(ids),
        id_pos,
        is_pos,
        tp_by_type: DenseMap::new(tp_by_type),
        tps,
        common_type,
        printk: &td.printk,
        keep: match &opts.keep {
            None => Vec::new(),
            Some(k) => trace
                .event_names
                .iter()
                .map(|n| k.iter().any(|x| keep_matches(x, n)) || ALWAYS_KEEP.contains(&n.as_str()))
                .collect(),
        },
        tally: if opts.tally.is_empty() {
            Vec::new()
        } else {
            trace
                .event_names
                .iter()
                .map(|n| opts.tally.iter().any(|x| keep_matches(x, n)))
                .collect()
        },
    };
    let n_names = trace.event_names.len();
    timing.mark("setup");
    let filter = exact.then(|| SampleFilter {
        id_pos: ctx.id_pos,
        ids: &ctx.ids,
        attr_keep: ctx
            .attrs
            .iter()
            .map(|a| {
                let n = a.name.0 as usize;
                ctx.keep.get(n).copied().unwrap_or(true)
                    && !ctx.tally.get(n).copied().unwrap_or(false)
            })
            .collect(),
    });

    // The data section.
    let ds_start = usize::try_from(hdr.data.offset)
        .unwrap_or(usize::MAX)
        .min(data.len());
    let ds_end_decl = hdr.data.offset.saturating_add(hdr.data.size);
    let ds_end = usize::try_from(ds_end_decl)
        .unwrap_or(usize::MAX)
        .min(data.len());
    let mut damage: Option<(u64, String)> = None;
    if ds_end_decl > data.len() as u64 {
        let msg = format!(
            "file truncated: the data section should end at byte offset {ds_end_decl} but the file has {} bytes; {} bytes are missing",
            data.len(),
            ds_end_decl - data.len() as u64
        );
        trace.warn(
            Severity::Error,
            msg.clone(),
            ds_end_decl - data.len() as u64,
        );
        damage = Some((data.len() as u64, msg));
    }
    let stream = &data[ds_start..ds_end.max(ds_start)];
    // The walk over the record headers is sequential. Every chunk it cuts
    // is handed to the pool at once (a rayon scope), so the other cores
    // decode while it walks on, never waiting for one another at window
    // boundaries; once the walk is done, its thread decodes too. Each
    // chunk's pages are released once decoded.
    let mut walker = Walker::new(stream, ds_start as u64, "", filter.as_ref());
    // One slot per SAMPLE record, reserved once for the whole file (the
    // smallest sample the attrs allow bounds their number).
    let min_sample = ctx
        .attrs
        .iter()
        .map(|a| a.layout.min_sample_size())
        .min()
        .unwrap_or(8);
    let mut slots: Vec<MaybeUninit<Event>> =
        schedscope_trace::mem::vec_with_huge_pages(stream.len() / min_sample);
    let cap = slots.capacity();
    // SAFETY: the room is reserved and MaybeUninit<Event> needs no
    // initialisation; the length is set back to the slots handed out below.
    unsafe { slots.set_len(cap) };
    let decoded: std::sync::Mutex<Vec<(usize, Decoded<'_>)>> = Default::default();
    let finished = std::sync::atomic::AtomicUsize::new(0);
    let mut used = 0usize;
    {
        let mut rest: &mut [MaybeUninit<Event>] = &mut slots[..];
        let (ctx, decoded, finished) = (&ctx, &decoded, &finished);
        rayon::scope(|s| {
            let mut next_chunk = 0usize;
            while !walker.done() {
                // Far enough ahead (the pages it walked stay mapped until
                // decoded): decode the newest chunk here instead.
                while next_chunk - finished.load(std::sync::atomic::Ordering::Relaxed)
                    > MAX_CHUNKS_AHEAD
                {
                    if rayon::yield_local() != Some(rayon::Yield::Executed) {
                        break;
                    }
                }
                let until = walker.pos.saturating_add(WINDOW_BYTES);
                walker.advance(until);
                for (i, (range, n)) in walker.w.chunks.iter().enumerate().skip(next_chunk) {
                    // (too few slots: the chunk reports the overflow)
                    let k = (*n).min(rest.len());
                    let (mine, tail) = std::mem::take(&mut rest).split_at_mut(k);
                    rest = tail;
                    let job = Job {
                        stream,
                        range: range.clone(),
                        samples: *n,
                        base: ds_start as u64,
                        decompressed: false,
                    };
                    let offset = used;
                    used += k;
                    s.spawn(move |_| {
                        let d = decode_job(ctx, &job, n_names, mine, offset, release);
                        decoded
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push((i, d));
                        finished.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    });
                }
                next_chunk = walker.w.chunks.len();
            }
        });
    }
    // SAFETY: `used` <= the capacity; slots are MaybeUninit.
    unsafe { slots.set_len(used) };
    let mut outs = decoded.into_inner().unwrap_or_else(|e| e.into_inner());
    outs.sort_unstable_by_key(|(i, _)| *i);
    let mut outs: Vec<Decoded<'_>> = outs.into_iter().map(|(_, d)| d).collect();
    let walk = walker.w;
    if let Some((off, msg, skipped)) = &walk.damage {
        trace.warn(Severity::Error, msg.clone(), *skipped);
        damage.get_or_insert((*off, msg.clone()));
    }

    // One zstd stream across all COMPRESSED records.
    let decompressed = if walk.compressed.is_empty() {
        Vec::new()
    } else {
        if feats.compressed.is_some_and(|c| c.type_ != 1) {
            trace.warn(
                Severity::Error,
                "HEADER_COMPRESSED names a compressor other than zstd; decompressing as zstd anyway",
                1,
            );
        }
        let (d, problem) = decompress(&walk.compressed);
        if let Some(p) = problem {
            trace.warn(Severity::Error, p.clone(), 1);
            damage.get_or_insert((0, p));
        }
        d
    };
    let dwalk = self::walk(
        &decompressed,
        0,
        " of the decompressed record stream",
        filter.as_ref(),
    );
    if let Some((off, msg, skipped)) = &dwalk.damage {
        trace.warn(Severity::Error, msg.clone(), *skipped);
        damage.get_or_insert((*off, msg.clone()));
    }
    let djobs: Vec<Job<'_>> = dwalk
        .chunks
        .iter()
        .map(|(r, n)| Job {
            stream: &decompressed,
            range: r.clone(),
            samples: *n,
            base: 0,
            decompressed: true,
        })
        .collect();
    outs.extend(decode_jobs(&ctx, &djobs, n_names, &mut slots, release));
    if outs.iter().any(|d| d.out.overflow) {
        return Ok(None);
    }
    if opts.keep.is_some() || !opts.tally.is_empty() {
        let mut d = schedscope_trace::trace::Dropped {
            total: 0,
            first: Ts(u64::MAX),
            last: Ts(0),
        };
        for Decoded { out: o, .. } in &outs {
            d.total += o.n as u64 + o.dropped;
            d.first = d.first.min(Ts(o.first_ts));
            d.last = d.last.max(Ts(o.last_ts));
            trace.nr_cpus = trace.nr_cpus.max(o.cpus);
        }
        if d.total == 0 {
            d.first = Ts(0);
        }
        trace.dropped = Some(d);
    }

    for o in &outs {
        trace.nr_cpus = trace.nr_cpus.max(o.out.kept_cpus);
    }
    timing.mark("walk+decode");
    merge(
        &mut trace,
        outs,
        &slots,
        &td,
        &mut damage,
        &timing,
        opts.spare,
    );
    if opts.spare {
        // The slots' pages are faulted in: the analyses reuse them.
        trace.spare.put(slots);
    } else {
        drop(slots);
    }
    timing.mark("tasks");

    if trace.events.is_empty() {
        if let Some((offset, detail)) = damage {
            return Err(ParseError::Corrupt {
                path: name.into(),
                offset,
                detail: format!("no usable events: {detail}"),
            });
        }
    }

    trace.kernel_symbols.syms = td.kallsyms;
    if let Some((b, off)) = feats.cgroup_samples {
        match schedscope_perf_data::sections::decode_cgroup_samples(b, off) {
            Ok(s) => trace.cgroup_samples = s,
            Err(e) => trace.warn(Severity::DataLoss, e.to_string(), 1),
        }
    }
    task_cgroups::load(&mut trace, feats.task_cgroups);
    // (what Trace::finish does: the merge left the events sorted and the
    // CPUs of the kept events are counted above)
    timing.mark("rest");
    Ok(Some(trace))
}

/// With SCHEDSCOPE_TIMING set, the wall time of each step of a perf.data
/// load on stderr (the CLI prints its stages the same way).
struct Timing(Option<std::cell::Cell<std::time::Instant>>);

impl Timing {
    fn new() -> Timing {
        Timing(
            std::env::var_os("SCHEDSCOPE_TIMING")
                .map(|_| std::cell::Cell::new(std::time::Instant::now())),
        )
    }

    /// Print the time since the previous mark as `what`.
    fn mark(&self, what: &str) {
        if let Some(t) = &self.0 {
            eprintln!(
                "timing: perf.data {what} {:.1} ms",
                t.get().elapsed().as_secs_f64() * 1e3
            );
            t.set(std::time::Instant::now());
        }
    }
}

/// A decoded chunk: its output, where its events are in the slot vector,
/// and whether it came from the decompressed stream.
struct Decoded<'a> {
    out: ChunkOut<'a>,
    /// Index of the chunk's first slot; `out.n` events follow.
    offset: usize,
    decompressed: bool,
}

/// Decode `jobs` in parallel, each into its own range of new slots at the
/// end of `slots` (see [`decode_job`]).
fn decode_jobs<'a>(
    ctx: &Ctx<'a>,
    jobs: &[Job<'a>],
    n_names: usize,
    slots: &mut Vec<MaybeUninit<Event>>,
    release: &(dyn Fn(Range<usize>) + Sync),
) -> Vec<Decoded<'a>> {
    let total: usize = jobs.iter().map(|j| j.samples).sum();
    let len = slots.len();
    slots.reserve(total);
    // SAFETY: `reserve` made room for `total` more elements, and
    // MaybeUninit<Event> needs no initialisation.
    unsafe { slots.set_len(len + total) };
    let mut offsets = Vec::with_capacity(jobs.len());
    let mut at = len;
    for j in jobs {
        offsets.push(at);
        at += j.samples;
    }
    split_slots(&mut slots[len..], jobs.iter().map(|j| j.samples))
        .into_par_iter()
        .zip(jobs.par_iter())
        .zip(offsets.into_par_iter())
        .map(|((slots, j), offset)| decode_job(ctx, j, n_names, slots, offset, release))
        .collect()
}

/// Decode one chunk into `slots` (one slot per SAMPLE record of the chunk;
/// it fills their start, in file order, and slots of samples that are
/// skipped or not kept are never written, so their pages are never
/// touched); `offset`: where `slots` starts in the slot vector. File
/// chunks copy their strings out and `release` their pages.
fn decode_job<'a>(
    ctx: &Ctx<'a>,
    j: &Job<'a>,
    n_names: usize,
    slots: &mut [MaybeUninit<Event>],
    offset: usize,
    release: &(dyn Fn(Range<usize>) + Sync),
) -> Decoded<'a> {
    let mut out = chunk::decode_chunk(ctx, j.stream, j.range.clone(), j.base, n_names, slots);
    if !j.decompressed {
        // Copy the few distinct strings out before the pages go:
        // reading them later would fault 64 KiB back in per string.
        for st in &mut out.local.strings {
            if let std::borrow::Cow::Borrowed(b) = st {
                *st = std::borrow::Cow::Owned(b.to_vec());
            }
        }
        let base = j.base as usize;
        release(base + j.range.start..base + j.range.end);
    }
    Decoded {
        out,
        offset,
        decompressed: j.decompressed,
    }
}

/// One chunk to decode.
struct Job<'a> {
    /// The record stream (file data section or decompressed records).
    stream: &'a [u8],
    /// Byte range of whole records in `stream`.
    range: Range<usize>,
    /// Number of SAMPLE records in the range (slots to reserve).
    samples: usize,
    /// File offset of `stream[0]` (0 for decompressed data).
    base: u64,
    /// Whether `stream` is decompressed data (for messages).
    decompressed: bool,
}

/// Result of the header walk over one record stream.
struct Walk<'a> {
    /// Chunk byte ranges and the number of SAMPLE records in each.
    chunks: Vec<(Range<usize>, usize)>,
    compressed: Vec<&'a [u8]>,
    /// (byte offset, message, bytes skipped).
    damage: Option<(u64, String, u64)>,
}

/// Walk record headers: validate sizes, cut chunks, collect compressed payloads.
/// `what` is "" for the file or a description of a decompressed stream.
fn walk<'a>(
    stream: &'a [u8],
    base: u64,
    what: &str,
    filter: Option<&SampleFilter<'_>>,
) -> Walk<'a> {
    let mut k = Walker::new(stream, base, what, filter);
    k.advance(stream.len());
    k.w
}

/// A header walk that can stop at a byte position and resume, so that the
/// chunks walked so far are decoded while the walk goes on.
struct Walker<'a, 'w> {
    stream: &'a [u8],
    base: u64,
    what: &'w str,
    /// Count only the samples this lets through (None: all).
    filter: Option<&'w SampleFilter<'w>>,
    pos: usize,
    w: Walk<'a>,
}

/// Which SAMPLE records need a slot in a filtered load: those of kept
/// attrs (and those whose attr is unknown, which the decoder reports).
struct SampleFilter<'c> {
    id_pos: Option<usize>,
    ids: &'c DenseMap,
    /// Per attr: its events are kept.
    attr_keep: Vec<bool>,
}

impl SampleFilter<'_> {
    #[inline]
    fn counts(&self, body: &[u8]) -> bool {
        let attr = match self.id_pos {
            None => Some(0),
            Some(p) => u64_at(body, p * 8).and_then(|id| self.ids.get(id)),
        };
        attr.and_then(|a| self.attr_keep.get(a as usize).copied())
            .unwrap_or(true)
    }
}

impl<'a, 'w> Walker<'a, 'w> {
    fn new(
        stream: &'a [u8],
        base: u64,
        what: &'w str,
        filter: Option<&'w SampleFilter<'w>>,
    ) -> Self {
        Walker {
            stream,
            base,
            what,
            filter,
            pos: 0,
            w: Walk {
                chunks: Vec::new(),
                compressed: Vec::new(),
                damage: None,
            },
        }
    }

    /// Whether the whole stream was walked (or damage stopped the walk).
    fn done(&self) -> bool {
        self.pos >= self.stream.len() || self.w.damage.is_some()
    }

    /// Walk the records that start before `until`; the records walked
    /// become chunks (the last one may be short).
    fn advance(&mut self, until: usize) {
        let (stream, base, what) = (self.stream, self.base, self.what);
        let w = &mut self.w;
        let mut pos = self.pos;
        let mut chunk_start = pos;
        let mut samples = 0usize;
        let until = until.min(stream.len());
        while pos < until && w.damage.is_none() {
            // Each header's address depends on the size in the previous
            // one: ask for the memory a few records ahead, so that the
            // walk does not wait for every cache line in turn.
            if let Some(ahead) = stream.get(pos + PREFETCH_AHEAD) {
                schedscope_trace::mem::prefetch(ahead);
            }
            let off = base + pos as u64;
            let (Some(ty), Some(size)) = (u32_at(stream, pos), u16_at(stream, pos + 6)) else {
                w.damage = Some((
                    off,
                    format!(
                        "record header at byte offset {off}{what} is cut off by the end of the data ({} bytes left, 8 needed); skipped",
                        stream.len() - pos
                    ),
                    (stream.len() - pos) as u64,
                ));
                break;
            };
            let size = size as usize;
            if size < 8 || pos + size > stream.len() {
                let why = if size < 8 {
                    format!("has size {size} (< 8)")
                } else {
                    format!(
                        "of size {size} runs past the end of the data (at byte offset {}{what})",
                        base + stream.len() as u64
                    )
                };
                w.damage = Some((
                    off,
                    format!(
                        "record at byte offset {off}{what} {why}: the remaining {} bytes were skipped",
                        stream.len() - pos
                    ),
                    (stream.len() - pos) as u64,
                ));
                break;
            }
            if ty == RecordType::SAMPLE.0 {
                if self
                    .filter
                    .is_none_or(|f| f.counts(&stream[pos + 8..pos + size]))
                {
                    samples += 1;
                }
            } else if ty == RecordType::COMPRESSED.0 {
                w.compressed.push(&stream[pos + 8..pos + size]);
            } else if ty == RecordType::COMPRESSED2.0 {
                let n = u64_at(stream, pos + 8).unwrap_or(0);
                let end = (pos as u64 + 16).saturating_add(n);
                if end <= (pos + size) as u64 {
                    w.compressed.push(&stream[pos + 16..end as usize]);
                }
            }
            pos += size;
            if pos - chunk_start >= CHUNK_BYTES {
                w.chunks.push((chunk_start..pos, samples));
                chunk_start = pos;
                samples = 0;
            }
        }
        // (on damage, pos is the damaged record: the chunk ends before it)
        if pos > chunk_start {
            w.chunks.push((chunk_start..pos.min(stream.len()), samples));
        }
        self.pos = pos;
    }
}

/// How far ahead of the header it reads the walk prefetches.
const PREFETCH_AHEAD: usize = 2048;

/// Decompress the concatenated COMPRESSED payloads (a sequence of zstd
/// frames). Returns the data and a problem message when the stream is
/// corrupt (the data decoded before the damage is kept).
fn decompress(payloads: &[&[u8]]) -> (Vec<u8>, Option<String>) {
    // perf compresses the whole session as ONE zstd frame that it flushes
    // (ZSTD_flushStream) after every record but never ends, so the frame has
    // no last block. Append an empty raw block marked "last" to end it;
    // flushed streams stop at a block boundary, so this is where it belongs.
    const END_BLOCK: [u8; 3] = [0x01, 0x00, 0x00];
    let total: usize = payloads.iter().map(|p| p.len()).sum();
    let mut input = Vec::with_capacity(total + END_BLOCK.len());
    for p in payloads {
        input.extend_from_slice(p);
    }
    input.extend_from_slice(&END_BLOCK);
    let total = input.len();
    // Real perf data compresses 3-20x; cap the output against zip bombs.
    let limit = (total as u64).saturating_mul(1000).saturating_add(1 << 20);
    let mut out = Vec::with_capacity(total.saturating_mul(6));
    let mut rest: &[u8] = &input;
    // (a properly ended frame leaves only our end block behind)
    while !rest.is_empty() && rest != END_BLOCK {
        let consumed_before = total - rest.len();
        let dec = ruzstd::decoding::StreamingDecoder::new(&mut rest);
        let mut dec = match dec {
            Ok(d) => d,
            Err(e) => {
                return (
                    out,
                    Some(format!(
                        "zstd data of PERF_RECORD_COMPRESSED is corrupt at compressed byte {consumed_before}: {e}"
                    )),
                )
            }
        };
        let room = limit.saturating_sub(out.len() as u64);
        if let Err(e) = (&mut dec).take(room).read_to_end(&mut out) {
            return (
                out,
                Some(format!(
                    "zstd data of PERF_RECORD_COMPRESSED is corrupt in the frame at compressed byte {consumed_before}: {e}"
                )),
            );
        }
        if out.len() as u64 >= limit {
            return (
                out,
                Some("decompressed PERF_RECORD_COMPRESSED data exceeds 1000x its compressed size; stopped".into()),
            );
        }
    }
    (out, None)
}

fn anomaly_warn(
    trace: &mut Trace,
    a: &Anomaly,
    sev: Severity,
    damage: &mut Option<(u64, String)>,
    msg: impl Fn(&Anomaly) -> String,
) {
    if a.count > 0 {
        let m = msg(a);
        if sev == Severity::Error {
            damage.get_or_insert((a.first_offset, m.clone()));
        }
        trace.warn(sev, m, a.count);
    }
}

/// Merge chunk outputs into `trace`: renumber ids, put the events of
/// `slots` in time order, build the task table.
fn merge(
    trace: &mut Trace,
    outs: Vec<Decoded<'_>>,
    slots: &[MaybeUninit<Event>],
    td: &tracing_data::TracingData,
    damage: &mut Option<(u64, String)>,
    timing: &Timing,
    spare: bool,
) {
    let mut counts = vec![0u64; trace.event_names.len()];
    let mut mask_ids: FxMap<Vec<u64>, u32> = FxMap::default();
    let mut stack_ids: FxMap<Vec<u64>, u32> = FxMap::default();
    let mut ops: Vec<(u64, TaskOp)> = Vec::new();
    let mut tallies = chunk::Tallies::default();
    let mut comm_by_tid: FxMap<i32, (u64, StrId)> = FxMap::default();
    let mut tgid_by_tid: FxMap<i32, i32> = FxMap::default();
    let (mut saw_fork, mut saw_exit) = (false, false);
    let (mut lost_records, mut lost_samples) = (0u64, 0u64);
    let mut an = [Anomaly::default(); 8];
    let mut an_dec = [Anomaly::default(); 8];
    // Global ids for the chunk-local strings, masks and stacks (sequential:
    // the tables are small); the events are renumbered as they are merged.
    let mut outs = outs;
    let maps: Vec<(Vec<StrId>, Vec<MaskId>, Vec<StackId>)> = outs
        .iter_mut()
        .map(|Decoded { out, .. }| {
            let smap: Vec<StrId> = out
                .local
                .strings
                .iter()
                .map(|s| match std::str::from_utf8(s) {
                    Ok(s) => trace.strings.intern(s),
                    Err(_) => trace.strings.intern(&String::from_utf8_lossy(s)),
                })
                .collect();
            let mmap: Vec<MaskId> = std::mem::take(&mut out.local.masks)
                .into_iter()
                .map(|m| {
                    let next = trace.cpumasks.len() as u32;
                    let id = *mask_ids.entry(m.clone()).or_insert(next);
                    if id == next {
                        trace.cpumasks.push(CpuMask { words: m });
                    }
                    MaskId(id)
                })
                .collect();
            let kmap: Vec<StackId> = std::mem::take(&mut out.local.stacks)
                .into_iter()
                .map(|st| {
                    let next = trace.stacks.len() as u32;
                    let id = *stack_ids.entry(st.clone()).or_insert(next);
                    if id == next {
                        trace.stacks.push(st);
                    }
                    StackId(id)
                })
                .collect();
            (smap, mmap, kmap)
        })
        .collect();
    // The sorted runs of every chunk, in file order.
    let mut runs: Vec<order::Run<'_>> = Vec::new();
    for (i, d) in outs.iter().enumerate() {
        let Some(evs) = slots.get(d.offset..d.offset + d.out.n) else {
            continue; // cannot happen: a chunk writes inside its slots
        };
        // SAFETY: decode_chunk initialised the first `out.n` slots of the
        // chunk's range (it counts its writes, in order from 0), and
        // MaybeUninit<Event> has Event's layout.
        let evs = unsafe { &*(evs as *const [MaybeUninit<Event>] as *const [Event]) };
        let mut start = 0;
        for &r in d.out.runs.iter().chain([&evs.len()]) {
            if r > start {
                runs.push(order::Run {
                    events: &evs[start..r],
                    chunk: i,
                });
            }
            start = r;
        }
    }
    // Without a spare to leave, nothing reads the slots after the merge:
    // their pages can go as it proceeds.
    let reclaim = (!spare)
        .then(|| slots.as_ptr() as usize..slots.as_ptr() as usize + std::mem::size_of_val(slots));
    trace.events = order::merge_runs(&runs, reclaim, &|c, ev| {
        let Some((smap, mmap, kmap)) = maps.get(c) else {
            return;
        };
        if ev.stack.is_some() {
            ev.stack = kmap
                .get(ev.stack.0 as usize)
                .copied()
                .unwrap_or(StackId::NONE);
        }
        remap_local(&mut ev.data, smap, mmap);
    });
    drop(runs);
    timing.mark("merge");
    for (
        Decoded {
            out,
            decompressed: dec,
            ..
        },
        (smap, mmap, _),
    ) in outs.into_iter().zip(maps)
    {
        // Tallies: chunk by chunk, in file order, ids renumbered as above.
        for mut t in out.tallies.list {
            remap_local(&mut t.data, &smap, &mmap);
            tallies.add(t.name, t.cpu, t.data, t.count);
        }
        let s = |id: StrId| smap.get(id.0 as usize).copied().unwrap_or_default();
        for (c, o) in counts.iter_mut().zip(&out.counts) {
            *c += o;
        }
        for (ts, op) in out.task_ops {
            let op = match op {
                TaskOp::Comm { pid, tid, comm } => TaskOp::Comm {
                    pid,
                    tid,
                    comm: s(comm),
                },
                o => o,
            };
            ops.push((ts, op));
        }
        for (tid, (ts, c)) in out.local.comm_by_tid {
            let e = comm_by_tid.entry(tid).or_insert((ts, s(c)));
            if e.0 <= ts {
                *e = (ts, s(c));
            }
        }
        tgid_by_tid.extend(out.local.tgid_by_tid);
        trace.mappings.extend(out.mappings);
        saw_fork |= out.saw_fork_records;
        saw_exit |= out.saw_exit_records;
        lost_records = lost_records.saturating_add(out.lost);
        lost_samples = lost_samples.saturating_add(out.lost_samples);
        let a = if dec { &mut an_dec } else { &mut an };
        for (dst, src) in a.iter_mut().zip([
            &out.unknown_id,
            &out.unknown_common_type,
            &out.no_raw,
            &out.short_sample,
            &out.short_payload,
            &out.unknown_record,
            &out.short_record,
        ]) {
            dst.merge(src);
        }
    }
    for (dec, a) in [(false, an), (true, an_dec)] {
        let w = if dec {
            " of the decompressed record stream"
        } else {
            ""
        };
        anomaly_warn(trace, &a[0], Severity::Error, damage, |a| {
            format!("{} samples carry a sample id that no attr owns (first: id {} at byte offset {}{w}); skipped", a.count, a.value, a.first_offset)
        });
        anomaly_warn(trace, &a[1], Severity::Error, damage, |a| {
            format!("{} tracepoint samples have a common_type with no format in the file's tracing data (first: type {} at byte offset {}{w}); skipped", a.count, a.value as i64, a.first_offset)
        });
        anomaly_warn(trace, &a[2], Severity::DataLoss, damage, |a| {
            format!(
                "{} tracepoint samples carry no RAW payload (first at byte offset {}{w}); skipped",
                a.count, a.first_offset
            )
        });
        anomaly_warn(trace, &a[3], Severity::Error, damage, |a| {
            format!("{} samples are shorter than their attr's sample_type demands or name a CPU >= 65536 (first at byte offset {}{w}); skipped", a.count, a.first_offset)
        });
        anomaly_warn(trace, &a[4], Severity::Error, damage, |a| {
            format!("{} tracepoint payloads are shorter than their format or name a CPU >= 65536 (first at byte offset {}{w}); skipped", a.count, a.first_offset)
        });
        anomaly_warn(trace, &a[5], Severity::Info, damage, |a| {
            format!(
                "{} records of unknown type (first: type {} at byte offset {}{w}); skipped",
                a.count, a.value, a.first_offset
            )
        });
        anomaly_warn(trace, &a[6], Severity::DataLoss, damage, |a| {
            format!("{} COMM/FORK/EXIT/LOST/MMAP records are too short (first at byte offset {}{w}); skipped", a.count, a.first_offset)
        });
    }
    trace.tallies = tallies.list;
    // perf 6.x writes the kernel's PERF_RECORD_LOST records and, at the end,
    // LOST_SAMPLES records synthesized from the counters' read_format LOST
    // totals: both count the same dropped samples, so summing them would
    // double the loss. The larger of the two is the loss.
    trace.lost = lost_records.max(lost_samples);
    if trace.lost > 0 {
        trace.warn(
            Severity::DataLoss,
            format!(
                "the kernel lost {} events (PERF_RECORD_LOST / LOST_SAMPLES): increase the buffer size (-m)",
                trace.lost
            ),
            trace.lost,
        );
    }
    for (i, c) in counts.iter().enumerate() {
        if *c > 0 {
            trace
                .events_by_name
                .insert(trace.event_names[i].clone(), *c);
        }
    }

    // Task table: records in time order, then what the events tell.
    ops.sort_by_key(|(ts, _)| *ts);
    let mut comm_rec_ts: FxMap<i32, u64> = FxMap::default(); // tid -> time of its last COMM record
    for (ts, op) in ops {
        match op {
            TaskOp::Comm { pid, tid, comm } => {
                let c = trace.strings.get(comm).to_string();
                trace.tasks.set_comm(Tid(tid), &c);
                trace.tasks.set_tgid(Tid(tid), Tid(pid));
                comm_rec_ts.insert(tid, ts);
            }
            TaskOp::Fork { pid, tid, ptid } => {
                let c = trace.tasks.comm(Tid(ptid)).to_string();
                trace.tasks.fork(Tid(tid), Some(Tid(pid)), &c, Some(Ts(ts)));
            }
            TaskOp::Exit { tid } => trace.tasks.exit(Tid(tid), Ts(ts)),
        }
    }
    if !saw_fork || !saw_exit {
        for i in 0..trace.events.len() {
            let ev = trace.events[i];
            match ev.data {
                EventData::Fork {
                    child_tid,
                    child_comm,
                    ..
                } if !saw_fork => {
                    let c = trace.strings.get(child_comm).to_string();
                    trace.tasks.fork(child_tid, None, &c, Some(ev.ts));
                }
                EventData::Exit { tid, .. } if !saw_exit => trace.tasks.exit(tid, ev.ts),
                _ => {}
            }
        }
    }
    for (pid, comm) in &td.cmdlines {
        if trace.tasks.comm(Tid(*pid)).is_empty() {
            trace.tasks.set_comm(Tid(*pid), comm);
        }
    }
    let mut tg: Vec<_> = tgid_by_tid.into_iter().collect();
    tg.sort_unstable();
    for (tid, pid) in tg {
        if trace.tasks.tgid(Tid(tid)).is_none() {
            trace.tasks.set_tgid(Tid(tid), Tid(pid));
        }
    }
    let mut cm: Vec<_> = comm_by_tid.into_iter().collect();
    cm.sort_unstable_by_key(|(tid, _)| *tid);
    for (tid, (_ts, c)) in cm {
        // COMM records win: perf synthesizes them from /proc/PID/comm, which
        // for kworkers carries the workqueue suffix the tracepoints lack.
        if !comm_rec_ts.contains_key(&tid) || trace.tasks.comm(Tid(tid)).is_empty() {
            let c = trace.strings.get(c).to_string();
            trace.tasks.set_comm(Tid(tid), &c);
        }
    }
}

/// Split `events` into consecutive mutable slices of the given sizes.
fn split_slots<T>(events: &mut [T], sizes: impl Iterator<Item = usize>) -> Vec<&mut [T]> {
    let mut out = Vec::new();
    let mut rest = events;
    for n in sizes {
        let k = n.min(rest.len());
        let (a, b) = std::mem::take(&mut rest).split_at_mut(k);
        out.push(a);
        rest = b;
    }
    out
}

/// Renumber the chunk-local ids of an event payload with a chunk's maps
/// (its local string and mask ids to the trace's).
fn remap_local(d: &mut EventData, smap: &[StrId], mmap: &[MaskId]) {
    remap(
        d,
        &|id: StrId| smap.get(id.0 as usize).copied().unwrap_or_default(),
        &|id: MaskId| mmap.get(id.0 as usize).copied().unwrap_or_default(),
    );
}

/// Renumber the chunk-local ids of an event payload.
fn remap(d: &mut EventData, s: &impl Fn(StrId) -> StrId, m: &impl Fn(MaskId) -> MaskId) {
    match d {
        EventData::Switch {
            prev_comm,
            next_comm,
            ..
        } => {
            *prev_comm = s(*prev_comm);
            *next_comm = s(*next_comm);
        }
        EventData::Wakeup { comm, .. }
        | EventData::Migrate { comm, .. }
        | EventData::Exit { comm, .. } => *comm = s(*comm),
        EventData::Fork { child_comm, .. } => *child_comm = s(*child_comm),
        EventData::Exec { filename, .. } => *filename = s(*filename),
        EventData::IpiSendCpumask { mask, .. } => *mask = m(*mask),
        EventData::IpiRaise { mask, reason } => {
            *mask = m(*mask);
            *reason = s(*reason);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedscope_trace::{Cpu, NameId};

    /// A placeholder event at `ts` whose tid is `tag` (the ordering tests
    /// here and in `order` tell events apart by it).
    pub(super) fn ev(ts: u64, tag: i32) -> Event {
        Event {
            ts: Ts(ts),
            cpu: Cpu(0),
            tid: Tid(tag),
            name: NameId(0),
            stack: StackId::NONE,
            data: EventData::Other(None),
        }
    }

    /// A filtered load reserves slots by attr; when payloads name kept
    /// events under an attr that is not kept, the exact pass overflows and
    /// the file is decoded again with a slot per sample, giving what the
    /// untouched file gives (names come from the payload's common_type).
    #[test]
    fn filtered_load_redecodes_when_payloads_disagree_with_their_attrs() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/perf/sched_small.data");
        let orig = std::fs::read(&path).unwrap();
        let hdr = FileHeader::parse("x", &orig).unwrap();
        let attrs = header::read_attrs("x", &orig, &hdr).unwrap();
        assert!(attrs
            .iter()
            .all(|a| a.attr.sample_type & abi::sample::IDENTIFIER != 0));
        let feats = header::read_features(&orig, &hdr);
        let (b, off) = feats.tracing_data.unwrap();
        let td = tracing_data::parse(b, off);
        let wakeup = td
            .formats
            .iter()
            .find(|f| f.full_name() == "sched:sched_wakeup")
            .unwrap();
        let id = attrs
            .iter()
            .find(|a| a.attr.config == u64::from(wakeup.id))
            .unwrap()
            .ids[0];
        // every sample claims the sched_wakeup attr
        let mut d = orig.clone();
        let (mut p, end) = (
            hdr.data.offset as usize,
            (hdr.data.offset + hdr.data.size) as usize,
        );
        let mut n = 0;
        while p < end {
            let size = u16_at(&d, p + 6).unwrap() as usize;
            if u32_at(&d, p) == Some(RecordType::SAMPLE.0) {
                d[p + 8..p + 16].copy_from_slice(&id.to_le_bytes());
                n += 1;
            }
            p += size;
        }
        assert!(n > 100);
        let keep = crate::LoadOptions {
            keep: Some(vec!["sched:sched_switch".into()]),
            ..Default::default()
        };
        assert!(
            decode_pass("x", &d, &keep, &|_| {}, true)
                .unwrap()
                .is_none(),
            "the exact pass runs out of slots"
        );
        let got = decode_with("x", &d, &keep, &|_| {}).unwrap();
        let want = decode_with("x", &orig, &keep, &|_| {}).unwrap();
        assert!(want.count("sched:sched_switch") > 0);
        assert!(!want.events.is_empty());
        assert_eq!(got.events, want.events);
        assert_eq!(got.events_by_name, want.events_by_name);
        assert_eq!(got.dropped, want.dropped);
    }

    #[test]
    fn split_slots_covers_the_vector() {
        let mut v: Vec<Event> = (0..10).map(|i| ev(i, 0)).collect();
        let parts = split_slots(&mut v, [3usize, 0, 5, 4].into_iter());
        let lens: Vec<usize> = parts.iter().map(|p| p.len()).collect();
        assert_eq!(lens, vec![3, 0, 5, 2]);
    }
}
