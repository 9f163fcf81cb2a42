//! Decoders that turn trace files into a [`schedscope_trace::Trace`].
//!
//! `load(path)` reads a file (or standard input for the path `-`), detects
//! its format from the content (never the file name), and hands the bytes
//! to one decoder:
//!
//! * [`perf_data`]: perf.data (PERFILE2) from `perf record` or `schedscope
//!   record`, plain or zstd-compressed, finished, unfinished (perf killed
//!   before it wrote the header) or in pipe mode (`perf record -o -`);
//!   tracepoint payloads are decoded through the tracefs format
//!   descriptions embedded in the file. Samples the file itself shows to be
//!   damaged (a CPU beyond its CPU count, a time far from its neighbours')
//!   are skipped and counted in a warning. The format's ABI constants and
//!   schedscope's own feature sections come from `schedscope-perf-data`,
//!   which also holds the writer.
//! * [`ftrace_text`]: text from `/sys/kernel/tracing/trace`, `trace-cmd
//!   report` and `perf script`.
//! * [`trace_dat`]: trace-cmd's binary trace.dat (versions 6 and 7, zstd
//!   or uncompressed), decoded through the format descriptions it embeds.
//! * [`tracefs_format`]: the nom parser for tracefs `format` files, shared by
//!   the perf.data decoder and the simulator.
//!
//! Every decoder returns events sorted by time, a task table and counted
//! warnings; damage in the middle of a file yields the events before it plus
//! a warning, and unusable input yields a [`ParseError`] naming the file and
//! what was wrong.

pub mod error;
pub mod ftrace_text;
pub mod perf_data;
pub mod trace_dat;
pub mod tracefs_format;

pub use error::{ParseError, StreamError};
pub use perf_data::stream::EventSink;

use schedscope_trace::{Trace, TraceFormat};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Detect the format of `data` from its content.
pub fn detect(data: &[u8]) -> Option<TraceFormat> {
    if data.starts_with(perf_data::abi::PERF_MAGIC2)
        || data.starts_with(perf_data::abi::PERF_MAGIC2_SWAPPED)
    {
        return Some(TraceFormat::PerfData);
    }
    if data.starts_with(trace_dat::MAGIC) {
        return Some(TraceFormat::TraceDat);
    }
    ftrace_text::detect(data)
}

/// What to decode.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Keep only the events with these `system:event` names in
    /// [`Trace::events`] (`None`: keep every event); an entry ending in `*`
    /// keeps every event whose name starts with the rest (`cpu-clock*`
    /// keeps `cpu-clock:u` and `cpu-clock/period=2000000/`). Events left out are
    /// still counted in `events_by_name`, and [`Trace::dropped`] records how
    /// many events the file had and their time span, so counts and the time
    /// span describe the whole file. Process fork/exit/exec events are always
    /// kept (the task table may need them). Only the perf.data decoder
    /// filters; text traces are decoded whole.
    pub keep: Option<Vec<String>>,
    /// Leave the perf.data decoder's file-order event memory, already
    /// faulted in, in [`Trace::spare`] for the analyses to reuse (the
    /// thread-state timeline does), instead of releasing it while the events
    /// are put in time order. Faster when a timeline is built; without one,
    /// it only raises the peak memory (by up to the size of the events).
    /// Only a whole decode has such memory: a load through the stream
    /// ([`load_through_stream`]) leaves none.
    pub spare: bool,
    /// Count the events with these names (spelled as in `keep`) by CPU
    /// and payload in [`Trace::tallies`] instead of keeping them: for
    /// events a caller only counts, this spares storing and sorting them.
    /// They are still counted in `events_by_name` and in
    /// [`Trace::dropped`]; an event named here is tallied even when
    /// `keep` names it too. Only the perf.data decoder tallies.
    pub tally: Vec<String>,
    /// Keep the fields of events that have no typed decoder in
    /// [`Trace::raw_args`] (`EventData::Other(Some(record))`), for exports
    /// that write them (Parquet `raw_event` / `raw_arg`). Off by default:
    /// `report` never reads them, and storing them costs time and memory.
    pub raw_fields: bool,
}

