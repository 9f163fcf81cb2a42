//! Throttled periods from the trace's recorded cgroup `cpu.stat` samples
//! ([`schedscope_trace::CgroupSample`], written by `schedscope record`
//! every 100 ms for each cgroup with a CFS quota).
//!
//! Definition (the one idle's recorded attribution uses, see
//! [`crate::idle::Attribution`]): a cgroup was throttled in the interval
//! between two consecutive samples of it when its `nr_throttled` grew
//! there. Each such interval is one [`ThrottlePeriod`] with what grew in it
//! (`nr_throttled`, `throttled_time`, `nr_periods`). Samples of cgroups
//! without a quota (`quota_us <= 0`) are left out, as idle does. The
//! periods are as coarse as the samples: the kernel does not say when
//! within the interval the cgroup sat throttled, only how long in total.
//!
//! Member tasks (the threads a throttle stops), as idle maps them: by
//! recorded membership when the trace has it ([`Task::cgroup`]: a task
//! belongs to its cgroup and every sampled ancestor; the latest
//! incarnation of a tid decides), else by name (comm equal to the last
//! path component, the stopgap for files without membership), else none
//! ([`CgroupMapping::None`]).
//!
//! Only computation here; the TUI draws the periods as an overlay.

use schedscope_trace::{CgroupSample, Task, Tid, Trace};
use serde::Serialize;
use std::collections::HashMap;

/// How tasks were mapped to the sampled cgroups (JSON `cgroup_mapping`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CgroupMapping {
    /// By each task's recorded cgroup membership
    /// ([`schedscope_trace::Task::cgroup`]; `schedscope record` stores it):
    /// a task belongs to its cgroup and every sampled ancestor.
    Membership,
    /// By name: a task belongs to the sampled cgroup whose last path
    /// component equals its comm (files without membership data).
    Name,
    /// No mapping: no samples, or no task maps to a sampled cgroup
    /// (attribution is then inferred).
    #[default]
    None,
}

/// One sampled cgroup with a quota.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThrottledCgroup {
    /// cgroup path relative to the controller root, e.g. `/L1/L2/C1`.
    pub path: String,
    /// cfs_quota_us of its latest sample.
    pub quota_us: i64,
    /// cfs_period_us of its latest sample.
    pub period_us: u64,
    /// Number of samples.
    pub samples: usize,
    /// Its member tasks (tids, sorted), see the module docs; empty when
    /// no task maps to it.
    pub members: Vec<Tid>,
}

/// A sample interval in which a cgroup's `nr_throttled` grew.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ThrottlePeriod {
    /// Index into [`Throttling::cgroups`].
    pub cgroup: usize,
    /// The earlier sample's time (ns, trace clock).
    pub start_ns: u64,
    /// The later sample's time.
    pub end_ns: u64,
    /// Growth of `nr_throttled` (times the cgroup was throttled).
    pub nr_throttled: u64,
    /// Growth of `throttled_time` (ns the cgroup spent throttled).
    pub throttled_ns: u64,
    /// Growth of `nr_periods` (bandwidth periods that elapsed with the
    /// cgroup runnable).
    pub nr_periods: u64,
}

/// The throttled periods of a trace.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Throttling {
    /// How member tasks were found.
    pub mapping: CgroupMapping,
    /// Sampled cgroups with a quota, in order of first sample.
    pub cgroups: Vec<ThrottledCgroup>,
    /// Every throttled period, sorted by start (then cgroup).
    pub periods: Vec<ThrottlePeriod>,
}

