//! Kernel addresses -> names from kallsyms text (`/proc/kallsyms`), a batch
//! of addresses in one streaming pass, without building the symbol table.
//!
//! Reading `/proc/kallsyms` is expensive for the kernel (every line is
//! decompressed and formatted on each read: ~40 ms of system time for the
//! 122k lines of a distribution kernel), and parsing it into a sorted table
//! of owned names costs as much again. A report needs a handful of
//! addresses, so this module keeps, for each gap between two consecutive
//! query addresses, only the best candidate seen so far, and stops reading
//! as soon as the rest of the file cannot hold a better one (see
//! [`resolve`]).
//!
//! The answers are exactly those of blazesym's kallsyms resolver (which the
//! report used before, and which the tests use as the oracle): every line
//! `ADDR TYPE NAME [MODULE]` with a non-zero hexadecimal address is a
//! symbol; an address resolves to the symbol with the greatest address at
//! or below it, the first in file order when several share that address
//! (except inside the lowest address of the table, `_text`'s, where
//! blazesym's search yields the last of them unless the match is exact);
//! names are demangled (Rust, then C++) when they are mangled; an address
//! below every symbol is unknown ("address not found in symbolization
//! source"), and every address is unknown when the text holds no symbol at
//! all ("symbolization source has no or no relevant symbols").

use std::io::{self, Read};

/// Lowest address of the x86-64 kernel text mapping (`__START_KERNEL_map`).
/// The kernel image, and only the image, lives between it and the module
/// mapping space that follows the image; modules, BPF programs, ftrace
/// trampolines and kprobe instruction slots all live above the image.
const KERNEL_TEXT_MAP: u64 = 0xffff_ffff_8000_0000;

/// Why an address has no name (blazesym's wording, so reports read as before).
pub(crate) const UNKNOWN_ADDR: &str = "address not found in symbolization source";
/// The kallsyms text held no symbol (all addresses 0: read without privilege).
pub(crate) const MISSING_SYMS: &str = "symbolization source has no or no relevant symbols";

/// The outcome for one address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// The containing symbol and the offset of the address into it.
    Found {
        /// Symbol name (demangled when mangled).
        name: String,
        /// `addr - symbol address`.
        offset: u64,
    },
    /// No symbol: [`UNKNOWN_ADDR`] or [`MISSING_SYMS`].
    Unknown(&'static str),
}

/// Best candidate of one gap `(queries[j - 1], queries[j]]`: the greatest
/// symbol address in it, with the first and the last name at that address
/// in file order.
#[derive(Clone, Debug, Default)]
struct Candidate {
    addr: u64,
    first: Vec<u8>,
    last: Vec<u8>,
    set: bool,
}