impl LoadOptions {
    /// Whether a load with these options keeps the event named `name` in
    /// [`Trace::events`] (the rule of [`LoadOptions::keep`],
    /// [`schedscope_trace::keep::keeps`]: every event without a `keep`
    /// list; else the names it lists, `*` prefixes, and process
    /// fork/exit/exec). Tallying is not considered.
    pub fn keeps(&self, name: &str) -> bool {
        schedscope_trace::keep::keeps(self.keep.as_deref(), name)
    }
}

/// Whether the `LoadOptions::keep`/`tally` entry `pat` names the event
/// `name` ([`schedscope_trace::keep::name_matches`]).
pub(crate) fn name_matches(pat: &str, name: &str) -> bool {
    schedscope_trace::keep::name_matches(pat, name)
}

/// How messages name standard input (the path `-`).
pub const STDIN_NAME: &str = "<stdin>";

/// Read and decode the trace file at `path`.
pub fn load(path: &Path) -> Result<Trace, ParseError> {
    load_with(path, &LoadOptions::default())
}

/// Read and decode the trace file at `path`, as `opts` says.
///
/// A perf.data file is mapped and its pages are dropped from memory as soon
/// as they are decoded, so that the peak memory is the decoded events, not
/// the file. From [`STREAM_LOAD_FROM`] bytes on it is read through the
/// stream ([`load_through_stream`]): the events arrive in time order, a
/// window of perf rounds at a time, and are stored once. Smaller files,
/// and files the stream refuses, are decoded whole: the events in file
/// order, then merged into time order (the first copy given back while
/// the second is filled, or left in [`Trace::spare`] when `opts.spare`
/// asks). The events are the same either way.
///
/// The path `-` reads standard input to its end (`perf record -o - ... |
/// schedscope report -`); messages name it `<stdin>`. (A file named `-`
/// is read as `./-`.)
pub fn load_with(path: &Path, opts: &LoadOptions) -> Result<Trace, ParseError> {
    load_with_progress(path, opts, &AtomicU64::new(0))
}

/// [`load_with`] that adds to `decoded`, as the decoding goes, the number
/// of bytes of the file decoded so far, for progress displays (out of the
/// file's size). Only a perf.data file read from disk counts: its data
/// section's chunks as they are decoded, from any thread (a rare second
/// pass counts them again; zstd-compressed records count nothing); other
/// formats and standard input count nothing.
pub fn load_with_progress(
    path: &Path,
    opts: &LoadOptions,
    decoded: &AtomicU64,
) -> Result<Trace, ParseError> {
    if path == Path::new("-") {
        let name = STDIN_NAME;
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut data)
            .map_err(|e| ParseError::io(name, e))?;
        return load_bytes_with(name, &data, opts);
    }
    load_file(path, opts, decoded, STREAM_LOAD_FROM, &mut ())
}

/// The file at `path` (not standard input), mapped, and its name for
/// messages; an empty file is an error.
fn map_file(path: &Path) -> Result<(String, memmap2::Mmap), ParseError> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| ParseError::io(&name, e))?;
    let len = file.metadata().map_err(|e| ParseError::io(&name, e))?.len();
    if len == 0 {
        return Err(ParseError::Empty { path: name });
    }
    // SAFETY: the file is mapped read-only; concurrent truncation by another
    // process could fault, which is the same contract perf itself accepts.
    // Decoders treat the bytes as untrusted input.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| ParseError::io(&name, e))?;
    Ok((name, map))
}

/// Load the file at `path` (not standard input): a perf.data file of
/// `stream_from` bytes or more through the stream (shown to `watch`,
/// which is told when the stream is refused), a smaller one, or one the
/// stream refuses, decoded whole; other formats by their decoders.
fn load_file(
    path: &Path,
    opts: &LoadOptions,
    decoded: &AtomicU64,
    stream_from: u64,
    watch: &mut dyn EventSink,
) -> Result<Trace, ParseError> {
    let (name, map) = map_file(path)?;
    if detect(&map) != Some(TraceFormat::PerfData) {
        return load_bytes_with(&name, &map, opts);
    }
    if map.len() as u64 >= stream_from {
        if let Some(trace) = load_streamed(&name, &map, opts, decoded, watch)? {
            return Ok(trace);
        }
        watch.given_up();
    }
    let release = |r: std::ops::Range<usize>| release_pages(&map, decoded, r);
    perf_data::decode_with(&name, &map, opts, &release)
}

