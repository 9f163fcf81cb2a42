//! Streaming decode of a perf.data file: the events [`super::decode_with`]
//! gives, in the same order and with the same ids, handed to an
//! [`EventSink`] in batches while only a bounded window of them is held.
//!
//! The walk and the chunk decoders are the loader's (the same chunk cuts,
//! so the same samples are judged implausible and the same string, mask
//! and stack ids are given out, chunk by chunk in file order). What
//! differs is the merge: instead of merging every chunk's sorted runs at
//! the end, the events wait in a pending window (file order) until perf's
//! `PERF_RECORD_FINISHED_ROUND` says they can go. perf writes one round per
//! pass over the per-CPU ring buffers, so an event written after round
//! marker `k` is never older than the newest event written before marker
//! `k - 1`: at marker `k` every pending event up to that time is final. It
//! is stable-sorted by time (ties keep file order) and delivered; that is
//! exactly the order of the loader's stable merge. The window holds about
//! two rounds.
//!
//! What cannot be streamed this way stops the stream with
//! [`StreamError::Unstreamable`] before the sink's results mean anything,
//! and the caller loads the file whole instead: zstd-compressed records
//! (their events follow all the file's in the loader's order), a file with
//! no round markers (nothing would ever be final before the end), and an
//! event older than events already delivered (a file that breaks perf's
//! round rule: the loader's order cannot be kept).
//!
//! Besides the window, the stream keeps what the loaded trace keeps apart
//! from its events, which grows with tasks, not events: task records and
//! comms, counts, tallies, loss records, memory mappings, the fork and
//! exit events (for the task table), raw fields of untyped events when
//! asked for, and the strings, masks and stacks the events name.

use super::assemble::{chunk_ids, conclude, fix_event, ChunkFacts, IdState};
use super::chunk::Ctx;
use super::walk::Walker;
use super::{
    add_sections, build_ctx, container, data_section, decode_job, open, report_walk_damage,
    tracing_data, Decoded, Job, Opened, WINDOW_BYTES,
};
use crate::{ParseError, StreamError};
use rayon::prelude::*;
use schedscope_trace::{Event, EventData, Trace, Ts};
use std::mem::MaybeUninit;
use std::ops::Range;

/// Receives a streamed trace: its metadata first, then every event in time
/// order, in batches.
pub trait EventSink: Send {
    /// Called once, before any event, with what the file's header part
    /// tells (path, format, host metadata, event names, the CPU count it
    /// records); tables built from the record stream (tasks, counts,
    /// losses) are empty until the stream's end returns the whole trace.
    fn start(&mut self, _meta: &Trace) {}

    /// The next events, in the order of the loaded trace's `events`.
    fn events(&mut self, events: &[Event]);

    /// Only for a watcher of [`crate::load_through_stream_watched`]: the
    /// stream was refused partway and the file is being decoded whole;
    /// what this sink was shown is not the trace.
    fn given_up(&mut self) {}
}

/// A sink that ignores what it is shown (a load nobody watches).
impl EventSink for () {
    fn events(&mut self, _events: &[Event]) {}
}

/// Pending events past this many with no round marker seen: the file has
/// none (perf writes one per pass over the buffers), so nothing could be
/// delivered before the end.
const NO_ROUND_LIMIT: usize = if cfg!(test) { 1 << 12 } else { 1 << 22 };

/// Stream the perf.data file held in `data` (`name` names it in messages)
/// into `sink`, decoding only the events `opts` keeps; returns the trace
/// with everything but its events (`events` is empty; the rest equals what
/// [`super::decode_with`] returns). `release` is as there.
pub fn stream_with(
    name: &str,
    data: &[u8],
    opts: &crate::LoadOptions,
    release: &(dyn Fn(Range<usize>) + Sync),
    sink: &mut dyn EventSink,
) -> Result<Trace, StreamError> {
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
    let (ds_start, stream, mut damage) = data_section(&mut trace, data, data_start, data_end);
    sink.start(&trace);

    let mut st = Window::new(&trace);
    let mut walker = Walker::new(stream, ds_start as u64, "", None);
    let pump = Pump {
        ctx: &ctx,
        stream,
        base: ds_start as u64,
        n_names: trace.event_names.len(),
        release,
    };
    pump.run(&mut walker, &mut st, &mut trace, sink)
        .map_err(|why| unstreamable(name, why))?;
    st.flush(Ts(u64::MAX), sink);
    report_walk_damage(
        &mut trace,
        shape,
        &walker.w,
        ds_start,
        data.len(),
        &mut damage,
    );
    st.conclude(&mut trace, opts, &td, &mut damage, &feats);
    if st.delivered == 0 {
        if let Some((offset, detail)) = damage {
            return Err(ParseError::Corrupt {
                path: name.into(),
                offset,
                detail: format!("no usable events: {detail}"),
            }
            .into());
        }
    }
    // (the forks the stream kept for the task table)
    add_sections(&mut trace, td, &feats, &st.fork_exit);
    Ok(trace)
}

