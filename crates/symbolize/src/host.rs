//! The running system, the only place symbolization reads it: whether
//! it can stand in for the one that recorded the trace (hostname, kernel
//! release, uptime), the live `/proc/kallsyms`, and live processes
//! (`/proc/PID/stat`, `/proc/PID/comm`, and their maps and ELF files
//! through blazesym's process source).

use super::{kallsyms, Resolved, KERNEL_MODULE};
use schedscope_trace::{Tid, Trace};

pub(super) fn read_trimmed(path: &str) -> Option<String> {
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
pub(super) fn process_start_ns(pid: Tid) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.0)).ok()?;
    // Fields after the comm, which may contain spaces, closed by the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let ticks: u64 = rest.split_whitespace().nth(19)?.parse().ok()?;
    Some(ticks.saturating_mul(10_000_000))
}

/// Kernel addresses through the running kernel's `/proc/kallsyms`, in one
/// streaming pass that reads only as much of the file as the addresses
/// need ([`kallsyms::resolve`]); `None` when the file cannot be read.
pub(super) fn live_kernel(addrs: &[u64]) -> Option<Vec<Resolved>> {
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

/// When the trace ended, in wall-clock time, for a trace of this boot
/// (trace clocks count from boot, like /proc/uptime).
pub(super) fn trace_end_wall(trace: &Trace) -> Option<std::time::SystemTime> {
    if trace.end().0 == 0 {
        return None; // no events to date the recording
    }
    let up = read_trimmed("/proc/uptime")?;
    let up_ns = (up.split_whitespace().next()?.parse::<f64>().ok()? * 1e9) as u64;
    let ago = std::time::Duration::from_nanos(up_ns.saturating_sub(trace.end().0));
    std::time::SystemTime::now().checked_sub(ago)
}

/// The comm a live process has now, if it exists.
pub(super) fn live_comm(pid: Tid) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{}/comm", pid.0))
        .ok()
        .map(|s| s.trim_end().to_string())
}

pub(super) fn resolve_user(trace: &Trace, pid: Option<Tid>, addrs: &[u64]) -> Vec<Resolved> {
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
