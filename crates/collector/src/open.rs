//! Which events to open and how: the plan (event set resolved against
//! tracefs, call chains, filters) and the perf_event_open calls that give
//! one fd per (event, CPU) and one ring per CPU.

use crate::config::RecordConfig;
use crate::error::RecordError;
use crate::events::{self, EventRequest};
use crate::sys::{self, EventFd, Ring};
use schedscope_perf_data::abi;
use schedscope_perf_data::{attr_flag, AttrSpec, EventAttr};
use schedscope_trace::topology::parse_cpu_list;
use std::io;
use std::path::Path;

/// sample_type fields of [`EventAttr::tracepoint`] that recordings leave
/// out (see [`trimmed_sample_fields`]): no analysis reads them.
pub(crate) const TRIMMED_SAMPLE_FIELDS: u64 = abi::sample::IP | abi::sample::PERIOD;

/// The [`TRIMMED_SAMPLE_FIELDS`] left out of tracepoint `name`'s samples:
/// always the instruction pointer; the period only on the default events
/// that count 1 (their period would always read 1). A tracepoint declared
/// with `__perf_count` ([`events::PERF_COUNT_EVENTS`]: sched_stat_runtime,
/// a default, and sched_stat_wait/sleep/iowait/blocked) adds its count
/// (ns) to the event, and without PERIOD in the sample type the kernel
/// writes one sample per unit of that count, up to its throttle (400
/// identical records per sched_stat_runtime event on this kernel); with
/// PERIOD it writes one sample that carries the count, as in perf's
/// recordings.
pub(crate) fn trimmed_sample_fields(name: &str) -> u64 {
    if events::DEFAULT_EVENTS.contains(&name) && !events::PERF_COUNT_EVENTS.contains(&name) {
        TRIMMED_SAMPLE_FIELDS
    } else {
        abi::sample::IP
    }
}

/// Data pages for a ring of at least `bytes` (a power of two, >= 2).
pub(crate) fn ring_pages(bytes: u64) -> usize {
    let page = sys::page_size() as u64;
    (bytes.div_ceil(page).max(2)).next_power_of_two() as usize
}

/// The wakeup watermark of a ring of `ring_bytes`: half of it. The
/// kernel wakes the recorder's poll when a ring holds that many bytes, so
/// the recorder sleeps while the rings fill (perf's default wakes about
/// twice a second) and has the other half of the ring as slack for its
/// drain latency (see [`crate::config::default_buffer_bytes`]).
pub(crate) fn wakeup_watermark(ring_bytes: usize) -> u32 {
    (ring_bytes / 2).min(u32::MAX as usize) as u32
}

/// Online CPUs from /sys/devices/system/cpu/online ("0-3,5").
pub fn online_cpus() -> Vec<u32> {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let mut out = parse_cpu_list(&s).unwrap_or_default();
    if out.is_empty() {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        out = (0..n as u32).collect();
    }
    out
}

/// One event to open.
pub(crate) struct Planned {
    pub(crate) name: String,
    pub(crate) attr: EventAttr,
    pub(crate) filter: Option<&'static str>,
    pub(crate) explicit: bool,
}

