//! CFS bandwidth samples of cgroups (quota, period, throttling counters),
//! taken at start, every 100 ms and at the end, and stored in the perf.data
//! feature section at bit `abi::feature::SCHEDSCOPE_CGROUP_SAMPLES` (200),
//! which perf ignores.
//!
//! Task cgroup membership (which CPU-controller cgroup each thread is in)
//! is read at record start and at record end from
//! `/proc/<pid>/task/<tid>/cgroup` (see [`cpu_cgroup_path`]) and stored at
//! bit `abi::feature::SCHEDSCOPE_TASK_CGROUPS` (201). Both section layouts,
//! their record types and codecs are in [`schedscope_perf_data::sections`].

use crate::error::RecordError;
use schedscope_perf_data::sections::{CgroupSample, TaskCgroup};
use schedscope_trace::Ts;
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
            stat_field(&stat, "usage_usec").map(|u| u.saturating_mul(1000)),
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
            .and_then(|s| s.trim().parse().ok());
        (
            read_num("cpu.cfs_quota_us")?,
            read_num("cpu.cfs_period_us")?.max(0) as u64,
            stat_field(&stat, "throttled_time").unwrap_or(0),
            usage,
        )
    };
    Some(CgroupSample {
        ts: Ts(ts),
        quota_us,
        period_us,
        nr_periods: stat_field(&stat, "nr_periods").unwrap_or(0),
        nr_throttled: stat_field(&stat, "nr_throttled").unwrap_or(0),
        throttled_ns,
        usage_ns,
        path: dir.path.clone(),
    })
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
    fn cpu_stat_fields_parse() {
        let st = "nr_periods 12\nnr_throttled 4\nthrottled_time 99\n";
        assert_eq!(stat_field(st, "nr_throttled"), Some(4));
        assert_eq!(stat_field(st, "throttled_time"), Some(99));
        assert_eq!(stat_field(st, "usage_usec"), None);
    }
}
