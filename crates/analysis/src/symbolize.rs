//! Turning code addresses (IPI callsites, callbacks, call-chain frames,
//! profile samples) into symbol names.
//!
//! * Kernel addresses are resolved through the kallsyms stored in the trace
//!   file ([`Trace::kernel_symbols`]), so a trace is symbolized correctly on
//!   a machine other than the one that recorded it. Only when the file holds
//!   no kallsyms and was recorded on the running kernel (same release) is
//!   the live `/proc/kallsyms` read, in one streaming pass over only as much
//!   of it as the addresses need (the `kallsyms` module; it gives the names
//!   blazesym's kallsyms resolver gives, at a fraction of the cost).
//! * User addresses of a process the trace has mappings for
//!   ([`Trace::mappings`], from PERF_RECORD_MMAP/MMAP2) are turned into a
//!   file offset through the latest mapping that contains them
//!   ([`MappingIndex`]) and symbolized from the ELF file with blazesym, as
//!   `perf script` does, so processes that exited before the report are
//!   named too. The file must still exist and, for a trace of this boot,
//!   must not have been modified after the recording ended (its mtime);
//!   otherwise the frame is unsymbolized with the reason ("file gone",
//!   "file changed after the recording", "no symbols", "no mapping").
//!   Locations carry no time, so the latest mapping of the trace that
//!   contains the address is used (an exec or a remap over the same range
//!   later in the trace wins). Where a function has several plain C names
//!   (weak `munmap`, global `__munmap`, local `__GI___munmap`), the one
//!   perf chooses is reported, so names agree with `perf script`.
//! * User addresses of processes without mappings in the trace go through
//!   blazesym's process source (the process maps and ELF files). That only
//!   works while the recorded process still lives (and is the same process:
//!   its comm is checked); otherwise the frame is marked
//!   [`Resolved::unsymbolized`] with the reason.
//! * Text traces already carry names ([`Sym::name_id`]).
//!
//! Each distinct (process, address) is symbolized once, and each distinct
//! (file, offset) once; kernel addresses are looked up in parallel (rayon),
//! each mapped file and each live process gets its own blazesym symbolizer
//! on a rayon task.

mod kallsyms;

use rayon::prelude::*;
use schedscope_trace::{Mapping, Sym, Tid, Trace, Ts};
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
        // User addresses of processes with recorded mappings: through the
        // mapped files; the others through the live process.
        let index = MappingIndex::new(&trace.mappings);
        let (mapped, user): (Vec<_>, Vec<_>) = user
            .into_iter()
            .partition(|(pid, _)| pid.is_some_and(|p| index.has_pid(p)));
        for (loc, r) in resolve_mapped(trace, &index, mapped) {
            map.insert(loc, r);
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

/// Kernel addresses through the running kernel's `/proc/kallsyms`, in one
/// streaming pass that reads only as much of the file as the addresses
/// need ([`kallsyms::resolve`]); `None` when the file cannot be read.
fn live_kernel(addrs: &[u64]) -> Option<Vec<Resolved>> {
    let file = std::fs::File::open("/proc/kallsyms").ok()?;
    let found = kallsyms::resolve(file, addrs).ok()?;
    Some(
        addrs
            .iter()
            .zip(found)
            .map(|(&a, s)| match s {
                kallsyms::Lookup::Found { name, offset } => Resolved {
                    name: Some(name),
                    offset,
                    module: KERNEL_MODULE.to_string(),
                    reason: String::new(),
                    addr: a,
                },
                kallsyms::Lookup::Unknown(why) => {
                    Resolved::unsymbolized(a, KERNEL_MODULE, format!("/proc/kallsyms: {why}"))
                }
            })
            .collect(),
    )
}

/// Each process's mappings ([`Trace::mappings`]), to find which file backs
/// a user address at a given time.
#[derive(Clone, Debug, Default)]
pub struct MappingIndex<'a> {
    /// Per process, sorted by time (equal times keep trace order).
    by_pid: HashMap<Tid, Vec<&'a Mapping>>,
}