/// Whether cgroup `cg` is `root` or below it (a throttled parent throttles
/// its children).
pub fn within(cg: &str, root: &str) -> bool {
    let root = root.trim_end_matches('/');
    root.is_empty()
        || cg == root
        || cg
            .strip_prefix(root)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Per sampled cgroup, its member tids (see the module docs), and how they
/// were found.
pub fn members(trace: &Trace, paths: &[&str]) -> (CgroupMapping, Vec<Vec<Tid>>) {
    let mut out: Vec<Vec<Tid>> = vec![Vec::new(); paths.len()];
    let has_membership = trace.tasks.iter().any(|t| t.cgroup.is_some());
    let mapping = if has_membership {
        // Utid order: the latest incarnation of a tid decides.
        let mut latest: HashMap<Tid, &Task> = HashMap::new();
        for t in trace.tasks.iter() {
            latest.insert(t.tid, t);
        }
        for t in latest.values() {
            let Some(cg) = t.cgroup.as_deref() else {
                continue;
            };
            for (i, p) in paths.iter().enumerate() {
                if within(cg, p) {
                    out[i].push(t.tid);
                }
            }
        }
        CgroupMapping::Membership
    } else {
        // The first sampled cgroup with a leaf name takes its tasks.
        let mut by_leaf: HashMap<&str, usize> = HashMap::new();
        for (i, p) in paths.iter().enumerate() {
            if let Some(l) = leaf(p) {
                by_leaf.entry(l).or_insert(i);
            }
        }
        for t in trace.tasks.iter() {
            if let Some(&i) = by_leaf.get(t.comm.as_str()) {
                out[i].push(t.tid);
            }
        }
        CgroupMapping::Name
    };
    for v in &mut out {
        v.sort_unstable();
        v.dedup();
    }
    if out.iter().all(Vec::is_empty) {
        return (CgroupMapping::None, out);
    }
    (mapping, out)
}

/// The sampled cgroups with a quota (`quota_us > 0`), in order of first
/// sample, and each one's samples in trace order (unsorted): what both
/// [`Throttling::compute`] and idle's throttled attribution read.
pub(crate) fn sampled(trace: &Trace) -> (Vec<&str>, Vec<Vec<&CgroupSample>>) {
    let mut paths: Vec<&str> = Vec::new();
    let mut samples: Vec<Vec<&CgroupSample>> = Vec::new();
    for s in &trace.cgroup_samples {
        if s.quota_us <= 0 {
            continue;
        }
        let i = match paths.iter().position(|p| *p == s.path) {
            Some(i) => i,
            None => {
                paths.push(&s.path);
                samples.push(Vec::new());
                paths.len() - 1
            }
        };
        samples[i].push(s);
    }
    (paths, samples)
}

/// The last non-empty component of a cgroup path.
pub(crate) fn leaf(path: &str) -> Option<&str> {
    path.rsplit('/').find(|p| !p.is_empty())
}

impl Throttling {
    /// The throttled periods of `trace`'s cgroup samples (none when it has
    /// no samples).
    pub fn compute(trace: &Trace) -> Throttling {
        let (paths, mut samples) = sampled(trace);
        if paths.is_empty() {
            return Throttling::default();
        }
        let (mapping, mut members) = members(trace, &paths);
        let mut periods = Vec::new();
        let mut cgroups = Vec::with_capacity(paths.len());
        for (i, v) in samples.iter_mut().enumerate() {
            v.sort_by_key(|s| s.ts);
            for w in v.windows(2) {
                let (a, b) = (w[0], w[1]);
                if b.nr_throttled > a.nr_throttled {
                    periods.push(ThrottlePeriod {
                        cgroup: i,
                        start_ns: a.ts.0,
                        end_ns: b.ts.0,
                        nr_throttled: b.nr_throttled - a.nr_throttled,
                        throttled_ns: b.throttled_ns.saturating_sub(a.throttled_ns),
                        nr_periods: b.nr_periods.saturating_sub(a.nr_periods),
                    });
                }
            }
            let last = v.last().copied();
            cgroups.push(ThrottledCgroup {
                path: paths[i].to_string(),
                quota_us: last.map_or(0, |s| s.quota_us),
                period_us: last.map_or(0, |s| s.period_us),
                samples: v.len(),
                members: std::mem::take(&mut members[i]),
            });
        }
        periods.sort_by_key(|p| (p.start_ns, p.cgroup));
        Throttling {
            mapping,
            cgroups,
            periods,
        }
    }

    /// Total throttled time of cgroup `i` over its periods.
    pub fn throttled_ns(&self, i: usize) -> u64 {
        self.periods
            .iter()
            .filter(|p| p.cgroup == i)
            .map(|p| p.throttled_ns)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedscope_trace::{CgroupSample, TraceFormat, Ts};

    fn trace() -> Trace {
        Trace::new("gen", TraceFormat::PerfData)
    }

    fn sample(ts: u64, path: &str, quota: i64, thr: u64, thr_ns: u64) -> CgroupSample {
        CgroupSample {
            ts: Ts(ts),
            path: path.into(),
            quota_us: quota,
            period_us: 100_000,
            nr_periods: ts / 100,
            nr_throttled: thr,
            throttled_ns: thr_ns,
            usage_ns: None,
        }
    }

    #[test]
    fn within_matches_self_and_descendants_only() {
        assert!(within("/a/b", "/a"));
        assert!(within("/a", "/a"));
        assert!(within("/a", "/a/"));
        assert!(within("/anything", "/"));
        assert!(!within("/ab", "/a"));
        assert!(!within("/a", "/a/b"));
    }

    #[test]
    fn periods_are_the_intervals_where_nr_throttled_grew() {
        let mut trace = trace();
        // out of order on purpose; an unlimited cgroup is left out
        trace.cgroup_samples = vec![
            sample(300, "/g/c1", 50_000, 3, 30),
            sample(100, "/g/c1", 50_000, 1, 10),
            sample(200, "/g/c1", 50_000, 1, 10),
            sample(400, "/g/c1", 50_000, 4, 45),
            sample(100, "/free", -1, 0, 0),
            sample(200, "/free", -1, 7, 70),
            sample(150, "/g/c2", 20_000, 0, 0),
            sample(250, "/g/c2", 20_000, 2, 99),
        ];
        trace.tasks.set_comm(Tid(7), "c1");
        trace.tasks.set_comm(Tid(8), "other");
        let t = Throttling::compute(&trace);
        assert_eq!(t.mapping, CgroupMapping::Name);
        let paths: Vec<&str> = t.cgroups.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["/g/c1", "/g/c2"]);
        assert_eq!(t.cgroups[0].members, vec![Tid(7)]);
        assert!(t.cgroups[1].members.is_empty());
        assert_eq!(t.cgroups[0].samples, 4);
        let got: Vec<(usize, u64, u64, u64, u64)> = t
            .periods
            .iter()
            .map(|p| {
                (
                    p.cgroup,
                    p.start_ns,
                    p.end_ns,
                    p.nr_throttled,
                    p.throttled_ns,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (1, 150, 250, 2, 99),
                (0, 200, 300, 2, 20),
                (0, 300, 400, 1, 15)
            ]
        );
        assert_eq!(t.periods[1].nr_periods, 1);
        assert_eq!(t.throttled_ns(0), 35);
    }

    #[test]
    fn membership_maps_tasks_to_their_cgroup_and_ancestors() {
        let mut trace = trace();
        trace.cgroup_samples = vec![
            sample(0, "/p", 100_000, 0, 0),
            sample(100, "/p", 100_000, 1, 5),
            sample(0, "/p/c", 50_000, 0, 0),
            sample(100, "/p/c", 50_000, 0, 0),
        ];
        trace.tasks.get_or_insert(Tid(1)).cgroup = Some("/p/c".into());
        trace.tasks.get_or_insert(Tid(2)).cgroup = Some("/p".into());
        trace.tasks.get_or_insert(Tid(3)).cgroup = Some("/pc".into());
        // tid 4 was in /p/c, its later incarnation is elsewhere
        trace.tasks.get_or_insert(Tid(4)).cgroup = Some("/p/c".into());
        trace.tasks.exit(Tid(4), Ts(50));
        trace.tasks.fork(Tid(4), None, "x", Some(Ts(60)));
        trace.tasks.get_or_insert(Tid(4)).cgroup = Some("/q".into());
        let t = Throttling::compute(&trace);
        assert_eq!(t.mapping, CgroupMapping::Membership);
        assert_eq!(t.cgroups[0].members, vec![Tid(1), Tid(2)]);
        assert_eq!(t.cgroups[1].members, vec![Tid(1)]);
        // /p/c never throttled: one period, of /p
        assert_eq!(t.periods.len(), 1);
        assert_eq!(t.periods[0].cgroup, 0);
    }

    #[test]
    fn no_samples_no_periods() {
        let t = Throttling::compute(&trace());
        assert_eq!(t, Throttling::default());
        assert_eq!(t.mapping, CgroupMapping::None);
    }
}
