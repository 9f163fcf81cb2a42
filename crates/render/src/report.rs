//! The whole report as text: a one-line summary of the trace, then each
//! section under its `== Title ==`; a failed section prints why.

use crate::{fmt, RenderText, TextOptions};
use schedscope_analysis::report::{Report, Section};
use std::io::{self, Write};

impl RenderText for Report {
    /// The trace summary line, then every section present; decoder
    /// warnings are not printed here (the CLI puts them on stderr).
    fn render_text(&self, opts: &TextOptions, out: &mut dyn Write) -> io::Result<()> {
        let t = &self.trace;
        writeln!(
            out,
            "{}: {}{}, {} events over {:.3} s on {} CPUs{}",
            t.path,
            t.format.as_str(),
            t.host
                .as_deref()
                .map(|h| format!(" recorded on {h}"))
                .unwrap_or_default(),
            t.events,
            t.end_ns.saturating_sub(t.start_ns) as f64 / 1e9,
            t.cpus,
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
