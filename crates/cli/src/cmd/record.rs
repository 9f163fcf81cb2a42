//! `schedscope record`.

use crate::args::RecordArgs;
use crate::ExitError;
use schedscope_collector::{RecordConfig, RecordError, StopReason};
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

/// Turn the flags into a collector configuration.
pub fn config(args: &RecordArgs) -> anyhow::Result<RecordConfig> {
    let duration = match args.duration {
        Some(d) if !(d.is_finite() && d > 0.0) => {
            return Err(ExitError {
                code: 2,
                message: format!("--duration {d}: expected a positive number of seconds"),
            }
            .into())
        }
        Some(d) => Some(Duration::from_secs_f64(d)),
        None => None,
    };
    let buffer_bytes = match &args.buffer_size {
        Some(s) => Some(schedscope_collector::parse_buffer_size(s).map_err(env_error)?),
        None => None,
    };
    Ok(RecordConfig {
        output: args.output.clone(),
        events: args.events.clone(),
        duration,
        buffer_bytes,
        call_graph: args.call_graph,
        profile_hz: args.profile,
        cgroups: args.cgroups.clone(),
        command: args.command.clone(),
        cmdline: std::env::args().collect(),
    })
}

fn env_error(e: RecordError) -> anyhow::Error {
    if e.is_environment() {
        ExitError {
            code: 2,
            message: e.to_string(),
        }
        .into()
    } else {
        e.into()
    }
}

/// Run `schedscope record`.
pub fn run(args: RecordArgs) -> anyhow::Result<ExitCode> {
    let cfg = config(&args)?;
    let summary = record_with_output(&cfg)?;
    if let StopReason::WriteError(e) = &summary.stop {
        anyhow::bail!(
            "writing {} failed: {e}; the file is kept and valid up to the last complete record",
            summary.output.display()
        );
    }
    Ok(match (summary.command_status, &summary.stop) {
        (Some(st), _) => exit_code_of(st),
        // Stopped by a signal before the command could start: report the
        // signal as a shell would.
        (None, StopReason::Signal(sig)) if !cfg.command.is_empty() => {
            ExitCode::from((128 + sig) as u8)
        }
        (None, _) => ExitCode::SUCCESS,
    })
}

/// Record with notices, a live progress line on a terminal and the final
/// summary on stderr.
pub fn record_with_output(
    cfg: &RecordConfig,
) -> anyhow::Result<schedscope_collector::RecordSummary> {
    let tty = std::io::stderr().is_terminal();
    let mut notice = |m: &str| {
        if tty {
            eprint!("\r\x1b[K");
        }
        eprintln!("schedscope: {m}");
    };
    let mut show = |p: &schedscope_collector::Progress| {
        let mut e = std::io::stderr().lock();
        let _ = write!(
            e,
            "\r\x1b[K[ recording: {:.0} events/s, {} events, {:.1} MB written, {:.0} s ]",
            p.events_per_sec,
            p.events,
            p.bytes as f64 / 1e6,
            p.elapsed.as_secs_f64()
        );
        let _ = e.flush();
    };
    let progress: Option<&mut dyn FnMut(&schedscope_collector::Progress)> =
        if tty { Some(&mut show) } else { None };
    let summary = schedscope_collector::record(cfg, &mut notice, progress).map_err(env_error)?;
    if tty {
        eprint!("\r\x1b[K");
    }
    eprintln!(
        "schedscope: {} -> {}",
        summary.line(),
        summary.output.display()
    );
    eprintln!(
        "schedscope: start-up {:.2} s, finish {:.2} s, fullest ring {:.0}% (CPU {})",
        summary.startup.as_secs_f64(),
        summary.finish.as_secs_f64(),
        summary.fullest_ring.1 * 100.0,
        summary.fullest_ring.0
    );
    if summary.lost > 0 {
        eprintln!(
            "schedscope: warning: {} events lost ({:.2}%): {}; use a larger --buffer-size",
            summary.lost,
            summary.lost_percent(),
            loss_places(&summary.lost_by_cpu)
        );
    }
    Ok(summary)
}

/// "CPU 1: 300 between 2.10 s and 2.35 s, CPU 0: 12": where the losses
/// were, with the times of the first and last loss record after the start.
fn loss_places(by_cpu: &[schedscope_collector::CpuLoss]) -> String {
    let parts: Vec<String> = by_cpu
        .iter()
        .map(|l| match l.when {
            Some((a, b)) => format!(
                "CPU {}: {} between {:.2} s and {:.2} s",
                l.cpu,
                l.lost,
                a.as_secs_f64(),
                b.as_secs_f64()
            ),
            None => format!("CPU {}: {}", l.cpu, l.lost),
        })
        .collect();
    if parts.is_empty() {
        "no CPU named".into()
    } else {
        parts.join(", ")
    }
}

/// The exit code to pass on from a command's status (128+signal when killed).
fn exit_code_of(st: std::process::ExitStatus) -> ExitCode {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => ExitCode::from(c as u8),
        (None, Some(s)) => ExitCode::from((128 + s) as u8),
        _ => ExitCode::from(1),
    }
}
