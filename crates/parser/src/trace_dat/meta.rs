//! The metadata of a trace.dat file: the initial header, then either the
//! version-6 sequence (header page, formats, kallsyms, printk, cmdlines,
//! CPU count, options, flyrecord offsets) or the version-7 sections found
//! through the chain of options sections, decompressed when flagged.
//!
//! Everything here is a nom tokenizer over untrusted bytes: every size is
//! checked against the bytes present before anything is taken or allocated,
//! and a structure that does not fit is an error naming its byte offset.

use super::decompress::{self, Codec};
use crate::perf_data::tracing_data::{parse_kallsyms, parse_printk};
use crate::tracefs_format::{parse_format, EventFormat};
use crate::ParseError;
use nom::bytes::complete::{tag, take, take_until};
use nom::number::complete::{le_u16, le_u32, le_u64, u8 as byte};
use nom::IResult;
use std::borrow::Cow;
use std::collections::HashMap;

/// Magic at the start of every trace.dat file.
pub const MAGIC: &[u8; 10] = b"\x17\x08\x44tracing";

/// Option ids (trace-cmd's `enum tracecmd_option`).
mod opt {
    pub const DONE: u16 = 0;
    pub const DATE: u16 = 1;
    pub const BUFFER: u16 = 3;
    pub const TRACECLOCK: u16 = 4;
    pub const UNAME: u16 = 5;
    pub const OFFSET: u16 = 7;
    pub const CPUCOUNT: u16 = 8;
    pub const TSC2NSEC: u16 = 14;
    pub const HEADER_INFO: u16 = 16;
    pub const FTRACE_EVENTS: u16 = 17;
    pub const EVENT_FORMATS: u16 = 18;
    pub const KALLSYMS: u16 = 19;
    pub const PRINTK: u16 = 20;
    pub const CMDLINES: u16 = 21;
    pub const BUFFER_TEXT: u16 = 22;
}

/// Section flag: the section's content is compressed.
const SECTION_COMPRESSED: u16 = 1;

/// Layout of a ring-buffer page, from the file's `header_page`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageLayout {
    /// Size of the `commit` word (the kernel's long): 4 or 8.
    pub commit_size: usize,
    /// Offset of the first event in a page.
    pub data_offset: usize,
}

/// One CPU's ring-buffer pages.
#[derive(Debug)]
pub struct CpuData<'a> {
    /// The CPU.
    pub cpu: u32,
    /// Its pages (decompressed when the file compresses them).
    pub pages: Cow<'a, [u8]>,
    /// File offset of the data (of its compressed form when compressed).
    pub offset: u64,
}

/// One trace buffer: the top instance (name `""`) or a named instance.
#[derive(Debug, Default)]
pub struct Buffer<'a> {
    /// Instance name (`""` for the top instance).
    pub name: String,
    /// The trace clock (`local`, `global`, `mono`, ...), when recorded.
    pub clock: Option<String>,
    /// Page size of the instance's ring buffer.
    pub page_size: u32,
    /// Per-CPU data.
    pub cpus: Vec<CpuData<'a>>,
}

/// Everything the file says before (and about) its ring-buffer data.
#[derive(Debug)]
pub struct Meta<'a> {
    /// File version (6 or 7).
    pub version: u32,
    /// Page size of the recording host.
    pub page_size: u32,
    /// Ring-buffer page layout.
    pub page: PageLayout,
    /// Event formats, with their systems set (`ftrace` for the ftrace ones).
    pub formats: Vec<EventFormat>,
    /// Kernel symbols (address, name), sorted.
    pub kallsyms: Vec<(u64, String)>,
    /// printk format strings by address.
    pub printk: HashMap<u64, String>,
    /// Saved cmdlines (pid, comm).
    pub cmdlines: Vec<(i32, String)>,
    /// CPUs on the recording host (CPUCOUNT option or the file's CPU count).
    pub cpu_count: u32,
    /// Nanoseconds added to every timestamp (DATE and OFFSET options).
    pub ts_offset: i64,
    /// `uname` of the recording host, when recorded.
    pub uname: Option<String>,
    /// The trace buffers.
    pub buffers: Vec<Buffer<'a>>,
    /// Damage that leaves the rest usable (error warnings for the trace).
    pub problems: Vec<String>,
    /// What the file has that is not read (data-loss warnings).
    pub notes: Vec<String>,
}

type Res<'a, T> = IResult<&'a [u8], T>;

