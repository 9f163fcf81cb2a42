//! Text views of schedscope's reports.
//!
//! The analysis crate computes ([`schedscope_analysis::Report`] and one
//! struct per section, the single source of truth that JSON serialises);
//! this crate only presents: every view takes a report by reference plus
//! [`TextOptions`], and reads nothing else (no trace, no timeline), so the
//! CLI, the TUI and `diff` print the same figures the same way (as
//! ripgrep's grep-printer is apart from grep-searcher).
//!
//! * [`RenderText`]: `render_text(&opts, out)` on the whole [`Report`]
//!   (one-line trace summary, then each section under its title) and on
//!   each section report ([`report`], [`latency`], [`gang`], [`lhp`],
//!   [`idle`], [`tlb`]).
//! * [`table::Table`]: the one aligned-table writer; [`fmt`]: the one set of
//!   number formatters (`ms`, `pct`, ...).
//!
//! House style (docs/design.md, "Presentation"): headline first, then aligned
//! tables with units in the headers, `--top` rows where a table can be
//! long.
//!
//! [`Report`]: schedscope_analysis::Report

pub mod diff;
pub mod fmt;
pub mod gang;
pub mod idle;
pub mod latency;
pub mod lhp;
pub mod report;
pub mod table;
pub mod tlb;

use std::io::{self, Write};

/// What a text view can be asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextOptions {
    /// Rows per long table (`--top`); 0 means each view's default (all
    /// tasks for latency, 10 gangs, 20 lhp rows, 10 tlb rows, 1 idle row).
    pub top: usize,
}

impl Default for TextOptions {
    /// `--top`'s default: 20 rows.
    fn default() -> TextOptions {
        TextOptions { top: 20 }
    }
}

/// A report (or section) that prints itself as text.
pub trait RenderText {
    /// Write the text view to `out`.
    fn render_text(&self, opts: &TextOptions, out: &mut dyn Write) -> io::Result<()>;
}

/// `opts.top`, or `default` when it is 0.
fn top_or(opts: &TextOptions, default: usize) -> usize {
    if opts.top == 0 {
        default
    } else {
        opts.top
    }
}
