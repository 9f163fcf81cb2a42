//! Turning code addresses (IPI callsites, callbacks, call-chain frames,
//! profile samples) into symbol names.
//!
//! * Kernel addresses are resolved through the kallsyms stored in the trace
//!   file ([`Trace::kernel_symbols`]), so a trace is symbolized correctly on
//!   a machine other than the one that recorded it. Only when the file holds
//!   no kallsyms and was recorded on the running kernel (same release) does
//!   blazesym's kernel source read the live `/proc/kallsyms`.
//! * User addresses go through blazesym's process source (the process maps
//!   and ELF files). That only works while the recorded process still lives
//!   (and is the same process: its comm is checked); otherwise the frame is
//!   marked [`Resolved::unsymbolized`] with the reason.
//! * Text traces already carry names ([`Sym::name_id`]).
//!
//! Each distinct (process, address) is symbolized once; kernel addresses are
//! looked up in parallel (rayon) and each process gets its own blazesym
//! symbolizer on a rayon task.

use rayon::prelude::*;
use schedscope_trace::{Sym, Tid, Trace};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::fmt;

/// Values at or above this in a perf call chain are `PERF_CONTEXT_*`
/// markers, not addresses ((u64)-4095).
pub const PERF_CONTEXT_MAX: u64 = (-4095i64) as u64;

/// Lowest kernel address on x86-64 (upper canonical half).
pub const KERNEL_START: u64 = 0xffff_8000_0000_0000;

/// Offsets at or beyond this are not trusted to be inside the preceding symbol.
const MAX_SYMBOL_SIZE: u64 = 1 << 20;

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
    /// Why it is unsymbolized (empty when symbolized).
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

/// The addresses of one process with their resolutions.
type UserResolved = (Option<Tid>, Vec<(u64, Resolved)>);

/// Symbols for a set of locations, each resolved once.
#[derive(Clone, Debug, Default)]
pub struct SymbolTable {
    map: HashMap<Location, Resolved>,
    /// Which kernel source was used (`trace kallsyms`, `live /proc/kallsyms`, or `none`).
    pub kernel_source: &'static str,
}

