//! The `latency` section as text: the worst delay first, then a
//! `perf sched latency`-style table and totals.

use crate::table::{Align, Table};
use crate::{fmt, top_or, RenderText, TextOptions};
use schedscope_analysis::latency::LatencyReport;
use std::io::{self, Write};

impl RenderText for LatencyReport {
    /// Render the section as text: a headline (the worst delay first), then
    /// the `perf sched latency`-style table sorted by maximum delay
    /// (`opts.top` rows; 0 = all), then totals.
    fn render_text(&self, opts: &TextOptions, out: &mut dyn Write) -> io::Result<()> {
        let with_switches = self.tasks.iter().filter(|t| t.switches > 0).count();
        match self.tasks.first().filter(|t| t.switches > 0) {
            Some(w) => writeln!(
                out,
                "Scheduling latency: max delay {} ms ({}:{} at {} s); {} tasks, {} switches, {} wakeups",
                fmt::ms(w.delay_max_ns),
                w.comm,
                w.tid,
                fmt::secs(w.delay_max_at_ns),
                with_switches,
                self.total_switches,
                self.total_wakeups,
            )?,
            None => writeln!(out, "Scheduling latency: no task was switched in after a wait")?,
        }
        let mut t = Table::new(&[
            ("Task", Align::Left),
            ("Runtime ms", Align::Right),
            ("Switches", Align::Right),
            ("Avg delay ms", Align::Right),
            ("Max delay ms", Align::Right),
            ("Max delay at s", Align::Right),
        ]);
        let top = top_or(opts, usize::MAX);
        for task in self.tasks.iter().take(top) {
            t.row(vec![
                format!("{}:{}", task.comm, task.tid),
                fmt::ms(task.runtime_ns),
                task.switches.to_string(),
                fmt::ms(task.delay_avg_ns),
                fmt::ms(task.delay_max_ns),
                if task.switches > 0 {
                    fmt::secs(task.delay_max_at_ns)
                } else {
                    "-".to_string()
                },
            ]);
        }
        t.footer(vec![
            format!("TOTAL ({} tasks)", self.tasks.len()),
            fmt::ms(self.total_runtime_ns),
            self.total_switches.to_string(),
        ]);
        t.write(out)?;
        if self.tasks.len() > t.len() {
            writeln!(
                out,
                "  ({} more tasks not shown; use --top N, 0 for all)",
                self.tasks.len() - t.len()
            )?;
        }
        if self.context_switch_bugs > 0 {
            writeln!(
                out,
                "  note: {} context switch bugs (perf sched latency's count: a CPU switched out a task that no recorded sched_switch put there; the trace is missing sched_switch events, through loss or a kernel that does not trace every switch)",
                self.context_switch_bugs
            )?;
        }
        writeln!(
            out,
            "  Delays run from {} (or a yield) to the switch-in, as perf sched latency; run time as perf sched timehist.",
            self.wakeup_event
        )
    }
}
