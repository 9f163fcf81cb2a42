//! The one aligned-table writer of every text view.
//!
//! House style (docs/design.md, "Presentation"): the headline number is printed
//! first, on its own line, by the view; then a [`Table`] whose headers
//! carry the units (`Runtime ms`, `Max delay ms`, `share (%)`). Columns are
//! sized to their widest cell (header, rows and footer); text columns are
//! left-aligned, numbers right-aligned; cells are two spaces apart after an
//! indent (two spaces unless [`Table::indent`] says otherwise). A dashed
//! rule under the header (and above a footer) is optional
//! ([`Table::plain`] leaves it out).
//!
//! ```
//! use schedscope_render::table::{Align, Table};
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
    /// Text: padded on the right (never at the end of a line).
    Left,
    /// Numbers: padded on the left.
    Right,
}

/// An aligned text table: headers, an optional dashed rule, rows, footer.
#[derive(Clone, Debug)]
pub struct Table {
    indent: &'static str,
    rule: bool,
    trim: bool,
    headers: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
    footer: Vec<Vec<String>>,
    /// Smallest width of each column ([`Table::min_widths`]).
    min: Vec<usize>,
}

impl Table {
    /// A table with these (header, alignment) columns, a dashed rule under
    /// the header, indented by two spaces.
    pub fn new(columns: &[(&str, Align)]) -> Table {
        Table {
            indent: "  ",
            rule: true,
            trim: true,
            headers: columns.iter().map(|(h, _)| h.to_string()).collect(),
            align: columns.iter().map(|(_, a)| *a).collect(),
            rows: Vec::new(),
            footer: Vec::new(),
            min: Vec::new(),
        }
    }

    /// A table without the dashed rule whose first column is left-aligned
    /// and the others right-aligned, except columns with an empty header
    /// (bar charts), which are left-aligned too.
    pub fn plain(headers: &[&str]) -> Table {
        let columns: Vec<(&str, Align)> = headers
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let align = if i == 0 || h.is_empty() {
                    Align::Left
                } else {
                    Align::Right
                };
                (*h, align)
            })
            .collect();
        Table::new(&columns).without_rule()
    }

    /// Leave out the dashed rules.
    pub fn without_rule(mut self) -> Table {
        self.rule = false;
        self
    }

    /// Indent every line by `indent` instead of two spaces.
    pub fn indent(mut self, indent: &'static str) -> Table {
        self.indent = indent;
        self
    }

    /// Keep what a line ends with (an empty last cell leaves the spaces
    /// before it) instead of trimming trailing whitespace.
    pub fn untrimmed(mut self) -> Table {
        self.trim = false;
        self
    }

    /// Append a row (missing cells print empty, extra cells are ignored).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Append rows.
    pub fn rows(&mut self, rows: impl IntoIterator<Item = Vec<String>>) {
        self.rows.extend(rows);
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

    /// Make each column at least as wide as `widths` says (to size
    /// several tables alike, from their [`Table::widths`]).
    pub fn min_widths(mut self, widths: &[usize]) -> Table {
        self.min = widths.to_vec();
        self
    }

    /// Column widths: the widest of the header, every cell and
    /// [`Table::min_widths`].
    pub fn widths(&self) -> Vec<usize> {
        let mut w: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for (w, &m) in w.iter_mut().zip(&self.min) {
            *w = (*w).max(m);
        }
        for r in self.rows.iter().chain(&self.footer) {
            for (i, c) in r.iter().enumerate().take(w.len()) {
                w[i] = w[i].max(c.chars().count());
            }
        }
        w
    }

    /// One line: the cells present (up to the number of columns), a
    /// left-aligned cell padded only when another cell follows it.
    fn line(&self, w: &[usize], cells: &[String], out: &mut dyn Write) -> io::Result<()> {
        let n = cells.len().min(w.len());
        let mut s = String::from(self.indent);
        for (i, c) in cells.iter().take(n).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let pad = w[i].saturating_sub(c.chars().count());
            match self.align[i] {
                Align::Left => {
                    s.push_str(c);
                    if i + 1 < n {
                        s.extend(std::iter::repeat_n(' ', pad));
                    }
                }
                Align::Right => {
                    s.extend(std::iter::repeat_n(' ', pad));
                    s.push_str(c);
                }
            }
        }
        if self.trim {
            writeln!(out, "{}", s.trim_end())
        } else {
            writeln!(out, "{s}")
        }
    }

    /// Write the table.
    pub fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        let w = self.widths();
        self.line(&w, &self.headers, out)?;
        let rule: Vec<String> = w.iter().map(|&n| "-".repeat(n)).collect();
        if self.rule {
            self.line(&w, &rule, out)?;
        }
        for r in &self.rows {
            self.line(&w, r, out)?;
        }
        if !self.footer.is_empty() {
            if self.rule {
                self.line(&w, &rule, out)?;
            }
            for r in &self.footer {
                self.line(&w, r, out)?;
            }
        }
        Ok(())
    }
}

/// Write `rows` as a [`Table::plain`] table indented by `indent`.
pub fn write_plain(
    out: &mut dyn Write,
    indent: &'static str,
    headers: &[&str],
    rows: &[Vec<String>],
) -> io::Result<()> {
    let mut t = Table::plain(headers).indent(indent);
    t.rows(rows.iter().cloned());
    t.write(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(t: &Table) -> String {
        let mut out = Vec::new();
        t.write(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

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
        let s = text(&t);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "  Task           Switches  Note");
        assert_eq!(lines[1], "  -------------  --------  ----");
        assert_eq!(lines[2], "  a-long-name:1         7  x");
        assert_eq!(lines[3], "  b:22              12345");
        assert_eq!(lines[4], lines[1]);
        assert_eq!(lines[5], "  TOTAL             12352");
    }

    #[test]
    fn plain_tables_left_align_the_first_and_unnamed_columns() {
        let mut t = Table::plain(&["running", "share (%)", ""]).indent("    ");
        t.row(vec!["0".into(), "12.5".into(), "#####".into()]);
        t.row(vec!["10".into(), "7.0".into(), "##".into()]);
        assert_eq!(
            text(&t),
            "    running  share (%)\n    0             12.5  #####\n    10             7.0  ##\n"
        );
    }

    #[test]
    fn untrimmed_tables_keep_an_empty_last_cell() {
        let mut t = Table::new(&[("n", Align::Right), ("who", Align::Left)])
            .without_rule()
            .untrimmed();
        t.row(vec!["1".into(), String::new()]);
        assert_eq!(text(&t), "  n  who\n  1  \n");
    }
}
