//! The `latency` section as text: the worst delay first, then a
//! `perf sched latency`-style table and totals.

use crate::table::{Align, Table};
use crate::{fmt, top_or, RenderText, TextOptions};
use schedscope_analysis::latency::{LatencyReport, TaskLatency, WaitStart};
use std::io::{self, Write};

/// The columns of the per-task latency table (the TUI's latency tab shows
/// the same).
pub const TASK_COLUMNS: [(&str, Align); 6] = [
    ("Task", Align::Left),
    ("Runtime ms", Align::Right),
    ("Switches", Align::Right),
    ("Avg delay ms", Align::Right),
    ("Max delay ms", Align::Right),
    ("Max delay at s", Align::Right),
];

/// One task's row of that table, formatted.
pub fn task_cells(task: &TaskLatency) -> Vec<String> {
    vec![
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
    ]
}

impl RenderText for LatencyReport {
    /// Render the section as text: a headline (the worst delay first), then
    /// the `perf sched latency`-style table sorted by maximum delay
    /// (`opts.top` rows; 0 = all), then totals.
    fn render_text(&self, opts: &TextOptions, out: &mut dyn Write) -> io::Result<()> {
        let with_switches = self.tasks.iter().filter(|t| t.switches > 0).count();
        match self.tasks.first().filter(|t| t.switches > 0) {
            Some(w) => writeln!(
                out,
                "Scheduling latency: max delay {} ms ({}:{} at {} s, {}); {} tasks, {} switches, {} wakeups",
                fmt::ms(w.delay_max_ns),
                w.comm,
                w.tid,
                fmt::secs(w.delay_max_at_ns),
                since(w.delay_max_start, &self.wakeup_event),
                with_switches,
                self.total_switches,
                self.total_wakeups,
            )?,
            None => writeln!(out, "Scheduling latency: no task was switched in after a wait")?,
        }
        let mut t = Table::new(&TASK_COLUMNS);
        let top = top_or(opts, usize::MAX);
        for task in self.tasks.iter().take(top) {
            t.row(task_cells(task));
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
        if let (Some(lo), Some(hi)) = (self.max_delay_ns_min, self.max_delay_ns_max) {
            let max = self.max_delay_ns();
            if lo == hi && hi == max {
                writeln!(
                    out,
                    "  Largest wait: {} ms; the events lost cannot change it",
                    fmt::ms(max)
                )?;
            } else {
                writeln!(
                    out,
                    "  Largest wait: {} ms, {}-{} ms given the events lost (the largest true wait lies in that range; see docs/report.md)",
                    fmt::ms(max),
                    fmt::ms(lo),
                    fmt::ms(hi)
                )?;
            }
        }
        if self.context_switch_bugs > 0 {
            writeln!(
                out,
                "  note: {} context switch bugs (perf sched latency's count: a CPU switched out a task that no recorded sched_switch put there; the trace is missing sched_switch events, through loss or a kernel that does not trace every switch)",
                self.context_switch_bugs
            )?;
        }
        wait_rules(self, out)
    }
}

/// What started a wait, for the headline.
fn since(kind: Option<WaitStart>, wakeup_event: &str) -> String {
    match kind {
        Some(WaitStart::Wakeup) | Some(WaitStart::Waking) => {
            format!("waiting since its {wakeup_event}")
        }
        Some(WaitStart::WakeupNew) => "waiting since its sched:sched_wakeup_new".to_string(),
        Some(WaitStart::RunnableSwitchOut) => {
            "waiting since its prev_state=R switch-out".to_string()
        }
        Some(WaitStart::FirstSeen) | None => "first seen at its switch-in".to_string(),
    }
}

/// Which events started the waits (with their counts), that preempted
/// switch-outs start none, and the waits after them counted apart.
fn wait_rules(r: &LatencyReport, out: &mut dyn Write) -> io::Result<()> {
    let w = &r.waits_by_start;
    let mut starts = Vec::new();
    let wakeups = w.wakeup + w.waking;
    if wakeups > 0 || r.total_wakeups > 0 {
        starts.push(format!("{} of a sleeping task ({wakeups})", r.wakeup_event));
    }
    if w.wakeup_new > 0 {
        starts.push(format!("sched:sched_wakeup_new ({})", w.wakeup_new));
    }
    starts.push(format!(
        "a switch-out with prev_state=R, runnable and not marked preempted ({})",
        w.runnable_switch_out
    ));
    writeln!(
        out,
        "  Waits start at {}, and end at the switch-in, as perf sched latency; a preempted switch-out (R+) starts none. Run time as perf sched timehist.",
        starts.join(", or ")
    )?;
    if wakeups == 0 && r.total_wakeups == 0 && w.wakeup_new == 0 {
        writeln!(
            out,
            "  note: the trace has no wakeup events, so waits after a sleep are not measured: only prev_state=R switch-outs start waits (record sched:sched_wakeup)"
        )?;
    }
    if w.first_seen > 0 {
        writeln!(
            out,
            "  {} switches are tasks first seen at their switch-in (a wait of 0, as perf counts them).",
            w.first_seen
        )?;
    }
    let preemptions: u64 = r.tasks.iter().map(|t| t.preemptions).sum();
    if let Some(p) = r.tasks.iter().filter(|t| t.preemptions > 0).max_by(|a, b| {
        a.preempt_delay_max_ns
            .cmp(&b.preempt_delay_max_ns)
            .then(b.tid.cmp(&a.tid))
    }) {
        writeln!(
            out,
            "  Preemption waits (from a preempted R+ switch-out to the switch-in, not in the delays above): {} preemptions, max {} ms ({}:{}).",
            preemptions,
            fmt::ms(p.preempt_delay_max_ns),
            p.comm,
            p.tid
        )?;
    }
    Ok(())
}
