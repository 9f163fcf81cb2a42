//! trace-cmd's binary `trace.dat`, versions 6 and 7.
//!
//! [`meta`] reads the file's metadata: in version 6 a fixed sequence
//! (header page, ftrace and event formats, kallsyms, printk formats, saved
//! cmdlines, CPU count, options, per-CPU data offsets); in version 7
//! sections found through a chain of options sections, each possibly
//! compressed ([`decompress`]: zstd, the one codec Debian's trace-cmd
//! writes), with one flyrecord section per trace instance (buffer).
//! [`ring`] tokenizes each CPU's ring-buffer pages into timestamped raw
//! events. Each raw event is decoded through the file's own format
//! descriptions with the same tracepoint decoders the perf.data reader uses
//! (`perf_data::tracepoint`), so a `trace.dat` and a perf.data of the same
//! events give the same [`Trace`].
//!
//! Damage before the ring-buffer data (the metadata every event needs) is a
//! [`ParseError`] naming the byte offset; damage in the ring-buffer data
//! skips the damaged pages, keeps the rest, and says so in a warning.

pub mod decompress;
pub mod fields;
pub mod meta;
pub mod ring;

use crate::perf_data::local::Local;
use crate::perf_data::remap_local;
use crate::perf_data::tracepoint::TpDecoder;
use crate::ParseError;
use schedscope_trace::{
    Cpu, CpuMask, Event, EventData, MaskId, Severity, StackId, StrId, TaskTableBuilder, Tid, Trace,
    TraceFormat, Ts,
};
use std::collections::HashMap;

pub use meta::MAGIC;

/// Clocks whose timestamps are nanoseconds (`tsc2nsec`: trace-cmd's
/// TSC converted to ns).
const NS_CLOCKS: &[&str] = &[
    "local", "global", "mono", "mono_raw", "boot", "tai", "perf", "tsc2nsec",
];
/// The kernel's trace clocks whose timestamps are not nanoseconds (a
/// counter, jiffies, the TSC, the PowerPC time base).
const NOT_NS_CLOCKS: &[&str] = &["counter", "uptime", "x86-tsc", "ppc-tb"];

/// Decode a trace.dat file held in memory; `name` is used in messages.
/// The fields of events without a typed decoder are kept in
/// [`Trace::raw_args`].
pub fn decode(name: &str, data: &[u8]) -> Result<Trace, ParseError> {
    decode_with(name, data, true)
}

/// [`decode`], keeping untyped events' fields only when `raw_fields`
/// (`LoadOptions::raw_fields`).
pub fn decode_with(name: &str, data: &[u8], raw_fields: bool) -> Result<Trace, ParseError> {
    let meta = meta::parse(name, data)?;
    let mut trace = Trace::new(name, TraceFormat::TraceDat);
    for p in &meta.problems {
        trace.warn(Severity::Error, p.clone(), 1);
    }
    for p in &meta.notes {
        trace.warn(Severity::DataLoss, p.clone(), 1);
    }
    let mut dec = RingDecoder::new(&meta, raw_fields);
    let (mut lost, mut lost_unknown) = (0u64, 0u64);
    for b in &meta.buffers {
        clock_warning(&mut trace, b);
        for cd in &b.cpus {
            let compressed = matches!(cd.pages, std::borrow::Cow::Owned(_));
            let st = ring::walk(
                &cd.pages,
                b.page_size as usize,
                meta.page,
                |ts, payload, off| {
                    let at = Where {
                        cpu: cd.cpu,
                        file_offset: cd.offset,
                        compressed,
                        at: off,
                    };
                    dec.event(&mut trace, Cpu(cd.cpu), ts, payload, at);
                },
            );
            lost = lost.saturating_add(st.lost);
            lost_unknown += st.lost_unknown;
            page_warnings(&mut trace, b, cd, compressed, &st);
        }
    }
    if meta.buffers.len() > 1 {
        let names: Vec<String> = meta
            .buffers
            .iter()
            .map(|b| format!("{:?}", b.name))
            .collect();
        trace.warn(
            Severity::Info,
            format!(
                "the file holds {} trace buffers (instances {}); their events are merged",
                names.len(),
                names.join(", ")
            ),
            1,
        );
    }
    dec.anomaly_warnings(&mut trace);
    trace.lost = lost;
    if lost > 0 || lost_unknown > 0 {
        trace.warn(
            Severity::DataLoss,
            format!(
                "the kernel lost {lost} events{} (ring buffer overrun): increase the buffer size (trace-cmd record -b)",
                if lost_unknown > 0 {
                    format!(" and an unknown number on {lost_unknown} pages")
                } else {
                    String::new()
                }
            ),
            lost.max(1),
        );
    }
    let RingDecoder {
        raw,
        local,
        events,
        counts,
        ..
    } = dec;
    trace.raw_args = raw;
    finish(&mut trace, events, local, &meta, counts);
    Ok(trace)
}