impl<'a> MappingIndex<'a> {
    /// Index `mappings` (in trace order) by process; mappings of pid <= 0
    /// (the kernel's) and empty ones are left out.
    pub fn new(mappings: &'a [Mapping]) -> MappingIndex<'a> {
        let mut by_pid: HashMap<Tid, Vec<&'a Mapping>> = HashMap::new();
        for m in mappings.iter().filter(|m| m.pid.0 > 0 && m.len > 0) {
            by_pid.entry(m.pid).or_default().push(m);
        }
        for v in by_pid.values_mut() {
            v.sort_by_key(|m| m.ts); // stable
        }
        MappingIndex { by_pid }
    }

    /// Whether the trace has any mapping of `pid`.
    pub fn has_pid(&self, pid: Tid) -> bool {
        self.by_pid.contains_key(&pid)
    }

    /// The latest mapping of `pid` made at or before `at` that contains
    /// `addr` (a later mapping over the same range replaces the earlier
    /// one, as mmap does).
    pub fn find(&self, pid: Tid, addr: u64, at: Ts) -> Option<&'a Mapping> {
        let v = self.by_pid.get(&pid)?;
        let n = v.partition_point(|m| m.ts <= at);
        v.get(..n)?
            .iter()
            .rev()
            .find(|m| addr >= m.start && addr - m.start < m.len)
            .copied()
    }
}

/// The file offset of `addr` in mapping `m` (`addr - start + pgoff`).
pub fn file_offset(m: &Mapping, addr: u64) -> u64 {
    addr.wrapping_sub(m.start).wrapping_add(m.pgoff)
}

/// Symbolize the user addresses of processes that have mappings through
/// the mapped files: one lookup per distinct (file, offset), one blazesym
/// symbolizer per file, files in parallel.
///
/// Locations carry no time, so the latest mapping of the whole trace that
/// contains the address is used.
fn resolve_mapped(
    trace: &Trace,
    index: &MappingIndex<'_>,
    procs: Vec<(Option<Tid>, Vec<u64>)>,
) -> Vec<(Location, Resolved)> {
    let mut out = Vec::new();
    let mut by_file: HashMap<&str, Vec<u64>> = HashMap::new();
    let mut pending: Vec<(Location, &str, u64)> = Vec::new();
    for (pid, addrs) in procs {
        for a in addrs {
            let loc = Location::user(pid, Sym::from_addr(a));
            match pid.and_then(|p| index.find(p, a, Ts(u64::MAX))) {
                None => out.push((
                    loc,
                    Resolved::unsymbolized(
                        a,
                        "[unknown]",
                        "no mapping: no MMAP record of the process contains the address",
                    ),
                )),
                Some(m) => {
                    let off = file_offset(m, a);
                    by_file.entry(m.filename.as_str()).or_default().push(off);
                    pending.push((loc, m.filename.as_str(), off));
                }
            }
        }
    }
    let files: Vec<(&str, Vec<u64>)> = by_file.into_iter().collect();
    let resolved: HashMap<(&str, u64), Resolved> = files
        .into_par_iter()
        .flat_map_iter(|(file, mut offs)| {
            offs.sort_unstable();
            offs.dedup();
            let r = resolve_file(trace, file, &offs);
            offs.into_iter().zip(r).map(move |(o, r)| ((file, o), r))
        })
        .collect();
    for (loc, file, off) in pending {
        let a = loc.sym.addr().unwrap_or(0);
        let r = match resolved.get(&(file, off)) {
            Some(r) => Resolved {
                addr: a,
                ..r.clone()
            },
            None => Resolved::unsymbolized(a, file, "not looked up"),
        };
        out.push((loc, r));
    }
    out
}