pub(crate) fn plan(
    cfg: &RecordConfig,
    tracefs: &Path,
    notice: &mut dyn FnMut(&str),
    skipped: &mut Vec<String>,
) -> Result<Vec<Planned>, RecordError> {
    let reqs: Vec<EventRequest> = events::resolve_event_list(&cfg.events, &tracefs.join("events"))?;
    let mut out = Vec::new();
    for r in reqs {
        match events::tracepoint_id(tracefs, &r.name)? {
            Some(id) => {
                let mut attr = EventAttr::tracepoint(id);
                // 8-16 bytes less per sample, nothing read from them:
                // the tracepoint's instruction pointer and, where it is
                // always 1, the period (perf script's default output
                // prints neither for tracepoints).
                attr.sample_type &= !trimmed_sample_fields(&r.name);
                if cfg.call_graph {
                    // With call chains, every event keeps its IP: `perf
                    // script -F ip,sym` prints chains only when all the
                    // file's events have one.
                    attr.sample_type |= abi::sample::IP;
                    if events::wants_callchain(&r.name) {
                        attr.sample_type |= abi::sample::CALLCHAIN;
                    }
                }
                out.push(Planned {
                    filter: events::default_filter(&r.name),
                    name: r.name,
                    attr,
                    explicit: r.explicit,
                });
            }
            None if r.explicit => {
                return Err(RecordError::BadEvent {
                    name: r.name.clone(),
                    detail: format!(
                        "no such tracepoint ({} does not exist)",
                        tracefs
                            .join("events")
                            .join(r.name.replace(':', "/"))
                            .display()
                    ),
                })
            }
            None => {
                notice(&format!(
                    "skipping {}: not available on this kernel",
                    r.name
                ));
                skipped.push(r.name);
            }
        }
    }
    if let Some(hz) = cfg.profile_hz {
        if hz == 0 {
            return Err(RecordError::BadOption {
                option: "--profile".into(),
                detail: "frequency must be at least 1 Hz".into(),
            });
        }
        let mut attr = EventAttr::tracepoint(0);
        attr.kind = abi::attr_type::SOFTWARE;
        attr.config = 0; // PERF_COUNT_SW_CPU_CLOCK
        attr.sample_period = hz;
        attr.flags |= attr_flag::FREQ;
        attr.sample_type = (attr.sample_type & !abi::sample::RAW) | abi::sample::CALLCHAIN;
        out.push(Planned {
            name: "cpu-clock".into(),
            attr,
            filter: None,
            explicit: true,
        });
    }
    Ok(out)
}

/// Per-CPU state: its ring (owned by the first event opened on it).
pub(crate) struct CpuRing {
    pub(crate) ring: Ring,
    pub(crate) leader_fd: i32,
}

/// Open events: attr specs for the file, all fds, one ring per CPU.
pub(crate) struct Opened {
    pub(crate) specs: Vec<AttrSpec>,
    pub(crate) fds: Vec<(usize, EventFd)>,
    pub(crate) rings: Vec<CpuRing>,
    pub(crate) has_lost_format: bool,
}

