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
//!
//! Task cgroup membership (which CPU-controller cgroup each thread is in) is
//! stored in the feature section at bit
//! `abi::feature::SCHEDSCOPE_TASK_CGROUPS` (201), also ignored by perf. It
//! holds one entry per thread alive at record start and one per thread alive
//! at record end, read from `/proc/<pid>/task/<tid>/cgroup` (see
//! [`cpu_cgroup_path`]). Layout (native endian):
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
//! Threads born and dead during the recording have no entry; the decoder
//! gives them their parent's cgroup through the fork events.

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

/// The cgroup a thread was in at `ts` (one entry of the bit-201 section).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskCgroup {
    /// Thread id.
    pub tid: i32,
    /// Thread-group id.
    pub pid: i32,
    /// CLOCK_MONOTONIC ns when it was read.
    pub ts: u64,
    /// CPU-controller cgroup path, e.g. `/L1/L2/C1`.
    pub path: String,
}

/// The CPU controller's cgroup path in the text of `/proc/<pid>/cgroup`:
/// on cgroup v1 the line whose controller list contains `cpu`
/// (`4:cpu,cpuacct:/L1/L2/C1`), otherwise the v2 line (`0::/path`).
/// `None` when neither is there.
pub fn cpu_cgroup_path(text: &str) -> Option<String> {
    let mut v2 = None;
    for line in text.lines() {
        let mut it = line.splitn(3, ':');
        let (Some(_id), Some(ctrls), Some(path)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        if ctrls.is_empty() {
            v2 = Some(path);
        } else if ctrls.split(',').any(|c| c == "cpu") {
            return Some(path.to_string());
        }
    }
    v2.map(str::to_string)
}

/// Read the CPU-controller cgroup of each thread `(pid, tid)`; threads that
/// exited meanwhile are skipped.
pub fn task_cgroups(threads: impl IntoIterator<Item = (u32, u32)>, ts: u64) -> Vec<TaskCgroup> {
    threads
        .into_iter()
        .filter_map(|(pid, tid)| {
            let text = fs::read_to_string(format!("/proc/{pid}/task/{tid}/cgroup")).ok()?;
            Some(TaskCgroup {
                tid: i32::try_from(tid).ok()?,
                pid: i32::try_from(pid).ok()?,
                ts,
                path: cpu_cgroup_path(&text)?,
            })
        })
        .collect()
}

/// Encode task cgroup entries in the bit-201 layout documented at the top of
/// this module.
pub fn encode_task_cgroups(entries: &[TaskCgroup]) -> Vec<u8> {
    let mut b = Vec::with_capacity(8 + entries.len() * 40);
    b.extend_from_slice(&1u32.to_ne_bytes());
    b.extend_from_slice(&(entries.len() as u32).to_ne_bytes());
    for e in entries {
        let start = b.len();
        b.extend_from_slice(&e.tid.to_ne_bytes());
        b.extend_from_slice(&e.pid.to_ne_bytes());
        b.extend_from_slice(&e.ts.to_ne_bytes());
        b.extend_from_slice(&(e.path.len() as u32).to_ne_bytes());
        b.extend_from_slice(e.path.as_bytes());
        let len = b.len() - start;
        b.resize(start + len.div_ceil(8) * 8, 0);
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_cgroup_lines_v1_and_v2() {
        let v1 = "12:pids:/user.slice\n5:cpu,cpuacct:/L1/L2/C1\n1:name=systemd:/x\n0::/x\n";
        assert_eq!(cpu_cgroup_path(v1).as_deref(), Some("/L1/L2/C1"));
        assert_eq!(
            cpu_cgroup_path("5:cpu:/x\n6:cpuacct:/y\n").as_deref(),
            Some("/x")
        );
        // cpuset is not cpu; without a v1 cpu line the v2 line counts.
        assert_eq!(
            cpu_cgroup_path("3:cpuset:/a\n0::/system.slice/b.service\n").as_deref(),
            Some("/system.slice/b.service")
        );
        assert_eq!(cpu_cgroup_path("0::/\n").as_deref(), Some("/"));
        assert_eq!(cpu_cgroup_path("3:cpuset:/a\n"), None);
        assert_eq!(cpu_cgroup_path("garbage"), None);
    }

    #[test]
    fn own_thread_cgroup_matches_proc_self() {
        let me = std::process::id();
        let got = task_cgroups([(me, me)], 9);
        let want = cpu_cgroup_path(&fs::read_to_string("/proc/self/cgroup").unwrap());
        assert_eq!(got.first().map(|e| e.path.clone()), want);
        assert_eq!(
            got.first().map(|e| (e.tid, e.ts)),
            want.map(|_| (me as i32, 9))
        );
    }

    #[test]
    fn task_cgroups_round_trip_through_the_writer_and_decoder() {
        use schedscope_parser::perf_data::{
            abi,
            writer::{AttrSpec, EventAttr, Features, PerfDataWriter},
        };
        let spec = AttrSpec {
            attr: EventAttr::tracepoint(300),
            name: "test:ev".into(),
            ids: vec![10],
        };
        let mut w = PerfDataWriter::new(std::io::Cursor::new(Vec::new()), vec![spec]).unwrap();
        // 100 (process) and 101 (its thread) alive at start; 102 a thread
        // of 100 created during the recording (PERF_RECORD_FORK, no entry).
        w.fork(100, 1, 100, 1, 0).unwrap();
        w.comm(100, 100, "burn", 0).unwrap();
        w.fork(100, 100, 101, 100, 0).unwrap();
        w.comm(100, 101, "burn", 0).unwrap();
        w.fork(100, 100, 102, 101, 500).unwrap();
        w.comm(100, 102, "burn", 500).unwrap();
        w.finished_round().unwrap();
        let entries = [
            TaskCgroup {
                tid: 100,
                pid: 100,
                ts: 1,
                path: "/L1/L2/C1".into(),
            },
            TaskCgroup {
                tid: 101,
                pid: 100,
                ts: 1,
                path: "/L1/L2/C1".into(),
            },
        ];
        let feats = Features {
            extra: vec![(
                abi::feature::SCHEDSCOPE_TASK_CGROUPS,
                encode_task_cgroups(&entries),
            )],
            ..Features::default()
        };
        let (cur, _) = w.finish(&feats).unwrap();
        let trace = schedscope_parser::perf_data::decode("rt", cur.get_ref()).unwrap();
        for tid in [100, 101, 102] {
            let t = trace
                .tasks
                .by_tid(schedscope_trace::Tid(tid))
                .unwrap_or_else(|| panic!("task {tid} decoded"));
            assert_eq!(t.cgroup.as_deref(), Some("/L1/L2/C1"), "tid {tid}");
        }
        assert!(
            !trace.warnings.iter().any(|w| w.message.contains("cgroup")),
            "{:?}",
            trace.warnings
        );
    }

    #[test]
    fn task_cgroup_encoding_matches_the_documented_layout() {
        let e = TaskCgroup {
            tid: 7,
            pid: -1,
            ts: 11,
            path: "/abcde".into(),
        };
        let b = encode_task_cgroups(&[e.clone(), e]);
        assert_eq!(u32::from_ne_bytes(b[0..4].try_into().unwrap()), 1);
        assert_eq!(u32::from_ne_bytes(b[4..8].try_into().unwrap()), 2);
        // 4 + 4 + 8 + 4 + 6 = 26 -> 32.
        assert_eq!(b.len(), 8 + 2 * 32);
        assert_eq!(i32::from_ne_bytes(b[8..12].try_into().unwrap()), 7);
        assert_eq!(i32::from_ne_bytes(b[12..16].try_into().unwrap()), -1);
        assert_eq!(u64::from_ne_bytes(b[16..24].try_into().unwrap()), 11);
        assert_eq!(u32::from_ne_bytes(b[24..28].try_into().unwrap()), 6);
        assert_eq!(&b[28..34], b"/abcde");
        assert_eq!(&b[34..40], &[0; 6]);
        assert_eq!(i32::from_ne_bytes(b[40..44].try_into().unwrap()), 7);
    }

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
