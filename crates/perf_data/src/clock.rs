//! perf's HEADER_CLOCK_DATA feature section (bit [`feature::CLOCK_DATA`],
//! 29): the wall-clock anchor that `perf record -k CLOCK` writes and that
//! `perf script -F tod` reads. Layout (perf's `write_clock_data`, file byte
//! order):
//!
//! ```text
//! u32 version      1
//! u32 clockid      the events' clock (1 = CLOCK_MONOTONIC)
//! u64 tod_ns       time of day, ns since the Unix epoch (UTC)
//! u64 clockid_ns   the events' clock at that same instant, ns
//! ```
//!
//! and HEADER_CLOCKID (bit [`feature::CLOCKID`], 23), written beside it:
//! one u64, the clock's resolution in ns (`clock_getres`).
//!
//! The one type for the section is [`WallClock`] (the trace model's).

#[cfg(doc)]
use crate::abi::feature;
pub use schedscope_trace::WallClock;

/// The layout version written.
pub const CLOCK_DATA_VERSION: u32 = 1;
/// Bytes of a version-1 section.
pub const CLOCK_DATA_SIZE: usize = 24;

/// Encode `w` as perf writes it.
pub fn encode_clock_data(w: &WallClock) -> Vec<u8> {
    let mut b = Vec::with_capacity(CLOCK_DATA_SIZE);
    b.extend_from_slice(&CLOCK_DATA_VERSION.to_ne_bytes());
    b.extend_from_slice(&w.clockid.to_ne_bytes());
    b.extend_from_slice(&w.tod_ns.to_ne_bytes());
    b.extend_from_slice(&w.clock_ns.to_ne_bytes());
    b
}

/// Decode the section; `None` when it is too short, its version is 0 or its
/// time of day is 0 (no anchor). Later versions may append fields: the
/// first 24 bytes keep their meaning, the rest is ignored.
pub fn decode_clock_data(b: &[u8]) -> Option<WallClock> {
    let u32_at = |i: usize| Some(u32::from_ne_bytes(b.get(i..i + 4)?.try_into().ok()?));
    let u64_at = |i: usize| Some(u64::from_ne_bytes(b.get(i..i + 8)?.try_into().ok()?));
    let version = u32_at(0)?;
    let w = WallClock {
        clockid: u32_at(4)?,
        tod_ns: u64_at(8)?,
        clock_ns: u64_at(16)?,
    };
    (version >= 1 && w.tod_ns > 0).then_some(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_data_round_trips_in_perfs_layout() {
        let w = WallClock {
            clockid: 1,
            tod_ns: 1_764_621_296_123_456_789,
            clock_ns: 20_652_000_000_001,
        };
        let b = encode_clock_data(&w);
        assert_eq!(b.len(), CLOCK_DATA_SIZE);
        assert_eq!(&b[0..4], &1u32.to_ne_bytes(), "version first");
        assert_eq!(&b[4..8], &1u32.to_ne_bytes(), "then the clockid");
        assert_eq!(&b[8..16], &w.tod_ns.to_ne_bytes(), "then the time of day");
        assert_eq!(decode_clock_data(&b), Some(w));
        // a later version's extra bytes are ignored
        let mut longer = b.clone();
        longer[0..4].copy_from_slice(&2u32.to_ne_bytes());
        longer.extend_from_slice(&[9; 8]);
        assert_eq!(decode_clock_data(&longer), Some(w));
    }

    #[test]
    fn clock_data_without_an_anchor_or_cut_short_is_none() {
        let w = WallClock {
            clockid: 1,
            tod_ns: 5,
            clock_ns: 7,
        };
        let b = encode_clock_data(&w);
        for n in 0..b.len() {
            assert_eq!(decode_clock_data(&b[..n]), None, "{n} bytes");
        }
        let mut v0 = b.clone();
        v0[0..4].copy_from_slice(&0u32.to_ne_bytes());
        assert_eq!(decode_clock_data(&v0), None, "version 0");
        let no_tod = encode_clock_data(&WallClock { tod_ns: 0, ..w });
        assert_eq!(decode_clock_data(&no_tod), None, "no time of day");
    }
}
