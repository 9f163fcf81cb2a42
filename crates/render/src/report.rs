//! The whole report as text: a one-line summary of the trace, then each
//! section under its `== Title ==`; a failed section prints why.

use crate::{fmt, RenderText, TextOptions};
use schedscope_analysis::report::{Report, Section};
use std::io::{self, Write};

/// Where the events happened, for the one-line summaries of `report` and
/// `info`: `on 4 CPUs`, `on 1 CPU`; for text without a CPU column, that the
/// CPU is unknown (of all events, or of some when other lines name CPUs).
pub fn on_cpus(cpus: u32, cpu_unknown: bool) -> String {
    let n = |c: u32| format!("{c} CPU{}", if c == 1 { "" } else { "s" });
    match (cpu_unknown, cpus) {
        (false, c) => format!("on {}", n(c)),
        (true, 0 | 1) => "on unknown CPUs (the text has no CPU column)".to_string(),
        (true, c) => format!("on {} (some lines have no CPU column)", n(c)),
    }
}

impl RenderText for Report {
    /// The trace summary line, then every section present; decoder
    /// warnings are not printed here (the CLI puts them on stderr).
    fn render_text(&self, opts: &TextOptions, out: &mut dyn Write) -> io::Result<()> {
        let t = &self.trace;
        writeln!(
            out,
            "{}: {}{}, {} events over {:.3} s {}{}",
            t.path,
            t.format.as_str(),
            t.host
                .as_deref()
                .map(|h| format!(" recorded on {h}"))
                .unwrap_or_default(),
            t.events,
            t.end_ns.saturating_sub(t.start_ns) as f64 / 1e9,
            on_cpus(t.cpus, t.cpu_unknown),
            if t.lost > 0 {
                format!(
                    ", {} lost ({}%)",
                    t.lost,
                    fmt::pct(t.lost, t.events + t.lost)
                )
            } else {
                String::new()
            }
        )?;
        fn section<T>(
            out: &mut dyn Write,
            title: &str,
            s: &Option<Section<T>>,
            render: impl FnOnce(&T, &mut dyn Write) -> io::Result<()>,
        ) -> io::Result<()> {
            let Some(s) = s else { return Ok(()) };
            writeln!(out)?;
            writeln!(out, "== {title} ==")?;
            match &s.0 {
                Ok(r) => render(r, out),
                Err(e) => writeln!(out, "{e}"),
            }
        }
        section(out, "Scheduling latency", &self.latency, |r, o| {
            r.render_text(opts, o)
        })?;
        section(out, "Gang co-run", &self.gang, |r, o| {
            r.render_text(opts, o)
        })?;
        section(out, "Lock-holder preemption", &self.lhp, |r, o| {
            r.render_text(opts, o)
        })?;
        section(out, "Idle under bandwidth control", &self.idle, |r, o| {
            r.render_text(opts, o)
        })?;
        section(out, "TLB shootdowns and IPIs", &self.tlb, |r, o| {
            r.render_text(opts, o)
        })?;
        if let Some(p) = &self.profile {
            writeln!(out)?;
            writeln!(out, "== Profile ==")?;
            p.render_text(opts, out)?;
        }
        Ok(())
    }
}
