//! The `tlb` section and the cpu-clock profile as text: headline
//! (shootdowns, rate, target states), IPI classes, callsites, senders,
//! stacks, tlb_flush reasons; the profile's top callers.

use crate::fmt::{ratio_pct as pct, us};
use crate::table::{Align, Table};
use crate::{top_or, RenderText, TextOptions};
use schedscope_analysis::stats::HistStats;
use schedscope_analysis::tlb::{
    ClassReport, FlushReason, IpiClass, ProfileReport, Sender, TargetStates, TlbReport,
};
use std::io::{self, Write};

/// A table of the tlb views: no rule, alignment per column (`left[i]`),
/// lines kept as they end.
fn table(
    out: &mut dyn Write,
    headers: &[&str],
    left: &[bool],
    rows: &[Vec<String>],
) -> io::Result<()> {
    let columns: Vec<(&str, Align)> = headers
        .iter()
        .zip(left)
        .map(|(h, &l)| (*h, if l { Align::Left } else { Align::Right }))
        .collect();
    let mut t = Table::new(&columns).without_rule().untrimmed();
    t.rows(rows.iter().cloned());
    t.write(out)
}

fn dur_cells(d: &Option<HistStats>) -> [String; 3] {
    match d {
        Some(d) => [us(d.p50_ns), us(d.p99_ns), us(d.max_ns)],
        None => ["-".into(), "-".into(), "-".into()],
    }
}

