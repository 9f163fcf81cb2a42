//! The recording loop: open one perf event per (tracepoint, CPU), funnel
//! each CPU's events into one ring, drain the rings into the perf.data
//! writer until asked to stop, then finish the file.

use crate::cgroup;
use crate::drain::{drain, Counts};
use crate::error::RecordError;
use crate::events;
use crate::open::{online_cpus, open_all, parse_cpu_list, plan, Opened};
use crate::procfs;
use crate::sys;
use schedscope_perf_data::abi;
use schedscope_perf_data::sections::{self, CgroupSample};
use schedscope_perf_data::{Features, PerfDataWriter};
use std::io;
use std::path::PathBuf;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// Largest default per-CPU ring: large enough that `perf bench sched
/// messaging -g 20 -l 1500` loses nothing on a 2-CPU machine.
pub const DEFAULT_BUFFER_BYTES: u64 = 16 << 20;
/// The default rings of all CPUs together stay under this (64 MiB), with
/// at least 1 MiB per CPU.
const DEFAULT_TOTAL_BUFFER_BYTES: u64 = 64 << 20;

/// Default per-CPU ring size for `nr_cpus` CPUs.
pub fn default_buffer_bytes(nr_cpus: usize) -> u64 {
    (DEFAULT_TOTAL_BUFFER_BYTES / nr_cpus.max(1) as u64).clamp(1 << 20, DEFAULT_BUFFER_BYTES)
}
/// Nice value of the recording thread (set after the command is started,
/// so the command keeps the caller's).
const RECORDER_NICE: i32 = -10;
/// How often cgroup counters are sampled.
const CGROUP_INTERVAL: Duration = Duration::from_millis(100);
/// Upper bound of one poll wait, so stop conditions are noticed quickly.
const POLL_MS: i32 = 100;

/// What to record and where.
#[derive(Clone, Debug, Default)]
pub struct RecordConfig {
    /// Output file; an existing one is renamed to `<output>.old`.
    pub output: PathBuf,
    /// `-e` options as given (see [`events::resolve_event_list`]).
    pub events: Vec<String>,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Per-CPU ring size in bytes (rounded up to a power-of-two number of pages).
    pub buffer_bytes: Option<u64>,
    /// Kernel+user call chains on IPI/TLB events.
    pub call_graph: bool,
    /// cpu-clock sampling profile at this frequency, with call chains.
    pub profile_hz: Option<u64>,
    /// cgroups to sample; empty = every cgroup with a CFS quota.
    pub cgroups: Vec<String>,
    /// Command to run while recording (empty = record until stopped).
    pub command: Vec<String>,
    /// Command line stored in the file (HEADER_CMDLINE).
    pub cmdline: Vec<String>,
}

/// Live figures handed to the progress callback about once a second.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Samples written so far.
    pub events: u64,
    /// Samples per second over the last interval.
    pub events_per_sec: f64,
    /// Bytes of the data section so far.
    pub bytes: u64,
    /// Time since the start.
    pub elapsed: Duration,
}

/// Why the recording stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// SIGINT/SIGTERM/SIGHUP (signal number).
    Signal(i32),
    /// `--duration` expired.
    Duration,
    /// The command exited.
    CommandExited,
    /// Writing the file failed (message).
    WriteError(String),
}

/// The outcome of a recording.
#[derive(Debug)]
pub struct RecordSummary {
    /// Output file.
    pub output: PathBuf,
    /// Sample records written.
    pub events: u64,
    /// Samples lost (kernel counters, or PERF_RECORD_LOST totals if larger).
    pub lost: u64,
    /// PERF_RECORD_LOST records found in the stream.
    pub lost_records: u64,
    /// File size in bytes.
    pub bytes: u64,
    /// Recording time.
    pub elapsed: Duration,
    /// Samples per event name, in attr order.
    pub events_by_name: Vec<(String, u64)>,
    /// Default events this kernel lacks (skipped).
    pub skipped: Vec<String>,
    /// cgroup samples stored.
    pub cgroup_samples: usize,
    /// Why it stopped.
    pub stop: StopReason,
    /// Exit status of the command, when one was run.
    pub command_status: Option<ExitStatus>,
}

impl RecordSummary {
    /// Lost share in percent of all samples produced.
    pub fn lost_percent(&self) -> f64 {
        let total = self.events + self.lost;
        if total == 0 {
            0.0
        } else {
            100.0 * self.lost as f64 / total as f64
        }
    }