/// A NUL-terminated string (the NUL consumed).
fn cstr(i: &[u8]) -> Res<'_, &[u8]> {
    let (i, s) = take_until(&b"\0"[..])(i)?;
    let (i, _) = take(1usize)(i)?;
    Ok((i, s))
}

/// `len` bytes, where `len` comes from the file: taken only if present.
fn sized(len: u64) -> impl Fn(&[u8]) -> Res<'_, &[u8]> {
    move |i: &[u8]| {
        let n = usize::try_from(len).unwrap_or(usize::MAX);
        take(n)(i)
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The reading context: the whole file, for offsets and errors.
struct File<'a> {
    name: &'a str,
    data: &'a [u8],
}

impl<'a> File<'a> {
    /// Offset of `rest` (a suffix of some slice of the file) in the file.
    fn off(&self, rest: &[u8]) -> u64 {
        let start = self.data.as_ptr() as usize;
        let p = rest.as_ptr() as usize;
        if p >= start && p <= start + self.data.len() {
            (p - start) as u64
        } else {
            0
        }
    }

    fn truncated(&self, at: u64, expected: impl Into<String>) -> ParseError {
        ParseError::Truncated {
            path: self.name.to_string(),
            offset: at,
            expected: expected.into(),
        }
    }

    fn corrupt(&self, at: u64, detail: impl Into<String>) -> ParseError {
        ParseError::Corrupt {
            path: self.name.to_string(),
            offset: at,
            detail: detail.into(),
        }
    }

    /// Run `p` at `i`; a failure is a truncation (or corruption, when the
    /// bytes were present) at the offset where it happened, expecting `what`.
    fn run<T>(
        &self,
        i: &'a [u8],
        what: &str,
        p: impl FnOnce(&'a [u8]) -> Res<'a, T>,
    ) -> Result<(&'a [u8], T), ParseError> {
        p(i).map_err(|e| {
            let (at, eof) = match &e {
                nom::Err::Error(e) | nom::Err::Failure(e) => {
                    (e.input, e.code == nom::error::ErrorKind::Eof)
                }
                nom::Err::Incomplete(_) => (i, true),
            };
            let off = self.off(at);
            // fewer bytes than a size announces: the file (or a size) is cut
            if eof {
                self.truncated(off, format!("{what} ({} bytes are left)", at.len()))
            } else {
                self.corrupt(off, format!("expected {what}"))
            }
        })
    }

    /// The bytes from `offset` to the end of the file.
    fn at(&self, offset: u64, what: &str) -> Result<&'a [u8], ParseError> {
        usize::try_from(offset)
            .ok()
            .and_then(|o| self.data.get(o..))
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                self.truncated(
                    offset,
                    format!("{what} (the file has {} bytes)", self.data.len()),
                )
            })
    }
}

/// Parse the metadata of the trace.dat file `data`.
pub fn parse<'a>(name: &'a str, data: &'a [u8]) -> Result<Meta<'a>, ParseError> {
    let f = File { name, data };
    let (i, version) = f.run(data, "the trace.dat magic and version", |i| {
        let (i, _) = tag(&MAGIC[..])(i)?;
        cstr(i)
    })?;
    let version_str = lossy(version);
    let version = version_str.trim().parse::<u32>().ok();
    let (i, (endian, long_size, page_size)) =
        f.run(i, "the endianness, long size and page size", |i| {
            let (i, e) = byte(i)?;
            let (i, l) = byte(i)?;
            let (i, p) = le_u32(i)?;
            Ok((i, (e, l, p)))
        })?;
    if endian != 0 {
        return Err(f.corrupt(
            10 + version.map_or(0, |_| version_str.len() as u64 + 1),
            "the file was written on a big-endian host, which is not supported",
        ));
    }
    if !(page_size.is_power_of_two() && (256..=(1 << 24)).contains(&page_size)) {
        return Err(f.corrupt(
            f.off(i) - 4,
            format!("page size {page_size} is not a power of two between 256 and 16 MiB"),
        ));
    }
    let _ = long_size;
    let mut m = Meta {
        version: version.unwrap_or(0),
        page_size,
        page: PageLayout {
            commit_size: 8,
            data_offset: 16,
        },
        formats: Vec::new(),
        kallsyms: Vec::new(),
        printk: HashMap::new(),
        cmdlines: Vec::new(),
        cpu_count: 0,
        ts_offset: 0,
        uname: None,
        buffers: Vec::new(),
        problems: Vec::new(),
        notes: Vec::new(),
    };
    match version {
        Some(6) => parse_v6(&f, i, &mut m)?,
        Some(7) => parse_v7(&f, i, &mut m)?,
        _ => {
            return Err(f.corrupt(
                10,
                format!("trace.dat version {version_str:?} is not supported (only versions 6 and 7 are read)"),
            ))
        }
    }
    Ok(m)
}

