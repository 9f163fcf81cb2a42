//! Parquet (and CSV) tables of schedscope traces, for SQL engines.
//!
//! The only crate of the workspace that compiles arrow and parquet.
//! [`export`] takes one decoded [`Trace`], builds its thread-state
//! [`Timeline`] once, runs the analyses (the same functions that
//! `schedscope report` runs, so the numbers agree), and streams the rows of
//! every table in [`schema::TABLES`] through a [`sink::TableSink`] per table:
//! arrow builders flushed as record batches past a memory budget into a
//! Parquet writer (and/or a CSV file). Each trace lands in its own hive
//! partition `ROOT/<table>/host=<h>/date=YYYY-MM-DD/run=<id>/part-00000.parquet`
//! (or `ROOT/<table>.parquet` with `flat`), so that DuckDB, DataFusion and
//! Spark read a fleet of traces as one dataset; `ROOT/_schedscope/` documents
//! every column ([`schema::readme`], [`schema::schema_json`]).

mod csv;
pub mod error;
pub mod layout;
pub mod read;
pub mod schema;
pub mod sink;
pub mod tables;

pub use error::ExportError;

use schedscope_analysis::metrics::{self, Sections};
use schedscope_analysis::{gang, idle, lhp, tlb, Context, Options, Timeline};
use schedscope_trace::Trace;
use sink::{TableSink, Target};
use std::path::PathBuf;
use tables::{Sinks, Slot, Utids};

/// What to write.
#[derive(Clone, Debug, Default)]
pub struct ExportOptions {
    /// Parquet root directory.
    pub parquet: Option<PathBuf>,
    /// CSV root directory (same layout, `.csv` files).
    pub csv: Option<PathBuf>,
    /// `ROOT/<table>.parquet` instead of hive partitions (one trace only).
    pub flat: bool,
    /// Only these tables (None = all).
    pub tables: Option<Vec<String>>,
    /// Analysis options (explicit gangs).
    pub analysis: Options,
    /// Told the name of each phase of [`export`] as it starts, for
    /// progress displays.
    pub on_phase: Option<PhaseHook>,
    /// Called between phases, when the tables written so far have been
    /// dropped: the binary's heap policy may hand free memory back to the
    /// system there (the library does not tune the allocator).
    pub give_back_memory: Option<MemoryHook>,
}

/// See [`ExportOptions::give_back_memory`].
#[derive(Clone)]
pub struct MemoryHook(pub std::sync::Arc<dyn Fn() + Send + Sync>);

impl std::fmt::Debug for MemoryHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MemoryHook")
    }
}

/// A callback given the name of each phase of [`export`] as it starts
/// (`threads`, `events`, `timeline build`, ..., `close`), on the thread
/// that called [`export`].
#[derive(Clone)]
pub struct PhaseHook(pub std::sync::Arc<dyn Fn(&str) + Send + Sync>);

impl std::fmt::Debug for PhaseHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PhaseHook")
    }
}

