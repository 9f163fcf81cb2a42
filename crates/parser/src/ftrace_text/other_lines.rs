//! Lines that are not events: headers (CPU counts, ring-buffer entry
//! counts), loss markers, perf script call-chain frames, tracefs stack
//! lines, and what is unparseable.

use super::detect::is_cpus_header;

/// A line that is not an event line.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Other<'a> {
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
pub(super) fn lost_line_cpu(line: &str) -> Option<u32> {
    let r = line.trim().strip_prefix("CPU")?;
    let r = r.strip_prefix(':').unwrap_or(r).trim_start();
    let end = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
    r[..end].parse().ok()
}

pub(super) fn classify_other(line: &str) -> Other<'_> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