/// A warning for an instance recorded with a trace clock whose timestamps
/// are not (or may not be) nanoseconds.
fn clock_warning(trace: &mut Trace, b: &meta::Buffer<'_>) {
    match b.clock.as_deref() {
        Some(c) if NOT_NS_CLOCKS.contains(&c) => trace.warn(
            Severity::DataLoss,
            format!(
                "instance {:?} was recorded with the {c:?} trace clock: its timestamps are not nanoseconds",
                b.name
            ),
            1,
        ),
        Some(c) if !c.is_empty() && !NS_CLOCKS.contains(&c) => trace.warn(
            Severity::Info,
            format!(
                "instance {:?} was recorded with the {c:?} trace clock, which schedscope does not know: its timestamps are read as nanoseconds",
                b.name
            ),
            1,
        ),
        _ => {}
    }
}

/// Decodes the raw events of the ring buffers through the file's formats
/// (a decoder per event id, built when the id is first met) into events
/// with decoder-local string and mask ids.
struct RingDecoder<'m> {
    meta: &'m meta::Meta<'m>,
    /// Format index by event id.
    by_id: HashMap<u16, usize>,
    /// Decoder and format index by event id; `None` for an id without a
    /// usable format.
    decoders: HashMap<u16, Option<(TpDecoder, usize)>>,
    raw_fields: bool,
    raw: schedscope_trace::RawArgs,
    local: Local<'m>,
    events: Vec<Event>,
    /// Events per name id.
    counts: HashMap<u16, u64>,
    /// Events whose id has no format.
    unknown: Anomaly,
    /// Events shorter than their format.
    short: Anomaly,
}

impl<'m> RingDecoder<'m> {
    fn new(meta: &'m meta::Meta<'m>, raw_fields: bool) -> Self {
        let mut by_id: HashMap<u16, usize> = HashMap::new();
        for (i, f) in meta.formats.iter().enumerate() {
            if let Ok(id) = u16::try_from(f.id) {
                by_id.entry(id).or_insert(i);
            }
        }
        let mut local = Local::default();
        local.printk = Some(&meta.printk);
        RingDecoder {
            meta,
            by_id,
            decoders: HashMap::new(),
            raw_fields,
            raw: schedscope_trace::RawArgs::new(),
            local,
            events: Vec::new(),
            counts: HashMap::new(),
            unknown: Anomaly::default(),
            short: Anomaly::default(),
        }
    }

    /// One raw event of CPU `cpu` at ring time `ts`, found at `at`.
    #[inline(always)]
    fn event(&mut self, trace: &mut Trace, cpu: Cpu, ts: u64, payload: &'m [u8], at: Where) {
        let meta = self.meta;
        let Some(ct) = payload.get(..2).map(|b| u16::from_le_bytes([b[0], b[1]])) else {
            self.short.hit(at);
            return;
        };
        let by_id = &self.by_id;
        let dec = self.decoders.entry(ct).or_insert_with(|| {
            let i = *by_id.get(&ct)?;
            let f = meta.formats.get(i)?;
            if trace.event_names.len() >= u16::MAX as usize {
                return None; // (NameId is 16 bits)
            }
            let name = trace.intern_name(&f.full_name());
            let (d, problem) = TpDecoder::build(f, name);
            if let Some(p) = problem {
                trace.warn(Severity::Info, p, 1);
            }
            Some((d, i))
        });
        let Some((dec, fi)) = dec.as_ref() else {
            self.unknown.hit(at);
            self.unknown.value.get_or_insert(ct as u64);
            return;
        };
        let tid = dec
            .common_pid
            .and_then(|f| f.read_i64(payload))
            .unwrap_or(-1);
        let Some(mut data) = dec.decode(payload, ts, &mut self.local) else {
            self.short.hit(at);
            return;
        };
        if let (EventData::Other(_), Some(f), true) = (data, meta.formats.get(*fi), self.raw_fields)
        {
            let args = fields::as_text(f, payload);
            let pairs = args.iter().map(|(k, v)| (k.as_str(), v.as_str()));
            // a full store keeps the event without its fields
            data = EventData::Other(self.raw.push(pairs).ok());
        }
        *self.counts.entry(dec.name.0).or_default() += 1;
        let ts = (ts as i128 + meta.ts_offset as i128).clamp(0, u64::MAX as i128) as u64;
        self.events.push(Event {
            ts: Ts(ts),
            cpu,
            tid: Tid(tid as i32),
            name: dec.name,
            stack: StackId::NONE,
            data,
        });
    }

