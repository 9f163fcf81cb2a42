//! HEADER_TRACING_DATA: the tracefs format files, kallsyms, printk formats
//! and saved cmdlines that `perf record` embeds for tracepoint events.
//!
//! Read the way tools/perf/util/trace-event-read.c reads it:
//! `"\x17\x08\x44tracing"`, version string, endianness byte, long size,
//! page size, header_page, header_event, ftrace formats, event formats per
//! system, kallsyms, printk formats, and (version >= 0.6) saved cmdlines.

use super::bytes::Cursor;
use crate::tracefs_format::{parse_format, EventFormat};
use std::collections::HashMap;

/// Magic at the start of the tracing data.
pub const TRACING_MAGIC: &[u8; 10] = b"\x17\x08\x44tracing";

/// Decoded tracing data.
#[derive(Debug, Default)]
pub struct TracingData {
    /// Version string (`0.6`).
    pub version: String,
    /// Whether the recording host was big-endian.
    pub big_endian: bool,
    /// sizeof(long) on the recording host.
    pub long_size: u8,
    /// Page size on the recording host.
    pub page_size: u32,
    /// Event formats with their system set.
    pub formats: Vec<EventFormat>,
    /// Kernel symbols (address, name), sorted by address.
    pub kallsyms: Vec<(u64, String)>,
    /// printk format strings by address (for `const char *` fields).
    pub printk: HashMap<u64, String>,
    /// Saved cmdlines (pid, comm).
    pub cmdlines: Vec<(i32, String)>,
    /// Non-fatal problems (format files that did not parse, truncation).
    pub problems: Vec<String>,
}

/// Parse tracing data; `base` is its file offset (for messages). Stops at
/// the first truncation with a problem message, keeping what was read.
pub fn parse(bytes: &[u8], base: u64) -> TracingData {
    let mut td = TracingData::default();
    let mut c = Cursor::new(bytes, base);
    if parse_inner(&mut c, &mut td).is_none() {
        td.problems.push(format!(
            "tracing data (HEADER_TRACING_DATA at byte offset {base}) is truncated or corrupt at byte offset {}",
            c.offset()
        ));
    }
    td.kallsyms.sort_by_key(|(a, _)| *a);
    td
}

fn sized<'a>(c: &mut Cursor<'a>, len: u64) -> Option<&'a [u8]> {
    let len = usize::try_from(len).ok()?;
    c.bytes(len)
}

fn parse_inner(c: &mut Cursor<'_>, td: &mut TracingData) -> Option<()> {
    if c.bytes(10)? != TRACING_MAGIC {
        td.problems.push(format!(
            "tracing data at byte offset {} does not start with the \"\\x17\\x08\\x44tracing\" magic",
            c.base
        ));
        return Some(());
    }
    td.version = String::from_utf8_lossy(c.cstr()?).into_owned();
    td.big_endian = c.u8()? != 0;
    td.long_size = c.u8()?;
    td.page_size = c.u32()?;
    if td.big_endian {
        td.problems
            .push("tracing data of a big-endian host is not supported".into());
        return Some(());
    }
    // header_page / header_event
    if c.cstr()? != b"header_page" {
        return None;
    }
    let n = c.u64()?;
    sized(c, n)?;
    if c.cstr()? != b"header_event" {
        return None;
    }
    let n = c.u64()?;
    sized(c, n)?;
    // ftrace formats
    let count = c.u32()?;
    for _ in 0..count {
        let n = c.u64()?;
        let text = sized(c, n)?;
        add_format(td, "ftrace", text);
    }
    // event formats per system
    let systems = c.u32()?;
    for _ in 0..systems {
        let system = String::from_utf8_lossy(c.cstr()?).into_owned();
        let count = c.u32()?;
        for _ in 0..count {
            let n = c.u64()?;
            let text = sized(c, n)?;
            add_format(td, &system, text);
        }
    }
    // kallsyms
    let n = c.u32()?;
    let text = sized(c, n as u64)?;
    td.kallsyms = parse_kallsyms(text);
    // printk formats
    let n = c.u32()?;
    let text = sized(c, n as u64)?;
    td.printk = parse_printk(text);
    // saved cmdlines (0.6+)
    if td.version.as_str() >= "0.6" && c.remaining() >= 8 {
        let n = c.u64()?;
        let text = sized(c, n)?;
        td.cmdlines = String::from_utf8_lossy(text)
            .lines()
            .filter_map(|l| {
                let (pid, comm) = l.split_once(' ')?;
                Some((pid.trim().parse().ok()?, comm.to_string()))
            })
            .collect();
    }
    Some(())
}