/// `header_page` and `header_event`.
fn header_info<'b>(f: &File<'b>, i: &'b [u8], m: &mut Meta<'_>) -> Result<&'b [u8], ParseError> {
    let (i, page) = f.run(i, "\"header_page\" and its size", |i| {
        let (i, _) = tag(&b"header_page\0"[..])(i)?;
        let (i, n) = le_u64(i)?;
        sized(n)(i)
    })?;
    let (i, _) = f.run(i, "\"header_event\" and its size", |i| {
        let (i, _) = tag(&b"header_event\0"[..])(i)?;
        let (i, n) = le_u64(i)?;
        sized(n)(i)
    })?;
    m.page = page_layout(&String::from_utf8_lossy(page));
    Ok(i)
}

/// The commit size and data offset from header_page text such as
/// `field: local_t commit;\toffset:8;\tsize:8;\tsigned:1;`.
fn page_layout(text: &str) -> PageLayout {
    let mut p = PageLayout {
        commit_size: 8,
        data_offset: 16,
    };
    let num = |line: &str, key: &str| -> Option<usize> {
        let rest = &line[line.find(key)? + key.len()..];
        rest[..rest.find(';')?].trim().parse().ok()
    };
    for line in text.lines() {
        if line.contains(" commit;") {
            if let Some(s) = num(line, "size:").filter(|s| *s == 4 || *s == 8) {
                p.commit_size = s;
            }
        } else if line.contains(" data;") {
            if let Some(o) = num(line, "offset:").filter(|o| (12..=64).contains(o)) {
                p.data_offset = o;
            }
        }
    }
    p
}

fn add_format(m: &mut Meta<'_>, system: &str, text: &[u8]) {
    match parse_format(&String::from_utf8_lossy(text)) {
        Ok(mut ef) => {
            ef.system = system.to_string();
            m.formats.push(ef);
        }
        Err(e) => m.notes.push(format!(
            "format description of an event in system {system}: {e}"
        )),
    }
}

/// The ftrace event formats: a count, then sized format files.
fn ftrace_formats<'b>(f: &File<'b>, i: &'b [u8], m: &mut Meta<'_>) -> Result<&'b [u8], ParseError> {
    let (mut i, count) = f.run(i, "the number of ftrace formats", le_u32)?;
    for _ in 0..count {
        let (r, text) = f.run(i, "an ftrace event format", |i| {
            let (i, n) = le_u64(i)?;
            sized(n)(i)
        })?;
        add_format(m, "ftrace", text);
        i = r;
    }
    Ok(i)
}

/// The event formats: systems, each a name, a count and sized format files.
fn event_formats<'b>(f: &File<'b>, i: &'b [u8], m: &mut Meta<'_>) -> Result<&'b [u8], ParseError> {
    let (mut i, systems) = f.run(i, "the number of event systems", le_u32)?;
    for _ in 0..systems {
        let (r, (system, count)) = f.run(i, "an event system name and count", |i| {
            let (i, s) = cstr(i)?;
            let (i, c) = le_u32(i)?;
            Ok((i, (s, c)))
        })?;
        let system = lossy(system);
        i = r;
        for _ in 0..count {
            let (r, text) = f.run(i, "an event format", |i| {
                let (i, n) = le_u64(i)?;
                sized(n)(i)
            })?;
            add_format(m, &system, text);
            i = r;
        }
    }
    Ok(i)
}

fn kallsyms<'b>(f: &File<'b>, i: &'b [u8], m: &mut Meta<'_>) -> Result<&'b [u8], ParseError> {
    let (i, text) = f.run(i, "the kallsyms text", |i| {
        let (i, n) = le_u32(i)?;
        sized(n as u64)(i)
    })?;
    m.kallsyms = parse_kallsyms(text);
    Ok(i)
}

fn printk<'b>(f: &File<'b>, i: &'b [u8], m: &mut Meta<'_>) -> Result<&'b [u8], ParseError> {
    let (i, text) = f.run(i, "the printk formats", |i| {
        let (i, n) = le_u32(i)?;
        sized(n as u64)(i)
    })?;
    m.printk = parse_printk(text);
    Ok(i)
}

