//! Line recognition: one chunk of the text parsed, line by line, into
//! borrowed event records (prefix and typed body) and the other lines'
//! facts: headers (CPU counts, ring-buffer entry counts), loss markers,
//! perf script call-chain frames, tracefs stack lines, and what is
//! unparseable.

use super::body::{self, Payload};
use super::prefix::{self, Style};

/// One event line, parsed but not interned.
pub(super) struct LineEv<'a> {
    pub(super) comm: &'a str,
    pub(super) tid: i32,
    pub(super) tgid: Option<i32>,
    pub(super) cpu: Option<u32>,
    pub(super) ts: u64,
    pub(super) event: &'a str,
    /// The text after the event name (kept for untyped events' fields).
    pub(super) body: &'a str,
    /// None: untyped event or a body that did not parse (see `bad_body`).
    pub(super) payload: Option<Payload<'a>>,
    /// The body did not match the event's known form.
    pub(super) bad_body: bool,
    /// Call-chain frames (perf script `-g`): range in [`ChunkOut::frames`].
    pub(super) frames: std::ops::Range<u32>,
    /// 0-based line index within the chunk.
    pub(super) line: u32,
}

/// First occurrence and count of one kind of anomaly within a chunk.
#[derive(Default)]
pub(super) struct Tally<'a> {
    pub(super) count: u64,
    pub(super) first_line: u64,
    pub(super) first_text: &'a str,
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
pub(super) struct ChunkOut<'a> {
    pub(super) events: Vec<LineEv<'a>>,
    pub(super) lines: u64,
    pub(super) unparsed: Tally<'a>,
    pub(super) not_utf8: Tally<'a>,
    /// Events the ring buffer dropped (`[LOST N EVENTS]`, entries header).
    pub(super) lost: u64,
    /// `CPU:N [LOST K EVENTS]` lines: (events of the chunk before it, N, K).
    pub(super) loss_marks: Vec<(usize, u32, u64)>,
    /// CPU count from a header (`#P:N`, `cpus=N`).
    pub(super) nr_cpus: u32,
    /// Call-chain addresses of all events of the chunk, innermost first.
    pub(super) frames: Vec<u64>,
    /// Frames before the chunk's first event: they continue the previous
    /// chunk's last event.
    pub(super) leading_frames: std::ops::Range<u32>,
    /// Kernel symbols learnt from frames: (start address, name).
    pub(super) ksyms: Vec<(u64, &'a str)>,
}

/// Parse every line of a chunk.
pub(super) fn parse_chunk(chunk: &[u8], style: Style) -> ChunkOut<'_> {
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
    let sym = before_dso(rest).trim();
    let (name, off) = match split_offset(sym) {
        Some((n, o)) => (n, u64::from_str_radix(o, 16).ok()?),
        None => (sym, 0),
    };
    if name.is_empty() || name.starts_with('[') || name.contains(' ') {
        return None;
    }
    Some((addr.checked_sub(off)?, name))
}

/// `s` up to its first ` (` (all of it without one): `s.split(" (")`'s
/// first piece, found by a byte search rather than a substring searcher
/// set up for every frame line.
fn before_dso(s: &str) -> &str {
    let mut from = 0;
    while let Some(i) = s[from..].find('(') {
        let at = from + i;
        if s[..at].ends_with(' ') {
            return &s[..at - 1];
        }
        from = at + 1;
    }
    s
}

/// `s.rsplit_once("+0x")` (the symbol and the hex offset of
/// `sym+0xoff`), by a byte search from the end.
fn split_offset(s: &str) -> Option<(&str, &str)> {
    let mut end = s.len();
    while let Some(i) = s[..end].rfind('+') {
        if s[i + 1..].starts_with("0x") {
            return Some((&s[..i], &s[i + 3..]));
        }
        end = i;
    }
    None
}

/// `cpus=N` (trace-cmd report header).
pub(super) fn is_cpus_header(line: &str) -> Option<u32> {
    line.strip_prefix("cpus=")?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_text_splits_equal_the_std_ones() {
        // Every string of up to 7 characters over an alphabet that makes
        // the patterns appear, overlap and repeat.
        let alphabet = ['+', '0', 'x', ' ', '(', 'a'];
        let mut checked = 0;
        let mut stack = vec![String::new()];
        while let Some(s) = stack.pop() {
            let std_before = s.split(" (").next().unwrap_or("");
            assert_eq!(before_dso(&s), std_before, "{s:?}");
            assert_eq!(split_offset(&s), s.rsplit_once("+0x"), "{s:?}");
            checked += 1;
            if s.len() < 7 {
                for c in alphabet {
                    stack.push(format!("{s}{c}"));
                }
            }
        }
        assert_eq!(checked, (0..=7).map(|n| 6usize.pow(n)).sum::<usize>());
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
}
