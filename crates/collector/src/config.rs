//! What to record and where ([`RecordConfig`]), and the per-CPU ring
//! sizing rules shared by the CLI (`--buffer-size`) and the recorder.

use crate::error::RecordError;
use crate::sys;
use std::path::PathBuf;
use std::time::Duration;

/// Peak rate, in bytes per second, at which one CPU's ring is assumed to
/// fill. Measured on a 2-CPU VM under `perf bench sched messaging -g 20
/// -l 3000` with the default events: 181.6 MB in 35.7 s, 2.5 MB/s per CPU
/// on average, and the fullest a ring was when drained was 7.9 MB (47% of
/// 16 MiB, the recorder's "fullest ring" figure): bursts and drain delays
/// under that load stay within 8 MiB a second. `schedscope demo`: 7%.
pub const PEAK_BYTES_PER_CPU_SEC: u64 = 8 << 20;
/// How long the recorder may take to come back to a ring: its poll wait is
/// bounded by one second (`record.rs`), scheduling delays come on top and
/// are what the second half of the ring is for.
pub const DRAIN_BUDGET_MS: u64 = 1000;
/// Largest default per-CPU ring. The kernel wakes the recorder when a ring
/// is half full (the wakeup watermark), so the half above the watermark
/// holds a drain budget's worth at the peak rate, and the half below it is
/// the slack for the time it takes to be scheduled and drain: 2 x 8 MiB/s
/// x 1 s = 16 MiB.
pub const DEFAULT_BUFFER_BYTES: u64 = 2 * PEAK_BYTES_PER_CPU_SEC * DRAIN_BUDGET_MS / 1000;
/// The default rings of all CPUs together stay under this (64 MiB of
/// locked memory), with at least 1 MiB per CPU: with many CPUs each one
/// sees a smaller share of a workload's events, and one thread drains them all.
const DEFAULT_TOTAL_BUFFER_BYTES: u64 = 64 << 20;

/// Default per-CPU ring size for `nr_cpus` CPUs: [`DEFAULT_BUFFER_BYTES`],
/// less when `nr_cpus` of them would exceed 64 MiB in total (never below
/// 1 MiB).
pub fn default_buffer_bytes(nr_cpus: usize) -> u64 {
    (DEFAULT_TOTAL_BUFFER_BYTES / nr_cpus.max(1) as u64).clamp(1 << 20, DEFAULT_BUFFER_BYTES)
}
/// What to record and where.
#[derive(Clone, Debug, Default)]
pub struct RecordConfig {
    /// Output file; an existing one is renamed to `<output>.old`.
    pub output: PathBuf,
    /// `-e` options as given: names, comma lists, globs, `+` additions
    /// (see [`crate::events::resolve_event_list`]).
    pub events: Vec<String>,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Per-CPU ring size in bytes (rounded up to a power-of-two number of pages).
    pub buffer_bytes: Option<u64>,
    /// Kernel+user call chains on IPI/TLB events.
    pub call_graph: bool,
    /// cpu-clock sampling profile at this frequency, with call chains.
    pub profile_hz: Option<u64>,
    /// cgroups to sample; empty = every cgroup with a CFS quota.
    pub cgroups: Vec<String>,
    /// Command to run while recording (empty = record until stopped).
    pub command: Vec<String>,
    /// Command line stored in the file (HEADER_CMDLINE).
    pub cmdline: Vec<String>,
}

/// Parse `--buffer-size`: `4M`, `512K`, `1G`, or a plain number of pages.
pub fn parse_buffer_size(s: &str) -> Result<u64, RecordError> {
    let bad = |d: &str| RecordError::BadOption {
        option: "--buffer-size".into(),
        detail: format!("'{s}': {d}"),
    };
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m = match c.to_ascii_uppercase() {
                'K' => 1u64 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                _ => return Err(bad("unit must be K, M or G")),
            };
            (&t[..i], m)
        }
        _ => (t, sys::page_size() as u64),
    };
    let n: u64 = num
        .trim()
        .parse()
        .map_err(|_| bad("expected a number of pages or a size like 4M"))?;
    let bytes = n
        .checked_mul(mult)
        .filter(|b| (1..=(1 << 32)).contains(b))
        .ok_or_else(|| bad("size must be between one page and 4G"))?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_sizes_parse_as_bytes_or_pages() {
        let page = sys::page_size() as u64;
        assert_eq!(parse_buffer_size("4M").unwrap(), 4 << 20);
        assert_eq!(parse_buffer_size("512k").unwrap(), 512 << 10);
        assert_eq!(parse_buffer_size("1024").unwrap(), 1024 * page);
        let e = parse_buffer_size("12X").unwrap_err().to_string();
        assert!(e.contains("--buffer-size") && e.contains("12X"), "{e}");
        assert!(parse_buffer_size("0").is_err());
    }

    #[test]
    fn default_ring_holds_two_drain_budgets_at_the_peak_rate() {
        // 2 x 8 MiB/s x 1 s, a power of two number of pages as mapped.
        assert_eq!(DEFAULT_BUFFER_BYTES, 16 << 20);
        let page = sys::page_size() as u64;
        let mapped = crate::open::ring_pages(default_buffer_bytes(2)) as u64 * page;
        assert_eq!(mapped, 16 << 20);
        // The watermark (half) is reached after a drain budget at the peak
        // rate, and the other half is as large again.
        let half = crate::open::wakeup_watermark(mapped as usize) as u64;
        assert_eq!(half, PEAK_BYTES_PER_CPU_SEC * DRAIN_BUDGET_MS / 1000);
        assert_eq!(mapped - half, half);
    }

    #[test]
    fn default_rings_shrink_with_many_cpus() {
        assert_eq!(default_buffer_bytes(2), 16 << 20);
        assert_eq!(default_buffer_bytes(16), 4 << 20);
        assert_eq!(default_buffer_bytes(256), 1 << 20);
    }
}