fn cmdlines<'b>(f: &File<'b>, i: &'b [u8], m: &mut Meta<'_>) -> Result<&'b [u8], ParseError> {
    let (i, text) = f.run(i, "the saved cmdlines", |i| {
        let (i, n) = le_u64(i)?;
        sized(n)(i)
    })?;
    m.cmdlines = String::from_utf8_lossy(text)
        .lines()
        .filter_map(|l| {
            let (pid, comm) = l.split_once(' ')?;
            Some((pid.trim().parse().ok()?, comm.to_string()))
        })
        .collect();
    Ok(i)
}

/// One option (id, data); `None` data for DONE in version 6.
fn option(i: &[u8]) -> Res<'_, (u16, &[u8])> {
    let (i, id) = le_u16(i)?;
    if id == opt::DONE {
        return Ok((i, (id, &i[..0])));
    }
    let (i, n) = le_u32(i)?;
    let (i, d) = sized(n as u64)(i)?;
    Ok((i, (id, d)))
}

/// The options both versions share; `buffer_v6` receives version 6's
/// BUFFER options (offset, name).
fn common_option(m: &mut Meta<'_>, id: u16, d: &[u8]) {
    let text = || {
        lossy(d.split(|&b| b == 0).next().unwrap_or(d))
            .trim()
            .to_string()
    };
    match id {
        // microseconds, as strtoll(…, 0) reads them
        opt::DATE => match parse_c_i64(&text()) {
            Some(us) => m.ts_offset = m.ts_offset.saturating_add(us.saturating_mul(1000)),
            None => m.notes.push(format!("DATE option {:?} is not a number; ignored", text())),
        },
        opt::OFFSET => match parse_c_i64(&text()) {
            Some(ns) => m.ts_offset = m.ts_offset.saturating_add(ns),
            None => m.notes.push(format!("OFFSET option {:?} is not a number; ignored", text())),
        },
        opt::UNAME => m.uname = Some(text()),
        opt::CPUCOUNT => {
            if let Ok(b) = <[u8; 4]>::try_from(d.get(..4).unwrap_or(&[])) {
                m.cpu_count = m.cpu_count.max(u32::from_le_bytes(b).min(1 << 16));
            }
        }
        opt::TSC2NSEC => m.notes.push(
            "the file stores TSC-to-nanosecond conversion (TSC2NSEC); it is not applied: timestamps are the raw counter values"
                .into(),
        ),
        _ => {}
    }
}

/// A C integer as strtoll(s, NULL, 0) reads it.
fn parse_c_i64(s: &str) -> Option<i64> {
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let v = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()?
    } else if s.len() > 1 && s.starts_with('0') {
        i64::from_str_radix(&s[1..], 8).ok()?
    } else {
        s.parse().ok()?
    };
    Some(if neg { -v } else { v })
}

/// Per-CPU (offset, size) pairs of version 6's flyrecord, as slices.
fn flyrecord_v6<'a>(
    f: &File<'a>,
    i: &'a [u8],
    cpus: u32,
    m: &mut Meta<'a>,
) -> Result<(&'a [u8], Vec<CpuData<'a>>), ParseError> {
    let mut out = Vec::new();
    let mut i = i;
    for cpu in 0..cpus {
        let (r, (off, size)) = f.run(i, "a CPU's data offset and size", |i| {
            let (i, o) = le_u64(i)?;
            let (i, s) = le_u64(i)?;
            Ok((i, (o, s)))
        })?;
        i = r;
        out.push(CpuData {
            cpu,
            pages: Cow::Borrowed(cpu_slice(f, off, size, cpu, m)),
            offset: off,
        });
    }
    Ok((i, out))
}

/// The `size` bytes at `off`, or as many of them as the file holds (with a
/// problem noted).
fn cpu_slice<'a>(f: &File<'a>, off: u64, size: u64, cpu: u32, m: &mut Meta<'a>) -> &'a [u8] {
    let len = f.data.len() as u64;
    if off > len {
        m.problems.push(format!(
            "CPU {cpu}'s data starts at byte offset {off}, beyond the end of the file ({len} bytes): it is missing"
        ));
        return &[];
    }
    let end = off.saturating_add(size);
    if end > len {
        m.problems.push(format!(
            "CPU {cpu}'s data ({size} bytes at byte offset {off}) is truncated at byte offset {len}: {} bytes missing",
            end - len
        ));
    }
    &f.data[off as usize..end.min(len) as usize]
}