/// Resolve `addrs` (any order, repeats allowed) against the kallsyms text
/// read from `reader`; one [`Lookup`] per element of `addrs`.
///
/// One pass: each symbol line updates the candidate of the gap between
/// consecutive sorted query addresses that it falls in. Reading stops early
/// (on x86-64) once the file's first section, the core kernel's symbols in
/// ascending address order (lines without a `[module]` column), has passed
/// the highest query address, provided every non-zero query already has a
/// core candidate in the kernel text mapping. Then a better symbol for a
/// query would have to lie between two core-kernel symbols, inside the
/// kernel image, and nothing listed after that section does: modules, BPF
/// programs, ftrace trampolines and kprobe slots live in the module
/// mapping space above the image (and the old per-CPU entry trampolines
/// below it). If the section turns out not to be sorted, a `[module]` line
/// comes first, or a query has no such candidate (or only the lowest
/// symbol, whose name depends on blazesym's tie rule below and hence on
/// whether a later entry is lower), the whole file is read.
/// A query of only the NULL address stops at the first symbol.
///
/// Errors: I/O errors of `reader`, and a line that is not UTF-8 before the
/// point where reading stops (blazesym rejected such a file as a whole).
pub(crate) fn resolve<R: Read>(mut reader: R, addrs: &[u64]) -> io::Result<Vec<Lookup>> {
    let mut queries: Vec<u64> = addrs.to_vec();
    queries.sort_unstable();
    queries.dedup();
    let max_query = queries.last().copied().unwrap_or(0);
    // The gap of the lowest non-zero query: its candidate is the lowest
    // answer (address 0 never has one).
    let lowest = queries.iter().position(|&q| q != 0);
    let early_stop_ok = cfg!(target_arch = "x86_64") && lowest.is_some();

    let mut best: Vec<Candidate> = vec![Candidate::default(); queries.len()];
    let mut any_symbol = false;
    // Lowest symbol address at or below the highest query.
    let mut min_addr = u64::MAX;
    // State of the early stop: still in the leading core section, sorted so far.
    let mut core_sorted = true;
    let mut prev_addr = 0u64;
    // Gap of the previous symbol, to skip the binary search in sorted runs.
    let mut last_gap = usize::MAX;

    let mut buf: Vec<u8> = vec![0; 64 * 1024];
    let mut filled = 0usize;
    let mut searched = 0usize;
    let mut eof = false;
    'read: loop {
        if filled == buf.len() {
            let n = buf.len();
            buf.resize(n * 2, 0); // a line longer than the buffer
        }
        let n = match reader.read(&mut buf[filled..]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            eof = true;
        }
        filled += n;
        let mut start = 0usize;
        // The carried-over partial line has no newline: search after it.
        let mut from = searched;
        loop {
            let rest = &buf[start..filled];
            let line = match rest[from..].iter().position(|&b| b == b'\n') {
                Some(i) => {
                    let i = from + i;
                    from = 0;
                    start += i + 1;
                    &rest[..i]
                }
                None if eof && !rest.is_empty() => {
                    from = 0;
                    start = filled;
                    rest
                }
                None => break,
            };
            if !line.is_ascii() && std::str::from_utf8(line).is_err() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "kallsyms line is not valid UTF-8",
                ));
            }
            let Some((addr, name, module_column)) = parse_line(line) else {
                continue;
            };
            if addr == 0 {
                continue;
            }
            any_symbol = true;
            if module_column || addr < prev_addr {
                core_sorted = false;
            }
            prev_addr = addr;
            if max_query == 0 {
                break 'read; // only the NULL address: no symbol can be at or below it
            }
            if addr > max_query {
                // (Not the lowest symbol so far, whose answer depends on
                // whether any later entry is lower still: see the module docs.)
                let in_text = |j: usize| {
                    best[j].set && best[j].addr >= KERNEL_TEXT_MAP && best[j].addr > min_addr
                };
                if early_stop_ok && core_sorted && lowest.is_some_and(in_text) {
                    break 'read;
                }
                continue;
            }
            // First query at or above addr: the gap the symbol falls in.
            let in_last = last_gap < queries.len()
                && addr <= queries[last_gap]
                && (last_gap == 0 || queries[last_gap - 1] < addr);
            let gap = if in_last {
                last_gap
            } else {
                queries.partition_point(|&q| q < addr)
            };
            last_gap = gap;
            min_addr = min_addr.min(addr);
            let c = &mut best[gap];
            if !c.set || addr > c.addr {
                c.set = true;
                c.addr = addr;
                c.first.clear();
                c.first.extend_from_slice(name);
                c.last.clear();
                c.last.extend_from_slice(name);
            } else if addr == c.addr {
                c.last.clear();
                c.last.extend_from_slice(name);
            }
        }
        buf.copy_within(start..filled, 0);
        filled -= start;
        searched = filled;
        if eof {
            break;
        }
    }

    let answers = answers(&queries, &best, min_addr, any_symbol);
    Ok(addrs
        .iter()
        .map(|a| {
            // `queries` holds every element of `addrs`.
            let j = queries.partition_point(|q| q < a);
            answers[j].clone()
        })
        .collect())
}

