//! CFS bandwidth samples of cgroups (quota, period, throttling counters),
//! taken at start, every 100 ms and at the end, and stored in the perf.data
//! feature section at bit `abi::feature::SCHEDSCOPE_CGROUP_SAMPLES` (200),
//! which perf ignores.
//!
//! Section layout (native endian):
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

use crate::error::RecordError;
use std::fs;
use std::path::{Path, PathBuf};

/// Where a cgroup's files are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupDir {
    /// Path relative to the hierarchy root ("/a/b").
    pub path: String,
    /// Directory with cpu.stat (and cpu.cfs_* on v1 or cpu.max on v2).
    pub cpu_dir: PathBuf,
    /// v1 cpuacct directory with cpuacct.usage, when it exists.
    pub cpuacct_dir: Option<PathBuf>,
    /// cgroup v2 (unified) rather than v1.
    pub v2: bool,
}

/// One sample.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupSample {
    /// CLOCK_MONOTONIC ns.
    pub ts: u64,
    /// Quota in µs, -1 when unlimited.
    pub quota_us: i64,
    /// Period in µs.
    pub period_us: u64,
    /// Elapsed enforcement periods.
    pub nr_periods: u64,
    /// Periods in which the group was throttled.
    pub nr_throttled: u64,
    /// Total throttled time in ns.
    pub throttled_ns: u64,
    /// CPU time used in ns, u64::MAX when unknown.
    pub usage_ns: u64,
    /// cgroup path.
    pub path: String,
}

const V1_CPU: &str = "/sys/fs/cgroup/cpu";
const V1_CPUACCT: &str = "/sys/fs/cgroup/cpuacct";
const V2_ROOTS: &[&str] = &["/sys/fs/cgroup", "/sys/fs/cgroup/unified"];

fn v2_root() -> Option<&'static str> {
    V2_ROOTS
        .iter()
        .copied()
        .find(|r| Path::new(r).join("cgroup.controllers").is_file())
}

fn dir_for(path: &str, v2: bool) -> Option<CgroupDir> {
    let rel = path.trim_start_matches('/');
    if !v2 {
        let cpu = Path::new(V1_CPU).join(rel);
        if cpu.join("cpu.cfs_quota_us").is_file() {
            let acct = Path::new(V1_CPUACCT).join(rel);
            return Some(CgroupDir {
                path: format!("/{rel}"),
                cpu_dir: cpu,
                cpuacct_dir: acct.join("cpuacct.usage").is_file().then_some(acct),
                v2: false,
            });
        }
        return None;
    }
    let root = v2_root()?;
    let d = Path::new(root).join(rel);
    d.join("cpu.max").is_file().then(|| CgroupDir {
        path: format!("/{rel}"),
        cpu_dir: d,
        cpuacct_dir: None,
        v2: true,
    })
}

/// Resolve `--cgroup` paths (v1 cpu hierarchy first, then v2).
pub fn resolve(paths: &[String]) -> Result<Vec<CgroupDir>, RecordError> {
    paths
        .iter()
        .map(|p| {
            if p.split('/').any(|c| c == "..") {
                return Err(RecordError::BadOption {
                    option: "--cgroup".into(),
                    detail: format!("'{p}': '..' is not allowed in a cgroup path"),
                });
            }
            dir_for(p, false)
                .or_else(|| dir_for(p, true))
                .ok_or_else(|| RecordError::BadOption {
                    option: "--cgroup".into(),
                    detail: format!(
                        "'{p}' is neither {V1_CPU}/{0} (cgroup v1 cpu) nor a cgroup v2 directory with cpu.max",
                        p.trim_start_matches('/')
                    ),
                })
        })
        .collect()
}

/// Every cgroup that has a CFS quota set, on v1 `cpu` and on v2.
pub fn discover() -> Vec<CgroupDir> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::from(V1_CPU)];
    while let Some(d) = stack.pop() {
        if let Ok(q) = fs::read_to_string(d.join("cpu.cfs_quota_us")) {
            if q.trim().parse::<i64>().is_ok_and(|q| q >= 0) {
                if let Ok(rel) = d.strip_prefix(V1_CPU) {
                    if let Some(c) = dir_for(&rel.to_string_lossy(), false) {
                        out.push(c);
                    }
                }
            }
        }
        push_subdirs(&d, &mut stack);
    }
    if let Some(root) = v2_root() {
        let mut stack = vec![PathBuf::from(root)];
        while let Some(d) = stack.pop() {
            if let Ok(m) = fs::read_to_string(d.join("cpu.max")) {
                if m.split_whitespace().next().is_some_and(|q| q != "max") {
                    if let Ok(rel) = d.strip_prefix(root) {
                        if let Some(c) = dir_for(&rel.to_string_lossy(), true) {
                            out.push(c);
                        }
                    }
                }
            }
            push_subdirs(&d, &mut stack);
        }
    }
    out
}

