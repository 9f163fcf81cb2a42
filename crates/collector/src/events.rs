//! The event set: defaults, `-e` handling, tracefs lookup of ids and format
//! files, and the tracing data stored in the file.

use crate::error::RecordError;
use schedscope_perf_data::TracingData;
use std::path::{Path, PathBuf};

/// The default tracepoints (issue 3), in the order they are opened; the
/// first available one carries the COMM/FORK/EXIT tracking records.
pub const DEFAULT_EVENTS: &[&str] = &[
    "sched:sched_switch",
    "sched:sched_waking",
    "sched:sched_wakeup",
    "sched:sched_wakeup_new",
    "sched:sched_migrate_task",
    "sched:sched_process_fork",
    "sched:sched_process_exit",
    "sched:sched_process_exec",
    "sched:sched_wake_idle_without_ipi",
    "kvm:kvm_exit",
    "kvm:kvm_entry",
    "ipi:ipi_send_cpu",
    "ipi:ipi_send_cpumask",
    "tlb:tlb_flush",
    "csd:csd_queue_cpu",
    "csd:csd_function_entry",
    "csd:csd_function_exit",
    "power:cpu_idle",
    "irq:softirq_entry",
    "irq:softirq_exit",
    "irq_vectors:call_function_entry",
    "irq_vectors:call_function_single_entry",
    "irq_vectors:reschedule_entry",
];

/// Tracepoint filters applied by default: only the SCHED softirq (vec 7,
/// load-balance passes) is interesting.
pub fn default_filter(name: &str) -> Option<&'static str> {
    match name {
        "irq:softirq_entry" | "irq:softirq_exit" => Some("vec == 7"),
        _ => None,
    }
}

/// Events that get call chains with `--call-graph`.
pub fn wants_callchain(name: &str) -> bool {
    name.starts_with("ipi:") || name.starts_with("tlb:") || name == "csd:csd_queue_cpu"
}

/// One requested tracepoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventRequest {
    /// `system:event`.
    pub name: String,
    /// Named by the user (a missing one is an error) rather than a default
    /// (a missing one is skipped with a notice).
    pub explicit: bool,
}

/// Resolve `-e` options: plain names replace the default set, `+name` adds
/// to it (to the defaults when no plain name is given).
pub fn resolve_event_list(opts: &[String]) -> Result<Vec<EventRequest>, RecordError> {
    let mut plain = Vec::new();
    let mut extra = Vec::new();
    for o in opts {
        for part in o.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (add, name) = match part.strip_prefix('+') {
                Some(n) => (true, n),
                None => (false, part),
            };
            let Some((sys, ev)) = name.split_once(':') else {
                return Err(RecordError::BadEvent {
                    name: part.to_string(),
                    detail: "expected system:event, e.g. sched:sched_switch".into(),
                });
            };
            if sys.is_empty()
                || ev.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
            {
                return Err(RecordError::BadEvent {
                    name: part.to_string(),
                    detail: "expected system:event made of letters, digits and '_'".into(),
                });
            }
            if add {
                extra.push(name.to_string());
            } else {
                plain.push(name.to_string());
            }
        }
    }
    let mut out: Vec<EventRequest> = if plain.is_empty() {
        DEFAULT_EVENTS
            .iter()
            .map(|n| EventRequest {
                name: n.to_string(),
                explicit: false,
            })
            .collect()
    } else {
        Vec::new()
    };
    for n in plain.into_iter().chain(extra) {
        if let Some(e) = out.iter_mut().find(|e| e.name == n) {
            e.explicit = true;
        } else {
            out.push(EventRequest {
                name: n,
                explicit: true,
            });
        }
    }
    Ok(out)
}

/// The tracefs mount to use: /sys/kernel/tracing (mounted on demand when we
/// are root), else /sys/kernel/debug/tracing.
pub fn find_tracefs() -> Result<PathBuf, RecordError> {
    let main = Path::new("/sys/kernel/tracing");
    if main.join("events").is_dir() {
        return Ok(main.to_path_buf());
    }
    let mut mount_err = None;
    if crate::sys::euid() == 0 && main.is_dir() {
        match crate::sys::mount_tracefs("/sys/kernel/tracing") {
            Ok(()) if main.join("events").is_dir() => return Ok(main.to_path_buf()),
            Ok(()) => {}
            Err(e) => mount_err = Some(e.to_string()),
        }
    }
    let debug = Path::new("/sys/kernel/debug/tracing");
    if debug.join("events").is_dir() {
        return Ok(debug.to_path_buf());
    }
    Err(RecordError::NoTracefs {
        detail: match mount_err {
            Some(e) => format!("mounting tracefs at /sys/kernel/tracing failed: {e}"),
            None if crate::sys::euid() != 0 => {
                "neither /sys/kernel/tracing nor /sys/kernel/debug/tracing is readable; \
                 run as root (or mount tracefs: mount -t tracefs nodev /sys/kernel/tracing)"
                    .into()
            }
            None => "neither /sys/kernel/tracing nor /sys/kernel/debug/tracing has events/".into(),
        },
    })
}