/// perf.data files from this size on are loaded through the stream
/// ([`load_through_stream`]); smaller ones are decoded whole. The stream
/// holds the events once where the whole decode holds them twice at its
/// peak (in file order, then merged into time order), and is faster on
/// big files, where the merge costs more than the stream's sequential
/// sort; on small ones the whole decode, parallel from end to end, is
/// faster (on the hackbench recordings, docs/performance.md: 1.2x the
/// whole decode's time at 142 MB, 0.9x at 1.4 GB).
pub const STREAM_LOAD_FROM: u64 = 512 << 20;

/// [`load_with_progress`] through the stream whatever the file's size
/// (see [`STREAM_LOAD_FROM`]): the events [`stream_with`] delivers, stored
/// once, in time order. A file the stream refuses (zstd-compressed
/// records, no round markers, a file that breaks perf's round order) is
/// decoded whole, as [`load_with`] does. The trace is the same either way.
pub fn load_through_stream(
    path: &Path,
    opts: &LoadOptions,
    decoded: &AtomicU64,
) -> Result<Trace, ParseError> {
    load_through_stream_watched(path, opts, decoded, &mut ())
}

/// [`load_through_stream`] that also shows `watch` what the stream
/// delivers as it comes (its metadata, then every event in the trace's
/// order), for a caller that draws the trace while it loads. When the
/// stream is refused partway, `watch` is told
/// ([`EventSink::given_up`]) and the file is decoded whole, unwatched.
pub fn load_through_stream_watched(
    path: &Path,
    opts: &LoadOptions,
    decoded: &AtomicU64,
    watch: &mut dyn EventSink,
) -> Result<Trace, ParseError> {
    if path == Path::new("-") {
        return load_with_progress(path, opts, decoded);
    }
    load_file(path, opts, decoded, 0, watch)
}

/// Load the perf.data file mapped at `map` through the stream, shown to
/// `watch`; `None` when the stream refuses it (what it received is
/// dropped, and `decoded` is set back so that the file's bytes count
/// once).
fn load_streamed(
    name: &str,
    map: &memmap2::Mmap,
    opts: &LoadOptions,
    decoded: &AtomicU64,
    watch: &mut dyn EventSink,
) -> Result<Option<Trace>, ParseError> {
    let release = |r: std::ops::Range<usize>| release_pages(map, decoded, r);
    let before = decoded.load(Ordering::Relaxed);
    let mut sink = Collect::with_room_for(map.len(), watch);
    match perf_data::stream::stream_with(name, map, opts, &release, &mut sink) {
        Ok(mut trace) => {
            trace.events = sink.events;
            Ok(Some(trace))
        }
        Err(StreamError::Parse(e)) => Err(e),
        Err(StreamError::Unstreamable { .. }) => {
            decoded.store(before, Ordering::Relaxed);
            Ok(None)
        }
    }
}

/// The [`EventSink`] of a whole load: keeps every event, in the order
/// delivered, and shows them to a watcher.
struct Collect<'w> {
    events: Vec<schedscope_trace::Event>,
    watch: &'w mut dyn EventSink,
}

impl<'w> Collect<'w> {
    /// Room for the events of a file of `len` bytes: one per 48 bytes, more
    /// than a recording holds (a scheduler tracepoint sample with the
    /// fields perf and `schedscope record` ask for takes 80 bytes or more).
    /// Address space only: pages are backed as events fill them. Growing
    /// past it copies the vector (both copies held at once): a file of
    /// smaller samples, or room that cannot be reserved, costs that peak,
    /// never a wrong event.
    fn with_room_for(len: usize, watch: &'w mut dyn EventSink) -> Collect<'w> {
        Collect {
            events: schedscope_trace::mem::vec_with_huge_pages(len / 48),
            watch,
        }
    }
}

impl EventSink for Collect<'_> {
    fn start(&mut self, meta: &Trace) {
        self.watch.start(meta);
    }

