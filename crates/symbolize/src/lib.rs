//! Turning code addresses (IPI callsites, callbacks, call-chain frames,
//! profile samples) into symbol names, from the trace and from the host:
//! [`HostSymbolizer`], the [`Symbolizer`] the binary [`install`]s. The
//! analyses only ask through that trait (`schedscope_trace::symbols`, where
//! [`Location`], [`Resolved`] and [`SymbolTable`] live), so they compute
//! over a trace without reading the host; this crate is the only one that
//! reads `/proc/kallsyms`, live processes and ELF files for an answer.
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
//! Host I/O sits behind two modules: `host` (the running system: hostname,
//! kernel release, uptime, `/proc/kallsyms`, live processes through
//! blazesym) and `elf` (ELF files: headers, symbol tables, blazesym's ELF
//! source); `kallsyms` parses a kallsyms stream it is handed. This crate
//! decides, per address, which source may answer (the trace's own data
//! first) and keeps the answers in a [`SymbolTable`].
//!
//! Each distinct (process, address) is symbolized once, and each distinct
//! (file, offset) once; kernel addresses are looked up in parallel (rayon),
//! each mapped file and each live process gets its own blazesym symbolizer
//! on a rayon task.

mod elf;
mod host;
mod kallsyms;

pub use elf::ElfInfo;
use elf::{elf_symbols_at, perf_best_symbol, symbolize_virt, ElfSym};
pub use host::not_this_boot;
#[cfg(test)]
use host::{live_comm, process_start_ns, read_trimmed};
use host::{live_kernel, resolve_user, trace_end_wall};

use rayon::prelude::*;
pub use schedscope_trace::symbols::{
    self, chain_locations, frames, is_context_marker, is_kernel_addr, Location, Resolved,
    SymbolTable, Symbolizer, KERNEL_MODULE, KERNEL_START, PERF_CONTEXT_KERNEL, PERF_CONTEXT_MAX,
    PERF_CONTEXT_USER,
};
use schedscope_trace::{Mapping, Sym, Tid, Trace, Ts};
use std::collections::{HashMap, HashSet};

/// The addresses of one process with their resolutions.
type UserResolved = (Option<Tid>, Vec<(u64, Resolved)>);

/// Symbols from the trace first, then the host: names of text traces,
/// kernel addresses through the trace's kallsyms (else the live
/// `/proc/kallsyms` of the same kernel), user addresses through the ELF
/// files of the trace's mappings (else the live process). See the crate
/// docs for the rules.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostSymbolizer;

/// Make [`HostSymbolizer`] the process's symbolizer
/// ([`schedscope_trace::symbols::install`]); the binary calls it once at
/// start. `false` when one was already installed.
pub fn install() -> bool {
    symbols::install(Box::new(HostSymbolizer))
}

impl Symbolizer for HostSymbolizer {
    fn resolve(&self, trace: &Trace, distinct: HashSet<Location>) -> SymbolTable {
        let mut kernel = Vec::new();
        let mut user: HashMap<Option<Tid>, Vec<u64>> = HashMap::new();
        let mut map = HashMap::with_capacity(distinct.len());
        for loc in distinct {
            match loc.sym.addr() {
                None => {
                    map.insert(loc, symbols::text_name(trace, loc.sym));
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
        SymbolTable::new(map, kernel_source)
    }
}

fn resolve_kernel(trace: &Trace, addrs: &[u64]) -> (&'static str, Vec<Resolved>) {
    if addrs.is_empty() {
        return ("none", Vec::new());
    }
    let ks = &trace.kernel_symbols;
    if !ks.syms.is_empty() {
        let r = addrs
            .par_iter()
            .map(|&a| symbols::stored_kernel_symbol(trace, a))
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

#[cfg(test)]
mod tests {
    use super::*;
    use schedscope_trace::{KernelSymbols, TraceFormat};

    fn host<const N: usize>(t: &Trace, locs: [Location; N]) -> SymbolTable {
        HostSymbolizer.resolve(t, locs.into_iter().collect())
    }

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
        let st = host(&t, [a, b, a, below]);
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
        let st = host(&t, [loc]);
        assert_eq!(st.name(loc), "sched_ttwu_pending");
        let id = t.strings.intern("smp_call_function_many_cond+0x1a0/0x2e0");
        let loc = Location::kernel(Sym::from_name(id));
        let st = host(&t, [loc]);
        assert_eq!(
            st.get(loc).with_offset(),
            "smp_call_function_many_cond+0x1a0"
        );
    }

    #[test]
    fn user_addresses_of_a_dead_or_unknown_process_are_marked() {
        let t = Trace::new("t", TraceFormat::PerfData);
        let loc = Location::in_process(None, Sym::from_addr(0x40_1000));
        let st = host(&t, [loc]);
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
        let st = host(&t, [loc]);
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
        let r = host(&t, [loc]).get(loc);
        assert!(!r.is_symbolized());
        assert!(
            r.reason.contains("recorded on host not-this-host.invalid"),
            "{r:?}"
        );
        // Kernel addresses without stored kallsyms: no live fallback either.
        t.meta.os_release = read_trimmed("/proc/sys/kernel/osrelease");
        let k = Location::kernel(Sym::from_addr(0xffff_ffff_8100_0000));
        let st = host(&t, [k]);
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
        let r = host(&t, [loc]).get(loc);
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
        let r = host(&t, [loc]).get(loc);
        assert!(
            r.reason.starts_with("file changed after the recording"),
            "{r:?}"
        );
        // A recording that ends now (trace clocks count from boot).
        let up = read_trimmed("/proc/uptime").unwrap();
        let up: f64 = up.split_whitespace().next().unwrap().parse().unwrap();
        t.events.push(ev((up * 1e9) as u64));
        let st = host(&t, [loc, hole]);
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
        let r = host(&t, [loc]).get(loc);
        assert!(
            !r.is_symbolized() && r.reason.starts_with("file gone"),
            "{r:?}"
        );
        // [vdso] and other pseudo files
        for m in &mut t.mappings {
            m.filename = "[vdso]".into();
        }
        let r = host(&t, [loc]).get(loc);
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
}
