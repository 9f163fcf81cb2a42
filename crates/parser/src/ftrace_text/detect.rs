//! Dialect detection: which of the three text shapes (tracefs, trace-cmd
//! report, perf script) a file is, from its first lines, and the error for
//! text that is none of them.

use super::lines::is_cpus_header;
use super::prefix::{self, Style};
use crate::ParseError;
use schedscope_trace::TraceFormat;

/// How much of the file [`detect`] looks at.
const DETECT_BYTES: usize = 256 * 1024;

/// How many lines [`detect`] looks at.
const DETECT_LINES: usize = 1000;

/// Recognise a text trace from its first lines (up to 1000 lines / 256 KiB).
///
/// Returns [`TraceFormat::FtraceText`] for tracefs `trace`/`trace_pipe`
/// output (including a header-only `# tracer:` file),
/// [`TraceFormat::TraceCmdText`] for `trace-cmd report` output (a `cpus=N`
/// header or trace-cmd's short sched_switch/sched_wakeup forms), and
/// [`TraceFormat::PerfScriptText`] for `perf script` output; `None` when no
/// line looks like an event line of any of them.
pub fn detect(data: &[u8]) -> Option<TraceFormat> {
    sniff(data).format
}

/// What [`sniff`] learns from the first lines.
struct Sniff {
    format: Option<TraceFormat>,
    /// perf script lines were seen, but only of hardware/software samples
    /// (`cycles:`, `cpu-clock:`), no tracepoint.
    perf_samples: Option<String>,
}

/// Whether a perf script event name is a tracepoint (`sched:sched_switch`)
/// rather than a hardware/software event with modifiers (`cycles:u`,
/// `cpu-clock:ppp`).
fn is_tracepoint_name(event: &str) -> bool {
    match event.split_once(':') {
        Some((sys, name)) => {
            !sys.is_empty()
                && !name.is_empty()
                && !name.bytes().all(|c| b"ukhHGIpPSDW".contains(&c))
        }
        None => false,
    }
}

fn sniff(data: &[u8]) -> Sniff {
    let head = &data[..data.len().min(DETECT_BYTES)];
    let text = String::from_utf8_lossy(head);
    let (mut ftrace_header, mut tracecmd_hint, mut dash_lines) = (false, false, 0u32);
    let mut perf_samples: Option<String> = None;
    for line in text.lines().take(DETECT_LINES) {
        let line = line.trim_end_matches('\r');
        if line.starts_with("# tracer:") {
            ftrace_header = true;
            continue;
        }
        if is_cpus_header(line).is_some() || line.starts_with("version = ") {
            tracecmd_hint = true;
            continue;
        }
        if let Some(p) = prefix::parse(line, Style::Dash) {
            dash_lines += 1;
            if is_short_form(p.event, p.body) {
                tracecmd_hint = true;
            }
            continue;
        }
        if dash_lines == 0 {
            if let Some(p) = prefix::parse(line, Style::Perf) {
                if is_tracepoint_name(p.event) {
                    return Sniff {
                        format: Some(TraceFormat::PerfScriptText),
                        perf_samples: None,
                    };
                }
                if perf_samples.is_none() && p.cpu.is_some() {
                    perf_samples = Some(p.event.to_string());
                }
            }
        }
    }
    let format = if dash_lines > 0 || ftrace_header || tracecmd_hint {
        if tracecmd_hint && !ftrace_header {
            Some(TraceFormat::TraceCmdText)
        } else {
            Some(TraceFormat::FtraceText)
        }
    } else {
        None
    };
    if format.is_none() && perf_samples.is_some() && has_later_tracepoint(data) {
        // Samples first (a profile), tracepoints after the lines looked at.
        return Sniff {
            format: Some(TraceFormat::PerfScriptText),
            perf_samples: None,
        };
    }
    Sniff {
        format,
        perf_samples: if format.is_none() { perf_samples } else { None },
    }
}

/// Whether a perf script line with a tracepoint event follows anywhere in
/// `data` (only asked when the first lines hold samples only).
fn has_later_tracepoint(data: &[u8]) -> bool {
    data.split(|&c| c == b'\n')
        .filter_map(|l| std::str::from_utf8(l).ok())
        .filter_map(|l| prefix::parse(l.trim_end_matches('\r'), Style::Perf))
        .any(|p| is_tracepoint_name(p.event))
}

/// The error for text that [`detect`] does not take for a trace: a perf
/// script dump of hardware/software samples only is named as such
/// ([`ParseError::Unsupported`]); anything else is of an unknown format.
pub fn not_trace_error(name: &str, data: &[u8]) -> ParseError {
    let detail = describe_not_trace(data);
    if sniff(data).perf_samples.is_some() {
        ParseError::Unsupported {
            path: name.to_string(),
            detail,
        }
    } else {
        ParseError::UnknownFormat {
            path: name.to_string(),
            detail,
        }
    }
}

/// Why text is not a trace, for the error message.
pub fn describe_not_trace(data: &[u8]) -> String {
    match sniff(data).perf_samples {
        Some(ev) => format!(
            "a perf script dump of hardware/software samples only (`{ev}` events), without scheduler events: record the scheduler with `schedscope record -- COMMAND` or `perf record -a -e sched:sched_switch -e sched:sched_waking -e sched:sched_wakeup -- COMMAND`, then give that perf.data (or its `perf script` output) to schedscope"
        ),
        None => "text that is not a trace: no ftrace, trace-cmd or perf script event line in the first 1000 lines".into(),
    }
}

/// trace-cmd's plugin forms of sched_switch / sched_wakeup bodies.
fn is_short_form(event: &str, body: &str) -> bool {
    match event {
        "sched_switch" => body.contains(" ==> ") && !body.starts_with("prev_comm="),
        "sched_wakeup" | "sched_wakeup_new" => body.contains(" CPU:") && !body.starts_with("comm="),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detect_each_shape() {
        let ftrace = b"# tracer: nop\n#\n            bash-8402    [001] d..2.   364.815366: sched_switch: prev_comm=bash prev_pid=8402 prev_prio=120 prev_state=S ==> next_comm=x next_pid=1 next_prio=120\n";
        assert_eq!(detect(ftrace), Some(TraceFormat::FtraceText));
        let pipe = b"            bash-8402    [001] d..2.   364.815366: sched_waking: comm=a pid=1 prio=120 target_cpu=000\n";
        assert_eq!(detect(pipe), Some(TraceFormat::FtraceText));
        let tc = b"version = 6\ncpus=2\n       trace-cmd-2931  [001]  3171.776631: sched_switch:         trace-cmd:2931 [120] S ==> trace-cmd:2933 [120]\n";
        assert_eq!(detect(tc), Some(TraceFormat::TraceCmdText));
        let tc_no_header = b"       trace-cmd-2931  [001]  3171.776631: sched_switch:         trace-cmd:2931 [120] S ==> trace-cmd:2933 [120]\n";
        assert_eq!(detect(tc_no_header), Some(TraceFormat::TraceCmdText));
        let perf = b"            perf  8672 [000]   369.561690:   sched:sched_waking: comm=migration/0 pid=18 prio=0 target_cpu=000\n";
        assert_eq!(detect(perf), Some(TraceFormat::PerfScriptText));
        assert_eq!(detect(b"hello world\nthis is not a trace\n"), None);
        assert_eq!(detect(b"\x00\x01\xff\xfe garbage [1] 2.0: x:"), None);
    }
}
