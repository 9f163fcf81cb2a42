//! The event set: defaults, `-e` handling, tracefs lookup of ids and format
//! files, and the tracing data stored in the file.

use crate::error::RecordError;
use schedscope_perf_data::TracingData;
use std::path::{Path, PathBuf};

/// The default tracepoints (issue 3), in the order they are opened; the
/// first available one carries the COMM/FORK/EXIT tracking records.
/// `sched:sched_stat_runtime` dates a switch-in the kernel did not trace
/// (its runtime starts at the switch-in), which makes the timeline's
/// common lost-event repair exact; its measured cost is in
/// docs/performance.md ("The cost of the runtime event").
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
    "sched:sched_stat_runtime",
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

/// Tracepoints declared with `__perf_count`: the kernel adds their count
/// (ns) to the event, so a sample must carry it as its period (one sample
/// per event); without PERIOD in the sample type the kernel writes one
/// sample per unit of the count, up to its throttle.
pub const PERF_COUNT_EVENTS: &[&str] = &[
    "sched:sched_stat_runtime",
    "sched:sched_stat_wait",
    "sched:sched_stat_sleep",
    "sched:sched_stat_iowait",
    "sched:sched_stat_blocked",
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

/// Whether `s` holds a glob metacharacter (`*`, `?`, `[`).
fn is_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// fnmatch(3)-style match of `name` against `pat`, as perf matches `-e`
/// globs: `*` any run of characters, `?` one character, `[abc]`, `[a-z]`
/// and `[!a-z]` (or `[^a-z]`) one character of (or not of) a set.
pub fn glob_match(pat: &str, name: &str) -> bool {
    let p: Vec<char> = pat.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // Iterative matching with one backtrack point (the last `*`): linear
    // in practice, never exponential.
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        let step = match p.get(pi) {
            Some('*') => {
                star = Some((pi, ni));
                pi += 1;
                continue;
            }
            Some('?') => Some(pi + 1),
            Some('[') => match class_match(&p[pi..], n[ni]) {
                Some((true, len)) => Some(pi + len),
                Some((false, _)) => None,
                // an unclosed '[' is a literal '['
                None => (n[ni] == '[').then_some(pi + 1),
            },
            Some(&c) => (c == n[ni]).then_some(pi + 1),
            None => None,
        };
        match (step, star) {
            (Some(next), _) => {
                pi = next;
                ni += 1;
            }
            (None, Some((sp, sn))) => {
                pi = sp + 1;
                ni = sn + 1;
                star = Some((sp, sn + 1));
            }
            (None, None) => return false,
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Match `c` against the bracket expression at the start of `p` (which
/// starts with `[`): whether it matches and the expression's length, or
/// `None` when the bracket is not closed.
fn class_match(p: &[char], c: char) -> Option<(bool, usize)> {
    let mut i = 1;
    let negate = matches!(p.get(i), Some('!' | '^'));
    if negate {
        i += 1;
    }
    let mut hit = false;
    let mut first = true;
    loop {
        let lo = *p.get(i)?;
        if lo == ']' && !first {
            return Some((hit != negate, i + 1));
        }
        first = false;
        if p.get(i + 1) == Some(&'-') && p.get(i + 2).is_some_and(|&hi| hi != ']') {
            hit |= (lo..=p[i + 2]).contains(&c);
            i += 3;
        } else {
            hit |= lo == c;
            i += 1;
        }
    }
}

/// The names of the entries of `dir` that are directories, sorted (a
/// tracefs `events/` directory: its systems; a system's: its events).
fn subdirs(dir: &Path) -> Result<Vec<String>, RecordError> {
    let err = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::PermissionDenied => RecordError::Permission {
            detail: format!("cannot list {}: {e}", dir.display()),
        },
        _ => RecordError::Tracefs {
            path: dir.to_path_buf(),
            detail: e.to_string(),
        },
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(err)? {
        let entry = entry.map_err(err)?;
        if entry.file_type().map_err(err)?.is_dir() {
            out.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    out.sort();
    Ok(out)
}

/// The tracepoints under `events_dir` (a tracefs `events/` directory)
/// whose `system:event` names match the glob `sys:ev`, sorted by system
/// then event.
pub fn expand_glob(events_dir: &Path, sys: &str, ev: &str) -> Result<Vec<String>, RecordError> {
    let mut out = Vec::new();
    for s in subdirs(events_dir)? {
        if !glob_match(sys, &s) {
            continue;
        }
        // (a system named without a glob that does not exist matches nothing)
        let sys_dir = events_dir.join(&s);
        for e in subdirs(&sys_dir)? {
            if glob_match(ev, &e) {
                out.push(format!("{s}:{e}"));
            }
        }
    }
    Ok(out)
}

/// Resolve `-e` options as perf does: each option is a comma-separated
/// list of `system:event` names; plain names replace the default set,
/// `+name` adds to it (to the defaults when no plain name is given). A
/// name may be a glob (`sched:*`, `sched:sched_wak*`, `*:*_entry`; see
/// [`glob_match`]), expanded against the tracepoints under `events_dir`
/// (tracefs `events/`, read only when a glob is given), in name order; a
/// glob that matches nothing is an error naming it. Names without a glob
/// are checked against the kernel when the events are opened.
pub fn resolve_event_list(
    opts: &[String],
    events_dir: &Path,
) -> Result<Vec<EventRequest>, RecordError> {
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
                    detail: "expected system:event, e.g. sched:sched_switch or sched:*".into(),
                });
            };
            if sys.is_empty()
                || ev.is_empty()
                || ev.contains(':')
                || !name.chars().all(|c| {
                    c.is_ascii_alphanumeric()
                        || matches!(c, '_' | ':' | '*' | '?' | '[' | ']' | '!' | '^' | '-')
                })
            {
                return Err(RecordError::BadEvent {
                    name: part.to_string(),
                    detail: "expected system:event made of letters, digits and '_', \
                             or a glob of them with *, ? and [...]"
                        .into(),
                });
            }
            let names = if is_glob(name) {
                let found = expand_glob(events_dir, sys, ev)?;
                if found.is_empty() {
                    // (point at the system's events when it is named)
                    let list = match is_glob(sys) {
                        true => events_dir.join("*"),
                        false => events_dir.join(sys),
                    };
                    return Err(RecordError::BadEvent {
                        name: part.to_string(),
                        detail: format!(
                            "matches no tracepoint under {} (list them with `ls {}`)",
                            events_dir.display(),
                            list.display()
                        ),
                    });
                }
                found
            } else if name.contains(['!', '^', '-', ']']) {
                return Err(RecordError::BadEvent {
                    name: part.to_string(),
                    detail: "expected system:event made of letters, digits and '_'".into(),
                });
            } else {
                vec![name.to_string()]
            };
            if add {
                extra.extend(names);
            } else {
                plain.extend(names);
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

    /// A fake tracefs `events/` directory holding these `system:event`
    /// directories (and the files tracefs keeps beside them).
    fn fake_events(tag: &str, names: &[&str]) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "schedscope-fake-events-{}-{tag}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("enable"), "0\n").unwrap();
        std::fs::write(d.join("header_page"), "").unwrap();
        for n in names {
            let (sys, ev) = n.split_once(':').unwrap();
            let dir = d.join(sys).join(ev);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("id"), "1\n").unwrap();
            std::fs::write(d.join(sys).join("enable"), "0\n").unwrap();
        }
        d
    }

    fn names(r: &[EventRequest]) -> Vec<&str> {
        r.iter().map(|e| e.name.as_str()).collect()
    }

    /// A directory that does not exist: resolving names without a glob
    /// never reads it.
    fn nowhere() -> PathBuf {
        PathBuf::from("/nonexistent/schedscope/events")
    }

    #[test]
    fn plain_events_replace_and_plus_events_extend() {
        let d = resolve_event_list(&[], &nowhere()).unwrap();
        assert_eq!(d.len(), DEFAULT_EVENTS.len());
        assert!(d.iter().all(|e| !e.explicit));

        let r = resolve_event_list(&["sched:sched_switch".into()], &nowhere()).unwrap();
        assert_eq!(
            r,
            vec![EventRequest {
                name: "sched:sched_switch".into(),
                explicit: true
            }]
        );

        let a = resolve_event_list(&["+sched:sched_stat_wait".into()], &nowhere()).unwrap();
        assert_eq!(a.len(), DEFAULT_EVENTS.len() + 1);
        assert_eq!(a.last().unwrap().name, "sched:sched_stat_wait");
        assert!(a.last().unwrap().explicit);
        // a default named with `+` is not repeated, only marked explicit
        // (a kernel without it is then an error, not a notice)
        let a = resolve_event_list(&["+sched:sched_stat_runtime".into()], &nowhere()).unwrap();
        assert_eq!(names(&a), DEFAULT_EVENTS);
        let e = a
            .iter()
            .find(|e| e.name == "sched:sched_stat_runtime")
            .unwrap();
        assert!(e.explicit);
        assert_eq!(a.iter().filter(|e| e.explicit).count(), 1);

        let both = resolve_event_list(
            &["sched:sched_switch,+sched:sched_waking".into()],
            &nowhere(),
        )
        .unwrap();
        assert_eq!(names(&both), ["sched:sched_switch", "sched:sched_waking"]);
        let list = resolve_event_list(
            &["sched:sched_switch,sched:sched_wakeup".into()],
            &nowhere(),
        )
        .unwrap();
        assert_eq!(names(&list), ["sched:sched_switch", "sched:sched_wakeup"]);
    }

    #[test]
    fn malformed_event_names_are_rejected_with_the_name() {
        let e = resolve_event_list(&["sched_switch".into()], &nowhere()).unwrap_err();
        assert!(e.to_string().contains("sched_switch"), "{e}");
        for bad in ["sched:../x", "sched:a:b", "sched:x-y", ":x", "sched:"] {
            let e = resolve_event_list(&[bad.into()], &nowhere()).unwrap_err();
            assert!(e.to_string().contains(bad) && e.is_environment(), "{e}");
        }
    }

    #[test]
    fn globs_follow_fnmatch() {
        assert!(glob_match("*", "sched_switch"));
        assert!(glob_match("sched_*", "sched_switch"));
        assert!(!glob_match("sched_*", "irq_entry"));
        assert!(glob_match("*_entry", "softirq_entry"));
        assert!(!glob_match("*_entry", "softirq_exit"));
        assert!(glob_match("sched_wak*", "sched_waking"));
        assert!(glob_match("sched_wakeup*", "sched_wakeup_new"));
        assert!(glob_match("sched_wakeup?new", "sched_wakeup_new"));
        assert!(!glob_match("sched_wakeup?", "sched_wakeup"));
        assert!(glob_match("*a*b*c", "xaybzc"));
        assert!(!glob_match("*a*b*c", "xaybzcd"));
        assert!(glob_match("csd_function_e[nx]*", "csd_function_exit"));
        assert!(!glob_match("csd_function_e[!nx]*", "csd_function_exit"));
        assert!(glob_match("ipi_[a-s]*", "ipi_send_cpu"));
        assert!(!glob_match("ipi_[t-z]*", "ipi_send_cpu"));
        assert!(glob_match("a[", "a["), "an unclosed bracket is literal");
        assert!(glob_match("", ""));
        assert!(!glob_match("", "a"));
    }

    #[test]
    fn globs_expand_against_the_events_directory() {
        let dir = fake_events(
            "glob",
            &[
                "sched:sched_wakeup",
                "sched:sched_switch",
                "sched:sched_waking",
                "irq:softirq_entry",
                "irq:softirq_exit",
                "irq:irq_handler_entry",
            ],
        );
        let r = resolve_event_list(&["sched:*".into()], &dir).unwrap();
        assert_eq!(
            names(&r),
            [
                "sched:sched_switch",
                "sched:sched_wakeup",
                "sched:sched_waking"
            ],
            "name order; the system's `enable` file is no event"
        );
        assert!(r.iter().all(|e| e.explicit));

        let r = resolve_event_list(&["*:*_entry,sched:sched_wak*".into()], &dir).unwrap();
        assert_eq!(
            names(&r),
            [
                "irq:irq_handler_entry",
                "irq:softirq_entry",
                "sched:sched_wakeup",
                "sched:sched_waking"
            ]
        );

        // `+glob` adds to the defaults; events already there are not repeated
        let r = resolve_event_list(&["+sched:*".into()], &dir).unwrap();
        assert_eq!(r.len(), DEFAULT_EVENTS.len());
        for n in [
            "sched:sched_switch",
            "sched:sched_waking",
            "sched:sched_wakeup",
        ] {
            let e = r.iter().find(|e| e.name == n).unwrap();
            assert!(e.explicit, "{n} named by the glob");
        }
        assert_eq!(r.iter().filter(|e| e.explicit).count(), 3);
        let r = resolve_event_list(&["+irq:irq_*".into()], &dir).unwrap();
        assert_eq!(r.len(), DEFAULT_EVENTS.len() + 1);
        assert_eq!(r.last().unwrap().name, "irq:irq_handler_entry");

        // a glob that matches nothing names itself and the directory
        for bad in ["sched:nomatch_*", "nosuch:*", "+kvm:*"] {
            let e = resolve_event_list(&[bad.into()], &dir).unwrap_err();
            let msg = e.to_string();
            assert!(
                msg.starts_with(&format!(
                    "event '{bad}': matches no tracepoint under {}",
                    dir.display()
                )),
                "{msg}"
            );
            assert!(e.is_environment());
        }
        let _ = std::fs::remove_dir_all(&dir);

        // an unreadable events directory is an error naming it
        let e = resolve_event_list(&["sched:*".into()], &nowhere()).unwrap_err();
        assert!(
            e.to_string().contains("/nonexistent/schedscope/events"),
            "{e}"
        );
    }
}
