//! The recording, in its phases: [`record`] runs `setup` (tracefs, event
//! plan, cgroups, CPUs), `Session::open` (one perf event per (tracepoint,
//! CPU), each CPU's events funnelled into one ring, the output file, enable),
//! `Session::snapshot` (threads alive, kernel and executable maps, first
//! cgroup sample), `Session::drain_loop` (poll the rings into the perf.data
//! writer until a stop condition) and `Session::finish` (stop the events,
//! last drain, loss counters, feature sections).

use crate::cgroup;
use crate::config::{default_buffer_bytes, RecordConfig};
use crate::drain::{drain, Counts};
use crate::error::RecordError;
use crate::events;
use crate::open::{online_cpus, open_all, plan, Opened, Planned};
use crate::procfs;
use crate::sys;
use schedscope_perf_data::abi;
use schedscope_perf_data::sections::{self, CgroupSample, TaskCgroup};
use schedscope_perf_data::{Features, PerfDataWriter, TracingData};
use schedscope_trace::topology::parse_cpu_list;
use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// Nice value of the recording thread, from the start of the recording
/// (the command is started with the caller's).
const RECORDER_NICE: i32 = -10;
/// How often cgroup counters are sampled.
const CGROUP_INTERVAL: Duration = Duration::from_millis(100);
/// Upper bound of one poll wait. The recorder sleeps until a ring is half
/// full (the wakeup watermark), a stop signal interrupts the poll, the
/// command's exit makes its pidfd readable, or the duration, the next
/// cgroup sample or the next progress line is due; this bound only caps
/// what none of those foresee (and is the command's exit check where
/// pidfd_open is missing, see [`POLL_MS_NO_PIDFD`]).
const POLL_MS: i32 = 1000;
/// Poll bound while a command runs whose exit cannot be polled.
const POLL_MS_NO_PIDFD: i32 = 100;

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
    /// Where samples were lost: each CPU with losses, in CPU order.
    pub lost_by_cpu: Vec<CpuLoss>,
    /// Start-up: from the call to the first drain (setup, open, enable,
    /// thread snapshot, command start).
    pub startup: Duration,
    /// Finish: from the stop condition to the complete file.
    pub finish: Duration,
    /// The fullest any ring was when drained: its CPU and the filled share
    /// of its size (0..=1). Near 1, the ring nearly overflowed: a measure
    /// of the headroom of the buffer size that load does not hide.
    pub fullest_ring: (u32, f64),
}

/// Samples lost on one CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuLoss {
    /// The CPU.
    pub cpu: u32,
    /// Samples lost (kernel counters, or PERF_RECORD_LOST totals if larger).
    pub lost: u64,
    /// When the first and the last PERF_RECORD_LOST of this CPU were
    /// emitted, after the events were enabled; `None` when only the kernel
    /// counters saw the loss.
    pub when: Option<(Duration, Duration)>,
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
    progress: Option<&mut dyn FnMut(&Progress)>,
) -> Result<RecordSummary, RecordError> {
    // First, so that a stop signal at any later moment still ends in a
    // complete file.
    sys::install_stop_handlers().map_err(|e| RecordError::Output {
        path: cfg.output.clone(),
        source: e,
    })?;
    let t0 = Instant::now();
    // Under a saturating workload (hundreds of runnable tasks on few CPUs)
    // the recorder must still get the CPU: for the thread snapshot, which
    // runs while the rings fill, as much as for draining them.
    let caller_nice = sys::raise_priority(RECORDER_NICE);
    let setup = setup(cfg, notice)?;
    let mut s = Session::open(cfg, setup, notice)?;
    s.snapshot(cfg);
    let mut child = match s.spawn(cfg, caller_nice) {
        Ok(c) => c,
        Err(e) => {
            s.abandon();
            return Err(e);
        }
    };
    let startup = t0.elapsed();
    let (stop, command_status) = s.drain_loop(cfg, child.as_mut(), notice, progress);
    let t1 = Instant::now();
    let mut summary = s.finish(cfg, stop, child, command_status, notice)?;
    summary.startup = startup;
    summary.finish = t1.elapsed();
    Ok(summary)
}

