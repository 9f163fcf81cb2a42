//! `schedscope info`: a one-screen summary of a trace file (text or JSON).
//!
//! A full decode and counts, no analysis, but for one thing: when the
//! trace shows lost events ([`LossEvidence`], a pass over its
//! sched_switch events), the thread-state timeline is built to say how
//! many switch-ins it repaired per CPU and what placed them.

use super::report::{big, changed, load, print_warnings, stream_pass, Progress};
use crate::args::{InfoArgs, OutputFormat};
use schedscope_analysis::streamed::{same_file, Feed};
use schedscope_analysis::timeline::{Evidence, LossEvidence, LossScan};
use schedscope_analysis::{Timeline, TimelineCensus, TimelineStream};
use schedscope_render::fmt;
use schedscope_render::table::{Align, Table};
use schedscope_trace::{CpuLoss, Tid, Trace, TraceFormat, TraceMeta, Warning};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

/// How many comms the summary lists.
const TOP_COMMS: usize = 10;

/// The summary (the JSON shape of `schedscope info --format json`).
#[derive(Debug, Serialize)]
struct Info {
    path: String,
    format: TraceFormat,
    start_ns: u64,
    end_ns: u64,
    duration_ns: u64,
    cpus: u32,
    events: u64,
    events_by_name: BTreeMap<String, u64>,
    lost: u64,
    /// Lost events as a percentage of recorded + lost.
    lost_pct: f64,
    /// Where the loss records say events were lost (per CPU, with when).
    lost_by_cpu: Vec<CpuLoss>,
    /// Per CPU whose trace shows lost events: the evidence and the
    /// switch-ins the timeline repaired (empty when no CPU shows loss).
    repairs_by_cpu: Vec<CpuRepairs>,
    /// Thread incarnations in the task table.
    tasks: u64,
    /// Distinct thread-group ids among them.
    processes: u64,
    /// Some event lines had no CPU column: `cpus` counts only those named
    /// (text only; the JSON keeps its keys).
    #[serde(skip)]
    cpu_unknown: bool,
    /// Comms that emitted the most events.
    top_comms: Vec<CommCount>,
    warnings: Vec<Warning>,
    meta: TraceMeta,
}

/// One CPU's lost-event evidence and the switch-ins the timeline repaired
/// there (design.md, "Lost events").
#[derive(Debug, Serialize)]
struct CpuRepairs {
    cpu: u32,
    /// Switch-outs of a task that no recorded sched_switch put on the CPU.
    unswitched_switch_outs: u64,
    /// Of them, those where the CPU's previous recorded switch had left it
    /// idle (a switch out of idle that was not traced).
    idle_exits_missing: u64,
    /// Switch-ins no sched_switch recorded that the timeline inferred.
    switch_ins_repaired: u64,
    /// Those by the evidence that placed them (`stat_runtime`,
    /// `cpu_idle`, `task_event`, `refill`, `rule`; kinds with none are left out).
    evidence: BTreeMap<&'static str, u64>,
}

/// The repairs of every CPU whose trace shows lost events; building the
/// timeline only when one does (the evidence is one pass over the
/// switches, the timeline costs as much as the decode again).
fn repairs_of(trace: &Trace) -> Vec<CpuRepairs> {
    let built = repairs(&LossEvidence::of(trace), || {
        Ok::<_, std::convert::Infallible>(Timeline::build(trace))
    });
    built.unwrap_or_else(|never| match never {})
}