pub(crate) fn open_all(
    planned: Vec<Planned>,
    cpus: &[u32],
    ring_bytes: u64,
    user_stacks: bool,
    notice: &mut dyn FnMut(&str),
    skipped: &mut Vec<String>,
) -> Result<Opened, RecordError> {
    let pages = ring_pages(ring_bytes);
    let watermark = wakeup_watermark(pages * sys::page_size());
    let mut specs: Vec<AttrSpec> = Vec::new();
    let mut fds: Vec<(usize, EventFd)> = Vec::new();
    // Per CPU: index in `fds` of the event that owns the CPU's ring.
    let mut leader: Vec<Option<usize>> = vec![None; cpus.len()];
    let mut rings: Vec<CpuRing> = Vec::new();
    let mut has_lost_format = true;
    for p in planned {
        let mut attr = p.attr.clone();
        attr.flags |= attr_flag::USE_CLOCKID | attr_flag::WATERMARK;
        attr.clockid = libc::CLOCK_MONOTONIC;
        attr.wakeup = watermark;
        if specs.is_empty() {
            // The tracking event: the kernel adds COMM/FORK/EXIT records.
            attr.flags |= attr_flag::COMM | attr_flag::TASK | attr_flag::COMM_EXEC;
            if user_stacks {
                // New executable mappings, for user call-chain symbols.
                attr.flags |= attr_flag::MMAP;
            }
        }
        attr.read_format = abi::read_format::ID
            | if has_lost_format {
                abi::read_format::LOST
            } else {
                0
            };
        let mut ids = Vec::with_capacity(cpus.len());
        let mut event_fds = Vec::with_capacity(cpus.len());
        let mut failure: Option<(u32, io::Error)> = None;
        for &cpu in cpus {
            let mut r = EventFd::open(&attr, cpu);
            if matches!(&r, Err(e) if e.raw_os_error() == Some(libc::EINVAL))
                && attr.read_format & abi::read_format::LOST != 0
            {
                // Kernels before 6.0 lack PERF_FORMAT_LOST.
                attr.read_format &= !abi::read_format::LOST;
                has_lost_format = false;
                r = EventFd::open(&attr, cpu);
            }
            match r {
                Ok(fd) => {
                    let id = fd.id().map_err(|e| RecordError::PerfEvent {
                        what: "PERF_EVENT_IOC_ID",
                        event: p.name.clone(),
                        cpu,
                        source: e,
                    })?;
                    if let Some(f) = p.filter {
                        fd.set_filter(f).map_err(|e| RecordError::PerfEvent {
                            what: "PERF_EVENT_IOC_SET_FILTER",
                            event: p.name.clone(),
                            cpu,
                            source: e,
                        })?;
                    }
                    ids.push(id);
                    event_fds.push((cpu, fd));
                }
                Err(e) => {
                    failure = Some((cpu, e));
                    break;
                }
            }
        }
        if let Some((cpu, e)) = failure {
            match e.raw_os_error() {
                Some(libc::EACCES) | Some(libc::EPERM) => {
                    return Err(RecordError::Permission {
                        detail: format!("perf_event_open for {} on CPU {cpu}: {e}", p.name),
                    })
                }
                Some(libc::ENOENT) | Some(libc::ENODEV) | Some(libc::EOPNOTSUPP) if !p.explicit => {
                    notice(&format!("skipping {}: {e}", p.name));
                    skipped.push(p.name);
                    continue;
                }
                _ => {
                    return Err(RecordError::PerfEvent {
                        what: "perf_event_open",
                        event: p.name,
                        cpu,
                        source: e,
                    })
                }
            }
        }
        let idx = specs.len();
        for (ci, (cpu, fd)) in event_fds.into_iter().enumerate() {
            match leader[ci] {
                None => {
                    let ring = Ring::map(&fd, pages).map_err(|e| {
                        if e.raw_os_error() == Some(libc::EPERM) {
                            RecordError::Permission {
                                detail: format!(
                                    "cannot lock a {} KiB ring buffer for CPU {cpu} ({e}); \
                                     use a smaller --buffer-size or raise kernel.perf_event_mlock_kb",
                                    pages * sys::page_size() / 1024
                                ),
                            }
                        } else {
                            RecordError::PerfEvent {
                                what: "mmap of the ring buffer",
                                event: p.name.clone(),
                                cpu,
                                source: e,
                            }
                        }
                    })?;
                    rings.push(CpuRing {
                        ring,
                        leader_fd: fd.raw(),
                    });
                    leader[ci] = Some(fds.len());
                }
                Some(l) => {
                    fd.set_output(&fds[l].1)
                        .map_err(|e| RecordError::PerfEvent {
                            what: "PERF_EVENT_IOC_SET_OUTPUT",
                            event: p.name.clone(),
                            cpu,
                            source: e,
                        })?;
                }
            }
            fds.push((idx, fd));
        }
        specs.push(AttrSpec {
            attr,
            name: p.name,
            ids,
        });
    }
    Ok(Opened {
        specs,
        fds,
        rings,
        has_lost_format,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A fake tracefs with only some of the default events.
    /// (Keyed by the number of events: each test gives a different one.)
    fn fake_tracefs(events: &[(&str, u64)]) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "schedscope-fake-tracefs-{}-{}",
            std::process::id(),
            events.len()
        ));
        let _ = std::fs::remove_dir_all(&d);
        for (name, id) in events {
            let (sys, ev) = name.split_once(':').unwrap();
            let dir = d.join("events").join(sys).join(ev);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("id"), format!("{id}\n")).unwrap();
        }
        d
    }

    #[test]
    fn tracepoints_outside_the_defaults_keep_their_period() {
        let tfs = fake_tracefs(&[("sched:sched_switch", 11), ("sched:sched_stat_runtime", 14)]);
        let cfg = RecordConfig {
            events: vec![
                "sched:sched_switch".into(),
                "+sched:sched_stat_runtime".into(),
            ],
            ..RecordConfig::default()
        };
        let p = plan(&cfg, &tfs, &mut |_| {}, &mut Vec::new()).unwrap();
        let names: Vec<&str> = p.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["sched:sched_switch", "sched:sched_stat_runtime"]);
        assert_eq!(p[0].attr.sample_type & TRIMMED_SAMPLE_FIELDS, 0);
        assert_eq!(
            p[1].attr.sample_type & TRIMMED_SAMPLE_FIELDS,
            abi::sample::PERIOD,
            "a __perf_count tracepoint's count is its period: one sample per event"
        );
        let _ = std::fs::remove_dir_all(&tfs);
    }

    #[test]
    fn the_default_sched_stat_runtime_keeps_its_period() {
        let tfs = fake_tracefs(&[
            ("sched:sched_switch", 11),
            ("sched:sched_waking", 12),
            ("sched:sched_stat_runtime", 14),
            ("power:cpu_idle", 15),
        ]);
        let p = plan(&RecordConfig::default(), &tfs, &mut |_| {}, &mut Vec::new()).unwrap();
        let names: Vec<&str> = p.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "sched:sched_switch",
                "sched:sched_waking",
                "sched:sched_stat_runtime",
                "power:cpu_idle"
            ]
        );
        assert!(p.iter().all(|e| !e.explicit), "all four are defaults");
        for i in [0, 1, 3] {
            assert_eq!(
                p[i].attr.sample_type & TRIMMED_SAMPLE_FIELDS,
                0,
                "{}",
                p[i].name
            );
        }
        assert_eq!(
            p[2].attr.sample_type & TRIMMED_SAMPLE_FIELDS,
            abi::sample::PERIOD,
            "a default __perf_count tracepoint keeps its period: one sample per event"
        );
        let _ = std::fs::remove_dir_all(&tfs);
    }

    #[test]
    fn missing_default_events_are_skipped_with_a_notice_but_explicit_ones_fail() {
        let tfs = fake_tracefs(&[
            ("sched:sched_switch", 11),
            ("irq:softirq_entry", 12),
            ("ipi:ipi_send_cpu", 13),
        ]);
        let mut notices = Vec::new();
        let mut skipped = Vec::new();
        let cfg = RecordConfig {
            call_graph: true,
            ..RecordConfig::default()
        };
        let p = plan(
            &cfg,
            &tfs,
            &mut |m| notices.push(m.to_string()),
            &mut skipped,
        )
        .unwrap();
        let names: Vec<&str> = p.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "sched:sched_switch",
                "ipi:ipi_send_cpu",
                "irq:softirq_entry"
            ]
        );
        assert_eq!(p[0].attr.config, 11);
        assert_eq!(
            p[0].attr.sample_type & TRIMMED_SAMPLE_FIELDS,
            abi::sample::IP,
            "no PERIOD on tracepoints; with call chains every event keeps its IP"
        );
        assert_eq!(
            p[0].attr.sample_type & abi::sample::CALLCHAIN,
            0,
            "no stacks on sched_switch"
        );
        assert_ne!(
            p[1].attr.sample_type & abi::sample::CALLCHAIN,
            0,
            "stacks on ipi"
        );
        assert_eq!(p[2].filter, Some("vec == 7"));
        assert_eq!(skipped.len(), events::DEFAULT_EVENTS.len() - 3);
        assert_eq!(notices.len(), skipped.len(), "one notice per skipped event");
        assert!(notices.iter().any(|n| n.contains("kvm:kvm_exit")));
        // without call chains, neither IP nor PERIOD
        let p = plan(&RecordConfig::default(), &tfs, &mut |_| {}, &mut Vec::new()).unwrap();
        assert_eq!(p[0].attr.sample_type & TRIMMED_SAMPLE_FIELDS, 0);
        assert_eq!(p[1].attr.sample_type & TRIMMED_SAMPLE_FIELDS, 0);

        let cfg = RecordConfig {
            events: vec!["+kvm:kvm_exit".into()],
            ..RecordConfig::default()
        };
        let e = plan(&cfg, &tfs, &mut |_| {}, &mut Vec::new())
            .err()
            .unwrap();
        assert!(
            e.to_string().contains("kvm:kvm_exit") && e.is_environment(),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&tfs);
    }

    #[test]
    fn ring_pages_are_powers_of_two() {
        let page = sys::page_size() as u64;
        assert_eq!(ring_pages(1024 * page), 1024);
        assert_eq!(ring_pages(1000 * page), 1024);
        assert_eq!(ring_pages(1), 2);
    }
}