    /// Warnings for the events skipped: ids without a format, events
    /// shorter than their format.
    fn anomaly_warnings(&self, trace: &mut Trace) {
        let (unknown, short) = (&self.unknown, &self.short);
        if let Some(w) = unknown.first {
            trace.warn(
                Severity::Error,
                format!(
                    "{} events have an event id with no format in the file (first: id {} at {}); skipped",
                    unknown.count,
                    unknown.value.unwrap_or(0),
                    w.describe()
                ),
                unknown.count,
            );
        }
        if let Some(w) = short.first {
            trace.warn(
                Severity::Error,
                format!(
                    "{} events are shorter than their format or name a CPU >= 65536 (first at {}); skipped",
                    short.count,
                    w.describe()
                ),
                short.count,
            );
        }
    }
}

/// Where an event was: for messages.
#[derive(Clone, Copy, Debug)]
struct Where {
    cpu: u32,
    file_offset: u64,
    compressed: bool,
    at: u64,
}

impl Where {
    fn describe(self) -> String {
        if self.compressed {
            format!(
                "byte {} of CPU {}'s decompressed data (compressed at byte offset {})",
                self.at, self.cpu, self.file_offset
            )
        } else {
            format!("byte offset {}", self.file_offset.saturating_add(self.at))
        }
    }
}

/// A counted anomaly and where it first happened.
#[derive(Default)]
struct Anomaly {
    count: u64,
    first: Option<Where>,
    value: Option<u64>,
}

impl Anomaly {
    fn hit(&mut self, w: Where) {
        self.count += 1;
        self.first.get_or_insert(w);
    }
}

fn page_warnings(
    trace: &mut Trace,
    b: &meta::Buffer<'_>,
    cd: &meta::CpuData<'_>,
    compressed: bool,
    st: &ring::Stats,
) {
    let inst = if b.name.is_empty() {
        String::new()
    } else {
        format!(" of instance {:?}", b.name)
    };
    if let Some(first) = st.first_bad {
        let w = Where {
            cpu: cd.cpu,
            file_offset: cd.offset,
            compressed,
            at: first,
        };
        trace.warn(
            Severity::Error,
            format!(
                "{} ring-buffer pages of CPU {}{inst} are damaged (first at {}); their events are skipped",
                st.bad_pages,
                cd.cpu,
                w.describe()
            ),
            st.bad_pages,
        );
    }
    if st.backwards > 0 {
        trace.warn(
            Severity::Error,
            format!(
                "{} events of CPU {}{inst} go back in time against the events before them; skipped",
                st.backwards, cd.cpu
            ),
            st.backwards,
        );
    }
}

/// Renumber the decoder-local ids, sort, count and build the task table.
fn finish(
    trace: &mut Trace,
    mut events: Vec<Event>,
    local: Local<'_>,
    meta: &meta::Meta<'_>,
    counts: HashMap<u16, u64>,
) {
    let smap: Vec<StrId> = local
        .strings
        .iter()
        .map(|s| trace.strings.intern(&String::from_utf8_lossy(s)))
        .collect();
    let mmap: Vec<MaskId> = local
        .masks
        .iter()
        .map(|m| {
            trace.cpumasks.push(CpuMask { words: m.clone() });
            MaskId(trace.cpumasks.len() as u32 - 1)
        })
        .collect();
    for e in &mut events {
        remap_local(&mut e.data, &smap, &mmap);
    }
    trace.events = events;
    trace.nr_cpus = meta.cpu_count;
    trace.finish();
    for (id, n) in counts {
        let name = trace.event_name(schedscope_trace::NameId(id)).to_string();
        trace.events_by_name.insert(name, n);
    }
    trace.kernel_symbols.syms = meta.kallsyms.clone();
    trace.meta.nr_cpus_online = (meta.cpu_count > 0).then_some(meta.cpu_count);
    if let Some(u) = &meta.uname {
        // `sysname nodename release version machine`
        let parts: Vec<&str> = u.split_whitespace().collect();
        trace.meta.hostname = parts.get(1).map(|s| s.to_string());
        trace.meta.os_release = parts.get(2).map(|s| s.to_string());
        trace.meta.arch = parts
            .last()
            .filter(|_| parts.len() >= 5)
            .map(|s| s.to_string());
    }
    // tasks: forks and exits in time order, then comms from the events and
    // the saved cmdlines
    let mut b = TaskTableBuilder::from_table(std::mem::take(&mut trace.tasks));
    b.fork_exit_events(&trace.events, &trace.strings, true, true);
    let mut cm: Vec<(i32, (u64, StrId))> = local.comm_by_tid;
    cm.sort_unstable_by_key(|(tid, _)| *tid);
    for (tid, (_, c)) in cm {
        let c = smap.get(c.0 as usize).copied().unwrap_or_default();
        b.event_comm(Tid(tid), trace.strings.get(c));
    }
    for (pid, comm) in &meta.cmdlines {
        b.saved_cmdline(Tid(*pid), comm);
    }
    trace.tasks = b.finish();
}