    fn events(&mut self, events: &[schedscope_trace::Event]) {
        schedscope_trace::mem::reserve_with_huge_pages(&mut self.events, events.len());
        self.events.extend_from_slice(events);
        self.watch.events(events);
    }
}

/// Stream the perf.data file at `path` into `sink`: the events
/// [`load_with`] would return, in the same order, handed over in batches
/// while only a window of them is in memory (see
/// [`perf_data::stream`]); returns the trace without its events, the rest
/// as [`load_with`] gives it. Standard input, other formats and perf.data
/// files the stream cannot keep in bounded memory give
/// [`StreamError::Unstreamable`]: load those with [`load_with`] (and throw
/// away what the sink received). `decoded` counts the bytes read, as for
/// [`load_with_progress`].
pub fn stream_with(
    path: &Path,
    opts: &LoadOptions,
    decoded: &AtomicU64,
    sink: &mut dyn EventSink,
) -> Result<Trace, StreamError> {
    if path == Path::new("-") {
        return Err(StreamError::Unstreamable {
            path: STDIN_NAME.into(),
            why: "standard input is read whole".into(),
        });
    }
    let (name, map) = map_file(path)?;
    if detect(&map) != Some(TraceFormat::PerfData) {
        return Err(StreamError::Unstreamable {
            path: name,
            why: "only perf.data is streamed".into(),
        });
    }
    let release = |r: std::ops::Range<usize>| release_pages(&map, decoded, r);
    perf_data::stream::stream_with(&name, &map, opts, &release, sink)
}

/// Count `r` as decoded and drop its pages from the (private, read-only)
/// mapping `map`: a later read faults the same file content back in.
fn release_pages(map: &memmap2::Mmap, decoded: &AtomicU64, r: std::ops::Range<usize>) {
    decoded.fetch_add(r.len() as u64, Ordering::Relaxed);
    if r.end > r.start && r.end <= map.len() {
        // SAFETY: the mapping is private and read-only, never written:
        // MADV_DONTNEED drops its pages (memmap2 widens the range to
        // whole pages), and a later read faults the same file content
        // back in. Failure only costs memory.
        let _ = unsafe {
            map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, r.start, r.end - r.start)
        };
    }
}

/// Decode a trace held in memory; `name` is used in messages.
pub fn load_bytes(name: &str, data: &[u8]) -> Result<Trace, ParseError> {
    load_bytes_with(name, data, &LoadOptions::default())
}

/// [`load_bytes`] with options (see [`LoadOptions`]).
pub fn load_bytes_with(name: &str, data: &[u8], opts: &LoadOptions) -> Result<Trace, ParseError> {
    if data.is_empty() {
        return Err(ParseError::Empty {
            path: name.to_string(),
        });
    }
    match detect(data) {
        Some(TraceFormat::PerfData) => perf_data::decode_with(name, data, opts, &|_| {}),
        Some(TraceFormat::TraceDat) => trace_dat::decode_with(name, data, opts.raw_fields),
        Some(_) => ftrace_text::decode_with(name, data, opts.raw_fields),
        None => Err(unknown(name, data)),
    }
}

