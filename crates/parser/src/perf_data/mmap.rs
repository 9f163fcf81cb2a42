//! PERF_RECORD_MMAP / PERF_RECORD_MMAP2 bodies as [`Mapping`]s: which file
//! backs which address range of which process, so that user addresses can
//! be symbolized after the process exited (the way `perf script` does).
//!
//! Layouts (include/uapi/linux/perf_event.h), after the 8-byte header:
//!
//! * MMAP:  `u32 pid, tid; u64 addr, len, pgoff; char filename[]`
//! * MMAP2: `u32 pid, tid; u64 addr, len, pgoff;` then either
//!   `u32 maj, min; u64 ino, ino_generation` or (with
//!   `PERF_RECORD_MISC_MMAP_BUILD_ID`) `u8 build_id_size, reserved[3],
//!   build_id[20]` (24 bytes either way), `u32 prot, flags; char filename[]`
//!
//! The filename is NUL-padded to 8 bytes and may be followed by a
//! sample_id_all trailer, whose time the caller passes in.

use super::bytes::{u32_at, u64_at, until_nul};
use schedscope_trace::{Mapping, Tid, Ts};

/// Offset of the filename in an MMAP body.
const MMAP_FILENAME: usize = 32;
/// Offset of the filename in an MMAP2 body.
const MMAP2_FILENAME: usize = 64;

/// The mapping described by an MMAP (`mmap2 == false`) or MMAP2 record
/// body; `None` when the body is too short for its fixed fields.
pub(crate) fn parse(mmap2: bool, body: &[u8], ts: u64) -> Option<Mapping> {
    let pid = u32_at(body, 0)?;
    let start = u64_at(body, 8)?;
    let len = u64_at(body, 16)?;
    let pgoff = u64_at(body, 24)?;
    let at = if mmap2 { MMAP2_FILENAME } else { MMAP_FILENAME };
    let name = until_nul(body.get(at..)?);
    Some(Mapping {
        ts: Ts(ts),
        pid: Tid(pid as i32),
        start,
        len,
        pgoff,
        filename: String::from_utf8_lossy(name).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(mmap2: bool, pid: u32, addr: u64, len: u64, pgoff: u64, name: &str) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&pid.to_le_bytes());
        b.extend_from_slice(&(pid + 1).to_le_bytes());
        for v in [addr, len, pgoff] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        if mmap2 {
            b.extend_from_slice(&[0xab; 24]); // maj/min/ino/gen or build id
            b.extend_from_slice(&5u32.to_le_bytes()); // PROT_READ|PROT_EXEC
            b.extend_from_slice(&2u32.to_le_bytes()); // MAP_PRIVATE
        }
        b.extend_from_slice(name.as_bytes());
        // NUL-pad to 8 (at least one NUL), then a sample_id_all trailer
        b.push(0);
        while b.len() % 8 != 0 {
            b.push(0);
        }
        b.extend_from_slice(&77u64.to_le_bytes());
        b
    }

    #[test]
    fn mmap_and_mmap2_fields() {
        for mmap2 in [false, true] {
            let b = body(
                mmap2,
                4242,
                0x7f00_0000_1000,
                0x2000,
                0x1000,
                "/usr/lib/libc.so.6",
            );
            let m = parse(mmap2, &b, 99).unwrap();
            assert_eq!(m.pid, Tid(4242));
            assert_eq!(
                (m.start, m.len, m.pgoff),
                (0x7f00_0000_1000, 0x2000, 0x1000)
            );
            assert_eq!(m.filename, "/usr/lib/libc.so.6", "mmap2={mmap2}");
            assert_eq!(m.ts, Ts(99));
        }
    }

    #[test]
    fn short_bodies_are_rejected_not_read_past() {
        let b = body(true, 1, 2, 3, 4, "x");
        assert!(parse(true, &b[..40], 0).is_none());
        assert!(parse(false, &b[..31], 0).is_none());
        // a filename without a NUL stops at the end of the body
        let m = parse(false, &b[..34], 0).unwrap();
        assert_eq!(m.filename.chars().count(), 2);
    }
}
