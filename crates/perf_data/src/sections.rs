//! schedscope's own feature sections, at feature bits perf does not know
//! (perf skips them): one Rust type per record, with its encoder (used by
//! the collector) and its decoder (used by the parser) side by side.
//!
//! **Cgroup samples**, bit [`feature::SCHEDSCOPE_CGROUP_SAMPLES`] (200): CFS
//! bandwidth counters of cgroups, one [`CgroupSample`] per cgroup and
//! sampling instant. Layout (little endian):
//!
//! ```text
//! u32 version = 1
//! u32 count
//! count times:
//!   u64 ts            CLOCK_MONOTONIC ns (the clock the events use)
//!   i64 quota_us      -1 = no limit
//!   u64 period_us
//!   u64 nr_periods
//!   u64 nr_throttled
//!   u64 throttled_ns
//!   u64 usage_ns      u64::MAX = unknown
//!   u32 path_len
//!   path bytes        cgroup path relative to its hierarchy root, e.g. "/batch"
//!   zero padding so that the sample's length is a multiple of 8
//! ```
//!
//! **Task cgroups**, bit [`feature::SCHEDSCOPE_TASK_CGROUPS`] (201): which
//! CPU-controller cgroup each thread is in, one [`TaskCgroup`] per thread
//! alive at record start and one per thread alive at record end. Layout
//! (little endian):
//!
//! ```text
//! u32 version = 1
//! u32 count
//! count times:
//!   i32 tid
//!   i32 pid           thread-group id
//!   u64 ts            CLOCK_MONOTONIC ns when the entry was read
//!   u32 path_len
//!   path bytes        e.g. "/L1/L2/C1" (relative to the hierarchy root)
//!   zero padding so that the entry's length is a multiple of 8
//! ```
//!
//! Threads born and dead during the recording have no entry; the decoder of
//! the trace gives them their parent's cgroup through the fork events.

#[cfg(doc)]
use crate::abi::feature;
pub use schedscope_trace::CgroupSample;
use schedscope_trace::Ts;
use std::fmt;

/// The only section layout version written and read.
const VERSION: u32 = 1;
/// Fixed part of an encoded cgroup sample (seven u64 and the path length).
const SAMPLE_FIXED: usize = 7 * 8 + 4;
/// Fixed part of an encoded task-cgroup entry.
const TASK_FIXED: usize = 4 + 4 + 8 + 4;

/// The cgroup a thread was in at `ts` (one entry of the task-cgroup section).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskCgroup {
    /// Thread id.
    pub tid: i32,
    /// Thread-group id.
    pub pid: i32,
    /// CLOCK_MONOTONIC ns when it was read (the events' clock).
    pub ts: u64,
    /// CPU-controller cgroup path, e.g. `/L1/L2/C1`.
    pub path: String,
}

/// A damaged or unsupported section: which one, where, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SectionError {
    /// Section name (`cgroup`, `task-cgroup`, perf's `HEADER_CPU_TOPOLOGY`).
    pub section: &'static str,
    /// File offset of the section.
    pub base: u64,
    /// File offset of the problem.
    pub offset: u64,
    /// What is wrong (`truncated sample`, `unsupported version 2`).
    pub what: String,
}

impl fmt::Display for SectionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // perf's own sections are named HEADER_*
        let owner = if self.section.starts_with("HEADER_") {
            "perf"
        } else {
            "schedscope"
        };
        write!(
            f,
            "{owner} {} section (byte offset {}): {} at byte offset {}",
            self.section, self.base, self.what, self.offset
        )
    }
}

impl std::error::Error for SectionError {}