/// When the trace ended, in wall-clock time, for a trace of this boot
/// (trace clocks count from boot, like /proc/uptime).
fn trace_end_wall(trace: &Trace) -> Option<std::time::SystemTime> {
    if trace.end().0 == 0 {
        return None; // no events to date the recording
    }
    let up = read_trimmed("/proc/uptime")?;
    let up_ns = (up.split_whitespace().next()?.parse::<f64>().ok()? * 1e9) as u64;
    let ago = std::time::Duration::from_nanos(up_ns.saturating_sub(trace.end().0));
    std::time::SystemTime::now().checked_sub(ago)
}

/// Symbolize file offsets of `file` (an ELF file mapped by a recorded process).
fn resolve_file(trace: &Trace, file: &str, offsets: &[u64]) -> Vec<Resolved> {
    let fail = |why: &str| {
        offsets
            .iter()
            .map(|&o| Resolved::unsymbolized(o, file, why))
            .collect::<Vec<_>>()
    };
    if !file.starts_with('/') {
        // [vdso], [heap], //anon, [anon:...]
        return fail(&format!("no file backs the mapping ({file})"));
    }
    let elsewhere = not_this_boot(trace);
    if let Some(w) = elsewhere
        .as_deref()
        .filter(|w| w.starts_with("recorded on host"))
    {
        return fail(w);
    }
    let md = match std::fs::metadata(file) {
        Ok(md) => md,
        Err(e) => return fail(&format!("file gone: {file}: {e}")),
    };
    // Same file as recorded: not modified after the recording ended (2 s
    // of slack for clock granularity).
    let note = match (&elsewhere, md.modified().ok(), trace_end_wall(trace)) {
        (None, Some(mtime), Some(end)) => {
            if mtime > end + std::time::Duration::from_secs(2) {
                return fail(&format!("file changed after the recording: {file}"));
            }
            String::new()
        }
        (Some(w), _, _) => format!("file not verified against the recording ({w})"),
        _ => "file not verified against the recording (no mtime or clock)".to_string(),
    };
    let Some(elf) = ElfInfo::read(file) else {
        return fail(&format!("not an ELF file: {file}"));
    };
    // File offsets to virtual addresses through the program headers, then
    // look them up in the separate debug file (full symbol table, where
    // perf also looks) and, for what it does not name, in the file itself.
    let virt: Vec<Option<u64>> = offsets.iter().map(|&o| elf.virt(o)).collect();
    let known: Vec<u64> = virt.iter().flatten().copied().collect();
    let mut found: HashMap<u64, Resolved> = HashMap::new();
    let mut why: HashMap<u64, String> = HashMap::new();
    let debug = elf.debug_file();
    for (path, is_debug) in debug
        .iter()
        .map(|d| (d.as_str(), true))
        .chain([(file, false)])
    {
        let todo: Vec<u64> = known
            .iter()
            .copied()
            .filter(|v| !found.contains_key(v))
            .collect();
        if todo.is_empty() {
            break;
        }
        match symbolize_virt(path, &todo) {
            Ok(out) => {
                for (v, r) in todo.into_iter().zip(out) {
                    match r {
                        Ok((name, offset)) => {
                            found.insert(
                                v,
                                Resolved {
                                    name: Some(name),
                                    offset,
                                    module: file.to_string(),
                                    reason: note.clone(),
                                    addr: v,
                                },
                            );
                        }
                        Err(w) if !is_debug => {
                            why.insert(v, w);
                        }
                        Err(_) => {}
                    }
                }
            }
            Err(e) if !is_debug => return fail(&format!("blazesym: {file}: {e}")),
            Err(_) => {}
        }
    }
    // Several names for one function (weak `munmap`, global `__munmap`,
    // local `__GI___munmap`): name it the way perf does.
    let starts: HashSet<u64> = found
        .iter()
        .map(|(v, r)| v.wrapping_sub(r.offset))
        .collect();
    let mut aliases: HashMap<u64, Vec<ElfSym>> = HashMap::new();
    for path in debug.iter().map(String::as_str).chain([file]) {
        for (a, syms) in elf_symbols_at(path, &starts) {
            let list = aliases.entry(a).or_default();
            for sym in syms {
                if !list.iter().any(|s| s.name == sym.name) {
                    list.push(sym);
                }
            }
        }
    }
    for (v, r) in found.iter_mut() {
        let Some(list) = aliases.get(&v.wrapping_sub(r.offset)) else {
            continue;
        };
        let Some(name) = &r.name else { continue };
        // Only plain (unmangled) names: blazesym's pick is demangled.
        if list.len() > 1 && list.iter().any(|s| &s.name == name) {
            if let Some(best) = list.iter().reduce(|a, b| perf_best_symbol(a, b)) {
                if !best.name.starts_with("_Z") && !best.name.starts_with("_R") {
                    r.name = Some(best.name.clone());
                }
            }
        }
    }
    let debug_note = match &debug {
        Some(d) => format!(" nor in its debug file {d}"),
        None => " (no debug file under /usr/lib/debug)".to_string(),
    };
    offsets
        .iter()
        .zip(virt)
        .map(|(&o, v)| match v {
            None => Resolved::unsymbolized(
                o,
                file,
                format!("offset outside the loadable segments of {file}"),
            ),
            Some(v) => match found.get(&v) {
                Some(r) => Resolved {
                    addr: o,
                    ..r.clone()
                },
                None => Resolved::unsymbolized(
                    o,
                    file,
                    format!(
                        "no symbols: {} in {file}{debug_note}",
                        why.get(&v)
                            .map(String::as_str)
                            .unwrap_or("no symbol covers the address")
                    ),
                ),
            },
        })
        .collect()
}