fn parse_v6<'a>(f: &File<'a>, i: &'a [u8], m: &mut Meta<'a>) -> Result<(), ParseError> {
    let i = header_info(f, i, m)?;
    let i = ftrace_formats(f, i, m)?;
    let i = event_formats(f, i, m)?;
    let i = kallsyms(f, i, m)?;
    let i = printk(f, i, m)?;
    let i = cmdlines(f, i, m)?;
    let (mut i, cpus) = f.run(i, "the number of CPUs", le_u32)?;
    if cpus > 1 << 16 {
        return Err(f.corrupt(
            f.off(i) - 4,
            format!("{cpus} CPUs (at most 65536 are possible)"),
        ));
    }
    m.cpu_count = cpus;
    let mut v6_buffers: Vec<(u64, String)> = Vec::new();
    let mut clock = None;
    loop {
        let (r, kind) = f.run(
            i,
            "\"options\", \"latency\" or \"flyrecord\"",
            take(10usize),
        )?;
        match kind {
            b"options  \0" => {
                let mut r = r;
                loop {
                    let (r2, (id, d)) = f.run(r, "an option", option)?;
                    r = r2;
                    match id {
                        opt::DONE => break,
                        opt::BUFFER => {
                            let b: Res<'_, (u64, &[u8])> = (|i| {
                                let (i, o) = le_u64(i)?;
                                let (i, n) = cstr(i)?;
                                Ok((i, (o, n)))
                            })(d);
                            match b {
                                Ok((_, (o, n))) => v6_buffers.push((o, lossy(n))),
                                Err(_) => m.problems.push(format!(
                                    "a BUFFER option at byte offset {} is too short; ignored",
                                    f.off(d)
                                )),
                            }
                        }
                        opt::TRACECLOCK => clock = Some(lossy(d).trim_matches(['\0', '\n', ' ']).to_string()),
                        _ => common_option(m, id, d),
                    }
                }
                i = r;
            }
            b"latency  \0" => {
                return Err(f.corrupt(
                    f.off(r) - 10,
                    "a latency-tracer trace.dat (text trace data) is not supported: convert it with `trace-cmd report -i FILE > trace.txt`",
                ))
            }
            b"flyrecord\0" => {
                let (rest, cpus_data) = flyrecord_v6(f, r, cpus, m)?;
                if clock.as_deref() == Some("") {
                    // Version 6's TRACECLOCK option is an empty flag: the
                    // trace_clock listing follows the CPU offsets (where
                    // trace-cmd reads it); unreadable, the clock is unknown.
                    clock = trace_clock_v6(rest);
                }
                m.buffers.push(Buffer {
                    name: String::new(),
                    clock: clock.clone().map(|c| selected_clock(&c)),
                    page_size: m.page_size,
                    cpus: cpus_data,
                });
                break;
            }
            _ => {
                return Err(f.corrupt(
                    f.off(r) - 10,
                    format!("expected \"options\", \"latency\" or \"flyrecord\", found {:?}", lossy(kind)),
                ))
            }
        }
    }
    for (off, name) in v6_buffers {
        let Ok(mut i) = f.at(off, &format!("instance {name:?}'s data")) else {
            m.problems.push(format!(
                "instance {name:?}'s data at byte offset {off} is beyond the end of the file; skipped"
            ));
            continue;
        };
        if i.starts_with(b"flyrecord\0") {
            i = &i[10..];
        }
        match flyrecord_v6(f, i, cpus, m) {
            Ok((_, c)) => m.buffers.push(Buffer {
                name,
                clock: clock.clone().map(|c| selected_clock(&c)),
                page_size: m.page_size,
                cpus: c,
            }),
            Err(e) => m.problems.push(format!("instance {name:?}: {e}; skipped")),
        }
    }
    Ok(())
}

/// The `trace_clock` listing that version 6 stores after the flyrecord CPU
/// offsets when its TRACECLOCK option is set: a u64 size, then the text
/// (`[local] global counter ...`). `None` unless it is there and names a
/// selected clock in brackets.
fn trace_clock_v6(i: &[u8]) -> Option<String> {
    let (i, n) = le_u64::<_, nom::error::Error<&[u8]>>(i).ok()?;
    let (_, text) = sized(n)(i).ok()?;
    let text = lossy(text);
    text.contains('[')
        .then(|| text.trim_matches(['\0', '\n', ' ']).to_string())
}

