//! `schedscope diff` output: aligned text tables (one per section, through
//! the one [`Table`] writer), a Markdown table, or CSV (the JSON is the
//! [`Diff`] itself, through serde).
//!
//! The text and Markdown views are for reading: durations in the report's
//! units (ms, or µs below a millisecond, named in the Parameter column,
//! through [`crate::fmt`]), each section's rows ordered by the size of
//! their % change (largest first; a change from 0, `n/a`, first of all),
//! at most [`DiffView::top`] rows per section with a line saying how many
//! were left out. CSV and JSON stay complete, in the comparison's order,
//! in the metrics' own units (ns).

use crate::table::{Align, Table};
use schedscope_diff::{Diff, Row, Stats};
use std::io::{self, Write};

/// What the text and Markdown views show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiffView {
    /// Rows per section, largest |% change| first; 0 = every row.
    pub top: usize,
}

impl Default for DiffView {
    /// `--top`'s default, as `report`'s: 20 rows.
    fn default() -> DiffView {
        DiffView { top: 20 }
    }
}

/// How a row's numbers print: durations (`ns`) in ms, or in µs when both
/// sides are under a millisecond; other units as they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scale {
    Ms,
    Us,
    Raw,
}

impl Scale {
    fn of(r: &Row) -> Scale {
        if r.unit != "ns" {
            Scale::Raw
        } else if r.base.mean.abs().max(r.new.mean.abs()) >= 1e6 {
            Scale::Ms
        } else {
            Scale::Us
        }
    }

    fn unit(self, r: &Row) -> &str {
        match self {
            Scale::Ms => "ms",
            Scale::Us => "µs",
            Scale::Raw => &r.unit,
        }
    }

    fn value(self, v: f64) -> String {
        // (durations are never negative; a mean's fraction of a ns is
        // below what ms and µs print)
        let ns = || v.max(0.0).round() as u64;
        match self {
            Scale::Ms => crate::fmt::ms(ns()),
            Scale::Us => crate::fmt::us(ns()),
            Scale::Raw => num(v),
        }
    }
}

/// `metric stat [kind key] (unit)`, in the metric's own unit.
pub fn parameter(r: &Row) -> String {
    label(r, &r.unit)
}

fn label(r: &Row, unit: &str) -> String {
    let entity = if r.entity_key.is_empty() {
        String::new()
    } else {
        format!(" [{} {}]", r.entity_kind, r.entity_key)
    };
    format!("{} {}{} ({unit})", r.metric, r.stat, entity)
}

/// A number: integral values without decimals, others with 2 (3 for ratios).
pub fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else if v.abs() < 10.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.2}")
    }
}

fn side(s: &Stats, scale: Scale) -> String {
    match s.stddev {
        Some(sd) if s.n > 1 => format!("{} ±{}", scale.value(s.mean), scale.value(sd)),
        _ => scale.value(s.mean),
    }
}

fn pct(r: &Row) -> String {
    let mark = if r.significant == Some(true) {
        " *"
    } else {
        ""
    };
    match r.pct_change {
        Some(p) => format!("{p:+.2}%{mark}"),
        None => format!("n/a{mark}"),
    }
}

/// The cells of a row in the reading views: parameter (with the unit its
/// numbers print in), base, new, % change.
fn cells(r: &Row) -> [String; 4] {
    let scale = Scale::of(r);
    [
        label(r, scale.unit(r)),
        side(&r.base, scale),
        side(&r.new, scale),
        pct(r),
    ]
}

/// One section of the reading views: its name, the rows shown (largest
/// |% change| first, at most `top`) and how many were left out.
struct Shown<'d> {
    section: &'d str,
    rows: Vec<&'d Row>,
    left_out: usize,
}