/// What the setup phase found: the event plan and where to sample.
struct Setup {
    tracefs: PathBuf,
    planned: Vec<Planned>,
    skipped: Vec<String>,
    cgroup_dirs: Vec<cgroup::CgroupDir>,
    cpus: Vec<u32>,
}

/// Resolve the event set against tracefs, the cgroups to sample and the
/// online CPUs.
fn setup(cfg: &RecordConfig, notice: &mut dyn FnMut(&str)) -> Result<Setup, RecordError> {
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
    Ok(Setup {
        tracefs,
        planned,
        skipped,
        cgroup_dirs,
        cpus: online_cpus(),
    })
}

/// A recording in progress: the open events and their rings, the file
/// being written and what was gathered on the way.
struct Session {
    tracefs: PathBuf,
    skipped: Vec<String>,
    cgroup_dirs: Vec<cgroup::CgroupDir>,
    cpus: Vec<u32>,
    opened: Opened,
    w: PerfDataWriter<std::fs::File>,
    counts: Counts,
    /// When the events were enabled, and the same on the events' clock.
    start: Instant,
    start_ns: u64,
    /// The events' clock against the time of day, taken at enable time
    /// (HEADER_CLOCK_DATA).
    wall_clock: Option<schedscope_trace::WallClock>,
    /// The first write error; the recording stops on it.
    write_error: Option<String>,
    samples: Vec<CgroupSample>,
    task_cgroups: Vec<TaskCgroup>,
    /// The tracing data (format files, kallsyms), read on a helper thread
    /// while the recording runs, so that finishing does not wait for it.
    tracing: std::thread::JoinHandle<Result<TracingData, RecordError>>,
}

impl Session {
    /// Open the events and the output file, then enable the events.
    fn open(
        cfg: &RecordConfig,
        setup: Setup,
        notice: &mut dyn FnMut(&str),
    ) -> Result<Session, RecordError> {
        let Setup {
            tracefs,
            planned,
            mut skipped,
            cgroup_dirs,
            cpus,
        } = setup;
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
        let file = create_output(cfg)?;
        let w = PerfDataWriter::new(file, opened.specs.clone()).map_err(|e| out_err(cfg, e))?;
        let counts = Counts::new(&opened.specs, opened.rings.len());
        for (i, fd) in &opened.fds {
            fd.enable().map_err(|e| RecordError::PerfEvent {
                what: "PERF_EVENT_IOC_ENABLE",
                event: opened.specs[*i].name.clone(),
                cpu: 0,
                source: e,
            })?;
        }
        let tp_names: Vec<String> = opened
            .specs
            .iter()
            .filter(|s| s.attr.kind == abi::attr_type::TRACEPOINT)
            .map(|s| s.name.clone())
            .collect();
        let tfs = tracefs.clone();
        let tracing = sys::spawn_quiet(move || {
            let names: Vec<&str> = tp_names.iter().map(String::as_str).collect();
            events::tracing_data(&tfs, &names)
        });
        Ok(Session {
            tracing,
            tracefs,
            skipped,
            cgroup_dirs,
            cpus,
            opened,
            w,
            counts,
            start: Instant::now(),
            start_ns: sys::monotonic_ns(),
            wall_clock: sys::wall_clock_anchor(),
            write_error: None,
            samples: Vec::new(),
            task_cgroups: Vec::new(),
        })
    }

    /// Synthesize FORK/COMM records for the threads alive now (the tracking
    /// event reports later ones), the kernel map, executable maps when user
    /// stacks are recorded, and take the first cgroup sample.
    fn snapshot(&mut self, cfg: &RecordConfig) {
        let alive = procfs::threads();
        self.task_cgroups =
            cgroup::task_cgroups(alive.iter().map(|t| (t.tgid, t.tid)), sys::monotonic_ns());
        let r = self.write_snapshot(cfg, &alive);
        if let Err(e) = r {
            self.write_error = Some(e.to_string());
        }
        self.take_cgroups();
    }