/// The answer of each sorted query `j`: the candidate of the highest
/// non-empty gap at or below it (`best`, per gap), blazesym's choice among
/// equal addresses; `min_addr` is the lowest symbol address seen at or
/// below the highest query, `any_symbol` whether the file had any.
fn answers(queries: &[u64], best: &[Candidate], min_addr: u64, any_symbol: bool) -> Vec<Lookup> {
    let mut answers: Vec<Lookup> = Vec::with_capacity(queries.len());
    let mut current: Option<usize> = None;
    for (j, &q) in queries.iter().enumerate() {
        if best[j].set {
            current = Some(j);
        }
        answers.push(match current {
            Some(k) => {
                let c = &best[k];
                // blazesym's lower-bound search steps back to the first of
                // equal addresses, except in the lowest group of the table,
                // where it keeps the last; exact matches take the first.
                let name = if q != c.addr && c.addr == min_addr {
                    &c.last
                } else {
                    &c.first
                };
                Lookup::Found {
                    // UTF-8 was checked line by line: nothing is replaced.
                    name: demangle(&String::from_utf8_lossy(name)),
                    offset: q - c.addr,
                }
            }
            None if any_symbol => Lookup::Unknown(UNKNOWN_ADDR),
            None => Lookup::Unknown(MISSING_SYMS),
        });
    }
    answers
}

/// `(address, name, has a [module] column)` of a kallsyms line, `None` when
/// it has fewer than three fields or the address is not hexadecimal.
fn parse_line(line: &[u8]) -> Option<(u64, &[u8], bool)> {
    let mut fields = line
        .split(|b| b.is_ascii_whitespace())
        .filter(|f| !f.is_empty());
    let addr = fields.next()?;
    let _type = fields.next()?;
    let name = fields.next()?;
    Some((parse_hex(addr)?, name, fields.next().is_some()))
}

/// `u64::from_str_radix(s, 16)` on bytes: an optional `+`, then one or more
/// hexadecimal digits, no overflow.
fn parse_hex(s: &[u8]) -> Option<u64> {
    let digits = s.strip_prefix(b"+").unwrap_or(s);
    if digits.is_empty() {
        return None;
    }
    let mut v = 0u64;
    for &b in digits {
        let d = (b as char).to_digit(16)?;
        v = v.checked_mul(16)?.checked_add(d as u64)?;
    }
    Some(v)
}

