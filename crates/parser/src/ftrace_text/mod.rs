//! ftrace / trace-cmd report / perf script text decoder.
//!
//! Input is text in one of three shapes, told apart by [`detect`] from the
//! first lines (never the file name):
//!
//! * `/sys/kernel/tracing/trace` or `trace_pipe` output
//!   ([`TraceFormat::FtraceText`]): `  bash-8402  [001] d..2.  364.815366:
//!   sched_switch: prev_comm=bash ...`, with or without the `(TGID)` column
//!   of `options/record-tgid` and with any irq-flags column width;
//! * `trace-cmd report` output ([`TraceFormat::TraceCmdText`]): the same
//!   prefix, but sched_switch and sched_wakeup use trace-cmd's short form
//!   `comm:pid [prio] S ==> comm:pid [prio]`;
//! * default `perf script` output ([`TraceFormat::PerfScriptText`]):
//!   `  perf 8672 [000] 369.561690: sched:sched_waking: comm=...`.
//!
//! [`decode`] splits the text into chunks at line boundaries, parses the
//! chunks in parallel (rayon) into borrowed per-line records
//! (`prefix` + `body`), then folds them in file order into the [`Trace`]:
//! strings are interned, the task table is filled from line prefixes
//! (comm, tid, tgid column) and event fields, and anomalies are counted as
//! warnings (unparseable lines with the first line number, bodies in an
//! unknown form, cpumasks the producing tool could not print, lost events).

mod body;
mod kvm;
mod prefix;
mod shifted;

use crate::ParseError;
use body::{Payload, SymText};
use prefix::Style;
use rayon::prelude::*;
use schedscope_trace::{
    Cpu, CpuMask, Event, EventData, MaskId, NameId, PrevState, Severity, StackId, StateLayout, Sym,
    TaskTableBuilder, Tid, Trace, TraceFormat, Ts,
};
use std::collections::HashMap;

/// How much of the file [`detect`] looks at.
const DETECT_BYTES: usize = 256 * 1024;
/// How many lines [`detect`] looks at.
const DETECT_LINES: usize = 1000;
/// Parallel chunk size; smaller inputs are parsed on the calling thread.
const CHUNK_BYTES: usize = 2 * 1024 * 1024;

/// Recognise a text trace from its first lines (up to 1000 lines / 256 KiB).
///
/// Returns [`TraceFormat::FtraceText`] for tracefs `trace`/`trace_pipe`
/// output (including a header-only `# tracer:` file),
/// [`TraceFormat::TraceCmdText`] for `trace-cmd report` output (a `cpus=N`
/// header or trace-cmd's short sched_switch/sched_wakeup forms), and
/// [`TraceFormat::PerfScriptText`] for `perf script` output; `None` when no
/// line looks like an event line of any of them.
pub fn detect(data: &[u8]) -> Option<TraceFormat> {
    sniff(data).format
}

/// What [`sniff`] learns from the first lines.
struct Sniff {
    format: Option<TraceFormat>,
    /// perf script lines were seen, but only of hardware/software samples
    /// (`cycles:`, `cpu-clock:`), no tracepoint.
    perf_samples: Option<String>,
}

/// Whether a perf script event name is a tracepoint (`sched:sched_switch`)
/// rather than a hardware/software event with modifiers (`cycles:u`,
/// `cpu-clock:ppp`).
fn is_tracepoint_name(event: &str) -> bool {
    match event.split_once(':') {
        Some((sys, name)) => {
            !sys.is_empty()
                && !name.is_empty()
                && !name.bytes().all(|c| b"ukhHGIpPSDW".contains(&c))
        }
        None => false,
    }
}

fn sniff(data: &[u8]) -> Sniff {
    let head = &data[..data.len().min(DETECT_BYTES)];
    let text = String::from_utf8_lossy(head);
    let (mut ftrace_header, mut tracecmd_hint, mut dash_lines) = (false, false, 0u32);
    let mut perf_samples: Option<String> = None;
    for line in text.lines().take(DETECT_LINES) {
        let line = line.trim_end_matches('\r');
        if line.starts_with("# tracer:") {
            ftrace_header = true;
            continue;
        }
        if is_cpus_header(line).is_some() || line.starts_with("version = ") {
            tracecmd_hint = true;
            continue;
        }
        if let Some(p) = prefix::parse(line, Style::Dash) {
            dash_lines += 1;
            if is_short_form(p.event, p.body) {
                tracecmd_hint = true;
            }
            continue;
        }
        if dash_lines == 0 {
            if let Some(p) = prefix::parse(line, Style::Perf) {
                if is_tracepoint_name(p.event) {
                    return Sniff {
                        format: Some(TraceFormat::PerfScriptText),
                        perf_samples: None,
                    };
                }
                if perf_samples.is_none() && p.cpu.is_some() {
                    perf_samples = Some(p.event.to_string());
                }
            }
        }
    }
    let format = if dash_lines > 0 || ftrace_header || tracecmd_hint {
        if tracecmd_hint && !ftrace_header {
            Some(TraceFormat::TraceCmdText)
        } else {
            Some(TraceFormat::FtraceText)
        }
    } else {
        None
    };
    if format.is_none() && perf_samples.is_some() && has_later_tracepoint(data) {
        // Samples first (a profile), tracepoints after the lines looked at.
        return Sniff {
            format: Some(TraceFormat::PerfScriptText),
            perf_samples: None,
        };
    }
    Sniff {
        format,
        perf_samples: if format.is_none() { perf_samples } else { None },
    }
}

/// Whether a perf script line with a tracepoint event follows anywhere in
/// `data` (only asked when the first lines hold samples only).
fn has_later_tracepoint(data: &[u8]) -> bool {
    data.split(|&c| c == b'\n')
        .filter_map(|l| std::str::from_utf8(l).ok())
        .filter_map(|l| prefix::parse(l.trim_end_matches('\r'), Style::Perf))
        .any(|p| is_tracepoint_name(p.event))
}

/// The error for text that [`detect`] does not take for a trace: a perf
/// script dump of hardware/software samples only is named as such
/// ([`ParseError::Unsupported`]); anything else is of an unknown format.
pub fn not_trace_error(name: &str, data: &[u8]) -> ParseError {
    let detail = describe_not_trace(data);
    if sniff(data).perf_samples.is_some() {
        ParseError::Unsupported {
            path: name.to_string(),
            detail,
        }
    } else {
        ParseError::UnknownFormat {
            path: name.to_string(),
            detail,
        }
    }
}