/// Look up virtual addresses (relative to the ELF's own base) in the ELF
/// symbols of `path`: per address the name and offset, or why not.
/// Per address: (name, offset into the symbol), or why there is none.
type VirtSyms = Vec<Result<(String, u64), String>>;

fn symbolize_virt(path: &str, virt: &[u64]) -> Result<VirtSyms, String> {
    use blazesym::symbolize::source::{Elf, Source};
    use blazesym::symbolize::{Input, Reason, Symbolized, Symbolizer};
    let mut elf = Elf::new(path);
    elf.debug_syms = false;
    let src = Source::Elf(elf);
    let symbolizer = Symbolizer::new();
    let out = symbolizer
        .symbolize(&src, Input::VirtOffset(virt))
        .map_err(|e| e.to_string())?;
    Ok(out
        .into_iter()
        .map(|s| match s {
            Symbolized::Sym(s) => Ok((s.name.to_string(), s.offset as u64)),
            Symbolized::Unknown(Reason::MissingSyms) => {
                Err("no symbol covers the address (stripped: dynamic symbols only)".to_string())
            }
            Symbolized::Unknown(w) => Err(format!("blazesym: {w}")),
        })
        .collect())
}

/// A function symbol of an ELF symbol table.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ElfSym {
    name: String,
    /// STB_LOCAL 0, STB_GLOBAL 1, STB_WEAK 2.
    bind: u8,
    size: u64,
}

/// perf's `choose_best_symbol` among symbols at one address: a sized one,
/// then not weak, then global, then fewer leading underscores, then the
/// longer name, then the first.
fn perf_best_symbol<'s>(a: &'s ElfSym, b: &'s ElfSym) -> &'s ElfSym {
    let key = |s: &ElfSym| {
        (
            s.size > 0,
            s.bind != 2,
            s.bind == 1,
            std::cmp::Reverse(s.name.bytes().take_while(|&c| c == b'_').count()),
            s.name.len(),
        )
    };
    if key(b) > key(a) {
        b
    } else {
        a
    }
}

