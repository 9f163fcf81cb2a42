//! The visible time window: zoom around the cursor, pan, column <-> time.

/// Narrowest window (ns): below this a column would be under 1 ns.
pub const MIN_WIDTH_NS: u64 = 64;

/// A window `[start, start + width)` over the trace `[lo, hi)`, with a
/// cursor inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Viewport {
    /// Trace start (ns).
    pub lo: u64,
    /// Trace end (ns).
    pub hi: u64,
    /// Window start (ns).
    pub start: u64,
    /// Window length (ns).
    pub width: u64,
    /// Cursor (ns).
    pub cursor: u64,
}

impl Viewport {
    /// The whole trace, cursor at its start.
    pub fn new(lo: u64, hi: u64) -> Viewport {
        let hi = hi.max(lo + MIN_WIDTH_NS);
        Viewport {
            lo,
            hi,
            start: lo,
            width: hi - lo,
            cursor: lo,
        }
    }

    /// Whether the window is the whole trace.
    pub fn is_whole(&self) -> bool {
        self.start == self.lo && self.width == self.hi - self.lo
    }

    /// The trace is now `[lo, hi)` (a preview grew or was replaced): the
    /// window and cursor stay where they are, as far as the new span
    /// allows.
    pub fn rebase(&mut self, lo: u64, hi: u64) {
        self.lo = lo;
        self.hi = hi.max(lo + MIN_WIDTH_NS);
        self.clamp();
    }

    /// Window end.
    pub fn end(&self) -> u64 {
        self.start + self.width
    }

    /// Keep the window inside the trace and the cursor inside the window.
    fn clamp(&mut self) {
        let span = self.hi - self.lo;
        self.width = self.width.clamp(MIN_WIDTH_NS.min(span), span);
        self.start = self.start.clamp(self.lo, self.hi - self.width);
        self.cursor = self.cursor.clamp(self.start, self.end().saturating_sub(1));
    }

    /// Zoom by `factor` (< 1 zooms in) keeping the cursor's time at the
    /// same place on screen.
    pub fn zoom(&mut self, factor: f64) {
        let frac = (self.cursor - self.start) as f64 / self.width as f64;
        let width = ((self.width as f64 * factor).round() as u64).max(1);
        self.width = width;
        let left = (frac * width as f64) as u64;
        self.start = self.cursor.saturating_sub(left).max(self.lo);
        self.clamp();
    }

    /// Pan by `frac` of the window (negative = left); the cursor keeps its
    /// place on screen.
    pub fn pan(&mut self, frac: f64) {
        let off = self.cursor - self.start;
        let d = (self.width as f64 * frac.abs()) as u64;
        self.start = if frac < 0.0 {
            self.start.saturating_sub(d.max(1))
        } else {
            self.start.saturating_add(d.max(1))
        };
        self.start = self.start.clamp(self.lo, self.hi - self.width);
        self.cursor = self.start + off;
        self.clamp();
    }

    /// Move the cursor by `cols` columns of a `columns`-wide lane, panning
    /// when it leaves the window.
    pub fn step_cursor(&mut self, cols: i64, columns: u16) {
        let per = self.ns_per_col(columns).max(1);
        let d = per.saturating_mul(cols.unsigned_abs());
        let c = if cols < 0 {
            self.cursor.saturating_sub(d).max(self.lo)
        } else {
            self.cursor.saturating_add(d).min(self.hi - 1)
        };
        self.center_if_outside(c);
    }

    /// Put the cursor at `t`, moving the window only if `t` is outside it.
    pub fn center_if_outside(&mut self, t: u64) {
        let t = t.clamp(self.lo, self.hi - 1);
        if t < self.start || t >= self.end() {
            self.start = t.saturating_sub(self.width / 2);
        }
        self.cursor = t;
        self.clamp();
        self.cursor = t.clamp(self.start, self.end() - 1);
    }

    /// Show `[a, b)` with a margin on each side and put the cursor at `a`.
    pub fn show(&mut self, a: u64, b: u64) {
        let len = b.saturating_sub(a).max(MIN_WIDTH_NS);
        self.width = len * 3;
        self.start = a.saturating_sub(len);
        self.cursor = a;
        self.clamp();
        self.cursor = a.clamp(self.start, self.end() - 1);
    }

