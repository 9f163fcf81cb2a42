//! The one set of number formatters of every text view.
//!
//! An empty share (a percentage of nothing) prints `-` everywhere: "no
//! share" is not "0 %".

/// Nanoseconds as milliseconds with three decimals (`1.500`).
pub fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// Nanoseconds as microseconds with one decimal (`12.5`).
pub fn us(ns: u64) -> String {
    format!("{:.1}", ns as f64 / 1e3)
}

/// [`us`] of a value that may be missing (`-`).
pub fn us_opt(ns: Option<u64>) -> String {
    ns.map_or_else(|| "-".into(), us)
}

/// A timestamp in seconds with microsecond precision, as perf prints it.
pub fn secs(ns: u64) -> String {
    format!("{}.{:06}", ns / 1_000_000_000, (ns % 1_000_000_000) / 1000)
}

/// `part` as a percentage of `whole` with one decimal (`33.3`); `-` when
/// `whole` is 0.
pub fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".to_string()
    } else {
        format!("{:.1}", part as f64 * 100.0 / whole as f64)
    }
}

/// [`pct`] with a `%` sign (`33.3%`; still `-` when `whole` is 0), for
/// cells under a header without the unit.
pub fn pct_sign(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".to_string()
    } else {
        format!("{}%", pct(part, whole))
    }
}

/// A percentage that may be missing, with its sign (`12.5%`, `-`).
pub fn pct_opt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.1}%"))
}

/// A ratio (0..=1) as a percentage with one decimal (`0.25` -> `25.0`).
pub fn ratio_pct(r: f64) -> String {
    format!("{:.1}", r * 100.0)
}

/// A ratio (0..=1) as a whole percentage with its sign, for headlines
/// (`0.25` -> `25%`).
pub fn ratio_pct_whole(r: f64) -> String {
    format!("{:.0}%", r * 100.0)
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
    fn number_formats() {
        assert_eq!(ms(1_500_000), "1.500");
        assert_eq!(ms(999), "0.001");
        assert_eq!(us(12_549), "12.5");
        assert_eq!(us_opt(None), "-");
        assert_eq!(secs(490_615_274_123), "490.615274");
        assert_eq!(pct(1, 3), "33.3");
        assert_eq!(pct(1, 0), "-");
        assert_eq!(pct_sign(1, 4), "25.0%");
        assert_eq!(pct_sign(1, 0), "-");
        assert_eq!(ratio_pct(0.25), "25.0");
        assert_eq!(ratio_pct_whole(0.254), "25%");
        assert_eq!(count(1_400_000), "1.4M");
        assert_eq!(count(51_240), "51.2k");
        assert_eq!(count(950), "950");
    }
}