/// The function symbols (STT_FUNC, STT_GNU_IFUNC) of the `.symtab` and
/// `.dynsym` of `path` whose value is one of `addrs`. Empty when the file
/// cannot be read or is not a 64-bit little-endian ELF file.
fn elf_symbols_at(path: &str, addrs: &HashSet<u64>) -> HashMap<u64, Vec<ElfSym>> {
    use std::os::unix::fs::FileExt;
    let mut out: HashMap<u64, Vec<ElfSym>> = HashMap::new();
    if addrs.is_empty() {
        return out;
    }
    let Ok(f) = std::fs::File::open(path) else {
        return out;
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let at = |off: u64, n: u64| -> Option<Vec<u8>> {
        if off.checked_add(n)? > len || n > 1 << 30 {
            return None;
        }
        let mut b = vec![0u8; usize::try_from(n).ok()?];
        f.read_exact_at(&mut b, off).ok()?;
        Some(b)
    };
    let u16_ = |b: &[u8], o: usize| -> Option<u16> {
        Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?))
    };
    let u32_ = |b: &[u8], o: usize| -> Option<u32> {
        Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?))
    };
    let u64_ = |b: &[u8], o: usize| -> Option<u64> {
        Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?))
    };
    let scan = |out: &mut HashMap<u64, Vec<ElfSym>>| -> Option<()> {
        let h = at(0, 64)?;
        if h.get(..4)? != b"\x7fELF" || h[4] != 2 || h[5] != 1 {
            return None;
        }
        let shoff = u64_(&h, 0x28)?;
        let shentsize = u16_(&h, 0x3a)? as u64;
        let shnum = u16_(&h, 0x3c)? as u64;
        if shentsize < 64 {
            return None;
        }
        let sh = at(shoff, shentsize * shnum)?;
        let sec = |i: u64| -> Option<(u32, u64, u64, u32)> {
            let o = usize::try_from(i * shentsize).ok()?;
            Some((
                u32_(&sh, o + 4)?,
                u64_(&sh, o + 24)?,
                u64_(&sh, o + 32)?,
                u32_(&sh, o + 40)?,
            ))
        };
        for i in 0..shnum {
            let (ty, off, size, link) = sec(i)?;
            if ty != 2 && ty != 11 {
                continue; // SHT_SYMTAB, SHT_DYNSYM
            }
            let (sty, soff, ssize, _) = sec(link as u64)?;
            if sty != 3 {
                continue; // SHT_STRTAB (NOBITS in a stripped file)
            }
            let (Some(syms), Some(strs)) = (at(off, size), at(soff, ssize)) else {
                continue;
            };
            for e in syms.chunks_exact(24) {
                let value = u64_(e, 8)?;
                let info = e[4];
                if !addrs.contains(&value) || !matches!(info & 0xf, 2 | 10) {
                    continue;
                }
                let name_at = u32_(e, 0)? as usize;
                let Some(rest) = strs.get(name_at..) else {
                    continue;
                };
                let name = &rest[..rest.iter().position(|&c| c == 0).unwrap_or(rest.len())];
                if name.is_empty() {
                    continue;
                }
                out.entry(value).or_default().push(ElfSym {
                    name: String::from_utf8_lossy(name).into_owned(),
                    bind: info >> 4,
                    size: u64_(e, 16)?,
                });
            }
        }
        Some(())
    };
    let _ = scan(&mut out);
    out
}

/// What the symbolizer needs from an ELF file's headers: its loadable
/// segments (to turn file offsets into virtual addresses) and build id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ElfInfo {
    /// PT_LOAD segments: (file offset, virtual address, size in the file).
    pub loads: Vec<(u64, u64, u64)>,
    /// NT_GNU_BUILD_ID, if present.
    pub build_id: Option<Vec<u8>>,
}