/// Why text is not a trace, for the error message.
pub fn describe_not_trace(data: &[u8]) -> String {
    match sniff(data).perf_samples {
        Some(ev) => format!(
            "a perf script dump of hardware/software samples only (`{ev}` events), without scheduler events: record the scheduler with `schedscope record -- COMMAND` or `perf record -a -e sched:sched_switch -e sched:sched_waking -e sched:sched_wakeup -- COMMAND`, then give that perf.data (or its `perf script` output) to schedscope"
        ),
        None => "text that is not a trace: no ftrace, trace-cmd or perf script event line in the first 1000 lines".into(),
    }
}

/// A trace-cmd trace.dat next to the text file `path` (`trace.dat`, or the
/// text's name with `.dat` for its extension), which holds the states the
/// plugin text loses; checked by its magic bytes.
fn dat_beside(path: &str) -> Option<String> {
    let p = std::path::Path::new(path);
    if path == "-" || !p.is_file() {
        return None;
    }
    let mut candidates = vec![p.with_file_name("trace.dat"), p.with_extension("dat")];
    if let Some(stem) = p.file_stem() {
        candidates.push(p.with_file_name(format!("{}.trace.dat", stem.to_string_lossy())));
    }
    candidates.into_iter().find_map(|c| {
        let mut magic = [0u8; 10];
        let mut f = std::fs::File::open(&c).ok()?;
        std::io::Read::read_exact(&mut f, &mut magic).ok()?;
        (magic == *crate::trace_dat::MAGIC).then(|| c.display().to_string())
    })
}

/// `cpus=N` (trace-cmd report header).
fn is_cpus_header(line: &str) -> Option<u32> {
    line.strip_prefix("cpus=")?.trim().parse().ok()
}

/// trace-cmd's plugin forms of sched_switch / sched_wakeup bodies.
fn is_short_form(event: &str, body: &str) -> bool {
    match event {
        "sched_switch" => body.contains(" ==> ") && !body.starts_with("prev_comm="),
        "sched_wakeup" | "sched_wakeup_new" => body.contains(" CPU:") && !body.starts_with("comm="),
        _ => false,
    }
}

/// Decode a text trace held in memory; `name` is used in messages.
///
/// Unparseable lines are skipped and reported in one [`Severity::DataLoss`]
/// warning with the first offending line number; event bodies that do not
/// match their event's known form are kept as [`EventData::Other`] (so that
/// counts per event stay exact) and reported likewise. Lines must be UTF-8;
/// other lines are counted as unparseable.
pub fn decode(name: &str, data: &[u8]) -> Result<Trace, ParseError> {
    decode_with(name, data, false)
}

/// [`decode`]; `raw_fields`: keep the fields of untyped events in
/// [`Trace::raw_args`] (as printed, `key=value` split into pairs; a body
/// that is not `key=value` is kept whole under the name `body`).
pub fn decode_with(name: &str, data: &[u8], raw_fields: bool) -> Result<Trace, ParseError> {
    let format = detect(data).ok_or_else(|| not_trace_error(name, data))?;
    let Some(html) = systrace_html(data) else {
        return Ok(decode_chunked(name, data, format, CHUNK_BYTES, raw_fields));
    };
    let mut t = decode_chunked(name, &html.text, format, CHUNK_BYTES, raw_fields);
    if html.wrapper > 0 || html.json > 0 {
        let json = if html.json > 0 {
            format!(
                " and {} lines of JSON trace data in them (not ftrace text)",
                html.json
            )
        } else {
            String::new()
        };
        t.warn(
            Severity::Info,
            format!(
                "systrace HTML: skipped {} lines of the page around the trace data (outside its <script class=\"trace-data\"> blocks; not events){json}",
                html.wrapper
            ),
            html.wrapper + html.json,
        );
    }
    Ok(t)
}

/// A systrace HTML file with everything but its ftrace text blanked.
struct SystraceHtml {
    /// The file with the page's lines (and JSON trace data) emptied, so
    /// that line numbers stay those of the file.
    text: Vec<u8>,
    /// Non-blank lines of the page outside the trace-data blocks.
    wrapper: u64,
    /// Lines of JSON trace data inside the blocks.
    json: u64,
}

/// For a systrace HTML page (`<!DOCTYPE html` or `<html` first), keep
/// only the text of its `<script class="trace-data">` blocks; `None` for
/// other input.
fn systrace_html(data: &[u8]) -> Option<SystraceHtml> {
    let start = data.iter().position(|c| !c.is_ascii_whitespace())?;
    let head = &data[start..data.len().min(start + 16)];
    let lower = head.to_ascii_lowercase();
    if !lower.starts_with(b"<!doctype html") && !lower.starts_with(b"<html") {
        return None;
    }
    let mut out = SystraceHtml {
        text: Vec::with_capacity(data.len()),
        wrapper: 0,
        json: 0,
    };
    let mut inside = false;
    for line in data.split_inclusive(|&c| c == b'\n') {
        let t = line.trim_ascii();
        let keep = if inside {
            if t.starts_with(b"</script") {
                inside = false;
                false
            } else if t.starts_with(b"{") || t.starts_with(b"[") {
                inside = !t.ends_with(b"</script>");
                out.json += 1;
                false
            } else {
                true
            }
        } else {
            let opens = t.starts_with(b"<script") && t.windows(10).any(|w| w == b"trace-data");
            inside = opens;
            out.wrapper += u64::from(!t.is_empty() && !opens);
            false
        };
        if keep {
            out.text.extend_from_slice(line);
        } else if line.ends_with(b"\n") {
            out.text.push(b'\n');
        }
    }
    Some(out)
}

/// [`decode`] with an explicit chunk size (tests compare chunkings).
fn decode_chunked(
    name: &str,
    data: &[u8],
    format: TraceFormat,
    chunk_bytes: usize,
    raw_fields: bool,
) -> Trace {
    let style = match format {
        TraceFormat::PerfScriptText => Style::Perf,
        _ => Style::Dash,
    };
    let mut b = Builder::new(Trace::new(name, format));
    b.raw_fields = raw_fields;
    let chunks = split_chunks(data, chunk_bytes);
    if chunks.len() == 1 {
        b.merge(parse_chunk(chunks[0], style));
    } else {
        let group = (rayon::current_num_threads() * 2).max(2);
        for g in chunks.chunks(group) {
            let outs: Vec<ChunkOut<'_>> = g.par_iter().map(|c| parse_chunk(c, style)).collect();
            for out in outs {
                b.merge(out);
            }
        }
    }
    b.finish()
}