fn add_format(td: &mut TracingData, system: &str, text: &[u8]) {
    let s = String::from_utf8_lossy(text);
    match parse_format(&s) {
        Ok(mut f) => {
            f.system = system.to_string();
            td.formats.push(f);
        }
        Err(e) => td.problems.push(format!(
            "format description of an event in system {system}: {e}"
        )),
    }
}

/// Parse /proc/kallsyms text: `ffffffff81000000 T _stext [module]`.
pub fn parse_kallsyms(text: &[u8]) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    for line in text.split(|&b| b == b'\n') {
        let mut it = line
            .split(|&b| b == b' ' || b == b'\t')
            .filter(|s| !s.is_empty());
        let (Some(addr), Some(_kind), Some(name)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(&String::from_utf8_lossy(addr), 16) else {
            continue;
        };
        out.push((addr, String::from_utf8_lossy(name).into_owned()));
    }
    out.sort_by_key(|(a, _)| *a);
    out
}

/// Parse printk formats: `0xffffffff8263b9a8 : "string"`.
pub(crate) fn parse_printk(text: &[u8]) -> HashMap<u64, String> {
    let s = String::from_utf8_lossy(text);
    s.lines()
        .filter_map(|l| {
            let (a, v) = l.split_once(" : ")?;
            let a = u64::from_str_radix(a.trim().trim_start_matches("0x"), 16).ok()?;
            let v = v.trim();
            let v = v.strip_prefix('"').unwrap_or(v);
            let v = v.strip_suffix('"').unwrap_or(v);
            Some((a, v.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(version: &str, formats: &[(&str, &str)], kallsyms: &str, cmdlines: &str) -> Vec<u8> {
        let mut b = TRACING_MAGIC.to_vec();
        b.extend_from_slice(version.as_bytes());
        b.push(0);
        b.push(0);
        b.push(8);
        b.extend_from_slice(&4096u32.to_le_bytes());
        b.extend_from_slice(b"header_page\0");
        b.extend_from_slice(&3u64.to_le_bytes());
        b.extend_from_slice(b"abc");
        b.extend_from_slice(b"header_event\0");
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes()); // no ftrace formats
        b.extend_from_slice(&(formats.len() as u32).to_le_bytes());
        for (sys, f) in formats {
            b.extend_from_slice(sys.as_bytes());
            b.push(0);
            b.extend_from_slice(&1u32.to_le_bytes());
            b.extend_from_slice(&(f.len() as u64).to_le_bytes());
            b.extend_from_slice(f.as_bytes());
        }
        b.extend_from_slice(&(kallsyms.len() as u32).to_le_bytes());
        b.extend_from_slice(kallsyms.as_bytes());
        let printk = "0xffffffff82000010 : \"reschedule\"\n";
        b.extend_from_slice(&(printk.len() as u32).to_le_bytes());
        b.extend_from_slice(printk.as_bytes());
        b.extend_from_slice(&(cmdlines.len() as u64).to_le_bytes());
        b.extend_from_slice(cmdlines.as_bytes());
        b
    }

    #[test]
    fn parses_all_parts() {
        let f = "name: x\nID: 7\nformat:\n\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n\nprint fmt: \"a=%d\", REC->a\n";
        let b = build(
            "0.6",
            &[("sys", f)],
            "ffffffff81000100 T b\nffffffff81000000 T _stext\nffffffffc0000000 t m_fn\t[mod]\n",
            "12 bash\n13 my comm\n",
        );
        let td = parse(&b, 100);
        assert!(td.problems.is_empty(), "{:?}", td.problems);
        assert_eq!(td.long_size, 8);
        assert_eq!(td.page_size, 4096);
        assert_eq!(td.formats.len(), 1);
        assert_eq!(td.formats[0].full_name(), "sys:x");
        assert_eq!(td.formats[0].id, 7);
        assert_eq!(
            td.kallsyms,
            vec![
                (0xffffffff81000000, "_stext".into()),
                (0xffffffff81000100, "b".into()),
                (0xffffffffc0000000, "m_fn".into())
            ]
        );
        assert_eq!(
            td.printk.get(&0xffffffff82000010).map(String::as_str),
            Some("reschedule")
        );
        assert_eq!(
            td.cmdlines,
            vec![(12, "bash".into()), (13, "my comm".into())]
        );
    }

    #[test]
    fn truncation_keeps_what_was_read() {
        let f = "name: x\nID: 7\nformat:\n\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n";
        let b = build("0.6", &[("sys", f)], "ffffffff81000000 T _stext\n", "");
        for cut in 0..b.len() - 8 {
            let td = parse(&b[..cut], 0);
            assert!(!td.problems.is_empty(), "cut at {cut} not reported");
        }
        let td = parse(&b[..b.len() - 30], 0);
        assert_eq!(td.formats.len(), 1);
        assert!(td.problems[0].contains("truncated"), "{:?}", td.problems);
    }
}