/// Encode cgroup samples in the bit-200 layout.
pub fn encode_cgroup_samples(samples: &[CgroupSample]) -> Vec<u8> {
    let mut b = Vec::with_capacity(8 + samples.len() * 80);
    put_header(&mut b, samples.len());
    for s in samples {
        let start = b.len();
        for v in [
            s.ts.0,
            s.quota_us as u64,
            s.period_us,
            s.nr_periods,
            s.nr_throttled,
            s.throttled_ns,
            s.usage_ns.unwrap_or(u64::MAX),
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        put_path(&mut b, start, &s.path);
    }
    b
}

/// Decode the bit-200 section; `base` is its file offset, for messages.
pub fn decode_cgroup_samples(b: &[u8], base: u64) -> Result<Vec<CgroupSample>, SectionError> {
    let mut r = Reader::open(b, base, "cgroup")?;
    let mut out = Vec::with_capacity(r.count.min(r.remaining() / SAMPLE_FIXED));
    for _ in 0..r.count {
        let rec = (|| {
            let ts = r.u64()?;
            let quota_us = r.u64()? as i64;
            let period_us = r.u64()?;
            let nr_periods = r.u64()?;
            let nr_throttled = r.u64()?;
            let throttled_ns = r.u64()?;
            let usage = r.u64()?;
            let path = r.path(SAMPLE_FIXED)?;
            Some(CgroupSample {
                ts: Ts(ts),
                path,
                quota_us,
                period_us,
                nr_periods,
                nr_throttled,
                throttled_ns,
                usage_ns: (usage != u64::MAX).then_some(usage),
            })
        })();
        out.push(rec.ok_or_else(|| r.error("truncated sample"))?);
    }
    Ok(out)
}

/// Encode task-cgroup entries in the bit-201 layout.
pub fn encode_task_cgroups(entries: &[TaskCgroup]) -> Vec<u8> {
    let mut b = Vec::with_capacity(8 + entries.len() * 40);
    put_header(&mut b, entries.len());
    for e in entries {
        let start = b.len();
        b.extend_from_slice(&e.tid.to_le_bytes());
        b.extend_from_slice(&e.pid.to_le_bytes());
        b.extend_from_slice(&e.ts.to_le_bytes());
        put_path(&mut b, start, &e.path);
    }
    b
}

/// Decode the bit-201 section; `base` is its file offset, for messages.
pub fn decode_task_cgroups(b: &[u8], base: u64) -> Result<Vec<TaskCgroup>, SectionError> {
    let mut r = Reader::open(b, base, "task-cgroup")?;
    let mut out = Vec::with_capacity(r.count.min(r.remaining() / TASK_FIXED));
    for _ in 0..r.count {
        let rec = (|| {
            let tid = r.u32()? as i32;
            let pid = r.u32()? as i32;
            let ts = r.u64()?;
            let path = r.path(TASK_FIXED)?;
            Some(TaskCgroup { tid, pid, ts, path })
        })();
        out.push(rec.ok_or_else(|| r.error("truncated entry"))?);
    }
    Ok(out)
}

fn put_header(b: &mut Vec<u8>, count: usize) {
    b.extend_from_slice(&VERSION.to_le_bytes());
    b.extend_from_slice(&(count.min(u32::MAX as usize) as u32).to_le_bytes());
}

/// Append the length-prefixed path and pad the record that began at
/// `start` to a multiple of 8 bytes.
fn put_path(b: &mut Vec<u8>, start: usize, path: &str) {
    b.extend_from_slice(&(path.len() as u32).to_le_bytes());
    b.extend_from_slice(path.as_bytes());
    let len = b.len() - start;
    b.resize(start + len.div_ceil(8) * 8, 0);
}

/// Bounds-checked little-endian reads over one section.
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
    base: u64,
    section: &'static str,
    count: usize,
}

impl<'a> Reader<'a> {
    /// Check the version and read the record count.
    fn open(b: &'a [u8], base: u64, section: &'static str) -> Result<Self, SectionError> {
        let mut r = Reader {
            b,
            pos: 0,
            base,
            section,
            count: 0,
        };
        let version = r.u32().ok_or_else(|| r.error("truncated version"))?;
        if version != VERSION {
            r.pos = 0;
            return Err(r.error(&format!("unsupported version {version}")));
        }
        r.count = r.u32().ok_or_else(|| r.error("truncated count"))? as usize;
        Ok(r)
    }

    fn error(&self, what: &str) -> SectionError {
        SectionError {
            section: self.section,
            base: self.base,
            offset: self.base + self.pos as u64,
            what: what.to_string(),
        }
    }

    fn remaining(&self) -> usize {
        self.b.len().saturating_sub(self.pos)
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }

    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .and_then(|s| s.try_into().ok())
            .map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> Option<u64> {
        self.take(8)
            .and_then(|s| s.try_into().ok())
            .map(u64::from_le_bytes)
    }

