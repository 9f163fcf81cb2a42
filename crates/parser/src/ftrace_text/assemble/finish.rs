//! The end of assembly: what needs the whole file (numeric prev_states,
//! the trace.dat beside a trace-cmd text) and the counts of the fold
//! turned into warnings, in a fixed order.

use super::super::{shifted, states};
use super::Builder;
use schedscope_trace::{Severity, Trace, TraceFormat};

impl Builder {
    /// The trace, with its task table, decoded states, warnings, kernel
    /// symbols and CPU count.
    pub(in super::super) fn finish(mut self) -> Trace {
        self.trace.tasks = std::mem::take(&mut self.tasks).finish();
        states::resolve_numeric(&mut self.trace, &self.numeric_states);
        self.warn_states();
        self.warn_columns();
        let t = &mut self.trace;
        for (i, n) in self.counts.iter().enumerate() {
            if let Some(name) = t.event_names.get(i) {
                *t.events_by_name.entry(name.clone()).or_insert(0) += n;
            }
        }
        self.warn_lines();
        let t = &mut self.trace;
        if t.lost > 0 {
            let lost = t.lost;
            t.warn(
                Severity::DataLoss,
                format!(
                    "{lost} events were lost by the kernel ring buffer before the text was written"
                ),
                lost,
            );
        }
        if !self.ksyms.is_empty() {
            let mut syms: Vec<(u64, String)> = self.ksyms.into_iter().collect();
            syms.sort_unstable();
            t.kernel_symbols.syms = syms;
        }
        if self.header_cpus > 0 {
            t.meta.nr_cpus_online = Some(self.header_cpus);
            t.nr_cpus = t.nr_cpus.max(self.header_cpus);
        }
        t.finish();
        shifted::resolve(t);
        self.trace
    }

    /// Switch-outs whose state the text cannot tell.
    fn warn_states(&mut self) {
        let t = &mut self.trace;
        if self.unknown_states.0 > 0 {
            t.warn(
                Severity::DataLoss,
                format!(
                    "sched:sched_switch: {} switch-outs with a prev_state letter no kernel version defines, kept as an unknown state (neither runnable nor sleeping; first at line {})",
                    self.unknown_states.0, self.unknown_states.1
                ),
                self.unknown_states.0,
            );
        }
        let (short, short_r, plus) = self.short_switches;
        if t.format == TraceFormat::TraceCmdText && short > 0 && !plus {
            let dat = match dat_beside(&t.path) {
                Some(p) => format!("{p}, beside this text,"),
                None => "the trace.dat this text was printed from".to_string(),
            };
            t.warn(
                Severity::Info,
                format!(
                    "sched:sched_switch: trace-cmd report's sched_switch plugin prints a preempted switch-out (R+) as R, so this text cannot tell them apart: latency counts all {short_r} R switch-outs as waits that start at a runnable switch-out, though the preempted ones start none; give schedscope {dat} for exact states"
                ),
                short_r,
            );
        }
    }

    /// Lines without a CPU column, untyped events without their fields.
    fn warn_columns(&mut self) {
        let t = &mut self.trace;
        if self.no_cpu.0 > 0 {
            t.cpu_unknown = true;
            t.warn(
                Severity::DataLoss,
                format!(
                    "{} event lines have no CPU column (perf script printed without `cpu`; first at line {}): per-CPU analyses cannot run, per-task ones (latency) can",
                    self.no_cpu.0, self.no_cpu.1
                ),
                self.no_cpu.0,
            );
        }
        if self.raw_full > 0 {
            t.warn(
                Severity::DataLoss,
                format!(
                    "{} untyped events kept without their fields: the field store is full (4 GiB)",
                    self.raw_full
                ),
                self.raw_full,
            );
        }
    }

    /// Lines skipped or kept with less than they print.
    fn warn_lines(&mut self) {
        let t = &mut self.trace;
        if self.unparsed.0 > 0 {
            t.warn(
                Severity::DataLoss,
                format!(
                    "{} lines are neither events nor known headers and were skipped (first at line {}: `{}`)",
                    self.unparsed.0, self.unparsed.1, self.unparsed.2
                ),
                self.unparsed.0,
            );
        }
        if self.not_utf8.0 > 0 {
            t.warn(
                Severity::DataLoss,
                format!(
                    "{} lines are not valid UTF-8 and were skipped (first at line {})",
                    self.not_utf8.0, self.not_utf8.1
                ),
                self.not_utf8.0,
            );
        }
        if self.too_many_names.0 > 0 {
            t.warn(
                Severity::DataLoss,
                format!(
                    "{} event lines skipped: more than 65535 distinct event names (first at line {})",
                    self.too_many_names.0, self.too_many_names.1
                ),
                self.too_many_names.0,
            );
        }
        let mut bad: Vec<_> = std::mem::take(&mut self.bad_body).into_iter().collect();
        bad.sort_by_key(|(_, (_, line))| *line);
        for (name, (count, line)) in bad {
            let n = t.event_name(name).to_string();
            t.warn(
                Severity::DataLoss,
                format!("{n}: {count} events with fields in an unknown form, kept untyped (first at line {line})"),
                count,
            );
        }
        if self.mask_unprinted.0 > 0 {
            t.warn(
                Severity::DataLoss,
                format!(
                    "ipi:ipi_send_cpumask: {} cpumasks were not printed by the producing tool (perf 6.1 cannot decode __get_cpumask), kept as empty masks (first at line {})",
                    self.mask_unprinted.0, self.mask_unprinted.1
                ),
                self.mask_unprinted.0,
            );
        }
    }
}

/// A trace-cmd trace.dat next to the text file `path` (`trace.dat`, or the
/// text's name with `.dat` for its extension), which holds the states the
/// plugin text loses; checked by its magic bytes.
fn dat_beside(path: &str) -> Option<String> {
    let p = std::path::Path::new(path);
    if path == "-" || !p.is_file() {
        return None;
    }
    let mut candidates = vec![p.with_file_name("trace.dat"), p.with_extension("dat")];
    if let Some(stem) = p.file_stem() {
        candidates.push(p.with_file_name(format!("{}.trace.dat", stem.to_string_lossy())));
    }
    candidates.into_iter().find_map(|c| {
        let mut magic = [0u8; 10];
        let mut f = std::fs::File::open(&c).ok()?;
        std::io::Read::read_exact(&mut f, &mut magic).ok()?;
        (magic == *crate::trace_dat::MAGIC).then(|| c.display().to_string())
    })
}