/// The repairs of every CPU that `loss` marks lossy, on the timeline
/// `build` makes (called only when one is; its error is the result's).
fn repairs<E>(
    loss: &LossEvidence,
    build: impl FnOnce() -> Result<Timeline, E>,
) -> Result<Vec<CpuRepairs>, E> {
    if !loss.cpus.iter().any(|c| c.unswitched_outs > 0) {
        return Ok(Vec::new());
    }
    let t0 = Instant::now();
    let tl = build()?;
    if std::env::var_os("SCHEDSCOPE_TIMING").is_some() {
        eprintln!(
            "timing: timeline {:.1} ms",
            t0.elapsed().as_secs_f64() * 1e3
        );
    }
    Ok(loss
        .cpus
        .iter()
        .enumerate()
        .filter(|(_, l)| l.unswitched_outs > 0)
        .map(|(c, l)| {
            let evidence = tl.repairs_by_evidence(schedscope_trace::Cpu(c as u32));
            CpuRepairs {
                cpu: c as u32,
                unswitched_switch_outs: l.unswitched_outs,
                idle_exits_missing: l.idle_exits_missing,
                switch_ins_repaired: evidence.values().sum(),
                evidence,
            }
        })
        .collect())
}

/// What `info` reads from a stream of the events (pass 1): the events per
/// thread, the loss evidence, and the timeline's census in case a CPU
/// shows loss (pass 2 then builds the timeline).
struct Tally {
    per_tid: HashMap<Tid, u64>,
    events: u64,
    /// The first and last events' times (the trace's span).
    span: Option<(schedscope_trace::Ts, schedscope_trace::Ts)>,
    loss: LossScan,
    census: Option<TimelineCensus>,
}

impl Feed for Tally {
    fn start(&mut self, meta: &Trace) {
        self.census = Some(TimelineCensus::new(meta));
    }

    fn events(&mut self, events: &[schedscope_trace::Event]) {
        for ev in events {
            *self.per_tid.entry(ev.tid).or_insert(0) += 1;
        }
        self.events += events.len() as u64;
        if let (Some(a), Some(b)) = (events.first(), events.last()) {
            let first = self.span.map_or(a.ts, |s| s.0);
            self.span = Some((first, b.ts));
        }
        self.loss.push(events);
        if let Some(c) = &mut self.census {
            for ev in events {
                c.push(ev);
            }
        }
    }
}

/// Pass 2: the timeline's build.
struct Build<'t>(TimelineStream<'t>);

impl Feed for Build<'_> {
    fn events(&mut self, events: &[schedscope_trace::Event]) {
        self.0.push(events);
    }
}

/// The summary of a big perf.data file computed as it streams past (once,
/// twice when a CPU shows loss), never holding its events; `None` when
/// the file cannot be streamed (then it is loaded).
fn streamed(path: &std::path::Path, progress: &Progress) -> anyhow::Result<Option<(Trace, Info)>> {
    let opts = schedscope_parser::LoadOptions::default();
    let mut tally = Tally {
        per_tid: HashMap::new(),
        events: 0,
        span: None,
        loss: LossScan::default(),
        census: None,
    };
    let Some(mut trace) = stream_pass(path, progress, &opts, (1, 1), &mut tally)? else {
        return Ok(None);
    };
    // (an unfiltered stream returns no span: the events give it, as the
    // loaded trace's do)
    if trace.dropped.is_none() {
        if let Some((first, last)) = tally.span {
            trace.dropped = Some(schedscope_trace::trace::Dropped {
                total: tally.events,
                first,
                last,
            });
        }
    }
    let loss = tally.loss.finish();
    let census = tally.census.take();
    let repairs = repairs(&loss, || {
        let Some(census) = census else {
            return Ok(Timeline::default());
        };
        let mut build = Build(TimelineStream::new(&trace, census));
        let t = stream_pass(path, progress, &opts, (2, 2), &mut build)?;
        // (its span, unfiltered, is the first pass's: the rest compared)
        match t.map(|t| Trace {
            dropped: trace.dropped,
            ..t
        }) {
            Some(t) if same_file(&trace, &t) => Ok(build.0.finish()),
            _ => Err(changed(&path.display().to_string())),
        }
    })?;
    let info = Info::from_parts(&trace, tally.per_tid, tally.events, repairs);
    Ok(Some((trace, info)))
}