fn hist_text(h: &std::collections::BTreeMap<u32, u64>) -> String {
    h.iter()
        .map(|(k, v)| format!("{k}:{v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn states_line(s: &TargetStates) -> String {
    let total = s.idle + s.same_process + s.other_process + s.running_unknown_process + s.unknown;
    let p = |n: u64| {
        if total > 0 {
            format!("{n} ({:.1}%)", n as f64 * 100.0 / total as f64)
        } else {
            n.to_string()
        }
    };
    let mut line = format!(
        "idle {}, same process {}, other process {}",
        p(s.idle),
        p(s.same_process),
        p(s.other_process)
    );
    if s.running_unknown_process > 0 {
        line.push_str(&format!(
            ", busy (process unknown) {}",
            p(s.running_unknown_process)
        ));
    }
    line.push_str(&format!(", unknown {}", p(s.unknown)));
    line
}

fn senders_rows(s: &[Sender], top: usize) -> Vec<Vec<String>> {
    s.iter()
        .take(top)
        .map(|s| {
            let t = s
                .threads
                .first()
                .map(|t| format!("{} {} ({})", t.tid, t.comm, t.count))
                .unwrap_or_default();
            vec![
                s.count.to_string(),
                pct(s.share),
                s.pid.to_string(),
                s.comm.clone(),
                t,
            ]
        })
        .collect()
}

impl RenderText for TlbReport {
    /// Render as text: headline (shootdowns, rate), classes, hotspots.
    fn render_text(&self, opts: &TextOptions, out: &mut dyn Write) -> io::Result<()> {
        let top = top_or(opts, 10);
        headline(self, out)?;
        classes(self, out)?;
        callsites(self, top, out)?;
        senders(self, top, out)?;
        stacks(self, top, out)?;
        flush_reasons(self, out)?;
        symbols(self, out)
    }
}

/// The IPI classes table.
fn classes(r: &TlbReport, out: &mut dyn Write) -> io::Result<()> {
    if !r.ipi_classes.is_empty() {
        writeln!(out, "\nIPI classes")?;
        let rows: Vec<Vec<String>> = r.ipi_classes.iter().map(class_row).collect();
        table(
            out,
            &[
                "class",
                "requests",
                "per s",
                "targets",
                "IPIs",
                "deliv p50 us",
                "p99 us",
                "max us",
                "handler p50 us",
                "p99 us",
                "max us",
                "targets hist",
            ],
            &[
                true, false, false, false, false, false, false, false, false, false, false, true,
            ],
            &rows,
        )?;
    }
    Ok(())
}

/// The top (callsite, function) pairs.
fn callsites(r: &TlbReport, top: usize, out: &mut dyn Write) -> io::Result<()> {
    if !r.top_callsites.is_empty() {
        writeln!(out, "\nTop callsites")?;
        let rows: Vec<Vec<String>> = r
            .top_callsites
            .iter()
            .take(top)
            .map(|c| {
                vec![
                    c.count.to_string(),
                    pct(c.share),
                    c.class.label().to_string(),
                    c.callsite.clone(),
                    c.callback.clone(),
                ]
            })
            .collect();
        table(
            out,
            &["requests", "share %", "class", "callsite", "function run"],
            &[false, false, true, true, true],
            &rows,
        )?;
    }
    Ok(())
}

/// The processes initiating shootdowns, then the senders of each other
/// class.
fn senders(r: &TlbReport, top: usize, out: &mut dyn Write) -> io::Result<()> {
    if !r.senders.is_empty() {
        writeln!(out, "\nProcesses initiating shootdowns")?;
        table(
            out,
            &["shootdowns", "share %", "pid", "comm", "top thread (count)"],
            &[false, false, false, true, true],
            &senders_rows(&r.senders, top),
        )?;
    }
    for c in &r.ipi_classes {
        if c.class == IpiClass::TlbShootdown || c.senders.is_empty() {
            continue;
        }
        writeln!(out, "\nSenders of {} IPIs", c.class.label())?;
        table(
            out,
            &["requests", "share %", "pid", "comm", "top thread (count)"],
            &[false, false, false, true, true],
            &senders_rows(&c.senders, top.min(5)),
        )?;
    }
    Ok(())
}

/// The top call stacks, innermost first (24 frames at most).
fn stacks(r: &TlbReport, top: usize, out: &mut dyn Write) -> io::Result<()> {
    if !r.top_stacks.is_empty() {
        writeln!(out, "\nTop stacks (innermost first)")?;
        for (i, s) in r.top_stacks.iter().take(top).enumerate() {
            writeln!(
                out,
                "  #{} {} requests ({}%), {} -> {}",
                i + 1,
                s.count,
                pct(s.share),
                s.class.label(),
                s.callback
            )?;
            for f in s.frames.iter().take(24) {
                writeln!(out, "      {f}")?;
            }
            if s.frames.len() > 24 {
                writeln!(out, "      ... {} more frames", s.frames.len() - 24)?;
            }
        }
    }
    Ok(())
}

/// tlb_flush by reason.
fn flush_reasons(r: &TlbReport, out: &mut dyn Write) -> io::Result<()> {
    if !r.tlb_flush_by_reason.is_empty() {
        writeln!(out, "\ntlb_flush by reason")?;
        let rows: Vec<Vec<String>> = r
            .tlb_flush_by_reason
            .iter()
            .map(|(name, r)| flush_reason_row(name, r))
            .collect();
        table(
            out,
            &["reason", "events", "full", "by CPU", "pages (range:count)"],
            &[true, false, false, true, true],
            &rows,
        )?;
    }
    if !r.irq_vectors.is_empty() {
        let s = r
            .irq_vectors
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ");
        writeln!(out, "\nIRQ vector entries: {s}")?;
    }
    Ok(())
}

/// IRQ vector entries, symbolization, undelivered and unmatched counts.
fn symbols(r: &TlbReport, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "\nsymbols: {} distinct, {} unsymbolized (kernel: {}); undelivered csds {}, unmatched IPIs {}",
        r.symbols.distinct,
        r.symbols.unsymbolized,
        r.symbols.kernel_source,
        r.undelivered,
        r.unmatched_ipis
    )?;
    Ok(())
}

/// The headline: shootdowns and their rate, targets per shootdown and
/// their state at send time, remote flush calls, notes.
fn headline(r: &TlbReport, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "TLB shootdowns: {} ({:.1}/s over {:.3} s; from {})",
        r.shootdowns,
        r.shootdowns_per_second,
        r.duration_ns as f64 / 1e9,
        r.source
    )?;
    if !r.targets_hist.is_empty() {
        writeln!(
            out,
            "  targets per shootdown (CPUs:count): {}",
            hist_text(&r.targets_hist)
        )?;
        writeln!(
            out,
            "  targets at send time: {}",
            states_line(&r.targets_at_send)
        )?;
        let s = &r.targets_at_send;
        let avoidable = s.idle + s.other_process;
        if avoidable > 0 {
            writeln!(
                out,
                "  {avoidable} shootdown targets were idle ({}) or running another process ({}) at send time: the IPIs that lazy TLB or gang scheduling avoid",
                s.idle, s.other_process
            )?;
        }
    }
    if let Some(send) = r.tlb_flush_by_reason.get("remote IPI send") {
        if r.source.starts_with("csd") && send.count > 0 {
            writeln!(
                out,
                "  remote flush calls (tlb_flush \"remote IPI send\"): {}; {:.1}% of them queued an IPI, the rest skipped every target (lazy TLB, or the mm no longer loaded there)",
                send.count,
                (r.shootdowns as f64 * 100.0 / send.count as f64).min(100.0)
            )?;
        }
    }
    for n in &r.notes {
        writeln!(out, "  note: {n}")?;
    }
    Ok(())
}