/// The clock in brackets in a `trace_clock` listing (`local [global] ...`).
fn selected_clock(s: &str) -> String {
    match (s.find('['), s.find(']')) {
        (Some(a), Some(b)) if a < b => s[a + 1..b].to_string(),
        _ => s.trim().to_string(),
    }
}

/// A version-7 section header: id, flags, description string id, size.
struct Section<'a> {
    id: u16,
    flags: u16,
    /// The section's bytes as stored (compressed when flagged).
    body: &'a [u8],
    offset: u64,
}

fn section<'a>(f: &File<'a>, offset: u64, what: &str) -> Result<Section<'a>, ParseError> {
    let i = f.at(offset, what)?;
    let (_, (id, flags, body)) = f.run(i, &format!("the section header of {what}"), |i| {
        let (i, id) = le_u16(i)?;
        let (i, flags) = le_u16(i)?;
        let (i, _desc) = le_u32(i)?;
        let (i, size) = le_u64(i)?;
        let (i, body) = sized(size)(i)?;
        Ok((i, (id, flags, body)))
    })?;
    Ok(Section {
        id,
        flags,
        body,
        offset,
    })
}

/// The content of a section, decompressed when flagged.
fn section_content<'a>(
    f: &File<'a>,
    s: &Section<'a>,
    codec: Codec,
    what: &str,
) -> Result<Cow<'a, [u8]>, ParseError> {
    if s.flags & SECTION_COMPRESSED == 0 {
        return Ok(Cow::Borrowed(s.body));
    }
    let (_, (csize, usize_, data)) =
        f.run(s.body, &format!("the compression header of {what}"), |i| {
            let (i, c) = le_u32(i)?;
            let (i, u) = le_u32(i)?;
            let (i, d) = sized(c as u64)(i)?;
            Ok((i, (c, u, d)))
        })?;
    let _ = csize;
    decompress::block(codec, data, usize_ as u64)
        .map(Cow::Owned)
        .map_err(|e| f.corrupt(s.offset + 16 + 8, format!("{what}: {e}")))
}

/// Version 7: the compression, the chain of options sections, the
/// metadata sections they point at, then the buffers.
fn parse_v7<'a>(f: &File<'a>, i: &'a [u8], m: &mut Meta<'a>) -> Result<(), ParseError> {
    let (codec, first) = compression(f, i)?;
    let (offsets, buffers) = options_chain(f, first, codec, m)?;
    let mut have = [false; 6];
    for (id, off) in offsets {
        metadata_section(f, id, off, codec, m)?;
        have[(id - opt::HEADER_INFO) as usize] = true;
    }
    if !have[0] {
        return Err(f.corrupt(
            0,
            "the file has no header info section (HEADER_INFO option missing)",
        ));
    }
    if !have[2] {
        m.notes
            .push("the file has no event formats section: events cannot be decoded".into());
    }
    for b in buffers {
        match buffer_v7(f, b, codec, m) {
            Ok(b) => m.buffers.push(b),
            Err(e) => m.problems.push(format!("{e}; that buffer is skipped")),
        }
    }
    if m.cpu_count == 0 {
        m.cpu_count = m
            .buffers
            .iter()
            .flat_map(|b| b.cpus.iter().map(|c| c.cpu + 1))
            .max()
            .unwrap_or(0);
    }
    Ok(())
}

/// The compression (codec name and version) and the offset of the first
/// options section.
fn compression(f: &File<'_>, i: &[u8]) -> Result<(Codec, u64), ParseError> {
    let (_, (cname, cver, first)) = f.run(
        i,
        "the compression name, version and first options offset",
        |i| {
            let (i, n) = cstr(i)?;
            let (i, v) = cstr(i)?;
            let (i, o) = le_u64(i)?;
            Ok((i, (n, v, o)))
        },
    )?;
    let codec = match cname {
        b"none" | b"" => Codec::None,
        b"zstd" => Codec::Zstd,
        other => {
            return Err(f.corrupt(
                f.off(i),
                format!(
                    "compression {:?} (version {:?}) is not supported (only zstd and uncompressed files are read)",
                    lossy(other),
                    lossy(cver)
                ),
            ))
        }
    };
    Ok((codec, first))
}

/// A metadata section: the option id that points at it, its offset.
type SectionAt = (u16, u64);