fn unstreamable(name: &str, why: &str) -> StreamError {
    StreamError::Unstreamable {
        path: name.into(),
        why: why.into(),
    }
}

/// Walk the next window of the record stream; its chunks (byte range,
/// SAMPLE records), none when the walk is done.
fn cut_window(walker: &mut Walker<'_, '_>, next_chunk: &mut usize) -> Vec<(Range<usize>, usize)> {
    if walker.done() {
        return Vec::new();
    }
    walker.advance(walker.pos.saturating_add(WINDOW_BYTES));
    let cut = walker.w.chunks[*next_chunk..].to_vec();
    *next_chunk = walker.w.chunks.len();
    cut
}

/// Room for one chunk's events (one slot per SAMPLE record).
type Slots = Vec<MaybeUninit<Event>>;

/// What the chunk decoders need.
struct Pump<'c, 'a> {
    ctx: &'c Ctx<'a>,
    stream: &'a [u8],
    base: u64,
    n_names: usize,
    release: &'c (dyn Fn(Range<usize>) + Sync),
}

impl<'a> Pump<'_, 'a> {
    /// Walk, decode and take in the record stream as a pipeline of three
    /// stages over windows of [`WINDOW_BYTES`]: the walk cuts window
    /// `k + 2` while the chunks of window `k + 1` are decoded (in
    /// parallel) and those of window `k` are taken in, in file order.
    fn run(
        &self,
        walker: &mut Walker<'a, '_>,
        st: &mut Window,
        trace: &mut Trace,
        sink: &mut dyn EventSink,
    ) -> Result<(), &'static str> {
        let mut next_chunk = 0;
        let mut cut = cut_window(walker, &mut next_chunk);
        let mut ready: Vec<(Decoded<'a>, Slots)> = Vec::new();
        let mut pool: Vec<Slots> = Vec::new();
        while !(cut.is_empty() && ready.is_empty()) {
            if !walker.w.compressed.is_empty() {
                return Err("it holds zstd-compressed records (perf record -z)");
            }
            let jobs: Vec<_> = std::mem::take(&mut cut)
                .into_iter()
                .map(|(r, n)| (r, n, pool.pop().unwrap_or_default()))
                .collect();
            let take_in = std::mem::take(&mut ready);
            let ((next_cut, decoded), freed) = rayon::join(
                || rayon::join(|| cut_window(walker, &mut next_chunk), || self.decode(jobs)),
                || -> Result<Vec<Slots>, &'static str> {
                    let mut freed = Vec::with_capacity(take_in.len());
                    for (d, slots) in take_in {
                        st.chunk(trace, d, &slots, sink)?;
                        freed.push(slots);
                    }
                    Ok(freed)
                },
            );
            pool.extend(freed?);
            cut = next_cut;
            ready = decoded;
        }
        if !walker.w.compressed.is_empty() {
            return Err("it holds zstd-compressed records (perf record -z)");
        }
        Ok(())
    }

    /// Decode the chunks (byte range, SAMPLE records, room) in parallel.
    fn decode(&self, jobs: Vec<(Range<usize>, usize, Slots)>) -> Vec<(Decoded<'a>, Slots)> {
        jobs.into_par_iter()
            .map(|(range, samples, mut slots)| {
                slots.clear();
                slots.reserve(samples);
                // SAFETY: `reserve` made room for `samples` elements, and
                // MaybeUninit<Event> needs no initialisation.
                unsafe { slots.set_len(samples) };
                let job = Job {
                    stream: self.stream,
                    range,
                    samples,
                    base: self.base,
                    decompressed: false,
                };
                let d = decode_job(self.ctx, &job, self.n_names, &mut slots, 0, self.release);
                (d, slots)
            })
            .collect()
    }
}

/// The merge window and everything gathered besides the events.
struct Window {
    /// Events not delivered yet, in file order.
    pending: Vec<Event>,
    /// Newest time of the events seen so far.
    newest: Option<Ts>,
    /// `newest` at the previous round marker: the next marker delivers up
    /// to it.
    round_newest: Option<Ts>,
    saw_round: bool,
    /// Time of the last event delivered.
    delivered_ts: Ts,
    delivered: u64,
    ids: IdState,
    facts: ChunkFacts,
    /// Fork and exit events in time order (for the task table).
    fork_exit: Vec<Event>,
    /// What a filtered load notes (see `super::note_dropped`).
    total: u64,
    first: u64,
    last: u64,
    cpus: u32,
    kept_cpus: u32,
}

