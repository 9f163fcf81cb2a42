//! perf.data (PERFILE2) decoder.
//!
//! Data flow, one module per step: `container` reads the header part of
//! the three shapes perf writes (a finished file: the 104-byte header, the
//! attr table and the feature sections ([`header`], [`tracing_data`] with
//! the embedded tracefs formats and kallsyms, the schedscope cgroup
//! section); an unfinished file, whose header perf never wrote back; pipe
//! mode's header records) and says where the record stream lies. A cheap
//! sequential `walk` over the record headers validates sizes, finds the
//! damage point if any, collects `PERF_RECORD_COMPRESSED` payloads (one
//! zstd stream across all of them, as perf writes it) and cuts the stream
//! into chunks at record boundaries; each chunk is handed to the decoders
//! as soon as it is cut, so walking and decoding overlap. The chunks (of
//! the file and of the decompressed stream) are decoded in parallel with
//! rayon (`chunk`, reading records with `layout` and tracepoint
//! payloads with `tracepoint`) straight into one event vector, with
//! chunk-local string/mask/stack ids (`local`); implausible samples (a
//! CPU the file does not have, a time far from its neighbours') are
//! skipped and counted. A file chunk's pages are released (through the
//! `release` callback of [`decode_with`]) once decoded, so a mapped file is
//! never resident whole. Events the caller did not ask to keep
//! ([`crate::LoadOptions`]) are counted, not decoded. The chunks leave
//! their events in file order and note where time goes back (perf flushes
//! one CPU's ring buffer after the other, so the stream is made of long
//! sorted runs); `assemble` gives the chunk-local ids their global ids,
//! and `order` merges the runs into the final time-sorted vector in one
//! parallel pass, renumbering the ids on the way; then the chunks' counts,
//! tallies and anomalies are added up and the task table is built from
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
mod assemble;
mod bytes;
pub(crate) mod chunk;
mod container;
mod hash;
pub mod header;
mod layout;
pub(crate) mod local;
mod mmap;
mod names;
mod order;
pub mod stream;
mod task_cgroups;
pub(crate) mod tracepoint;
pub mod tracing_data;
mod walk;

use crate::ParseError;
use abi::attr_type;
pub(crate) use assemble::remap_local;
use assemble::{merge, MergeHow};
use chunk::{AttrCtx, ChunkOut, Ctx};
use hash::{DenseMap, FxMap};
use layout::Layout;
use rayon::prelude::*;
use schedscope_trace::{Event, Severity, Trace, TraceFormat, Ts};
use std::mem::MaybeUninit;
use std::ops::Range;
use tracepoint::TpDecoder;
use walk::{decompress, SampleFilter, Walker};

/// How far the header walk goes in one step before it hands the chunks it
/// cut to the decoders (and checks how far ahead of them it is).
const WINDOW_BYTES: usize = if cfg!(test) { 256 << 10 } else { 8 << 20 };

/// How many chunks the walk may cut before the decoders have finished
/// them: beyond this it decodes one itself.
const MAX_CHUNKS_AHEAD: usize = 12;

/// Target size of one parallel decoding chunk.
/// (Small in unit tests, so that the small fixtures span several chunks.)
const CHUNK_BYTES: usize = if cfg!(test) { 64 << 10 } else { 2 << 20 };

/// Decode a perf.data file held in memory; `name` is used in messages.
pub fn decode(name: &str, data: &[u8]) -> Result<Trace, ParseError> {
    decode_with(name, data, &crate::LoadOptions::default(), &|_| {})
}

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
    let Opened {
        container:
            container::Container {
                mut attrs,
                feats,
                data_start,
                data_end,
                attrs_at,
                shape,
            },
        mut trace,
        td,
    } = open(name, data)?;

    let ctx = build_ctx(&mut trace, &mut attrs, &feats, &td, opts, attrs_at);
    let n_names = trace.event_names.len();
    timing.mark("setup");
    let filter = exact.then(|| sample_filter(&ctx));

    let (ds_start, stream, mut damage) = data_section(&mut trace, data, data_start, data_end);
    let (mut slots, mut outs, walk) =
        walk_and_decode(&ctx, stream, ds_start, filter.as_ref(), n_names, release);
    report_walk_damage(&mut trace, shape, &walk, ds_start, data.len(), &mut damage);

    // One zstd stream across all COMPRESSED records.
    let decompressed = decompress_all(&mut trace, &feats, &walk.compressed, &mut damage);
    let dwalk = walk::walk(
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
        note_dropped(&mut trace, &outs);
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
        MergeHow {
            spare: opts.spare,
            cpu_count: feats.nr_cpus_avail.or(feats.nr_cpus_online),
        },
    );
    count_untyped(&mut trace);
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

    let events = std::mem::take(&mut trace.events);
    add_sections(&mut trace, td, &feats, &events);
    trace.events = events;
    // (what Trace::finish does: the merge left the events sorted and the
    // CPUs of the kept events are counted above)
    timing.mark("rest");
    Ok(Some(trace))
}