/// Events emitted by the threads of one comm.
#[derive(Debug, Serialize)]
struct CommCount {
    comm: String,
    threads: u64,
    events: u64,
}

impl Info {
    fn of(trace: &Trace) -> Info {
        let mut per_tid: HashMap<Tid, u64> = HashMap::new();
        for ev in &trace.events {
            *per_tid.entry(ev.tid).or_insert(0) += 1;
        }
        Info::from_parts(trace, per_tid, trace.events.len() as u64, repairs_of(trace))
    }

    /// The summary of `trace` (its events not read: their count, the
    /// count per thread and the repairs are given).
    fn from_parts(
        trace: &Trace,
        per_tid: HashMap<Tid, u64>,
        events: u64,
        repairs_by_cpu: Vec<CpuRepairs>,
    ) -> Info {
        let mut per_comm: HashMap<String, (u64, u64)> = HashMap::new();
        for (tid, n) in per_tid {
            let comm = if tid.is_idle() {
                "swapper".to_string()
            } else {
                match trace.tasks.comm(tid) {
                    "" => format!("[{tid}]"),
                    c => c.to_string(),
                }
            };
            let e = per_comm.entry(comm).or_insert((0, 0));
            e.0 += 1;
            e.1 += n;
        }
        let mut top_comms: Vec<CommCount> = per_comm
            .into_iter()
            .map(|(comm, (threads, events))| CommCount {
                comm,
                threads,
                events,
            })
            .collect();
        top_comms.sort_by(|a, b| b.events.cmp(&a.events).then_with(|| a.comm.cmp(&b.comm)));
        top_comms.truncate(TOP_COMMS);
        let processes: HashSet<Tid> = trace.tasks.iter().filter_map(|t| t.tgid).collect();
        Info {
            path: trace.path.clone(),
            format: trace.format,
            start_ns: trace.start().0,
            end_ns: trace.end().0,
            duration_ns: trace.duration().0,
            cpus: trace.nr_cpus,
            events,
            events_by_name: trace.events_by_name.clone(),
            lost: trace.lost,
            lost_pct: if events + trace.lost == 0 {
                0.0
            } else {
                trace.lost as f64 * 100.0 / (events + trace.lost) as f64
            },
            lost_by_cpu: trace.lost_by_cpu.clone(),
            repairs_by_cpu,
            tasks: trace.tasks.len() as u64,
            processes: processes.len() as u64,
            cpu_unknown: trace.cpu_unknown,
            top_comms,
            warnings: trace.warnings.clone(),
            meta: trace.meta.clone(),
        }
    }