/// The rows of `d` by section (in the comparison's section order), each
/// section ordered by |% change| (a change from 0 first; ties keep the
/// comparison's order) and cut to `view.top` rows.
fn shown<'d>(d: &'d Diff, view: &DiffView) -> Vec<Shown<'d>> {
    let mut out: Vec<Shown<'d>> = Vec::new();
    for r in &d.rows {
        match out.last_mut() {
            Some(s) if s.section == r.section => s.rows.push(r),
            _ => out.push(Shown {
                section: &r.section,
                rows: vec![r],
                left_out: 0,
            }),
        }
    }
    let size = |r: &Row| r.pct_change.map_or(f64::INFINITY, f64::abs);
    for s in &mut out {
        s.rows.sort_by(|a, b| size(b).total_cmp(&size(a)));
        if view.top > 0 && s.rows.len() > view.top {
            s.left_out = s.rows.len() - view.top;
            s.rows.truncate(view.top);
        }
    }
    out
}

/// The line under a section that had rows left out.
fn left_out_note(n: usize) -> String {
    let rows = if n == 1 { "row" } else { "rows" };
    format!("({n} more {rows} with a smaller |% change| left out; --top 0 shows them all)")
}

fn header(d: &Diff) -> String {
    format!(
        "base: {}\nnew:  {}\n{}",
        d.base.join(", "),
        d.new.join(", "),
        d.sign
    )
}

fn unmatched(d: &Diff, out: &mut dyn Write) -> io::Result<()> {
    if !d.base_only.is_empty() {
        writeln!(out, "only in base: {}", d.base_only.join(", "))?;
    }
    if !d.new_only.is_empty() {
        writeln!(out, "only in new: {}", d.new_only.join(", "))?;
    }
    Ok(())
}

/// The columns of the text tables.
const COLUMNS: [(&str, Align); 4] = [
    ("Parameter", Align::Left),
    ("Base", Align::Right),
    ("New", Align::Right),
    ("% change", Align::Right),
];

/// Aligned text, one table per section (all sized alike), see the module
/// docs for units, order and `view.top`.
pub fn text(d: &Diff, view: &DiffView, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{}", header(d))?;
    let sections = shown(d, view);
    let tables: Vec<Table> = sections
        .iter()
        .map(|s| {
            let mut t = Table::new(&COLUMNS).without_rule().indent("");
            t.rows(s.rows.iter().map(|r| cells(r).to_vec()));
            t
        })
        .collect();
    let widths = tables.iter().fold(Vec::new(), |w, t| {
        let tw = t.widths();
        (0..tw.len())
            .map(|i| tw[i].max(w.get(i).copied().unwrap_or(0)))
            .collect()
    });
    for (s, t) in sections.iter().zip(tables) {
        writeln!(out, "\n{}", s.section)?;
        t.min_widths(&widths).write(out)?;
        if s.left_out > 0 {
            writeln!(out, "{}", left_out_note(s.left_out))?;
        }
    }
    if d.rows.is_empty() {
        writeln!(out, "\nno metric is present on both sides")?;
    }
    writeln!(out)?;
    unmatched(d, out)?;
    writeln!(out, "{}", d.footnote)
}