impl Window {
    fn new(trace: &Trace) -> Window {
        Window {
            pending: Vec::new(),
            newest: None,
            round_newest: None,
            saw_round: false,
            delivered_ts: Ts(0),
            delivered: 0,
            ids: IdState::default(),
            facts: ChunkFacts::new(trace),
            fork_exit: Vec::new(),
            total: 0,
            first: u64::MAX,
            last: 0,
            cpus: 0,
            kept_cpus: 0,
        }
    }

    /// Take in one decoded chunk (the chunks in file order): its ids, its
    /// events (delivering at its round markers) and its other facts.
    fn chunk(
        &mut self,
        trace: &mut Trace,
        d: Decoded<'_>,
        slots: &[MaybeUninit<Event>],
        sink: &mut dyn EventSink,
    ) -> Result<(), &'static str> {
        let mut out = d.out;
        let map = chunk_ids(trace, &mut out, &mut self.ids);
        let raw = std::mem::take(&mut out.local.raw);
        let raw_base = trace.raw_args.append(raw).ok();
        let n = out.n.min(slots.len());
        // SAFETY: decode_chunk initialised the first `out.n` slots (it
        // counts its writes, in order from 0), and MaybeUninit<Event> has
        // Event's layout.
        let evs = unsafe { &*(&slots[..n] as *const [MaybeUninit<Event>] as *const [Event]) };
        let mut rounds = out.rounds.iter().copied().peekable();
        for (i, ev) in evs.iter().enumerate() {
            while rounds.next_if(|&r| r <= i).is_some() {
                self.round(sink);
            }
            let mut e = *ev;
            fix_event(&map, raw_base, &mut e);
            self.push(e)?;
        }
        for _ in rounds {
            self.round(sink);
        }
        self.total += out.n as u64 + out.dropped;
        self.first = self.first.min(out.first_ts);
        self.last = self.last.max(out.last_ts);
        self.cpus = self.cpus.max(out.cpus);
        self.kept_cpus = self.kept_cpus.max(out.kept_cpus);
        self.facts.add(trace, out, &map, d.decompressed);
        Ok(())
    }

    #[inline]
    fn push(&mut self, e: Event) -> Result<(), &'static str> {
        if e.ts < self.delivered_ts {
            return Err("an event is older than events of two rounds before it (the file breaks perf's round order)");
        }
        self.newest = Some(self.newest.map_or(e.ts, |t| t.max(e.ts)));
        self.pending.push(e);
        if !self.saw_round && self.pending.len() > NO_ROUND_LIMIT {
            return Err("it has no PERF_RECORD_FINISHED_ROUND records");
        }
        Ok(())
    }

    /// A round marker: deliver what the previous marker made final.
    fn round(&mut self, sink: &mut dyn EventSink) {
        self.saw_round = true;
        if let Some(h) = self.round_newest {
            self.flush(h, sink);
        }
        self.round_newest = self.newest;
    }

    /// Deliver the pending events up to `h` (inclusive) in time order,
    /// ties in file order.
    ///
    /// The whole window is sorted in place (stable: equal times keep file
    /// order, as the loader's merge) and its prefix up to `h` delivered;
    /// the rest stays sorted, and is all older in file order than what
    /// the next round appends, so the next sort keeps the same order (and
    /// finds it a sorted run to merge with, not work to redo).
    fn flush(&mut self, h: Ts, sink: &mut dyn EventSink) {
        self.pending.sort_by_key(|e| e.ts);
        let k = self.pending.partition_point(|e| e.ts <= h);
        if k == 0 {
            return;
        }
        let batch = &self.pending[..k];
        self.fork_exit.extend(
            batch
                .iter()
                .filter(|e| matches!(e.data, EventData::Fork { .. } | EventData::Exit { .. })),
        );
        sink.events(batch);
        self.delivered += k as u64;
        self.delivered_ts = batch[k - 1].ts;
        self.pending.drain(..k);
    }

    /// The trace's tables, once every chunk is in: as the loader ends.
    fn conclude(
        &mut self,
        trace: &mut Trace,
        opts: &crate::LoadOptions,
        td: &tracing_data::TracingData,
        damage: &mut Option<(u64, String)>,
        feats: &super::header::Features<'_>,
    ) {
        if opts.keep.is_some() || !opts.tally.is_empty() {
            trace.dropped = Some(schedscope_trace::trace::Dropped {
                total: self.total,
                first: Ts(if self.total == 0 { 0 } else { self.first }),
                last: Ts(self.last),
            });
            trace.nr_cpus = trace.nr_cpus.max(self.cpus);
        }
        trace.nr_cpus = trace.nr_cpus.max(self.kept_cpus);
        let facts = std::mem::replace(&mut self.facts, ChunkFacts::new(trace));
        let cpu_count = feats.nr_cpus_avail.or(feats.nr_cpus_online);
        conclude(trace, facts, td, damage, cpu_count, &self.fork_exit);
        super::count_untyped(trace);
    }
}