/// What one trace's export wrote.
#[derive(Clone, Debug)]
pub struct Exported {
    /// The run id (`run=` partition and `trace.trace_id`).
    pub run: String,
    /// The host partition value (decoded).
    pub host: String,
    /// The date partition value.
    pub date: String,
    /// Rows per table written.
    pub rows: Vec<(&'static str, u64)>,
}

/// Check a `--tables` list against the known tables.
pub fn check_tables(names: &[String]) -> Result<(), ExportError> {
    for n in names {
        if schema::table(n).is_none() {
            let known: Vec<&str> = schema::TABLES.iter().map(|t| t.name).collect();
            return Err(ExportError::UnknownTable(n.clone(), known.join(", ")));
        }
    }
    Ok(())
}

/// Export one trace (see the crate docs). `file` is the input file on disk
/// (its modification time dates the partition when the trace has no
/// wall-clock anchor, and its identity makes the run id).
///
/// The trace is borrowed mutably only to be emptied of what no table
/// reads any more: its raw-args store ([`Trace::raw_args`]) is released
/// once the `raw_arg` rows are written (once the timeline is built when
/// the trace has `sched_stat_runtime` events, whose fields place its
/// lost-event repairs), and a perf.data trace's events
/// that the analyses do not read once the per-event tables are written,
/// before the timeline is built, so that they are never resident
/// together. The trace is spent: load it again to export it again.
pub fn export(
    trace: &mut Trace,
    file: &std::path::Path,
    opts: &ExportOptions,
) -> Result<Exported, ExportError> {
    if opts.parquet.is_none() && opts.csv.is_none() {
        return Err(ExportError::Usage(
            "nothing to write: give --parquet DIR and/or --csv DIR".into(),
        ));
    }
    if let Some(t) = &opts.tables {
        check_tables(t)?;
    }
    let id = layout::Identity::of(trace, file);
    let chosen: Vec<bool> = schema::TABLES
        .iter()
        .map(|t| {
            opts.tables
                .as_ref()
                .is_none_or(|l| l.iter().any(|n| n == t.name))
        })
        .collect();
    // Refuse before writing anything.
    for (root, ext) in [(&opts.parquet, "parquet"), (&opts.csv, "csv")] {
        let Some(root) = root else { continue };
        for (t, on) in schema::TABLES.iter().zip(&chosen) {
            if !on {
                continue;
            }
            if opts.flat {
                let p = root.join(format!("{}.{ext}", t.name));
                if p.exists() {
                    return Err(ExportError::Exists(p));
                }
            } else {
                let p = id.partition(root, t.name);
                if p.exists() {
                    return Err(ExportError::AlreadyExported(p));
                }
            }
        }
        layout::write_docs(root)?;
    }
    let mut writers = sink::Writers::spawn()?;
    let rows = open_and_write(trace, &id, opts, &chosen, &mut writers);
    // The writer thread's error, when it failed, is the cause of any
    // "writer thread stopped" that the row builders saw.
    let written = timed(opts, "close", || writers.finish());
    let rows = match (rows, written) {
        (_, Err(e)) | (Err(e), Ok(())) => return Err(e),
        (Ok(rows), Ok(())) => rows,
    };
    Ok(Exported {
        run: id.run,
        host: id.host,
        date: id.date,
        rows,
    })
}

/// Open the chosen tables' sinks (their files are created now, so that a
/// table with no rows is still a readable file with its schema), write
/// every row, close them; the rows per table.
fn open_and_write(
    trace: &mut Trace,
    id: &layout::Identity,
    opts: &ExportOptions,
    chosen: &[bool],
    writers: &mut sink::Writers,
) -> Result<Vec<(&'static str, u64)>, ExportError> {
    let mut sinks = Vec::new();
    for (t, on) in schema::TABLES.iter().zip(chosen) {
        if !on {
            sinks.push(Slot::Off);
            continue;
        }
        let path = |root: &PathBuf, ext: &str| {
            if opts.flat {
                root.join(format!("{}.{ext}", t.name))
            } else {
                id.partition(root, t.name).join(format!("part-00000.{ext}"))
            }
        };
        let target = Target {
            parquet: opts.parquet.as_ref().map(|r| path(r, "parquet")),
            csv: opts.csv.as_ref().map(|r| path(r, "csv")),
            // In the hive layout the host= partition supplies trace.host.
            skip: (!opts.flat && t.name == "trace").then_some("host"),
        };
        sinks.push(Slot::Open(TableSink::open(t, target, &id.run, writers)?));
    }
    let mut s = Sinks(sinks);
    write_all(trace, id, opts, &mut s)?;
    s.close_all()
}

/// Between phases: [`ExportOptions::give_back_memory`], if the caller
/// set one (what the closed tables' builders and writer freed may sit in
/// another thread's arena, where the next phase cannot reuse it).
fn give_back_free_memory(opts: &ExportOptions) {
    if let Some(h) = &opts.give_back_memory {
        (h.0)();
    }
}

/// Leave in `trace.events` only the events that `report --all` keeps when
/// it loads a perf.data file (its sections' events, the ones it tallies,
/// process fork/exit/exec), so that the timeline and the analyses see what
/// report's do, and give the rest of the vector back (events no section
/// reads; `sched_stat_runtime` and `power:cpu_idle` are kept, since the
/// timeline places lost switch-ins from them). The trace's event count and time
/// span still cover every event (as after report's filtered load). Text
/// traces, which report decodes whole, are left as they are.
fn keep_analysed_events(trace: &mut Trace) {
    use schedscope_analysis::Sections;
    if trace.format != schedscope_trace::TraceFormat::PerfData {
        return;
    }
    let all = Sections::all();
    // Tallied events are kept as events here: the analyses read them from
    // the events when the load did not tally them.
    let mut keep: Vec<String> = all
        .needed_events()
        .unwrap_or_default()
        .iter()
        .map(|n| n.to_string())
        .collect();
    keep.extend(all.tallied_events().iter().map(|n| n.to_string()));
    trace.retain_kept(Some(&keep));
}

/// [`Options::timed`] (the caller's timing hook), the phase named `export
/// NAME`, first told to [`ExportOptions::on_phase`].
fn timed<T>(opts: &ExportOptions, name: &str, f: impl FnOnce() -> T) -> T {
    if let Some(h) = &opts.on_phase {
        (h.0)(name);
    }
    opts.analysis.timed(&format!("export {name}"), f)
}

fn write_all(
    trace: &mut Trace,
    id: &layout::Identity,
    opts: &ExportOptions,
    s: &mut Sinks,
) -> Result<(), ExportError> {
    // (what the load freed, too: the decoder's file-order events)
    give_back_free_memory(opts);
    let u = Utids::new(trace);
    trace_row(trace, id, s)?;
    timed(opts, "threads", || threads(trace, s))?;
    s.close(&["trace", "process", "thread"])?;
    let switch_ins = timed(opts, "events", || tables::events(trace, &u, s))?;
    s.close(tables::EVENT_TABLES)?;
    // After `raw_arg`, only the timeline reads untyped events' fields:
    // sched_stat_runtime's pid and runtime place lost switch-ins (the
    // analyses run here read nothing else; only report's cpu-clock
    // profile does). Without such events their store goes back before the
    // timeline is built, else right after.
    let stat_fields = trace.name_id("sched:sched_stat_runtime").is_some();
    if !stat_fields {
        drop(std::mem::take(&mut trace.raw_args));
    }
    timed(opts, "stacks", || tables::stacks(trace, s))?;
    // Every per-event table is written: from here on the events are read
    // only by the analyses, which see what `report --all` loads.
    timed(opts, "keep analysed events", || keep_analysed_events(trace));
    give_back_free_memory(opts);
    let want_metrics = s.wants("summary_metric");
    let lat = timed(opts, "sched_latency", || {
        tables::latency(trace, &u, s, want_metrics)
    })?;
    s.close(&["stack", "sched_latency"])?;
    give_back_free_memory(opts);
    let need_timeline = [
        "idle_gap",
        "thread_state",
        "sched_slice",
        "gang_summary",
        "gang_episode",
        "ple_exit",
        "summary_metric",
    ]
    .iter()
    .any(|n| s.wants(n));
    let timeline = timed(opts, "timeline build", || {
        if need_timeline {
            Timeline::build(trace)
        } else {
            Timeline::default()
        }
    });
    if stat_fields {
        drop(std::mem::take(&mut trace.raw_args));
        give_back_free_memory(opts);
    }
    let trace: &Trace = trace;
    timed(opts, "thread_state+sched_slice", || {
        tables::timeline(trace, &timeline, &u, &switch_ins, s)
    })?;
    drop(switch_ins);
    s.close(&["thread_state", "sched_slice"])?;
    give_back_free_memory(opts);
    let ctx = Context {
        trace,
        timeline: &timeline,
        opts: &opts.analysis,
    };
    let want = |names: &[&str]| want_metrics || names.iter().any(|n| s.wants(n));
    let (w_gang, w_lhp, w_idle, w_tlb) = (
        want(&["gang_summary", "gang_episode"]),
        want(&[]),
        want(&["idle_gap"]),
        want(&[]),
    );
    let keep_gaps = s.wants("idle_gap");
    let (gang_r, ((lhp_r, idle_r), tlb_r)) = timed(opts, "analyses", || {
        rayon::join(
            || w_gang.then(|| gang::analyze(&ctx).ok()).flatten(),
            || {
                rayon::join(
                    || {
                        rayon::join(
                            || w_lhp.then(|| lhp::analyze(&ctx).ok()).flatten(),
                            || {
                                w_idle
                                    .then(|| idle::analyze_with_gaps(&ctx, keep_gaps).ok())
                                    .flatten()
                            },
                        )
                    },
                    || w_tlb.then(|| tlb::analyze(&ctx).ok()).flatten(),
                )
            },
        )
    });
    if let Some(g) = &gang_r {
        tables::gangs(trace, &ctx, g, s)?;
    }
    s.close(&["gang_summary", "gang_episode"])?;
    tables::ple(&ctx, &u, s)?;
    s.close(&["ple_exit"])?;
    timed(opts, "ipi_request", || tables::ipi_requests(&ctx, &u, s))?;
    s.close(&["ipi_request"])?;
    if let Some((_, gaps)) = &idle_r {
        tables::idle_gaps(gaps, s)?;
    }
    s.close(&["idle_gap"])?;
    if let Some(t) = s.get("summary_metric") {
        let secs = Sections {
            latency: lat.as_ref(),
            gang: gang_r.as_ref(),
            lhp: lhp_r.as_ref(),
            idle: idle_r.as_ref().map(|(r, _)| r),
            tlb: tlb_r.as_ref(),
        };
        for m in metrics::of_sections(trace, &secs, schedscope_analysis::keys::By::Comm) {
            t.str("section", Some(&m.section))
                .str("metric", Some(&m.metric))
                .str("entity_kind", Some(&m.entity_kind))
                .str("entity_key", Some(&m.entity_key))
                .str("stat", Some(&m.stat))
                .f64("value", m.value)
                .str("unit", Some(&m.unit))
                .str("better", Some(m.better.as_str()))
                .u64("n", m.n);
            t.end()?;
        }
    }
    Ok(())
}

fn trace_row(trace: &Trace, id: &layout::Identity, s: &mut Sinks) -> Result<(), ExportError> {
    let Some(t) = s.get("trace") else {
        return Ok(());
    };
    t.str("trace_id", Some(&id.run))
        .str("host", Some(&id.host))
        .str("path", Some(&trace.path))
        .str("source_format", Some(trace.format.as_str()))
        .str("kernel_release", trace.meta.os_release.as_deref())
        .str("arch", trace.meta.arch.as_deref())
        .str("cmdline", trace.meta.cmdline.as_deref())
        .i32("num_cpus", trace.nr_cpus as i32)
        .u64("ts_start", trace.start().0)
        .u64("ts_end", trace.end().0)
        .i64("wall_clock_ns", layout::wall_clock_ns(trace))
        .u64("events", trace.event_count())
        .u64("lost", trace.lost)
        .str("schedscope_version", Some(env!("CARGO_PKG_VERSION")))
        .str("schema_version", Some(schema::SCHEMA_VERSION));
    t.end()
}

/// `process` and `thread`.
fn threads(trace: &Trace, s: &mut Sinks) -> Result<(), ExportError> {
    use schedscope_analysis::keys::{comm_key, ordinals, process_comm, thread_keys};
    use std::collections::BTreeMap;
    // Processes: one per tgid, upid in order of first appearance.
    let mut procs: BTreeMap<i32, (i32, Vec<&schedscope_trace::Task>)> = BTreeMap::new();
    for t in trace.tasks.iter() {
        if let Some(g) = t.tgid {
            let n = procs.len() as i32;
            procs.entry(g.0).or_insert((n, Vec::new())).1.push(t);
        }
    }
    let mut by_upid: Vec<(i32, i32, &Vec<&schedscope_trace::Task>)> = procs
        .iter()
        .map(|(pid, (upid, v))| (*upid, *pid, v))
        .collect();
    by_upid.sort_by_key(|p| p.0);
    let pkeys: Vec<String> = by_upid
        .iter()
        .map(|(_, pid, v)| {
            let first = v.first().map_or("", |t| t.comm.as_str());
            comm_key(process_comm(
                &trace.tasks,
                Some(schedscope_trace::Tid(*pid)),
                first,
            ))
        })
        .collect();
    let starts: Vec<Option<u64>> = by_upid
        .iter()
        .map(|(_, _, v)| v.iter().filter_map(|t| t.fork_ts.map(|f| f.0)).min())
        .collect();
    let pk = ordinals(pkeys, |i| starts[i].unwrap_or(0));
    if let Some(t) = s.get("process") {
        for (i, (upid, pid, v)) in by_upid.iter().enumerate() {
            let leader = v.iter().find(|t| t.tid.0 == *pid);
            let comm = leader.or(v.first()).map_or("", |t| t.comm.as_str());
            t.i32("upid", *upid)
                .i32("pid", *pid)
                .str("comm", Some(comm))
                .u64("start_ts", starts[i])
                .u64("end_ts", leader.and_then(|l| l.exit_ts).map(|e| e.0))
                .i32("threads", v.len() as i32)
                .bool("is_idle", *pid == 0)
                .str("match_key", Some(&pk[i].0))
                .i32("match_ordinal", pk[i].1 as i32);
            t.end()?;
        }
    }
    if let Some(t) = s.get("thread") {
        let keys = thread_keys(&trace.tasks);
        for (task, (key, ord)) in trace.tasks.iter().zip(&keys) {
            let upid = task.tgid.and_then(|g| procs.get(&g.0)).map(|p| p.0);
            t.i32("utid", task.utid.0 as i32)
                .i32("tid", task.tid.0)
                .i32("upid", upid)
                .i32("pid", task.tgid.map(|g| g.0))
                .str("comm", Some(&task.comm))
                .u64("start_ts", task.fork_ts.map(|f| f.0))
                .u64("end_ts", task.exit_ts.map(|f| f.0))
                .bool("is_idle", task.tid.is_idle())
                .str("cgroup", task.cgroup.as_deref())
                .str("match_key", Some(key))
                .i32("match_ordinal", *ord as i32);
            t.end()?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedscope_trace::{Cpu, Event, EventData, StackId, Tid, TraceFormat, Ts};

    /// A trace whose first and last events are `raw_syscalls:sys_enter`
    /// (no analysis reads it), with a `sched_switch`-named and a fork
    /// event between.
    fn trace(format: TraceFormat) -> Trace {
        let mut t = Trace::new("t", format);
        for (ts, name) in [
            (10, "raw_syscalls:sys_enter"),
            (20, "sched:sched_switch"),
            (30, "sched:sched_process_fork"),
            (40, "raw_syscalls:sys_enter"),
            (50, "cpu-clock:u"),
            (60, "raw_syscalls:sys_enter"),
        ] {
            let name = t.intern_name(name);
            t.events.push(Event {
                ts: Ts(ts),
                cpu: Cpu(0),
                tid: Tid(1),
                name,
                stack: StackId::NONE,
                data: EventData::Other(None),
            });
        }
        t
    }

    #[test]
    fn keeps_what_report_loads_and_the_whole_span() {
        let mut t = trace(TraceFormat::PerfData);
        keep_analysed_events(&mut t);
        let kept: Vec<&str> = t.events.iter().map(|e| t.event_name(e.name)).collect();
        assert_eq!(
            kept,
            vec![
                "sched:sched_switch",
                "sched:sched_process_fork",
                "cpu-clock:u"
            ]
        );
        // count and span still those of all six events
        assert_eq!(t.event_count(), 6);
        assert_eq!((t.start(), t.end()), (Ts(10), Ts(60)));
        // a text trace is analysed whole, as report does
        let mut text = trace(TraceFormat::FtraceText);
        keep_analysed_events(&mut text);
        assert_eq!(text.events.len(), 6);
        assert!(text.dropped.is_none());
    }
}
