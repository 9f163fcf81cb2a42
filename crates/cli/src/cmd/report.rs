//! `schedscope report`: load a trace, compute the requested sections, print
//! them as text tables or one JSON object.
//!
//! Sections come from the flags (`--latency --gang --lhp --idle --tlb`,
//! `--all`; `--gang-of` implies `--gang`); with none, latency is shown.
//! An invalid `--gang-of` is a usage error (exit 2) before anything is
//! loaded. The report is computed by `schedscope_analysis` and printed by
//! `schedscope_render` (text) or serde_json.
//! A section that cannot be computed prints its reason and the others still
//! print; the exit code is 1 only when every requested section failed.
//! Decoder warnings go to stderr in text mode and into `trace.warnings` in
//! JSON.

use crate::args::{OutputFormat, ReportArgs};
use crate::progress::{load_line, phase_line};
use crate::ExitError;
use schedscope_analysis::gang::GangSpec;
use schedscope_analysis::{Options, Report, Sections, Timer};
use schedscope_render::{RenderText, TextOptions};
use schedscope_trace::Trace;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The validated configuration of one `report` run.
struct Config {
    sections: Sections,
    opts: Options,
    text: TextOptions,
}

impl Config {
    /// The configuration of `a`; an invalid `--gang-of` is a usage error
    /// (exit 2), reported before the trace is loaded.
    fn from_args(a: &ReportArgs) -> Result<Config, ExitError> {
        for spec in &a.sections.gang_of {
            GangSpec::parse(spec).map_err(|e| ExitError {
                code: 2,
                message: e.to_string(),
            })?;
        }
        let sections = a.sections.chosen().unwrap_or(Sections {
            latency: true,
            ..Sections::default()
        });
        Ok(Config {
            sections,
            opts: Options {
                gang_specs: a.sections.gang_of.clone(),
                top: a.top,
                timer: timer(),
            },
            text: TextOptions { top: a.top },
        })
    }
}

/// With `SCHEDSCOPE_TIMING` set in the environment, a hook that prints each
/// analysis step's wall time and the process's resident memory on stderr
/// when it ends (`timing: NAME MS ms (rss R MiB, peak P MiB)`), for the
/// benchmarks; else `None`.
pub(crate) fn timer() -> Option<Timer> {
    std::env::var_os("SCHEDSCOPE_TIMING")?;
    Some(Timer(Arc::new(|name: &str, took: Duration| {
        // (and the memory so far: sections run in parallel, so the
        // resident size when each ends shows who adds how much)
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let mib = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|kb| kb.parse::<u64>().ok())
                .map_or(0, |kb| kb / 1024)
        };
        eprintln!(
            "timing: {name} {:.1} ms (rss {} MiB, peak {} MiB)",
            took.as_secs_f64() * 1e3,
            mib("VmRSS:"),
            mib("VmHWM:")
        );
    })))
}

pub(crate) use crate::progress::Progress;

/// Load `path`, with progress on a terminal. Parser errors already name
/// the file (`<file>: <what>`).
pub(crate) fn load(path: &Path, progress: &Progress) -> anyhow::Result<Trace> {
    load_with(path, progress, &schedscope_parser::LoadOptions::default())
}

/// [`load`], keeping only the events `opts` names.
pub(crate) fn load_with(
    path: &Path,
    progress: &Progress,
    opts: &schedscope_parser::LoadOptions,
) -> anyhow::Result<Trace> {
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let shown = path.display().to_string();
    let decoded = AtomicU64::new(0);
    let t0 = Instant::now();
    let trace = progress.while_running(
        |elapsed| load_line(&shown, decoded.load(Ordering::Relaxed), size, elapsed),
        || schedscope_parser::load_with_progress(path, opts, &decoded),
    );
    if std::env::var_os("SCHEDSCOPE_TIMING").is_some() {
        eprintln!("timing: load {:.1} ms", t0.elapsed().as_secs_f64() * 1e3);
    }
    // The parser's message already names the file and the cause; print it
    // once (not followed by its source chain).
    let trace = trace.map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(trace)
}

/// Print decoder warnings on stderr.
pub(crate) fn print_warnings(trace: &Trace) {
    for w in &trace.warnings {
        let times = if w.count > 1 && !w.message.contains(&w.count.to_string()) {
            format!(" ({}x)", w.count)
        } else {
            String::new()
        };
        eprintln!("schedscope: warning: {}{times}", w.message);
    }
}

/// Decode only the events `sections` read (counts still cover the whole
/// file); the timeline reuses the decoder's memory when one is built.
pub(crate) fn load_options(sections: &Sections) -> schedscope_parser::LoadOptions {
    schedscope_parser::LoadOptions {
        keep: sections
            .needed_events()
            .map(|names| names.iter().map(|n| n.to_string()).collect()),
        spare: sections.need_timeline(),
        // (report never reads untyped events' fields)
        raw_fields: false,
        tally: sections
            .tallied_events()
            .iter()
            .map(|n| n.to_string())
            .collect(),
    }
}

