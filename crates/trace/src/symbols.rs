//! Code locations and their names: what the analyses ask for and what a
//! [`Symbolizer`] answers, without reading the host.
//!
//! A [`Location`] is a kernel address, a user address of a process, or a
//! name a text trace already printed; a [`SymbolTable`] holds one
//! [`Resolved`] per distinct location. Which source may answer is the
//! symbolizer's business: [`TraceSymbols`] uses only what the trace
//! carries (its stored kallsyms, names from text traces), and crate
//! `schedscope-symbolize` adds the host (live `/proc/kallsyms`, ELF files
//! of recorded mappings, live processes). As with `log::set_logger`, the
//! binary picks the implementation once at start ([`install`]); libraries
//! and tests that install none get [`TraceSymbols`], so the analyses
//! themselves never read the host.

use crate::{Sym, Tid, Trace};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::OnceLock;

/// Values at or above this in a perf call chain are `PERF_CONTEXT_*`
/// markers, not addresses ((u64)-4095).
pub const PERF_CONTEXT_MAX: u64 = (-4095i64) as u64;

/// Lowest kernel address on x86-64 (upper canonical half).
pub const KERNEL_START: u64 = 0xffff_8000_0000_0000;

/// Module name used for kernel symbols (as `perf report` spells it).
pub const KERNEL_MODULE: &str = "[kernel.kallsyms]";

/// Whether a call-chain value is a `PERF_CONTEXT_*` marker.
pub fn is_context_marker(v: u64) -> bool {
    v >= PERF_CONTEXT_MAX
}

/// Whether `addr` is a kernel address (x86-64 upper half).
pub fn is_kernel_addr(addr: u64) -> bool {
    addr >= KERNEL_START && !is_context_marker(addr)
}

/// `PERF_CONTEXT_KERNEL`: the frames that follow are kernel addresses.
pub const PERF_CONTEXT_KERNEL: u64 = (-128i64) as u64;
/// `PERF_CONTEXT_USER`: the frames that follow are user addresses.
pub const PERF_CONTEXT_USER: u64 = (-512i64) as u64;

/// A code location to symbolize: a kernel address, a user address in a
/// process, or a name that a text trace already printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Location {
    /// The process (tgid) of a user address; `None` for kernel addresses and names.
    pub pid: Option<Tid>,
    /// The raw value ([`Sym`] encoding: address or tagged name).
    pub sym: Sym,
    /// A user-space address (from the call chain's context, or the address range).
    pub user: bool,
}

impl Location {
    /// A kernel address or a name (no process).
    pub fn kernel(sym: Sym) -> Location {
        Location {
            pid: None,
            sym,
            user: false,
        }
    }
    /// A user-space address of process `pid`, whatever its value (frames
    /// after `PERF_CONTEXT_USER` can be garbage that looks like a kernel address).
    pub fn user(pid: Option<Tid>, sym: Sym) -> Location {
        Location {
            pid,
            sym,
            user: sym.addr().is_some(),
        }
    }
    /// An address seen in process `pid`, kernel or user told by its range.
    pub fn in_process(pid: Option<Tid>, sym: Sym) -> Location {
        match sym.addr() {
            Some(a) if !is_kernel_addr(a) => Location::user(pid, sym),
            _ => Location::kernel(sym),
        }
    }
}

/// The frames of a call chain of process `pid` as locations, innermost
/// first: `PERF_CONTEXT_KERNEL` / `PERF_CONTEXT_USER` markers say which
/// space the following frames are in (other contexts, e.g. guest frames,
/// are kept as user frames without a process, hence unsymbolized); without
/// markers the address range decides.
pub fn chain_locations(chain: &[u64], pid: Option<Tid>) -> Vec<Location> {
    let mut space: Option<Option<Option<Tid>>> = None; // None = by range
    let mut out = Vec::with_capacity(chain.len());
    for &v in chain {
        if is_context_marker(v) {
            space = Some(match v {
                PERF_CONTEXT_KERNEL => None,
                PERF_CONTEXT_USER => Some(pid),
                _ => Some(None),
            });
            continue;
        }
        let sym = Sym(v);
        out.push(match space {
            None => Location::in_process(pid, sym),
            Some(None) => Location::kernel(sym),
            Some(Some(p)) => Location::user(p, sym),
        });
    }
    out
}

/// The outcome of symbolizing one location.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Resolved {
    /// Symbol name; `None` = unsymbolized.
    pub name: Option<String>,
    /// Offset of the address into the symbol.
    pub offset: u64,
    /// `[kernel.kallsyms]`, the ELF path, or `[unknown]`.
    pub module: String,
    /// Why it is unsymbolized (for a symbolized frame: empty, or a note
    /// that its file could not be verified against the recording).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The raw address (0 for names from text traces).
    pub addr: u64,
}

impl Resolved {
    /// An unsymbolized address with the reason.
    pub fn unsymbolized(addr: u64, module: &str, reason: impl Into<String>) -> Resolved {
        Resolved {
            name: None,
            offset: 0,
            module: module.to_string(),
            reason: reason.into(),
            addr,
        }
    }