/// Split `data` into pieces of about `size` bytes that end at a newline.
fn split_chunks(data: &[u8], size: usize) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < data.len() {
        let target = start.saturating_add(size);
        let end = if target >= data.len() {
            data.len()
        } else {
            match data[target..].iter().position(|&c| c == b'\n') {
                Some(p) => target + p + 1,
                None => data.len(),
            }
        };
        out.push(&data[start..end]);
        start = end;
    }
    out
}

/// One event line, parsed but not interned.
struct LineEv<'a> {
    comm: &'a str,
    tid: i32,
    tgid: Option<i32>,
    cpu: Option<u32>,
    ts: u64,
    event: &'a str,
    /// The text after the event name (kept for untyped events' fields).
    body: &'a str,
    /// None: untyped event or a body that did not parse (see `bad_body`).
    payload: Option<Payload<'a>>,
    /// The body did not match the event's known form.
    bad_body: bool,
    /// Call-chain frames (perf script `-g`): range in [`ChunkOut::frames`].
    frames: std::ops::Range<u32>,
    /// 0-based line index within the chunk.
    line: u32,
}

/// First occurrence and count of one kind of anomaly within a chunk.
#[derive(Default)]
struct Tally<'a> {
    count: u64,
    first_line: u64,
    first_text: &'a str,
}

impl<'a> Tally<'a> {
    fn add(&mut self, line: u64, text: &'a str) {
        if self.count == 0 {
            self.first_line = line;
            self.first_text = text;
        }
        self.count += 1;
    }
}

/// What one chunk yields.
#[derive(Default)]
struct ChunkOut<'a> {
    events: Vec<LineEv<'a>>,
    lines: u64,
    unparsed: Tally<'a>,
    not_utf8: Tally<'a>,
    /// Events the ring buffer dropped (`[LOST N EVENTS]`, entries header).
    lost: u64,
    /// `CPU:N [LOST K EVENTS]` lines: (events of the chunk before it, N, K).
    loss_marks: Vec<(usize, u32, u64)>,
    /// CPU count from a header (`#P:N`, `cpus=N`).
    nr_cpus: u32,
    /// Call-chain addresses of all events of the chunk, innermost first.
    frames: Vec<u64>,
    /// Frames before the chunk's first event: they continue the previous
    /// chunk's last event.
    leading_frames: std::ops::Range<u32>,
    /// Kernel symbols learnt from frames: (start address, name).
    ksyms: Vec<(u64, &'a str)>,
}

/// Parse every line of a chunk.
fn parse_chunk(chunk: &[u8], style: Style) -> ChunkOut<'_> {
    let mut out = ChunkOut::default();
    for (i, raw) in chunk.split(|&c| c == b'\n').enumerate() {
        out.lines = i as u64 + 1;
        let Ok(line) = std::str::from_utf8(raw) else {
            out.not_utf8.add(i as u64, "");
            continue;
        };
        let line = line.trim_end_matches('\r');
        if let Some(p) = prefix::parse(line, style) {
            let (system, bare) = match p.event.split_once(':') {
                Some((s, b)) => (s, b),
                None => (body::system_of(p.event).unwrap_or(""), p.event),
            };
            let (payload, bad_body) = match body::kind_of(system, bare) {
                Some(kind) => match body::parse(kind, p.body) {
                    Ok(pl) => (Some(pl), false),
                    Err(_) => (None, true),
                },
                None => (None, false),
            };
            out.events.push(LineEv {
                comm: p.comm,
                tid: p.tid,
                tgid: p.tgid,
                cpu: p.cpu,
                ts: p.ts,
                event: p.event,
                body: p.body,
                payload,
                bad_body,
                frames: out.frames.len() as u32..out.frames.len() as u32,
                line: i as u32,
            });
            continue;
        }
        match classify_other(line) {
            Other::Ignore => {}
            Other::Frame { addr, sym } => {
                out.frames.push(addr);
                let end = out.frames.len() as u32;
                match out.events.last_mut() {
                    Some(e) => e.frames.end = end,
                    // Before the first event every frame is a leading one.
                    None => out.leading_frames = 0..end,
                }
                if let Some(k) = sym {
                    if out.ksyms.last() != Some(&k) {
                        out.ksyms.push(k);
                    }
                }
            }
            Other::Lost(n) => {
                out.lost = out.lost.saturating_add(n);
                if let Some(cpu) = lost_line_cpu(line) {
                    out.loss_marks.push((out.events.len(), cpu, n));
                }
            }
            Other::Cpus(n) => out.nr_cpus = out.nr_cpus.max(n),
            Other::Entries {
                in_buffer,
                written,
                cpus,
            } => {
                out.lost = out.lost.saturating_add(written.saturating_sub(in_buffer));
                out.nr_cpus = out.nr_cpus.max(cpus);
            }
            Other::Unparsed => out.unparsed.add(i as u64, line),
        }
    }
    // A chunk ending in '\n' yields one empty trailing piece: not a line.
    if chunk.last() == Some(&b'\n') {
        out.lines = out.lines.saturating_sub(1);
    }
    out
}

/// A line that is not an event line.
#[derive(Debug, PartialEq, Eq)]
enum Other<'a> {
    /// Blank, comment, header, or a tracefs `=> func` stack line.
    Ignore,
    /// A perf script call-chain line: the address and, for a kernel
    /// address printed as `sym+0xoff`, (symbol start, symbol name).
    Frame {
        addr: u64,
        sym: Option<(u64, &'a str)>,
    },
    /// `CPU:N [LOST M EVENTS]` (ftrace) or `CPU:N [M EVENTS DROPPED]`.
    Lost(u64),
    /// `cpus=N` (trace-cmd report header).
    Cpus(u32),
    /// `# entries-in-buffer/entries-written: A/B   #P:N`.
    Entries {
        in_buffer: u64,
        written: u64,
        cpus: u32,
    },
    /// Anything else.
    Unparsed,
}