/// The options sections, a chain through DONE's next offset from `first`:
/// the offsets of the metadata sections (by option id) and the buffer
/// options; the options every version has go into `m`.
fn options_chain<'a>(
    f: &File<'a>,
    first: u64,
    codec: Codec,
    m: &mut Meta<'a>,
) -> Result<(Vec<SectionAt>, Vec<BufferOpt>), ParseError> {
    let mut next = first;
    let mut seen = std::collections::HashSet::new();
    let mut offsets: Vec<SectionAt> = Vec::new();
    let mut buffers: Vec<BufferOpt> = Vec::new();
    while next != 0 {
        if !seen.insert(next) {
            return Err(f.corrupt(next, "the options sections form a loop"));
        }
        let s = section(f, next, "an options section")?;
        if s.id != 0 {
            return Err(f.corrupt(
                next,
                format!("expected an options section (id 0), found id {}", s.id),
            ));
        }
        let body = section_content(f, &s, codec, "an options section")?;
        next = 0;
        let mut r: &[u8] = &body;
        while !r.is_empty() {
            let (r2, (id, d)) = match option_v7(r) {
                Ok(x) => x,
                Err(_) => {
                    m.problems.push(format!(
                        "the options section at byte offset {} ends in the middle of an option; the rest of it is ignored",
                        s.offset
                    ));
                    break;
                }
            };
            r = r2;
            let u64_of = |d: &[u8]| {
                <[u8; 8]>::try_from(d.get(..8).unwrap_or(&[]))
                    .ok()
                    .map(u64::from_le_bytes)
            };
            match id {
                opt::DONE => {
                    next = u64_of(d).unwrap_or(0);
                    break;
                }
                opt::HEADER_INFO..=opt::CMDLINES => match u64_of(d) {
                    Some(o) => offsets.push((id, o)),
                    None => m.problems.push(format!("option {id} in the options section at byte offset {} is too short; ignored", s.offset)),
                },
                opt::BUFFER => match buffer_option(d) {
                    Some(b) => buffers.push(b),
                    None => m.problems.push(format!(
                        "a BUFFER option in the options section at byte offset {} is too short; that buffer is skipped",
                        s.offset
                    )),
                },
                opt::BUFFER_TEXT => m.notes.push("the file has a latency-tracer (text) buffer; it is not read".into()),
                _ => common_option(m, id, d),
            }
        }
    }
    Ok((offsets, buffers))
}

/// The metadata section option `id` points at (`off`): header info,
/// formats, kallsyms, printk formats or saved cmdlines, into `m`.
fn metadata_section<'a>(
    f: &File<'a>,
    id: u16,
    off: u64,
    codec: Codec,
    m: &mut Meta<'a>,
) -> Result<(), ParseError> {
    let what = match id {
        opt::HEADER_INFO => "the header info section",
        opt::FTRACE_EVENTS => "the ftrace formats section",
        opt::EVENT_FORMATS => "the event formats section",
        opt::KALLSYMS => "the kallsyms section",
        opt::PRINTK => "the printk section",
        _ => "the saved cmdlines section",
    };
    let s = section(f, off, what)?;
    if s.id != id {
        return Err(f.corrupt(
            off,
            format!(
                "expected {what} (id {id}), found a section with id {}",
                s.id
            ),
        ));
    }
    let content = section_content(f, &s, codec, what)?;
    // decompressed content is parsed in its own buffer: offsets in
    // messages are then those of the section
    let (cf, data): (File<'_>, &[u8]) = match &content {
        Cow::Borrowed(b) => (
            File {
                name: f.name,
                data: f.data,
            },
            b,
        ),
        Cow::Owned(v) => (
            File {
                name: f.name,
                data: v,
            },
            v.as_slice(),
        ),
    };
    let r = match id {
        opt::HEADER_INFO => header_info(&cf, data, m).map(|_| ()),
        opt::FTRACE_EVENTS => ftrace_formats(&cf, data, m).map(|_| ()),
        opt::EVENT_FORMATS => event_formats(&cf, data, m).map(|_| ()),
        opt::KALLSYMS => kallsyms(&cf, data, m).map(|_| ()),
        opt::PRINTK => printk(&cf, data, m).map(|_| ()),
        _ => cmdlines(&cf, data, m).map(|_| ()),
    };
    if let Err(e) = r {
        let e = match (&content, e) {
            (
                Cow::Owned(_),
                ParseError::Truncated {
                    offset, expected, ..
                },
            ) => f.corrupt(
                off,
                format!(
                    "{what} (compressed) ends at byte {offset} of its content: expected {expected}"
                ),
            ),
            (_, e) => e,
        };
        return Err(e);
    }
    Ok(())
}