    fn write_snapshot(
        &mut self,
        cfg: &RecordConfig,
        alive: &[procfs::ThreadInfo],
    ) -> io::Result<()> {
        for t in alive {
            let (ppid, ptid) = if t.tgid == t.tid {
                (t.ppid, t.ppid)
            } else {
                (t.tgid, t.tgid)
            };
            self.w.fork(t.tgid, ppid, t.tid, ptid, 0)?;
            self.w.comm(t.tgid, t.tid, &t.comm, 0)?;
        }
        // The kernel map, so perf symbolizes kernel call chains from kallsyms.
        if let Some(text) = procfs::kernel_text_address() {
            self.w.mmap(
                u32::MAX,
                0,
                text,
                u64::MAX - text,
                text,
                "[kernel.kallsyms]_text",
                abi::MISC_KERNEL,
            )?;
        }
        // Executable mappings of live processes, for user call-chain symbols.
        if cfg.call_graph || cfg.profile_hz.is_some() {
            for m in procfs::exec_mappings() {
                self.w.mmap(
                    m.pid,
                    m.pid,
                    m.start,
                    m.len,
                    m.pgoff,
                    &m.path,
                    abi::MISC_USER,
                )?;
            }
        }
        Ok(())
    }

    fn take_cgroups(&mut self) {
        let ts = sys::monotonic_ns();
        self.samples.extend(
            self.cgroup_dirs
                .iter()
                .filter_map(|d| cgroup::sample(d, ts)),
        );
    }

    /// Start the command with nice value `nice`, unless a stop signal came first.
    fn spawn(&self, cfg: &RecordConfig, nice: i32) -> Result<Option<Child>, RecordError> {
        if sys::stop_requested().is_some() {
            return Ok(None);
        }
        let Some((prog, args)) = cfg.command.split_first() else {
            return Ok(None);
        };
        sys::spawn_with_nice(std::process::Command::new(prog).args(args), nice)
            .map(Some)
            .map_err(|e| RecordError::Command {
                command: prog.clone(),
                source: e,
            })
    }

    /// Stop the events and finish the file without feature sections (the
    /// recording could not go on; the caller reports why).
    fn abandon(self) {
        for (_, fd) in &self.opened.fds {
            let _ = fd.disable();
        }
        let _ = self.w.finish(&Features::default());
    }

    /// Poll and drain the rings until a stop condition; the command's exit
    /// status when it was the command that ended.
    fn drain_loop(
        &mut self,
        cfg: &RecordConfig,
        mut child: Option<&mut Child>,
        notice: &mut dyn FnMut(&str),
        mut progress: Option<&mut dyn FnMut(&Progress)>,
    ) -> (StopReason, Option<ExitStatus>) {
        let mut poll_fds: Vec<i32> = self.opened.rings.iter().map(|r| r.leader_fd).collect();
        // The command's exit wakes the poll (kept open for the loop).
        let pidfd = child.as_ref().map(|c| sys::pidfd_open(c.id()));
        let max_wait = match &pidfd {
            Some(Ok(fd)) => {
                poll_fds.push(std::os::fd::AsRawFd::as_raw_fd(fd));
                POLL_MS
            }
            Some(Err(_)) => POLL_MS_NO_PIDFD,
            None => POLL_MS,
        };
        let mut next_cgroup = Instant::now() + CGROUP_INTERVAL;
        let mut next_progress = Instant::now() + Duration::from_secs(1);
        let mut last_progress = (Instant::now(), 0u64);
        loop {
            if let Some(e) = &self.write_error {
                return (StopReason::WriteError(e.clone()), None);
            }
            if let Some(sig) = sys::stop_requested() {
                return (StopReason::Signal(sig), None);
            }
            if let Some(c) = child.as_mut() {
                if let Ok(Some(st)) = c.try_wait() {
                    return (StopReason::CommandExited, Some(st));
                }
            }
            let now = Instant::now();
            let since = now.duration_since(self.start);
            if cfg.duration.is_some_and(|d| since >= d) {
                return (StopReason::Duration, None);
            }
            let ms = |t: Instant| t.saturating_duration_since(now).as_millis() as i32;
            let mut wait = max_wait;
            if let Some(d) = cfg.duration {
                wait = wait.min(d.saturating_sub(since).as_millis() as i32 + 1);
            }
            if !self.cgroup_dirs.is_empty() {
                wait = wait.min(ms(next_cgroup));
            }
            if progress.is_some() {
                wait = wait.min(ms(next_progress));
            }
            if let Err(e) = sys::poll_in(&poll_fds, wait) {
                notice(&format!("poll failed: {e}"));
            }
            if let Err(e) = drain(&mut self.opened.rings, &mut self.w, &mut self.counts) {
                self.write_error = Some(e.to_string());
                continue;
            }
            let now = Instant::now();
            if !self.cgroup_dirs.is_empty() && now >= next_cgroup {
                self.take_cgroups();
                next_cgroup = now + CGROUP_INTERVAL;
            }
            if now >= next_progress {
                if let Some(cb) = progress.as_mut() {
                    let dt = now.duration_since(last_progress.0).as_secs_f64();
                    cb(&Progress {
                        events: self.counts.samples,
                        events_per_sec: (self.counts.samples - last_progress.1) as f64
                            / dt.max(1e-9),
                        bytes: self.w.data_size(),
                        elapsed: now.duration_since(self.start),
                    });
                }
                last_progress = (now, self.counts.samples);
                next_progress = now + Duration::from_secs(1);
            }
        }
    }