/// Count the events of the untyped event names (the analyses refuse
/// switches they cannot read: `Trace::untyped`).
fn count_untyped(trace: &mut Trace) {
    let counts: Vec<(String, u64)> = trace
        .untyped
        .keys()
        .map(|name| (name.clone(), trace.count(name)))
        .collect();
    trace.untyped = counts.into_iter().filter(|&(_, n)| n > 0).collect();
}

/// A new trace with the metadata of the feature sections (and their
/// problems as warnings).
/// A perf.data file's header part, read: its container, a trace holding
/// its metadata and the warnings so far, and its tracing data (the loader's
/// and the stream's common start).
struct Opened<'d> {
    container: container::Container<'d>,
    trace: Trace,
    td: tracing_data::TracingData,
}

/// Read the header part of the perf.data file `data` (`name` in messages).
fn open<'d>(name: &str, data: &'d [u8]) -> Result<Opened<'d>, ParseError> {
    let container = container::read(name, data)?;
    let mut trace = new_trace(name, &container.feats);
    let td = match container.feats.tracing_data {
        Some((b, off)) => tracing_data::parse(b, off),
        None => tracing_data::TracingData::default(),
    };
    for p in &td.problems {
        trace.warn(Severity::DataLoss, p.clone(), 1);
    }
    Ok(Opened {
        container,
        trace,
        td,
    })
}

fn new_trace(name: &str, feats: &header::Features<'_>) -> Trace {
    let mut trace = Trace::new(name, TraceFormat::PerfData);
    for p in &feats.problems {
        trace.warn(Severity::DataLoss, p.clone(), 1);
    }
    trace.meta.hostname = feats.hostname.clone();
    trace.meta.os_release = feats.os_release.clone();
    trace.meta.arch = feats.arch.clone();
    trace.meta.cmdline = feats.cmdline.clone();
    trace.meta.nr_cpus_online = feats.nr_cpus_online;
    trace.meta.wall_clock = feats.clock_data;
    trace.nr_cpus = feats.nr_cpus_online.unwrap_or(0).min(1 << 16);
    trace
}

/// The chunk decoders' shared context: the attrs named (by the file's
/// name records, else the tracepoint formats, else perf's names) and laid
/// out, the sample id positions, the tracepoint decoders, and which events
/// are kept or tallied.
fn build_ctx<'t>(
    trace: &mut Trace,
    attrs: &mut [header::AttrEntry],
    feats: &header::Features<'_>,
    td: &'t tracing_data::TracingData,
    opts: &crate::LoadOptions,
    attrs_at: u64,
) -> Ctx<'t> {
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
            // a typed decoder whose format lacks a field it needs: its
            // events count as untyped (counted after the merge)
            trace.untyped.insert(f.full_name(), 0);
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
            (None, true) => names::event_name(&a.attr),
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
                    attrs_at
                ),
                1,
            );
            (None, None)
        } else {
            (id_pos, is_pos)
        }
    };
    Ctx {
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
            Some(_) => trace.event_names.iter().map(|n| opts.keeps(n)).collect(),
        },
        tally: if opts.tally.is_empty() {
            Vec::new()
        } else {
            trace
                .event_names
                .iter()
                .map(|n| opts.tally.iter().any(|x| crate::name_matches(x, n)))
                .collect()
        },
        cpu_limit: cpu_limit(feats),
        raw_fields: opts.raw_fields,
    }
}

/// Which SAMPLE records an exact (filtered) pass reserves slots for: those
/// of the attrs whose events are kept and not tallied.
fn sample_filter<'c>(ctx: &'c Ctx<'_>) -> SampleFilter<'c> {
    SampleFilter {
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
    }
}

/// The trace's parts kept outside the record stream: kernel symbols from
/// the tracing data, the CPU topology, schedscope's cgroup sections;
/// `forks` holds the trace's process fork events in time order (threads
/// born during the recording inherit their parent's cgroup).
fn add_sections(
    trace: &mut Trace,
    td: tracing_data::TracingData,
    feats: &header::Features<'_>,
    forks: &[Event],
) {
    trace.kernel_symbols.syms = td.kallsyms;
    if let Some((b, off)) = feats.cpu_topology {
        use schedscope_perf_data::topology::decode_cpu_topology;
        match decode_cpu_topology(b, off, feats.nr_cpus_avail) {
            Ok(t) => trace.topology = Some(t),
            Err(e) => trace.warn(Severity::DataLoss, e.to_string(), 1),
        }
    }
    if let Some((b, off)) = feats.cgroup_samples {
        match schedscope_perf_data::sections::decode_cgroup_samples(b, off) {
            Ok(s) => trace.cgroup_samples = s,
            Err(e) => trace.warn(Severity::DataLoss, e.to_string(), 1),
        }
    }
    task_cgroups::load(trace, feats.task_cgroups, forks);
}