impl ElfInfo {
    /// Read the program headers and build-id note of a 64-bit
    /// little-endian ELF file (`None` if it is not one or is truncated).
    pub fn read(path: &str) -> Option<ElfInfo> {
        use std::os::unix::fs::FileExt;
        let f = std::fs::File::open(path).ok()?;
        let at = |off: u64, len: usize| -> Option<Vec<u8>> {
            let mut b = vec![0u8; len];
            f.read_exact_at(&mut b, off).ok()?;
            Some(b)
        };
        let h = at(0, 64)?;
        // ELFCLASS64, ELFDATA2LSB
        if h.get(..4)? != b"\x7fELF" || h[4] != 2 || h[5] != 1 {
            return None;
        }
        let u16_ = |b: &[u8], o: usize| Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?));
        let u32_ = |b: &[u8], o: usize| Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?));
        let u64_ = |b: &[u8], o: usize| Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?));
        let phoff = u64_(&h, 32)?;
        let phentsize = u16_(&h, 54)? as usize;
        let phnum = u16_(&h, 56)? as usize;
        if phentsize < 56 || phnum > 4096 {
            return None;
        }
        let ph = at(phoff, phentsize * phnum)?;
        let mut info = ElfInfo::default();
        for i in 0..phnum {
            let p = &ph[i * phentsize..(i + 1) * phentsize];
            let (ty, off, vaddr, filesz) = (u32_(p, 0)?, u64_(p, 8)?, u64_(p, 16)?, u64_(p, 32)?);
            match ty {
                1 => info.loads.push((off, vaddr, filesz)), // PT_LOAD
                4 if info.build_id.is_none() && filesz <= 1 << 16 => {
                    // PT_NOTE: namesz, descsz, type, name (4-aligned), desc (4-aligned)
                    let n = at(off, filesz as usize)?;
                    let mut pos = 0usize;
                    while pos + 12 <= n.len() {
                        let namesz = u32_(&n, pos)? as usize;
                        let descsz = u32_(&n, pos + 4)? as usize;
                        let nty = u32_(&n, pos + 8)?;
                        let name_at = pos + 12;
                        let desc_at = name_at + namesz.div_ceil(4) * 4;
                        let next = desc_at + descsz.div_ceil(4) * 4;
                        if nty == 3 && n.get(name_at..name_at + namesz) == Some(b"GNU\0") {
                            info.build_id = n.get(desc_at..desc_at + descsz).map(<[u8]>::to_vec);
                            break;
                        }
                        pos = next;
                    }
                }
                _ => {}
            }
        }
        Some(info)
    }

    /// The virtual address of file offset `off` (in a PT_LOAD segment).
    pub fn virt(&self, off: u64) -> Option<u64> {
        self.loads
            .iter()
            .find(|&&(o, _, sz)| off >= o && off - o < sz)
            .map(|&(o, v, _)| off - o + v)
    }

    /// The separate debug file for this build id, if installed
    /// (`/usr/lib/debug/.build-id/xx/rest.debug`, e.g. from libc6-dbg).
    pub fn debug_file(&self) -> Option<String> {
        let id = self.build_id.as_ref().filter(|b| b.len() >= 2)?;
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let p = format!("/usr/lib/debug/.build-id/{}/{}.debug", &hex[..2], &hex[2..]);
        std::path::Path::new(&p).is_file().then_some(p)
    }
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

    fn map(ts: u64, start: u64, len: u64, pgoff: u64, file: &str) -> Mapping {
        Mapping {
            ts: Ts(ts),
            pid: Tid(42),
            start,
            len,
            pgoff,
            filename: file.into(),
        }
    }

    #[test]
    fn mapping_lookup_takes_the_latest_mapping_at_or_before_the_time() {
        let ms = vec![
            map(0, 0x1000, 0x1000, 0, "/a"),
            map(0, 0x4000, 0x2000, 0x3000, "/b"),
            map(100, 0x1000, 0x1000, 0x7000, "/c"), // remaps /a's range later
            Mapping {
                pid: Tid(-1),
                ..map(0, 0x8000, 0x1000, 0, "[kernel.kallsyms]_text")
            },
        ];
        let ix = MappingIndex::new(&ms);
        assert!(ix.has_pid(Tid(42)) && !ix.has_pid(Tid(-1)) && !ix.has_pid(Tid(7)));
        let f = |addr, at| ix.find(Tid(42), addr, Ts(at)).map(|m| m.filename.as_str());
        assert_eq!(f(0x1800, 50), Some("/a"));
        assert_eq!(
            f(0x1800, 100),
            Some("/c"),
            "same time: the later record wins"
        );
        assert_eq!(f(0x1800, u64::MAX), Some("/c"));
        assert_eq!(f(0x1fff, 0), Some("/a"));
        assert_eq!(f(0x2000, 0), None, "end is exclusive");
        assert_eq!(f(0x0fff, 0), None);
        assert_eq!(f(0x5abc, 0), Some("/b"));
        let b = ix.find(Tid(42), 0x5abc, Ts(0)).unwrap();
        assert_eq!(file_offset(b, 0x5abc), 0x3000 + 0x1abc);
        assert_eq!(ix.find(Tid(7), 0x1800, Ts(0)), None);
    }

    /// The mappings of this process from /proc/self/maps, as MMAP records
    /// would carry them, under another (non-existent) pid.
    fn own_mappings(pid: Tid) -> Vec<Mapping> {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        maps.lines()
            .filter_map(|l| {
                let mut it = l.split_whitespace();
                let (range, perms, off) = (it.next()?, it.next()?, it.next()?);
                let file = it.nth(2)?;
                let (a, b) = range.split_once('-')?;
                let start = u64::from_str_radix(a, 16).ok()?;
                let end = u64::from_str_radix(b, 16).ok()?;
                let pgoff = u64::from_str_radix(off, 16).ok()?;
                perms.contains('x').then(|| Mapping {
                    ts: Ts(0),
                    pid,
                    start,
                    len: end - start,
                    pgoff,
                    filename: file.to_string(),
                })
            })
            .collect()
    }

    #[test]
    fn user_addresses_of_a_gone_process_are_symbolized_through_its_mappings() {
        // A pid that does not exist: only the mappings can name the address.
        let gone = Tid(i32::MAX - 7);
        assert!(live_comm(gone).is_none());
        let mut t = Trace::new("t", TraceFormat::PerfData);
        t.mappings = own_mappings(gone);
        let addr = marker_fn_for_symbolizer as *const () as usize as u64;
        let loc = Location::user(Some(gone), Sym::from_addr(addr));
        // an address no mapping covers
        let hole = Location::user(Some(gone), Sym::from_addr(0x10));
        // No events: the file cannot be dated against the recording.
        let r = SymbolTable::build(&t, [loc]).get(loc);
        assert_eq!(r.function(), "marker_fn_for_symbolizer", "{r:?}");
        assert!(r.reason.contains("not verified"), "{r:?}");
        // A recording that ended 1 ns after boot predates this executable.
        let ev = |ts: u64| schedscope_trace::Event {
            ts: Ts(ts),
            cpu: schedscope_trace::Cpu(0),
            tid: gone,
            name: schedscope_trace::NameId(0),
            stack: schedscope_trace::StackId::NONE,
            data: schedscope_trace::EventData::Other(None),
        };
        t.events.push(ev(1));
        let r = SymbolTable::build(&t, [loc]).get(loc);
        assert!(
            r.reason.starts_with("file changed after the recording"),
            "{r:?}"
        );
        // A recording that ends now (trace clocks count from boot).
        let up = read_trimmed("/proc/uptime").unwrap();
        let up: f64 = up.split_whitespace().next().unwrap().parse().unwrap();
        t.events.push(ev((up * 1e9) as u64));
        let st = SymbolTable::build(&t, [loc, hole]);
        let r = st.get(loc);
        assert_eq!(r.function(), "marker_fn_for_symbolizer", "{r:?}");
        assert_eq!(r.reason, "", "verified: {r:?}");
        assert_eq!(r.addr, addr);
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        assert_eq!(r.module, exe.to_string_lossy(), "{r:?}");
        let h = st.get(hole);
        assert!(
            !h.is_symbolized() && h.reason.starts_with("no mapping"),
            "{h:?}"
        );
        // The same mappings under a file name that does not exist.
        for m in &mut t.mappings {
            m.filename = "/nonexistent/schedscope-test.so".into();
        }
        let r = SymbolTable::build(&t, [loc]).get(loc);
        assert!(
            !r.is_symbolized() && r.reason.starts_with("file gone"),
            "{r:?}"
        );
        // [vdso] and other pseudo files
        for m in &mut t.mappings {
            m.filename = "[vdso]".into();
        }
        let r = SymbolTable::build(&t, [loc]).get(loc);
        assert!(r.reason.starts_with("no file backs"), "{r:?}");
    }

    #[test]
    fn elf_headers_turn_file_offsets_into_addresses() {
        // Oracle: readelf's view is what the kernel loads; the executable's
        // own text segment covers the offset of one of its functions.
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let info = ElfInfo::read(&exe.to_string_lossy()).unwrap();
        assert!(!info.loads.is_empty());
        let ms = own_mappings(Tid(1));
        let addr = marker_fn_for_symbolizer as *const () as usize as u64;
        let m = ms
            .iter()
            .find(|m| addr >= m.start && addr - m.start < m.len)
            .unwrap();
        let off = file_offset(m, addr);
        let v = info.virt(off).unwrap();
        // load bias = runtime address - link-time address, page aligned
        assert_eq!((addr - v) % 4096, 0);
        assert!(info.virt(u64::MAX - 1).is_none());
        assert!(
            ElfInfo::read("/proc/self/maps").is_none(),
            "not an ELF file"
        );
    }

    #[test]
    fn aliases_are_named_the_way_perf_chooses() {
        let sym = |name: &str, bind: u8, size: u64| ElfSym {
            name: name.into(),
            bind,
            size,
        };
        let list = [
            sym("munmap", 2, 33),
            sym("__GI___munmap", 0, 33),
            sym("__munmap", 1, 33),
        ];
        let best = list.iter().reduce(|a, b| perf_best_symbol(a, b)).unwrap();
        assert_eq!(best.name, "__munmap", "global beats weak and local");
        let best = perf_best_symbol(&list[0], &list[1]);
        assert_eq!(best.name, "__GI___munmap", "not weak before weak");
        let (a, b) = (sym("_a", 1, 0), sym("__b", 1, 4));
        assert_eq!(perf_best_symbol(&a, &b).name, "__b", "a sized symbol first");
        let (a, b) = (sym("__x", 1, 4), sym("_yy", 1, 4));
        assert_eq!(
            perf_best_symbol(&a, &b).name,
            "_yy",
            "fewer leading underscores"
        );
        let (a, b) = (sym("_x", 1, 4), sym("_xy", 1, 4));
        assert_eq!(perf_best_symbol(&a, &b).name, "_xy", "the longer name");
        // This executable's own symbol table: the marker function is there.
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let exe = exe.to_string_lossy();
        let info = ElfInfo::read(&exe).unwrap();
        let ms = own_mappings(Tid(1));
        let addr = marker_fn_for_symbolizer as *const () as usize as u64;
        let m = ms
            .iter()
            .find(|m| addr >= m.start && addr - m.start < m.len)
            .unwrap();
        let v = info.virt(file_offset(m, addr)).unwrap();
        let found = elf_symbols_at(&exe, &HashSet::from([v]));
        let names: Vec<&str> = found[&v].iter().map(|s| s.name.as_str()).collect();
        assert!(names.contains(&"marker_fn_for_symbolizer"), "{names:?}");
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