    /// Stop the events, drain what they produced, read the loss counters,
    /// write the feature sections and wait for the command.
    fn finish(
        mut self,
        cfg: &RecordConfig,
        stop: StopReason,
        child: Option<Child>,
        mut command_status: Option<ExitStatus>,
        notice: &mut dyn FnMut(&str),
    ) -> Result<RecordSummary, RecordError> {
        for (_, fd) in &self.opened.fds {
            let _ = fd.disable();
        }
        if self.write_error.is_none() {
            if let Err(e) = drain(&mut self.opened.rings, &mut self.w, &mut self.counts) {
                self.write_error = Some(e.to_string());
            }
        }
        let elapsed = self.start.elapsed();
        self.take_cgroups();
        let lost_by_cpu = self.record_losses();
        // Closing the events costs the kernel a cross-CPU call (and RCU
        // waits) per event: under load that takes seconds, so it runs on a
        // helper thread beside the rest of the finish.
        let closing = {
            let rings = std::mem::take(&mut self.opened.rings);
            let fds = std::mem::take(&mut self.opened.fds);
            sys::spawn_quiet(move || drop((rings, fds)))
        };
        // Threads alive at the start have their entry (the earliest entry
        // wins when the trace is decoded): read only the new ones.
        let known: HashSet<(u32, u32)> = self
            .task_cgroups
            .iter()
            .filter_map(|t| Some((u32::try_from(t.pid).ok()?, u32::try_from(t.tid).ok()?)))
            .collect();
        self.task_cgroups.extend(cgroup::task_cgroups(
            procfs::thread_ids()
                .into_iter()
                .filter(|id| !known.contains(id)),
            sys::monotonic_ns(),
        ));
        let Session {
            tracefs,
            tracing,
            skipped,
            cpus,
            opened,
            w,
            counts,
            write_error,
            samples,
            task_cgroups,
            wall_clock,
            ..
        } = self;
        let specs = opened.specs;
        let tracing_data = tracing
            .join()
            .unwrap_or_else(|_| {
                Err(RecordError::Tracefs {
                    path: tracefs.clone(),
                    detail: "the reader thread panicked".into(),
                })
            })
            .map(|mut td| {
                // Task names as of the end, as before.
                td.saved_cmdlines = events::saved_cmdlines(&tracefs);
                td
            });
        let features = Features {
            clock_data: wall_clock,
            clockid_res_ns: wall_clock.and(sys::monotonic_res_ns()),
            ..features(
                cfg,
                &tracefs,
                tracing_data,
                &cpus,
                &samples,
                &task_cgroups,
                notice,
            )
        };
        let (_, fin) = w.finish(&features).map_err(|e| out_err(cfg, e))?;
        let _ = closing.join();

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
            lost: lost_by_cpu
                .iter()
                .map(|l| l.lost)
                .sum::<u64>()
                .max(counts.lost_in_stream),
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
            lost_by_cpu,
            fullest_ring: (
                cpus.get(counts.fullest.1).copied().unwrap_or(0),
                counts.fullest.0 as f64 / 1e6,
            ),
            startup: Duration::ZERO,
            finish: Duration::ZERO,
        })
    }

    /// Read the kernel's lost-sample counters (PERF_FORMAT_LOST; none on
    /// kernels before 6.0), store each non-zero one in the file as a
    /// PERF_RECORD_LOST_SAMPLES naming its event and CPU (as perf does), and
    /// combine them with the in-stream PERF_RECORD_LOST totals per CPU.
    fn record_losses(&mut self) -> Vec<CpuLoss> {
        let ncpu = self.cpus.len();
        let mut kernel = vec![0u64; ncpu];
        if self.opened.has_lost_format {
            let now = sys::monotonic_ns();
            let mut vals = [0u64; 3];
            for (idx, fd) in &self.opened.fds {
                let (Ok(3), Ok(id)) = (fd.read_values(&mut vals), fd.id()) else {
                    continue;
                };
                let Some(ci) = self.opened.specs[*idx].ids.iter().position(|&i| i == id) else {
                    continue;
                };
                if vals[2] == 0 || ci >= ncpu {
                    continue;
                }
                kernel[ci] += vals[2];
                if self.write_error.is_none() {
                    if let Err(e) = self.w.lost_samples(id, self.cpus[ci], vals[2], now) {
                        self.write_error = Some(e.to_string());
                    }
                }
            }
        }
        let since = |ns: u64| Duration::from_nanos(ns.saturating_sub(self.start_ns));
        (0..ncpu)
            .filter_map(|ci| {
                let ring = self
                    .counts
                    .lost_by_ring
                    .get(ci)
                    .copied()
                    .unwrap_or_default();
                let lost = kernel[ci].max(ring.lost);
                (lost > 0).then(|| CpuLoss {
                    cpu: self.cpus[ci],
                    lost,
                    when: (ring.lost > 0).then(|| (since(ring.first_ns), since(ring.last_ns))),
                })
            })
            .collect()
    }
}

