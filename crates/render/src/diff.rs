//! `schedscope diff` output: aligned text tables (one per section, through
//! the one [`Table`] writer), a Markdown table, or CSV (the JSON is the
//! [`Diff`] itself, through serde).

use crate::table::{Align, Table};
use schedscope_diff::{Diff, Row};
use std::io::{self, Write};

/// `metric stat [kind key] (unit)`.
pub fn parameter(r: &Row) -> String {
    let entity = if r.entity_key.is_empty() {
        String::new()
    } else {
        format!(" [{} {}]", r.entity_kind, r.entity_key)
    };
    format!("{} {}{} ({})", r.metric, r.stat, entity, r.unit)
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

fn side(s: &schedscope_diff::Stats) -> String {
    match s.stddev {
        Some(sd) if s.n > 1 => format!("{} ±{}", num(s.mean), num(sd)),
        _ => num(s.mean),
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

/// Aligned text, one table per section (all sized alike).
pub fn text(d: &Diff, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{}", header(d))?;
    let mut tables: Vec<(&str, Table)> = Vec::new();
    for r in &d.rows {
        if tables.last().is_none_or(|(s, _)| *s != r.section) {
            let t = Table::new(&COLUMNS).without_rule().indent("");
            tables.push((&r.section, t));
        }
        if let Some((_, t)) = tables.last_mut() {
            t.row(vec![parameter(r), side(&r.base), side(&r.new), pct(r)]);
        }
    }
    let widths = tables.iter().fold(Vec::new(), |w, (_, t)| {
        let tw = t.widths();
        (0..tw.len())
            .map(|i| tw[i].max(w.get(i).copied().unwrap_or(0)))
            .collect()
    });
    for (section, t) in tables {
        writeln!(out, "\n{section}")?;
        t.min_widths(&widths).write(out)?;
    }
    if d.rows.is_empty() {
        writeln!(out, "\nno metric is present on both sides")?;
    }
    writeln!(out)?;
    unmatched(d, out)?;
    writeln!(out, "{}", d.footnote)
}

/// One Markdown table (a Section column first).
pub fn markdown(d: &Diff, out: &mut dyn Write) -> io::Result<()> {
    for line in header(d).lines() {
        writeln!(out, "{line}  ")?;
    }
    writeln!(out)?;
    writeln!(out, "| Section | Parameter | Base | New | % change |")?;
    writeln!(out, "|---|---|---:|---:|---:|")?;
    for r in &d.rows {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            r.section,
            parameter(r).replace('|', "\\|"),
            side(&r.base),
            side(&r.new),
            pct(r)
        )?;
    }
    writeln!(out)?;
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
