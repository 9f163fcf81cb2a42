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
//!
//! Files by responsibility: `detect` (which dialect, from the first lines),
//! `systrace` (the text inside a systrace HTML page), `lines` (one chunk's
//! lines into records, and its headers, loss markers and call-chain
//! frames: `prefix` for the task/CPU/time/event columns, `body` for the
//! typed event fields), `assemble` (the records folded into the
//! trace), `states` and `shifted` (prev_states the text prints in other
//! forms than the kernel's letters), `raw` (untyped events' fields).

mod assemble;
mod body;
mod detect;
mod lines;
mod prefix;
mod raw;
mod shifted;
mod states;
mod systrace;

pub use detect::{describe_not_trace, detect, not_trace_error};

use crate::ParseError;
use assemble::Builder;
use lines::{parse_chunk, ChunkOut};
use prefix::Style;
use rayon::prelude::*;
#[cfg(doc)]
use schedscope_trace::EventData;
use schedscope_trace::{Severity, Trace, TraceFormat};
use systrace::systrace_html;

/// Parallel chunk size; smaller inputs are parsed on the calling thread.
const CHUNK_BYTES: usize = 2 * 1024 * 1024;

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

#[cfg(test)]
mod tests {
    use super::*;

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