impl SymbolTable {
    /// Resolve every distinct location of `locs` against `trace`.
    pub fn build(trace: &Trace, locs: impl IntoIterator<Item = Location>) -> SymbolTable {
        let distinct: HashSet<Location> = locs.into_iter().collect();
        let mut kernel = Vec::new();
        let mut user: HashMap<Option<Tid>, Vec<u64>> = HashMap::new();
        let mut map = HashMap::with_capacity(distinct.len());
        for loc in distinct {
            match loc.sym.addr() {
                None => {
                    let name = loc
                        .sym
                        .name_id()
                        .map(|id| trace.strings.get(id).to_string())
                        .unwrap_or_default();
                    let r = if name.is_empty() || name == "0x0" || name == "(nil)" {
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
                    };
                    map.insert(loc, r);
                }
                Some(a) if !loc.user => kernel.push(a),
                Some(a) => user.entry(loc.pid).or_default().push(a),
            }
        }
        let (kernel_source, kres) = resolve_kernel(trace, &kernel);
        for (a, r) in kernel.iter().zip(kres) {
            map.insert(Location::kernel(Sym::from_addr(*a)), r);
        }
        let user: Vec<(Option<Tid>, Vec<u64>)> = user.into_iter().collect();
        let ures: Vec<UserResolved> = user
            .into_par_iter()
            .map(|(pid, addrs)| {
                let r = resolve_user(trace, pid, &addrs);
                (pid, addrs.into_iter().zip(r).collect())
            })
            .collect();
        for (pid, list) in ures {
            for (a, r) in list {
                map.insert(Location::user(pid, Sym::from_addr(a)), r);
            }
        }
        SymbolTable { map, kernel_source }
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
fn split_offset(s: &str) -> (&str, u64) {
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

fn resolve_kernel(trace: &Trace, addrs: &[u64]) -> (&'static str, Vec<Resolved>) {
    if addrs.is_empty() {
        return ("none", Vec::new());
    }
    let ks = &trace.kernel_symbols;
    if !ks.syms.is_empty() {
        let r = addrs
            .par_iter()
            .map(|&a| match ks.lookup(a) {
                // No kernel function spans 1 MiB: a larger offset means the
                // address lies in a gap the table does not cover (module
                // area past the last symbol, per-CPU offsets, or a garbage
                // user frame that looks like a kernel address).
                Some((name, off)) if off < MAX_SYMBOL_SIZE => Resolved {
                    name: Some(name.to_string()),
                    offset: off,
                    module: KERNEL_MODULE.to_string(),
                    reason: String::new(),
                    addr: a,
                },
                _ => Resolved::unsymbolized(a, KERNEL_MODULE, "outside the trace's kallsyms"),
            })
            .collect();
        return ("trace kallsyms", r);
    }
    if recorded_on_running_kernel(trace) {
        if let Some(r) = live_kernel(addrs) {
            return ("live /proc/kallsyms", r);
        }
    }
    let r = addrs
        .iter()
        .map(|&a| {
            Resolved::unsymbolized(
                a,
                KERNEL_MODULE,
                "the trace stores no kallsyms and was not recorded on this kernel",
            )
        })
        .collect();
    ("none", r)
}

/// Whether the trace's recorded kernel release is the running one.
fn recorded_on_running_kernel(trace: &Trace) -> bool {
    trace.meta.os_release.is_some() && not_this_boot(trace).is_none()
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Why the running system cannot stand in for the one that recorded
/// `trace` (another host, another kernel, or an earlier boot), if it cannot.
pub fn not_this_boot(trace: &Trace) -> Option<String> {
    if let (Some(h), Some(now)) = (
        trace.meta.hostname.as_deref(),
        read_trimmed("/proc/sys/kernel/hostname"),
    ) {
        if h.trim() != now {
            return Some(format!("recorded on host {h}, this is {now}"));
        }
    }
    if let (Some(r), Some(now)) = (
        trace.meta.os_release.as_deref(),
        read_trimmed("/proc/sys/kernel/osrelease"),
    ) {
        if r.trim() != now {
            return Some(format!("recorded on kernel {r}, this is {now}"));
        }
    }
    // Trace clocks (perf's sched_clock, ftrace's local clock) count from
    // boot and never run ahead of CLOCK_BOOTTIME: a trace that ends after the
    // current uptime comes from an earlier boot.
    let uptime_ns = read_trimmed("/proc/uptime")
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map(|s| (s * 1e9) as u64)?;
    (trace.end().0 > uptime_ns.saturating_add(1_000_000_000))
        .then(|| "recorded during an earlier boot".to_string())
}

/// When `pid` started, in ns since boot (USER_HZ = 100 on Linux).
fn process_start_ns(pid: Tid) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.0)).ok()?;
    // Fields after the comm, which may contain spaces, closed by the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let ticks: u64 = rest.split_whitespace().nth(19)?.parse().ok()?;
    Some(ticks.saturating_mul(10_000_000))
}

fn live_kernel(addrs: &[u64]) -> Option<Vec<Resolved>> {
    use blazesym::symbolize::source::{Kernel, Source};
    use blazesym::symbolize::{Input, Symbolized, Symbolizer};
    use blazesym::MaybeDefault;
    let src = Source::Kernel(Kernel {
        kallsyms: MaybeDefault::Default,
        vmlinux: MaybeDefault::None,
        kaslr_offset: Some(0),
        debug_syms: false,
        ..Kernel::default()
    });
    let symbolizer = Symbolizer::new();
    let out = symbolizer.symbolize(&src, Input::AbsAddr(addrs)).ok()?;
    Some(
        addrs
            .iter()
            .zip(out)
            .map(|(&a, s)| match s {
                Symbolized::Sym(s) => Resolved {
                    name: Some(s.name.to_string()),
                    offset: s.offset as u64,
                    module: KERNEL_MODULE.to_string(),
                    reason: String::new(),
                    addr: a,
                },
                Symbolized::Unknown(why) => {
                    Resolved::unsymbolized(a, KERNEL_MODULE, format!("blazesym: {why}"))
                }
            })
            .collect(),
    )
}

/// The comm a live process has now, if it exists.
fn live_comm(pid: Tid) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{}/comm", pid.0))
        .ok()
        .map(|s| s.trim_end().to_string())
}