/// Demangle a Rust (legacy or v0) or C++ name, else return it unchanged,
/// as blazesym does for symbols of unknown language.
fn demangle(name: &str) -> String {
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        return format!("{d:#}");
    }
    cpp_demangle::Symbol::new(name)
        .ok()
        .and_then(|s| s.demangle().ok())
        .unwrap_or_else(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// blazesym's kallsyms resolver on the same text: the oracle.
    fn blazesym_answers(text: &str, addrs: &[u64]) -> Vec<Lookup> {
        use blazesym::symbolize::source::{Kernel, Source};
        use blazesym::symbolize::{Input, Symbolized, Symbolizer};
        use blazesym::MaybeDefault;
        let dir = std::env::temp_dir().join(format!("K-kallsyms-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.join(format!("kallsyms-{n}"));
        std::fs::File::create(&path)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let src = Source::Kernel(Kernel {
            kallsyms: MaybeDefault::Some(path.clone()),
            vmlinux: MaybeDefault::None,
            kaslr_offset: Some(0),
            debug_syms: false,
            ..Kernel::default()
        });
        let symbolizer = Symbolizer::new();
        let out = symbolizer.symbolize(&src, Input::AbsAddr(addrs)).unwrap();
        let _ = std::fs::remove_file(&path);
        out.into_iter()
            .map(|s| match s {
                Symbolized::Sym(s) => Lookup::Found {
                    name: s.name.to_string(),
                    offset: s.offset as u64,
                },
                Symbolized::Unknown(why) => Lookup::Unknown(match why.to_string() {
                    w if w == UNKNOWN_ADDR => UNKNOWN_ADDR,
                    w if w == MISSING_SYMS => MISSING_SYMS,
                    w => panic!("unexpected reason {w}"),
                }),
            })
            .collect()
    }

    /// A reader that hands out at most `chunk` bytes per read, so lines
    /// straddle buffer refills.
    struct Trickle<'a> {
        data: &'a [u8],
        chunk: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.chunk.min(out.len()).min(self.data.len());
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    const TEXT: &str = "\
0000000000000000 A fixed_percpu_data
ffffffff81000000 T srso_alias_untrain_ret
ffffffff81000000 T _stext
ffffffff81000000 T _text
ffffffff81000100 t
ffffffff81000200 T _RNvCs1234_7mycrate3foo
ffffffff81000300 T _ZN3foo3barEv
ffffffff81000400 T flush_tlb_func
bogus
zzzz T not_hex
ffffffff81000500 T native_flush_tlb_multi
ffffffff81000600 t update_curr
ffffffff83000000 R __stop_last_core
ffffffffc0201000 t ftrace_trampoline\t[__builtin__ftrace]
ffffffffc0300000 t mod_func\t[mymod]
ffffffffc0200000 t mod_below\t[mymod]
";

    fn check(text: &str, addrs: &[u64]) -> Vec<Lookup> {
        let want = blazesym_answers(text, addrs);
        for chunk in [7, 4096, 1 << 20] {
            let got = resolve(
                Trickle {
                    data: text.as_bytes(),
                    chunk,
                },
                addrs,
            )
            .unwrap();
            assert_eq!(got, want, "chunk {chunk}, addrs {addrs:x?}");
        }
        want
    }

    #[test]
    fn answers_equal_blazesym_on_crafted_text() {
        let k = 0xffff_ffff_8100_0000u64;
        let sets: Vec<Vec<u64>> = vec![
            vec![k, k + 1, k + 0x100, k + 0x410, k + 0x500, k + 0x610],
            // NULL callback, below everything, repeats, unsorted input
            vec![0, k - 1, k + 0x410, k + 0x410, k + 0x5ff, 1],
            // past the core section: module entries (unsorted, and one that
            // undercuts a core symbol) decide
            vec![
                k + 0x660,
                0xffff_ffff_c020_1010,
                0xffff_ffff_c020_0008,
                u64::MAX,
            ],
            // mangled names
            vec![k + 0x201, k + 0x308],
            // low kernel addresses: no early stop
            vec![0xffff_8880_0000_0000, k + 0x600],
            // in the text mapping but below _text: an entry listed after
            // the core section (old per-CPU entry trampolines) answers
            vec![0xffff_ffff_8000_1000, k + 0x600],
            vec![0xffff_fe00_0000_1010],
            vec![],
        ];
        // An entry below the kernel image listed after the core section
        // (as the per-CPU entry trampolines of 4.15-4.18 kernels were): it
        // answers addresses below _text, and it is the lowest symbol, which
        // changes blazesym's choice among the aliases of _text.
        let with_low_entry =
            format!("{TEXT}fffffe0000001000 t __entry_trampoline\t[__builtin__arch]\n");
        for addrs in &sets {
            check(TEXT, addrs);
            check(&with_low_entry, addrs);
        }
        // Spot checks that the oracle is what we think it is.
        let r = check(
            TEXT,
            &[
                k + 0x10,
                k + 0x202,
                k + 0x304,
                0xffff_ffff_c020_0008,
                0,
                k + 0x400,
            ],
        );
        let name = |l: &Lookup| match l {
            Lookup::Found { name, offset } => format!("{name}+{offset:#x}"),
            Lookup::Unknown(w) => w.to_string(),
        };
        assert_eq!(name(&r[0]), "_text+0x10", "lowest group: the last");
        assert_eq!(name(&r[1]), "mycrate::foo+0x2", "Rust v0 demangled");
        assert_eq!(name(&r[2]), "foo::bar()+0x4", "C++ demangled");
        assert_eq!(name(&r[3]), "mod_below+0x8", "unsorted module lines");
        assert_eq!(name(&r[4]), UNKNOWN_ADDR);
        assert_eq!(name(&r[5]), "flush_tlb_func+0x0");
        let r = check(TEXT, &[k, k + 0x500, k + 0x501]);
        assert_eq!(
            name(&r[0]),
            "srso_alias_untrain_ret+0x0",
            "exact: the first"
        );
        assert_eq!(name(&r[2]), "native_flush_tlb_multi+0x1");
    }

    #[test]
    fn hex_parsing_equals_from_str_radix() {
        for s in [
            "0",
            "ffffffff81000000",
            "FFFF",
            "+1f",
            "+",
            "",
            "-1",
            "0x10",
            "g",
            "1 ",
            "ffffffffffffffff",
            "10000000000000000",
            "00000000000000000001",
        ] {
            assert_eq!(
                parse_hex(s.as_bytes()),
                u64::from_str_radix(s, 16).ok(),
                "{s:?}"
            );
        }
    }

    #[test]
    fn no_symbols_and_odd_files() {
        // Unprivileged reads show every address as 0.
        let zeros = "0000000000000000 T a\n0000000000000000 T b\n";
        let r = check(zeros, &[0, 0xffff_ffff_8100_0000]);
        assert_eq!(r[1], Lookup::Unknown(MISSING_SYMS));
        check("", &[1, 2]);
        // No trailing newline; a very long line across buffer refills.
        let long = format!(
            "ffffffff81000000 T {}\nffffffff81000010 T b_func",
            "x".repeat(200_000)
        );
        let r = check(&long, &[0xffff_ffff_8100_0001, 0xffff_ffff_8100_0011]);
        assert_eq!(
            r[1],
            Lookup::Found {
                name: "b_func".into(),
                offset: 1
            }
        );
        // Not UTF-8: an error, as blazesym's loader gives.
        let bad = b"ffffffff81000000 T a\xff\n";
        assert!(resolve(&bad[..], &[0xffff_ffff_8200_0000]).is_err());
    }

    #[test]
    fn early_stop_reads_only_the_needed_prefix() {
        struct Counting<'a> {
            data: &'a [u8],
            read: usize,
        }
        impl Read for Counting<'_> {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                let n = 4096.min(out.len()).min(self.data.len() - self.read);
                out[..n].copy_from_slice(&self.data[self.read..self.read + n]);
                self.read += n;
                Ok(n)
            }
        }
        let mut text = String::new();
        for i in 0..100_000u64 {
            text.push_str(&format!("{:016x} t f{i}\n", 0xffff_ffff_8100_0000 + i * 16));
        }
        let q = [0, 0xffff_ffff_8100_0000 + 1000 * 16 + 3];
        let mut c = Counting {
            data: text.as_bytes(),
            read: 0,
        };
        let got = resolve(&mut c, &q).unwrap();
        assert_eq!(got, blazesym_answers(&text, &q));
        if cfg!(target_arch = "x86_64") {
            assert!(c.read < 128 * 1024, "read {} of {}", c.read, text.len());
        }
    }

    #[test]
    fn answers_equal_blazesym_on_the_live_kallsyms() {
        // Every 97th symbol address, offsets into it, and the gaps around:
        // the whole table through both resolvers.
        let Ok(text) = std::fs::read_to_string("/proc/kallsyms") else {
            println!("skipped: /proc/kallsyms not readable");
            return;
        };
        let mut addrs: Vec<u64> = text
            .lines()
            .filter_map(|l| u64::from_str_radix(l.split_whitespace().next()?, 16).ok())
            .step_by(97)
            .flat_map(|a| {
                [
                    a,
                    a.wrapping_add(1),
                    a.wrapping_add(0x37),
                    a.wrapping_sub(1),
                ]
            })
            .collect();
        addrs.extend([0, u64::MAX, 0xffff_ffff_8100_0000]);
        // Both read the same snapshot (BPF programs come and go).
        let want = blazesym_answers(&text, &addrs);
        assert_eq!(resolve(text.as_bytes(), &addrs).unwrap(), want);
        // A typical report's few addresses in the kernel text: early stop.
        let few: Vec<u64> = addrs
            .iter()
            .copied()
            .filter(|a| (KERNEL_TEXT_MAP..KERNEL_TEXT_MAP + (1 << 26)).contains(a))
            .take(8)
            .collect();
        // The live file itself (its core section does not change).
        let file = std::fs::File::open("/proc/kallsyms").unwrap();
        assert_eq!(resolve(file, &few).unwrap(), blazesym_answers(&text, &few));
    }
}