    /// The length-prefixed path that ends a record whose fixed part (path
    /// length included) is `fixed` bytes, and the record's padding.
    fn path(&mut self, fixed: usize) -> Option<String> {
        let len = self.u32()? as usize;
        let bytes = self.take(len)?;
        let consumed = fixed + len;
        self.take((8 - consumed % 8) % 8)?;
        let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
        Some(String::from_utf8_lossy(&bytes[..end]).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(ts: u64, path: &str, usage: Option<u64>) -> CgroupSample {
        CgroupSample {
            ts: Ts(ts),
            path: path.into(),
            quota_us: -1,
            period_us: 100_000,
            nr_periods: 3,
            nr_throttled: 2,
            throttled_ns: 7,
            usage_ns: usage,
        }
    }

    fn task(tid: i32, pid: i32, ts: u64, path: &str) -> TaskCgroup {
        TaskCgroup {
            tid,
            pid,
            ts,
            path: path.into(),
        }
    }

    fn u32_at(b: &[u8], off: usize) -> u32 {
        u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
    }

    fn u64_at(b: &[u8], off: usize) -> u64 {
        u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
    }

    #[test]
    fn cgroup_samples_round_trip() {
        let s = vec![
            sample(5, "/ab", None),
            sample(9, "/L1/L2/C1", Some(1234)),
            sample(10, "", Some(0)),
        ];
        assert_eq!(
            decode_cgroup_samples(&encode_cgroup_samples(&s), 0).unwrap(),
            s
        );
        assert_eq!(
            decode_cgroup_samples(&encode_cgroup_samples(&[]), 0),
            Ok(vec![])
        );
    }

    #[test]
    fn task_cgroups_round_trip() {
        let e = vec![task(5, 5, 10, "/L1/L2/C1"), task(6, -1, 99, "/")];
        assert_eq!(decode_task_cgroups(&encode_task_cgroups(&e), 0).unwrap(), e);
    }

    #[test]
    fn cgroup_sample_encoding_matches_the_documented_layout() {
        let b = encode_cgroup_samples(&[sample(5, "/ab", None), sample(6, "/ab", None)]);
        assert_eq!(u32_at(&b, 0), 1);
        assert_eq!(u32_at(&b, 4), 2);
        // 56 fixed + 4 len + 3 path = 63 -> 64.
        assert_eq!(b.len(), 8 + 2 * 64);
        assert_eq!(u64_at(&b, 8), 5);
        assert_eq!(u64_at(&b, 16) as i64, -1);
        assert_eq!(u64_at(&b, 56), u64::MAX, "unknown usage");
        assert_eq!(u32_at(&b, 64), 3);
        assert_eq!(&b[68..71], b"/ab");
        assert_eq!(b[71], 0);
        assert_eq!(u64_at(&b, 72), 6, "second sample ts");
    }

    #[test]
    fn task_cgroup_encoding_matches_the_documented_layout() {
        let e = task(7, -1, 11, "/abcde");
        let b = encode_task_cgroups(&[e.clone(), e]);
        assert_eq!(u32_at(&b, 0), 1);
        assert_eq!(u32_at(&b, 4), 2);
        // 4 + 4 + 8 + 4 + 6 = 26 -> 32.
        assert_eq!(b.len(), 8 + 2 * 32);
        assert_eq!(u32_at(&b, 8) as i32, 7);
        assert_eq!(u32_at(&b, 12) as i32, -1);
        assert_eq!(u64_at(&b, 16), 11);
        assert_eq!(u32_at(&b, 24), 6);
        assert_eq!(&b[28..34], b"/abcde");
        assert_eq!(&b[34..40], &[0; 6]);
        assert_eq!(u32_at(&b, 40) as i32, 7);
    }

    #[test]
    fn damage_is_an_error_that_names_section_and_offsets() {
        let b = encode_task_cgroups(&[task(5, 5, 10, "/L1/L2/C1"), task(6, 5, 99, "/")]);
        let e = decode_task_cgroups(&b[..b.len() - 3], 4096).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("task-cgroup") && msg.contains("byte offset 4096"),
            "{msg}"
        );
        assert_eq!(e.what, "truncated entry");
        assert_eq!(
            e.offset,
            4096 + 8 + 32 + 21,
            "stops at the second entry's padding"
        );
        let mut v2 = b.clone();
        v2[0] = 2;
        assert_eq!(
            decode_task_cgroups(&v2, 0).unwrap_err().what,
            "unsupported version 2"
        );
        let c = encode_cgroup_samples(&[sample(5, "/ab", None)]);
        let e = decode_cgroup_samples(&c[..20], 100).unwrap_err();
        assert_eq!((e.section, e.what.as_str()), ("cgroup", "truncated sample"));
        assert_eq!(
            decode_cgroup_samples(&c[..3], 0).unwrap_err().what,
            "truncated version"
        );
        // A count larger than the bytes does not allocate for it.
        let mut huge = encode_cgroup_samples(&[]);
        huge[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            decode_cgroup_samples(&huge, 0).unwrap_err().what,
            "truncated sample"
        );
    }
}