    /// The final line: "N events, M lost (x%), S MB, T s".
    pub fn line(&self) -> String {
        format!(
            "{} events, {} lost ({:.2}%), {:.1} MB, {:.1} s",
            self.events,
            self.lost,
            self.lost_percent(),
            self.bytes as f64 / 1e6,
            self.elapsed.as_secs_f64()
        )
    }
}

/// Parse `--buffer-size`: `4M`, `512K`, `1G`, or a plain number of pages.
pub fn parse_buffer_size(s: &str) -> Result<u64, RecordError> {
    let bad = |d: &str| RecordError::BadOption {
        option: "--buffer-size".into(),
        detail: format!("'{s}': {d}"),
    };
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m = match c.to_ascii_uppercase() {
                'K' => 1u64 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                _ => return Err(bad("unit must be K, M or G")),
            };
            (&t[..i], m)
        }
        _ => (t, sys::page_size() as u64),
    };
    let n: u64 = num
        .trim()
        .parse()
        .map_err(|_| bad("expected a number of pages or a size like 4M"))?;
    let bytes = n
        .checked_mul(mult)
        .filter(|b| (1..=(1 << 32)).contains(b))
        .ok_or_else(|| bad("size must be between one page and 4G"))?;
    Ok(bytes)
}

fn host_string(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// Record until a signal, `duration` or the command's exit. Notices
/// (skipped events, warnings) go to `notice`; `progress` is called about
/// once a second.
pub fn record(
    cfg: &RecordConfig,
    notice: &mut dyn FnMut(&str),
    mut progress: Option<&mut dyn FnMut(&Progress)>,
) -> Result<RecordSummary, RecordError> {
    // First, so that a stop signal at any later moment still ends in a
    // complete file.
    sys::install_stop_handlers().map_err(|e| RecordError::Output {
        path: cfg.output.clone(),
        source: e,
    })?;
    let tracefs = events::find_tracefs()?;
    let mut skipped = Vec::new();
    let planned = plan(cfg, &tracefs, notice, &mut skipped)?;
    if planned.is_empty() {
        return Err(RecordError::NoEvents);
    }
    let cgroup_dirs = if cfg.cgroups.is_empty() {
        cgroup::discover()
    } else {
        cgroup::resolve(&cfg.cgroups)?
    };
    let cpus = online_cpus();
    let ring_bytes = cfg
        .buffer_bytes
        .unwrap_or_else(|| default_buffer_bytes(cpus.len()));
    let user_stacks = cfg.call_graph || cfg.profile_hz.is_some();
    let opened = open_all(
        planned,
        &cpus,
        ring_bytes,
        user_stacks,
        notice,
        &mut skipped,
    )?;
    if opened.specs.is_empty() {
        return Err(RecordError::NoEvents);
    }
    let Opened {
        specs,
        fds,
        mut rings,
        has_lost_format,
    } = opened;

    // Output: keep the previous recording as FILE.old, as perf does.
    let out_err = |e| RecordError::Output {
        path: cfg.output.clone(),
        source: e,
    };
    if cfg.output.exists() {
        let mut old = cfg.output.clone().into_os_string();
        old.push(".old");
        std::fs::rename(&cfg.output, &old).map_err(out_err)?;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&cfg.output)
        .map_err(out_err)?;
    let mut w = PerfDataWriter::new(file, specs.clone()).map_err(out_err)?;
    let mut counts = Counts::new(&specs);

    for (i, fd) in &fds {
        fd.enable().map_err(|e| RecordError::PerfEvent {
            what: "PERF_EVENT_IOC_ENABLE",
            event: specs[*i].name.clone(),
            cpu: 0,
            source: e,
        })?;
    }
    let start = Instant::now();
    let mut write_error: Option<String> = None;
    // Threads alive now; the tracking event reports later ones.
    let alive = procfs::threads();
    let mut task_cgroups =
        cgroup::task_cgroups(alive.iter().map(|t| (t.tgid, t.tid)), sys::monotonic_ns());
    for t in alive {
        let (ppid, ptid) = if t.tgid == t.tid {
            (t.ppid, t.ppid)
        } else {
            (t.tgid, t.tgid)
        };
        let r = w
            .fork(t.tgid, ppid, t.tid, ptid, 0)
            .and_then(|_| w.comm(t.tgid, t.tid, &t.comm, 0));
        if let Err(e) = r {
            write_error = Some(e.to_string());
            break;
        }
    }
    // The kernel map, so perf symbolizes kernel call chains from kallsyms.
    if write_error.is_none() {
        if let Some(text) = procfs::kernel_text_address() {
            if let Err(e) = w.mmap(
                u32::MAX,
                0,
                text,
                u64::MAX - text,
                text,
                "[kernel.kallsyms]_text",
                abi::MISC_KERNEL,
            ) {
                write_error = Some(e.to_string());
            }
        }
    }
    // Executable mappings of live processes, for user call-chain symbols.
    if user_stacks && write_error.is_none() {
        for m in procfs::exec_mappings() {
            if let Err(e) = w.mmap(
                m.pid,
                m.pid,
                m.start,
                m.len,
                m.pgoff,
                &m.path,
                abi::MISC_USER,
            ) {
                write_error = Some(e.to_string());
                break;
            }
        }
    }
    let mut samples: Vec<CgroupSample> = Vec::new();
    let take_cgroups = |samples: &mut Vec<CgroupSample>| {
        let ts = sys::monotonic_ns();
        samples.extend(cgroup_dirs.iter().filter_map(|d| cgroup::sample(d, ts)));
    };
    take_cgroups(&mut samples);

    let mut child: Option<Child> = None;
    let command = if sys::stop_requested().is_some() {
        None
    } else {
        cfg.command.split_first()
    };
    if let Some((prog, args)) = command {
        match std::process::Command::new(prog).args(args).spawn() {
            Ok(c) => child = Some(c),
            Err(e) => {
                for (_, fd) in &fds {
                    let _ = fd.disable();
                }
                let _ = w.finish(&Features::default());
                return Err(RecordError::Command {
                    command: prog.clone(),
                    source: e,
                });
            }
        }
    }

    // Under a saturating workload (hundreds of runnable tasks on few CPUs)
    // the recorder must still get the CPU before a ring fills up.
    sys::raise_priority(RECORDER_NICE);
    let poll_fds: Vec<i32> = rings.iter().map(|r| r.leader_fd).collect();
    let mut next_cgroup = Instant::now() + CGROUP_INTERVAL;
    let mut next_progress = Instant::now() + Duration::from_secs(1);
    let mut last_progress = (Instant::now(), 0u64);
    let mut command_status = None;
    let stop = loop {
        if let Some(e) = &write_error {
            break StopReason::WriteError(e.clone());
        }
        if let Some(sig) = sys::stop_requested() {
            break StopReason::Signal(sig);
        }
        if let Some(c) = child.as_mut() {
            if let Ok(Some(st)) = c.try_wait() {
                command_status = Some(st);
                break StopReason::CommandExited;
            }
        }
        let now = Instant::now();
        if cfg.duration.is_some_and(|d| now.duration_since(start) >= d) {
            break StopReason::Duration;
        }
        let mut wait = POLL_MS;
        if let Some(d) = cfg.duration {
            let left = d.saturating_sub(now.duration_since(start));
            wait = wait.min(left.as_millis() as i32 + 1);
        }
        if !cgroup_dirs.is_empty() {
            wait = wait.min(next_cgroup.saturating_duration_since(now).as_millis() as i32);
        }
        if let Err(e) = sys::poll_in(&poll_fds, wait) {
            notice(&format!("poll failed: {e}"));
        }
        if let Err(e) = drain(&mut rings, &mut w, &mut counts) {
            write_error = Some(e.to_string());
            continue;
        }
        let now = Instant::now();
        if !cgroup_dirs.is_empty() && now >= next_cgroup {
            take_cgroups(&mut samples);
            next_cgroup = now + CGROUP_INTERVAL;
        }
        if now >= next_progress {
            if let Some(cb) = progress.as_mut() {
                let dt = now.duration_since(last_progress.0).as_secs_f64();
                cb(&Progress {
                    events: counts.samples,
                    events_per_sec: (counts.samples - last_progress.1) as f64 / dt.max(1e-9),
                    bytes: w.data_size(),
                    elapsed: now.duration_since(start),
                });
            }
            last_progress = (now, counts.samples);
            next_progress = now + Duration::from_secs(1);
        }
    };

    // Stop the events, then drain what they produced.
    for (_, fd) in &fds {
        let _ = fd.disable();
    }
    if write_error.is_none() {
        if let Err(e) = drain(&mut rings, &mut w, &mut counts) {
            write_error = Some(e.to_string());
        }
    }
    let elapsed = start.elapsed();
    take_cgroups(&mut samples);
    task_cgroups.extend(cgroup::task_cgroups(
        procfs::threads().iter().map(|t| (t.tgid, t.tid)),
        sys::monotonic_ns(),
    ));

    let mut lost_stat = 0u64;
    if has_lost_format {
        let mut vals = [0u64; 3];
        for (_, fd) in &fds {
            if let Ok(3) = fd.read_values(&mut vals) {
                lost_stat += vals[2];
            }
        }
    }
    drop(rings);
    drop(fds);

    let tp_names: Vec<&str> = specs
        .iter()
        .filter(|s| s.attr.kind == abi::attr_type::TRACEPOINT)
        .map(|s| s.name.as_str())
        .collect();
    let tracing_data = match events::tracing_data(&tracefs, &tp_names).and_then(|mut td| {
        let to_err = |e: io::Error| RecordError::Tracefs {
            path: tracefs.clone(),
            detail: e.to_string(),
        };
        let full = td.to_bytes().map_err(to_err)?;
        // Without kallsyms (megabytes) in case the disk is full.
        td.kallsyms.clear();
        let compact = td.to_bytes().map_err(to_err)?;
        Ok((full, compact))
    }) {
        Ok(b) => Some(b),
        Err(e) => {
            notice(&format!(
                "warning: tracing data not stored ({e}); perf cannot decode the events"
            ));
            None
        }
    };
    let nr_online = cpus.len() as u32;
    let nr_avail = std::fs::read_to_string("/sys/devices/system/cpu/present")
        .ok()
        .and_then(|s| parse_cpu_list(&s).into_iter().max())
        .map_or(nr_online, |m| m + 1);
    let (tracing_data, compact_tracing_data) = tracing_data.unzip();
    let features = Features {
        tracing_data,
        compact_tracing_data,
        hostname: host_string("/proc/sys/kernel/hostname"),
        osrelease: host_string("/proc/sys/kernel/osrelease"),
        version: Some(format!("schedscope {}", env!("CARGO_PKG_VERSION"))),
        arch: Some(std::env::consts::ARCH.to_string()),
        nr_cpus: Some((nr_avail, nr_online)),
        cmdline: cfg.cmdline.clone(),
        extra: vec![
            (
                abi::feature::SCHEDSCOPE_CGROUP_SAMPLES,
                sections::encode_cgroup_samples(&samples),
            ),
            (
                abi::feature::SCHEDSCOPE_TASK_CGROUPS,
                sections::encode_task_cgroups(&task_cgroups),
            ),
        ],
    };
    let (_, fin) = w.finish(&features).map_err(out_err)?;

    // The command may still run after a signal: pass the signal on and
    // wait for it, so we exit with its status.
    if let Some(mut c) = child {
        if command_status.is_none() {
            if let StopReason::Signal(sig) = stop {
                if let Ok(None) = c.try_wait() {
                    sys::kill(c.id(), sig);
                }
            }
            command_status = c.wait().ok();
        }
    }

    let stop = match write_error {
        Some(e) if !matches!(stop, StopReason::WriteError(_)) => StopReason::WriteError(e),
        _ => stop,
    };
    Ok(RecordSummary {
        output: cfg.output.clone(),
        events: counts.samples,
        lost: lost_stat.max(counts.lost_in_stream),
        lost_records: counts.lost_records,
        bytes: fin.file_size,
        elapsed,
        events_by_name: specs
            .iter()
            .zip(&counts.per_event)
            .map(|(s, &n)| (s.name.clone(), n))
            .collect(),
        skipped,
        cgroup_samples: samples.len(),
        stop,
        command_status,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_sizes_parse_as_bytes_or_pages() {
        let page = sys::page_size() as u64;
        assert_eq!(parse_buffer_size("4M").unwrap(), 4 << 20);
        assert_eq!(parse_buffer_size("512k").unwrap(), 512 << 10);
        assert_eq!(parse_buffer_size("1024").unwrap(), 1024 * page);
        let e = parse_buffer_size("12X").unwrap_err().to_string();
        assert!(e.contains("--buffer-size") && e.contains("12X"), "{e}");
        assert!(parse_buffer_size("0").is_err());
    }

    #[test]
    fn default_rings_shrink_with_many_cpus() {
        assert_eq!(default_buffer_bytes(2), 16 << 20);
        assert_eq!(default_buffer_bytes(16), 4 << 20);
        assert_eq!(default_buffer_bytes(256), 1 << 20);
    }
}