/// Run `schedscope report`.
pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let cfg = Config::from_args(&args)?;
    // One-shot and multi-threaded: big heap steps spare the TLB flushes of
    // page-sized ones (see the function's docs).
    crate::heap::for_one_shot_command();
    let progress = Progress::new();
    // Decode only the events the sections read (counts still cover the
    // whole file).
    let load_opts = load_options(&cfg.sections);
    if streams(&cfg.sections, &args.file) {
        if let Some((trace, report, timeline)) =
            streamed(&args.file, &progress, &load_opts, cfg.sections, &cfg.opts)?
        {
            return emit(&args, &cfg, trace, report, timeline);
        }
    }
    let trace = load_with(&args.file, &progress, &load_opts)?;
    let t1 = Instant::now();
    let shown = args.file.display().to_string();
    let (report, timeline) = progress.while_running(
        |elapsed| phase_line("analysing", &shown, "", elapsed),
        || Report::compute_with_timeline(&trace, cfg.sections, &cfg.opts),
    );
    if std::env::var_os("SCHEDSCOPE_TIMING").is_some() {
        eprintln!("timing: compute {:.1} ms", t1.elapsed().as_secs_f64() * 1e3);
    }
    emit(&args, &cfg, trace, report, timeline)
}

/// Files from this size on are streamed (two or three times) for sections
/// that read the timeline (see [`streams`]); `SCHEDSCOPE_STREAM_FROM`
/// (bytes) overrides it.
const STREAM_PASSES_FROM: u64 = schedscope_parser::STREAM_LOAD_FROM;

/// Whether `report` computes `sections` of `path` from streams of its
/// events instead of loading them ([`streamed`]): when no section reads
/// the timeline (latency alone: one pass, never slower than a load; at
/// any size, whatever `SCHEDSCOPE_STREAM_FROM` says), or when the file is
/// big enough ([`STREAM_PASSES_FROM`]) that holding its events costs more
/// than decoding it once per pass (the timeline's build needs two, idle
/// and lhp a third).
pub(crate) fn streams(sections: &Sections, path: &Path) -> bool {
    if !sections.streamable() {
        return false;
    }
    if !sections.need_timeline() {
        return true;
    }
    big(path)
}

/// Whether `path` is big enough to stream in several passes rather than
/// load ([`STREAM_PASSES_FROM`], or `SCHEDSCOPE_STREAM_FROM` bytes).
pub(crate) fn big(path: &Path) -> bool {
    let from = match std::env::var("SCHEDSCOPE_STREAM_FROM") {
        Ok(v) => v.trim().parse::<u64>().unwrap_or_else(|_| {
            eprintln!(
                "schedscope: warning: ignoring SCHEDSCOPE_STREAM_FROM={v:?}: not a number of bytes (streaming from {STREAM_PASSES_FROM})"
            );
            STREAM_PASSES_FROM
        }),
        Err(_) => STREAM_PASSES_FROM,
    };
    std::fs::metadata(path).is_ok_and(|m| m.len() >= from)
}

/// The sections ([`Sections::streamable`]), computed as the file streams
/// past (memory does not grow with the events; what is kept is the
/// timeline when a section reads it, and per-task and per-CPU state): the
/// trace without its events, the report and the timeline, or `None` when
/// the file cannot be streamed (not perf.data, standard input, compressed
/// records, no round markers; see `schedscope_parser::stream_with`),
/// which is then loaded whole.
///
/// The file is streamed once per pass (`schedscope_analysis::streamed`:
/// latency, the timeline's census and idle's prep; the timeline's build,
/// tlb's pass and the profile; idle and lhp). Output is byte-identical to
/// a load's; a file replaced between passes is an error.
pub(crate) fn streamed(
    path: &Path,
    progress: &Progress,
    opts: &schedscope_parser::LoadOptions,
    sections: Sections,
    analysis: &Options,
) -> anyhow::Result<Option<(Trace, Report, schedscope_analysis::Timeline)>> {
    let shown = path.display().to_string();
    let t0 = Instant::now();
    let result = Report::streamed(
        sections,
        analysis,
        |k, n, feed| stream_pass(path, progress, opts, (k, n), feed),
        || changed(&shown),
    );
    if std::env::var_os("SCHEDSCOPE_TIMING").is_some() {
        eprintln!(
            "timing: streamed report {:.1} ms",
            t0.elapsed().as_secs_f64() * 1e3
        );
    }
    result
}