/// The N of a `CPU:N [LOST K EVENTS]` line.
fn lost_line_cpu(line: &str) -> Option<u32> {
    let r = line.trim().strip_prefix("CPU")?;
    let r = r.strip_prefix(':').unwrap_or(r).trim_start();
    let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
    r[..end].parse().ok()
}

fn classify_other(line: &str) -> Other<'_> {
    let t = line.trim();
    if t.is_empty() {
        return Other::Ignore;
    }
    if let Some(r) = t.strip_prefix("# entries-in-buffer/entries-written:") {
        let mut it = r.split_whitespace();
        let ab = it.next().and_then(|s| s.split_once('/'));
        let cpus = it
            .find_map(|s| s.strip_prefix("#P:"))
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        if let Some((a, b)) = ab {
            if let (Ok(in_buffer), Ok(written)) = (a.parse(), b.parse()) {
                return Other::Entries {
                    in_buffer,
                    written,
                    cpus,
                };
            }
        }
        return Other::Ignore;
    }
    if t.starts_with('#') {
        return Other::Ignore;
    }
    if let Some(n) = is_cpus_header(t) {
        return Other::Cpus(n);
    }
    if t.starts_with("version = ") || t.starts_with("trace-cmd:") {
        return Other::Ignore;
    }
    if let Some(r) = t.strip_prefix("CPU") {
        // `CPU:1 [LOST 12 EVENTS]`, `CPU:1 [12 EVENTS DROPPED]`,
        // `CPU 0 is empty`, `CPU 1 data recorded at offset=0x...`.
        if let Some(open) = r.find('[') {
            let inner = r[open + 1..].trim_end_matches(']');
            let n = inner
                .strip_prefix("LOST ")
                .and_then(|s| s.strip_suffix(" EVENTS"))
                .or_else(|| inner.strip_suffix(" EVENTS DROPPED"));
            if let Some(n) = n.and_then(|s| s.trim().parse().ok()) {
                return Other::Lost(n);
            }
        }
        if r.ends_with(" is empty") || r.contains(" data recorded at offset") {
            return Other::Ignore;
        }
    }
    if line.starts_with([' ', '\t']) {
        // perf script call-chain line: `\t ffffffff8104f1b6 sym+0x1 ([kernel.kallsyms])`.
        let (tok, rest) = t.split_once(' ').unwrap_or((t, ""));
        if !tok.is_empty() && tok.len() <= 16 && tok.bytes().all(|c| c.is_ascii_hexdigit()) {
            let Ok(addr) = u64::from_str_radix(tok, 16) else {
                return Other::Unparsed;
            };
            return Other::Frame {
                addr,
                sym: kernel_sym(addr, rest),
            };
        }
        // tracefs `options/stacktrace` frames: ` => __schedule`.
        if t.starts_with("=> ") {
            return Other::Ignore;
        }
    }
    // tracefs stack-trace marker events.
    if t.ends_with("<stack trace>") || t.ends_with("<user stack trace>") {
        return Other::Ignore;
    }
    Other::Unparsed
}

/// The kernel symbol of a frame printed as `sym+0xoff (dso)`: its start.
fn kernel_sym(addr: u64, rest: &str) -> Option<(u64, &str)> {
    // Kernel text lives in the upper half of the x86-64/arm64 address space.
    if addr < 0xffff_0000_0000_0000 {
        return None;
    }
    let sym = rest.split(" (").next()?.trim();
    let (name, off) = match sym.rsplit_once("+0x") {
        Some((n, o)) => (n, u64::from_str_radix(o, 16).ok()?),
        None => (sym, 0),
    };
    if name.is_empty() || name.starts_with('[') || name.contains(' ') {
        return None;
    }
    Some((addr.checked_sub(off)?, name))
}