/// The error for data no decoder takes.
fn unknown(name: &str, data: &[u8]) -> ParseError {
    let detail = if data.starts_with(b"PERFFILE") || data.starts_with(b"PERFILE") {
        "a perf.data file of an unsupported version (only PERFILE2 is read)".to_string()
    } else if data.iter().take(4096).any(|&b| b == 0) {
        format!(
            "binary data that is not perf.data (starts with {:02x?}; expected magic \"PERFILE2\" at offset 0)",
            &data[..data.len().min(8)]
        )
    } else {
        return ftrace_text::not_trace_error(name, data);
    };
    ParseError::UnknownFormat {
        path: name.to_string(),
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedscope_trace::{Event, EventData};
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/perf")
            .join(name)
    }

    /// An event with its interned strings resolved, comparable across traces.
    fn norm(t: &Trace, e: &Event) -> String {
        let s = |id| t.strings.get(id).to_string();
        let strings = match e.data {
            EventData::Switch {
                prev_comm,
                next_comm,
                ..
            } => vec![s(prev_comm), s(next_comm)],
            EventData::Wakeup { comm, .. }
            | EventData::Migrate { comm, .. }
            | EventData::Exit { comm, .. } => vec![s(comm)],
            EventData::Fork { child_comm, .. } => vec![s(child_comm)],
            EventData::Exec { filename, .. } => vec![s(filename)],
            _ => vec![],
        };
        format!(
            "{} {} {} {} {:?} {strings:?}",
            e.ts.0,
            e.cpu.0,
            e.tid.0,
            t.event_name(e.name),
            e.data
        )
    }

    fn tasks(t: &Trace) -> Vec<String> {
        let mut v: Vec<String> = t
            .tasks
            .iter()
            .map(|k| format!("{:?} {:?} {}", k.tid, k.tgid, k.comm))
            .collect();
        v.sort();
        v
    }

    /// A filtered load keeps exactly the named events (plus fork/exit/exec)
    /// of the full decode, in the same order, while the counts, the number
    /// of events, the time span, the CPUs and the task table still describe
    /// the whole file. The small unit-test chunks make the fixtures span
    /// several chunks, so dropped samples leave gaps between chunks.
    #[test]
    fn filtered_load_keeps_the_named_events_and_whole_file_counts() {
        let keep = ["sched:sched_switch", "sched:sched_wakeup"];
        for f in ["sched_small.data", "sched_small_zstd.data"] {
            let path = fixture(f);
            let full = load(&path).unwrap();
            let opts = LoadOptions {
                keep: Some(keep.iter().map(|s| s.to_string()).collect()),
                ..Default::default()
            };
            let part = load_with(&path, &opts).unwrap();
            let want: Vec<String> = full
                .events
                .iter()
                .filter(|e| {
                    let n = full.event_name(e.name);
                    keep.contains(&n) || schedscope_trace::keep::ALWAYS_KEEP.contains(&n)
                })
                .map(|e| norm(&full, e))
                .collect();
            let got: Vec<String> = part.events.iter().map(|e| norm(&part, e)).collect();
            assert!(full.count("sched:sched_switch") > 0, "{f}");
            assert!(
                part.events.len() < full.events.len(),
                "{f}: nothing dropped"
            );
            assert_eq!(got, want, "{f}");
            assert_eq!(part.events_by_name, full.events_by_name, "{f}");
            assert_eq!(part.event_count(), full.events.len() as u64, "{f}");
            assert_eq!(part.event_count(), full.event_count(), "{f}");
            assert_eq!(
                (part.start(), part.end()),
                (full.start(), full.end()),
                "{f}"
            );
            assert_eq!(part.nr_cpus, full.nr_cpus, "{f}");
            assert_eq!(tasks(&part), tasks(&full), "{f}");
            assert_eq!(full.dropped, None, "{f}");
        }
    }

    /// `s` with every `StrId(N)` written `StrId`.
    fn no_str_ids(s: &str) -> String {
        let mut out = String::new();
        let mut rest = s;
        while let Some(i) = rest.find("StrId(") {
            out.push_str(&rest[..i + 6]);
            rest = rest[i + 6..].trim_start_matches(|c: char| c.is_ascii_digit());
        }
        out.push_str(rest);
        out
    }

    /// A tallying load leaves the tallied events out of `events` and
    /// counts them by (name, CPU, payload): the same multiset as the full
    /// decode's events, whose other events it keeps as they were; counts
    /// still describe the whole file.
    #[test]
    fn tallied_events_are_counted_by_cpu_and_payload() {
        let tallied = "tlb:tlb_flush";
        for f in ["sched_small.data", "sched_small_zstd.data"] {
            let path = fixture(f);
            let full = load(&path).unwrap();
            let mut want: BTreeMap<String, u64> = BTreeMap::new();
            for e in &full.events {
                if full.event_name(e.name) == tallied {
                    *want.entry(format!("{:?} {:?}", e.cpu, e.data)).or_default() += 1;
                }
            }
            assert!(want.len() > 1, "{f}: too few tlb_flush kinds to test");
            // tallied whether or not `keep` names it
            for keep in [
                None,
                Some(vec![tallied.to_string(), "sched:sched_switch".into()]),
            ] {
                let opts = LoadOptions {
                    keep: keep.clone(),
                    tally: vec![tallied.to_string()],
                    ..Default::default()
                };
                let part = load_with(&path, &opts).unwrap();
                let mut got: BTreeMap<String, u64> = BTreeMap::new();
                for t in &part.tallies {
                    assert_eq!(part.event_name(t.name), tallied, "{f}");
                    let k = format!("{:?} {:?}", t.cpu, t.data);
                    assert!(got.insert(k, t.count).is_none(), "{f}: one entry per key");
                }
                assert_eq!(got, want, "{f}");
                assert!(part
                    .events
                    .iter()
                    .all(|e| part.event_name(e.name) != tallied));
                let kept = |t: &Trace, e: &schedscope_trace::Event| {
                    let n = t.event_name(e.name);
                    n != tallied
                        && (keep.is_none()
                            || n == "sched:sched_switch"
                            || schedscope_trace::keep::ALWAYS_KEEP.contains(&n))
                };
                let want_events: Vec<String> = full
                    .events
                    .iter()
                    .filter(|e| kept(&full, e))
                    .map(|e| norm(&full, e))
                    .collect();
                let got_events: Vec<String> = part.events.iter().map(|e| norm(&part, e)).collect();
                // (string ids may be numbered differently: the strings are
                // compared, in `norm`'s tail)
                assert_eq!(
                    got_events.iter().map(|e| no_str_ids(e)).collect::<Vec<_>>(),
                    want_events
                        .iter()
                        .map(|e| no_str_ids(e))
                        .collect::<Vec<_>>(),
                    "{f}"
                );
                assert_eq!(part.events_by_name, full.events_by_name, "{f}");
                assert_eq!(part.event_count(), full.events.len() as u64, "{f}");
            }
        }
    }

    /// The progress counter of a perf.data load ends at the size of the
    /// file's data section (its header's `data.size`: every byte is in a
    /// decoded chunk); formats the hook does not cover count nothing.
    #[test]
    fn load_progress_counts_the_data_section() {
        let path = fixture("sched_small.data");
        let bytes = std::fs::read(&path).unwrap();
        let data_size = u64::from_le_bytes(bytes[48..56].try_into().unwrap());
        assert!(data_size > 0);
        let decoded = AtomicU64::new(0);
        let t = load_with_progress(&path, &LoadOptions::default(), &decoded).unwrap();
        assert!(!t.events.is_empty());
        assert_eq!(decoded.load(Ordering::Relaxed), data_size);
        let text =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/sim/bare-metal-s1.txt");
        let decoded = AtomicU64::new(0);
        load_with_progress(&text, &LoadOptions::default(), &decoded).unwrap();
        assert_eq!(decoded.load(Ordering::Relaxed), 0);
    }

    /// Loading a file through the mapping, whose pages are dropped as they
    /// are decoded (and faulted back in where strings are read again), gives
    /// the same trace as decoding a copy held in memory.
    #[test]
    fn mapped_load_with_released_pages_equals_in_memory_decode() {
        for f in [
            "sched_small.data",
            "sched_small_zstd.data",
            "callchain.data",
        ] {
            let path = fixture(f);
            let mapped = load(&path).unwrap();
            let bytes = std::fs::read(&path).unwrap();
            let mem = load_bytes(f, &bytes).unwrap();
            assert!(!mem.events.is_empty(), "{f}");
            assert_eq!(mapped.events, mem.events, "{f}");
            let strs = |t: &Trace| -> Vec<String> { t.events.iter().map(|e| norm(t, e)).collect() };
            assert_eq!(strs(&mapped), strs(&mem), "{f}");
            assert_eq!(tasks(&mapped), tasks(&mem), "{f}");
            assert_eq!(mapped.stacks, mem.stacks, "{f}");
        }
    }
}