    /// Jump to the trace start (window kept).
    pub fn home(&mut self) {
        self.start = self.lo;
        self.cursor = self.lo;
        self.clamp();
    }

    /// Jump to the trace end (window kept).
    pub fn end_of_trace(&mut self) {
        self.start = self.hi - self.width;
        self.cursor = self.hi - 1;
        self.clamp();
    }

    /// Whole trace.
    pub fn fit(&mut self) {
        self.start = self.lo;
        self.width = self.hi - self.lo;
        self.clamp();
    }

    /// Nanoseconds per column for `columns` columns (at least 1).
    pub fn ns_per_col(&self, columns: u16) -> u64 {
        (self.width / u64::from(columns.max(1))).max(1)
    }

    /// Time range of column `i` of `columns`: `[a, b)`, exact integer
    /// boundaries so that adjacent columns tile the window.
    pub fn col_range(&self, i: u16, columns: u16) -> (u64, u64) {
        let n = u128::from(columns.max(1));
        let w = u128::from(self.width);
        let a = self.start + (w * u128::from(i) / n) as u64;
        let b = self.start + (w * (u128::from(i) + 1) / n) as u64;
        (a, b.max(a + 1))
    }

    /// Column of time `t` (None when outside the window).
    pub fn col_of(&self, t: u64, columns: u16) -> Option<u16> {
        if t < self.start || t >= self.end() || columns == 0 {
            return None;
        }
        let c = u128::from(t - self.start) * u128::from(columns) / u128::from(self.width);
        Some(c as u16)
    }

    /// Zoom level: how many times the whole trace is wider than the window.
    pub fn zoom_level(&self) -> f64 {
        (self.hi - self.lo) as f64 / self.width as f64
    }
}

/// A duration for people: `1.50 ms`, `37 us`, `2.000 s`.
pub fn fmt_dur(ns: u64) -> String {
    let f = ns as f64;
    if ns >= 1_000_000_000 {
        format!("{:.3} s", f / 1e9)
    } else if ns >= 1_000_000 {
        format!("{:.3} ms", f / 1e6)
    } else if ns >= 1_000 {
        format!("{:.1} us", f / 1e3)
    } else {
        format!("{ns} ns")
    }
}

/// A time relative to the trace start, in seconds with enough decimals to
/// resolve a thousandth of `scale` (the window width, or 1000 x an axis
/// tick step): `0.01250s`.
pub fn fmt_rel(ns: u64, scale: u64) -> String {
    let s = ns as f64 / 1e9;
    let res = (scale as f64 / 1000.0).max(1.0);
    let dec = (9.0 - res.log10()).ceil().clamp(0.0, 9.0) as usize;
    format!("{s:.dec$}s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zoom_keeps_the_cursor_column() {
        let mut v = Viewport::new(0, 1_000_000);
        v.cursor = 250_000;
        v.zoom(0.5);
        assert_eq!(v.width, 500_000);
        assert_eq!(v.col_of(250_000, 100), Some(25));
        v.zoom(2.0);
        assert_eq!(v.width, 1_000_000);
        assert_eq!(v.start, 0);
    }

    #[test]
    fn pan_stops_at_the_trace_ends() {
        let mut v = Viewport::new(100, 1100);
        v.zoom(0.1);
        v.pan(-5.0);
        assert_eq!(v.start, 100);
        v.pan(50.0);
        assert_eq!(v.end(), 1100);
    }

    #[test]
    fn columns_tile_the_window() {
        let v = Viewport::new(0, 1000);
        let mut prev = 0;
        for i in 0..7 {
            let (a, b) = v.col_range(i, 7);
            assert_eq!(a, prev);
            prev = b;
        }
        assert_eq!(prev, 1000);
        assert_eq!(v.col_of(999, 7), Some(6));
        assert_eq!(v.col_of(1000, 7), None);
    }

    #[test]
    fn durations_have_units() {
        assert_eq!(fmt_dur(1_500_000), "1.500 ms");
        assert_eq!(fmt_dur(37_000), "37.0 us");
        assert_eq!(fmt_dur(12), "12 ns");
        assert_eq!(fmt_dur(2_000_000_000), "2.000 s");
        assert_eq!(fmt_rel(1_500_000, 50_000_000), "0.00150s");
        assert_eq!(fmt_rel(2_000_000_000, 10_000_000_000), "2.00s");
    }
}
