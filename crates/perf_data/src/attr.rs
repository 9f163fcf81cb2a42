//! `struct perf_event_attr`: the fields schedscope sets, and their exact
//! 128-byte ABI layout (what perf_event_open reads and what a perf.data
//! file stores per event).

use crate::abi;

/// Size of the perf_event_attr we write (PERF_ATTR_SIZE_VER7; perf 6.1
/// refuses larger attrs).
pub const ATTR_SIZE: usize = 128;
/// Size of a `struct perf_file_attr` (attr + ids section).
pub const FILE_ATTR_SIZE: usize = ATTR_SIZE + 16;

/// perf_event_attr flag bits (the bitfield word at offset 40).
#[allow(missing_docs)]
pub mod attr_flag {
    pub const DISABLED: u64 = 1 << 0;
    pub const INHERIT: u64 = 1 << 1;
    pub const EXCLUDE_HV: u64 = 1 << 6;
    pub const MMAP: u64 = 1 << 8;
    pub const COMM: u64 = 1 << 9;
    pub const FREQ: u64 = 1 << 10;
    pub const TASK: u64 = 1 << 13;
    pub const WATERMARK: u64 = 1 << 14;
    pub const SAMPLE_ID_ALL: u64 = 1 << 18;
    pub const EXCLUDE_CALLCHAIN_USER: u64 = 1 << 22;
    pub const MMAP2: u64 = 1 << 23;
    pub const COMM_EXEC: u64 = 1 << 24;
    pub const USE_CLOCKID: u64 = 1 << 25;
}

/// The fields of `struct perf_event_attr` that schedscope uses; the rest are
/// written as zero. [`EventAttr::to_bytes`] gives the exact 128-byte ABI
/// layout, which is what the collector passes to perf_event_open and what
/// the file stores.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventAttr {
    /// PERF_TYPE_* (`abi::attr_type`).
    pub kind: u32,
    /// Event config (the tracepoint id for PERF_TYPE_TRACEPOINT).
    pub config: u64,
    /// Sample period, or frequency when `attr_flag::FREQ` is set.
    pub sample_period: u64,
    /// PERF_SAMPLE_* bits (`abi::sample`).
    pub sample_type: u64,
    /// PERF_FORMAT_* bits (`abi::read_format`).
    pub read_format: u64,
    /// Flag bitfield (`attr_flag`).
    pub flags: u64,
    /// wakeup_events, or wakeup_watermark (bytes) when `attr_flag::WATERMARK` is set.
    pub wakeup: u32,
    /// Clock id used when `attr_flag::USE_CLOCKID` is set.
    pub clockid: i32,
    /// Maximum call-chain depth (0 = kernel default).
    pub sample_max_stack: u16,
}

impl EventAttr {
    /// A tracepoint sampled on every hit, as `perf record -e sys:event` does:
    /// IP, TID, TIME, CPU, PERIOD, RAW and IDENTIFIER, sample_id_all set.
    pub fn tracepoint(id: u64) -> EventAttr {
        EventAttr {
            kind: abi::attr_type::TRACEPOINT,
            config: id,
            sample_period: 1,
            sample_type: abi::sample::IDENTIFIER
                | abi::sample::IP
                | abi::sample::TID
                | abi::sample::TIME
                | abi::sample::CPU
                | abi::sample::PERIOD
                | abi::sample::RAW,
            read_format: 0,
            flags: attr_flag::SAMPLE_ID_ALL | attr_flag::DISABLED,
            wakeup: 1,
            clockid: 0,
            sample_max_stack: 0,
        }
    }

    /// The ABI bytes (native endian, `size` = [`ATTR_SIZE`]).
    pub fn to_bytes(&self) -> [u8; ATTR_SIZE] {
        let mut b = [0u8; ATTR_SIZE];
        b[0..4].copy_from_slice(&self.kind.to_ne_bytes());
        b[4..8].copy_from_slice(&(ATTR_SIZE as u32).to_ne_bytes());
        b[8..16].copy_from_slice(&self.config.to_ne_bytes());
        b[16..24].copy_from_slice(&self.sample_period.to_ne_bytes());
        b[24..32].copy_from_slice(&self.sample_type.to_ne_bytes());
        b[32..40].copy_from_slice(&self.read_format.to_ne_bytes());
        b[40..48].copy_from_slice(&self.flags.to_ne_bytes());
        b[48..52].copy_from_slice(&self.wakeup.to_ne_bytes());
        b[92..96].copy_from_slice(&self.clockid.to_ne_bytes());
        b[108..110].copy_from_slice(&self.sample_max_stack.to_ne_bytes());
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u64_at(b: &[u8], off: usize) -> u64 {
        u64::from_ne_bytes(b[off..off + 8].try_into().unwrap())
    }

    #[test]
    fn attr_bytes_match_the_abi_offsets() {
        let mut a = EventAttr::tracepoint(316);
        a.clockid = 1;
        a.wakeup = 4096;
        let b = a.to_bytes();
        assert_eq!(u32::from_ne_bytes(b[4..8].try_into().unwrap()), 128);
        assert_eq!(u64_at(&b, 8), 316);
        assert_eq!(
            u64_at(&b, 24) & abi::sample::IDENTIFIER,
            abi::sample::IDENTIFIER
        );
        assert_eq!(
            u64_at(&b, 40) & abi::ATTR_FLAG_SAMPLE_ID_ALL,
            abi::ATTR_FLAG_SAMPLE_ID_ALL
        );
        assert_eq!(u32::from_ne_bytes(b[48..52].try_into().unwrap()), 4096);
        assert_eq!(i32::from_ne_bytes(b[92..96].try_into().unwrap()), 1);
    }
}
