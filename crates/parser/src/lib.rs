//! Decoders that turn trace files into a [`schedscope_trace::Trace`].
//!
//! `load(path)` reads a file, detects its format from the content (never the
//! file name), and hands the bytes to one decoder:
//!
//! * [`perf_data`]: perf.data (PERFILE2) from `perf record` or `schedscope
//!   record`, plain or zstd-compressed; tracepoint payloads are decoded
//!   through the tracefs format descriptions embedded in the file.
//! * [`ftrace_text`]: text from `/sys/kernel/tracing/trace`, `trace-cmd
//!   report` and `perf script`.
//! * [`tracefs_format`]: the nom parser for tracefs `format` files, shared by
//!   the perf.data decoder and the collector.
//!
//! Every decoder returns events sorted by time, a task table and counted
//! warnings; damage in the middle of a file yields the events before it plus
//! a warning, and unusable input yields a [`ParseError`] naming the file and
//! what was wrong.

pub mod error;
pub mod ftrace_text;
pub mod perf_data;
pub mod tracefs_format;

pub use error::ParseError;

use schedscope_trace::{Trace, TraceFormat};
use std::path::Path;

/// Detect the format of `data` from its content.
pub fn detect(data: &[u8]) -> Option<TraceFormat> {
    if data.starts_with(perf_data::abi::PERF_MAGIC2)
        || data.starts_with(perf_data::abi::PERF_MAGIC2_SWAPPED)
    {
        return Some(TraceFormat::PerfData);
    }
    ftrace_text::detect(data)
}

/// Read and decode the trace file at `path`.
pub fn load(path: &Path) -> Result<Trace, ParseError> {
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
    load_bytes(&name, &map)
}

/// Decode a trace held in memory; `name` is used in messages.
pub fn load_bytes(name: &str, data: &[u8]) -> Result<Trace, ParseError> {
    if data.is_empty() {
        return Err(ParseError::Empty {
            path: name.to_string(),
        });
    }
    match detect(data) {
        Some(TraceFormat::PerfData) => perf_data::decode(name, data),
        Some(_) => ftrace_text::decode(name, data),
        None => Err(ParseError::UnknownFormat {
            path: name.to_string(),
            detail: describe_unknown(data),
        }),
    }
}

fn describe_unknown(data: &[u8]) -> String {
    if data.starts_with(b"PERFFILE") || data.starts_with(b"PERFILE") {
        "a perf.data file of an unsupported version (only PERFILE2 is read)".into()
    } else if data.starts_with(b"\x17\x08\x44tracing") {
        "a trace-cmd trace.dat file: convert it with `trace-cmd report > trace.txt` first".into()
    } else if data.iter().take(4096).any(|&b| b == 0) {
        format!(
            "binary data that is not perf.data (starts with {:02x?}; expected magic \"PERFILE2\" at offset 0)",
            &data[..data.len().min(8)]
        )
    } else {
        "text that is not a trace: no ftrace, trace-cmd or perf script event line in the first 1000 lines".into()
    }
}