    /// The symbol name, or `[unsymbolized 0xADDR]`.
    pub fn function(&self) -> String {
        match &self.name {
            Some(n) => n.clone(),
            None => format!("[unsymbolized 0x{:x}]", self.addr),
        }
    }

    /// `name+0xoff` (as `perf script` prints `%pS`), or the unsymbolized marker.
    pub fn with_offset(&self) -> String {
        match &self.name {
            Some(n) if self.offset > 0 => format!("{n}+0x{:x}", self.offset),
            _ => self.function(),
        }
    }

    /// Whether a name was found.
    pub fn is_symbolized(&self) -> bool {
        self.name.is_some()
    }
}

impl fmt::Display for Resolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.function())
    }
}

/// Symbols for a set of locations, each resolved once.
#[derive(Clone, Debug, Default)]
pub struct SymbolTable {
    map: HashMap<Location, Resolved>,
    /// Which kernel source was used (`trace kallsyms`, `live /proc/kallsyms`, or `none`).
    pub kernel_source: &'static str,
}

impl SymbolTable {
    /// A table of resolutions, from a [`Symbolizer`]; `kernel_source`
    /// says which kernel symbols answered (`trace kallsyms`, `live
    /// /proc/kallsyms`, or `none`).
    pub fn new(map: HashMap<Location, Resolved>, kernel_source: &'static str) -> SymbolTable {
        SymbolTable { map, kernel_source }
    }

    /// Resolve every distinct location of `locs` against `trace` with the
    /// [`installed`] symbolizer.
    pub fn build(trace: &Trace, locs: impl IntoIterator<Item = Location>) -> SymbolTable {
        installed().resolve(trace, locs.into_iter().collect())
    }

    /// The resolution of `loc` (an unsymbolized marker if it was not in the build set).
    pub fn get(&self, loc: Location) -> Resolved {
        self.map.get(&loc).cloned().unwrap_or_else(|| {
            Resolved::unsymbolized(loc.sym.addr().unwrap_or(0), "[unknown]", "not looked up")
        })
    }

    /// The resolution of `loc`, borrowed, if it was in the build set.
    pub fn resolved(&self, loc: Location) -> Option<&Resolved> {
        self.map.get(&loc)
    }

    /// Function name of `loc` (see [`Resolved::function`]).
    pub fn name(&self, loc: Location) -> String {
        match self.map.get(&loc) {
            Some(r) => r.function(),
            None => format!("[unsymbolized 0x{:x}]", loc.sym.0),
        }
    }

    /// Number of distinct locations without a name.
    pub fn unsymbolized_count(&self) -> usize {
        self.map.values().filter(|r| !r.is_symbolized()).count()
    }

    /// Number of distinct locations resolved.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether nothing was resolved.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// Split `name+0xoff/0xsize` (as `%pS` prints) into the name and offset.
pub fn split_offset(s: &str) -> (&str, u64) {
    match s.split_once("+0x") {
        Some((base, rest)) if !base.is_empty() => {
            let hex = rest.split('/').next().unwrap_or("");
            (base, u64::from_str_radix(hex, 16).unwrap_or(0))
        }
        _ => (s, 0),
    }
}

/// The frames of a call chain with `PERF_CONTEXT_*` markers removed (innermost first).
pub fn frames(chain: &[u64]) -> impl Iterator<Item = u64> + '_ {
    chain.iter().copied().filter(|&v| !is_context_marker(v))
}

/// Offsets at or beyond this are not trusted to be inside the preceding symbol.
pub const MAX_SYMBOL_SIZE: u64 = 1 << 20;

/// Resolves code locations: the one seam between the analyses and
/// wherever names come from.
pub trait Symbolizer: Send + Sync {
    /// Resolve every location of `locs` (each distinct) against `trace`.
    fn resolve(&self, trace: &Trace, locs: HashSet<Location>) -> SymbolTable;
}

/// The symbolizer [`install`]ed by the binary.
static INSTALLED: OnceLock<Box<dyn Symbolizer>> = OnceLock::new();

/// Make `s` the symbolizer of this process (what [`SymbolTable::build`]
/// and so every analysis uses); `false` when one was already installed
/// (the first stays).
pub fn install(s: Box<dyn Symbolizer>) -> bool {
    INSTALLED.set(s).is_ok()
}

/// The [`install`]ed symbolizer, else [`TraceSymbols`].
pub fn installed() -> &'static dyn Symbolizer {
    match INSTALLED.get() {
        Some(s) => s.as_ref(),
        None => &TraceSymbols,
    }
}

/// A name from a text trace (`Sym::name_id`), as `%pS` printed it.
pub fn text_name(trace: &Trace, sym: Sym) -> Resolved {
    let name = sym
        .name_id()
        .map(|id| trace.strings.get(id).to_string())
        .unwrap_or_default();
    if name.is_empty() || name == "0x0" || name == "(nil)" {
        Resolved::unsymbolized(0, "[unknown]", "empty name in text trace")
    } else {
        // `%pS` text is `name+0xoff/0xsize`: keep the function name.
        let (base, offset) = split_offset(&name);
        Resolved {
            name: Some(base.to_string()),
            offset,
            module: String::new(),
            reason: String::new(),
            addr: 0,
        }
    }
}