/// The record stream of `data` (`data_start..data_end`, cut at the end of
/// the data, which is warned about): its offset, its bytes, and the damage
/// found (a truncated file).
fn data_section<'d>(
    trace: &mut Trace,
    data: &'d [u8],
    data_start: u64,
    data_end: u64,
) -> (usize, &'d [u8], Option<(u64, String)>) {
    let ds_start = usize::try_from(data_start)
        .unwrap_or(usize::MAX)
        .min(data.len());
    let ds_end_decl = data_end;
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
    (ds_start, &data[ds_start..ds_end.max(ds_start)], damage)
}

/// Walk the record stream and decode its chunks in parallel as they are
/// cut, into one slot vector: the slots (one per SAMPLE record the filter
/// lets through), the decoded chunks in file order, and the walk (damage,
/// compressed payloads).
fn walk_and_decode<'a>(
    ctx: &Ctx<'a>,
    stream: &'a [u8],
    ds_start: usize,
    filter: Option<&SampleFilter<'_>>,
    n_names: usize,
    release: &(dyn Fn(Range<usize>) + Sync),
) -> (Vec<MaybeUninit<Event>>, Vec<Decoded<'a>>, walk::Walk<'a>) {
    // The walk over the record headers is sequential. Every chunk it cuts
    // is handed to the pool at once (a rayon scope), so the other cores
    // decode while it walks on, never waiting for one another at window
    // boundaries; once the walk is done, its thread decodes too. Each
    // chunk's pages are released once decoded.
    let mut walker = Walker::new(stream, ds_start as u64, "", filter);
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
    let decoded: std::sync::Mutex<Vec<(usize, Decoded<'a>)>> = Default::default();
    let finished = std::sync::atomic::AtomicUsize::new(0);
    let mut used = 0usize;
    {
        let mut rest: &mut [MaybeUninit<Event>] = &mut slots[..];
        let (decoded, finished) = (&decoded, &finished);
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
    let outs: Vec<Decoded<'a>> = outs.into_iter().map(|(_, d)| d).collect();
    (slots, outs, walker.w)
}

/// Warn about the damage the walk found; an unfinished recording gets
/// one line instead, saying how many bytes of records were recovered.
fn report_walk_damage(
    trace: &mut Trace,
    shape: container::Shape,
    walk: &walk::Walk<'_>,
    ds_start: usize,
    data_len: usize,
    damage: &mut Option<(u64, String)>,
) {
    if shape == container::Shape::Unfinished {
        // One line: the recording was cut, so a cut last record is expected.
        let end = walk.damage.as_ref().map_or(data_len as u64, |d| d.0);
        let recovered = end.saturating_sub(ds_start as u64);
        let rest = match &walk.damage {
            Some((off, _, skipped)) => format!(
                " up to the damaged or cut-off record at byte offset {off} ({skipped} bytes after it skipped)"
            ),
            None => " up to the end of the file".into(),
        };
        trace.warn(
            Severity::DataLoss,
            format!(
                "the recording was not finished (the header's data size is 0: perf was stopped before it wrote the header, so the file has no feature sections): recovered {recovered} bytes of records from byte offset {ds_start}{rest}"
            ),
            1,
        );
    } else if let Some((off, msg, skipped)) = &walk.damage {
        trace.warn(Severity::Error, msg.clone(), *skipped);
        damage.get_or_insert((*off, msg.clone()));
    }
}

/// The records of the PERF_RECORD_COMPRESSED payloads: one zstd stream
/// across all of them (problems warned about and noted as damage).
fn decompress_all(
    trace: &mut Trace,
    feats: &header::Features<'_>,
    compressed: &[&[u8]],
    damage: &mut Option<(u64, String)>,
) -> Vec<u8> {
    if compressed.is_empty() {
        Vec::new()
    } else {
        if feats.compressed.is_some_and(|c| c.type_ != 1) {
            trace.warn(
                Severity::Error,
                "HEADER_COMPRESSED names a compressor other than zstd; decompressing as zstd anyway",
                1,
            );
        }
        let (d, problem) = decompress(compressed);
        if let Some(p) = problem {
            trace.warn(Severity::Error, p.clone(), 1);
            damage.get_or_insert((0, p));
        }
        d
    }
}

/// For a filtered load: how many events the file had and their time span
/// (the events left out included), and the CPUs they name.
fn note_dropped(trace: &mut Trace, outs: &[Decoded<'_>]) {
    let mut d = schedscope_trace::trace::Dropped {
        total: 0,
        first: Ts(u64::MAX),
        last: Ts(0),
    };
    for Decoded { out: o, .. } in outs {
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

/// The CPU ids samples may name: below the CPU count the file records
/// (HEADER_NRCPUS: available, else online), else below the decoder's limit.
fn cpu_limit(feats: &header::Features<'_>) -> u32 {
    let limit = tracepoint::MAX_CPUS as u32;
    match feats.nr_cpus_avail.or(feats.nr_cpus_online) {
        Some(n) if n > 0 => n.min(limit),
        _ => limit,
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

#[cfg(test)]
mod tests {
    use super::*;
    use abi::RecordType;
    use bytes::{u16_at, u32_at};
    use header::FileHeader;
    use schedscope_trace::{Cpu, EventData, NameId, StackId, Tid};

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