fn resolve_user(trace: &Trace, pid: Option<Tid>, addrs: &[u64]) -> Vec<Resolved> {
    let fail = |why: &str| {
        addrs
            .iter()
            .map(|&a| Resolved::unsymbolized(a, "[unknown]", why))
            .collect::<Vec<_>>()
    };
    let Some(pid) = pid.filter(|p| p.0 > 0) else {
        return fail("user address without a known process");
    };
    if let Some(why) = not_this_boot(trace) {
        return fail(&why);
    }
    // The process must still be the one that was recorded: same comm, and
    // started before the trace ended (else the pid was reused).
    if !trace.events.is_empty()
        && process_start_ns(pid).is_some_and(|s| s > trace.end().0.saturating_add(1_000_000_000))
    {
        return fail("pid was reused by a process started after the trace");
    }
    let want = trace.tasks.comm(pid);
    match live_comm(pid) {
        None => return fail("process has exited (user symbols need the live process maps)"),
        Some(c) if !want.is_empty() && !want.starts_with(c.as_str()) && c != want => {
            return fail("pid now belongs to another process");
        }
        Some(_) => {}
    }
    use blazesym::symbolize::source::{Process, Source};
    use blazesym::symbolize::{Input, Symbolized, Symbolizer};
    let mut p = Process::new(blazesym::Pid::from(pid.0 as u32));
    p.debug_syms = false;
    p.perf_map = true;
    let src = Source::Process(p);
    let symbolizer = Symbolizer::new();
    match symbolizer.symbolize(&src, Input::AbsAddr(addrs)) {
        Ok(out) => addrs
            .iter()
            .zip(out)
            .map(|(&a, s)| match s {
                Symbolized::Sym(s) => Resolved {
                    name: Some(s.name.to_string()),
                    offset: s.offset as u64,
                    module: s
                        .module
                        .as_ref()
                        .map(|m| m.to_string_lossy().into_owned())
                        .unwrap_or_else(|| "[unknown]".to_string()),
                    reason: String::new(),
                    addr: a,
                },
                Symbolized::Unknown(why) => {
                    Resolved::unsymbolized(a, "[unknown]", format!("blazesym: {why}"))
                }
            })
            .collect(),
        Err(e) => fail(&format!("blazesym: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedscope_trace::{KernelSymbols, TraceFormat};

    #[test]
    fn kernel_addresses_use_the_trace_kallsyms() {
        let mut t = Trace::new("t", TraceFormat::PerfData);
        t.kernel_symbols = KernelSymbols {
            syms: vec![
                (0xffff_ffff_8100_0000, "flush_tlb_func".into()),
                (0xffff_ffff_8100_0400, "native_flush_tlb_multi".into()),
            ],
        };
        let a = Location::kernel(Sym::from_addr(0xffff_ffff_8100_0010));
        let b = Location::kernel(Sym::from_addr(0xffff_ffff_8100_0400));
        let below = Location::kernel(Sym::from_addr(0xffff_9000_0000_0000));
        let st = SymbolTable::build(&t, [a, b, a, below]);
        assert_eq!(st.len(), 3, "duplicates are resolved once");
        assert_eq!(st.kernel_source, "trace kallsyms");
        assert_eq!(st.get(a).with_offset(), "flush_tlb_func+0x10");
        assert_eq!(st.get(a).module, KERNEL_MODULE);
        assert_eq!(st.name(b), "native_flush_tlb_multi");
        assert!(!st.get(below).is_symbolized());
        assert!(st.name(below).starts_with("[unsymbolized"));
    }

    #[test]
    fn names_from_text_traces_pass_through() {
        let mut t = Trace::new("t", TraceFormat::FtraceText);
        let id = t.strings.intern("sched_ttwu_pending");
        let loc = Location::kernel(Sym::from_name(id));
        let st = SymbolTable::build(&t, [loc]);
        assert_eq!(st.name(loc), "sched_ttwu_pending");
        let id = t.strings.intern("smp_call_function_many_cond+0x1a0/0x2e0");
        let loc = Location::kernel(Sym::from_name(id));
        let st = SymbolTable::build(&t, [loc]);
        assert_eq!(
            st.get(loc).with_offset(),
            "smp_call_function_many_cond+0x1a0"
        );
    }

    #[test]
    fn user_addresses_of_a_dead_or_unknown_process_are_marked() {
        let t = Trace::new("t", TraceFormat::PerfData);
        let loc = Location::in_process(None, Sym::from_addr(0x40_1000));
        let st = SymbolTable::build(&t, [loc]);
        let r = st.get(loc);
        assert!(!r.is_symbolized());
        assert!(r.reason.contains("without a known process"), "{r:?}");
    }

    #[test]
    fn user_addresses_of_a_live_process_use_blazesym() {
        // This test process is alive: symbolize one of its own functions.
        let me = std::process::id() as i32;
        let mut t = Trace::new("t", TraceFormat::PerfData);
        let comm = live_comm(Tid(me)).unwrap_or_default();
        t.tasks.set_comm(Tid(me), &comm);
        let addr = marker_fn_for_symbolizer as *const () as usize as u64;
        let loc = Location::in_process(Some(Tid(me)), Sym::from_addr(addr));
        let st = SymbolTable::build(&t, [loc]);
        let r = st.get(loc);
        assert!(
            r.function().contains("marker_fn_for_symbolizer"),
            "blazesym gave {r:?}"
        );
    }

    #[test]
    fn a_trace_from_another_host_is_not_symbolized_from_live_processes() {
        let me = std::process::id() as i32;
        let mut t = Trace::new("t", TraceFormat::PerfData);
        t.meta.hostname = Some("not-this-host.invalid".into());
        let addr = marker_fn_for_symbolizer as *const () as usize as u64;
        let loc = Location::in_process(Some(Tid(me)), Sym::from_addr(addr));
        let r = SymbolTable::build(&t, [loc]).get(loc);
        assert!(!r.is_symbolized());
        assert!(
            r.reason.contains("recorded on host not-this-host.invalid"),
            "{r:?}"
        );
        // Kernel addresses without stored kallsyms: no live fallback either.
        t.meta.os_release = read_trimmed("/proc/sys/kernel/osrelease");
        let k = Location::kernel(Sym::from_addr(0xffff_ffff_8100_0000));
        let st = SymbolTable::build(&t, [k]);
        assert_eq!(st.kernel_source, "none");
        assert!(!st.get(k).is_symbolized());
    }

    #[test]
    fn own_process_start_is_before_now() {
        let me = Tid(std::process::id() as i32);
        let start = process_start_ns(me).unwrap();
        let up = read_trimmed("/proc/uptime").unwrap();
        let up: f64 = up.split_whitespace().next().unwrap().parse().unwrap();
        assert!(start <= (up * 1e9) as u64 + 10_000_000);
    }

    #[inline(never)]
    #[no_mangle]
    extern "C" fn marker_fn_for_symbolizer() -> u64 {
        std::hint::black_box(42)
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