/// One Markdown table (a Section column first), rows as in [`text`].
pub fn markdown(d: &Diff, view: &DiffView, out: &mut dyn Write) -> io::Result<()> {
    for line in header(d).lines() {
        writeln!(out, "{line}  ")?;
    }
    writeln!(out)?;
    writeln!(out, "| Section | Parameter | Base | New | % change |")?;
    writeln!(out, "|---|---|---:|---:|---:|")?;
    let sections = shown(d, view);
    for s in &sections {
        for r in &s.rows {
            let [p, b, n, c] = cells(r);
            writeln!(
                out,
                "| {} | {} | {b} | {n} | {c} |",
                s.section,
                p.replace('|', "\\|")
            )?;
        }
    }
    writeln!(out)?;
    for s in sections.iter().filter(|s| s.left_out > 0) {
        writeln!(out, "{}: {}  ", s.section, left_out_note(s.left_out))?;
    }
    unmatched(d, out)?;
    writeln!(out, "{}", d.footnote)
}
/// A CSV field (RFC 4180): quoted, with inner quotes doubled, when it
/// holds a comma, a quote or a line break; else as it is.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// CSV, one row per line of the table.
pub fn csv(d: &Diff, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "section,metric,entity_kind,entity_key,stat,unit,better,base_mean,base_stddev,base_n,new_mean,new_stddev,new_n,pct_change,significant")?;
    let opt = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    for r in &d.rows {
        writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.section,
            r.metric,
            r.entity_kind,
            csv_field(&r.entity_key),
            r.stat,
            r.unit,
            r.better.as_str(),
            r.base.mean,
            opt(r.base.stddev),
            r.base.n,
            r.new.mean,
            opt(r.new.stddev),
            r.new.n,
            opt(r.pct_change),
            r.significant.map(|s| s.to_string()).unwrap_or_default()
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedscope_diff::{compare, Better, Metric, Run};

    fn m(metric: &str, key: &str, value: f64, unit: &str) -> Metric {
        Metric {
            section: "latency".into(),
            metric: metric.into(),
            entity_kind: if key.is_empty() {
                "trace"
            } else {
                "task_group"
            }
            .into(),
            entity_key: key.into(),
            stat: "max".into(),
            value,
            unit: unit.into(),
            better: Better::Lower,
            n: 1,
        }
    }

    fn run(metrics: Vec<Metric>) -> Vec<Run> {
        vec![Run {
            label: "r".into(),
            metrics,
        }]
    }

    fn shown_text(d: &Diff, top: usize) -> String {
        let mut out = Vec::new();
        text(d, &DiffView { top }, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Durations print in ms (µs under a millisecond) with the unit in the
    /// parameter; rows go by |% change|, a change from 0 first; `top`
    /// cuts each section and says how many rows it left out.
    #[test]
    fn durations_in_report_units_ordered_by_change_and_cut_to_top() {
        let base = run(vec![
            m("delay", "", 1_959_103.44, "ns"),
            m("delay", "a", 12_549.0, "ns"),
            m("switches", "", 100.0, "count"),
            m("delay", "b", 0.0, "ns"),
        ]);
        let new = run(vec![
            m("delay", "", 2_000_000.0, "ns"),
            m("delay", "a", 25_098.0, "ns"),
            m("switches", "", 90.0, "count"),
            m("delay", "b", 5_000.0, "ns"),
        ]);
        let d = compare(&base, &new, &["latency"]);
        let all = shown_text(&d, 0);
        let table: Vec<&str> = all
            .lines()
            .skip_while(|l| *l != "latency")
            .take(6)
            .collect();
        assert_eq!(
            table,
            [
                "latency",
                "Parameter                       Base    New  % change",
                "delay max [task_group b] (µs)    0.0    5.0       n/a",
                "delay max [task_group a] (µs)   12.5   25.1  -100.00%",
                "switches max (count)             100     90   +10.00%",
                "delay max (ms)                 1.959  2.000    -2.09%",
            ]
        );
        assert!(!all.contains("left out"), "{all}");
        let two = shown_text(&d, 2);
        assert!(two.contains("delay max [task_group a] (µs)"), "{two}");
        assert!(!two.contains("switches"), "{two}");
        assert!(
            two.lines()
                .any(|l| l
                    == "(2 more rows with a smaller |% change| left out; --top 0 shows them all)"),
            "{two}"
        );
        // Markdown: the same rows and units; CSV stays whole and in ns.
        let mut md = Vec::new();
        markdown(&d, &DiffView { top: 1 }, &mut md).unwrap();
        let md = String::from_utf8(md).unwrap();
        assert!(
            md.contains("| latency | delay max [task_group b] (µs) | 0.0 | 5.0 | n/a |"),
            "{md}"
        );
        assert!(md.contains("latency: (3 more rows"), "{md}");
        let mut csv_out = Vec::new();
        csv(&d, &mut csv_out).unwrap();
        let csv_out = String::from_utf8(csv_out).unwrap();
        assert_eq!(csv_out.lines().count(), 5, "{csv_out}");
        assert!(csv_out.contains(",ns,lower,1959103.44,"), "{csv_out}");
    }
}