/// One version-7 option: id, size, data (DONE has its 8-byte data too).
fn option_v7(i: &[u8]) -> Res<'_, (u16, &[u8])> {
    let (i, id) = le_u16(i)?;
    let (i, n) = le_u32(i)?;
    let (i, d) = sized(n as u64)(i)?;
    Ok((i, (id, d)))
}

/// A version-7 BUFFER option: where the instance's flyrecord section is,
/// its name, clock, page size and per-CPU (id, offset, size).
struct BufferOpt {
    section: u64,
    name: String,
    clock: String,
    page_size: u32,
    cpus: Vec<(u32, u64, u64)>,
}

fn buffer_option(d: &[u8]) -> Option<BufferOpt> {
    let p = |i| -> Res<'_, BufferOpt> {
        let (i, section) = le_u64(i)?;
        let (i, name) = cstr(i)?;
        let (i, clock) = cstr(i)?;
        let (i, page_size) = le_u32(i)?;
        let (mut i, n) = le_u32(i)?;
        // each entry takes 20 bytes: the count is bounded by what is present
        let mut cpus = Vec::with_capacity((n as usize).min(i.len() / 20));
        for _ in 0..n {
            let (r, c) = le_u32(i)?;
            let (r, o) = le_u64(r)?;
            let (r, s) = le_u64(r)?;
            cpus.push((c, o, s));
            i = r;
        }
        Ok((
            i,
            BufferOpt {
                section,
                name: lossy(name),
                clock: lossy(clock),
                page_size,
                cpus,
            },
        ))
    };
    p(d).ok().map(|(_, b)| b)
}

/// The flyrecord data a version-7 BUFFER option points to.
fn buffer_v7<'a>(
    f: &File<'a>,
    b: BufferOpt,
    codec: Codec,
    m: &mut Meta<'a>,
) -> Result<Buffer<'a>, ParseError> {
    let name = b.name;
    if !(b.page_size.is_power_of_two() && (256..=(1 << 24)).contains(&b.page_size)) {
        return Err(f.corrupt(
            b.section,
            format!(
                "instance {name:?} has page size {} (not a power of two between 256 and 16 MiB)",
                b.page_size
            ),
        ));
    }
    let s = section(
        f,
        b.section,
        &format!("instance {name:?}'s flyrecord section"),
    )?;
    if s.id != opt::BUFFER {
        return Err(f.corrupt(
            b.section,
            format!(
                "expected a flyrecord section (id 3) for instance {name:?}, found id {}",
                s.id
            ),
        ));
    }
    let compressed = s.flags & SECTION_COMPRESSED != 0;
    let mut cpus = Vec::new();
    for (cpu, off, size) in b.cpus {
        if cpu >= 1 << 16 {
            m.problems.push(format!(
                "instance {name:?} names CPU {cpu} (at most 65536 CPUs exist); its data is skipped"
            ));
            continue;
        }
        // compressed data: the chunk count, then `size` bytes of chunks
        let stored = if compressed {
            size.saturating_add(4)
        } else {
            size
        };
        let raw = cpu_slice(f, off, stored, cpu, m);
        let pages = if compressed && !raw.is_empty() {
            match decompress::chunks(codec, raw) {
                Ok(v) => Cow::Owned(v),
                Err((v, e)) => {
                    m.problems.push(format!(
                        "CPU {cpu}'s compressed data at byte offset {off}: {e}; the pages before the damage are read"
                    ));
                    Cow::Owned(v)
                }
            }
        } else {
            Cow::Borrowed(raw)
        };
        cpus.push(CpuData {
            cpu,
            pages,
            offset: off,
        });
    }
    Ok(Buffer {
        name,
        clock: Some(b.clock),
        page_size: b.page_size,
        cpus,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_layout_from_header_page() {
        let t = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:4;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:12;\tsize:4084;\tsigned:1;\n";
        assert_eq!(
            page_layout(t),
            PageLayout {
                commit_size: 4,
                data_offset: 12
            }
        );
    }

    #[test]
    fn c_integers() {
        assert_eq!(parse_c_i64("0x10"), Some(16));
        assert_eq!(parse_c_i64("-12"), Some(-12));
        assert_eq!(parse_c_i64("010"), Some(8));
        assert_eq!(parse_c_i64("x"), None);
    }

    #[test]
    fn clock_in_brackets() {
        assert_eq!(selected_clock("[local] global counter"), "local");
        assert_eq!(selected_clock("mono"), "mono");
    }
}
