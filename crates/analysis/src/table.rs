//! Aligned text tables shared by the text renderers.
//!
//! House style (DESIGN.md "Presentation"): the headline number is printed
//! first, on its own line, by the renderer; then a [`Table`] whose headers
//! carry the units (`Runtime ms`, `Max delay ms`, `Share %`). Columns are
//! sized to their widest cell; text columns are left-aligned, numbers
//! right-aligned.
//!
//! ```
//! use schedscope_analysis::table::{Align, Table};
//! let mut t = Table::new(&[("Task", Align::Left), ("Runtime ms", Align::Right)]);
//! t.row(vec!["perf:42".into(), "1.500".into()]);
//! let mut out = Vec::new();
//! t.write(&mut out).unwrap();
//! assert_eq!(
//!     String::from_utf8(out).unwrap(),
//!     "  Task     Runtime ms\n  -------  ----------\n  perf:42       1.500\n"
//! );
//! ```

use std::io::{self, Write};

/// How a column is aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Text: padded on the right.
    Left,
    /// Numbers: padded on the left.
    Right,
}

/// An aligned text table: headers, a dashed rule, rows.
#[derive(Clone, Debug, Default)]
pub struct Table {
    headers: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
    footer: Vec<Vec<String>>,
}

impl Table {
    /// A table with these (header, alignment) columns.
    pub fn new(columns: &[(&str, Align)]) -> Table {
        Table {
            headers: columns.iter().map(|(h, _)| h.to_string()).collect(),
            align: columns.iter().map(|(_, a)| *a).collect(),
            rows: Vec::new(),
            footer: Vec::new(),
        }
    }

    /// Append a row (missing cells print empty, extra cells are ignored).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Append a footer row (e.g. totals), printed after a second rule.
    pub fn footer(&mut self, cells: Vec<String>) {
        self.footer.push(cells);
    }

    /// Number of body rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the table has no body rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Column widths: the widest of the header and every cell.
    fn widths(&self) -> Vec<usize> {
        let mut w: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for r in self.rows.iter().chain(&self.footer) {
            for (i, c) in r.iter().enumerate().take(w.len()) {
                w[i] = w[i].max(c.chars().count());
            }
        }
        w
    }

    fn line(&self, w: &[usize], cells: &[String], out: &mut dyn Write) -> io::Result<()> {
        let mut s = String::from(" ");
        for (i, width) in w.iter().enumerate() {
            let c = cells.get(i).map(String::as_str).unwrap_or("");
            let pad = width.saturating_sub(c.chars().count());
            s.push(' ');
            match self.align[i] {
                Align::Left => {
                    s.push_str(c);
                    if i + 1 < w.len() {
                        s.extend(std::iter::repeat_n(' ', pad));
                    }
                }
                Align::Right => {
                    s.extend(std::iter::repeat_n(' ', pad));
                    s.push_str(c);
                }
            }
            if i + 1 < w.len() {
                s.push(' ');
            }
        }
        writeln!(out, "{}", s.trim_end())
    }

    /// Write the table.
    pub fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        let w = self.widths();
        self.line(&w, &self.headers, out)?;
        let rule: Vec<String> = w.iter().map(|&n| "-".repeat(n)).collect();
        self.line(&w, &rule, out)?;
        for r in &self.rows {
            self.line(&w, r, out)?;
        }
        if !self.footer.is_empty() {
            self.line(&w, &rule, out)?;
            for r in &self.footer {
                self.line(&w, r, out)?;
            }
        }
        Ok(())
    }
}

/// Nanoseconds as milliseconds with three decimals (`1.500`).
pub fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// A timestamp in seconds with microsecond precision, as perf prints it.
pub fn secs(ns: u64) -> String {
    format!("{}.{:06}", ns / 1_000_000_000, (ns % 1_000_000_000) / 1000)
}

/// `part` as a percentage of `whole` with one decimal (`0.0` when `whole` is 0).
pub fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "0.0".to_string()
    } else {
        format!("{:.1}", part as f64 * 100.0 / whole as f64)
    }
}

/// A count with a metric suffix for headlines (`1.4M`, `51.2k`, `950`).
pub fn count(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_and_sizes_columns() {
        let mut t = Table::new(&[
            ("Task", Align::Left),
            ("Switches", Align::Right),
            ("Note", Align::Left),
        ]);
        t.row(vec!["a-long-name:1".into(), "7".into(), "x".into()]);
        t.row(vec!["b:22".into(), "12345".into()]);
        t.footer(vec!["TOTAL".into(), "12352".into()]);
        let mut out = Vec::new();
        t.write(&mut out).unwrap();
        let s = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "  Task           Switches  Note");
        assert_eq!(lines[1], "  -------------  --------  ----");
        assert_eq!(lines[2], "  a-long-name:1         7  x");
        assert_eq!(lines[3], "  b:22              12345");
        assert_eq!(lines[4], lines[1]);
        assert_eq!(lines[5], "  TOTAL             12352");
    }

    #[test]
    fn number_formats() {
        assert_eq!(ms(1_500_000), "1.500");
        assert_eq!(ms(999), "0.001");
        assert_eq!(secs(490_615_274_123), "490.615274");
        assert_eq!(pct(1, 3), "33.3");
        assert_eq!(pct(1, 0), "0.0");
        assert_eq!(count(1_400_000), "1.4M");
        assert_eq!(count(51_240), "51.2k");
        assert_eq!(count(950), "950");
    }
}