fn push_subdirs(d: &Path, stack: &mut Vec<PathBuf>) {
    if let Ok(rd) = fs::read_dir(d) {
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(e.path());
            }
        }
    }
}

fn stat_field(stat: &str, key: &str) -> Option<u64> {
    stat.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

/// Read one sample; `None` when the cgroup vanished.
pub fn sample(dir: &CgroupDir, ts: u64) -> Option<CgroupSample> {
    let stat = fs::read_to_string(dir.cpu_dir.join("cpu.stat")).ok()?;
    let (quota_us, period_us, throttled_ns, usage_ns) = if dir.v2 {
        let max = fs::read_to_string(dir.cpu_dir.join("cpu.max")).ok()?;
        let mut it = max.split_whitespace();
        let quota = match it.next() {
            Some("max") | None => -1,
            Some(q) => q.parse().unwrap_or(-1),
        };
        let period = it.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        (
            quota,
            period,
            stat_field(&stat, "throttled_usec").map_or(0, |u| u.saturating_mul(1000)),
            stat_field(&stat, "usage_usec").map_or(u64::MAX, |u| u.saturating_mul(1000)),
        )
    } else {
        let read_num = |f: &str| -> Option<i64> {
            fs::read_to_string(dir.cpu_dir.join(f))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        let usage = dir
            .cpuacct_dir
            .as_ref()
            .and_then(|d| fs::read_to_string(d.join("cpuacct.usage")).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(u64::MAX);
        (
            read_num("cpu.cfs_quota_us")?,
            read_num("cpu.cfs_period_us")?.max(0) as u64,
            stat_field(&stat, "throttled_time").unwrap_or(0),
            usage,
        )
    };
    Some(CgroupSample {
        ts,
        quota_us,
        period_us,
        nr_periods: stat_field(&stat, "nr_periods").unwrap_or(0),
        nr_throttled: stat_field(&stat, "nr_throttled").unwrap_or(0),
        throttled_ns,
        usage_ns,
        path: dir.path.clone(),
    })
}

/// Encode samples in the section layout documented at the top of this module.
pub fn encode(samples: &[CgroupSample]) -> Vec<u8> {
    let mut b = Vec::with_capacity(8 + samples.len() * 80);
    b.extend_from_slice(&1u32.to_ne_bytes());
    b.extend_from_slice(&(samples.len() as u32).to_ne_bytes());
    for s in samples {
        let start = b.len();
        for v in [
            s.ts,
            s.quota_us as u64,
            s.period_us,
            s.nr_periods,
            s.nr_throttled,
            s.throttled_ns,
            s.usage_ns,
        ] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        b.extend_from_slice(&(s.path.len() as u32).to_ne_bytes());
        b.extend_from_slice(s.path.as_bytes());
        let len = b.len() - start;
        b.resize(start + len.div_ceil(8) * 8, 0);
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_matches_the_documented_layout() {
        let s = CgroupSample {
            ts: 5,
            quota_us: -1,
            period_us: 100_000,
            nr_periods: 3,
            nr_throttled: 2,
            throttled_ns: 7,
            usage_ns: u64::MAX,
            path: "/ab".into(),
        };
        let b = encode(&[s.clone(), s]);
        assert_eq!(u32::from_ne_bytes(b[0..4].try_into().unwrap()), 1);
        assert_eq!(u32::from_ne_bytes(b[4..8].try_into().unwrap()), 2);
        // 56 fixed + 4 len + 3 path = 63 -> 64.
        assert_eq!(b.len(), 8 + 2 * 64);
        assert_eq!(i64::from_ne_bytes(b[16..24].try_into().unwrap()), -1);
        assert_eq!(u32::from_ne_bytes(b[64..68].try_into().unwrap()), 3);
        assert_eq!(&b[68..71], b"/ab");
        assert_eq!(b[71], 0);
        assert_eq!(
            u64::from_ne_bytes(b[72..80].try_into().unwrap()),
            5,
            "second sample ts"
        );
    }

    #[test]
    fn cpu_stat_fields_parse() {
        let st = "nr_periods 12\nnr_throttled 4\nthrottled_time 99\n";
        assert_eq!(stat_field(st, "nr_throttled"), Some(4));
        assert_eq!(stat_field(st, "throttled_time"), Some(99));
        assert_eq!(stat_field(st, "usage_usec"), None);
    }
}
