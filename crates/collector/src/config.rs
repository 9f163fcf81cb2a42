//! What to record and where ([`RecordConfig`]), and the per-CPU ring
//! sizing rules shared by the CLI (`--buffer-size`) and the recorder.

use crate::error::RecordError;
use crate::sys;
use std::path::PathBuf;
use std::time::Duration;

/// Largest default per-CPU ring: large enough that `perf bench sched
/// messaging -g 20 -l 1500` loses nothing on a 2-CPU machine.
pub const DEFAULT_BUFFER_BYTES: u64 = 16 << 20;
/// The default rings of all CPUs together stay under this (64 MiB), with
/// at least 1 MiB per CPU.
const DEFAULT_TOTAL_BUFFER_BYTES: u64 = 64 << 20;

/// Default per-CPU ring size for `nr_cpus` CPUs.
pub fn default_buffer_bytes(nr_cpus: usize) -> u64 {
    (DEFAULT_TOTAL_BUFFER_BYTES / nr_cpus.max(1) as u64).clamp(1 << 20, DEFAULT_BUFFER_BYTES)
}
/// What to record and where.
#[derive(Clone, Debug, Default)]
pub struct RecordConfig {
    /// Output file; an existing one is renamed to `<output>.old`.
    pub output: PathBuf,
    /// `-e` options as given (see [`crate::events::resolve_event_list`]).
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
    fn default_rings_shrink_with_many_cpus() {
        assert_eq!(default_buffer_bytes(2), 16 << 20);
        assert_eq!(default_buffer_bytes(16), 4 << 20);
        assert_eq!(default_buffer_bytes(256), 1 << 20);
    }
}