fn out_err(cfg: &RecordConfig, e: io::Error) -> RecordError {
    RecordError::Output {
        path: cfg.output.clone(),
        source: e,
    }
}

/// Create the output file, keeping a previous recording as FILE.old, as
/// perf does.
fn create_output(cfg: &RecordConfig) -> Result<std::fs::File, RecordError> {
    if cfg.output.exists() {
        let mut old = cfg.output.clone().into_os_string();
        old.push(".old");
        std::fs::rename(&cfg.output, &old).map_err(|e| out_err(cfg, e))?;
    }
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&cfg.output)
        .map_err(|e| out_err(cfg, e))
}

/// The feature sections: tracing data (format files and kallsyms, with a
/// compact fallback without kallsyms), host metadata and schedscope's own
/// cgroup sections; the caller adds the wall-clock anchor.
fn features(
    cfg: &RecordConfig,
    tracefs: &Path,
    tracing_data: Result<TracingData, RecordError>,
    cpus: &[u32],
    samples: &[CgroupSample],
    task_cgroups: &[TaskCgroup],
    notice: &mut dyn FnMut(&str),
) -> Features {
    let tracing_data = match tracing_data.and_then(|mut td| {
        let to_err = |e: io::Error| RecordError::Tracefs {
            path: tracefs.to_path_buf(),
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
        .and_then(|s| parse_cpu_list(&s)?.into_iter().max())
        .map_or(nr_online, |m| m + 1);
    let (tracing_data, compact_tracing_data) = tracing_data.unzip();
    Features {
        tracing_data,
        compact_tracing_data,
        hostname: host_string("/proc/sys/kernel/hostname"),
        osrelease: host_string("/proc/sys/kernel/osrelease"),
        version: Some(format!("schedscope {}", env!("CARGO_PKG_VERSION"))),
        arch: Some(std::env::consts::ARCH.to_string()),
        nr_cpus: Some((nr_avail, nr_online)),
        cpu_topology: crate::topology::read(Path::new("/sys/devices/system/cpu"), nr_avail),
        cmdline: cfg.cmdline.clone(),
        // set by the caller, from the session's start
        clock_data: None,
        clockid_res_ns: None,
        extra: vec![
            (
                abi::feature::SCHEDSCOPE_CGROUP_SAMPLES,
                sections::encode_cgroup_samples(samples),
            ),
            (
                abi::feature::SCHEDSCOPE_TASK_CGROUPS,
                sections::encode_task_cgroups(task_cgroups),
            ),
        ],
    }
}