/// A kernel address through the kallsyms stored in the trace (non-empty
/// [`Trace::kernel_symbols`]).
pub fn stored_kernel_symbol(trace: &Trace, a: u64) -> Resolved {
    match trace.kernel_symbols.lookup(a) {
        // No kernel function spans 1 MiB: a larger offset means the
        // address lies in a gap the table does not cover (module area past
        // the last symbol, per-CPU offsets, or a garbage user frame that
        // looks like a kernel address).
        Some((name, off)) if off < MAX_SYMBOL_SIZE => Resolved {
            name: Some(name.to_string()),
            offset: off,
            module: KERNEL_MODULE.to_string(),
            reason: String::new(),
            addr: a,
        },
        _ => Resolved::unsymbolized(a, KERNEL_MODULE, "outside the trace's kallsyms"),
    }
}

/// Symbols from the trace alone: names of text traces and kernel addresses
/// through the trace's stored kallsyms; other addresses stay unsymbolized
/// with the reason (no host symbolizer installed).
#[derive(Clone, Copy, Debug, Default)]
pub struct TraceSymbols;

impl Symbolizer for TraceSymbols {
    fn resolve(&self, trace: &Trace, locs: HashSet<Location>) -> SymbolTable {
        let stored = !trace.kernel_symbols.syms.is_empty();
        let mut any_kernel = false;
        let map = locs
            .into_iter()
            .map(|loc| {
                let r = match loc.sym.addr() {
                    None => text_name(trace, loc.sym),
                    Some(a) if !loc.user => {
                        any_kernel = true;
                        if stored {
                            stored_kernel_symbol(trace, a)
                        } else {
                            Resolved::unsymbolized(
                                a,
                                KERNEL_MODULE,
                                "the trace stores no kallsyms (and no host symbolizer is installed)",
                            )
                        }
                    }
                    Some(a) => Resolved::unsymbolized(
                        a,
                        "[unknown]",
                        "user address (no host symbolizer is installed)",
                    ),
                };
                (loc, r)
            })
            .collect();
        let source = if any_kernel && stored {
            "trace kallsyms"
        } else {
            "none"
        };
        SymbolTable::new(map, source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{KernelSymbols, TraceFormat};

    #[test]
    fn the_trace_alone_names_stored_kernel_symbols_and_text_names() {
        let mut t = Trace::new("t", TraceFormat::PerfData);
        t.kernel_symbols = KernelSymbols {
            syms: vec![(0xffff_ffff_8100_0000, "flush_tlb_func".into())],
        };
        let k = Location::kernel(Sym::from_addr(0xffff_ffff_8100_0010));
        let far = Location::kernel(Sym::from_addr(0xffff_ffff_9100_0000));
        let id = t.strings.intern("smp_call_function_many_cond+0x1a0/0x2e0");
        let n = Location::kernel(Sym::from_name(id));
        let u = Location::user(Some(Tid(7)), Sym::from_addr(0x40_1000));
        let st = TraceSymbols.resolve(&t, [k, far, n, u].into_iter().collect());
        assert_eq!(st.kernel_source, "trace kallsyms");
        assert_eq!(st.get(k).with_offset(), "flush_tlb_func+0x10");
        assert!(!st.get(far).is_symbolized(), "16 MiB past the last symbol");
        assert_eq!(st.get(n).with_offset(), "smp_call_function_many_cond+0x1a0");
        let r = st.get(u);
        assert!(
            !r.is_symbolized() && r.reason.contains("no host symbolizer"),
            "{r:?}"
        );
        assert_eq!(st.unsymbolized_count(), 2);
    }

    #[test]
    fn chain_context_decides_the_address_space() {
        let pid = Some(Tid(7));
        let chain = [
            PERF_CONTEXT_KERNEL,
            0xffff_ffff_8100_0000,
            PERF_CONTEXT_USER,
            0x40_1000,
            0xffff_f5b8_c0c7_4859, // garbage user frame that looks like a kernel address
        ];
        let l = chain_locations(&chain, pid);
        assert_eq!(l.len(), 3);
        assert!(!l[0].user && l[0].pid.is_none());
        assert!(l[1].user && l[1].pid == pid);
        assert!(l[2].user, "frames after PERF_CONTEXT_USER are user frames");
        // Without markers the range decides.
        let l = chain_locations(&[0xffff_ffff_8100_0000, 0x40_1000], pid);
        assert!(!l[0].user && l[1].user);
    }

    #[test]
    fn context_markers_are_skipped() {
        let chain = [
            u64::MAX - 127,
            0xffff_ffff_8100_0000,
            u64::MAX - 511,
            0x1000,
        ];
        assert_eq!(
            frames(&chain).collect::<Vec<_>>(),
            vec![0xffff_ffff_8100_0000, 0x1000]
        );
        assert!(is_kernel_addr(0xffff_ffff_8100_0000));
        assert!(!is_kernel_addr(0x7fff_0000_0000));
    }
}
