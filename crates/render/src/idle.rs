//! The `idle` section as text: headline, seed table, per-CPU table,
//! balancing, gap histogram, longest gaps, cgroups.

use crate::fmt::{ms, pct_opt, pct_sign, us_opt};
use crate::table::Table;
use crate::{RenderText, TextOptions};
use schedscope_analysis::idle::{Attribution, CgroupMapping, Gap, IdleReport};
use std::io::{self, Write};

/// The "waiting (tid comm @cpu)" cell of a wasted-idle gap: the tasks
/// that waited during it, `(throttled)` after a throttled one.
pub fn gap_waiting(g: &Gap) -> String {
    g.waiting
        .iter()
        .map(|w| {
            format!(
                "{} {}@{}{}",
                w.tid,
                w.comm,
                w.cpu,
                if w.throttled { " (throttled)" } else { "" }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl RenderText for IdleReport {
    /// Headline first, then aligned tables (`opts.top` rows where a table
    /// can be long).
    fn render_text(&self, opts: &TextOptions, out: &mut dyn Write) -> io::Result<()> {
        render(self, opts, out)
    }
}

fn render(r: &IdleReport, opts: &TextOptions, out: &mut dyn Write) -> io::Result<()> {
    let top = opts.top.max(1);
    headline(r, out)?;
    per_second(r, out)?;
    per_cpu(r, out)?;
    balancing(r, top, out)?;
    gaps(r, top, out)?;
    cgroups(r, top, out)?;
    notes(r, out)
}

/// Wasted idle (throttled, imbalance, attribution), then idle time.
fn headline(r: &IdleReport, out: &mut dyn Write) -> io::Result<()> {
    let cpu_time = r.duration_ns.saturating_mul(r.cpus.len() as u64);
    writeln!(
        out,
        "Wasted idle: {} ms{} ({} of CPU time) idle while runnable work waited: throttled {} ms{}, imbalance {} ms (attribution: {})",
        ms(r.wasted_idle_ns),
        loss_range(r, r.wasted_idle_ns_min, r.wasted_idle_ns_max),
        pct_sign(r.wasted_idle_ns, cpu_time),
        ms(r.throttled_ns),
        if r.throttled_ns_min == r.throttled_ns_max {
            String::new()
        } else {
            format!(" ({}-{} ms)", ms(r.throttled_ns_min), ms(r.throttled_ns_max))
        },
        ms(r.imbalance_ns),
        match (r.attribution, r.cgroup_mapping) {
            (Attribution::Recorded, CgroupMapping::Membership) =>
                "recorded cgroup samples, tasks mapped by their recorded cgroup membership",
            (Attribution::Recorded, _) =>
                "recorded cgroup samples, tasks mapped by name (comm = cgroup's last path component; the file has no task membership)",
            (Attribution::Inferred, _) => "inferred from the trace",
        }
    )?;
    writeln!(
        out,
        "Idle: {} ms{} of {} ms CPU time ({}) over {} CPUs, {:.3} s",
        ms(r.idle_ns),
        loss_range(r, r.idle_ns_min, r.idle_ns_max),
        ms(cpu_time),
        pct_sign(r.idle_ns, cpu_time),
        r.cpus.len(),
        r.duration_ns as f64 / 1e9
    )?;
    writeln!(out)?;
    Ok(())
}

/// Idle % and work done per second of trace.
fn per_second(r: &IdleReport, out: &mut dyn Write) -> io::Result<()> {
    let p = &r.per_second_idle_pct;
    let mut t = Table::plain(&["Idle time", "Average", "Std-deviation", "Min", "Max"]);
    t.row(vec![
        format!("this trace ({} s)", r.seconds),
        pct_opt(p.avg),
        pct_opt(p.stddev),
        pct_opt(p.min),
        pct_opt(p.max),
    ]);
    t.write(out)?;
    let w = &r.work_per_second_ns;
    let mut t = Table::plain(&["Work done (CPU ms/s)", "Average", "Std-deviation"]);
    let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{:.1}", v / 1e6));
    t.row(vec!["this trace".into(), f(w.avg), f(w.stddev)]);
    t.write(out)?;
    if r.seconds == 0 {
        writeln!(
            out,
            "  (trace shorter than one full second: no per-second figures)"
        )?;
    }
    writeln!(out)?;
    Ok(())
}

/// The per-CPU table.
fn per_cpu(r: &IdleReport, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "Per CPU")?;
    let mut t = Table::plain(&[
        "CPU",
        "idle (ms)",
        "idle %",
        "wasted (ms)",
        "throttled (ms)",
        "imbalance (ms)",
        "SCHED softirqs",
        "kicks recv",
        "pulls",
    ]);
    for c in &r.cpus {
        t.row(vec![
            c.cpu.to_string(),
            ms(c.idle_ns),
            pct_sign(c.idle_ns, r.duration_ns),
            ms(c.wasted_idle_ns),
            ms(c.throttled_ns),
            ms(c.imbalance_ns),
            c.sched_softirqs.to_string(),
            c.nohz_kicks_received.to_string(),
            c.pulls.to_string(),
        ]);
    }
    t.write(out)?;
    writeln!(out)?;
    Ok(())
}

/// Idle balancing: softirqs, kicks, pulls, waits before a pull, how gaps
/// ended, the busiest kick pairs.
fn balancing(r: &IdleReport, top: usize, out: &mut dyn Write) -> io::Result<()> {
    let b = &r.balance;
    writeln!(
        out,
        "Idle balancing: {} SCHED softirqs ({} ms), {} nohz kicks, {} wake_idle_without_ipi, {} pulls into idle CPUs",
        b.sched_softirqs,
        ms(b.sched_softirq_ns),
        b.nohz_kicks,
        b.wake_idle_without_ipi,
        b.pulls_into_idle
    )?;
    if !b.pulls_by_path.is_empty() {
        let mut t = Table::plain(&["Pull path", "pulls"]);
        for (k, v) in &b.pulls_by_path {
            t.row(vec![k.clone(), v.to_string()]);
        }
        t.write(out)?;
    }
    let wp = &b.wait_before_pull_ns;
    let mut t = Table::plain(&[
        "Wait before pull",
        "count",
        "avg (µs)",
        "p50 (µs)",
        "p99 (µs)",
        "max (µs)",
    ]);
    t.row(vec![
        "runnable while a CPU idled".into(),
        wp.count.to_string(),
        wp.avg.map_or("-".into(), |v| format!("{:.1}", v / 1e3)),
        us_opt(wp.p50),
        us_opt(wp.p99),
        us_opt(wp.max),
    ]);
    t.write(out)?;
    let e = &b.gap_endings;
    let mut t = Table::plain(&[
        "Gap endings",
        "wakeup",
        "pull",
        "ran elsewhere",
        "unthrottle",
        "trace end",
    ]);
    t.row(vec![
        format!("{} gaps", r.gaps.count),
        e.wakeup.to_string(),
        e.pull.to_string(),
        e.ran_elsewhere.to_string(),
        e.unthrottle.to_string(),
        e.trace_end.to_string(),
    ]);
    t.write(out)?;
    if !b.kicks.is_empty() {
        let mut kicks = b.kicks.clone();
        kicks.sort_by_key(|k| std::cmp::Reverse(k.count));
        let mut t = Table::plain(&["nohz kick from CPU", "to CPU", "kicks"]);
        for k in kicks.iter().take(top) {
            t.row(vec![
                k.from.to_string(),
                k.to.to_string(),
                k.count.to_string(),
            ]);
        }
        t.write(out)?;
    }
    writeln!(out)?;
    Ok(())
}

/// Wasted-idle gaps by length, and the longest.
fn gaps(r: &IdleReport, top: usize, out: &mut dyn Write) -> io::Result<()> {
    if !r.gaps.histogram.is_empty() {
        writeln!(out, "Wasted-idle gaps by length")?;
        let mut t = Table::plain(&["length (µs)", "gaps", "total (ms)"]);
        for h in r.gaps.histogram.iter().filter(|h| h.count > 0) {
            t.row(vec![
                format!("[{}, {})", h.lo_ns / 1000, h.hi_ns / 1000),
                h.count.to_string(),
                ms(h.total_ns),
            ]);
        }
        t.write(out)?;
        writeln!(out)?;
        writeln!(out, "Longest wasted-idle gaps")?;
        let mut t = Table::plain(&[
            "CPU",
            "start (s)",
            "length (ms)",
            "throttled (ms)",
            "ending",
            "waiting (tid comm @cpu)",
        ]);
        for g in r.gaps.longest.iter().take(top) {
            let waiting = gap_waiting(g);
            t.row(vec![
                g.cpu.to_string(),
                format!("{:.6}", g.start_ns as f64 / 1e9),
                ms(g.dur_ns),
                ms(g.throttled_ns),
                g.ending.clone(),
                waiting,
            ]);
        }
        t.write(out)?;
        writeln!(out)?;
    }
    Ok(())
}

/// The recorded cgroups.
fn cgroups(r: &IdleReport, top: usize, out: &mut dyn Write) -> io::Result<()> {
    if !r.cgroups.is_empty() {
        writeln!(out, "cgroups (recorded cpu.stat samples)")?;
        let mut t = Table::plain(&[
            "cgroup",
            "quota (CPUs)",
            "used (CPUs)",
            "ran in trace (CPUs)",
            "periods",
            "throttled",
            "throttled (ms)",
            "tasks",
        ]);
        for g in r.cgroups.iter().take(top) {
            let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
            t.row(vec![
                g.path.clone(),
                f(g.quota_cpus),
                f(g.usage_cpus),
                f(g.trace_cpus),
                g.nr_periods.to_string(),
                g.nr_throttled.to_string(),
                ms(g.throttled_ns),
                g.tasks.to_string(),
            ]);
        }
        t.write(out)?;
        writeln!(out)?;
    }
    Ok(())
}

/// Missing events, lost-event repairs, tolerated anomalies.
fn notes(r: &IdleReport, out: &mut dyn Write) -> io::Result<()> {
    if !r.missing_events.is_empty() {
        writeln!(
            out,
            "Note: the trace has no {} events, so the balancing figures above are incomplete; record them with `schedscope record -e +{}` (or `perf record -a -e {}`).",
            r.missing_events.join(", "),
            r.missing_events.join(" -e +"),
            r.missing_events.join(",")
        )?;
    }
    render_repairs(r, out)?;
    if r.anomalies > 0 {
        writeln!(
            out,
            "Note: {} events contradicted the tracked state (tolerated).",
            r.anomalies
        )?;
    }
    Ok(())
}

/// How far lost events can move a figure: `, LO-HI ms given the events
/// lost on CPU N` when its bounds differ, else nothing.
fn loss_range(r: &IdleReport, lo: u64, hi: u64) -> String {
    if lo == hi {
        return String::new();
    }
    let cpus: Vec<String> = r
        .repairs
        .iter()
        .filter(|c| c.uncertain_ns > 0)
        .map(|c| c.cpu.to_string())
        .collect();
    format!(
        ", {}-{} ms given the events lost on CPU {}",
        ms(lo),
        ms(hi),
        cpus.join(", ")
    )
}

/// The per-CPU lost-event evidence and repairs ([`IdleReport::repairs`]),
/// one line per CPU that has something to say; nothing for a trace whose
/// CPUs are all fully traced and held no woken task off.
pub(super) fn render_repairs(r: &IdleReport, out: &mut dyn Write) -> io::Result<()> {
    fn n(v: u64) -> String {
        let s = v.to_string();
        let mut o = String::new();
        for (i, ch) in s.chars().enumerate() {
            if i > 0 && (s.len() - i).is_multiple_of(3) {
                o.push(',');
            }
            o.push(ch);
        }
        o
    }
    let shown: Vec<_> = r
        .repairs
        .iter()
        .filter(|c| c.lossy || c.woken_throttled > 0 || c.woken_left_queued > 0)
        .collect();
    if shown.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "Lost events (repairs only on CPUs whose trace shows loss: a switch-out of a task no recorded switch put there)"
    )?;
    for c in shown {
        let mut parts = Vec::new();
        if c.lossy {
            parts.push(format!(
                "{} switch-outs no recorded switch explains, {} of them switches out of idle missing",
                n(c.unswitched_switch_outs),
                n(c.idle_exits_missing)
            ));
            parts.push(format!("{} waits dropped", n(c.waits_dropped)));
            if !c.evidence.is_empty() {
                let by: Vec<String> = c
                    .evidence
                    .iter()
                    .map(|(k, v)| format!("{k} {}", n(*v)))
                    .collect();
                parts.push(format!(
                    "switch-ins placed by {}; state unknown {} ms",
                    by.join(", "),
                    ms(c.uncertain_ns)
                ));
            }
        } else {
            parts.push("fully traced, nothing dropped".to_string());
        }
        if c.woken_throttled > 0 {
            parts.push(format!(
                "{} woken tasks held off while it idled, taken as throttled",
                n(c.woken_throttled)
            ));
        }
        if c.woken_left_queued > 0 {
            parts.push(format!(
                "{} woken tasks left queued while it idled (kept, counted as anomalies)",
                n(c.woken_left_queued)
            ));
        }
        writeln!(out, "  CPU {}: {}", c.cpu, parts.join("; "))?;
    }
    writeln!(out)?;
    Ok(())
}