/// One row of `tlb_flush by reason`: reason, events, full flushes, events
/// by CPU, pages histogram (numeric order of the lower bound, `full` last).
fn flush_reason_row(name: &str, r: &FlushReason) -> Vec<String> {
    let cpus = r
        .by_cpu
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(c, n)| format!("{c}:{n}"))
        .collect::<Vec<_>>()
        .join(" ");
    let mut pages: Vec<(&String, &u64)> = r.pages_hist.iter().collect();
    // Numeric order of the lower bound, `full` last.
    pages.sort_by_key(|(k, _)| {
        k.split('-')
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(u64::MAX)
    });
    let pages = pages
        .iter()
        .map(|(k, v)| format!("{k}:{v}"))
        .collect::<Vec<_>>()
        .join(" ");
    vec![
        name.to_string(),
        r.count.to_string(),
        r.full_flushes.to_string(),
        cpus,
        pages,
    ]
}

fn class_row(c: &ClassReport) -> Vec<String> {
    let [d50, d99, dmax] = dur_cells(&c.delivery);
    let [h50, h99, hmax] = dur_cells(&c.handler);
    vec![
        c.class.label().to_string(),
        c.count.to_string(),
        format!("{:.1}", c.per_second),
        c.targets.to_string(),
        c.ipis_sent.to_string(),
        d50,
        d99,
        dmax,
        h50,
        h99,
        hmax,
        hist_text(&c.targets_hist),
    ]
}

impl RenderText for ProfileReport {
    /// Render the "top callers" table; flush functions are marked with `*`.
    fn render_text(&self, opts: &TextOptions, out: &mut dyn Write) -> io::Result<()> {
        let top = top_or(opts, 10);
        writeln!(
            out,
            "Profile: {} {} samples ({} kernel, {} user, {} unsymbolized); {} ({:.1}%) under a TLB-flush function",
            self.samples,
            self.event,
            self.kernel_samples,
            self.user_samples,
            self.unsymbolized_samples,
            self.flush_samples,
            if self.samples > 0 {
                self.flush_samples as f64 * 100.0 / self.samples as f64
            } else {
                0.0
            }
        )?;
        let rows: Vec<Vec<String>> = self
            .top
            .iter()
            .take(top)
            .map(|r| {
                vec![
                    r.samples.to_string(),
                    pct(r.share),
                    r.total_samples.to_string(),
                    if r.flush { "*".into() } else { String::new() },
                    r.module.clone(),
                    r.symbol.clone(),
                ]
            })
            .collect();
        writeln!(out, "\nTop callers (* = TLB-flush function)")?;
        table(
            out,
            &["samples", "share %", "in stack", "", "module", "symbol"],
            &[false, false, false, true, true, true],
            &rows,
        )
    }
}