/// Read the tracepoint id of `sys:event`; `None` if this kernel lacks it.
pub fn tracepoint_id(tracefs: &Path, name: &str) -> Result<Option<u64>, RecordError> {
    let Some((sys, ev)) = name.split_once(':') else {
        return Ok(None);
    };
    let path = tracefs.join("events").join(sys).join(ev).join("id");
    match std::fs::read_to_string(&path) {
        Ok(s) => s
            .trim()
            .parse::<u64>()
            .map(Some)
            .map_err(|e| RecordError::Tracefs {
                path: path.clone(),
                detail: format!("id is not a number ({e})"),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            Err(RecordError::Permission {
                detail: format!("cannot read {}: {e}", path.display()),
            })
        }
        Err(e) => Err(RecordError::Tracefs {
            path,
            detail: e.to_string(),
        }),
    }
}

/// Build the HEADER_TRACING_DATA contents for the recorded tracepoints.
pub fn tracing_data(tracefs: &Path, names: &[&str]) -> Result<TracingData, RecordError> {
    let read = |p: PathBuf| -> Result<Vec<u8>, RecordError> {
        read_whole(&p).map_err(|e| RecordError::Tracefs {
            path: p,
            detail: e.to_string(),
        })
    };
    let mut td = TracingData {
        page_size: crate::sys::page_size() as u32,
        header_page: read(tracefs.join("events/header_page"))?,
        header_event: read(tracefs.join("events/header_event"))?,
        ..TracingData::default()
    };
    for name in names {
        if let Some((sys, ev)) = name.split_once(':') {
            td.add_event_format(
                sys,
                read(tracefs.join("events").join(sys).join(ev).join("format"))?,
            );
        }
    }
    // Optional parts: absent files give empty sections, as perf does.
    td.kallsyms = std::fs::read("/proc/kallsyms").unwrap_or_default();
    td.printk_formats = read_whole(&tracefs.join("printk_formats")).unwrap_or_default();
    td.saved_cmdlines = saved_cmdlines(tracefs);
    Ok(td)
}

/// tracefs `saved_cmdlines` (pid -> comm cache); empty when absent.
pub fn saved_cmdlines(tracefs: &Path) -> Vec<u8> {
    read_whole(&tracefs.join("saved_cmdlines")).unwrap_or_default()
}

/// Read a tracefs file with a large first read: some (events/header_page)
/// regenerate their text on every read and return nothing after a short
/// first read, so std's small probing reads would truncate them.
fn read_whole(p: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut f = std::fs::File::open(p)?;
    let mut v = Vec::with_capacity(1 << 16);
    f.read_to_end(&mut v)?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_events_replace_and_plus_events_extend() {
        let d = resolve_event_list(&[]).unwrap();
        assert_eq!(d.len(), DEFAULT_EVENTS.len());
        assert!(d.iter().all(|e| !e.explicit));

        let r = resolve_event_list(&["sched:sched_switch".into()]).unwrap();
        assert_eq!(
            r,
            vec![EventRequest {
                name: "sched:sched_switch".into(),
                explicit: true
            }]
        );

        let a = resolve_event_list(&["+sched:sched_stat_runtime".into()]).unwrap();
        assert_eq!(a.len(), DEFAULT_EVENTS.len() + 1);
        assert_eq!(a.last().unwrap().name, "sched:sched_stat_runtime");
        assert!(a.last().unwrap().explicit);

        let both = resolve_event_list(&["sched:sched_switch,+sched:sched_waking".into()]).unwrap();
        assert_eq!(both.len(), 2);
    }

    #[test]
    fn malformed_event_names_are_rejected_with_the_name() {
        let e = resolve_event_list(&["sched_switch".into()]).unwrap_err();
        assert!(e.to_string().contains("sched_switch"), "{e}");
        assert!(resolve_event_list(&["sched:../x".into()]).is_err());
    }
}
