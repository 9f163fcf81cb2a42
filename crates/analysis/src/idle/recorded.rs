//! Recorded CFS-bandwidth throttling: the cgroup cpu.stat samples stored
//! in the trace, how tasks map to the sampled cgroups, and the per-cgroup
//! CPU time vs quota table.

use super::{CgroupMapping, CgroupUsage};
use crate::throttle;
use schedscope_trace::hash::FxMap;
use schedscope_trace::{StrId, Tid, Trace};
use std::collections::{BTreeMap, HashMap};

/// Recorded cgroup throttling. Tasks map to sampled cgroups by their recorded
/// membership ([`schedscope_trace::Task::cgroup`]: the cgroup itself or any
/// sampled ancestor, since a throttled parent throttles its children) when
/// the trace has it, otherwise by comm = last path component (the stopgap
/// for files without membership).
pub(super) struct Recorded {
    /// How tasks were mapped.
    pub(super) mapping: CgroupMapping,
    /// Leaf name -> cgroup index.
    by_leaf: HashMap<String, usize>,
    /// Per cgroup: (ts, nr_throttled), sorted by ts.
    samples: Vec<Vec<(u64, u64)>>,
    /// tid -> indexes of the sampled cgroups at or above its recorded cgroup.
    by_tid: FxMap<Tid, Vec<usize>>,
    /// comm string id -> cgroup index (cache).
    by_comm: FxMap<StrId, Option<usize>>,
}

/// Whether the trace records task cgroup membership.
fn has_membership(trace: &Trace) -> bool {
    trace.tasks.iter().any(|t| t.cgroup.is_some())
}

impl Recorded {
    pub(super) fn new(trace: &Trace) -> Option<Recorded> {
        let (paths, sampled) = throttle::sampled(trace);
        let mut by_leaf = HashMap::new();
        for (i, p) in paths.iter().enumerate() {
            if let Some(leaf) = throttle::leaf(p) {
                by_leaf.entry(leaf.to_string()).or_insert(i);
            }
        }
        let mut samples: Vec<Vec<(u64, u64)>> = sampled
            .iter()
            .map(|v| v.iter().map(|s| (s.ts.0, s.nr_throttled)).collect())
            .collect();
        for v in &mut samples {
            v.sort_unstable();
        }
        if !samples.iter().any(|v| v.len() >= 2) {
            return None;
        }
        let mut by_tid: FxMap<Tid, Vec<usize>> = FxMap::default();
        if has_membership(trace) {
            // Utid order: the latest incarnation of a tid wins.
            for t in trace.tasks.iter() {
                let Some(cg) = t.cgroup.as_deref() else {
                    continue;
                };
                let v: Vec<usize> = paths
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| throttle::within(cg, p))
                    .map(|(i, _)| i)
                    .collect();
                if v.is_empty() {
                    by_tid.remove(&t.tid);
                } else {
                    by_tid.insert(t.tid, v);
                }
            }
            return (!by_tid.is_empty()).then_some(Recorded {
                mapping: CgroupMapping::Membership,
                by_leaf: HashMap::new(),
                samples,
                by_tid,
                by_comm: FxMap::default(),
            });
        }
        let mapped = trace
            .tasks
            .iter()
            .any(|t| by_leaf.contains_key(t.comm.as_str()));
        mapped.then_some(Recorded {
            mapping: CgroupMapping::Name,
            by_leaf,
            samples,
            by_tid,
            by_comm: FxMap::default(),
        })
    }

    /// Whether cgroup `i`'s nr_throttled grew in the sample interval
    /// containing `ts`.
    fn grew(&self, i: usize, ts: u64) -> bool {
        let Some(v) = self.samples.get(i) else {
            return false;
        };
        let k = v.partition_point(|s| s.0 <= ts);
        match (k.checked_sub(1).and_then(|j| v.get(j)), v.get(k)) {
            (Some(a), Some(b)) => b.1 > a.1,
            _ => false,
        }
    }

    /// Whether the cgroup of task `tid` (comm `comm`) was throttled in the
    /// sample interval containing `ts`.
    pub(super) fn throttled(&mut self, trace: &Trace, tid: Tid, comm: StrId, ts: u64) -> bool {
        if self.mapping == CgroupMapping::Membership {
            return self
                .by_tid
                .get(&tid)
                .is_some_and(|v| v.iter().any(|&i| self.grew(i, ts)));
        }
        let by_leaf = &self.by_leaf;
        let cg = *self
            .by_comm
            .entry(comm)
            .or_insert_with(|| by_leaf.get(trace.strings.get(comm)).copied());
        cg.is_some_and(|i| self.grew(i, ts))
    }
}

/// Per-cgroup CPU time vs quota from the recorded samples.
pub(super) fn cgroup_usage(
    trace: &Trace,
    run_ns: &FxMap<Tid, u64>,
    duration: u64,
) -> Vec<CgroupUsage> {
    let membership = has_membership(trace);
    let mut by_path: BTreeMap<&str, Vec<&schedscope_trace::CgroupSample>> = BTreeMap::new();
    for s in &trace.cgroup_samples {
        by_path.entry(s.path.as_str()).or_default().push(s);
    }
    by_path
        .into_iter()
        .filter_map(|(path, mut v)| {
            v.sort_by_key(|s| s.ts);
            let (first, last) = (*v.first()?, *v.last()?);
            let dt = last.ts.0.saturating_sub(first.ts.0);
            let leaf = path.rsplit('/').find(|p| !p.is_empty()).unwrap_or(path);
            let mut mapped: Vec<Tid> = trace
                .tasks
                .iter()
                .filter(|t| {
                    if membership {
                        t.cgroup
                            .as_deref()
                            .is_some_and(|cg| throttle::within(cg, path))
                    } else {
                        t.comm == leaf
                    }
                })
                .map(|t| t.tid)
                .collect();
            mapped.sort_unstable();
            mapped.dedup();
            let trace_cpu_ns = mapped.iter().filter_map(|t| run_ns.get(t)).sum::<u64>();
            Some(CgroupUsage {
                path: path.to_string(),
                quota_us: last.quota_us,
                period_us: last.period_us,
                quota_cpus: (last.quota_us > 0 && last.period_us > 0)
                    .then(|| last.quota_us as f64 / last.period_us as f64),
                usage_cpus: match (first.usage_ns, last.usage_ns) {
                    (Some(a), Some(b)) if dt > 0 => Some(b.saturating_sub(a) as f64 / dt as f64),
                    _ => None,
                },
                nr_periods: last.nr_periods.saturating_sub(first.nr_periods),
                nr_throttled: last.nr_throttled.saturating_sub(first.nr_throttled),
                throttled_ns: last.throttled_ns.saturating_sub(first.throttled_ns),
                samples: v.len() as u64,
                tasks: mapped.len() as u64,
                trace_cpu_ns,
                trace_cpus: (duration > 0).then(|| trace_cpu_ns as f64 / duration as f64),
            })
        })
        .collect()
}