/// Split an untyped event's body into (name, value) pairs: `key=value`
/// tokens, a value running up to the next ` key=` (so values may hold
/// spaces); a body with no `key=` at its start is kept whole as `body`.
fn raw_pairs(body: &str) -> Vec<(&str, &str)> {
    let starts_key = |s: &str| -> Option<usize> {
        let eq = s.find('=')?;
        let k = &s[..eq];
        (!k.is_empty() && k.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')).then_some(eq)
    };
    let body = body.trim();
    if body.is_empty() {
        return Vec::new();
    }
    let Some(eq) = starts_key(body) else {
        return vec![("body", body)];
    };
    let mut out = Vec::new();
    let (mut key, mut rest) = (&body[..eq], &body[eq + 1..]);
    loop {
        // The next ` key=` ends this value.
        let mut next = None;
        let mut from = 0;
        while let Some(off) = rest[from..].find(' ') {
            let sp = from + off;
            let tail = rest[sp..].trim_start();
            if let Some(e) = starts_key(tail) {
                next = Some((sp, rest.len() - tail.len(), e));
                break;
            }
            from = sp + 1;
        }
        match next {
            Some((sp, tail_at, e)) => {
                out.push((key, rest[..sp].trim_end()));
                key = &rest[tail_at..tail_at + e];
                rest = &rest[tail_at + e + 1..];
            }
            None => {
                out.push((key, rest.trim_end()));
                return out;
            }
        }
    }
}

/// Cached facts about one printed event name.
struct NameInfo {
    id: NameId,
}

/// Folds chunk outputs, in file order, into the trace.
struct Builder {
    trace: Trace,
    names: HashMap<String, NameInfo>,
    counts: Vec<u64>,
    masks: HashMap<CpuMask, MaskId>,
    line_base: u64,
    unparsed: (u64, u64, String),
    not_utf8: (u64, u64),
    too_many_names: (u64, u64),
    /// Per event name: (count, first line).
    bad_body: HashMap<NameId, (u64, u64)>,
    mask_unprinted: (u64, u64),
    header_cpus: u32,
    /// The task table, from line prefixes and event fields.
    tasks: TaskTableBuilder,
    /// Deduplicated call chains.
    stack_ids: HashMap<Vec<u64>, StackId>,
    /// Kernel symbols learnt from perf script frames.
    ksyms: HashMap<u64, String>,
    /// Keep untyped events' fields in `trace.raw_args`.
    raw_fields: bool,
    /// Records that did not fit the raw-args store.
    raw_full: u64,
    /// Switches printed with a numeric prev_state: (event index, value, line).
    numeric_states: Vec<(usize, u64)>,
    /// Switch-outs with a state letter no kernel defines: (count, first line, text).
    unknown_states: (u64, u64, String),
    /// Event lines without a CPU column: (count, first line).
    no_cpu: (u64, u64),
    /// sched_switch lines in trace-cmd's plugin short form: (count, how
    /// many printed `R`, whether any printed a `+`).
    short_switches: (u64, u64, bool),
}

impl Builder {
    fn new(trace: Trace) -> Builder {
        Builder {
            trace,
            names: HashMap::new(),
            counts: Vec::new(),
            masks: HashMap::new(),
            line_base: 0,
            unparsed: (0, 0, String::new()),
            not_utf8: (0, 0),
            too_many_names: (0, 0),
            bad_body: HashMap::new(),
            mask_unprinted: (0, 0),
            header_cpus: 0,
            tasks: TaskTableBuilder::new(),
            stack_ids: HashMap::new(),
            ksyms: HashMap::new(),
            raw_fields: false,
            raw_full: 0,
            numeric_states: Vec::new(),
            unknown_states: (0, 0, String::new()),
            no_cpu: (0, 0),
            short_switches: (0, 0, false),
        }
    }

    /// The id of a printed event name (`sched_switch` -> `sched:sched_switch`).
    fn name_id(&mut self, printed: &str) -> Option<NameId> {
        if let Some(n) = self.names.get(printed) {
            return Some(n.id);
        }
        if self.trace.event_names.len() >= u16::MAX as usize {
            return None;
        }
        let full = if printed.contains(':') {
            printed.to_string()
        } else {
            match body::system_of(printed) {
                Some(sys) => format!("{sys}:{printed}"),
                None => printed.to_string(),
            }
        };
        let id = NameId(self.trace.event_names.len() as u16);
        self.trace.event_names.push(full);
        self.counts.push(0);
        self.names.insert(printed.to_string(), NameInfo { id });
        Some(id)
    }

    fn sym(&mut self, s: SymText<'_>) -> Sym {
        match s {
            SymText::Name(n) => Sym::from_name(self.trace.strings.intern(n)),
            SymText::Addr(a) => Sym::from_addr(a),
        }
    }

    fn mask(&mut self, m: CpuMask) -> MaskId {
        if let Some(&id) = self.masks.get(&m) {
            return id;
        }
        let id = MaskId(self.trace.cpumasks.len() as u32);
        self.trace.cpumasks.push(m.clone());
        self.masks.insert(m, id);
        id
    }

    /// The id of a call chain, stored once.
    fn stack_id(&mut self, frames: &[u64]) -> StackId {
        if frames.is_empty() {
            return StackId::NONE;
        }
        if let Some(&id) = self.stack_ids.get(frames) {
            return id;
        }
        let id = StackId(self.trace.stacks.len() as u32);
        self.trace.stacks.push(frames.to_vec());
        self.stack_ids.insert(frames.to_vec(), id);
        id
    }

    fn merge(&mut self, out: ChunkOut<'_>) {
        let base = self.line_base;
        for &(start, name) in &out.ksyms {
            self.ksyms.entry(start).or_insert_with(|| name.to_string());
        }
        // Frames that continue the previous chunk's last event.
        if out.leading_frames.start < out.leading_frames.end {
            let lead =
                &out.frames[out.leading_frames.start as usize..out.leading_frames.end as usize];
            if let Some(last) = self.trace.events.last() {
                let mut all = self
                    .trace
                    .stack(last.stack)
                    .map(<[u64]>::to_vec)
                    .unwrap_or_default();
                all.extend_from_slice(lead);
                let id = self.stack_id(&all);
                if let Some(last) = self.trace.events.last_mut() {
                    last.stack = id;
                }
            }
        }
        let abs = |l: u64| base + l + 1;
        if out.unparsed.count > 0 {
            if self.unparsed.0 == 0 {
                self.unparsed.1 = abs(out.unparsed.first_line);
                self.unparsed.2 = out.unparsed.first_text.chars().take(80).collect();
            }
            self.unparsed.0 += out.unparsed.count;
        }
        if out.not_utf8.count > 0 {
            if self.not_utf8.0 == 0 {
                self.not_utf8.1 = abs(out.not_utf8.first_line);
            }
            self.not_utf8.0 += out.not_utf8.count;
        }
        self.trace.lost = self.trace.lost.saturating_add(out.lost);
        self.header_cpus = self.header_cpus.max(out.nr_cpus);
        self.trace.events.reserve(out.events.len());
        let mut marks = out.loss_marks.iter().peekable();
        for (j, l) in out.events.into_iter().enumerate() {
            // A loss line is timed by the event line before it (the next
            // one when it opens the file).
            while let Some(&&(_, cpu, lost)) = marks.peek().filter(|m| m.0 <= j) {
                let ts = self.trace.events.last().map_or(l.ts, |e| e.ts.0);
                self.trace
                    .loss_marks
                    .push(schedscope_trace::LossMark { ts, cpu, lost });
                marks.next();
            }
            let Some(name) = self.name_id(l.event) else {
                if self.too_many_names.0 == 0 {
                    self.too_many_names.1 = abs(l.line as u64);
                }
                self.too_many_names.0 += 1;
                continue;
            };
            self.counts[name.0 as usize] += 1;
            if l.bad_body {
                let e = self.bad_body.entry(name).or_insert((0, abs(l.line as u64)));
                e.0 += 1;
            }
            self.tasks.line_task(Tid(l.tid), l.comm, l.tgid.map(Tid));
            let ts = Ts(l.ts);
            let line = abs(l.line as u64);
            let data = match l.payload {
                // (sched_stat_runtime's fields always: the timeline's
                // lost-event repair reads its pid and runtime)
                None if self.raw_fields
                    || self.trace.event_name(name) == "sched:sched_stat_runtime" =>
                {
                    match self.trace.raw_args.push(raw_pairs(l.body)) {
                        Ok(i) => EventData::Other(Some(i)),
                        Err(_) => {
                            self.raw_full += 1;
                            EventData::Other(None)
                        }
                    }
                }
                None => EventData::Other(None),
                Some(p) => {
                    if let Payload::Switch {
                        prev_state,
                        raw_state: None,
                        ..
                    } = p
                    {
                        if !l.body.starts_with("prev_comm=") {
                            let s = &mut self.short_switches;
                            s.0 += 1;
                            s.1 += u64::from(prev_state.bits == 0);
                            s.2 |= prev_state.preempted;
                        }
                    }
                    self.payload(p, ts, line)
                }
            };
            if l.bad_body {
                let full = self.trace.event_name(name).to_string();
                *self.trace.untyped.entry(full).or_insert(0) += 1;
            }
            let cpu = match l.cpu {
                Some(c) => c,
                None => {
                    if self.no_cpu.0 == 0 {
                        self.no_cpu.1 = line;
                    }
                    self.no_cpu.0 += 1;
                    0
                }
            };
            let stack = self.stack_id(&out.frames[l.frames.start as usize..l.frames.end as usize]);
            self.trace.events.push(Event {
                ts,
                cpu: Cpu(cpu),
                tid: Tid(l.tid),
                name,
                stack,
                data,
            });
        }
        for &(_, cpu, lost) in marks {
            if let Some(ts) = self.trace.events.last().map(|e| e.ts.0) {
                self.trace
                    .loss_marks
                    .push(schedscope_trace::LossMark { ts, cpu, lost });
            }
        }
        self.trace.loss_marks.sort_unstable();
        self.line_base += out.lines;
    }

    /// Intern a payload and update the task table from its fields.
    fn payload(&mut self, p: Payload<'_>, ts: Ts, line: u64) -> EventData {
        let s = |b: &mut Builder, x: &str| b.trace.strings.intern(x);
        match p {
            Payload::Switch {
                prev_comm,
                prev_tid,
                prev_prio,
                prev_state,
                raw_state,
                next_comm,
                next_tid,
                next_prio,
            } => {
                if let Some(v) = raw_state {
                    // Decoded once the whole file has shown which layout it uses.
                    self.numeric_states.push((self.trace.events.len(), v));
                } else if prev_state.is_unknown() {
                    if self.unknown_states.0 == 0 {
                        self.unknown_states.1 = line;
                        self.unknown_states.2 = prev_state.to_text();
                    }
                    self.unknown_states.0 += 1;
                }
                self.tasks.printed_comm(Tid(prev_tid), prev_comm);
                self.tasks.printed_comm(Tid(next_tid), next_comm);
                EventData::Switch {
                    prev_tid: Tid(prev_tid),
                    prev_prio,
                    prev_state,
                    prev_comm: s(self, prev_comm),
                    next_tid: Tid(next_tid),
                    next_prio,
                    next_comm: s(self, next_comm),
                }
            }
            Payload::Wakeup {
                kind,
                comm,
                tid,
                prio,
                target_cpu,
            } => {
                self.tasks.printed_comm(Tid(tid), comm);
                EventData::Wakeup {
                    kind,
                    tid: Tid(tid),
                    comm: s(self, comm),
                    prio,
                    target_cpu: Cpu(target_cpu),
                }
            }
            Payload::Migrate {
                comm,
                tid,
                orig_cpu,
                dest_cpu,
            } => {
                self.tasks.printed_comm(Tid(tid), comm);
                EventData::Migrate {
                    tid: Tid(tid),
                    comm: s(self, comm),
                    orig_cpu: Cpu(orig_cpu),
                    dest_cpu: Cpu(dest_cpu),
                }
            }
            Payload::Fork {
                parent_comm,
                parent_tid,
                child_comm,
                child_tid,
            } => {
                self.tasks.printed_comm(Tid(parent_tid), parent_comm);
                self.tasks.fork_event(Tid(child_tid), child_comm, ts);
                EventData::Fork {
                    parent_tid: Tid(parent_tid),
                    child_tid: Tid(child_tid),
                    child_comm: s(self, child_comm),
                }
            }
            Payload::Exit { comm, tid } => {
                self.tasks.exit(Tid(tid), ts);
                EventData::Exit {
                    tid: Tid(tid),
                    comm: s(self, comm),
                }
            }
            Payload::Exec { filename, tid } => EventData::Exec {
                tid: Tid(tid),
                filename: s(self, filename),
            },
            Payload::KvmExit {
                exit_reason,
                isa,
                vcpu_id,
                guest_rip,
            } => EventData::KvmExit {
                exit_reason,
                isa,
                vcpu_id,
                guest_rip,
            },
            Payload::KvmEntry { vcpu_id } => EventData::KvmEntry { vcpu_id },
            Payload::IpiSendCpu {
                cpu,
                callsite,
                callback,
            } => EventData::IpiSendCpu {
                cpu: Cpu(cpu),
                callsite: self.sym(callsite),
                callback: self.sym(callback),
            },
            Payload::IpiSendCpumask {
                mask,
                callsite,
                callback,
            } => {
                let mask = match mask {
                    Some(m) => m,
                    None => {
                        if self.mask_unprinted.0 == 0 {
                            self.mask_unprinted.1 = line;
                        }
                        self.mask_unprinted.0 += 1;
                        CpuMask::default()
                    }
                };
                EventData::IpiSendCpumask {
                    mask: self.mask(mask),
                    callsite: self.sym(callsite),
                    callback: self.sym(callback),
                }
            }
            Payload::IpiRaise { mask, reason } => EventData::IpiRaise {
                mask: self.mask(mask),
                reason: s(self, reason),
            },
            Payload::TlbFlush { reason, pages } => EventData::TlbFlush { reason, pages },
            Payload::CsdQueue {
                cpu,
                callsite,
                func,
                csd,
            } => EventData::CsdQueue {
                cpu: Cpu(cpu),
                callsite: self.sym(callsite),
                func: self.sym(func),
                csd,
            },
            Payload::CsdFunction { entry, func, csd } => {
                let func = self.sym(func);
                if entry {
                    EventData::CsdFunctionEntry { func, csd }
                } else {
                    EventData::CsdFunctionExit { func, csd }
                }
            }
            Payload::CpuIdle { state, cpu_id } => EventData::CpuIdle {
                state,
                cpu_id: Cpu(cpu_id),
            },
            Payload::Softirq { vec, phase } => EventData::Softirq { vec, phase },
            Payload::WakeIdleNoIpi { cpu } => EventData::WakeIdleNoIpi { cpu: Cpu(cpu) },
            Payload::IrqVector { vector, entry } => EventData::IrqVector { vector, entry },
        }
    }

    /// Decode the numeric prev_states (trace-cmd's raw sched_switch
    /// print). Text carries no format file, so the layout is the documented
    /// one of the kernel versions whose preemption marker the values show:
    /// the marker is the one bit a kernel sets alone on a preempted
    /// switch-out, so the largest lone power of two at or above 0x100 among
    /// the values names it (0x100 TASK_REPORT_MAX of 4.14+, else the
    /// TASK_STATE_MAX of an older kernel). Without any lone marker, a value
    /// with 0x80 and 0x02 together (D|K, killable, only before 4.14; 4.14+
    /// reports I alone) means an older kernel, otherwise 4.14+ is assumed.
    /// The choice is stated in an Info warning.
    fn resolve_numeric_states(&mut self) {
        if self.numeric_states.is_empty() {
            return;
        }
        let lone = self
            .numeric_states
            .iter()
            .map(|&(_, v)| v)
            .filter(|&v| v >= 0x100 && v.is_power_of_two() && v <= 4096)
            .max();
        let (layout, why) = match lone {
            Some(0x100) => (
                StateLayout::Report,
                "the value 256 alone (a preempted switch-out)".to_string(),
            ),
            Some(m) => (
                StateLayout::Legacy { marker: m },
                format!("the value {m} alone (a preempted switch-out)"),
            ),
            None if self.numeric_states.iter().any(|&(_, v)| v & 0x82 == 0x82) => (
                StateLayout::Legacy { marker: 4096 },
                "D|K states (130) and no preempted switch-out".to_string(),
            ),
            None => (
                StateLayout::Report,
                "no preempted switch-out and no state only older kernels use".to_string(),
            ),
        };
        let mut unknown = 0u64;
        for &(i, v) in &self.numeric_states {
            let st = PrevState::from_raw(v, layout);
            unknown += st.is_unknown() as u64;
            if let Some(Event {
                data: EventData::Switch { prev_state, .. },
                ..
            }) = self.trace.events.get_mut(i)
            {
                *prev_state = st;
            }
        }
        let n = self.numeric_states.len() as u64;
        self.trace.warn(
            Severity::Info,
            format!(
                "sched:sched_switch: {n} numeric prev_state values (trace-cmd's raw print, no format in the text) decoded with the bit layout of {}, assumed from {why}",
                layout.kernels()
            ),
            n,
        );
        if unknown > 0 {
            self.trace.warn(
                Severity::DataLoss,
                format!(
                    "sched:sched_switch: {unknown} numeric prev_state values have bits that layout does not define, kept as an unknown state"
                ),
                unknown,
            );
        }
    }

    fn finish(mut self) -> Trace {
        self.trace.tasks = std::mem::take(&mut self.tasks).finish();
        self.resolve_numeric_states();
        let t = &mut self.trace;
        if self.unknown_states.0 > 0 {
            t.warn(
                Severity::DataLoss,
                format!(
                    "sched:sched_switch: {} switch-outs with a prev_state letter no kernel version defines, kept as an unknown state (neither runnable nor sleeping; first at line {})",
                    self.unknown_states.0, self.unknown_states.1
                ),
                self.unknown_states.0,
            );
        }
        let (short, short_r, plus) = self.short_switches;
        if t.format == TraceFormat::TraceCmdText && short > 0 && !plus {
            let dat = match dat_beside(&t.path) {
                Some(p) => format!("{p}, beside this text,"),
                None => "the trace.dat this text was printed from".to_string(),
            };
            t.warn(
                Severity::Info,
                format!(
                    "sched:sched_switch: trace-cmd report's sched_switch plugin prints a preempted switch-out (R+) as R, so this text cannot tell them apart: latency counts all {short_r} R switch-outs as waits that start at a runnable switch-out, though the preempted ones start none; give schedscope {dat} for exact states"
                ),
                short_r,
            );
        }
        if self.no_cpu.0 > 0 {
            t.cpu_unknown = true;
            t.warn(
                Severity::DataLoss,
                format!(
                    "{} event lines have no CPU column (perf script printed without `cpu`; first at line {}): per-CPU analyses cannot run, per-task ones (latency) can",
                    self.no_cpu.0, self.no_cpu.1
                ),
                self.no_cpu.0,
            );
        }
        if self.raw_full > 0 {
            t.warn(
                Severity::DataLoss,
                format!(
                    "{} untyped events kept without their fields: the field store is full (4 GiB)",
                    self.raw_full
                ),
                self.raw_full,
            );
        }
        for (i, n) in self.counts.iter().enumerate() {
            if let Some(name) = t.event_names.get(i) {
                *t.events_by_name.entry(name.clone()).or_insert(0) += n;
            }
        }
        if self.unparsed.0 > 0 {
            t.warn(
                Severity::DataLoss,
                format!(
                    "{} lines are neither events nor known headers and were skipped (first at line {}: `{}`)",
                    self.unparsed.0, self.unparsed.1, self.unparsed.2
                ),
                self.unparsed.0,
            );
        }
        if self.not_utf8.0 > 0 {
            t.warn(
                Severity::DataLoss,
                format!(
                    "{} lines are not valid UTF-8 and were skipped (first at line {})",
                    self.not_utf8.0, self.not_utf8.1
                ),
                self.not_utf8.0,
            );
        }
        if self.too_many_names.0 > 0 {
            t.warn(
                Severity::DataLoss,
                format!(
                    "{} event lines skipped: more than 65535 distinct event names (first at line {})",
                    self.too_many_names.0, self.too_many_names.1
                ),
                self.too_many_names.0,
            );
        }
        let mut bad: Vec<_> = self.bad_body.into_iter().collect();
        bad.sort_by_key(|(_, (_, line))| *line);
        for (name, (count, line)) in bad {
            let n = t.event_name(name).to_string();
            t.warn(
                Severity::DataLoss,
                format!("{n}: {count} events with fields in an unknown form, kept untyped (first at line {line})"),
                count,
            );
        }
        if self.mask_unprinted.0 > 0 {
            t.warn(
                Severity::DataLoss,
                format!(
                    "ipi:ipi_send_cpumask: {} cpumasks were not printed by the producing tool (perf 6.1 cannot decode __get_cpumask), kept as empty masks (first at line {})",
                    self.mask_unprinted.0, self.mask_unprinted.1
                ),
                self.mask_unprinted.0,
            );
        }
        if t.lost > 0 {
            let lost = t.lost;
            t.warn(
                Severity::DataLoss,
                format!(
                    "{lost} events were lost by the kernel ring buffer before the text was written"
                ),
                lost,
            );
        }
        if !self.ksyms.is_empty() {
            let mut syms: Vec<(u64, String)> = self.ksyms.into_iter().collect();
            syms.sort_unstable();
            t.kernel_symbols.syms = syms;
        }
        if self.header_cpus > 0 {
            t.meta.nr_cpus_online = Some(self.header_cpus);
            t.nr_cpus = t.nr_cpus.max(self.header_cpus);
        }
        t.finish();
        shifted::resolve(t);
        self.trace
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detect_each_shape() {
        let ftrace = b"# tracer: nop\n#\n            bash-8402    [001] d..2.   364.815366: sched_switch: prev_comm=bash prev_pid=8402 prev_prio=120 prev_state=S ==> next_comm=x next_pid=1 next_prio=120\n";
        assert_eq!(detect(ftrace), Some(TraceFormat::FtraceText));
        let pipe = b"            bash-8402    [001] d..2.   364.815366: sched_waking: comm=a pid=1 prio=120 target_cpu=000\n";
        assert_eq!(detect(pipe), Some(TraceFormat::FtraceText));
        let tc = b"version = 6\ncpus=2\n       trace-cmd-2931  [001]  3171.776631: sched_switch:         trace-cmd:2931 [120] S ==> trace-cmd:2933 [120]\n";
        assert_eq!(detect(tc), Some(TraceFormat::TraceCmdText));
        let tc_no_header = b"       trace-cmd-2931  [001]  3171.776631: sched_switch:         trace-cmd:2931 [120] S ==> trace-cmd:2933 [120]\n";
        assert_eq!(detect(tc_no_header), Some(TraceFormat::TraceCmdText));
        let perf = b"            perf  8672 [000]   369.561690:   sched:sched_waking: comm=migration/0 pid=18 prio=0 target_cpu=000\n";
        assert_eq!(detect(perf), Some(TraceFormat::PerfScriptText));
        assert_eq!(detect(b"hello world\nthis is not a trace\n"), None);
        assert_eq!(detect(b"\x00\x01\xff\xfe garbage [1] 2.0: x:"), None);
    }

    #[test]
    fn header_lines_are_classified() {
        assert_eq!(
            classify_other("# entries-in-buffer/entries-written: 6808/7000   #P:2"),
            Other::Entries {
                in_buffer: 6808,
                written: 7000,
                cpus: 2
            }
        );
        assert_eq!(classify_other("CPU:1 [LOST 12 EVENTS]"), Other::Lost(12));
        assert_eq!(classify_other("CPU:0 [3 EVENTS DROPPED]"), Other::Lost(3));
        assert_eq!(classify_other("CPU 0 is empty"), Other::Ignore);
        assert_eq!(classify_other("cpus=4"), Other::Cpus(4));
        assert_eq!(
            classify_other("\t    ffffffffb8985a24 __schedule+0x514 ([kernel.kallsyms])"),
            Other::Frame {
                addr: 0xffffffffb8985a24,
                sym: Some((0xffffffffb8985a24 - 0x514, "__schedule"))
            }
        );
        assert_eq!(
            classify_other("\t    7f12345678 [unknown] (/usr/lib/libc.so.6)"),
            Other::Frame {
                addr: 0x7f12345678,
                sym: None
            }
        );
        assert_eq!(classify_other(" => __schedule"), Other::Ignore);
        assert_eq!(classify_other("garbage here"), Other::Unparsed);
    }

    #[test]
    fn parallel_chunking_gives_identical_traces() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/ftrace/tracefs-ipi-tgid.txt"
        );
        let data = std::fs::read(path).unwrap();
        let one = decode_chunked("x", &data, TraceFormat::FtraceText, usize::MAX, false);
        for chunk in [1, 100, 4096] {
            let many = decode_chunked("x", &data, TraceFormat::FtraceText, chunk, false);
            assert_eq!(one.events, many.events, "chunk {chunk}");
            assert_eq!(one.event_names, many.event_names);
            assert_eq!(one.events_by_name, many.events_by_name);
            assert_eq!(one.warnings, many.warnings);
            assert_eq!(one.lost, many.lost);
            assert_eq!(one.tasks.len(), many.tasks.len());
        }
        assert!(one.events.len() > 700);
    }

    #[test]
    fn call_chains_split_across_chunks_are_rejoined() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/ftrace/perf-script-callchain.txt"
        );
        let data = std::fs::read(path).unwrap();
        let one = decode_chunked("x", &data, TraceFormat::PerfScriptText, usize::MAX, false);
        assert!(one.events.iter().filter(|e| e.stack.is_some()).count() > 70);
        for chunk in [1, 50, 999] {
            let many = decode_chunked("x", &data, TraceFormat::PerfScriptText, chunk, false);
            let stacks = |t: &Trace| -> Vec<Option<Vec<u64>>> {
                t.events
                    .iter()
                    .map(|e| t.stack(e.stack).map(<[u64]>::to_vec))
                    .collect()
            };
            assert_eq!(stacks(&one), stacks(&many), "chunk {chunk}");
            assert_eq!(one.kernel_symbols.syms, many.kernel_symbols.syms);
        }
    }

    #[test]
    fn line_numbers_survive_chunking() {
        let mut text = String::from("# tracer: nop\n");
        for i in 0..50 {
            text.push_str(&format!(
                "  a-1 [000] ....  1.{i:06}: sched_wake_idle_without_ipi: cpu=1\n"
            ));
            if i == 30 || i == 40 {
                text.push_str("garbage line\n");
            }
        }
        for chunk in [1, 64, usize::MAX] {
            let t = decode_chunked("x", text.as_bytes(), TraceFormat::FtraceText, chunk, false);
            assert_eq!(t.events.len(), 50);
            assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
            assert_eq!(t.warnings[0].count, 2);
            // Line 1 is the header, events 0..=30 are lines 2..=32.
            assert!(
                t.warnings[0].message.contains("first at line 33"),
                "{}",
                t.warnings[0].message
            );
        }
    }

    #[test]
    fn chunks_end_at_newlines() {
        let data = b"aaaa\nbb\ncccccc\nd";
        let c = split_chunks(data, 3);
        assert_eq!(c.concat(), data.to_vec());
        assert!(c[..c.len() - 1].iter().all(|p| p.ends_with(b"\n")));
    }
}