/// The error of a file that changed between the passes of a stream.
pub(crate) fn changed(shown: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "{shown}: the file changed while it was being read (it is read once per pass); run again"
    )
}

/// Stream `path`'s events (those `opts` keeps) into `feed` for pass `k`
/// of `n`, with a progress line: the trace without its events, or `None`
/// when the file cannot be streamed (see `schedscope_parser::stream_with`).
pub(crate) fn stream_pass(
    path: &Path,
    progress: &Progress,
    opts: &schedscope_parser::LoadOptions,
    (k, n): (u32, u32),
    feed: &mut dyn schedscope_analysis::streamed::Feed,
) -> anyhow::Result<Option<Trace>> {
    use schedscope_analysis::streamed::Feed;
    use schedscope_parser::{EventSink, StreamError};
    /// A pass's consumers as the stream's sink. (Run on a thread of their
    /// own, fed copies of the batches, they were no faster on two cores:
    /// the decoding keeps both busy.)
    struct Sink<'f>(&'f mut dyn Feed);
    impl EventSink for Sink<'_> {
        fn start(&mut self, meta: &Trace) {
            self.0.start(meta);
        }
        fn events(&mut self, events: &[schedscope_trace::Event]) {
            self.0.events(events);
        }
    }
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let shown = path.display().to_string();
    let label = if n == 1 {
        shown
    } else {
        format!("{shown}, pass {k} of {n}")
    };
    let t = Instant::now();
    let decoded = AtomicU64::new(0);
    let r = progress.while_running(
        |elapsed| load_line(&label, decoded.load(Ordering::Relaxed), size, elapsed),
        || schedscope_parser::stream_with(path, opts, &decoded, &mut Sink(feed)),
    );
    if std::env::var_os("SCHEDSCOPE_TIMING").is_some() {
        eprintln!(
            "timing: stream pass {k} {:.1} ms",
            t.elapsed().as_secs_f64() * 1e3
        );
    }
    match r {
        Ok(t) => Ok(Some(t)),
        Err(StreamError::Unstreamable { .. }) => Ok(None),
        // (the message already names the file and the cause, as load's)
        Err(StreamError::Parse(e)) => Err(anyhow::anyhow!("{e}")),
    }
}

/// Print `report` of `trace` as asked, and say how it went; `keep` (and
/// the trace and report) are left to the exit.
fn emit<K>(
    args: &ReportArgs,
    cfg: &Config,
    trace: Trace,
    report: Report,
    keep: K,
) -> anyhow::Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, stdout.lock());
    match args.format {
        OutputFormat::Text => {
            print_warnings(&trace);
            report.render_text(&cfg.text, &mut out)?;
        }
        OutputFormat::Json => {
            serde_json::to_writer_pretty(&mut out, &report)?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    drop(out);
    let failed = report.all_failed();
    if failed && args.format == OutputFormat::Json {
        // Text mode already printed the reasons on stdout.
        for e in report.errors() {
            eprintln!("schedscope: {e}");
        }
    }
    // The process exits next: the OS takes the memory back at once.
    crate::heap::leave_to_exit((report, keep, trace));
    if failed {
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn cfg(argv: &[&str]) -> Config {
        let cli = crate::args::Cli::parse_from(argv);
        match cli.command {
            crate::args::Command::Report(a) => Config::from_args(&a).expect("valid"),
            _ => unreachable!(),
        }
    }

    #[test]
    fn default_section_is_latency() {
        let c = cfg(&["schedscope", "report", "f"]);
        assert_eq!(
            c.sections,
            Sections {
                latency: true,
                ..Sections::default()
            }
        );
        assert_eq!(c.opts.top, 20);
    }

    #[test]
    fn all_and_gang_of() {
        assert_eq!(
            cfg(&["schedscope", "report", "--all"]).sections,
            Sections::all()
        );
        let c = cfg(&["schedscope", "report", "--gang-of", "pid=3", "--top", "5"]);
        assert_eq!(
            c.sections,
            Sections {
                gang: true,
                ..Sections::default()
            }
        );
        assert_eq!(c.opts.gang_specs, vec!["pid=3".to_string()]);
        assert_eq!(c.opts.top, 5);
    }

    #[test]
    fn invalid_gang_of_is_a_usage_error() {
        for spec in ["pid=x", "tids=", "comm=(", "nope=1", "pid"] {
            let cli = crate::args::Cli::parse_from(["schedscope", "report", "--gang-of", spec]);
            let crate::args::Command::Report(a) = cli.command else {
                unreachable!()
            };
            let e = Config::from_args(&a).err().expect("rejected");
            assert_eq!(e.code, 2, "{spec}");
            assert!(
                e.message
                    .starts_with(&format!("invalid --gang-of {spec}: ")),
                "{}",
                e.message
            );
        }
    }
}