    fn render_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(
            out,
            "{}: {} events in {:.3} s {} ({})",
            self.path,
            self.events,
            self.duration_ns as f64 / 1e9,
            schedscope_render::report::on_cpus(self.cpus, self.cpu_unknown),
            match self.format {
                TraceFormat::PerfData => "perf.data",
                f => f.as_str(),
            }
        )?;
        writeln!(
            out,
            "  time      {} .. {} s",
            fmt::secs(self.start_ns),
            fmt::secs(self.end_ns)
        )?;
        writeln!(
            out,
            "  lost      {} events ({:.3}%)",
            self.lost, self.lost_pct
        )?;
        for l in &self.lost_by_cpu {
            let cpu = l.cpu.map_or("CPU ?".to_string(), |c| format!("CPU {c}"));
            let when = match (l.first_ns, l.last_ns) {
                (Some(a), Some(b)) => format!(
                    "{} .. {} s ({:.3} .. {:.3} s after the start)",
                    fmt::secs(a),
                    fmt::secs(b),
                    a.saturating_sub(self.start_ns) as f64 / 1e9,
                    b.saturating_sub(self.start_ns) as f64 / 1e9
                ),
                _ => "time not recorded (lost counters only)".to_string(),
            };
            writeln!(out, "    {cpu:<7} {} events lost, {when}", l.lost)?;
        }
        for (i, r) in self.repairs_by_cpu.iter().enumerate() {
            let label = if i == 0 { "repaired" } else { "" };
            // strongest evidence first, as design.md lists them
            let placed: Vec<String> = Evidence::ALL
                .iter()
                .filter_map(|e| {
                    r.evidence
                        .get(e.name())
                        .map(|n| format!("{} {n}", e.name()))
                })
                .collect();
            let repaired = match r.switch_ins_repaired {
                0 => "no switch-in".to_string(),
                n => format!("{n} switch-ins ({})", placed.join(", ")),
            };
            writeln!(
                out,
                "  {label:<9} CPU {}: {repaired}; loss shown by {} switch-outs no recorded \
                 switch explains, {} of them out of idle",
                r.cpu, r.unswitched_switch_outs, r.idle_exits_missing
            )?;
        }
        if self.processes == 0 && self.tasks > 0 {
            writeln!(
                out,
                "  tasks     {} threads (the trace has no process ids)",
                self.tasks
            )?;
        } else {
            writeln!(
                out,
                "  tasks     {} threads in {} processes",
                self.tasks, self.processes
            )?;
        }
        let m = &self.meta;
        if m.hostname.is_some() || m.os_release.is_some() || m.arch.is_some() {
            writeln!(
                out,
                "  host      {} (kernel {}, {}{})",
                m.hostname.as_deref().unwrap_or("?"),
                m.os_release.as_deref().unwrap_or("?"),
                m.arch.as_deref().unwrap_or("?"),
                m.nr_cpus_online
                    .map(|n| format!(", {n} CPUs online"))
                    .unwrap_or_default()
            )?;
        }
        if let Some(c) = &m.cmdline {
            writeln!(out, "  cmdline   {c}")?;
        }
        writeln!(out)?;
        let mut t = Table::new(&[
            ("Tracepoint", Align::Left),
            ("Events", Align::Right),
            ("Share %", Align::Right),
        ]);
        let mut by_count: Vec<(&String, &u64)> = self.events_by_name.iter().collect();
        by_count.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        let total: u64 = self.events_by_name.values().sum();
        for (name, n) in by_count {
            t.row(vec![name.clone(), n.to_string(), fmt::pct(*n, total)]);
        }
        t.write(out)?;
        writeln!(out)?;
        let mut c = Table::new(&[
            ("Comm (top by events)", Align::Left),
            ("Threads", Align::Right),
            ("Events", Align::Right),
            ("Share %", Align::Right),
        ]);
        for cc in &self.top_comms {
            c.row(vec![
                cc.comm.clone(),
                cc.threads.to_string(),
                cc.events.to_string(),
                fmt::pct(cc.events, self.events),
            ]);
        }
        c.write(out)?;
        if !self.warnings.is_empty() {
            writeln!(out)?;
            writeln!(out, "Warnings:")?;
            for w in &self.warnings {
                writeln!(out, "  [{:?}] {} ({}x)", w.severity, w.message, w.count)?;
            }
        }
        Ok(())
    }
}

/// Run `schedscope info`.
pub fn run(args: InfoArgs) -> anyhow::Result<ExitCode> {
    let progress = Progress::new();
    // (big perf.data files stream past, as report's do)
    let streamed = if big(&args.file) {
        streamed(&args.file, &progress)?
    } else {
        None
    };
    let (trace, info) = match streamed {
        Some(done) => done,
        None => {
            let trace = load(&args.file, &progress)?;
            let info = Info::of(&trace);
            (trace, info)
        }
    };
    progress.done();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match args.format {
        OutputFormat::Text => {
            if !trace.warnings.is_empty() {
                // Also in the summary; stderr keeps them visible under `| head`.
                print_warnings(&trace);
            }
            info.render_text(&mut out)?;
        }
        OutputFormat::Json => {
            serde_json::to_writer_pretty(&mut out, &info)?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
